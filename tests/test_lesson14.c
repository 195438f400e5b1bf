// test_lesson14.c - lesson 14 (attention-backward: the gradients by hand, and
// FlashAttention-2's tiled backward).
//
// Reference values in tests/data/lesson14/<case>/ were recorded from
// PyTorch 1.13 by tests/reference/gen_lesson14.py, which runs the PyTorch
// script of docs/14-attention-backward.md. The lesson source is included
// with its main() renamed, and bench.c after it, so the tests can call the
// module and the backward passes directly; the kernels (kernels.c) are
// linked from the lesson's own object (the Makefile) and tested through
// their tables. No test times anything: --bench is a benchmark, not a test.
// --threads: the tiled backward on 2, 3 and 64 threads gives one thread's bits, in
// this process and as the program (its printed text and every --dump file).
#define _POSIX_C_SOURCE 200809L   // the lesson's clock_gettime
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "line_width.h"

#define main lesson_main
#include "../lessons/14-attention-backward/attention_backward.c"
#undef main
#include "../lessons/14-attention-backward/bench.c"

#define LESSON_DIR "14-attention-backward"
#define REF_DIR DATA_DIR "/lesson14"

// Against PyTorch: the lesson's loops and kernels add in other orders than
// PyTorch's BLAS, and the tiled path uses another exp, so a few float32
// roundings apart. Gradients are sums of products of numbers of size 1, some
// of which cancel (key_proj's gradient is 0 up to rounding): atol 1e-6 for
// the roundings near 0, rtol 1e-5 (~80 ulps) for the rest.
#define ATOL 1e-6f
#define RTOL 1e-5f

// The recorded runs: tests/data/lesson14/cases.txt, written by gen_lesson14.py.
static int n_cases(void) {
    return recorded_case_count(REF_DIR);
}

// A recorded run's sizes, as the lesson's Sizes.
static Sizes case_sizes(const RecordedCase *c) {
    return (Sizes){(int)case_int(c, "batch"), (int)case_int(c, "seq"), (int)case_int(c, "dim"),
                   (int)case_int(c, "heads"), (int)case_int(c, "kv_heads"),
                   (int)case_int(c, "head_dim"), (int)case_int(c, "block_q"),
                   (int)case_int(c, "block_k"), case_int(c, "causal") != 0,
                   case_int(c, "train") != 0, 1};
}

// Drawn: equal to PyTorch's bit for bit.
static const char *const EXACT[] = {
    "X", "mask", "query_proj.weight", "query_proj.bias", "key_proj.weight", "key_proj.bias",
    "value_proj.weight", "value_proj.bias", "output_proj.weight", "output_proj.bias",
    "grad_out", "query", "key", "value", "grad_attn_out", NULL};
static const char *const EXACT_TRAIN[] = {
    "X", "mask", "query_proj.weight", "query_proj.bias", "key_proj.weight", "key_proj.bias",
    "value_proj.weight", "value_proj.bias", "output_proj.weight", "output_proj.bias",
    "grad_out", "noise", "query", "key", "value", "grad_attn_out", NULL};
// Computed: equal to PyTorch's to float rounding.
#define COMPUTED_COMMON                                                                       \
    "Q", "K", "V", "scores", "att_weight", "output", "ret", "X.grad", "query_proj.weight.grad", \
        "query_proj.bias.grad", "key_proj.weight.grad", "key_proj.bias.grad",               \
        "value_proj.weight.grad", "value_proj.bias.grad", "output_proj.weight.grad",        \
        "output_proj.bias.grad", "output.grad", "V.grad", "att_weight.grad", "scores.grad",  \
        "Q.grad", "K.grad", "attn_out", "lse", "query.grad", "key.grad", "value.grad"
static const char *const COMPUTED[] = {COMPUTED_COMMON, NULL};
static const char *const COMPUTED_TRAIN[] = {COMPUTED_COMMON, "att_weight_dropped",
                                             "att_weight_dropped.grad", NULL};

static Tensor *recorded(const RecordedCase *c, const char *name) {
    return load_npy(path_join("%s/%s.npy", c->reference, name));
}

// --- against PyTorch --------------------------------------------------------------------

START_TEST(test_matches_pytorch) {
    const RecordedCase *c = recorded_case(REF_DIR, _i);
    bool train = case_int(c, "train") != 0;
    ReferenceRun run = {
        .lesson = LESSON_DIR,
        .exact = train ? EXACT_TRAIN : EXACT,
        .computed = train ? COMPUTED_TRAIN : COMPUTED,
        .atol = ATOL,
        .rtol = RTOL,
    };
    RunResult result = check_recorded_case(run, c);
    const char *claims[] = {
        "scores.grad is exactly 0 at every masked score: True\n",
        "their rows of K.grad and V.grad are exactly 0: True\n",
        "(within 1e-5: float rounding only)\n",
    };
    for (int i = 0; i < 3; i++) {
        ck_assert_msg(strstr(result.out, claims[i]) != NULL, "%s: '%s' not printed", c->dir,
                      claims[i]);
    }
}
END_TEST

// Part 1 in this process, on PyTorch's recorded inputs and parameters, in
// eval mode: the runs without --train (the train cases' noise comes from the
// run above).
START_TEST(test_part1_on_recorded_inputs) {
    const RecordedCase *c = recorded_case_where(REF_DIR, "train=0", _i);
    Sizes n = case_sizes(c);
    SelfAttV4 net;
    net.dim = n.dim;
    net.query_proj = linear_from(recorded(c, "query_proj.weight"), recorded(c, "query_proj.bias"));
    net.key_proj = linear_from(recorded(c, "key_proj.weight"), recorded(c, "key_proj.bias"));
    net.value_proj = linear_from(recorded(c, "value_proj.weight"), recorded(c, "value_proj.bias"));
    net.output_proj = linear_from(recorded(c, "output_proj.weight"),
                                  recorded(c, "output_proj.bias"));
    net.att_drop = ATT_DROPOUT;
    net.training = false;
    const Tensor *X = recorded(c, "X");
    const Tensor *mask = recorded(c, "mask");
    assert_bitwise_equal(cell_mask(n.batch, n.seq, n.causal), mask, "the mask");
    SelfAttV4Steps f;
    assert_close(SelfAttV4_forward(&f, &net, X, mask), recorded(c, "ret"), ATOL, RTOL, "ret");
    SelfAttV4Grads g = SelfAttV4_backward(&net, &f, X, recorded(c, "grad_out"));
    struct { const char *name; const Tensor *got; } grads[] = {
        {"X.grad", g.X}, {"query_proj.weight.grad", g.query_proj.weight},
        {"key_proj.bias.grad", g.key_proj.bias}, {"value_proj.bias.grad", g.value_proj.bias},
        {"output_proj.weight.grad", g.output_proj.weight}, {"output.grad", g.output},
        {"V.grad", g.V}, {"att_weight.grad", g.att_weight}, {"scores.grad", g.scores},
        {"Q.grad", g.Q}, {"K.grad", g.K},
    };
    for (size_t i = 0; i < sizeof grads / sizeof grads[0]; i++) {
        assert_close(grads[i].got, recorded(c, grads[i].name), ATOL, RTOL,
                     path_join("%s %s", c->dir, grads[i].name));
    }
}
END_TEST

// The kernel sets, slowest first. available(i): set i where this CPU has it;
// where it has not (or this build has none: not x86-64), NULL, and the running
// test notes that set as skipped (tests/harness.h: note_skipped).
static const char *const KERNEL_NAMES[] = {"scalar", "avx2", "avx512"};
enum { N_KERNEL_SETS = sizeof KERNEL_NAMES / sizeof KERNEL_NAMES[0] };

