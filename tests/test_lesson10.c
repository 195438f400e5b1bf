// test_lesson10.c - lesson 10 (kv-cache: seed 001's GQA_W_KVcache, fixed).
//
// Reference values in tests/data/lesson10/<case>/ were recorded from
// PyTorch 1.13 by tests/reference/gen_lesson10.py. The lesson source is
// included with its main() renamed, so the tests can drive the module's
// cache step by step for many sizes. No test times anything: --bench is a
// lesson mode, not a test.
#define _POSIX_C_SOURCE 200809L   // the lesson's clock_gettime
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define main lesson_main
#include "../lessons/10-kv-cache/kv_cache.c"
#undef main

#define LESSON_DIR "10-kv-cache"
#define REF_DIR DATA_DIR "/lesson10"

// Against PyTorch: different summation orders (its blocked kernels, our
// plain loops), so a few float32 roundings apart; values are O(1): atol
// 1e-6 for the roundings near 0, rtol 1e-5 (~80 ulps) for the rest.
#define ATOL 1e-6f
#define RTOL 1e-5f
// Cached against full, both ours: the same products, but a decode step
// sums its row of the o_proj/attention matmuls on its own. Float rounding
// is the only difference allowed; a lost or extra key moves outputs by 1e-2.
#define SELF_ATOL 1e-6f
#define SELF_RTOL 1e-5f

// One recorded PyTorch run: keep in step with CASES in gen_lesson10.py.
typedef struct {
    const char *dir;
    int batch, prompt, new_tokens, dim, heads, kv_heads;
    const char *args[20];
} Case;

static const Case CASES[] = {
    {"seed0", 1, 4, 4, 512, 8, 2, {NULL}},
    {"seed7", 2, 3, 3, 32, 4, 2,
     {"--seed", "7", "--batch", "2", "--prompt", "3", "--new", "3", "--dim", "32", "--heads",
      "4", NULL}},
    {"seed3_tiny", 1, 2, 1, 4, 2, 1,
     {"--seed", "3", "--batch", "1", "--prompt", "2", "--new", "1", "--dim", "4", "--heads", "2",
      "--kv-heads", "1", NULL}},
    {"seed5_mha", 2, 1, 4, 16, 4, 4,
     {"--seed", "5", "--batch", "2", "--prompt", "1", "--new", "4", "--dim", "16", "--heads",
      "4", "--kv-heads", "4", NULL}},
};
enum { N_CASES = sizeof CASES / sizeof CASES[0] };

static const char *const EXACT[] = {
    "w_query.weight", "w_query.bias", "w_key.weight", "w_key.bias", "w_value.weight",
    "w_value.bias", "o_proj.weight", "o_proj.bias", "x", NULL,
};
static const char *const COMPUTED[] = {"full_out", "cached_out", "k_cache", "v_cache", NULL};

// tests/data/lesson10/<case>
static const char *reference_dir(const Case *c) {
    return path_join("%s/%s", REF_DIR, c->dir);
}

static Tensor *reference(const Case *c, const char *name) {
    return load_npy(path_join("%s/%s.npy", reference_dir(c), name));
}

static GQA_W_KVcache recorded_gqa(const Case *c) {
    GQA_W_KVcache gqa;
    memset(&gqa, 0, sizeof gqa);
    gqa.num_heads = c->heads;
    gqa.head_dim = c->dim / c->heads;
    gqa.num_groups = c->kv_heads;
    gqa.w_query = recorded_linear(reference_dir(c), "w_query");
    gqa.w_key = recorded_linear(reference_dir(c), "w_key");
    gqa.w_value = recorded_linear(reference_dir(c), "w_value");
    gqa.o_proj = recorded_linear(reference_dir(c), "o_proj");
    return gqa;
}

// Decode x (B, N, C): prefill `prompt` tokens, then chunks of `chunk`
// tokens; returns the outputs (B, N, C) joined, the cache left in gqa.
static Tensor *decode(GQA_W_KVcache *gqa, const Tensor *x, int prompt, int chunk,
                      AppendMode append) {
    int B = size(x, 0), N = size(x, 1);
    GQA_W_KVcache_start_cache(gqa, B, N, append);
    const Tensor *outs[64];
    int n_outs = 0;
    const Tensor *attn;
    outs[n_outs++] = step(gqa, &attn, x, 0, prompt);
    for (int t = prompt; t < N; t += chunk) {
        int count = N - t < chunk ? N - t : chunk;
        outs[n_outs++] = step(gqa, &attn, x, t, count);
    }
    return cat(outs, n_outs, 1);                                                   // (B, N, C)
}

