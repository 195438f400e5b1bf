// test_fuzz_cli.c - every lesson's command line (common/lesson/flags.c), fuzzed.
//
// 1. Bad command lines. A seeded generator (the same cases on every run)
//    builds argv from noise (good flags, numbers huge, negative and hex,
//    empty words, control characters, long words, `--dim=4` forms) and at
//    least one POISON: a part that makes any argv invalid wherever it
//    lands. Each lesson must then exit 2 with nothing on stdout, exactly
//    one line on stderr starting "lesson-N: ", and make nothing: it runs
//    in an empty sandbox directory (every --dump and --dot path given lies
//    inside it), which must still be empty afterwards.
//    The lessons and their flags are read from lessons/ and each lesson's
//    --help, so a new lesson is fuzzed without a change here.
// 2. Sizes at the limit. Every size flag at 65536 alone and in pairs (the
//    other flags at their defaults, or a cheaper start's: lesson_cli.c),
//    and the probe's own command lines, under a budget of 5 seconds: each
//    must either run (exit 0, nothing on stderr) or be refused in one line
//    (exit 2) - never crash, never trip a sanitizer, never print before
//    refusing. These need to know the lesson (some are slow to run), so
//    only the lessons lesson_cli.c lists are run so.
//
// (Sizes at the budget's edge, the largest each flag may take under a
// lowered budget, are test_budget_edges's.)
//
// ATTN_FUZZ_CASES=N runs N cases per lesson (default 100, or 30 under
// AddressSanitizer, where each run starts ten times slower), ATTN_FUZZ_SEED=S
// another seed (default 9); ATTN_FUZZ_SHOW=1 prints every case and its
// answer; ATTN_SLOW_LIMITS=1 adds the limit runs that take many seconds each.
// A long run needs more than check's 120 s: CK_TIMEOUT_MULTIPLIER=20, say.
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "lesson_cli.h"

#if defined(__SANITIZE_ADDRESS__)
#define DEFAULT_CASES 30
#else
#define DEFAULT_CASES 100
#endif