static const Kernels *available_in(const char *test, int i) {
    const Kernels *set = kernels_named(KERNEL_NAMES[i]);
    if (set == NULL) {
        note_skipped_in(test, "no %s kernels on this CPU: not checked", KERNEL_NAMES[i]);
    }
    return set;
}
#define available(i) available_in(__func__, i)

static FlashAttention flash_for(const Sizes *n, const Kernels *kernels) {
    FlashAttention flash =
        FlashAttention_init(n->heads, n->kv_heads, n->causal, n->block_q, n->block_k);
    flash.kernels = kernels;
    return flash;
}

// Part 2 in this process, on the recorded inputs: the tiled forward and
// backward with every kernel set this CPU has, and the standard backward's loops.
START_TEST(test_part2_on_recorded_inputs) {
    const RecordedCase *c = recorded_case(REF_DIR, _i);
    Sizes n = case_sizes(c);
    const Tensor *query = recorded(c, "query"), *key = recorded(c, "key");
    const Tensor *value = recorded(c, "value"), *grad = recorded(c, "grad_attn_out");
    const char *names[3] = {"query.grad", "key.grad", "value.grad"};
    for (int k = 0; k < N_KERNEL_SETS; k++) {
        if (available(k) == NULL) {
            continue;
        }
        FlashAttention flash = flash_for(&n, available(k));
        Tensor *lse;
        const Tensor *out = FlashAttention_forward(&lse, &flash, query, key, value);
        assert_close(out, recorded(c, "attn_out"), ATOL, RTOL, path_join("%s attn_out", c->dir));
        assert_close(lse, recorded(c, "lse"), ATOL, RTOL, path_join("%s lse", c->dir));
        QKVGrads g = FlashAttention_backward(NULL, &flash, query, key, value, out, lse, grad);
        const Tensor *got[3] = {g.query, g.key, g.value};
        for (int i = 0; i < 3; i++) {
            assert_close(got[i], recorded(c, names[i]), ATOL, RTOL,
                         path_join("%s %s, %s kernels", c->dir, names[i], available(k)->name));
        }
    }
    const Tensor *P;
    standard_attention(&P, query, key, value, n.causal);
    QKVGrads standard = standard_backward(P, query, key, value, grad);
    const Tensor *got[3] = {standard.query, standard.key, standard.value};
    for (int i = 0; i < 3; i++) {
        assert_close(got[i], recorded(c, names[i]), ATOL, RTOL,
                     path_join("%s %s, standard", c->dir, names[i]));
    }
}
END_TEST

// --- invariants -------------------------------------------------------------------------

typedef struct {
    const Tensor *query, *key, *value, *grad_out;
} Inputs;

static Inputs draw_inputs(uint64_t seed, const Sizes *n) {
    manual_seed(seed);
    Inputs in;
    in.query = randn(shape4(n->batch, n->heads, n->seq, n->head_dim));
    in.key = randn(shape4(n->batch, n->kv_heads, n->seq, n->head_dim));
    in.value = randn(shape4(n->batch, n->kv_heads, n->seq, n->head_dim));
    in.grad_out = randn(shape4(n->batch, n->heads, n->seq, n->head_dim));
    return in;
}

static QKVGrads tiled_backward(BackwardSteps *steps, const Sizes *n, const Kernels *kernels,
                               const Inputs *in) {
    FlashAttention flash = flash_for(n, kernels);
    Tensor *lse;
    const Tensor *out = FlashAttention_forward(&lse, &flash, in->query, in->key, in->value);
    return FlashAttention_backward(steps, &flash, in->query, in->key, in->value, out, lse,
                                   in->grad_out);
}

static void assert_grads_close(const QKVGrads *got, const QKVGrads *want, float atol,
                               const char *what) {
    assert_close(got->query, want->query, atol, 0.0f, path_join("%s query.grad", what));
    assert_close(got->key, want->key, atol, 0.0f, path_join("%s key.grad", what));
    assert_close(got->value, want->value, atol, 0.0f, path_join("%s value.grad", what));
}

// Tiled equals standard within 1e-5 for every pair of block sizes of a grid:
// 1, blocks that divide seq, blocks that do not, seq itself, larger than seq.
START_TEST(test_tiled_equals_standard_over_block_grid) {
    static const int blocks[] = {1, 3, 5, 16, 17, 36, 37, 4096};
    enum { N_BLOCKS = sizeof blocks / sizeof blocks[0] };
    Sizes n = {2, 37, 0, 4, 2, 20, 0, 0, _i == 1, false, 1};   // GQA, head_dim not 16k
    Inputs in = draw_inputs(11, &n);
    const Tensor *P;
    standard_attention(&P, in.query, in.key, in.value, n.causal);
    QKVGrads want = standard_backward(P, in.query, in.key, in.value, in.grad_out);
    for (int a = 0; a < N_BLOCKS; a++) {
        for (int b = 0; b < N_BLOCKS; b++) {
            size_t mark = arena_mark();
            n.block_q = blocks[a];
            n.block_k = blocks[b];
            QKVGrads got = tiled_backward(NULL, &n, kernels_best(), &in);
            assert_grads_close(&got, &want, TOLERANCE,
                               path_join("causal %d, blocks %d x %d", n.causal, n.block_q,
                                         n.block_k));
            arena_release(mark);
        }
    }
}
END_TEST

// A query that sees one key (query 0 under the causal mask) has weight 1 on
// it whatever its score: its dQ is exactly 0, as autograd has it, in the
// tiled backward (delta = dO . O and dP = dO . v are the same sum of the same
// products) with every kernel set, and in the standard one.
START_TEST(test_one_key_query_gets_zero_dq) {
    Sizes n = {2, 23, 0, 4, 2, 24, 5, 7, true, false, 1};
    Inputs in = draw_inputs(12, &n);
    for (int k = 0; k < N_KERNEL_SETS; k++) {
        if (available(k) == NULL) {
            continue;
        }
        QKVGrads g = tiled_backward(NULL, &n, available(k), &in);
        for (int b = 0; b < n.batch; b++) {
            for (int h = 0; h < n.heads; h++) {
                for (int d = 0; d < n.head_dim; d++) {
                    ck_assert_msg(*at4(g.query, b, h, 0, d) == 0.0f, "%s: dq[%d, %d, 0, %d] = %g",
                                  available(k)->name, b, h, d, (double)*at4(g.query, b, h, 0, d));
                }
            }
        }
    }
    const Tensor *P;
    standard_attention(&P, in.query, in.key, in.value, true);
    QKVGrads standard = standard_backward(P, in.query, in.key, in.value, in.grad_out);
    for (int d = 0; d < n.head_dim; d++) {
        ck_assert(*at4(standard.query, 1, 3, 0, d) == 0.0f);
    }
    // Its recomputed P is exactly 1: S is the forward's score to the bit, and
    // lse = m + log(1) = that score.
    FlashAttention flash = flash_for(&n, kernels_best());
    Tensor *lse;
    FlashAttention_forward(&lse, &flash, in.query, in.key, in.value);
    ck_assert(*at2(first_tile_P(&flash, in.query, in.key, lse), 0, 0) == 1.0f);
}
END_TEST

