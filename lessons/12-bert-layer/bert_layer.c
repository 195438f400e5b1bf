// Lesson 12: bert-layer - the BERT layer of Chen Ming's post, as BLIP's text decoder uses it.
//
// WHAT THIS ADDS
//   Lessons 2-10 built attention on its own, lesson 11 ViT's pre-norm block
//   around it. A Transformer stacks LAYERS, and this is BERT's (post-norm),
//   as Chen Ming's post ports it from the transformers library:
//   BertSelfAttention (multi-head attention, lesson 6, with BERT's
//   additive -10000 padding mask, a head_mask, dropout on the probabilities,
//   optional RELATIVE positions and a past_key_value cache), BertSelfOutput
//   (dense, dropout, then LayerNorm(h + input): a residual and a POST-norm),
//   BertIntermediate (dense to 4x the width, GELU), BertOutput (dense back,
//   residual, LayerNorm), run through apply_chunking_to_forward, which can
//   split the feed-forward along the sequence. BLIP's text decoder adds a
//   cross-attention (lesson 7) over an image encoder's features in between.
//   The post's relative positions are wrong in two places (with a cache, and
//   in cross-attention); the layer here is fixed, and the lesson shows the
//   post's code failing and going wrong, then the fix proven.
//
// THE MATH (one layer; x is (B, T, C), L = P + T keys after P cached ones)
//   scores = q k^T [+ q e(l - r) [+ k e(l - r)]] / sqrt(D) + mask   (B, H, T, L)
//   a      = LayerNorm(x + dense(softmax(scores) v))                (B, T, C)  post-norm
//   [a     = LayerNorm(a + dense(cross-attention of a over the image))]  BLIP, mode='multimodal'
//   out    = LayerNorm(a + dense2(gelu(dense1(a))))                 (B, T, C)  post-norm
//   mask = (1 - keep) * -10000 (added, not filled); e = distance_embedding,
//   a table of 2N - 1 rows, one per distance l - r from -(N-1) to N-1.
//
// THE PYTORCH IT MIRRORS (the post's classes, fixed; the whole runnable script,
// with transformers' BertIntermediate and apply_chunking_to_forward, is in
// docs/12-bert-layer.md)
//   torch.manual_seed(seed)
//   layer = BertLayer(config, 0)                      # draws its Linear layers (and tables)
//   prefix = torch.randn(batch, past, dim)            # if --past > 0
//   hidden_states = torch.randn(batch, seq, dim)
//   encoder_hidden_states = torch.randn(batch, M, encoder_width)   # if --encoder-seq M > 0
//   layer.train() or layer.eval()
//   present = layer(prefix, mask[..., :past], ...)[-1]              # if --past > 0
//   outputs = layer(hidden_states, mask, head_mask, encoder_hidden_states,
//                   past_key_value=present, output_attentions=True, mode=...)
//
// RUN IT
//   make lesson-12                                      (2 x 5 tokens, dim 16, 4 heads, eval)
//   make lesson-12 ARGS="--position relative_key --past 3"     the post's bug, running
//   make lesson-12 ARGS="--encoder-seq 6"               BLIP's cross-attention
//   make lesson-12 ARGS="--chunk 1 --train"             the feed-forward in chunks; dropout
//   flags: --batch --seq --dim --heads --intermediate --position --max-positions --pad
//   --head-mask --past --encoder-seq --encoder-width --chunk --train --seed --dump --dot
//   --heatmap --help
//
// WHAT TO LOOK FOR
//   - attention_probs[1, 0]: the padded key's column is 0.0000: -10000 is
//     added to its score, and exp(-10000) is 0 in float32, exactly what
//     lesson 4's masked_fill(-1e20) gives.
//   - query_layer is a permuted view: stride (80, 4, 16, 1), no copy.
//   - --position relative_*: the distance matrix, and the table rows it
//     picks (distance + N - 1). With --past 3 the queries sit at positions
//     3..7, not 0..4: the post's code takes them from the new tokens only,
//     and PyTorch stops (several new tokens) or silently puts every key at
//     distance 0 (one new token). The fixed layer gives, over prefix + new
//     tokens, the same output in one call as in two with the cache.
//   - every chunk size that divides --seq gives the same output in eval.
//   - post-norm: every row of layer_output has standard deviation 1;
//     pre-norm (lesson 11's order, same weights) lets the rows grow.
//
// Size letters: B = batch, T = seq (the tokens of this call), P = past
// (positions in the cache), L = P + T (keys of the self-attention), M =
// encoder_seq (image features), C = dim = hidden_size, E = encoder_width, H =
// num_attention_heads, D = C / H (attention_head_size), I = intermediate_size,
// N = max_position_embeddings (the distance table has 2N - 1 rows).
// Index letters: b batch row, h head, t query position, s key position, d
// inside a head; in the two einsums written as loops, their own letters: l a
// query, r a key ("bhld,lrd->bhlr").

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attention.h"

// BERT's padding mask is added to the scores: (1 - keep) * -10000. Every real
// score of a row stays where it is (+ -0.0), a padded key's score drops by
// 10000, and exp() of that is exactly 0 in float32 (it underflows below about
// -104). The post's comment: "需要忽略的mask是-10000,此时attention_scores会很低,
// 计算softmax时近乎为0" (the masked positions get -10000, so their softmax is
// nearly 0).
#define MASK_ADDED -10000.0f
// Lesson 4's way, for the comparison: masked_fill(keep == 0, -1e20).
#define MASK_FILL -1e20f
#define DEPTH 12   // BERT-base's layers: the post-norm/pre-norm comparison stacks this many

// --- the configuration ------------------------------------------------------------------

typedef enum { ABSOLUTE, RELATIVE_KEY, RELATIVE_KEY_QUERY } PositionType;
static const char *const POSITION_TYPES[] = {"absolute", "relative_key", "relative_key_query",
                                             NULL};

// The fields of transformers' BertConfig that the layer reads (BLIP's
// med_config adds encoder_width and add_cross_attention).
typedef struct {
    int hidden_size;                       // C
    int num_attention_heads;               // H
    int intermediate_size;                 // I
    PositionType position_embedding_type;  // "absolute" unless the config says otherwise
    int max_position_embeddings;           // N
    double layer_norm_eps;                 // 1e-12
    double hidden_dropout_prob;            // 0.1: after each dense that feeds a residual
    double attention_probs_dropout_prob;   // 0.1: on the attention probabilities
    bool add_cross_attention;              // BLIP's decoder: true
    int encoder_width;                     // E, the image encoder's width
    int chunk_size_feed_forward;           // 0: the feed-forward in one piece
} BertConfig;

// "attention.self" + "query" -> "attention.self.query": a parameter's state_dict name.
static const char *dotted(const char *module, const char *name) {
    size_t length = strlen(module) + 1 + strlen(name) + 1;
    char *text = arena_alloc(length, 1);
    snprintf(text, length, "%s.%s", module, name);
    return text;
}

// --- the module: BertSelfAttention --------------------------------------------------------

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
    int max_position_embeddings;       // N
    const Tensor *distance_embedding;  // nn.Embedding(2N - 1, D).weight; NULL for absolute
    // The post's relative positions, kept to show them running (the lesson's
    // demonstrations set it on a copy); false in the layer itself.
    bool as_the_post;
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

// BertSelfAttention(config, is_cross_attention). Draws as the post's
// __init__: query, key, value (weight, bias each), then, for relative
// positions, the distance table (nn.Embedding draws normal_(0, 1)). The
// post builds that table for the cross-attention too, which never uses it
// once fixed; it is still drawn, so the draws stay the post's.
static BertSelfAttention BertSelfAttention_init(const BertConfig *config, bool is_cross_attention,
                                                const char *name) {
    BertSelfAttention self;
    memset(&self, 0, sizeof self);
    // The post raises ValueError("The hidden size (%d) is not a multiple of
    // the number of attention heads (%d)") here; main() refuses such flags.
    self.num_attention_heads = config->num_attention_heads;
    self.attention_head_size = config->hidden_size / config->num_attention_heads;
    self.all_head_size = self.num_attention_heads * self.attention_head_size;
    int C = config->hidden_size, all = self.all_head_size;
    self.query = linear_init(dotted(name, "query"), C, all, true);
    // Cross-attention reads keys and values from the image encoder, of its width E.
    int key_width = is_cross_attention ? config->encoder_width : C;
    self.key = linear_init(dotted(name, "key"), key_width, all, true);
    self.value = linear_init(dotted(name, "value"), key_width, all, true);
    self.dropout = config->attention_probs_dropout_prob;
    self.position_embedding_type = config->position_embedding_type;
    if (self.position_embedding_type != ABSOLUTE) {
        self.max_position_embeddings = config->max_position_embeddings;
        int rows = 2 * config->max_position_embeddings - 1;   // distances -(N-1) .. N-1
        Tensor *table = zeros(shape2(rows, self.attention_head_size));         // (2N-1, D)
        normal_(table, 0.0, 1.0);
        self.distance_embedding = named(dotted(name, "distance_embedding.weight"), table);
    }
    self.training = true;
    return self;
}

// x (B, S, H*D) -> (B, H, S, D): view the last dim as H heads of D, then
// move the heads before the positions, so each head is a (S, D) matrix and
// the matmuls below run over (B, H) as batch dims. Both are views: nothing
// is copied, the strides change (lesson 6).
// (The diagram draws the two as one step.)
static const Tensor *transpose_for_scores(const BertSelfAttention *self, const Tensor *x) {
    bool was_paused = trace_pause(true);
    // new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
    Shape new_x_shape = shape4(size(x, 0), size(x, 1), self->num_attention_heads,
                               self->attention_head_size);
    const Tensor *heads = view(x, new_x_shape);                               // (B, S, H, D)
    heads = permute(heads, (const int[]){0, 2, 1, 3});                        // (B, H, S, D)
    trace_pause(was_paused);
    trace1("transpose_for_scores", heads, x);
    return heads;
}

// distance = position_ids_l - position_ids_r: (T, L), int64, for T queries
// (the tokens of this call) against L keys.
//   Fixed: this call's tokens come after the L - T cached ones, so query l
//   sits at position L - T + l and key r at position r.
//   The post: seq_length = hidden_states.size()[1], the NEW tokens only, and
//   position_ids_l = position_ids_r = arange(seq_length): a (T, T) matrix.
//   It fits the (T, L) scores only when L == T (no cache), or broadcasts
//   when T == 1: then every key gets distance 0, as if key r were at the
//   query's own position. Otherwise PyTorch stops (show_cache prints how).
static Tensor *relative_distance(const BertSelfAttention *self, int T, int L) {
    if (self->as_the_post && T != L && T != 1) {
        fail("the post's (%d, %d) distance matrix does not fit (%d, %d) scores", T, T, T, L);
    }
    Tensor *distance = zeros(shape2(T, L));                                   // (T, L)
    distance->dtype = DTYPE_INT64;   // torch.arange(..., dtype=torch.long)
    for (int l = 0; l < T; l++) {
        for (int r = 0; r < L; r++) {
            int position_l = self->as_the_post ? l : L - T + l;
            int position_r = self->as_the_post && T == 1 ? 0 : r;
            *at2(distance, l, r) = (float)(position_l - position_r);
        }
    }
    return distance;
}

