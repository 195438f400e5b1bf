// flags.h - the command line every lesson shares.
//
// A lesson describes its own flags (its sizes, switches, probabilities) in
// a Lesson; parse_lesson_args reads argv against them and the flags every
// lesson has: --seed N, --dump DIR, --dot FILE, --heatmap, --help.
//
// A flag takes its value as the next word (`--seed 7`) or after an '='
// in the same word (`--seed=7`, as Python's argparse allows); either way
// the same checks apply, and each flag may be given once. Bad input ends
// the program before any work and before any file or directory is made,
// with ONE line on stderr naming the flag and what was expected, and exit
// status 2:
//     lesson-2: --dim expects a whole number from 1 to 65536, got '0'
#ifndef FLAGS_H
#define FLAGS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"

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

// Any decimal number from min to max ("--mlp-ratio 2.5"): digits with at
// most one '.', read as Python's float() reads it (the nearest double).
typedef struct {
    const char *flag;
    double *value;
    const char *help;
    double min, max;    // the values allowed, both included
} FloatFlag;

// One word of a fixed list ("--position relative_key").
typedef struct {
    const char *flag;
    const char **value;            // holds the default, one of the choices
    const char *help;
    const char *const *choices;    // NULL-terminated
} ChoiceFlag;

// A path the lesson writes or reads besides --dump and --dot ("--save DIR", lesson 16): NULL
// unless given. The lesson checks it (exit 2 when it cannot be used) before any work.
typedef struct {
    const char *flag;
    const char **value;
    const char *what;   // "DIR" or "FILE", as --help shows it
    const char *help;
} PathFlag;

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
    FloatFlag *floats;
    int n_floats;
    ChoiceFlag *choices;
    int n_choices;
    SwitchFlag *switches;
    int n_switches;
    PathFlag *paths;
    int n_paths;
    // Filled in by parse_lesson_args:
    uint64_t seed;           // --seed N (default 0); negative N is 2^64 + N
    const char *dump_dir;    // --dump DIR, or NULL
    const char *dot_file;    // --dot FILE, or NULL
    bool heatmap;            // --heatmap: draw attention weights (heatmap.h)
    const char *raised;      // the numbers given above their defaults, "--seq 8192"
    const char *changed;     // the numbers given other than their defaults (budget.h
                             // names them when a run is too big)
    const char **given;      // every flag given, "--seq" for --seq 8 or --seq=8
    int n_given;
} Lesson;

// Read argv into the lesson's flags. Each flag starts from its default: the value
// it held the first time this program's flags were read (a test may call a
// lesson's main() many times in one process: run.h); so `program` and the flags'
// names must be strings that last (literals), as they are kept.
void parse_lesson_args(Lesson *lesson, int argc, char **argv);

// Was `flag` ("--seq") on the command line, in either form? For a mode that
// takes its own sizes for the flags not given (a bench), or refuses them.
bool flag_given(const Lesson *lesson, const char *flag);

// The lesson's own consistency checks, made after parsing and before
// lesson_start(). Each exits 2 with one line when the check fails.
_Noreturn void usage_error(const Lesson *lesson, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
// An argument as it is safe to echo in such a message: control characters
// spelled out (a newline as \n, others as \xNN), so the message stays one
// line, and at most 60 bytes of it, then "..." (never cutting a UTF-8
// character in two). An arena string.
const char *shown(const char *arg);
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

#endif
