// test_lesson11.c - lesson 11 (vit-block: Chen Ming's ViT Block, Attention,
// Mlp, DropPath, and the numpy multi-head cell).
//
// Reference values in tests/data/lesson11/<case>/ were recorded from
// PyTorch 1.13 by tests/reference/gen_lesson11.py, which runs the PyTorch
// code of docs/11-vit-block.md. The lesson source is included with its
// main() renamed, so the tests can run the modules in this process: the
// invariants of the issue (eval mode is deterministic, LayerNorm rows, the
// fused qkv, one head, GELU by hand, DropPath per sample), the scale rule,
// the counts, and the flags the lesson refuses.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "family_multi_head.h"
#include "harness.h"

#define main lesson_main
#include "../lessons/11-vit-block/vit_block.c"
#undef main

#define LESSON_DIR "11-vit-block"
#define REF_DIR DATA_DIR "/lesson11"

// Against PyTorch: its Linear layers run in OpenBLAS's summation order, ours
// in a plain loop, so the computed tensors are a few float32 roundings apart
// (LayerNorm, GELU and softmax are PyTorch's arithmetic, bit for bit). The
// values are O(1): ROUNDING_ATOL near 0, ROUNDING_RTOL (~80 ulps) elsewhere.

// Drawn (bit for bit): the input and every parameter, in state_dict order.
static const char *const EXACT[] = {
    "x", "norm1.weight", "norm1.bias", "attn.qkv.weight", "attn.proj.weight", "attn.proj.bias",
    "norm2.weight", "norm2.bias", "mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight",
    "mlp.fc2.bias", NULL,
};
static const char *const EXACT_WITH_QKV_BIAS[] = {
    "x", "norm1.weight", "norm1.bias", "attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight",
    "attn.proj.bias", "norm2.weight", "norm2.bias", "mlp.fc1.weight", "mlp.fc1.bias",
    "mlp.fc2.weight", "mlp.fc2.bias", NULL,
};
// Computed (to rounding): the weights, the block's output, the numpy cell's.
static const char *const COMPUTED[] = {"attn_probs", "out", "np_out", NULL};

// The lesson's draws in this process: manual_seed, the block, x.
typedef struct {
    Block block;
    const Tensor *x;   // (B, N, C)
} Drawn;

static Drawn draw_block(uint64_t seed, int batch, int seq, int dim, int heads, int mlp_ratio,
                        bool qkv_bias, double drop, double attn_drop, double drop_path) {
    manual_seed(seed);
    Drawn d;
    d.block = Block_init(dim, heads, dim * mlp_ratio, qkv_bias, drop, attn_drop, drop_path);
    d.x = randn(shape3(batch, seq, dim));
    return d;
}

// --- against PyTorch --------------------------------------------------------------------

START_TEST(test_matches_pytorch) {
    const RecordedCase *c = recorded_case(REF_DIR, _i);
    ReferenceRun shared = {
        .lesson = LESSON_DIR,
        .exact = case_int(c, "qkv_bias") ? EXACT_WITH_QKV_BIAS : EXACT,
        .computed = COMPUTED,
        .atol = ROUNDING_ATOL,
        .rtol = ROUNDING_RTOL,
    };
    check_recorded_case(shared, c);
}
END_TEST

// The module alone, in this process, on the default case: the same draws
// give PyTorch's x, and the forward PyTorch's out and weights.
START_TEST(test_module_matches_pytorch) {
    const RecordedCase *c = recorded_case_named(REF_DIR, "seed0");
    Drawn d = draw_block((uint64_t)case_int(c, "seed"), (int)case_int(c, "batch"),
                         (int)case_int(c, "seq"), (int)case_int(c, "dim"), 4, 4, false, 0.0, 0.0,
                         0.0);
    Block_train(&d.block, false);
    BlockSteps steps;
    const Tensor *out = Block_forward(&steps, &d.block, d.x);                 // (B, N, C)
    assert_bitwise_equal(d.x, load_reference(c->reference, "x"), "x");
    assert_close(out, load_reference(c->reference, "out"), ROUNDING_ATOL, ROUNDING_RTOL, "out");
    assert_close(steps.attn.attn_probs, load_reference(c->reference, "attn_probs"), ROUNDING_ATOL,
                 ROUNDING_RTOL, "attn_probs");
}
END_TEST

