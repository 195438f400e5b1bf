// test_lesson01.c - lesson 1, the toy 3x3 example: hand-worked numbers,
// PyTorch's recorded numbers and text, and the lesson's own helpers.
#include "harness.h"

#include <math.h>

#define main lesson_main
#include "../lessons/01-toy-qkv/toy_qkv.c"
#undef main

#define LESSON "01-toy-qkv"
#define DATA DATA_DIR "/lesson01"

// Run the lesson with --dump into a fresh directory; return that directory.
static const char *run_with_dump(const char *extra_flag) {
    const char *dir = make_temp_dir();
    const char *args[] = {"--dump", dir, extra_flag, NULL};
    RunResult run = run_program(lesson_binary(LESSON), args);
    ck_assert_msg(run.status == 0, "lesson 1 exited %d: %s", run.status, run.err);
    return dir;
}

// The numbers of the post's walk-through, worked out by hand in double:
// scores 2, 4, 4; weights e^2 / (e^2 + 2 e^4) and e^4 / (e^2 + 2 e^4).
START_TEST(test_hand_worked_input_1) {
    const char *dir = run_with_dump(NULL);
    const Tensor *scores = load_npy(path_join("%s/scores.npy", dir));
    const Tensor *weights = load_npy(path_join("%s/weights.npy", dir));
    const Tensor *out = load_npy(path_join("%s/out.npy", dir));
    remove_dir(dir);

    float want_scores[9] = {2, 4, 4, 4, 16, 12, 4, 12, 10};   // integer dot products
    assert_bitwise_equal(scores, tensor_from(shape2(3, 3), want_scores), "scores");

    double low = exp(2.0) / (exp(2.0) + 2.0 * exp(4.0));    // 0.0634
    double high = exp(4.0) / (exp(2.0) + 2.0 * exp(4.0));   // 0.4683
    float want_row0[3] = {(float)low, (float)high, (float)high};
    // A float softmax is within a few ulp of the exact value: 1e-6 relative.
    assert_close(narrow(weights, 0, 0, 1), tensor_from(shape2(1, 3), want_row0), 0.0f, 1e-6f,
                 "weights row 0");
    // out[0] = low*[1,2,3] + high*[2,8,0] + high*[2,6,3]
    float want_out0[3] = {(float)(low * 1 + high * 4), (float)(low * 2 + high * 14),
                          (float)(low * 3 + high * 3)};
    assert_close(narrow(out, 0, 0, 1), tensor_from(shape2(1, 3), want_out0), 0.0f, 1e-6f,
                 "out row 0");
    // The 4-digit values the lesson and its page quote against the post's
    // rounded [2.0, 7.0, 1.5].
    ck_assert_float_eq_tol(*at2(out, 0, 1), 6.6831f, 1e-4f);
    ck_assert_float_eq_tol(*at2(out, 0, 2), 1.5951f, 1e-4f);
}
END_TEST

// The binary, run with --dump, against PyTorch (tests/reference/gen_lesson01.py):
// every dumped tensor, and every line PyTorch printed printed in order.
START_TEST(test_matches_pytorch) {
    static const char *const EXACT[] = {"Query", "Key", "Value", "scores", NULL};   // in float
    // softmax and matmul round differently from PyTorch's kernels by an ulp
    // or two: 1e-6 absolute on values of at most 8 is float rounding.
    static const char *const COMPUTED[] = {"weights", "out", NULL};
    ReferenceRun run = {.lesson = LESSON, .reference = DATA, .exact = EXACT,
                        .computed = COMPUTED, .atol = 1e-6f, .rtol = 1e-6f};
    RunResult r = check_against_reference(&run);
    ck_assert_ptr_nonnull(strstr(r.out, "figure's output:   [2.0, 7.0, 1.5]"));
    ck_assert_ptr_nonnull(strstr(r.out, "exact output:      [1.9366, 6.6831, 1.5951]"));
}
END_TEST

