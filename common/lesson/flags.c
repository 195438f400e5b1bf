// flags.c - the command line every lesson shares: reading the flags, --help,
// and the one-line refusal (exit 2) of anything else, before any work.
#define _POSIX_C_SOURCE 200809L
#include "lesson/flags.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/error.h"
#include "lesson/run.h"

// --- messages -------------------------------------------------------------------

_Noreturn void usage_error(const Lesson *lesson, const char *format, ...) {
    fflush(stdout);
    fprintf(stderr, "%s: ", lesson->program);
    va_list args;
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fprintf(stderr, "\n");
    lesson_exit(lesson, 2);
}

const char *shown(const char *arg) {
    enum { SHOWN = 60 };
    char *text = arena_alloc(SHOWN * 4 + 4, 1);
    size_t used = 0;
    size_t i = 0;
    for (; arg[i] != '\0' && i < SHOWN; i++) {
        unsigned char c = (unsigned char)arg[i];
        if (c == '\n') {
            used += (size_t)sprintf(text + used, "\\n");
        } else if (c == '\t') {
            used += (size_t)sprintf(text + used, "\\t");
        } else if (c < 0x20 || c == 0x7f) {
            used += (size_t)sprintf(text + used, "\\x%02x", c);
        } else {
            text[used++] = (char)c;
        }
    }
    if (arg[i] != '\0') {
        // arg[i] is the first byte left out; if it continues a UTF-8
        // character (10xxxxxx), leave out that character's first bytes too.
        // Bytes from 0x80 up were copied one for one, so `used` backs up with i.
        while (i > 0 && ((unsigned char)arg[i] & 0xC0) == 0x80) {
            i -= 1;
            used -= 1;
        }
        sprintf(text + used, "...");
    }
    return text;
}

// --- --help -----------------------------------------------------------------------

// One line of --help: the flag and its value, then what it does, in columns.
static void help_line(const char *flag, const char *value, const char *text) {
    char left[48];
    snprintf(left, sizeof left, "%s %s", flag, value);
    printf("  %-16s %s\n", left, text);
}

// A flag that takes a value, with its default after its help: "N", "P" or
// "F" and the default as %d or %g, "WORD" and the default's word.
static void help_with_default(const char *flag, const char *value, const char *help,
                              const char *default_text) {
    char text[256];
    snprintf(text, sizeof text, "%s (default %s)", help, default_text);
    help_line(flag, value, text);
}

static const char *int_text(char *buffer, size_t size, int value) {
    snprintf(buffer, size, "%d", value);
    return buffer;
}

static const char *decimal_text(char *buffer, size_t size, double value) {
    snprintf(buffer, size, "%g", value);
    return buffer;
}

static void print_help(const Lesson *lesson) {
    printf("usage: %s [flags]\n%s\n\nflags:\n", lesson->program, lesson->summary);
    char d[32];   // a default as text
    for (int i = 0; i < lesson->n_sizes; i++) {
        const SizeFlag *f = &lesson->sizes[i];
        help_with_default(f->flag, "N", f->help, int_text(d, sizeof d, *f->value));
    }
    for (int i = 0; i < lesson->n_ints; i++) {
        const IntFlag *f = &lesson->ints[i];
        help_with_default(f->flag, "N", f->help, int_text(d, sizeof d, *f->value));
    }
    for (int i = 0; i < lesson->n_probabilities; i++) {
        const ProbabilityFlag *f = &lesson->probabilities[i];
        help_with_default(f->flag, "P", f->help, decimal_text(d, sizeof d, *f->value));
    }
    for (int i = 0; i < lesson->n_floats; i++) {
        const FloatFlag *f = &lesson->floats[i];
        help_with_default(f->flag, "F", f->help, decimal_text(d, sizeof d, *f->value));
    }
    for (int i = 0; i < lesson->n_choices; i++) {
        help_with_default(lesson->choices[i].flag, "WORD", lesson->choices[i].help,
                          *lesson->choices[i].value);
    }
    for (int i = 0; i < lesson->n_switches; i++) {
        help_line(lesson->switches[i].flag, "", lesson->switches[i].help);
    }
    for (int i = 0; i < lesson->n_paths; i++) {
        help_line(lesson->paths[i].flag, lesson->paths[i].what, lesson->paths[i].help);
    }
    help_line("--seed", "N", "PyTorch seed: torch.manual_seed(N) (default 0)");
    help_line("--dump", "DIR", "write each named tensor as DIR/<name>.npy");
    help_line("--dot", "FILE", "write the dataflow as a Graphviz graph");
    help_line("--heatmap", "", "draw the attention weights as shaded grids");
    help_line("--help", "", "this text");
}

