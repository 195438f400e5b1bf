// test_lesson03.c - lesson 3 (SelfAttV2: fused proj, split, output_proj).
//
// Reference values in tests/data/lesson03/<case>/ were recorded from
// PyTorch 1.13 by tests/reference/gen_lesson03.py; lesson 2's recorded
// SelfAttV1 runs (tests/data/lesson02/) give the "V2 with V1's weights
// stacked equals V1" check. The lesson source is included with its main()
// renamed, so the tests can call SelfAttV2_forward with weights of their own.
#include <math.h>
#include <string.h>

#include "family_self_attention.h"
#include "harness.h"

#define main lesson_main
#include "../lessons/03-self-attention-v2/self_attention_v2.c"
#undef main

#define LESSON_DIR "03-self-attention-v2"
#define REF_DIR DATA_DIR "/lesson03"
#define V1_DIR DATA_DIR "/lesson02"   // lesson 2's recorded SelfAttV1 runs

// Drawn from the generator: must match bit for bit.
static const char *const INPUTS[] = {"X", "proj.weight", "proj.bias", "output_proj.weight",
                                     "output_proj.bias", NULL};
// Computed from them: must match to float rounding.
static const char *const COMPUTED[] = {"QKV", "Q", "K", "V", "att_weight", "output", "ret",
                                       NULL};

// A SelfAttV2 holding the parameters PyTorch recorded for case c.
static SelfAttV2 recorded_net(const RecordedCase *c) {
    const char *recorded = c->reference;
    SelfAttV2 net = {(int)case_int(c, "dim"), recorded_linear(recorded, "proj"),
                     recorded_linear(recorded, "output_proj")};
    return net;
}

// --- against PyTorch --------------------------------------------------------------------

// The binary, run with --dump: inputs and parameters bit for bit, computed
// tensors to float rounding, every line PyTorch printed printed in order,
// and the notebook's three lines ([INFO], the two profile lines with the
// corrected label) first and verbatim.
START_TEST(test_matches_pytorch) {
    RunResult r = check_profiled_run(LESSON_DIR, recorded_case(REF_DIR, _i), INPUTS, COMPUTED);
    // The notebook's label was SelfAttV1; ours must not repeat it.
    ck_assert_ptr_null(strstr(r.out, "SelfAttV1 FLOPs"));
}
END_TEST

// The forward alone on PyTorch's recorded X and weights (no generator): ret
// and the weights agree to rounding, and every row of the weights sums to 1
// with every weight positive.
START_TEST(test_forward_on_recorded_weights) {
    for (int i = 0; i < recorded_case_count(REF_DIR); i++) {
        const RecordedCase *c = recorded_case(REF_DIR, i);
        SelfAttV2 net = recorded_net(c);
        SelfAttV2Steps steps;
        const Tensor *X = load_reference(c->reference, "X");                   // (B, T, C)
        const Tensor *ret = SelfAttV2_forward(&steps, &net, X);             // (B, T, C)
        assert_close(ret, load_reference(c->reference, "ret"), ROUNDING_ATOL, ROUNDING_RTOL,
                     path_join("%s ret", c->dir));
        assert_close(steps.att_weight, load_reference(c->reference, "att_weight"), ROUNDING_ATOL,
                     ROUNDING_RTOL, path_join("%s att_weight", c->dir));
        check_weight_rows(steps.att_weight, NULL, c->dir);                  // (B, T, T)
    }
}
END_TEST

// --- invariants ---------------------------------------------------------------------------

// V2 with V1's three weight matrices (and biases) stacked into proj, and
// output_proj the identity, is V1: its Q, K, V and its output before
// output_proj equal what PyTorch recorded for SelfAttV1 in lesson 2.
START_TEST(test_v1_weights_stacked_equal_v1) {
    for (int i = 0; i < recorded_case_count(V1_DIR); i++) {
        const RecordedCase *c = recorded_case(V1_DIR, i);
        const Tensor *weights[3], *biases[3];
        const char *names[] = {"query_proj", "key_proj", "value_proj"};
        for (int p = 0; p < 3; p++) {
            weights[p] = load_reference(c->reference, path_join("%s.weight", names[p]));  // (C, C)
            biases[p] = load_reference(c->reference, path_join("%s.bias", names[p]));     // (C,)
        }
        int C = (int)case_int(c, "dim");
        Tensor *identity = zeros(shape2(C, C));                                        // (C, C)
        for (int d = 0; d < C; d++) {
            *at2(identity, d, d) = 1.0f;
        }
        SelfAttV2 net = {C, linear_from(cat(weights, 3, 0), cat(biases, 3, 0)),
                         linear_from(identity, zeros(shape1(C)))};

        SelfAttV2Steps steps;
        const Tensor *ret = SelfAttV2_forward(&steps, &net, load_reference(c->reference, "X"));
        const char *what = path_join("lesson02 %s", c->dir);
        const Tensor *got[] = {steps.Q, steps.K, steps.V, steps.att_weight, steps.output};
        const char *recorded[] = {"Q", "K", "V", "attention_weight", "output"};
        for (int t = 0; t < 5; t++) {
            assert_close(got[t], load_reference(c->reference, recorded[t]), ROUNDING_ATOL,
                         ROUNDING_RTOL, path_join("%s %s", what, recorded[t]));
        }
        // x * 1 + 0 * others + 0 is exact: identity output_proj changes nothing.
        assert_bitwise_equal(ret, steps.output, "identity output_proj");
    }
}
END_TEST