// Softmax's gradient is orthogonal to the all-ones vector: every row of dS
// sums to 0. So key.grad, which is dS^T Q / sqrt(D), sums to 0 over the keys
// of a head (the gradient a shared shift of every key would get), and so
// does part 1's scores.grad over each row and key_proj.bias.grad.
START_TEST(test_rows_of_dS_sum_to_zero) {
    Sizes n = {2, 29, 0, 6, 3, 16, 8, 8, _i == 1, false, 1};
    Inputs in = draw_inputs(13, &n);
    QKVGrads g = tiled_backward(NULL, &n, kernels_best(), &in);
    for (int b = 0; b < n.batch; b++) {
        for (int kv = 0; kv < n.kv_heads; kv++) {
            for (int d = 0; d < n.head_dim; d++) {
                double sum = 0.0, size = 0.0;
                for (int s = 0; s < n.seq; s++) {
                    sum += *at4(g.key, b, kv, s, d);
                    size += fabs(*at4(g.key, b, kv, s, d));
                }
                ck_assert_msg(fabs(sum) <= 1e-6 * size + 1e-7, "key.grad[%d, %d, :, %d] sums "
                              "to %g (of sizes summing to %g)", b, kv, d, sum, size);
            }
        }
    }
    manual_seed(14);
    const Tensor *X = rand_tensor(shape3(3, 7, 5));
    const Tensor *mask = cell_mask(3, 7, _i == 1);
    SelfAttV4 net = SelfAttV4_init(5);
    net.training = _i == 1;
    SelfAttV4Steps f;
    const Tensor *ret = SelfAttV4_forward(&f, &net, X, mask);
    SelfAttV4Grads p1 = SelfAttV4_backward(&net, &f, X, randn(ret->shape));
    for (int b = 0; b < 3; b++) {
        for (int t = 0; t < 7; t++) {
            double sum = 0.0;
            for (int s = 0; s < 7; s++) {
                sum += *at3(p1.scores, b, t, s);
            }
            ck_assert_msg(fabs(sum) < 1e-6, "scores.grad[%d, %d] sums to %g", b, t, sum);
        }
    }
    for (int c = 0; c < 5; c++) {
        ck_assert(fabsf(*at1(p1.key_proj.bias, c)) < 1e-6f);
    }
}
END_TEST

// Masked scores pass no gradient: scores.grad is exactly 0 wherever the
// mask is 0, and a key no query attends to (padding) gets rows of K.grad and
// V.grad that are exactly 0; with dropout, so does a dropped weight's
// att_weight.grad.
START_TEST(test_masked_get_exactly_zero) {
    manual_seed(15);
    int B = 4, T = 6, C = 3;
    const Tensor *X = rand_tensor(shape3(B, T, C));
    const Tensor *mask = cell_mask(B, T, false);
    SelfAttV4 net = SelfAttV4_init(C);
    net.training = _i == 1;
    SelfAttV4Steps f;
    const Tensor *ret = SelfAttV4_forward(&f, &net, X, mask);
    SelfAttV4Grads g = SelfAttV4_backward(&net, &f, X, randn(ret->shape));
    int unseen = 0, dropped = 0;
    for (int b = 0; b < B; b++) {
        for (int s = 0; s < T; s++) {
            int seen = 0;
            for (int t = 0; t < T; t++) {
                if (*at3(mask, b, t, s) == 0.0f) {
                    ck_assert(*at3(g.scores, b, t, s) == 0.0f);
                } else {
                    seen += 1;
                }
                if (f.noise != NULL && *at3(f.noise, b, t, s) == 0.0f) {
                    ck_assert(*at3(g.att_weight, b, t, s) == 0.0f);
                    dropped += 1;
                }
            }
            for (int c = 0; seen == 0 && c < C; c++) {
                ck_assert(*at3(g.K, b, s, c) == 0.0f && *at3(g.V, b, s, c) == 0.0f);
            }
            unseen += seen == 0;
        }
    }
    ck_assert_int_eq(unseen, 1 + 2 + 3 + 4);   // batch row b keeps max(1, T-1-b) keys
    ck_assert(_i == 0 || dropped > 0);
}
END_TEST

// The analytic gradients of part 1 against central differences in double,
// entry by entry, for every parameter and X: padding and causal, eval and
// train. What float rounding leaves: about 1e-6 of the largest gradient.
START_TEST(test_central_differences) {
    bool causal = _i & 1, train = _i & 2;
    manual_seed(16 + (uint64_t)_i);
    int B = 2, T = 4, C = 3;
    const Tensor *X = rand_tensor(shape3(B, T, C));
    const Tensor *mask = cell_mask(B, T, causal);
    SelfAttV4 net = SelfAttV4_init(C);
    net.training = train;
    SelfAttV4Steps f;
    const Tensor *ret = SelfAttV4_forward(&f, &net, X, mask);
    const Tensor *grad_out = randn(ret->shape);
    SelfAttV4Grads g = SelfAttV4_backward(&net, &f, X, grad_out);
    const Tensor *values[9] = {X, net.query_proj.weight, net.query_proj.bias,
                               net.key_proj.weight, net.key_proj.bias, net.value_proj.weight,
                               net.value_proj.bias, net.output_proj.weight,
                               net.output_proj.bias};
    const Tensor *grads[9] = {g.X, g.query_proj.weight, g.query_proj.bias, g.key_proj.weight,
                              g.key_proj.bias, g.value_proj.weight, g.value_proj.bias,
                              g.output_proj.weight, g.output_proj.bias};
    for (int i = 0; i < 9; i++) {
        for (long e = 0; e < numel(values[i]); e++) {
            size_t mark = arena_mark();
            double up = loss_in_double(&net, X, mask, f.noise, grad_out, values[i], e, CHECK_STEP);
            double down =
                loss_in_double(&net, X, mask, f.noise, grad_out, values[i], e, -CHECK_STEP);
            double central = (up - down) / (2 * CHECK_STEP), analytic = grads[i]->data[e];
            ck_assert_msg(fabs(analytic - central) <= 2e-6 + 1e-5 * fabs(central),
                          "causal %d train %d, tensor %d element %ld: analytic %.9g, central "
                          "differences %.9g", causal, train, i, e, analytic, central);
            arena_release(mark);
        }
    }
}
END_TEST

// The backward's blocks are one allocation whose size depends on the blocks
// and head_dim only: the same at two sequence lengths, 8 times apart; what
// grows is delta, one float per query of one head. The standard path's grows 64x.
START_TEST(test_extra_memory) {
    int seqs[2] = {32, 256};
    size_t blocks[2], delta[2], allocations[2];
    for (int i = 0; i < 2; i++) {
        Sizes n = {1, seqs[i], 0, 2, 1, 16, 16, 32, i == 1, false, 1};
        Inputs in = draw_inputs(3, &n);
        FlashAttention flash = flash_for(&n, kernels_best());
        Tensor *lse;
        const Tensor *out = FlashAttention_forward(&lse, &flash, in.query, in.key, in.value);
        size_t mark = arena_mark();
        BackwardSteps steps;
        FlashAttention_backward(&steps, &flash, in.query, in.key, in.value, out, lse, in.grad_out);
        allocations[i] = arena_mark() - mark;
        blocks[i] = steps.scratch_bytes;
        delta[i] = steps.delta_bytes;
    }
    ck_assert_uint_eq(blocks[0], blocks[1]);
    // (2 D + 2 Bq) ldk + Bq D floats, ldk = Bk rounded up to 16: K_j^T, V_j^T, P, dS, Q_i / sqrt(D)
    ck_assert_uint_eq(blocks[0], ((2 * 16 + 2 * 16) * 32 + 16 * 16) * sizeof(float));
    ck_assert_uint_eq(delta[0], 32 * sizeof(float));
    ck_assert_uint_eq(delta[1], 256 * sizeof(float));
    ck_assert_uint_eq(allocations[0], allocations[1]);   // the three gradients and the scratch
    ck_assert_uint_eq(standard_extra_bytes(1, 2, 256), 64 * standard_extra_bytes(1, 2, 32));
}
END_TEST

