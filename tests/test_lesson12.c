// test_lesson12.c - lesson 12 (bert-layer: the post's BERT layer, fixed).
//
// Reference values in tests/data/lesson12/<case>/ were recorded from
// PyTorch 1.13 by tests/reference/gen_lesson12.py, which runs the PyTorch
// block of docs/12-bert-layer.md (with --all: every part); so were
// posts_errors.txt, the texts PyTorch raises for the post's relative
// positions. The lesson's sources are included, bert_layer.c with its
// main() renamed, then parts.c and the_post.c, so the tests can build layers of their own
// and call the forwards directly.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define main lesson_main
#include "../lessons/12-bert-layer/bert_layer.c"
#undef main
#include "../lessons/12-bert-layer/parts.c"
#include "../lessons/12-bert-layer/the_post.c"

#define LESSON_DIR "12-bert-layer"
#define REF_DIR DATA_DIR "/lesson12"

// Against PyTorch: different summation orders (its blocked kernels, our
// plain loops), two LayerNorms that divide by a standard deviation, so a
// few float32 roundings apart (the largest seen is 4.8e-7 on values of
// size 1 to 3): atol 1e-6 for the roundings near 0, rtol 1e-5 (~80 ulps)
// for the rest. A wrong position, mask or head moves outputs by 1e-2 or more.
#define ATOL 1e-6f
#define RTOL 1e-5f

// A recorded PyTorch run (REF_DIR/cases.txt lists them), with what the
// tests need to know of it.
typedef struct {
    const char *dir;   // tests/data/lesson12/<case>: what PyTorch wrote
    bool relative;     // a distance table was drawn
    int past, encoder_seq;
    bool train;
    const RecordedCase *recorded;   // its line of cases.txt: its flags
} Case;

static const Case *case_of(const RecordedCase *r) {
    Case *c = arena_alloc(1, sizeof *c);
    *c = (Case){.dir = r->reference,
                .relative = strcmp(case_text(r, "position"), "absolute") != 0,
                .past = (int)case_int(r, "past"),
                .encoder_seq = (int)case_int(r, "encoder_seq"),
                .train = case_int(r, "train"),
                .recorded = r};
    return c;
}

// The parameters of one BertAttention, under their state_dict names.
static const char *const ATTENTION_PARAMETERS[] = {
    "self.query.weight", "self.query.bias", "self.key.weight", "self.key.bias",
    "self.value.weight", "self.value.bias", "output.dense.weight", "output.dense.bias",
    "output.LayerNorm.weight", "output.LayerNorm.bias", NULL,
};

// The dumps of case c that are drawn (or made without arithmetic) and so
// must equal PyTorch's bit for bit, into `names` (NULL-terminated).
static void exact_names(const char **names, const Case *c) {
    int n = 0;
    const char *attentions[2] = {"attention", "crossattention"};
    for (int a = 0; a < (c->encoder_seq > 0 ? 2 : 1); a++) {
        for (int i = 0; ATTENTION_PARAMETERS[i] != NULL; i++) {
            names[n++] = path_join("%s.%s", attentions[a], ATTENTION_PARAMETERS[i]);
        }
        if (c->relative) {
            names[n++] = path_join("%s.self.distance_embedding.weight", attentions[a]);
        }
    }
    const char *rest[] = {"intermediate.dense.weight", "intermediate.dense.bias",
                          "output.dense.weight", "output.dense.bias", "output.LayerNorm.weight",
                          "output.LayerNorm.bias", "hidden_states", "attention_mask", NULL};
    for (int i = 0; rest[i] != NULL; i++) {
        names[n++] = rest[i];
    }
    if (c->past > 0) {
        names[n++] = "prefix";
    }
    if (c->encoder_seq > 0) {
        names[n++] = "encoder_hidden_states";
    }
    names[n] = NULL;
}

// The dumps the layer computes: equal to PyTorch's to rounding.
static void computed_names(const char **names, const Case *c) {
    int n = 0;
    const char *all[] = {"attention_probs", "present_key", "present_value", "attention_output",
                         "layer_output", NULL};
    for (int i = 0; all[i] != NULL; i++) {
        names[n++] = all[i];
    }
    if (c->encoder_seq > 0) {
        names[n++] = "cross_attention_probs";
    }
    names[n] = NULL;
}

// --- layers for the tests ------------------------------------------------------------------

// A config at small sizes: B is not part of it; the feed-forward unchunked.
static BertConfig small_config(PositionType position, bool cross) {
    return (BertConfig){.hidden_size = 16, .num_attention_heads = 4, .intermediate_size = 32,
                        .position_embedding_type = position, .max_position_embeddings = 12,
                        .layer_norm_eps = 1e-12, .hidden_dropout_prob = 0.1,
                        .attention_probs_dropout_prob = 0.1, .add_cross_attention = cross,
                        .encoder_width = 12, .chunk_size_feed_forward = 0};
}

// BertLayer(config) drawn after manual_seed(seed), in eval mode.
static BertLayer eval_layer(uint64_t seed, const BertConfig *config) {
    manual_seed(seed);
    BertLayer layer = BertLayer_init(config);
    BertLayer_train(&layer, false);
    return layer;
}

