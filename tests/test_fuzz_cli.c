// test_fuzz_cli.c - every lesson's command line (common/lesson/flags.c), fuzzed.
//
// The lessons are called in this process (harness.h: call_lesson), thousands of
// command lines in a second; the first few of each lesson's are run as programs
// too, and must do exactly what the calls did. `make test-long` runs them all as
// programs (ATTN_TEST_LONG=1), as every size at its limit.
//
// 1. Bad command lines. A seeded generator (the same cases on every run)
//    builds argv from noise (good flags, numbers huge, negative and hex,
//    empty words, control characters, long words, `--dim=4` forms) and at
//    least one POISON: a part that makes any argv invalid wherever it
//    lands. Each lesson must then exit 2 with nothing on stdout, exactly
//    one line on stderr starting "lesson-N: ", and make nothing: it runs
//    in an empty sandbox directory (every --dump and --dot path given lies
//    inside it), which must still be empty afterwards.
//    The lessons and their flags are read from the table of lessons/ and
//    each lesson's --help, so a new lesson is fuzzed without a change here.
// 2. --flag=value is --flag value: the same values read, in every lesson,
//    its bench included (and, with ATTN_TEST_LONG=1, the same output printed).
// 3. Sizes at the limit. Every size flag at 65536 alone and in pairs (the
//    other flags at their defaults, or a quick start's: lesson_cli.h), and
//    the probe's own command lines, under a budget of 1 second (make
//    test-long: 5): each must either run (exit 0, nothing on stderr) or be
//    refused in one line (exit 2) - never crash, never trip a sanitizer,
//    never print before refusing. The calls say which are refused; those
//    admitted run as programs.
//
// (Sizes at the budget's edge, the largest each flag may take under a
// lowered budget, are test_budget_edges's.)
//
// ATTN_FUZZ_CASES=N calls N cases per lesson (default 300, or 100 under
// AddressSanitizer), ATTN_FUZZ_PROGRAMS=N runs the first N of them as programs
// too (default 2; ATTN_TEST_LONG=1: 100), ATTN_FUZZ_SEED=S another seed
// (default 9); ATTN_FUZZ_SHOW=1 prints every case and its answer.
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "lesson_cli.h"

#include "made_up_lesson.h"

#if defined(__SANITIZE_ADDRESS__)
#define DEFAULT_CASES 100
#else
#define DEFAULT_CASES 300
#endif

// --- a small seeded generator: splitmix64 -----------------------------------------------

