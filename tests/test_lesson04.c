// test_lesson04.c - lesson 4 (SelfAttV3: padding mask, dropout, output_proj).
//
// Reference values in tests/data/lesson04/<case>/ were recorded from
// PyTorch 1.13 by tests/reference/gen_lesson04.py (CPU, no MKL, so dropout
// uses the generic bernoulli path of TORCH_RNG.md section 6). The lesson
// source is included with its main() renamed, so the tests can also call
// SelfAttV3_init / SelfAttV3_forward with weights set by hand.
#include <math.h>

#include "harness.h"

#define main lesson_main
#include "../lessons/04-self-attention-v3/self_attention_v3.c"
#undef main

#define LESSON_DIR "04-self-attention-v3"
#define REF_DIR DATA_DIR "/lesson04"

// Computed tensors go through different summation orders here and in
// PyTorch (its matmul/addmm kernels vs our plain loops, its vectorised exp),
// so they agree to a few float32 roundings, not bit for bit. The values are
// O(1): atol 1e-6 covers the roundings near 0, rtol 1e-5 (~80 ulps) the rest.
#define ATOL 1e-6f
#define RTOL 1e-5f

// The recorded PyTorch runs are MASKED_CASES (harness.h), the same five as
// lesson 5's.
static const char *const INPUTS[] = {"X", "mask", "proj.weight", "proj.bias",
                                     "output_proj.weight", "output_proj.bias", NULL};
static const char *const COMPUTED[] = {"QKV", "Q", "K", "V", "att_weight", "output", "ret", NULL};

static Tensor *reference(const MaskedCase *c, const char *name) {
    return load_npy(path_join("%s/%s/%s.npy", REF_DIR, c->dir, name));
}

// The run of the cell as the lesson does it, inside this process: the same
// draws in the same order (X, then the module), so the tensors are PyTorch's.
typedef struct {
    const Tensor *X;                  // (B, T, C)
    const Tensor *b;                  // (B, S)
    const Tensor *mask;               // (B, T, S)
    SelfAttV3 net;
    SelfAttV3Steps weights;
    const Tensor *ret;                // (B, T, C)
} Run;

static Run run_cell(const MaskedCase *c, bool train) {
    Run run;
    manual_seed(c->seed);
    run.X = rand_tensor(shape3(c->batch, c->seq, c->dim));
    run.b = padding_rows(c->batch, c->seq);
    run.mask = repeat(unsqueeze(run.b, 1), (int[]){1, c->seq, 1});
    run.net = SelfAttV3_init(c->dim);
    run.net.training = train;
    int saved = quiet_stdout();
    run.ret = SelfAttV3_forward(&run.weights, &run.net, run.X, run.mask);
    restore_stdout(saved);
    return run;
}

// --- against PyTorch ------------------------------------------------------------------

// The binary, run with --dump: inputs and parameters bit for bit, computed
// tensors to float rounding, and its stdout starts with exactly the text
// PyTorch printed (b.shape, the mask, the weights, the output shape).
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

// With a mask of all ones V3 is V2 (lesson 3) with the same weights:
// gen_lesson04.py ran SelfAttV2's forward on V3's proj and output_proj.
// Also: an all-ones mask changes nothing at all, bit for bit, against no mask.
START_TEST(test_all_ones_mask_equals_v2) {
    for (int i = 0; i < N_MASKED_CASES; i++) {
        const MaskedCase *c = &MASKED_CASES[i];
        if (c->train) {
            continue;
        }
        Run run = run_cell(c, false);
        const Tensor *ones_mask = ones(shape3(c->batch, c->seq, c->seq));
        int saved = quiet_stdout();
        const Tensor *with_ones = SelfAttV3_forward(NULL, &run.net, run.X, ones_mask);
        const Tensor *unmasked = SelfAttV3_forward(NULL, &run.net, run.X, NULL);
        restore_stdout(saved);
        assert_close(with_ones, reference(c, "v2_ret"), ATOL, RTOL,
                     path_join("%s V3(all-ones mask) vs V2", c->dir));
        assert_bitwise_equal(with_ones, unmasked, "all-ones mask vs no mask");
    }
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
    SelfAttV3_init(big.dim);
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
    SelfAttV3 net = SelfAttV3_init(2);
    net.training = false;
    const float proj_w[] = {1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1};   // Q, K, V = X
    const float zeros6[] = {0, 0, 0, 0, 0, 0};
    const float identity[] = {1, 0, 0, 1};
    set_linear(&net.proj, proj_w, zeros6);
    set_linear(&net.output_proj, identity, zeros6);
    const Tensor *X = hand_worked_X();
    const Tensor *mask = hand_worked_mask();
    SelfAttV3Steps w;
    int saved = quiet_stdout();
    const Tensor *ret = SelfAttV3_forward(&w, &net, X, mask);
    restore_stdout(saved);
    check_hand_worked(w.att_weight, ret);
}
END_TEST

