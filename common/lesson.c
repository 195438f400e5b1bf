// lesson.c - the shared command line, --dump and --dot.
#define _POSIX_C_SOURCE 200809L
#include "lesson.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arena.h"
#include "error.h"
#include "graph.h"
#include "npy.h"
#include "rng.h"

static const Lesson *current = NULL;   // the running lesson, for named()

_Noreturn void usage_error(const Lesson *lesson, const char *format, ...) {
    fflush(stdout);
    fprintf(stderr, "%s: ", lesson->program);
    va_list args;
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fprintf(stderr, "\n");
    exit(2);
}

// One line of --help: the flag and its value, then what it does, in columns.
static void help_line(const char *flag, const char *value, const char *text) {
    char left[48];
    snprintf(left, sizeof left, "%s %s", flag, value);
    printf("  %-16s %s\n", left, text);
}

static void print_help(const Lesson *lesson) {
    printf("usage: %s [flags]\n%s\n\nflags:\n", lesson->program, lesson->summary);
    for (int i = 0; i < lesson->n_sizes; i++) {
        char text[160];
        snprintf(text, sizeof text, "%s (default %d)", lesson->sizes[i].help,
                 *lesson->sizes[i].value);
        help_line(lesson->sizes[i].flag, "N", text);
    }
    for (int i = 0; i < lesson->n_switches; i++) {
        help_line(lesson->switches[i].flag, "", lesson->switches[i].help);
    }
    help_line("--seed", "N", "PyTorch seed: torch.manual_seed(N) (default 0)");
    help_line("--dump", "DIR", "write each named tensor as DIR/<name>.npy");
    help_line("--dot", "FILE", "write the dataflow as a Graphviz graph");
    help_line("--heatmap", "", "draw the attention weights as shaded grids");
    help_line("--help", "", "this text");
}

// The word after a flag, or a usage error if there is none.
static const char *value_of(const Lesson *lesson, int argc, char **argv, int i,
                            const char *expected) {
    if (i + 1 >= argc || argv[i + 1][0] == '\0' ||
        (argv[i + 1][0] == '-' && argv[i + 1][1] == '-')) {
        usage_error(lesson, "%s expects %s after it", argv[i], expected);
    }
    return argv[i + 1];
}

// --seed takes any 64-bit integer; a negative one becomes 2^64 + N, as
// Python passes it to torch.manual_seed.
static uint64_t parse_seed(const Lesson *lesson, const char *text) {
    char *end;
    errno = 0;
    uint64_t seed;
    if (text[0] == '-') {
        long long negative = strtoll(text, &end, 10);
        seed = (uint64_t)negative;
    } else {
        seed = strtoull(text, &end, 10);
    }
    if (*end != '\0' || end == text || errno == ERANGE || text[0] == '+' ||
        (text[0] != '-' && (text[0] < '0' || text[0] > '9'))) {
        usage_error(lesson, "--seed expects an integer from -2^63 to 2^64-1, got '%s'", text);
    }
    return seed;
}

static int parse_size(const Lesson *lesson, const char *flag, const char *text) {
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (*end != '\0' || end == text || errno == ERANGE || value < 1 || value > MAX_SIZE_FLAG ||
        text[0] < '0' || text[0] > '9') {
        usage_error(lesson, "%s expects a whole number from 1 to %d, got '%s'", flag,
                    MAX_SIZE_FLAG, text);
    }
    return (int)value;
}

// Returns true if argv[i] was one of the lesson's size or switch flags;
// *used tells how many words it took.
static bool lesson_flag(const Lesson *lesson, int argc, char **argv, int i, int *used) {
    for (int f = 0; f < lesson->n_sizes; f++) {
        if (strcmp(argv[i], lesson->sizes[f].flag) == 0) {
            const char *text = value_of(lesson, argc, argv, i, "a whole number");
            *lesson->sizes[f].value = parse_size(lesson, argv[i], text);
            *used = 2;
            return true;
        }
    }
    for (int f = 0; f < lesson->n_switches; f++) {
        if (strcmp(argv[i], lesson->switches[f].flag) == 0) {
            *lesson->switches[f].value = true;
            *used = 1;
            return true;
        }
    }
    return false;
}