// split made views: Q, K and V share QKV's storage, keep its strides, start
// at offsets 0, dim and 2*dim, and a write into QKV shows through them.
START_TEST(test_split_gives_views) {
    // dim 8: offsets 0, 8, 16; stride (5*24, 24, 1)
    const RecordedCase *c = recorded_case_named(REF_DIR, "seed1_batch2_seq5_dim8");
    SelfAttV2 net = recorded_net(c);
    SelfAttV2Steps steps;
    SelfAttV2_forward(&steps, &net, load_reference(c->reference, "X"));
    const Tensor *parts[] = {steps.Q, steps.K, steps.V};
    for (int p = 0; p < 3; p++) {
        ck_assert_ptr_eq(parts[p]->data, steps.QKV->data);
        ck_assert_int_eq(parts[p]->offset, p * 8);
        ck_assert_int_eq(parts[p]->stride[0], 120);
        ck_assert_int_eq(parts[p]->stride[1], 24);
        ck_assert_int_eq(parts[p]->stride[2], 1);
        ck_assert(!is_contiguous(parts[p]));
    }
    // QKV is a fresh result of linear(); a visible cast lets the test write
    // into it, and K, a view of it, sees the write.
    *at3((Tensor *)steps.QKV, 1, 2, 8 + 3) = 42.0f;   // column 3 of K
    ck_assert(*at3(steps.K, 1, 2, 3) == 42.0f);
}
END_TEST

// --- hand-worked counts ------------------------------------------------------------------------

// thop's numbers and the full count for two sizes other than the notebook's,
// against numbers worked out by hand here.
//
// batch 2, seq 5, dim 8 (80 vectors):
//   proj 8 x (2*5*24) = 1920, output_proj 8 x (2*5*8) = 640; thop 2560 -> 0.002560
//   params (8*24 + 24) + (8*8 + 8) = 216 + 72 = 288                   -> 0.000288 M
//   not seen: 400 + 50 + 150 + 400 = 1000; whole 3560                 -> 0.003560 M
// batch 1, seq 64, dim 16 (64 vectors):
//   proj 16 x (64*48) = 49152, output_proj 16 x (64*16) = 16384; thop 65536
//   params (16*48 + 48) + (16*16 + 16) = 816 + 272 = 1088             -> 0.001088 M
//   not seen: 65536 + 4096 + 12288 + 65536 = 147456; whole 212992
START_TEST(test_counts_two_sizes) {
    static const PrintsCase SIZES[] = {
        {{"--batch", "2", "--seq", "5", "--dim", "8", NULL},
         "SelfAttV2 FLOPs: 0.002560 MFLOPs\n"
         "SelfAttV2 Parameters: 0.000288 M\n"
         "  proj         8 x (2*5*24) = 1920  (= V1's three projections)\n"
         "  output_proj  8 x (2*5*8) = 640\n"
         "  Parameters = (dim*3*dim + 3*dim) + (dim*dim + dim) = 216 + 72 = 288\n"
         "  not seen by thop: Q @ K^T, / sqrt(dim), softmax, att_weight @ V = 1000\n"
         "counted by thop:    2560 = 0.002560 M\n"
         "the whole forward:  3560 = 0.003560 M\n"},
        {{"--batch", "1", "--seq", "64", "--dim", "16", NULL},
         "SelfAttV2 FLOPs: 0.065536 MFLOPs\n"
         "SelfAttV2 Parameters: 0.001088 M\n"
         "  proj         16 x (1*64*48) = 49152  (= V1's three projections)\n"
         "  output_proj  16 x (1*64*16) = 16384\n"
         "  Parameters = (dim*3*dim + 3*dim) + (dim*dim + dim) = 816 + 272 = 1088\n"
         "  not seen by thop: Q @ K^T, / sqrt(dim), softmax, att_weight @ V = 147456\n"
         "the whole forward:  212992 = 0.212992 M\n"},
    };
    check_prints_each(LESSON_DIR, SIZES, sizeof SIZES / sizeof SIZES[0]);
}
END_TEST

