// exercise.c - make exercise-N's checker: is the reader's function right?
//
//   exercise N LESSON EXERCISE_BUILD SOURCE [LOG]
//
// LESSON is lesson N as the lessons are built; EXERCISE_BUILD is the same lesson
// with the reader's function (exercises/NN-name.c) linked in place of the
// lesson's own (the Makefile's "the exercises" section says how), built with
// AddressSanitizer and UndefinedBehaviorSanitizer. Both run with each flag set
// the exercise declares (below), each with --dump into a folder of its own;
// then every tensor the function affects is compared, in the order the lesson
// makes them, and then the printed output, number by number; and, where the flag
// set is one that tests/data/ recorded from PyTorch, the tensors with PyTorch's too. The first
// difference is reported with its flags, its index, the lesson's value and
// the reader's, and a hint when the difference looks like a common mistake
// (each exercise declares its hints: a test that looks at the two tensors,
// and what to say). A run that crashes, trips a sanitizer or takes too long is
// named too, with the sanitizer's first line in the reader's file; the whole
// report goes to LOG (default: EXERCISE_BUILD.log). SOURCE is the reader's file:
// when it is still the untouched starting file (a copy is kept as
// tests/exercises/NN-start.c), the report says so.
//
// Prints "exercise N: right" and exits 0, or says what is wrong and exits 1;
// exits 2 on a bad command line or when something else fails.
//
// Values are compared within a tolerance (|yours - lesson's| <= 1e-4 + 1e-3 *
// |lesson's|), not bit for bit: the lessons reproduce PyTorch's exact
// rounding, and a reader's plain loop may round its last bit differently and
// still be right.
//
// A new exercise: its file exercises/NN-name.c, one entry in EXERCISES below,
// and its function made an ordinary (non-static) one in the lesson.
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

// --- a dumped tensor --------------------------------------------------------------------

#define MAX_DIMS 8

typedef struct {
    int ndim;
    long size[MAX_DIMS];
    long n;
    double *v;   // n values, C order (float32 and int64 files alike)
} Array;

static void die(const char *format, ...) {
    va_list args;
    va_start(args, format);
    fprintf(stderr, "exercise: ");
    vfprintf(stderr, format, args);
    fprintf(stderr, "\n");
    va_end(args);
    exit(2);
}

static char *read_all(const char *path, size_t *length) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    size_t capacity = 1 << 16, used = 0;
    char *data = malloc(capacity + 1);
    size_t got;
    while (data != NULL && (got = fread(data + used, 1, capacity - used, f)) > 0) {
        used += got;
        if (used == capacity) {
            capacity *= 2;
            char *grown = realloc(data, capacity + 1);
            if (grown == NULL) {
                free(data);
            }
            data = grown;
        }
    }
    fclose(f);
    if (data == NULL) {
        die("out of memory reading %s", path);
    }
    data[used] = '\0';
    *length = used;
    return data;
}

// DIR/NAME.npy, or false when there is none. Reads what npy.h writes: format
// 1.0, '<f4' or '<i8', C order.
static bool load(Array *a, const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    size_t length;
    char *file = read_all(path, &length);
    if (file == NULL) {
        return false;
    }
    if (length < 10 || memcmp(file, "\x93NUMPY\x01\x00", 8) != 0) {
        die("%s is not a .npy file of version 1.0", path);
    }
    size_t header = (unsigned char)file[8] | (size_t)(unsigned char)file[9] << 8;
    if (10 + header > length) {
        die("%s: its header runs past its end", path);
    }
    char *text = strndup(file + 10, header);
    bool is_float = strstr(text, "'<f4'") != NULL;
    if (!is_float && strstr(text, "'<i8'") == NULL) {
        die("%s: neither <f4 nor <i8", path);
    }
    char *shape = strstr(text, "'shape': (");
    if (shape == NULL) {
        die("%s: no shape in its header", path);
    }
    shape += strlen("'shape': (");
    a->ndim = 0;
    a->n = 1;
    while (*shape != ')') {
        char *end;
        long s = strtol(shape, &end, 10);
        if (end == shape || a->ndim == MAX_DIMS) {
            die("%s: cannot read its shape", path);
        }
        a->size[a->ndim++] = s;
        a->n *= s;
        shape = end;
        while (*shape == ',' || *shape == ' ') {
            shape++;
        }
    }
    free(text);
    size_t item = is_float ? 4 : 8;
    if (10 + header + (size_t)a->n * item != length) {
        die("%s: %zu bytes, not the %ld values its shape says", path, length, a->n);
    }
    a->v = malloc((size_t)(a->n > 0 ? a->n : 1) * sizeof *a->v);
    const unsigned char *data = (const unsigned char *)file + 10 + header;
    for (long i = 0; i < a->n; i++) {
        if (is_float) {
            float x;
            memcpy(&x, data + 4 * i, 4);
            a->v[i] = x;
        } else {
            int64_t x;
            memcpy(&x, data + 8 * i, 8);
            a->v[i] = (double)x;
        }
    }
    free(file);
    return true;
}

