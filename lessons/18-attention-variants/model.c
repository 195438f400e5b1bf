// model.c - the model: its parameters, drawn in PyTorch's order; the tables its variant reads;
// the buffers its forward and backward write, made once; the forward and the backward of a
// layer and of the whole model, each forward beside its backward (layers.c, positions.c and
// attend.c have the operations they call); and decoding one token at a time.
//
// Lesson 16's model.c with the three switches: where positions enter (the stream at the
// bottom: sinusoidal, learned; q and k: rope; the scores: alibi; nowhere: none), which
// keys a query sees (the window), and what attention is (softmax, or linear).
//
// The backward reads the forward from the bottom up. A tensor used by several operations
// gets the sum of their gradients, added in the order autograd's engine delivers them (which
// matters to the last bit; lesson 16 found the order by trying each against PyTorch).
//
// Size letters: B batch, N tokens a sequence, P the longest a model is made for, C
// hidden_size, H query heads, KV key/value heads, D head_dim, F intermediate_size, NV
// vocabulary.
#include <stdio.h>
#include <string.h>

#include "attend.h"
#include "kernels.h"
#include "layers.h"
#include "model.h"
#include "positions.h"

float *floats(long count) {
    return arena_alloc((size_t)count, sizeof(float));
}

AttentionKind layer_attention(const Config *c, int l) {
    return c->attention == LINEAR && l >= c->softmax_layers ? LINEAR : SOFTMAX;
}

int questions(int N) {
    return N / 8 > 1 ? N / 8 : 1;
}

int pairs(int N) {
    return N / 2 - questions(N);
}

// --- the parameters, drawn; the tables, computed ----------------------------------------------

static const char *layer_param(int layer, const char *name) {
    char *text = arena_alloc(80, 1);
    snprintf(text, 80, "layers.%d.%s", layer, name);
    return text;
}

// The modules in the order PyTorch makes them, which is the order of the draws:
// embed_tokens (nn.Embedding: normal_(0, 1)), each layer's q, k, v, o, gate, up and down
// projections (nn.Linear(bias=False): kaiming_uniform_), lm_head. The RMSNorm weights are
// ones and draw nothing; so is the learned position table, made last, as zeros: it draws
// nothing, so every variant starts from the same weights and sees the same batches.
Model model_init(const Config *c) {
    Model model = {.config = *c};
    int C = c->hidden_size, F = c->intermediate_size, NV = c->vocab_size, P = c->longest;
    int H = c->num_attention_heads, D = c->head_dim;
    int HD = H * D, KVD = c->num_key_value_heads * D;
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
    if (c->positions == LEARNED) {
        model.embed_positions = zeros(shape2(P, C));                             // (P, C)
        named("embed_positions.weight", model.embed_positions);
    }
    model.cos = floats((long)P * D / 2);                                         // (P, D/2)
    model.sin = floats((long)P * D / 2);
    angle_table(model.cos, model.sin, P, D, c->rope_theta);
    model.sinusoidal = floats((long)P * C);                                      // (P, C)
    sinusoidal_table(model.sinusoidal, P, C);
    model.slopes = floats(H);                                                    // (H,)
    alibi_slopes(model.slopes, H);
    return model;
}

// --- the buffers, made once -------------------------------------------------------------------