// The defaults: the notebook's numbers and the stacking demo's zeros.
START_TEST(test_notebook_numbers) {
    check_prints(LESSON_DIR, (const char *const[]){NULL},
                 "SelfAttV2 FLOPs: 0.000384 MFLOPs\n"
                 "SelfAttV2 Parameters: 0.000080 M\n"
                 "stacked weights torch.Size([12, 4]), max |stacked - proj.weight| = 0\n"
                 "max |query_proj(X) - Q| = 0\n"
                 "max |key_proj(X) - K|   = 0\n"
                 "max |value_proj(X) - V| = 0\n"
                 "the whole forward:  528 = 0.000528 M\n");
}
END_TEST

// --- bad flags ---------------------------------------------------------------------------------

// Each: exit 2, nothing on stdout, exactly one line on stderr naming the
// flag (or the tensor that would not fit), and the --dump directory not made.
START_TEST(test_bad_flags) {
    static const BadFlags BAD[] = {
        {{"--dim", "0", NULL}, "--dim"},
        {{"--seq", "x", NULL}, "--seq"},
        {{"--batch", "-2", NULL}, "--batch"},
        {{"--dim", "1e3", NULL}, "--dim"},
        {{"--dim", NULL}, "--dim"},                       // missing value
        {{"--seq", "--dim", "4", NULL}, "--seq"},         // value missing, next flag follows
        {{"--seed", "1.5", NULL}, "--seed"},
        {{"--heads", "2", NULL}, "--heads"},              // V2 has one head
        {{"--dim", "20000", NULL}, "proj.weight"},        // 3*dim*dim > 2^26
        {{"--seq", "60000", "--dim", "1", NULL}, "att_weight"},   // batch*seq*seq > 2^26
    };
    check_bad_flags(LESSON_DIR, "lesson-3", BAD, sizeof BAD / sizeof BAD[0]);
}
END_TEST

// --- what a run may take (common/lesson/budget.h; harness.h: add_budget_tests) -----------

// Refused by the budget before anything runs, in one line that names the flags, the budget
// and how to raise it.
static const BudgetRefusal REFUSED[] = {
    {{"--batch", "64", "--seq", "128", "--dim", "2048", NULL},
     "lesson-3: --batch 64 --seq 128 --dim 2048 would hold about 1.0 GiB at once, more than the "
     "512 MiB allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=1100", NULL},
};

// Sizes where the tensors that grow with the flags are most of what a run holds, each
// flag raised in one of them, and the switches that add tensors on: what a run holds is
// its prediction (make test runs the first, make test-long all).
static const SizedRun SIZED[] = {
    {{"--batch", "2", "--seq", "512", "--dim", "48", NULL}},
    {{"--batch", "8", "--seq", "256", "--dim", "16", "--dump", "", NULL}},
};

static const LessonBudget BUDGET = {
    "03-self-attention-v2", lesson_main, REFUSED, sizeof REFUSED / sizeof REFUSED[0], SIZED,
    sizeof SIZED / sizeof SIZED[0], NULL, 0,
};

static Suite *lesson03_suite(void) {
    Suite *suite = suite_create("lesson03");
    TCase *pytorch = new_tcase("pytorch");
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, recorded_case_count(REF_DIR));
    tcase_add_test(pytorch, test_forward_on_recorded_weights);
    suite_add_tcase(suite, pytorch);
    TCase *invariants = new_tcase("invariants");
    tcase_add_test(invariants, test_v1_weights_stacked_equal_v1);
    tcase_add_test(invariants, test_split_gives_views);
    suite_add_tcase(suite, invariants);
    TCase *counts = new_tcase("counts");
    tcase_add_test(counts, test_counts_two_sizes);
    tcase_add_test(counts, test_notebook_numbers);
    suite_add_tcase(suite, counts);
    TCase *flags = new_tcase("flags");
    tcase_add_test(flags, test_bad_flags);
    suite_add_tcase(suite, flags);
    add_budget_tests(suite, &BUDGET);
    return suite;
}

int main(void) { return run_suite(lesson03_suite()); }