// self.distance_embedding(distance + self.max_position_embeddings - 1): for
// each (l, r) the table row of that distance, shifted by N - 1 so that
// distance -(N-1) is row 0 and distance 0 is row N - 1. (T, L, D).
static Tensor *positional_embedding_of(const BertSelfAttention *self, const Tensor *distance) {
    int T = size(distance, 0), L = size(distance, 1), D = self->attention_head_size;
    int N = self->max_position_embeddings;
    const Tensor *table = self->distance_embedding;                           // (2N-1, D)
    Tensor *positional_embedding = zeros(shape3(T, L, D));                    // (T, L, D)
    for (int l = 0; l < T; l++) {
        for (int r = 0; r < L; r++) {
            int row = (int)*at2(distance, l, r) + N - 1;
            if (row < 0 || row >= 2 * N - 1) {
                fail("IndexError: index out of range in self (distance_embedding row %d of %d)",
                     row, 2 * N - 1);
            }
            for (int d = 0; d < D; d++) {
                *at3(positional_embedding, l, r, d) = *at2(table, row, d);
            }
        }
    }
    trace2("embedding", positional_embedding, distance, table);
    return positional_embedding;
}

// einsum("bhld,lrd->bhlr", query_layer, positional_embedding): query l
// against the embedding of its distance to key r, summed over d. Lesson 8
// writes its einsums the same way: the loop letters are the einsum's, and
// the letter missing from the output (d) is the one summed.
static Tensor *einsum_bhld_lrd(const Tensor *query_layer, const Tensor *positional_embedding) {
    int B = size(query_layer, 0), H = size(query_layer, 1), T = size(query_layer, 2);
    int D = size(query_layer, 3), L = size(positional_embedding, 1);
    Tensor *scores = zeros(shape4(B, H, T, L));                               // (B, H, T, L)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            for (int l = 0; l < T; l++) {
                for (int r = 0; r < L; r++) {
                    float sum = 0.0f;
                    for (int d = 0; d < D; d++) {
                        sum += *at4(query_layer, b, h, l, d) * *at3(positional_embedding, l, r, d);
                    }
                    *at4(scores, b, h, l, r) = sum;
                }
            }
        }
    }
    trace2("einsum bhld,lrd->bhlr", scores, query_layer, positional_embedding);
    return scores;
}

// einsum("bhrd,lrd->bhlr", key_layer, positional_embedding): key r against
// the embedding of its distance from query l. Same loops, the key's row in
// place of the query's.
static Tensor *einsum_bhrd_lrd(const Tensor *key_layer, const Tensor *positional_embedding) {
    int B = size(key_layer, 0), H = size(key_layer, 1), L = size(key_layer, 2);
    int D = size(key_layer, 3), T = size(positional_embedding, 0);
    Tensor *scores = zeros(shape4(B, H, T, L));                               // (B, H, T, L)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            for (int l = 0; l < T; l++) {
                for (int r = 0; r < L; r++) {
                    float sum = 0.0f;
                    for (int d = 0; d < D; d++) {
                        sum += *at4(key_layer, b, h, r, d) * *at3(positional_embedding, l, r, d);
                    }
                    *at4(scores, b, h, l, r) = sum;
                }
            }
        }
    }
    trace2("einsum bhrd,lrd->bhlr", scores, key_layer, positional_embedding);
    return scores;
}

// BertSelfAttention.forward, line by line, fixed. hidden_states is (B, T, C).
// Returns context_layer (B, T, C), a view (so const: tensor.h); *present
// (may be NULL) gets the post's past_key_value = (key_layer, value_layer),
// each (B, H, L, D): with a cache, the cached positions and this call's.
static const Tensor *BertSelfAttention_forward(BertSelfAttentionSteps *steps, KeyValue *present,
                                               const BertSelfAttention *self,
                                               const Tensor *hidden_states, const BertArgs *args) {
    int B = size(hidden_states, 0), T = size(hidden_states, 1);
    int D = self->attention_head_size;
    // "query特征来自于本Blocks的hidden_states": the queries come from this
    // block's own hidden_states, in self- and cross-attention alike.
    const Tensor *mixed_query_layer = linear(&self->query, hidden_states);    // (B, T, C)

    // "如果我们使用了来自于其它Blocks的特征进行特征融合": with features from
    // another block (the image encoder), keys and values come from there.
    bool is_cross_attention = args->encoder_hidden_states != NULL;
    const Tensor *attention_mask = args->attention_mask;
    const Tensor *key_layer, *value_layer;
    if (is_cross_attention) {
        const Tensor *image = args->encoder_hidden_states;                    // (B, M, E)
        key_layer = transpose_for_scores(self, linear(&self->key, image));    // (B, H, M, D)
        value_layer = transpose_for_scores(self, linear(&self->value, image));   // (B, H, M, D)
        // The text's padding mask means nothing over image features; the
        // layer passes its attention_mask, and it is replaced here.
        attention_mask = args->encoder_attention_mask;
    } else if (args->past_key_value != NULL) {
        // Only this call's T tokens are projected; the cached P positions'
        // keys and values are joined in front of them along the positions
        // (dim 2 of (B, H, S, D)). torch.cat copies both into a new tensor.
        key_layer = transpose_for_scores(self, linear(&self->key, hidden_states));   // (B, H, T, D)
        value_layer = transpose_for_scores(self, linear(&self->value, hidden_states));
        const Tensor *keys[2] = {args->past_key_value->key, key_layer};
        const Tensor *values[2] = {args->past_key_value->value, value_layer};
        key_layer = cat(keys, 2, 2);                                          // (B, H, P+T, D)
        value_layer = cat(values, 2, 2);                                      // (B, H, P+T, D)
    } else {
        key_layer = transpose_for_scores(self, linear(&self->key, hidden_states));   // (B, H, T, D)
        value_layer = transpose_for_scores(self, linear(&self->value, hidden_states));
    }
    const Tensor *query_layer = transpose_for_scores(self, mixed_query_layer);   // (B, H, T, D)
    // "保留past_key_value": keep them, for the next call to extend.
    if (present != NULL) {
        *present = (KeyValue){key_layer, value_layer};
    }
    int L = size(key_layer, 2);

    // (B, H, T, D) @ (B, H, D, L) -> (B, H, T, L): every query against every key, per head.
    const Tensor *attention_scores = matmul(query_layer, transpose(key_layer, -1, -2));

    // Relative positions: a learned vector per DISTANCE l - r, added to the
    // dot products. FIX 2: not in cross-attention. Text position l and image
    // feature r are not on one axis; the post's code would add its (T, T)
    // table to (T, M) scores (show_cross_attention says what PyTorch does).
    const Tensor *distance = NULL;
    bool relative = self->position_embedding_type != ABSOLUTE;
    if (relative && (!is_cross_attention || self->as_the_post)) {
        distance = relative_distance(self, T, L);                            // (T, L)  FIX 1
        const Tensor *positional_embedding = positional_embedding_of(self, distance);   // (T, L, D)
        // relative_key: how much query l wants something at distance l - r.
        const Tensor *relative_position_scores_query =
            einsum_bhld_lrd(query_layer, positional_embedding);              // (B, H, T, L)
        attention_scores = add(attention_scores, relative_position_scores_query);
        if (self->position_embedding_type == RELATIVE_KEY_QUERY) {
            // relative_key_query adds how much key r wants to be seen from l - r.
            const Tensor *relative_position_scores_key =
                einsum_bhrd_lrd(key_layer, positional_embedding);            // (B, H, T, L)
            attention_scores = add(attention_scores, relative_position_scores_key);
        }
    }

    // "除以head size": divide by sqrt(head size), as lesson 6 does.
    attention_scores = div_scalar(attention_scores, sqrtf((float)D));        // (B, H, T, L)
    const Tensor *unmasked_scores = attention_scores;
    if (attention_mask != NULL) {
        // (B, 1, 1, L) broadcasts over heads and query rows: one row of
        // 0s and -10000s per batch row, added to every head's every row.
        attention_scores = add(attention_scores, attention_mask);            // (B, H, T, L)
    }
    const Tensor *attention_probs = softmax(attention_scores, -1);           // (B, H, T, L)

    // "This is actually dropping out entire tokens to attend to": a zeroed
    // probability removes key s from query t's mix for this step.
    const Tensor *attention_probs_dropped =
        dropout(attention_probs, self->dropout, self->training);             // (B, H, T, L)
    if (args->head_mask != NULL) {
        // (1, H, 1, 1): head h's probabilities times head_mask[h]; a 0
        // silences the head (its context below is 0). Used to prune heads
        // and to measure what each head contributes.
        attention_probs_dropped = mul(attention_probs_dropped, args->head_mask);
    }

    // (B, H, T, L) @ (B, H, L, D) -> (B, H, T, D), then back to (B, T, H*D):
    // the permuted tensor's heads are not next to each other in memory, so
    // view() needs contiguous() first (lesson 6).
    const Tensor *heads = matmul(attention_probs_dropped, value_layer);       // (B, H, T, D)
    bool was_paused = trace_pause(true);   // one step in the diagram
    const Tensor *context_layer =
        contiguous(permute(heads, (const int[]){0, 2, 1, 3}));               // (B, T, H, D)
    context_layer = view(context_layer, shape3(B, T, self->all_head_size));   // (B, T, C)
    trace_pause(was_paused);
    trace1("permute(0, 2, 1, 3).contiguous().view", context_layer, heads);

    if (steps != NULL) {
        *steps = (BertSelfAttentionSteps){query_layer, key_layer, value_layer, distance,
                                          unmasked_scores, attention_probs,
                                          attention_probs_dropped, context_layer};
    }
    return context_layer;
}

// --- the modules around it: BertSelfOutput, BertAttention ------------------------------------

// BertSelfOutput: dense, dropout, then the residual and a LayerNorm AFTER
// it (post-norm: the original Transformer's order, and BERT's).
typedef struct {
    Linear dense;           // C -> C
    LayerNorm LayerNorm;    // over C, eps 1e-12 (the post's field name, as in transformers)
    double dropout;         // hidden_dropout_prob
    bool training;
} BertSelfOutput;

static BertSelfOutput BertSelfOutput_init(const BertConfig *config, const char *name) {
    BertSelfOutput self;
    int C = config->hidden_size;
    self.dense = linear_init(dotted(name, "dense"), C, C, true);
    self.LayerNorm = layer_norm_init(dotted(name, "LayerNorm"), C, config->layer_norm_eps);
    self.dropout = config->hidden_dropout_prob;
    self.training = true;
    return self;
}