// A padding mask (B, 1, 1, L) with the last `pad` keys of the last row hidden.
static const Tensor *padding_mask(int batch, int positions, int pad) {
    return additive_mask(keep_rows(batch, positions, pad));
}

// The attention whose parameters PyTorch recorded under `name` in `dir`.
static BertAttention recorded_attention(const char *dir, const char *name, const BertConfig *config,
                                        bool relative) {
    BertAttention attention;
    memset(&attention, 0, sizeof attention);
    BertSelfAttention *self = &attention.self;
    self->num_attention_heads = config->num_attention_heads;
    self->attention_head_size = config->hidden_size / config->num_attention_heads;
    self->all_head_size = config->hidden_size;
    self->query = recorded_linear(dir, path_join("%s.self.query", name));
    self->key = recorded_linear(dir, path_join("%s.self.key", name));
    self->value = recorded_linear(dir, path_join("%s.self.value", name));
    self->position_embedding_type = config->position_embedding_type;
    self->max_position_embeddings = config->max_position_embeddings;
    if (relative) {
        self->distance_embedding =
            load_reference(dir, path_join("%s.self.distance_embedding.weight", name));
    }
    attention.output.dense = recorded_linear(dir, path_join("%s.output.dense", name));
    attention.output.LayerNorm = (LayerNorm){
        load_reference(dir, path_join("%s.output.LayerNorm.weight", name)),
        load_reference(dir, path_join("%s.output.LayerNorm.bias", name)), 1e-12};
    return attention;
}

// --- against PyTorch ------------------------------------------------------------------------

START_TEST(test_matches_pytorch) {
    const Case *c = case_of(recorded_case(REF_DIR, _i));
    const char *exact[40], *computed[8];
    exact_names(exact, c);
    computed_names(computed, c);
    ReferenceRun recorded = {
        .lesson = LESSON_DIR,
        .exact = exact,
        .computed = computed,
        .atol = ATOL,
        .rtol = RTOL,
    };
    check_recorded_case(recorded, c->recorded);
}
END_TEST

// A recorded case (relative_key, 3 cached, 2 new) rebuilt from
// PyTorch's parameters and inputs: the prefix, then the new tokens with
// the cache, through the module's forward alone.
START_TEST(test_layer_on_recorded_weights) {
    const Case *c = case_of(recorded_case_named(REF_DIR, "seed1_relative_key_past3"));
    BertConfig config = small_config(RELATIVE_KEY, false);
    config.max_position_embeddings = 16;
    config.intermediate_size = 64;
    BertLayer layer;
    memset(&layer, 0, sizeof layer);
    layer.seq_len_dim = 1;
    layer.attention = recorded_attention(c->dir, "attention", &config, true);
    layer.intermediate.dense = recorded_linear(c->dir, "intermediate.dense");
    layer.output.dense = recorded_linear(c->dir, "output.dense");
    layer.output.LayerNorm = (LayerNorm){load_reference(c->dir, "output.LayerNorm.weight"),
                                         load_reference(c->dir, "output.LayerNorm.bias"), 1e-12};
    const Tensor *mask = load_reference(c->dir, "attention_mask");            // (B, 1, 1, L)
    BertArgs prefix_args = {.attention_mask = narrow(mask, 3, 0, c->past)};
    KeyValue cache, present;
    BertLayer_forward(NULL, &cache, &layer, load_reference(c->dir, "prefix"), &prefix_args,
                      MODE_TEXT);
    BertArgs args = {.attention_mask = mask, .past_key_value = &cache};
    BertLayerSteps steps;
    const Tensor *out = BertLayer_forward(&steps, &present, &layer,
                                          load_reference(c->dir, "hidden_states"), &args,
                                          MODE_TEXT);
    assert_close(out, load_reference(c->dir, "layer_output"), ATOL, RTOL, "layer_output");
    assert_close(steps.attention.attention_probs, load_reference(c->dir, "attention_probs"), ATOL,
                 RTOL, "attention_probs");
    assert_close(present.key, load_reference(c->dir, "present_key"), ATOL, RTOL, "present_key");
    assert_close(present.value, load_reference(c->dir, "present_value"), ATOL, RTOL,
                 "present_value");
}
END_TEST

// --- invariants ------------------------------------------------------------------------------

// Eval mode: every chunk size that divides the sequence gives the output of
// no chunks (each position's feed-forward is computed alone either way).
START_TEST(test_chunked_equals_unchunked) {
    BertConfig config = small_config(ABSOLUTE, false);
    BertLayer layer = eval_layer(11, &config);
    const int lengths[] = {1, 4, 6};
    for (int i = 0; i < 3; i++) {
        int T = lengths[i];
        const Tensor *x = randn(shape3(2, T, 16));                            // (B, T, C)
        BertArgs args = {.attention_mask = padding_mask(2, T, T > 1 ? 1 : 0)};
        const Tensor *whole = BertLayer_forward(NULL, NULL, &layer, x, &args, MODE_TEXT);
        for (int c = 1; c <= T; c++) {
            if (T % c != 0) {
                continue;
            }
            BertLayer chunked = layer;
            chunked.chunk_size_feed_forward = c;
            const Tensor *out = BertLayer_forward(NULL, NULL, &chunked, x, &args, MODE_TEXT);
            assert_close(out, whole, 1e-6f, 1e-6f, path_join("seq %d, chunk_size %d", T, c));
        }
    }
}
END_TEST