// A row whose keys are all masked: -1e20 gives exactly uniform weights
// (every score is -1e20, exp(0) = 1 each), -inf gives NaN (-inf - -inf).
// Both through the lesson's forward (batch row 1 all padding) and through
// the demo's masked_softmax.
START_TEST(test_fully_masked_row) {
    MaskedCase c = {"masked", 0, 2, 4, 2, false, {NULL}};
    Run run = run_cell(&c, false);
    const Tensor *mask = mask_hiding_batch_row(2, 4, 1);
    SelfAttV3Steps w;
    int saved = quiet_stdout();
    SelfAttV3_forward(&w, &run.net, run.X, mask);
    restore_stdout(saved);
    for (int t = 0; t < 4; t++) {
        for (int s = 0; s < 4; s++) {
            ck_assert_msg(*at3(w.att_weight, 1, t, s) == 0.25f, "fully masked row not uniform");
        }
    }

    const float scores_values[] = {0.3f, -1.2f, 2.5f, 0.1f};
    const Tensor *scores = tensor_from(shape1(4), scores_values);
    const Tensor *no_keys = zeros(shape1(4));
    const Tensor *big = masked_softmax(scores, no_keys, MASK_FILL);
    const Tensor *inf = masked_softmax(scores, no_keys, -INFINITY);
    for (int s = 0; s < 4; s++) {
        ck_assert(*at1(big, s) == 0.25f);
        ck_assert(isnan(*at1(inf, s)));
    }
    // Partly masked, the two fills agree exactly: -inf is only a problem
    // when nothing is left.
    const float some_keys[] = {1, 0, 1, 0};
    const Tensor *keys = tensor_from(shape1(4), some_keys);
    assert_bitwise_equal(masked_softmax(scores, keys, MASK_FILL),
                         masked_softmax(scores, keys, -INFINITY), "-1e20 vs -inf, partly masked");
}
END_TEST

// The demo part of the output: the fully masked row printed both ways.
START_TEST(test_prints_fully_masked_demo) {
    check_prints(LESSON_DIR, (const char *const[]){NULL},
                 "mask every key, fill -1e20 (the notebook): tensor([0.2500, 0.2500, 0.2500, "
                 "0.2500])\n"
                 "mask every key, fill -inf:                 tensor([nan, nan, nan, nan])\n");
    RunResult t = check_prints(LESSON_DIR, (const char *const[]){"--train", NULL}, "");
    ck_assert_msg(strstr(t.out, "divided the other 22 by 0.9 (0.3565 -> 0.3961)") != NULL,
                  "train summary missing:\n%s", t.out);
}
END_TEST

// --- bad flags ------------------------------------------------------------------------------

// Each: exit 2, nothing on stdout, one line on stderr naming the flag, and
// the --dump directory not created.
START_TEST(test_bad_flags) {
    check_bad_flags(LESSON_DIR, "lesson-4", MASKED_BAD_FLAGS, N_MASKED_BAD_FLAGS);
}
END_TEST

static Suite *lesson04_suite(void) {
    Suite *suite = suite_create("lesson04");
    TCase *pytorch = new_tcase("pytorch");
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, N_MASKED_CASES);
    tcase_add_test(pytorch, test_dropout_matches_pytorch);
    suite_add_tcase(suite, pytorch);
    TCase *invariants = new_tcase("invariants");
    tcase_add_test(invariants, test_rows_sum_to_one_and_masked_are_zero);
    tcase_add_test(invariants, test_padding_rows);
    tcase_add_test(invariants, test_all_ones_mask_equals_v2);
    tcase_add_test(invariants, test_dropout_scales_survivors);
    tcase_add_test(invariants, test_hand_worked);
    tcase_add_test(invariants, test_fully_masked_row);
    tcase_add_test(invariants, test_prints_fully_masked_demo);
    suite_add_tcase(suite, invariants);
    TCase *flags = new_tcase("flags");
    tcase_add_test(flags, test_bad_flags);
    suite_add_tcase(suite, flags);
    return suite;
}

int main(void) { return run_suite(lesson04_suite()); }
