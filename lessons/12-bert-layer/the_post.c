// the_post.c - lesson 12's parts 6 and 7, and the post's own code they run.
//
// The layer of bert_layer.c is fixed. The post's relative positions are
// wrong in two places, with a cache (part 6) and in cross-attention (part
// 7); this file holds those two parts and the post's BertSelfAttention
// forward they run beside the fixed one (posts_self_attention), so that the
// post's code sits in one file of its own and nowhere in the layer.
// parts.c holds the other parts; bert_layer.h declares what the files share.
//
// Letters as in bert_layer.c: B batch, T tokens of this call, P cached, L =
// P + T, M image features, C hidden size, H heads, D = C / H, MP
// max_position_embeddings.

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attention.h"
#include "bert_layer.h"

// --- the post's relative positions, as the post writes them ------------------------------------
//
// The layer of bert_layer.c is fixed. What follows is the post's code, run
// by parts 6 and 7 to show what it does: BertSelfAttention.forward as the
// post writes it, in eval mode (the parts draw nothing).

// The post's distance: seq_length = hidden_states.size()[1], the NEW tokens
// only, and position_ids_l = position_ids_r = torch.arange(seq_length): a
// (T, T) matrix, every query at positions 0 .. T-1, against (T, L) scores.
// It fits them when L == T; when T == 1 PyTorch broadcasts its one 0 to
// every key, which is the (1, L) matrix of 0s made here. Otherwise PyTorch
// stops (posts_positions_error); the callers check that first.
static Tensor *posts_distance(int T, int L) {
    Tensor *distance = zeros(shape2(T, T == 1 ? L : T));                     // (T, T) or (1, L)
    distance->dtype = DTYPE_INT64;
    for (int l = 0; l < T && T > 1; l++) {
        for (int r = 0; r < T; r++) {
            *at2(distance, l, r) = (float)(l - r);
        }
    }
    return distance;
}

// What the post's relative-position lines do with T queries against L keys:
// their (T, T) table meets (T, L) scores. NULL when PyTorch runs them, else
// the error it stops with. BH = batch * heads (the matmul's batch). The
// texts are PyTorch 1.13's, recorded by running the post's code:
// tests/reference/gen_lesson12.py writes them to
// tests/data/lesson12/posts_errors.txt and test_lesson12 checks these
// against them.
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

// The error's lines: that PyTorch stops, and its text on a line of its own.
static void print_posts_error(const char *error) {
    printf("PyTorch stops with a RuntimeError (its text, recorded running the post's code):\n"
           "%s\n", error);
}

// BertSelfAttention.forward as the post writes it, in eval mode: the fixed
// forward's lines, except the relative positions, which take the post's
// distance and are added in cross-attention too. Only for sizes
// posts_positions_error lets through. Returns context_layer (B, T, C).
static const Tensor *posts_self_attention(const BertSelfAttention *self,
                                          const Tensor *hidden_states, const BertArgs *args) {
    int B = size(hidden_states, 0), T = size(hidden_states, 1);
    bool is_cross_attention = args->encoder_hidden_states != NULL;
    const Tensor *source = is_cross_attention ? args->encoder_hidden_states : hidden_states;
    const Tensor *attention_mask =
        is_cross_attention ? args->encoder_attention_mask : args->attention_mask;
    const Tensor *key_layer = transpose_for_scores(self, linear(&self->key, source));
    const Tensor *value_layer = transpose_for_scores(self, linear(&self->value, source));
    if (!is_cross_attention && args->past_key_value != NULL) {
        const Tensor *keys[2] = {args->past_key_value->key, key_layer};
        const Tensor *values[2] = {args->past_key_value->value, value_layer};
        key_layer = cat(keys, 2, 2);                                          // (B, H, L, D)
        value_layer = cat(values, 2, 2);                                      // (B, H, L, D)
    }
    const Tensor *query_layer = transpose_for_scores(self, linear(&self->query, hidden_states));
    int L = size(key_layer, 2);
    const Tensor *attention_scores = matmul(query_layer, transpose(key_layer, -1, -2));
    if (self->position_embedding_type != ABSOLUTE) {   // the post: in cross-attention too
        attention_scores = relative_position_scores(self, attention_scores, query_layer,
                                                    key_layer, posts_distance(T, L));
    }
    attention_scores = div_scalar(attention_scores, sqrtf((float)self->attention_head_size));
    if (attention_mask != NULL) {
        attention_scores = add(attention_scores, attention_mask);            // (B, H, T, L)
    }
    const Tensor *attention_probs = softmax(attention_scores, -1);           // (B, H, T, L)
    if (args->head_mask != NULL) {
        attention_probs = mul(attention_probs, args->head_mask);
    }
    const Tensor *heads = matmul(attention_probs, value_layer);              // (B, H, T, D)
    const Tensor *context_layer = contiguous(permute(heads, (const int[]){0, 2, 1, 3}));
    return view(context_layer, shape3(B, T, self->all_head_size));            // (B, T, C)
}

