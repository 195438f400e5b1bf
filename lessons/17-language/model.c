// model.c - the model: its parameters, drawn in PyTorch's order; the buffers its forward
// and backward write, made once; and the forward and the backward of a layer and of the
// whole model, each forward beside its backward (layers.c has the operations they call).
//
// The backward reads the forward from the bottom up. A tensor used by several operations
// gets the sum of their gradients: the residual stream x feeds its layer's norm (twice:
// x * rstd and x.pow(2)) and the residual add; the normed h1 feeds q_proj, k_proj and
// v_proj; h2 feeds gate_proj and up_proj. Where gradients meet, they are added in the order
// autograd's engine delivers them (which matters to the last bit; the order here was found
// by trying each against PyTorch).
//
// Size letters: B batch, N tokens a sequence, C hidden_size, H query heads, KV key/value
// heads, D head_dim, F intermediate_size, NV vocabulary; r0 the first row a call computes.
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "layers.h"
#include "model.h"

float *floats(long count) {
    return arena_alloc((size_t)count, sizeof(float));
}

// --- the parameters, drawn --------------------------------------------------------------------

static const char *layer_param(int layer, const char *name) {
    char *text = arena_alloc(80, 1);
    snprintf(text, 80, "layers.%d.%s", layer, name);
    return text;
}

// The modules in the order PyTorch makes them, which is the order of the draws:
// embed_tokens (nn.Embedding: normal_(0, 1)), each layer's q, k, v, o, gate, up and down
// projections (nn.Linear(bias=False): kaiming_uniform_, as lesson 2 draws them), lm_head.
// The RMSNorm weights are ones and draw nothing.
Model model_init(const Config *c) {
    Model model = {.config = *c};
    int C = c->hidden_size, F = c->intermediate_size, NV = c->vocab_size;
    int HD = c->num_attention_heads * c->head_dim, KVD = c->num_key_value_heads * c->head_dim;
    model.embed_tokens = zeros(shape2(NV, C));                                   // (NV, C)
    normal_(model.embed_tokens, 0.0, 1.0);
    named("embed_tokens.weight", model.embed_tokens);
    for (int l = 0; l < c->num_hidden_layers; l++) {
        DecoderLayer *layer = &model.layers[l];
        layer->q_proj = linear_init(layer_param(l, "self_attn.q_proj"), C, HD, false);
        layer->k_proj = linear_init(layer_param(l, "self_attn.k_proj"), C, KVD, false);
        layer->v_proj = linear_init(layer_param(l, "self_attn.v_proj"), C, KVD, false);
        layer->o_proj = linear_init(layer_param(l, "self_attn.o_proj"), HD, C, false);
        layer->gate_proj = linear_init(layer_param(l, "mlp.gate_proj"), C, F, false);
        layer->up_proj = linear_init(layer_param(l, "mlp.up_proj"), C, F, false);
        layer->down_proj = linear_init(layer_param(l, "mlp.down_proj"), F, C, false);
        layer->input_layernorm = ones(shape1(C));                                // (C,)
        named(layer_param(l, "input_layernorm.weight"), layer->input_layernorm);
        layer->post_attention_layernorm = ones(shape1(C));                       // (C,)
        named(layer_param(l, "post_attention_layernorm.weight"), layer->post_attention_layernorm);
    }
    model.norm = ones(shape1(C));                                                // (C,)
    named("norm.weight", model.norm);
    model.lm_head = linear_init("lm_head", C, NV, false);
    return model;
}

// --- the buffers, made once -------------------------------------------------------------------

// Every buffer a forward of B sequences writes, made once and reused by every step.
Activations activations_init(const Config *c, int B) {
    int N = c->seq, C = c->hidden_size, F = c->intermediate_size, NV = c->vocab_size;
    int HD = c->num_attention_heads * c->head_dim, KVD = c->num_key_value_heads * c->head_dim;
    long rows = (long)B * N;
    Activations acts = {.batch = B};
    for (int l = 0; l < c->num_hidden_layers; l++) {
        LayerActivations *a = &acts.layers[l];
        a->x = floats(rows * C);
        a->rstd1 = floats(rows);
        a->h1 = floats(rows * C);
        a->q = floats(rows * HD);
        a->k = floats(rows * KVD);
        a->v = floats(rows * KVD);
        a->att = floats(rows * c->num_attention_heads * N);
        a->y = floats(rows * HD);
        a->x2 = floats(rows * C);
        a->rstd2 = floats(rows);
        a->h2 = floats(rows * C);
        a->gate = floats(rows * F);
        a->up = floats(rows * F);
        a->act = floats(rows * F);
        a->prod = floats(rows * F);
    }
    acts.x_final = floats(rows * C);
    acts.rstd_final = floats(rows);
    acts.h_final = floats(rows * C);
    acts.logits = floats(rows * NV);
    acts.log_probs = floats(rows * NV);
    acts.cos = floats((long)N * c->head_dim / 2);
    acts.sin = floats((long)N * c->head_dim / 2);
    long widest = C > F ? C : F;   // the scratch holds a weight transposed, or a head's k^T
    widest = widest * (widest > NV ? widest : NV);
    acts.scratch = floats(widest > (long)N * c->head_dim ? widest : (long)N * c->head_dim);
    rope_table(acts.cos, acts.sin, N, c->head_dim, c->rope_theta);
    return acts;
}

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

// --- a layer: forward, then backward ----------------------------------------------------------

