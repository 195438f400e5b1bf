// test_runner.c - tests/run-tests.sh, which `make test` runs every test program with,
// and the harness's skip_test: a check that skips is counted as skipped, not passed; a
// program that takes more than a second says how long; and a signal stops the runner,
// everything it started, and leaves no logs behind.
//
// The runner is run on small programs: shell scripts written here, and this program
// itself, which with ATTN_RUNNER_DEMO set runs a suite of four made-up checks instead.
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUNNER "tests/run-tests.sh"
#define THIS_PROGRAM BUILD_DIR "/tests/test_runner"

// --- the demo suite: what the runner is given to count -----------------------------------

START_TEST(demo_passes) {
    ck_assert_int_eq(1 + 1, 2);
}
END_TEST

START_TEST(demo_skips) {
    skip_test("the demo skips this one");
    ck_abort_msg("skip_test did not end the test");
}
END_TEST

START_TEST(demo_skips_two_parts) {
    note_skipped("part %d", 1);
    note_skipped("part %d", 2);
}
END_TEST

START_TEST(demo_fails) {
    ck_abort_msg("the demo fails this one");
}
END_TEST

static Suite *demo_suite(void) {
    Suite *suite = suite_create("runner demo");
    TCase *tc = new_tcase("demo");
    tcase_add_test(tc, demo_passes);
    tcase_add_test(tc, demo_skips);
    tcase_add_test(tc, demo_skips_two_parts);
    tcase_add_test(tc, demo_fails);
    suite_add_tcase(suite, tc);
    return suite;
}

// --- helpers ---------------------------------------------------------------------------------

// An executable shell script `name` in directory `dir` holding `body`; its path.
static const char *script(const char *dir, const char *name, const char *body) {
    const char *path = path_join("%s/%s", dir, name);
    FILE *file = fopen(path, "w");
    ck_assert_msg(file != NULL, "cannot write %s", path);
    fprintf(file, "#!/bin/sh\n%s", body);
    ck_assert(fclose(file) == 0);
    ck_assert(chmod(path, 0755) == 0);
    return path;
}

// The runner on `programs` (NULL-terminated, at most 6), two at a time.
static RunResult run_runner(const char *const *programs) {
    const char *argv[8] = {RUNNER};
    for (int i = 0; programs[i] != NULL; i++) {
        ck_assert(i < 6);
        argv[i + 1] = programs[i];
        argv[i + 2] = NULL;
    }
    setenv("JOBS", "2", 1);
    RunResult r = run_program("/bin/sh", argv);
    unsetenv("JOBS");
    return r;
}

// The last line of `text` (an arena string, without its newline).
static const char *last_line(const char *text) {
    const char *cursor = text, *line, *last = "";
    while ((line = next_line(&cursor)) != NULL) {
        last = line;
    }
    return last;
}

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void pause_a_moment(void) {
    struct timespec ten_ms = {0, 10 * 1000 * 1000};
    nanosleep(&ten_ms, NULL);
}

// Is process `pid` still running? A zombie is not: it has ended, and waits for
// its parent (or init, for an orphan) to collect its status.
static bool running(pid_t pid) {
    if (kill(pid, 0) != 0) {
        return false;
    }
    FILE *stat = fopen(path_join("/proc/%d/stat", (int)pid), "r");
    if (stat == NULL) {
        return true;   // no /proc: taken as running
    }
    char state = '?';
    int got = fscanf(stat, "%*d (%*[^)]) %c", &state);
    fclose(stat);
    return got != 1 || state != 'Z';
}

// --- the tests -------------------------------------------------------------------------------

// The demo suite through the runner: one check passed, one failed, and the two
// that skipped are counted as skipped (the one that skipped two parts once),
// each named again above the closing line.
START_TEST(test_skips_are_counted) {
    setenv("ATTN_RUNNER_DEMO", "1", 1);
    RunResult r = run_runner((const char *const[]){THIS_PROGRAM, NULL});
    unsetenv("ATTN_RUNNER_DEMO");
    ck_assert_msg(r.status == 1, "exit %d, expected 1 (a check failed):\n%s", r.status, r.out);
    ck_assert_str_eq(last_line(r.out), "checks: 1 passed, 1 failed, 2 skipped");
    const char *lines = "SKIPPED demo_skips: the demo skips this one\n"
                        "SKIPPED demo_skips_two_parts: part 1\n"
                        "  and: part 2\n"
                        "75%: Checks: 4, Failures: 1, Errors: 0\n"   // check counts skips as passed
                        "test_runner: SKIPPED demo_skips: the demo skips this one\n"
                        "test_runner: SKIPPED demo_skips_two_parts: part 1\n";
    const char *missing = NULL;
    ck_assert_msg(lines_in_order(r.out, lines, &missing), "no line '%s' in:\n%s", missing,
                  r.out);
}
END_TEST