static bool close_to(double yours, double expected) {
    if (isnan(expected) || isnan(yours)) {
        return isnan(expected) && isnan(yours);
    }
    if (isinf(expected) || isinf(yours)) {
        return yours == expected;
    }
    return fabs(yours - expected) <= 1e-4 + 1e-3 * fabs(expected);
}

static bool same_shape(const Array *a, const Array *b) {
    if (a->ndim != b->ndim) {
        return false;
    }
    for (int d = 0; d < a->ndim; d++) {
        if (a->size[d] != b->size[d]) {
            return false;
        }
    }
    return true;
}

static const char *shape_text(const Array *a) {
    static char text[2][128];
    static int which = 0;
    which ^= 1;
    int at = snprintf(text[which], sizeof text[which], "(");
    for (int d = 0; d < a->ndim; d++) {
        at += snprintf(text[which] + at, sizeof text[which] - (size_t)at, d ? ", %ld" : "%ld",
                       a->size[d]);
    }
    snprintf(text[which] + at, sizeof text[which] - (size_t)at, a->ndim == 1 ? ",)" : ")");
    return text[which];
}

// The first index where the two differ, or -1.
static long first_difference(const Array *expected, const Array *yours) {
    for (long i = 0; i < expected->n; i++) {
        if (!close_to(yours->v[i], expected->v[i])) {
            return i;
        }
    }
    return -1;
}

// --- the hints: tests of the reader's tensor against the lesson's -----------------------

// What a hint's test sees: the tensor that differs, the lesson's and the reader's, and
// where the runs dumped everything else.
typedef struct {
    const char *name;           // the tensor's name
    const Array *expected;      // the lesson's
    const Array *yours;         // the reader's (same shape)
    const char *expected_dir;   // the lesson's --dump folder
    const char *yours_dir;      // the reader's
    const char *printed;        // the reader's run's stdout
    const char *expected_printed;
    const char *flags;          // the run's flags
} Seen;

// Every value zero (or unchanged from the zeros the starting file returns).
bool all_zero(const Seen *s) {
    if (s->yours->n == 0) {
        return false;
    }
    for (long i = 0; i < s->yours->n; i++) {
        if (s->yours->v[i] != 0) {
            return false;
        }
    }
    return true;
}

// yours == factor * expected everywhere, for one factor far from 1 (returned in *factor).
static bool scaled(const Seen *s, double *factor) {
    double num = 0, den = 0;
    for (long i = 0; i < s->expected->n; i++) {
        num += s->yours->v[i] * s->expected->v[i];
        den += s->expected->v[i] * s->expected->v[i];
    }
    if (den == 0 || !isfinite(num)) {
        return false;
    }
    double f = num / den;
    if (fabs(f - 1) < 1e-3) {
        return false;
    }
    for (long i = 0; i < s->expected->n; i++) {
        if (!close_to(s->yours->v[i], f * s->expected->v[i])) {
            return false;
        }
    }
    *factor = f;
    return true;
}

bool scaled_up(const Seen *s) {
    double f;
    return scaled(s, &f) && f > 1;
}

bool scaled_down(const Seen *s) {
    double f;
    return scaled(s, &f) && f < 1;
}

// The last two dims swapped (square matrices).
bool transposed(const Seen *s) {
    const Array *e = s->expected, *y = s->yours;
    if (e->ndim < 2 || e->size[e->ndim - 1] != e->size[e->ndim - 2]) {
        return false;
    }
    long n = e->size[e->ndim - 1];
    for (long m = 0; m < e->n; m += n * n) {
        for (long i = 0; i < n; i++) {
            for (long j = 0; j < n; j++) {
                if (!close_to(y->v[m + i * n + j], e->v[m + j * n + i])) {
                    return false;
                }
            }
        }
    }
    return true;
}