// Every buffer a forward of B sequences of N tokens writes, made once and reused.
Activations activations_init(const Config *c, int B, int N) {
    int C = c->hidden_size, F = c->intermediate_size, NV = c->vocab_size;
    int H = c->num_attention_heads, HD = H * c->head_dim;
    int KVD = c->num_key_value_heads * c->head_dim;
    long rows = (long)B * N;
    Activations acts = {.batch = B, .seq = N};
    for (int l = 0; l < c->num_hidden_layers; l++) {
        LayerActivations *a = &acts.layers[l];
        a->x = floats(rows * C);
        a->rstd1 = floats(rows);
        a->h1 = floats(rows * C);
        a->q = floats(rows * HD);
        a->k = floats(rows * KVD);
        a->v = floats(rows * KVD);
        if (layer_attention(c, l) == SOFTMAX) {
            a->att = floats(rows * H * N);
        } else {
            a->q_phi = floats(rows * HD);
            a->k_phi = floats(rows * KVD);
            a->norm = floats(rows * H);
            a->numerator = floats(rows * HD);
        }
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
    long widest = C > F ? C : F;   // a weight transposed, a head's k^T, linear's state
    widest = widest * (widest > NV ? widest : NV);
    long head = (long)N * c->head_dim, state = (long)c->head_dim * (c->head_dim + 1);
    widest = widest > head ? widest : head;
    acts.scratch = floats(widest > state ? widest : state);
    return acts;
}

Grads grads_init(const Model *model) {
    const Config *c = &model->config;
    Grads g = {0};
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
    if (model->embed_positions != NULL) {
        g.embed_positions = floats(numel(model->embed_positions));
    }
    return g;
}

BackwardScratch backward_scratch_init(const Config *c, int B, int N) {
    long rows = (long)B * N;
    int C = c->hidden_size, F = c->intermediate_size;
    int H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim;
    BackwardScratch w = {0};
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
    if (layer_attention(c, 0) == SOFTMAX) {   // the first layer is softmax if any is
        w.d_scores = floats((long)N * N);
        w.d_att = floats((long)N * N);
    }
    if (layer_attention(c, c->num_hidden_layers - 1) == LINEAR) {   // the last, linear if any
        w.state = floats((long)D * D + D);
        w.d_state = floats((long)D * D + D);
        w.d_den = floats(rows * H);
    }
    w.d_prod = floats(rows * F);
    w.d_gate = floats(rows * F);
    w.d_up = floats(rows * F);
    w.products = floats(rows * (C > F ? C : F));
    long wide = N > C ? N : C;   // a head's v^T (D, N), a norm's two rows, linear's (D, D) + D
    wide = wide > D + 1 ? wide : D + 1;
    w.scratch = floats(wide * (D > 1 ? D : 1) + C);
    w.group_dk = floats((long)(H / KV) * N * D);
    w.group_dv = floats((long)(H / KV) * N * D);
    w.group_sum = floats((long)N * D);
    return w;
}

// --- a layer: forward, then backward ----------------------------------------------------------

// LlamaDecoderLayer.forward on B sequences of N tokens: a->x in, the layer's output into out.
//   x2  = x + o_proj(attention(q, k, v)),  q, k, v = q_proj(h1), k_proj(h1), v_proj(h1),
//         h1 = input_layernorm(x), q and k turned by RoPE if the model has RoPE
//   out = x2 + down_proj(silu(gate_proj(h2)) * up_proj(h2)),  h2 = post_attention_layernorm(x2)
// Attention is softmax's (with the window and ALiBi's bias) or linear's.
static void layer_forward(float *out, LayerActivations *a, const DecoderLayer *layer,
                          const Model *model, int l, float *scratch, int B, int N) {
    const Config *c = &model->config;
    int C = c->hidden_size, F = c->intermediate_size, H = c->num_attention_heads;
    int KV = c->num_key_value_heads, D = c->head_dim, rows = B * N;
    rms_norm_forward(a->h1, a->rstd1, a->x, layer->input_layernorm->data, rows, C,
                     c->rms_norm_eps, scratch);                                  // (B, N, C)
    linear_forward(a->q, &layer->q_proj, a->h1, rows, scratch);                 // (B, N, H, D)
    linear_forward(a->k, &layer->k_proj, a->h1, rows, scratch);                 // (B, N, KV, D)
    linear_forward(a->v, &layer->v_proj, a->h1, rows, scratch);                 // (B, N, KV, D)
    if (c->positions == ROPE) {
        rope_forward(a->q, model->cos, model->sin, rows, N, 0, H, D);
        rope_forward(a->k, model->cos, model->sin, rows, N, 0, KV, D);
    }
    if (layer_attention(c, l) == SOFTMAX) {
        attention_forward(a, model, B, N, scratch);                              // (B, N, H, D)
    } else {
        linear_attention_forward(a, c, B, N, scratch);                           // (B, N, H, D)
    }
    linear_forward(a->x2, &layer->o_proj, a->y, rows, scratch);
    kernels->add(a->x2, a->x, a->x2, (long)rows * C);                          // residual
    rms_norm_forward(a->h2, a->rstd2, a->x2, layer->post_attention_layernorm->data, rows, C,
                     c->rms_norm_eps, scratch);                                  // (B, N, C)
    linear_forward(a->gate, &layer->gate_proj, a->h2, rows, scratch);           // (B, N, F)
    linear_forward(a->up, &layer->up_proj, a->h2, rows, scratch);               // (B, N, F)
    swiglu_forward(a->act, a->prod, a->gate, a->up, (long)rows * F);
    linear_forward(out, &layer->down_proj, a->prod, rows, scratch);             // (B, N, C)
    kernels->add(out, a->x2, out, (long)rows * C);                             // residual
}

// out = (a + b) + c: a tensor that feeds three operations gets the sum of their three
// gradients, added in the order autograd's engine delivers them.
static void add3(float *out, const float *a, const float *b, const float *c, long n) {
    kernels->add(out, a, b, n);     // a + b
    kernels->add(out, out, c, n);   // then + c
}

// One layer, from w->d_x (the gradient of the layer's output) back to w->d_x (of its input):
// layer_forward read from the bottom up.
static void layer_backward(LayerGrads *lg, BackwardScratch *w, const DecoderLayer *layer,
                           const LayerActivations *a, const Model *model, int l, int B, int N) {
    const Config *c = &model->config;
    int C = c->hidden_size, F = c->intermediate_size;
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
    // x2 = x + o_proj(y); y from attention on q, k, v
    linear_backward(w->d_y, lg->o_proj, &layer->o_proj, w->d_x2, a->y, rows);
    if (layer_attention(c, l) == SOFTMAX) {
        attention_backward(w, a, c, B, N);
    } else {
        linear_attention_backward(w, a, c, B, N);
    }
    if (c->positions == ROPE) {
        rope_backward(w->d_q, model->cos, model->sin, rows, N, 0, H, D);
        rope_backward(w->d_k, model->cos, model->sin, rows, N, 0, KV, D);
    }
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

// The embedding, the positions if they enter here, the layers, the final norm, lm_head.
void model_forward(Activations *acts, const Model *model, const float *ids, int B, int N) {
    const Config *c = &model->config;
    int C = c->hidden_size, L = c->num_hidden_layers, rows = B * N;
    float *x = acts->layers[0].x;
    embedding_forward(x, model->embed_tokens, ids, 0, rows);                    // (B, N, C)
    if (c->positions == SINUSOIDAL) {
        add_positions(x, model->sinusoidal, rows, N, 0, C);                    // + PE[t]
    } else if (c->positions == LEARNED) {
        add_positions(x, model->embed_positions->data, rows, N, 0, C);        // + wpe[t]
    }
    for (int l = 0; l < L; l++) {
        float *out = l + 1 < L ? acts->layers[l + 1].x : acts->x_final;
        layer_forward(out, &acts->layers[l], &model->layers[l], model, l, acts->scratch, B, N);
    }
    rms_norm_forward(acts->h_final, acts->rstd_final, acts->x_final, model->norm->data, rows,
                     C, c->rms_norm_eps, acts->scratch);
    linear_forward(acts->logits, &model->lm_head, acts->h_final, rows, acts->scratch);
}

void model_backward(Grads *grads, BackwardScratch *w, const Model *model,
                    const Activations *acts, const Tensor *input_ids, const Tensor *labels,
                    int asked) {
    const Config *c = &model->config;
    int NV = c->vocab_size, C = c->hidden_size, B = size(input_ids, 0), N = size(input_ids, 1);
    int rows = B * N;
    cross_entropy_backward(w->d_logits, acts->log_probs, labels, rows, NV, asked);
    // logits = lm_head(h_final), h_final = norm(x_final)
    linear_backward(w->d_h, grads->lm_head, &model->lm_head, w->d_logits, acts->h_final, rows);
    rms_norm_backward(w->direct, w->through_mean, grads->norm, w->products, w->d_h,
                      acts->x_final, acts->rstd_final, model->norm->data, rows, C, w->scratch);
    kernels->add(w->d_x, w->direct, w->through_mean, (long)rows * C);
    for (int l = c->num_hidden_layers - 1; l >= 0; l--) {
        layer_backward(&grads->layers[l], w, &model->layers[l], &acts->layers[l], model, l, B,
                       N);
    }
    // x = embed_tokens[input_ids] (+ the learned table's row t)
    embedding_backward(grads->embed_tokens, w->d_x, model->embed_tokens, input_ids->data, rows);
    if (c->positions == LEARNED) {
        learned_positions_backward(grads->embed_positions, w->d_x, B, N, c->longest, C);
    }
}

// --- decoding, one token at a time ------------------------------------------------------------

DecodeState decode_init(const Config *c, int slots) {
    int C = c->hidden_size, F = c->intermediate_size, NV = c->vocab_size;
    int H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim;
    DecodeState st = {0};
    for (int l = 0; l < c->num_hidden_layers; l++) {
        LayerCache *cache = &st.layers[l];
        if (layer_attention(c, l) == SOFTMAX) {
            cache->slots = slots;
            cache->k = floats((long)slots * KV * D);
            cache->v = floats((long)slots * KV * D);
            cache->position = arena_alloc((size_t)slots, sizeof(int));
            for (int i = 0; i < slots; i++) {
                cache->position[i] = -1;
            }
        } else {
            cache->S = floats((long)KV * D * D);
            cache->z = floats((long)KV * D);
        }
    }
    st.x = floats(C);
    st.h = floats(C);
    st.q = floats(H * D);
    st.k = floats(KV * D);
    st.v = floats(KV * D);
    st.y = floats(H * D);
    st.x2 = floats(C);
    st.gate = floats(F);
    st.up = floats(F);
    st.act = floats(F);
    st.prod = floats(F);
    st.rstd = floats(1);
    st.scores = floats(2L * (slots > D * D ? slots : D * D));
    long widest = C > F ? C : F;
    st.scratch = floats(widest * (widest > NV ? widest : NV));
    st.logits = floats(NV);
    return st;
}

// One token through the model at `position`: the layers' operations on one row, their
// attention from the cache (or the state) of the tokens before.
void decode_token(DecodeState *st, const Model *model, int token, int position) {
    const Config *c = &model->config;
    int C = c->hidden_size, F = c->intermediate_size;
    int H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim;
    float id = (float)token;
    embedding_forward(st->x, model->embed_tokens, &id, 0, 1);                    // (C,)
    if (c->positions == SINUSOIDAL) {
        add_positions(st->x, model->sinusoidal, 1, 1, position, C);
    } else if (c->positions == LEARNED) {
        add_positions(st->x, model->embed_positions->data, 1, 1, position, C);
    }
    for (int l = 0; l < c->num_hidden_layers; l++) {
        const DecoderLayer *layer = &model->layers[l];
        rms_norm_forward(st->h, st->rstd, st->x, layer->input_layernorm->data, 1, C,
                         c->rms_norm_eps, st->scratch);
        linear_forward(st->q, &layer->q_proj, st->h, 1, st->scratch);            // (H, D)
        linear_forward(st->k, &layer->k_proj, st->h, 1, st->scratch);            // (KV, D)
        linear_forward(st->v, &layer->v_proj, st->h, 1, st->scratch);            // (KV, D)
        if (c->positions == ROPE) {
            rope_forward(st->q, model->cos, model->sin, 1, 1, position, H, D);
            rope_forward(st->k, model->cos, model->sin, 1, 1, position, KV, D);
        }
        if (layer_attention(c, l) == SOFTMAX) {
            attend_cached(st->y, &st->layers[l], st->q, st->k, st->v, model, position,
                          st->scores);
        } else {
            phi_forward(st->q, st->q, 1, 1, H, D);                              // phi(q)
            phi_forward(st->k, st->k, 1, 1, KV, D);                             // phi(k)
            attend_state(st->y, &st->layers[l], st->q, st->k, st->v, c);
        }
        linear_forward(st->x2, &layer->o_proj, st->y, 1, st->scratch);
        kernels->add(st->x2, st->x, st->x2, C);                                 // residual
        rms_norm_forward(st->h, st->rstd, st->x2, layer->post_attention_layernorm->data, 1, C,
                         c->rms_norm_eps, st->scratch);
        linear_forward(st->gate, &layer->gate_proj, st->h, 1, st->scratch);
        linear_forward(st->up, &layer->up_proj, st->h, 1, st->scratch);
        swiglu_forward(st->act, st->prod, st->gate, st->up, F);
        linear_forward(st->x, &layer->down_proj, st->prod, 1, st->scratch);
        kernels->add(st->x, st->x2, st->x, C);                                  // residual
    }
    rms_norm_forward(st->h, st->rstd, st->x, model->norm->data, 1, C, c->rms_norm_eps,
                     st->scratch);
    linear_forward(st->logits, &model->lm_head, st->h, 1, st->scratch);
}