// LlamaDecoderLayer.forward on rows r0 .. r0+rows-1 (positions start .. start+T-1):
// a->x in, the layer's output into out. Every step as lesson 15 has it:
//   x2  = x + o_proj(attention(RoPE(q_proj(h1)), RoPE(k_proj(h1)), v_proj(h1))),
//         h1 = input_layernorm(x)
//   out = x2 + down_proj(silu(gate_proj(h2)) * up_proj(h2)),  h2 = post_attention_layernorm(x2)
static void layer_forward(float *out, LayerActivations *a, const DecoderLayer *layer,
                          const Activations *acts, const Config *c, int B, int start, int T) {
    int N = c->seq, C = c->hidden_size, F = c->intermediate_size, H = c->num_attention_heads;
    int KV = c->num_key_value_heads, D = c->head_dim, r0 = B == 1 ? start : 0, rows = B * T;
    long rC = (long)r0 * C, rF = (long)r0 * F;
    float *scratch = acts->scratch;
    rms_norm_forward(a->h1 + rC, a->rstd1 + r0, a->x + rC, layer->input_layernorm->data, rows,
                     C, c->rms_norm_eps, scratch);                               // (B, T, C)
    linear_forward(a->q + (long)r0 * H * D, &layer->q_proj, a->h1 + rC, rows, scratch);
    linear_forward(a->k + (long)r0 * KV * D, &layer->k_proj, a->h1 + rC, rows, scratch);
    linear_forward(a->v + (long)r0 * KV * D, &layer->v_proj, a->h1 + rC, rows, scratch);
    rope_forward(a->q, acts->cos, acts->sin, r0, rows, N, H, D);                // (B, T, H, D)
    rope_forward(a->k, acts->cos, acts->sin, r0, rows, N, KV, D);               // (B, T, KV, D)
    attention_forward(a, c, B, start, T, scratch);                               // (B, T, H, D)
    linear_forward(a->x2 + rC, &layer->o_proj, a->y + (long)r0 * H * D, rows, scratch);
    kernels->add(a->x2 + rC, a->x + rC, a->x2 + rC, (long)rows * C);           // residual
    rms_norm_forward(a->h2 + rC, a->rstd2 + r0, a->x2 + rC,
                     layer->post_attention_layernorm->data, rows, C, c->rms_norm_eps,
                     scratch);                                                   // (B, T, C)
    linear_forward(a->gate + rF, &layer->gate_proj, a->h2 + rC, rows, scratch); // (B, T, F)
    linear_forward(a->up + rF, &layer->up_proj, a->h2 + rC, rows, scratch);     // (B, T, F)
    swiglu_forward(a->act + rF, a->prod + rF, a->gate + rF, a->up + rF, (long)rows * F);
    linear_forward(out + rC, &layer->down_proj, a->prod + rF, rows, scratch);   // (B, T, C)
    kernels->add(out + rC, a->x2 + rC, out + rC, (long)rows * C);              // residual
}

// out = (a + b) + c: a tensor that feeds three operations gets the sum of their three
// gradients, added in the order autograd's engine delivers them.
static void add3(float *out, const float *a, const float *b, const float *c, long n) {
    kernels->add(out, a, b, n);     // a + b
    kernels->add(out, out, c, n);   // then + c
}

// One layer, from w->d_x (the gradient of the layer's output) back to w->d_x (of its input):
// layer_forward read from the bottom up. The whole sequences of a batch (start 0, T = N).
static void layer_backward(LayerGrads *lg, BackwardScratch *w, const DecoderLayer *layer,
                           const LayerActivations *a, const Activations *acts, const Config *c,
                           int B) {
    int N = c->seq, C = c->hidden_size, F = c->intermediate_size;
    int H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim;
    int rows = B * N;
    long n = (long)rows * C, nF = (long)rows * F;
    // out = x2 + down_proj(prod), prod = silu(gate) * up: d_x holds d_out
    linear_backward(w->d_prod, lg->down_proj, &layer->down_proj, w->d_x, a->prod, rows);
    swiglu_backward(w->d_gate, w->d_up, w->d_prod, a->gate, a->up, a->act, nF);
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

// --- the model: forward, then backward --------------------------------------------------------

// The model's forward on the tokens at positions start .. start+T-1 of ids (B, N): the
// embedding, the layers, the final norm, lm_head; logits for those rows.
void model_forward(Activations *acts, const Model *model, const float *ids, int B, int start,
                   int T) {
    const Config *c = &model->config;
    int C = c->hidden_size, L = c->num_hidden_layers, r0 = B == 1 ? start : 0, rows = B * T;
    embedding_forward(acts->layers[0].x, model->embed_tokens, ids, r0, rows);   // (B, T, C)
    for (int l = 0; l < L; l++) {
        float *out = l + 1 < L ? acts->layers[l + 1].x : acts->x_final;
        layer_forward(out, &acts->layers[l], &model->layers[l], acts, c, B, start, T);
    }
    rms_norm_forward(acts->h_final + (long)r0 * C, acts->rstd_final + r0,
                     acts->x_final + (long)r0 * C, model->norm->data, rows, C, c->rms_norm_eps,
                     acts->scratch);
    linear_forward(acts->logits + (long)r0 * c->vocab_size, &model->lm_head,
                   acts->h_final + (long)r0 * C, rows, acts->scratch);           // (B, T, NV)
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
    // x = embed_tokens[input_ids]
    embedding_backward(grads->embed_tokens, w->d_x, model->embed_tokens, input_ids->data, rows);
}