// LayerNorm(dropout(dense(hidden_states)) + input_tensor): (B, T, C). The
// input of the attention is added back (the residual), then each row is
// normalised to mean 0 and variance 1 (times weight, plus bias). eps 1e-12,
// not PyTorch's default 1e-5: what Google's BERT checkpoints were trained with.
static Tensor *BertSelfOutput_forward(const BertSelfOutput *self, const Tensor *hidden_states,
                                      const Tensor *input_tensor) {
    hidden_states = linear(&self->dense, hidden_states);                      // (B, T, C)
    hidden_states = dropout(hidden_states, self->dropout, self->training);    // (B, T, C)
    return layer_norm_forward(&self->LayerNorm, add(hidden_states, input_tensor));   // (B, T, C)
}

// BertAttention: the attention and its output block. (The post's
// pruned_heads set is for prune_heads(), which it never calls.)
typedef struct {
    BertSelfAttention self;
    BertSelfOutput output;
} BertAttention;

static BertAttention BertAttention_init(const BertConfig *config, bool is_cross_attention,
                                        const char *name) {
    BertAttention attention;
    attention.self = BertSelfAttention_init(config, is_cross_attention, dotted(name, "self"));
    attention.output = BertSelfOutput_init(config, dotted(name, "output"));
    return attention;
}

// attention_output = self.output(self_outputs[0], hidden_states): (B, T, C).
static Tensor *BertAttention_forward(BertSelfAttentionSteps *steps, KeyValue *present,
                                     const BertAttention *self, const Tensor *hidden_states,
                                     const BertArgs *args) {
    const Tensor *context_layer =
        BertSelfAttention_forward(steps, present, &self->self, hidden_states, args);   // (B, T, C)
    return BertSelfOutput_forward(&self->output, context_layer, hidden_states);      // (B, T, C)
}

// --- the feed-forward: BertIntermediate, BertOutput ------------------------------------------

// BertIntermediate, which the post uses without showing it: in transformers
// it is a dense to intermediate_size followed by config.hidden_act, "gelu",
// the exact erf form (ops.h), not the tanh approximation of the original code.
typedef struct {
    Linear dense;   // C -> I
} BertIntermediate;

static BertIntermediate BertIntermediate_init(const BertConfig *config, const char *name) {
    BertIntermediate self;
    self.dense = linear_init(dotted(name, "dense"), config->hidden_size,
                             config->intermediate_size, true);
    return self;
}

static Tensor *BertIntermediate_forward(const BertIntermediate *self, const Tensor *hidden_states) {
    return gelu(linear(&self->dense, hidden_states));                        // (B, T, I)
}

// BertOutput: BertSelfOutput's three steps, from I back to C.
typedef struct {
    Linear dense;           // I -> C
    LayerNorm LayerNorm;    // over C, eps 1e-12
    double dropout;         // hidden_dropout_prob
    bool training;
} BertOutput;

static BertOutput BertOutput_init(const BertConfig *config, const char *name) {
    BertOutput self;
    int C = config->hidden_size;
    self.dense = linear_init(dotted(name, "dense"), config->intermediate_size, C, true);
    self.LayerNorm = layer_norm_init(dotted(name, "LayerNorm"), C, config->layer_norm_eps);
    self.dropout = config->hidden_dropout_prob;
    self.training = true;
    return self;
}

static Tensor *BertOutput_forward(const BertOutput *self, const Tensor *hidden_states,
                                  const Tensor *input_tensor) {
    hidden_states = linear(&self->dense, hidden_states);                      // (B, T, C)
    hidden_states = dropout(hidden_states, self->dropout, self->training);    // (B, T, C)
    return layer_norm_forward(&self->LayerNorm, add(hidden_states, input_tensor));   // (B, T, C)
}

// --- the module: BertLayer ----------------------------------------------------------------

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

// BertLayer(config, layer_num): the draws in the order the modules are made
// (and their parameters registered): attention (query, key, value, [table],
// output.dense), [crossattention: the same, keys and values of width E],
// intermediate.dense, output.dense. LayerNorm and Dropout draw nothing.
// layer_num is only stored by the post (BLIP uses it to pick which layers
// get cross-attention); it does not change the layer.
static BertLayer BertLayer_init(const BertConfig *config) {
    BertLayer self;
    memset(&self, 0, sizeof self);
    self.chunk_size_feed_forward = config->chunk_size_feed_forward;
    self.seq_len_dim = 1;
    self.attention = BertAttention_init(config, false, "attention");
    self.add_cross_attention = config->add_cross_attention;
    if (self.add_cross_attention) {
        self.crossattention = BertAttention_init(config, true, "crossattention");
    }
    self.intermediate = BertIntermediate_init(config, "intermediate");
    self.output = BertOutput_init(config, "output");
    return self;
}

// layer.train(mode) / layer.eval(): every module's dropout on or off.
static void BertLayer_train(BertLayer *self, bool mode) {
    self->attention.self.training = mode;
    self->attention.output.training = mode;
    self->crossattention.self.training = mode;
    self->crossattention.output.training = mode;
    self->output.training = mode;
}

// feed_forward_chunk: BertIntermediate then BertOutput on some positions of
// attention_output (B, c, C) -> layer_output (B, c, C). Each position is
// computed on its own (no position reads another here), which is what
// makes chunking possible.
static Tensor *feed_forward_chunk(const BertLayer *self, const Tensor *attention_output) {
    Tensor *intermediate_output = BertIntermediate_forward(&self->intermediate, attention_output);
    return BertOutput_forward(&self->output, intermediate_output, attention_output);   // (B, c, C)
}

typedef Tensor *(*ChunkForward)(const BertLayer *self, const Tensor *input);

// transformers' apply_chunking_to_forward(forward_fn, chunk_size, chunk_dim,
// input): with chunk_size 0, forward_fn(input). Otherwise the input is cut
// into length / chunk_size views along chunk_dim (input.chunk(), no copy),
// forward_fn runs on each, and the results are joined (torch.cat). Only one
// chunk's intermediate_output (B, chunk_size, I) is alive at a time: in
// PyTorch it is freed when the chunk is done; here arena_release frees it,
// after the chunk's result is copied out. Returns (B, T, C).
static Tensor *apply_chunking_to_forward(ChunkForward forward_fn, const BertLayer *self,
                                         int chunk_size, int chunk_dim, const Tensor *input) {
    if (chunk_size == 0) {
        return forward_fn(self, input);
    }
    int length = size(input, chunk_dim);
    if (length % chunk_size != 0) {
        fail("The dimension to be chunked %d has to be a multiple of the chunk size %d", length,
             chunk_size);
    }
    int num_chunks = length / chunk_size;
    Tensor *output = zeros(input->shape);                                  // (B, T, C)
    // The diagram draws the whole call as one step: the chunks' own
    // tensors are freed, and with them the nodes they would have drawn.
    bool was_paused = trace_pause(true);
    for (int i = 0; i < num_chunks; i++) {
        size_t mark = arena_mark();
        // input.chunk(num_chunks, dim=chunk_dim)[i]: positions i*c .. i*c + c - 1, a view
        const Tensor *chunk = narrow(input, chunk_dim, i * chunk_size, chunk_size);   // (B, c, C)
        const Tensor *output_chunk = forward_fn(self, chunk);                 // (B, c, C)
        // torch.cat(output_chunks, dim=chunk_dim), one chunk at a time
        for (int b = 0; b < size(output_chunk, 0); b++) {
            for (int t = 0; t < chunk_size; t++) {
                memcpy(at3(output, b, i * chunk_size + t, 0), at3(output_chunk, b, t, 0),
                       (size_t)size(output, 2) * sizeof(float));
            }
        }
        arena_release(mark);
    }
    trace_pause(was_paused);
    trace("apply_chunking_to_forward", output, 1, &input, 1, (const double[]){chunk_size});
    return output;
}

// BertLayer.forward, line by line. hidden_states (B, T, C); args as the
// post's keyword arguments. Returns layer_output (B, T, C); *present (may
// be NULL) gets the self-attention's present_key_value, (B, H, P+T, D) each.
static Tensor *BertLayer_forward(BertLayerSteps *steps, KeyValue *present, const BertLayer *self,
                                 const Tensor *hidden_states, const BertArgs *args,
                                 BertMode mode) {
    // self_attn_past_key_value = past_key_value[:2]: the self-attention's
    // own cache (the cross-attention's keys come from the image each time).
    BertArgs self_args = {.attention_mask = args->attention_mask,
                          .head_mask = args->head_mask,
                          .past_key_value = args->past_key_value};
    BertSelfAttentionSteps self_steps, cross_steps;
    memset(&cross_steps, 0, sizeof cross_steps);
    const Tensor *attention_output =
        BertAttention_forward(&self_steps, present, &self->attention, hidden_states,
                              &self_args);                                   // (B, T, C)
    const Tensor *self_attention_output = attention_output;

    // "这个在Bert中用不到,在Decoder中用到": not used in BERT, used in the decoder.
    if (mode == MODE_MULTIMODAL) {
        if (args->encoder_hidden_states == NULL || !self->add_cross_attention) {
            fail("encoder_hidden_states must be given for cross-attention layers");
        }
        // The queries are the self-attention's output; the post passes
        // attention_mask too, which BertSelfAttention swaps for
        // encoder_attention_mask. The cross-attention's own present is dropped.
        BertArgs cross_args = {.attention_mask = args->attention_mask,
                               .head_mask = args->head_mask,
                               .encoder_hidden_states = args->encoder_hidden_states,
                               .encoder_attention_mask = args->encoder_attention_mask};
        attention_output = BertAttention_forward(&cross_steps, NULL, &self->crossattention,
                                                 attention_output, &cross_args);   // (B, T, C)
    }

    // "feed_forward_chunk等价于MLP,进行了两次的全连接": the MLP, two dense layers.
    Tensor *layer_output = apply_chunking_to_forward(feed_forward_chunk, self,
                                                     self->chunk_size_feed_forward,
                                                     self->seq_len_dim, attention_output);
    if (steps != NULL) {
        *steps = (BertLayerSteps){self_steps, self_attention_output, cross_steps,
                                  attention_output};
    }
    return layer_output;                                                      // (B, T, C)
}

// --- the lesson's inputs: the padding mask and the head mask ----------------------------------

typedef struct {
    int batch, seq, dim, heads, intermediate, max_positions, pad, head_mask, past, encoder_seq,
        encoder_width, chunk;
    PositionType position;
    bool train;
} Flags;