// --- against PyTorch --------------------------------------------------------------------

START_TEST(test_matches_pytorch) {
    const Case *c = &CASES[_i];
    ReferenceRun recorded = {
        .lesson = LESSON_DIR,
        .reference = reference_dir(c),
        .args = c->args,
        .exact = EXACT,
        .computed = COMPUTED,
        .atol = ATOL,
        .rtol = RTOL,
    };
    check_against_reference(&recorded);
    // The caches: (batch, prompt + new, kv_heads, head_dim). The dumped
    // k_cache has the recorded one's shape (assert_close checks shapes),
    // so checking the recorded shape checks the dumped one too.
    const Tensor *k_cache = reference(c, "k_cache");
    ck_assert_int_eq(k_cache->ndim, 4);
    ck_assert_int_eq(size(k_cache, 0), c->batch);
    ck_assert_int_eq(size(k_cache, 1), c->prompt + c->new_tokens);
    ck_assert_int_eq(size(k_cache, 2), c->kv_heads);
    ck_assert_int_eq(size(k_cache, 3), c->dim / c->heads);
}
END_TEST

// The module alone on PyTorch's recorded x and weights: full forward,
// token-by-token decoding and the final cache.
START_TEST(test_forward_on_recorded_weights) {
    const Case *c = &CASES[_i];
    GQA_W_KVcache gqa = recorded_gqa(c);
    const Tensor *x = reference(c, "x");
    const Tensor *attn;
    const Tensor *full_out = step(&gqa, &attn, x, 0, c->prompt + c->new_tokens);
    assert_close(full_out, reference(c, "full_out"), ATOL, RTOL, path_join("%s full", c->dir));
    const Tensor *cached_out = decode(&gqa, x, c->prompt, 1, APPEND_IN_PLACE);
    assert_close(cached_out, reference(c, "cached_out"), ATOL, RTOL,
                 path_join("%s cached", c->dir));
    assert_close(gqa.k_cache, reference(c, "k_cache"), ATOL, RTOL, path_join("%s k", c->dir));
    assert_close(gqa.v_cache, reference(c, "v_cache"), ATOL, RTOL, path_join("%s v", c->dir));
}
END_TEST

// --- the cache against the full causal forward ---------------------------------------

// Every combination of batch 1 and 2, kv_heads 1 (MQA), 2 and heads (MHA),
// prompt 1 and several, chunks of 1, 2 and 3 new tokens, both ways of
// appending: each output row equals the full causal forward's row, and the
// cache holds kv_heads heads (not heads), each position the key that
// w_key gives for that token alone.
START_TEST(test_cached_equals_full_everywhere) {
    const int dim = 16, heads = 4, N = 7;
    const int batches[] = {1, 2}, kv_heads[] = {1, 2, 4}, prompts[] = {1, 4}, chunks[] = {1, 2, 3};
    int checked = 0;
    for (int bi = 0; bi < 2; bi++) {
        for (int ki = 0; ki < 3; ki++) {
            manual_seed((uint64_t)(10 + bi * 3 + ki));
            GQA_W_KVcache gqa = GQA_W_KVcache_init(dim, heads, kv_heads[ki]);
            gqa.training = false;
            const Tensor *x = randn(shape3(batches[bi], N, dim));                        // (B, N, C)
            const Tensor *attn;
            const Tensor *full = step(&gqa, &attn, x, 0, N);                             // (B, N, C)
            // The keys each token gives alone, as the cache must hold them.
            const Tensor *keys = view(linear(x, &gqa.w_key),
                                shape4(batches[bi], N, kv_heads[ki], dim / heads));  // (B, N, G, D)
            for (int pi = 0; pi < 2; pi++) {
                for (int ci = 0; ci < 3; ci++) {
                    for (int append = 0; append < 2; append++) {
                        const char *what = path_join(
                            "batch %d kv_heads %d prompt %d chunk %d %s", batches[bi],
                            kv_heads[ki], prompts[pi], chunks[ci],
                            append == APPEND_BY_COPY ? "copy" : "in place");
                        const Tensor *cached = decode(&gqa, x, prompts[pi], chunks[ci], append);
                        for (int t = 0; t < N; t++) {
                            assert_close(narrow(cached, 1, t, 1), narrow(full, 1, t, 1),
                                         SELF_ATOL, SELF_RTOL,
                                         path_join("%s, position %d", what, t));
                        }
                        ck_assert_int_eq(gqa.cache_len, N);
                        ck_assert_int_eq(size(gqa.k_cache, 2), kv_heads[ki]);
                        ck_assert_int_eq(size(gqa.v_cache, 2), kv_heads[ki]);
                        assert_close(gqa.k_cache, keys, SELF_ATOL, SELF_RTOL,
                                     path_join("%s, k_cache", what));
                        checked += 1;
                    }
                }
            }
        }
    }
    ck_assert_int_eq(checked, 2 * 3 * 2 * 3 * 2);
}
END_TEST