// The tiles the backward visits: the same kinds as the forward's (lesson
// 13's tile_kind), and its FLOPs are five products of 2 * nq * nk * D per
// visited tile: 10*B*H*N*N*D without the mask.
START_TEST(test_tile_counts_and_flops) {
    static const int blocks[][2] = {{16, 16}, {8, 16}, {16, 5}, {1, 1}, {7, 64}, {64, 3}};
    int N = 64;
    for (int i = 0; i < 6; i++) {
        for (int causal = 0; causal < 2; causal++) {
            int Bq = blocks[i][0], Bk = blocks[i][1];
            long counts[3] = {0, 0, 0};
            double flops = 0.0;
            for (int qs = 0; qs < N; qs += Bq) {
                for (int ks = 0; ks < N; ks += Bk) {
                    int nq = min_int(Bq, N - qs), nk = min_int(Bk, N - ks), masked = 0;
                    for (int t = qs; t < qs + nq; t++) {
                        for (int s = ks; s < ks + nk; s++) {
                            masked += causal && s > t;
                        }
                    }
                    TileKind want = masked == 0 ? TILE_FULL
                                    : masked == nq * nk ? TILE_SKIPPED : TILE_DIAGONAL;
                    ck_assert(tile_kind(causal, qs, nq, ks, nk) == want);
                    counts[want] += 1;
                    flops += want == TILE_SKIPPED ? 0.0 : 10.0 * nq * nk * 2;
                }
            }
            Sizes n = {1, N, 0, 3, 3, 2, Bq, Bk, causal, false, 1};
            Inputs in = draw_inputs(1, &n);
            BackwardSteps steps;
            tiled_backward(&steps, &n, kernels_best(), &in);
            for (int k = 0; k < 3; k++) {
                ck_assert_msg(steps.tiles[k] == 3 * counts[k], "blocks %d x %d causal %d: %ld "
                              "tiles of kind %d, expected %ld", Bq, Bk, causal, steps.tiles[k],
                              k, 3 * counts[k]);
            }
            ck_assert(steps.flops == 3 * flops);
            ck_assert(causal || steps.flops == 10.0 * 3 * N * N * 2);
        }
    }
}
END_TEST

// Lesson 14's forwards are lessons 5 and 13's: run them with the same flags
// and compare the dumps. Part 1's module draws what lesson 5's does (X, the
// four Linears, dropout), so ret is lesson 5's bit for bit; part 2's tiled
// forward is lesson 13's loop (the same blocks, products, max and rescaling,
// in the same order), but lesson 13's kernels now work in base 2 (queries
// times log2(e) / sqrt(D), exp2, out times 1 / l), so attn_out is lesson
// 13's out to float rounding: within 1e-6.
START_TEST(test_forwards_are_lessons_5_and_13) {
    if (access(lesson_binary("05-self-attention-v4"), X_OK) != 0 ||
        access(lesson_binary("13-flash-attention"), X_OK) != 0) {
        skip_test("lessons 5 and 13 are not built (make test-14 and make test build them)");
    }
    const char *dir = make_temp_dir();
    const char *mine = path_join("%s/14", dir), *five = path_join("%s/5", dir);
    const char *thirteen = path_join("%s/13", dir);
    const char *flags14[] = {"--dump", mine, "--seed", "9", "--batch", "2", "--seq", "11",
                             "--dim", "6", "--train", "--heads", "4", "--kv-heads", "2",
                             "--head-dim", "20", "--block-q", "4", "--block-k", "3", NULL};
    RunResult r = run_program(lesson_binary(LESSON_DIR), flags14);
    ck_assert_msg(r.status == 0, "%s", r.err);
    const char *flags5[] = {"--dump", five, "--seed", "9", "--batch", "2", "--seq", "11",
                            "--dim", "6", "--train", NULL};
    r = run_program(lesson_binary("05-self-attention-v4"), flags5);
    ck_assert_msg(r.status == 0, "%s", r.err);
    const char *flags13[] = {"--dump", thirteen, "--seed", "9", "--batch", "2", "--seq", "11",
                             "--heads", "4", "--kv-heads", "2", "--head-dim", "20", "--block-q",
                             "4", "--block-k", "3", NULL};
    r = run_program(lesson_binary("13-flash-attention"), flags13);
    ck_assert_msg(r.status == 0, "%s", r.err);
    const char *same5[] = {"X", "query_proj.weight", "output_proj.bias", "att_weight", "ret"};
    for (int i = 0; i < 5; i++) {
        assert_bitwise_equal(load_npy(path_join("%s/%s.npy", mine, same5[i])),
                             load_npy(path_join("%s/%s.npy", five, same5[i])), same5[i]);
    }
    assert_bitwise_equal(load_npy(path_join("%s/query.npy", mine)),
                         load_npy(path_join("%s/query.npy", thirteen)), "query");
    assert_close(load_npy(path_join("%s/attn_out.npy", mine)),
                 load_npy(path_join("%s/out.npy", thirteen)), 1e-6f, 1e-6f, "attn_out and out");
    remove_tree(dir);
}
END_TEST

// --- threads ------------------------------------------------------------------------------

// The tiled backward on `threads` workers, with these kernels.
static QKVGrads tiled_backward_on(BackwardSteps *steps, const Sizes *n, const Kernels *kernels,
                                  int threads, const Inputs *in, const Tensor *out,
                                  const Tensor *lse) {
    FlashAttention flash = flash_for(n, kernels);
    flash.threads = threads;
    return FlashAttention_backward(steps, &flash, in->query, in->key, in->value, out, lse,
                                   in->grad_out);
}

// The first element where two tensors of one shape differ in their bits, or -1.
static long first_difference(const Tensor *a, const Tensor *b) {
    ck_assert_int_eq(numel(a), numel(b));
    const Tensor *ac = contiguous(a), *bc = contiguous(b);
    for (long i = 0; i < numel(a); i++) {
        if (memcmp(&ac->data[ac->offset + i], &bc->data[bc->offset + i], sizeof(float)) != 0) {
            return i;
        }
    }
    return -1;
}

// The three gradients of `got` against `want`, bit for bit: the first that differs, or -1
// (in *which, the gradient: 0 query, 1 key, 2 value).
static long first_grad_difference(int *which, const QKVGrads *got, const QKVGrads *want) {
    const Tensor *g[3] = {got->query, got->key, got->value};
    const Tensor *w[3] = {want->query, want->key, want->value};
    for (*which = 0; *which < 3; *which += 1) {
        long i = first_difference(g[*which], w[*which]);
        if (i >= 0) {
            return i;
        }
    }
    return -1;
}

