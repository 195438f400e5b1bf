// backward.c - lesson 16's backward pass: loss.backward(), written out.
//
// draft
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
    return w;
}

// y = x @ W^T (rows x in -> rows x out):  dx = dy @ W,  dW = dy^T @ x.  dx may be NULL.
static void linear_backward(float *dx, float *dW, const Linear *layer, const float *dy,
                            const float *x, int rows) {
    int in = layer->in_features, out = layer->out_features;
    if (dx != NULL) {
        kernels->gemm(dx, in, dy, out, 1, layer->weight->data, in, rows, in, out, false);
    }
    kernels->gemm(dW, in, dy, 1, out, x, in, out, in, rows, false);
}

// out = weight * (x * rstd), rstd = 1 / sqrt(mean(x^2) + eps), autograd's steps in reverse:
//   d_weight = sum over rows of d_out * (x * rstd)
//   d_xn     = d_out * weight                      (xn = x * rstd)
//   direct   = d_xn * rstd                         (x's path straight through the product)
//   d_rstd   = sum over c of d_xn * x
//   d_var    = -0.5 * d_rstd * rstd^3              (rsqrt's derivative)
//   through_mean = d_var / C * 2x                  (mean of x^2)
static void rms_norm_backward(float *direct, float *through_mean, float *d_weight,
                              float *products, const float *d_out, const float *x,
                              const float *rstd, const float *weight, int rows, int C,
                              float *row) {
    for (long r = 0; r < rows; r++) {
        for (int c = 0; c < C; c++) {
            products[r * C + c] = d_out[r * C + c] * (x[r * C + c] * rstd[r]);
        }
    }
    sum_exact_columns(d_weight, products, rows, C);
    for (long r = 0; r < rows; r++) {
        for (int c = 0; c < C; c++) {
            float d_xn = d_out[r * C + c] * weight[c];
            direct[r * C + c] = d_xn * rstd[r];
            row[c] = d_xn * x[r * C + c];
        }
        float d_rstd = sum_exact(row, C);
        float d_var = (-0.5f * d_rstd) * ((rstd[r] * rstd[r]) * rstd[r]);
        float d_square = d_var / (float)C;
        for (int c = 0; c < C; c++) {
            through_mean[r * C + c] = d_square * (2.0f * x[r * C + c]);
        }
    }
}

// out = (a + b) + c: a tensor that feeds three operations gets the sum of their three
// gradients, added in the order autograd's engine delivers them (which matters to the last
// bit; the order used here was found by trying each against PyTorch).
static void add3(float *out, const float *a, const float *b, const float *c, long n) {
    for (long i = 0; i < n; i++) {
        out[i] = (a[i] + b[i]) + c[i];
    }
}

// RoPE backward in place on d (B, N, heads, D): the transpose of the turn,
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

// Attention backward for one layer: from d_y (B, N, H, D) to d_q (B, N, H, D), d_k and
// d_v (B, N, KV, D), each head as lesson 14's naive backward:
//   dP = dO V^T,  dV = P^T dO,  dS = P * (dP - rowsum(dP * P)),  dQ = dS K / sqrt(D),
//   dK = dS^T Q / sqrt(D),  the R query heads of a group summed into their key/value head.
static void attention_backward(BackwardScratch *w, const LayerActivations *a, const Config *c,
                               int B) {
    int N = c->seq, H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim;
    int R = H / KV;
    float scale = (float)sqrt((double)D);
    float *v_t = w->scratch;
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            int g = h / R;
            bool first = h % R == 0;
            const float *q_bh = a->q + ((long)b * N * H + h) * D;
            const float *k_bg = a->k + ((long)b * N * KV + g) * D;
            const float *v_bg = a->v + ((long)b * N * KV + g) * D;
            const float *att = a->att + ((long)b * H + h) * N * N;
            const float *dy_bh = w->d_y + ((long)b * N * H + h) * D;
            for (int s = 0; s < N; s++) {
                for (int d = 0; d < D; d++) {
                    v_t[d * N + s] = v_bg[(long)s * KV * D + d];
                }
            }
            float *dv = w->d_v + ((long)b * N * KV + g) * D;        // this group's dV and dK
            float *dk = w->d_k + ((long)b * N * KV + g) * D;
            kernels->gemm(w->d_att, N, dy_bh, H * D, 1, v_t, N, N, N, D, false);     // dP = dO V^T
            kernels->gemm(dv, KV * D, att, 1, N, dy_bh, H * D, N, D, N, !first);    // dV += P^T dO
            for (int t = 0; t < N; t++) {
                const float *p = att + t * N, *dp = w->d_att + t * N;
                float row = softmax_exact_backward_row(dp, p, N);
                for (int s = 0; s < N; s++) {
                    w->d_scores[t * N + s] = s <= t ? ((dp[s] - row) * p[s]) / scale : 0.0f;
                }
            }
            float *dq = w->d_q + ((long)b * N * H + h) * D;
            kernels->gemm(dq, H * D, w->d_scores, N, 1, k_bg, KV * D, N, D, N, false);  // dS K
            kernels->gemm(dk, KV * D, w->d_scores, 1, N, q_bh, H * D, N, D, N, !first); // += dS^T Q
        }
    }
}

