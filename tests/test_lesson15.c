// test_lesson15.c - lesson 15 (llama-block: RoPE, RMSNorm, SwiGLU, GQA with a cache).
//
// Reference values in tests/data/lesson15/<case>/ were recorded from PyTorch 1.13 by
// tests/reference/gen_lesson15.py, which runs the PyTorch script of docs/15-llama-block.md
// (tests/data/lesson15/cases.txt lists the runs). The lesson source is included with its
// main() renamed, then its siblings (llama_flags.c, llama_print.c), so the
// tests can build layers of their own and call the forwards directly.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family_gqa.h"
#include "harness.h"

#define main lesson_main
#include "../lessons/15-llama-block/llama_block.c"
#undef main
#include "../lessons/15-llama-block/llama_flags.c"
#include "../lessons/15-llama-block/llama_print.c"

#define LESSON_DIR "15-llama-block"
#define REF_DIR DATA_DIR "/lesson15"

// Against PyTorch: other summation orders (its BLAS, our loops), Sleef's cos against the C
// library's for some angles: a few float32 roundings apart on numbers of size 1 to 3.
#define ATOL 1e-6f
#define RTOL 1e-5f

// --- the recorded runs --------------------------------------------------------------------

// The dumps that are drawn, or computed with PyTorch's roundings: equal bit for bit.
// RMSNorm (sum_exact.h) and inv_freq (Sleef's powf on whole blocks of 16, common/exact/pow_exact.c)
// always; cos and sin where PyTorch takes them from the C library (torch.polar, Meta's layout).
static const char *const EXACT[] = {
    "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
    "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
    "mlp.down_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight",
    "hidden_states", "normed", "inv_freq", NULL};
static const char *const COMPUTED[] = {"query_states", "key_states", "value_states",
                                       "attn_weights", "out", "cached_out", NULL};

START_TEST(test_matches_pytorch) {
    const RecordedCase *c = recorded_case(REF_DIR, _i);
    const char *dir = make_temp_dir();
    const char *argv[MAX_CASE_WORDS + 2] = {"--dump", dir};
    for (int k = 0; c->args[k] != NULL; k++) {
        argv[k + 2] = c->args[k];
    }
    RunResult run = run_program(lesson_binary(LESSON_DIR), argv);
    ck_assert_msg(run.status == 0 && run.err[0] == '\0', "%s: exit %d: %s", c->dir, run.status,
                  run.err);
    for (int i = 0; EXACT[i] != NULL; i++) {
        assert_bitwise_equal(load_reference(dir, EXACT[i]), load_reference(c->reference, EXACT[i]),
                             path_join("%s %s", c->dir, EXACT[i]));
    }
    for (int i = 0; COMPUTED[i] != NULL; i++) {
        assert_close(load_reference(dir, COMPUTED[i]), load_reference(c->reference, COMPUTED[i]),
                     ATOL, RTOL, path_join("%s %s", c->dir, COMPUTED[i]));
    }
    // cos and sin: bit for bit in Meta's layout (torch.polar calls the C library's cosf and
    // sinf); in transformers' (Sleef's vector cosf and sinf) within one rounding.
    const char *trig[2] = {"cos", "sin"};
    for (int i = 0; i < 2; i++) {
        const Tensor *got = load_reference(dir, trig[i]), *want = load_reference(c->reference,
                                                                                 trig[i]);
        if (strcmp(case_text(c, "rope_layout"), "interleaved") == 0) {
            assert_bitwise_equal(got, want, path_join("%s %s", c->dir, trig[i]));
        } else {
            assert_close(got, want, 6e-8f, 1.2e-7f, path_join("%s %s", c->dir, trig[i]));
        }
    }
    const char *missing = NULL;
    ck_assert_msg(lines_in_order_to_last_digit(run.out, read_text(path_join("%s/stdout.txt",
                                                                             c->reference)),
                                                &missing),
                  "%s: PyTorch's line not printed (in order): '%s'", c->dir, missing);
    remove_dir(dir);
}
END_TEST

