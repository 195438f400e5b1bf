// lesson.h - the shape every lesson has, the command line they share, and
// their --dump and --dot.
//
// HOW A LESSON FILE READS (lessons/NN-name/*.c), top to bottom:
//
//   1. The header comment: what this lesson adds, the math in a few lines,
//      the PyTorch it mirrors, how to run it, what to look for in the
//      output, and the legend of the size and index letters.
//   2. The module, as the notebook's class: a struct with the notebook's
//      field names, Name_init() (its __init__), and its forward:
//
//          Tensor *Name_forward(NameSteps *steps, const Name *self, inputs...);
//
//      Outputs first, then the module, then the inputs, as everywhere here.
//      It returns what the notebook's forward returns. `steps` may be NULL;
//      when it is not, the forward keeps there the notebook's local
//      variables the lesson prints afterwards (Q, K, V, att_weight, ...).
//      `self` is const unless the forward changes the module itself, as a
//      KV cache does. The forward follows the notebook line by line; it
//      prints nothing.
//   3. The demonstrations: what the notebook printed, and what it did not
//      (a bug shown running, an invariant checked, a cost measured), each a
//      function called from main.
//   4. main(): the flags and their checks, lesson_start, the notebook's
//      cell, the demonstrations, lesson_finish.
//
// main() goes through four steps:
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
//     parse_lesson_args(&lesson, argc, argv);    // 1. flags (exit 2 if bad)
//     check_divides(...); check_fits(...);       // 2. the lesson's own checks
//     lesson_start(&lesson);                     // 3. seed; --dump and --dot
//     ... the lesson's work, calling named() on its tensors ...
//     return lesson_finish(&lesson);             // 4. write the files, free all
//
// Every flag takes its value as the next word (`--seed 7`) and may be given
// once. Bad input ends the program before any work and before any file or
// directory is made, with ONE line on stderr naming the flag and what was
// expected, and exit status 2:
//     lesson-2: --dim expects a whole number from 1 to 65536, got '0'
#ifndef LESSON_H
#define LESSON_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor.h"

#define MAX_SIZE_FLAG 65536   // no single size may exceed this

// A size of the notebook's: a whole number from 1 to MAX_SIZE_FLAG.
typedef struct {
    const char *flag;   // "--dim"
    int *value;         // holds the default; parse_lesson_args overwrites it
    const char *help;   // "hidden dimension"
} SizeFlag;

// Any other whole number, with its own range ("--pad 0", "--head-mask -1").
typedef struct {
    const char *flag;
    int *value;
    const char *help;
    int min, max;       // the values allowed, both included
} IntFlag;

// A probability: a decimal number from 0 to below 1 ("--drop 0.1").
typedef struct {
    const char *flag;
    double *value;
    const char *help;
} ProbabilityFlag;

// One word of a fixed list ("--position relative_key").
typedef struct {
    const char *flag;
    const char **value;            // holds the default, one of the choices
    const char *help;
    const char *const *choices;    // NULL-terminated
} ChoiceFlag;

// A flag without a value ("--train"): false unless given.
typedef struct {
    const char *flag;
    bool *value;
    const char *help;
} SwitchFlag;

typedef struct {
    // Filled in by the lesson:
    const char *program;     // "lesson-2", the first word of every message
    const char *summary;     // one line for --help and the --dot title
    SizeFlag *sizes;
    int n_sizes;
    IntFlag *ints;
    int n_ints;
    ProbabilityFlag *probabilities;
    int n_probabilities;
    ChoiceFlag *choices;
    int n_choices;
    SwitchFlag *switches;
    int n_switches;
    // Filled in by parse_lesson_args:
    uint64_t seed;           // --seed N (default 0); negative N is 2^64 + N
    const char *dump_dir;    // --dump DIR, or NULL
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
// Refuse sizes for which a tensor the run will build would have more than
// MAX_ELEMENTS elements. `what` names the tensor and where its sizes come
// from, e.g. check_fits(&lesson, "attention_weight (batch, heads, seq, seq)",
// shape4(batch, heads, seq, seq)). The product is worked out in 64 bits and
// checked before each multiplication, so no sizes can overflow it. Call it
// for every tensor whose size grows with the flags (the largest of each
// kind is enough). Give the sizes as separate dims: a product of two flags
// can pass INT_MAX before it gets here, and a negative size (the sign of
// that overflow) fails (exit 1) as the lesson's own mistake.
void check_fits(const Lesson *lesson, const char *what, Shape shape);

// manual_seed(seed); check that --dot's file and --dump's directory can be
// written (creating the directory), or exit 2 leaving nothing behind; then
// start tracing (trace.h) for them. --dot must name a regular file or a new
// one (in a directory that exists or that --dump makes); a directory, a
// FIFO, a device or a symbolic link is refused.
void lesson_start(Lesson *lesson);
// Write the --dump files (every tensor named while tracing, as it was when
// named) and the --dot graph, each all or nothing (files.h), free the
// arena; returns the exit status (0). A run that ends before this is done
// (fail(), exit 1) writes neither: what it wrote and the directories it
// made are removed when it exits.
int lesson_finish(Lesson *lesson);

#endif
