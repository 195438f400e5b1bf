// test_cli.c - the command line every lesson shares (common/lesson/flags.c), run
// for real: the built lesson 1 binary with good and bad flags.
//
// The contract (common/lesson/flags.h): bad input ends the program before any work and
// before any file is made, with ONE line on stderr naming the flag, nothing
// on stdout, and exit status 2. --help prints the usage and exits 0.
// Lesson 1 has no size flags, so the shared size parser and check_fits are
// run through lesson 2 (--batch, --seq, --dim); each lesson's own test
// covers its particular flags and its check_divides lines.
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define LESSON "01-toy-qkv"

#define SIZED_LESSON "02-self-attention-v1"

static RunResult run(const char *const *args) {
    return run_program(lesson_binary(LESSON), args);
}

static bool exists(const char *path) {
    struct stat info;
    return stat(path, &info) == 0;
}

static int count_lines(const char *text) {
    int lines = 0;
    for (const char *c = text; *c != '\0'; c++) {
        lines += *c == '\n';
    }
    return lines;
}

// Run the lesson with `args` followed by nothing else; it must refuse with
// exactly `expected_line` on stderr. Every case also names a --dump
// directory and a --dot file (where the arguments allow) inside `sandbox`,
// which must not exist afterwards.
static void assert_refused_by(const char *lesson_dir, const char *const *args,
                              const char *expected_line, const char *sandbox) {
    RunResult r = run_program(lesson_binary(lesson_dir), args);
    ck_assert_msg(r.status == 2, "exit %d, expected 2; stderr: %s", r.status, r.err);
    ck_assert_msg(r.out[0] == '\0', "stdout not empty: %s", r.out);
    ck_assert_msg(count_lines(r.err) == 1 && r.err[strlen(r.err) - 1] == '\n',
                  "stderr is not one line: \"%s\"", r.err);
    ck_assert_str_eq(r.err, path_join("%s\n", expected_line));
    ck_assert_msg(!exists(path_join("%s/dump", sandbox)), "--dump dir was created");
    ck_assert_msg(!exists(path_join("%s/graph.dot", sandbox)), "--dot file was created");
}

static void assert_refused(const char *const *args, const char *expected_line,
                           const char *sandbox) {
    assert_refused_by(LESSON, args, expected_line, sandbox);
}

START_TEST(test_bad_flags) {
    const char *sandbox = make_temp_dir();
    const char *dump = path_join("%s/dump", sandbox);
    const char *dot = path_join("%s/graph.dot", sandbox);

    assert_refused((const char *[]){"--dump", dump, "--dot", dot, "--bogus", NULL},
                   "lesson-1: unknown flag '--bogus' (try --help)", sandbox);
    assert_refused((const char *[]){"--dump", dump, "-x", NULL},
                   "lesson-1: unknown flag '-x' (try --help)", sandbox);
    assert_refused((const char *[]){"--dump", dump, "--dot", dot, "--seed", NULL},
                   "lesson-1: --seed expects an integer after it", sandbox);
    assert_refused((const char *[]){"--dump", dump, "--seed", "", NULL},
                   "lesson-1: --seed expects an integer after it", sandbox);
    const char *bad_seeds[] = {
        "x", "1.5", "99999999999999999999999", "18446744073709551616",
        "-9223372036854775809", "+5", " 5", "5 ", "7x", "-", "0x10",
    };
    for (size_t i = 0; i < sizeof bad_seeds / sizeof bad_seeds[0]; i++) {
        assert_refused((const char *[]){"--dump", dump, "--dot", dot, "--seed", bad_seeds[i],
                                        NULL},
                       path_join("lesson-1: --seed expects an integer from -2^63 to 2^64-1, "
                                 "got '%s'", bad_seeds[i]), sandbox);
    }
    assert_refused((const char *[]){"--dot", dot, "--dump", NULL},
                   "lesson-1: --dump expects a directory after it", sandbox);
    // A flag where the value should be is taken as a missing value, not as the value.
    assert_refused((const char *[]){"--dump", dump, "--dot", "--seed", "1", NULL},
                   "lesson-1: --dot expects a file name after it", sandbox);
    assert_refused((const char *[]){"--dot", dot, "--dump", "--heatmap", NULL},
                   "lesson-1: --dump expects a directory after it", sandbox);
    // The first bad flag is the one reported, even after good ones.
    assert_refused((const char *[]){"--heatmap", "--dump", dump, "--seed", "y", "--bogus", NULL},
                   "lesson-1: --seed expects an integer from -2^63 to 2^64-1, got 'y'", sandbox);
    // A flag given twice is refused (which one would win is not obvious).
    assert_refused((const char *[]){"--seed", "3", "--dump", dump, "--seed", "4", NULL},
                   "lesson-1: --seed is given twice", sandbox);
    remove_dir(sandbox);
}
END_TEST

