// Lesson 12: bert-layer - the BERT layer of Chen Ming's post, as BLIP's text decoder uses it.
//
// WHAT THIS ADDS
//   Lessons 2-10 built attention on its own, lesson 11 ViT's pre-norm block
//   around it. A Transformer stacks LAYERS, and this is BERT's (post-norm),
//   as Chen Ming's post copies it from BLIP's models/med.py (itself "based
//   on transformers v4.15.0"): BertSelfAttention (multi-head attention,
//   lesson 6, with BERT's additive -10000 padding mask, a head_mask, dropout
//   on the probabilities, optional RELATIVE positions and a past_key_value
//   cache), BertSelfOutput (dense, dropout, then LayerNorm(h + input): a
//   residual and a POST-norm), BertIntermediate (dense to 4x the width,
//   GELU), BertOutput (dense back, residual, LayerNorm), run through
//   apply_chunking_to_forward, which can split the feed-forward along the
//   sequence. BLIP's text decoder adds a cross-attention (lesson 7) over an
//   image encoder's features in between. The post's relative positions are
//   wrong in two places (with a cache, and in cross-attention); the layer
//   here is the fixed one, and the post's own code runs in parts 6 and 7
//   (the_post.c), failing and going wrong, beside the fix proven.
//
// THE MATH (one layer; x is (B, T, C), L = P + T keys after P cached ones)
//   scores = q k^T [+ q e(t - s) [+ k e(t - s)]] / sqrt(D) + mask   (B, H, T, L)
//   a      = LayerNorm(x + dense(softmax(scores) v))                (B, T, C)  post-norm
//   [a     = LayerNorm(a + dense(cross-attention of a over the image))]  BLIP, mode='multimodal'
//   out    = LayerNorm(a + dense2(gelu(dense1(a))))                 (B, T, C)  post-norm
//   mask = (1 - keep) * -10000 (added, not filled); e = distance_embedding,
//   a table of 2MP - 1 rows, one per distance t - s from -(MP-1) to MP-1.
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
//   make lesson-12                                   the layer (part 1), and the list of parts
//   make lesson-12 ARGS="--part 6 --position relative_key --past 3 --seq 2"
//                                                    one part: the post's bug, running
//   make lesson-12 ARGS="--all"                      every part, one after the other
//   flags: --batch --seq --dim --heads --intermediate --position --max-positions --pad
//   --head-mask --past --encoder-seq --encoder-width --chunk --train --part --all --seed
//   --dump --dot --heatmap --help
//
// WHAT TO LOOK FOR
//   - attention_probs[1, 0]: the padded key's column is 0.0000: -10000 is
//     added to its score, and exp(-10000) is 0 in float32, exactly what
//     lesson 4's masked_fill(-1e20) gives (part 2 compares the two).
//   - query_layer is a permuted view: stride (80, 4, 16, 1), no copy.
//   - --position relative_*: the distance matrix, and the table rows it
//     picks (distance + MP - 1). With --past 3 the queries sit at positions
//     3..7, not 0..4: the post's code takes them from the new tokens only,
//     and PyTorch stops (several new tokens) or silently puts every key at
//     distance 0 (one new token). The fixed layer gives, over prefix + new
//     tokens, the same output in one call as in two with the cache (part 6).
//   - every chunk size that divides --seq gives the same output in eval (part 8).
//   - post-norm: every row of layer_output has standard deviation 1;
//     pre-norm (lesson 11's order, same weights) lets the rows grow (part 9).
//
// THE PARTS (1 to 5, 8 and 9 in parts.c, 6 and 7 in the_post.c; --part N prints N alone,
// --all every part; the default prints part 1 and the list of the others)
//   1. the layer, run as BLIP's decoder runs it (every flag; --heatmap draws it)
//   2. BERT's additive mask against lesson 4's masked_fill (--pad)
//   3. head_mask silences a head (--head-mask)
//   4. dropout on the attention probabilities (--train)
//   5. relative positions: the table and one score taken apart (--position)
//   6. past_key_value, the cache, and the post's relative positions with it (--past)
//   7. BLIP's cross-attention, and the post's relative positions there (--encoder-seq)
//   8. apply_chunking_to_forward: the feed-forward in chunks (--chunk, --train)
//   9. post-norm (BERT) against pre-norm (lesson 11)
//
// Size letters (docs/README.md has the table): B = batch, T = seq (the tokens
// of this call), P = past (positions in the cache), L = P + T (keys of the
// self-attention), M = encoder_seq (image features), C = dim = hidden_size, E
// = encoder_width, H = num_attention_heads, D = C / H (attention_head_size), F
// = intermediate_size, MP = max_position_embeddings (the distance table has
// 2MP - 1 rows).
// Index letters: b batch row, h head, t query position, s key position, d
// inside a head. The post's einsums name a query l and a key r
// ("bhld,lrd->bhlr"); written as loops here they are "bhtd,tsd->bhts".
// The structs, with their fields, are in bert_layer.h.

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attention.h"
#include "bert_layer.h"