// The harness's same_line_to_last_digit, which the recorded outputs are checked with,
// accepts a last digit and nothing more.
START_TEST(test_same_line_to_last_digit) {
    bool (*same)(const char *, const char *) = same_line_to_last_digit;
    ck_assert(same("out: tensor([0.6261, -1.2])", "out: tensor([0.6262, -1.2])"));
    ck_assert(same("x 6.0337e-06 y", "x 6.0338e-06 y"));
    ck_assert(same("tensor([ 0.5000,  0.2500])", "tensor([0.5000, 0.2500])"));
    ck_assert(!same("out: 0.6260", "out: 0.6262"));
    ck_assert(!same("(1, 2, 4, 16)", "(1, 2, 5, 16)"));   // integers are exact
    ck_assert(!same("rotate_half", "interleaved"));
    ck_assert(!same("a 1.5", "a 1.5 b"));
    const char *missing = NULL;
    ck_assert(lines_in_order_to_last_digit("a 0.6261\nb\nc 2\n", "a 0.6262\nc 2\n", &missing));
    ck_assert(!lines_in_order_to_last_digit("c 2\na 0.6261\n", "a 0.6262\nc 2\n", &missing));
    ck_assert_str_eq(missing, "c 2");
}
END_TEST

// F.silu on 1005 numbers, recorded (PyTorch's AVX2 kernel): the lesson's silu, bit for bit
// (Sleef's exp on the 62 blocks of 16, the C library's on the last 13); with the C library's
// exp everywhere some differ.
START_TEST(test_silu_bit_for_bit) {
    const Tensor *x = load_npy(REF_DIR "/silu/x.npy"), *y = load_npy(REF_DIR "/silu/y.npy");
    assert_bitwise_equal(silu(x), y, "silu");
    int differ = 0;
    for (long j = 0; j < numel(x); j++) {
        float z = x->data[j];
        differ += z / (1.0f + expf(-z)) != y->data[j];
    }
    ck_assert_msg(differ > 0, "the C library's exp gives PyTorch's bits everywhere");
    // Five numbers: all on the C library's path, as PyTorch's own five-number call.
    assert_bitwise_equal(silu(narrow(x, 0, 0, 5)), narrow(y, 0, 0, 5), "silu of 5");
}
END_TEST

// inv_freq of every recorded run, bit for bit: Sleef's powf on the whole blocks of 16, the C
// library's on the rest, as PyTorch's kernel. The runs with head_dim 48 (base 10000) and 96
// (base 500000) have a theta_i that the C library's powf alone rounds otherwise.
START_TEST(test_inv_freq_bit_for_bit) {
    int cases = recorded_case_count(REF_DIR), libc_differs = 0;
    for (int k = 0; k < cases; k++) {
        const RecordedCase *c = recorded_case(REF_DIR, k);
        int D = (int)(case_int(c, "dim") / case_int(c, "heads")), base = (int)case_int(c,
                                                                                    "rope_base");
        const Tensor *want = load_reference(c->reference, "inv_freq");
        LlamaRotaryEmbedding rope = LlamaRotaryEmbedding_init(D, base, ROTATE_HALF);
        assert_bitwise_equal(rope.inv_freq, want, path_join("%s inv_freq", c->dir));
        bool differs = false;
        for (int i = 0; i < D / 2; i++) {
            differs |= 1.0f / powf((float)base, (float)(2 * i) / (float)D) != want->data[i];
        }
        ck_assert_msg(differs == (D == 48 || D == 96), "%s (head_dim %d): the C library's powf "
                      "alone %s PyTorch's inv_freq", c->dir, D, differs ? "misses" : "gives");
        libc_differs += differs;
    }
    ck_assert_int_eq(libc_differs, 2);
}
END_TEST

// Sleef's powf is within 1 ULP of the true power (its "u10"), and keeps pow's special cases
// (the values as Sleef_powf8_u10 returns them).
START_TEST(test_sleef_powf) {
    for (int b = 2; b <= 2000000; b = b * 3 + 1) {
        for (int i = 0; i <= 200; i++) {
            float y = (float)i / 64.0f - 1.5f, got = sleef_powf((float)b, y);
            double exact = pow((double)b, (double)y);
            double ulp = nextafterf((float)exact, INFINITY) - (float)exact;
            ck_assert_msg(fabs(got - exact) <= ulp, "%d^%g: %.9g, true %.12g", b, (double)y,
                          (double)got, exact);
        }
    }
    ck_assert(sleef_powf(2.0f, 10.0f) == 1024.0f && sleef_powf(-2.0f, 3.0f) == -8.0f);
    ck_assert(sleef_powf(7.5f, 0.0f) == 1.0f && sleef_powf(1.0f, NAN) == 1.0f);
    ck_assert(isnan(sleef_powf(-2.0f, 0.5f)) && isnan(sleef_powf(NAN, 2.0f)));
    ck_assert(sleef_powf(0.0f, -1.0f) == INFINITY && sleef_powf(-0.0f, -3.0f) == -INFINITY);
    ck_assert(sleef_powf(2.0f, 200.0f) == INFINITY && sleef_powf(2.0f, -200.0f) == 0.0f);
    ck_assert(sleef_powf(0.5f, INFINITY) == 0.0f && sleef_powf(-1.0f, INFINITY) == 1.0f);
}
END_TEST