// make lesson-11 opens with the numpy cell's five shape lines.
START_TEST(test_output_opens_with_the_numpy_cell) {
    check_output_opens_with(LESSON_DIR, "-- the post's numpy multi-head cell: [3, 768] in 8 heads "
                            "of 96 --\n(8, 3, 3)\n(8, 3, 3)\n(8, 3, 96)\n(3, 8, 96)\n(3, 768)\n");
}
END_TEST

// --- invariants ----------------------------------------------------------------------------

// With every probability non-zero but the block in eval mode, dropout and
// drop_path are the identity: two forwards give the same bits and draw
// nothing (the next number from the generator is the one it would give
// without them).
START_TEST(test_eval_is_deterministic) {
    Drawn d = draw_block(7, 2, 6, 16, 4, 4, true, 0.3, 0.2, 0.5);
    Block_train(&d.block, false);
    const Tensor *first = Block_forward(NULL, &d.block, d.x);                 // (B, N, C)
    const Tensor *second = Block_forward(NULL, &d.block, d.x);                // (B, N, C)
    assert_bitwise_equal(first, second, "eval forward twice");
    uint32_t after_forwards = random32();
    draw_block(7, 2, 6, 16, 4, 4, true, 0.3, 0.2, 0.5);
    ck_assert_uint_eq(random32(), after_forwards);
    // In train mode the same block draws masks and changes its output.
    Block_train(&d.block, true);
    ck_assert(max_abs_diff(Block_forward(NULL, &d.block, d.x), first) > 1e-3f);
}
END_TEST

// drop_path drops a sample's whole branch or none of it: after the first
// residual, sample b is x[b] exactly (branch dropped) or differs from it in
// every number (kept); DropPath in eval mode is its input itself.
START_TEST(test_drop_path_drops_whole_samples) {
    Drawn d = draw_block(3, 8, 5, 16, 4, 4, false, 0.0, 0.0, 0.5);
    Block_train(&d.block, true);
    BlockSteps steps;
    Block_forward(&steps, &d.block, d.x);
    int dropped = 0;
    for (int b = 0; b < 8; b++) {
        const Tensor *before = select_index(d.x, 0, b), *after = select_index(steps.residual, 0, b);
        int same = 0;
        for (int t = 0; t < 5; t++) {
            for (int c = 0; c < 16; c++) {
                same += *at2(before, t, c) == *at2(after, t, c);
            }
        }
        ck_assert_msg(same == 0 || same == 5 * 16, "sample %d: %d of 80 numbers unchanged", b,
                      same);
        dropped += same == 5 * 16;
    }
    ck_assert_msg(dropped > 0 && dropped < 8, "seed 3 should drop some samples, not all: %d",
                  dropped);
    // Per sample on ones: all 0 or all 1 / (1 - p) = 2; dropout is per element.
    DropPath half = {0.5, true};
    const Tensor *kept = DropPath_forward(&half, ones(shape3(16, 3, 2)));     // (16, 3, 2)
    for (int b = 0; b < 16; b++) {
        float first = *at3(kept, b, 0, 0);
        ck_assert(first == 0.0f || first == 2.0f);
        for (int i = 0; i < 6; i++) {
            ck_assert(*at3(kept, b, i / 2, i % 2) == first);
        }
    }
    half.training = false;
    const Tensor *input = ones(shape3(2, 3, 2));
    ck_assert_ptr_eq(DropPath_forward(&half, input), input);
}
END_TEST

