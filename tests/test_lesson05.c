// test_lesson05.c - lesson 5 (SelfAttV4, the interview version).
//
// Reference values in tests/data/lesson05/<case>/ were recorded from
// PyTorch 1.13 by tests/reference/gen_lesson05.py (CPU, no MKL, so dropout
// uses the generic bernoulli path of TORCH_RNG.md section 6). The lesson
// source is included with its main() renamed, so the tests can also call
// SelfAttV4_init / SelfAttV4_forward with weights set by hand.
#include <math.h>

#include "harness.h"

#define main lesson_main
#include "../lessons/05-self-attention-v4/self_attention_v4.c"
#undef main

#define LESSON_DIR "05-self-attention-v4"
#define REF_DIR DATA_DIR "/lesson05"
#define V3_DIR DATA_DIR "/lesson04"   // lesson 4's recorded SelfAttV3 runs

// Computed tensors go through different summation orders here and in
// PyTorch (its matmul/addmm kernels vs our plain loops, its vectorised exp),
// so they agree to a few float32 roundings, not bit for bit. The values are
// O(1): atol 1e-6 covers the roundings near 0, rtol 1e-5 (~80 ulps) the rest.
#define ATOL 1e-6f
#define RTOL 1e-5f

// The recorded PyTorch runs are MASKED_CASES (harness.h), the same five as
// lesson 4's.
static const char *const INPUTS[] = {
    "X", "mask", "query_proj.weight", "query_proj.bias", "key_proj.weight", "key_proj.bias",
    "value_proj.weight", "value_proj.bias", "output_proj.weight", "output_proj.bias", NULL};
static const char *const COMPUTED[] = {"Q", "K", "V", "att_weight", "output", "ret", NULL};

static Tensor *reference(const MaskedCase *c, const char *name) {
    return load_npy(path_join("%s/%s/%s.npy", REF_DIR, c->dir, name));
}

// The run of the cell as the lesson does it, inside this process: the same
// draws in the same order (X, then the module), so the tensors are PyTorch's.
typedef struct {
    const Tensor *X;                  // (B, T, C)
    const Tensor *b;                  // (B, S)
    const Tensor *mask;               // (B, T, S)
    SelfAttV4 net;
    SelfAttV4Steps weights;
    const Tensor *ret;                // (B, T, C)
} Run;

static Run run_cell(const MaskedCase *c, bool train) {
    Run run;
    manual_seed(c->seed);
    run.X = rand_tensor(shape3(c->batch, c->seq, c->dim));
    run.b = padding_rows(c->batch, c->seq);
    run.mask = repeat(unsqueeze(run.b, 1), (int[]){1, c->seq, 1});
    run.net = SelfAttV4_init(c->dim);
    run.net.training = train;
    int saved = quiet_stdout();
    run.ret = SelfAttV4_forward(&run.weights, &run.net, run.X, run.mask);
    restore_stdout(saved);
    return run;
}

// --- against PyTorch ------------------------------------------------------------------

// The binary, run with --dump: inputs and parameters bit for bit, computed
// tensors to float rounding, and its stdout starts with exactly the text
// PyTorch printed ("att_weight:", the weights one space in, the output shape).
START_TEST(test_matches_pytorch) {
    const MaskedCase *c = &MASKED_CASES[_i];
    ReferenceRun run = {LESSON_DIR, path_join("%s/%s", REF_DIR, c->dir), c->args, INPUTS,
                        COMPUTED, ATOL, RTOL, true};
    check_against_reference(&run);
}
END_TEST

// Train mode: the lesson's dropout draws are PyTorch's. The same positions
// are zeroed, the kept weights agree to rounding (they are PyTorch's
// att_weight * (1/0.9), and att_weight agrees to rounding).
START_TEST(test_dropout_matches_pytorch) {
    for (int i = 0; i < N_MASKED_CASES; i++) {
        const MaskedCase *c = &MASKED_CASES[i];
        if (!c->train) {
            continue;
        }
        Run run = run_cell(c, true);
        const Tensor *want = reference(c, "att_weight_dropped");
        const Tensor *got = run.weights.att_weight_dropped;
        assert_close(got, want, ATOL, RTOL, path_join("%s att_weight_dropped", c->dir));
        assert_same_zeros(got, want, c->dir);
    }
}
END_TEST

// --- invariants -------------------------------------------------------------------------

// Every row of att_weight sums to 1 and masked weights are exactly 0 (not
// merely tiny): exp(-1e20 - max) underflows to 0.0f.
START_TEST(test_rows_sum_to_one_and_masked_are_zero) {
    for (int i = 0; i < N_MASKED_CASES; i++) {
        Run run = run_cell(&MASKED_CASES[i], false);
        int masked = check_weight_rows(run.weights.att_weight, run.mask, MASKED_CASES[i].dir);
        ck_assert_int_gt(masked, 0);
    }
}
END_TEST

