// test_lesson05.c - lesson 5 (SelfAttV4, the interview version).
//
// Reference values in tests/data/lesson05/<case>/ were recorded from
// PyTorch 1.13 by tests/reference/gen_lesson05.py (CPU, no MKL, so dropout
// uses the generic bernoulli path of TORCH_RNG.md section 6). The lesson
// source is included with its main() renamed, so the tests can also call
// SelfAttV4_init / SelfAttV4_forward with weights set by hand.
//
// Most checks are the ones test 4 makes of SelfAttV3: this file describes
// SelfAttV4 as a MaskedModule (V4 below) and add_masked_module_tests
// (family_masked.h, which lists them) adds them. What follows V4 is lesson 5's own.
#include <math.h>

#include "family_masked.h"
#include "harness.h"

#define main lesson_main
#include "../lessons/05-self-attention-v4/self_attention_v4.c"
#undef main

#define LESSON_DIR "05-self-attention-v4"
#define REF_DIR DATA_DIR "/lesson05"
#define V3_DIR DATA_DIR "/lesson04"   // lesson 4's recorded SelfAttV3 runs

// --- SelfAttV4 as the shared checks see it --------------------------------------------

static const void *v4_init(int dim, bool training) {
    SelfAttV4 *net = arena_alloc(1, sizeof *net);
    *net = SelfAttV4_init(dim);
    net->training = training;
    return net;
}

static const Tensor *v4_forward(MaskedWeights *weights, const void *net, const Tensor *X,
                                const Tensor *attention_mask) {
    SelfAttV4Steps steps;
    const Tensor *ret = SelfAttV4_forward(&steps, net, X, attention_mask);   // (B, T, C)
    if (weights != NULL) {
        *weights = (MaskedWeights){steps.att_weight, steps.att_weight_dropped};
    }
    return ret;
}

// Drawn (X, the parameters) or given (the mask): equal to PyTorch's bit for bit.
static const char *const INPUTS[] = {
    "X", "mask", "query_proj.weight", "query_proj.bias", "key_proj.weight", "key_proj.bias",
    "value_proj.weight", "value_proj.bias", "output_proj.weight", "output_proj.bias", NULL};
// Computed from them: equal to float rounding.
static const char *const COMPUTED[] = {"Q", "K", "V", "att_weight", "output", "ret", NULL};

static const MaskedModule V4 = {LESSON_DIR, "lesson-5", REF_DIR, INPUTS, COMPUTED,
                                v4_init, v4_forward, padding_rows};

// --- what lesson 4 does not check: V4 against V3, and the interview points -------------

// Build a V4 from V3's weights: rows 0..C-1 of proj.weight are query_proj,
// C..2C-1 key_proj, 2C..3C-1 value_proj (torch.split of QKV takes its
// columns in that order, and output column o comes from weight row o).
// The parts are views into proj, as weight[p*C:(p+1)*C] would be in
// PyTorch; linear() reads a view through its offset, so nothing is copied.
static void load_v3_weights(SelfAttV4 *net, const RecordedCase *v3) {
    int C = net->dim;
    const Tensor *proj_weight = load_reference(v3->reference, "proj.weight");   // (3C, C)
    const Tensor *proj_bias = load_reference(v3->reference, "proj.bias");       // (3C,)
    Linear *parts[3] = {&net->query_proj, &net->key_proj, &net->value_proj};
    for (int p = 0; p < 3; p++) {
        parts[p]->weight = narrow(proj_weight, 0, p * C, C);                // (C, C)
        parts[p]->bias = narrow(proj_bias, 0, p * C, C);                    // (C,)
    }
    net->output_proj.weight = load_reference(v3->reference, "output_proj.weight");   // (C, C)
    net->output_proj.bias = load_reference(v3->reference, "output_proj.bias");       // (C,)
}