// Train mode, the generator re-seeded before each run: with batch 1 the
// chunks draw their dropout masks in the unchunked order (the same output,
// bit for bit); with batch 2 they do not (outputs differ).
START_TEST(test_chunks_in_train_mode) {
    BertConfig config = small_config(ABSOLUTE, false);
    BertLayer layer = eval_layer(12, &config);
    BertLayer_train(&layer, true);
    for (int batch = 1; batch <= 2; batch++) {
        const Tensor *x = randn(shape3(batch, 4, 16));                        // (B, T, C)
        manual_seed(99);
        const Tensor *whole = feed_forward_chunk(&layer, x);
        manual_seed(99);
        const Tensor *chunked = apply_chunking_to_forward(feed_forward_chunk, &layer, 1, 1, x);
        if (batch == 1) {
            assert_bitwise_equal(chunked, whole, "batch 1, chunks of 1, train mode");
        } else {
            ck_assert_msg(max_abs_diff(chunked, whole) > 1e-3f,
                          "batch 2: chunks drew the unchunked masks (%g)",
                          (double)max_abs_diff(chunked, whole));
        }
    }
}
END_TEST

// One call over prefix + new tokens equals the prefix, then the new tokens
// with past_key_value, for the new tokens' outputs: every position type,
// every split, with and without cross-attention and padding.
START_TEST(test_cache_equals_one_call) {
    const PositionType types[] = {ABSOLUTE, RELATIVE_KEY, RELATIVE_KEY_QUERY};
    const int L = 6;
    int checked = 0;
    for (int p = 0; p < 3; p++) {
        for (int cross = 0; cross <= 1; cross++) {
            BertConfig config = small_config(types[p], cross);
            BertLayer layer = eval_layer((uint64_t)(20 + 2 * p + cross), &config);
            const Tensor *x = randn(shape3(2, L, 16));                        // (B, L, C)
            const Tensor *image = cross ? randn(shape3(2, 3, 12)) : NULL;     // (B, M, E)
            BertMode mode = cross ? MODE_MULTIMODAL : MODE_TEXT;
            const Tensor *mask = padding_mask(2, L, 2);                       // (B, 1, 1, L)
            BertArgs all_args = {.attention_mask = mask, .encoder_hidden_states = image};
            const Tensor *one_call = BertLayer_forward(NULL, NULL, &layer, x, &all_args, mode);
            for (int cached = 1; cached < L; cached++) {
                BertArgs first = {.attention_mask = narrow(mask, 3, 0, cached),
                                  .encoder_hidden_states = image};
                KeyValue cache;
                BertLayer_forward(NULL, &cache, &layer, narrow(x, 1, 0, cached), &first, mode);
                BertArgs second = {.attention_mask = mask, .encoder_hidden_states = image,
                                   .past_key_value = &cache};
                const Tensor *out = BertLayer_forward(NULL, NULL, &layer,
                                                      narrow(x, 1, cached, L - cached), &second,
                                                      mode);                  // (B, L - cached, C)
                assert_close(out, narrow(one_call, 1, cached, L - cached), 1e-6f, 1e-5f,
                             path_join("%s, cross %d, %d cached", POSITION_TYPES[p], cross,
                                       cached));
                checked += 1;
            }
        }
    }
    ck_assert_int_eq(checked, 3 * 2 * 5);
}
END_TEST

// head_mask: a zeroed head's context columns are exactly 0; the other
// heads' are bit for bit those without a head mask.
START_TEST(test_zeroed_head_context_is_zero) {
    BertConfig config = small_config(RELATIVE_KEY_QUERY, false);
    BertLayer layer = eval_layer(30, &config);
    const Tensor *x = randn(shape3(2, 5, 16));                                // (B, T, C)
    BertArgs plain = {.attention_mask = padding_mask(2, 5, 1)};
    const Tensor *context =
        BertSelfAttention_forward(NULL, NULL, &layer.attention.self, x, &plain);   // (B, T, C)
    for (int h = 0; h < 4; h++) {
        BertArgs masked = plain;
        masked.head_mask = zero_one_head(4, h);
        const Tensor *out =
            BertSelfAttention_forward(NULL, NULL, &layer.attention.self, x, &masked);
        for (int g = 0; g < 4; g++) {
            const Tensor *mine = narrow(out, 2, 4 * g, 4), *theirs = narrow(context, 2, 4 * g, 4);
            if (g == h) {
                assert_close(mine, zeros(shape3(2, 5, 4)), 0.0f, 0.0f,
                             path_join("head %d silenced", h));
            } else {
                assert_bitwise_equal(contiguous(mine), contiguous(theirs),
                                     path_join("head %d with head %d silenced", g, h));
            }
        }
    }
}
END_TEST

