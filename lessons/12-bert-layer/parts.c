// parts.c - lesson 12's parts: the layer of bert_layer.c, run and shown.
//
// Part 1 is the post's cell: the layer built from the flags, its inputs
// drawn as the PyTorch code draws them, run as BLIP's decoder runs it, and
// printed step by step in the post's names. Parts 2 to 9 each take one
// thing the layer does and show it (docs/12-bert-layer.md walks through
// them); --part N prints part N alone, --all every part, and the default
// run part 1 with the list of the others. Parts 6 and 7, which also run the
// post's own relative positions (the layer has them fixed), are in
// the_post.c with the post's code.
//
// Letters as in bert_layer.c: B batch, T tokens of this call, P cached, L =
// P + T, M image features, C hidden size, H heads, D = C / H, F
// intermediate size, MP max_position_embeddings.

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attention.h"
#include "bert_layer.h"

// BERT's padding mask is added to the scores: (1 - keep) * -10000. Every real
// score of a row stays where it is (+ -0.0), a padded key's score drops by
// 10000, and exp() of that is exactly 0 in float32 (it underflows below about
// -104). The post's comment: "需要忽略的mask是-10000,此时attention_scores会很低,
// 计算softmax时近乎为0" (the masked positions get -10000, so their softmax is
// nearly 0).
#define MASK_ADDED -10000.0f
// Lesson 4's way, for part 2's comparison: masked_fill(keep == 0, -1e20).
#define MASK_FILL -1e20f

// --- the layer's inputs: the padding mask and the head mask ----------------------------------

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
Tensor *zero_one_head(int heads, int h) {
    Tensor *head_mask = full(shape4(1, heads, 1, 1), 1.0f);                   // (1, H, 1, 1)
    *at4(head_mask, 0, h, 0, 0) = 0.0f;
    return head_mask;
}

// --- part 1: the layer, run as BLIP's decoder runs it -----------------------------------------


BertArgs layer_args(const Run *run, const Tensor *mask, const KeyValue *past) {
    return (BertArgs){.attention_mask = mask,
                      .head_mask = run->head_mask,
                      .encoder_hidden_states = run->encoder_hidden_states,
                      .past_key_value = past};
}

