// attend.c - attention's variants, each forward beside its backward, then each one token at a
// time (decoding):
//   softmax attention, lesson 16's, with a sliding window (--window W: query t sees its last
//     W keys, t - W + 1 .. t; Mistral 7B v0.1, Gemma 2 and 3 in some layers) and ALiBi's bias
//     (--positions alibi: slope * (s - t) added to the scores);
//   linear attention (--attention linear; Katharopoulos et al. 2020, "Transformers are
//     RNNs"): softmax's exp(q . k) replaced by phi(q) . phi(k), phi(x) = elu(x) + 1, so that
//       y_t = sum_s phi(q_t).phi(k_s) v_s / sum_s phi(q_t).phi(k_s)
//           = phi(q_t)^T S_t / phi(q_t)^T z_t,   S_t = sum_{s<=t} phi(k_s) v_s^T,
//                                                z_t = sum_{s<=t} phi(k_s)
//     and the causal sums are running sums: an RNN whose state (S, z) has the same size
//     after 10 tokens as after 10 million.
// The backwards follow autograd's steps for the page's PyTorch (its script), operation by
// operation, so that every gradient is autograd's to the bit; each says which formula it is.
//
// Size letters as in model.h; r0 the row of position 0 of sequence b.
#include "attend.h"

#include <math.h>
#include <string.h>

#include "exact/softmax_exact.h"
#include "exact/sum_exact.h"
#include "kernels.h"
#include "positions.h"

// --- softmax attention: causal, windowed, with ALiBi's bias --------------------------------

// For each head:  att = softmax(q k^T / sqrt(D) [+ alibi], -inf where the query does not look),
// y = att @ v. Query t looks at keys first(t) = max(0, t - W + 1) .. t: with no window
// (W >= N) that is lesson 16's causal mask; with one, a band W wide along the diagonal.
// att (B, H, N, N) is kept whole for the backward, as autograd keeps it.
void attention_forward(LayerActivations *a, const Model *model, int B, int N, float *k_t) {
    const Config *c = &model->config;
    int H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim;
    int R = H / KV, W = c->window;
    float scale = (float)sqrt((double)D);   // math.sqrt(head_dim), rounded to a float
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            int g = h / R;
            const float *q = a->q + ((long)b * N * H + h) * D;    // row t: + t*H*D
            const float *k = a->k + ((long)b * N * KV + g) * D;   // row s: + s*KV*D
            const float *v = a->v + ((long)b * N * KV + g) * D;
            float *att = a->att + ((long)b * H + h) * N * N;      // (N, N)
            for (int s = 0; s < N; s++) {                         // k^T (D, N)
                for (int d = 0; d < D; d++) {
                    k_t[d * N + s] = k[(long)s * KV * D + d];
                }
            }
            kernels->gemm(att, N, q, H * D, 1, k_t, N, N, N, D, false);   // q @ k^T
            kernels->causal_scale(att, N, N, 0, scale);   // / sqrt(D); -inf after query t
            for (int t = 0; t < N; t++) {
                float *row = att + (long)t * N;
                int first = t - W + 1 > 0 ? t - W + 1 : 0;
                for (int s = 0; s < first; s++) {
                    row[s] = -INFINITY;                   // the window: too far back
                }
                if (c->positions == ALIBI) {
                    alibi_bias(row + first, model->slopes[h], t, first, t + 1 - first);
                }
            }
            kernels->softmax_rows(att, N, N);   // exp(-inf) = 0: no weight where it does not look
            kernels->gemm(a->y + ((long)b * N * H + h) * D, H * D, att, N, 1, v, KV * D, N, D, N,
                          false);                                   // att @ v
        }
    }
}

// The gradients of the R query heads of a group (R, N, D) summed into their key/value head's
// rows (N of D, `ld` apart): repeat_kv made R copies of the head, so its gradient is the sum
// of theirs, added as torch.sum adds down the first dim (lesson 16 says which order when):
// dV's came out of its product contiguous (sum_exact_columns), dK's as the gradient of k^T,
// transposed (sum_exact_columns_strided).
static void group_sum(float *out, const float *heads, float *sums, int R, int N, int D, int ld,
                      bool transposed) {
    if (!transposed) {
        sum_exact_columns(sums, heads, R, (long)N * D);
    }
    for (int t = 0; t < N; t++) {
        if (transposed) {
            sum_exact_columns_strided(sums + (long)t * D, heads + (long)t * D, R, D,
                                      (long)N * D, 1);
        }
        memcpy(out + (long)t * ld, sums + (long)t * D, (size_t)D * sizeof(float));
    }
}