// --- reading values -----------------------------------------------------------------

// One flag of the command line as it was typed: `--dim 4` (the value is the
// next word) or `--dim=4` (the value follows the '=' in the same word).
typedef struct {
    const char *flag;          // "--dim"
    const char *word;          // the word as typed, "--dim=4", for messages
    const char *inline_value;  // "4" after the '=', or NULL
} Word;

static Word split_word(const char *arg) {
    Word word = {arg, arg, NULL};
    const char *equals = strchr(arg, '=');
    if (arg[0] == '-' && arg[1] == '-' && equals != NULL) {
        char *flag = arena_alloc((size_t)(equals - arg) + 1, 1);
        memcpy(flag, arg, (size_t)(equals - arg));
        word.flag = flag;
        word.inline_value = equals + 1;
    }
    return word;
}

// The flag's value: what follows its '=', or else the next word (which may
// not be missing, empty, or another flag). A usage error if there is none.
// *used becomes the number of words the flag took.
static const char *value_of(const Lesson *lesson, const Word *word, int argc, char **argv, int i,
                            const char *expected, int *used) {
    if (word->inline_value != NULL) {
        *used = 1;
        if (word->inline_value[0] == '\0') {
            usage_error(lesson, "%s expects %s after the '='", word->flag, expected);
        }
        return word->inline_value;
    }
    *used = 2;
    if (i + 1 >= argc || argv[i + 1][0] == '\0' ||
        (argv[i + 1][0] == '-' && argv[i + 1][1] == '-')) {
        usage_error(lesson, "%s expects %s after it", word->flag, expected);
    }
    return argv[i + 1];
}

// A flag without a value: "--train=1" is refused, as argparse refuses it.
static void no_value(const Lesson *lesson, const Word *word) {
    if (word->inline_value != NULL) {
        usage_error(lesson, "%s takes no value, got '%s'", word->flag, shown(word->word));
    }
}

// True if text is one or more decimal digits, optionally after a '-'
// (when negative_ok), and nothing else: no '+', spaces, hex or exponent.
static bool is_whole_number(const char *text, bool negative_ok) {
    if (negative_ok && text[0] == '-') {
        text += 1;
    }
    if (text[0] == '\0') {
        return false;
    }
    for (; *text != '\0'; text++) {
        if (*text < '0' || *text > '9') {
            return false;
        }
    }
    return true;
}

// True if text is decimal digits with at most one '.' and at least one
// digit: "2", "2.5", ".5", "5.". No sign, exponent, spaces, nan or inf.
static bool is_decimal(const char *text) {
    int digits = 0, dots = 0;
    for (const char *c = text; *c != '\0'; c++) {
        if (*c >= '0' && *c <= '9') {
            digits += 1;
        } else if (*c == '.') {
            dots += 1;
        } else {
            return false;
        }
    }
    return digits > 0 && dots <= 1;
}

// --seed takes any 64-bit integer; a negative one becomes 2^64 + N, as
// Python passes it to torch.manual_seed.
static uint64_t parse_seed(const Lesson *lesson, const char *text) {
    bool ok = is_whole_number(text, true);
    errno = 0;
    uint64_t seed = 0;
    if (ok && text[0] == '-') {
        seed = (uint64_t)strtoll(text, NULL, 10);
    } else if (ok) {
        seed = strtoull(text, NULL, 10);
    }
    if (!ok || errno == ERANGE) {
        usage_error(lesson, "--seed expects an integer from -2^63 to 2^64-1, got '%s'",
                    shown(text));
    }
    return seed;
}

