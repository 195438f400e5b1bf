// layers.h - each operation of the model, its forward beside its backward (layers.c).
//
// The forward computes the operation and keeps what its backward will need (what autograd
// saves); the backward takes the gradient of the output and gives the gradients of the inputs
// and of the parameters. Size letters as in model.h.
#ifndef LAYERS17_H
#define LAYERS17_H

#include "model.h"

// x (rows, C) = rows of embed_tokens (NV, C) picked by ids, rows r0 .. r0+rows-1.
void embedding_forward(float *x, const Tensor *embed_tokens, const float *ids, int r0, int rows);
// d_table (NV, C) = the sum, for every row r, of d_x's row r added into row ids[r].
void embedding_backward(float *d_table, const float *d_x, const Tensor *embed_tokens,
                        const float *ids, int rows);

// LlamaRMSNorm: out = weight * (x * rstd), rstd = 1 / sqrt(mean(x^2) + eps) kept per row.
void rms_norm_forward(float *out, float *rstd, const float *x, const float *weight, int rows,
                      int C, float eps, float *squares);
// Its two paths back to x (direct, through_mean: the caller adds them) and d_weight.
void rms_norm_backward(float *direct, float *through_mean, float *d_weight, float *products,
                       const float *d_out, const float *x, const float *rstd,
                       const float *weight, int rows, int C, float *scratch);

// nn.Linear without a bias: y (rows, out) = x (rows, in) @ W^T.
void linear_forward(float *y, const Linear *layer, const float *x, int rows, float *scratch);
// dx = dy @ W (skipped when dx is NULL), dW = dy^T @ x.
void linear_backward(float *dx, float *dW, const Linear *layer, const float *dy, const float *x,
                     int rows);

// RoPE's table (N, D/2): cos and sin of t * theta_i, theta_i = base^(-2i/D).
void rope_table(float *cos_t, float *sin_t, int N, int D, int base);
// RoPE in place on rows r0 .. r0+rows-1 (row r at position r % N) of `heads` heads of D.
void rope_forward(float *x, const float *cos, const float *sin, int r0, int rows, int N,
                  int heads, int D);
// The gradient turned back by the same angles, in place on `rows` rows from row 0.
void rope_backward(float *d, const float *cos, const float *sin, int rows, int N, int heads,
                   int D);

// The (query, key) pairs each of attention's products computes in a sequence of N: the causal
// triangle, in blocks (layers.c).
double causal_pairs(int N);
// Causal grouped-query attention of the queries at positions start .. start+T-1: a->att
// and a->y from a->q, a->k, a->v. k_t holds a head's keys transposed (D * (start+T)).
void attention_forward(LayerActivations *a, const Config *config, int B, int start, int T,
                       float *k_t);
// w->d_q, w->d_k, w->d_v from w->d_y and what the forward kept in a.
void attention_backward(BackwardScratch *w, const LayerActivations *a, const Config *config,
                        int B);

// SwiGLU's middle: act = silu(gate), prod = act * up, over n floats.
void swiglu_forward(float *act, float *prod, const float *gate, const float *up, long n);
// d_gate and d_up from d_prod.
void swiglu_backward(float *d_gate, float *d_up, const float *d_prod, const float *gate,
                     const float *up, const float *act, long n);

// F.cross_entropy(logits.view(-1, NV), labels.view(-1)) at the rows whose label is not -100:
// returns the loss; log_probs gets those rows' log_softmax, *asked their count.
float cross_entropy_forward(float *log_probs, int *asked, const float *logits,
                            const Tensor *labels, int NV);
// d_logits (rows, NV): (softmax - one_hot(label)) / asked on an asked row, 0 on the others.
void cross_entropy_backward(float *d_logits, const float *log_probs, const Tensor *labels,
                            int rows, int NV, int asked);

#endif
