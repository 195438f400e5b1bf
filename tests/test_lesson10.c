// test_lesson10.c - lesson 10 (kv-cache: the GQA notebook's GQA_W_KVcache, fixed).
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

#include "family_gqa.h"
#include "harness.h"
#include "line_width.h"

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

// A recorded PyTorch run (REF_DIR/cases.txt lists them), with the sizes
// the tests use.
typedef struct {
    const char *dir;   // tests/data/lesson10/<case>: what PyTorch wrote
    int batch, prompt, new_tokens, dim, heads, kv_heads;
    const RecordedCase *recorded;   // its line of cases.txt: its flags
} Case;

static const Case *case_of(const RecordedCase *r) {
    Case *c = arena_alloc(1, sizeof *c);
    *c = (Case){.dir = r->reference,
                .batch = (int)case_int(r, "batch"),
                .prompt = (int)case_int(r, "prompt"),
                .new_tokens = (int)case_int(r, "new"),
                .dim = (int)case_int(r, "dim"),
                .heads = (int)case_int(r, "heads"),
                .kv_heads = (int)case_int(r, "kv_heads"),
                .recorded = r};
    return c;
}

// The command lines this lesson refuses besides those of the module
// (check_gqa_bad_flags in family_gqa.h runs both).
static const BadFlags BAD_FLAGS[] = {
    {{"--prompt", "0", NULL}, "--prompt"},
    {{"--new", "-4", NULL}, "--new"},
    {{"--new", NULL}, "--new"},
    {{"--batch", "two", NULL}, "--batch"},
    {{"--train", NULL}, "--train"},                       // no dropout while generating
    {{"--prompt", "30000", "--new", "30000", NULL}, "full_attn"},
    {{"--batch", "65536", NULL}, "x (batch, prompt+new, dim)"},   // 65536*8*512 = 2^28
    // The probe of issue 9: batch * heads overflowed an int and the
    // message blamed --heads; full_attn (batch, heads, 8, 8) is 2^37.
    {{"--batch", "32768", "--heads", "65536", "--dim", "65536", NULL}, "full_attn"},
    // check_bad_flags adds --dump: the bench's own model would overwrite it
    {{"--bench", NULL}, "--bench runs its own larger model"},
};
enum { N_BAD_FLAGS = sizeof BAD_FLAGS / sizeof BAD_FLAGS[0] };

static const char *const EXACT[] = {
    "w_query.weight", "w_query.bias", "w_key.weight", "w_key.bias", "w_value.weight",
    "w_value.bias", "o_proj.weight", "o_proj.bias", "x", NULL,
};
static const char *const COMPUTED[] = {"full_out", "cached_out", "k_cache", "v_cache", NULL};

static GQA_W_KVcache recorded_gqa(const Case *c) {
    GQA_W_KVcache gqa;
    memset(&gqa, 0, sizeof gqa);
    gqa.num_heads = c->heads;
    gqa.head_dim = c->dim / c->heads;
    gqa.num_groups = c->kv_heads;
    recorded_gqa_linears((Linear *const[]){&gqa.w_query, &gqa.w_key, &gqa.w_value, &gqa.o_proj},
                         c->dir);
    return gqa;
}

// The two forwards of the lesson: the notebook's, which copies the cache
// into every query head, and the one that reads key/value head h / R by index.
typedef enum { COPYING, BY_INDEX } Forward;

static Tensor *step_with(Forward forward, GQA_W_KVcacheSteps *steps, GQA_W_KVcache *gqa,
                         const Tensor *x, int from, int count) {
    return forward == BY_INDEX ? step_by_index(steps, gqa, x, from, count)    // (B, count, C)
                               : step(steps, gqa, x, from, count);
}