// V4 with V3's weights split equals V3: lesson 4's recorded PyTorch
// SelfAttV3 runs, eval and train. In train mode the dropout draws line up
// as well: both modules draw the same number of parameters (3C*C + 3C, then
// output_proj), so after init the generator is at the same place.
START_TEST(test_v4_with_v3_weights_equals_v3) {
    for (int i = 0; i < recorded_case_count(V3_DIR); i++) {
        const RecordedCase *v3 = recorded_case(V3_DIR, i);   // lesson 4 recorded the same runs
        MaskedCell cell = masked_cell(v3);
        manual_seed(cell.seed);
        const Tensor *X = rand_tensor(shape3(cell.batch, cell.seq, cell.dim));   // (B, T, C)
        assert_bitwise_equal(X, load_reference(v3->reference, "X"), "X");
        SelfAttV4 net = SelfAttV4_init(cell.dim);   // draws as many numbers as SelfAttV3
        net.training = case_int(v3, "train");
        load_v3_weights(&net, v3);
        const Tensor *mask = load_reference(v3->reference, "mask");             // (B, T, S)
        SelfAttV4Steps steps;
        const Tensor *ret = SelfAttV4_forward(&steps, &net, X, mask);       // (B, T, C)
        const char *what = path_join("V4 with V3 weights, %s", v3->dir);
        assert_close(steps.att_weight, load_reference(v3->reference, "att_weight"),
                     ROUNDING_ATOL, ROUNDING_RTOL, what);
        assert_close(ret, load_reference(v3->reference, "ret"), ROUNDING_ATOL, ROUNDING_RTOL,
                     what);
    }
}
END_TEST

// dim 2, every projection the identity (Q = K = V = X, output_proj changes
// nothing): the example check_hand_worked works out (family_masked.c).
START_TEST(test_hand_worked) {
    SelfAttV4 net = SelfAttV4_init(2);
    net.training = false;
    const float identity[] = {1, 0, 0, 1};
    const float zeros2[] = {0, 0};
    set_linear(&net.query_proj, identity, zeros2);   // Q = X
    set_linear(&net.key_proj, identity, zeros2);     // K = X
    set_linear(&net.value_proj, identity, zeros2);   // V = X
    set_linear(&net.output_proj, identity, zeros2);
    check_hand_worked(&V4, &net);
}
END_TEST

// The interview part of the output, with numbers worked by hand for the
// defaults (dim 2) and for --dim 8: 3 x (64 + 8) = 216, 192 without bias.
START_TEST(test_prints_interview_points) {
    check_prints(LESSON_DIR, (const char *const[]){NULL},
                 "-- part 2: what to say about each choice (--dim and --train change the numbers) "
                 "--\n"
                 "  gives the same Q, K, V (largest difference 0): the same math in one "
                 "matmul instead of three.\n"
                 "bias: 3 x (2*2 + 2) = 18 parameters for Q, K, V with biases, 12 without; "
                 "+ 6 for output_proj.\n"
                 "scaling: scores are divided by sqrt(dim) = 1.4142 so their variance does "
                 "not grow with dim.\n"
                 "dropout: p = 0.1 on att_weight (before @ V), off now (eval mode).\n");
    RunResult t = check_prints(LESSON_DIR, (const char *const[]){"--dim", "8", "--train", NULL},
                               "");
    ck_assert_msg(strstr(t.out, "bias: 3 x (8*8 + 8) = 216 parameters for Q, K, V with biases, "
                                "192 without; + 72 for output_proj.") != NULL, "%s", t.out);
    ck_assert_msg(strstr(t.out, "largest difference 0)") != NULL, "%s", t.out);
    ck_assert_msg(strstr(t.out, "on now (--train)") != NULL, "%s", t.out);
}
END_TEST

// --- what a run may take (common/lesson/budget.h; harness.h: add_budget_tests) -----------

// Refused by the budget before anything runs, in one line that names the flags, the budget
// and how to raise it.
static const BudgetRefusal REFUSED[] = {
    {{"--seq=8192", "--batch=1", "--dim=1", NULL},
     "lesson-5: --seq 8192 would hold about 1.5 GiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=1600", NULL},
};

// Sizes where the tensors that grow with the flags are most of what a run holds, each
// flag raised in one of them, and the switches that add tensors on: what a run holds is
// its prediction (make test runs the first, make test-long all).
static const SizedRun SIZED[] = {
    {{"--batch", "2", "--seq", "512", "--dim", "48", "--train", NULL}},
    {{"--batch", "8", "--seq", "256", "--dim", "16", "--dump", "", NULL}},
};

static const LessonBudget BUDGET = {
    "05-self-attention-v4", lesson_main, REFUSED, sizeof REFUSED / sizeof REFUSED[0], SIZED,
    sizeof SIZED / sizeof SIZED[0], NULL, 0,
};

static Suite *lesson05_suite(void) {
    Suite *suite = suite_create("lesson05");
    add_masked_module_tests(suite, &V4);   // what test 4 checks of V3 too
    TCase *v4 = new_tcase("v4");
    tcase_add_test(v4, test_v4_with_v3_weights_equals_v3);
    tcase_add_test(v4, test_hand_worked);
    tcase_add_test(v4, test_prints_interview_points);
    suite_add_tcase(suite, v4);
    add_budget_tests(suite, &BUDGET);
    return suite;
}

int main(void) { return run_suite(lesson05_suite()); }