// Padded keys get weight below 1e-4 (here exactly 0: exp underflows), every
// row sums to 1, with and without a cache; and the weights are lesson 4's
// masked_fill(keep == 0, -1e20) weights, bit for bit.
START_TEST(test_padded_keys_get_no_weight) {
    BertConfig config = small_config(RELATIVE_KEY, false);
    BertLayer layer = eval_layer(31, &config);
    const int B = 2, P = 2, T = 4, L = P + T;
    const Tensor *x = randn(shape3(B, L, 16));                                // (B, L, C)
    for (int pad = 0; pad < L; pad++) {
        const Tensor *keep = keep_rows(B, L, pad);                            // (B, L)
        const Tensor *mask = additive_mask(keep);                             // (B, 1, 1, L)
        BertArgs first = {.attention_mask = narrow(mask, 3, 0, P)};
        KeyValue cache;
        BertLayer_forward(NULL, &cache, &layer, narrow(x, 1, 0, P), &first, MODE_TEXT);
        BertArgs second = {.attention_mask = mask, .past_key_value = &cache};
        BertLayerSteps steps;
        BertLayer_forward(&steps, NULL, &layer, narrow(x, 1, P, T), &second, MODE_TEXT);
        const Tensor *probs = steps.attention.attention_probs;                // (B, H, T, L)
        for (int b = 0; b < B; b++) {
            for (int h = 0; h < 4; h++) {
                for (int t = 0; t < T; t++) {
                    float sum = 0.0f;
                    for (int s = 0; s < L; s++) {
                        float w = *at4(probs, b, h, t, s);
                        sum += w;
                        if (*at2(keep, b, s) == 0.0f) {
                            ck_assert_msg(w < 1e-4f, "pad %d: padded key %d has weight %g", pad,
                                          s, (double)w);
                        }
                    }
                    ck_assert_msg(fabsf(sum - 1.0f) < 1e-6f, "pad %d: row sums to %g", pad,
                                  (double)sum);
                }
            }
        }
        const Tensor *keep4 = view(keep, shape4(B, 1, 1, L));
        const Tensor *filled = softmax(masked_fill(steps.attention.unmasked_scores,
                                                   eq_scalar(keep4, 0.0f), MASK_FILL), -1);
        assert_bitwise_equal(probs, filled, path_join("pad %d: additive against masked_fill",
                                                      pad));
    }
}
END_TEST

// relative_key with a table of zeros adds nothing: the absolute layer's
// output, bit for bit (with and without a cache).
START_TEST(test_relative_key_with_zero_table_equals_absolute) {
    BertConfig config = small_config(RELATIVE_KEY, false);
    BertLayer relative = eval_layer(32, &config);
    relative.attention.self.distance_embedding =
        zeros(relative.attention.self.distance_embedding->shape);          // (2MP-1, D)
    BertLayer absolute = relative;
    absolute.attention.self.position_embedding_type = ABSOLUTE;
    const Tensor *x = randn(shape3(2, 5, 16));                                // (B, L, C)
    const Tensor *mask = padding_mask(2, 5, 1);
    BertArgs first = {.attention_mask = narrow(mask, 3, 0, 3)};
    const BertLayer *layers[2] = {&relative, &absolute};
    const Tensor *outs[2][2];
    for (int i = 0; i < 2; i++) {
        BertArgs all = {.attention_mask = mask};
        outs[i][0] = BertLayer_forward(NULL, NULL, layers[i], x, &all, MODE_TEXT);
        KeyValue cache;
        BertLayer_forward(NULL, &cache, layers[i], narrow(x, 1, 0, 3), &first, MODE_TEXT);
        BertArgs second = {.attention_mask = mask, .past_key_value = &cache};
        outs[i][1] = BertLayer_forward(NULL, NULL, layers[i], narrow(x, 1, 3, 2), &second,
                                       MODE_TEXT);
    }
    assert_bitwise_equal(outs[0][0], outs[1][0], "one call");
    assert_bitwise_equal(outs[0][1], outs[1][1], "with the cache");
}
END_TEST

// The two einsums as loops, on numbers worked by hand: query (1, 1, 2, 2)
// rows [1, 2] and [3, 4]; positional_embedding (2, 3, 2) with
// e[t][s] = [t + s, 1]; key (1, 1, 3, 2) rows [1, 0], [0, 1], [1, 1].
START_TEST(test_einsums_by_hand) {
    const Tensor *query = tensor_from(shape4(1, 1, 2, 2), (const float[]){1, 2, 3, 4});
    const Tensor *key = tensor_from(shape4(1, 1, 3, 2), (const float[]){1, 0, 0, 1, 1, 1});
    const Tensor *pe = tensor_from(shape3(2, 3, 2),
                                   (const float[]){0, 1, 1, 1, 2, 1, 1, 1, 2, 1, 3, 1});
    // bhtd,tsd->bhts: q_t . e[t][s]: t=0: [1,2].[0,1]=2, [1,2].[1,1]=3, [1,2].[2,1]=4;
    // t=1: [3,4].[1,1]=7, [3,4].[2,1]=10, [3,4].[3,1]=13.
    assert_bitwise_equal(einsum_bhtd_tsd(query, pe),
                         tensor_from(shape4(1, 1, 2, 3), (const float[]){2, 3, 4, 7, 10, 13}),
                         "bhtd,tsd->bhts");
    // bhsd,tsd->bhts: k_s . e[t][s]: t=0: [1,0].[0,1]=0, [0,1].[1,1]=1, [1,1].[2,1]=3;
    // t=1: [1,0].[1,1]=1, [0,1].[2,1]=1, [1,1].[3,1]=4.
    assert_bitwise_equal(einsum_bhsd_tsd(key, pe),
                         tensor_from(shape4(1, 1, 2, 3), (const float[]){0, 1, 3, 1, 1, 4}),
                         "bhsd,tsd->bhts");
}
END_TEST

