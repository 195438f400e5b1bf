// test_lesson13.c - lesson 13 (flash-attention: online softmax and the tiled forward).
//
// Reference values in tests/data/lesson13/<case>/ were recorded from
// PyTorch 1.13 by tests/reference/gen_lesson13.py, which runs the PyTorch
// script of docs/13-flash-attention.md. flash_attention.c (its main()
// renamed) and bench.c (which it calls) are included, so the tests can call
// the tiled forward and the naive path directly; kernels.c is linked from
// the lesson's own object (its tables are extern: kernels.h).
// No test times anything: --bench is a benchmark, not a test (its verdict
// on a busy machine, common/speed/timing.c's, is checked on timings given
// in tests/test_speed.c).
//
// Under valgrind (make valgrind), ATTN_KERNELS=scalar keeps every test off
// the vector kernels: valgrind 3.19 cannot run AVX-512 (make test and make
// sanitize check the vector kernels against their twins).
#define _POSIX_C_SOURCE 200809L   // the lesson's clock_gettime
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "speed/cpu.h"

#define main lesson_main
#include "../lessons/13-flash-attention/flash_attention.c"
#undef main
#include "../lessons/13-flash-attention/bench.c"

#define LESSON_DIR "13-flash-attention"
#define REF_DIR DATA_DIR "/lesson13"

// Against PyTorch: other summation orders (its BLAS, our kernels), another
// exp, so a few float32 roundings apart; outputs are weighted means of
// values of size 1: atol 1e-6 for the roundings near 0, rtol 1e-5 (~80 ulps).
#define ATOL 1e-6f
#define RTOL 1e-5f

// The sizes of a recorded PyTorch run (REF_DIR/cases.txt lists them).
static Sizes sizes_of(const RecordedCase *r) {
    return (Sizes){.batch = (int)case_int(r, "batch"),
                   .seq = (int)case_int(r, "seq"),
                   .heads = (int)case_int(r, "heads"),
                   .kv_heads = (int)case_int(r, "kv_heads"),
                   .head_dim = (int)case_int(r, "head_dim"),
                   .block_q = (int)case_int(r, "block_q"),
                   .block_k = (int)case_int(r, "block_k"),
                   .threads = 1,
                   .causal = case_int(r, "causal")};
}

static Sizes sizes(int batch, int seq, int heads, int kv_heads, int head_dim, int block_q,
                   int block_k, bool causal) {
    return (Sizes){batch, seq, heads, kv_heads, head_dim, block_q, block_k, 1, causal, "auto",
                   false};
}

static const char *const EXACT[] = {"query", "key", "value", NULL};
static const char *const COMPUTED[] = {"out", "out_naive", "lse", NULL};

// The kernel sets these tests may run: every set this CPU has that is no
// faster than kernels_best() (which ATTN_KERNELS chooses), slowest first, and
// with AVX-512 both its variants (kernels.h: avx512_variant), the one this
// core does not take last. The running test notes the others as skipped
// (tests/harness.h: note_skipped).
static int usable_kernels_in(const char *test, const Kernels **sets) {
    static const char *const names[] = {"scalar", "avx2", "avx512"};
    const char *best = kernels_best()->name;
    int n = 0;
    bool past_best = false;
    for (int i = 0; i < 3; i++) {
        const Kernels *k = kernels_named(names[i]);
        if (k != NULL && !past_best) {
            sets[n++] = k;
        } else {
            note_skipped_in(test, "%s kernels not checked: %s", names[i],
                            k == NULL ? "this CPU has none" : "ATTN_KERNELS chose slower ones");
        }
        past_best = past_best || strcmp(names[i], best) == 0;
    }
    if (n > 0 && sets[n - 1] == avx512_variant(true)) {
        sets[n++] = avx512_variant(false);
    } else if (n > 0 && sets[n - 1] == avx512_variant(false)) {
        sets[n++] = avx512_variant(true);
    }
    return n;
}
#define usable_kernels(sets) usable_kernels_in(__func__, sets)

// query (B, H, N, D), key and value (B, KV, N, D) from the generator, as
// the lesson draws them.
typedef struct {
    const Tensor *query, *key, *value;
} Inputs;

static Inputs draw(uint64_t seed, const Sizes *n) {
    manual_seed(seed);
    Shape kv_shape = shape4(n->batch, n->kv_heads, n->seq, n->head_dim);
    Inputs in;
    in.query = randn(shape4(n->batch, n->heads, n->seq, n->head_dim));
    in.key = randn(kv_shape);
    in.value = randn(kv_shape);
    return in;
}

// The inputs PyTorch drew for a recorded run (query.npy, key.npy, value.npy).
static Inputs recorded_inputs(const RecordedCase *c) {
    return (Inputs){load_npy(path_join("%s/query.npy", c->reference)),
                    load_npy(path_join("%s/key.npy", c->reference)),
                    load_npy(path_join("%s/value.npy", c->reference))};
}

// The tiled forward with these kernels (NULL: the best) and threads.
static const Tensor *tiled(Tensor **lse, FlashAttentionSteps *steps, const Sizes *n,
                           const Kernels *kernels, int threads, const Inputs *in) {
    FlashAttention flash =
        FlashAttention_init(n->heads, n->kv_heads, n->causal, n->block_q, n->block_k);
    flash.kernels = kernels != NULL ? kernels : kernels_best();
    flash.threads = threads;
    return FlashAttention_forward(lse, steps, &flash, in->query, in->key, in->value);
}

// --- against PyTorch --------------------------------------------------------------------

START_TEST(test_matches_pytorch) {
    const RecordedCase *c = recorded_case(REF_DIR, _i);
    ReferenceRun recorded = {
        .lesson = LESSON_DIR,
        .exact = EXACT,
        .computed = COMPUTED,
        .atol = ATOL,
        .rtol = RTOL,
    };
    RunResult run = check_recorded_case(recorded, c);
    ck_assert_msg(strstr(run.out, "(within 1e-5: float rounding only)") != NULL,
                  "%s: the lesson does not report out within 1e-5 of out_naive", c->reference);
}
END_TEST