START_TEST(test_size_flags) {
    const char *sandbox = make_temp_dir();
    const char *dump = path_join("%s/dump", sandbox);
    const char *dot = path_join("%s/graph.dot", sandbox);
    const char *bad_sizes[] = {"0", "65537", "-3", "abc", "1.5", "+4", " 4", "4 ", "0x4",
                               "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++) {
        assert_refused_by(SIZED_LESSON, (const char *[]){"--dump", dump, "--dot", dot, "--dim",
                                                         bad_sizes[i], NULL},
                          path_join("lesson-2: --dim expects a whole number from 1 to 65536, "
                                    "got '%s'", bad_sizes[i]), sandbox);
    }
    assert_refused_by(SIZED_LESSON, (const char *[]){"--dump", dump, "--seq", NULL},
                      "lesson-2: --seq expects a whole number after it", sandbox);
    assert_refused_by(SIZED_LESSON, (const char *[]){"--batch", "--dim", "4", NULL},
                      "lesson-2: --batch expects a whole number after it", sandbox);
    // Each size is allowed alone, but together they would need 2^48 floats.
    assert_refused_by(SIZED_LESSON, (const char *[]){"--dump", dump, "--dot", dot, "--batch",
                                                     "65536", "--seq", "65536", NULL},
                      "lesson-2: these sizes make attention_weight (batch, seq, seq) (65536, "
                      "65536, 65536), more than the 67108864 elements allowed (256 MiB of floats); "
                      "choose smaller sizes", sandbox);
    remove_dir(sandbox);
    // Small sizes run, and a leading zero is still a decimal number.
    check_prints(SIZED_LESSON, (const char *[]){"--batch", "1", "--seq", "2", "--dim", "08", NULL},
                 "");
}
END_TEST

START_TEST(test_help) {
    RunResult r = check_prints(LESSON, (const char *[]){"--help", NULL},
                               "usage: lesson-1 [flags]\n"
                               "toy-qkv: the 3x3 Query/Key/Value example of Chen Ming's post "
                               "(nothing random: --seed changes nothing)\n"
                               "flags:\n");
    const char *flags[] = {"--seed", "--dump", "--dot", "--heatmap", "--help"};
    for (int i = 0; i < 5; i++) {
        ck_assert_msg(strstr(r.out, path_join("  %s ", flags[i])) != NULL, "--help lacks %s",
                      flags[i]);
    }
    // -h is the same, and --help wins over a bad flag after it (it exits at once).
    RunResult h = run((const char *[]){"-h", "--bogus", NULL});
    ck_assert_int_eq(h.status, 0);
    ck_assert_str_eq(h.out, r.out);
}
END_TEST

START_TEST(test_good_seeds) {
    // The whole 64-bit range, and negative seeds as Python passes them.
    const char *seeds[] = {"0", "-1", "18446744073709551615", "-9223372036854775808", "007"};
    for (int i = 0; i < 5; i++) {
        RunResult r = run((const char *[]){"--seed", seeds[i], NULL});
        ck_assert_msg(r.status == 0, "--seed %s: exit %d: %s", seeds[i], r.status, r.err);
        ck_assert_str_eq(r.err, "");
        ck_assert_msg(strstr(r.out, "scores = Query @ Key.T") != NULL, "--seed %s: no output",
                      seeds[i]);
    }
}
END_TEST

START_TEST(test_dump) {
    const char *sandbox = make_temp_dir();
    const char *dump = path_join("%s/a/b/c", sandbox);   // nested, none exists yet
    RunResult r = run((const char *[]){"--dump", dump, NULL});
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    const char *names[] = {"Query", "Key", "Value", "scores", "weights", "out"};
    for (int i = 0; i < 6; i++) {
        const char *path = path_join("%s/%s.npy", dump, names[i]);
        ck_assert_msg(exists(path), "%s was not written", path);
        ck_assert_str_eq(size_x_str(load_npy(path)), "3x3");
    }
    // The values are the lesson's: Query as given, row 0 of scores 2, 4, 4.
    float query[9] = {1, 0, 2, 2, 2, 2, 2, 1, 3};
    assert_bitwise_equal(load_npy(path_join("%s/Query.npy", dump)),
                         tensor_from(shape2(3, 3), query), "Query.npy");
    Tensor *scores = load_npy(path_join("%s/scores.npy", dump));
    ck_assert_float_eq(*at2(scores, 0, 0), 2.0f);
    ck_assert_float_eq(*at2(scores, 0, 1), 4.0f);
    ck_assert_float_eq(*at2(scores, 0, 2), 4.0f);
    // An existing directory is fine too (a second run overwrites).
    RunResult again = run((const char *[]){"--dump", dump, NULL});
    ck_assert_msg(again.status == 0, "second run: exit %d: %s", again.status, again.err);

    remove_dir(dump);
    ck_assert_int_eq(rmdir(path_join("%s/a/b", sandbox)), 0);
    ck_assert_int_eq(rmdir(path_join("%s/a", sandbox)), 0);
    remove_dir(sandbox);
}
END_TEST

