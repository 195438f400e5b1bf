// sum_exact.h - torch.sum's order of additions on a row of floats, so that a
// lesson's mean of squares (RMSNorm's, lesson 15) is PyTorch's to the bit.
#ifndef SUM_EXACT_H
#define SUM_EXACT_H

// The float32 sum of x[0..n-1] (contiguous, n >= 0) exactly as PyTorch 1.13's
// CPU kernel adds a contiguous row: x.sum(-1), and x.mean(-1), which on the
// CPU is that sum divided by n. Not the left-to-right sum: see sum_exact.c.
float sum_exact(const float *x, long n);

#endif