// The distance matrix: fixed, queries at P .. P+T-1 against keys 0 ..
// P+T-1; the post's, queries and keys at 0 .. T-1, and with one new token
// all 0 (its one 0 broadcast to every key); and the rows it picks.
START_TEST(test_relative_distance) {
    BertConfig config = small_config(RELATIVE_KEY, false);
    BertLayer layer = eval_layer(33, &config);
    BertSelfAttention self = layer.attention.self;
    const Tensor *fixed = relative_distance(2, 5);                            // (T, L)
    for (int t = 0; t < 2; t++) {
        for (int s = 0; s < 5; s++) {
            ck_assert_msg(*at2(fixed, t, s) == (float)(3 + t - s), "distance[%d][%d] = %g", t, s,
                          (double)*at2(fixed, t, s));
        }
    }
    ck_assert_int_eq(fixed->dtype, DTYPE_INT64);
    const Tensor *posts = posts_distance(1, 5);                               // (1, L)
    assert_bitwise_equal(posts, zeros(shape2(1, 5)), "the post's, one new token");
    const Tensor *square = posts_distance(3, 3);                              // (T, T)
    ck_assert(*at2(square, 2, 0) == 2.0f && *at2(square, 0, 2) == -2.0f);
    ck_assert_int_eq(posts->dtype, DTYPE_INT64);
    // Row distance + N - 1 of the table: distance 4 is row 4 + 11 = 15.
    const Tensor *pe = positional_embedding_of(&layer.attention.self, fixed);   // (T, L, D)
    assert_bitwise_equal(contiguous(narrow(narrow(pe, 0, 1, 1), 1, 0, 1)),
                         contiguous(view(narrow(self.distance_embedding, 0, 15, 1),
                                         shape3(1, 1, 4))),
                         "positional_embedding[1][0] is table row 15");
}
END_TEST

// What the lesson says PyTorch raises for the post's relative positions is
// what PyTorch raised: gen_lesson12.py ran the post's forward at each size
// of posts_errors.txt (self-attention with a cache, cross-attention over M
// features) and wrote its error text, or that it ran. Every line must come
// out of posts_positions_error() exactly, and at least one of each kind is
// there (the file cannot silently lose them).
START_TEST(test_the_posts_errors_are_pytorchs) {
    const char *cursor = read_text(REF_DIR "/posts_errors.txt");
    int checked = 0, errors = 0, runs = 0;
    for (const char *line = next_line(&cursor); line != NULL; line = next_line(&cursor)) {
        if (line[0] == '#') {
            continue;
        }
        char position[32], where[8];
        int T = 0, L = 0, BH = 0, used = 0;
        int read = sscanf(line, "%31s %7s %d %d %d\t%n", position, where, &T, &L, &BH, &used);
        ck_assert_msg(read == 5 && used > 0, "posts_errors.txt: cannot read '%s'", line);
        PositionType type =
            strcmp(position, "relative_key") == 0 ? RELATIVE_KEY : RELATIVE_KEY_QUERY;
        const char *recorded = line + used;
        const char *ours = posts_positions_error(type, T, L, BH);
        if (strcmp(recorded, "runs") == 0) {
            ck_assert_msg(ours == NULL, "%s: PyTorch ran, the lesson says '%s'", line, ours);
            runs += 1;
        } else {
            ck_assert_msg(ours != NULL && strcmp(ours, recorded) == 0,
                          "%s %s T %d L %d: PyTorch raised '%s', the lesson says '%s'", position,
                          where, T, L, recorded, ours != NULL ? ours : "(runs)");
            errors += 1;
        }
        checked += 1;
    }
    ck_assert_int_ge(errors, 10);
    ck_assert_int_ge(runs, 4);
    ck_assert_int_eq(checked, errors + runs);
}
END_TEST

