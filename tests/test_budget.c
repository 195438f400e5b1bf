// test_budget.c - what a run may take (common/lesson/budget.h): every lesson
// predicts from its flags what it will hold and do, and a run over the
// budget is refused before anything runs, in one line that names the flags,
// the budget and how to raise it. Each lesson's own test checks its refusals'
// words and its predictions at sizes of its own (harness.h: add_budget_tests);
// test_budget_edges each flag at the edge of a lowered budget. Here, for every
// lesson of lessons/ (its main() called in this process, harness.h: call_lesson,
// and a few runs of its program):
//
// 1. A refusal by the budget is a program's too: exit 2 before anything runs,
//    nothing on stdout, the one line, no --dot file made.
// 2. ATTN_MAX_MIB and ATTN_MAX_SECONDS raise the budget to what a refusal
//    suggests, and a bad value of either is refused like a bad flag.
// 3. The budget admits each lesson's defaults and every size a page suggests
//    (`make lesson-N ARGS="..."` in README.md and docs/*.md).
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

// --- 1. a refusal, as a program -------------------------------------------------------

// The lesson's first size flag that the budget refuses at 65536, alone, after `before`
// (two words, or NULL) (NULL if none: lesson 1 has no sizes). *call gets its call.
static const char *refused_size(const LessonEntry *lesson, const char *const *before,
                                LessonCall *call) {
    LessonCall help = call_lesson(lesson->main, (const char *[]){"--help", NULL});
    const char *cursor = help.out;
    for (const char *line = next_line(&cursor); line != NULL; line = next_line(&cursor)) {
        char flag[64], value[8];
        if (sscanf(line, "  %63s %7s ", flag, value) != 2 || strcmp(value, "N") != 0 ||
            strcmp(flag, "--seed") == 0) {
            continue;
        }
        const char *flag_copy = path_join("%s", flag);
        const char *args[] = {flag_copy, "65536", NULL, NULL, NULL};
        if (before != NULL) {
            const char *with[] = {before[0], before[1], flag_copy, "65536", NULL};
            memcpy(args, with, sizeof args);
        }
        *call = call_lesson(lesson->main, args);
        if (call->status == 2 && call->budget.made && !call->budget.admitted) {
            return flag_copy;
        }
    }
    return NULL;
}

// The program, with --dot into a sandbox, refuses as the call did: exit 2, nothing on
// stdout, the same one line, and no file made; under a budget lowered below anything a
// run holds (ATTN_MAX_MIB=0.0001), and with a size flag at 65536.
START_TEST(test_refused_before_anything_runs) {
    const LessonEntry *lesson = &LESSONS[_i];
    const char *sandbox = make_temp_dir();
    const char *dot = path_join("%s/graph.dot", sandbox);
    setenv("ATTN_MAX_MIB", "0.0001", 1);
    const char *tiny[] = {"--dot", dot, NULL};
    LessonCall call = call_lesson(lesson->main, tiny);
    RunResult r = run_program(lesson_binary(lesson->dir), tiny);
    unsetenv("ATTN_MAX_MIB");
    ck_assert_msg(call.budget.made && !call.budget.admitted, "%s: not refused by a budget of "
                  "105 bytes: %s", lesson->dir, call.err);
    assert_one_line_refusal(r, path_join("%.9s", call.err), lesson->dir);
    ck_assert_str_eq(r.err, call.err);
    ck_assert_int_eq(count_entries(sandbox), 0);
    const char *flag = refused_size(lesson, tiny, &call);   // with the same --dot
    if (flag != NULL) {
        r = run_program(lesson_binary(lesson->dir), (const char *[]){"--dot", dot, flag, "65536",
                                                                     NULL});
        assert_one_line_refusal(r, path_join("%.9s", call.err), flag);
        ck_assert_str_eq(r.err, call.err);
        ck_assert_int_eq(count_entries(sandbox), 0);
    }
    remove_dir(sandbox);
}
END_TEST

// --- 2. raising the budget ------------------------------------------------------------------