// LayerNorm over the last dim: before its affine every row has mean 0 and
// (biased) variance 1 (less eps's share); with a weight and bias, undoing
// them gives the same rows.
START_TEST(test_layer_norm_rows) {
    Drawn d = draw_block(11, 3, 7, 24, 4, 4, false, 0.0, 0.0, 0.0);
    Tensor *weight = randn(shape1(24)), *bias = randn(shape1(24));           // (C)
    LayerNorm norm = {weight, bias, 1e-5};
    const Tensor *y = layer_norm_forward(&norm, mul_scalar(d.x, 5.0f));       // (B, N, C)
    for (int b = 0; b < 3; b++) {
        for (int t = 0; t < 7; t++) {
            double mean = 0.0, var = 0.0, plain[24];
            for (int c = 0; c < 24; c++) {
                plain[c] = (*at3(y, b, t, c) - *at1(bias, c)) / *at1(weight, c);
                mean += plain[c] / 24.0;
            }
            for (int c = 0; c < 24; c++) {
                var += (plain[c] - mean) * (plain[c] - mean) / 24.0;
            }
            ck_assert_msg(fabs(mean) < 1e-5, "row %d %d: mean %g", b, t, mean);
            ck_assert_msg(fabs(var - 1.0) < 1e-4, "row %d %d: variance %.9f", b, t, var);
        }
    }
    // The block's own norm1 (weight 1, bias 0): its rows as they are.
    BlockSteps steps;
    Block_forward(&steps, &d.block, d.x);
    ck_assert(all_rows_normalised(steps.normed1));
    ck_assert(!all_rows_normalised(d.x));
}
END_TEST

// The fused qkv Linear is three Linear layers side by side: its output's
// three column blocks equal Linear layers made of its weight's three row
// blocks (and bias blocks), bit for bit.
START_TEST(test_fused_qkv_is_three_linears) {
    Drawn d = draw_block(5, 2, 4, 12, 3, 4, true, 0.0, 0.0, 0.0);
    const Linear *qkv = &d.block.attn.qkv;
    const Tensor *fused = linear(qkv, d.x);                                   // (B, N, 3C)
    for (int i = 0; i < 3; i++) {
        Linear part = linear_from(narrow(qkv->weight, 0, 12 * i, 12),         // (C, C)
                                  narrow(qkv->bias, 0, 12 * i, 12));          // (C)
        assert_bitwise_equal(narrow(fused, 2, 12 * i, 12), linear(&part, d.x),
                             i == 0 ? "q" : i == 1 ? "k" : "v");
    }
}
END_TEST

// Lesson 5's single-head attention (separate query, key and value layers,
// scores / sqrt(dim), softmax, @ V, output projection), written out here on
// the row blocks of the fused weight.
static const Tensor *single_head(const Attention *attn, const Tensor *x) {
    int C = size(x, 2);
    const Linear *qkv = &attn->qkv;
    Linear parts[3];
    for (int i = 0; i < 3; i++) {
        parts[i] = linear_from(narrow(qkv->weight, 0, C * i, C), NULL);
    }
    const Tensor *Q = linear(&parts[0], x), *K = linear(&parts[1], x);
    const Tensor *V = linear(&parts[2], x);                                   // (B, N, C)
    const Tensor *scores = div_scalar(matmul(Q, transpose(K, 1, 2)),
                                      (float)sqrt((double)C));                // (B, N, N)
    return linear(&attn->proj, matmul(softmax(scores, -1), V));               // (B, N, C)
}

// One head is lesson 5's attention with the same weights: bit for bit when
// head_dim = dim is a power of 4 (* scale and / sqrt agree exactly), to a
// rounding otherwise.
START_TEST(test_one_head_is_single_head_attention) {
    Drawn d = draw_block(9, 2, 6, 16, 1, 4, false, 0.0, 0.0, 0.0);
    d.block.attn.training = false;
    assert_bitwise_equal(Attention_forward(NULL, &d.block.attn, d.x),
                         single_head(&d.block.attn, d.x), "one head of 16");
    Drawn e = draw_block(9, 2, 6, 8, 1, 4, false, 0.0, 0.0, 0.0);
    e.block.attn.training = false;
    assert_close(Attention_forward(NULL, &e.block.attn, e.x), single_head(&e.block.attn, e.x),
                 1e-6f, 1e-6f, "one head of 8");
}
END_TEST