// Each head as lesson 14 derives it (and lesson 16 runs it): with P = att, dO = d_y,
//   dP = dO V^T,  dV = P^T dO,  dS = P * (dP - rowsum(dP * P)),  dQ = dS K / sqrt(D),
//   dK = dS^T Q / sqrt(D)
// The window changes nothing here but which dS are 0: a key a query did not see had P = 0,
// so nothing flows back to it (masked_fill's backward sets those to 0, and so does this).
// ALiBi's bias has no gradient (its slopes are fixed) and passes dS through unchanged.
void attention_backward(BackwardScratch *w, const LayerActivations *a, const Config *c, int B,
                        int N) {
    int H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim;
    int R = H / KV, W = c->window;
    float scale = (float)sqrt((double)D);
    float *v_t = w->scratch;
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            int g = h / R, r = h % R;                 // query head r of group g
            const float *q_bh = a->q + ((long)b * N * H + h) * D;
            const float *k_bg = a->k + ((long)b * N * KV + g) * D;
            const float *v_bg = a->v + ((long)b * N * KV + g) * D;
            const float *att = a->att + ((long)b * H + h) * N * N;
            const float *dy_bh = w->d_y + ((long)b * N * H + h) * D;
            float *dk_r = w->group_dk + (long)r * N * D;   // dK (N, D) of query head h
            float *dv_r = w->group_dv + (long)r * N * D;   // dV (N, D)
            for (int s = 0; s < N; s++) {                  // v^T (D, N)
                for (int d = 0; d < D; d++) {
                    v_t[d * N + s] = v_bg[(long)s * KV * D + d];
                }
            }
            kernels->gemm(w->d_att, N, dy_bh, H * D, 1, v_t, N, N, N, D, false);   // dO V^T
            kernels->gemm(dv_r, D, att, 1, N, dy_bh, H * D, N, D, N, false);       // P^T dO
            for (int t = 0; t < N; t++) {
                const float *p = att + (long)t * N, *dp = w->d_att + (long)t * N;
                float *ds = w->d_scores + (long)t * N;
                float row = kernels->softmax_backward_row(dp, p, N);
                // ds[s] = ((dp[s] - row) * p[s]) / scale for s <= t, 0 after ...
                kernels->softmax_backward_scaled(ds, dp, p, row, scale, t + 1, N);
                for (int s = 0; s < t - W + 1; s++) {
                    ds[s] = 0.0f;                      // ... and 0 before the window
                }
            }
            float *dq = w->d_q + ((long)b * N * H + h) * D;
            kernels->gemm(dq, H * D, w->d_scores, N, 1, k_bg, KV * D, N, D, N, false);  // dS K
            kernels->gemm(dk_r, D, w->d_scores, 1, N, q_bh, H * D, N, D, N, false);  // dS^T Q
            if (r == R - 1) {   // the group is done: its R heads' dK and dV, summed
                group_sum(w->d_k + ((long)b * N * KV + g) * D, w->group_dk, w->group_sum, R,
                          N, D, KV * D, true);
                group_sum(w->d_v + ((long)b * N * KV + g) * D, w->group_dv, w->group_sum, R,
                          N, D, KV * D, false);
            }
        }
    }
}

// --- linear attention: phi ---------------------------------------------------------------------

// phi(x) = elu(x) + 1: x + 1 above 0, exp(x) - 1 + 1 at or below (elu's branch there is
// exp(x) - 1, then the + 1 rounds once more). Always positive, so every weight
// phi(q).phi(k) is, and their sum can divide: a feature map whose dot product stands in for
// exp(q . k). PyTorch runs F.elu on x.contiguous(), laid out (B, X, N, D); its vector code
// takes Sleef's exp on whole blocks of 16 of that layout and the C library's on the rest
// (lesson 16's silu says the same), so the position in that layout picks the exp.
static float phi_exp(float x, long flat, long whole) {
    return flat < whole ? sleef_expf(x) : expf(x);
}

void phi_forward(float *out, const float *x, int B, int N, int X, int D) {
    long whole = (long)B * X * N * D / 16 * 16;
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < N; t++) {
            for (int h = 0; h < X; h++) {
                long at = (((long)b * N + t) * X + h) * D;         // ours: (B, N, X, D)
                long flat = (((long)b * X + h) * N + t) * D;       // PyTorch's: (B, X, N, D)
                for (int d = 0; d < D; d++) {
                    float v = x[at + d];
                    float elu = v > 0.0f ? v : phi_exp(v, flat + d, whole) - 1.0f;
                    out[at + d] = elu + 1.0f;
                }
            }
        }
    }
}

