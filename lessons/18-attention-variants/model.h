// model.h - what the lesson's files share: the variants, the configuration, the model, the
// tensors its forward keeps for the backward, the gradients and the backward's buffers; and
// what model.c does with them (the parameters drawn, the buffers made, the forward and the
// backward of a batch, and decoding one token at a time).
//
// Size letters: B batch, N tokens a sequence (each forward's own), P the longest sequence a
// model is made for (its tables' rows), C hidden_size (--dim), H query heads, KV key/value
// heads, R = H / KV, D head_dim = C / H, F intermediate_size (--hidden), NV vocabulary,
// W the window. Index letters: b batch row, t query position, s key position, h query head,
// g = h / R its key/value head, d and e inside a head, c a channel of C, r a row b*N + t.
#ifndef MODEL18_H
#define MODEL18_H

#include <stdbool.h>
#include <stdint.h>

#include "attention.h"

#define MAX_LAYERS 8
#define IGNORE_INDEX (-100)   // a label that asks nothing (F.cross_entropy's ignore_index)
#define NO_WINDOW 65536       // --window's default: longer than any sequence, every key seen

// The variants, one of each kind (the lesson's three switches).
typedef enum { ROPE, ALIBI, SINUSOIDAL, LEARNED, NOPE } Positions;   // --positions
typedef enum { SOFTMAX, LINEAR } AttentionKind;                      // --attention

// One model: transformers' LlamaConfig, the fields it reads, and its variant.
typedef struct {
    int vocab_size;            // NV = keys + values
    int hidden_size;           // C
    int intermediate_size;     // F
    int num_hidden_layers;     // layers
    int num_attention_heads;   // H
    int num_key_value_heads;   // KV
    int head_dim;              // D = C / H
    int longest;               // P: the longest sequence it sees, training or tested
    int rope_theta;            // 10000
    float rms_norm_eps;        // 1e-6
    Positions positions;       // how it knows where a token is
    int window;                // each query sees its last `window` keys, itself included
    AttentionKind attention;   // softmax, or linear (Katharopoulos et al.'s, elu + 1)
    int softmax_layers;        // linear: the first layers that stay softmax (0: none; the
                               // linear experiment's hybrid keeps 1)
} Config;

// The attention layer l runs: the config's, but softmax in its first softmax_layers layers.
AttentionKind layer_attention(const Config *config, int l);

// The recall task: `keys` key tokens (0 .. keys-1), `values` value tokens after them. A
// sequence of N tokens holds pairs(N) pairs, then questions(N) questions.
typedef struct {
    int keys, values;
} Task;
int questions(int N);   // max(1, N / 8)
int pairs(int N);       // N / 2 - questions(N)

// One LlamaDecoderLayer's parameters (lesson 16's, with transformers' names).
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
    Tensor *embed_positions;              // (P, C) --positions learned, zeros at the start
    // The tables a variant reads (buffers, not parameters: computed, never trained):
    float *cos, *sin;                     // (P, D/2) RoPE's angles, position t, pair i
    float *sinusoidal;                    // (P, C)   Vaswani et al.'s table
    float *slopes;                        // (H,)     ALiBi's slope of each head
} Model;

// What one layer's forward keeps for its backward (PyTorch's autograd keeps the same).
// Every (B, N, .) tensor is a (B*N, .) matrix, row r = b*N + t.
typedef struct {
    float *x;             // (B, N, C) the layer's input, the residual stream
    float *rstd1;         // (B, N)    1 / sqrt(mean(x^2) + eps), input_layernorm's
    float *h1;            // (B, N, C) input_layernorm(x)
    float *q;             // (B, N, H, D)  q_proj(h1), turned by RoPE if it has RoPE
    float *k;             // (B, N, KV, D) k_proj(h1), turned by RoPE if it has RoPE
    float *v;             // (B, N, KV, D) v_proj(h1)
    float *att;           // (B, H, N, N)  softmax: the weights, 0 outside what a query sees
    float *q_phi;         // (B, N, H, D)  linear: phi(q) = elu(q) + 1
    float *k_phi;         // (B, N, KV, D) linear: phi(k)
    float *norm;          // (B, N, H)     linear: 1 / (phi(q_t) . z_t + eps), each query's
    float *numerator;     // (B, N, H, D)  linear: phi(q_t)^T S_t, before that division
    float *y;             // (B, N, H, D)  the heads' outputs side by side
    float *x2;            // (B, N, C) x + o_proj(y)
    float *rstd2;         // (B, N)
    float *h2;            // (B, N, C) post_attention_layernorm(x2)
    float *gate, *up;     // (B, N, F) gate_proj(h2), up_proj(h2)
    float *act, *prod;    // (B, N, F) silu(gate), silu(gate) * up
} LayerActivations;