// Odd splits, on every kernel set this CPU has: GQA groups of 3 (a unit is 3 query
// heads), more threads than (b, g) units, one unit (MQA, batch 1), seq 1, blocks of 1:
// 2, 3 and 64 threads give one thread's gradients bit for bit, and the same counts.
// A planted difference, grad_out moved by one ulp in one place, is caught by the same
// comparison: the comparison can fail.
START_TEST(test_threads_give_the_same_bits) {
    const Sizes shapes[] = {
        {2, 37, 0, 6, 2, 20, 5, 7, false, false, 1},    // 4 units of 3 query heads
        {1, 40, 0, 4, 1, 16, 16, 16, false, false, 1},  // MQA, batch 1: one unit
        {3, 1, 0, 2, 2, 5, 64, 64, false, false, 1},    // seq 1: 6 units
        {1, 9, 0, 2, 2, 4, 1, 1, false, false, 1},      // blocks of 1
    };
    for (int k = 0; k < N_KERNEL_SETS; k++) {
        const Kernels *kernels = available(k);
        for (int s = 0; kernels != NULL && s < 4; s++) {
            for (int causal = 0; causal < 2; causal++) {
                size_t mark = arena_mark();
                Sizes n = shapes[s];
                n.causal = causal;
                Inputs in = draw_inputs(40 + s, &n);
                FlashAttention flash = flash_for(&n, kernels);
                Tensor *lse;
                const Tensor *out = FlashAttention_forward(&lse, &flash, in.query, in.key,
                                                           in.value);
                BackwardSteps one, many;
                QKVGrads want = tiled_backward_on(&one, &n, kernels, 1, &in, out, lse);
                ck_assert_int_eq(one.workers, 1);
                static const int threads[] = {2, 3, 64};
                for (int t = 0; t < 3; t++) {
                    const char *what = path_join("%s kernels, shape %d, causal %d, %d threads",
                                                 kernels->name, s, causal, threads[t]);
                    QKVGrads got = tiled_backward_on(&many, &n, kernels, threads[t], &in, out,
                                                     lse);
                    int which;
                    long i = first_grad_difference(&which, &got, &want);
                    ck_assert_msg(i < 0, "%s: %s.grad differs at element %ld", what,
                                  (const char *[]){"query", "key", "value"}[which], i);
                    ck_assert_int_eq(many.workers,
                                     min_int(threads[t], n.batch * n.kv_heads));
                    ck_assert_msg(many.flops == one.flops && many.scratch_bytes ==
                                  one.scratch_bytes && many.delta_bytes == one.delta_bytes,
                                  "%s: other counts", what);
                    for (int kind = 0; kind < 3; kind++) {
                        ck_assert_msg(many.tiles[kind] == one.tiles[kind], "%s: %ld tiles of "
                                      "kind %d, one thread %ld", what, many.tiles[kind], kind,
                                      one.tiles[kind]);
                    }
                }
                // The plant: the last number of grad_out one ulp up, on 2 threads.
                Tensor *moved = clone(in.grad_out);
                float *last = &moved->data[moved->offset + numel(moved) - 1];
                *last = nextafterf(*last, INFINITY);
                Inputs planted = in;
                planted.grad_out = moved;
                QKVGrads got = tiled_backward_on(NULL, &n, kernels, 2, &planted, out, lse);
                int which;
                ck_assert_msg(first_grad_difference(&which, &got, &want) >= 0,
                              "%s kernels, shape %d, causal %d: a grad_out one ulp away gave "
                              "the same bits", kernels->name, s, causal);
                arena_release(mark);
            }
        }
    }
}
END_TEST

// Every recorded case, from PyTorch's inputs: 2 threads (this machine's cores) and 7
// give one thread's gradients bit for bit.
START_TEST(test_threads_on_every_recorded_case) {
    const RecordedCase *c = recorded_case(REF_DIR, _i);
    Sizes n = case_sizes(c);
    Inputs in = {recorded(c, "query"), recorded(c, "key"), recorded(c, "value"),
                 recorded(c, "grad_attn_out")};
    FlashAttention flash = flash_for(&n, kernels_best());
    Tensor *lse;
    const Tensor *out = FlashAttention_forward(&lse, &flash, in.query, in.key, in.value);
    QKVGrads want = tiled_backward_on(NULL, &n, kernels_best(), 1, &in, out, lse);
    for (int threads = 2; threads <= 7; threads += 5) {
        QKVGrads got = tiled_backward_on(NULL, &n, kernels_best(), threads, &in, out, lse);
        int which;
        long i = first_grad_difference(&which, &got, &want);
        ck_assert_msg(i < 0, "%s, %d threads: %s.grad differs at element %ld", c->dir, threads,
                      (const char *[]){"query", "key", "value"}[which], i);
    }
}
END_TEST

// The bytes of two files equal; false if either cannot be read.
static bool same_file(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa != NULL && fb != NULL;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        same = ca == cb;
        if (ca == EOF) {
            break;
        }
    }
    if (fa != NULL) {
        fclose(fa);
    }
    if (fb != NULL) {
        fclose(fb);
    }
    return same;
}

// How many .npy files of directory `a` differ, byte for byte, from those of the same
// name in `b` (one that `b` lacks differs); *compared: how many `a` has.
static int differing_dumps(int *compared, const char *a, const char *b) {
    DIR *d = opendir(a);
    ck_assert_msg(d != NULL, "cannot read %s", a);
    int differ = 0;
    *compared = 0;
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
        size_t n = strlen(e->d_name);
        if (n >= 5 && strcmp(e->d_name + n - 4, ".npy") == 0) {
            differ += !same_file(path_join("%s/%s", a, e->d_name),
                                 path_join("%s/%s", b, e->d_name));
            *compared += 1;
        }
    }
    closedir(d);
    return differ;
}

// The program on 1, 2, 3 and 64 threads (4 units: 64 is more threads than units), causal,
// GQA, with each kernel set this CPU has: the same printed text, byte for byte, and the
// same --dump files. A run with another seed must differ in both (the comparisons can fail).
START_TEST(test_threads_print_and_dump_the_same_bits) {
    const char *names[3] = {"scalar", "avx2", "avx512"}, *threads[4] = {"1", "2", "3", "64"};
    const char *tmp = make_temp_dir();
    const char *forced = getenv("ATTN_KERNELS");   // make valgrind's, put back at the end
    forced = forced != NULL ? path_join("%s", forced) : NULL;
    const char *scalar_out = NULL;
    for (int k = 0; k < 3; k++) {
        if (kernels_named(names[k]) == NULL) {
            note_skipped("no %s kernels on this CPU: their threads not compared", names[k]);
            continue;
        }
        setenv("ATTN_KERNELS", names[k], 1);
        const char *one_out = NULL, *one_dump = NULL;
        for (int t = 0; t < 5; t++) {   // t == 4: the plant, --seed 1 on 2 threads
            const char *dump = path_join("%s/%s-%d", tmp, names[k], t);
            const char *argv[] = {"--batch", "2", "--seq", "23", "--dim", "4", "--heads", "6",
                                  "--kv-heads", "2", "--head-dim", "8", "--block-q", "5",
                                  "--block-k", "7", "--causal", "--threads",
                                  t < 4 ? threads[t] : "2", "--dump", dump, "--seed",
                                  t < 4 ? "0" : "1", NULL};
            RunResult r = run_program(lesson_binary(LESSON_DIR), argv);
            ck_assert_msg(r.status == 0 && r.err[0] == '\0', "%s, --threads %s: exit %d: %s",
                          names[k], threads[t % 4], r.status, r.err);
            if (t == 0) {
                one_out = r.out;
                one_dump = dump;
                int compared;
                ck_assert_int_eq(differing_dumps(&compared, dump, dump), 0);
                ck_assert_int_eq(compared, 42);   // part 1's 33 dumps and part 2's 9
                ck_assert(scalar_out == NULL || strcmp(r.out, scalar_out) == 0);
                scalar_out = scalar_out == NULL ? r.out : scalar_out;
            } else if (t < 4) {
                ck_assert_msg(strcmp(r.out, one_out) == 0, "%s: --threads %s prints other "
                              "lines than --threads 1", names[k], threads[t]);
                int compared, differ = differing_dumps(&compared, dump, one_dump);
                ck_assert_msg(differ == 0 && compared == 42, "%s: --threads %s: %d of %d "
                              "dumps differ from --threads 1's", names[k], threads[t], differ,
                              compared);
            } else {
                ck_assert_msg(strcmp(r.out, one_out) != 0, "%s: --seed 1 printed what --seed 0 "
                              "did", names[k]);
                int compared;   // all but the mask, which no seed changes
                ck_assert_int_eq(differing_dumps(&compared, dump, one_dump), 41);
            }
        }
    }
    if (forced != NULL) {
        setenv("ATTN_KERNELS", forced, 1);
    } else {
        unsetenv("ATTN_KERNELS");
    }
    remove_tree(tmp);
}
END_TEST

