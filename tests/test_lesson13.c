// test_lesson13.c - lesson 13 (flash-attention: online softmax and the tiled forward).
//
// Reference values in tests/data/lesson13/<case>/ were recorded from
// PyTorch 1.13 by tests/reference/gen_lesson13.py, which runs the PyTorch
// script of docs/13-flash-attention.md. The lesson source is included with
// its main() renamed, so the tests can call the tiled forward, the naive
// path and the kernels directly. No test times anything: --bench is a
// benchmark, not a test.
#define _POSIX_C_SOURCE 200809L   // the lesson's clock_gettime
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define main lesson_main
#include "../lessons/13-flash-attention/flash_attention.c"
#undef main

#define LESSON_DIR "13-flash-attention"
#define REF_DIR DATA_DIR "/lesson13"

// Against PyTorch: other summation orders (its BLAS, our kernels), another
// exp, so a few float32 roundings apart; outputs are weighted means of
// values of size 1: atol 1e-6 for the roundings near 0, rtol 1e-5 (~80 ulps).
#define ATOL 1e-6f
#define RTOL 1e-5f

// A recorded PyTorch run (REF_DIR/cases.txt lists them), with its sizes.
typedef struct {
    const char *dir;   // tests/data/lesson13/<case>
    Sizes n;
    const RecordedCase *recorded;   // its line of cases.txt: its flags
} Case;

static const Case *case_of(const RecordedCase *r) {
    Case *c = arena_alloc(1, sizeof *c);
    Sizes n = {.batch = (int)case_int(r, "batch"),
               .seq = (int)case_int(r, "seq"),
               .heads = (int)case_int(r, "heads"),
               .kv_heads = (int)case_int(r, "kv_heads"),
               .head_dim = (int)case_int(r, "head_dim"),
               .block_q = (int)case_int(r, "block_q"),
               .block_k = (int)case_int(r, "block_k"),
               .causal = case_int(r, "causal")};
    *c = (Case){.dir = r->reference, .n = n, .recorded = r};
    return c;
}

static const char *const EXACT[] = {"query", "key", "value", NULL};
static const char *const COMPUTED[] = {"out", "out_naive", NULL};

static FlashAttention flash_for(const Sizes *n, const Kernels *kernels) {
    FlashAttention flash =
        FlashAttention_init(n->heads, n->kv_heads, n->causal, n->block_q, n->block_k);
    if (kernels != NULL) {
        flash.kernels = kernels;
    }
    return flash;
}

// query (B, H, N, D), key and value (B, KV, N, D) from the generator, as
// the lesson draws them.
typedef struct {
    const Tensor *query, *key, *value;
} Inputs;

static Inputs draw_inputs(uint64_t seed, const Sizes *n) {
    manual_seed(seed);
    Shape kv_shape = shape4(n->batch, n->kv_heads, n->seq, n->head_dim);
    Inputs in;
    in.query = randn(shape4(n->batch, n->heads, n->seq, n->head_dim));
    in.key = randn(kv_shape);
    in.value = randn(kv_shape);
    return in;
}

static const Tensor *tiled(FlashAttentionSteps *steps, const Sizes *n, const Kernels *kernels,
                           const Inputs *in) {
    FlashAttention flash = flash_for(n, kernels);
    return FlashAttention_forward(steps, &flash, in->query, in->key, in->value);
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
    RunResult run = check_recorded_case(recorded, c->recorded);
    ck_assert_msg(strstr(run.out, "(within 1e-5: float rounding only)") != NULL,
                  "%s: the lesson does not report out within 1e-5 of out_naive", c->dir);
}
END_TEST

// The forward alone, in this process, on PyTorch's recorded inputs, with
// the vector kernels (where this CPU has them) and with the scalar twins.
// (Not on seed0, the largest, which the run above checks: valgrind is slow.)
START_TEST(test_forward_on_recorded_inputs) {
    const Case *c = case_of(recorded_case(REF_DIR, _i));
    Inputs in = {load_npy(path_join("%s/query.npy", c->dir)),
                 load_npy(path_join("%s/key.npy", c->dir)),
                 load_npy(path_join("%s/value.npy", c->dir))};
    const Tensor *want = load_npy(path_join("%s/out_naive.npy", c->dir));
    assert_close(tiled(NULL, &c->n, NULL, &in), want, ATOL, RTOL,
                 path_join("%s tiled, best kernels", c->dir));
    if (numel(in.query) <= 16384) {   // the scalar twins are slow under valgrind
        assert_close(tiled(NULL, &c->n, &SCALAR_KERNELS, &in), want, ATOL, RTOL,
                     path_join("%s tiled, scalar twins", c->dir));
    }
    assert_close(naive_attention(NULL, in.query, in.key, in.value, c->n.causal), want, ATOL,
                 RTOL, path_join("%s naive", c->dir));
}
END_TEST

