// layers.c - each operation of the model, its forward and then its backward, in the order
// the forward meets them: the embedding, RMSNorm, nn.Linear, RoPE, attention, SwiGLU, and
// the loss (model.c puts them together into layers and the model).
//
// A forward computes the operation and keeps what its backward needs (what autograd saves).
// A backward is the chain rule for that one operation: if y = f(x) and the loss's gradient
// dy (dL/dy, the shape of y) is known, then dx = (dy/dx)^T dy, the shape of x, and the same
// for the operation's parameters. The simplest ones, which model.c writes inline:
//   y = a * b (elementwise)        da = dy * b            db = dy * a
//   y = a + b (the residual)       da = dy                db = dy
// and every other below, derived where it is defined.
//
// Every sum adds in PyTorch's order, with PyTorch's roundings, so that each number is
// autograd's to the bit (on PyTorch's reference BLAS, one thread: docs/16-train.md says how
// that was found): the matrix products in the reference BLAS's order (kernels.h), the row
// and column sums as torch.sum adds (sum_exact.h), softmax, log_softmax and their backward
// as their CPU kernels compute them (softmax_exact.h).
//
// Size letters: B batch, N tokens a sequence, C hidden_size, H query heads, KV key/value
// heads, R = H / KV, D head_dim, NV vocabulary; r a row b*N + t of a (B*N, .) matrix.
#include "layers.h"

#include <math.h>
#include <string.h>

#include "exact/softmax_exact.h"
#include "exact/sum_exact.h"
#include "kernels.h"

// --- the embedding ----------------------------------------------------------------------------

// x = embed_tokens[input_ids]: row r of x is a copy of row ids[r] of the table.
void embedding_forward(float *x, const Tensor *embed_tokens, const float *ids, int r0, int rows) {
    int C = size(embed_tokens, 1);
    for (int r = r0; r < r0 + rows; r++) {
        memcpy(x + (long)r * C, embed_tokens->data + (long)ids[r] * C, (size_t)C * sizeof(float));
    }
}

// A copy's gradient goes back to where it was copied from: row r's gradient is added into
// row ids[r] of the table's (a token seen twice gets both), in order of r, which gives
// PyTorch's bits (test_lesson16 compares them; test_lesson17 this copy's). Rows of tokens
// not in the batch stay 0.
void embedding_backward(float *d_table, const float *d_x, const Tensor *embed_tokens,
                        const float *ids, int rows) {
    int C = size(embed_tokens, 1);
    memset(d_table, 0, (size_t)numel(embed_tokens) * sizeof(float));
    for (int r = 0; r < rows; r++) {
        float *row = d_table + (long)ids[r] * C;
        kernels->add(row, row, d_x + (long)r * C, C);
    }
}

// --- RMSNorm ----------------------------------------------------------------------------------

// LlamaRMSNorm (lesson 15) on `rows` rows of C: out = weight * (x * rstd), where
// rstd = 1 / sqrt(mean(x^2) + eps) is kept for the backward. `squares` holds C floats.
void rms_norm_forward(float *out, float *rstd, const float *x, const float *weight, int rows,
                      int C, float eps, float *squares) {
    for (int r = 0; r < rows; r++) {
        const float *x_r = x + (long)r * C;
        float *out_r = out + (long)r * C;
        kernels->mul(squares, x_r, x_r, C);                               // x^2 (C)
        rstd[r] = 1.0f / sqrtf(kernels->sum(squares, C) / (float)C + eps);   // PyTorch's sum
        kernels->scale(out_r, x_r, rstd[r], C);                           // x * rstd (C)
        kernels->mul(out_r, weight, out_r, C);                            // weight * that
    }
}