// The forward alone, in this process, on PyTorch's recorded inputs: within
// rounding of PyTorch, and the same bits with every kernel set and with 7
// threads. (Not on seed0, the largest, which the run above
// checks: valgrind is slow.)
START_TEST(test_forward_on_recorded_inputs) {
    const RecordedCase *c = recorded_case(REF_DIR, _i);
    Sizes n = sizes_of(c);
    Inputs in = recorded_inputs(c);
    const Tensor *want = load_npy(path_join("%s/out_naive.npy", c->reference));
    const Tensor *want_lse = load_npy(path_join("%s/lse.npy", c->reference));
    Tensor *lse;
    const Tensor *out = tiled(&lse, NULL, &n, NULL, 1, &in);
    assert_close(out, want, ATOL, RTOL, path_join("%s tiled", c->reference));
    assert_close(lse, want_lse, ATOL, RTOL, path_join("%s lse", c->reference));
    const Kernels *sets[4];
    int n_sets = usable_kernels(sets);
    for (int k = 0; k < n_sets; k++) {
        if (sets[k] == &SCALAR_KERNELS && numel(in.query) > 16384) {
            continue;   // the twins are slow under valgrind (the kernel tests have them)
        }
        int threads = sets[k] == kernels_best() ? 7 : 1;   // the best on one thread is `out`
        Tensor *other_lse;
        const Tensor *other = tiled(&other_lse, NULL, &n, sets[k], threads, &in);
        const char *what = path_join("%s, %s kernels, %d threads", c->reference, sets[k]->name,
                                     threads);
        assert_bitwise_equal(other, out, what);
        assert_bitwise_equal(other_lse, lse, what);
    }
    assert_close(naive_attention(NULL, in.query, in.key, in.value, n.causal), want, ATOL, RTOL,
                 path_join("%s naive", c->reference));
}
END_TEST

// --- threads ------------------------------------------------------------------------------

// Odd splits: more threads than query blocks, a single query block, seq 1,
// blocks of 1: the same bits as one thread, causal or not.
START_TEST(test_threads_give_the_same_bits) {
    const Sizes shapes[] = {
        sizes(2, 45, 3, 1, 24, 8, 5, true),      // 6 blocks a head, 36 in all
        sizes(1, 20, 2, 2, 16, 64, 64, false),   // one query block a head: 2 blocks in all
        sizes(1, 1, 2, 1, 5, 64, 64, true),      // seq 1
        sizes(1, 9, 1, 1, 4, 1, 1, true),        // blocks of 1
        sizes(1, 530, 4, 2, 40, 64, 512, true),  // the bench's blocks, a short last one
    };
    for (int s = 0; s < 5; s++) {
        for (int causal = 0; causal < 2; causal++) {
            Sizes n = shapes[s];
            n.causal = causal;
            Inputs in = draw(30 + s, &n);
            Tensor *lse_one, *lse_many;
            FlashAttentionSteps one, many;
            const Tensor *want = tiled(&lse_one, &one, &n, NULL, 1, &in);
            for (int threads = 3; threads <= 64; threads += 61) {   // 3, and 64: more than blocks
                const Tensor *got = tiled(&lse_many, &many, &n, NULL, threads, &in);
                const char *what = path_join("shape %d, causal %d, %d threads", s, causal,
                                             threads);
                assert_bitwise_equal(got, want, what);
                assert_bitwise_equal(lse_many, lse_one, what);
                ck_assert_msg(many.flops == one.flops && many.tiles[TILE_DIAGONAL] ==
                              one.tiles[TILE_DIAGONAL], "%s: other counts", what);
                ck_assert_int_eq(many.n_row_steps, one.n_row_steps);
            }
        }
    }
}
END_TEST

// Every recorded case, from PyTorch's inputs: 2 threads (this machine's
// cores) and 7 (more than the query blocks of most cases) give the bits of
// one.
START_TEST(test_threads_on_every_recorded_case) {
    const RecordedCase *c = recorded_case(REF_DIR, _i);
    Sizes n = sizes_of(c);
    Inputs in = recorded_inputs(c);
    Tensor *lse_one, *lse_many;
    const Tensor *one = tiled(&lse_one, NULL, &n, NULL, 1, &in);
    for (int threads = 2; threads <= 7; threads += 5) {
        const Tensor *many = tiled(&lse_many, NULL, &n, NULL, threads, &in);
        const char *what = path_join("%s, %d threads", c->reference, threads);
        assert_bitwise_equal(many, one, what);
        assert_bitwise_equal(lse_many, lse_one, what);
    }
}
END_TEST

// --- invariants -------------------------------------------------------------------------