// The notebook's b for 3x4, and for batch > seq every row keeps one key.
START_TEST(test_padding_rows) {
    check_padding_rows(padding_rows);
}
END_TEST

// Build a V4 from V3's weights: rows 0..C-1 of proj.weight are query_proj,
// C..2C-1 key_proj, 2C..3C-1 value_proj (torch.split of QKV takes its
// columns in that order, and output column o comes from weight row o).
// The parts are views into proj, as weight[p*C:(p+1)*C] would be in
// PyTorch; linear() reads a view through its offset, so nothing is copied.
static void load_v3_weights(SelfAttV4 *net, const char *case_dir) {
    int C = net->dim;
    const Tensor *proj_weight = load_npy(path_join("%s/%s/proj.weight.npy", V3_DIR, case_dir));
    const Tensor *proj_bias = load_npy(path_join("%s/%s/proj.bias.npy", V3_DIR, case_dir));
    Linear *parts[3] = {&net->query_proj, &net->key_proj, &net->value_proj};
    for (int p = 0; p < 3; p++) {
        parts[p]->weight = narrow(proj_weight, 0, p * C, C);   // (C, C)
        parts[p]->bias = narrow(proj_bias, 0, p * C, C);       // (C)
    }
    net->output_proj.weight =
        load_npy(path_join("%s/%s/output_proj.weight.npy", V3_DIR, case_dir));
    net->output_proj.bias = load_npy(path_join("%s/%s/output_proj.bias.npy", V3_DIR, case_dir));
}

// V4 with V3's weights split equals V3: lesson 4's recorded PyTorch
// SelfAttV3 runs, eval and train. In train mode the dropout draws line up
// as well: both modules draw the same number of parameters (3C*C + 3C, then
// output_proj), so after init the generator is at the same place.
START_TEST(test_v4_with_v3_weights_equals_v3) {
    for (int i = 0; i < N_MASKED_CASES; i++) {
        const MaskedCase *v3 = &MASKED_CASES[i];   // lesson 4 recorded the same runs
        manual_seed(v3->seed);
        const Tensor *X = rand_tensor(shape3(v3->batch, v3->seq, v3->dim));
        assert_bitwise_equal(X, load_npy(path_join("%s/%s/X.npy", V3_DIR, v3->dir)), "X");
        SelfAttV4 net = SelfAttV4_init(v3->dim);   // draws as many numbers as SelfAttV3
        net.training = v3->train;
        load_v3_weights(&net, v3->dir);
        const Tensor *mask = load_npy(path_join("%s/%s/mask.npy", V3_DIR, v3->dir));
        SelfAttV4Steps w;
        int saved = quiet_stdout();
        const Tensor *ret = SelfAttV4_forward(&w, &net, X, mask);
        restore_stdout(saved);
        const char *what = path_join("V4 with V3 weights, %s", v3->dir);
        assert_close(w.att_weight, load_npy(path_join("%s/%s/att_weight.npy", V3_DIR, v3->dir)),
                     ATOL, RTOL, what);
        assert_close(ret, load_npy(path_join("%s/%s/ret.npy", V3_DIR, v3->dir)), ATOL, RTOL,
                     what);
    }
}
END_TEST

// An all-ones mask changes nothing at all, bit for bit, against no mask.
START_TEST(test_all_ones_mask_is_no_mask) {
    Run run = run_cell(&MASKED_CASES[0], false);
    const Tensor *ones_mask = ones(shape3(3, 4, 4));
    int saved = quiet_stdout();
    const Tensor *with_ones = SelfAttV4_forward(NULL, &run.net, run.X, ones_mask);
    const Tensor *unmasked = SelfAttV4_forward(NULL, &run.net, run.X, NULL);
    restore_stdout(saved);
    assert_bitwise_equal(with_ones, unmasked, "all-ones mask vs no mask");
}
END_TEST

// In train mode the kept weights are the eval weights / 0.9 and the
// dropped ones are exactly 0; about 10% are dropped; eval mode draws
// nothing from the generator.
START_TEST(test_dropout_scales_survivors) {
    MaskedCase big = {"big", 3, 4, 32, 2, false, {NULL}};   // 4*32*32 weights: a fair sample
    Run eval = run_cell(&big, false);
    uint32_t after_eval = random32();
    Run train = run_cell(&big, true);
    manual_seed(big.seed);
    rand_tensor(shape3(big.batch, big.seq, big.dim));
    SelfAttV4_init(big.dim);
    ck_assert_msg(random32() == after_eval, "eval-mode forward drew random numbers");

    const Tensor *w = eval.weights.att_weight, *d = train.weights.att_weight_dropped;
    assert_bitwise_equal(train.weights.att_weight, w, "att_weight before dropout");
    check_dropout_survivors(w, d);
}
END_TEST

