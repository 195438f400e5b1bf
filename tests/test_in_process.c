// test_in_process.c - a lesson's main() called in the test's own process
// (harness.h: call_lesson; common/lesson/run.h), which the tests of flags and
// budgets use to check thousands of command lines without starting a program
// for each. What it rests on:
//
// 1. lesson_exit's hook: the one way a run ends before its work hands the
//    status and the lesson to the test, which jumps back; nothing of the run
//    is left (its arena, the directories --dump made), the test's own is.
// 2. A call does what the program does: for every lesson, the same exit
//    status, stdout and stderr as the program for --help, refusals of every
//    kind, and the same prediction as ATTN_COST=check prints.
// 3. Nothing carries over from one call to the next: a lesson's defaults,
//    where they live in static variables the last call overwrote.
// 4. A call stops where the work starts, and --dump and --dot are checked
//    there as lesson_start checks them.
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "lesson_cli.h"

// --- 1. the hook ----------------------------------------------------------------------

static jmp_buf hook_return;
static const Lesson *hook_lesson;
static int hook_status;

static void hook(const Lesson *lesson, int status) {
    hook_lesson = lesson;
    hook_status = status;
    longjmp(hook_return, 1);
}

// usage_error, --help and ATTN_COST=check all end through lesson_exit: with a
// hook set, it is called with the lesson and the status, and exit() is not.
START_TEST(test_lesson_exit_calls_the_hook) {
    Lesson lesson = {.program = "lesson-0", .summary = "none"};
    InProcess settings = {hook, arena_mark(), false};
    fflush(stderr);
    int saved = dup(2);
    FILE *sink = freopen("/dev/null", "w", stderr);
    ck_assert(sink != NULL);
    volatile int reached = 0;
    run_in_process(&settings);
    if (setjmp(hook_return) == 0) {
        reached = 1;
        usage_error(&lesson, "a refusal");
    }
    release_run();
    run_in_process(NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ck_assert_int_eq(reached, 1);
    ck_assert_ptr_eq(hook_lesson, &lesson);
    ck_assert_int_eq(hook_status, 2);
    // The same from a dry run of the budget, ATTN_COST=check: status 0.
    setenv("ATTN_COST", "check", 1);
    LessonCall call = call_lesson(LESSONS[0].main, (const char *[]){NULL});
    unsetenv("ATTN_COST");
    ck_assert_int_eq(call.status, 0);
    ck_assert_msg(!call.reached_work && call.budget.made, "%s", call.err);
    ck_assert_ptr_nonnull(strstr(call.err, ": cost: predicted bytes="));
}
END_TEST

// What the run took from the arena is freed when the call comes back; what
// the test took before it is not.
START_TEST(test_the_run_is_released_and_the_test_is_not) {
    char *mine = (char *)path_join("made before the call");
    size_t before = arena_mark();
    for (int l = 0; l < N_LESSONS; l++) {
        LessonCall refused = call_lesson(LESSONS[l].main, (const char *[]){"--bogus", NULL});
        ck_assert_int_eq(refused.status, 2);
        LessonCall stopped = call_lesson(LESSONS[l].main, (const char *[]){NULL});
        ck_assert_msg(stopped.status == 0 && stopped.reached_work, "%s: %d %s", LESSONS[l].dir,
                      stopped.status, stopped.err);
    }
    // Each call leaves its argv and the three strings it returns; the lessons' own
    // allocations (their flags' words, shown(), the budget's texts) are gone.
    ck_assert_uint_eq(arena_mark() - before, 2 * 4 * (size_t)N_LESSONS);
    ck_assert_str_eq(mine, "made before the call");
}
END_TEST

// The table make writes is lessons/.
START_TEST(test_the_table_is_the_lessons_folder) {
    const char *dirs[64];
    int n = find_lesson_dirs(dirs, 64);
    ck_assert_int_eq(n, N_LESSONS);
    for (int i = 0; i < n; i++) {
        ck_assert_str_eq(LESSONS[i].dir, dirs[i]);
    }
}
END_TEST

// --- 2. the same as the program ------------------------------------------------------------

// Command lines every lesson refuses (each for another reason, in another
// place of the helper: flags.c, outputs.c), or answers with --help.
static const char *const *ARGVS[] = {
    (const char *[]){"--help", NULL},
    (const char *[]){"--bogus", NULL},
    (const char *[]){"--seed", "1", "--seed=2", NULL},
    (const char *[]){"--dot", "/nonexistent/directory/g.dot", NULL},
};
enum { N_ARGVS = sizeof ARGVS / sizeof ARGVS[0] };

static void assert_same(const char *dir, const char *const *args, RunResult program,
                        LessonCall call) {
    const char *what = dir;
    for (int i = 0; args[i] != NULL; i++) {
        what = path_join("%s %s", what, args[i]);
    }
    ck_assert_msg(program.status == call.status, "%s: the program exits %d, the call %d (%s)",
                  what, program.status, call.status, call.err);
    ck_assert_msg(strcmp(program.out, call.out) == 0, "%s: stdout differs:\n%.300s\n---\n%.300s",
                  what, program.out, call.out);
    ck_assert_msg(strcmp(program.err, call.err) == 0, "%s: stderr differs:\n%.300s---\n%.300s",
                  what, program.err, call.err);
}

// The program under ATTN_COST=check, which stops where its work would start: a refusal
// is the call's, and a run it admits the call admits, weighing the same cost.
static void assert_same_checked(const LessonEntry *lesson, const char *const *args) {
    setenv("ATTN_COST", "check", 1);
    RunResult program = run_program(lesson_binary(lesson->dir), args);
    unsetenv("ATTN_COST");
    LessonCall call = call_lesson(lesson->main, args);
    if (program.status != 0) {   // its line, without the prediction ATTN_COST adds
        const char *cost = strstr(program.err, ": cost: predicted");
        program.err = cost != NULL ? strchr(cost, '\n') + 1 : program.err;
        assert_same(lesson->dir, args, program, call);
        return;
    }
    const char *what = lesson->dir;
    for (int i = 0; args[i] != NULL; i++) {
        what = path_join("%s %s", what, args[i]);
    }
    ck_assert_msg(call.status == 0 && call.reached_work && call.budget.made, "%s: %d %s", what,
                  call.status, call.err);
    ck_assert_msg(call.out[0] == '\0' && call.err[0] == '\0', "%s printed before its work: %s%s",
                  what, call.out, call.err);
    const char *line = strstr(program.err, "cost: predicted bytes=");
    ck_assert_ptr_nonnull(line);
    char seconds[32];
    snprintf(seconds, sizeof seconds, "%.3g", call.budget.seconds);
    ck_assert_msg(strstr(line, path_join("bytes=%.0f seconds=%s ", call.budget.bytes, seconds))
                  != NULL, "%s: the program says %s; the call weighed %.0f bytes, %s s", what,
                  line, call.budget.bytes, seconds);
}

START_TEST(test_a_call_does_what_the_program_does) {
    const LessonEntry *lesson = &LESSONS[_i];
    const char *binary = lesson_binary(lesson->dir);
    for (int a = 0; a < N_ARGVS; a++) {
        assert_same(lesson->dir, ARGVS[a], run_program(binary, ARGVS[a]),
                    call_lesson(lesson->main, ARGVS[a]));
    }
    // Its first size flag at 0 (refused by flags.c) and at 65536 (refused by the budget,
    // or by a check of the lesson's own, or admitted).
    LessonCall help = call_lesson(lesson->main, (const char *[]){"--help", NULL});
    const char *cursor = help.out;
    for (const char *line = next_line(&cursor); line != NULL; line = next_line(&cursor)) {
        char flag[64], value[8];
        if (sscanf(line, "  %63s %7s ", flag, value) != 2 || strcmp(value, "N") != 0 ||
            strcmp(flag, "--seed") == 0) {
            continue;
        }
        const char *zero[] = {flag, "0", NULL}, *big[] = {flag, "65536", NULL};
        assert_same_checked(lesson, zero);
        assert_same_checked(lesson, big);
        break;
    }
    // The defaults under ATTN_COST=check: the program prints the prediction; the call
    // stops at the same place, having weighed the same cost.
    assert_same_checked(lesson, (const char *[]){NULL});
}
END_TEST

// --- 3. nothing carries over -------------------------------------------------------------

// Each lesson's defaults, read again after calls that changed every number flag (lesson
// 15 and 16 keep theirs in static variables, and turn --hidden 0 into a width): the same
// flags and the same cost as the first time.
START_TEST(test_defaults_come_back) {
    const LessonEntry *lesson = &LESSONS[_i];
    LessonCall first = call_lesson(lesson->main, (const char *[]){NULL});
    ck_assert_int_eq(first.status, 0);
    LessonCall help = call_lesson(lesson->main, (const char *[]){"--help", NULL});
    const char *cursor = help.out;
    for (const char *line = next_line(&cursor); line != NULL; line = next_line(&cursor)) {
        char flag[64], value[64];
        if (sscanf(line, "  %63s %63s ", flag, value) != 2 || strcmp(flag, "--help") == 0 ||
            (strcmp(value, "N") != 0 && strcmp(value, "F") != 0 && strcmp(value, "P") != 0 &&
             strcmp(value, "WORD") != 0)) {
            continue;
        }
        // A value other than the default (refused or not: either way, read).
        const char *other = strcmp(value, "WORD") == 0 ? "no-such-word"
                            : strcmp(value, "P") == 0 ? "0.5" : "2";
        call_lesson(lesson->main, (const char *[]){flag, other, NULL});
        call_lesson(lesson->main, (const char *[]){flag, "1", NULL});
        LessonCall again = call_lesson(lesson->main, (const char *[]){NULL});
        ck_assert_msg(strcmp(first.parsed, again.parsed) == 0, "%s, after %s %s:\n%s\nis not "
                      "\n%s", lesson->dir, flag, other, again.parsed, first.parsed);
        ck_assert_msg(first.budget.bytes == again.budget.bytes &&
                      first.budget.seconds == again.budget.seconds, "%s: after %s, the defaults "
                      "cost %g bytes and %g s, not %g and %g", lesson->dir, flag,
                      again.budget.bytes, again.budget.seconds, first.budget.bytes,
                      first.budget.seconds);
    }
}
END_TEST

// --- 4. where it stops --------------------------------------------------------------------

// A run admitted with --dump and --dot stops before its work, having made --dump's
// directories as lesson_start makes them, and removed them again; one refused there
// (--dot in a directory that is not there) is refused as the program refuses it.
START_TEST(test_it_stops_where_the_work_starts) {
    const char *sandbox = make_temp_dir();
    const char *dump = path_join("%s/a/b", sandbox);
    const char *dot = path_join("%s/a/b/g.dot", sandbox);
    for (int l = 0; l < N_LESSONS; l++) {
        LessonCall call = call_lesson(LESSONS[l].main,
                                      (const char *[]){"--dump", dump, "--dot", dot, NULL});
        ck_assert_msg(call.status == 0 && call.reached_work && call.budget.made, "%s: %d %s",
                      LESSONS[l].dir, call.status, call.err);
        ck_assert_int_eq(count_entries(sandbox), 0);
        const char *bad_dot = path_join("%s/none/g.dot", sandbox);
        call = call_lesson(LESSONS[l].main, (const char *[]){"--dump", dump, "--dot", bad_dot,
                                                               NULL});
        ck_assert_str_eq(call.err, path_join("%s: --dot cannot write '%s': no directory "
                                             "'%s/none'\n", strtok((char *)path_join("%s",
                                             call.err), ":"), bad_dot, sandbox));
        ck_assert_int_eq(call.status, 2);
        ck_assert_int_eq(count_entries(sandbox), 0);
    }
    remove_dir(sandbox);
}
END_TEST

// With the scalar kernels (main) lesson 17's defaults would take minutes and be refused: the
// time allowed is raised for every test here, as they are about calling a lesson, not about
// its budget (each lesson's own test checks that). run_suite clears the variable first.
static void raise_time_allowed(void) {
    setenv("ATTN_MAX_SECONDS", "100000", 1);
}

static Suite *in_process_suite(void) {
    Suite *suite = suite_create("in_process");
    TCase *tc = new_tcase("a lesson's main() in the test's process");
    tcase_add_checked_fixture(tc, raise_time_allowed, NULL);
    tcase_add_test(tc, test_lesson_exit_calls_the_hook);
    tcase_add_test(tc, test_the_run_is_released_and_the_test_is_not);
    tcase_add_test(tc, test_the_table_is_the_lessons_folder);
    tcase_add_loop_test(tc, test_a_call_does_what_the_program_does, 0, N_LESSONS);
    tcase_add_loop_test(tc, test_defaults_come_back, 0, N_LESSONS);
    tcase_add_test(tc, test_it_stops_where_the_work_starts);
    suite_add_tcase(suite, tc);
    return suite;
}

// --quick-starts: each lesson's quick start (lesson_cli.h), one line a lesson,
// "08-gqa:--seq,64" (the flags after the ':', commas for spaces), for make valgrind.
// (A check test, for lesson_cli's assertions; in this process, silently.)
START_TEST(print_quick_starts) {
    for (int l = 0; l < N_LESSONS; l++) {
        LessonCli cli = lesson_cli(&LESSONS[l]);
        quick_start(&cli);
        printf("%s:", cli.dir);
        for (int w = 0; w < cli.quick.n; w++) {
            printf("%s%s", w > 0 ? "," : "", cli.quick.words[w]);
        }
        printf("\n");
    }
}
END_TEST

static int quick_starts(void) {
    Suite *suite = suite_create("quick starts");
    TCase *tc = new_tcase("quick starts");
    tcase_add_test(tc, print_quick_starts);
    suite_add_tcase(suite, tc);
    SRunner *runner = srunner_create(suite);
    srunner_set_fork_status(runner, CK_NOFORK);
    srunner_run_all(runner, CK_SILENT);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    // The scalar kernels, in the calls and in the programs they are compared with: the
    // vector ones a CPU has are not all valgrind's (make valgrind), and lessons 13, 14, 16
    // and 17 price their runs by their kernels (the time allowed is raised in each test:
    // raise_time_allowed). The quick starts too: make valgrind runs them with the scalar
    // kernels (lesson 17's, priced with the vector ones, took 0.9 s natively, a minute
    // under valgrind).
    setenv("ATTN_KERNELS", "scalar", 1);
    if (argc > 1 && strcmp(argv[1], "--quick-starts") == 0) {
        return quick_starts();
    }
    return run_suite(in_process_suite());
}
