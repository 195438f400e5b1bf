// test_lesson04.c - lesson 4 (SelfAttV3: padding mask, dropout, output_proj).
//
// Reference values in tests/data/lesson04/<case>/ were recorded from
// PyTorch 1.13 by tests/reference/gen_lesson04.py (CPU, no MKL, so dropout
// uses the generic bernoulli path of TORCH_RNG.md section 6). The lesson
// source is included with its main() renamed, so the tests can also call
// SelfAttV3_init / SelfAttV3_forward with weights set by hand.
//
// Most checks are the ones test 5 makes of SelfAttV4: this file describes
// SelfAttV3 as a MaskedModule (V3 below) and add_masked_module_tests
// (family_masked.h, which lists them) adds them. What follows V3 is lesson 4's own.
#include <math.h>

#include "family_masked.h"
#include "harness.h"

#define main lesson_main
#include "../lessons/04-self-attention-v3/self_attention_v3.c"
#undef main

#define LESSON_DIR "04-self-attention-v3"
#define REF_DIR DATA_DIR "/lesson04"

// --- SelfAttV3 as the shared checks see it --------------------------------------------

static const void *v3_init(int dim, bool training) {
    SelfAttV3 *net = arena_alloc(1, sizeof *net);
    *net = SelfAttV3_init(dim);
    net->training = training;
    return net;
}

static const Tensor *v3_forward(MaskedWeights *weights, const void *net, const Tensor *X,
                                const Tensor *attention_mask) {
    SelfAttV3Steps steps;
    const Tensor *ret = SelfAttV3_forward(&steps, net, X, attention_mask);   // (B, T, C)
    if (weights != NULL) {
        *weights = (MaskedWeights){steps.att_weight, steps.att_weight_dropped};
    }
    return ret;
}

// Drawn (X, the parameters) or given (the mask): equal to PyTorch's bit for bit.
static const char *const INPUTS[] = {"X", "mask", "proj.weight", "proj.bias",
                                     "output_proj.weight", "output_proj.bias", NULL};
// Computed from them: equal to float rounding.
static const char *const COMPUTED[] = {"QKV", "Q", "K", "V", "att_weight", "output", "ret",
                                       NULL};

static const MaskedModule V3 = {LESSON_DIR, "lesson-4", REF_DIR, INPUTS, COMPUTED,
                                v3_init, v3_forward, padding_rows};

// --- what lesson 5 does not check: V3 is V2 with a mask, and masked_softmax --------------

// With a mask of all ones V3 is V2 (lesson 3) with the same weights:
// gen_lesson04.py ran SelfAttV2's forward on V3's proj and output_proj.
START_TEST(test_all_ones_mask_equals_v2) {
    for (int i = 0; i < recorded_case_count(REF_DIR); i++) {
        const RecordedCase *c = recorded_case(REF_DIR, i);
        if (case_int(c, "train")) {
            continue;
        }
        MaskedCell cell = masked_cell(c);
        MaskedRun run = run_masked_cell(&V3, cell, false);
        const Tensor *all_ones = ones(shape3(cell.batch, cell.seq, cell.seq));      // (B, T, S)
        const Tensor *ret = SelfAttV3_forward(NULL, run.net, run.X, all_ones);      // (B, T, C)
        assert_close(ret, load_reference(c->reference, "v2_ret"), ROUNDING_ATOL, ROUNDING_RTOL,
                     path_join("%s V3(all-ones mask) vs V2", c->dir));
    }
}
END_TEST

// The demo's masked_softmax on a row whose keys are all masked: -1e20
// gives exactly uniform weights (every score is -1e20, exp(0) = 1 each),
// -inf gives NaN (-inf - -inf). Partly masked, the two agree exactly.
START_TEST(test_masked_softmax_fills) {
    const float scores_values[] = {0.3f, -1.2f, 2.5f, 0.1f};
    const Tensor *scores = tensor_from(shape1(4), scores_values);
    const Tensor *no_keys = zeros(shape1(4));
    const Tensor *big = masked_softmax(scores, no_keys, MASK_FILL);
    const Tensor *inf = masked_softmax(scores, no_keys, -INFINITY);
    for (int s = 0; s < 4; s++) {
        ck_assert(*at1(big, s) == 0.25f);
        ck_assert(isnan(*at1(inf, s)));
    }
    // -inf is only a problem when nothing is left.
    const float some_keys[] = {1, 0, 1, 0};
    const Tensor *keys = tensor_from(shape1(4), some_keys);
    assert_bitwise_equal(masked_softmax(scores, keys, MASK_FILL),
                         masked_softmax(scores, keys, -INFINITY), "-1e20 vs -inf, partly masked");
}
END_TEST

// dim 2, proj made of three identities (Q = K = V = X) and output_proj the
// identity: the example check_hand_worked works out (family_masked.c).
START_TEST(test_hand_worked) {
    SelfAttV3 net = SelfAttV3_init(2);
    net.training = false;
    const float proj_w[] = {1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1};   // (3C, C): Q, K, V = X
    const float zeros6[] = {0, 0, 0, 0, 0, 0};
    const float identity[] = {1, 0, 0, 1};
    set_linear(&net.proj, proj_w, zeros6);
    set_linear(&net.output_proj, identity, zeros6);
    check_hand_worked(&V3, &net);
}
END_TEST

