// test_flags.c - every kind of flag common/lesson/flags.c reads, before a lesson
// uses them all: sizes, other whole numbers with their own range (IntFlag),
// decimal numbers (FloatFlag), probabilities, words from a list (ChoiceFlag)
// and switches; each as `--flag value` and as `--flag=value`.
//
// The flags are read by a small made-up lesson ("lesson-99", made_up_lesson.h), which
// prints what it parsed, called in this process (a usage error comes back here as the
// program's exit status and stderr would). As a program, it is this program run with
// `--as-lesson` first: the program does the same, and test_fuzz_cli fuzzes it so too.
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "made_up_lesson.h"

#define SELF BUILD_DIR "/tests/test_flags"
#define PREFIX "lesson-99: "

// The made-up lesson (made_up_lesson.c) called in this process, through to its end,
// as a program's run (harness.h: call_lesson_to_the_end).
static RunResult run(const char *const *args) {
    return call_as_run(call_lesson_to_the_end(made_up_lesson, args));
}

// The same with the environment variable `name` set: the made-up lesson's
// own mistakes (kept out of its flags, so the fuzz test never meets them).
static RunResult run_with(const char *name, const char *const *args) {
    setenv(name, "1", 1);
    RunResult r = run(args);
    unsetenv(name);
    return r;
}

static void assert_parsed(const char *const *args, const char *expected) {
    RunResult r = run(args);
    ck_assert_msg(r.status == 0 && r.err[0] == '\0', "exit %d: %s", r.status, r.err);
    ck_assert_str_eq(r.out, path_join("%s\n", expected));
}

static void assert_refused(const char *const *args, const char *expected) {
    RunResult r = run(args);
    assert_one_line_refusal(r, PREFIX, expected);
    ck_assert_str_eq(r.err, path_join(PREFIX "%s\n", expected));
}

// --- the tests ----------------------------------------------------------------------------

START_TEST(test_good_values) {
    assert_parsed((const char *[]){NULL},
                  "batch=3 pad=0 head_mask=-1 drop=0 position=absolute qkv_bias=0 seed=0");
    assert_parsed((const char *[]){"--pad", "4", "--head-mask", "7", "--drop", "0.1",
                                   "--position", "relative_key_query", "--qkv-bias", "--seed",
                                   "-1", NULL},
                  "batch=3 pad=4 head_mask=7 drop=0.10000000000000001 "
                  "position=relative_key_query qkv_bias=1 seed=18446744073709551615 pad given");
    assert_parsed((const char *[]){"--head-mask", "-1", "--drop", ".5", "--pad", "0", NULL},
                  "batch=3 pad=0 head_mask=-1 drop=0.5 position=absolute qkv_bias=0 seed=0 "
                  "pad given");
    assert_parsed((const char *[]){"--drop", "0", "--head-mask", "0", NULL},
                  "batch=3 pad=0 head_mask=0 drop=0 position=absolute qkv_bias=0 seed=0");
    assert_parsed((const char *[]){"--drop", "0.99999", "--head-mask", "-0", NULL},
                  "batch=3 pad=0 head_mask=0 drop=0.99999000000000005 position=absolute "
                  "qkv_bias=0 seed=0");
    // A decimal number, read as Python's float() reads it (the nearest double).
    assert_parsed((const char *[]){"--ratio", "2.5", NULL},
                  "batch=3 pad=0 head_mask=-1 drop=0 position=absolute qkv_bias=0 seed=0 "
                  "ratio=2.5");
    assert_parsed((const char *[]){"--ratio", "4.3636363636363636", NULL},
                  "batch=3 pad=0 head_mask=-1 drop=0 position=absolute qkv_bias=0 seed=0 "
                  "ratio=4.3636363636363633");
    assert_parsed((const char *[]){"--ratio", "64", NULL},
                  "batch=3 pad=0 head_mask=-1 drop=0 position=absolute qkv_bias=0 seed=0 "
                  "ratio=64");
}
END_TEST