// Tiled equals naive within 1e-5 for every pair of block sizes of a grid:
// 1, blocks that divide seq, blocks that do not, seq itself, larger than seq.
START_TEST(test_tiled_equals_naive_over_block_grid) {
    static const int blocks[] = {1, 3, 5, 16, 17, 36, 37, 4096};
    enum { N_BLOCKS = sizeof blocks / sizeof blocks[0] };
    Sizes n = sizes(1, 37, 4, 2, 20, 0, 0, _i == 1);   // GQA, head_dim not a multiple of 16
    Inputs in = draw(11, &n);
    const Tensor *want = naive_attention(NULL, in.query, in.key, in.value, n.causal);
    for (int a = 0; a < N_BLOCKS; a++) {
        for (int b = 0; b < N_BLOCKS; b++) {
            size_t mark = arena_mark();
            n.block_q = blocks[a];
            n.block_k = blocks[b];
            assert_close(tiled(NULL, NULL, &n, NULL, 1, &in), want, TOLERANCE, 0.0f,
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
            Sizes n = sizes(2, 10, 4, 2, 6, blocks[i][0], blocks[i][1], causal);
            Inputs in = draw(5, &n);
            in.query = zeros(shape4(n.batch, n.heads, n.seq, n.head_dim));
            const Tensor *out = tiled(NULL, NULL, &n, NULL, 1, &in);          // (B, H, N, D)
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

// lse[b, h, t] = log(sum over the keys t sees of exp(x)), the scores x
// worked out here in double: for every query, causal or not, any blocks.
START_TEST(test_lse_is_the_logsumexp_of_the_scores) {
    for (int causal = 0; causal < 2; causal++) {
        Sizes n = sizes(2, 23, 4, 2, 12, 8, 5, causal);
        Inputs in = draw(12, &n);
        Tensor *lse;
        tiled(&lse, NULL, &n, NULL, 1, &in);
        ck_assert_int_eq(lse->shape.ndim, 3);
        for (int b = 0; b < n.batch; b++) {
            for (int h = 0; h < n.heads; h++) {
                for (int t = 0; t < n.seq; t++) {
                    double sum = 0.0;
                    for (int s = 0; s <= (causal ? t : n.seq - 1); s++) {
                        double dot = 0.0;
                        for (int d = 0; d < n.head_dim; d++) {
                            dot += (double)*at4(in.query, b, h, t, d) *
                                   *at4(in.key, b, h / 2, s, d);
                        }
                        sum += exp(dot / sqrt(n.head_dim));
                    }
                    float got = *at3(lse, b, h, t);
                    ck_assert_msg(fabs(got - log(sum)) <= 2e-6 * (1 + fabs(log(sum))),
                                  "causal %d: lse[%d, %d, %d] = %.8f, expected %.8f", causal, b,
                                  h, t, got, log(sum));
                }
            }
        }
    }
}
END_TEST

// The tiled path's extra memory is one allocation a worker whose size
// depends on the blocks and head_dim only: measured at two sequence
// lengths, 8 times apart, it is the same, and the forward makes as many
// allocations at both. The naive path's grows 64x.
START_TEST(test_extra_memory_does_not_grow_with_seq) {
    int seqs[2] = {32, 256};
    size_t tiled_bytes[2], naive_bytes[2], allocations[2];
    for (int i = 0; i < 2; i++) {
        Sizes n = sizes(1, seqs[i], 2, 1, 16, 16, 32, i == 1);
        Inputs in = draw(3, &n);
        size_t mark = arena_mark();
        tiled(NULL, NULL, &n, NULL, 1, &in);
        allocations[i] = arena_mark() - mark;
        FlashAttentionSteps steps;
        tiled(NULL, &steps, &n, NULL, 1, &in);
        tiled_bytes[i] = steps.scratch_bytes;
        NaiveSteps naive;
        naive_attention(&naive, in.query, in.key, in.value, false);
        naive_bytes[i] = naive.extra_bytes;
    }
    ck_assert_msg(tiled_bytes[0] == tiled_bytes[1],
                  "tiled extra memory: %zu bytes at seq %d, %zu at seq %d", tiled_bytes[0],
                  seqs[0], tiled_bytes[1], seqs[1]);
    // (D + Bk + 4) * Bq floats: a (D, Bq) query block, a (Bk, Bq) score block, 4
    // vectors; and 16 more to start on a cache line.
    ck_assert_uint_eq(tiled_bytes[0], ((16 + 32 + 4) * 16 + 16) * sizeof(float));
    ck_assert_msg(allocations[0] == allocations[1],
                  "the forward made %zu allocations at seq %d and %zu at seq %d",
                  allocations[0], seqs[0], allocations[1], seqs[1]);
    ck_assert_uint_eq(naive_bytes[1], 64 * naive_bytes[0]);
    ck_assert_uint_eq(naive_bytes[0], 3 * 2 * 32 * 32 * sizeof(float));
    // Each thread has its own scratch.
    Sizes n = sizes(1, 64, 2, 1, 16, 16, 32, false);
    Inputs in = draw(3, &n);
    FlashAttentionSteps three;
    tiled(NULL, &three, &n, NULL, 3, &in);
    ck_assert_uint_eq(three.scratch_bytes, 3 * tiled_bytes[0]);
}
END_TEST

// The tile counts: a tile is skipped when every score in it is masked,
// full when none is, on the diagonal otherwise, checked score by score;
// and the FLOPs the forward counts are 4 * D per (query, key) pair a query
// sees: 2*B*H*N*(N+1)*D causal, whatever the blocks.
START_TEST(test_tile_kinds_and_counts) {
    static const int blocks[][2] = {{16, 16}, {8, 16}, {16, 5}, {1, 1}, {7, 64}, {64, 3}};
    int N = 64;
    for (int i = 0; i < 6; i++) {
        int Bq = blocks[i][0], Bk = blocks[i][1];
        long counts[3] = {0, 0, 0};
        for (int qs = 0; qs < N; qs += Bq) {
            int nq = min_int(Bq, N - qs);
            for (int ks = 0; ks < N; ks += Bk) {
                int nk = min_int(Bk, N - ks), masked = 0;
                for (int t = qs; t < qs + nq; t++) {
                    for (int s = ks; s < ks + nk; s++) {
                        masked += s > t;
                    }
                }
                TileKind want = masked == 0 ? TILE_FULL
                                : masked == nq * nk ? TILE_SKIPPED : TILE_DIAGONAL;
                ck_assert_msg(tile_kind(true, qs, nq, ks, nk) == want,
                              "tile queries %d.., keys %d.. (blocks %d x %d)", qs, ks, Bq, Bk);
                ck_assert(tile_kind(false, qs, nq, ks, nk) == TILE_FULL);
                counts[want] += 1;
            }
        }
        Sizes n = sizes(1, N, 3, 3, 2, Bq, Bk, true);
        Inputs in = draw(1, &n);
        FlashAttentionSteps steps;
        tiled(NULL, &steps, &n, NULL, 1, &in);
        for (int k = 0; k < 3; k++) {
            ck_assert_msg(steps.tiles[k] == 3 * counts[k], "blocks %d x %d: %ld tiles of kind "
                          "%d counted, expected %ld", Bq, Bk, steps.tiles[k], k, 3 * counts[k]);
        }
        ck_assert_msg(steps.flops == attention_flops(1, 3, N, 2, true),
                      "blocks %d x %d: %.0f FLOPs, expected %.0f", Bq, Bk, steps.flops,
                      attention_flops(1, 3, N, 2, true));
        n.causal = false;
        tiled(NULL, &steps, &n, NULL, 1, &in);
        ck_assert(steps.flops == attention_flops(1, 3, N, 2, false));
    }
}
END_TEST

// Query N-1's walk through the key blocks ends at the two-pass m and l of
// its whole row of scores; alpha is 0 at the first block and exactly 1
// where the max did not grow.
START_TEST(test_row_steps_end_at_two_pass_m_and_l) {
    Sizes n = sizes(1, 45, 2, 1, 8, 6, 7, _i == 1);
    Inputs in = draw(8, &n);
    FlashAttentionSteps steps;
    tiled(NULL, &steps, &n, NULL, 1, &in);
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
    Sizes n = sizes(1, 12, 2, 2, 8, 5, 4, false);
    Inputs in = draw(2, &n);
    Inputs viewed = in;
    viewed.key = transpose(clone(transpose(in.key, 2, 3)), 2, 3);           // (B, KV, N, D)
    ck_assert(!is_contiguous(viewed.key));
    FlashAttentionSteps in_place, copied;
    const Tensor *want = tiled(NULL, &in_place, &n, NULL, 1, &in);
    const Tensor *got = tiled(NULL, &copied, &n, NULL, 1, &viewed);
    assert_bitwise_equal(got, want, "a transposed key");
    ck_assert_uint_eq(copied.scratch_bytes,
                      in_place.scratch_bytes + (size_t)numel(in.key) * sizeof(float));
}
END_TEST

// --- the kernels ------------------------------------------------------------------------

// The whole forward with each kernel set equals the scalar twins bit for
// bit, on shapes that reach every edge of the register tiles: head_dim not
// a multiple of 8 or 16, blocks of 1, short last blocks, blocks wider than
// 64 queries, the diagonal crossing register tiles.
START_TEST(test_kernel_sets_equal_the_scalar_twins) {
    const Sizes shapes[] = {
        sizes(2, 29, 6, 3, 24, 7, 5, true),      // GQA, head_dim 24 = 16 + 8
        sizes(1, 64, 2, 2, 64, 64, 64, false),
        sizes(1, 13, 3, 1, 40, 1, 4, true),      // blocks of 1 query
        sizes(1, 50, 2, 2, 16, 48, 256, true),
        sizes(1, 150, 2, 1, 20, 80, 33, true),   // 80 queries: registers of 64 + 16
        sizes(1, 70, 2, 2, 3, 70, 70, true),     // head_dim 3: no whole vector
        sizes(1, 600, 1, 1, 64, 64, 512, true),  // the bench's blocks
        // AVX-512's keys in chunks of 64 (a short last one), head_dim 128 (two tiles
        // across it, l's sums with the first), 30 queries: a short register tile.
        sizes(1, 330, 2, 1, 128, 30, 200, false),
    };
    const Kernels *sets[4];
    int n_sets = usable_kernels(sets);
    for (int i = 0; i < 8; i++) {
        Inputs in = draw(20 + i, &shapes[i]);
        FlashAttentionSteps twin_steps, steps;
        Tensor *twin_lse, *lse;
        const Tensor *twin = tiled(&twin_lse, &twin_steps, &shapes[i], &SCALAR_KERNELS, 1, &in);
        for (int k = 1; k < n_sets; k++) {
            const Tensor *fast = tiled(&lse, &steps, &shapes[i], sets[k], 1, &in);
            const char *what = path_join("shape %d: %s against scalar", i, sets[k]->name);
            assert_bitwise_equal(fast, twin, what);
            assert_bitwise_equal(lse, twin_lse, what);
            ck_assert_int_eq(steps.n_row_steps, twin_steps.n_row_steps);
            for (int r = 0; r < steps.n_row_steps; r++) {
                assert_same_floats(&steps.row_steps[r].l, &twin_steps.row_steps[r].l, 1, what);
            }
        }
    }
}
END_TEST

// The kernels one by one, on random tiles of the shapes they are
// called with: keys from 1 to past a register tile's rows, queries from 1
// to past 64 (width rounded up to 16), head_dim not a multiple of 8, of 16,
// and past 64, the diagonal anywhere (and none), alpha 1 or not.
START_TEST(test_each_kernel_equals_its_twin) {
    const Kernels *sets[4];
    int n_sets = usable_kernels(sets);
    manual_seed(4);
    Tensor *k = randn(shape2(70, 70)), *v = randn(shape2(70, 70));
    Tensor *q_t = randn(shape2(70, 80)), *o = randn(shape2(80, 70));
    Tensor *m = randn(shape1(80)), *l = rand_tensor(shape1(80));
    static const int keys[] = {1, 4, 6, 17, 70};
    static const int queries[] = {1, 17, 64, 80};
    static const int dims[] = {3, 8, 24, 70};
    static const int diagonals[] = {NO_MASK, 0, -5, 7, 40};
    for (int s = 1; s < n_sets; s++) {
        for (int a = 0; a < 5; a++) {
            for (int b = 0; b < 4; b++) {
                for (int c = 0; c < 4; c++) {
                    for (int e = 0; e < 5; e++) {
                        int width = (queries[b] + 15) / 16 * 16;
                        Tile tile = {keys[a], queries[b], width, dims[c], diagonals[e]};
                        const char *what = path_join("%s: keys %d, queries %d, D %d, diagonal "
                                                     "%d", sets[s]->name, keys[a], queries[b],
                                                     dims[c], diagonals[e]);
                        float t_want[70 * 80], t_got[70 * 80];   // o's numbers as queries
                        SCALAR_KERNELS.load_queries(t_want, &tile, o->data, 0.18f);
                        sets[s]->load_queries(t_got, &tile, o->data, 0.18f);
                        assert_same_floats(t_got, t_want, (long)dims[c] * width, what);
                        float s_want[70 * 80], s_got[70 * 80], max_want[80], max_got[80];
                        // q_t's rows have width floats here: (D, width) out of (70, 80).
                        float q_block[70 * 80];
                        for (int d = 0; d < dims[c]; d++) {
                            memcpy(q_block + d * width, q_t->data + d * 80,
                                   (size_t)width * sizeof(float));
                        }
                        SCALAR_KERNELS.scores(s_want, max_want, &tile, k->data, q_block);
                        sets[s]->scores(s_got, max_got, &tile, k->data, q_block);
                        assert_same_floats(s_got, s_want, (long)keys[a] * width, what);
                        assert_same_floats(max_got, max_want, width, what);

                        float m_want[80], m_got[80], l_want[80], l_got[80], a_want[80],
                            a_got[80];
                        for (int j = 0; j < width; j++) {   // some columns seen before, some not
                            m_want[j] = m_got[j] = j % 3 == 0 ? -INFINITY : m->data[j];
                            l_want[j] = l_got[j] = j % 3 == 0 ? 0.0f : l->data[j];
                        }
                        SCALAR_KERNELS.online_softmax(s_want, m_want, a_want, max_want, &tile);
                        sets[s]->online_softmax(s_got, m_got, a_got, max_got, &tile);
                        assert_same_floats(s_got, s_want, (long)keys[a] * width, what);
                        assert_same_floats(m_got, m_want, width, what);
                        assert_same_floats(a_got, a_want, width, what);

                        float o_want[80 * 70], o_got[80 * 70];
                        memcpy(o_want, o->data, sizeof o_want);
                        memcpy(o_got, o->data, sizeof o_got);
                        SCALAR_KERNELS.accumulate(o_want, l_want, &tile, a_want, s_want,
                                                  v->data);
                        sets[s]->accumulate(o_got, l_got, &tile, a_got, s_got, v->data);
                        assert_same_floats(o_got, o_want, (long)queries[b] * dims[c], what);
                        assert_same_floats(l_got, l_want, queries[b], what);
                        // The last call of a query block: o / l, with l NULL.
                        Tile no_keys = {0, queries[b], width, dims[c], NO_MASK};
                        SCALAR_KERNELS.accumulate(o_want, NULL, &no_keys, a_want, s_want,
                                                  v->data);
                        sets[s]->accumulate(o_got, NULL, &no_keys, a_got, s_got, v->data);
                        assert_same_floats(o_got, o_want, (long)queries[b] * dims[c], what);
                    }
                }
            }
        }
    }
}
END_TEST

// The kernels' exp2: within 1 ulp of exp2, rounded to the nearest float
// (subnormal ones below 2^-126) from EXP2_LO to 0 (every float of that
// range was checked once, this is a sweep), 0 below that and for -inf and
// NaN; and each vector version's exp2 (inside online_softmax, with m = 0)
// is the scalar one bit for bit: on a tile with the mask for every x, on
// one without it (where AVX-512 skips the test for -inf) for every finite x.
START_TEST(test_exp2) {
    enum { COUNT = 1 << 16, SPECIAL = 14 };
    static float x[COUNT], want[COUNT], got[COUNT];
    for (int i = 0; i < COUNT - SPECIAL; i++) {
        x[i] = EXP2_LO * (float)i / (COUNT - SPECIAL - 1);
    }
    // The finite ones first: -0x1.fffffep127f is the most negative float.
    const float special[SPECIAL] = {0.0f, -0.0f, -1e-30f, -125.0001f, -126.0f, -130.3f,
                                    -149.4f, -149.6f, -150.7f, -151.3f, -200.0f,
                                    -0x1.fffffep127f, -INFINITY, NAN};
    memcpy(&x[COUNT - SPECIAL], special, sizeof special);
    int bad = -1;   // the first x whose exp2 is wrong
    for (int i = 0; i < COUNT; i++) {
        want[i] = flash_exp2(x[i]);
        double exact = x[i] >= EXP2_LO ? exp2((double)x[i]) : 0.0;
        float ulp = nextafterf((float)exact, INFINITY) - (float)exact;
        bool good = x[i] >= EXP2_LO ? fabs(want[i] - exact) <= ulp : want[i] == 0.0f;
        bad = !good && bad < 0 ? i : bad;
    }
    ck_assert_msg(bad < 0, "exp2(%.9g) = %.9g, exactly %.9g", x[bad < 0 ? 0 : bad],
                  want[bad < 0 ? 0 : bad], x[bad < 0 ? 0 : bad] >= EXP2_LO ?
                  exp2((double)x[bad < 0 ? 0 : bad]) : 0.0);
    const Kernels *sets[4];
    int n_sets = usable_kernels(sets);
    // Without the mask, the finite x only: -inf and NaN (the last two) are -1 there.
    static float finite[COUNT], finite_want[COUNT], zero[COUNT], alpha[COUNT];
    for (int i = 0; i < COUNT; i++) {
        finite[i] = i < COUNT - 2 ? x[i] : -1.0f;
        finite_want[i] = flash_exp2(finite[i]);
    }
    for (int s = 1; s < n_sets; s++) {
        for (int masked = 0; masked < 2; masked++) {
            Tile row = {1, 1, COUNT, 1, masked ? 0 : NO_MASK};   // one key, COUNT columns
            memcpy(got, masked ? x : finite, sizeof got);
            memset(zero, 0, sizeof zero);
            sets[s]->online_softmax(got, zero, alpha, zero, &row);   // exp2(x - 0)
            assert_same_floats(got, masked ? want : finite_want, COUNT,
                               path_join("%s exp2, %s", sets[s]->name,
                                         masked ? "masked" : "no mask"));
        }
    }
}
END_TEST

// ATTN_KERNELS chooses kernels_best() (as lesson 14's); kernels_named knows
// the three names; the lesson refuses a name it does not know, with --kernels
// too (which would choose for it).
START_TEST(test_kernel_choice) {
    ck_assert_ptr_eq(kernels_named("scalar"), &SCALAR_KERNELS);
    ck_assert_ptr_null(kernels_named("avx1024"));
    const char *before = getenv("ATTN_KERNELS");
    char *saved = before != NULL ? strcpy(arena_alloc(strlen(before) + 1, 1), before) : NULL;
    setenv("ATTN_KERNELS", "scalar", 1);
    ck_assert_ptr_eq(kernels_best(), &SCALAR_KERNELS);
    RunResult scalar = run_program(lesson_binary(LESSON_DIR),
                                   (const char *const[]){"--seq", "20", "--causal", NULL});
    setenv("ATTN_KERNELS", "sse9", 1);
    RunResult bad = run_program(lesson_binary(LESSON_DIR), (const char *const[]){NULL});
    RunResult bad_with_flag = run_program(lesson_binary(LESSON_DIR),
                                          (const char *const[]){"--kernels", "scalar", NULL});
    if (saved != NULL) {
        setenv("ATTN_KERNELS", saved, 1);
    } else {
        unsetenv("ATTN_KERNELS");
    }
    RunResult best = run_program(lesson_binary(LESSON_DIR),
                                 (const char *const[]){"--seq", "20", "--causal", NULL});
    ck_assert_int_eq(scalar.status, 0);
    ck_assert_msg(strcmp(scalar.out, best.out) == 0, "ATTN_KERNELS=scalar prints other numbers");
    assert_one_line_refusal(bad, "lesson-13: ", "ATTN_KERNELS=sse9");
    ck_assert_msg(strstr(bad.err, "ATTN_KERNELS expects scalar, avx2 or avx512") != NULL, "%s",
                  bad.err);
    assert_one_line_refusal(bad_with_flag, "lesson-13: ", "ATTN_KERNELS=sse9 --kernels scalar");
    ck_assert_str_eq(bad_with_flag.err, bad.err);
}
END_TEST

// --- flags ------------------------------------------------------------------------------

static const BadFlags BAD_FLAGS[] = {
    {{"--block-q", "0", NULL}, "--block-q expects a whole number from 1 to 4096, got '0'"},
    {{"--block-q", "4097", NULL}, "--block-q expects a whole number from 1 to 4096"},
    {{"--block-k", "0", NULL}, "--block-k expects a whole number from 1 to 4096"},
    {{"--block-k", "100000000000", NULL}, "--block-k"},
    {{"--block-k", "-3", NULL}, "--block-k"},
    {{"--threads", "0", NULL}, "--threads expects a whole number from 1 to 256"},
    {{"--threads", "257", NULL}, "--threads"},
    {{"--kernels", "avx1024", NULL}, "--kernels"},
    {{"--kv-heads", "3", NULL}, "--kv-heads 3 does not divide --heads 8"},
    {{"--kv-heads", "16", NULL}, "--kv-heads 16 does not divide --heads 8"},
    {{"--heads", "6", "--kv-heads", "4", NULL}, "--kv-heads 4 does not divide --heads 6"},
    {{"--seq", "0", NULL}, "--seq"},
    {{"--head-dim", "65536", "--seq", "1024", NULL}, "query (batch, heads, seq, head_dim)"},
    {{"--batch", "65536", "--heads", "65536", NULL}, "query"},   // no int overflow
    {{"--causal", "1", NULL}, "unknown flag '1'"},
    {{"--bench", NULL}, "--bench times its own sizes"},   // check_bad_flags adds --dump
    {{"--bench", "--seq", "100", NULL}, "drop"},
    {{"--long", NULL}, "--long goes with --bench"},
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

// Small blocks pay each tile's call for every few pairs: the estimate counts the tiles
// (NS_PER_TILE). Counted by pairs alone, --block-q 1 --block-k 1 --seq 8192 was estimated
// at 9.3 s and took 89; now it is refused by its estimate. Each estimate here is at least
// the tiles' share: what the runs took, per tile, on the machine the prices were measured.
START_TEST(test_small_blocks_are_priced_by_their_tiles) {
    LessonCall call = call_lesson(lesson_main, (const char *const[]){
        "--block-q", "1", "--block-k", "1", "--seq", "8192", NULL});
    ck_assert_msg(call.status == 2 && strstr(call.err, "lesson-13: --seq 8192 would take about ")
                  == call.err && strstr(call.err, "more than the 60 seconds allowed") != NULL,
                  "exit %d: %s", call.status, call.err);
    ck_assert_double_ge(call.budget.seconds, 8.0 * 8192 * 8192 * (30 + 1.1 * 64) * 1e-9);
    call = call_lesson(lesson_main, (const char *const[]){
        "--seq", "6000", "--heads", "16", "--head-dim", "1", "--batch", "4", "--block-q", "1",
        "--block-k", "1", "--threads", "256", "--causal", NULL});
    ck_assert_double_ge(call.budget.seconds, 4.0 * 16 * 6000 * 6001 / 2 * 31.1e-9);
    // Blocks of 64 (the default) pay it once for 4096 pairs: the estimate barely moves.
    call = call_lesson(lesson_main, (const char *const[]){"--seq", "2048", NULL});
    ck_assert_msg(call.status == 0 && call.reached_work, "exit %d: %s", call.status, call.err);
    ck_assert_double_lt(call.budget.cost.kernel_seconds, 0.01);
}
END_TEST

// Blocks of one query and one key would keep --bench busy for many
// minutes: it refuses them, naming the flags and its budget, before it
// prints anything.
START_TEST(test_bench_refuses_what_it_cannot_finish) {
    // With the scalar twins the bench is refused for their slowness before any reason below:
    // the runs take this CPU's fastest kernels, whatever ATTN_KERNELS says (make valgrind sets
    // scalar for what it runs under valgrind; these run natively).
    if (!cpu_runs("avx2")) {
        note_skipped("the bench's refusals not checked: this CPU has only the scalar kernels, "
                     "with which every --bench is refused for its time");
        return;
    }
    const char *variable = getenv("ATTN_KERNELS");
    char saved[64] = "";
    snprintf(saved, sizeof saved, "%s", variable != NULL ? variable : "");
    unsetenv("ATTN_KERNELS");
    RunResult run = run_program(lesson_binary(LESSON_DIR),
                                (const char *const[]){"--bench", "--block-q", "1", "--block-k",
                                                      "1", NULL});
    assert_one_line_refusal(run, "lesson-13: ", "--bench --block-q 1 --block-k 1");
    ck_assert_msg(strstr(run.err, "--block-q 1 --block-k 1") != NULL &&
                  strstr(run.err, "more than the 60 s allowed; allow it with "
                          "ATTN_MAX_SECONDS=") != NULL, "%s", run.err);
    // Its budget of time is ATTN_MAX_SECONDS, as every run's (it kept one of 150 s that the
    // variable did not govern): its default run, estimated at half a minute, is refused
    // under one second.
    setenv("ATTN_MAX_SECONDS", "1", 1);
    run = run_program(lesson_binary(LESSON_DIR), (const char *const[]){"--bench", NULL});
    unsetenv("ATTN_MAX_SECONDS");
    assert_one_line_refusal(run, "lesson-13: ", "ATTN_MAX_SECONDS=1 --bench");
    ck_assert_msg(strstr(run.err, "more than the 1 s allowed; allow it with "
                          "ATTN_MAX_SECONDS=") != NULL, "%s", run.err);
    // And what it would hold, against the budget (lesson/budget.h): its
    // naive runs take a few heads at a time, so it needs about 214 MiB.
    setenv("ATTN_MAX_MIB", "100", 1);
    run = run_program(lesson_binary(LESSON_DIR), (const char *const[]){"--bench", NULL});
    unsetenv("ATTN_MAX_MIB");
    assert_one_line_refusal(run, "lesson-13: ", "ATTN_MAX_MIB=100 --bench");
    ck_assert_msg(strstr(run.err, "more than the 100 MiB allowed") != NULL &&
                  strstr(run.err, "ATTN_MAX_MIB=220") != NULL, "%s", run.err);
    // --long's rounds would take over its minute: refused, with how to allow them.
    run = run_program(lesson_binary(LESSON_DIR), (const char *const[]){"--bench", "--long", NULL});
    assert_one_line_refusal(run, "lesson-13: ", "--bench --long");
    ck_assert_msg(strstr(run.err, "--bench with --long would take about ") != NULL &&
                  strstr(run.err, "ATTN_MAX_SECONDS=") != NULL, "%s", run.err);
    // --flag=value is --flag value here too.
    run = run_program(lesson_binary(LESSON_DIR),
                      (const char *const[]){"--bench", "--block-q=1", "--block-k=1", NULL});
    assert_one_line_refusal(run, "lesson-13: ", "--bench --block-q=1 --block-k=1");
    ck_assert_msg(strstr(run.err, "--block-q 1 --block-k 1") != NULL, "%s", run.err);
    // And with the kernels named: they are said after the blocks.
    run = run_program(lesson_binary(LESSON_DIR), (const char *const[]){
                          "--bench", "--block-q", "1", "--block-k", "1", "--kernels", "avx2", NULL});
    ck_assert_msg(strstr(run.err, "--bench with --block-q 1 --block-k 1 and the avx2 kernels "
                         "would take about ") != NULL, "%s", run.err);
    if (variable != NULL) {
        setenv("ATTN_KERNELS", saved, 1);
    }
}
END_TEST

// One run of the tiled path at --bench's sizes by hand: 8 heads, every query block of 64
// against every key block (causal: those on or below the diagonal, the diagonal's in
// full), each tile 64 queries by Bk keys at the set's price a pair, plus 100.4 ns (30, and
// 1.1 a number of head_dim).
static double tiled_by_hand(int seq, bool causal, int block_k, double pair_ns) {
    double N = seq, Bk = fmin(block_k, N), q = N / 64, k = ceil(N / Bk);
    double tiles = 8 * (causal ? (q * k + fmin(q, k)) / 2 : q * k);
    return tiles * (64 * Bk * pair_ns + 100.4) * 1e-9;
}

// --bench's estimate (bench_seconds), a sum of prices: no run is timed, so it is the same
// on every machine with the same kernel sets. Its default run fits the budget's minute on
// one thread and on two with AVX-512's or AVX2's kernels; the scalar twins, blocks of one,
// and --long are refused there (each would take minutes). Only a pair's price depends on
// the kernels: the sets compared at seq 512 are this CPU's.
START_TEST(test_bench_estimate) {
    static const Kernels wide = {.name = "avx512", .lanes = 16};
    static const Kernels narrow = {.name = "avx2", .lanes = 8};
    static const char *const names[] = {"avx512", "avx2", "scalar"};
    static const double prices[] = {4.0, 6.0, 400.0};   // ns a pair
    double compared = 0.0, draws = 0.0, naive = 0.0;
    for (int i = 0; i < 3; i++) {
        compared += kernels_named(names[i]) != NULL ? 3 * tiled_by_hand(512, false, 512,
                                                                          prices[i]) : 0.0;
    }
    for (int i = 0; i < N_BENCH_SEQS; i++) {
        double N = BENCH_SEQS[i];
        draws += 3 * 8 * N * 64 * 40e-9;
        naive += i < 3 ? NAIVE_SHORT[i] * 2 * 8 * N * N * 160e-9 : 0.0;
    }
    for (int set = 0; set < 2; set++) {
        const Kernels *k = set == 0 ? &wide : &narrow;
        BenchRun one = {false, 64, k->lanes == 16 ? 1024 : 512, 1, k, false};
        BenchRun two = one;
        two.threads = 2;
        double tiled = 0.0;
        for (int i = 0; i < N_BENCH_SEQS; i++) {
            for (int causal = 0; causal < 2; causal++) {
                tiled += TILED_SHORT[i] * tiled_by_hand(BENCH_SEQS[i], causal, one.block_k,
                                                        prices[set]);
            }
        }
        double t1 = bench_seconds(&one), t2 = bench_seconds(&two);
        double want = 1.0 + draws + naive + compared + tiled;   // 1 s: the FMA peaks
        ck_assert_msg(fabs(t1 - want) < 1e-9 * want && fabs(t2 - want - tiled) < 1e-9 * want,
                      "%s: %.6f and %.6f s, not %.6f and %.6f", k->name, t1, t2, want,
                      want + tiled);
        ck_assert_msg(t1 < DEFAULT_MAX_SECONDS && t2 < DEFAULT_MAX_SECONDS,
                      "%s: %.1f s, %.1f s", k->name, t1, t2);
        BenchRun longer = one;
        longer.long_sweep = true;
        ck_assert_double_gt(bench_seconds(&longer), DEFAULT_MAX_SECONDS);
        BenchRun tiny = one;
        tiny.block_q = tiny.block_k = 1;   // 16 padded columns a tile for 1 pair
        ck_assert_double_gt(bench_seconds(&tiny), 4 * DEFAULT_MAX_SECONDS);
    }
    BenchRun scalar = {false, 64, 512, 1, &SCALAR_KERNELS, false};
    ck_assert_double_gt(bench_seconds(&scalar), 10 * DEFAULT_MAX_SECONDS);
}
END_TEST

// --kv-heads defaults to --heads, and a sequence too long for the naive
// path runs the tiled one alone and says so.
START_TEST(test_runs_at_its_sizes) {
    check_prints(LESSON_DIR, (const char *const[]){"--heads", "2", "--seq", "8", NULL},
                 "key = torch.randn(1, 2, 8, 64)\n"
                 "  (query head h reads key/value head h // 1)\n");
    RunResult run = check_prints(LESSON_DIR,
                                 (const char *const[]){"--seq", "8193", "--heads", "1",
                                                       "--head-dim", "1", NULL},
                                 "out: torch.Size([1, 1, 8193, 1]), lse: torch.Size([1, 1, "
                                 "8193])\n");
    ck_assert_msg(strstr(run.out, "the naive path is skipped") != NULL, "%s", run.out);
}
END_TEST

START_TEST(test_help) {
    RunResult run =
        check_prints(LESSON_DIR, (const char *const[]){"--help", NULL},
                     "usage: lesson-13 [flags]\n"
                     "  --block-q N      queries per block (Bq) (default 64)\n"
                     "  --block-k N      keys per block (Bk) (default 64)\n"
                     "  --threads N      threads sharing the query blocks (default 1)\n");
    ck_assert_msg(strstr(run.out, "--bench") != NULL && strstr(run.out, "--causal") != NULL &&
                  strstr(run.out, "--kernels") != NULL, "%s", run.out);
}
END_TEST

// --- what a run may take (common/lesson/budget.h; harness.h: add_budget_tests) -----------

// Refused by the budget before anything runs, in one line that names the flags, the budget
// and how to raise it.
static const BudgetRefusal REFUSED[] = {
    // The tiled path holds no (N, N) scores (the naive path is skipped beyond
    // 256 MiB), so it is refused only where its inputs and output pass the budget.
    {{"--seq", "65536", NULL},
     "lesson-13: --seq 65536 would hold about 514 MiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=520", NULL},
};

// Sizes where the tensors that grow with the flags are most of what a run holds, each
// flag raised in one of them, and the switches that add tensors on: what a run holds is
// its prediction (make test runs the first, make test-long all).
static const SizedRun SIZED[] = {
    {{"--seq", "512", "--causal", "--threads", "2", NULL}},
    {{"--batch", "2", "--seq", "256", "--heads", "4", "--kv-heads", "2", "--head-dim", "128",
      "--block-q", "32", "--block-k", "128", "--dump", "", NULL}},
    // The tiled path alone (the naive one would make 384 MiB).
    {{"--batch", "4", "--seq", "2048", "--heads", "2", "--causal", NULL}},
};

// The budget admits the bench, on one thread and on two.
static const AdmittedRun ADMITTED[] = {
    {{"--bench", NULL}, true},
    {{"--bench", "--threads", "2", NULL}, true},
};

static const LessonBudget BUDGET = {
    "13-flash-attention", lesson_main, REFUSED, sizeof REFUSED / sizeof REFUSED[0], SIZED,
    sizeof SIZED / sizeof SIZED[0], ADMITTED, sizeof ADMITTED / sizeof ADMITTED[0],
};

Suite *lesson13_suite(void) {
    Suite *suite = suite_create("lesson13");
    TCase *pytorch = new_tcase("pytorch");
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, recorded_case_count(REF_DIR));
    tcase_add_loop_test(pytorch, test_forward_on_recorded_inputs, 1, recorded_case_count(REF_DIR));
    suite_add_tcase(suite, pytorch);
    TCase *invariants = new_tcase("invariants");
    tcase_add_test(invariants, test_threads_give_the_same_bits);
    tcase_add_loop_test(invariants, test_threads_on_every_recorded_case, 0,
                        recorded_case_count(REF_DIR));
    tcase_add_loop_test(invariants, test_tiled_equals_naive_over_block_grid, 0, 2);
    tcase_add_test(invariants, test_equal_scores_give_mean_of_values);
    tcase_add_test(invariants, test_lse_is_the_logsumexp_of_the_scores);
    tcase_add_test(invariants, test_extra_memory_does_not_grow_with_seq);
    tcase_add_test(invariants, test_tile_kinds_and_counts);
    tcase_add_loop_test(invariants, test_row_steps_end_at_two_pass_m_and_l, 0, 2);
    tcase_add_test(invariants, test_non_contiguous_inputs);
    suite_add_tcase(suite, invariants);
    TCase *kernels = new_tcase("kernels");
    tcase_add_test(kernels, test_kernel_sets_equal_the_scalar_twins);
    tcase_add_test(kernels, test_each_kernel_equals_its_twin);
    tcase_add_test(kernels, test_exp2);
    tcase_add_test(kernels, test_kernel_choice);
    suite_add_tcase(suite, kernels);
    TCase *flags = new_tcase("flags");
    tcase_add_test(flags, test_bad_flags);
    tcase_add_test(flags, test_bench_refuses_shape_flags);
    tcase_add_test(flags, test_bench_refuses_what_it_cannot_finish);
    tcase_add_test(flags, test_bench_estimate);
    tcase_add_test(flags, test_small_blocks_are_priced_by_their_tiles);
    tcase_add_test(flags, test_runs_at_its_sizes);
    tcase_add_test(flags, test_help);
    suite_add_tcase(suite, flags);
    add_budget_tests(suite, &BUDGET);
    return suite;
}

int main(void) { return run_suite(lesson13_suite()); }