// yours[..., i, j] == expected[..., i, j + shift] wherever both exist (dim = -1) or
// yours[..., i, j] == expected[..., i + shift, j] (dim = -2), and yours != expected.
static bool shifted(const Seen *s, int dim, int shift) {
    const Array *e = s->expected, *y = s->yours;
    if (e->ndim < 2) {
        return false;
    }
    long rows = e->size[e->ndim - 2], cols = e->size[e->ndim - 1];
    for (long m = 0; m < e->n; m += rows * cols) {
        for (long i = 0; i < rows; i++) {
            for (long j = 0; j < cols; j++) {
                long ei = dim == -2 ? i + shift : i, ej = dim == -1 ? j + shift : j;
                if (ei < 0 || ei >= rows || ej < 0 || ej >= cols) {
                    continue;
                }
                if (!close_to(y->v[m + i * cols + j], e->v[m + ei * cols + ej])) {
                    return false;
                }
            }
        }
    }
    return true;
}

bool shifted_left(const Seen *s) { return shifted(s, -1, 1); }
bool shifted_right(const Seen *s) { return shifted(s, -1, -1); }

// NaN in yours where the lesson has a number.
bool nan_where_number(const Seen *s) {
    for (long i = 0; i < s->expected->n; i++) {
        if (isnan(s->yours->v[i]) && !isnan(s->expected->v[i])) {
            return true;
        }
    }
    return false;
}

// yours equals another dumped tensor of the lesson's (its input, say): *other names it.
bool equals_dumped(const Seen *s, const char *other) {
    Array a;
    if (!load(&a, s->expected_dir, other)) {
        return false;
    }
    bool same = same_shape(&a, s->yours) && first_difference(&a, s->yours) < 0;
    free(a.v);
    return same;
}

// Each row (last dim) of yours sums to 1 but holds other numbers: a softmax over
// the wrong values; rows of yours not summing to 1: no normalisation.
bool rows_do_not_sum_to_one(const Seen *s) {
    const Array *y = s->yours;
    if (y->ndim == 0) {
        return false;
    }
    long n = y->size[y->ndim - 1];
    for (long m = 0; m < y->n; m += n) {
        double sum = 0;
        for (long j = 0; j < n; j++) {
            sum += y->v[m + j];
        }
        if (fabs(sum - 1) > 1e-3) {
            return true;
        }
    }
    return false;
}

// The printed output of the reader's run holds "nan" where the lesson's has none.
bool prints_more_nan(const Seen *s) {
    const char *a = s->printed, *b = s->expected_printed;
    int in_yours = 0, in_lessons = 0;
    for (const char *p = a; (p = strstr(p, "nan")) != NULL; p++) {
        in_yours++;
    }
    for (const char *p = b; (p = strstr(p, "nan")) != NULL; p++) {
        in_lessons++;
    }
    return in_yours > in_lessons;
}

// --- the exercises ------------------------------------------------------------------------

// When a hint's test is tried: on a tensor whose values differ, on one whose shape
// differs, or on a run that failed (the test then sees its stderr as `printed`).
enum { ON_VALUES, ON_SHAPE, ON_FAILURE };

typedef struct {
    bool (*matches)(const Seen *s);
    const char *text;
    int when;   // ON_VALUES, ON_SHAPE or ON_FAILURE
} Hint;

// A test that always holds: for the hint a failed run gets.
bool always(const Seen *s) {
    (void)s;
    return true;
}

#define MAX_RUNS 6
#define MAX_TENSORS 12
#define MAX_HINTS 8

typedef struct {
    int lesson;
    const char *function;                 // what the reader writes
    const char *runs[MAX_RUNS];           // flag sets ("" is the defaults)
    const char *tensors[MAX_TENSORS];     // the dumped tensors it affects, in order
                                          // (each dumped by at least one run)
    const char *printed;                  // NULL: stdout is not compared; else it is,
                                          // number by number, but for lines that both
                                          // hold this text (rounding's own measures;
                                          // "" compares every line)
    Hint hints[MAX_HINTS];                // the first that matches is given
} Exercise;