// --- the lessons and their flags, from lessons/ and --help --------------------------

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
    switch (kind) {
    case NUMBER:
        return PICK(state, numbers);
    case FLOAT:
        return PICK(state, floats);
    case PROBABILITY:
        return PICK(state, probabilities);
    case CHOICE:
        return PICK(state, choices);
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

// The argv as a shell could type it again: each word in $'...' quotes,
// other bytes than printable ASCII as \xNN.
static const char *argv_text(const char *binary, const Argv *argv) {
    size_t capacity = strlen(binary) + 1;
    for (int i = 0; i < argv->n; i++) {
        capacity += 4 * strlen(argv->words[i]) + 4;
    }
    char *text = arena_alloc(capacity, 1);
    size_t used = (size_t)sprintf(text, "%s", binary);
    for (int i = 0; i < argv->n; i++) {
        used += (size_t)sprintf(text + used, " $'");
        for (const char *c = argv->words[i]; *c != '\0'; c++) {
            unsigned char byte = (unsigned char)*c;
            bool plain = byte >= 0x20 && byte < 0x7f && byte != '\'' && byte != '\\';
            used += plain ? (size_t)sprintf(text + used, "%c", byte)
                          : (size_t)sprintf(text + used, "\\x%02x", byte);
        }
        used += (size_t)sprintf(text + used, "'");
    }
    return text;
}

static int env_number(const char *name, int fallback) {
    const char *text = getenv(name);
    return text != NULL && atoi(text) > 0 ? atoi(text) : fallback;
}

// Fuzz one program: `cases` command lines, each refused in one line, with
// nothing made in the sandbox.
static void fuzz(const LessonCli *cli, int cases, uint64_t seed, const char *sandbox) {
    uint64_t state = seed * 1000003u + (uint64_t)cli->dir[0] * 131u + (uint64_t)cli->dir[1];
    for (int c = 0; c < cases; c++) {
        Argv argv = fuzz_argv(&state, cli, sandbox);
        RunResult r = run_program_with(sandbox, 30, cli->binary, argv.words);
        const char *what = path_join("case %d of seed %d: %.900s", c, (int)seed,
                                     argv_text(cli->binary, &argv));
        if (getenv("ATTN_FUZZ_SHOW") != NULL) {
            fprintf(stderr, "%s\n    -> %d %s", what, r.status, r.err);
        }
        assert_one_line_refusal(r, cli->prefix, what);
        ck_assert_msg(count_entries(sandbox) == 0, "%s: left files in the sandbox", what);
    }
}

START_TEST(test_fuzzed_command_lines) {
    int cases = env_number("ATTN_FUZZ_CASES", DEFAULT_CASES);
    uint64_t seed = (uint64_t)env_number("ATTN_FUZZ_SEED", 9);
    const char *dirs[MAX_LESSONS];
    int n_lessons = find_lesson_dirs(dirs, MAX_LESSONS);
    ck_assert_msg(n_lessons >= 10, "only %d lessons in lessons/", n_lessons);
    const char *sandbox = make_temp_dir();
    for (int l = 0; l < n_lessons; l++) {
        size_t mark = arena_mark();
        LessonCli cli = read_cli(dirs[l], lesson_binary(dirs[l]), NULL);
        fuzz(&cli, cases, seed, sandbox);
        arena_release(mark);
    }
    // test_flags runs itself as a made-up lesson with a flag of every kind
    // (probabilities, choices, ranges), which no lesson may have yet.
    const char *flags = BUILD_DIR "/tests/test_flags";
    if (access(flags, X_OK) == 0) {
        LessonCli cli = read_cli("99-flags", flags, "--as-lesson");
        fuzz(&cli, cases, seed, sandbox);
    }
    remove_tree(sandbox);
}
END_TEST

// `text` without its lines of ATTN_COST's report (what a run held can differ
// by a few bytes of the words it was given).
static const char *without_cost_lines(const char *text) {
    char *kept = arena_alloc(strlen(text) + 1, 1);
    size_t used = 0;
    for (const char *line = text; *line != '\0';) {
        size_t length = strcspn(line, "\n") + (line[strcspn(line, "\n")] == '\n');
        if (strstr(path_join("%.*s", (int)length, line), ": cost: ") == NULL) {
            memcpy(kept + used, line, length);
            used += length;
        }
        line += length;
    }
    return kept;
}

// --- --flag=value, in every lesson ------------------------------------------------------

// Each lesson run with every flag that takes a value given at its default
// (or its cheaper start's value), once as `--flag value` and once as
// `--flag=value`: the same output. And
// `--heads=4` (issue 17's example) wherever there is a --heads: the same
// as `--heads 4`, run or refusal.
START_TEST(test_equals_form_everywhere) {
    const char *dirs[MAX_LESSONS];
    int n_lessons = find_lesson_dirs(dirs, MAX_LESSONS);
    for (int l = 0; l < n_lessons; l++) {
        LessonCli cli = read_cli(dirs[l], lesson_binary(dirs[l]), NULL);
        Argv spaced = {.n = 0}, joined = {.n = 0};
        bool has_heads = false;
        for (int i = 0; i < cli.n_flags; i++) {
            const HelpFlag *f = &cli.flags[i];
            has_heads = has_heads || strcmp(f->flag, "--heads") == 0;
            if (f->kind != SWITCH && f->default_value != NULL) {
                const char *cheaper = cheaper_value(cli.dir, f->flag);
                const char *value = cheaper != NULL ? cheaper : f->default_value;
                push(&spaced, f->flag);
                push(&spaced, value);
                push(&joined, path_join("%s=%s", f->flag, value));
            }
        }
        RunResult a = run_program_with(NULL, 120, cli.binary, spaced.words);
        RunResult b = run_program_with(NULL, 120, cli.binary, joined.words);
        ck_assert_msg(a.status == 0 && b.status == 0, "%s: exit %d and %d: %s%s", cli.dir,
                      a.status, b.status, a.err, b.err);
        ck_assert_msg(strcmp(a.out, b.out) == 0, "%s: --flag=value printed otherwise", cli.dir);
        // A bench takes the flags given and its own sizes for the others, or
        // refuses them: it must see either form. ATTN_COST=check stops a run
        // the budget admits before it starts timing; in a lesson without a
        // budget yet, a bench still running after 3 seconds took the flag.
        bool has_bench = is_flag_of(&cli, "--bench");
        for (int i = 0; has_bench && i < cli.n_flags; i++) {
            const HelpFlag *f = &cli.flags[i];
            if (f->kind != NUMBER || f->default_value == NULL) {
                continue;
            }
            setenv("ATTN_COST", "check", 1);
            a = run_program_with(NULL, 3, cli.binary,
                                 (const char *[]){"--bench", f->flag, f->default_value, NULL});
            b = a.status == RUN_TIMED_OUT ? a : run_program_with(NULL, 3, cli.binary,
                (const char *[]){"--bench", path_join("%s=%s", f->flag, f->default_value), NULL});
            unsetenv("ATTN_COST");
            ck_assert_msg(a.status == b.status &&
                          strcmp(without_cost_lines(a.err), without_cost_lines(b.err)) == 0,
                          "%s --bench: %s=%s (exit %d: %s) is not %s %s (exit %d: %s)", cli.dir,
                          f->flag, f->default_value, b.status, b.err, f->flag, f->default_value,
                          a.status, a.err);
        }
        if (has_heads) {
            Argv heads = {.n = 0}, heads_joined = {.n = 0};
            push(&heads, "--heads");
            push(&heads, "4");
            push(&heads_joined, "--heads=4");
            push_cheaper(&heads, cli.dir);
            push_cheaper(&heads_joined, cli.dir);
            a = run_program_with(NULL, 120, cli.binary, heads.words);
            b = run_program_with(NULL, 120, cli.binary, heads_joined.words);
            ck_assert_msg(a.status == b.status && strcmp(a.out, b.out) == 0 &&
                          strcmp(a.err, b.err) == 0, "%s: --heads=4 (exit %d: %s) is not --heads "
                          "4 (exit %d: %s)", cli.dir, b.status, b.err, a.status, a.err);
        }
    }
}
END_TEST

// --- sizes at the limit ----------------------------------------------------------------------

// Runs that still take many seconds (measured on 2 cores: gcc -O2; the
// sanitizers make them 3-5 times slower) would be listed in SLOW and run
// only with ATTN_SLOW_LIMITS=1; since the budget there are none.
static const char *const SLOW[] = {
    "(none)",
};

// The probe's own command lines.
static const char *const PROBED[][12] = {
    {"10-kv-cache", "--batch", "32768", "--heads", "65536", "--dim", "65536", "--kv-heads", "1"},
    {"07-cross-attention", "--seq-q", "16384", "--seq-k", "1", "--dim", "1", "--heads", "1",
     "--batch", "1"},
    {"07-cross-attention", "--seq-q", "46341"},
};

// Run it under a budget of 5 seconds (what a cheaper start admits at 65536
// could otherwise take a minute: lesson 16 at --vocab 65536 --batch 4);
// unless it ran (exit 0, nothing on stderr) or was refused in one line, add
// a line to *report.
static void run_at_limit(const LessonCli *cli, const Argv *argv, const char **report) {
    setenv("ATTN_MAX_SECONDS", "5", 1);
    RunResult r = run_program_with(NULL, 120, cli->binary, argv->words);
    unsetenv("ATTN_MAX_SECONDS");
    const char *newline = strchr(r.err, '\n');
    bool ran = r.status == 0 && r.err[0] == '\0' && r.out[0] != '\0';
    bool refused = r.status == 2 && r.out[0] == '\0' && newline != NULL && newline[1] == '\0' &&
                   strncmp(r.err, cli->prefix, strlen(cli->prefix)) == 0;
    if (!ran && !refused) {
        const char *line = path_join("\n  %s: exit %d, %zu bytes on stdout, stderr: %.300s",
                                     plain_text(cli->dir, argv), r.status, strlen(r.out), r.err);
        char *longer = arena_alloc(strlen(*report) + strlen(line) + 1, 1);
        sprintf(longer, "%s%s", *report, line);
        *report = longer;
    }
}

START_TEST(test_sizes_at_the_limit) {
    const char *dirs[MAX_LESSONS];
    int n_lessons = find_lesson_dirs(dirs, MAX_LESSONS);
    bool slow_too = getenv("ATTN_SLOW_LIMITS") != NULL;
    const char *report = "";
    int n_slow = (int)(sizeof SLOW / sizeof SLOW[0]);
    for (int l = 0; l < n_lessons; l++) {
        if (!limits_known(dirs[l])) {
            continue;   // a new lesson: its fuzzing above covers it; its limits are its own
        }
        LessonCli cli = read_cli(dirs[l], lesson_binary(dirs[l]), NULL);
        const char *sizes[MAX_FLAGS];
        int n_sizes = 0;
        for (int i = 0; i < cli.n_flags; i++) {
            if (cli.flags[i].kind == NUMBER && strcmp(cli.flags[i].flag, "--seed") != 0) {
                sizes[n_sizes++] = cli.flags[i].flag;
            }
        }
        for (int i = 0; i < n_sizes; i++) {
            for (int j = i; j < n_sizes; j++) {   // j == i: the flag alone
                Argv argv = {.n = 0};
                push(&argv, sizes[i]);
                push(&argv, "65536");
                if (j != i) {
                    push(&argv, sizes[j]);
                    push(&argv, "65536");
                }
                push_cheaper(&argv, cli.dir);
                if (slow_too || !listed(plain_text(cli.dir, &argv), SLOW, n_slow)) {
                    run_at_limit(&cli, &argv, &report);
                }
            }
        }
        for (size_t p = 0; p < sizeof PROBED / sizeof PROBED[0]; p++) {
            if (strcmp(PROBED[p][0], cli.dir) != 0) {
                continue;
            }
            Argv argv = {.n = 0};
            for (int w = 1; PROBED[p][w] != NULL; w++) {
                push(&argv, PROBED[p][w]);
            }
            run_at_limit(&cli, &argv, &report);
        }
    }
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