const char *const POSITION_TYPES[] = {"absolute", "relative_key", "relative_key_query", NULL};

// "attention.self" + "query" -> "attention.self.query": a parameter's state_dict name.
static const char *dotted(const char *module, const char *name) {
    size_t length = strlen(module) + 1 + strlen(name) + 1;
    char *text = arena_alloc(length, 1);
    snprintf(text, length, "%s.%s", module, name);
    return text;
}

// --- the module: BertSelfAttention --------------------------------------------------------

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
        int rows = 2 * config->max_position_embeddings - 1;   // distances -(MP-1) .. MP-1
        Tensor *table = zeros(shape2(rows, self.attention_head_size));         // (2MP-1, D)
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
const Tensor *transpose_for_scores(const BertSelfAttention *self, const Tensor *x) {
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
// (the tokens of this call) against L keys. This call's tokens come after
// the L - T = P cached ones, so query t sits at position P + t and key s at
// position s. FIX 1: the post takes seq_length = hidden_states.size()[1],
// the NEW tokens only, and builds arange(T) against arange(T): a (T, T)
// matrix with every query at positions 0 .. T-1 (part 6 runs it).
Tensor *relative_distance(int T, int L) {
    Tensor *distance = zeros(shape2(T, L));                                   // (T, L)
    distance->dtype = DTYPE_INT64;   // torch.arange(..., dtype=torch.long)
    for (int t = 0; t < T; t++) {
        for (int s = 0; s < L; s++) {
            *at2(distance, t, s) = (float)((L - T + t) - s);
        }
    }
    return distance;
}

// self.distance_embedding(distance + self.max_position_embeddings - 1): for
// each (t, s) the table row of that distance, shifted by MP - 1 so that
// distance -(MP-1) is row 0 and distance 0 is row MP - 1. (T, L, D).
Tensor *positional_embedding_of(const BertSelfAttention *self, const Tensor *distance) {
    int T = size(distance, 0), L = size(distance, 1), D = self->attention_head_size;
    int MP = self->max_position_embeddings;
    const Tensor *table = self->distance_embedding;                           // (2MP-1, D)
    Tensor *positional_embedding = zeros(shape3(T, L, D));                    // (T, L, D)
    for (int t = 0; t < T; t++) {
        for (int s = 0; s < L; s++) {
            int row = (int)*at2(distance, t, s) + MP - 1;
            if (row < 0 || row >= 2 * MP - 1) {
                fail("IndexError: index out of range in self (distance_embedding row %d of %d)",
                     row, 2 * MP - 1);
            }
            for (int d = 0; d < D; d++) {
                *at3(positional_embedding, t, s, d) = *at2(table, row, d);
            }
        }
    }
    trace2("embedding", positional_embedding, distance, table);
    return positional_embedding;
}

// einsum("bhtd,tsd->bhts", query_layer, positional_embedding), the post's
// "bhld,lrd->bhlr": query t against the embedding of its distance to key
// s, summed over d. Lesson 8 writes its einsums the same way: the loop
// letters are the einsum's, and the letter missing from the output (d) is
// the one summed.
static Tensor *einsum_bhtd_tsd(const Tensor *query_layer, const Tensor *positional_embedding) {
    int B = size(query_layer, 0), H = size(query_layer, 1), T = size(query_layer, 2);
    int D = size(query_layer, 3), L = size(positional_embedding, 1);
    Tensor *scores = zeros(shape4(B, H, T, L));                               // (B, H, T, L)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            for (int t = 0; t < T; t++) {
                for (int s = 0; s < L; s++) {
                    float sum = 0.0f;
                    for (int d = 0; d < D; d++) {
                        sum += *at4(query_layer, b, h, t, d) * *at3(positional_embedding, t, s, d);
                    }
                    *at4(scores, b, h, t, s) = sum;
                }
            }
        }
    }
    trace2("einsum bhtd,tsd->bhts", scores, query_layer, positional_embedding);
    return scores;
}