// --- invariants -------------------------------------------------------------------------

// Tiled equals naive within 1e-5 for every pair of block sizes of a grid:
// 1, blocks that divide seq, blocks that do not, seq itself, larger than seq.
START_TEST(test_tiled_equals_naive_over_block_grid) {
    static const int blocks[] = {1, 3, 5, 16, 17, 36, 37, 4096};
    enum { N_BLOCKS = sizeof blocks / sizeof blocks[0] };
    Sizes n = {1, 37, 4, 2, 20, 0, 0, _i == 1};   // GQA, head_dim not a multiple of 16
    Inputs in = draw_inputs(11, &n);
    const Tensor *want = naive_attention(NULL, in.query, in.key, in.value, n.causal);
    for (int a = 0; a < N_BLOCKS; a++) {
        for (int b = 0; b < N_BLOCKS; b++) {
            size_t mark = arena_mark();
            n.block_q = blocks[a];
            n.block_k = blocks[b];
            assert_close(tiled(NULL, &n, NULL, &in), want, TOLERANCE, 0.0f,
                         path_join("causal %d, blocks %d x %d", n.causal, n.block_q, n.block_k));
            arena_release(mark);
        }
    }
}
END_TEST

// A query whose scores are all equal (a zero query: every score is 0) gets
// equal weights, so its output is the mean of the values it sees: all N
// of them, or values 0..t with the causal mask. Worked out here in double.
START_TEST(test_equal_scores_give_mean_of_values) {
    static const int blocks[][2] = {{64, 64}, {3, 4}, {1, 1}, {10, 3}};
    for (int causal = 0; causal < 2; causal++) {
        for (int i = 0; i < 4; i++) {
            Sizes n = {2, 10, 4, 2, 6, blocks[i][0], blocks[i][1], causal};
            Inputs in = draw_inputs(5, &n);
            in.query = zeros(shape4(n.batch, n.heads, n.seq, n.head_dim));
            const Tensor *out = tiled(NULL, &n, NULL, &in);                   // (B, H, N, D)
            Tensor *want = zeros(shape4(n.batch, n.heads, n.seq, n.head_dim));
            for (int b = 0; b < n.batch; b++) {
                for (int h = 0; h < n.heads; h++) {
                    int g = h / (n.heads / n.kv_heads);
                    for (int t = 0; t < n.seq; t++) {
                        int seen = causal ? t + 1 : n.seq;
                        for (int d = 0; d < n.head_dim; d++) {
                            double sum = 0.0;
                            for (int s = 0; s < seen; s++) {
                                sum += *at4(in.value, b, g, s, d);
                            }
                            *at4(want, b, h, t, d) = (float)(sum / seen);
                        }
                    }
                }
            }
            assert_close(out, want, 1e-6f, 1e-6f,
                         path_join("zero queries, causal %d, blocks %d x %d", causal,
                                   blocks[i][0], blocks[i][1]));
        }
    }
}
END_TEST