// A program that runs past a second has its time on its first line; a quick
// one has none. Programs without skips close with "0 skipped".
START_TEST(test_a_slow_program_says_how_long) {
    const char *dir = make_temp_dir();
    const char *summary = "echo '100%: Checks: 1, Failures: 0, Errors: 0'\n";
    const char *slow = script(dir, "slow", path_join("sleep 1.2\n%s", summary));
    const char *quick = script(dir, "quick", summary);
    RunResult r = run_runner((const char *const[]){quick, slow, NULL});
    ck_assert_msg(r.status == 0, "exit %d:\n%s", r.status, r.out);
    ck_assert_str_eq(last_line(r.out), "checks: 2 passed, 0 failed, 0 skipped");
    const char *cursor = r.out, *line;
    const char *quick_header = path_join("---- %s", quick);
    const char *slow_header = path_join("---- %s (", slow);
    double seconds = 0.0;
    bool quick_seen = false;
    while ((line = next_line(&cursor)) != NULL) {
        quick_seen = quick_seen || strcmp(line, quick_header) == 0;
        if (strncmp(line, slow_header, strlen(slow_header)) == 0) {
            char *end;
            seconds = strtod(line + strlen(slow_header), &end);
            ck_assert_msg(strcmp(end, " s)") == 0, "%s", line);
        }
    }
    ck_assert_msg(quick_seen, "no line '%s' in:\n%s", quick_header, r.out);
    // 1.2 s asleep; more on a busy machine (the time is rounded to a tenth).
    ck_assert_msg(seconds >= 1.15 && seconds < 10.0, "took %.1f s?\n%s", seconds, r.out);
    remove_tree(dir);
}
END_TEST

// SIGTERM to the runner while its program sleeps: the runner ends at once, dying
// of the signal (status 143 in a shell), the program is stopped too, and the
// runner's logs (in TMPDIR) are gone. Issue 31: the runner used to remove its
// logs and go on polling for them for ever, its programs running on.
START_TEST(test_a_signal_stops_everything) {
    const char *dir = make_temp_dir();
    const char *tmp = path_join("%s/tmp", dir);
    ck_assert_int_eq(mkdir(tmp, 0700), 0);
    const char *pid_file = path_join("%s/pid", dir);
    const char *sleeper = script(dir, "sleeper", path_join("echo $$ > %s\nexec sleep 30\n",
                                                           pid_file));
    const char *before = getenv("TMPDIR");
    before = before != NULL ? path_join("%s", before) : NULL;
    setenv("TMPDIR", tmp, 1);
    setenv("JOBS", "2", 1);
    pid_t runner = start_program(NULL, "/bin/sh", (const char *const[]){RUNNER, sleeper, NULL});
    unsetenv("JOBS");
    if (before != NULL) {
        setenv("TMPDIR", before, 1);
    } else {
        unsetenv("TMPDIR");
    }
    double start = seconds_now();
    long sleeping = 0;
    while (sleeping == 0) {
        FILE *file = fopen(pid_file, "r");
        if (file != NULL && fscanf(file, "%ld", &sleeping) != 1) {
            sleeping = 0;   // written, but not yet to the end
        }
        if (file != NULL) {
            fclose(file);
        }
        ck_assert_msg(seconds_now() - start < 30, "the runner never started its program");
        pause_a_moment();
    }
    ck_assert_msg(running((pid_t)sleeping), "the program ended before the signal");

    ck_assert_int_eq(kill(runner, SIGTERM), 0);
    double signalled = seconds_now();
    int status = 0;
    while (waitpid(runner, &status, WNOHANG) == 0) {
        if (seconds_now() - signalled > 5) {
            kill(runner, SIGKILL);
            waitpid(runner, &status, 0);
            kill((pid_t)sleeping, SIGKILL);
            ck_abort_msg("the runner was still running 5 s after SIGTERM");
        }
        pause_a_moment();
    }
    double took = seconds_now() - signalled;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    ck_assert_msg(code == 128 + SIGTERM, "the runner ended with %d, expected %d", code,
                  128 + SIGTERM);
    ck_assert_msg(took < 2, "the runner took %.1f s to end", took);
    while (running((pid_t)sleeping) && seconds_now() - signalled < 5) {
        pause_a_moment();
    }
    bool left = running((pid_t)sleeping);
    if (left) {
        kill((pid_t)sleeping, SIGKILL);
    }
    ck_assert_msg(!left, "the runner's program (pid %ld) was still running", sleeping);
    ck_assert_msg(count_entries(tmp) == 0, "the runner left its logs in %s", tmp);
    remove_tree(dir);
}
END_TEST

Suite *runner_suite(void) {
    Suite *suite = suite_create("runner");
    TCase *tc = new_tcase("runner");
    tcase_add_test(tc, test_skips_are_counted);
    tcase_add_test(tc, test_a_slow_program_says_how_long);
    tcase_add_test(tc, test_a_signal_stops_everything);
    suite_add_tcase(suite, tc);
    return suite;
}

int main(void) {
    if (getenv("ATTN_RUNNER_DEMO") != NULL) {
        return run_suite(demo_suite());
    }
    return run_suite(runner_suite());
}