// With cache_len keys cached, new row t of the weights is exactly 0 after
// column cache_len + t and sums to 1 up to it.
START_TEST(test_offset_mask_in_the_weights) {
    const int dim = 16, heads = 4, N = 9;
    manual_seed(21);
    GQA_W_KVcache gqa = GQA_W_KVcache_init(dim, heads, 2);
    gqa.training = false;
    const Tensor *x = randn(shape3(2, N, dim));                                          // (B, N, C)
    GQA_W_KVcache_start_cache(&gqa, 2, N, APPEND_IN_PLACE);
    const Tensor *attn;                                                                  // (B, H, T, L)
    int starts[] = {0, 2, 5}, counts[] = {2, 3, 4};
    for (int c = 0; c < 3; c++) {
        int cache_len = gqa.cache_len;
        ck_assert_int_eq(cache_len, starts[c]);
        step(&gqa, &attn, x, starts[c], counts[c]);
        ck_assert_int_eq(size(attn, 2), counts[c]);
        ck_assert_int_eq(size(attn, 3), cache_len + counts[c]);
        for (int b = 0; b < 2; b++) {
            for (int h = 0; h < heads; h++) {
                for (int t = 0; t < counts[c]; t++) {
                    double sum = 0.0;
                    for (int s = 0; s < cache_len + counts[c]; s++) {
                        float w = *at4(attn, b, h, t, s);
                        if (s > cache_len + t) {
                            ck_assert_msg(w == 0.0f, "chunk %d attn[%d, %d, %d, %d] = %g", c, b,
                                          h, t, s, (double)w);
                        } else {
                            ck_assert_msg(w > 0.0f, "chunk %d attn[%d, %d, %d, %d] = 0", c, b,
                                          h, t, s);
                        }
                        sum += w;
                    }
                    ck_assert_msg(fabs(sum - 1.0) < 1e-6, "row sums to %.9f", sum);
                }
            }
        }
    }
}
END_TEST

// The notebook's cache (stored once, never updated) is right for the first
// decoded token and wrong from the second on.
START_TEST(test_the_notebooks_frozen_cache_is_wrong) {
    const Case *c = &CASES[0];
    GQA_W_KVcache gqa = recorded_gqa(c);
    const Tensor *x = reference(c, "x");
    const Tensor *full_out = reference(c, "full_out");
    GQA_W_KVcache_start_cache(&gqa, c->batch, c->prompt + c->new_tokens, APPEND_IN_PLACE);
    const Tensor *attn;
    step(&gqa, &attn, x, 0, c->prompt);
    for (int t = c->prompt; t < c->prompt + c->new_tokens; t++) {
        gqa.cache_len = c->prompt;
        const Tensor *out = step(&gqa, &attn, x, t, 1);
        float diff = diff_at(out, full_out, t);
        if (t == c->prompt) {
            ck_assert_msg(diff < 1e-5f, "token %d: %g", t, (double)diff);
        } else {
            ck_assert_msg(diff > 1e-2f, "token %d lost tokens but differs by %g only", t,
                          (double)diff);
        }
    }
}
END_TEST