// Where the post's relative positions run: one new token after a cache,
// wrong; for relative_key no different from no relative term.
START_TEST(test_the_posts_positions) {
    const PositionType types[2] = {RELATIVE_KEY, RELATIVE_KEY_QUERY};
    for (int p = 0; p < 2; p++) {
        BertConfig config = small_config(types[p], false);
        BertLayer fixed = eval_layer((uint64_t)(34 + p), &config);
        const Tensor *x = randn(shape3(2, 5, 16));                            // (B, L, C)
        Run run;
        memset(&run, 0, sizeof run);
        run.attention_mask = padding_mask(2, 5, 1);
        BertLayer plain = fixed;
        plain.attention.self.position_embedding_type = ABSOLUTE;
        const Tensor *right = two_calls(&fixed, &run, x, 4, false);           // (B, 1, C)
        const Tensor *wrong = two_calls(&fixed, &run, x, 4, true);
        ck_assert_msg(max_abs_diff(wrong, right) > 1e-3f, "%s: the post's is right (%g)",
                      POSITION_TYPES[types[p]], (double)max_abs_diff(wrong, right));
        if (types[p] == RELATIVE_KEY) {
            assert_close(wrong, two_calls(&plain, &run, x, 4, false), 1e-6f, 1e-5f,
                         "relative_key, the post's: a shift softmax ignores");
        }
    }
    // Without a cache, in self-attention, the post's code is right: the
    // same context as the fixed forward, bit for bit.
    BertConfig config = small_config(RELATIVE_KEY_QUERY, false);
    BertLayer layer = eval_layer(39, &config);
    const Tensor *x = randn(shape3(2, 5, 16));                                // (B, T, C)
    BertArgs args = {.attention_mask = padding_mask(2, 5, 1)};
    assert_bitwise_equal(contiguous(posts_self_attention(&layer.attention.self, x, &args)),
                         contiguous(BertSelfAttention_forward(NULL, NULL, &layer.attention.self,
                                                              x, &args)),
                         "the post's forward without a cache");
}
END_TEST

// Cross-attention: (B, H, T, M) probabilities, the text's length kept, and
// no relative term: the relative layer's cross-attention equals the same
// weights' cross-attention with absolute positions, bit for bit.
START_TEST(test_cross_attention) {
    BertConfig config = small_config(RELATIVE_KEY_QUERY, true);
    BertLayer layer = eval_layer(36, &config);
    const Tensor *x = randn(shape3(2, 5, 16));                                // (B, T, C)
    const Tensor *image = randn(shape3(2, 7, 12));                            // (B, M, E)
    BertArgs args = {.attention_mask = padding_mask(2, 5, 1), .encoder_hidden_states = image};
    BertLayerSteps steps;
    const Tensor *out = BertLayer_forward(&steps, NULL, &layer, x, &args, MODE_MULTIMODAL);
    ck_assert_str_eq(size_str(steps.crossattention.attention_probs), "torch.Size([2, 4, 5, 7])");
    ck_assert_str_eq(size_str(out), "torch.Size([2, 5, 16])");
    ck_assert_ptr_null(steps.crossattention.distance);
    BertLayer absolute = layer;
    absolute.crossattention.self.position_embedding_type = ABSOLUTE;
    assert_bitwise_equal(BertLayer_forward(NULL, NULL, &absolute, x, &args, MODE_MULTIMODAL),
                         out, "cross-attention adds no relative term");
}
END_TEST

// transpose_for_scores copies nothing: the view shares mixed_query_layer's
// storage, with the strides of a (B, T, H, D) tensor read as (B, H, T, D).
START_TEST(test_transpose_for_scores_is_a_view) {
    BertConfig config = small_config(ABSOLUTE, false);
    BertLayer layer = eval_layer(37, &config);
    const Tensor *mixed = randn(shape3(2, 5, 16));                            // (B, T, C)
    const Tensor *heads = transpose_for_scores(&layer.attention.self, mixed);
    ck_assert_ptr_eq(heads->data, mixed->data);
    ck_assert_str_eq(size_str(heads), "torch.Size([2, 4, 5, 4])");
    ck_assert_str_eq(stride_str(heads), "(80, 4, 16, 1)");
    ck_assert(*at4(heads, 1, 2, 3, 1) == *at3(mixed, 1, 3, 2 * 4 + 1));
}
END_TEST

// Post-norm: every row of layer_output has mean 0 and standard deviation 1
// (LayerNorm's weight is 1 and its bias 0 at initialisation).
START_TEST(test_post_norm_rows) {
    BertConfig config = small_config(ABSOLUTE, false);
    BertLayer layer = eval_layer(38, &config);
    const Tensor *x = mul_scalar(randn(shape3(2, 5, 16)), 7.0f);              // (B, T, C)
    BertArgs args = {.attention_mask = padding_mask(2, 5, 2)};
    const Tensor *out = BertLayer_forward(NULL, NULL, &layer, x, &args, MODE_TEXT);
    for (int b = 0; b < 2; b++) {
        for (int t = 0; t < 5; t++) {
            double mean = 0.0, var = 0.0;
            for (int c = 0; c < 16; c++) {
                mean += *at3(out, b, t, c) / 16.0;
            }
            for (int c = 0; c < 16; c++) {
                var += (*at3(out, b, t, c) - mean) * (*at3(out, b, t, c) - mean) / 16.0;
            }
            ck_assert_msg(fabs(mean) < 1e-6 && fabs(sqrt(var) - 1.0) < 1e-5,
                          "row (%d, %d): mean %g, std %g", b, t, mean, sqrt(var));
        }
    }
    ck_assert_msg(fabs(row_std(out) - 1.0) < 1e-5, "row_std %g", row_std(out));
}
END_TEST

// --- flags ------------------------------------------------------------------------------------