// The table: each exercise's runs, tensors and hints, and the tests only one
// exercise uses, beside it.
#include "exercise_table.h"

// --- running a lesson ---------------------------------------------------------------------

#define TIMEOUT_SECONDS 120

typedef struct {
    int status;      // as waitpid gives it
    bool timed_out;
} Ran;

// Run PROGRAM with FLAGS (split at spaces) and --dump DIR, stdout to OUT, stderr to ERR.
static Ran run(const char *program, const char *flags, const char *dir, const char *out,
               const char *err) {
    char *copy = strdup(flags);
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)program;
    for (char *word = strtok(copy, " "); word != NULL && argc < 60; word = strtok(NULL, " ")) {
        argv[argc++] = word;
    }
    argv[argc++] = "--dump";
    argv[argc++] = (char *)dir;
    argv[argc] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        die("fork: %s", strerror(errno));
    }
    if (pid == 0) {
        if (freopen(out, "w", stdout) == NULL || freopen(err, "w", stderr) == NULL) {
            _exit(127);
        }
        alarm(TIMEOUT_SECONDS);   // survives exec: the run is killed by SIGALRM
        execv(program, argv);
        fprintf(stderr, "cannot run %s: %s\n", program, strerror(errno));
        _exit(127);
    }
    Ran ran = {0, false};
    while (waitpid(pid, &ran.status, 0) < 0) {
        if (errno != EINTR) {
            die("waitpid: %s", strerror(errno));
        }
    }
    ran.timed_out = WIFSIGNALED(ran.status) && WTERMSIG(ran.status) == SIGALRM;
    free(copy);
    return ran;
}

static void remove_dir(const char *dir) {
    char command[4200];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    if (system(command) != 0) {
        fprintf(stderr, "exercise: could not remove %s\n", dir);
    }
}

// The sanitizer's or the crash's first words, and the first line of its report
// that names a file under exercises/ (the reader's), printed.
static void name_the_crash(const char *err_text) {
    const char *error = strstr(err_text, "ERROR: AddressSanitizer");
    if (error == NULL) {
        error = strstr(err_text, "runtime error:");
    }
    if (error == NULL) {
        error = strstr(err_text, "ERROR: ");
    }
    if (error != NULL) {
        int length = (int)strcspn(error, "\n");
        const char *address = strstr(error, " on address");   // ASan's addresses: noise here
        if (address != NULL && address - error < length) {
            length = (int)(address - error);
        }
        printf("  %.*s\n", length > 200 ? 200 : length, error);
    } else {
        // Not a sanitizer: the program's own last line on stderr (a failed check of the
        // lesson's, for instance), if any.
        const char *last = NULL;
        for (const char *p = err_text; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != '\0')) {
            if (*p != '\n') {
                last = p;
            }
        }
        if (last != NULL) {
            printf("  it said: %.*s\n", (int)strcspn(last, "\n"), last);
        }
    }
    const char *yours = strstr(err_text, "exercises/");
    if (yours != NULL) {
        const char *line = yours;
        while (line > err_text && line[-1] != '\n') {
            line--;
        }
        int length = (int)strcspn(line, "\n");
        const char *in = strstr(line, " in ");   // "    #0 0x55ce59fc6b65 in f file:line"
        if (in != NULL && in < yours) {
            length -= (int)(in + 4 - line);
            line = in + 4;
        }
        printf("  in your code: %.*s\n", length, line);
    }
}

// --- comparing the printed output ----------------------------------------------------------

// The next token of a line: a run of characters other than spaces and brackets.
static const char *next_token(const char *p, int *length) {
    while (*p == ' ' || *p == '[' || *p == ']' || *p == '(' || *p == ')' || *p == ',') {
        p++;
    }
    *length = (int)strcspn(p, " [](),\n");
    return p;
}