// --flag=value, as Python's argparse takes it: the same values and the same
// checks as --flag value, in every kind of flag.
START_TEST(test_equals_form) {
    assert_parsed((const char *[]){"--batch=5", "--pad=4", "--head-mask=-1", "--drop=0.1",
                                   "--position=relative_key", "--seed=-1", "--ratio=2.5", NULL},
                  "batch=5 pad=4 head_mask=-1 drop=0.10000000000000001 position=relative_key "
                  "qkv_bias=0 seed=18446744073709551615 ratio=2.5 pad given");
    // Only the first '=' splits: the rest is the value (and here a bad one).
    assert_refused((const char *[]){"--batch=4=4", NULL},
                   "--batch expects a whole number from 1 to 65536, got '4=4'");
    // The errors name the flag, not the word.
    assert_refused((const char *[]){"--batch=0", NULL},
                   "--batch expects a whole number from 1 to 65536, got '0'");
    assert_refused((const char *[]){"--drop=1", NULL},
                   "--drop expects a probability from 0 to below 1 (such as 0.1), got '1'");
    assert_refused((const char *[]){"--position=x", NULL},
                   "--position expects one of absolute, relative_key, relative_key_query, "
                   "got 'x'");
    assert_refused((const char *[]){"--seed=x", NULL},
                   "--seed expects an integer from -2^63 to 2^64-1, got 'x'");
    assert_refused((const char *[]){"--batch=", NULL}, "--batch expects a whole number after the "
                   "'='");
    assert_refused((const char *[]){"--dump=", NULL}, "--dump expects a directory after the '='");
    // A value may start with "--" after the '=' (it cannot as the next word).
    assert_refused((const char *[]){"--position=--x", NULL},
                   "--position expects one of absolute, relative_key, relative_key_query, "
                   "got '--x'");
    // Given twice, in either form.
    assert_refused((const char *[]){"--batch", "4", "--batch=4", NULL}, "--batch is given twice");
    assert_refused((const char *[]){"--batch=4", "--batch", "4", NULL}, "--batch is given twice");
    assert_refused((const char *[]){"--ratio=1", "--ratio=1", NULL}, "--ratio is given twice");
    // A switch, --heatmap and --help take no value.
    assert_refused((const char *[]){"--qkv-bias=1", NULL},
                   "--qkv-bias takes no value, got '--qkv-bias=1'");
    assert_refused((const char *[]){"--heatmap=", NULL}, "--heatmap takes no value, got "
                   "'--heatmap='");
    assert_refused((const char *[]){"--help=yes", NULL}, "--help takes no value, got '--help=yes'");
    // An unknown flag is shown as typed.
    assert_refused((const char *[]){"--bogus=3", NULL}, "unknown flag '--bogus=3' (try --help)");
    assert_refused((const char *[]){"--=3", NULL}, "unknown flag '--=3' (try --help)");
    assert_refused((const char *[]){"-h=1", NULL}, "unknown flag '-h=1' (try --help)");
}
END_TEST

START_TEST(test_bad_values) {
    // Whole numbers in their own range; a size is never negative.
    assert_refused((const char *[]){"--head-mask", "8", NULL},
                   "--head-mask expects a whole number from -1 to 7, got '8'");
    assert_refused((const char *[]){"--head-mask", "-2", NULL},
                   "--head-mask expects a whole number from -1 to 7, got '-2'");
    assert_refused((const char *[]){"--pad", "-1", NULL},
                   "--pad expects a whole number from 0 to 65536, got '-1'");
    assert_refused((const char *[]){"--head-mask", "-99999999999999999999", NULL},
                   "--head-mask expects a whole number from -1 to 7, got "
                   "'-99999999999999999999'");
    assert_refused((const char *[]){"--batch", "-1", NULL},
                   "--batch expects a whole number from 1 to 65536, got '-1'");
    // Probabilities: a decimal from 0 to below 1, nothing else.
    const char *probabilities[] = {"1", "1.0", "-0.1", "abc", "0.5.5", ".", "nan", "inf",
                                   "1e-3", "+0.5", "0,5", "0.99999999999999999999", " 0.1"};
    for (int i = 0; i < 13; i++) {
        assert_refused((const char *[]){"--drop", probabilities[i], NULL},
                       path_join("--drop expects a probability from 0 to below 1 (such as 0.1), "
                                 "got '%s'", probabilities[i]));
    }
    assert_refused((const char *[]){"--drop", NULL}, "--drop expects a probability after it");
    // Choices: one of the list, spelled exactly.
    assert_refused((const char *[]){"--position", "relative", NULL},
                   "--position expects one of absolute, relative_key, relative_key_query, "
                   "got 'relative'");
    assert_refused((const char *[]){"--position", "Absolute\n", NULL},
                   "--position expects one of absolute, relative_key, relative_key_query, "
                   "got 'Absolute\\n'");
    assert_refused((const char *[]){"--position", "", NULL}, "--position expects a word after it");
    // Decimal numbers in their range: digits and at most one '.'.
    const char *ratios[] = {"-1", "64.5", "abc", "1e1", "nan", "inf", "+2", "2,5", ".", "1.2.3",
                            " 2", "0x10"};
    for (int i = 0; i < 12; i++) {
        assert_refused((const char *[]){"--ratio", ratios[i], NULL},
                       path_join("--ratio expects a number from 0 to 64 (such as 2.5), got '%s'",
                                 ratios[i]));
    }
    assert_refused((const char *[]){"--ratio", NULL}, "--ratio expects a number after it");
    // Switches take no value; every flag may be given once.
    assert_refused((const char *[]){"--qkv-bias", "1", NULL}, "unknown flag '1' (try --help)");
    assert_refused((const char *[]){"--drop", "0.1", "--pad", "1", "--drop", "0.2", NULL},
                   "--drop is given twice");
    assert_refused((const char *[]){"--qkv-bias", "--qkv-bias", NULL},
                   "--qkv-bias is given twice");
    assert_refused((const char *[]){"--position", "absolute", "--position", "x", NULL},
                   "--position is given twice");
    // check_fits: (3, 65536, 65536, 65536, 65536) has 3 * 2^64 elements; the
    // product is checked before each multiplication, never computed.
    assert_refused((const char *[]){"--pad", "65536", NULL},
                   "these sizes make x (batch, pad, pad, pad, pad) (3, 65536, 65536, 65536, "
                   "65536), more than the 67108864 elements allowed (256 MiB of floats); "
                   "choose smaller sizes");
    // A negative size is the lesson's own overflow, not the user's: exit 1.
    RunResult r = run_with("LESSON99_NEGATIVE_SIZE", (const char *[]){NULL});
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.err, "error: check_fits: y (batch * 65536 * 32768) (-2147483648,) has a "
                     "negative size\n");
}
END_TEST