// out_c = weight_c * x_c * rstd, rstd = (mean over c of x_c^2 + eps)^(-1/2). x reaches out
// two ways: directly (x_c in the product) and through rstd, which every x_j moves:
// d rstd / d x_c = -rstd^3 * x_c / C. So
//   d_weight_c = sum over rows of d_out_c * x_c * rstd
//   d_x_c      = d_out_c weight_c rstd  -  x_c rstd^3 / C * sum_j d_out_j weight_j x_j
// computed in autograd's steps (each its own rounding), from the last operation back:
//   d_xn     = d_out * weight                      (xn = x * rstd, the normalised row)
//   direct   = d_xn * rstd                         (x's path straight through the product)
//   d_rstd   = sum over c of d_xn * x              (rstd was broadcast over the row)
//   d_var    = -0.5 * d_rstd * rstd^3              (rsqrt's derivative: -1/2 v^(-3/2))
//   through_mean = d_var / C * 2x                  (the mean of x^2)
// The two paths come back separately: the caller adds them to what else reached x.
// `products` holds rows * C floats, `scratch` 2C.
void rms_norm_backward(float *direct, float *through_mean, float *d_weight, float *products,
                       const float *d_out, const float *x, const float *rstd,
                       const float *weight, int rows, int C, float *scratch) {
    float *d_xn = scratch, *row = scratch + C;                    // (C) each, for one row
    for (long r = 0; r < rows; r++) {
        kernels->scale(products + r * C, x + r * C, rstd[r], C);                // x * rstd
        kernels->mul(products + r * C, d_out + r * C, products + r * C, C);     // d_out * it
    }
    sum_exact_columns(d_weight, products, rows, C);
    for (long r = 0; r < rows; r++) {
        kernels->mul(d_xn, d_out + r * C, weight, C);                           // d_xn (C)
        kernels->scale(direct + r * C, d_xn, rstd[r], C);                       // direct (C)
        kernels->mul(row, d_xn, x + r * C, C);                                  // d_xn * x (C)
        float d_rstd = kernels->sum(row, C);                                    // PyTorch's sum
        float d_var = (-0.5f * d_rstd) * ((rstd[r] * rstd[r]) * rstd[r]);
        float d_square = d_var / (float)C;
        kernels->scale(through_mean + r * C, x + r * C, 2.0f, C);               // 2x (exact)
        kernels->scale(through_mean + r * C, through_mean + r * C, d_square, C);
    }
}

// --- nn.Linear --------------------------------------------------------------------------------

// y (rows, out) = x (rows, in) @ W^T: nn.Linear without a bias. The kernel reads a row of
// its right operand at a time, so W (out, in) is turned into W^T (in, out) first, in
// `scratch` (in * out floats).
void linear_forward(float *y, const Linear *layer, const float *x, int rows, float *scratch) {
    int in = layer->in_features, out = layer->out_features;
    const float *W = layer->weight->data;
    for (int o = 0; o < out; o++) {
        for (int i = 0; i < in; i++) {
            scratch[i * out + o] = W[o * in + i];
        }
    }
    kernels->gemm(y, out, x, in, 1, scratch, out, rows, out, in, false);
}

// Each y[r][o] = sum_i x[r][i] W[o][i], so dx[r][i] = sum_o dy[r][o] W[o][i] and
// dW[o][i] = sum_r dy[r][o] x[r][i]:
//   dx = dy @ W,   dW = dy^T @ x   (the weight's gradient sums over every row of the batch)
void linear_backward(float *dx, float *dW, const Linear *layer, const float *dy, const float *x,
                     int rows) {
    int in = layer->in_features, out = layer->out_features;
    if (dx != NULL) {
        kernels->gemm(dx, in, dy, out, 1, layer->weight->data, in, rows, in, out, false);
    }
    kernels->gemm(dW, in, dy, 1, out, x, in, out, in, rows, false);
}

// --- RoPE -------------------------------------------------------------------------------------