// --- hand-worked -------------------------------------------------------------------------

// dim 2, Q = K = V = X and output_proj = identity, so everything is
// computable by hand: the example of hand_worked_X / check_hand_worked
// (harness.c, worked out there), key 2 padding.
START_TEST(test_hand_worked) {
    SelfAttV4 net = SelfAttV4_init(2);
    net.training = false;
    const float identity[] = {1, 0, 0, 1};
    const float zeros2[] = {0, 0};
    set_linear(&net.query_proj, identity, zeros2);   // Q = X
    set_linear(&net.key_proj, identity, zeros2);     // K = X
    set_linear(&net.value_proj, identity, zeros2);   // V = X
    set_linear(&net.output_proj, identity, zeros2);
    const Tensor *X = hand_worked_X();
    const Tensor *mask = hand_worked_mask();
    SelfAttV4Steps w;
    int saved = quiet_stdout();
    const Tensor *ret = SelfAttV4_forward(&w, &net, X, mask);
    restore_stdout(saved);
    check_hand_worked(w.att_weight, ret);
}
END_TEST

// A row whose keys are all masked gets exactly uniform weights with the
// -1e20 fill (every score is -1e20, exp(0) = 1 each), not NaN.
START_TEST(test_fully_masked_row) {
    MaskedCase c = {"masked", 0, 2, 4, 2, false, {NULL}};
    Run run = run_cell(&c, false);
    const Tensor *mask = mask_hiding_batch_row(2, 4, 1);
    SelfAttV4Steps w;
    int saved = quiet_stdout();
    const Tensor *ret = SelfAttV4_forward(&w, &run.net, run.X, mask);
    restore_stdout(saved);
    for (int t = 0; t < 4; t++) {
        for (int s = 0; s < 4; s++) {
            ck_assert_msg(*at3(w.att_weight, 1, t, s) == 0.25f, "fully masked row not uniform");
        }
        ck_assert(!isnan(*at3(ret, 1, t, 0)));
    }
}
END_TEST

// The interview part of the output, with numbers worked by hand for the
// defaults (dim 2) and for --dim 8: 3 x (64 + 8) = 216, 192 without bias.
START_TEST(test_prints_interview_points) {
    check_prints(LESSON_DIR, (const char *const[]){NULL},
        "-- what to say about each choice --\n"
        "  gives the same Q, K, V (largest difference 0): the same math in one matmul instead of three.\n"
        "bias: 3 x (2*2 + 2) = 18 parameters for Q, K, V with biases, 12 without; + 6 for output_proj.\n"
        "scaling: scores are divided by sqrt(dim) = 1.4142 so their variance does not grow with dim.\n"
        "dropout: p = 0.1 on att_weight (before @ V), off now (eval mode).\n");
    RunResult t = check_prints(LESSON_DIR, (const char *const[]){"--dim", "8", "--train", NULL},
                               "");
    ck_assert_msg(strstr(t.out, "bias: 3 x (8*8 + 8) = 216 parameters for Q, K, V with biases, "
                                "192 without; + 72 for output_proj.") != NULL, "%s", t.out);
    ck_assert_msg(strstr(t.out, "largest difference 0)") != NULL, "%s", t.out);
    ck_assert_msg(strstr(t.out, "on now (--train)") != NULL, "%s", t.out);
}
END_TEST

// --- bad flags ------------------------------------------------------------------------------

// Each: exit 2, nothing on stdout, one line on stderr naming the flag, and
// the --dump directory not created.
START_TEST(test_bad_flags) {
    check_bad_flags(LESSON_DIR, "lesson-5", MASKED_BAD_FLAGS, N_MASKED_BAD_FLAGS);
}
END_TEST

static Suite *lesson05_suite(void) {
    Suite *suite = suite_create("lesson05");
    TCase *pytorch = new_tcase("pytorch");
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, N_MASKED_CASES);
    tcase_add_test(pytorch, test_dropout_matches_pytorch);
    suite_add_tcase(suite, pytorch);
    TCase *invariants = new_tcase("invariants");
    tcase_add_test(invariants, test_rows_sum_to_one_and_masked_are_zero);
    tcase_add_test(invariants, test_padding_rows);
    tcase_add_test(invariants, test_v4_with_v3_weights_equals_v3);
    tcase_add_test(invariants, test_all_ones_mask_is_no_mask);
    tcase_add_test(invariants, test_dropout_scales_survivors);
    tcase_add_test(invariants, test_hand_worked);
    tcase_add_test(invariants, test_fully_masked_row);
    tcase_add_test(invariants, test_prints_interview_points);
    suite_add_tcase(suite, invariants);
    TCase *flags = new_tcase("flags");
    tcase_add_test(flags, test_bad_flags);
    suite_add_tcase(suite, flags);
    return suite;
}

int main(void) { return run_suite(lesson05_suite()); }