// The memory lines, worked by hand for the defaults: head_dim 64, 8 tokens.
// MHA 2*8*64*4 = 4096 B/token, 32768 B, 4096 tokens = 16 MiB; GQA 1024,
// 8192, 4 MiB; MQA 512, 4096, 2 MiB.
START_TEST(test_memory_lines) {
    RunResult r = run_program(lesson_binary(LESSON_DIR), (const char *const[]){NULL});
    ck_assert_int_eq(r.status, 0);
    const char *expected =
        "MHA (kv_heads = 8):   4096 bytes per token,     32768 bytes for these 8 tokens,  "
        "16.00 MiB at 4096 tokens\n"
        "GQA (kv_heads = 2):   1024 bytes per token,      8192 bytes for these 8 tokens,   "
        "4.00 MiB at 4096 tokens\n"
        "MQA (kv_heads = 1):    512 bytes per token,      4096 bytes for these 8 tokens,   "
        "2.00 MiB at 4096 tokens\n";
    const char *missing = NULL;
    ck_assert_msg(lines_in_order(r.out, expected, &missing), "not printed: %s", missing);
}
END_TEST

// Appending by copy and in place leave the same cache; the copy really
// moves every old position (the spare buffer holds them afterwards).
START_TEST(test_append_by_copy_equals_in_place) {
    Tensor *k[2], *spare[2];
    const int positions = 5, G = 2, D = 3;
    for (int mode = 0; mode < 2; mode++) {
        k[mode] = zeros(shape4(1, positions, G, D));
        spare[mode] = zeros(shape4(1, positions, G, D));
        for (int len = 0; len < positions; len++) {
            const Tensor *row = full(shape4(1, 1, G, D), (float)(len + 1));
            append_rows(&k[mode], &spare[mode], (AppendMode)mode, len, row);
        }
    }
    assert_bitwise_equal(k[APPEND_BY_COPY], k[APPEND_IN_PLACE], "copy vs in place");
    for (int t = 0; t < positions; t++) {
        ck_assert(*at4(k[APPEND_IN_PLACE], 0, t, 1, 2) == (float)(t + 1));
    }
    // After the last copy the spare is the previous cache: 4 positions filled.
    ck_assert(*at4(spare[APPEND_BY_COPY], 0, 3, 0, 0) == 4.0f);
    ck_assert(*at4(spare[APPEND_BY_COPY], 0, 4, 0, 0) == 0.0f);
}
END_TEST

// --- flags ---------------------------------------------------------------------------------

START_TEST(test_help_mentions_bench) {
    RunResult r = run_program(lesson_binary(LESSON_DIR), (const char *const[]){"--help", NULL});
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "--bench"));
}
END_TEST

START_TEST(test_bad_flags) {
    static const BadFlags BAD[] = {
        {{"--kv-heads", "3", NULL}, "--kv-heads 3 does not divide --heads 8"},
        {{"--heads", "5", NULL}, "--heads 5 does not divide --dim 512"},
        {{"--prompt", "0", NULL}, "--prompt"},
        {{"--new", "-4", NULL}, "--new"},
        {{"--new", NULL}, "--new"},
        {{"--batch", "two", NULL}, "--batch"},
        {{"--train", NULL}, "--train"},                       // no dropout while generating
        {{"--prompt", "30000", "--new", "30000", NULL}, "full_attn"},
        // check_bad_flags adds --dump: the bench's own model would overwrite it
        {{"--bench", NULL}, "--bench runs its own larger model"},
    };
    check_bad_flags(LESSON_DIR, "lesson-10", BAD, sizeof BAD / sizeof BAD[0]);
}
END_TEST

static Suite *lesson10_suite(void) {
    Suite *suite = suite_create("lesson10");
    TCase *pytorch = new_tcase("pytorch");
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, N_CASES);
    tcase_add_loop_test(pytorch, test_forward_on_recorded_weights, 0, N_CASES);
    suite_add_tcase(suite, pytorch);
    TCase *cache = new_tcase("cache");
    tcase_add_test(cache, test_cached_equals_full_everywhere);
    tcase_add_test(cache, test_offset_mask_in_the_weights);
    tcase_add_test(cache, test_the_notebooks_frozen_cache_is_wrong);
    tcase_add_test(cache, test_memory_lines);
    tcase_add_test(cache, test_append_by_copy_equals_in_place);
    suite_add_tcase(suite, cache);
    TCase *flags = new_tcase("flags");
    tcase_add_test(flags, test_help_mentions_bench);
    tcase_add_test(flags, test_bad_flags);
    suite_add_tcase(suite, flags);
    return suite;
}

int main(void) { return run_suite(lesson10_suite()); }