// The Mlp's activation is GELU's erf form: with fc1 and fc2 the identity,
// the Mlp returns x * Phi(x), worked out by hand (Python: x * 0.5 * (1 +
// math.erf(x / math.sqrt(2)))) at -3, -1, 0, 1, 3, to PyTorch's
// approximation of erf (gelu_exact.c). The tanh form would miss by 1.5e-4
// at -1 and 4.1e-4 at 3.
START_TEST(test_mlp_applies_gelu_by_hand) {
    Mlp mlp = Mlp_init(5, 5, 0.0);
    Tensor *eye = zeros(shape2(5, 5));                                        // (5, 5)
    for (int i = 0; i < 5; i++) {
        *at2(eye, i, i) = 1.0f;
    }
    mlp.fc1 = linear_from(eye, zeros(shape1(5)));
    mlp.fc2 = linear_from(eye, zeros(shape1(5)));
    mlp.training = false;
    const Tensor *x = tensor_from(shape3(1, 1, 5), (const float[]){-3, -1, 0, 1, 3});
    const float by_hand[5] = {-0.00404969409489031f, -0.15865525393145707f, 0.0f,
                              0.8413447460685429f, 2.99595030590511f};
    assert_close(Mlp_forward(NULL, &mlp, x), tensor_from(shape3(1, 1, 5), by_hand), 8e-7f, 2e-7f,
                 "Mlp with identity layers");
}
END_TEST

// x * fl(head_dim ** -0.5) equals x / fl(sqrt(head_dim)) for every float
// exactly when head_dim is a power of 4: checked for every head_dim from 1
// to 1024 (the powers of 4 over all of [1, 2); the others by finding a
// float where they differ). The counts the page quotes, too.
START_TEST(test_scale_matches_division_only_for_powers_of_4) {
    for (int D = 1; D <= 1024; D++) {
        bool power_of_4 = D == 1 || D == 4 || D == 16 || D == 64 || D == 256 || D == 1024;
        double scale = pow((double)D, -0.5);
        if (power_of_4) {
            ck_assert_msg(differing_floats(scale, D) == 0, "head_dim %d", D);
            continue;
        }
        float by_mul = (float)scale, by_div = (float)sqrt((double)D);
        bool found = false;
        for (uint32_t bits = 0x3F800000u; bits < 0x40000000u && !found; bits++) {
            float x;
            memcpy(&x, &bits, sizeof x);
            found = x * by_mul != x / by_div;
        }
        ck_assert_msg(found, "head_dim %d: no float differs", D);
    }
    ck_assert_int_eq(differing_floats(pow(6.0, -0.5), 6), 7112557);
    ck_assert_int_eq(differing_floats(pow(2.0, -0.5), 2), 3406308);
    ck_assert_int_eq(differing_floats(pow(96.0, -0.5), 96), 7112557);
}
END_TEST

// The counts the lesson prints: the multiply-adds counted while the forward
// runs equal the formulas, and the parameters the formulas.
START_TEST(test_counts_match_the_formulas) {
    const int sizes[][6] = {
        // batch, seq, dim, heads, mlp_ratio, qkv_bias
        {2, 5, 16, 4, 4, 0}, {3, 7, 24, 4, 2, 1}, {1, 1, 1, 1, 1, 0}, {2, 40, 8, 2, 3, 1},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const int *z = sizes[i];
        long long B = z[0], N = z[1], C = z[2], F = (long long)z[2] * z[4];
        Drawn d = draw_block(1, z[0], z[1], z[2], z[3], z[4], z[5], 0.0, 0.0, 0.0);
        start_counting();
        Block_forward(NULL, &d.block, d.x);
        stop_counting();
        ck_assert_int_eq(n_counted, 6);
        const long long want[6] = {B * N * C * 3 * C, B * N * N * C, B * N * N * C, B * N * C * C,
                                   B * N * C * F, B * N * F * C};
        for (int k = 0; k < 6; k++) {
            ck_assert_msg(counted_macs[k] == want[k], "sizes %zu, product %d: %lld, not %lld", i,
                          k, counted_macs[k], want[k]);
        }
        ck_assert(counted_macs[0] + counted_macs[1] + counted_macs[2] + counted_macs[3] ==
                  B * attention_macs(N, C));
        ck_assert(counted_macs[4] + counted_macs[5] == B * mlp_macs(N, C, F));
        const Block *b = &d.block;
        const Tensor *parameters[] = {b->norm1.weight, b->norm1.bias, b->attn.qkv.weight,
                                      b->attn.qkv.bias, b->attn.proj.weight, b->attn.proj.bias,
                                      b->norm2.weight, b->norm2.bias, b->mlp.fc1.weight,
                                      b->mlp.fc1.bias, b->mlp.fc2.weight, b->mlp.fc2.bias};
        long long total = 0;
        for (size_t p = 0; p < sizeof parameters / sizeof parameters[0]; p++) {
            total += parameters[p] != NULL ? numel(parameters[p]) : 0;
        }
        ck_assert_int_eq(total, attention_parameters(C, z[5]) + mlp_parameters(C, F) + 4 * C);
    }
}
END_TEST

