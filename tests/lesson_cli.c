// lesson_cli.c - the lessons' command lines for the tests that drive them
// (lesson_cli.h).
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lesson_cli.h"

// --- the lessons and their flags, from --help ---------------------------------------------

static Kind kind_of(const char *value_word) {
    const char *words[] = {"N", "F", "P", "WORD", "DIR", "FILE", "TEXT"};
    const Kind kinds[] = {NUMBER, FLOAT, PROBABILITY, CHOICE, DIRECTORY, FILE_NAME, TEXT};
    for (int i = 0; i < 7; i++) {
        if (strcmp(value_word, words[i]) == 0) {
            return kinds[i];
        }
    }
    return SWITCH;
}

// One line of --help: "  --dim N          hidden dimension (default 4)". The
// value word follows the flag after exactly one space; a switch has none
// (its column is padded with spaces).
static void parse_help_line(LessonCli *cli, const char *line) {
    char flag[64] = "", value[16] = "";
    if (sscanf(line, "  %63s", flag) != 1 || strncmp(flag, "--", 2) != 0 ||
        strcmp(flag, "--help") == 0) {
        return;
    }
    const char *after = strstr(line, flag) + strlen(flag);
    if (after[0] == ' ' && after[1] != ' ') {
        sscanf(after, " %15s", value);
    }
    ck_assert(cli->n_flags < MAX_FLAGS);
    HelpFlag *f = &cli->flags[cli->n_flags++];
    f->flag = path_join("%s", flag);
    f->kind = kind_of(value);
    f->default_value = NULL;
    const char *given = strstr(line, "(default ");
    if (f->kind != SWITCH && given != NULL) {
        given += strlen("(default ");
        f->default_value = path_join("%.*s", (int)strcspn(given, ")"), given);
    }
}

LessonCli read_cli(const char *dir, LessonMain main, const char *binary, const char *mode) {
    LessonCli cli = {.dir = dir, .main = main, .binary = binary, .mode = mode};
    LessonCall help = call_lesson(main, (const char *[]){"--help", NULL});
    ck_assert_msg(help.status == 0, "%s --help: exit %d", dir, help.status);
    char program[64] = "";
    ck_assert_msg(sscanf(help.out, "usage: %63s", program) == 1, "%s --help: %s", dir, help.out);
    cli.prefix = path_join("%s: ", program);
    const char *cursor = help.out;
    const char *line;
    while ((line = next_line(&cursor)) != NULL) {
        parse_help_line(&cli, line);
    }
    ck_assert_msg(cli.n_flags >= 4, "%s --help lists %d flags", dir, cli.n_flags);
    return cli;
}

LessonCli lesson_cli(const LessonEntry *lesson) {
    return read_cli(lesson->dir, lesson->main, lesson_binary(lesson->dir), NULL);
}

bool is_flag_of(const LessonCli *cli, const char *word) {
    for (int i = 0; i < cli->n_flags; i++) {
        if (strcmp(cli->flags[i].flag, word) == 0) {
            return true;
        }
    }
    return strcmp(word, "--help") == 0 || strcmp(word, "-h") == 0;
}

// --- an argv ----------------------------------------------------------------------------------

void push(Argv *argv, const char *word) {
    ck_assert(argv->n < MAX_WORDS - 1);
    argv->words[argv->n++] = word;
    argv->words[argv->n] = NULL;
}

const char *plain_text(const char *dir, const Argv *argv) {
    const char *text = dir;
    for (int i = 0; i < argv->n; i++) {
        char *longer = arena_alloc(strlen(text) + strlen(argv->words[i]) + 2, 1);
        sprintf(longer, "%s %s", text, argv->words[i]);
        text = longer;
    }
    return text;
}