typedef struct {
    int batch, seq;                       // B and N, the sizes these were made for
    LayerActivations layers[MAX_LAYERS];
    float *x_final;                       // (B, N, C) the stream after the last layer
    float *rstd_final;                    // (B, N)
    float *h_final;                       // (B, N, C) norm(x_final)
    float *logits;                        // (B, N, NV) lm_head(h_final)
    float *log_probs;                     // (B, N, NV) log_softmax(logits), rows that ask
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
    float *embed_positions;   // --positions learned
} Grads;

// The experiments the lesson runs (--experiment): all three after part 1, one of them, or
// none: the one model --positions, --window and --attention describe, trained and shown.
typedef enum { ALL, LENGTH, WINDOW, LINEAR_EXPERIMENT, NONE } Experiment;

// What the flags set (flags.c reads and checks them).
typedef struct {
    Config config;                 // the model of --experiment none; the experiments' base
    Task task;
    Experiment experiment;
    uint64_t seed;                 // --seed: every model's torch.manual_seed
    int seq;                       // N: the training length (the experiments scale from it)
    int batch, steps, warmup;      // B; optimizer steps of each model; linear warmup
    double lr, weight_decay;       // AdamW's
    double beta1, beta2, eps;      // 0.9, 0.99, 1e-8
    double clip;                   // clip_grad_norm_'s max_norm; 0: no clipping
    bool heatmap;                  // --heatmap: the trained maps as lesson/heatmap.h draws them
} Settings;

Settings read_flags(Lesson *lesson, int argc, char **argv);

// A batch of the task: what make_batch draws.
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
    float *state, *d_state;        // (D*D + D) linear: S_t and z_t running forward, their
                                   // gradients G_t and H_t running back
    float *d_den;                  // (B, N, H) linear: each query's d (phi(q) . z)
    float *d_prod, *d_gate, *d_up; // (B, N, F)
    float *products;               // (B, N, max(C, F)) a product before it is summed
    float *scratch;                // a head's v transposed (D, N), or a row of C twice
} BackwardScratch;

// model.c: `count` floats from the arena.
float *floats(long count);
// The parameters drawn in PyTorch's order (after manual_seed), the tables computed.
Model model_init(const Config *config);
// The buffers a forward of B sequences of N tokens writes; the gradients; the backward's.
Activations activations_init(const Config *config, int B, int N);
Grads grads_init(const Model *model);
BackwardScratch backward_scratch_init(const Config *config, int B, int N);
// The forward of whole sequences ids (B, N), N at most what acts was made for: every
// layer's activations and the logits.
void model_forward(Activations *acts, const Model *model, const float *ids, int B, int N);
// loss.backward() for a batch whose forward left `acts`; `asked` rows have a label. Fills
// every parameter's gradient.
void model_backward(Grads *grads, BackwardScratch *w, const Model *model,
                    const Activations *acts, const Tensor *input_ids, const Tensor *labels,
                    int asked);

// Decoding one token at a time, as generation runs: what each layer keeps of the tokens
// before. Softmax attention keeps their keys and values in `slots` slots, position s in slot
// s % slots: a rolling buffer of W slots (Mistral's) forgets what the window no longer
// sees; slots >= the sequence keep everything (lesson 16's cache). Linear attention keeps
// its state instead, S (KV, D, D) and z (KV, D), the same size at every length.
typedef struct {
    int slots;
    float *k, *v;        // (slots, KV, D) each
    int *position;       // (slots,) the position each slot holds, -1 while empty
    float *S, *z;        // (KV, D, D), (KV, D) linear attention's state
} LayerCache;
typedef struct {
    LayerCache layers[MAX_LAYERS];
    float *x, *h, *q, *k, *v, *y, *x2, *gate, *up, *act, *prod;   // one token's activations
    float *rstd, *scores, *scratch;
    float *logits;                                                  // (NV,)
} DecodeState;
DecodeState decode_init(const Config *config, int slots);
// Run token `token` at `position` (0, 1, 2, ... in order) through the model: its logits in
// state->logits, its key and value (or its state's update) kept for the next.
void decode_token(DecodeState *state, const Model *model, int token, int position);

#endif