// einsum("bhsd,tsd->bhts", key_layer, positional_embedding), the post's
// "bhrd,lrd->bhlr": key s against the embedding of its distance from query
// t. Same loops, the key's row in place of the query's.
static Tensor *einsum_bhsd_tsd(const Tensor *key_layer, const Tensor *positional_embedding) {
    int B = size(key_layer, 0), H = size(key_layer, 1), L = size(key_layer, 2);
    int D = size(key_layer, 3), T = size(positional_embedding, 0);
    Tensor *scores = zeros(shape4(B, H, T, L));                               // (B, H, T, L)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            for (int t = 0; t < T; t++) {
                for (int s = 0; s < L; s++) {
                    float sum = 0.0f;
                    for (int d = 0; d < D; d++) {
                        sum += *at4(key_layer, b, h, s, d) * *at3(positional_embedding, t, s, d);
                    }
                    *at4(scores, b, h, t, s) = sum;
                }
            }
        }
    }
    trace2("einsum bhsd,tsd->bhts", scores, key_layer, positional_embedding);
    return scores;
}

// attention_scores plus the relative-position terms for `distance` (T, L):
// relative_key adds how much query t wants something at distance t - s;
// relative_key_query adds, after it, how much key s wants to be seen from
// that distance. (B, H, T, L). Added one after the other, as the post adds
// them, so the sums round as PyTorch's do.
const Tensor *relative_position_scores(const BertSelfAttention *self,
                                       const Tensor *attention_scores, const Tensor *query_layer,
                                       const Tensor *key_layer, const Tensor *distance) {
    const Tensor *positional_embedding = positional_embedding_of(self, distance);   // (T, L, D)
    const Tensor *relative_position_scores_query =
        einsum_bhtd_tsd(query_layer, positional_embedding);                  // (B, H, T, L)
    attention_scores = add(attention_scores, relative_position_scores_query);
    if (self->position_embedding_type == RELATIVE_KEY_QUERY) {
        const Tensor *relative_position_scores_key =
            einsum_bhsd_tsd(key_layer, positional_embedding);                // (B, H, T, L)
        attention_scores = add(attention_scores, relative_position_scores_key);
    }
    return attention_scores;
}