static uint64_t random_next(uint64_t *state) {
    *state += 0x9e3779b97f4a7c15u;
    uint64_t z = *state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static int below(uint64_t *state, int n) {
    return (int)(random_next(state) % (uint64_t)n);
}

static const char *pick(uint64_t *state, const char *const *list, int n) {
    return list[below(state, n)];
}
#define PICK(state, list) pick(state, list, (int)(sizeof list / sizeof list[0]))

// A word of random bytes: letters, digits, '-', '=', '.', '/', spaces,
// control characters, bytes from 0x80 up; now and then thousands long.
// Never "-h", never absolute, never "..": such a word must not be able to
// ask for help or reach outside the sandbox.
static const char *random_word(uint64_t *state) {
    int length = below(state, 10) == 0 ? 200 + below(state, 5000) : below(state, 12);
    char *word = arena_alloc((size_t)length + 1, 1);
    for (;;) {
        for (int i = 0; i < length; i++) {
            int choice = below(state, 8);
            if (choice == 0) {
                word[i] = (char)(1 + below(state, 31));        // control characters
            } else if (choice == 1) {
                word[i] = (char)(0x80 + below(state, 128));    // not ASCII
            } else {
                word[i] = "abcxyz0123456789-=./ _\x7f"[below(state, 24)];
            }
        }
        if (strcmp(word, "-h") != 0 && word[0] != '/' && strstr(word, "..") == NULL) {
            return word;
        }
    }
}

static const char *long_word(char c) {
    char *word = arena_alloc(5001, 1);
    memset(word, c, 5000);
    return word;
}

// A value for a flag of this kind that may be good or bad.
static const char *noise_value(uint64_t *state, const HelpFlag *f, const char *sandbox) {
    if (f->default_value != NULL && below(state, 3) == 0) {
        return f->default_value;
    }
    // Sizes near the budget too (lesson/budget.h): a few thousand is where
    // the (seq, seq) tensors of most lessons pass 512 MiB.
    const char *numbers[] = {"0", "1", "2", "-1", "7", "65535", "65536", "65537", "46341",
                             "2147483647", "2147483648", "-2147483648", "4294967296",
                             "18446744073709551615", "18446744073709551616",
                             "-9223372036854775808", "0x10", "010", "1e3", "+3", " 3", "3 ", "",
                             "1448", "2048", "2896", "4096", "5793", "8192", "11585"};
    const char *probabilities[] = {"0", "0.1", "0.5", "0.999", "1", "1.5", "-0.5", ".5", "5.",
                                   "nan", "inf", "0x0.8p0", "1e-1", ""};
    const char *floats[] = {"0", "0.5", "2.5", "4", "4.3636363636363636", "64", "64.5", "-1",
                            "1e1", "nan", ".", ""};
    const char *choices[] = {"no-such-choice", "ABSOLUTE", "", "a\nb"};
    const char *dirs[] = {"dump", "a/b/c", "dump/", "./dump", "d\nx", "d\x1b[1m"};
    const char *files[] = {"graph.dot", "dump/g.dot", "g\tdot", "./g.dot"};
    const char *texts[] = {"Attention ", "the", "a b", "\xE6\xB3\xA8\xE6\x84\x8F",
                           "\xE2\x84\xA6", "\xFF", "a\x80", "\xE6\xB3", "a\nb", "\t", " ",
                           "=", "-", "--"};
    switch (f->kind) {
    case NUMBER:
        return below(state, 4) == 0 ? random_word(state) : PICK(state, numbers);
    case FLOAT:
        return PICK(state, floats);
    case PROBABILITY:
        return PICK(state, probabilities);
    case CHOICE:
        return PICK(state, choices);
    case DIRECTORY:
        return below(state, 4) == 0 ? path_join("%s/abs", sandbox) : PICK(state, dirs);
    case FILE_NAME:
        return below(state, 4) == 0 ? path_join("%s/abs.dot", sandbox) : PICK(state, files);
    case TEXT:
        return below(state, 3) == 0 ? random_word(state) : PICK(state, texts);
    case SWITCH:
        break;
    }
    return NULL;
}

// A value no flag of this kind accepts, whatever its range.
static const char *bad_value(uint64_t *state, Kind kind) {
    const char *numbers[] = {"", "abc", "1.5", "0x10", "+4", " 4", "4 ", "1e3", "-", "--5",
                             "99999999999999999999999", "-99999999999999999999999", "4\n",
                             "\t", "\xd9\xa3", "0 0", "1,000", "4=4"};
    const char *probabilities[] = {"", "1", "1.0", "-0.1", "abc", "0.5.5", "nan", "inf", "1e-3",
                                   "0,5", ".", "2", "+0.5", "--0.1"};
    const char *floats[] = {"", "abc", "-1", "1e3", "nan", "inf", "+2", " 2", "2 ", "1.2.3", "2,5",
                            ".", "0x1", "--1"};
    const char *choices[] = {"", "no-such-choice", "x\ny", "--absolute"};
    // free text: nothing, or bytes that are not UTF-8 (a byte that cannot start a
    // character, a character cut short, an encoded surrogate). (Not a word starting "--":
    // refused after a space, it is the text itself after an '=', as argparse reads it.)
    const char *texts[] = {"", "\xFF", "a\x80\x62", "\xE6\xB3", "\xED\xA0\x80"};
    switch (kind) {
    case NUMBER:
        return PICK(state, numbers);
    case FLOAT:
        return PICK(state, floats);
    case PROBABILITY:
        return PICK(state, probabilities);
    case CHOICE:
        return PICK(state, choices);
    case TEXT:
        return PICK(state, texts);
    case DIRECTORY:
    case FILE_NAME:
        return below(state, 2) == 0 ? "" : long_word('p');   // empty, or past PATH_MAX
    case SWITCH:
        break;
    }
    return NULL;
}

// --- building an argv that must be refused -----------------------------------------------

// A part of an argv: one or two words that belong together.
typedef struct {
    const char *words[2];
    int n;
} Part;

static Part part1(const char *a) { return (Part){{a, NULL}, 1}; }
static Part part2(const char *a, const char *b) { return (Part){{a, b}, 2}; }

static Part flag_part(const HelpFlag *f, const char *value) {
    return f->kind == SWITCH ? part1(f->flag) : part2(f->flag, value);
}

// The same as one word, `--flag=value`, as argparse also takes it.
static Part equals_part(const HelpFlag *f, const char *value) {
    return f->kind == SWITCH ? part1(f->flag) : part1(path_join("%s=%s", f->flag, value));
}

// Noise: a flag not used yet in this argv, with its default value (so the
// poison is often what is reported) or a value that may be good or bad.
// Whether it is good does not matter: the poison alone guarantees the
// refusal. Returns no words when every flag is used.
static Part noise_part(uint64_t *state, const LessonCli *cli, bool *used, const char *sandbox) {
    int start = below(state, cli->n_flags);
    for (int k = 0; k < cli->n_flags; k++) {
        int i = (start + k) % cli->n_flags;
        if (used[i]) {
            continue;
        }
        used[i] = true;
        const HelpFlag *f = &cli->flags[i];
        bool plain = f->default_value != NULL && below(state, 5) < 3;
        const char *value = plain ? f->default_value : noise_value(state, f, sandbox);
        return below(state, 4) == 0 ? equals_part(f, value) : flag_part(f, value);
    }
    return (Part){{NULL, NULL}, 0};
}

// A poison: a part that makes the argv invalid wherever it lands, because
// a word starting "--" is a flag, or (where a value is expected) a missing
// value; so an unknown "--" word, a flag given twice, or a flag with a
// value its kind never takes, is always an error; and a word that is no
// flag, right after a switch or a whole flag-and-value, stands where a flag
// must be. (Missing values and a bad first word are added by fuzz_argv:
// they depend on where they stand.)
static Part poison_part(uint64_t *state, const LessonCli *cli, Argv *repeat_later) {
    const HelpFlag *f = &cli->flags[below(state, cli->n_flags)];
    switch (below(state, 5)) {
    case 0: {   // an unknown flag, often one letter away from a known one, or a known
                // one with nothing after its '=' (a switch takes no value at all)
        const char *forms[] = {
            "--bogus", "--", "---", "--=", "--help=1", "--he", "--h",
            path_join("%s=", f->flag), path_join("%s=", f->flag),
            path_join("-%s", f->flag), path_join("%s-", f->flag),
            path_join("%s ", f->flag), path_join("%s\n", f->flag), path_join("%sx", f->flag),
            path_join("--%s", random_word(state)), path_join("--%s", long_word('u')),
        };
        const char *word = PICK(state, forms);
        return part1(is_flag_of(cli, word) ? "--bogus" : word);
    }
    case 1:     // a bad value, after the flag or its '='
        if (f->kind != SWITCH) {
            const char *value = bad_value(state, f->kind);
            return below(state, 3) == 0 && value[0] != '\0' ? equals_part(f, value)
                                                             : part2(f->flag, value);
        }
        return part2(f->flag, PICK(state, ((const char *[]){"yes", "1", "on", "=1", "-x", ""})));
    case 2:     // a word where a flag must be
        return part1(random_word(state));
    default: {  // a flag given twice: here, and again at the end
        const char *value = f->default_value != NULL ? f->default_value
                            : f->kind == DIRECTORY ? "dump" : "graph.dot";
        push(repeat_later, f->flag);
        if (f->kind != SWITCH) {
            push(repeat_later, value);
        }
        return flag_part(f, value);
    }
    }
}

static Argv fuzz_argv(uint64_t *state, const LessonCli *cli, const char *sandbox) {
    Argv argv = {.n = 0};
    Argv repeat_later = {.n = 0};
    bool used[MAX_FLAGS] = {false};
    if (cli->mode != NULL) {
        push(&argv, cli->mode);
    }
    int n_parts = 1 + below(state, cli->n_flags + 1);
    int poison_at = below(state, n_parts);
    int ending = below(state, 8);
    if (ending == 0) {          // a bad first word: no value can stand there
        push(&argv, PICK(state, ((const char *[]){"abc", "-", "-1", "x=1", "", "dim", "\n"})));
    }
    for (int i = 0; i < n_parts; i++) {
        Part part = i == poison_at ? poison_part(state, cli, &repeat_later)
                                   : noise_part(state, cli, used, sandbox);
        for (int w = 0; w < part.n; w++) {
            push(&argv, part.words[w]);
        }
    }
    for (int i = 0; i < repeat_later.n; i++) {
        push(&argv, repeat_later.words[i]);
    }
    if (ending == 1) {          // a flag that needs a value, last: the value is missing
        const HelpFlag *f = &cli->flags[below(state, cli->n_flags)];
        if (f->kind != SWITCH) {
            push(&argv, f->flag);
        }
    }
    return argv;
}

static int env_number(const char *name, int fallback) {
    const char *text = getenv(name);
    return text != NULL && atoi(text) > 0 ? atoi(text) : fallback;
}

// --- 1. bad command lines -----------------------------------------------------------------

// Fuzz one lesson: `cases` command lines, each refused in one line, with nothing made in
// the sandbox, which is the current directory meanwhile; the first `programs` of them run
// as programs too (in the sandbox), which must do exactly what the calls did.
static void fuzz(const LessonCli *cli, int cases, int programs, uint64_t seed,
                 const char *sandbox) {
    uint64_t state = seed * 1000003u + (uint64_t)cli->dir[0] * 131u + (uint64_t)cli->dir[1];
    char here[4096];
    ck_assert(getcwd(here, sizeof here) != NULL);
    const char *binary = cli->binary[0] == '/' ? cli->binary : path_join("%s/%s", here,
                                                                         cli->binary);
    for (int c = 0; c < cases; c++) {
        size_t mark = arena_mark();
        Argv argv = fuzz_argv(&state, cli, sandbox);
        ck_assert(chdir(sandbox) == 0);
        LessonCall call = call_cli(cli, &argv);
        ck_assert(chdir(here) == 0);
        const char *what = path_join("case %d of seed %d: %.900s", c, (int)seed,
                                     argv_text(cli->binary, &argv));
        if (getenv("ATTN_FUZZ_SHOW") != NULL) {
            fprintf(stderr, "%s\n    -> %d %s", what, call.status, call.err);
        }
        assert_one_line_refusal(call_as_run(call), cli->prefix, what);
        ck_assert_msg(count_entries(sandbox) == 0, "%s: left files in the sandbox", what);
        if (c < programs) {
            LessonCli program = *cli;
            program.binary = binary;
            RunResult r = run_cli(&program, sandbox, 30, &argv);
            ck_assert_msg(r.status == call.status && strcmp(r.out, call.out) == 0 &&
                          strcmp(r.err, call.err) == 0, "%s: the program (exit %d) printed "
                          "%.300s%.300s, the call (exit %d) %.300s%.300s", what, r.status, r.out,
                          r.err, call.status, call.out, call.err);
            ck_assert_msg(count_entries(sandbox) == 0, "%s: the program left files in the "
                          "sandbox", what);
        }
        arena_release(mark);
    }
}

START_TEST(test_fuzzed_command_lines) {
    int cases = env_number("ATTN_FUZZ_CASES", DEFAULT_CASES);
    int programs = env_number("ATTN_FUZZ_PROGRAMS", long_tests() ? 100 : 2);
    uint64_t seed = (uint64_t)env_number("ATTN_FUZZ_SEED", 9);
    ck_assert_msg(N_LESSONS >= 10, "only %d lessons in the table", N_LESSONS);
    const char *sandbox = make_temp_dir();
    for (int l = 0; l < N_LESSONS; l++) {
        LessonCli cli = lesson_cli(&LESSONS[l]);
        fuzz(&cli, cases, programs, seed, sandbox);
    }
    // The made-up lesson of test_flags, with a flag of every kind (probabilities,
    // choices, ranges), which no lesson may have yet: test_flags --as-lesson as a program.
    LessonCli cli = read_cli("99-flags", made_up_lesson, BUILD_DIR "/tests/test_flags",
                             "--as-lesson");
    fuzz(&cli, cases, access(cli.binary, X_OK) == 0 ? programs : 0, seed, sandbox);
    remove_tree(sandbox);
}
END_TEST

// --- 2. --flag=value, in every lesson ------------------------------------------------------

// The two calls read the same values, and end the same way.
static void assert_same_reading(const LessonCli *cli, const Argv *a, const Argv *b) {
    LessonCall x = call_cli(cli, a), y = call_cli(cli, b);
    ck_assert_msg(x.status == y.status && strcmp(x.parsed, y.parsed) == 0 &&
                  strcmp(x.err, y.err) == 0 && strcmp(x.out, y.out) == 0 &&
                  x.budget.bytes == y.budget.bytes && x.budget.seconds == y.budget.seconds,
                  "%s (exit %d: %s%s) is not %s (exit %d: %s%s)", plain_text(cli->dir, b),
                  y.status, y.parsed, y.err, plain_text(cli->dir, a), x.status, x.parsed, x.err);
}

// Each lesson called with every flag that takes a value given at its default, once as
// `--flag value` and once as `--flag=value`: the same values read, and the same cost.
// A bench takes the flags given and its own sizes for the others, or refuses them: it
// must see either form. And `--heads=4` (issue 17's example) wherever there is a
// --heads: the same as `--heads 4`, run or refusal.
START_TEST(test_equals_form_everywhere) {
    for (int l = 0; l < N_LESSONS; l++) {
        LessonCli cli = lesson_cli(&LESSONS[l]);
        Argv spaced = {.n = 0}, joined = {.n = 0};
        for (int i = 0; i < cli.n_flags; i++) {
            const HelpFlag *f = &cli.flags[i];
            if (f->kind != SWITCH && f->default_value != NULL) {
                push(&spaced, f->flag);
                push(&spaced, f->default_value);
                push(&joined, path_join("%s=%s", f->flag, f->default_value));
            }
        }
        LessonCall a = call_cli(&cli, &spaced);
        ck_assert_msg(a.status == 0 && a.reached_work, "%s: exit %d: %s", cli.dir, a.status,
                      a.err);
        assert_same_reading(&cli, &spaced, &joined);
        if (long_tests()) {   // and as programs, from the quick start: the same output
            Argv quick_spaced = {.n = 0}, quick_joined = {.n = 0};
            for (int i = 0; i < cli.n_flags; i++) {
                const HelpFlag *f = &cli.flags[i];
                const char *quick = quick_value(&cli, f->flag);
                if (f->kind != SWITCH && f->default_value != NULL) {
                    const char *value = quick != NULL ? quick : f->default_value;
                    push(&quick_spaced, f->flag);
                    push(&quick_spaced, value);
                    push(&quick_joined, path_join("%s=%s", f->flag, value));
                }
            }
            RunResult x = run_cli(&cli, NULL, 120, &quick_spaced);
            RunResult y = run_cli(&cli, NULL, 120, &quick_joined);
            ck_assert_msg(x.status == 0 && y.status == 0 && strcmp(x.out, y.out) == 0,
                          "%s: --flag=value ran otherwise (exit %d and %d): %s%s", cli.dir,
                          x.status, y.status, x.err, y.err);
        }
        for (int i = 0; is_flag_of(&cli, "--bench") && i < cli.n_flags; i++) {
            const HelpFlag *f = &cli.flags[i];
            if (f->kind == NUMBER && f->default_value != NULL) {
                Argv bench = {.n = 0}, bench_joined = {.n = 0};
                push(&bench, "--bench");
                push(&bench, f->flag);
                push(&bench, f->default_value);
                push(&bench_joined, "--bench");
                push(&bench_joined, path_join("%s=%s", f->flag, f->default_value));
                assert_same_reading(&cli, &bench, &bench_joined);
            }
        }
        if (is_flag_of(&cli, "--heads")) {
            Argv heads = {.n = 0}, heads_joined = {.n = 0};
            push(&heads, "--heads");
            push(&heads, "4");
            push(&heads_joined, "--heads=4");
            assert_same_reading(&cli, &heads, &heads_joined);
        }
    }
}
END_TEST

// --- 3. sizes at the limit ----------------------------------------------------------------------

// The probe's own command lines.
static const char *const PROBED[][12] = {
    {"10-kv-cache", "--batch", "32768", "--heads", "65536", "--dim", "65536", "--kv-heads", "1"},
    {"07-cross-attention", "--seq-q", "16384", "--seq-k", "1", "--dim", "1", "--heads", "1",
     "--batch", "1"},
    {"07-cross-attention", "--seq-q", "46341"},
};

// A run of the limits: the lesson and its argv.
typedef struct {
    LessonCli *cli;
    Argv argv;
} LimitRun;

// Unless the program ran (exit 0, nothing on stderr, something on stdout) or was refused
// in one line, add a line to *report.
static void check_limit_run(const LessonCli *cli, const Argv *argv, RunResult r,
                            const char **report, const char *how) {
    const char *newline = strchr(r.err, '\n');
    bool ran = r.status == 0 && r.err[0] == '\0' && r.out[0] != '\0';
    bool refused = r.status == 2 && r.out[0] == '\0' && newline != NULL && newline[1] == '\0' &&
                   strncmp(r.err, cli->prefix, strlen(cli->prefix)) == 0;
    if (!ran && !refused) {
        const char *line = path_join("\n  %s (%s): exit %d, %zu bytes on stdout, stderr: %.300s",
                                     plain_text(cli->dir, argv), how, r.status, strlen(r.out),
                                     r.err);
        char *longer = arena_alloc(strlen(*report) + strlen(line) + 1, 1);
        sprintf(longer, "%s%s", *report, line);
        *report = longer;
    }
}

// Every size flag at 65536, alone and in pairs, and the probe's lines, under a budget of
// 1 second, or 5 with ATTN_TEST_LONG=1 (what a quick start admits at 65536 could otherwise
// take a minute: lesson 16 at --vocab 65536; lesson 17's --new 65536 and --steps 65536,
// estimated at 4 seconds each, are refused in make test and run in make test-long). Each
// is called: a refusal must be one line and nothing else; what the budget admits, the
// program runs (all of them with ATTN_TEST_LONG=1).
START_TEST(test_sizes_at_the_limit) {
    static LessonCli clis[64];
    ck_assert(N_LESSONS <= 64);
    static LimitRun admitted[4096];
    int n_admitted = 0, n_calls = 0;
    const char *report = "";
    setenv("ATTN_MAX_SECONDS", long_tests() ? "5" : "1", 1);
    for (int l = 0; l < N_LESSONS; l++) {
        LessonCli *cli = &clis[l];
        *cli = lesson_cli(&LESSONS[l]);
        const char *sizes[MAX_FLAGS];
        int n_sizes = 0;
        for (int i = 0; i < cli->n_flags; i++) {
            if (cli->flags[i].kind == NUMBER && strcmp(cli->flags[i].flag, "--seed") != 0) {
                sizes[n_sizes++] = cli->flags[i].flag;
            }
        }
        static Argv lines[MAX_FLAGS * MAX_FLAGS / 2 + MAX_FLAGS + 8];
        int n_lines = 0;
        for (int i = 0; i < n_sizes; i++) {
            for (int j = i; j < n_sizes; j++) {   // j == i: the flag alone
                Argv *argv = &lines[n_lines++];
                argv->n = 0;
                push(argv, sizes[i]);
                push(argv, "65536");
                if (j != i) {
                    push(argv, sizes[j]);
                    push(argv, "65536");
                }
            }
        }
        for (size_t p = 0; p < sizeof PROBED / sizeof PROBED[0]; p++) {
            if (strcmp(PROBED[p][0], cli->dir) == 0) {
                Argv *argv = &lines[n_lines++];
                argv->n = 0;
                for (int w = 1; PROBED[p][w] != NULL; w++) {
                    push(argv, PROBED[p][w]);
                }
            }
        }
        for (int k = 0; k < n_lines; k++) {
            // The sizes at the limit (or the probe's line, whole), the rest at the quick start.
            Argv argv = lines[k];
            int fixed = argv.n;
            push_quick(&argv, cli);
            LessonCall call = call_cli(cli, &argv);
            n_calls += 1;
            bool ran = call.status == 0 && call.reached_work;
            if (ran && call.out[0] == '\0' && call.err[0] == '\0') {
                // Admitted: run as a program, its other flags made quicker first
                // (ATTN_TEST_LONG=1: as it is, too).
                Argv quick = lines[k];
                quicker(cli, &quick, fixed);
                ck_assert(n_admitted < 4096);
                admitted[n_admitted++] = (LimitRun){cli, quick};
            } else {
                check_limit_run(cli, &argv, call_as_run(call), &report, "called");
            }
            if (long_tests()) {
                check_limit_run(cli, &argv, run_cli(cli, NULL, 120, &argv), &report, "run");
            }
        }
    }
    for (int a = 0; a < n_admitted; a++) {
        if (getenv("ATTN_FUZZ_SHOW") != NULL) {
            fprintf(stderr, "admitted: %s\n", plain_text(admitted[a].cli->dir, &admitted[a].argv));
        }
        check_limit_run(admitted[a].cli, &admitted[a].argv,
                        run_cli(admitted[a].cli, NULL, 120, &admitted[a].argv), &report, "run");
    }
    unsetenv("ATTN_MAX_SECONDS");
    ck_assert_msg(n_calls > 300, "only %d command lines at the limit", n_calls);
    ck_assert_msg(report[0] == '\0', "command lines that neither ran nor were refused in one "
                  "line:%s", report);
}
END_TEST

static Suite *fuzz_cli_suite(void) {
    Suite *suite = suite_create("fuzz_cli");
    TCase *tc = new_tcase("fuzz");
    tcase_add_test(tc, test_fuzzed_command_lines);
    tcase_add_test(tc, test_equals_form_everywhere);
    tcase_add_test(tc, test_sizes_at_the_limit);
    suite_add_tcase(suite, tc);
    return suite;
}

int main(void) {
    // The lessons run here natively, also under make valgrind, whose ATTN_KERNELS=scalar is
    // for the programs valgrind runs: lesson 16 takes its fastest kernels.
    unsetenv("ATTN_KERNELS");
    return run_suite(fuzz_cli_suite());
}
