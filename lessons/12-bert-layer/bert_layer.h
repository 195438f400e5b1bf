// bert_layer.h - lesson 12's layer as C structs, and what its three files share.
//
// The post's classes, one struct each, with the post's field names: read
// this beside bert_layer.c, whose functions are their __init__ and forward.
// bert_layer.c is the lesson (the layer, fixed, and main); parts.c holds
// part 1 (the layer run as BLIP's decoder runs it, printed step by step)
// and parts 2 to 5, 8 and 9, the demonstrations; the_post.c parts 6 and 7
// and the post's own relative positions, run there only. (README.md in
// this directory gives the reading order.)
// What one file calls of another is declared here.
//
// Size letters (docs/README.md has the table): B batch, T tokens of this
// call, P cached positions (--past), L = P + T keys of the self-attention,
// M image features (--encoder-seq), C hidden_size, E encoder_width, H
// heads, D = C / H, F intermediate_size, MP max_position_embeddings.
#ifndef BERT_LAYER_H
#define BERT_LAYER_H

#include <stdbool.h>
#include <stdint.h>

#include "attention.h"

// --- the configuration --------------------------------------------------------------------

typedef enum { ABSOLUTE, RELATIVE_KEY, RELATIVE_KEY_QUERY } PositionType;
// "absolute", "relative_key", "relative_key_query", NULL: the choices of --position.
extern const char *const POSITION_TYPES[];

// The fields of transformers' BertConfig that the layer reads (BLIP's
// med_config adds encoder_width and add_cross_attention).
typedef struct {
    int hidden_size;                       // C
    int num_attention_heads;               // H
    int intermediate_size;                 // F
    PositionType position_embedding_type;  // "absolute" unless the config says otherwise
    int max_position_embeddings;           // MP
    double layer_norm_eps;                 // 1e-12
    double hidden_dropout_prob;            // 0.1: after each dense that feeds a residual
    double attention_probs_dropout_prob;   // 0.1: on the attention probabilities
    bool add_cross_attention;              // BLIP's decoder: true
    int encoder_width;                     // E, the image encoder's width
    int chunk_size_feed_forward;           // 0: the feed-forward in one piece
} BertConfig;

// --- BertSelfAttention ----------------------------------------------------------------------

// The tuple the post calls past_key_value: (key_layer, value_layer).
typedef struct {
    const Tensor *key;     // (B, H, L, D)
    const Tensor *value;   // (B, H, L, D)
} KeyValue;

typedef struct {
    int num_attention_heads;           // H
    int attention_head_size;           // D = C / H
    int all_head_size;                 // H * D = C
    Linear query;                      // C -> H*D
    Linear key, value;                 // C -> H*D (E -> H*D in cross-attention)
    double dropout;                    // nn.Dropout(attention_probs_dropout_prob)
    PositionType position_embedding_type;
    int max_position_embeddings;       // MP
    const Tensor *distance_embedding;  // nn.Embedding(2MP - 1, D).weight; NULL for absolute
    bool training;
} BertSelfAttention;

// The forward's keyword arguments, as the post passes them. The post's
// output_attentions is always on here: the probabilities are in the steps.
typedef struct {
    const Tensor *attention_mask;          // (B, 1, 1, L) 0 or -10000, added; NULL: none
    const Tensor *head_mask;               // (1, H, 1, 1) 1 keeps a head, 0 zeroes it; NULL: none
    const Tensor *encoder_hidden_states;   // (B, M, E): keys and values of cross-attention
    const Tensor *encoder_attention_mask;  // (B, 1, 1, M) added; NULL: none
    const KeyValue *past_key_value;        // (B, H, P, D) each: the cache; NULL: none
} BertArgs;

// What the forward computed on the way, for the lesson to print.
typedef struct {
    const Tensor *query_layer;               // (B, H, T, D)
    const Tensor *key_layer;                 // (B, H, L, D) (L = M in cross-attention)
    const Tensor *value_layer;               // (B, H, L, D)
    const Tensor *distance;                  // (T, L) int64; NULL without relative positions
    const Tensor *unmasked_scores;           // (B, H, T, L) / sqrt(D), before the mask
    const Tensor *attention_probs;           // (B, H, T, L) softmax, before dropout
    const Tensor *attention_probs_dropped;   // (B, H, T, L) after dropout and head_mask
    const Tensor *context_layer;             // (B, T, C)
} BertSelfAttentionSteps;

// --- the modules around it: BertSelfOutput, BertAttention, BertIntermediate, BertOutput ----

// BertSelfOutput: dense, dropout, then the residual and a LayerNorm AFTER
// it (post-norm: the original Transformer's order, and BERT's).
typedef struct {
    Linear dense;           // C -> C
    LayerNorm LayerNorm;    // over C, eps 1e-12 (the post's field name, as in transformers)
    double dropout;         // hidden_dropout_prob
    bool training;
} BertSelfOutput;

// BertAttention: the attention and its output block. (The post's
// pruned_heads set is for prune_heads(), which it never calls.)
typedef struct {
    BertSelfAttention self;
    BertSelfOutput output;
} BertAttention;

// BertIntermediate, which the post uses without showing it: in transformers
// a dense to intermediate_size followed by config.hidden_act.
typedef struct {
    Linear dense;   // C -> F
} BertIntermediate;

// BertOutput: BertSelfOutput's three steps, from F back to C.
typedef struct {
    Linear dense;           // F -> C
    LayerNorm LayerNorm;    // over C, eps 1e-12
    double dropout;         // hidden_dropout_prob
    bool training;
} BertOutput;