// The demo part of the output: the fully masked row printed both ways, and
// in train mode what dropout did.
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

// The Attention 介绍 notes' ScaledDotProductAttetion on SelfAttV3's weights,
// in eval mode. On the cell's mask of every recorded run (every sentence
// keeps a real token) the two agree bit for bit. With sentence 0 all
// padding the notes' class gives NaN for all of it and nothing else, while
// SelfAttV3 gives each of its queries the mean of its values, projected:
// output_proj(mean over s of V[0, s]), worked out here in double.
START_TEST(test_notes_class) {
    for (int i = 0; i < recorded_case_count(REF_DIR); i++) {
        const RecordedCase *c = recorded_case(REF_DIR, i);
        MaskedCell cell = masked_cell(c);
        MaskedRun run = run_masked_cell(&V3, cell, false);
        const SelfAttV3 *net = run.net;
        assert_bitwise_equal(ScaledDotProductAttetion_forward(net, run.X, run.mask), run.ret,
                             path_join("%s: sdpa vs SelfAttV3", c->dir));

        int B = cell.batch, T = cell.seq, C = cell.dim;
        Tensor *padded = clone(run.mask);                                    // (B, T, S)
        for (int t = 0; t < T; t++) {
            for (int s = 0; s < T; s++) {
                *at3(padded, 0, t, s) = 0.0f;
            }
        }
        SelfAttV3Steps steps;
        const Tensor *ret = SelfAttV3_forward(&steps, net, run.X, padded);   // (B, T, C)
        const Tensor *sdpa = ScaledDotProductAttetion_forward(net, run.X, padded);  // (B, T, C)
        for (int t = 0; t < T; t++) {
            for (int o = 0; o < C; o++) {
                double want = *at1(net->output_proj.bias, o);
                for (int i_in = 0; i_in < C; i_in++) {
                    double mean = 0.0;
                    for (int s = 0; s < T; s++) {
                        mean += *at3(steps.V, 0, s, i_in) / T;
                    }
                    want += *at2(net->output_proj.weight, o, i_in) * mean;
                }
                ck_assert_msg(fabs(*at3(ret, 0, t, o) - want) <= 1e-5 + 1e-5 * fabs(want),
                              "%s ret[0, %d, %d] = %g, want %g", c->dir, t, o,
                              (double)*at3(ret, 0, t, o), want);
                ck_assert_msg(isnan(*at3(sdpa, 0, t, o)), "%s sdpa[0, %d, %d] is not nan",
                              c->dir, t, o);
            }
        }
        if (B > 1) {
            assert_bitwise_equal(narrow(sdpa, 0, 1, B - 1), narrow(ret, 0, 1, B - 1),
                                 path_join("%s: the other sentences", c->dir));
        }
    }
    check_prints(LESSON_DIR, (const char *const[]){"--train", NULL},
                 "torch.equal(sdpa(X, mask), net(X, mask)): True   (every sentence keeps a real "
                 "token,\n"
                 "sdpa(X, mask)[0]:\n"
                 "tensor([[nan, nan],\n");
}
END_TEST

// --- what a run may take (common/lesson/budget.h; harness.h: add_budget_tests) -----------

// Refused by the budget before anything runs, in one line that names the flags, the budget
// and how to raise it.
static const BudgetRefusal REFUSED[] = {
    // Issue 18's table, each command as the probe ran it: it took gigabytes or minutes.
    {{"--batch", "1", "--seq", "8192", "--dim", "1", NULL},
     "lesson-4: --seq 8192 would hold about 6.8 GiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=7000", NULL},
};

// Sizes where the tensors that grow with the flags are most of what a run holds, each
// flag raised in one of them, and the switches that add tensors on: what a run holds is
// its prediction (make test runs the first, make test-long all).
static const SizedRun SIZED[] = {
    {{"--batch", "2", "--seq", "384", "--dim", "48", "--train", NULL}},
    {{"--batch", "4", "--seq", "256", "--dim", "16", "--dump", "", NULL}},
};

static const LessonBudget BUDGET = {
    "04-self-attention-v3", lesson_main, REFUSED, sizeof REFUSED / sizeof REFUSED[0], SIZED,
    sizeof SIZED / sizeof SIZED[0], NULL, 0,
};

static Suite *lesson04_suite(void) {
    Suite *suite = suite_create("lesson04");
    add_masked_module_tests(suite, &V3);   // what test 5 checks of V4 too
    TCase *v3 = new_tcase("v3");
    tcase_add_test(v3, test_all_ones_mask_equals_v2);
    tcase_add_test(v3, test_masked_softmax_fills);
    tcase_add_test(v3, test_hand_worked);
    tcase_add_test(v3, test_prints_fully_masked_demo);
    tcase_add_test(v3, test_notes_class);
    suite_add_tcase(suite, v3);
    add_budget_tests(suite, &BUDGET);
    return suite;
}

int main(void) { return run_suite(lesson04_suite()); }