// "-- the new tokens: layer(hidden_states, attention_mask, ...) --": the
// call as the cell writes it, with the arguments this run passes, broken
// after an argument where the line would pass 100 columns.
static void print_call(const Run *run, const char *what, const char *tokens, const char *mask,
                       bool with_cache) {
    const char *words[6] = {tokens, mask};
    int n = 2;
    words[n] = run->head_mask != NULL ? "head_mask" : NULL;
    n += words[n] != NULL;
    words[n] = run->encoder_hidden_states != NULL ? "encoder_hidden_states" : NULL;
    n += words[n] != NULL;
    words[n] = with_cache ? "past_key_value=present_key_value" : NULL;
    n += words[n] != NULL;
    words[n] = run->mode == MODE_MULTIMODAL ? "mode='multimodal'" : NULL;
    n += words[n] != NULL;
    int column = printf("\n-- %slayer(", what) - 1;
    for (int i = 0; i < n; i++) {
        const char *end = i + 1 < n ? "," : ") --";
        if (i > 0 && column + 1 + (int)strlen(words[i]) + (int)strlen(end) > 100) {
            column = printf("\n     ") - 1;
        } else if (i > 0) {
            column += printf(" ");
        }
        column += printf("%s%s", words[i], end);
    }
    printf("\n");
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

// torch.Size([a, b, c]): three sizes as print(t.shape) shows them.
static const char *size3(int a, int b, int c) {
    return sizes_str((const int[]){a, b, c}, 3, SIZES_TORCH);
}

// What the self-attention did, step by step, in the post's names.
static void print_self_attention(const Run *run, int P, int MP) {
    const BertSelfAttentionSteps *s = &run->steps.attention;
    const BertSelfAttention *self = &run->layer.attention.self;
    int B = size(run->hidden_states, 0), T = size(run->hidden_states, 1);
    int C = size(run->hidden_states, 2), H = self->num_attention_heads;
    int D = self->attention_head_size, L = size(s->key_layer, 2);
    printf("attention.self (BertSelfAttention):\n");
    printf("  mixed_query_layer = self.query(hidden_states): %s\n", size3(B, T, C));
    printf("  query_layer = transpose_for_scores(mixed_query_layer): %s\n",
           size_str(s->query_layer));
    printf("    view%s, then permute(0, 2, 1, 3): stride %s, no copy\n",
           sizes_str((const int[]){B, T, H, D}, 4, SIZES_TUPLE), stride_str(s->query_layer));
    if (P > 0) {
        printf("  key_layer = torch.cat([past_key_value[0], transpose_for_scores(self.key("
               "hidden_states))],\n    dim=2): %s\n", size_str(s->key_layer));
    } else {
        printf("  key_layer = transpose_for_scores(self.key(hidden_states)): %s\n",
               size_str(s->key_layer));
    }
    printf("  value_layer, the same from self.value: %s\n", size_str(s->value_layer));
    printf("  attention_scores = query_layer @ key_layer.transpose(-1, -2): %s\n",
           sizes_str((const int[]){B, H, T, L}, 4, SIZES_TORCH));
    if (s->distance != NULL) {
        printf("  distance = position_ids_l - position_ids_r (queries at %d..%d, keys at 0..%d):\n"
               "%s\n", P, L - 1, L - 1, tensor_str(s->distance, NULL));
        Tensor *rows = clone(s->distance);                                    // (T, L)
        for (long i = 0; i < numel(rows); i++) {
            rows->data[i] += (float)(MP - 1);
        }
        printf("  distance + %d, the rows of distance_embedding.weight %s it picks:\n%s\n", MP - 1,
               shape_str(self->distance_embedding->shape, SIZES_TUPLE), tensor_str(rows, NULL));
        printf("  positional_embedding = self.distance_embedding(distance + %d): %s\n", MP - 1,
               size3(T, L, D));
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
    printf("  context_layer = (attention_probs_dropped @ value_layer).permute(0, 2, 1, 3)\n"
           "    .contiguous().view(%d, %d, %d): %s\n", B, T, C, size_str(s->context_layer));
    printf("attention.output (BertSelfOutput): %s\n", size_str(run->steps.self_attention_output));
    printf("  attention_output = LayerNorm(dropout(dense(context_layer)) + hidden_states)\n");
}

static void print_cross_attention(const Run *run) {
    const BertSelfAttentionSteps *s = &run->steps.crossattention;
    int B = size(run->hidden_states, 0), T = size(run->hidden_states, 1);
    int C = size(run->hidden_states, 2);
    printf("crossattention.self (BertSelfAttention, keys and values from "
           "encoder_hidden_states):\n");
    printf("  mixed_query_layer = self.query(attention_output): %s\n", size3(B, T, C));
    printf("  key_layer = transpose_for_scores(self.key(encoder_hidden_states)): %s\n",
           size_str(s->key_layer));
    printf("  value_layer, the same from self.value: %s\n", size_str(s->value_layer));
    printf("  attention_probs = nn.Softmax(dim=-1)(query_layer @ key_layer.transpose(-1, -2)\n"
           "    / math.sqrt(%d)): %s\n", run->layer.crossattention.self.attention_head_size,
           size_str(s->attention_probs));
    printf("  cross_attention_probs[%d, 0] (batch row %d, head 0):\n%s\n", B - 1, B - 1,
           tensor_str(one_head(s->attention_probs, B - 1, 0), NULL));
    printf("crossattention.output (BertSelfOutput): %s\n", size_str(run->steps.attention_output));
    printf("  attention_output = LayerNorm(dropout(dense(context_layer)) + attention_output)\n");
}

static void print_feed_forward(const Run *run, const Flags *f) {
    int B = f->batch, T = f->seq, c = f->chunk > 0 ? f->chunk : f->seq;
    printf("layer_output = apply_chunking_to_forward(self.feed_forward_chunk, %d, 1, "
           "attention_output):\n", f->chunk);
    if (f->chunk > 0) {
        printf("  in %d chunks of %s along dim 1, joined by torch.cat(dim=1)\n", T / c,
               size3(B, c, f->dim));
    }
    printf("  intermediate (BertIntermediate): gelu(dense(attention_output)): %s\n",
           size3(B, c, f->intermediate));
    printf("  output (BertOutput): %s\n", size3(B, c, f->dim));
    printf("    layer_output = LayerNorm(dropout(dense(intermediate_output)) + "
           "attention_output)\n");
    printf("layer_output: %s\n", size_str(run->layer_output));
    const Tensor *first = reshape(narrow(run->layer_output, 0, 0, 1), shape2(T, f->dim));
    printf("layer_output[0, :, :6]:\n%s\n", tensor_str(first_columns(first), NULL));
    printf("present_key_value: key %s, value %s\n", size_str(run->present.key),
           size_str(run->present.value));
}

// The cell, the post's: with --past the prefix first (its
// present_key_value is the cache), then hidden_states. The forwards print
// nothing; this prints what they kept, when `printing`.
static void run_layer(Run *run, const Flags *f, bool printing, bool heatmap) {
    int P = f->past;
    const KeyValue *past = NULL;
    if (P > 0) {
        char mask_text[48];
        snprintf(mask_text, sizeof mask_text, "attention_mask[..., :%d]", P);
        if (printing) {
            print_call(run, "the prefix: ", "prefix", mask_text, false);
        }
        // The diagram and the dumps are the second call's.
        bool prefix_paused = trace_pause(true);
        const Tensor *prefix_mask = narrow(run->attention_mask, 3, 0, P);       // (B, 1, 1, P)
        BertArgs prefix_args = layer_args(run, prefix_mask, NULL);
        const Tensor *prefix_output = BertLayer_forward(NULL, &run->cache, &run->layer,
                                                        run->prefix, &prefix_args, run->mode);
        trace_pause(prefix_paused);
        if (printing) {
            printf("layer_output: %s\n", size_str(prefix_output));
            printf("present_key_value: key %s, value %s\n", size_str(run->cache.key),
                   size_str(run->cache.value));
            print_call(run, "the new tokens: ", "hidden_states", "attention_mask", true);
        }
        past = &run->cache;
    } else if (printing) {
        print_call(run, "", "hidden_states", "attention_mask", false);
    }
    BertArgs args = layer_args(run, run->attention_mask, past);
    run->layer_output = BertLayer_forward(&run->steps, &run->present, &run->layer,
                                          run->hidden_states, &args, run->mode);   // (B, T, C)
    if (!printing) {
        return;
    }
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

// The layer built from the flags, its inputs drawn in the order of the
// PyTorch cell, run (printed unless `printing` is false), and its results
// named for --dump and --dot.
Run part1_the_layer(const Flags *f, bool printing, bool heatmap) {
    BertConfig config = {
        .hidden_size = f->dim,
        .num_attention_heads = f->heads,
        .intermediate_size = f->intermediate,
        .position_embedding_type = f->position,
        .max_position_embeddings = f->max_positions,
        .layer_norm_eps = 1e-12,
        .hidden_dropout_prob = 0.1,
        .attention_probs_dropout_prob = 0.1,
        .add_cross_attention = f->encoder_seq > 0,   // BLIP's decoder layers
        .encoder_width = f->encoder_width,
        .chunk_size_feed_forward = f->chunk,
    };
    Run run;
    memset(&run, 0, sizeof run);
    // The draws: the layer's parameters, then the inputs, as the PyTorch cell.
    run.layer = BertLayer_init(&config);
    if (f->past > 0) {
        run.prefix = named("prefix", randn(shape3(f->batch, f->past, f->dim)));   // (B, P, C)
    }
    run.hidden_states = named("hidden_states", randn(shape3(f->batch, f->seq, f->dim)));
    if (f->encoder_seq > 0) {
        Shape image = shape3(f->batch, f->encoder_seq, f->encoder_width);
        run.encoder_hidden_states = named("encoder_hidden_states", randn(image));   // (B, M, E)
        run.mode = MODE_MULTIMODAL;
    }
    BertLayer_train(&run.layer, f->train);
    int L = f->past + f->seq;
    run.keep = labeled("keep", keep_rows(f->batch, L, f->pad));               // (B, L)
    run.attention_mask = named("attention_mask", additive_mask(run.keep));    // (B, 1, 1, L)
    if (f->head_mask >= 0) {
        run.head_mask = zero_one_head(f->heads, f->head_mask);                // (1, H, 1, 1)
    }
    if (printing) {
        print_config(&config);
        printf("layer = BertLayer(config, 0): %ld parameters\n", count_parameters(&run.layer));
        printf("%s\n", f->train ? "layer.train()" : "layer.eval()");
        if (f->past > 0) {
            printf("prefix = torch.randn%s\n", shape_str(run.prefix->shape, SIZES_TUPLE));
        }
        printf("hidden_states = torch.randn%s\n", shape_str(run.hidden_states->shape, SIZES_TUPLE));
        if (f->encoder_seq > 0) {
            printf("encoder_hidden_states = torch.randn%s  (an image encoder's features)\n",
                   shape_str(run.encoder_hidden_states->shape, SIZES_TUPLE));
        }
        printf("keep (1: a real token, 0: padding; --pad %d pads the end of batch row %d):\n%s\n",
               f->pad, f->batch - 1, tensor_str(run.keep, NULL));
        printf("attention_mask = (1 - keep)[:, None, None, :] * -10000.0: %s\n%s\n",
               size_str(run.attention_mask), tensor_str(run.attention_mask, NULL));
        if (f->head_mask >= 0) {
            printf("head_mask: 1, except 0 for head %d: %s\n", f->head_mask,
                   size_str(run.head_mask));
        }
    }
    run_layer(&run, f, printing, heatmap);
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
    return run;
}

// What the default run prints after part 1: the other parts, and the flag
// that shows each.
void print_the_parts(void) {
    printf("\n-- the other parts: make lesson-12 ARGS=\"--part N\" prints part N alone, "
           "ARGS=\"--all\" all --\n"
           "part 2: BERT's additive mask against lesson 4's masked_fill (--pad varies it)\n"
           "part 3: head_mask silences a head (--head-mask chooses it)\n"
           "part 4: dropout on the attention probabilities (--train turns it on)\n"
           "part 5: relative positions, one score taken apart (--position relative_key)\n"
           "part 6: past_key_value, and the post's relative positions with a cache (--past, "
           "--position)\n"
           "part 7: BLIP's cross-attention, and the post's relative positions there "
           "(--encoder-seq)\n"
           "part 8: apply_chunking_to_forward, the feed-forward in chunks (--chunk, --train)\n"
           "part 9: post-norm (BERT) against pre-norm (lesson 11), over 12 layers\n");
}

// --- the parts after the first: each on a copy of the layer in eval mode ---------------------

// A copy of the layer (the same parameters: the structs hold pointers) with
// dropout off, so the parts draw nothing from the generator, and the
// feed-forward unchunked, so they may split the tokens anywhere (in eval
// mode chunks change nothing: part 8 measures it).
BertLayer eval_copy(const BertLayer *layer) {
    BertLayer copy = *layer;
    BertLayer_train(&copy, false);
    copy.chunk_size_feed_forward = 0;
    return copy;
}

// --- part 2: BERT's additive mask against lesson 4's masked_fill (--pad) -----------------------

void part2_the_additive_mask(const Run *run, const Flags *f) {
    const BertSelfAttentionSteps *s = &run->steps.attention;
    int B = size(run->keep, 0), L = size(run->keep, 1), pad = f->pad;
    const Tensor *keep = view(run->keep, shape4(B, 1, 1, L));                 // (B, 1, 1, L)
    const Tensor *filled = masked_fill(s->unmasked_scores, eq_scalar(keep, 0.0f), MASK_FILL);
    const Tensor *probs_filled = softmax(filled, -1);                         // (B, H, T, L)
    printf("\n-- part 2: BERT's additive mask against lesson 4's masked_fill (--pad varies it) "
           "--\n");
    printf("max |additive - masked_fill(keep == 0, -1e20)| over attention_probs = %.3g\n",
           (double)max_abs_diff(s->attention_probs, probs_filled));
    if (pad == L) {
        printf("batch row %d has no real key: -10000 shifts its whole row, and softmax ignores a "
               "shift,\nso it keeps (nearly) its unmasked weights; masked_fill's -1e20 makes them "
               "uniform (lesson 4)\n", B - 1);
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
        printf("largest weight on a padded key: %.3g (additive), %.3g (masked_fill):\n"
               "exp(score - 10000) is 0 in float32\n", (double)largest_added,
               (double)largest_filled);
    }
    printf("-10000 is added to a score, not written over it: it hides a key only while the key's "
           "score stays\nwithin 10000 - 104 of the row's largest (below -104, exp underflows to 0 "
           "in float32). Unscaled\nscores can pass that (T5's did), and float16 cannot hold -1e20 "
           "at all. Newer transformers code\nadds torch.finfo(dtype).min instead: -3.4028e+38 for "
           "float32, -65504 for float16.\n");
}

// --- part 3: head_mask silences a head (--head-mask) -------------------------------------------

// One head's probabilities times 0. Its context is 0; the other heads do
// not notice.
void part3_head_mask(const Run *run, const Flags *f) {
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
    printf("\n-- part 3: head_mask silences a head (--head-mask chooses it; head 0 without it) "
           "--\n");
    printf("head_mask[0, %d] = 0 multiplies head %d's probabilities by 0:\n", h, h);
    printf("  its context_layer[..., %d:%d] is %.3g everywhere\n", h * D, (h + 1) * D,
           (double)silenced);
    if (f->heads > 1) {
        printf("  the other heads' context: max |with - without head_mask| = %.3g\n",
               (double)others);
    }
}

// --- part 4: dropout on the attention probabilities (--train) ----------------------------------

// Train mode: what self.dropout did to the probabilities of part 1's call.
void part4_dropout(const Run *run, const Flags *f) {
    printf("\n-- part 4: dropout on the attention probabilities (--train turns it on) --\n");
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
    printf("of the %ld nonzero weights it zeroed %ld and divided the other %ld by 0.9: whole keys\n"
           "vanish for one query, as the comment says (\"dropping out entire tokens to attend "
           "to\")\n", nonzero, dropped, nonzero - dropped);
}

// --- part 5: relative positions, one score taken apart (--position) ----------------------------

// The table, and what each relative term adds to one score.
void part5_relative_positions(const Run *run, const Flags *f) {
    printf("\n-- part 5: relative positions, one score taken apart (--position relative_key varies "
           "it) --\n");
    if (f->position == ABSOLUTE) {
        printf("position_embedding_type 'absolute': BERT adds its position embeddings to the "
               "tokens before the\nfirst layer (BertEmbeddings), so this layer adds nothing. "
               "--position relative_key adds\nquery . table[t - s + max_position_embeddings - 1] "
               "to score (t, s); relative_key_query adds\nkey . table[t - s + "
               "max_position_embeddings - 1] too.\n");
        return;
    }
    const BertSelfAttentionSteps *s = &run->steps.attention;
    const Tensor *table = run->layer.attention.self.distance_embedding;       // (2MP-1, D)
    int MP = f->max_positions, D = f->dim / f->heads, P = f->past;
    printf("distance_embedding.weight %s: one row of %d numbers per distance -%d .. %d, row "
           "distance + %d\n", shape_str(table->shape, SIZES_TUPLE), D, MP - 1, MP - 1, MP - 1);
    // Score (t, key) of batch row 0, head 0, for the last query and the first key.
    int t = f->seq - 1, key = 0;
    int row = (int)*at2(s->distance, t, key) + MP - 1;
    float q_k = 0.0f, q_e = 0.0f, k_e = 0.0f;
    for (int d = 0; d < D; d++) {
        float q = *at4(s->query_layer, 0, 0, t, d), k = *at4(s->key_layer, 0, 0, key, d);
        float e = *at2(table, row, d);
        q_k += q * k;
        q_e += q * e;
        k_e += k * e;
    }
    printf("score (%d, %d) of batch row 0, head 0: query position %d, key position %d, distance "
           "%d, table row %d:\n", t, key, P + t, key, P + t - key, row);
    printf("  query . key = %.4f (content)\n", (double)q_k);
    printf("  + query . table[%d] = %.4f (query-to-distance)\n", row, (double)q_e);
    if (f->position == RELATIVE_KEY_QUERY) {
        printf("  + key . table[%d] = %.4f (key-to-distance)\n", row, (double)k_e);
    }
    printf("  all / sqrt(%d)\n", D);
}

// --- part 8: apply_chunking_to_forward, the feed-forward in chunks (--chunk, --train) ----------

// Every chunk size that divides the sequence, in eval; then train mode.
void part8_chunks(const Run *run, const Flags *f) {
    int B = f->batch, T = f->seq, C = f->dim, F = f->intermediate;
    const Tensor *attention_output = run->steps.attention_output;             // (B, T, C)
    BertLayer layer = eval_copy(&run->layer);
    printf("\n-- part 8: apply_chunking_to_forward, the feed-forward in chunks (--chunk, --train) "
           "--\n");
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
           "unchunked,\n%ld in chunks of 1. BERT-base (intermediate 3072) at 512 tokens: %d "
           "floats (%.1f MiB) per\nsequence unchunked, 3072 per position. The saving is at "
           "inference: in training, autograd keeps\nevery chunk's activations for the backward "
           "pass.\n", F, (long)B * T * F, (long)B * F, 512 * 3072,
           512.0 * 3072.0 * 4.0 / (1024.0 * 1024.0));

    // Train mode: the same generator state before each run, yet other masks.
    int c = f->chunk > 0 ? f->chunk : 1;
    BertLayer training = run->layer;
    BertLayer_train(&training, true);
    manual_seed(f->seed);
    const Tensor *unchunked_train = feed_forward_chunk(&training, attention_output);
    manual_seed(f->seed);
    const Tensor *chunked_train =
        apply_chunking_to_forward(feed_forward_chunk, &training, c, 1, attention_output);
    // The masks themselves: dropout draws one Bernoulli(0.9) per element of
    // the tensor it gets, row-major (bernoulli() makes the same draws).
    manual_seed(f->seed);
    const Tensor *mask_unchunked = bernoulli(shape3(B, T, C), 0.9);           // (B, T, C)
    manual_seed(f->seed);
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
           "so\ndoes the unchunked %s: the draws land on the same elements only when batch is 1 "
           "or the\nchunk is the whole sequence.\n",
           sizes_str((const int[]){B, c, C}, 3, SIZES_TUPLE),
           sizes_str((const int[]){B, T, C}, 3, SIZES_TUPLE));
}

// --- part 9: post-norm (BERT) against pre-norm (lesson 11) -------------------------------------

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

void part9_post_norm(const Run *run, const Flags *f) {
    BertLayer layer = eval_copy(&run->layer);
    printf("\n-- part 9: post-norm (BERT) against pre-norm (lesson 11), the same layer %d times "
           "(--seed) --\n", DEPTH);
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
           "deviation,\naveraged over the %d rows:\n", f->batch * f->seq);
    printf("  hidden_states                   %.4f\n", row_std(run->hidden_states));
    printf("  after the layer:                post-norm %.4f, pre-norm %.4f\n", post_1, pre_1);
    printf("  after the same layer %d times:  post-norm %.4f, pre-norm %.4f\n", DEPTH,
           row_std(post), row_std(pre));
    printf("post-norm ends every sublayer with a LayerNorm, so each layer's output rows have "
           "mean 0 and std 1\n(times LayerNorm's weight); pre-norm normalises only what enters a "
           "sublayer and adds its result to\nan untouched x, which grows layer after layer and "
           "keeps a clean path for the gradient.\n");
}