// --- BertLayer ------------------------------------------------------------------------------

// mode=None (or BLIP's 'text'): self-attention only; 'multimodal': then the
// cross-attention over the image features.
typedef enum { MODE_TEXT, MODE_MULTIMODAL } BertMode;

typedef struct {
    int chunk_size_feed_forward;   // 0: the feed-forward over the whole sequence at once
    int seq_len_dim;               // 1: chunks are cut along the positions
    BertAttention attention;       // self-attention
    bool add_cross_attention;
    BertAttention crossattention;  // over the image features; only if add_cross_attention
    BertIntermediate intermediate;
    BertOutput output;
} BertLayer;

typedef struct {
    BertSelfAttentionSteps attention;       // attention.self
    const Tensor *self_attention_output;    // (B, T, C) attention.output's result
    BertSelfAttentionSteps crossattention;  // crossattention.self (multimodal; else zeros)
    const Tensor *attention_output;         // (B, T, C) what the feed-forward gets
} BertLayerSteps;

// What parts.c and the_post.c call of bert_layer.c: the layer's __init__, and
// the forwards and steps the parts run again.
BertLayer BertLayer_init(const BertConfig *config);
const Tensor *transpose_for_scores(const BertSelfAttention *self, const Tensor *x);
Tensor *relative_distance(int T, int L);
Tensor *positional_embedding_of(const BertSelfAttention *self, const Tensor *distance);
const Tensor *relative_position_scores(const BertSelfAttention *self,
                                       const Tensor *attention_scores, const Tensor *query_layer,
                                       const Tensor *key_layer, const Tensor *distance);
const Tensor *BertSelfAttention_forward(BertSelfAttentionSteps *steps, KeyValue *present,
                                        const BertSelfAttention *self,
                                        const Tensor *hidden_states, const BertArgs *args);
Tensor *BertSelfOutput_forward(const BertSelfOutput *self, const Tensor *hidden_states,
                               const Tensor *input_tensor);
Tensor *BertAttention_forward(BertSelfAttentionSteps *steps, KeyValue *present,
                              const BertAttention *self, const Tensor *hidden_states,
                              const BertArgs *args);
Tensor *BertIntermediate_forward(const BertIntermediate *self, const Tensor *hidden_states);
void BertLayer_train(BertLayer *self, bool mode);
Tensor *feed_forward_chunk(const BertLayer *self, const Tensor *attention_output);
typedef Tensor *(*ChunkForward)(const BertLayer *self, const Tensor *input);
Tensor *apply_chunking_to_forward(ChunkForward forward_fn, const BertLayer *self, int chunk_size,
                                  int chunk_dim, const Tensor *input);
Tensor *BertLayer_forward(BertLayerSteps *steps, KeyValue *present, const BertLayer *self,
                          const Tensor *hidden_states, const BertArgs *args, BertMode mode);
Tensor *zero_one_head(int heads, int h);

// --- the run: what part 1 made, for the other parts ------------------------------------------

#define DEPTH 12   // BERT-base's layers: part 9 stacks this many

// The lesson's flags.
typedef struct {
    int batch, seq, dim, heads, intermediate, max_positions, pad, head_mask, past, encoder_seq,
        encoder_width, chunk;
    PositionType position;
    bool train;
    int part;        // --part N: print part N alone; 0: part 1 and the list of the others
    bool all;        // --all: every part
    uint64_t seed;   // --seed: part 8 seeds the generator with it again
} Flags;

// Everything part 1 made.
typedef struct {
    BertLayer layer;
    const Tensor *prefix;                  // (B, P, C), or NULL
    const Tensor *hidden_states;           // (B, T, C)
    const Tensor *encoder_hidden_states;   // (B, M, E), or NULL
    const Tensor *keep;                    // (B, L) int64
    const Tensor *attention_mask;          // (B, 1, 1, L)
    const Tensor *head_mask;               // (1, H, 1, 1), or NULL
    BertMode mode;
    KeyValue cache;                        // the prefix's present_key_value (P > 0)
    BertLayerSteps steps;                  // of the call on hidden_states
    KeyValue present;                      // (B, H, L, D) each
    const Tensor *layer_output;            // (B, T, C)
} Run;

// The layer's arguments for tokens whose keys are `mask`'s, with the cache
// `past` (NULL: none), as part 1 passes them.
BertArgs layer_args(const Run *run, const Tensor *mask, const KeyValue *past);

// A copy of the layer in eval mode, unchunked, for the parts after the first.
BertLayer eval_copy(const BertLayer *layer);

// parts.c: part 1, the layer built from the flags, its inputs drawn and the
// layer run (printed when `printing`); the list of the other parts; parts 2
// to 9 (6 and 7 in the_post.c), each printing its opening line, then what it
// shows.
Run part1_the_layer(const Flags *f, bool printing, bool heatmap);
void print_the_parts(void);
void part2_the_additive_mask(const Run *run, const Flags *f);
void part3_head_mask(const Run *run, const Flags *f);
void part4_dropout(const Run *run, const Flags *f);
void part5_relative_positions(const Run *run, const Flags *f);
void part6_the_cache(const Run *run, const Flags *f);
void part7_cross_attention(const Run *run, const Flags *f);
void part8_chunks(const Run *run, const Flags *f);
void part9_post_norm(const Run *run, const Flags *f);

#endif