// keep (B, L), int64: 1 for a real token, 0 for padding. The last `pad`
// positions of the LAST batch row are padding (a shorter sentence).
static Tensor *keep_rows(int batch, int positions, int pad) {
    Tensor *keep = full(shape2(batch, positions), 1.0f);                       // (B, L)
    keep->dtype = DTYPE_INT64;
    for (int s = positions - pad; s < positions; s++) {
        *at2(keep, batch - 1, s) = 0.0f;
    }
    return keep;
}

// attention_mask = (1 - keep)[:, None, None, :] * -10000.0: (B, 1, 1, L),
// 0 (a -0.0, from 0 * -10000) for a real key, -10000 for padding. BertModel
// builds it once (get_extended_attention_mask) and hands it to every layer.
static Tensor *additive_mask(const Tensor *keep) {
    int B = size(keep, 0), L = size(keep, 1);
    Tensor *attention_mask = zeros(shape4(B, 1, 1, L));                       // (B, 1, 1, L)
    for (int b = 0; b < B; b++) {
        for (int s = 0; s < L; s++) {
            *at4(attention_mask, b, 0, 0, s) = (1.0f - *at2(keep, b, s)) * MASK_ADDED;
        }
    }
    trace1("(1 - keep) * -10000", attention_mask, keep);
    return attention_mask;
}

// head_mask (1, H, 1, 1): 1 everywhere but head h, which gets 0. BertModel
// turns a user's (H,) head mask into this shape for each layer.
static Tensor *zero_one_head(int heads, int h) {
    Tensor *head_mask = full(shape4(1, heads, 1, 1), 1.0f);                   // (1, H, 1, 1)
    *at4(head_mask, 0, h, 0, 0) = 0.0f;
    return head_mask;
}

// --- the cell: the layer, run as BLIP's decoder runs it ---------------------------------------

// Everything the cell made, for the demonstrations to use again.
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
// `past` (NULL: none), as the cell passes them.
static BertArgs layer_args(const Run *run, const Tensor *mask, const KeyValue *past) {
    return (BertArgs){.attention_mask = mask,
                      .head_mask = run->head_mask,
                      .encoder_hidden_states = run->encoder_hidden_states,
                      .past_key_value = past};
}

// "layer(hidden_states, attention_mask, head_mask, ...)": the call as the
// cell writes it, with the arguments this run passes.
static const char *call_text(const Run *run, const char *tokens, const char *mask,
                             bool with_cache) {
    char *text = arena_alloc(256, 1);
    snprintf(text, 256, "layer(%s, %s%s%s%s%s)", tokens, mask,
             run->head_mask != NULL ? ", head_mask" : "",
             run->encoder_hidden_states != NULL ? ", encoder_hidden_states" : "",
             with_cache ? ", past_key_value=present_key_value" : "",
             run->mode == MODE_MULTIMODAL ? ", mode='multimodal'" : "");
    return text;
}

// t[..., :6]: the first (at most) 6 columns, so a row fits a line.
static const Tensor *first_columns(const Tensor *t) {
    int last = t->shape.ndim - 1;
    return narrow(t, last, 0, size(t, last) < 6 ? size(t, last) : 6);
}

// weights[b, h] of (B, H, T, S): one head's (T, S) matrix.
static const Tensor *one_head(const Tensor *weights, int b, int h) {
    const Tensor *row = narrow(narrow(weights, 0, b, 1), 1, h, 1);             // (1, 1, T, S)
    return reshape(row, shape2(size(weights, 2), size(weights, 3)));          // (T, S)
}

static const char *bool_text(bool value) { return value ? "True" : "False"; }

static void print_config(const BertConfig *config) {
    printf("config: hidden_size %d, num_attention_heads %d (head size %d), intermediate_size %d,\n"
           "  position_embedding_type '%s', max_position_embeddings %d, layer_norm_eps %g,\n"
           "  dropout %g and %g, add_cross_attention %s, encoder_width %d, "
           "chunk_size_feed_forward %d\n", config->hidden_size, config->num_attention_heads,
           config->hidden_size / config->num_attention_heads, config->intermediate_size,
           POSITION_TYPES[config->position_embedding_type], config->max_position_embeddings,
           config->layer_norm_eps, config->hidden_dropout_prob,
           config->attention_probs_dropout_prob, bool_text(config->add_cross_attention),
           config->encoder_width, config->chunk_size_feed_forward);
}

// sum(p.numel() for p in layer.parameters())
static long count_parameters(const BertLayer *layer) {
    const BertAttention *attentions[2] = {&layer->attention, &layer->crossattention};
    long count = 0;
    for (int a = 0; a < (layer->add_cross_attention ? 2 : 1); a++) {
        const BertSelfAttention *self = &attentions[a]->self;
        const Linear *linears[4] = {&self->query, &self->key, &self->value,
                                    &attentions[a]->output.dense};
        for (int i = 0; i < 4; i++) {
            count += numel(linears[i]->weight) + numel(linears[i]->bias);
        }
        count += 2L * numel(attentions[a]->output.LayerNorm.weight);
        count += self->distance_embedding != NULL ? numel(self->distance_embedding) : 0;
    }
    const Linear *dense[2] = {&layer->intermediate.dense, &layer->output.dense};
    for (int i = 0; i < 2; i++) {
        count += numel(dense[i]->weight) + numel(dense[i]->bias);
    }
    return count + 2L * numel(layer->output.LayerNorm.weight);
}

// What the self-attention did, step by step, in the post's names.
static void print_self_attention(const Run *run, int P, int N) {
    const BertSelfAttentionSteps *s = &run->steps.attention;
    const BertSelfAttention *self = &run->layer.attention.self;
    int B = size(run->hidden_states, 0), T = size(run->hidden_states, 1);
    int C = size(run->hidden_states, 2), H = self->num_attention_heads;
    int D = self->attention_head_size, L = size(s->key_layer, 2);
    printf("attention.self (BertSelfAttention):\n");
    printf("  mixed_query_layer = self.query(hidden_states): %s\n",
           sizes_str((const int[]){B, T, C}, 3, SIZES_TORCH));
    printf("  query_layer = transpose_for_scores(mixed_query_layer): view%s, permute(0, 2, 1, 3): "
           "%s, stride %s\n", sizes_str((const int[]){B, T, H, D}, 4, SIZES_TUPLE),
           size_str(s->query_layer), stride_str(s->query_layer));
    if (P > 0) {
        printf("  key_layer = torch.cat([past_key_value[0], transpose_for_scores(self.key("
               "hidden_states))], dim=2): %s\n", size_str(s->key_layer));
    } else {
        printf("  key_layer = transpose_for_scores(self.key(hidden_states)): %s\n",
               size_str(s->key_layer));
    }
    printf("  value_layer, the same from self.value: %s\n", size_str(s->value_layer));
    printf("  attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2)): %s\n",
           sizes_str((const int[]){B, H, T, L}, 4, SIZES_TORCH));
    if (s->distance != NULL) {
        printf("  distance = position_ids_l - position_ids_r (queries at %d..%d, keys at 0..%d):\n"
               "%s\n", P, L - 1, L - 1, tensor_str(s->distance, NULL));
        Tensor *rows = clone(s->distance);                                    // (T, L)
        for (long i = 0; i < numel(rows); i++) {
            rows->data[i] += (float)(N - 1);
        }
        printf("  distance + %d, the rows of distance_embedding.weight %s it picks:\n%s\n", N - 1,
               shape_str(self->distance_embedding->shape, SIZES_TUPLE), tensor_str(rows, NULL));
        printf("  positional_embedding = self.distance_embedding(distance + %d): %s\n", N - 1,
               sizes_str((const int[]){T, L, D}, 3, SIZES_TORCH));
        printf("  attention_scores += torch.einsum(\"bhld,lrd->bhlr\", query_layer, "
               "positional_embedding)\n");
        if (self->position_embedding_type == RELATIVE_KEY_QUERY) {
            printf("  attention_scores += torch.einsum(\"bhrd,lrd->bhlr\", key_layer, "
                   "positional_embedding)\n");
        }
    }
    printf("  attention_scores = attention_scores / math.sqrt(%d) + attention_mask\n", D);
    printf("  attention_probs = nn.Softmax(dim=-1)(attention_scores): %s\n",
           size_str(s->attention_probs));
    printf("  attention_probs[%d, 0] (batch row %d, head 0):\n%s\n", B - 1, B - 1,
           tensor_str(one_head(s->attention_probs, B - 1, 0), NULL));
    printf("  attention_probs_dropped = self.dropout(attention_probs)%s\n",
           run->head_mask != NULL ? " * head_mask" : "");
    printf("  context_layer = (attention_probs_dropped @ value_layer).permute(0, 2, 1, 3)"
           ".contiguous().view(%d, %d, %d): %s\n", B, T, C, size_str(s->context_layer));
    printf("attention.output (BertSelfOutput): attention_output = LayerNorm(dropout(dense("
           "context_layer)) + hidden_states): %s\n", size_str(run->steps.self_attention_output));
}

static void print_cross_attention(const Run *run) {
    const BertSelfAttentionSteps *s = &run->steps.crossattention;
    int B = size(run->hidden_states, 0), T = size(run->hidden_states, 1);
    int C = size(run->hidden_states, 2);
    printf("crossattention.self (BertSelfAttention, keys and values from "
           "encoder_hidden_states):\n");
    printf("  mixed_query_layer = self.query(attention_output): %s\n",
           sizes_str((const int[]){B, T, C}, 3, SIZES_TORCH));
    printf("  key_layer = transpose_for_scores(self.key(encoder_hidden_states)): %s; value_layer "
           "the same\n", size_str(s->key_layer));
    printf("  attention_probs = nn.Softmax(dim=-1)(query_layer @ key_layer.transpose(-1, -2) / "
           "math.sqrt(%d)): %s\n", run->layer.crossattention.self.attention_head_size,
           size_str(s->attention_probs));
    printf("  cross_attention_probs[%d, 0] (batch row %d, head 0):\n%s\n", B - 1, B - 1,
           tensor_str(one_head(s->attention_probs, B - 1, 0), NULL));
    printf("crossattention.output (BertSelfOutput): attention_output = LayerNorm(dropout(dense("
           "context_layer)) + attention_output): %s\n", size_str(run->steps.attention_output));
}

static void print_feed_forward(const Run *run, const Flags *f) {
    int B = f->batch, T = f->seq, c = f->chunk > 0 ? f->chunk : f->seq;
    printf("layer_output = apply_chunking_to_forward(self.feed_forward_chunk, %d, 1, "
           "attention_output):\n", f->chunk);
    if (f->chunk > 0) {
        printf("  in %d chunks of %s along dim 1, joined by torch.cat(dim=1)\n", T / c,
               sizes_str((const int[]){B, c, f->dim}, 3, SIZES_TORCH));
    }
    printf("  intermediate (BertIntermediate): intermediate_output = gelu(dense(attention_output)):"
           " %s\n", sizes_str((const int[]){B, c, f->intermediate}, 3, SIZES_TORCH));
    printf("  output (BertOutput): layer_output = LayerNorm(dropout(dense(intermediate_output)) + "
           "attention_output): %s\n", sizes_str((const int[]){B, c, f->dim}, 3, SIZES_TORCH));
    printf("layer_output: %s\n", size_str(run->layer_output));
    const Tensor *first = reshape(narrow(run->layer_output, 0, 0, 1), shape2(T, f->dim));
    printf("layer_output[0, :, :6]:\n%s\n", tensor_str(first_columns(first), NULL));
    printf("present_key_value: key %s, value %s\n", size_str(run->present.key),
           size_str(run->present.value));
}