// The numpy cell against attention written per head with plain loops:
// np_out[t, h*96 + d] = sum_s softmax_s(Query_h[t] . Key_h[s]) Value[s, h*96 + d].
START_TEST(test_numpy_cell_is_per_head_attention) {
    manual_seed(4);
    const Tensor *Query = rand_tensor(shape2(3, 768)), *Key = rand_tensor(shape2(3, 768));
    const Tensor *Value = rand_tensor(shape2(3, 768));                       // (3, 768)
    NumpyCellSteps cell;
    const Tensor *out = numpy_cell(&cell, Query, Key, Value);                 // (3, 768)
    const char *shapes[5] = {"(8, 3, 3)", "(8, 3, 3)", "(8, 3, 96)", "(3, 8, 96)", "(3, 768)"};
    const Tensor *steps[5] = {cell.scores, cell.weights, cell.heads, cell.by_row, cell.out};
    for (int i = 0; i < 5; i++) {
        ck_assert_str_eq(shape_str(steps[i]->shape, SIZES_TUPLE), shapes[i]);
    }
    for (int h = 0; h < 8; h++) {
        for (int t = 0; t < 3; t++) {
            double score[3], total = 0.0;
            for (int s = 0; s < 3; s++) {
                score[s] = 0.0;
                for (int d = 0; d < 96; d++) {
                    score[s] += (double)*at2(Query, t, h * 96 + d) * *at2(Key, s, h * 96 + d);
                }
            }
            for (int s = 0; s < 3; s++) {
                total += exp(score[s] - score[0]);
            }
            for (int d = 0; d < 96; d++) {
                double want = 0.0;
                for (int s = 0; s < 3; s++) {
                    want += exp(score[s] - score[0]) / total * *at2(Value, s, h * 96 + d);
                }
                ck_assert_msg(fabs(*at2(out, t, h * 96 + d) - want) < 1e-5, "head %d, t %d", h,
                              t);
            }
        }
    }
}
END_TEST

// --- the flags ---------------------------------------------------------------------------

static const BadFlags BAD_FLAGS[] = {
    {{"--drop", "1", NULL}, "--drop"},                       // a probability of 1
    {{"--attn-drop", "-0.1", NULL}, "--attn-drop"},
    {{"--drop-path", "abc", NULL}, "--drop-path"},
    {{"--drop", NULL}, "--drop"},                            // no value
    {{"--mlp-ratio", "0", NULL}, "--mlp-ratio 0 makes the MLP's hidden size int(16 * 0) = 0"},
    {{"--mlp-ratio", "0.05", NULL}, "int(16 * 0.05) = 0"},   // 0.8, truncated
    {{"--mlp-ratio", "65", NULL}, "--mlp-ratio expects a number from 0 to 64"},
    {{"--mlp-ratio", "1e1", NULL}, "--mlp-ratio expects a number"},
    {{"--heads", "3", NULL}, "--heads 3 does not divide --dim 16"},
    {{"--dim", "0", NULL}, "--dim"},
    {{"--qkv-bias", "--qkv-bias", NULL}, "--qkv-bias is given twice"},
    {{"--train", "yes", NULL}, "unknown flag 'yes'"},
    {{"--seq", "65536", "--heads", "64", "--dim", "64", NULL}, "attn_probs"},
    {{"--dim", "65536", "--mlp-ratio", "64", NULL}, "mlp.fc1.weight"},
    // The qkv weight (3*dim, dim) was not checked: this one died with exit 1.
    {{"--dim", "4732", "--mlp-ratio", "2", NULL},
     "these sizes make attn.qkv.weight (3*dim, dim) (14196, 4732), more than the 67108864 "
     "elements allowed"},
};
enum { N_BAD_FLAGS = sizeof BAD_FLAGS / sizeof BAD_FLAGS[0] };

START_TEST(test_bad_flags) {
    check_bad_flags(LESSON_DIR, "lesson-11", BAD_FLAGS, N_BAD_FLAGS);
}
END_TEST