// The tiled path's extra memory is one allocation whose size depends on
// the blocks and head_dim only: measured at two sequence lengths, 8 times
// apart, it is the same, and the forward makes as many allocations at both
// (its output and its scratch: nothing else). The naive path's grows 64x.
START_TEST(test_extra_memory_does_not_grow_with_seq) {
    int seqs[2] = {32, 256};
    size_t tiled_bytes[2], naive_bytes[2], allocations[2];
    for (int i = 0; i < 2; i++) {
        Sizes n = {1, seqs[i], 2, 1, 16, 16, 32, i == 1};
        Inputs in = draw_inputs(3, &n);
        FlashAttention flash = flash_for(&n, NULL);
        size_t mark = arena_mark();
        FlashAttention_forward(NULL, &flash, in.query, in.key, in.value);
        allocations[i] = arena_mark() - mark;
        FlashAttentionSteps steps;
        FlashAttention_forward(&steps, &flash, in.query, in.key, in.value);
        tiled_bytes[i] = steps.scratch_bytes;
        NaiveSteps naive;
        naive_attention(&naive, in.query, in.key, in.value, false);
        naive_bytes[i] = naive.extra_bytes;
    }
    ck_assert_msg(tiled_bytes[0] == tiled_bytes[1],
                  "tiled extra memory: %zu bytes at seq %d, %zu at seq %d", tiled_bytes[0],
                  seqs[0], tiled_bytes[1], seqs[1]);
    // (D + Bk + 4) * Bq floats: a (D, Bq) query block, a (Bk, Bq) score block, 4 vectors.
    ck_assert_uint_eq(tiled_bytes[0], (16 + 32 + 4) * 16 * sizeof(float));
    ck_assert_msg(allocations[0] == allocations[1],
                  "the forward made %zu allocations at seq %d and %zu at seq %d",
                  allocations[0], seqs[0], allocations[1], seqs[1]);
    ck_assert_uint_eq(naive_bytes[1], 64 * naive_bytes[0]);
    ck_assert_uint_eq(naive_bytes[0], 3 * 2 * 32 * 32 * sizeof(float));
}
END_TEST

// The tile counts: a tile is skipped when every score in it is masked,
// full when none is, on the diagonal otherwise, checked score by score;
// and the forward counts the same tiles and the FLOPs of what it computed.
START_TEST(test_tile_kinds_and_counts) {
    static const int blocks[][2] = {{16, 16}, {8, 16}, {16, 5}, {1, 1}, {7, 64}, {64, 3}};
    int N = 64;
    for (int i = 0; i < 6; i++) {
        int Bq = blocks[i][0], Bk = blocks[i][1];
        long counts[3] = {0, 0, 0};
        double flops = 0.0;
        for (int qs = 0; qs < N; qs += Bq) {
            int nq = min_int(Bq, N - qs);
            for (int ks = 0; ks < N; ks += Bk) {
                int nk = min_int(Bk, N - ks), masked = 0, last_seen = -1;
                for (int t = qs; t < qs + nq; t++) {
                    for (int s = ks; s < ks + nk; s++) {
                        masked += s > t;
                        last_seen = s <= t && s > last_seen ? s : last_seen;
                    }
                }
                TileKind want = masked == 0 ? TILE_FULL
                                : masked == nq * nk ? TILE_SKIPPED : TILE_DIAGONAL;
                ck_assert_msg(tile_kind(true, qs, nq, ks, nk) == want,
                              "tile queries %d.., keys %d.. (blocks %d x %d)", qs, ks, Bq, Bk);
                ck_assert(tile_kind(false, qs, nq, ks, nk) == TILE_FULL);
                counts[want] += 1;
                if (want != TILE_SKIPPED) {   // computed up to the last key any query sees
                    flops += 4.0 * nq * (last_seen - ks + 1) * 2;
                }
            }
        }
        Sizes n = {1, N, 3, 3, 2, Bq, Bk, true};
        Inputs in = draw_inputs(1, &n);
        FlashAttentionSteps steps;
        tiled(&steps, &n, NULL, &in);
        for (int k = 0; k < 3; k++) {
            ck_assert_msg(steps.tiles[k] == 3 * counts[k], "blocks %d x %d: %ld tiles of kind "
                          "%d counted, expected %ld", Bq, Bk, steps.tiles[k], k, 3 * counts[k]);
        }
        ck_assert_msg(steps.flops == 3 * flops, "blocks %d x %d: %.0f FLOPs, expected %.0f", Bq,
                      Bk, steps.flops, 3 * flops);
    }
}
END_TEST

