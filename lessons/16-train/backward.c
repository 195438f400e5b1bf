// backward.c - loss.backward(), written out: the gradient of the loss with respect to every
// parameter, each operation of the forward taken back in turn, last first.
//
// The chain rule, one operation at a time: if y = f(x) and the loss's gradient dy (dL/dy,
// the shape of y) is known, then dx = (dy/dx)^T dy, the shape of x. Every operation of the
// forward gets a backward that takes dy and gives dx (and d of its parameters):
//   y = x @ W^T (nn.Linear)        dx = dy @ W            dW = dy^T @ x
//   y = a * b (elementwise)        da = dy * b            db = dy * a
//   y = a + b (the residual)       da = dy                db = dy
//   RMSNorm, RoPE, silu, attention, cross-entropy, the embedding: below, each derived.
// A tensor used by several operations gets the sum of their gradients: the residual stream
// x feeds its layer's norm (twice: x * rstd and x.pow(2)) and the residual add.
//
// Every sum here adds in PyTorch's order, with PyTorch's roundings, so that each gradient is
// autograd's to the bit (docs/16-train.md says how that was found): the matrix products in
// the reference BLAS's order (kernels.h), the row and column sums as torch.sum adds
// (sum_exact.h), the softmax and log_softmax backward as their CPU kernels compute them
// (softmax_exact.h), and where one tensor collects several gradients, in the order
// autograd's engine delivers them.
#include "backward.h"

#include <math.h>
#include <string.h>

#include "exact/sum_exact.h"
#include "kernels.h"

Grads grads_init(const Model *model) {
    const Config *c = &model->config;
    Grads g;
    g.embed_tokens = floats(numel(model->embed_tokens));
    for (int l = 0; l < c->num_hidden_layers; l++) {
        const DecoderLayer *layer = &model->layers[l];
        LayerGrads *lg = &g.layers[l];
        lg->q_proj = floats(numel(layer->q_proj.weight));
        lg->k_proj = floats(numel(layer->k_proj.weight));
        lg->v_proj = floats(numel(layer->v_proj.weight));
        lg->o_proj = floats(numel(layer->o_proj.weight));
        lg->gate_proj = floats(numel(layer->gate_proj.weight));
        lg->up_proj = floats(numel(layer->up_proj.weight));
        lg->down_proj = floats(numel(layer->down_proj.weight));
        lg->input_layernorm = floats(c->hidden_size);
        lg->post_attention_layernorm = floats(c->hidden_size);
    }
    g.norm = floats(c->hidden_size);
    g.lm_head = floats(numel(model->lm_head.weight));
    return g;
}

BackwardScratch backward_scratch_init(const Config *c, int B) {
    long rows = (long)B * c->seq;
    int C = c->hidden_size, F = c->intermediate_size, N = c->seq;
    int H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim;
    BackwardScratch w;
    w.d_logits = floats(rows * c->vocab_size);
    w.d_x = floats(rows * C);
    w.d_x2 = floats(rows * C);
    w.d_h = floats(rows * C);
    w.direct = floats(rows * C);
    w.through_mean = floats(rows * C);
    w.d_y = floats(rows * H * D);
    w.d_q = floats(rows * H * D);
    w.d_k = floats(rows * KV * D);
    w.d_v = floats(rows * KV * D);
    w.d_scores = floats((long)N * N);
    w.d_att = floats((long)N * N);
    w.d_prod = floats(rows * F);
    w.d_gate = floats(rows * F);
    w.d_up = floats(rows * F);
    w.products = floats(rows * (C > F ? C : F));
    w.scratch = floats((long)(N > C ? N : C) * (D > 1 ? D : 1) + C);
    w.group_dk = floats((long)(H / KV) * N * D);
    w.group_dv = floats((long)(H / KV) * N * D);
    w.group_sum = floats((long)N * D);
    return w;
}

// nn.Linear: y = x @ W^T (rows x in -> rows x out). Each y[r][o] = sum_i x[r][i] W[o][i],
// so dx[r][i] = sum_o dy[r][o] W[o][i] and dW[o][i] = sum_r dy[r][o] x[r][i]:
//   dx = dy @ W,   dW = dy^T @ x   (the weight's gradient sums over every row of the batch)
static void linear_backward(float *dx, float *dW, const Linear *layer, const float *dy,
                            const float *x, int rows) {
    int in = layer->in_features, out = layer->out_features;
    if (dx != NULL) {
        kernels->gemm(dx, in, dy, out, 1, layer->weight->data, in, rows, in, out, false);
    }
    kernels->gemm(dW, in, dy, 1, out, x, in, out, in, rows, false);
}