// --bench prices --threads N: every round runs the tiled backward on N threads and on one
// (as many rounds), so its time doubles where the loops do not run (seq 8192); and the
// first round holds a set of blocks and delta more for each worker of the N-thread run
// (one a head: 8 at most) and one for the run on one thread.
START_TEST(test_bench_prices_threads) {
    const int seqs[1] = {8192};
    BenchRun one = {false, 64, 64, kernels_best(), 1};
    for (int threads = 2; threads <= 64; threads += 62) {
        BenchRun many = one;
        many.threads = threads;
        Cost c1 = bench_cost(seqs, 1, &one), cn = bench_cost(seqs, 1, &many);
        ck_assert_double_eq_tol(cn.kernel_seconds - 0.2, 2 * (c1.kernel_seconds - 0.2),
                                1e-9 * c1.kernel_seconds);
        double set = 4.0 * ((2 * 64 + 2 * 64) * 64 + 64 * 64 + 8192);   // bytes: blocks, delta
        int more = min_int(threads, 8);   // workers - 1, and one for the one-thread run
        ck_assert_double_eq_tol(cn.bytes - c1.bytes, more * set, 1e-6 * set);
    }
}
END_TEST

// --- the kernels ------------------------------------------------------------------------

// The whole forward and backward with each vector kernel set equal the
// scalar twins' bit for bit (where this CPU has them).
START_TEST(test_vector_equals_scalar_bitwise) {
    static const Sizes shapes[] = {
        {2, 29, 0, 6, 3, 24, 7, 5, true, false, 1},     // GQA, head_dim 24, edges everywhere
        {1, 64, 0, 2, 2, 64, 64, 64, false, false, 1},  // full tiles only
        {1, 13, 0, 3, 1, 40, 1, 4, true, false, 1},     // blocks of 1 query
        {1, 50, 0, 2, 2, 16, 48, 256, true, false, 1},  // one key block longer than seq
    };
    for (int k = 1; k < N_KERNEL_SETS; k++) {
        if (available(k) == NULL) {
            continue;
        }
        for (int i = 0; i < 4; i++) {
            Inputs in = draw_inputs(20 + (uint64_t)i, &shapes[i]);
            QKVGrads fast = tiled_backward(NULL, &shapes[i], available(k), &in);
            QKVGrads twin = tiled_backward(NULL, &shapes[i], &SCALAR_KERNELS, &in);
            const char *what = path_join("shape %d, %s", i, available(k)->name);
            assert_bitwise_equal(fast.query, twin.query, what);
            assert_bitwise_equal(fast.key, twin.key, what);
            assert_bitwise_equal(fast.value, twin.value, what);
        }
    }
}
END_TEST

// matmul on every shape it meets: rows 1 .. 17 (both register tiles' edges),
// columns 1 .. 40, A by rows and by columns, accumulating or not.
START_TEST(test_matmul_vector_equals_scalar) {
    manual_seed(4);
    Tensor *a = randn(shape2(64, 64)), *b = randn(shape2(64, 48)), *c0 = randn(shape2(17, 48));
    static const int ms[] = {1, 5, 6, 7, 8, 9, 12, 17}, ns[] = {1, 7, 8, 15, 16, 17, 31, 32, 40};
    static const int ks[] = {1, 3, 64};
    for (int k = 1; k < N_KERNEL_SETS; k++) {
        const Kernels *vector = available(k);
        for (int mi = 0; vector != NULL && mi < 8; mi++) {
            for (int ni = 0; ni < 9; ni++) {
                for (int ki = 0; ki < 3; ki++) {
                    for (int form = 0; form < 4; form++) {
                        bool by_rows = form & 1, accumulate = form & 2;
                        float got[17 * 48], want[17 * 48];
                        memcpy(got, c0->data, sizeof got);
                        memcpy(want, c0->data, sizeof want);
                        int a_row = by_rows ? 64 : 1, a_col = by_rows ? 1 : 64;
                        vector->matmul(got, 48, a->data, a_row, a_col, b->data, 48, ms[mi],
                                       ns[ni], ks[ki], accumulate);
                        SCALAR_KERNELS.matmul(want, 48, a->data, a_row, a_col, b->data, 48,
                                              ms[mi], ns[ni], ks[ki], accumulate);
                        assert_same_floats(got, want, 17 * 48,
                                         path_join("%s matmul %d x %d, k %d, form %d",
                                                   vector->name, ms[mi], ns[ni], ks[ki], form));
                    }
                }
            }
        }
    }
}
END_TEST

// softmax_backward, row_dots and scale: every count up to 40 (the vector
// widths' tails), causal diagonals that cut a vector anywhere, scores far
// below the row's lse (exp underflows to 0) and NaN-free extremes.
START_TEST(test_elementwise_vector_equals_scalar) {
    manual_seed(5);
    int rows = 9, lds = 48;
    Tensor *s0 = randn(shape2(rows, lds)), *ds0 = randn(shape2(rows, lds));
    Tensor *lse = randn(shape1(rows)), *delta = randn(shape1(rows));
    s0->data[3] = -1e30f;   // far below: P = 0
    s0->data[50] = 1e3f;    // above the lse: exp clamped
    for (int k = 1; k < N_KERNEL_SETS; k++) {
        const Kernels *vector = available(k);
        for (int cols = 1; vector != NULL && cols <= 40; cols++) {
            for (int diagonal = -3; diagonal <= cols; diagonal += 5) {
                float s[9 * 48], ds[9 * 48], s_twin[9 * 48], ds_twin[9 * 48];
                memcpy(s, s0->data, sizeof s);
                memcpy(ds, ds0->data, sizeof ds);
                memcpy(s_twin, s0->data, sizeof s);
                memcpy(ds_twin, ds0->data, sizeof ds);
                vector->softmax_backward(s, ds, lse->data, delta->data, rows, cols, lds, 0.25f,
                                         diagonal);
                SCALAR_KERNELS.softmax_backward(s_twin, ds_twin, lse->data, delta->data, rows,
                                                cols, lds, 0.25f, diagonal);
                const char *what = path_join("%s, %d columns, diagonal %d", vector->name, cols,
                                             diagonal);
                assert_same_floats(s, s_twin, rows * lds, path_join("P: %s", what));
                assert_same_floats(ds, ds_twin, rows * lds, path_join("dS: %s", what));
            }
        }
        for (int D = 1; vector != NULL && D <= 40; D += 3) {
            float got[9], want[9];
            vector->row_dots(got, s0->data, ds0->data, rows, D);
            SCALAR_KERNELS.row_dots(want, s0->data, ds0->data, rows, D);
            assert_same_floats(got, want, rows, path_join("%s row_dots, D %d", vector->name, D));
        }
        for (long count = 1; vector != NULL && count <= 40; count++) {
            float got[40], want[40];
            vector->scale(got, s0->data, count, 0.125f);
            SCALAR_KERNELS.scale(want, s0->data, count, 0.125f);
            assert_same_floats(got, want, count, path_join("%s scale, %ld", vector->name, count));
        }
    }
}
END_TEST

