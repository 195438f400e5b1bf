// test_budget_edges.c - each lesson's budget (common/lesson/budget.h) at its
// edge: each size flag alone raised to the largest value a lowered budget
// admits, and one more is refused, by the budget. The lessons are called in
// this process (harness.h: call_lesson), which stops each where its work would
// start, so the bisection costs microseconds a step; `make test-long`
// (ATTN_TEST_LONG=1) runs each value admitted at the edge as a program, which
// must run (exit 0, no "held more than predicted" warning). (The lessons'
// own tests check their predictions at sizes of their own, as programs, and
// their refusals' words.)
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lesson_cli.h"

// Under `budget` (ATTN_MAX_MIB and ATTN_MAX_SECONDS): true when the lesson would
// run, false when it is refused (by the budget, when *by_budget).
static bool admitted(const LessonCli *cli, const Argv *argv, bool *by_budget) {
    LessonCall call = call_cli(cli, argv);
    *by_budget = call.status == 2 && call.budget.made && !call.budget.admitted;
    ck_assert_msg(call.status == 0 || call.status == 2, "%s: exit %d: %s",
                  plain_text(cli->dir, argv), call.status, call.err);
    ck_assert_msg(!*by_budget || strstr(call.err, "ATTN_MAX_") != NULL, "%s: refused by the "
                  "budget, but its line does not say how to raise it: %s",
                  plain_text(cli->dir, argv), call.err);
    return call.status == 0;
}

// Each size flag of each lesson alone (--dim with one head, so any value divides),
// under a budget lowered to what the lesson's quick start (lesson_cli.h) costs, four
// times its bytes (at least 8 MiB) and twice its seconds (at least a tenth of a second,
// so that the runs of make test-long stay short): find by bisection (in ratio, to within
// 5%) a value the budget admits and one it refuses; the refusal must be the budget's.
// So each prediction is checked where it matters, at the edge, stretched along each
// flag in turn.
START_TEST(test_sizes_at_the_budgets_edge) {
    const char *report = "";
    int edges = 0, lessons_with_edges = 0;
    for (int l = 0; l < N_LESSONS; l++) {
        LessonCli cli = lesson_cli(&LESSONS[l]);
        Argv start = {.n = 0};
        push_quick(&start, &cli);
        LessonCall call = call_cli(&cli, &start);
        ck_assert_msg(call.status == 0 && call.budget.made, "%s: its quick start %s: exit %d: %s",
                      cli.dir, plain_text(cli.dir, &start), call.status, call.err);
        const char *budget[2] = {
            path_join("%.3f", fmax(4 * call.budget.bytes / 1048576.0, 8.0)),
            path_join("%.3f", fmax(2 * call.budget.seconds, 0.1))};
        setenv("ATTN_MAX_MIB", budget[0], 1);
        setenv("ATTN_MAX_SECONDS", budget[1], 1);
        int edges_before = edges;
        for (int i = 0; i < cli.n_flags; i++) {
            const HelpFlag *f = &cli.flags[i];
            if (f->kind != NUMBER || strcmp(f->flag, "--seed") == 0 || f->default_value == NULL) {
                continue;
            }
            const char *quick = quick_value(&cli, f->flag);
            long low = atol(quick != NULL ? quick : f->default_value);   // admitted
            long high = 65536;                                           // not admitted
            bool by_budget;
            Argv argv = {.n = 0};
            push(&argv, f->flag);
            push(&argv, "65536");
            if (strcmp(f->flag, "--dim") == 0) {   // one head, so that any --dim divides
                for (int k = 0; k < cli.n_flags; k++) {
                    if (strcmp(cli.flags[k].flag, "--heads") == 0 ||
                        strcmp(cli.flags[k].flag, "--kv-heads") == 0) {
                        push(&argv, cli.flags[k].flag);
                        push(&argv, "1");
                    }
                }
            }
            push_quick(&argv, &cli);
            if (low < 0 || admitted(&cli, &argv, &by_budget)) {
                continue;   // admitted however big, alone: no edge along this flag
            }
            while (high - low > 1 && high > low + low / 20) {   // to within 5%
                long middle = low < 16 ? (low + high) / 2 : (long)sqrt((double)low * high);
                middle = middle > low ? middle : low + 1;   // strictly between, or high
                argv.words[1] = path_join("%ld", middle);
                if (admitted(&cli, &argv, &by_budget)) {
                    low = middle;
                } else {
                    high = middle;
                }
            }
            argv.words[1] = path_join("%ld", high);
            admitted(&cli, &argv, &by_budget);
            if (!by_budget) {
                continue;   // refused by another check there (a size that must divide another)
            }
            edges += 1;
            argv.words[1] = path_join("%ld", low);
            ck_assert_msg(admitted(&cli, &argv, &by_budget), "%s: admitted, then not",
                          plain_text(cli.dir, &argv));
            if (getenv("ATTN_FUZZ_SHOW") != NULL) {
                fprintf(stderr, "edge: %s (ATTN_MAX_MIB=%s ATTN_MAX_SECONDS=%s)\n",
                        plain_text(cli.dir, &argv), budget[0], budget[1]);
            }
            if (long_tests()) {
                RunResult r = run_cli(&cli, NULL, 120, &argv);
                if (r.status != 0 || r.err[0] != '\0') {
                    report = path_join("%s\n  %s (ATTN_MAX_MIB=%s ATTN_MAX_SECONDS=%s): exit %d: "
                                       "%.300s", report, plain_text(cli.dir, &argv), budget[0],
                                       budget[1], r.status, r.err);
                }
            }
        }
        lessons_with_edges += edges > edges_before;
        unsetenv("ATTN_MAX_MIB");
        unsetenv("ATTN_MAX_SECONDS");
    }
    // Every lesson with a size flag has an edge along at least one (lesson 1 has none).
    ck_assert_msg(lessons_with_edges >= N_LESSONS - 1, "only %d lessons have an edge",
                  lessons_with_edges);
    ck_assert_msg(edges >= 36, "only %d flags have an edge", edges);
    ck_assert_msg(report[0] == '\0', "at the budget's edge:%s", report);
}
END_TEST

static Suite *budget_edges_suite(void) {
    Suite *suite = suite_create("budget_edges");
    TCase *edge = new_tcase("the budget's edge");
    // With ATTN_TEST_LONG=1, some 40 runs of up to a few seconds each: under the
    // sanitizers they need more than 120 s.
    tcase_set_timeout(edge, 600);
    tcase_add_test(edge, test_sizes_at_the_budgets_edge);
    suite_add_tcase(suite, edge);
    return suite;
}

int main(void) {
    // The lessons run here natively, also under make valgrind, whose ATTN_KERNELS=scalar is
    // for the programs valgrind runs: lesson 16 takes its fastest kernels.
    unsetenv("ATTN_KERNELS");
    return run_suite(budget_edges_suite());
}