// Each lesson's first size refused at 65536: the variable its line names, set to the
// number it suggests (and to a decimal above it), admits it; then the defaults with a
// bad value of either variable are refused like a bad flag, naming the variable (the
// first lesson's also as a program).
START_TEST(test_raising_the_budget) {
    const LessonEntry *lesson = &LESSONS[_i];
    LessonCall refused;
    const char *flag = refused_size(lesson, NULL, &refused);
    if (flag != NULL) {
        const char *args[] = {flag, "65536", NULL};
        const char *variable = strstr(refused.err, "allow it with ATTN_MAX_");
        ck_assert_msg(variable != NULL, "%s: %s", lesson->dir, refused.err);
        char name[32];
        double suggested = 0;
        ck_assert(sscanf(variable, "allow it with %31[A-Z_]=%lf", name, &suggested) == 2);
        setenv(name, path_join("%.0f", suggested), 1);
        LessonCall raised = call_lesson(lesson->main, args);
        setenv(name, path_join("%.1f", suggested + 0.5), 1);
        LessonCall decimal = call_lesson(lesson->main, args);
        unsetenv(name);
        // Raised enough for one of the two limits; the other may still refuse.
        bool other = raised.status == 2 && strstr(raised.err, name) == NULL;
        ck_assert_msg((raised.status == 0 && raised.reached_work) || other,
                      "%s %s 65536 with %s=%.0f: exit %d: %s", lesson->dir, flag, name,
                      suggested, raised.status, raised.err);
        ck_assert_int_eq(decimal.status, raised.status);
    }
    const char *bad[] = {"", "0", "-5", "abc", "1e3", "12 ", "nan", "1.2.3"};
    for (int v = 0; v < 2; v++) {
        const char *name = v == 0 ? "ATTN_MAX_MIB" : "ATTN_MAX_SECONDS";
        for (int i = 0; i < 8; i++) {
            setenv(name, bad[i], 1);
            LessonCall call = call_lesson(lesson->main, (const char *[]){NULL});
            RunResult r = _i == 0 && i == 3 ? run_program(lesson_binary(lesson->dir),
                                                          (const char *[]){NULL})
                                            : call_as_run(call);
            unsetenv(name);
            const char *what = path_join("%s with %s='%s'", lesson->dir, name, bad[i]);
            assert_one_line_refusal(call_as_run(call), "lesson-", what);
            ck_assert_msg(strstr(call.err, path_join(": %s expects a number above 0 (such as "
                                                     "2048), got '%s'\n", name, bad[i])) != NULL,
                          "%s: %s", what, call.err);
            ck_assert_msg(r.status == 2 && strcmp(r.err, call.err) == 0, "%s: the program "
                          "(exit %d) said %s", what, r.status, r.err);
        }
    }
}
END_TEST

// --- 3. what the budget admits ----------------------------------------------------------------

// The words of an ARGS="..." (no quotes inside), NULL-terminated.
static const char *const *words_of(const char *text) {
    const char **words = arena_alloc(32, sizeof *words);
    int n = 0;
    const char *c = text;
    while (*c != '\0') {
        while (*c == ' ') {
            c++;
        }
        size_t length = strcspn(c, " ");
        if (length > 0) {
            ck_assert(n < 31);
            words[n++] = path_join("%.*s", (int)length, c);
        }
        c += length;
    }
    words[n] = NULL;
    return words;
}