// Two printed tokens agree: the same text, or two numbers with a decimal point that
// differ by at most one unit of their last printed digit (a reader's float may round
// the last digit the other way), plus a millionth. Numbers without a decimal after the
// point ("1.", PyTorch's whole floats), without a point (counts, indices) and words
// must be the same text.
static bool same_token(const char *a, int la, const char *b, int lb) {
    if (la == lb && memcmp(a, b, (size_t)la) == 0) {
        return true;
    }
    char ta[64], tb[64];
    if (la >= 64 || lb >= 64) {
        return false;
    }
    memcpy(ta, a, (size_t)la);
    ta[la] = '\0';
    memcpy(tb, b, (size_t)lb);
    tb[lb] = '\0';
    char *ea, *eb;
    double x = strtod(ta, &ea), y = strtod(tb, &eb);
    if (*ea != '\0' || *eb != '\0' || ea == ta || eb == tb) {
        return false;
    }
    if (isnan(x) || isnan(y) || isinf(x) || isinf(y)) {
        return false;   // the same text was the only way to agree
    }
    const char *point = strchr(ta, '.');
    if (point == NULL || strchr(tb, '.') == NULL) {
        return false;
    }
    int decimals = (int)strspn(point + 1, "0123456789");
    if (decimals == 0) {
        return false;   // "1." and "0.": whole numbers, printed exactly
    }
    const char *e = strpbrk(ta, "eE");
    double unit = pow(10.0, -decimals) * (e != NULL ? pow(10.0, atof(e + 1)) : 1.0);
    return fabs(x - y) <= 1.01 * unit + 1e-6 * fabs(x);
}

// Line by line; the first line that differs in text or beyond rounding in a number
// (its number in *line_number, 1-based; the two lines in *expected, *yours), or false.
static bool printed_differ(const char *expected_text, const char *yours_text, const char *skip,
                           int *line_number, const char **expected, const char **yours) {
    const char *a = expected_text, *b = yours_text;
    for (int line = 1; *a != '\0' || *b != '\0'; line++) {
        const char *end_a = a + strcspn(a, "\n"), *end_b = b + strcspn(b, "\n");
        const char *p = a, *q = b;
        bool same = true;
        if (skip[0] != '\0') {   // both lines hold `skip`: not compared
            const char *in_a = strstr(a, skip), *in_b = strstr(b, skip);
            same = !(in_a != NULL && in_a < end_a && in_b != NULL && in_b < end_b);
            if (!same) {
                same = true;
                a = *end_a ? end_a + 1 : end_a;
                b = *end_b ? end_b + 1 : end_b;
                continue;
            }
        }
        while (same) {
            int lp, lq;
            p = next_token(p, &lp);
            q = next_token(q, &lq);
            if (p >= end_a || q >= end_b) {
                same = p >= end_a && q >= end_b;
                break;
            }
            same = same_token(p, lp, q, lq);
            p += lp;
            q += lq;
        }
        if (!same) {
            *line_number = line;
            *expected = a;
            *yours = b;
            return true;
        }
        a = *end_a ? end_a + 1 : end_a;
        b = *end_b ? end_b + 1 : end_b;
    }
    return false;
}

// --- the check ----------------------------------------------------------------------------

static const char *index_text(const Array *a, long flat) {
    static char text[128];
    long index[MAX_DIMS];
    for (int d = a->ndim - 1; d >= 0; d--) {
        index[d] = a->size[d] ? flat % a->size[d] : 0;
        flat = a->size[d] ? flat / a->size[d] : 0;
    }
    int at = snprintf(text, sizeof text, "[");
    for (int d = 0; d < a->ndim; d++) {
        at += snprintf(text + at, sizeof text - (size_t)at, d ? ", %ld" : "%ld", index[d]);
    }
    snprintf(text + at, sizeof text - (size_t)at, "]");
    return text;
}

static const char *flags_text(const char *flags) {
    return flags[0] ? flags : "(the defaults)";
}

// "  hint: TEXT", broken between words into lines of at most 90 columns.
static void print_hint(const char *text) {
    printf("  hint:");
    int column = 7;
    while (*text != '\0') {
        int word = (int)strcspn(text, " ");
        if (column + 1 + word > 90) {
            printf("\n       ");
            column = 7;
        }
        printf(" %.*s", word, text);
        column += 1 + word;
        text += word;
        text += strspn(text, " ");
    }
    printf("\n");
}

static void give_hint(const Exercise *ex, const Seen *seen, int when) {
    for (int h = 0; h < MAX_HINTS && ex->hints[h].matches != NULL; h++) {
        if (ex->hints[h].when == when && ex->hints[h].matches(seen)) {
            print_hint(ex->hints[h].text);
            return;
        }
    }
}

// Printed under the first line of a report when the reader's file is the starting one.
static char starting_note[4300];