// d elu(x) / dx is 1 above 0 and exp(x) below: dx = dy, or dy * exp(x) (autograd's elu
// backward takes exp(x) again, the forward's way; the + 1 passes the gradient through).
void phi_backward(float *dx, const float *dy, const float *x, int B, int N, int X, int D) {
    long whole = (long)B * X * N * D / 16 * 16;
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < N; t++) {
            for (int h = 0; h < X; h++) {
                long at = (((long)b * N + t) * X + h) * D;
                long flat = (((long)b * X + h) * N + t) * D;
                for (int d = 0; d < D; d++) {
                    float v = x[at + d];
                    dx[at + d] = v > 0.0f ? dy[at + d] : dy[at + d] * phi_exp(v, flat + d, whole);
                }
            }
        }
    }
}

// --- linear attention: the running sums ----------------------------------------------------------

// S += phi(k) v^T, z += phi(k): the new token's key-value pair written into the state, on
// top of every earlier one (each product and each sum rounded once, as PyTorch's
// S + k_t[..., :, None] * v_t[..., None, :]).
void linear_state_update(float *S, float *z, const float *k_phi, const float *v, int D) {
    for (int d = 0; d < D; d++) {
        for (int e = 0; e < D; e++) {
            S[d * D + e] = S[d * D + e] + k_phi[d] * v[e];
        }
        z[d] = z[d] + k_phi[d];
    }
}

// Read the state with a query: numerator[e] = sum_d phi(q)[d] S[d][e] and phi(q) . z, each a
// sum over d in order (the products of a (1, D) @ (D, D) matmul); returns
// 1 / (phi(q) . z + eps), what the numerator is multiplied by (fast-transformers' Z).
static float linear_read(float *numerator, const float *S, const float *z, const float *q_phi,
                         int D) {
    for (int e = 0; e < D; e++) {
        float sum = 0.0f;
        for (int d = 0; d < D; d++) {
            sum = sum + q_phi[d] * S[d * D + e];
        }
        numerator[e] = sum;
    }
    float den = 0.0f;
    for (int d = 0; d < D; d++) {
        den = den + q_phi[d] * z[d];
    }
    return 1.0f / (den + LINEAR_EPS);
}

// For each sequence and key/value head, the state runs over the positions; at each, the R
// query heads of the group read it. (The script's repeat_kv gives each query head a copy of
// the state, and each copy the same numbers: one here does for R.) The work is N D^2 a head,
// against softmax's N^2 D: linear in the length.
void linear_attention_forward(LayerActivations *a, const Config *c, int B, int N,
                              float *state) {
    int H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim, R = H / KV;
    phi_forward(a->q_phi, a->q, B, N, H, D);                                   // (B, N, H, D)
    phi_forward(a->k_phi, a->k, B, N, KV, D);                                  // (B, N, KV, D)
    float *S = state, *z = state + (long)D * D;                                // (D, D), (D)
    for (int b = 0; b < B; b++) {
        for (int g = 0; g < KV; g++) {
            memset(state, 0, (size_t)(D * D + D) * sizeof(float));
            for (int t = 0; t < N; t++) {
                long row = (long)b * N + t;
                linear_state_update(S, z, a->k_phi + (row * KV + g) * D,
                                    a->v + (row * KV + g) * D, D);
                for (int h = g * R; h < (g + 1) * R; h++) {
                    float *numerator = a->numerator + (row * H + h) * D;
                    float norm = linear_read(numerator, S, z, a->q_phi + (row * H + h) * D, D);
                    a->norm[row * H + h] = norm;
                    for (int e = 0; e < D; e++) {
                        a->y[(row * H + h) * D + e] = numerator[e] * norm;
                    }
                }
            }
        }
    }
}

