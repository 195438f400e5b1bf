// lesson_cli.h - the lessons' command lines as the tests that drive them see
// them (test_fuzz_cli, test_budget_edges): each lesson's flags, read from its
// --help, an argv to build, a call of the lesson with it in this process or a
// run of its program, and a quick start for a lesson whose defaults take long.
#ifndef LESSON_CLI_H
#define LESSON_CLI_H

#include <stdbool.h>

#include "harness.h"

enum { MAX_FLAGS = 48, MAX_WORDS = 64 };

// What a flag's value word in --help says it takes: N, F, P, WORD, DIR,
// FILE, TEXT (free text, UTF-8: lesson 17's --prompt), or nothing (a switch).
typedef enum { SWITCH, NUMBER, FLOAT, PROBABILITY, CHOICE, DIRECTORY, FILE_NAME, TEXT } Kind;

typedef struct {
    const char *flag;            // "--dim"
    Kind kind;
    const char *default_value;   // "(default 4)" in --help, or NULL
} HelpFlag;

// An argv being built: words, NULL-terminated.
typedef struct {
    const char *words[MAX_WORDS];
    int n;
} Argv;

typedef struct {
    const char *dir;             // "02-self-attention-v1"
    LessonMain main;             // its main(), called in this process
    const char *binary;          // its program
    const char *mode;            // a first word the program needs, or NULL
    const char *prefix;          // "lesson-2: "
    HelpFlag flags[MAX_FLAGS];
    int n_flags;
    bool has_quick;              // quick_start has been worked out:
    Argv quick;
} LessonCli;

// The flags its --help (a call of `main`) lists. The program is `binary`, with `mode`
// as its first word if not NULL (test_flags runs the made-up lesson with --as-lesson).
LessonCli read_cli(const char *dir, LessonMain main, const char *binary, const char *mode);
// A lesson of the table (harness.h: LESSONS), and its built program.
LessonCli lesson_cli(const LessonEntry *lesson);
// Is `word` one of its flags (or --help, -h)?
bool is_flag_of(const LessonCli *cli, const char *word);

void push(Argv *argv, const char *word);
// The lesson and its flags as one line: "06-multi-head --batch 65536".
const char *plain_text(const char *dir, const Argv *argv);
// The same as a shell could type it again: each word in $'...' quotes, bytes other
// than printable ASCII as \xNN.
const char *argv_text(const char *binary, const Argv *argv);

// The lesson called with `argv` in this process, up to where its work starts
// (harness.h: call_lesson).
LessonCall call_cli(const LessonCli *cli, const Argv *argv);
// Its program run with `argv` (after its mode) in directory `dir` (NULL: here), stopped
// after `seconds` (0: never) (harness.h: run_program_with).
RunResult run_cli(const LessonCli *cli, const char *dir, int seconds, const Argv *argv);

// A quick start: where the defaults take more than a tenth of a second of the budget's
// estimate (lesson 16 trains for 300 steps, lesson 8 runs its loops at seq 256), the
// flags that make a run that takes less: worked out from the lesson's
// own cost (check_budget), halving the size flag that saves the most until the estimate
// is under a tenth of a second. The tests that run a lesson at a flag's limit or at the
// budget's edge start from it, so that each run stays short: a flag the run sets itself
// keeps its value, and a flag of the quick start begins from the start's value.
void quick_start(LessonCli *cli);
// The value a flag has at the quick start, or NULL (its default).
const char *quick_value(LessonCli *cli, const char *flag);
// The quick start's flags that argv does not give yet, added to it.
void push_quick(Argv *argv, LessonCli *cli);

// argv, its first `fixed` words as they are, completed by the quick start (push_quick)
// and, if that is admitted but its estimate is above a tenth of a second, made quicker
// the same way, halving its other number flags (lesson 14 at --batch 65536 halves its
// --seq and --heads). Returns the estimated seconds before that, or a negative number if
// the budget (as the environment sets it) or another check refuses argv.
double quicker(LessonCli *cli, Argv *argv, int fixed);

// Is `text` one of the n strings of `list`?
bool listed(const char *text, const char *const *list, int n);

#endif