// How many of the reader's tensors were also compared with PyTorch's recorded values.
static int torch_compared = 0;

// The folder of PyTorch's recorded run of lesson N with these flags, in `dir`, or false.
// tests/data/lessonNN/cases.txt lists the recorded runs, one a line: the folder, its
// sizes as name=value, then the lesson's flags (none for the defaults); lesson 1's one
// run is the folder itself. "--kernels scalar" changes no number and is not matched.
static bool recorded_run(char *dir, size_t size, int lesson, const char *flags) {
    char wanted[1024], path[4096];
    const char *kernels = strstr(flags, "--kernels scalar");
    if (kernels != NULL) {
        snprintf(wanted, sizeof wanted, "%.*s%s", (int)(kernels - flags), flags,
                 kernels + strlen("--kernels scalar"));
    } else {
        snprintf(wanted, sizeof wanted, "%s", flags);
    }
    char squeezed[1024];   // single spaces, none at either end
    int n = 0;
    for (const char *c = wanted; *c != '\0' && n < (int)sizeof squeezed - 1; c++) {
        if (*c != ' ' || (n > 0 && squeezed[n - 1] != ' ')) {
            squeezed[n++] = *c;
        }
    }
    while (n > 0 && squeezed[n - 1] == ' ') {
        n--;
    }
    squeezed[n] = '\0';
    snprintf(path, sizeof path, "tests/data/lesson%02d/cases.txt", lesson);
    size_t length;
    char *cases = read_all(path, &length);
    if (cases == NULL) {
        snprintf(dir, size, "tests/data/lesson%02d", lesson);
        snprintf(path, sizeof path, "tests/data/lesson%02d/stdout.txt", lesson);
        return squeezed[0] == '\0' && access(path, R_OK) == 0;
    }
    bool found = false;
    for (char *line = strtok(cases, "\n"); !found && line != NULL; line = strtok(NULL, "\n")) {
        if (line[0] == '#') {
            continue;
        }
        const char *line_flags = strstr(line, " --");
        line_flags = line_flags != NULL ? line_flags + 1 : "";
        if (strcmp(line_flags, squeezed) == 0) {
            snprintf(dir, size, "tests/data/lesson%02d/%.*s", lesson, (int)strcspn(line, " "),
                     line);
            found = true;
        }
    }
    free(cases);
    return found;
}

// The exercise's tensors of the reader's run against PyTorch's recorded ones, where the
// run is a recorded one and the tensor was recorded: true when all agree; *compared
// counts those compared. The first that does not is reported.
static bool against_pytorch(const Exercise *ex, const char *flags, const char *yours_dir,
                            int *compared) {
    char dir[4096];
    if (!recorded_run(dir, sizeof dir, ex->lesson, flags)) {
        return true;
    }
    for (int t = 0; t < MAX_TENSORS && ex->tensors[t] != NULL; t++) {
        Array torch, y;
        if (!load(&torch, dir, ex->tensors[t])) {
            continue;
        }
        if (!load(&y, yours_dir, ex->tensors[t])) {
            free(torch.v);
            continue;
        }
        long i = same_shape(&torch, &y) ? first_difference(&torch, &y) : -2;
        if (i == -1) {
            (*compared)++;
        } else if (i >= 0) {
            printf("exercise %d: wrong: %s %s differs from PyTorch's recorded value (%s)\n"
                   "  run with: %s\n", ex->lesson, ex->tensors[t], shape_text(&torch), dir,
                   flags_text(flags));
            printf("%s", starting_note);
            printf("  at %s: PyTorch's value %.6g, yours %.6g\n", index_text(&torch, i),
                   torch.v[i], y.v[i]);
        }
        free(torch.v);
        free(y.v);
        if (i >= 0) {
            return false;
        }
    }
    return true;
}

// Which of the exercise's tensors the lesson dumped with at least one flag set (a run
// may dump only some: lesson 18's experiments dump other tensors than one model's run).
static bool tensor_compared[MAX_TENSORS];