static void layer_backward(LayerGrads *lg, BackwardScratch *w, const DecoderLayer *layer,
                           const LayerActivations *a, const Activations *acts, const Config *c,
                           int B) {
    int N = c->seq, C = c->hidden_size, F = c->intermediate_size;
    int H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim;
    int rows = B * N;
    long n = (long)rows * C;
    // out = x2 + down_proj(act * up): d_x holds d_out
    linear_backward(w->d_prod, lg->down_proj, &layer->down_proj, w->d_x, a->prod, rows);
    for (long i = 0; i < (long)rows * F; i++) {
        w->d_gate[i] = w->d_prod[i] * a->up[i];      // d_act, for a moment
        w->d_up[i] = w->d_prod[i] * a->act[i];
    }
    kernels->silu_backward(w->d_gate, w->d_gate, a->gate, (long)rows * F);
    linear_backward(w->d_h, lg->gate_proj, &layer->gate_proj, w->d_gate, a->h2, rows);
    linear_backward(w->products, lg->up_proj, &layer->up_proj, w->d_up, a->h2, rows);
    for (long i = 0; i < n; i++) {
        w->d_h[i] = w->d_h[i] + w->products[i];
    }
    rms_norm_backward(w->direct, w->through_mean, lg->post_attention_layernorm, w->products,
                      w->d_h, a->x2, a->rstd2, layer->post_attention_layernorm->data, rows, C,
                      w->scratch);
    add3(w->d_x2, w->d_x, w->direct, w->through_mean, n);   // residual first, then the norm's
    // x2 = x + o_proj(y)
    linear_backward(w->d_y, lg->o_proj, &layer->o_proj, w->d_x2, a->y, rows);
    attention_backward(w, a, c, B);
    rope_backward(w->d_q, acts->cos, acts->sin, rows, N, H, D);
    rope_backward(w->d_k, acts->cos, acts->sin, rows, N, KV, D);
    linear_backward(w->direct, lg->q_proj, &layer->q_proj, w->d_q, a->h1, rows);
    linear_backward(w->through_mean, lg->k_proj, &layer->k_proj, w->d_k, a->h1, rows);
    linear_backward(w->products, lg->v_proj, &layer->v_proj, w->d_v, a->h1, rows);
    add3(w->d_h, w->through_mean, w->products, w->direct, n);   // k and v's, then q's
    rms_norm_backward(w->direct, w->through_mean, lg->input_layernorm, w->products, w->d_h,
                      a->x, a->rstd1, layer->input_layernorm->data, rows, C, w->scratch);
    add3(w->d_x, w->d_x2, w->direct, w->through_mean, n);
}

void model_backward(Grads *grads, BackwardScratch *w, const Model *model,
                    const Activations *acts, const Tensor *input_ids, const Tensor *labels,
                    int answered) {
    const Config *c = &model->config;
    int NV = c->vocab_size, C = c->hidden_size, B = size(input_ids, 0), rows = B * c->seq;
    // nll_loss: -1/answered at each label asked, 0 elsewhere; then log_softmax's backward
    memset(w->d_logits, 0, (size_t)rows * NV * sizeof(float));
    float d_label = -(1.0f / (float)answered);
    for (int r = 0; r < rows; r++) {
        int label = (int)labels->data[r];
        if (label != IGNORE_INDEX) {
            w->d_logits[(long)r * NV + label] = d_label;
        }
    }
    log_softmax_exact_backward_lastdim(w->d_logits, w->d_logits, acts->log_probs, rows, NV);
    linear_backward(w->d_h, grads->lm_head, &model->lm_head, w->d_logits, acts->h_final, rows);
    rms_norm_backward(w->direct, w->through_mean, grads->norm, w->products, w->d_h,
                      acts->x_final, acts->rstd_final, model->norm->data, rows, C, w->scratch);
    for (long i = 0; i < (long)rows * C; i++) {
        w->d_x[i] = w->direct[i] + w->through_mean[i];
    }
    for (int l = c->num_hidden_layers - 1; l >= 0; l--) {
        layer_backward(&grads->layers[l], w, &model->layers[l], &acts->layers[l], acts, c, B);
    }
    // embed_tokens: each row's gradient added to its token's row, in order
    memset(grads->embed_tokens, 0, (size_t)numel(model->embed_tokens) * sizeof(float));
    for (int r = 0; r < rows; r++) {
        float *row = grads->embed_tokens + (long)input_ids->data[r] * C;
        for (int i = 0; i < C; i++) {
            row[i] = row[i] + w->d_x[(long)r * C + i];
        }
    }
}