// --- layers for the tests ----------------------------------------------------------------

static LlamaConfig small_config(int heads, int kv_heads, RopeLayout layout) {
    return (LlamaConfig){32, 88, heads, kv_heads, 10000, 1e-6, layout};
}

static LlamaDecoderLayer layer_for(uint64_t seed, const LlamaConfig *config) {
    manual_seed(seed);
    return LlamaDecoderLayer_init(config);
}

// --- RMSNorm --------------------------------------------------------------------------------

// A constant row c: its mean of squares is c^2, so every output is c / sqrt(c^2 + 1e-6)
// times the weight: its sign (to 1e-5) when c^2 is far above eps, c / sqrt(2e-6) = 0.7071
// at c = 1e-3. LayerNorm would give 0 for every one of them.
START_TEST(test_rms_norm_of_a_constant_row) {
    LlamaRMSNorm norm = {ones(shape1(40)), 1e-6};
    const float values[5] = {0.5f, -3.0f, 100.0f, 1e-3f, -1e-3f};
    const double near[5] = {1.0, -1.0, 1.0, 0.70710678, -0.70710678};
    for (int i = 0; i < 5; i++) {
        double c = values[i], expected = c / sqrt(c * c + 1e-6);
        const Tensor *y = LlamaRMSNorm_forward(&norm, full(shape2(2, 40), values[i]));
        for (long j = 0; j < numel(y); j++) {
            ck_assert_msg(fabs(y->data[j] - expected) < 1e-6 && fabs(y->data[j] - near[i]) < 1e-5,
                          "c = %g: y[%ld] = %.9g", c, j, (double)y->data[j]);
            ck_assert(y->data[j] == y->data[0]);
        }
    }
}
END_TEST

// By hand: x = [3, 4] has mean of squares 12.5, so y = x / sqrt(12.5 + 1e-6) * weight,
// weight [1, 2]: [0.848528, 2.262742]. And no mean is taken out: [3, 4] and [-3, -4] give
// opposite rows.
START_TEST(test_rms_norm_by_hand) {
    LlamaRMSNorm norm = {tensor_from(shape1(2), (const float[]){1, 2}), 1e-6};
    const Tensor *y = LlamaRMSNorm_forward(&norm, tensor_from(shape1(2), (const float[]){3, 4}));
    double r = 1.0 / sqrt(12.5 + 1e-6);
    ck_assert(fabs(y->data[0] - 3 * r) < 1e-6 && fabs(y->data[1] - 8 * r) < 1e-6);
    const Tensor *minus =
        LlamaRMSNorm_forward(&norm, tensor_from(shape1(2), (const float[]){-3, -4}));
    ck_assert(minus->data[0] == -y->data[0] && minus->data[1] == -y->data[1]);
}
END_TEST

// --- RoPE ------------------------------------------------------------------------------------

// Position 0 turns nothing (cos 0 = 1, sin 0 = 0: bit for bit the input); every position
// keeps each pair's length (to rounding); theta_0 = 1, theta_(D/2-1) = base^(-(D-2)/D).
START_TEST(test_rope_turns_pairs) {
    const RopeLayout layouts[2] = {ROTATE_HALF, INTERLEAVED};
    for (int l = 0; l < 2; l++) {
        LlamaRotaryEmbedding rotary = LlamaRotaryEmbedding_init(16, 10000, layouts[l]);
        ck_assert(rotary.inv_freq->data[0] == 1.0f);
        ck_assert(fabs(rotary.inv_freq->data[7] - pow(10000.0, -14.0 / 16)) < 1e-9);
        manual_seed(40 + l);
        const Tensor *v = randn(shape1(16));                                  // (D,)
        assert_bitwise_equal(rope_vector(&rotary, v, 0), v, "position 0");
        for (int position = 1; position < 3000; position = position * 3 + 1) {
            const Tensor *turned = rope_vector(&rotary, v, position);
            for (int i = 0; i < 8; i++) {
                int a = layouts[l] == ROTATE_HALF ? i : 2 * i;
                int e = layouts[l] == ROTATE_HALF ? i + 8 : 2 * i + 1;
                double before = hypot(v->data[a], v->data[e]);
                double after = hypot(*at1(turned, a), *at1(turned, e));
                ck_assert_msg(fabs(after - before) < 1e-6 * (1 + before),
                              "layout %d, position %d, pair %d: length %g -> %g", l, position, i,
                              before, after);
            }
        }
    }
}
END_TEST