// y_t = num_t * Z_t, Z_t = 1 / (den_t + eps), num_t = phi(q_t)^T S_t, den_t = phi(q_t)^T z_t,
// S_t = S_t-1 + phi(k_t) v_t^T, z_t = z_t-1 + phi(k_t). Backward, per query head:
//   d num = dy * Z                    d Z = sum_e dy[e] num[e]        (y = num * Z)
//   d den = -d Z * (Z * Z)                                            (Z = 1 / (den + eps))
//   d phi(q_t) = d num S_t^T + d den z_t                              (both products)
//   G_t = d S_t = phi(q_t) d num^T + G_t+1      H_t = d z_t = phi(q_t) d den + H_t+1
//   d phi(k_t) = G_t v_t + H_t                  d v_t = G_t^T phi(k_t)
// The first three need S_t and z_t, which a pass forward in t builds again (autograd keeps
// every S_t; recomputing them gives the same bits in D^2 floats of memory instead of
// N D^2); G and H are running sums too, run backward from the last position (Katharopoulos
// et al. derive the gradient as such sums, to keep the memory constant). Each sum over e
// (G_t v_t, and d Z) adds as torch.sum adds a row; d v sums down the columns of
// G_t * phi(k_t), as torch.sum adds down a dim.
void linear_attention_backward(BackwardScratch *w, const LayerActivations *a,
                               const Config *c, int B, int N) {
    int H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim, R = H / KV;
    float *S = w->state, *z = w->state + (long)D * D;                  // (D, D), (D)
    float *G = w->d_state, *Hz = w->d_state + (long)D * D;             // (D, D), (D)
    float *row_of = w->scratch, *col = w->scratch + D;                 // (D, D) products, (D)
    float *d_den = w->d_den;                                           // (B, N, H)
    for (int b = 0; b < B; b++) {
        for (int g = 0; g < KV; g++) {
            // forward in t: d num (in place of d_y), d den, d phi(q)
            memset(w->state, 0, (size_t)(D * D + D) * sizeof(float));
            for (int t = 0; t < N; t++) {
                long row = (long)b * N + t;
                linear_state_update(S, z, a->k_phi + (row * KV + g) * D,
                                    a->v + (row * KV + g) * D, D);
                for (int h = g * R; h < (g + 1) * R; h++) {
                    float *dy = w->d_y + (row * H + h) * D;            // becomes d num
                    const float *num = a->numerator + (row * H + h) * D;
                    float *dq = w->d_q + (row * H + h) * D;            // d phi(q_t)
                    float norm = a->norm[row * H + h];
                    kernels->mul(col, dy, num, D);
                    float d_norm = kernels->sum(col, D);
                    d_den[row * H + h] = -d_norm * (norm * norm);
                    for (int e = 0; e < D; e++) {
                        dy[e] = dy[e] * norm;
                    }
                    for (int d = 0; d < D; d++) {
                        float sum = 0.0f;
                        for (int e = 0; e < D; e++) {
                            sum = sum + dy[e] * S[d * D + e];
                        }
                        dq[d] = sum + d_den[row * H + h] * z[d];
                    }
                }
            }
            // backward in t, each query head of the group: G, H; d phi(k_t), d v_t
            for (int h = g * R; h < (g + 1) * R; h++) {
                float *dk_r = w->group_dk + (long)(h - g * R) * N * D;   // (N, D)
                float *dv_r = w->group_dv + (long)(h - g * R) * N * D;
                memset(w->d_state, 0, (size_t)(D * D + D) * sizeof(float));
                for (int t = N - 1; t >= 0; t--) {
                    long row = (long)b * N + t;
                    const float *q_phi = a->q_phi + (row * H + h) * D;
                    const float *dnum = w->d_y + (row * H + h) * D;
                    const float *k_phi = a->k_phi + (row * KV + g) * D;
                    const float *v = a->v + (row * KV + g) * D;
                    for (int d = 0; d < D; d++) {
                        for (int e = 0; e < D; e++) {
                            G[d * D + e] = G[d * D + e] + q_phi[d] * dnum[e];
                        }
                        Hz[d] = Hz[d] + q_phi[d] * d_den[row * H + h];
                    }
                    for (int d = 0; d < D; d++) {
                        kernels->mul(row_of + (long)d * D, G + (long)d * D, v, D);   // G * v
                        dk_r[(long)t * D + d] = kernels->sum(row_of + (long)d * D, D) + Hz[d];
                        kernels->scale(row_of + (long)d * D, G + (long)d * D, k_phi[d], D);
                    }
                    sum_exact_columns(dv_r + (long)t * D, row_of, D, D);      // G^T phi(k)
                }
            }
            // the group's R heads summed into their key/value head (repeat_kv's backward)
            group_sum(w->d_k + ((long)b * N * KV + g) * D, w->group_dk, w->group_sum, R, N, D,
                      KV * D, false);
            group_sum(w->d_v + ((long)b * N * KV + g) * D, w->group_dv, w->group_sum, R, N, D,
                      KV * D, false);
        }
    }
    // through phi, back to q and k: d_q holds d phi(q), d_k d phi(k)
    phi_backward(w->d_q, w->d_q, a->q, B, N, H, D);
    phi_backward(w->d_k, w->d_k, a->k, B, N, KV, D);
}

