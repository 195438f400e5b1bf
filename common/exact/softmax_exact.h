// softmax_exact.h - softmax's arithmetic on rows of floats, rounded where
// PyTorch 1.13's CPU kernel rounds, so that the lessons print PyTorch's
// digits. softmax() in ops.h calls it; so may a lesson's own loops (lesson
// 10's decode by index) that must give the same bits as softmax().
#ifndef SOFTMAX_EXACT_H
#define SOFTMAX_EXACT_H

// exp(d) exactly as Sleef_expf8_u10 computes it (what PyTorch's
// vectorized exp calls): within 1 ulp of the true exp.
float sleef_expf(float d);

// softmax of `rows` contiguous rows of n floats each, in place: PyTorch's
// kernel for the last dim.
void softmax_exact_lastdim(float *data, long rows, int n);

// The row term of softmax's backward along the last dim, sum_i grad[i] * out[i]
// (out the softmax's output, grad the gradient that reaches it), added in the
// order PyTorch's kernel adds it: 8 lanes, the first 8 products rounded, each
// later one fused into its lane (one rounding), then the lanes summed.
// The backward is then grad_input[i] = (grad[i] - this) * out[i].
float softmax_exact_backward_row(const float *grad, const float *out, int n);

// softmax along any other dim, in place: the data seen as (outer, n, inner)
// around that dim, row-major (inner = the product of the sizes after it).
void softmax_exact_otherdim(float *data, long outer, int n, long inner);

// log(x) exactly as Sleef_logf8_u10 computes it (PyTorch's vectorized log).
float sleef_logf(float x);

// log_softmax of `rows` contiguous rows of n floats, x - max - log(sum(exp(x - max))), and
// its backward, grad_input = grad - exp(out) * sum(grad): PyTorch's kernels for the last
// dim, bit for bit (cross-entropy's two halves in lesson 16).
void log_softmax_exact_lastdim(float *out, const float *x, long rows, int n);
void log_softmax_exact_backward_lastdim(float *grad_input, const float *grad, const float *out,
                                        long rows, int n);

#endif