// The relative property: turning q to m and k to n gives the score of m + shift and
// n + shift, for shifts up to 1000 (within the rounding of the angles, which grows with
// the position: 2e-5 here), and another score when the distance changes.
START_TEST(test_scores_depend_on_distance_only) {
    const RopeLayout layouts[2] = {ROTATE_HALF, INTERLEAVED};
    const int bases[2] = {10000, 500000};
    for (int l = 0; l < 2; l++) {
        LlamaRotaryEmbedding rotary = LlamaRotaryEmbedding_init(32, bases[l], layouts[l]);
        manual_seed(50 + l);
        const Tensor *q = randn(shape1(32)), *k = randn(shape1(32));        // (D,) each
        const int pairs[4][2] = {{5, 0}, {0, 5}, {7, 7}, {3, 10}};
        for (int p = 0; p < 4; p++) {
            int m = pairs[p][0], n = pairs[p][1];
            float at = score(rope_vector(&rotary, q, m), rope_vector(&rotary, k, n));
            const int shifts[4] = {1, 17, 100, 1000};
            for (int s = 0; s < 4; s++) {
                float shifted = score(rope_vector(&rotary, q, m + shifts[s]),
                                      rope_vector(&rotary, k, n + shifts[s]));
                ck_assert_msg(fabsf(shifted - at) < 2e-5f, "layout %d, m %d, n %d, shift %d: "
                              "%.7f against %.7f", l, m, n, shifts[s], (double)shifted,
                              (double)at);
            }
            float other = score(rope_vector(&rotary, q, m + 1), rope_vector(&rotary, k, n));
            ck_assert_msg(fabsf(other - at) > 1e-3f, "distance %d and %d score alike", m - n,
                          m + 1 - n);
        }
    }
}
END_TEST

// The two layouts: the same weights give other outputs; q_proj and k_proj rows permuted
// head by head give the other layout's rotated queries and keys, permuted, bit for bit,
// and the same output to rounding (the dot products add in another order).
START_TEST(test_layouts_equal_after_the_permutation) {
    const RopeLayout layouts[2] = {ROTATE_HALF, INTERLEAVED};
    for (int l = 0; l < 2; l++) {
        LlamaConfig config = small_config(4, 2, layouts[l]);
        LlamaDecoderLayer layer = layer_for(60 + l, &config);
        const Tensor *x = randn(shape3(2, 5, 32));                            // (B, N, C)
        LlamaDecoderLayerSteps mine, theirs;
        const Tensor *out = LlamaDecoderLayer_forward(&mine, &layer, x, 0, NULL);
        LlamaDecoderLayer twin = layer;
        twin.self_attn.rotary_emb.layout = layouts[1 - l];
        ck_assert(max_abs_diff(LlamaDecoderLayer_forward(NULL, &twin, x, 0, NULL), out) > 1e-3f);
        const int *rows = other_rows(8, layouts[l]);
        twin.self_attn.q_proj = permuted(&layer.self_attn.q_proj, rows, 8);
        twin.self_attn.k_proj = permuted(&layer.self_attn.k_proj, rows, 8);
        const Tensor *twin_out = LlamaDecoderLayer_forward(&theirs, &twin, x, 0, NULL);
        const Tensor *pairs[2][2] = {{mine.attn.query_states, theirs.attn.query_states},
                                     {mine.attn.key_states, theirs.attn.key_states}};
        for (int p = 0; p < 2; p++) {
            const Tensor *a = pairs[p][0], *b = pairs[p][1];
            for (long r = 0; r < numel(a) / 8; r++) {
                for (int j = 0; j < 8; j++) {
                    ck_assert_msg(a->data[r * 8 + rows[j]] == b->data[r * 8 + j],
                                  "layout %d: %s row %ld, %d", l, p == 0 ? "query" : "key", r, j);
                }
            }
        }
        assert_close(twin_out, out, 1e-6f, 1e-5f, "the permuted layer's output");
    }
}
END_TEST