// Does this CPU have the vector kernels lessons 13, 14 and 16 pick (AVX2 and FMA)? A
// --bench estimates its seconds from the kernels' speed: with the scalar ones (a CPU
// without AVX2) lesson 14's default bench would take about 7 minutes, and the budget
// refuses it.
static bool vector_kernels_here(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

// Every `make lesson-N ARGS="..."` (or ARGS=word) in the file: the budget admits it.
static int check_commands_in(const char *path) {
    const char *text = read_text(path);
    int checked = 0;
    for (const char *at = strstr(text, "make lesson-"); at != NULL;
         at = strstr(at + 1, "make lesson-")) {
        int number = atoi(at + strlen("make lesson-"));
        const char *line_end = strchr(at, '\n');
        const char *args = strstr(at, " ARGS=");
        const char *words = "";
        if (args != NULL && (line_end == NULL || args < line_end)) {
            args += strlen(" ARGS=");
            size_t length = args[0] == '"' ? strcspn(args + 1, "\"") : strcspn(args, " `\n");
            char *copy = arena_alloc(length + 1, 1);
            memcpy(copy, args[0] == '"' ? args + 1 : args, length);
            for (char *c = copy; *c != '\0'; c++) {
                *c = *c == '\n' ? ' ' : *c;   // a command wrapped across two lines of prose
            }
            words = copy;
        }
        if (number < 1 || number > N_LESSONS || strchr(words, '$') != NULL ||
            strstr(words, "--help") != NULL || strstr(words, " N") != NULL ||
            strstr(words, " S") != NULL ||
            (strstr(words, "--bench") != NULL && !vector_kernels_here())) {
            continue;   // placeholders (--seed S), other lessons' numbers, a scalar bench
        }
        const LessonEntry *lesson = &LESSONS[number - 1];
        // Admitted, or refused for another reason the page shows (--kv-heads 3). A bench
        // is priced by the kernels the CPU has: it is checked as the program, on the CPU
        // itself (this test may run under valgrind, whose CPU has no AVX-512).
        LessonCall call;
        if (strstr(words, "--bench") != NULL) {
            setenv("ATTN_COST", "check", 1);
            RunResult r = run_program(lesson_binary(lesson->dir), words_of(words));
            unsetenv("ATTN_COST");
            call = (LessonCall){.status = r.status, .out = r.out, .err = r.err,
                                .budget = {.made = true, .admitted = strstr(r.err, "ATTN_MAX_")
                                                                    == NULL}};
        } else {
            call = call_lesson(lesson->main, words_of(words));
        }
        ck_assert_msg(call.status == 0 || (call.status == 2 && call.budget.admitted) ||
                      (call.status == 2 && !call.budget.made),
                      "%s: make lesson-%d ARGS=\"%s\": exit %d: %s", path, number, words,
                      call.status, call.err);
        checked += 1;
    }
    return checked;
}

START_TEST(test_pages_sizes_are_admitted) {
    // The kernels this CPU picks, whatever the caller forced (make valgrind:
    // scalar), since that is what a reader's run meets.
    const char *forced = getenv("ATTN_KERNELS");
    forced = forced != NULL ? path_join("%s", forced) : NULL;
    unsetenv("ATTN_KERNELS");
    for (int l = 0; l < N_LESSONS; l++) {
        ck_assert_msg(atoi(LESSONS[l].dir) == l + 1, "lesson %d is %s", l + 1, LESSONS[l].dir);
    }
    int checked = check_commands_in("README.md");
    DIR *docs = opendir("docs");
    ck_assert(docs != NULL);
    struct dirent *entry;
    while ((entry = readdir(docs)) != NULL) {
        size_t length = strlen(entry->d_name);
        if (length > 3 && strcmp(entry->d_name + length - 3, ".md") == 0) {
            checked += check_commands_in(path_join("docs/%s", entry->d_name));
        }
    }
    closedir(docs);
    ck_assert_msg(checked >= 20, "only %d commands found in the pages", checked);
    // Each lesson's defaults, with a prediction.
    for (int l = 0; l < N_LESSONS; l++) {
        LessonCall call = call_lesson(LESSONS[l].main, (const char *[]){NULL});
        ck_assert_msg(call.status == 0 && call.reached_work && call.budget.made,
                      "%s: exit %d: %s", LESSONS[l].dir, call.status, call.err);
    }
    if (forced != NULL) {
        setenv("ATTN_KERNELS", forced, 1);
    }
}
END_TEST

static Suite *budget_suite(void) {
    Suite *suite = suite_create("budget");
    TCase *refused = new_tcase("refused");
    tcase_add_loop_test(refused, test_refused_before_anything_runs, 0, N_LESSONS);
    tcase_add_loop_test(refused, test_raising_the_budget, 0, N_LESSONS);
    suite_add_tcase(suite, refused);
    TCase *admitted = new_tcase("admitted");
    tcase_add_test(admitted, test_pages_sizes_are_admitted);
    suite_add_tcase(suite, admitted);
    return suite;
}

int main(void) { return run_suite(budget_suite()); }