START_TEST(test_help_lists_every_kind) {
    RunResult r = run((const char *[]){"--help", NULL});
    ck_assert_int_eq(r.status, 0);
    const char *lines[] = {
        "  --batch N        batch size (default 3)",
        "  --pad N          padding keys (default 0)",
        "  --head-mask N    the head to zero, -1 for none (default -1)",
        "  --drop P         dropout (default 0)",
        "  --ratio F        a ratio (default 4)",
        "  --position WORD  position embedding (default absolute)",
        "  --qkv-bias       a bias in the qkv projection",
    };
    for (int i = 0; i < 7; i++) {
        ck_assert_msg(strstr(r.out, path_join("\n%s\n", lines[i])) != NULL, "no line '%s' in:\n%s",
                      lines[i], r.out);
    }
}
END_TEST

// A name --dump cannot use as a file name is the lesson's mistake: exit 1,
// and the directory --dump made is gone again.
START_TEST(test_bad_dump_name) {
    const char *sandbox = make_temp_dir();
    const char *dump = path_join("%s/out", sandbox);
    RunResult r = run_with("LESSON99_BAD_NAME", (const char *[]){"--dump", dump, NULL});
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.err, "error: named: 'a/b' cannot be a --dump file name (it must be 1 to "
                     "240 characters, no '/')\n");
    ck_assert_int_eq(count_entries(sandbox), 0);
    // Without --dump a name is only a label: any name will do.
    r = run_with("LESSON99_BAD_NAME", (const char *[]){NULL});
    ck_assert_int_eq(r.status, 0);
    remove_tree(sandbox);
}
END_TEST

// The program does what the calls do: the same exit status, stdout and stderr, for a
// run, a refusal, --help, and the lesson's own mistake (exit 1).
START_TEST(test_the_program_does_the_same) {
    const char *const *argvs[] = {
        (const char *[]){"--pad", "4", "--drop=0.1", "--seed", "-1", NULL},
        (const char *[]){"--batch", "4", "--batch=4", NULL},
        (const char *[]){"--position", "Absolute\n", NULL},
        (const char *[]){"--help", NULL},
    };
    for (int i = 0; i < 5; i++) {
        const char *const *args = argvs[i < 4 ? i : 0];
        if (i == 4) {
            setenv("LESSON99_NEGATIVE_SIZE", "1", 1);
        }
        const char *argv[16] = {"--as-lesson"};
        int n = 1;
        for (; args[n - 1] != NULL; n++) {
            argv[n] = args[n - 1];
        }
        argv[n] = NULL;
        RunResult program = run_program(SELF, argv);
        RunResult call = run(args);
        unsetenv("LESSON99_NEGATIVE_SIZE");
        ck_assert_msg(program.status == call.status && strcmp(program.out, call.out) == 0 &&
                      strcmp(program.err, call.err) == 0, "case %d: the program (exit %d) "
                      "printed\n%s%s\nthe call (exit %d)\n%s%s", i, program.status, program.out,
                      program.err, call.status, call.out, call.err);
    }
}
END_TEST

static Suite *flags_suite(void) {
    Suite *suite = suite_create("flags");
    TCase *tc = new_tcase("every kind of flag");
    tcase_add_test(tc, test_good_values);
    tcase_add_test(tc, test_bad_values);
    tcase_add_test(tc, test_equals_form);
    tcase_add_test(tc, test_help_lists_every_kind);
    tcase_add_test(tc, test_bad_dump_name);
    tcase_add_test(tc, test_the_program_does_the_same);
    suite_add_tcase(suite, tc);
    return suite;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--as-lesson") == 0) {
        return made_up_lesson(argc - 1, argv + 1);
    }
    return run_suite(flags_suite());
}