// The post's soft_max overflows: exp(160) is inf in float32, inf/inf NaN.
START_TEST(test_unstable_softmax_overflows) {
    float big_values[3] = {40, 160, 120};
    const Tensor *big = tensor_from(shape2(1, 3), big_values);
    const Tensor *naive = unstable_softmax(big);
    ck_assert(isnan(*at2(naive, 0, 1)));
    const Tensor *stable = softmax(big, -1);
    ck_assert(!isnan(*at2(stable, 0, 1)));
    ck_assert_float_eq_tol(*at2(stable, 0, 1), 1.0f, 1e-6f);
    // For small scores the two agree: the max cancels in the ratio.
    float small_values[3] = {2, 4, 4};
    const Tensor *small = tensor_from(shape2(1, 3), small_values);
    assert_close(unstable_softmax(small), softmax(small, -1), 1e-7f, 1e-6f, "small scores");
}
END_TEST

START_TEST(test_heatmap_flag) {
    const char *args[] = {"--heatmap", NULL};
    RunResult run = run_program(lesson_binary(LESSON), args);
    ck_assert_int_eq(run.status, 0);
    ck_assert_ptr_nonnull(strstr(run.out, "weights[:, :]"));
}
END_TEST

// Nothing here is random: --seed changes nothing, and the lesson says so,
// in --help and in one line when it is given a seed; the rest of the
// output is the same as without it.
START_TEST(test_seed_changes_nothing) {
    RunResult plain = run_program(lesson_binary(LESSON), (const char *const[]){NULL});
    RunResult seeded = run_program(lesson_binary(LESSON), (const char *const[]){"--seed", "7",
                                                                               NULL});
    ck_assert_int_eq(seeded.status, 0);
    const char *note = "(--seed changes nothing here: this lesson draws no random numbers)\n\n";
    ck_assert_msg(strncmp(seeded.out, note, strlen(note)) == 0, "no note first:\n%s",
                  seeded.out);
    ck_assert_str_eq(seeded.out + strlen(note), plain.out);
    ck_assert_ptr_null(strstr(plain.out, "--seed"));
    RunResult help = run_program(lesson_binary(LESSON), (const char *const[]){"--help", NULL});
    ck_assert_ptr_nonnull(strstr(help.out, "(nothing random: --seed changes nothing)"));
}
END_TEST

// --- what a run may take (common/lesson/budget.h; harness.h: add_budget_tests) -----------

// The lesson has no sizes: it is refused only under a budget lowered below its few
// kilobytes and microseconds, and then says so without naming a flag.
static const BudgetRefusal REFUSED[] = {
    {{NULL},
     "lesson-1: this run would hold about 1 KiB at once, more than the 105 bytes allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=1",
     "ATTN_MAX_MIB=0.0001"},
    {{NULL},
     "lesson-1: this run would take about 4e-06 seconds (estimated from the sizes), more than "
     "the 1e-06 seconds allowed; choose smaller sizes, or allow it with ATTN_MAX_SECONDS=1",
     "ATTN_MAX_SECONDS=0.000001"},
};

static const LessonBudget BUDGET = {
    LESSON, lesson_main, REFUSED, sizeof REFUSED / sizeof REFUSED[0], NULL, 0, NULL, 0,
};

Suite *lesson01_suite(void) {
    Suite *suite = suite_create("lesson01");
    TCase *tc = new_tcase("toy-qkv");
    tcase_add_test(tc, test_hand_worked_input_1);
    tcase_add_test(tc, test_matches_pytorch);
    tcase_add_test(tc, test_unstable_softmax_overflows);
    tcase_add_test(tc, test_heatmap_flag);
    tcase_add_test(tc, test_seed_changes_nothing);
    suite_add_tcase(suite, tc);
    add_budget_tests(suite, &BUDGET);
    return suite;
}

int main(void) { return run_suite(lesson01_suite()); }