// A --dot file that cannot be written is refused before the --dump
// directory is made, and a --dump that cannot be made leaves no --dot file.
START_TEST(test_unwritable_dot_or_dump_leaves_nothing) {
    const char *sandbox = make_temp_dir();
    const char *dump = path_join("%s/dump", sandbox);
    const char *dot = path_join("%s/graph.dot", sandbox);
    const char *blocker = path_join("%s/plain", sandbox);   // a file where a directory must go
    FILE *f = fopen(blocker, "w");
    ck_assert(f != NULL);
    fclose(f);
    assert_refused((const char *[]){"--dump", dump, "--dot", "/nonexistent-attn-dir/g.dot",
                                    NULL},
                   "lesson-1: --dot cannot write '/nonexistent-attn-dir/g.dot': no directory "
                   "'/nonexistent-attn-dir'", sandbox);
    assert_refused((const char *[]){"--dot", dot, "--dump", path_join("%s/sub", blocker), NULL},
                   path_join("lesson-1: --dump cannot create the directory '%s/sub': Not a "
                             "directory", blocker), sandbox);
    remove_dir(sandbox);
}
END_TEST

START_TEST(test_dump_into_a_file_is_refused) {
    // --dump naming an existing file: one line, exit 2, nothing on stdout.
    const char *sandbox = make_temp_dir();
    const char *file = path_join("%s/plain", sandbox);
    FILE *f = fopen(file, "w");
    ck_assert(f != NULL);
    fclose(f);
    RunResult r = run((const char *[]){"--dump", file, NULL});
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.out, "");
    ck_assert_int_eq(count_lines(r.err), 1);
    ck_assert_str_eq(r.err, path_join("lesson-1: --dump: '%s' is not a directory\n", file));
    remove_dir(sandbox);
}
END_TEST

START_TEST(test_dot) {
    const char *sandbox = make_temp_dir();
    const char *dot = path_join("%s/graph.dot", sandbox);
    RunResult r = run((const char *[]){"--dot", dot, NULL});
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    const char *text = read_text(dot);
    remove_dir(sandbox);
    ck_assert_msg(strstr(text, "digraph dataflow {\n") != NULL, "not a digraph:\n%s", text);
    ck_assert_msg(text[strlen(text) - 2] == '}' && text[strlen(text) - 1] == '\n',
                  "the graph is not closed:\n%s", text);
    // Every named tensor is a node labelled with its name and shape.
    const char *names[] = {"Query", "Key", "Value", "scores", "weights", "out"};
    for (int i = 0; i < 6; i++) {
        const char *label = path_join("[label=\"%s\\n(3, 3)\"]", names[i]);
        ck_assert_msg(strstr(text, label) != NULL, "no node %s in:\n%s", label, text);
    }
    // The operations label the edges (a matmul's first input's edge also
    // names its samehead group: [label="matmul", samehead="op1"]).
    const char *ops[] = {"[label=\"transpose(0, 1)\"]", "[label=\"matmul\", samehead=",
                         "[label=\"softmax(-1)\"]"};
    for (int i = 0; i < 3; i++) {
        ck_assert_msg(strstr(text, ops[i]) != NULL, "no edge %s in:\n%s", ops[i], text);
    }
}
END_TEST

static Suite *cli_suite(void) {
    Suite *suite = suite_create("cli");
    TCase *refused = new_tcase("bad input");
    tcase_add_test(refused, test_bad_flags);
    tcase_add_test(refused, test_dump_into_a_file_is_refused);
    tcase_add_test(refused, test_unwritable_dot_or_dump_leaves_nothing);
    tcase_add_test(refused, test_size_flags);
    suite_add_tcase(suite, refused);
    TCase *accepted = new_tcase("good input");
    tcase_add_test(accepted, test_help);
    tcase_add_test(accepted, test_good_seeds);
    tcase_add_test(accepted, test_dump);
    tcase_add_test(accepted, test_dot);
    suite_add_tcase(suite, accepted);
    return suite;
}

int main(void) { return run_suite(cli_suite()); }