// The cell: with --past, the prefix first (its present_key_value is the
// cache), then hidden_states. The forwards print nothing; this prints what
// they kept.
static void run_layer(Run *run, const Flags *f, bool heatmap) {
    int P = f->past;
    const KeyValue *past = NULL;
    if (P > 0) {
        char mask_text[48];
        snprintf(mask_text, sizeof mask_text, "attention_mask[..., :%d]", P);
        printf("\n-- the prefix: %s --\n", call_text(run, "prefix", mask_text, false));
        // The diagram and the dumps are the second call's.
        bool prefix_paused = trace_pause(true);
        const Tensor *prefix_mask = narrow(run->attention_mask, 3, 0, P);       // (B, 1, 1, P)
        BertArgs prefix_args = layer_args(run, prefix_mask, NULL);
        const Tensor *prefix_output = BertLayer_forward(NULL, &run->cache, &run->layer,
                                                        run->prefix, &prefix_args, run->mode);
        trace_pause(prefix_paused);
        printf("layer_output: %s\n", size_str(prefix_output));
        printf("present_key_value: key %s, value %s\n", size_str(run->cache.key),
               size_str(run->cache.value));
        printf("\n-- the new tokens: %s --\n",
               call_text(run, "hidden_states", "attention_mask", true));
        past = &run->cache;
    } else {
        printf("\n-- %s --\n", call_text(run, "hidden_states", "attention_mask", false));
    }
    BertArgs args = layer_args(run, run->attention_mask, past);
    run->layer_output = BertLayer_forward(&run->steps, &run->present, &run->layer,
                                          run->hidden_states, &args, run->mode);   // (B, T, C)

    // What is sliced for printing is not the layer's dataflow: not drawn.
    bool was_paused = trace_pause(true);
    print_self_attention(run, P, f->max_positions);
    if (run->mode == MODE_MULTIMODAL) {
        print_cross_attention(run);
    }
    print_feed_forward(run, f);
    if (heatmap) {
        int B = f->batch;
        print_heatmap("attention_probs (last batch row)",
                      narrow(run->steps.attention.attention_probs, 0, B - 1, 1));
        if (run->mode == MODE_MULTIMODAL) {
            print_heatmap("cross_attention_probs (last batch row)",
                          narrow(run->steps.crossattention.attention_probs, 0, B - 1, 1));
        }
    }
    trace_pause(was_paused);
}

// --- the demonstrations: each on a copy of the layer in eval mode --------------------------

// A copy of the layer (the same parameters: the structs hold pointers) with
// dropout off, so the demonstrations draw nothing from the generator, and
// the feed-forward unchunked, so they may split the tokens anywhere (in eval
// mode chunks change nothing: show_chunking measures it).
static BertLayer eval_copy(const BertLayer *layer) {
    BertLayer copy = *layer;
    BertLayer_train(&copy, false);
    copy.chunk_size_feed_forward = 0;
    return copy;
}

// BERT's additive mask against lesson 4's masked_fill, on the same scores.
static void show_additive_mask(const Run *run, int pad) {
    const BertSelfAttentionSteps *s = &run->steps.attention;
    int B = size(run->keep, 0), L = size(run->keep, 1);
    const Tensor *keep = view(run->keep, shape4(B, 1, 1, L));                 // (B, 1, 1, L)
    const Tensor *filled = masked_fill(s->unmasked_scores, eq_scalar(keep, 0.0f), MASK_FILL);
    const Tensor *probs_filled = softmax(filled, -1);                         // (B, H, T, L)
    printf("\n-- the additive mask against lesson 4's masked_fill(keep == 0, -1e20) --\n");
    printf("max |additive - masked_fill| over attention_probs = %.3g\n",
           (double)max_abs_diff(s->attention_probs, probs_filled));
    if (pad == L) {
        printf("batch row %d has no real key: -10000 shifts its whole row, and softmax ignores a "
               "shift, so it keeps\n(nearly) its unmasked weights; masked_fill's -1e20 makes "
               "them uniform (lesson 4)\n", B - 1);
    } else if (pad > 0) {
        // The largest weight either gives a padded key: the padding is the
        // last `pad` positions of the last batch row.
        float largest_added = 0.0f, largest_filled = 0.0f;
        const Tensor *probs = s->attention_probs;
        for (int h = 0; h < size(probs, 1); h++) {
            for (int t = 0; t < size(probs, 2); t++) {
                for (int k = L - pad; k < L; k++) {
                    largest_added = fmaxf(largest_added, *at4(probs, B - 1, h, t, k));
                    largest_filled = fmaxf(largest_filled, *at4(probs_filled, B - 1, h, t, k));
                }
            }
        }
        printf("largest weight on a padded key: %.3g (additive), %.3g (masked_fill): "
               "exp(score - 10000) is 0 in float32\n", (double)largest_added,
               (double)largest_filled);
    }
    printf("-10000 is added to a score, not written over it: it hides a key only while the key's "
           "score stays\nwithin 10000 - 104 of the row's largest (below -104, exp underflows to 0 "
           "in float32). Unscaled\nscores can pass that (T5's did), and float16 cannot hold -1e20 "
           "at all. Newer transformers code\nadds torch.finfo(dtype).min instead: -3.4028e+38 for "
           "float32, -65504 for float16.\n");
}

// head_mask: one head's probabilities times 0. Its context is 0; the
// other heads do not notice.
static void show_head_mask(const Run *run, const Flags *f) {
    BertLayer layer = eval_copy(&run->layer);
    int h = f->head_mask >= 0 ? f->head_mask : 0, D = f->dim / f->heads;
    const KeyValue *past = f->past > 0 ? &run->cache : NULL;
    BertArgs with = {.attention_mask = run->attention_mask,
                     .head_mask = zero_one_head(f->heads, h),
                     .past_key_value = past};
    BertArgs without = with;
    without.head_mask = NULL;
    const Tensor *masked = BertSelfAttention_forward(NULL, NULL, &layer.attention.self,
                                                     run->hidden_states, &with);   // (B, T, C)
    const Tensor *plain = BertSelfAttention_forward(NULL, NULL, &layer.attention.self,
                                                    run->hidden_states, &without);   // (B, T, C)
    // Head g's D numbers are columns g*D .. g*D + D - 1 of the (B, T, C) context.
    float silenced = 0.0f, others = 0.0f;
    for (int b = 0; b < f->batch; b++) {
        for (int t = 0; t < f->seq; t++) {
            for (int c = 0; c < f->dim; c++) {
                float x = *at3(masked, b, t, c), y = *at3(plain, b, t, c);
                if (c / D == h) {
                    silenced = fmaxf(silenced, fabsf(x));
                } else {
                    others = fmaxf(others, fabsf(x - y));
                }
            }
        }
    }
    printf("\n-- head_mask: attention_probs_dropped * head_mask --\n");
    printf("head_mask[0, %d] = 0: head %d's probabilities times 0, so its "
           "context_layer[..., %d:%d] is %.3g everywhere\n", h, h, h * D, (h + 1) * D,
           (double)silenced);
    if (f->heads > 1) {
        printf("  the other heads' context: max |with - without head_mask| = %.3g\n",
               (double)others);
    }
}

// Train mode: what self.dropout did to the probabilities of the cell.
static void show_dropout(const Run *run, const Flags *f) {
    printf("\n-- dropout on attention_probs --\n");
    if (!f->train) {
        printf("eval mode: self.dropout(attention_probs) is attention_probs itself (--train turns "
               "it on)\n");
        return;
    }
    const Tensor *w = run->steps.attention.attention_probs;                   // (B, H, T, L)
    const Tensor *w_dropped = run->steps.attention.attention_probs_dropped;   // (B, H, T, L)
    long nonzero = 0, dropped = 0;
    for (int b = 0; b < size(w, 0); b++) {
        for (int h = 0; h < size(w, 1); h++) {
            if (h == f->head_mask) {
                continue;   // head_mask zeroed it after the dropout
            }
            for (int t = 0; t < size(w, 2); t++) {
                for (int s = 0; s < size(w, 3); s++) {
                    bool is_nonzero = *at4(w, b, h, t, s) != 0.0f;
                    nonzero += is_nonzero;
                    dropped += is_nonzero && *at4(w_dropped, b, h, t, s) == 0.0f;
                }
            }
        }
    }
    printf("of the %ld nonzero weights it zeroed %ld and divided the other %ld by 0.9: whole keys "
           "vanish for one query, as the comment says (\"dropping out entire tokens to attend "
           "to\")\n", nonzero, dropped, nonzero - dropped);
}

// The table and one score taken apart: what each relative term adds.
static void show_relative_positions(const Run *run, const Flags *f) {
    printf("\n-- relative positions --\n");
    if (f->position == ABSOLUTE) {
        printf("position_embedding_type 'absolute': BERT adds its position embeddings to the "
               "tokens before the\nfirst layer (BertEmbeddings), so this layer adds nothing. "
               "--position relative_key adds\nquery . table[l - r + max_position_embeddings - 1] "
               "to score (l, r); relative_key_query adds\nkey . table[l - r + "
               "max_position_embeddings - 1] too.\n");
        return;
    }
    const BertSelfAttentionSteps *s = &run->steps.attention;
    const Tensor *table = run->layer.attention.self.distance_embedding;       // (2N-1, D)
    int N = f->max_positions, D = f->dim / f->heads, P = f->past;
    printf("distance_embedding.weight %s: one row of %d numbers per distance -%d .. %d, row "
           "distance + %d\n", shape_str(table->shape, SIZES_TUPLE), D, N - 1, N - 1, N - 1);
    // Score (l, r) of batch row 0, head 0, for the last query and the first key.
    int l = f->seq - 1, r = 0;
    int row = (int)*at2(s->distance, l, r) + N - 1;
    float q_k = 0.0f, q_e = 0.0f, k_e = 0.0f;
    for (int d = 0; d < D; d++) {
        float q = *at4(s->query_layer, 0, 0, l, d), k = *at4(s->key_layer, 0, 0, r, d);
        float e = *at2(table, row, d);
        q_k += q * k;
        q_e += q * e;
        k_e += k * e;
    }
    printf("score (%d, %d) of batch row 0, head 0: query position %d, key position %d, distance "
           "%d, table row %d:\n", l, r, P + l, r, P + l - r, row);
    printf("  query . key = %.4f (content) + query . table[%d] = %.4f (query-to-distance)",
           (double)q_k, row, (double)q_e);
    if (f->position == RELATIVE_KEY_QUERY) {
        printf(" + key . table[%d] = %.4f (key-to-distance)", row, (double)k_e);
    }
    printf(", all / sqrt(%d)\n", D);
}