// --mlp-ratio is a float, and the MLP's width is int(dim * mlp_ratio) worked
// out as Python does: the product in double, truncated. 100 * 0.29 is
// 28.999999999999996 in double, so Python's int() gives 28, not 29; 24 * 48/11
// (ViT-g's ratio, typed as Python prints 48/11) gives 104.
START_TEST(test_float_mlp_ratio) {
    const PrintsCase cases[] = {
        {{"--dim", "100", "--mlp-ratio", "0.29", NULL},
         "-- Block(100, 4, mlp_ratio=0.29, qkv_bias=False, drop=0, attn_drop=0, drop_path=0), "
         "eval mode --\nmlp: fc1 to torch.Size([2, 5, 28]), GELU, fc2 back to "
         "torch.Size([2, 5, 100])\n"},
        {{"--dim", "24", "--mlp-ratio=4.363636363636363", NULL},
         "mlp: fc1 to torch.Size([2, 5, 104]), GELU, fc2 back to torch.Size([2, 5, 24])\n"},
    };
    check_prints_each(LESSON_DIR, cases, 2);
}
END_TEST

// --- what a run may take (common/lesson/budget.h; harness.h: add_budget_tests) -----------

// Refused by the budget before anything runs, in one line that names the flags, the budget
// and how to raise it.
static const BudgetRefusal REFUSED[] = {
    {{"--batch", "4", "--seq", "197", "--dim", "1536", "--heads", "12", NULL},
     "lesson-11: --batch 4 --seq 197 --dim 1536 --heads 12 would take about 3 minutes (estimated "
     "from the sizes), more than the 60 seconds allowed; choose smaller sizes, or allow it with "
     "ATTN_MAX_SECONDS=180", NULL},
};

// Sizes where the tensors that grow with the flags are most of what a run holds, each
// flag raised in one of them, and the switches that add tensors on: what a run holds is
// its prediction (make test runs the first, make test-long all).
static const SizedRun SIZED[] = {
    {{"--batch", "2", "--seq", "256", "--dim", "32", "--heads", "8", "--train", "--drop", "0.1",
      "--attn-drop", "0.1", "--drop-path", "0.1", NULL}},
    {{"--batch", "8", "--seq", "64", "--dim", "128", "--mlp-ratio", "2.5", "--dump", "", NULL}},
};

// The budget admits ViT-B's sizes, which the page names.
static const AdmittedRun ADMITTED[] = {
    {{"--dim", "768", "--heads", "12", "--seq", "197", NULL}, false},
};

static const LessonBudget BUDGET = {
    "11-vit-block", lesson_main, REFUSED, sizeof REFUSED / sizeof REFUSED[0], SIZED,
    sizeof SIZED / sizeof SIZED[0], ADMITTED, sizeof ADMITTED / sizeof ADMITTED[0],
};

static Suite *lesson11_suite(void) {
    Suite *suite = suite_create("lesson11");
    TCase *pytorch = new_tcase("pytorch");
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, recorded_case_count(REF_DIR));
    tcase_add_test(pytorch, test_module_matches_pytorch);
    tcase_add_test(pytorch, test_output_opens_with_the_numpy_cell);
    suite_add_tcase(suite, pytorch);

    TCase *invariants = new_tcase("invariants");
    tcase_add_test(invariants, test_eval_is_deterministic);
    tcase_add_test(invariants, test_drop_path_drops_whole_samples);
    tcase_add_test(invariants, test_layer_norm_rows);
    tcase_add_test(invariants, test_fused_qkv_is_three_linears);
    tcase_add_test(invariants, test_one_head_is_single_head_attention);
    tcase_add_test(invariants, test_mlp_applies_gelu_by_hand);
    tcase_add_test(invariants, test_scale_matches_division_only_for_powers_of_4);
    tcase_add_test(invariants, test_counts_match_the_formulas);
    tcase_add_test(invariants, test_numpy_cell_is_per_head_attention);
    suite_add_tcase(suite, invariants);

    TCase *flags = new_tcase("flags");
    tcase_add_test(flags, test_bad_flags);
    tcase_add_test(flags, test_float_mlp_ratio);
    suite_add_tcase(suite, flags);
    add_budget_tests(suite, &BUDGET);
    return suite;
}

int main(void) { return run_suite(lesson11_suite()); }