// The parallel form: A = phi(Q) phi(K)^T with 0 after each query, each row divided by its sum
// plus eps (torch.sum of the row, zeros included, then a true division). Mathematically each
// weight is what the running sum gives the value at s; in floats, another order of adding
// (the test compares the two forms' outputs within rounding).
void linear_weights(float *att, const LayerActivations *a, const Config *c, int b, int N) {
    int H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim;
    int R = H / KV;
    for (int h = 0; h < H; h++) {
        int g = h / R;
        float *map = att + (long)h * N * N;
        for (int t = 0; t < N; t++) {
            const float *q_phi = a->q_phi + (((long)b * N + t) * H + h) * D;
            for (int s = 0; s < N; s++) {
                const float *k_phi = a->k_phi + (((long)b * N + s) * KV + g) * D;
                float dot = 0.0f;
                for (int d = 0; d < D; d++) {
                    dot = dot + q_phi[d] * k_phi[d];
                }
                map[(long)t * N + s] = s <= t ? dot : 0.0f;
            }
            float sum = sum_exact(map + (long)t * N, N) + LINEAR_EPS;
            for (int s = 0; s < N; s++) {
                map[(long)t * N + s] = map[(long)t * N + s] / sum;
            }
        }
    }
}

// --- one token at a time -----------------------------------------------------------------

// The new key and value go into slot position % slots; the query then reads the keys its
// window sees, positions first .. position, from their slots, oldest first (the same order as
// a full cache, so the same bits: the test compares). With W slots, the slot written is the
// one whose key just left the window: Mistral's rolling buffer cache, W keys and values a
// layer whatever the length.
void attend_cached(float *y, LayerCache *cache, const float *q, const float *k, const float *v,
                   const Model *model, int position, float *scratch) {
    const Config *c = &model->config;
    int H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim;
    int R = H / KV, slots = cache->slots;
    int slot = position % slots;
    memcpy(cache->k + (long)slot * KV * D, k, (size_t)KV * D * sizeof(float));
    memcpy(cache->v + (long)slot * KV * D, v, (size_t)KV * D * sizeof(float));
    cache->position[slot] = position;
    int seen = position + 1 < c->window ? position + 1 : c->window;
    seen = seen < slots ? seen : slots;
    int first = position - seen + 1;
    float scale = (float)sqrt((double)D);
    float *scores = scratch;                                       // (seen)
    for (int h = 0; h < H; h++) {
        int g = h / R;
        for (int i = 0; i < seen; i++) {
            const float *key = cache->k + ((long)((first + i) % slots) * KV + g) * D;
            float sum = 0.0f;
            for (int d = 0; d < D; d++) {
                sum = sum + q[h * D + d] * key[d];
            }
            scores[i] = sum / scale;
        }
        if (c->positions == ALIBI) {
            alibi_bias(scores, model->slopes[h], position, first, seen);
        }
        softmax_exact_lastdim(scores, 1, seen);
        for (int e = 0; e < D; e++) {
            float sum = 0.0f;
            for (int i = 0; i < seen; i++) {
                sum = sum + scores[i] * cache->v[((long)((first + i) % slots) * KV + g) * D + e];
            }
            y[h * D + e] = sum;
        }
    }
}

// The state takes the new token, S += phi(k) v^T, z += phi(k), and each query head reads it:
// y = phi(q)^T S / (phi(q) . z + eps). The same steps, in the same order, as a training
// forward's at that position: the same bits.
void attend_state(float *y, LayerCache *cache, const float *q_phi, const float *k_phi,
                  const float *v, const Config *c) {
    int H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim, R = H / KV;
    for (int g = 0; g < KV; g++) {
        float *S = cache->S + (long)g * D * D, *z = cache->z + (long)g * D;
        linear_state_update(S, z, k_phi + g * D, v + g * D, D);
        for (int h = g * R; h < (g + 1) * R; h++) {
            float norm = linear_read(y + h * D, S, z, q_phi + h * D, D);
            for (int e = 0; e < D; e++) {
                y[h * D + e] = y[h * D + e] * norm;
            }
        }
    }
}