// Query N-1's walk through the key blocks ends at the two-pass m and l of
// its whole row of scores; alpha is 0 at the first block and exactly 1
// where the max did not grow.
START_TEST(test_row_steps_end_at_two_pass_m_and_l) {
    Sizes n = {1, 45, 2, 1, 8, 6, 7, _i == 1};
    Inputs in = draw_inputs(8, &n);
    FlashAttentionSteps steps;
    tiled(&steps, &n, NULL, &in);
    ck_assert_int_eq(steps.n_row_steps, (45 + 6) / 7);   // query 44 sees every key block
    double m = -INFINITY, l = 0.0;
    double x[45];
    for (int s = 0; s < 45; s++) {
        double dot = 0.0;
        for (int d = 0; d < 8; d++) {
            dot += (double)*at4(in.query, 0, 0, 44, d) * *at4(in.key, 0, 0, s, d);
        }
        x[s] = dot / sqrt(8.0);
        m = x[s] > m ? x[s] : m;
    }
    for (int s = 0; s < 45; s++) {
        l += exp(x[s] - m);
    }
    const RowStep *last = &steps.row_steps[steps.n_row_steps - 1];
    ck_assert_msg(fabs(last->m - m) < 1e-5, "m = %.7f, expected %.7f", last->m, m);
    ck_assert_msg(fabs(last->l - l) < 1e-5 * l, "l = %.7f, expected %.7f", last->l, l);
    ck_assert(steps.row_steps[0].alpha == 0.0f);
    for (int i = 1; i < steps.n_row_steps; i++) {
        const RowStep *r = &steps.row_steps[i], *before = &steps.row_steps[i - 1];
        ck_assert(r->m == (r->block_max > before->m ? r->block_max : before->m));
        ck_assert_msg((r->m == before->m) == (r->alpha == 1.0f),
                      "block %d: m %.7f -> %.7f, alpha %.7f", i, before->m, r->m, r->alpha);
    }
}
END_TEST

// A view that is not row-major (a transposed tensor) is copied first: the
// same output, and the copy is counted as extra memory.
START_TEST(test_non_contiguous_inputs) {
    Sizes n = {1, 12, 2, 2, 8, 5, 4, false};
    Inputs in = draw_inputs(2, &n);
    const Tensor *key_view = transpose(clone(transpose(in.key, 2, 3)), 2, 3);   // (B, KV, N, D)
    ck_assert(!is_contiguous(key_view));
    FlashAttention flash = flash_for(&n, NULL);
    FlashAttentionSteps in_place, copied;
    const Tensor *want = FlashAttention_forward(&in_place, &flash, in.query, in.key, in.value);
    const Tensor *got = FlashAttention_forward(&copied, &flash, in.query, key_view, in.value);
    assert_bitwise_equal(got, want, "a transposed key");
    ck_assert_uint_eq(copied.scratch_bytes,
                      in_place.scratch_bytes + (size_t)numel(in.key) * sizeof(float));
}
END_TEST

// --- the kernels ------------------------------------------------------------------------

// Every element of got is bit for bit the one of want.
static void assert_same_bits(const float *got, const float *want, int count, const char *what) {
    for (int i = 0; i < count; i++) {
        ck_assert_msg(memcmp(&got[i], &want[i], sizeof(float)) == 0,
                      "%s: element %d is %.9g, the scalar twin's %.9g", what, i, got[i],
                      want[i]);
    }
}

// The whole forward with the vector kernels equals the scalar twins bit
// for bit (where this CPU has the vector kernels; elsewhere the best
// kernels ARE the scalar twins).
START_TEST(test_scalar_twin_equals_vector_bitwise) {
    static const Sizes shapes[] = {
        {2, 29, 6, 3, 24, 7, 5, true},     // GQA, head_dim 24 = 16 + 8 scalar columns
        {1, 64, 2, 2, 64, 64, 64, false},
        {1, 13, 3, 1, 40, 1, 4, true},     // blocks of 1 query: 5 of 6 tile rows repeated
        {1, 50, 2, 2, 16, 48, 256, true},
    };
    if (kernels_vector() == NULL) {
        printf("(no AVX2+FMA here: the best kernels are the scalar twins)\n");
    }
    for (int i = 0; i < 4; i++) {
        Inputs in = draw_inputs(20 + i, &shapes[i]);
        FlashAttentionSteps vector_steps, scalar_steps;
        const Tensor *fast = tiled(&vector_steps, &shapes[i], NULL, &in);
        const Tensor *twin = tiled(&scalar_steps, &shapes[i], &SCALAR_KERNELS, &in);
        assert_bitwise_equal(fast, twin, path_join("shape %d: vector against scalar", i));
        ck_assert_int_eq(vector_steps.n_row_steps, scalar_steps.n_row_steps);
        assert_same_bits(&vector_steps.row_steps[0].l, &scalar_steps.row_steps[0].l, 1,
                         "the first l");
    }
}
END_TEST