// RMSNorm: out_c = weight_c * x_c * rstd, rstd = (mean over c of x_c^2 + eps)^(-1/2). x
// reaches out two ways: directly (x_c in the product) and through rstd, which every x_j
// moves: d rstd / d x_c = -rstd^3 * x_c / C. So
//   d_weight_c = sum over rows of d_out_c * x_c * rstd
//   d_x_c      = d_out_c weight_c rstd  -  x_c rstd^3 / C * sum_j d_out_j weight_j x_j
// computed in autograd's steps (each its own rounding), from the last operation back:
//   d_xn     = d_out * weight                      (xn = x * rstd, the normalised row)
//   direct   = d_xn * rstd                         (x's path straight through the product)
//   d_rstd   = sum over c of d_xn * x              (rstd was broadcast over the row)
//   d_var    = -0.5 * d_rstd * rstd^3              (rsqrt's derivative: -1/2 v^(-3/2))
//   through_mean = d_var / C * 2x                  (the mean of x^2)
// The two paths come back separately: the caller adds them to what else reached x.
// `scratch` holds 2C floats.
static void rms_norm_backward(float *direct, float *through_mean, float *d_weight,
                              float *products, const float *d_out, const float *x,
                              const float *rstd, const float *weight, int rows, int C,
                              float *scratch) {
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

// out = (a + b) + c: a tensor that feeds three operations gets the sum of their three
// gradients, added in the order autograd's engine delivers them (which matters to the last
// bit; the order used here was found by trying each against PyTorch).
static void add3(float *out, const float *a, const float *b, const float *c, long n) {
    kernels->add(out, a, b, n);     // a + b
    kernels->add(out, out, c, n);   // then + c
}

// RoPE turned each pair (a, e) by the angle of its position: (a c - e s, e c + a s), a 2x2
// matrix [c -s; s c]. Its backward multiplies by the transpose [c s; -s c]: the gradient is
// turned back by the same angle. In place on d (B, N, heads, D):
//   d[i] <- d[i] cos + d[i + D/2] sin,   d[i + D/2] <- d[i + D/2] cos - d[i] sin
static void rope_backward(float *d, const float *cos, const float *sin, int rows, int N,
                          int heads, int D) {
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

// The gradients of the R query heads of a group (R, N, D) summed into their key/value head's
// rows (N of D, `ld` apart). Autograd sums repeat_kv's R copies as torch.sum adds down the
// first dim, which for more than 4 heads is not one head after the other, and depends on
// how the gradient lies in memory: dV's came out of its product as (N, D), contiguous
// (sum_exact_columns); dK's as the gradient of k^T, (D, N), and is summed column by column
// of D (sum_exact_columns_strided, in blocks of 4 columns).
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

// Attention backward for one layer, each head as lesson 14 derives it (part 1 there): with
// S = Q K^T / sqrt(D), P = softmax(S) (the stored att), O = P V and dO = d_y,
//   dP = dO V^T,  dV = P^T dO,  dS = P * (dP - rowsum(dP * P)),  dQ = dS K / sqrt(D),
//   dK = dS^T Q / sqrt(D)
// A masked score had P = 0, so its dS is 0: nothing flows to a future key. A key/value head
// read by R query heads gets the sum of their dK and dV (group_sum). At these sizes the
// (N, N) weights are kept from the forward; lesson 14's FlashAttention backward recomputes
// them tile by tile instead, which is what long sequences need.
static void attention_backward(BackwardScratch *w, const LayerActivations *a, const Config *c,
                               int B) {
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
            for (int s = 0; s < N; s++) {
                for (int d = 0; d < D; d++) {
                    v_t[d * N + s] = v_bg[(long)s * KV * D + d];
                }
            }
            kernels->gemm(w->d_att, N, dy_bh, H * D, 1, v_t, N, N, N, D, false);   // dO V^T
            kernels->gemm(dv_r, D, att, 1, N, dy_bh, H * D, N, D, N, false);       // P^T dO
            for (int t = 0; t < N; t++) {
                const float *p = att + t * N, *dp = w->d_att + t * N;
                float row = kernels->softmax_backward_row(dp, p, N);
                // d_scores[s] = ((dp[s] - row) * p[s]) / scale for s <= t, 0 after
                kernels->softmax_backward_scaled(w->d_scores + t * N, dp, p, row, scale, t + 1, N);
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

// One layer, from d_x (the gradient of the layer's output) back to d_x (of its input): the
// forward of train.c's layer_forward read from the bottom up.
static void layer_backward(LayerGrads *lg, BackwardScratch *w, const DecoderLayer *layer,
                           const LayerActivations *a, const Activations *acts, const Config *c,
                           int B) {
    int N = c->seq, C = c->hidden_size, F = c->intermediate_size;
    int H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim;
    int rows = B * N;
    long n = (long)rows * C, nF = (long)rows * F;
    // out = x2 + down_proj(prod), prod = silu(gate) * up: d_x holds d_out
    linear_backward(w->d_prod, lg->down_proj, &layer->down_proj, w->d_x, a->prod, rows);
    kernels->mul(w->d_gate, w->d_prod, a->up, nF);    // d silu(gate), for a moment
    kernels->mul(w->d_up, w->d_prod, a->act, nF);
    kernels->silu_backward(w->d_gate, w->d_gate, a->gate, nF);   // silu' (kernels.h)
    // gate = gate_proj(h2), up = up_proj(h2): h2 gets both
    linear_backward(w->d_h, lg->gate_proj, &layer->gate_proj, w->d_gate, a->h2, rows);
    linear_backward(w->products, lg->up_proj, &layer->up_proj, w->d_up, a->h2, rows);
    kernels->add(w->d_h, w->d_h, w->products, n);
    // h2 = post_attention_layernorm(x2); x2 also went straight to out
    rms_norm_backward(w->direct, w->through_mean, lg->post_attention_layernorm, w->products,
                      w->d_h, a->x2, a->rstd2, layer->post_attention_layernorm->data, rows, C,
                      w->scratch);
    add3(w->d_x2, w->d_x, w->direct, w->through_mean, n);   // the residual's first
    // x2 = x + o_proj(y); y from attention on RoPE(q), RoPE(k), v
    linear_backward(w->d_y, lg->o_proj, &layer->o_proj, w->d_x2, a->y, rows);
    attention_backward(w, a, c, B);
    rope_backward(w->d_q, acts->cos, acts->sin, rows, N, H, D);
    rope_backward(w->d_k, acts->cos, acts->sin, rows, N, KV, D);
    // q, k, v = q_proj(h1), k_proj(h1), v_proj(h1): h1 gets all three
    linear_backward(w->direct, lg->q_proj, &layer->q_proj, w->d_q, a->h1, rows);
    linear_backward(w->through_mean, lg->k_proj, &layer->k_proj, w->d_k, a->h1, rows);
    linear_backward(w->products, lg->v_proj, &layer->v_proj, w->d_v, a->h1, rows);
    add3(w->d_h, w->through_mean, w->products, w->direct, n);   // k's and v's, then q's
    // h1 = input_layernorm(x); x also went straight to x2
    rms_norm_backward(w->direct, w->through_mean, lg->input_layernorm, w->products, w->d_h,
                      a->x, a->rstd1, layer->input_layernorm->data, rows, C, w->scratch);
    add3(w->d_x, w->d_x2, w->direct, w->through_mean, n);   // the residual's first
}

// The loss's gradient with respect to the logits (B*N rows of NV):
// loss = -(1/asked) * sum over the asked rows of log_probs[r, label], so its gradient is
// -1/asked at each label asked and 0 everywhere else (nll_loss's backward); then
// log_probs = logits - log(sum(exp(logits))) gives, row by row,
// d_logits = d_log_probs - softmax(logits) * sum(d_log_probs): on an asked row,
// (softmax - one_hot(label)) / asked, the famous "prediction minus target". A row that asks
// nothing stays 0 (PyTorch computes 0 - softmax * 0 there, +0 too).
static void cross_entropy_backward(float *d_logits, const float *log_probs, const Tensor *labels,
                                   int rows, int NV, int asked) {
    memset(d_logits, 0, (size_t)rows * NV * sizeof(float));
    float d_label = -(1.0f / (float)asked);
    for (int r = 0; r < rows; r++) {
        int label = (int)labels->data[r];
        if (label != IGNORE_INDEX) {
            float *row = &d_logits[(long)r * NV];
            row[label] = d_label;
            log_softmax_exact_backward_lastdim(row, row, &log_probs[(long)r * NV], 1, NV);
        }
    }
}

void model_backward(Grads *grads, BackwardScratch *w, const Model *model,
                    const Activations *acts, const Tensor *input_ids, const Tensor *labels,
                    int asked) {
    const Config *c = &model->config;
    int NV = c->vocab_size, C = c->hidden_size, B = size(input_ids, 0), rows = B * c->seq;
    cross_entropy_backward(w->d_logits, acts->log_probs, labels, rows, NV, asked);
    // logits = lm_head(h_final), h_final = norm(x_final)
    linear_backward(w->d_h, grads->lm_head, &model->lm_head, w->d_logits, acts->h_final, rows);
    rms_norm_backward(w->direct, w->through_mean, grads->norm, w->products, w->d_h,
                      acts->x_final, acts->rstd_final, model->norm->data, rows, C, w->scratch);
    kernels->add(w->d_x, w->direct, w->through_mean, (long)rows * C);
    for (int l = c->num_hidden_layers - 1; l >= 0; l--) {
        layer_backward(&grads->layers[l], w, &model->layers[l], &acts->layers[l], acts, c, B);
    }
    // x = embed_tokens[input_ids]: row r of x is a copy of row input_ids[r] of the table, so
    // its gradient is added into that row (a token seen twice gets both), in order of r
    memset(grads->embed_tokens, 0, (size_t)numel(model->embed_tokens) * sizeof(float));
    for (int r = 0; r < rows; r++) {
        float *row = grads->embed_tokens + (long)input_ids->data[r] * C;
        kernels->add(row, row, w->d_x + (long)r * C, C);
    }
}