// Lesson N's check with one flag set; true when everything agrees.
static bool check_run(const Exercise *ex, const char *lesson, const char *exercise,
                      const char *flags, const char *work, const char *log) {
    char expected_dir[4096], yours_dir[4096], out_e[4096], out_y[4096], err_e[4096], err_y[4096];
    snprintf(expected_dir, sizeof expected_dir, "%s/lesson", work);
    snprintf(yours_dir, sizeof yours_dir, "%s/yours", work);
    snprintf(out_e, sizeof out_e, "%s/lesson.out", work);
    snprintf(out_y, sizeof out_y, "%s/yours.out", work);
    snprintf(err_e, sizeof err_e, "%s/lesson.err", work);
    snprintf(err_y, sizeof err_y, "%s", log);
    Ran ran_e = run(lesson, flags, expected_dir, out_e, err_e);
    if (!WIFEXITED(ran_e.status) || WEXITSTATUS(ran_e.status) != 0) {
        die("%s %s did not run (see %s)", lesson, flags, err_e);
    }
    Ran ran_y = run(exercise, flags, yours_dir, out_y, err_y);
    size_t length;
    char *err_text = read_all(err_y, &length);
    if (err_text == NULL) {
        err_text = strdup("");
    }
    if (!WIFEXITED(ran_y.status) || WEXITSTATUS(ran_y.status) != 0) {
        printf("exercise %d: with your %s, the lesson ", ex->lesson, ex->function);
        if (ran_y.timed_out) {
            printf("did not finish in %d s (a loop that does not end?)", TIMEOUT_SECONDS);
        } else if (WIFSIGNALED(ran_y.status)) {
            printf("crashed (signal %d, %s)", WTERMSIG(ran_y.status),
                   strsignal(WTERMSIG(ran_y.status)));
        } else if (strstr(err_text, "Sanitizer") != NULL ||
                   strstr(err_text, "runtime error") != NULL) {
            printf("was stopped by a sanitizer");
        } else {
            printf("stopped with exit status %d", WEXITSTATUS(ran_y.status));
        }
        printf("\n  run with: %s\n", flags_text(flags));
        printf("%s", starting_note);
        name_the_crash(err_text);
        Array none = {0, {0}, 0, NULL};
        Seen seen = {"the run", &none, &none, "", "", err_text, "", flags};
        give_hint(ex, &seen, ON_FAILURE);
        printf("  the whole report: %s\n", log);
        free(err_text);
        return false;
    }
    free(err_text);
    char *printed_e = read_all(out_e, &length);
    char *printed_y = read_all(out_y, &length);
    if (printed_e == NULL || printed_y == NULL) {
        die("cannot read the runs' output in %s", work);
    }
    bool right = true;
    for (int t = 0; right && t < MAX_TENSORS && ex->tensors[t] != NULL; t++) {
        const char *name = ex->tensors[t];
        Array e, y;
        if (!load(&e, expected_dir, name)) {
            continue;   // not dumped with these flags (each must be with some: main checks)
        }
        tensor_compared[t] = true;
        if (!load(&y, yours_dir, name)) {
            printf("exercise %d: with your %s the lesson dumps no %s\n  run with: %s\n", ex->lesson,
                   ex->function, name, flags_text(flags));
            printf("%s", starting_note);
            free(e.v);
            right = false;
            break;
        }
        if (!same_shape(&e, &y)) {
            printf("exercise %d: wrong: %s has the shape %s, not %s\n  run with: %s\n", ex->lesson,
                   name, shape_text(&y), shape_text(&e), flags_text(flags));
            printf("%s", starting_note);
            Seen seen = {name, &e, &y, expected_dir, yours_dir, printed_y, printed_e, flags};
            give_hint(ex, &seen, ON_SHAPE);
            right = false;
        } else {
            long i = first_difference(&e, &y);
            if (i >= 0) {
                printf("exercise %d: wrong: the first tensor that differs is %s %s\n"
                       "  run with: %s\n",
                       ex->lesson, name, shape_text(&e), flags_text(flags));
                printf("%s", starting_note);
                printf("  at %s: the lesson's value %.6g, yours %.6g\n", index_text(&e, i), e.v[i],
                       y.v[i]);
                Seen seen = {name, &e, &y, expected_dir, yours_dir, printed_y, printed_e, flags};
                give_hint(ex, &seen, ON_VALUES);
                right = false;
            }
        }
        free(e.v);
        free(y.v);
    }
    int line;
    const char *line_e, *line_y;
    if (right && ex->printed != NULL &&
        printed_differ(printed_e, printed_y, ex->printed, &line, &line_e, &line_y)) {
        printf("exercise %d: wrong: what the lesson prints differs at line %d\n  run with: %s\n",
               ex->lesson, line, flags_text(flags));
        printf("%s", starting_note);
        printf("  the lesson's: %.*s\n  yours:        %.*s\n", (int)strcspn(line_e, "\n"), line_e,
               (int)strcspn(line_y, "\n"), line_y);
        Array none = {0, {0}, 0, NULL};
        Seen seen = {"the printed output", &none, &none, expected_dir, yours_dir, printed_y,
                     printed_e, flags};
        give_hint(ex, &seen, ON_VALUES);
        right = false;
    }
    if (right) {
        right = against_pytorch(ex, flags, yours_dir, &torch_compared);
    }
    free(printed_e);
    free(printed_y);
    remove_dir(expected_dir);
    remove_dir(yours_dir);
    return right;
}