// The kernels' exp: within 1 ulp of libm's expf wherever the result is a
// normal float, 0 below that (and for -inf and NaN); each vector exp (through
// softmax_backward with scale 1 and lse 0) equals the scalar one. On 16,384
// points; tools/exp_every_float_14.sh checks every float (minutes, not a test).
START_TEST(test_exp) {
    enum { COUNT = 1 << 14 };
    static float x[COUNT], scalar_out[COUNT];
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
            ck_assert_msg(scalar_out[i] == 0.0f, "exp(%g) = %g", x[i], scalar_out[i]);
        }
    }
    for (int k = 1; k < N_KERNEL_SETS; k++) {
        if (available(k) == NULL) {
            continue;
        }
        static float s[COUNT], ds[COUNT];
        float zero = 0.0f;
        memcpy(s, x, sizeof x);
        available(k)->softmax_backward(s, ds, &zero, &zero, 1, COUNT, COUNT, 1.0f, COUNT);
        assert_same_floats(s, scalar_out, COUNT, path_join("%s exp", available(k)->name));
    }
}
END_TEST

// ATTN_KERNELS chooses the kernels: each that this CPU has prints the same
// text as the default (the same bits); another word is refused in one line.
START_TEST(test_kernels_variable) {
    const char *args[] = {"--causal", "--seq", "9", "--block-q", "4", "--block-k", "3", NULL};
    RunResult best = run_program(lesson_binary(LESSON_DIR), args);
    ck_assert_int_eq(best.status, 0);
    for (int k = 0; k < N_KERNEL_SETS; k++) {
        if (available(k) == NULL) {
            continue;
        }
        setenv("ATTN_KERNELS", KERNEL_NAMES[k], 1);
        RunResult forced = run_program(lesson_binary(LESSON_DIR), args);
        unsetenv("ATTN_KERNELS");
        ck_assert_int_eq(forced.status, 0);
        ck_assert_msg(strcmp(forced.out, best.out) == 0, "ATTN_KERNELS=%s prints other numbers",
                      KERNEL_NAMES[k]);
    }
    setenv("ATTN_KERNELS", "sse9", 1);
    RunResult bad = run_program(lesson_binary(LESSON_DIR), args);
    unsetenv("ATTN_KERNELS");
    assert_one_line_refusal(bad, "lesson-14: ", "ATTN_KERNELS=sse9");
    ck_assert_msg(strstr(bad.err, "ATTN_KERNELS expects scalar, avx2 or avx512") != NULL, "%s",
                  bad.err);
}
END_TEST

// --- flags ------------------------------------------------------------------------------

static const BadFlags BAD_FLAGS[] = {
    {{"--block-q", "0", NULL}, "--block-q expects a whole number from 1 to 4096, got '0'"},
    {{"--block-k", "4097", NULL}, "--block-k expects a whole number from 1 to 4096"},
    {{"--kv-heads", "3", NULL}, "--kv-heads 3 does not divide --heads 2"},
    {{"--heads", "6", "--kv-heads", "4", NULL}, "--kv-heads 4 does not divide --heads 6"},
    {{"--seq", "0", NULL}, "--seq"},
    {{"--dim", "65536", NULL}, "query_proj.weight (dim, dim)"},
    {{"--head-dim", "65536", "--seq", "2048", NULL}, "query (batch, heads, seq, head_dim)"},
    {{"--train", "1", NULL}, "unknown flag '1'"},
    {{"--bench", NULL}, "--bench times its own sizes"},   // check_bad_flags adds --dump
    {{"--bench", "--heads", "4", NULL}, "--bench times its own sizes"},
    {{"--bench", "--seq", "32768", NULL}, "--bench takes --seq up to 16384"},
    {{"--threads", "0", NULL}, "--threads expects a whole number from 1 to 256, got '0'"},
    {{"--bench", "--threads", "257", NULL}, "--threads expects a whole number from 1 to 256"},
};
enum { N_BAD_FLAGS = sizeof BAD_FLAGS / sizeof BAD_FLAGS[0] };

START_TEST(test_bad_flags) {
    check_bad_flags(LESSON_DIR, "lesson-14", BAD_FLAGS, N_BAD_FLAGS);
}
END_TEST

// Sizes too large for part 1 and the standard path skip them and say so; the tiled path
// runs. (att_weight (1, 8193, 8193) and P (1, 1, 8193, 8193) pass 2^26.)
START_TEST(test_large_seq_skips_standard) {
    const char *forced = getenv("ATTN_KERNELS");   // make valgrind forces scalar: too slow here
    char saved[16] = "";
    snprintf(saved, sizeof saved, "%s", forced != NULL ? forced : "");
    unsetenv("ATTN_KERNELS");
    RunResult run = run_program(lesson_binary(LESSON_DIR),
                                (const char *const[]){"--batch", "1", "--seq", "8193", "--heads",
                                                      "1", "--head-dim", "2", "--block-q",
                                                      "512", "--block-k", "512", NULL});
    if (forced != NULL) {
        setenv("ATTN_KERNELS", saved, 1);
    }
    ck_assert_msg(run.status == 0, "%s", run.err);
    ck_assert(strstr(run.out, "-- part 1 is skipped: att_weight (1, 8193, 8193)") != NULL);
    ck_assert(strstr(run.out, "the standard path is skipped: its P (1, 1, 8193, 8193)") != NULL);
    ck_assert(strstr(run.out, "per head: 289 tiles visited") != NULL);
}
END_TEST

START_TEST(test_help) {
    RunResult run = check_prints(LESSON_DIR, (const char *const[]){"--help", NULL},
                                 "usage: lesson-14 [flags]\n");
    const char *flags[] = {"--batch", "--seq", "--dim", "--heads", "--kv-heads", "--head-dim",
                           "--block-q", "--block-k", "--causal", "--train", "--bench",
                           "--threads"};
    for (int i = 0; i < 12; i++) {
        ck_assert_msg(strstr(run.out, flags[i]) != NULL, "--help does not name %s", flags[i]);
    }
}
END_TEST

// --kv-heads defaults to --heads, and 0 means the same (as in lesson 13); the
// run with 0 prints what the run without it prints.
// A short run of the bench (the documented one times for a minute): every line it prints
// fits 100 columns, as every run's (but its machine-readable "bench " lines).
START_TEST(test_short_bench_fits_100_columns) {
    RunResult r = run_program(lesson_binary(LESSON_DIR),
                              (const char *const[]){"--bench", "--seq", "64", NULL});
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    assert_lines_fit("lesson-14 --bench --seq 64", r);
}
END_TEST