// Each: exit 2, nothing on stdout, exactly one line on stderr naming the
// flag (or the tensor that would not fit), and the --dump directory not made.
START_TEST(test_bad_flags) {
    static const BadFlags cases[] = {
        {{"--chunk", "2", NULL}, "--chunk 2 does not divide --seq 5"},
        {{"--chunk", "2", "--seq", "4", "--past", "3", NULL}, "--chunk 2 does not divide --past 3"},
        {{"--position", "relative_key", "--max-positions", "4", NULL}, "--max-positions 4"},
        {{"--position", "relative_key_query", "--past", "12", NULL}, "--max-positions 16"},
        {{"--head-mask", "4", NULL}, "--head-mask"},
        {{"--head-mask", "-2", NULL}, "--head-mask"},
        {{"--position", "foo", NULL}, "--position"},
        {{"--pad", "6", NULL}, "--pad 6"},
        {{"--heads", "3", NULL}, "--heads 3 does not divide --dim 16"},
        {{"--past", "-1", NULL}, "--past"},
        {{"--encoder-seq", "six", NULL}, "--encoder-seq"},
        {{"--intermediate", "0", NULL}, "--intermediate"},
        {{"--train", "1", NULL}, "'1'"},
        {{"--batch", "4096", "--seq", "4096", NULL}, "attention_probs"},
        {{"--dim", "16384", "--heads", "1", NULL}, "attention.self.query.weight"},
        {{"--position", "relative_key", "--max-positions", "60000", "--dim", "4096", NULL},
         "distance_embedding.weight"},
        {{"--encoder-seq", "1", "--encoder-width", "65536", "--dim", "2048", NULL},
         "crossattention.self.key.weight"},
        // The cross-attention's keys and values (batch, encoder-seq, dim) were not
        // checked: this one died with exit 1 after 17 lines of output.
        {{"--dim", "516", "--heads", "4", "--encoder-seq", "65536", "--encoder-width", "1", NULL},
         "these sizes make the cross-attention's keys and values (batch, encoder-seq, dim) "
         "(2, 65536, 516), more than"},
        {{"--part", "10", NULL}, "--part"},
        {{"--part", "-1", NULL}, "--part"},
        {{"--part", "3", "--all", NULL}, "--part 3 and --all"},
    };
    check_bad_flags(LESSON_DIR, "lesson-12", cases, sizeof cases / sizeof cases[0]);
}
END_TEST

START_TEST(test_help_lists_the_flags) {
    RunResult r = run_program(lesson_binary(LESSON_DIR), (const char *const[]){"--help", NULL});
    ck_assert_int_eq(r.status, 0);
    const char *flags[] = {"--position", "--max-positions", "--pad", "--head-mask", "--past",
                           "--encoder-seq", "--encoder-width", "--chunk", "--train",
                           "--intermediate", "--part", "--all"};
    for (int i = 0; i < 12; i++) {
        ck_assert_msg(strstr(r.out, flags[i]) != NULL, "--help does not list %s", flags[i]);
    }
}
END_TEST

// The parts: the default run prints part 1 and the list of the others;
// --part N prints part N alone (its heading first, nothing of part 1);
// --all prints part 1, then parts 2 to 9 in order, and no list.
START_TEST(test_the_parts) {
    static const char *const HEADINGS[] = {
        "-- part 2: BERT's additive mask", "-- part 3: head_mask", "-- part 4: dropout",
        "-- part 5: relative positions", "-- part 6: past_key_value", "-- part 7: BLIP's",
        "-- part 8: apply_chunking_to_forward", "-- part 9: post-norm"};
    RunResult plain = check_prints(LESSON_DIR, (const char *const[]){NULL},
                                   "layer_output: torch.Size([2, 5, 16])\n"
                                   "part 2: BERT's additive mask against lesson 4's masked_fill "
                                   "(--pad varies it)\n"
                                   "part 9: post-norm (BERT) against pre-norm (lesson 11), over 12 "
                                   "layers\n");
    RunResult all = run_program(lesson_binary(LESSON_DIR), (const char *const[]){"--all", NULL});
    ck_assert_int_eq(all.status, 0);
    ck_assert_ptr_null(strstr(all.out, "-- the other parts"));
    ck_assert_ptr_nonnull(strstr(all.out, "layer_output: torch.Size([2, 5, 16])\n"));
    const char *after = all.out;
    for (int n = 2; n <= 9; n++) {
        ck_assert_msg(strstr(plain.out, HEADINGS[n - 2]) == NULL, "the default prints part %d", n);
        const char *at = strstr(after, HEADINGS[n - 2]);
        ck_assert_msg(at != NULL, "--all lacks part %d, or prints it out of order", n);
        after = at;
        char number[12];
        snprintf(number, sizeof number, "%d", n);
        RunResult one = run_program(lesson_binary(LESSON_DIR),
                                    (const char *const[]){"--part", number, NULL});
        ck_assert_int_eq(one.status, 0);
        ck_assert_msg(strncmp(one.out, "\n", 1) == 0 && strncmp(one.out + 1, HEADINGS[n - 2],
                                                                  strlen(HEADINGS[n - 2])) == 0,
                      "--part %d does not start with its heading: %.80s", n, one.out);
        ck_assert_ptr_null(strstr(one.out, "attention.self (BertSelfAttention)"));
        ck_assert_ptr_null(strstr(one.out, "-- part 1"));
    }
    RunResult first = run_program(lesson_binary(LESSON_DIR),
                                  (const char *const[]){"--part", "1", NULL});
    ck_assert_int_eq(first.status, 0);
    ck_assert_ptr_nonnull(strstr(first.out, "attention.self (BertSelfAttention)"));
    ck_assert_ptr_null(strstr(first.out, "-- the other parts"));
}
END_TEST