// Is the file at `path` byte for byte the starting file of lesson N's exercise, kept
// as tests/exercises/NN-start.c? (Run from the repository's top, as make does.)
static bool is_starting_file(const char *path, int lesson) {
    char start[64];
    snprintf(start, sizeof start, "tests/exercises/%02d-start.c", lesson);
    size_t length_a, length_b;
    char *a = read_all(path, &length_a), *b = read_all(start, &length_b);
    bool same = a != NULL && b != NULL && length_a == length_b && memcmp(a, b, length_a) == 0;
    free(a);
    free(b);
    return same;
}

int main(int argc, char **argv) {
    if (argc < 5 || argc > 6) {
        fprintf(stderr, "usage: exercise N LESSON EXERCISE_BUILD SOURCE [LOG]\n");
        return 2;
    }
    char *end;
    long number = strtol(argv[1], &end, 10);
    const Exercise *ex = NULL;
    for (size_t i = 0; i < sizeof EXERCISES / sizeof EXERCISES[0]; i++) {
        if (*end == '\0' && EXERCISES[i].lesson == number) {
            ex = &EXERCISES[i];
        }
    }
    if (ex == NULL) {
        fprintf(stderr, "exercise: lesson '%s' has no write-it exercise\n", argv[1]);
        return 2;
    }
    for (int i = 2; i <= 3; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0 || !S_ISREG(st.st_mode) || access(argv[i], X_OK) != 0) {
            die("cannot run %s: not a program", argv[i]);
        }
    }
    // Both builds print the same lines: no times measured (lesson 19's part 7 leaves them out).
    setenv("ATTN_NO_TIMING", "1", 1);
    char log[4096];
    snprintf(log, sizeof log, "%s", argc == 6 ? argv[5] : "");
    if (argc < 6) {
        snprintf(log, sizeof log, "%s.log", argv[3]);
    }
    char work[] = "/tmp/attn-exercise-XXXXXX";
    if (mkdtemp(work) == NULL) {
        die("mkdtemp: %s", strerror(errno));
    }
    if (is_starting_file(argv[4], ex->lesson)) {
        bool two = strstr(ex->function, " and ") != NULL;   // lesson 18's two functions
        snprintf(starting_note, sizeof starting_note, "  note: %s is still the starting file:\n"
                 "        the %s of %s %s yours to write\n", argv[4], two ? "bodies" : "body",
                 ex->function, two ? "are" : "is");
    }
    bool right = true;
    for (int r = 0; right && r < MAX_RUNS && ex->runs[r] != NULL; r++) {
        right = check_run(ex, argv[2], argv[3], ex->runs[r], work, log);
    }
    remove_dir(work);
    for (int t = 0; right && t < MAX_TENSORS && ex->tensors[t] != NULL; t++) {
        if (!tensor_compared[t]) {
            die("lesson %d dumps no %s with any of the exercise's flag sets", ex->lesson,
                ex->tensors[t]);
        }
    }
    if (right) {
        printf("exercise %d: right\n  with your %s the lesson gives its own tensors and "
               "output with:\n", ex->lesson, ex->function);
        for (int r = 0; r < MAX_RUNS && ex->runs[r] != NULL; r++) {
            printf("    %s\n", flags_text(ex->runs[r]));
        }
        if (torch_compared > 0) {
            printf("  and %d of its tensors are PyTorch's recorded ones (tests/data/lesson%02d)\n",
                   torch_compared, ex->lesson);
        }
    }
    return right ? 0 : 1;
}