// "3 tokens", "1 token"
static const char *tokens(int count) {
    char *text = arena_alloc(32, 1);
    snprintf(text, 32, "%d token%s", count, count == 1 ? "" : "s");
    return text;
}

// The tokens of `everything` (B, L, C) through `layer` in two calls: the
// first `cached` ones, then the rest with the first call's
// present_key_value. Returns the second call's layer_output (B, L - cached, C).
static Tensor *two_calls(const BertLayer *layer, const Run *run, const Tensor *everything,
                         int cached) {
    int L = size(everything, 1);
    const Tensor *first_mask = narrow(run->attention_mask, 3, 0, cached);      // (B, 1, 1, cached)
    BertArgs first_args = layer_args(run, first_mask, NULL);
    KeyValue present;
    BertLayer_forward(NULL, &present, layer, narrow(everything, 1, 0, cached), &first_args,
                      run->mode);
    BertArgs second_args = layer_args(run, run->attention_mask, &present);
    return BertLayer_forward(NULL, NULL, layer, narrow(everything, 1, cached, L - cached),
                             &second_args, run->mode);                        // (B, L - cached, C)
}

// What the post's relative-position lines do with T queries against L keys:
// their (T, T) table meets (T, L) scores. NULL when PyTorch runs them, else
// the error it stops with. BH = batch * heads (the matmul's batch).
static const char *posts_positions_error(PositionType type, int T, int L, int BH) {
    char *text = arena_alloc(160, 1);
    // relative_key_query first runs einsum("bhrd,lrd->bhlr", key_layer, table):
    // r is L in the keys and T in the table; a size 1 broadcasts.
    if (type == RELATIVE_KEY_QUERY && L != T && L != 1 && T != 1) {
        snprintf(text, 160, "einsum(): subscript r has size %d for operand 1 which does not "
                 "broadcast with previously seen size %d", T, L);
        return text;
    }
    // attention_scores (.., T, L) + relative_position_scores (.., T, T)
    if (L != T && L != 1 && T != 1) {
        snprintf(text, 160, "The size of tensor a (%d) must match the size of tensor b (%d) at "
                 "non-singleton dimension 3", L, T);
        return text;
    }
    // L == 1 < T: the sum broadcasts to (T, T) probabilities, which the
    // (1, D) values cannot multiply.
    if (L == 1 && T > 1) {
        snprintf(text, 160, "Expected size for first two dimensions of batch2 tensor to be: "
                 "[%d, %d] but got: [%d, 1].", BH, T, BH);
        return text;
    }
    return NULL;
}

// The post's relative positions with a cache: several new tokens (PyTorch
// stops), one new token (it runs, wrongly).
static void show_posts_cache_bug(const BertLayer *layer, const Run *run, const Tensor *everything,
                                 const Flags *f) {
    int L = size(everything, 1), T = f->seq, P = f->past;
    BertLayer post = *layer;
    post.attention.self.as_the_post = true;
    printf("the post's relative positions: seq_length = hidden_states.size()[1], the NEW tokens "
           "only\n");
    int several = P > 0 && T >= 2 ? P : L - 2;
    if (several >= 1) {
        int new_tokens = L - several;
        printf("%s cached, %s new: its distance is (%d, %d), the scores (%d, %d)\n",
               tokens(several), tokens(new_tokens), new_tokens, new_tokens, new_tokens, L);
        printf("RuntimeError: %s\n",
               posts_positions_error(f->position, new_tokens, L, f->batch * f->heads));
    }
    const Tensor *fixed = two_calls(layer, run, everything, L - 1);           // (B, 1, C)
    const Tensor *posts = two_calls(&post, run, everything, L - 1);           // (B, 1, C)
    printf("%s cached, 1 new: its distance is [[0]], every key at distance 0 from the query;\n",
           tokens(L - 1));
    printf("  the post's layer_output for the new token is off by %.4f (largest |difference|)\n",
           (double)max_abs_diff(posts, fixed));
    if (f->position == RELATIVE_KEY) {
        // relative_key adds q . table[N - 1] to EVERY score of the row: a
        // shift, which softmax ignores. So the post's layer equals one with
        // no relative term at all, to float rounding.
        BertLayer plain = *layer;
        plain.attention.self.position_embedding_type = ABSOLUTE;
        const Tensor *none = two_calls(&plain, run, everything, L - 1);       // (B, 1, C)
        printf("  q . table[%d] is added to every score of the row and softmax ignores a shift: "
               "max |the post's - no relative term| = %.3g\n", f->max_positions - 1,
               (double)max_abs_diff(posts, none));
    }
}

// past_key_value: (B, H, S, D) grown along dim 2; one call or two give the
// same output for the new tokens.
static void show_cache(const Run *run, const Flags *f) {
    BertLayer layer = eval_copy(&run->layer);
    int P = f->past, L = f->past + f->seq;
    printf("\n-- past_key_value: the cache --\n");
    printf("present_key_value = (key_layer, value_layer), each (batch, heads, positions, "
           "head_size), grown by\ntorch.cat(dim=2). Lesson 10's cache is (batch, positions, "
           "kv_heads, head_dim), grown by\ntorch.cat(dim=1): the same positions, on the other "
           "side of the heads.\n");
    if (L < 2) {
        printf("(one token in all: nothing to cache)\n");
        return;
    }
    const Tensor *everything = run->hidden_states;                            // (B, L, C)
    if (P > 0) {
        const Tensor *parts[2] = {run->prefix, run->hidden_states};
        everything = cat(parts, 2, 1);
    }
    int cached = P > 0 ? P : L - (L - 1 < 2 ? L - 1 : 2);
    if (P == 0) {
        printf("(--past 0: here the first %s of hidden_states are cached)\n", tokens(cached));
    }
    BertArgs all_args = layer_args(run, run->attention_mask, NULL);
    const Tensor *one_call = BertLayer_forward(NULL, NULL, &layer, everything, &all_args,
                                               run->mode);                    // (B, L, C)
    const Tensor *split = two_calls(&layer, run, everything, cached);         // (B, L - cached, C)
    printf("%s then %s with past_key_value, against one call over all %d:\n", tokens(cached),
           tokens(L - cached), L);
    printf("  max |two calls - one call| over the new tokens' layer_output = %.3g\n",
           (double)max_abs_diff(split, narrow(one_call, 1, cached, L - cached)));
    if (f->position != ABSOLUTE) {
        show_posts_cache_bug(&layer, run, everything, f);
    }
}

// BLIP's cross-attention, and what the post's relative positions do there.
static void show_cross_attention(const Run *run, const Flags *f) {
    int T = f->seq, M = f->encoder_seq;
    printf("\n-- BLIP's cross-attention --\n");
    if (M == 0) {
        printf("--encoder-seq M runs BLIP's decoder layer (mode='multimodal'): after the "
               "self-attention, the text's\nqueries attend to M image features of width "
               "--encoder-width.\n");
        return;
    }
    printf("queries from the text %s, keys and values from encoder_hidden_states %s:\n",
           shape_str(run->steps.attention_output->shape, SIZES_TUPLE),
           shape_str(run->encoder_hidden_states->shape, SIZES_TUPLE));
    printf("probabilities (batch, heads, %d, %d), output %s: one row per text token, as in "
           "lesson 7\n", T, M, shape_str(run->layer_output->shape, SIZES_TUPLE));
    printf("no mask: BertSelfAttention replaces attention_mask by encoder_attention_mask "
           "(None) for cross-attention\n");
    if (f->position == ABSOLUTE) {
        return;
    }
    printf("text position l and image feature r are not on one axis: the fixed layer adds no "
           "relative term\n");
    printf("the post's code would add its (%d, %d) table to the (%d, %d) scores:\n", T, T, T, M);
    const char *error = posts_positions_error(f->position, T, M, f->batch * f->heads);
    if (error != NULL) {
        printf("RuntimeError: %s\n", error);
        return;
    }
    BertLayer layer = eval_copy(&run->layer);
    BertAttention post = layer.crossattention;
    post.self.as_the_post = true;
    // The cross-attention's input: the self-attention's output, as in the cell.
    BertArgs self_args = {.attention_mask = run->attention_mask, .head_mask = run->head_mask,
                          .past_key_value = f->past > 0 ? &run->cache : NULL};
    const Tensor *self_out = BertAttention_forward(NULL, NULL, &layer.attention,
                                                   run->hidden_states, &self_args);   // (B, T, C)
    BertArgs cross_args = {.head_mask = run->head_mask,
                           .encoder_hidden_states = run->encoder_hidden_states};
    const Tensor *posts = BertAttention_forward(NULL, NULL, &post, self_out, &cross_args);
    const Tensor *fixed = BertAttention_forward(NULL, NULL, &layer.crossattention, self_out,
                                                &cross_args);                 // (B, T, C)
    printf("  it runs, and its output is off by %.4f (largest |difference|)\n",
           (double)max_abs_diff(posts, fixed));
}