// A whole number from min to max (strtol's range is checked first, so a
// huge number is refused, never wrapped).
static int parse_int(const Lesson *lesson, const char *flag, const char *text, int min, int max) {
    bool ok = is_whole_number(text, min < 0);
    errno = 0;
    long value = ok ? strtol(text, NULL, 10) : 0;
    if (!ok || errno == ERANGE || value < min || value > max) {
        usage_error(lesson, "%s expects a whole number from %d to %d, got '%s'", flag, min, max,
                    shown(text));
    }
    return (int)value;
}

// A probability: a decimal number, value < 1.
static double parse_probability(const Lesson *lesson, const char *flag, const char *text) {
    double value = is_decimal(text) ? strtod(text, NULL) : -1.0;
    if (!(value >= 0.0 && value < 1.0)) {
        usage_error(lesson, "%s expects a probability from 0 to below 1 (such as 0.1), got '%s'",
                    flag, shown(text));
    }
    return value;
}

// A decimal number from min to max. strtod rounds to the nearest double,
// as Python's float() does, so the value is the one PyTorch code is given.
static double parse_float(const Lesson *lesson, const FloatFlag *f, const char *text) {
    double value = is_decimal(text) ? strtod(text, NULL) : NAN;
    if (!(value >= f->min && value <= f->max)) {
        usage_error(lesson, "%s expects a number from %g to %g (such as 2.5), got '%s'", f->flag,
                    f->min, f->max, shown(text));
    }
    return value;
}

static const char *parse_choice(const Lesson *lesson, const ChoiceFlag *f, const char *text) {
    for (int c = 0; f->choices[c] != NULL; c++) {
        if (strcmp(text, f->choices[c]) == 0) {
            return f->choices[c];
        }
    }
    char list[256] = "";
    for (int c = 0; f->choices[c] != NULL; c++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", c == 0 ? "" : ", ", f->choices[c]);
    }
    usage_error(lesson, "%s expects one of %s, got '%s'", f->flag, list, shown(text));
}

// --- the defaults -------------------------------------------------------------------------

// A test may run a lesson's main() many times in one process (run.h). Where a
// lesson keeps its flags in static variables, the first run's values (and
// what the lesson made of them: lesson 15's --hidden 0 becomes 176) would be
// the next run's defaults. So every flag's value is kept the first time its
// program's flags are read, and every later reading starts from it again.
// In a program, which reads its flags once, this changes nothing.
typedef struct {
    const char *program, *flag;   // the lesson's own strings ("lesson-15", "--hidden")
    int whole;                    // a size's or an IntFlag's default
    double decimal;               // a FloatFlag's or a probability's
    const char *word;             // a ChoiceFlag's
} Default;
#define MAX_DEFAULTS 4096         // every flag of every lesson a process runs, and more
static Default defaults[MAX_DEFAULTS];
static int n_defaults = 0;

// The flag's default, kept now if it is its first reading.
static Default *default_of(const Lesson *lesson, const char *flag, int whole, double decimal,
                           const char *word) {
    for (int i = 0; i < n_defaults; i++) {
        if (strcmp(defaults[i].flag, flag) == 0 &&
            strcmp(defaults[i].program, lesson->program) == 0) {
            return &defaults[i];
        }
    }
    if (n_defaults == MAX_DEFAULTS) {
        fail("parse_lesson_args: more than %d flags' defaults kept", MAX_DEFAULTS);
    }
    defaults[n_defaults] = (Default){lesson->program, flag, whole, decimal, word};
    return &defaults[n_defaults++];
}