const char *argv_text(const char *binary, const Argv *argv) {
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

bool listed(const char *text, const char *const *list, int n) {
    for (int i = 0; i < n; i++) {
        if (strcmp(text, list[i]) == 0) {
            return true;
        }
    }
    return false;
}

// --- calling it, running it ---------------------------------------------------------------

LessonCall call_cli(const LessonCli *cli, const Argv *argv) {
    return call_lesson(cli->main, argv->words);
}

RunResult run_cli(const LessonCli *cli, const char *dir, int seconds, const Argv *argv) {
    Argv words = {.n = 0};
    if (cli->mode != NULL) {
        push(&words, cli->mode);
    }
    for (int i = 0; i < argv->n; i++) {
        push(&words, argv->words[i]);
    }
    return run_program_with(dir, seconds, cli->binary, words.words);
}

// --- the quick start -------------------------------------------------------------------------

#define QUICK_SECONDS 0.1

// The flag's value in argv, or NULL.
static const char *value_in(const Argv *argv, const char *flag) {
    for (int w = 0; w + 1 < argv->n; w++) {
        if (strcmp(argv->words[w], flag) == 0) {
            return argv->words[w + 1];
        }
    }
    return NULL;
}

// The estimated seconds of a run of argv, or a negative number if it is refused.
static double estimate(const LessonCli *cli, const Argv *argv) {
    LessonCall call = call_cli(cli, argv);
    return call.status == 0 && call.reached_work && call.budget.made ? call.budget.seconds : -1;
}

// argv (which `estimate` admits, in `seconds`), its number flags other than its first
// `fixed` words halved, one at a time, the one that saves the most first, until the
// estimate is at most QUICK_SECONDS or no halving saves anything.
static void make_quicker(const LessonCli *cli, Argv *argv, int fixed, double seconds) {
    while (seconds > QUICK_SECONDS) {
        Argv best = {.n = 0};
        double best_seconds = seconds;
        for (int i = 0; i < cli->n_flags; i++) {
            const HelpFlag *f = &cli->flags[i];
            bool is_fixed = false;
            for (int w = 0; w < fixed; w++) {
                is_fixed = is_fixed || strcmp(argv->words[w], f->flag) == 0;
            }
            if (f->kind != NUMBER || f->default_value == NULL || strcmp(f->flag, "--seed") == 0 ||
                is_fixed) {
                continue;
            }
            const char *now = value_in(argv, f->flag);
            long value = atol(now != NULL ? now : f->default_value);
            if (value < 2) {
                continue;
            }
            Argv halved = {.n = 0};
            for (int w = 0; w < fixed; w++) {
                push(&halved, argv->words[w]);
            }
            push(&halved, f->flag);
            push(&halved, path_join("%ld", value / 2));
            for (int w = fixed; w + 1 < argv->n; w += 2) {
                if (strcmp(argv->words[w], f->flag) != 0) {
                    push(&halved, argv->words[w]);
                    push(&halved, argv->words[w + 1]);
                }
            }
            double s = estimate(cli, &halved);
            if (s >= 0 && s < best_seconds) {
                best = halved;
                best_seconds = s;
            }
        }
        if (best.n == 0) {
            return;   // nothing halved saves time: it stays above QUICK_SECONDS
        }
        *argv = best;
        seconds = best_seconds;
    }
}

// The quick start is worked out under a time budget raised out of the way: a lesson whose
// defaults pass the budget with the kernels the test runs (lesson 17's, with the scalar
// ones) still gets a start within QUICK_SECONDS.
void quick_start(LessonCli *cli) {
    if (cli->has_quick) {
        return;
    }
    cli->has_quick = true;
    cli->quick.n = 0;
    cli->quick.words[0] = NULL;
    const char *allowed = getenv("ATTN_MAX_SECONDS");
    allowed = allowed != NULL ? path_join("%s", allowed) : NULL;
    setenv("ATTN_MAX_SECONDS", "100000", 1);
    double seconds = estimate(cli, &cli->quick);
    ck_assert_msg(seconds >= 0, "%s: its defaults are refused", cli->dir);
    make_quicker(cli, &cli->quick, 0, seconds);
    if (allowed != NULL) {
        setenv("ATTN_MAX_SECONDS", allowed, 1);
    } else {
        unsetenv("ATTN_MAX_SECONDS");
    }
}

double quicker(LessonCli *cli, Argv *argv, int fixed) {
    push_quick(argv, cli);
    double seconds = estimate(cli, argv);
    if (seconds >= 0) {
        make_quicker(cli, argv, fixed, seconds);
    }
    return seconds;
}

const char *quick_value(LessonCli *cli, const char *flag) {
    quick_start(cli);
    return value_in(&cli->quick, flag);
}

void push_quick(Argv *argv, LessonCli *cli) {
    quick_start(cli);
    for (int w = 0; w + 1 < cli->quick.n; w += 2) {
        if (value_in(argv, cli->quick.words[w]) == NULL) {
            push(argv, cli->quick.words[w]);
            push(argv, cli->quick.words[w + 1]);
        }
    }
}
