// test_budget_edges.c - each lesson's budget (common/lesson/budget.h) at its
// edge: each size flag alone raised to the largest value a lowered budget
// admits runs (exit 0, no "held more than predicted" warning), and one more
// is refused, by the budget. (test_budget checks the predictions at sizes
// of its own, and the refusals' words.)
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lesson_cli.h"

// ATTN_COST=check under `budget` (ATTN_MAX_MIB and ATTN_MAX_SECONDS): 0 when
// the lesson would run, 2 when it is refused (by the budget, when
// *by_budget).
static int checked(const LessonCli *cli, const Argv *argv, const char *const budget[2],
                   bool *by_budget) {
    setenv("ATTN_MAX_MIB", budget[0], 1);
    setenv("ATTN_MAX_SECONDS", budget[1], 1);
    setenv("ATTN_COST", "check", 1);
    RunResult r = run_program_with(NULL, 30, cli->binary, argv->words);
    unsetenv("ATTN_COST");
    unsetenv("ATTN_MAX_MIB");
    unsetenv("ATTN_MAX_SECONDS");
    *by_budget = r.status == 2 && strstr(r.err, "ATTN_MAX_") != NULL;
    ck_assert_msg(r.status == 0 || r.status == 2, "%s: exit %d: %s", plain_text(cli->dir, argv),
                  r.status, r.err);
    return r.status;
}

// Each size flag of each lesson alone (--dim with one head, so any value
// divides), under a budget lowered to what the lesson's defaults cost, four
// times their bytes and twice their seconds (so the runs stay short): find by bisection (in ratio, to within 5%)
// a value the budget admits and one it refuses; the refusal must be the
// budget's, and the value admitted must run (exit 0, nothing on stderr: no
// "held more than predicted" warning). So each prediction is checked where
// it matters, at the edge, stretched along each flag in turn.
START_TEST(test_sizes_at_the_budgets_edge) {
    const char *dirs[MAX_LESSONS];
    int n_lessons = find_lesson_dirs(dirs, MAX_LESSONS);
    const char *report = "";
    int edges = 0;
    for (int l = 0; l < n_lessons; l++) {
        if (!limits_known(dirs[l])) {
            continue;
        }
        LessonCli cli = read_cli(dirs[l], lesson_binary(dirs[l]), NULL);
        // What the defaults cost (from the cheaper start, where there is
        // one): four times the bytes (at least 8 MiB), twice the seconds (at
        // least a tenth of a second).
        Argv start = {.n = 0};
        push_cheaper(&start, cli.dir);
        setenv("ATTN_COST", "check", 1);
        RunResult r = run_program(cli.binary, start.words);
        unsetenv("ATTN_COST");
        double bytes = 0, seconds = 0;
        const char *line = strstr(r.err, "cost: predicted bytes=");
        ck_assert_msg(line != NULL, "%s: no prediction: %s", cli.dir, r.err);
        sscanf(line, "cost: predicted bytes=%lf seconds=%lf", &bytes, &seconds);
        const char *budget[2] = {path_join("%.3f", fmax(4 * bytes / 1048576.0, 8.0)),
                                 path_join("%.3f", fmax(2 * seconds, 0.1))};
        for (int i = 0; i < cli.n_flags; i++) {
            const HelpFlag *f = &cli.flags[i];
            if (f->kind != NUMBER || strcmp(f->flag, "--seed") == 0 || f->default_value == NULL) {
                continue;
            }
            const char *start = cheaper_value(cli.dir, f->flag);
            long low = atol(start != NULL ? start : f->default_value);   // admitted
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
            push_cheaper(&argv, cli.dir);
            if (low < 0 || checked(&cli, &argv, budget, &by_budget) == 0) {
                continue;   // admitted however big, alone: no edge along this flag
            }
            while (high - low > 1 && high > low + low / 20) {   // to within 5%
                long middle = low < 16 ? (low + high) / 2 : (long)sqrt((double)low * high);
                middle = middle > low ? middle : low + 1;   // strictly between, or high
                argv.words[1] = path_join("%ld", middle);
                if (checked(&cli, &argv, budget, &by_budget) == 0) {
                    low = middle;
                } else {
                    high = middle;
                }
            }
            argv.words[1] = path_join("%ld", high);
            checked(&cli, &argv, budget, &by_budget);
            if (!by_budget) {
                continue;   // refused by another check there (a size that must divide another)
            }
            edges += 1;
            argv.words[1] = path_join("%ld", low);
            if (getenv("ATTN_FUZZ_SHOW") != NULL) {
                fprintf(stderr, "edge: %s (ATTN_MAX_MIB=%s ATTN_MAX_SECONDS=%s)\n",
                        plain_text(cli.dir, &argv), budget[0], budget[1]);
            }
            setenv("ATTN_MAX_MIB", budget[0], 1);
            setenv("ATTN_MAX_SECONDS", budget[1], 1);
            r = run_program_with(NULL, 120, cli.binary, argv.words);
            unsetenv("ATTN_MAX_MIB");
            unsetenv("ATTN_MAX_SECONDS");
            if (r.status != 0 || r.err[0] != '\0') {
                report = path_join("%s\n  %s (ATTN_MAX_MIB=%s ATTN_MAX_SECONDS=%s): exit %d: "
                                   "%.300s", report, plain_text(cli.dir, &argv), budget[0],
                                   budget[1], r.status, r.err);
            }
        }
    }
    ck_assert_msg(edges >= 36, "only %d flags have an edge", edges);
    ck_assert_msg(report[0] == '\0', "at the budget's edge:%s", report);
}
END_TEST

static Suite *budget_edges_suite(void) {
    Suite *suite = suite_create("budget_edges");
    // Some 1,200 short runs: under the sanitizers they need more than 120 s.
    TCase *edge = new_tcase("the budget's edge");
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
