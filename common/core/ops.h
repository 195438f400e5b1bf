// ops.h - the operations attention is made of.
//
// Every function returns a new tensor (from the arena) and leaves its
// inputs alone; split returns views and dropout may return its input, so
// those two give `const Tensor *` (tensor.h says why). Each checks the
// shapes it is given and, when they do not fit, fails with a message naming
// both, e.g.
//     matmul: shapes (6x4) and (3x4) cannot be multiplied
// In the comments, (n x k) @ (k x m) names the two matrix dims of matmul;
// "..." stands for any leading (batch) dims.
#ifndef OPS_H
#define OPS_H

#include "core/tensor.h"

// a @ b. Both at least 2-D; the last two dims multiply as matrices
// (n x k) @ (k x m) -> (n x m); the leading dims broadcast as in PyTorch.
Tensor *matmul(const Tensor *a, const Tensor *b);

// Elementwise, with broadcasting: a + b, a * b.
Tensor *add(const Tensor *a, const Tensor *b);
Tensor *mul(const Tensor *a, const Tensor *b);
// With a scalar: t * s, t / s (a true float division, as PyTorch does).
Tensor *mul_scalar(const Tensor *t, float s);
Tensor *div_scalar(const Tensor *t, float s);

// softmax along `dim`: exp(x - max) / sum(exp(x - max)). A row that is all
// -inf gives NaN, like PyTorch.
Tensor *softmax(const Tensor *t, int dim);

// mask == value, as a bool tensor (1 or 0): the `mask == 0` of the notebooks.
Tensor *eq_scalar(const Tensor *mask, float value);
// Where `condition` (broadcast to t's shape) is nonzero, `value`; else t.
Tensor *masked_fill(const Tensor *t, const Tensor *condition, float value);

// torch.triu(t, diagonal): keeps t[i, j] where j - i >= diagonal, else 0.
// Works on the last two dims.
Tensor *triu(const Tensor *t, int diagonal);

// torch.split(t, split_size, dim=-1) into `count` views (count * split_size
// must equal the last dim).
void split(const Tensor **parts, const Tensor *t, int split_size, int count);
// torch.cat(tensors, dim): all shapes equal except along dim.
Tensor *cat(const Tensor *const *tensors, int count, int dim);
// t.repeat(reps): tile the tensor reps[d] times along each dim (copies).
Tensor *repeat(const Tensor *t, const int *reps);
// t.repeat_interleave(repeats, dim): each slice along dim repeated in place.
Tensor *repeat_interleave(const Tensor *t, int repeats, int dim);

// F.dropout(t, p, training): in training, each element is kept with
// probability 1-p and scaled by 1/(1-p), else zeroed (draws from rng.h);
// not training (eval mode): returns t itself and draws nothing (so the
// result is const: it may be t).
const Tensor *dropout(const Tensor *t, double p, bool training);

// --- what a Transformer block adds around attention -----------------------------------------

// F.layer_norm(x, (C,), weight, bias, eps) over the last dim C: each row is
// shifted to mean 0 and scaled to variance 1 (the biased variance, the sum of
// squares divided by C, plus eps under the square root), then multiplied by
// weight (C,) and shifted by bias (C,). nn.LayerNorm is this with its
// parameters (nn.h). The arithmetic is PyTorch's, bit for bit
// (layer_norm_exact.c).
Tensor *layer_norm(const Tensor *x, const Tensor *weight, const Tensor *bias, double eps);

// nn.GELU(): x * Phi(x), Phi the standard normal's CDF:
//     gelu(x) = x * 0.5 * (1 + erf(x / sqrt(2)))
// bit for bit as PyTorch computes it (gelu_exact.c). gelu_tanh is
// nn.GELU(approximate='tanh'), the form of the original BERT and GPT-2 code:
// x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))), in PyTorch's order
// of operations (tanh itself may differ in its last bit).
Tensor *gelu(const Tensor *x);
Tensor *gelu_tanh(const Tensor *x);

// torch.empty(shape).bernoulli_(p): each element 1 with probability p, else
// 0, drawn row-major exactly as dropout draws its mask (rng.h). DropPath
// draws its per-sample mask this way, on a (batch, 1, 1) tensor.
Tensor *bernoulli(Shape shape, double p);

// Largest |a - b| over all elements (same shapes), for checks and tests;
// NaN if either holds a NaN, so a check `diff < tol` cannot pass by accident.
float max_abs_diff(const Tensor *a, const Tensor *b);

#endif