// BertSelfAttention.forward, line by line, fixed. hidden_states is (B, T, C).
// Returns context_layer (B, T, C), a view (so const: tensor.h); *present
// (may be NULL) gets the post's past_key_value = (key_layer, value_layer),
// each (B, H, L, D): with a cache, the cached positions and this call's.
const Tensor *BertSelfAttention_forward(BertSelfAttentionSteps *steps, KeyValue *present,
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

    // Relative positions: a learned vector per DISTANCE t - s, added to the
    // dot products. FIX 2: not in cross-attention. Text position t and image
    // feature s are not on one axis; the post's code would add its (T, T)
    // table to (T, M) scores (part 7 runs it).
    const Tensor *distance = NULL;
    if (self->position_embedding_type != ABSOLUTE && !is_cross_attention) {
        distance = relative_distance(T, L);                                  // (T, L)  FIX 1
        attention_scores = relative_position_scores(self, attention_scores, query_layer,
                                                    key_layer, distance);   // (B, H, T, L)
    }

    // "除以head size": divide by sqrt(head size), as lesson 6 does (the
    // post's comment leaves out the square root; its code has it).
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
Tensor *BertSelfOutput_forward(const BertSelfOutput *self, const Tensor *hidden_states,
                               const Tensor *input_tensor) {
    hidden_states = linear(&self->dense, hidden_states);                      // (B, T, C)
    hidden_states = dropout(hidden_states, self->dropout, self->training);    // (B, T, C)
    return layer_norm_forward(&self->LayerNorm, add(hidden_states, input_tensor));   // (B, T, C)
}

static BertAttention BertAttention_init(const BertConfig *config, bool is_cross_attention,
                                        const char *name) {
    BertAttention attention;
    attention.self = BertSelfAttention_init(config, is_cross_attention, dotted(name, "self"));
    attention.output = BertSelfOutput_init(config, dotted(name, "output"));
    return attention;
}

// attention_output = self.output(self_outputs[0], hidden_states): (B, T, C).
Tensor *BertAttention_forward(BertSelfAttentionSteps *steps, KeyValue *present,
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
static BertIntermediate BertIntermediate_init(const BertConfig *config, const char *name) {
    BertIntermediate self;
    self.dense = linear_init(dotted(name, "dense"), config->hidden_size,
                             config->intermediate_size, true);
    return self;
}

Tensor *BertIntermediate_forward(const BertIntermediate *self, const Tensor *hidden_states) {
    return gelu(linear(&self->dense, hidden_states));                        // (B, T, F)
}

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

// BertLayer(config, layer_num): the draws in the order the modules are made
// (and their parameters registered): attention (query, key, value, [table],
// output.dense), [crossattention: the same, keys and values of width E],
// intermediate.dense, output.dense. LayerNorm and Dropout draw nothing.
// layer_num is only stored by the post (BLIP uses it to pick which layers
// get cross-attention); it does not change the layer.
BertLayer BertLayer_init(const BertConfig *config) {
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
void BertLayer_train(BertLayer *self, bool mode) {
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
Tensor *feed_forward_chunk(const BertLayer *self, const Tensor *attention_output) {
    Tensor *intermediate_output = BertIntermediate_forward(&self->intermediate, attention_output);
    return BertOutput_forward(&self->output, intermediate_output, attention_output);   // (B, c, C)
}

// transformers' apply_chunking_to_forward(forward_fn, chunk_size, chunk_dim,
// input): with chunk_size 0, forward_fn(input). Otherwise the input is cut
// into length / chunk_size views along chunk_dim (input.chunk(), no copy),
// forward_fn runs on each, and the results are joined (torch.cat). Only one
// chunk's intermediate_output (B, chunk_size, F) is alive at a time: in
// PyTorch it is freed when the chunk is done; here arena_release frees it,
// after the chunk's result is copied out. Returns (B, T, C).
Tensor *apply_chunking_to_forward(ChunkForward forward_fn, const BertLayer *self,
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
Tensor *BertLayer_forward(BertLayerSteps *steps, KeyValue *present, const BertLayer *self,
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


// --- the lesson -----------------------------------------------------------------------------

// The flags (appendix B), parsed into *lesson and checked together; what a
// run of them costs (appendix A), checked before any work.
static Flags read_flags(Lesson *lesson, int argc, char **argv);
static Cost bert_layer_cost(const Flags *f);

int main(int argc, char **argv) {
    Lesson lesson;
    Flags f = read_flags(&lesson, argc, argv);   // appendix B: the flags, parsed and checked
    check_budget(&lesson, bert_layer_cost(&f));
    lesson_start(&lesson);

    bool part1 = f.all || f.part <= 1;   // the default prints part 1, then the list of parts
    Run run = part1_the_layer(&f, part1, lesson.heatmap && part1);
    trace_pause(true);   // the parts are commentary, not the layer's dataflow
    if (f.part == 0 && !f.all) {
        print_the_parts();
    }
    void (*const parts[10])(const Run *, const Flags *) = {
        [2] = part2_the_additive_mask, [3] = part3_head_mask, [4] = part4_dropout,
        [5] = part5_relative_positions, [6] = part6_the_cache, [7] = part7_cross_attention,
        [8] = part8_chunks, [9] = part9_post_norm};
    for (int n = 2; n <= 9; n++) {
        if (f.all || f.part == n) {
            parts[n](&run, &f);
        }
    }
    return lesson_finish(&lesson);
}

// === appendix A: the budget: what a run of these sizes holds and does (lesson/budget.h) =====

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

// BertSelfAttention_forward: T queries against L keys, the keys and values
// projected from the image (cross), or from the tokens and joined to a cache
// (past); with the relative position terms (relative). Dropout (train mode)
// and the head mask are counted whether or not this call has them.
static Work self_attention_work(const Flags *f, double T, double L, bool cross, bool past,
                                bool relative) {
    double B = f->batch, C = f->dim, D = C / f->heads, scores = B * f->heads * T * L;
    double kv_tokens = cross ? f->encoder_seq : T, width = cross ? f->encoder_width : C;
    double both = f->position == RELATIVE_KEY_QUERY ? 2 : 1;
    double per_score = 4 + f->train + (f->head_mask >= 0);   // scores, scaled, masked, probs
    Work w = {3 * B * T * C + 2 * B * kv_tokens * C + past * 2 * B * L * C + per_score * scores,
              B * T * C * C + 2 * B * kv_tokens * width * C + 2 * scores * D, scores};
    if (relative) {   // the distances, the embedding (T, L, D), the einsums and their adds
        w = plus(w, (Work){T * L * (1 + D) + both * 2 * scores, both * scores * D, 0});
    }
    return w;
}

// BertSelfOutput (and BertOutput after its input): dense, dropout, add, LayerNorm.
static Work output_work(const Flags *f, double T, double in_features) {
    double B = f->batch, C = f->dim;
    return (Work){4 * B * T * C, B * T * in_features * C, 0};
}

// BertIntermediate then BertOutput.
static Work feed_forward_work(const Flags *f, double T) {
    double B = f->batch, F = f->intermediate;
    return plus((Work){2 * B * T * F, B * T * f->dim * F, B * T * F}, output_work(f, T, F));
}

// BertLayer_forward; chunked or not, the feed-forward makes at most one
// output more than unchunked.
static Work layer_work(const Flags *f, double T, double L, bool past, bool multimodal) {
    bool relative = f->position != ABSOLUTE;
    Work w = plus(self_attention_work(f, T, L, false, past, relative),
                  output_work(f, T, f->dim));
    if (multimodal) {
        w = plus(w, plus(self_attention_work(f, T, f->encoder_seq, true, false, false),
                         output_work(f, T, f->dim)));
    }
    return plus(w, plus(feed_forward_work(f, T), (Work){f->batch * T * f->dim, 0, 0}));
}

// What a run of these flags costs, part by part: part 1 always (the layer,
// its parameters and inputs, the prefix's call and the layer's); the others
// when they run (--part N, --all): the mask's check, the head mask's two
// self-attentions, the cache (one call against two, and with relative
// positions the post's), the post's cross-attention, the chunks (one output
// for each chunk size that divides --seq), twelve post-norm and pre-norm
// layers. Everything a part makes stays until the end, but for what the
// chunked feed-forward drops.
static Cost bert_layer_cost(const Flags *f) {
    double B = f->batch, T = f->seq, C = f->dim, H = f->heads, F = f->intermediate;
    double P = f->past, M = f->encoder_seq, E = f->encoder_width, L = P + T, D = C / H;
    bool multimodal = M > 0, relative = f->position != ABSOLUTE;
    double table = relative * (2.0 * f->max_positions - 1) * D;
    double parameters = 4 * C * C + 6 * C + table + 2 * F * C + F + 3 * C +
                        multimodal * (2 * C * C + 2 * E * C + 6 * C + table);
    Work w = {parameters + B * L * C + B * M * E + 2 * B * L + H, 0, B * L * C + B * M * E};
    if (P > 0) {
        w = plus(w, layer_work(f, P, P, false, multimodal));
    }
    w = plus(w, layer_work(f, T, L, P > 0, multimodal));
    w = plus(w, (Work){2 * T * L + T * M, 0, 0});   // what part 1 copies to print
    bool runs[10];
    for (int n = 2; n <= 9; n++) {
        runs[n] = f->all || f->part == n;
    }
    if (runs[2]) {
        w = plus(w, (Work){B * L + 2 * B * H * T * L, 0, B * H * T * L});
    }
    if (runs[3]) {
        w = plus(w, times(2, self_attention_work(f, T, L, false, P > 0, relative)));
    }
    if (runs[6] && L >= 2) {
        double cached = P > 0 ? P : L - (L - 1 < 2 ? L - 1 : 2);
        Work two_calls = plus(layer_work(f, L - 1, L - 1, false, multimodal),
                              layer_work(f, 1, L, true, multimodal));
        w = plus(w, plus(layer_work(f, L, L, false, multimodal),
                         plus(layer_work(f, cached, cached, false, multimodal),
                              layer_work(f, L - cached, L, true, multimodal))));
        w = plus(w, (Work){B * L * C, 0, 0});
        if (relative) {   // fixed, the post's, and with relative_key none at all
            w = plus(w, times(f->position == RELATIVE_KEY ? 3 : 2, two_calls));
        }
    }
    if (runs[7] && multimodal && relative) {
        w = plus(w, plus(self_attention_work(f, T, L, false, P > 0, true),
                         times(2, self_attention_work(f, T, M, true, false, true))));
        w = plus(w, times(3, output_work(f, T, C)));
    }
    if (runs[8]) {
        double divisors = 0;
        for (int c = 1; c <= f->seq; c++) {
            divisors += f->seq % c == 0;
        }
        w = plus(w, plus(times(4, feed_forward_work(f, T)),
                         (Work){(divisors + 4) * B * T * C, 0, 0}));
    }
    if (runs[9]) {
        Work pre_norm = plus(self_attention_work(f, T, T, false, false, relative),
                             plus(times(2, output_work(f, T, C)), feed_forward_work(f, T)));
        w = plus(w, times(DEPTH, plus(layer_work(f, T, T, false, false), pre_norm)));
    }
    return (Cost){
        .bytes = 4 * w.floats,
        .dumped = 4 * (parameters + B * L * C + B * M * E + B * L + B * H * T * L +
                       multimodal * B * H * T * M + 2 * B * H * L * D + 2 * B * T * C),
        .multiply_adds = w.multiply_adds,
        .exps = w.exps,
        .elements = w.floats,
    };
}

// === appendix B: the flags, and the lesson's own checks =======================================

// The lesson's own checks, after parsing and before any work (exit 2).
// The largest tensors of each kind: the weights of one call over all L
// tokens (B, H, L, L) (part 6 makes it); the feed-forward's (B, L, F) and
// its weight (F, C); the inputs (B, L, C) and the (C, C) weights; with
// relative positions the positional_embedding (L, L, D) and the table
// (2MP - 1, D); with cross-attention its (B, H, T, M), the keys' weight
// (C, E) and the image features (B, M, E).
static void check_flags(const Lesson *lesson, const Flags *f) {
    int L = f->past + f->seq;   // at most 2 * MAX_SIZE_FLAG: no overflow
    check_divides(lesson, "--heads", f->heads, "--dim", f->dim);
    if (f->head_mask >= f->heads) {
        usage_error(lesson, "--head-mask expects a head from -1 (none) to %d (--heads %d), "
                    "got '%d'", f->heads - 1, f->heads, f->head_mask);
    }
    if (f->pad > L) {
        usage_error(lesson, "--pad %d is more than the --past + --seq = %d keys", f->pad, L);
    }
    if (f->chunk > 0) {
        check_divides(lesson, "--chunk", f->chunk, "--seq", f->seq);
        if (f->past > 0) {   // the prefix goes through the same layer
            check_divides(lesson, "--chunk", f->chunk, "--past", f->past);
        }
    }
    if (f->position != ABSOLUTE && f->max_positions < L) {
        usage_error(lesson, "--max-positions %d is smaller than --past + --seq = %d: relative "
                    "positions need a table row for every distance up to %d", f->max_positions,
                    L, L - 1);
    }
    if (f->part != 0 && f->all) {
        usage_error(lesson, "--part %d and --all: give one of them", f->part);
    }
    int D = f->dim / f->heads;
    check_fits(lesson, "attention_probs (batch, heads, past+seq, past+seq)",
               shape4(f->batch, f->heads, L, L));
    check_fits(lesson, "intermediate_output (batch, past+seq, intermediate)",
               shape3(f->batch, L, f->intermediate));
    check_fits(lesson, "intermediate.dense.weight (intermediate, dim)",
               shape2(f->intermediate, f->dim));
    check_fits(lesson, "hidden_states (batch, past+seq, dim)", shape3(f->batch, L, f->dim));
    check_fits(lesson, "attention.self.query.weight (dim, dim)", shape2(f->dim, f->dim));
    if (f->position != ABSOLUTE) {
        check_fits(lesson, "positional_embedding (past+seq, past+seq, dim/heads)",
                   shape3(L, L, D));
        check_fits(lesson, "distance_embedding.weight (2*max-positions - 1, dim/heads)",
                   shape2(2 * f->max_positions - 1, D));
    }
    if (f->encoder_seq > 0) {
        check_fits(lesson, "cross_attention_probs (batch, heads, seq, encoder-seq)",
                   shape4(f->batch, f->heads, f->seq, f->encoder_seq));
        check_fits(lesson, "crossattention.self.key.weight (dim, encoder-width)",
                   shape2(f->dim, f->encoder_width));
        check_fits(lesson, "encoder_hidden_states (batch, encoder-seq, encoder-width)",
                   shape3(f->batch, f->encoder_seq, f->encoder_width));
        check_fits(lesson, "the cross-attention's keys and values (batch, encoder-seq, dim)",
                   shape3(f->batch, f->encoder_seq, f->dim));
    }
}


static Flags read_flags(Lesson *lesson, int argc, char **argv) {
    static Flags f = {.batch = 2, .seq = 5, .dim = 16, .heads = 4, .intermediate = 64,
               .max_positions = 16, .pad = 1, .head_mask = -1, .past = 0, .encoder_seq = 0,
               .encoder_width = 16, .chunk = 0, .part = 0};
    static const char *position = "absolute";
    static SizeFlag sizes[] = {
        {"--batch", &f.batch, "batch size"},
        {"--seq", &f.seq, "tokens of the (second) call: hidden_states"},
        {"--dim", &f.dim, "hidden_size"},
        {"--heads", &f.heads, "num_attention_heads"},
        {"--intermediate", &f.intermediate, "intermediate_size of the feed-forward"},
        {"--max-positions", &f.max_positions, "max_position_embeddings (relative positions)"},
        {"--encoder-width", &f.encoder_width, "encoder_width: the image features' width"},
    };
    static IntFlag ints[] = {
        {"--pad", &f.pad, "padding at the end of the last batch row", 0, MAX_SIZE_FLAG},
        {"--head-mask", &f.head_mask, "zero this head with head_mask (-1: none)", -1,
         MAX_SIZE_FLAG},
        {"--past", &f.past, "tokens of a first call, cached as past_key_value", 0, MAX_SIZE_FLAG},
        {"--encoder-seq", &f.encoder_seq, "image features for cross-attention (0: none)", 0,
         MAX_SIZE_FLAG},
        {"--chunk", &f.chunk, "chunk_size_feed_forward (0: no chunks)", 0, MAX_SIZE_FLAG},
        {"--part", &f.part, "print part N alone (0: part 1, the layer, and the list of parts)",
         0, 9},
    };
    static ChoiceFlag choices[] = {
        {"--position", &position, "positions: absolute, relative_key or relative_key_query",
         POSITION_TYPES},
    };
    static SwitchFlag switches[] = {
        {"--train", &f.train, "training mode: dropout on (default: eval mode)"},
        {"--all", &f.all, "print every part, 1 to 9"},
    };
    *lesson = (Lesson){
        .program = "lesson-12",
        .summary = "bert-layer: BertSelfAttention ... BertLayer of Chen Ming's post, as BLIP's "
                   "text decoder, fixed",
        .sizes = sizes, .n_sizes = 7, .ints = ints, .n_ints = 6,
        .choices = choices, .n_choices = 1, .switches = switches, .n_switches = 2,
    };
    parse_lesson_args(lesson, argc, argv);
    for (int i = 0; POSITION_TYPES[i] != NULL; i++) {
        f.position = strcmp(position, POSITION_TYPES[i]) == 0 ? (PositionType)i : f.position;
    }
    f.seed = lesson->seed;
    check_flags(lesson, &f);
    return f;
}