// The tile kernel alone: every tile shape it is called with (1 to MR rows,
// NR or fewer columns, A by rows or by columns, accumulating or not).
START_TEST(test_tile_kernel_vector_equals_scalar) {
    const Kernels *vector = kernels_vector();
    if (vector == NULL) {
        return;
    }
    manual_seed(4);
    Tensor *a = randn(shape2(64, 64)), *b = randn(shape2(64, 24)), *c0 = randn(shape2(6, 24));
    static const int kcs[] = {1, 7, 64};
    for (int mr = 1; mr <= MR; mr++) {
        for (int nr = 1; nr <= NR; nr += NR - 1) {
            for (int k = 0; k < 3; k++) {
                for (int by_rows = 0; by_rows < 2; by_rows++) {
                    for (int accumulate = 0; accumulate < 2; accumulate++) {
                        float c_vector[6 * 24], c_scalar[6 * 24];
                        memcpy(c_vector, c0->data, sizeof c_vector);
                        memcpy(c_scalar, c0->data, sizeof c_scalar);
                        int a_row = by_rows ? 64 : 1, a_col = by_rows ? 1 : 64;
                        vector->tile(mr, nr, kcs[k], a->data, a_row, a_col, b->data, 24,
                                     c_vector, 24, accumulate);
                        tile_scalar(mr, nr, kcs[k], a->data, a_row, a_col, b->data, 24,
                                    c_scalar, 24, accumulate);
                        assert_same_bits(c_vector, c_scalar, 6 * 24,
                                         path_join("tile %d x %d, kc %d, by_rows %d, "
                                                   "accumulate %d", mr, nr, kcs[k], by_rows,
                                                   accumulate));
                    }
                }
            }
        }
    }
}
END_TEST

// The kernels' exp: within 1 ulp of libm's expf wherever the result is a
// normal float, 0 below that (and for -inf and NaN), and the vector exp
// equals the scalar one bit for bit.
START_TEST(test_exp) {
    enum { COUNT = 1 << 16 };
    static float x[COUNT], vector_out[COUNT], scalar_out[COUNT];
    for (int i = 0; i < COUNT - 8; i++) {
        x[i] = -87.3f + (88.3f + 87.3f) * (float)i / (COUNT - 9);
    }
    const float special[8] = {-INFINITY, NAN, 0.0f, -0.0f, EXP_LO, -87.34f, -1e-30f, -200.0f};
    memcpy(&x[COUNT - 8], special, sizeof special);
    for (int i = 0; i < COUNT; i++) {
        scalar_out[i] = flash_expf(x[i]);
        if (isfinite(x[i]) && x[i] >= EXP_LO) {
            float want = expf(x[i]);
            float ulp = nextafterf(want, INFINITY) - want;
            ck_assert_msg(fabsf(scalar_out[i] - want) <= ulp, "exp(%.9g) = %.9g, expf %.9g",
                          x[i], scalar_out[i], want);
        } else if (!(x[i] > EXP_HI)) {
            ck_assert_msg(scalar_out[i] == 0.0f, "exp(%g) = %g, expected 0", x[i],
                          scalar_out[i]);
        }
    }
    const Kernels *vector = kernels_vector();
    if (vector != NULL) {
        // exp_columns with m = 0: exp(x - 0), one row of COUNT columns.
        static float zero[COUNT], sums[COUNT];
        memcpy(vector_out, x, sizeof x);
        vector->exp_columns(vector_out, sums, zero, 1, COUNT, COUNT);
        assert_same_bits(vector_out, scalar_out, COUNT, "exp");
    }
}
END_TEST

// --- flags ------------------------------------------------------------------------------

