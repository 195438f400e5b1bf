// lesson_cli.h - the lessons' command lines as the tests that drive them
// see them (test_fuzz_cli, test_budget_edges): each lesson's flags, read
// from its --help, an argv to build, and the cheaper starts those tests run
// a lesson from where its defaults take long.
#ifndef LESSON_CLI_H
#define LESSON_CLI_H

#include <stdbool.h>

enum { MAX_LESSONS = 32, MAX_FLAGS = 48, MAX_WORDS = 64 };

// What a flag's value word in --help says it takes: N, F, P, WORD, DIR,
// FILE, or nothing (a switch).
typedef enum { SWITCH, NUMBER, FLOAT, PROBABILITY, CHOICE, DIRECTORY, FILE_NAME } Kind;

typedef struct {
    const char *flag;            // "--dim"
    Kind kind;
    const char *default_value;   // "(default 4)" in --help, or NULL
} HelpFlag;

typedef struct {
    const char *dir;             // "02-self-attention-v1"
    const char *binary;
    const char *mode;            // a first word the program needs, or NULL
    const char *prefix;          // "lesson-2: "
    HelpFlag flags[MAX_FLAGS];
    int n_flags;
} LessonCli;

// The flags `binary --help` (after `mode`, if not NULL) lists.
LessonCli read_cli(const char *dir, const char *binary, const char *mode);
// Is `word` one of its flags (or --help, -h)?
bool is_flag_of(const LessonCli *cli, const char *word);

// An argv being built: words, NULL-terminated.
typedef struct {
    const char *words[MAX_WORDS];
    int n;
} Argv;
void push(Argv *argv, const char *word);
// The lesson and its flags as one line: "06-multi-head --batch 65536".
const char *plain_text(const char *dir, const Argv *argv);
bool listed(const char *text, const char *const *list, int n);

// Lessons whose limits are known to run in reasonable time (lesson_cli.c).
bool limits_known(const char *dir);

// A cheaper start (lesson_cli.c says which): the value a flag starts from,
// or NULL (its default); and the start's flags that argv does not give yet,
// added to it.
const char *cheaper_value(const char *dir, const char *flag);
void push_cheaper(Argv *argv, const char *dir);

#endif