// RoPE's table: position t turns pair i by t * theta_i, theta_i = base^(-2i/D) (lesson 15).
// The angle is a float product, as PyTorch's; cos and sin are worked in double, rounded once.
void rope_table(float *cos_t, float *sin_t, int N, int D, int base) {
    for (int i = 0; i < D / 2; i++) {
        float inv_freq = 1.0f / powf((float)base, (float)(2 * i) / (float)D);
        for (int t = 0; t < N; t++) {
            float angle = (float)t * inv_freq;
            cos_t[t * (D / 2) + i] = (float)cos((double)angle);
            sin_t[t * (D / 2) + i] = (float)sin((double)angle);
        }
    }
}

// RoPE in place on `rows` rows (row r at position r % N) of `heads` heads of D, the pairs
// (i, i + D/2) of rotate_half: x * cos + rotate_half(x) * sin, each product rounded. Each
// pair (a, e) is turned by its angle: (a c - e s, e c + a s), the 2x2 matrix [c -s; s c].
void rope_forward(float *x, const float *cos, const float *sin, int r0, int rows, int N,
                  int heads, int D) {
    int half = D / 2;
    for (int r = r0; r < r0 + rows; r++) {
        int t = r % N;
        for (int h = 0; h < heads; h++) {
            float *x_h = x + ((long)r * heads + h) * D;
            for (int i = 0; i < half; i++) {
                float a = x_h[i], e = x_h[i + half];
                float c = cos[t * half + i], s = sin[t * half + i];
                x_h[i] = a * c - e * s;
                x_h[i + half] = e * c + a * s;
            }
        }
    }
}

// The backward multiplies by the transpose [c s; -s c]: the gradient is turned back by the
// same angle. In place on d (B, N, heads, D):
//   d[i] <- d[i] cos + d[i + D/2] sin,   d[i + D/2] <- d[i + D/2] cos - d[i] sin
void rope_backward(float *d, const float *cos, const float *sin, int rows, int N, int heads,
                   int D) {
    int half = D / 2;
    for (int r = 0; r < rows; r++) {
        int t = r % N;
        for (int h = 0; h < heads; h++) {
            float *d_h = d + ((long)r * heads + h) * D;
            for (int i = 0; i < half; i++) {
                float a = d_h[i], e = d_h[i + half];
                float c = cos[t * half + i], s = sin[t * half + i];
                d_h[i] = a * c + e * s;
                d_h[i + half] = e * c - a * s;
            }
        }
    }
}

// --- attention --------------------------------------------------------------------------------

// Attention's products skip most of what the causal mask makes zero, a block of CAUSAL_BLOCK
// queries (or keys) at a time: at seq 256 they do 56% of the whole products' multiply-adds,
// at 128 62.5% (blocks of 32: the triangle and the diagonal's blocks, whose upper halves are
// still computed), where PyTorch computes them whole and masks. The bits stay PyTorch's: a
// masked weight, and its gradient, is exactly 0, so each product it would enter is +0 or -0
// (for finite values: 0 * inf is NaN, which a run that has not diverged never holds), and
// kernels.h's sums (sum = 0, then sum + product, in order)
// never hold -0 (+0 + -0 is +0), so adding a zero product never changes a sum. Leaving out
// the zeros at the end of a sum (q's row after its own key) or at its start (a key's column
// before its own query) gives the same float.
#define CAUSAL_BLOCK 32

static int min_int(int a, int b) {
    return a < b ? a : b;
}

// The (query, key) pairs each of attention's products computes in a sequence of N, by those
// blocks: block t0 .. t0+rows-1 takes keys 0 .. t0+rows-1 (the triangle and the diagonal's
// blocks; N * N if computed whole, N * (N + 1) / 2 the triangle alone). The products by
// blocks of keys (P^T dO, dS^T Q) take the same number, block s0 .. s0+rows-1 summing over
// the N - s0 queries from s0 on.
double causal_pairs(int N) {
    double pairs = 0;
    for (int t0 = 0; t0 < N; t0 += CAUSAL_BLOCK) {
        int rows = min_int(CAUSAL_BLOCK, N - t0);
        pairs += (double)rows * (t0 + rows);
    }
    return pairs;
}