// Meta's permute (convert_llama_weights_to_hf.py) for head_dim 8 takes Meta's rows
// [0, 1, 2, 3, 4, 5, 6, 7] to [0, 2, 4, 6, 1, 3, 5, 7]; from Hugging Face's back, the inverse.
START_TEST(test_the_permutation) {
    const int *to_hf = other_rows(8, INTERLEAVED), *to_meta = other_rows(8, ROTATE_HALF);
    const int hf[8] = {0, 2, 4, 6, 1, 3, 5, 7}, meta[8] = {0, 4, 1, 5, 2, 6, 3, 7};
    for (int j = 0; j < 8; j++) {
        ck_assert_int_eq(to_hf[j], hf[j]);
        ck_assert_int_eq(to_meta[j], meta[j]);
        ck_assert_int_eq(to_hf[to_meta[j]], j);
    }
}
END_TEST

// --- attention, the cache, the bugs ------------------------------------------------------

// Causal weights; and GQA by index equals attention over keys repeated to every head
// (repeat_kv's copy), bit for bit; with kv_heads == heads it is multi-head attention.
START_TEST(test_gqa_by_index_equals_repeat_kv) {
    manual_seed(70);
    const Tensor *query = randn(shape4(2, 4, 5, 8));                         // (B, H, T, D)
    const int kv_heads[3] = {1, 2, 4};
    for (int i = 0; i < 3; i++) {
        int KV = kv_heads[i], R = 4 / KV;
        const Tensor *keys = randn(shape4(2, KV, 5, 8)), *values = randn(shape4(2, KV, 5, 8));
        Shape every_head = shape4(2, 4, 5, 8);
        const Tensor *k_rep = reshape(expand(unsqueeze(keys, 2), shape5(-1, -1, R, -1, -1)),
                                      every_head);                             // (B, H, L, D)
        const Tensor *v_rep = reshape(expand(unsqueeze(values, 2), shape5(-1, -1, R, -1, -1)),
                                      every_head);                             // (B, H, L, D)
        Tensor *scores, *weights, *scores_rep, *weights_rep;
        const Tensor *out = attend(&scores, &weights, query, keys, values, 0);
        const Tensor *out_rep = attend(&scores_rep, &weights_rep, query, k_rep, v_rep, 0);
        assert_bitwise_equal(out, out_rep, path_join("kv_heads %d", KV));
        check_causal_weights(weights, 0, path_join("kv_heads %d", KV));
    }
}
END_TEST

// The prompt in one call and the rest a token per call, with the cache, gives the full
// forward's output bit for bit (each row is computed by the same loops either way): every
// split, both layouts, kv_heads 1, 2 and 4, batch 2. The cache holds the full forward's
// turned keys and values.
START_TEST(test_cached_decode_equals_full_forward) {
    const int kv_heads[3] = {1, 2, 4};
    int checked = 0;
    for (int l = 0; l < 2; l++) {
        for (int i = 0; i < 3; i++) {
            LlamaConfig config = small_config(4, kv_heads[i], l == 0 ? ROTATE_HALF : INTERLEAVED);
            LlamaDecoderLayer layer = layer_for((uint64_t)(80 + 3 * l + i), &config);
            const int N = 6;
            const Tensor *x = randn(shape3(2, N, 32));                        // (B, N, C)
            LlamaDecoderLayerSteps full;
            const Tensor *out = LlamaDecoderLayer_forward(&full, &layer, x, 0, NULL);
            for (int P = 1; P <= N; P++) {
                KVCache cache = KVCache_init(2, kv_heads[i], N, 8);
                const Tensor *outs[6];
                outs[0] = LlamaDecoderLayer_forward(NULL, &layer, narrow(x, 1, 0, P), 0, &cache);
                for (int t = P; t < N; t++) {
                    outs[t - P + 1] = LlamaDecoderLayer_forward(NULL, &layer, narrow(x, 1, t, 1),
                                                                t, &cache);
                }
                assert_bitwise_equal(cat(outs, N - P + 1, 1), out,
                                     path_join("layout %d, kv_heads %d, prompt %d", l,
                                               kv_heads[i], P));
                assert_bitwise_equal(narrow(cache.key_cache, 2, 0, N), full.attn.key_states,
                                     "the cached keys");
                checked += 1;
            }
        }
    }
    ck_assert_int_eq(checked, 2 * 3 * 6);
}
END_TEST

