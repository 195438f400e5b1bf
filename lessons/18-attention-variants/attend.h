// attend.h - attention's variants, each forward beside its backward (attend.c): softmax
// attention with a sliding window and ALiBi's bias; linear attention as the RNN it is; and
// both one token at a time, from a rolling buffer or a fixed-size state. Size letters as in
// model.h.
#ifndef ATTEND18_H
#define ATTEND18_H

#include "model.h"

#define LINEAR_EPS 1e-6f   // linear attention's denominator's guard, fast-transformers' eps

// Softmax attention of whole sequences (B, N): a->att and a->y from a->q, a->k, a->v. Query
// t sees keys max(0, t - W + 1) .. t; ALiBi adds slope * (s - t) to its scores first.
// k_t holds a head's keys transposed (D * N).
void attention_forward(LayerActivations *a, const Model *model, int B, int N, float *k_t);
// w->d_q, w->d_k, w->d_v from w->d_y and what the forward kept in a.
void attention_backward(BackwardScratch *w, const LayerActivations *a, const Config *config,
                        int B, int N);

// phi(x) = elu(x) + 1, Katharopoulos et al.'s feature map, on x (B, N, X, D) (X heads: H for
// the queries, KV for the keys); and its backward, dx = dy where x > 0, dy * exp(x) below.
void phi_forward(float *out, const float *x, int B, int N, int X, int D);
void phi_backward(float *dx, const float *dy, const float *x, int B, int N, int X, int D);

// The RNN's step, which training and decoding share: S (D, D) += phi(k) v^T, z (D) += phi(k).
// One function, swappable (the page's exercise 1 asks for it, with alibi_slopes).
void linear_state_update(float *S, float *z, const float *k_phi, const float *v, int D);
// Causal linear attention of whole sequences as a running sum over the positions: a->y, and
// what the backward needs (a->q_phi, a->k_phi, a->numerator, a->norm). state holds D*D + D.
void linear_attention_forward(LayerActivations *a, const Config *config, int B, int N,
                              float *state);
// Its backward: the same running sums, forward for d phi(q), then backward for d phi(k) and
// d v (as Katharopoulos et al. derive it). w->d_y is used up.
void linear_attention_backward(BackwardScratch *w, const LayerActivations *a,
                               const Config *config, int B, int N);
// The parallel form's weights of sequence b (H, N, N): phi(q_t).phi(k_s), 0 after t, each row
// divided by its sum + eps: what the running sum gives each earlier value (the maps).
void linear_weights(float *att, const LayerActivations *a, const Config *config, int b, int N);

// One token's attention at `position`, from what cache holds of the tokens before: its k and
// v (KV, D) into slot position % slots, then query heads q (H, D) over the keys the window
// sees, oldest first. y (H, D). scratch holds 2 * slots floats.
void attend_cached(float *y, LayerCache *cache, const float *q, const float *k, const float *v,
                   const Model *model, int position, float *scratch);
// The same for linear attention: the state takes phi(k) v^T, then is read by phi(q).
void attend_state(float *y, LayerCache *cache, const float *q_phi, const float *k_phi,
                  const float *v, const Config *config);

#endif