// --bench's estimate counts what small blocks and the scalar twins cost: a tile's products
// take at least 900 ns (padded to 16 rows), the twins 1.1 ns a multiply-add. Counted by
// pairs alone at the vector kernels' price, --block-q 1 --block-k 1 --seq 1536 was estimated
// at 20 s and took 85, and ATTN_KERNELS=scalar --seq 1024 11 s and 52.
START_TEST(test_bench_prices_small_blocks_and_the_twins) {
    LessonCall call = call_lesson(lesson_main, (const char *const[]){
        "--bench", "--block-q", "1", "--block-k", "1", "--seq", "1536", NULL});
    ck_assert_msg(call.status == 2 && strstr(call.err, "more than the 60 seconds allowed") !=
                  NULL, "exit %d: %s", call.status, call.err);
    // Each case runs its tiled backward at least 3 times, the causal one half the tiles.
    ck_assert_double_ge(call.budget.seconds, 4.5 * 8 * 1536.0 * 1536 * 900e-9);
    const char *before = getenv("ATTN_KERNELS");
    char *saved = before != NULL ? strcpy(arena_alloc(strlen(before) + 1, 1), before) : NULL;
    setenv("ATTN_KERNELS", "scalar", 1);
    call = call_lesson(lesson_main, (const char *const[]){"--bench", "--seq", "1024", NULL});
    if (saved != NULL) {
        setenv("ATTN_KERNELS", saved, 1);
    } else {
        unsetenv("ATTN_KERNELS");
    }
    ck_assert_msg(call.budget.made, "exit %d: %s", call.status, call.err);
    ck_assert_double_ge(call.budget.seconds, 4.5 * 5 * 8 * 1024.0 * 1024 * 64 * 1.1e-9);
}
END_TEST

START_TEST(test_kv_heads_default) {
    RunResult run = check_prints(LESSON_DIR,
                                 (const char *const[]){"--heads", "3", "--seq", "2", NULL},
                                 "key = torch.randn(3, 3, 2, 4, requires_grad=True)\n");
    ck_assert_int_eq(run.status, 0);
    RunResult zero = run_program(lesson_binary(LESSON_DIR),
                                 (const char *const[]){"--heads", "3", "--seq", "2",
                                                       "--kv-heads", "0", NULL});
    ck_assert_int_eq(zero.status, 0);
    ck_assert_str_eq(zero.out, run.out);
}
END_TEST

// --- what a run may take (common/lesson/budget.h; harness.h: add_budget_tests) -----------

// Refused by the budget before anything runs, in one line that names the flags, the budget
// and how to raise it.
static const BudgetRefusal REFUSED[] = {
    // Part 2's naive path keeps P, dP and dS whole; the bench with (Bq, Bk) tiles
    // of 16 million floats.
    {{"--batch", "1", "--seq", "4096", "--heads", "4", NULL},
     "lesson-14: --seq 4096 --heads 4 would hold about 1.8 GiB at once, more than the 512 MiB "
     "allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=1800", NULL},
    {{"--bench", "--block-q", "4096", "--block-k", "4096", NULL},
     "lesson-14: --block-q 4096 --block-k 4096 would hold about 520 MiB at once, more than the "
     "512 MiB allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=530", NULL},
    // The bench estimates its seconds from its kernels' speed, so the figure depends on
    // the kernels: the scalar ones, which every machine has, make it the same everywhere.
    // One-query blocks cost a tile's overhead once per query and key (issue 18 saw lesson
    // 13's run past 25 s with no output).
    {{"--bench", "--block-q", "1", "--block-k", "1", NULL},
     "lesson-14: --block-q 1 --block-k 1 would take about 54 minutes (estimated from the sizes), "
     "more than the 60 seconds allowed; choose smaller sizes, or allow it with "
     "ATTN_MAX_SECONDS=3300",
     "ATTN_KERNELS=scalar"},
    // With --threads 2 every round runs the tiled backward twice, on 2 threads and on one.
    {{"--bench", "--threads", "2", NULL},
     "lesson-14: --threads 2 would take about 38 minutes (estimated from the sizes), more than "
     "the 60 seconds allowed; choose smaller sizes, or allow it with ATTN_MAX_SECONDS=2300",
     "ATTN_KERNELS=scalar"},
};

// Sizes where the tensors that grow with the flags are most of what a run holds, each
// flag raised in one of them, and the switches that add tensors on: what a run holds is
// its prediction (make test runs the first, make test-long all).
static const SizedRun SIZED[] = {
    {{"--batch", "2", "--seq", "192", "--dim", "32", "--heads", "4", "--head-dim", "32",
      "--causal", "--train", "--threads", "3", NULL}},
    {{"--seq", "96", "--dim", "64", "--heads", "4", "--kv-heads", "1", "--head-dim", "128",
      "--dump", "", NULL}},
    {{"--batch", "1", "--seq", "8", "--dim", "640", NULL}},
};

// The budget admits the bench, where its vector kernels make it take a minute (with the
// scalar ones it would take about 7), and its two-thread goal's case, seq 2048 on two
// threads (the whole sweep on two, the loops left out, is estimated at about 59 s with the
// AVX-512 kernels, more with AVX2's).
static const AdmittedRun ADMITTED[] = {
    {{"--bench", NULL}, true},
    {{"--bench", "--seq", "2048", "--threads", "2", NULL}, true},
};

static const LessonBudget BUDGET = {
    "14-attention-backward", lesson_main, REFUSED, sizeof REFUSED / sizeof REFUSED[0], SIZED,
    sizeof SIZED / sizeof SIZED[0], ADMITTED, sizeof ADMITTED / sizeof ADMITTED[0],
};

Suite *lesson14_suite(void) {
    Suite *suite = suite_create("lesson14");
    TCase *pytorch = new_tcase("pytorch");
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, n_cases());
    tcase_add_loop_test(pytorch, test_part1_on_recorded_inputs, 0,
                        recorded_case_count_where(REF_DIR, "train=0"));
    tcase_add_loop_test(pytorch, test_part2_on_recorded_inputs, 0, n_cases());
    suite_add_tcase(suite, pytorch);
    TCase *invariants = new_tcase("invariants");
    tcase_add_loop_test(invariants, test_tiled_equals_standard_over_block_grid, 0, 2);
    tcase_add_test(invariants, test_one_key_query_gets_zero_dq);
    tcase_add_loop_test(invariants, test_rows_of_dS_sum_to_zero, 0, 2);
    tcase_add_loop_test(invariants, test_masked_get_exactly_zero, 0, 2);
    tcase_add_loop_test(invariants, test_central_differences, 0, 4);
    tcase_add_test(invariants, test_extra_memory);
    tcase_add_test(invariants, test_tile_counts_and_flops);
    tcase_add_test(invariants, test_forwards_are_lessons_5_and_13);
    suite_add_tcase(suite, invariants);
    TCase *threads = new_tcase("threads");
    tcase_add_test(threads, test_threads_give_the_same_bits);
    tcase_add_loop_test(threads, test_threads_on_every_recorded_case, 0, n_cases());
    tcase_add_test(threads, test_threads_print_and_dump_the_same_bits);
    tcase_add_test(threads, test_bench_prices_threads);
    suite_add_tcase(suite, threads);
    TCase *kernels = new_tcase("kernels");
    tcase_add_test(kernels, test_vector_equals_scalar_bitwise);
    tcase_add_test(kernels, test_matmul_vector_equals_scalar);
    tcase_add_test(kernels, test_elementwise_vector_equals_scalar);
    tcase_add_test(kernels, test_exp);
    tcase_add_test(kernels, test_kernels_variable);
    suite_add_tcase(suite, kernels);
    TCase *flags = new_tcase("flags");
    tcase_add_test(flags, test_bad_flags);
    tcase_add_test(flags, test_large_seq_skips_standard);
    tcase_add_test(flags, test_help);
    tcase_add_test(flags, test_kv_heads_default);
    tcase_add_test(flags, test_short_bench_fits_100_columns);
    tcase_add_test(flags, test_bench_prices_small_blocks_and_the_twins);
    suite_add_tcase(suite, flags);
    add_budget_tests(suite, &BUDGET);
    return suite;
}

int main(void) { return run_suite(lesson14_suite()); }
