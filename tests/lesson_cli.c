// lesson_cli.c - the lessons' command lines for the tests that drive them
// (lesson_cli.h).
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lesson_cli.h"

// --- the lessons and their flags, from lessons/ and --help --------------------------

static Kind kind_of(const char *value_word) {
    const char *words[] = {"N", "F", "P", "WORD", "DIR", "FILE"};
    const Kind kinds[] = {NUMBER, FLOAT, PROBABILITY, CHOICE, DIRECTORY, FILE_NAME};
    for (int i = 0; i < 6; i++) {
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

LessonCli read_cli(const char *dir, const char *binary, const char *mode) {
    LessonCli cli = {.dir = dir, .binary = binary, .mode = mode};
    const char *with_mode[] = {mode, "--help", NULL};
    const char *plain[] = {"--help", NULL};
    RunResult help = run_program(binary, mode != NULL ? with_mode : plain);
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

// The lesson and its flags as one line: "06-multi-head --batch 65536".
const char *plain_text(const char *dir, const Argv *argv) {
    const char *text = dir;
    for (int i = 0; i < argv->n; i++) {
        text = path_join("%s %s", text, argv->words[i]);
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

// --- the lessons whose limits are known ---------------------------------------------------

// Each checks its budget (lesson/budget.h), so what it admits finishes
// within about a minute. A lesson directory not listed here (a new lesson)
// is fuzzed, but its limits and edges are its own until it is listed.
static const char *const KNOWN[] = {
    "01-toy-qkv", "02-self-attention-v1", "03-self-attention-v2", "04-self-attention-v3",
    "05-self-attention-v4", "06-multi-head", "07-cross-attention", "08-gqa", "09-causal-mask",
    "10-kv-cache", "11-vit-block", "12-bert-layer", "13-flash-attention", "14-attention-backward",
    "15-llama-block", "16-train",
};

bool limits_known(const char *dir) {
    return listed(dir, KNOWN, (int)(sizeof KNOWN / sizeof KNOWN[0]));
}

// --- cheaper starts --------------------------------------------------------------------------

// The runs below give a lesson its defaults, or its defaults with one or two
// flags changed. Where the defaults take a large part of a second or more
// (lesson 16 trains for 300 steps, lesson 17 for 800 on text; lesson 8 runs several
// attentions at seq
// 256 in plain loops, lesson 13 its naive reference beside the tiles;
// lesson 14 at --heads 65536, lesson 15 at --hidden 65536), these flags
// are given
// too: the lesson starts from a cheaper run. A flag the run itself sets (the
// one stretched, or given at 65536) keeps that value: a cheap start only
// fills in the flags not given, and a stretched flag of the start begins
// from its value here, not from its default (which would cost more than a
// budget derived from the start). Each run then takes well under a second,
// also with the scalar kernels of a CPU without AVX2.
static const struct {
    const char *dir, *flag, *value;
} CHEAPER[] = {
    {"08-gqa", "--seq", "64"},
    {"09-causal-mask", "--dim", "128"},
    {"13-flash-attention", "--seq", "64"},
    {"14-attention-backward", "--seq", "2"},
    {"14-attention-backward", "--batch", "1"},
    {"15-llama-block", "--dim", "16"},
    {"16-train", "--steps", "30"},
    {"16-train", "--batch", "4"},
    {"17-language", "--steps", "2"},
    {"17-language", "--batch", "2"},
    {"17-language", "--new", "8"},
};

// The value a flag starts from at the cheaper start, or NULL: its default.
const char *cheaper_value(const char *dir, const char *flag) {
    for (size_t i = 0; i < sizeof CHEAPER / sizeof CHEAPER[0]; i++) {
        if (strcmp(CHEAPER[i].dir, dir) == 0 && strcmp(CHEAPER[i].flag, flag) == 0) {
            return CHEAPER[i].value;
        }
    }
    return NULL;
}

// The cheaper start's flags that argv does not give yet, added to it.
void push_cheaper(Argv *argv, const char *dir) {
    for (size_t i = 0; i < sizeof CHEAPER / sizeof CHEAPER[0]; i++) {
        bool given = false;
        for (int w = 0; w < argv->n; w++) {
            given = given || strcmp(argv->words[w], CHEAPER[i].flag) == 0;
        }
        if (strcmp(CHEAPER[i].dir, dir) == 0 && !given) {
            push(argv, CHEAPER[i].flag);
            push(argv, CHEAPER[i].value);
        }
    }
}