// Causal attention of the queries at positions start .. start+T-1 on the keys 0 .. start+T-1
// (L of them), query head h reading key/value head g = h / R where it lies (lesson 15):
//   att = softmax(q k^T / sqrt(D), -inf after the query's own position),  y = att @ v
// Whole sequences are start 0, T = N. With start > 0 (B = 1, decoding) the keys and values
// of positions before start are the ones earlier calls left in a->k and a->v: the KV cache.
// att (B, H, N, N) is kept whole for the backward, as autograd keeps it.
void attention_forward(LayerActivations *a, const Config *c, int B, int start, int T,
                       float *k_t) {
    int N = c->seq, H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim;
    int R = H / KV, L = start + T;
    float scale = (float)sqrt((double)D);   // math.sqrt(head_dim), rounded to a float
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            int g = h / R;
            const float *q = a->q + (((long)b * N + start) * H + h) * D;   // row t: + t*H*D
            const float *k = a->k + ((long)b * N * KV + g) * D;            // row s: + s*KV*D
            const float *v = a->v + ((long)b * N * KV + g) * D;
            float *att = a->att + ((long)b * H + h) * N * N;               // (T, L)
            for (int s = 0; s < L; s++) {                                  // k^T (D, L)
                for (int d = 0; d < D; d++) {
                    k_t[d * L + s] = k[(long)s * KV * D + d];
                }
            }
            float *y = a->y + (((long)b * N + start) * H + h) * D;         // row t: + t*H*D
            // q @ k^T, a block of queries at a time: block t0 .. t0+rows-1 sees the keys
            // 0 .. start+t0+rows-1 (`seen`); the scores after them are masked, so they are
            // not computed (causal_scale writes -inf there whatever the product left).
            for (int t0 = 0; t0 < T; t0 += CAUSAL_BLOCK) {
                int rows = min_int(CAUSAL_BLOCK, T - t0), seen = start + t0 + rows;
                kernels->gemm(att + (long)t0 * L, L, q + (long)t0 * H * D, H * D, 1, k_t, L,
                              rows, seen, D, false);                        // (rows, seen)
            }
            kernels->causal_scale(att, T, L, start, scale);  // / sqrt(D); -inf after query t
            kernels->softmax_rows(att, T, L);         // exp(-inf) = 0: no weight on the future
            // att @ v, the same blocks: a query's weights after `seen` are 0, and a sum of
            // products that ends in zeros is the sum without them, to the bit (above, at
            // CAUSAL_BLOCK).
            for (int t0 = 0; t0 < T; t0 += CAUSAL_BLOCK) {
                int rows = min_int(CAUSAL_BLOCK, T - t0), seen = start + t0 + rows;
                kernels->gemm(y + (long)t0 * H * D, H * D, att + (long)t0 * L, L, 1, v, KV * D,
                              rows, D, seen, false);                        // (rows, D)
            }
        }
    }
}

// The gradients of the R query heads of a group (R, N, D) summed into their key/value head's
// rows (N of D, `ld` apart): repeat_kv made R copies of the head, so its gradient is the sum
// of theirs. Autograd sums them as torch.sum adds down the first dim, which for more than 4
// heads is not one head after the other, and depends on how the gradient lies in memory:
// dV's came out of its product as (N, D), contiguous (sum_exact_columns); dK's as the
// gradient of k^T, (D, N), and is summed column by column of D (sum_exact_columns_strided,
// in blocks of 4 columns).
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