static const BadFlags BAD_FLAGS[] = {
    {{"--block-q", "0", NULL}, "--block-q expects a whole number from 1 to 4096, got '0'"},
    {{"--block-q", "4097", NULL}, "--block-q expects a whole number from 1 to 4096"},
    {{"--block-k", "0", NULL}, "--block-k expects a whole number from 1 to 4096"},
    {{"--block-k", "100000000000", NULL}, "--block-k"},
    {{"--block-k", "-3", NULL}, "--block-k"},
    {{"--kv-heads", "3", NULL}, "--kv-heads 3 does not divide --heads 8"},
    {{"--kv-heads", "16", NULL}, "--kv-heads 16 does not divide --heads 8"},
    {{"--heads", "6", "--kv-heads", "4", NULL}, "--kv-heads 4 does not divide --heads 6"},
    {{"--seq", "0", NULL}, "--seq"},
    {{"--seq", "4096", NULL}, "the naive scores (batch, heads, seq, seq)"},
    {{"--head-dim", "65536", "--seq", "1024", NULL},
     "query (batch, heads, seq, head_dim)"},
    {{"--batch", "65536", "--heads", "65536", NULL}, "the naive scores"},   // no int overflow
    {{"--causal", "1", NULL}, "unknown flag '1'"},
    {{"--bench", NULL}, "--bench times its own sizes"},   // check_bad_flags adds --dump
    {{"--bench", "--seq", "100", NULL}, "drop"},
};
enum { N_BAD_FLAGS = sizeof BAD_FLAGS / sizeof BAD_FLAGS[0] };

START_TEST(test_bad_flags) {
    check_bad_flags(LESSON_DIR, "lesson-13", BAD_FLAGS, N_BAD_FLAGS);
}
END_TEST

START_TEST(test_bench_refuses_shape_flags) {
    static const char *const refused[] = {"--batch", "--seq", "--heads", "--kv-heads",
                                          "--head-dim"};
    for (int i = 0; i < 5; i++) {
        RunResult run = run_program(lesson_binary(LESSON_DIR),
                                    (const char *const[]){"--bench", refused[i], "2", NULL});
        ck_assert_int_eq(run.status, 2);
        ck_assert_msg(strstr(run.err, path_join("drop %s\n", refused[i])) != NULL, "%s",
                      run.err);
    }
    RunResult run = run_program(lesson_binary(LESSON_DIR),
                                (const char *const[]){"--causal", "--bench", NULL});
    ck_assert_int_eq(run.status, 2);
    ck_assert_msg(strstr(run.err, "drop --causal\n") != NULL, "%s", run.err);
}
END_TEST

START_TEST(test_help) {
    RunResult run =
        check_prints(LESSON_DIR, (const char *const[]){"--help", NULL},
                     "usage: lesson-13 [flags]\n"
                     "  --block-q N      queries per block (Bq) (default 64)\n"
                     "  --block-k N      keys per block (Bk) (default 64)\n");
    ck_assert_msg(strstr(run.out, "--bench") != NULL && strstr(run.out, "--causal") != NULL,
                  "%s", run.out);
}
END_TEST

Suite *lesson13_suite(void) {
    Suite *suite = suite_create("lesson13");
    TCase *pytorch = new_tcase("pytorch");
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, recorded_case_count(REF_DIR));
    tcase_add_loop_test(pytorch, test_forward_on_recorded_inputs, 1, recorded_case_count(REF_DIR));
    suite_add_tcase(suite, pytorch);
    TCase *invariants = new_tcase("invariants");
    tcase_add_loop_test(invariants, test_tiled_equals_naive_over_block_grid, 0, 2);
    tcase_add_test(invariants, test_equal_scores_give_mean_of_values);
    tcase_add_test(invariants, test_extra_memory_does_not_grow_with_seq);
    tcase_add_test(invariants, test_tile_kinds_and_counts);
    tcase_add_loop_test(invariants, test_row_steps_end_at_two_pass_m_and_l, 0, 2);
    tcase_add_test(invariants, test_non_contiguous_inputs);
    suite_add_tcase(suite, invariants);
    TCase *kernels = new_tcase("kernels");
    tcase_add_test(kernels, test_scalar_twin_equals_vector_bitwise);
    tcase_add_test(kernels, test_tile_kernel_vector_equals_scalar);
    tcase_add_test(kernels, test_exp);
    suite_add_tcase(suite, kernels);
    TCase *flags = new_tcase("flags");
    tcase_add_test(flags, test_bad_flags);
    tcase_add_test(flags, test_bench_refuses_shape_flags);
    tcase_add_test(flags, test_help);
    suite_add_tcase(suite, flags);
    return suite;
}

int main(void) { return run_suite(lesson13_suite()); }
