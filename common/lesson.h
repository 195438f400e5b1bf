// lesson.h - the command line every lesson shares, and its --dump/--dot.
//
// A lesson's main() goes through four steps:
//
//     int batch = 3, seq = 2, dim = 4;                  // the notebook's sizes
//     SizeFlag sizes[] = {
//         {"--batch", &batch, "batch size"},
//         {"--seq", &seq, "sequence length"},
//         {"--dim", &dim, "hidden dimension"},
//     };
//     Lesson lesson = {
//         .program = "lesson-2", .summary = "self-attention V1: ...",
//         .sizes = sizes, .n_sizes = 3,
//     };
//     parse_lesson_args(&lesson, argc, argv);   // 1. flags (exit 2 if bad)
//     check_divides(...); check_fits(...);      // 2. lesson's own checks
//     lesson_start(&lesson);                     // 3. seed, --dump dir, --dot
//     ... the lesson's work, calling named() on its tensors ...
//     return lesson_finish(&lesson);             // 4. write --dot, free all
//
// Every flag takes its value as the next word (`--seed 7`). Bad input ends
// the program before any work and before any file is made, with ONE line
// on stderr naming the flag and what was expected, and exit status 2:
//     lesson-2: --dim expects a whole number from 1 to 65536, got '0'
#ifndef LESSON_H
#define LESSON_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor.h"

#define MAX_SIZE_FLAG 65536   // no single size may exceed this
// No tensor may exceed this: 256 MiB of floats. A lesson keeps several
// tensors of its largest size alive at once (scores, weights, their
// copies), so this keeps a run within a few GiB of memory.
#define MAX_ELEMENTS (1L << 26)

typedef struct {
    const char *flag;   // "--dim"
    int *value;         // holds the default; parse_lesson_args overwrites it
    const char *help;   // "hidden dimension"
} SizeFlag;

typedef struct {
    const char *flag;   // "--train"
    bool *value;        // false unless the flag is given
    const char *help;
} SwitchFlag;

typedef struct {
    // Filled in by the lesson:
    const char *program;     // "lesson-2", the first word of every message
    const char *summary;     // one line for --help
    SizeFlag *sizes;
    int n_sizes;
    SwitchFlag *switches;
    int n_switches;
    // Filled in by parse_lesson_args:
    uint64_t seed;           // --seed N (default 0); negative N is 2^64 + N
    const char *dump_dir;    // --dump DIR, or NULL (set it to NULL to stop dumping)
    const char *dot_file;    // --dot FILE, or NULL
    bool heatmap;            // --heatmap: draw attention weights (heatmap.h)
} Lesson;

void parse_lesson_args(Lesson *lesson, int argc, char **argv);

// The lesson's own consistency checks, made after parsing and before
// lesson_start(). Each exits 2 with one line when the check fails.
_Noreturn void usage_error(const Lesson *lesson, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
// "--heads 7 does not divide --dim 128"
void check_divides(const Lesson *lesson, const char *divisor_flag, int divisor,
                   const char *flag, int value);
// Refuse sizes whose largest tensor would not fit: `what` names it and its
// size formula, e.g. "attention_weight (batch*heads*seq*seq)".
void check_fits(const Lesson *lesson, const char *what, double elements);

// manual_seed(seed), create the --dump directory, start the --dot graph.
void lesson_start(Lesson *lesson);
// Write the --dot graph, free the arena; returns the exit status (0).
int lesson_finish(Lesson *lesson);

// Give a tensor its notebook name: it labels the tensor's node in the --dot
// graph, and with --dump writes DIR/<name>.npy. Returns t.
// A lesson that runs its module again after the notebook's run (an aside
// with other inputs, a benchmark) would overwrite those files: before it,
// it sets lesson.dump_dir = NULL (named() looks at it on every call) and
// calls graph_pause(true).
Tensor *named(const char *name, Tensor *t);

#endif