// Every flag that holds a value set back to its default.
static void start_from_defaults(Lesson *lesson) {
    for (int i = 0; i < lesson->n_sizes; i++) {
        int *value = lesson->sizes[i].value;
        *value = default_of(lesson, lesson->sizes[i].flag, *value, 0, NULL)->whole;
    }
    for (int i = 0; i < lesson->n_ints; i++) {
        int *value = lesson->ints[i].value;
        *value = default_of(lesson, lesson->ints[i].flag, *value, 0, NULL)->whole;
    }
    for (int i = 0; i < lesson->n_floats; i++) {
        double *value = lesson->floats[i].value;
        *value = default_of(lesson, lesson->floats[i].flag, 0, *value, NULL)->decimal;
    }
    for (int i = 0; i < lesson->n_probabilities; i++) {
        double *value = lesson->probabilities[i].value;
        *value = default_of(lesson, lesson->probabilities[i].flag, 0, *value, NULL)->decimal;
    }
    for (int i = 0; i < lesson->n_choices; i++) {
        const char **value = lesson->choices[i].value;
        *value = default_of(lesson, lesson->choices[i].flag, 0, 0, *value)->word;
    }
    for (int i = 0; i < lesson->n_switches; i++) {
        *lesson->switches[i].value = false;
    }
    for (int i = 0; i < lesson->n_paths; i++) {
        *lesson->paths[i].value = NULL;
    }
}

// --- the flags -------------------------------------------------------------------------

// A number flag was given: note it (as typed) in lesson->changed when it
// differs from its default, and in lesson->raised when it is larger. The
// budget's refusal names them: they are what made the run big.
static const char *noted(const char *list, const char *flag, const char *text) {
    char *longer = arena_alloc(strlen(list) + strlen(flag) + strlen(text) + 3, 1);
    sprintf(longer, "%s%s%s %s", list, list[0] != '\0' ? " " : "", flag, text);
    return longer;
}

static void note_number(Lesson *lesson, const char *flag, const char *text, double given,
                        double by_default) {
    if (given != by_default) {
        lesson->changed = noted(lesson->changed, flag, shown(text));
    }
    if (given > by_default) {
        lesson->raised = noted(lesson->raised, flag, shown(text));
    }
}

// A whole-number flag (a size or an IntFlag): its value read into *value,
// from min to max, and noted; returns the words it took.
static int take_int(Lesson *lesson, const Word *word, int argc, char **argv, int i, int *value,
                    int min, int max) {
    int used = 0;
    const char *text = value_of(lesson, word, argc, argv, i, "a whole number", &used);
    int by_default = *value;
    *value = parse_int(lesson, word->flag, text, min, max);
    note_number(lesson, word->flag, text, *value, by_default);
    return used;
}

// If `word` is one of the lesson's own flags, read it (and its value) and
// return how many words it took; otherwise return 0.
static int lesson_flag(Lesson *lesson, const Word *word, int argc, char **argv, int i) {
    const char *flag = word->flag;
    int used = 0;
    for (int f = 0; f < lesson->n_sizes; f++) {
        if (strcmp(flag, lesson->sizes[f].flag) == 0) {
            return take_int(lesson, word, argc, argv, i, lesson->sizes[f].value, 1,
                            MAX_SIZE_FLAG);
        }
    }
    for (int f = 0; f < lesson->n_ints; f++) {
        const IntFlag *it = &lesson->ints[f];
        if (strcmp(flag, it->flag) == 0) {
            return take_int(lesson, word, argc, argv, i, it->value, it->min, it->max);
        }
    }
    for (int f = 0; f < lesson->n_floats; f++) {
        const FloatFlag *it = &lesson->floats[f];
        if (strcmp(flag, it->flag) == 0) {
            const char *text = value_of(lesson, word, argc, argv, i, "a number", &used);
            double by_default = *it->value;
            *it->value = parse_float(lesson, it, text);
            note_number(lesson, flag, text, *it->value, by_default);
            return used;
        }
    }
    for (int f = 0; f < lesson->n_probabilities; f++) {
        if (strcmp(flag, lesson->probabilities[f].flag) == 0) {
            const char *text = value_of(lesson, word, argc, argv, i, "a probability", &used);
            *lesson->probabilities[f].value = parse_probability(lesson, flag, text);
            return used;
        }
    }
    for (int f = 0; f < lesson->n_choices; f++) {
        if (strcmp(flag, lesson->choices[f].flag) == 0) {
            const char *text = value_of(lesson, word, argc, argv, i, "a word", &used);
            *lesson->choices[f].value = parse_choice(lesson, &lesson->choices[f], text);
            return used;
        }
    }
    for (int f = 0; f < lesson->n_switches; f++) {
        if (strcmp(flag, lesson->switches[f].flag) == 0) {
            no_value(lesson, word);
            *lesson->switches[f].value = true;
            return 1;
        }
    }
    for (int f = 0; f < lesson->n_paths; f++) {
        const PathFlag *it = &lesson->paths[f];
        if (strcmp(flag, it->flag) == 0) {
            bool dir = strcmp(it->what, "DIR") == 0;
            *it->value = value_of(lesson, word, argc, argv, i, dir ? "a directory" : "a file name",
                                  &used);
            return used;
        }
    }
    return 0;
}