// Decode x (B, N, C): prefill `prompt` tokens, then chunks of `chunk`
// tokens; returns the outputs (B, N, C) joined, the cache left in gqa.
static Tensor *decode(GQA_W_KVcache *gqa, const Tensor *x, int prompt, int chunk,
                      Forward forward) {
    int B = size(x, 0), N = size(x, 1);
    GQA_W_KVcache_start_cache(gqa, B, N);
    const Tensor *outs[64];
    int n_outs = 0;
    outs[n_outs++] = step_with(forward, NULL, gqa, x, 0, prompt);             // (B, P, C)
    for (int t = prompt; t < N; t += chunk) {
        int count = N - t < chunk ? N - t : chunk;
        outs[n_outs++] = step_with(forward, NULL, gqa, x, t, count);          // (B, count, C)
    }
    return cat(outs, n_outs, 1);                                              // (B, N, C)
}

// --- against PyTorch --------------------------------------------------------------------

START_TEST(test_matches_pytorch) {
    const Case *c = case_of(recorded_case(REF_DIR, _i));
    ReferenceRun recorded = {
        .lesson = LESSON_DIR,
        .exact = EXACT,
        .computed = COMPUTED,
        .atol = ATOL,
        .rtol = RTOL,
    };
    check_recorded_case(recorded, c->recorded);
    // The caches: (batch, prompt + new, kv_heads, head_dim). The dumped
    // k_cache has the recorded one's shape (assert_close checks shapes),
    // so checking the recorded shape checks the dumped one too.
    const Tensor *k_cache = load_reference(c->dir, "k_cache");
    ck_assert_int_eq(k_cache->shape.ndim, 4);
    ck_assert_int_eq(size(k_cache, 0), c->batch);
    ck_assert_int_eq(size(k_cache, 1), c->prompt + c->new_tokens);
    ck_assert_int_eq(size(k_cache, 2), c->kv_heads);
    ck_assert_int_eq(size(k_cache, 3), c->dim / c->heads);
}
END_TEST

// The module alone on PyTorch's recorded x and weights: full forward,
// token-by-token decoding and the final cache.
START_TEST(test_decoding_on_recorded_weights) {
    const Case *c = case_of(recorded_case(REF_DIR, _i));
    GQA_W_KVcache gqa = recorded_gqa(c);
    const Tensor *x = load_reference(c->dir, "x");                             // (B, N, C)
    const Tensor *full_out = step(NULL, &gqa, x, 0, c->prompt + c->new_tokens);   // (B, N, C)
    assert_close(full_out, load_reference(c->dir, "full_out"), ATOL, RTOL,
                 path_join("%s full", c->dir));
    const Tensor *cached_out = decode(&gqa, x, c->prompt, 1, COPYING);        // (B, N, C)
    assert_close(cached_out, load_reference(c->dir, "cached_out"), ATOL, RTOL,
                 path_join("%s cached", c->dir));
    assert_close(gqa.k_cache, load_reference(c->dir, "k_cache"), ATOL, RTOL,
                 path_join("%s k", c->dir));
    assert_close(gqa.v_cache, load_reference(c->dir, "v_cache"), ATOL, RTOL,
                 path_join("%s v", c->dir));
}
END_TEST

// --- the cache against the full causal forward ---------------------------------------