// --- what a run may take (common/lesson/budget.h; harness.h: add_budget_tests) -----------

// Refused by the budget before anything runs, in one line that names the flags, the budget
// and how to raise it.
static const BudgetRefusal REFUSED[] = {
    // Issue 18's table, each command as the probe ran it. (The first at --seq 2048
    // prints part 1 alone by default now, and runs: SIZED's first; with every part it
    // is refused.)
    {{"--batch", "1", "--seq", "2048", "--dim", "1", "--heads", "1", "--intermediate", "1",
      "--pad", "0", "--all", NULL},
     "lesson-12: --seq 2048 would hold about 1.9 GiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=2000", NULL},
    {{"--batch", "1", "--seq", "8192", "--dim", "1", "--heads", "1", "--intermediate", "1",
      "--pad", "0", NULL},
     "lesson-12: --seq 8192 would hold about 1.5 GiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=1600", NULL},
    // Only the flags raised above their defaults are named, not the ones lowered;
    // what a part costs counts only when it runs.
    {{"--seq", "1024", "--dim", "8", "--heads", "2", "--intermediate", "8", "--part", "9", NULL},
     "lesson-12: --seq 1024 --part 9 would hold about 1.6 GiB at once, more than the 512 MiB "
     "allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=1700", NULL},
};

// Sizes where the tensors that grow with the flags are most of what a run holds, each
// flag raised in one of them, and the switches that add tensors on: what a run holds is
// its prediction (make test runs the first, make test-long all).
static const SizedRun SIZED[] = {
    // Issue 18's command that took 16 s and 1.9 GB prints part 1 alone now, and runs in well
    // under a second, holding about 65 MiB.
    {{"--batch", "1", "--seq", "2048", "--dim", "1", "--heads", "1", "--intermediate", "1",
      "--pad", "0", NULL}},
    {{"--batch", "1", "--seq", "192", "--dim", "16", "--heads", "2", "--intermediate", "16",
      "--all", NULL}},
    {{"--seq", "40", "--past", "8", "--position", "relative_key_query", "--max-positions", "64",
      "--encoder-seq", "40", "--dim", "64", "--chunk", "8", "--head-mask", "1", "--train", "--all",
      "--dump", "", NULL}},
    {{"--batch", "2", "--seq", "32", "--dim", "128", "--heads", "8", "--intermediate", "256",
      "--encoder-seq", "64", "--encoder-width", "32", "--position", "relative_key",
      "--max-positions", "32", "--all", NULL}},
    {{"--batch", "2", "--seq", "512", "--dim", "32", "--heads", "4", "--intermediate", "64",
      NULL}},
    {{"--batch", "1", "--seq", "160", "--dim", "16", "--heads", "2", "--intermediate", "16",
      "--part", "9", NULL}},
};

static const LessonBudget BUDGET = {
    "12-bert-layer", lesson_main, REFUSED, sizeof REFUSED / sizeof REFUSED[0], SIZED,
    sizeof SIZED / sizeof SIZED[0], NULL, 0,
};

static Suite *lesson12_suite(void) {
    Suite *suite = suite_create("lesson12");
    TCase *pytorch = new_tcase("pytorch");
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, recorded_case_count(REF_DIR));
    tcase_add_test(pytorch, test_layer_on_recorded_weights);
    suite_add_tcase(suite, pytorch);
    TCase *invariants = new_tcase("invariants");
    tcase_add_test(invariants, test_chunked_equals_unchunked);
    tcase_add_test(invariants, test_chunks_in_train_mode);
    tcase_add_test(invariants, test_cache_equals_one_call);
    tcase_add_test(invariants, test_zeroed_head_context_is_zero);
    tcase_add_test(invariants, test_padded_keys_get_no_weight);
    tcase_add_test(invariants, test_relative_key_with_zero_table_equals_absolute);
    tcase_add_test(invariants, test_cross_attention);
    tcase_add_test(invariants, test_transpose_for_scores_is_a_view);
    tcase_add_test(invariants, test_post_norm_rows);
    suite_add_tcase(suite, invariants);
    TCase *relative = new_tcase("relative positions");
    tcase_add_test(relative, test_einsums_by_hand);
    tcase_add_test(relative, test_relative_distance);
    tcase_add_test(relative, test_the_posts_errors_are_pytorchs);
    tcase_add_test(relative, test_the_posts_positions);
    suite_add_tcase(suite, relative);
    TCase *flags = new_tcase("flags");
    tcase_add_test(flags, test_bad_flags);
    tcase_add_test(flags, test_help_lists_the_flags);
    tcase_add_test(flags, test_the_parts);
    suite_add_tcase(suite, flags);
    add_budget_tests(suite, &BUDGET);
    return suite;
}

int main(void) { return run_suite(lesson12_suite()); }