// The post's BertLayer in eval mode: its self-attention as above, the rest
// the layer's own (the cross-attention fixed, as the post's layer would run
// it with the self-attention's bug alone). Returns layer_output (B, T, C).
static const Tensor *posts_layer(const BertLayer *layer, const Tensor *hidden_states,
                                 const BertArgs *args, BertMode mode) {
    BertArgs self_args = {.attention_mask = args->attention_mask,
                          .head_mask = args->head_mask,
                          .past_key_value = args->past_key_value};
    const Tensor *context_layer =
        posts_self_attention(&layer->attention.self, hidden_states, &self_args);   // (B, T, C)
    const Tensor *attention_output =
        BertSelfOutput_forward(&layer->attention.output, context_layer, hidden_states);
    if (mode == MODE_MULTIMODAL) {
        BertArgs cross_args = {.attention_mask = args->attention_mask,
                               .head_mask = args->head_mask,
                               .encoder_hidden_states = args->encoder_hidden_states};
        attention_output = BertAttention_forward(NULL, NULL, &layer->crossattention,
                                                 attention_output, &cross_args);   // (B, T, C)
    }
    return feed_forward_chunk(layer, attention_output);                       // (B, T, C)
}

// --- part 6: past_key_value, and the post's relative positions with a cache (--past) -----------

// "3 tokens", "1 token"
static const char *tokens(int count) {
    char *text = arena_alloc(32, 1);
    snprintf(text, 32, "%d token%s", count, count == 1 ? "" : "s");
    return text;
}

// The tokens of `everything` (B, L, C) through `layer` in two calls: the
// first `cached` ones, then the rest with the first call's
// present_key_value. Returns the second call's layer_output (B, L - cached,
// C); with `posts`, the second call is the post's layer.
static const Tensor *two_calls(const BertLayer *layer, const Run *run, const Tensor *everything,
                               int cached, bool posts) {
    int L = size(everything, 1);
    const Tensor *first_mask = narrow(run->attention_mask, 3, 0, cached);      // (B, 1, 1, cached)
    BertArgs first_args = layer_args(run, first_mask, NULL);
    KeyValue present;
    BertLayer_forward(NULL, &present, layer, narrow(everything, 1, 0, cached), &first_args,
                      run->mode);
    BertArgs second_args = layer_args(run, run->attention_mask, &present);
    const Tensor *rest = narrow(everything, 1, cached, L - cached);          // (B, L - cached, C)
    return posts ? posts_layer(layer, rest, &second_args, run->mode)
                 : BertLayer_forward(NULL, NULL, layer, rest, &second_args, run->mode);
}

// The post's relative positions with a cache: several new tokens (PyTorch
// stops), one new token (it runs, wrongly).
static void the_posts_cache_bug(const BertLayer *layer, const Run *run, const Tensor *everything,
                                const Flags *f) {
    int L = size(everything, 1), T = f->seq, P = f->past;
    printf("the post's relative positions: seq_length = hidden_states.size()[1], the NEW tokens "
           "only\n");
    int several = P > 0 && T >= 2 ? P : L - 2;
    if (several >= 1) {
        int new_tokens = L - several;
        printf("%s cached, %s new: its distance is (%d, %d), the scores (%d, %d)\n",
               tokens(several), tokens(new_tokens), new_tokens, new_tokens, new_tokens, L);
        print_posts_error(posts_positions_error(f->position, new_tokens, L, f->batch * f->heads));
    }
    const Tensor *fixed = two_calls(layer, run, everything, L - 1, false);    // (B, 1, C)
    const Tensor *posts = two_calls(layer, run, everything, L - 1, true);     // (B, 1, C)
    printf("%s cached, 1 new: its distance is [[0]], every key at distance 0 from the query;\n",
           tokens(L - 1));
    printf("  the post's layer_output for the new token is off by %.4f (largest |difference|)\n",
           (double)max_abs_diff(posts, fixed));
    if (f->position == RELATIVE_KEY) {
        // relative_key adds q . table[MP - 1] to EVERY score of the row: a
        // shift, which softmax ignores. So the post's layer equals one with
        // no relative term at all, to float rounding.
        BertLayer plain = *layer;
        plain.attention.self.position_embedding_type = ABSOLUTE;
        const Tensor *none = two_calls(&plain, run, everything, L - 1, false);   // (B, 1, C)
        printf("  q . table[%d] is added to every score of the row and softmax ignores a shift:\n"
               "  max |the post's - no relative term| = %.3g\n", f->max_positions - 1,
               (double)max_abs_diff(posts, none));
    }
}