// Every combination of batch 1 and 2, kv_heads 1 (MQA), 2 and heads (MHA),
// prompt 1 and several, chunks of 1, 2 and 3 new tokens, both forwards:
// each output row equals the full causal forward's row, and the cache
// holds kv_heads heads (not heads), each position the key that w_key gives
// for that token alone.
START_TEST(test_cached_equals_full_everywhere) {
    const int dim = 16, heads = 4, N = 7;
    const int batches[] = {1, 2}, kv_heads[] = {1, 2, 4};
    const int prompts[] = {1, 4}, chunks[] = {1, 2, 3};
    int checked = 0;
    for (int bi = 0; bi < 2; bi++) {
        for (int ki = 0; ki < 3; ki++) {
            manual_seed((uint64_t)(10 + bi * 3 + ki));
            GQA_W_KVcache gqa = GQA_W_KVcache_init(dim, heads, kv_heads[ki]);
            gqa.training = false;
            const Tensor *x = randn(shape3(batches[bi], N, dim));             // (B, N, C)
            const Tensor *full = step(NULL, &gqa, x, 0, N);                   // (B, N, C)
            // The keys each token gives alone, as the cache must hold them.
            Shape kv_shape = shape4(batches[bi], N, kv_heads[ki], dim / heads);
            const Tensor *keys = view(linear(&gqa.w_key, x), kv_shape);       // (B, N, KV, D)
            for (int pi = 0; pi < 2; pi++) {
                for (int ci = 0; ci < 3; ci++) {
                    for (Forward forward = COPYING; forward <= BY_INDEX; forward++) {
                        const char *what = path_join(
                            "batch %d kv_heads %d prompt %d chunk %d %s", batches[bi],
                            kv_heads[ki], prompts[pi], chunks[ci],
                            forward == BY_INDEX ? "by index" : "copying");
                        const Tensor *cached = decode(&gqa, x, prompts[pi], chunks[ci],
                                                      forward);               // (B, N, C)
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
// column cache_len + t and sums to 1 up to it, in both forwards.
START_TEST(test_offset_mask_in_the_weights) {
    const int dim = 16, heads = 4, N = 9;
    manual_seed(21);
    GQA_W_KVcache gqa = GQA_W_KVcache_init(dim, heads, 2);
    gqa.training = false;
    const Tensor *x = randn(shape3(2, N, dim));                               // (B, N, C)
    int starts[] = {0, 2, 5}, counts[] = {2, 3, 4};
    for (Forward forward = COPYING; forward <= BY_INDEX; forward++) {
        GQA_W_KVcache_start_cache(&gqa, 2, N);
        for (int c = 0; c < 3; c++) {
            int cache_len = gqa.cache_len;
            ck_assert_int_eq(cache_len, starts[c]);
            GQA_W_KVcacheSteps steps;
            step_with(forward, &steps, &gqa, x, starts[c], counts[c]);
            ck_assert_int_eq(size(steps.attn, 2), counts[c]);
            ck_assert_int_eq(size(steps.attn, 3), cache_len + counts[c]);
            check_causal_weights(steps.attn, cache_len,
                                 path_join("%s, chunk %d", forward == BY_INDEX ? "by index"
                                                                               : "copying", c));
        }
    }
}
END_TEST

// The notebook's cache (stored once, never updated) is right for the first
// decoded token and wrong from the second on.
START_TEST(test_the_notebooks_frozen_cache_is_wrong) {
    const Case *c = case_of(recorded_case_named(REF_DIR, "seed0"));
    GQA_W_KVcache gqa = recorded_gqa(c);
    const Tensor *x = load_reference(c->dir, "x");                             // (B, N, C)
    const Tensor *full_out = load_reference(c->dir, "full_out");               // (B, N, C)
    GQA_W_KVcache_start_cache(&gqa, c->batch, c->prompt + c->new_tokens);
    step(NULL, &gqa, x, 0, c->prompt);
    for (int t = c->prompt; t < c->prompt + c->new_tokens; t++) {
        gqa.cache_len = c->prompt;
        const Tensor *out = step(NULL, &gqa, x, t, 1);                        // (B, 1, C)
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
    check_prints(LESSON_DIR, (const char *const[]){NULL},
                 "MHA (kv_heads = 8):   4096 bytes a token,     32768 for these 8 "
                 "tokens,  16.00 MiB at 4096 tokens\n"
                 "GQA (kv_heads = 2):   1024 bytes a token,      8192 for these 8 "
                 "tokens,   4.00 MiB at 4096 tokens\n"
                 "MQA (kv_heads = 1):    512 bytes a token,      4096 for these 8 "
                 "tokens,   2.00 MiB at 4096 tokens\n");
}
END_TEST

// --- no copy: query head h reads cache head h / R by index -------------------------------

// Two copies of one module, one decoding with the notebook's forward, one
// reading by index, for kv_heads 1 (MQA), in between, and = heads (MHA):
// at every step (the prefill, then one token at a time) the same output
// and the same weights, to float rounding. And what the reshape copied:
// nothing for kv_heads 1 and = heads (a view), else 2*B*H*L*D floats.
START_TEST(test_by_index_equals_copying_at_every_step) {
    const int batch = 2, dim = 24, heads = 6, prompt = 3, N = 8;
    const int kv_heads[] = {1, 2, 3, 6};
    for (int ki = 0; ki < 4; ki++) {
        const int KV = kv_heads[ki], D = dim / heads;
        manual_seed((uint64_t)(30 + ki));
        GQA_W_KVcache copying = GQA_W_KVcache_init(dim, heads, KV);
        copying.training = false;
        GQA_W_KVcache by_index = copying;
        const Tensor *x = randn(shape3(batch, N, dim));                       // (B, N, C)
        GQA_W_KVcache_start_cache(&copying, batch, N);
        GQA_W_KVcache_start_cache(&by_index, batch, N);
        for (int t = 0; t < N; t = t == 0 ? prompt : t + 1) {
            int count = t == 0 ? prompt : 1;
            const char *what = path_join("kv_heads %d, position %d", KV, t);
            GQA_W_KVcacheSteps steps, steps_by_index;
            const Tensor *out = step(&steps, &copying, x, t, count);          // (B, count, C)
            const Tensor *out_by_index = step_by_index(&steps_by_index, &by_index, x, t,
                                                       count);                // (B, count, C)
            assert_close(out_by_index, out, SELF_ATOL, SELF_RTOL, path_join("%s: out", what));
            assert_close(steps_by_index.attn, steps.attn, SELF_ATOL, SELF_RTOL,
                         path_join("%s: attn", what));
            ck_assert_ptr_null(steps_by_index.key);
            int L = t + count;
            int64_t copied = KV == 1 || KV == heads ? 0 : 2 * (int64_t)batch * heads * L * D;
            ck_assert_msg(floats_copied(&steps, &copying) == copied,
                          "%s: the reshape copied %lld floats, expected %lld", what,
                          (long long)floats_copied(&steps, &copying), (long long)copied);
        }
        assert_bitwise_equal(by_index.k_cache, copying.k_cache, "the two caches");
    }
}
END_TEST

// The section's lines for the defaults, worked by hand: R = 8 / 2 = 4,
// the reshape copies 2 (K and V) * 1 * 8 * L * 64 = 1024 * L floats: 8192
// at L = 8, 4096 + 5120 + ... + 8192 = 30720 in all, 16 MiB at L = 4096.
// And for kv_heads 1, a view: nothing copied.
START_TEST(test_no_copy_lines) {
    check_prints(LESSON_DIR, (const char *const[]){NULL},
                 "by index:     query head h reads k_cache[:, :L, h // 4] and v_cache[:, :L, "
                 "h // 4]\n"
                 "prefill, L = 4: the reshape copied 4096 floats, by index none; "
                 "max |by index - copy| = 0\n"
                 "token 7, L = 8: the reshape copied 8192 floats, by index none; "
                 "max |by index - copy| = 0\n"
                 "the copy grows with the cache: 2 (K and V) * batch * heads * L * head_dim = "
                 "1024 * L floats\n"
                 "per call, 30720 floats in all here, 16.00 MiB per call and layer at L = 4096; "
                 "by index reads\n"
                 "the cache as it is\n");
    check_prints(LESSON_DIR, (const char *const[]){"--kv-heads", "1", NULL},
                 "token 7, L = 8: the reshape copied 0 floats, by index none; "
                 "max |by index - copy| = 0\n");
}
END_TEST

// --- the bench's machinery ------------------------------------------------------------

// Appending by copy (as torch.cat) and in place leave the same cache; the
// copy really moves every old position (the spare holds them afterwards).
START_TEST(test_append_by_copy_equals_in_place) {
    const int positions = 5, KV = 2, D = 3;
    Shape cache_shape = shape4(1, positions, KV, D);
    Tensor *in_place = zeros(cache_shape);                                    // (1, 5, KV, D)
    Tensor *by_copy = zeros(cache_shape), *spare = zeros(cache_shape);        // (1, 5, KV, D)
    for (int len = 0; len < positions; len++) {
        const Tensor *row = full(shape4(1, 1, KV, D), (float)(len + 1));      // (1, 1, KV, D)
        append_in_place(in_place, len, row);
        copy_like_cat(&by_copy, &spare, len);
        append_in_place(by_copy, len, row);
    }
    assert_bitwise_equal(by_copy, in_place, "copy vs in place");
    for (int t = 0; t < positions; t++) {
        ck_assert(*at4(in_place, 0, t, 1, 2) == (float)(t + 1));
    }
    // After the last copy the spare is the previous cache: 4 positions filled.
    ck_assert(*at4(spare, 0, 3, 0, 0) == 4.0f);
    ck_assert(*at4(spare, 0, 4, 0, 0) == 0.0f);
}
END_TEST

// The four ways the bench generates give the same outputs: recomputing,
// the cache in place, appended by copy, and read by index.
START_TEST(test_generations_agree) {
    const int dim = 16, heads = 4, P = 3, N = 9;
    manual_seed(40);
    GQA_W_KVcache gqa = GQA_W_KVcache_init(dim, heads, 2);
    gqa.training = false;
    const Tensor *x = randn(shape3(2, N, dim));                               // (B, N, C)
    const Tensor *full = narrow(step(NULL, &gqa, x, 0, N), 1, P, N - P);      // (B, N - P, C)
    Tensor *outs[4];
    const Generation ways[4] = {RECOMPUTE, CACHE_IN_PLACE, CACHE_BY_COPY, CACHE_BY_INDEX};
    for (int w = 0; w < 4; w++) {
        outs[w] = zeros(shape3(2, N - P, dim));                               // (B, N - P, C)
        generate(outs[w], &gqa, x, P, ways[w]);
    }
    assert_close(outs[0], full, SELF_ATOL, SELF_RTOL, "recomputed");
    for (int w = 1; w < 4; w++) {
        assert_close(outs[w], outs[0], SELF_ATOL, SELF_RTOL,
                     path_join("generation %d against recomputing", w));
    }
}
END_TEST

// --- the diagram ---------------------------------------------------------------------------

// --dot draws one decode step: the cache's storage, the step at position
// prompt (narrow(1, 4, 1)) appending to it and reading narrow(1, 0, 5) of
// it; the full forward and the concatenation as one step each. Not the
// prefill, not the later steps.
START_TEST(test_diagram_is_one_decode_step) {
    int nodes = 0;
    const char *graph = lesson_graph(LESSON_DIR, NULL, &nodes);
    ck_assert_msg(nodes <= 45, "the diagram has %d nodes", nodes);
    int appends = 0;
    for (const char *c = strstr(graph, "append (in place)"); c != NULL;
         c = strstr(c + 1, "append (in place)")) {
        appends += 1;
    }
    ck_assert_int_eq(appends, 2);   // this step's key and value
    const char *present[] = {"narrow(1, 4, 1)", "narrow(1, 0, 5)", "triu(5)", "full_out",
                             "cached_out", "k_cache\\n(1, 8, 2, 64)", "v_cache\\n(1, 8, 2, 64)",
                             "gqa(x, x, x): no cache"};
    for (int i = 0; i < 8; i++) {
        ck_assert_msg(strstr(graph, present[i]) != NULL, "the diagram lacks '%s'", present[i]);
    }
    const char *absent[] = {"narrow(1, 0, 4)", "narrow(1, 5, 1)", "narrow(1, 0, 6)", "triu(1)"};
    for (int i = 0; i < 4; i++) {
        ck_assert_msg(strstr(graph, absent[i]) == NULL, "the diagram has '%s'", absent[i]);
    }
}
END_TEST

// --- flags ---------------------------------------------------------------------------------

// Each: exit 2, nothing on stdout, exactly one line on stderr naming the
// flag (or the tensor that would not fit), and the --dump directory not made.
START_TEST(test_bad_flags) {
    check_gqa_bad_flags(LESSON_DIR, "lesson-10", BAD_FLAGS, N_BAD_FLAGS);
}
END_TEST

START_TEST(test_help_mentions_bench) {
    RunResult r = run_program(lesson_binary(LESSON_DIR), (const char *const[]){"--help", NULL});
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "--bench"));
}
END_TEST

// --bench takes the size flags given and its own defaults for the others:
// the header line names the sizes it runs. (Its timings are not checked; a
// small model keeps the run short.) Sizes its long cache cannot hold, or
// heads its default kv-heads does not divide, are refused like any others.
START_TEST(test_bench_takes_the_size_flags) {
    RunResult r = run_program(lesson_binary(LESSON_DIR),
                              (const char *const[]){"--bench", "--dim=64", "--heads", "4",
                                                    "--new=3", NULL});
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.err, "");
    ck_assert_ptr_nonnull(strstr(r.out, "-- bench: batch 1, dim 64, heads 4, kv_heads 2 (head_dim "
                                        "16), prompt 16, then 3 new tokens --\n"));
    ck_assert_ptr_nonnull(strstr(r.out, "max |copy - in place| = 0"));
    // Its lines fit 100 columns, as every run's (but the machine-readable "bench " lines;
    // the documented bench times for a minute: this short one stands in for it).
    assert_lines_fit("lesson-10 --bench --dim=64 --heads 4 --new=3", r);

    // What parse_lesson_args notes of `lesson-10 --bench` (no --dump, no --dot).
    Lesson lesson = {.program = "lesson-10", .given = (const char *[]){"--bench"}, .n_given = 1};
    Sizes n = {.batch = 2, .prompt = 4, .new_tokens = 4, .dim = 512, .heads = 8, .kv_heads = 2};
    use_bench_sizes(&lesson, &n);
    ck_assert_int_eq(n.batch, 1);
    ck_assert_int_eq(n.prompt, 16);
    ck_assert_int_eq(n.new_tokens, 100);
    ck_assert_int_eq(n.dim, 256);
    ck_assert_int_eq(n.heads, 8);
    ck_assert_int_eq(n.kv_heads, 2);
    // And of `lesson-10 --seed 3 --batch 2 --bench --dim=512`.
    lesson.given = (const char *[]){"--seed", "--batch", "--bench", "--dim"};
    lesson.n_given = 4;
    n = (Sizes){.batch = 2, .prompt = 4, .new_tokens = 4, .dim = 512, .heads = 8, .kv_heads = 2};
    use_bench_sizes(&lesson, &n);
    ck_assert_int_eq(n.batch, 2);        // given
    ck_assert_int_eq(n.dim, 512);        // given, though it is the walk-through's default
    ck_assert_int_eq(n.new_tokens, 100);

    static const BadFlags BAD[] = {
        {{"--bench", "--heads", "3", "--dim", "48", NULL},
         "--kv-heads 2 does not divide --heads 3"},
        {{"--bench", "--batch", "64", "--dim", "1024", NULL}, "the bench's long cache"},
    };
    for (int i = 0; i < 2; i++) {
        RunResult bad = run_program(lesson_binary(LESSON_DIR), BAD[i].args);
        ck_assert_int_eq(bad.status, 2);
        ck_assert_str_eq(bad.out, "");
        ck_assert_msg(strstr(bad.err, BAD[i].named) != NULL, "%s", bad.err);
    }
}
END_TEST

// The bench's repetitions: kept in order, the best the fastest, the median
// the middle one, and the spread how much slower the median was: worked by
// hand for 0.30, 0.10, 0.50, 0.12, 0.11 s (sorted 0.10 0.11 0.12 0.30 0.50).
START_TEST(test_bench_timing_keeps_best_and_median) {
    Timing t = no_repetitions();
    const double seconds[5] = {0.30, 0.10, 0.50, 0.12, 0.11};
    for (int i = 0; i < 5; i++) {
        add_repetition(&t, seconds[i]);
    }
    ck_assert_int_eq(t.count, 5);
    ck_assert(t.best == 0.10 && t.median == 0.12);
    ck_assert_msg(fabs(spread(t) - 0.2) < 1e-12, "spread %g", spread(t));
    Timing u = no_repetitions();
    add_repetition(&u, 2.0);
    add_repetition(&u, 2.5);   // two: the median is the slower one
    ck_assert(u.best == 2.0 && u.median == 2.5);
    // The ratio of two such times may be off by (1 + 0.2)(1 + 0.25) - 1 = 0.5.
    ck_assert_msg(fabs(ratio_spread(t, u) - 0.5) < 1e-12, "%g", ratio_spread(t, u));
}
END_TEST

// --- what a run may take (common/lesson/budget.h; harness.h: add_budget_tests) -----------

// Refused by the budget before anything runs, in one line that names the flags, the budget
// and how to raise it.
static const BudgetRefusal REFUSED[] = {
    // Issue 18's table, each command as the probe ran it: it took gigabytes or minutes.
    {{"--batch", "1", "--prompt", "8191", "--new", "1", "--dim", "1", "--heads", "1", "--kv-heads",
      "1", NULL},
     "lesson-10: --prompt 8191 would hold about 7.3 GiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=7500", NULL},
    {{"--batch", "16384", NULL},
     "lesson-10: --batch 16384 would hold about 8.5 GiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=8800", NULL},
    // A bench refuses what it could not finish: recomputing every step of
    // 1016 tokens, five times over, costs what a cache saves.
    {{"--bench", "--new", "1000", NULL},
     "lesson-10: --new 1000 would take about 75 minutes (estimated from the sizes), more than the "
     "60 seconds allowed; choose smaller sizes, or allow it with ATTN_MAX_SECONDS=4600", NULL},
};

// Sizes where the tensors that grow with the flags are most of what a run holds, each
// flag raised in one of them, and the switches that add tensors on: what a run holds is
// its prediction (make test runs the first, make test-long all).
static const SizedRun SIZED[] = {
    {{"--prompt", "300", "--new", "20", "--dim", "64", NULL}},
    {{"--batch", "6", "--prompt", "20", "--new", "40", "--dim", "256", "--dump", "", NULL}},
    {{"--bench", "--batch", "3", "--prompt", "4", "--new", "4", "--dim", "96", "--heads", "2",
      "--kv-heads", "2", NULL}},
};

// The budget admits the bench, at its own sizes.
static const AdmittedRun ADMITTED[] = {
    {{"--bench", NULL}, false},
};

static const LessonBudget BUDGET = {
    "10-kv-cache", lesson_main, REFUSED, sizeof REFUSED / sizeof REFUSED[0], SIZED,
    sizeof SIZED / sizeof SIZED[0], ADMITTED, sizeof ADMITTED / sizeof ADMITTED[0],
};

static Suite *lesson10_suite(void) {
    Suite *suite = suite_create("lesson10");
    TCase *pytorch = new_tcase("pytorch");
    int n_cases = recorded_case_count(REF_DIR);
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, n_cases);
    tcase_add_loop_test(pytorch, test_decoding_on_recorded_weights, 0, n_cases);
    suite_add_tcase(suite, pytorch);
    TCase *cache = new_tcase("cache");
    tcase_add_test(cache, test_cached_equals_full_everywhere);
    tcase_add_test(cache, test_offset_mask_in_the_weights);
    tcase_add_test(cache, test_the_notebooks_frozen_cache_is_wrong);
    tcase_add_test(cache, test_memory_lines);
    suite_add_tcase(suite, cache);
    TCase *no_copy = new_tcase("no copy");
    tcase_add_test(no_copy, test_by_index_equals_copying_at_every_step);
    tcase_add_test(no_copy, test_no_copy_lines);
    tcase_add_test(no_copy, test_diagram_is_one_decode_step);
    suite_add_tcase(suite, no_copy);
    TCase *bench = new_tcase("bench machinery");
    tcase_add_test(bench, test_append_by_copy_equals_in_place);
    tcase_add_test(bench, test_generations_agree);
    tcase_add_test(bench, test_bench_timing_keeps_best_and_median);
    suite_add_tcase(suite, bench);
    TCase *flags = new_tcase("flags");
    tcase_add_test(flags, test_bad_flags);
    tcase_add_test(flags, test_help_mentions_bench);
    tcase_add_test(flags, test_bench_takes_the_size_flags);
    suite_add_tcase(suite, flags);
    add_budget_tests(suite, &BUDGET);
    return suite;
}

int main(void) { return run_suite(lesson10_suite()); }