// Every chunk size that divides the sequence, in eval; then train mode.
static void show_chunking(const Run *run, const Flags *f, uint64_t seed) {
    int B = f->batch, T = f->seq, C = f->dim, I = f->intermediate;
    const Tensor *attention_output = run->steps.attention_output;             // (B, T, C)
    BertLayer layer = eval_copy(&run->layer);
    printf("\n-- apply_chunking_to_forward: the feed-forward in chunks along the sequence --\n");
    const Tensor *unchunked = feed_forward_chunk(&layer, attention_output);   // (B, T, C)
    for (int c = 1; c <= T; c++) {
        if (T % c == 0) {
            const Tensor *chunked =
                apply_chunking_to_forward(feed_forward_chunk, &layer, c, 1, attention_output);
            printf("chunk_size %d: %d chunk%s of %s: max |chunked - unchunked| = %.3g\n", c,
                   T / c, T / c == 1 ? "" : "s", sizes_str((const int[]){B, c, C}, 3, SIZES_TUPLE),
                   (double)max_abs_diff(chunked, unchunked));
        }
    }
    printf("memory: one chunk's intermediate_output (batch, chunk_size, %d) at a time: %ld floats "
           "unchunked, %ld in chunks of 1.\nBERT-base (intermediate 3072) at 512 tokens: %d "
           "floats (%.1f MiB) per sequence unchunked, 3072 per position.\nThe saving is at "
           "inference: in training, autograd keeps every chunk's activations for the backward "
           "pass.\n", I, (long)B * T * I, (long)B * I, 512 * 3072,
           512.0 * 3072.0 * 4.0 / (1024.0 * 1024.0));

    // Train mode: the same generator state before each run, yet other masks.
    int c = f->chunk > 0 ? f->chunk : 1;
    BertLayer training = run->layer;
    BertLayer_train(&training, true);
    manual_seed(seed);
    const Tensor *unchunked_train = feed_forward_chunk(&training, attention_output);
    manual_seed(seed);
    const Tensor *chunked_train =
        apply_chunking_to_forward(feed_forward_chunk, &training, c, 1, attention_output);
    // The masks themselves: dropout draws one Bernoulli(0.9) per element of
    // the tensor it gets, row-major (bernoulli() makes the same draws).
    manual_seed(seed);
    const Tensor *mask_unchunked = bernoulli(shape3(B, T, C), 0.9);           // (B, T, C)
    manual_seed(seed);
    const Tensor **mask_chunks = arena_alloc((size_t)(T / c), sizeof *mask_chunks);
    for (int i = 0; i < T / c; i++) {
        mask_chunks[i] = bernoulli(shape3(B, c, C), 0.9);                     // (B, c, C)
    }
    const Tensor *mask_chunked = cat(mask_chunks, T / c, 1);                  // (B, T, C)
    long agree = 0;
    for (long i = 0; i < numel(mask_unchunked); i++) {
        agree += mask_unchunked->data[i] == mask_chunked->data[i];
    }
    printf("train mode, chunk_size %d, the generator re-seeded with --seed before each run:\n", c);
    printf("  the dropout masks agree at %ld of %ld elements, and the outputs are off by %.4f\n",
           agree, numel(mask_unchunked), (double)max_abs_diff(chunked_train, unchunked_train));
    printf("each chunk's dense output %s draws its dropout mask row-major, batch row first, and "
           "so does the\nunchunked %s: the draws land on the same elements only when batch is 1 "
           "or the chunk is the whole sequence.\n",
           sizes_str((const int[]){B, c, C}, 3, SIZES_TUPLE),
           sizes_str((const int[]){B, T, C}, 3, SIZES_TUPLE));
}

// Lesson 11's order with this layer's weights (pre-norm):
//   h = x + dense(attention(LayerNorm(x))); out = h + output.dense(intermediate(LayerNorm(h))).
static Tensor *pre_norm_layer(const BertLayer *layer, const Tensor *x, const BertArgs *args) {
    const BertAttention *attention = &layer->attention;
    const Tensor *normed = layer_norm_forward(&attention->output.LayerNorm, x);        // (B, T, C)
    const Tensor *context = BertSelfAttention_forward(NULL, NULL, &attention->self, normed, args);
    const Tensor *h = add(x, linear(&attention->output.dense, context));               // (B, T, C)
    const Tensor *inner = BertIntermediate_forward(&layer->intermediate,
                                                   layer_norm_forward(&layer->output.LayerNorm, h));
    return add(h, linear(&layer->output.dense, inner));                                // (B, T, C)
}

// Each row's standard deviation over the last dim (biased, as LayerNorm's),
// averaged over the rows.
static double row_std(const Tensor *x) {
    int C = size(x, -1);
    long rows = numel(x) / C;
    const Tensor *xc = contiguous(x);
    double total = 0.0;
    for (long r = 0; r < rows; r++) {
        const float *x_r = &xc->data[xc->offset + r * C];
        double mean = 0.0, var = 0.0;
        for (int c = 0; c < C; c++) {
            mean += x_r[c];
        }
        mean /= C;
        for (int c = 0; c < C; c++) {
            var += (x_r[c] - mean) * (x_r[c] - mean);
        }
        total += sqrt(var / C);
    }
    return total / (double)rows;
}

static void show_post_norm(const Run *run, const Flags *f) {
    BertLayer layer = eval_copy(&run->layer);
    printf("\n-- post-norm (BERT) against pre-norm (lesson 11's ViT block) --\n");
    printf("post-norm, this layer:  h = LayerNorm(x + attention(x));  out = LayerNorm(h + "
           "feed_forward(h))\n");
    printf("pre-norm, lesson 11:    h = x + attention(LayerNorm(x));  out = h + "
           "feed_forward(LayerNorm(h))\n");
    // hidden_states alone: its own keys are the last T of the mask.
    const Tensor *mask = narrow(run->attention_mask, 3, f->past, f->seq);     // (B, 1, 1, T)
    BertArgs args = {.attention_mask = mask, .head_mask = run->head_mask};
    const Tensor *post = run->hidden_states, *pre = run->hidden_states;       // (B, T, C)
    double post_1 = 0.0, pre_1 = 0.0;
    for (int depth = 1; depth <= DEPTH; depth++) {
        post = BertLayer_forward(NULL, NULL, &layer, post, &args, MODE_TEXT);
        pre = pre_norm_layer(&layer, pre, &args);
        if (depth == 1) {
            post_1 = row_std(post);
            pre_1 = row_std(pre);
        }
    }
    printf("the same weights on hidden_states (no cache, no cross-attention); each row's standard "
           "deviation, averaged over the %d rows:\n", f->batch * f->seq);
    printf("  hidden_states                   %.4f\n", row_std(run->hidden_states));
    printf("  after the layer:                post-norm %.4f, pre-norm %.4f\n", post_1, pre_1);
    printf("  after the same layer %d times:  post-norm %.4f, pre-norm %.4f\n", DEPTH,
           row_std(post), row_std(pre));
    printf("post-norm ends every sublayer with a LayerNorm, so each layer's output rows have "
           "mean 0 and std 1\n(times LayerNorm's weight); pre-norm normalises only what enters a "
           "sublayer and adds its result to\nan untouched x, which grows layer after layer and "
           "keeps a clean path for the gradient.\n");
}

// --- the lesson -----------------------------------------------------------------------------

// --- the budget: what a run of these sizes holds and does (lesson/budget.h) ----------

// The floats a step makes, its multiply-adds and the elements that go
// through exp or erf, added up part by part.
typedef struct {
    double floats, multiply_adds, exps;
} Work;

static Work plus(Work a, Work b) {
    return (Work){a.floats + b.floats, a.multiply_adds + b.multiply_adds, a.exps + b.exps};
}

static Work times(double n, Work a) {
    return (Work){n * a.floats, n * a.multiply_adds, n * a.exps};
}

// BertSelfAttention_forward: Tq queries against Lk keys, the keys and values
// projected from the image (cross), or from the tokens and joined to a cache
// (past); with the relative position terms (relative). Dropout (train mode)
// and the head mask are counted whether or not this call has them.
static Work self_attention_work(const Flags *f, double Tq, double Lk, bool cross, bool past,
                                bool relative) {
    double B = f->batch, C = f->dim, D = C / f->heads, scores = B * f->heads * Tq * Lk;
    double kv_tokens = cross ? f->encoder_seq : Tq, width = cross ? f->encoder_width : C;
    double both = f->position == RELATIVE_KEY_QUERY ? 2 : 1;
    double per_score = 4 + f->train + (f->head_mask >= 0);   // scores, scaled, masked, probs
    Work w = {3 * B * Tq * C + 2 * B * kv_tokens * C + past * 2 * B * Lk * C + per_score * scores,
              B * Tq * C * C + 2 * B * kv_tokens * width * C + 2 * scores * D, scores};
    if (relative) {   // the distances, the embedding (Tq, Lk, D), the einsums and their adds
        w = plus(w, (Work){Tq * Lk * (1 + D) + both * 2 * scores, both * scores * D, 0});
    }
    return w;
}

// BertSelfOutput (and BertOutput after its input): dense, dropout, add, LayerNorm.
static Work output_work(const Flags *f, double Tq, double in_features) {
    double B = f->batch, C = f->dim;
    return (Work){4 * B * Tq * C, B * Tq * in_features * C, 0};
}

// BertIntermediate then BertOutput.
static Work feed_forward_work(const Flags *f, double Tq) {
    double B = f->batch, I = f->intermediate;
    return plus((Work){2 * B * Tq * I, B * Tq * f->dim * I, B * Tq * I}, output_work(f, Tq, I));
}

// BertLayer_forward; chunked or not, the feed-forward makes at most one
// output more than unchunked.
static Work layer_work(const Flags *f, double Tq, double Lk, bool past, bool multimodal) {
    bool relative = f->position != ABSOLUTE;
    Work w = plus(self_attention_work(f, Tq, Lk, false, past, relative),
                  output_work(f, Tq, f->dim));
    if (multimodal) {
        w = plus(w, plus(self_attention_work(f, Tq, f->encoder_seq, true, false, false),
                         output_work(f, Tq, f->dim)));
    }
    return plus(w, plus(feed_forward_work(f, Tq), (Work){f->batch * Tq * f->dim, 0, 0}));
}

// Counted from the code above, part by part (everything a part makes stays
// until the end, but for the chunks the feed-forward drops): the layer's
// parameters and inputs, the prefix's call and the layer's, the checks of
// the mask, the head mask, the cache (one call against two, and the post's
// positions), the post's cross-attention, the chunks (one output for each
// chunk size that divides --seq), and twelve post-norm and pre-norm layers.
static Cost bert_layer_cost(const Flags *f) {
    double B = f->batch, T = f->seq, C = f->dim, H = f->heads, I = f->intermediate;
    double P = f->past, M = f->encoder_seq, E = f->encoder_width, L = P + T, D = C / H;
    bool multimodal = M > 0, relative = f->position != ABSOLUTE;
    double table = relative * (2.0 * f->max_positions - 1) * D;
    double parameters = 4 * C * C + 6 * C + table + 2 * I * C + I + 3 * C +
                        multimodal * (2 * C * C + 2 * E * C + 6 * C + table);
    Work w = {parameters + B * L * C + B * M * E + 2 * B * L + H, 0, B * L * C + B * M * E};
    if (P > 0) {
        w = plus(w, layer_work(f, P, P, false, multimodal));
    }
    w = plus(w, layer_work(f, T, L, P > 0, multimodal));
    w = plus(w, (Work){2 * T * L + T * M + B * L + 2 * B * H * T * L, 0, B * H * T * L});
    w = plus(w, times(2, self_attention_work(f, T, L, false, P > 0, relative)));
    if (L >= 2) {
        double cached = P > 0 ? P : L - (L - 1 < 2 ? L - 1 : 2);
        Work two_calls = plus(layer_work(f, L - 1, L - 1, false, multimodal),
                              layer_work(f, 1, L, true, multimodal));
        w = plus(w, plus(layer_work(f, L, L, false, multimodal),
                         plus(layer_work(f, cached, cached, false, multimodal),
                              layer_work(f, L - cached, L, true, multimodal))));
        w = plus(w, (Work){B * L * C, 0, 0});
        if (relative) {
            w = plus(w, times(f->position == RELATIVE_KEY ? 3 : 2, two_calls));
        }
    }
    if (multimodal && relative) {
        w = plus(w, plus(self_attention_work(f, T, L, false, P > 0, true),
                         times(2, self_attention_work(f, T, M, true, false, true))));
        w = plus(w, times(3, output_work(f, T, C)));
    }
    double divisors = 0;
    for (int c = 1; c <= f->seq; c++) {
        divisors += f->seq % c == 0;
    }
    w = plus(w, plus(times(4, feed_forward_work(f, T)), (Work){(divisors + 4) * B * T * C, 0, 0}));
    Work pre_norm = plus(self_attention_work(f, T, T, false, false, relative),
                         plus(times(2, output_work(f, T, C)), feed_forward_work(f, T)));
    w = plus(w, times(DEPTH, plus(layer_work(f, T, T, false, false), pre_norm)));
    return (Cost){
        .bytes = 4 * w.floats,
        .dumped = 4 * (parameters + B * L * C + B * M * E + B * L + B * H * T * L +
                       multimodal * B * H * T * M + 2 * B * H * L * D + 2 * B * T * C),
        .multiply_adds = w.multiply_adds,
        .exps = w.exps,
        .elements = w.floats,
    };
}