// Each head as lesson 14 derives it (part 1 there): with S = Q K^T / sqrt(D), P = softmax(S)
// (the stored att), O = P V and dO = d_y,
//   dP = dO V^T,  dV = P^T dO,  dS = P * (dP - rowsum(dP * P)),  dQ = dS K / sqrt(D),
//   dK = dS^T Q / sqrt(D)
// A masked score had P = 0, so its dS is 0: nothing flows to a future key. A key/value head
// read by R query heads gets the sum of their dK and dV (group_sum). At these sizes the
// (N, N) weights are kept from the forward; lesson 14's FlashAttention backward recomputes
// them tile by tile instead, which is what long sequences need.
void attention_backward(BackwardScratch *w, const LayerActivations *a, const Config *c, int B) {
    int N = c->seq, H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim;
    int R = H / KV;
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
            // dO V^T (N, N), by blocks of queries as in the forward: block t0 .. t1-1 up to
            // key t1-1; after it P is 0, and so is dP * P: those entries are set to 0.
            for (int t0 = 0; t0 < N; t0 += CAUSAL_BLOCK) {
                int rows = min_int(CAUSAL_BLOCK, N - t0), t1 = t0 + rows;
                kernels->gemm(w->d_att + (long)t0 * N, N, dy_bh + (long)t0 * H * D, H * D, 1,
                              v_t, N, rows, t1, D, false);                  // (rows, t1)
                for (int t = t0; t < t1; t++) {
                    memset(w->d_att + (long)t * N + t1, 0, (size_t)(N - t1) * sizeof(float));
                }
            }
            for (int t = 0; t < N; t++) {
                const float *p = att + t * N, *dp = w->d_att + t * N;
                float row = kernels->softmax_backward_row(dp, p, N);
                // d_scores[s] = ((dp[s] - row) * p[s]) / scale for s <= t, 0 after
                kernels->softmax_backward_scaled(w->d_scores + t * N, dp, p, row, scale, t + 1, N);
            }
            // P^T dO (N, D), by blocks of keys: key s has weight 0 from every query before it,
            // so block s0 .. s0+rows-1 sums over the queries s0 .. N-1 only (a sum that starts
            // with zeros is the sum without them). It runs after the rows' pass above, which
            // reads att in order and leaves it in the cache: this product reads it down its
            // columns, a cache line a query. When it came first, with att (written by the
            // forward long before) still to be fetched from memory, it and dS^T Q below took
            // twice the time they take now, together (docs/fast-on-a-cpu.md, lesson 17).
            for (int s0 = 0; s0 < N; s0 += CAUSAL_BLOCK) {
                int rows = min_int(CAUSAL_BLOCK, N - s0);
                kernels->gemm(dv_r + (long)s0 * D, D, att + (long)s0 * N + s0, 1, N,
                              dy_bh + (long)s0 * H * D, H * D, rows, D, N - s0, false);
            }
            float *dq = w->d_q + ((long)b * N * H + h) * D;
            // dS K (N, D) and dS^T Q (N, D), by the same blocks: dS is 0 after each query's
            // own position, as P is.
            for (int t0 = 0; t0 < N; t0 += CAUSAL_BLOCK) {
                int rows = min_int(CAUSAL_BLOCK, N - t0);
                kernels->gemm(dq + (long)t0 * H * D, H * D, w->d_scores + (long)t0 * N, N, 1,
                              k_bg, KV * D, rows, D, t0 + rows, false);     // dS K
                kernels->gemm(dk_r + (long)t0 * D, D, w->d_scores + (long)t0 * N + t0, 1, N,
                              q_bh + (long)t0 * H * D, H * D, rows, D, N - t0, false);  // dS^T Q
            }
            if (r == R - 1) {   // the group is done: its R heads' dK and dV, summed
                group_sum(w->d_k + ((long)b * N * KV + g) * D, w->group_dk, w->group_sum, R,
                          N, D, KV * D, true);
                group_sum(w->d_v + ((long)b * N * KV + g) * D, w->group_dv, w->group_sum, R,
                          N, D, KV * D, false);
            }
        }
    }
}

// --- SwiGLU -----------------------------------------------------------------------------------

