// lesson.c - the shared command line, and the files --dump and --dot write.
#define _POSIX_C_SOURCE 200809L
#include "lesson.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arena.h"
#include "error.h"
#include "files.h"
#include "graph.h"
#include "npy.h"
#include "rng.h"
#include "trace.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif
#ifndef NAME_MAX
#define NAME_MAX 255
#endif

// --- messages -------------------------------------------------------------------

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

// An argument as it is safe to echo in a one-line message: control
// characters spelled out (a newline as \n, others as \xNN), so the message
// stays one line, and at most 60 bytes of it, then "..." (never cutting a
// UTF-8 character in two).
static const char *shown(const char *arg) {
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

static void print_help(const Lesson *lesson) {
    printf("usage: %s [flags]\n%s\n\nflags:\n", lesson->program, lesson->summary);
    char text[256];
    for (int i = 0; i < lesson->n_sizes; i++) {
        const SizeFlag *f = &lesson->sizes[i];
        snprintf(text, sizeof text, "%s (default %d)", f->help, *f->value);
        help_line(f->flag, "N", text);
    }
    for (int i = 0; i < lesson->n_ints; i++) {
        const IntFlag *f = &lesson->ints[i];
        snprintf(text, sizeof text, "%s (default %d)", f->help, *f->value);
        help_line(f->flag, "N", text);
    }
    for (int i = 0; i < lesson->n_probabilities; i++) {
        const ProbabilityFlag *f = &lesson->probabilities[i];
        snprintf(text, sizeof text, "%s (default %g)", f->help, *f->value);
        help_line(f->flag, "P", text);
    }
    for (int i = 0; i < lesson->n_choices; i++) {
        const ChoiceFlag *f = &lesson->choices[i];
        snprintf(text, sizeof text, "%s (default %s)", f->help, *f->value);
        help_line(f->flag, "WORD", text);
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

// --- reading values -----------------------------------------------------------------

// The word after a flag, or a usage error if there is none.
static const char *value_of(const Lesson *lesson, int argc, char **argv, int i,
                            const char *expected) {
    if (i + 1 >= argc || argv[i + 1][0] == '\0' ||
        (argv[i + 1][0] == '-' && argv[i + 1][1] == '-')) {
        usage_error(lesson, "%s expects %s after it", argv[i], expected);
    }
    return argv[i + 1];
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

// A probability: digits with at most one '.', at least one digit, value < 1.
static double parse_probability(const Lesson *lesson, const char *flag, const char *text) {
    int digits = 0, dots = 0;
    bool ok = true;
    for (const char *c = text; *c != '\0'; c++) {
        if (*c >= '0' && *c <= '9') {
            digits += 1;
        } else if (*c == '.') {
            dots += 1;
        } else {
            ok = false;
        }
    }
    double value = ok && digits > 0 && dots <= 1 ? strtod(text, NULL) : -1.0;
    if (!(value >= 0.0 && value < 1.0)) {
        usage_error(lesson, "%s expects a probability from 0 to below 1 (such as 0.1), got '%s'",
                    flag, shown(text));
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

// --- the flags -------------------------------------------------------------------------

// If argv[i] is one of the lesson's own flags, read it (and its value) and
// return how many words it took; otherwise return 0.
static int lesson_flag(Lesson *lesson, int argc, char **argv, int i) {
    const char *arg = argv[i];
    for (int f = 0; f < lesson->n_sizes; f++) {
        if (strcmp(arg, lesson->sizes[f].flag) == 0) {
            const char *text = value_of(lesson, argc, argv, i, "a whole number");
            *lesson->sizes[f].value = parse_int(lesson, arg, text, 1, MAX_SIZE_FLAG);
            return 2;
        }
    }
    for (int f = 0; f < lesson->n_ints; f++) {
        const IntFlag *flag = &lesson->ints[f];
        if (strcmp(arg, flag->flag) == 0) {
            const char *text = value_of(lesson, argc, argv, i, "a whole number");
            *flag->value = parse_int(lesson, arg, text, flag->min, flag->max);
            return 2;
        }
    }
    for (int f = 0; f < lesson->n_probabilities; f++) {
        if (strcmp(arg, lesson->probabilities[f].flag) == 0) {
            const char *text = value_of(lesson, argc, argv, i, "a probability");
            *lesson->probabilities[f].value = parse_probability(lesson, arg, text);
            return 2;
        }
    }
    for (int f = 0; f < lesson->n_choices; f++) {
        if (strcmp(arg, lesson->choices[f].flag) == 0) {
            const char *text = value_of(lesson, argc, argv, i, "a word");
            *lesson->choices[f].value = parse_choice(lesson, &lesson->choices[f], text);
            return 2;
        }
    }
    for (int f = 0; f < lesson->n_switches; f++) {
        if (strcmp(arg, lesson->switches[f].flag) == 0) {
            *lesson->switches[f].value = true;
            return 1;
        }
    }
    return 0;
}

// When the program exits, whether by lesson_finish, a usage error or
// fail(): undo what an unfinished run made on disk, and free what the arena
// and --dump hold (valgrind then sees no leaks).
static void release_all_at_exit(void);

void parse_lesson_args(Lesson *lesson, int argc, char **argv) {
    release_all_at_exit();
    lesson->seed = 0;
    lesson->dump_dir = NULL;
    lesson->dot_file = NULL;
    lesson->heatmap = false;
    for (int i = 0; i < lesson->n_switches; i++) {
        *lesson->switches[i].value = false;
    }
    // The flags read so far. An unknown flag ends the program, so this
    // holds each known flag at most once and stays short.
    const char **seen = arena_alloc((size_t)argc, sizeof *seen);
    int n_seen = 0;
    int i = 1;
    while (i < argc) {
        const char *arg = argv[i];
        for (int s = 0; s < n_seen; s++) {   // a flag given twice is a mistake, not an override
            if (strcmp(arg, seen[s]) == 0) {
                usage_error(lesson, "%s is given twice", arg);
            }
        }
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
        } else {
            used = lesson_flag(lesson, argc, argv, i);
            if (used == 0) {
                usage_error(lesson, "unknown flag '%s' (try --help)", shown(arg));
            }
        }
        seen[n_seen++] = arg;
        i += used;
    }
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

// --- where --dump and --dot write -----------------------------------------------------

// What this run has made on disk: the directories --dump created (innermost
// last) and the files lesson_finish has written. Until lesson_finish is
// done, release_all removes them when the program ends, so a run that is
// refused (exit 2) or fails (exit 1) leaves nothing behind.
static const char *made_dirs[PATH_MAX / 2];   // more than a path of PATH_MAX can name
static int n_made_dirs = 0;
static const char **written = NULL;
static int n_written = 0;

static void undo_outputs(void) {
    while (n_written > 0) {
        n_written -= 1;
        unlink(written[n_written]);
    }
    while (n_made_dirs > 0) {
        n_made_dirs -= 1;
        rmdir(made_dirs[n_made_dirs]);
    }
}

// The path without trailing slashes and without a leading "./", for
// comparing two spellings of the same relative path ("out/" and "./out").
static const char *plain_path(const char *path) {
    while (path[0] == '.' && path[1] == '/') {
        path += 2;
    }
    size_t length = strlen(path);
    while (length > 1 && path[length - 1] == '/') {
        length -= 1;
    }
    char *copy = arena_alloc(length + 1, 1);
    memcpy(copy, path, length);
    return copy;
}

// The directory part of a file path ("." for a bare name).
static const char *parent_of(const char *path) {
    const char *plain = plain_path(path);
    const char *slash = strrchr(plain, '/');
    if (slash == NULL) {
        return ".";
    }
    if (slash == plain) {
        return "/";
    }
    char *parent = arena_alloc((size_t)(slash - plain) + 1, 1);
    memcpy(parent, plain, (size_t)(slash - plain));
    return parent;
}

static bool is_directory(const char *path) {
    struct stat info;
    return stat(path, &info) == 0 && S_ISDIR(info.st_mode);
}

// Can a file be made in the directory? Try: make a temporary one (named
// as save_file names its own, so it is no longer than those), remove it.
// On false, errno says why.
static bool can_create_in(const char *dir) {
    char *probe = arena_alloc(strlen(dir) + 1 + sizeof SAVE_FILE_TEMPORARY, 1);
    sprintf(probe, "%s/%s", dir, SAVE_FILE_TEMPORARY);
    int fd = mkstemp(probe);
    if (fd < 0) {
        return false;
    }
    close(fd);
    unlink(probe);
    return true;
}

// Refuse a path the system could not take once something is added to it:
// longer than PATH_MAX with `extra` more characters after it, or a name in
// it (between slashes) longer than NAME_MAX, or its last name longer than
// NAME_MAX with `last_extra` more characters.
static void check_path_length(const Lesson *lesson, const char *flag, const char *path,
                              size_t extra, size_t last_extra) {
    size_t length = strlen(path);
    if (length + extra >= PATH_MAX) {
        usage_error(lesson, "%s: the path is %zu characters long, more than the %zu allowed", flag,
                    length, (size_t)PATH_MAX - extra - 1);
    }
    const char *name = path;   // where the current name starts
    for (const char *c = path;; c++) {
        if (*c == '/' || *c == '\0') {
            size_t limit = *c == '\0' ? NAME_MAX - last_extra : NAME_MAX;
            if ((size_t)(c - name) > limit) {
                usage_error(lesson, "%s: a name in the path is %zu characters long, more than "
                            "the %zu allowed", flag, (size_t)(c - name), limit);
            }
            name = c + 1;
        }
        if (*c == '\0') {
            break;
        }
    }
}

// mkdir -p: make each missing directory on the path, then check that a
// file can be written in the last one. If not: exit 2 (and release_all
// removes the directories made).
static void make_dump_dir(const Lesson *lesson, const char *dir) {
    // Room after the directory for "/<name>.npy" and save_file's temporary name.
    check_path_length(lesson, "--dump", dir, 1 + NAME_MAX, 0);
    size_t length = strlen(dir);
    for (size_t i = 1; i <= length; i++) {
        if (dir[i] != '/' && dir[i] != '\0') {
            continue;
        }
        char *partial = arena_alloc(i + 1, 1);
        memcpy(partial, dir, i);
        if (mkdir(partial, 0777) == 0) {
            made_dirs[n_made_dirs++] = partial;
        } else if (errno != EEXIST) {
            int error = errno;
            if (!is_directory(partial)) {   // some systems say EACCES or EROFS for one that exists
                usage_error(lesson, "--dump cannot create the directory '%s': %s",
                            shown(partial), strerror(error));
            }
        }
    }
    if (!is_directory(dir)) {
        usage_error(lesson, "--dump: '%s' is not a directory", shown(dir));
    }
    if (!can_create_in(dir)) {
        int error = errno;
        usage_error(lesson, "--dump cannot write in '%s': %s", shown(dir), strerror(error));
    }
}

// --dot's file must be a regular file (replaced at the end) or a new name.
// Anything else is refused: a directory cannot be replaced by a file, a
// FIFO would block the write, a device would take the graph elsewhere, and
// a symbolic link (dangling or not) would be replaced by a plain file, not
// written through. This check makes nothing, so it comes first.
static void check_dot_file(const Lesson *lesson, const char *file) {
    // save_file writes "<file>.tmp-XXXXXX" first: that name must fit too.
    size_t temporary = strlen(SAVE_FILE_TEMPORARY);
    check_path_length(lesson, "--dot", file, temporary, temporary);
    if (file[strlen(file) - 1] == '/') {
        usage_error(lesson, "--dot: '%s' ends in '/'; give a file name", shown(file));
    }
    if (lesson->dump_dir != NULL && strcmp(plain_path(file), plain_path(lesson->dump_dir)) == 0) {
        usage_error(lesson, "--dot and --dump both name '%s'", shown(file));
    }
    struct stat info;
    if (lstat(file, &info) == 0 && !S_ISREG(info.st_mode)) {
        usage_error(lesson, "--dot: '%s' is %s; give a regular file or a new name", shown(file),
                    S_ISDIR(info.st_mode) ? "a directory"
                    : S_ISLNK(info.st_mode) ? "a symbolic link" : "not a regular file");
    }
}

// After --dump made its directory: --dot's directory must exist now (it
// may be the one --dump made) and take a new file, and --dump must not
// have made --dot's path itself (one directory spelled two ways).
static void check_dot_directory(const Lesson *lesson, const char *file) {
    const char *parent = parent_of(file);
    if (!is_directory(parent)) {
        usage_error(lesson, "--dot cannot write '%s': no directory '%s'", shown(file),
                    shown(parent));
    }
    if (!can_create_in(parent)) {
        int error = errno;
        usage_error(lesson, "--dot cannot write '%s': %s", shown(file), strerror(error));
    }
    struct stat info;
    if (lstat(file, &info) == 0 && !S_ISREG(info.st_mode)) {
        usage_error(lesson, "--dot: '%s' is a directory that --dump makes; give a file name",
                    shown(file));
    }
}

// --- what --dump keeps -----------------------------------------------------------------

// Each named tensor's .npy bytes, taken when it was named (later changes to
// it, or the arena releasing it, do not matter), written by lesson_finish.
typedef struct {
    char *name;
    unsigned char *bytes;
    size_t length;
} Dump;

static Dump *dumps = NULL;
static int n_dumps = 0;
static int dumps_capacity = 0;

// "<name>.npy" and save_file's temporary name after it must fit NAME_MAX.
#define MAX_DUMP_NAME (NAME_MAX - (int)sizeof ".npy" + 1 - (int)sizeof SAVE_FILE_TEMPORARY + 1)

static void keep_dump(const char *name, const Tensor *t) {
    if (name[0] == '\0' || strchr(name, '/') != NULL || strlen(name) > (size_t)MAX_DUMP_NAME) {
        fail("named: '%s' cannot be a --dump file name (it must be 1 to %d characters, no '/')",
             shown(name), MAX_DUMP_NAME);
    }
    size_t length;
    unsigned char *bytes = npy_encode(&length, t);
    if (bytes == NULL) {
        fail("--dump: out of memory keeping '%s'", name);
    }
    for (int i = 0; i < n_dumps; i++) {
        if (strcmp(dumps[i].name, name) == 0) {   // named again: the later one wins
            free(dumps[i].bytes);
            dumps[i].bytes = bytes;
            dumps[i].length = length;
            return;
        }
    }
    if (n_dumps == dumps_capacity) {
        int capacity = dumps_capacity == 0 ? 32 : 2 * dumps_capacity;
        Dump *grown = realloc(dumps, (size_t)capacity * sizeof *grown);
        if (grown == NULL) {
            free(bytes);
            fail("--dump: out of memory keeping '%s'", name);
        }
        dumps = grown;
        dumps_capacity = capacity;
    }
    char *name_copy = malloc(strlen(name) + 1);
    if (name_copy == NULL) {
        free(bytes);
        fail("--dump: out of memory keeping '%s'", name);
    }
    strcpy(name_copy, name);
    dumps[n_dumps++] = (Dump){name_copy, bytes, length};
}

static void free_dumps(void) {
    for (int i = 0; i < n_dumps; i++) {
        free(dumps[i].name);
        free(dumps[i].bytes);
    }
    free(dumps);
    dumps = NULL;
    n_dumps = 0;
    dumps_capacity = 0;
}

// --- the run ------------------------------------------------------------------------------

static const Lesson *current = NULL;   // the running lesson, for its trace hook

static void lesson_trace(const TraceEvent *event) {
    if (current->dot_file != NULL) {
        graph_record(event);
    }
    if (current->dump_dir != NULL && event->name != NULL && strcmp(event->op, "named") == 0) {
        keep_dump(event->name, event->out);
    }
}

static void release_all(void) {
    undo_outputs();
    trace_set_hook(NULL);
    free_dumps();
    graph_clear();
    arena_free_all();
    current = NULL;
}

static void release_all_at_exit(void) {
    static bool registered = false;
    if (!registered) {
        atexit(release_all);
        registered = true;
    }
}

void lesson_start(Lesson *lesson) {
    release_all_at_exit();
    if (lesson->dot_file != NULL) {
        check_dot_file(lesson, lesson->dot_file);
    }
    if (lesson->dump_dir != NULL) {
        make_dump_dir(lesson, lesson->dump_dir);
    }
    if (lesson->dot_file != NULL) {
        check_dot_directory(lesson, lesson->dot_file);
    }
    current = lesson;
    if (lesson->dot_file != NULL || lesson->dump_dir != NULL) {
        graph_clear();
        trace_set_hook(lesson_trace);
    }
    manual_seed(lesson->seed);
}

// Write one file of the run's output, or fail() (exit 1; release_all then
// removes what this run wrote and made).
static void write_output(const char *flag, const char *path, const void *bytes, size_t length) {
    if (!save_file(path, bytes, length)) {
        int error = errno;
        fail("%s: cannot write '%s': %s", flag, shown(path), strerror(error));
    }
    written[n_written++] = path;
}

// The recorded graph as dot text (an arena string).
static const char *graph_text(const char *title, size_t *length) {
    char *text = NULL;
    FILE *stream = open_memstream(&text, length);
    if (stream == NULL) {
        fail("--dot: out of memory");
    }
    graph_write(stream, title);
    fclose(stream);
    char *copy = arena_alloc(*length + 1, 1);
    memcpy(copy, text, *length);
    free(text);
    return copy;
}

int lesson_finish(Lesson *lesson) {
    trace_set_hook(NULL);
    written = arena_alloc((size_t)n_dumps + 1, sizeof *written);
    for (int i = 0; lesson->dump_dir != NULL && i < n_dumps; i++) {
        const char *dir = lesson->dump_dir;
        char *path = arena_alloc(strlen(dir) + strlen(dumps[i].name) + sizeof "/.npy", 1);
        sprintf(path, "%s/%s.npy", dir, dumps[i].name);
        write_output("--dump", path, dumps[i].bytes, dumps[i].length);
    }
    if (lesson->dot_file != NULL) {
        size_t length;
        const char *text = graph_text(lesson->summary, &length);
        write_output("--dot", lesson->dot_file, text, length);
    }
    // All written: the files and directories are the run's output now.
    n_written = 0;
    n_made_dirs = 0;
    release_all();
    return 0;
}