int main(int argc, char **argv) {
    Flags f = {.batch = 2, .seq = 5, .dim = 16, .heads = 4, .intermediate = 64,
               .max_positions = 16, .pad = 1, .head_mask = -1, .past = 0, .encoder_seq = 0,
               .encoder_width = 16, .chunk = 0};
    const char *position = "absolute";
    SizeFlag sizes[] = {
        {"--batch", &f.batch, "batch size"},
        {"--seq", &f.seq, "tokens of the (second) call: hidden_states"},
        {"--dim", &f.dim, "hidden_size"},
        {"--heads", &f.heads, "num_attention_heads"},
        {"--intermediate", &f.intermediate, "intermediate_size of the feed-forward"},
        {"--max-positions", &f.max_positions, "max_position_embeddings (relative positions)"},
        {"--encoder-width", &f.encoder_width, "encoder_width: the image features' width"},
    };
    IntFlag ints[] = {
        {"--pad", &f.pad, "padding at the end of the last batch row", 0, MAX_SIZE_FLAG},
        {"--head-mask", &f.head_mask, "zero this head with head_mask (-1: none)", -1,
         MAX_SIZE_FLAG},
        {"--past", &f.past, "tokens of a first call, cached as past_key_value", 0, MAX_SIZE_FLAG},
        {"--encoder-seq", &f.encoder_seq, "image features for cross-attention (0: none)", 0,
         MAX_SIZE_FLAG},
        {"--chunk", &f.chunk, "chunk_size_feed_forward (0: no chunks)", 0, MAX_SIZE_FLAG},
    };
    ChoiceFlag choices[] = {
        {"--position", &position, "position_embedding_type", POSITION_TYPES},
    };
    SwitchFlag switches[] = {
        {"--train", &f.train, "training mode: dropout on (default: eval mode)"},
    };
    Lesson lesson = {
        .program = "lesson-12",
        .summary = "bert-layer: BertSelfAttention ... BertLayer of Chen Ming's post, as BLIP's "
                   "text decoder, fixed",
        .sizes = sizes, .n_sizes = 7,
        .ints = ints, .n_ints = 5,
        .choices = choices, .n_choices = 1,
        .switches = switches, .n_switches = 1,
    };
    parse_lesson_args(&lesson, argc, argv);
    for (int i = 0; POSITION_TYPES[i] != NULL; i++) {
        f.position = strcmp(position, POSITION_TYPES[i]) == 0 ? (PositionType)i : f.position;
    }
    int L = f.past + f.seq;   // at most 2 * MAX_SIZE_FLAG: no overflow
    check_divides(&lesson, "--heads", f.heads, "--dim", f.dim);
    if (f.head_mask >= f.heads) {
        usage_error(&lesson, "--head-mask expects a head from -1 (none) to %d (--heads %d), "
                    "got '%d'", f.heads - 1, f.heads, f.head_mask);
    }
    if (f.pad > L) {
        usage_error(&lesson, "--pad %d is more than the --past + --seq = %d keys", f.pad, L);
    }
    if (f.chunk > 0) {
        check_divides(&lesson, "--chunk", f.chunk, "--seq", f.seq);
        if (f.past > 0) {   // the prefix goes through the same layer
            check_divides(&lesson, "--chunk", f.chunk, "--past", f.past);
        }
    }
    if (f.position != ABSOLUTE && f.max_positions < L) {
        usage_error(&lesson, "--max-positions %d is smaller than --past + --seq = %d: relative "
                    "positions need a table row for every distance up to %d", f.max_positions, L,
                    L - 1);
    }
    // The largest tensors of each kind: the weights of one call over all
    // L tokens (B, H, L, L) (the cache demonstration makes it); the
    // feed-forward's (B, L, I) and its weight (I, C); the inputs (B, L, C)
    // and the (C, C) weights;
    // with relative positions the positional_embedding (L, L, D) and the
    // table (2N - 1, D); with cross-attention its (B, H, T, M), the keys'
    // weight (C, E) and the image features (B, M, E).
    int D = f.dim / f.heads;
    check_fits(&lesson, "attention_probs (batch, heads, past+seq, past+seq)",
               shape4(f.batch, f.heads, L, L));
    check_fits(&lesson, "intermediate_output (batch, past+seq, intermediate)",
               shape3(f.batch, L, f.intermediate));
    check_fits(&lesson, "intermediate.dense.weight (intermediate, dim)",
               shape2(f.intermediate, f.dim));
    check_fits(&lesson, "hidden_states (batch, past+seq, dim)", shape3(f.batch, L, f.dim));
    check_fits(&lesson, "attention.self.query.weight (dim, dim)", shape2(f.dim, f.dim));
    if (f.position != ABSOLUTE) {
        check_fits(&lesson, "positional_embedding (past+seq, past+seq, dim/heads)",
                   shape3(L, L, D));
        check_fits(&lesson, "distance_embedding.weight (2*max-positions - 1, dim/heads)",
                   shape2(2 * f.max_positions - 1, D));
    }
    if (f.encoder_seq > 0) {
        check_fits(&lesson, "cross_attention_probs (batch, heads, seq, encoder-seq)",
                   shape4(f.batch, f.heads, f.seq, f.encoder_seq));
        check_fits(&lesson, "crossattention.self.key.weight (dim, encoder-width)",
                   shape2(f.dim, f.encoder_width));
        check_fits(&lesson, "encoder_hidden_states (batch, encoder-seq, encoder-width)",
                   shape3(f.batch, f.encoder_seq, f.encoder_width));
        check_fits(&lesson, "the cross-attention's keys and values (batch, encoder-seq, dim)",
                   shape3(f.batch, f.encoder_seq, f.dim));
    }
    check_budget(&lesson, bert_layer_cost(&f));
    lesson_start(&lesson);

    BertConfig config = {
        .hidden_size = f.dim,
        .num_attention_heads = f.heads,
        .intermediate_size = f.intermediate,
        .position_embedding_type = f.position,
        .max_position_embeddings = f.max_positions,
        .layer_norm_eps = 1e-12,
        .hidden_dropout_prob = 0.1,
        .attention_probs_dropout_prob = 0.1,
        .add_cross_attention = f.encoder_seq > 0,   // BLIP's decoder layers
        .encoder_width = f.encoder_width,
        .chunk_size_feed_forward = f.chunk,
    };
    print_config(&config);

    // The draws: the layer's parameters, then the inputs, as the PyTorch cell.
    Run run;
    memset(&run, 0, sizeof run);
    run.layer = BertLayer_init(&config);
    printf("layer = BertLayer(config, 0): %ld parameters\n", count_parameters(&run.layer));
    if (f.past > 0) {
        run.prefix = named("prefix", randn(shape3(f.batch, f.past, f.dim)));     // (B, P, C)
    }
    run.hidden_states = named("hidden_states", randn(shape3(f.batch, f.seq, f.dim)));   // (B, T, C)
    if (f.encoder_seq > 0) {
        Shape image = shape3(f.batch, f.encoder_seq, f.encoder_width);
        run.encoder_hidden_states = named("encoder_hidden_states", randn(image));     // (B, M, E)
        run.mode = MODE_MULTIMODAL;
    }
    BertLayer_train(&run.layer, f.train);
    printf("%s\n", f.train ? "layer.train()" : "layer.eval()");
    if (f.past > 0) {
        printf("prefix = torch.randn%s\n", shape_str(run.prefix->shape, SIZES_TUPLE));
    }
    printf("hidden_states = torch.randn%s\n", shape_str(run.hidden_states->shape, SIZES_TUPLE));
    if (f.encoder_seq > 0) {
        printf("encoder_hidden_states = torch.randn%s  (an image encoder's features)\n",
               shape_str(run.encoder_hidden_states->shape, SIZES_TUPLE));
    }

    run.keep = labeled("keep", keep_rows(f.batch, L, f.pad));                 // (B, L)
    printf("keep (1: a real token, 0: padding; --pad %d pads the end of batch row %d):\n%s\n",
           f.pad, f.batch - 1, tensor_str(run.keep, NULL));
    run.attention_mask = named("attention_mask", additive_mask(run.keep));    // (B, 1, 1, L)
    printf("attention_mask = (1 - keep)[:, None, None, :] * -10000.0: %s\n%s\n",
           size_str(run.attention_mask), tensor_str(run.attention_mask, NULL));
    if (f.head_mask >= 0) {
        run.head_mask = zero_one_head(f.heads, f.head_mask);                  // (1, H, 1, 1)
        printf("head_mask: 1, except 0 for head %d: %s\n", f.head_mask,
               size_str(run.head_mask));
    }

    run_layer(&run, &f, lesson.heatmap);
    // The dumps, and the diagram's names for what the forward kept.
    named("attention_probs", run.steps.attention.attention_probs);
    if (run.mode == MODE_MULTIMODAL) {
        named("cross_attention_probs", run.steps.crossattention.attention_probs);
    }
    named("present_key", run.present.key);
    named("present_value", run.present.value);
    named("attention_output", run.steps.attention_output);
    named("layer_output", run.layer_output);
    labeled("query_layer", run.steps.attention.query_layer);
    labeled("key_layer", run.steps.attention.key_layer);
    labeled("value_layer", run.steps.attention.value_layer);
    labeled("context_layer", run.steps.attention.context_layer);

    // The demonstrations: commentary, not the layer's dataflow.
    trace_pause(true);
    show_additive_mask(&run, f.pad);
    show_head_mask(&run, &f);
    show_dropout(&run, &f);
    show_relative_positions(&run, &f);
    show_cache(&run, &f);
    show_cross_attention(&run, &f);
    show_chunking(&run, &f, lesson.seed);
    show_post_norm(&run, &f);
    return lesson_finish(&lesson);
}