// past_key_value: (B, H, S, D) grown along dim 2; one call or two give the
// same output for the new tokens.
void part6_the_cache(const Run *run, const Flags *f) {
    BertLayer layer = eval_copy(&run->layer);
    int P = f->past, L = f->past + f->seq;
    printf("\n-- part 6: past_key_value, and the post's relative positions with a cache (--past, "
           "--position) --\n");
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
    const Tensor *split = two_calls(&layer, run, everything, cached, false);  // (B, L - cached, C)
    printf("%s then %s with past_key_value, against one call over all %d:\n", tokens(cached),
           tokens(L - cached), L);
    printf("  max |two calls - one call| over the new tokens' layer_output = %.3g\n",
           (double)max_abs_diff(split, narrow(one_call, 1, cached, L - cached)));
    if (f->position != ABSOLUTE) {
        the_posts_cache_bug(&layer, run, everything, f);
    }
}

// --- part 7: BLIP's cross-attention, and the post's relative positions there (--encoder-seq) ---

void part7_cross_attention(const Run *run, const Flags *f) {
    int T = f->seq, M = f->encoder_seq;
    printf("\n-- part 7: BLIP's cross-attention, and the post's relative positions there "
           "(--encoder-seq) --\n");
    if (M == 0) {
        printf("--encoder-seq M runs BLIP's decoder layer (mode='multimodal'): after the "
               "self-attention, the\ntext's queries attend to M image features of width "
               "--encoder-width.\n");
        return;
    }
    printf("queries from the text %s, keys and values from encoder_hidden_states %s:\n",
           shape_str(run->steps.attention_output->shape, SIZES_TUPLE),
           shape_str(run->encoder_hidden_states->shape, SIZES_TUPLE));
    printf("probabilities (batch, heads, %d, %d), output %s: one row per text token, as in "
           "lesson 7\n", T, M, shape_str(run->layer_output->shape, SIZES_TUPLE));
    printf("no mask: BertSelfAttention swaps attention_mask for encoder_attention_mask (None) "
           "here\n");
    if (f->position == ABSOLUTE) {
        return;
    }
    printf("text position t and image feature s are not on one axis: the fixed layer adds no "
           "relative term\n");
    printf("the post's code would add its (%d, %d) table to the (%d, %d) scores:\n", T, T, T, M);
    const char *error = posts_positions_error(f->position, T, M, f->batch * f->heads);
    if (error != NULL) {
        print_posts_error(error);
        return;
    }
    BertLayer layer = eval_copy(&run->layer);
    const BertAttention *cross = &layer.crossattention;
    // The cross-attention's input: the self-attention's output, as in part 1.
    BertArgs self_args = {.attention_mask = run->attention_mask, .head_mask = run->head_mask,
                          .past_key_value = f->past > 0 ? &run->cache : NULL};
    const Tensor *self_out = BertAttention_forward(NULL, NULL, &layer.attention,
                                                   run->hidden_states, &self_args);   // (B, T, C)
    BertArgs cross_args = {.head_mask = run->head_mask,
                           .encoder_hidden_states = run->encoder_hidden_states};
    const Tensor *posts_context = posts_self_attention(&cross->self, self_out, &cross_args);
    const Tensor *posts = BertSelfOutput_forward(&cross->output, posts_context, self_out);
    const Tensor *fixed = BertAttention_forward(NULL, NULL, cross, self_out, &cross_args);
    printf("  it runs, and its output is off by %.4f (largest |difference|)\n",
           (double)max_abs_diff(posts, fixed));
}