// The middle of LlamaMLP: act = silu(gate) = gate / (1 + exp(-gate)), prod = act * up (the
// down projection follows, an nn.Linear).
void swiglu_forward(float *act, float *prod, const float *gate, const float *up, long n) {
    kernels->silu(act, gate, n);        // PyTorch's F.silu, exps and all (kernels.h)
    kernels->mul(prod, act, up, n);
}

// prod = silu(gate) * up: d_up = d_prod * silu(gate), d silu(gate) = d_prod * up, and
// silu(z) = z s(z), s the sigmoid, whose derivative s (1 - s) gives
//   d gate = d silu(gate) * s(gate) * (1 + gate * (1 - s(gate)))
void swiglu_backward(float *d_gate, float *d_up, const float *d_prod, const float *gate,
                     const float *up, const float *act, long n) {
    kernels->mul(d_gate, d_prod, up, n);    // d silu(gate), for a moment
    kernels->mul(d_up, d_prod, act, n);
    kernels->silu_backward(d_gate, d_gate, gate, n);   // silu' (kernels.h)
}

// --- cross-entropy ----------------------------------------------------------------------------

// F.cross_entropy(logits.view(-1, NV), labels.view(-1)): log_softmax, then the mean of
// -log p(label) over the rows that ask (label -100 asks nothing). PyTorch's nll_loss adds
// those terms in a cascade (8 levels; a level moves up every 16 rows or more) instead of
// one after the other, and so does this, so that the loss is PyTorch's to the bit. PyTorch
// takes the log_softmax of every row; only the rows that ask reach the loss, so only theirs
// are computed here (the others' log_probs are left unset).
float cross_entropy_forward(float *log_probs, int *asked, const float *logits,
                            const Tensor *labels, int NV) {
    long rows = numel(labels);
    int power = 0;
    while ((1L << power) < rows) {
        power += 1;   // ceil(log2(rows))
    }
    power = power / 8 > 4 ? power / 8 : 4;
    long mask = (1L << power) - 1;
    float level_sums[8] = {0};
    *asked = 0;
    for (long r = 0; r < rows; r++) {
        int label = (int)labels->data[r];
        if (label == IGNORE_INDEX) {
            continue;
        }
        *asked += 1;
        kernels->log_softmax_rows(&log_probs[r * NV], &logits[r * NV], 1, NV);
        level_sums[0] -= log_probs[r * NV + label];
        for (int level = 0; level < 7 && (r & (mask << (level * power))) == 0; level++) {
            level_sums[level + 1] += level_sums[level];
            level_sums[level] = 0.0f;
        }
    }
    float loss = 0.0f;
    for (int level = 0; level < 8; level++) {
        loss += level_sums[level];
    }
    return loss / (float)*asked;
}

// loss = -(1/asked) * sum over the asked rows of log_probs[r, label], so its gradient is
// -1/asked at each label asked and 0 everywhere else (nll_loss's backward); then
// log_probs = logits - log(sum(exp(logits))) gives, row by row,
// d_logits = d_log_probs - softmax(logits) * sum(d_log_probs): on an asked row,
// (softmax - one_hot(label)) / asked, the famous "prediction minus target". A row that asks
// nothing stays 0 (PyTorch computes 0 - softmax * 0 there, +0 too).
void cross_entropy_backward(float *d_logits, const float *log_probs, const Tensor *labels,
                            int rows, int NV, int asked) {
    memset(d_logits, 0, (size_t)rows * NV * sizeof(float));
    float d_label = -(1.0f / (float)asked);
    for (int r = 0; r < rows; r++) {
        int label = (int)labels->data[r];
        if (label != IGNORE_INDEX) {
            float *row = &d_logits[(long)r * NV];
            row[label] = d_label;
            kernels->log_softmax_backward_rows(row, row, &log_probs[(long)r * NV], 1, NV);
        }
    }
}