void parse_lesson_args(Lesson *lesson, int argc, char **argv) {
    lesson->seed = 0;
    lesson->dump_dir = NULL;
    lesson->dot_file = NULL;
    lesson->heatmap = false;
    for (int i = 0; i < lesson->n_switches; i++) {
        *lesson->switches[i].value = false;
    }
    int i = 1;
    while (i < argc) {
        const char *arg = argv[i];
        int used = 2;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_help(lesson);
            exit(0);
        } else if (strcmp(arg, "--seed") == 0) {
            lesson->seed = parse_seed(lesson, value_of(lesson, argc, argv, i, "an integer"));
        } else if (strcmp(arg, "--dump") == 0) {
            lesson->dump_dir = value_of(lesson, argc, argv, i, "a directory");
        } else if (strcmp(arg, "--heatmap") == 0) {
            lesson->heatmap = true;
            used = 1;
        } else if (strcmp(arg, "--dot") == 0) {
            lesson->dot_file = value_of(lesson, argc, argv, i, "a file name");
        } else if (!lesson_flag(lesson, argc, argv, i, &used)) {
            usage_error(lesson, "unknown flag '%s' (try --help)", arg);
        }
        i += used;
    }
}

void check_divides(const Lesson *lesson, const char *divisor_flag, int divisor,
                   const char *flag, int value) {
    if (value % divisor != 0) {
        usage_error(lesson, "%s %d does not divide %s %d", divisor_flag, divisor, flag, value);
    }
}

void check_fits(const Lesson *lesson, const char *what, double elements) {
    if (elements > (double)MAX_ELEMENTS) {
        usage_error(lesson, "these sizes make %s %.3g elements, more than the %ld allowed "
                    "(%ld MiB of floats); choose smaller sizes", what, elements, MAX_ELEMENTS,
                    MAX_ELEMENTS * (long)sizeof(float) >> 20);
    }
}

// mkdir -p: make each missing directory along the path.
static bool make_directories(const char *path) {
    char partial[4096];
    size_t length = strlen(path);
    if (length == 0 || length >= sizeof partial) {
        return false;
    }
    for (size_t i = 1; i <= length; i++) {
        if (path[i] == '/' || path[i] == '\0') {
            memcpy(partial, path, i);
            partial[i] = '\0';
            if (mkdir(partial, 0777) != 0 && errno != EEXIST) {
                return false;
            }
        }
    }
    struct stat info;
    return stat(path, &info) == 0 && S_ISDIR(info.st_mode);
}

// Can the file at `path` be written? Opening it to append leaves an
// existing file as it is, and a file made only for the try is removed.
static bool can_write(const char *path) {
    bool existed = access(path, F_OK) == 0;
    FILE *file = fopen(path, "a");
    if (file == NULL) {
        return false;
    }
    fclose(file);
    if (!existed) {
        remove(path);
    }
    return true;
}

// --dot is checked first because the check leaves nothing behind; so a
// refused --dot or --dump leaves no file and no directory.
void lesson_start(Lesson *lesson) {
    current = lesson;
    if (lesson->dot_file != NULL && !can_write(lesson->dot_file)) {
        usage_error(lesson, "--dot cannot write '%s': %s", lesson->dot_file, strerror(errno));
    }
    if (lesson->dump_dir != NULL && !make_directories(lesson->dump_dir)) {
        usage_error(lesson, "--dump cannot create the directory '%s': %s", lesson->dump_dir,
                    strerror(errno));
    }
    if (lesson->dot_file != NULL) {
        graph_start();   // lesson_finish writes the file
    }
    manual_seed(lesson->seed);
}

int lesson_finish(Lesson *lesson) {
    if (lesson->dot_file != NULL) {
        if (!graph_write(lesson->dot_file, lesson->summary)) {
            fail("cannot write the graph to '%s'", lesson->dot_file);
        }
        graph_clear();
    }
    arena_free_all();
    current = NULL;
    return 0;
}

Tensor *named(const char *name, Tensor *t) {
    size_t length = strlen(name) + 1;
    char *copy = arena_alloc(length, 1);
    memcpy(copy, name, length);
    t->name = copy;
    graph_name(t, copy);
    if (current != NULL && current->dump_dir != NULL) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.npy", current->dump_dir, name);
        if (!npy_write(path, t)) {
            fail("--dump: cannot write '%s': %s", path, strerror(errno));
        }
    }
    return t;
}