// Restarting position_ids at 0 in every call (the query and the new key at position 0)
// changes the decoded outputs; the right calls do not; and turning cached keys again gives
// other scores than the right ones, except for key 0 (turned by 0, twice).
START_TEST(test_the_two_bugs_change_the_scores) {
    LlamaConfig config = small_config(4, 2, ROTATE_HALF);
    LlamaDecoderLayer layer = layer_for(90, &config);
    const Tensor *x = randn(shape3(1, 5, 32));                                // (B, N, C)
    LlamaDecoderLayerSteps full;
    const Tensor *out = LlamaDecoderLayer_forward(&full, &layer, x, 0, NULL);
    KVCache cache = KVCache_init(1, 2, 5, 8);
    LlamaDecoderLayer_forward(NULL, &layer, narrow(x, 1, 0, 2), 0, &cache);
    const Tensor *wrong = NULL;
    for (int t = 2; t < 5; t++) {
        wrong = LlamaDecoderLayer_forward(NULL, &layer, narrow(x, 1, t, 1), 0, &cache);
    }
    ck_assert(max_abs_diff(wrong, narrow(out, 1, 4, 1)) > 1e-3f);
    const Tensor *q = first(narrow(full.attn.query_states, 2, 4, 1), 8);      // (D,)
    for (int s = 0; s < 5; s++) {
        const Tensor *k_s = first(narrow(full.attn.key_states, 2, s, 1), 8);  // (D,)
        float right = score(q, k_s), again = score(q, rope_vector(&layer.self_attn.rotary_emb,
                                                                  k_s, s));
        ck_assert(fabsf(right - *at4(full.attn.scores, 0, 0, 4, s)) < 1e-6f);
        ck_assert_msg(s == 0 ? right == again : fabsf(right - again) > 1e-4f, "key %d", s);
    }
}
END_TEST

// --- flags and the diagram ----------------------------------------------------------------

START_TEST(test_bad_flags) {
    static const BadFlags cases[] = {
        {{"--dim", "12", "--heads", "4", NULL}, "head_dim 3 is odd"},
        {{"--kv-heads", "3", NULL}, "--kv-heads 3 does not divide --heads 4"},
        {{"--heads", "3", NULL}, "--heads 3 does not divide --dim 64"},
        {{"--rope-layout", "complex", NULL}, "--rope-layout"},
        {{"--rope-base", "1", NULL}, "--rope-base"},
        {{"--new", "-1", NULL}, "--new"},
        {{"--prompt", "0", NULL}, "--prompt"},
        {{"--hidden", "-4", NULL}, "--hidden"},
        {{"--batch", "64", "--prompt", "4000", "--heads", "8", NULL}, "attn_weights"},
        {{"--dim", "16384", "--heads", "2", NULL}, "mlp.gate_proj.weight"},
    };
    check_bad_flags(LESSON_DIR, "lesson-15", cases, sizeof cases / sizeof cases[0]);
}
END_TEST

START_TEST(test_help_and_graph) {
    RunResult r = run_program(lesson_binary(LESSON_DIR), (const char *const[]){"--help", NULL});
    ck_assert_int_eq(r.status, 0);
    const char *flags[] = {"--prompt", "--new", "--kv-heads", "--hidden", "--rope-base",
                           "--rope-layout"};
    for (int i = 0; i < 6; i++) {
        ck_assert_msg(strstr(r.out, flags[i]) != NULL, "--help does not list %s", flags[i]);
    }
    int nodes;
    const char *graph = lesson_graph(LESSON_DIR, NULL, &nodes);
    ck_assert_msg(nodes <= 40, "%d nodes", nodes);
    ck_assert(strstr(graph, "apply_rotary_pos_emb") != NULL && strstr(graph, "silu") != NULL);
}
END_TEST