void parse_lesson_args(Lesson *lesson, int argc, char **argv) {
    release_at_exit();   // a refusal below frees what parsing took from the arena
    lesson->seed = 0;
    lesson->dump_dir = NULL;
    lesson->dot_file = NULL;
    lesson->heatmap = false;
    lesson->raised = "";
    lesson->changed = "";
    start_from_defaults(lesson);
    // The flags read so far. An unknown flag ends the program, so this
    // holds each known flag at most once and stays short.
    const char **seen = arena_alloc((size_t)argc, sizeof *seen);
    int n_seen = 0;
    int i = 1;
    while (i < argc) {
        Word word = split_word(argv[i]);
        const char *flag = word.flag;
        for (int s = 0; s < n_seen; s++) {   // a flag given twice is a mistake, not an override
            if (strcmp(flag, seen[s]) == 0) {
                usage_error(lesson, "%s is given twice", flag);
            }
        }
        int used = 1;
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            no_value(lesson, &word);
            print_help(lesson);
            lesson_exit(lesson, 0);
        } else if (strcmp(flag, "--seed") == 0) {
            lesson->seed = parse_seed(lesson, value_of(lesson, &word, argc, argv, i, "an integer",
                                                       &used));
        } else if (strcmp(flag, "--dump") == 0) {
            lesson->dump_dir = value_of(lesson, &word, argc, argv, i, "a directory", &used);
        } else if (strcmp(flag, "--heatmap") == 0) {
            no_value(lesson, &word);
            lesson->heatmap = true;
        } else if (strcmp(flag, "--dot") == 0) {
            lesson->dot_file = value_of(lesson, &word, argc, argv, i, "a file name", &used);
        } else {
            used = lesson_flag(lesson, &word, argc, argv, i);
            if (used == 0) {
                usage_error(lesson, "unknown flag '%s' (try --help)", shown(word.word));
            }
        }
        seen[n_seen++] = flag;
        i += used;
    }
    lesson->given = seen;
    lesson->n_given = n_seen;
}

bool flag_given(const Lesson *lesson, const char *flag) {
    for (int i = 0; i < lesson->n_given; i++) {
        if (strcmp(lesson->given[i], flag) == 0) {
            return true;
        }
    }
    return false;
}

void check_divides(const Lesson *lesson, const char *divisor_flag, int divisor,
                   const char *flag, int value) {
    if (value % divisor != 0) {
        usage_error(lesson, "%s %d does not divide %s %d", divisor_flag, divisor, flag, value);
    }
}

void check_fits(const Lesson *lesson, const char *what, Shape shape) {
    int64_t count = 1;
    bool too_big = false;
    for (int d = 0; d < shape.ndim; d++) {
        if (shape.size[d] < 0) {   // the lesson multiplied sizes as int, and it overflowed
            fail("check_fits: %s %s has a negative size", what,
                 shape_str(shape, SIZES_TUPLE));
        }
        if (shape.size[d] > 0 && count > MAX_ELEMENTS / shape.size[d]) {
            too_big = true;   // the product would pass the limit: stop multiplying
            break;
        }
        count *= shape.size[d];
    }
    if (too_big) {
        usage_error(lesson, "these sizes make %s %s, more than the %ld elements allowed "
                    "(%ld MiB of floats); choose smaller sizes", what,
                    shape_str(shape, SIZES_TUPLE), MAX_ELEMENTS,
                    MAX_ELEMENTS * (long)sizeof(float) >> 20);
    }
}
