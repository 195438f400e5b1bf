// sum_exact.h - torch.sum's order of additions on a row of floats, so that a
// lesson's mean of squares (RMSNorm's, lesson 15) is PyTorch's to the bit.
#ifndef SUM_EXACT_H
#define SUM_EXACT_H

// The float32 sum of x[0..n-1] (contiguous, n >= 0) exactly as PyTorch 1.13's
// CPU kernel adds a contiguous row: x.sum(-1), and x.mean(-1), which on the
// CPU is that sum divided by n. Not the left-to-right sum: see sum_exact.c.
float sum_exact(const float *x, long n);

// The sums down the columns of a contiguous (rows, cols) matrix, x.sum(0), in PyTorch's
// order for reducing leading dims: what autograd's sum_to_size does to the gradient of a
// weight broadcast over rows (RMSNorm's weight, lesson 16).
void sum_exact_columns(float *sums, const float *x, long rows, long cols);
// The same sums when the columns are not contiguous (element (r, c) at x[r * row_stride +
// c * col_stride]): PyTorch's scalar_outer_sum, which autograd meets summing a gradient that
// came out transposed (lesson 16's keys, summed over the query heads that share them).
void sum_exact_columns_strided(float *sums, const float *x, long rows, long cols,
                               long row_stride, long col_stride);

#endif
