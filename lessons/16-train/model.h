// model.h - what the lesson's files share: the configuration, the model, the tensors its
// forward keeps for the backward, the gradients and the backward's buffers; and what
// model.c does with them (the parameters drawn, the buffers made, the model's forward and
// backward).
//
// Size letters: B batch, N the training sequence (--seq), C hidden_size (--dim), H query
// heads, KV key/value heads, R = H / KV, D head_dim = C / H, F intermediate_size
// (--hidden), NV vocabulary (--vocab). Index letters: b batch row, t query position, s key
// position, h query head, g = h / R its key/value head, d inside a head, c a channel of C,
// f a unit of F, r a row of the (B*N, .) matrices.
#ifndef MODEL16_H
#define MODEL16_H

#include <stdbool.h>

#include "attention.h"

#define MAX_LAYERS 8
#define IGNORE_INDEX (-100)   // a label that asks nothing (F.cross_entropy's ignore_index)

typedef enum { REVERSE, RECALL } Task;

// transformers' LlamaConfig, the fields this model reads, and the task it trains on.
typedef struct {
    Task task;
    int vocab_size;            // NV
    int hidden_size;           // C
    int intermediate_size;     // F
    int num_hidden_layers;     // layers
    int num_attention_heads;   // H
    int num_key_value_heads;   // KV
    int head_dim;              // D = C / H
    int seq;                   // N
    int rope_theta;            // 10000
    float rms_norm_eps;        // 1e-6, LlamaConfig's default (Llama 2's and 3's set 1e-5)
} Config;

// One LlamaDecoderLayer's parameters (lesson 15's, with transformers' names).
typedef struct {
    Linear q_proj, k_proj, v_proj, o_proj;   // self_attn: C -> H*D, KV*D, KV*D; H*D -> C
    Linear gate_proj, up_proj, down_proj;    // mlp: C -> F, C -> F, F -> C
    Tensor *input_layernorm;                 // (C,) RMSNorm weights, ones at the start
    Tensor *post_attention_layernorm;        // (C,)
} DecoderLayer;

typedef struct {
    Config config;
    Tensor *embed_tokens;                 // (NV, C)
    DecoderLayer layers[MAX_LAYERS];
    Tensor *norm;                         // (C,)
    Linear lm_head;                       // C -> NV
} Model;

// What one layer's forward keeps for its backward (PyTorch's autograd keeps the same).
// Every (B, N, .) tensor is a (B*N, .) matrix, row r = b*N + t.
typedef struct {
    float *x;             // (B, N, C) the layer's input, the residual stream
    float *rstd1;         // (B, N)    1 / sqrt(mean(x^2) + eps), input_layernorm's
    float *h1;            // (B, N, C) input_layernorm(x)
    float *q;             // (B, N, H, D)  q_proj(h1), turned by RoPE
    float *k;             // (B, N, KV, D) k_proj(h1), turned by RoPE
    float *v;             // (B, N, KV, D) v_proj(h1)
    float *att;           // (B, H, N, N)  the attention weights, 0 above the diagonal
    float *y;             // (B, N, H, D)  att @ v, the heads side by side
    float *x2;            // (B, N, C) x + o_proj(y)
    float *rstd2;         // (B, N)
    float *h2;            // (B, N, C) post_attention_layernorm(x2)
    float *gate, *up;     // (B, N, F) gate_proj(h2), up_proj(h2)
    float *act, *prod;    // (B, N, F) silu(gate), silu(gate) * up
} LayerActivations;

typedef struct {
    int batch;                            // B, the rows these were made for
    LayerActivations layers[MAX_LAYERS];
    float *x_final;                       // (B, N, C) the stream after the last layer
    float *rstd_final;                    // (B, N)
    float *h_final;                       // (B, N, C) norm(x_final)
    float *logits;                        // (B, N, NV) lm_head(h_final)
    float *log_probs;                     // (B, N, NV) log_softmax(logits), rows that ask
    float *cos, *sin;                     // (N, D/2) RoPE's table, position t, pair i
    float *scratch;                       // a weight or a head transposed, a row of squares
} Activations;

// The gradient of every parameter, the shapes of the model's (.grad in PyTorch).
typedef struct {
    float *q_proj, *k_proj, *v_proj, *o_proj, *gate_proj, *up_proj, *down_proj;
    float *input_layernorm, *post_attention_layernorm;
} LayerGrads;

typedef struct {
    float *embed_tokens;
    LayerGrads layers[MAX_LAYERS];
    float *norm, *lm_head;
} Grads;

// What the flags set (train_flags.c reads and checks them).
typedef struct {
    Config config;
    int batch, steps, warmup;      // B; optimizer steps; steps of linear warmup
    double lr, weight_decay;       // AdamW's
    double beta1, beta2, eps;      // 0.9, 0.99, 1e-8
    double clip;                   // clip_grad_norm_'s max_norm; 0: no clipping
    const char *save_dir;          // --save DIR: the trained state_dict, or NULL
    const char *load_dir;          // --load DIR: start from this state_dict, or NULL
    const char *svg_file;          // --svg FILE: the attention maps as an image, or NULL
    int threads;                   // --threads N: the threads sharing the matrix products
    bool bench;
    bool heatmap;                  // --heatmap: the trained maps as lesson/heatmap.h draws them
} Settings;

Settings read_flags(Lesson *lesson, int argc, char **argv);

// A batch of a task: what make_batch draws.
typedef struct {
    Tensor *input_ids;   // (B, N) int64
    Tensor *labels;      // (B, N) int64: the next token where an answer is asked, else -100
} Batch;

// The backward's own buffers, made once: gradients of activations, and scratch.
typedef struct {
    float *d_logits;               // (B, N, NV)
    float *d_x;                    // (B, N, C) the gradient of the residual stream
    float *d_x2;                   // (B, N, C) ... in the middle of a layer
    float *d_h;                    // (B, N, C) of a norm's output
    float *direct, *through_mean;  // (B, N, C) a norm's two paths back to its input
    float *d_y;                    // (B, N, H, D)
    float *d_q;                    // (B, N, H, D)
    float *d_k, *d_v;              // (B, N, KV, D)
    float *group_dk, *group_dv;    // (R, N, D) the dK and dV of one group's query heads
    float *group_sum;              // (N, D) their sum
    float *d_scores;               // (N, N) one head's
    float *d_att;                  // (N, N)
    float *d_prod, *d_gate, *d_up; // (B, N, F)
    float *products;               // (B, N, max(C, F)) a product before it is summed
    float *scratch;                // a head's v transposed (D, N), or a row of C twice
} BackwardScratch;

// model.c: `count` floats from the arena.
float *floats(long count);
// The parameters drawn in PyTorch's order (after manual_seed), under their state_dict names.
Model model_init(const Config *config);
// The buffers a forward of B sequences writes; the gradients; the backward's buffers.
Activations activations_init(const Config *config, int B);
Grads grads_init(const Model *model);
BackwardScratch backward_scratch_init(const Config *config, int B);
// The forward of the tokens at positions start .. start+T-1 of ids (B, N): whole sequences
// are start 0, T = N; decoding (B = 1) runs only new tokens, the earlier ones' keys and
// values waiting in acts (the KV cache). Leaves acts->logits for those rows.
void model_forward(Activations *acts, const Model *model, const float *ids, int B, int start,
                   int T);
// loss.backward() for a batch whose whole-sequence forward left `acts`; `asked` rows have a
// label. Fills every parameter's gradient.
void model_backward(Grads *grads, BackwardScratch *w, const Model *model,
                    const Activations *acts, const Tensor *input_ids, const Tensor *labels,
                    int asked);

#endif