// Every line of every run fits 100 columns.
START_TEST(test_lines_fit_100_columns) {
    const char *const runs[3][12] = {
        {NULL},
        {"--rope-layout", "interleaved", "--rope-base", "123456", "--heads", "32", "--dim", "256"},
        {"--prompt", "100", "--new", "12", "--batch", "2", "--kv-heads", "1", NULL},
    };
    for (int i = 0; i < 3; i++) {
        RunResult r = run_program(lesson_binary(LESSON_DIR), runs[i]);
        ck_assert_int_eq(r.status, 0);
        const char *cursor = r.out;
        for (const char *line = next_line(&cursor); line != NULL; line = next_line(&cursor)) {
            ck_assert_msg(strlen(line) <= 100, "run %d: %zu columns: %s", i, strlen(line), line);
        }
    }
}
END_TEST

// --- what a run may take (common/lesson/budget.h; harness.h: add_budget_tests) -----------

// Refused by the budget before anything runs, in one line that names the flags, the budget
// and how to raise it.
static const BudgetRefusal REFUSED[] = {
    // A Llama layer at a small model's width.
    {{"--batch", "8", "--prompt", "512", "--dim", "2048", "--heads", "16", "--kv-heads", "4",
      NULL},
     "lesson-15: --batch 8 --prompt 512 --dim 2048 --heads 16 --kv-heads 4 would hold about 2.2 "
     "GiB at once, more than the 512 MiB allowed; choose smaller sizes, or allow it with "
     "ATTN_MAX_MIB=2300", NULL},
    // One head as wide as the model: its k_proj and v_proj (C, C) were left out of the
    // count, which admitted this at 511.7 MiB; it held 597.
    {{"--heads", "1", "--kv-heads", "1", "--prompt", "1", "--new", "1", "--dim", "3338", NULL},
     "lesson-15: --dim 3338 would hold about 597 MiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=600", NULL},
};

// Sizes where the tensors that grow with the flags are most of what a run holds, each
// flag raised in one of them, and the switches that add tensors on: what a run holds is
// its prediction (make test runs the first, make test-long all).
static const SizedRun SIZED[] = {
    {{"--batch", "2", "--prompt", "256", "--new", "16", "--dim", "64", "--heads", "4",
      "--kv-heads", "2", "--hidden", "256", NULL}},
    {{"--batch", "2", "--prompt", "64", "--new", "8", "--dim", "256", "--heads", "8", "--kv-heads",
      "1", "--rope-layout", "interleaved", "--dump", "", NULL}},
    // One head as wide as the model, k_proj and v_proj as big as q_proj and o_proj.
    {{"--heads", "1", "--kv-heads", "1", "--prompt", "1", "--new", "1", "--dim", "1024", NULL}},
};

static const LessonBudget BUDGET = {
    "15-llama-block", lesson_main, REFUSED, sizeof REFUSED / sizeof REFUSED[0], SIZED,
    sizeof SIZED / sizeof SIZED[0], NULL, 0,
};

static Suite *lesson15_suite(void) {
    Suite *suite = suite_create("lesson15");
    TCase *pytorch = new_tcase("pytorch");
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, recorded_case_count(REF_DIR));
    tcase_add_test(pytorch, test_same_line_to_last_digit);
    tcase_add_test(pytorch, test_silu_bit_for_bit);
    tcase_add_test(pytorch, test_inv_freq_bit_for_bit);
    tcase_add_test(pytorch, test_sleef_powf);
    suite_add_tcase(suite, pytorch);
    TCase *invariants = new_tcase("invariants");
    tcase_add_test(invariants, test_rms_norm_of_a_constant_row);
    tcase_add_test(invariants, test_rms_norm_by_hand);
    tcase_add_test(invariants, test_rope_turns_pairs);
    tcase_add_test(invariants, test_scores_depend_on_distance_only);
    tcase_add_test(invariants, test_layouts_equal_after_the_permutation);
    tcase_add_test(invariants, test_the_permutation);
    tcase_add_test(invariants, test_gqa_by_index_equals_repeat_kv);
    tcase_add_test(invariants, test_cached_decode_equals_full_forward);
    tcase_add_test(invariants, test_the_two_bugs_change_the_scores);
    suite_add_tcase(suite, invariants);
    TCase *flags = new_tcase("flags");
    tcase_add_test(flags, test_bad_flags);
    tcase_add_test(flags, test_help_and_graph);
    tcase_add_test(flags, test_lines_fit_100_columns);
    suite_add_tcase(suite, flags);
    add_budget_tests(suite, &BUDGET);
    return suite;
}

int main(void) { return run_suite(lesson15_suite()); }
