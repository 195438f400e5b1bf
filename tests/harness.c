// harness.c - shared test support: run a suite, read recorded data,
// compare tensors, catch fail(), run a lesson program.
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

// --- running --------------------------------------------------------------------

int run_suite(Suite *suite) {
    // The lessons' budget (lesson/budget.h) as the tests expect it, whatever
    // the environment says; a test sets these around the runs that need them.
    unsetenv("ATTN_MAX_MIB");
    unsetenv("ATTN_MAX_SECONDS");
    unsetenv("ATTN_COST");
    // A lesson that times something in its default run (lesson 19's part 7) leaves the times
    // out, so that a run prints the same every time (test_docs, the fuzzer's comparisons); a
    // test that checks the timed lines unsets it around its run.
    setenv("ATTN_NO_TIMING", "1", 1);
    // --heatmap draws Unicode shades under a UTF-8 locale and ASCII otherwise
    // (lesson/heatmap.h): one locale for every run, so that what the pages
    // quote (the Unicode shades) is checked the same on every machine.
    unsetenv("LC_ALL");
    unsetenv("LC_CTYPE");
    setenv("LANG", "C.UTF-8", 1);
    SRunner *runner = srunner_create(suite);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

bool long_tests(void) {
    const char *text = getenv("ATTN_TEST_LONG");
    return text != NULL && strcmp(text, "1") == 0;
}

// Has the running check said that it skipped something? (Reset before each
// check: with CK_FORK=no every check runs in this one process.)
static bool skipped_in_this_check = false;

static void start_check(void) {
    skipped_in_this_check = false;
}

static void free_arena(void) {
    arena_free_all();
}

TCase *new_tcase(const char *name) {
    TCase *tc = tcase_create(name);
    tcase_add_checked_fixture(tc, start_check, free_arena);
    tcase_set_timeout(tc, 120);
    return tc;
}

void note_skipped_in(const char *function, const char *format, ...) {
    // START_TEST(test_x) defines the function test_x_fn: the test is test_x.
    size_t length = strlen(function);
    if (length > 3 && strcmp(function + length - 3, "_fn") == 0) {
        length -= 3;
    }
    if (skipped_in_this_check) {
        printf("  and: ");
    } else {
        printf("SKIPPED %.*s: ", (int)length, function);
    }
    skipped_in_this_check = true;
    va_list args;
    va_start(args, format);
    vprintf(format, args);
    va_end(args);
    printf("\n");
    fflush(stdout);   // out now: a check that crashes later loses what is buffered
}

// --- files ------------------------------------------------------------------------

const char *path_join(const char *format, ...) {
    char *path = arena_alloc(1024, 1);
    va_list args;
    va_start(args, format);
    vsnprintf(path, 1024, format, args);
    va_end(args);
    return path;
}

// Whole file into an arena buffer (NUL-terminated); *length gets its size.
static char *read_file(const char *path, size_t *length) {
    FILE *file = fopen(path, "rb");
    ck_assert_msg(file != NULL, "cannot open %s", path);
    fseek(file, 0, SEEK_END);
    long end = ftell(file);
    fseek(file, 0, SEEK_SET);
    ck_assert_msg(end >= 0, "cannot size %s", path);
    char *bytes = arena_alloc((size_t)end + 1, 1);
    size_t got = fread(bytes, 1, (size_t)end, file);
    fclose(file);
    ck_assert_msg(got == (size_t)end, "short read of %s", path);
    *length = got;
    return bytes;
}

const char *read_text(const char *path) {
    size_t length;
    return read_file(path, &length);
}

FILE *text_stream_open(TextStream *stream) {
    *stream = (TextStream){NULL, NULL, 0};
    stream->file = open_memstream(&stream->buffer, &stream->length);
    ck_assert(stream->file != NULL);
    return stream->file;
}

const char *text_stream_close(TextStream *stream) {
    ck_assert(fclose(stream->file) == 0);
    char *text = arena_alloc(stream->length + 1, 1);
    memcpy(text, stream->buffer, stream->length + 1);   // with open_memstream's final '\0'
    free(stream->buffer);
    return text;
}

// Parse the header dict of a .npy file: descr and shape.
static void parse_npy_header(const char *header, const char *path, char *descr, Shape *shape) {
    const char *d = strstr(header, "'descr': '");
    ck_assert_msg(d != NULL, "%s: no descr in header", path);
    ck_assert_msg(sscanf(d + 10, "%7[^']", descr) == 1, "%s: bad descr", path);
    ck_assert_msg(strstr(header, "'fortran_order': False") != NULL, "%s: not C order", path);
    const char *s = strstr(header, "'shape': (");
    ck_assert_msg(s != NULL, "%s: no shape in header", path);
    s += 10;
    shape->ndim = 0;
    while (*s != ')') {
        char *end;
        long n = strtol(s, &end, 10);
        if (end == s) {          // skip ", " and spaces
            s += 1;
            continue;
        }
        ck_assert_msg(shape->ndim < MAX_DIMS, "%s: more than %d dims", path, MAX_DIMS);
        shape->size[shape->ndim] = (int)n;
        shape->ndim += 1;
        s = end;
    }
}

Tensor *load_npy(const char *path) {
    size_t length;
    const unsigned char *bytes = (const unsigned char *)read_file(path, &length);
    ck_assert_msg(length >= 10 && memcmp(bytes, "\x93NUMPY", 6) == 0, "%s: not .npy", path);
    size_t header_length = bytes[8] | ((size_t)bytes[9] << 8);
    size_t data_start = 10 + header_length;
    ck_assert_msg(bytes[6] == 1 && data_start <= length, "%s: unsupported .npy", path);
    char *header = arena_alloc(header_length + 1, 1);
    memcpy(header, bytes + 10, header_length);

    char descr[8] = {0};
    Shape shape;
    parse_npy_header(header, path, descr, &shape);
    Tensor *t = zeros(shape);
    long n = numel(t);
    const unsigned char *data = bytes + data_start;
    if (strcmp(descr, "<f4") == 0) {
        ck_assert_msg(length - data_start == (size_t)n * 4, "%s: wrong data size", path);
        memcpy(t->data, data, (size_t)n * 4);
    } else if (strcmp(descr, "<i8") == 0) {
        ck_assert_msg(length - data_start == (size_t)n * 8, "%s: wrong data size", path);
        for (long i = 0; i < n; i++) {
            int64_t value;
            memcpy(&value, data + 8 * i, 8);
            t->data[i] = (float)value;
        }
        t->dtype = DTYPE_INT64;
    } else if (strcmp(descr, "|b1") == 0) {
        ck_assert_msg(length - data_start == (size_t)n, "%s: wrong data size", path);
        for (long i = 0; i < n; i++) {
            t->data[i] = data[i] ? 1.0f : 0.0f;
        }
        t->dtype = DTYPE_BOOL;
    } else {
        ck_abort_msg("%s: unsupported dtype %s", path, descr);
    }
    return t;
}

uint64_t fnv1a(uint64_t hash, const void *bytes, size_t length) {
    const unsigned char *byte = bytes;
    for (size_t i = 0; i < length; i++) {
        hash = (hash ^ byte[i]) * UINT64_C(0x100000001b3);
    }
    return hash;
}

Tensor *arange(Shape shape) {
    Tensor *t = zeros(shape);
    long n = numel(t);
    for (long i = 0; i < n; i++) {
        t->data[i] = (float)i;
    }
    return t;
}

// --- comparing -------------------------------------------------------------------

void assert_same_shape(const Tensor *got, const Tensor *want, const char *what) {
    ck_assert_msg(same_shape(got, want), "%s: shape %s, expected %s", what, size_str(got),
                  size_str(want));
}

const char *index_text(const int *index, int ndim) {
    return sizes_str(index, ndim, SIZES_LIST);
}

void assert_close(const Tensor *got, const Tensor *want, float atol, float rtol,
                  const char *what) {
    assert_same_shape(got, want, what);
    int index[MAX_DIMS] = {0};
    int worst[MAX_DIMS] = {0};
    double worst_excess = 0.0;   // how far past its tolerance the worst element is
    long bad = 0;
    long n = numel(got);
    for (long i = 0; i < n; i++) {
        double g = *at(got, index);
        double w = *at(want, index);
        double excess;
        if (isnan(w) || isnan(g)) {
            excess = isnan(w) && isnan(g) ? 0.0 : INFINITY;
        } else if (isinf(w) || isinf(g)) {
            excess = g == w ? 0.0 : INFINITY;
        } else {
            excess = fabs(g - w) - (atol + rtol * fabs(w));
        }
        if (excess > 0.0) {
            bad += 1;
            if (excess > worst_excess || bad == 1) {
                worst_excess = excess;
                memcpy(worst, index, sizeof worst);
            }
        }
        next_index(index, got->shape.size, got->shape.ndim);
    }
    if (bad > 0) {
        ck_abort_msg("%s: %ld of %ld elements differ beyond atol %g + rtol %g; worst at %s: "
                     "got %.9g, expected %.9g", what, bad, n, (double)atol, (double)rtol,
                     index_text(worst, got->shape.ndim), (double)*at(got, worst),
                     (double)*at(want, worst));
    }
}

// The first difference, then one check: check records every assertion that
// passes (a write to its log), and its arguments are evaluated every time.
void assert_bitwise_equal(const Tensor *got, const Tensor *want, const char *what) {
    assert_same_shape(got, want, what);
    int index[MAX_DIMS] = {0};
    long n = numel(got);
    for (long i = 0; i < n; i++) {
        float g = *at(got, index);
        float w = *at(want, index);
        uint32_t gb, wb;
        memcpy(&gb, &g, 4);
        memcpy(&wb, &w, 4);
        if (gb != wb) {
            ck_abort_msg("%s: first difference at %s (element %ld of %ld): got %.9g (0x%08x), "
                         "expected %.9g (0x%08x)", what, index_text(index, got->shape.ndim), i,
                         n, (double)g, gb, (double)w, wb);
        }
        next_index(index, got->shape.size, got->shape.ndim);
    }
}

void assert_same_floats(const float *got, const float *want, long n, const char *what) {
    long i = 0;
    while (i < n && memcmp(&got[i], &want[i], sizeof(float)) == 0) {
        i += 1;
    }
    if (i < n) {
        ck_abort_msg("%s: element %ld is %.9g, expected %.9g", what, i, (double)got[i],
                     (double)want[i]);
    }
}

// --- catching fail() -----------------------------------------------------------

static jmp_buf failure_jump;
static char failure_message[512];

static void catch_failure(const char *message) {
    snprintf(failure_message, sizeof failure_message, "%s", message);
    longjmp(failure_jump, 1);
}

const char *failure_of(Action fn, void *arg) {
    set_fail_handler(catch_failure);
    if (setjmp(failure_jump) != 0) {
        set_fail_handler(NULL);
        char *copy = arena_alloc(strlen(failure_message) + 1, 1);
        memcpy(copy, failure_message, strlen(failure_message) + 1);
        return copy;
    }
    fn(arg);
    set_fail_handler(NULL);
    return NULL;
}

// --- running a program -----------------------------------------------------------

// Read everything from fd into an arena string.
static const char *slurp(int fd) {
    size_t capacity = 1 << 16;
    size_t used = 0;
    char *text = malloc(capacity);
    ck_assert(text != NULL);
    for (;;) {
        if (used + 4096 > capacity) {
            capacity *= 2;
            text = realloc(text, capacity);
            ck_assert(text != NULL);
        }
        ssize_t got = read(fd, text + used, capacity - used - 1);
        if (got <= 0) {
            break;
        }
        used += (size_t)got;
    }
    char *copy = arena_alloc(used + 1, 1);
    memcpy(copy, text, used);
    free(text);
    return copy;
}

RunResult run_program(const char *program, const char *const *args) {
    return run_program_with(NULL, 0, program, args);
}

// The runs made so far: the program and its words joined by newlines (which
// no word here holds), and the result, each string malloc'd, as the arena is
// emptied after every test. Freed at exit.
typedef struct {
    char *key;
    RunResult result;
} MadeRun;
static MadeRun *made_runs;
static int n_made_runs;

static char *kept_copy(const char *text) {
    char *copy = malloc(strlen(text) + 1);
    ck_assert(copy != NULL);
    return strcpy(copy, text);
}

static void forget_made_runs(void) {
    for (int i = 0; i < n_made_runs; i++) {
        free(made_runs[i].key);
        free((char *)made_runs[i].result.out);
        free((char *)made_runs[i].result.err);
    }
    free(made_runs);
}

// The key of a run: the program and its words joined by newlines.
static const char *run_key(const char *program, const char *const *args) {
    size_t length = strlen(program) + 1;
    for (int i = 0; args[i] != NULL; i++) {
        length += strlen(args[i]) + 1;
    }
    char *key = arena_alloc(length, 1);
    strcpy(key, program);
    for (int i = 0; args[i] != NULL; i++) {
        strcat(strcat(key, "\n"), args[i]);
    }
    return key;
}

static const RunResult *made_run(const char *key) {
    for (int i = 0; i < n_made_runs; i++) {
        if (strcmp(made_runs[i].key, key) == 0) {
            return &made_runs[i].result;
        }
    }
    return NULL;
}

static RunResult keep_run(const char *key, RunResult r) {
    if (n_made_runs == 0) {
        atexit(forget_made_runs);
    }
    MadeRun *more = realloc(made_runs, (size_t)(n_made_runs + 1) * sizeof *more);
    ck_assert(more != NULL);
    made_runs = more;
    made_runs[n_made_runs++] = (MadeRun){kept_copy(key), {r.status, kept_copy(r.out),
                                                          kept_copy(r.err)}};
    return made_runs[n_made_runs - 1].result;
}

RunResult run_program_once(const char *program, const char *const *args) {
    const char *key = run_key(program, args);
    const RunResult *made = made_run(key);
    return made != NULL ? *made : keep_run(key, run_program(program, args));
}

double estimated_seconds(const char *program, const char *const *args) {
    const char *key = path_join("ATTN_COST=check\n%s", run_key(program, args));
    const RunResult *made = made_run(key);
    RunResult r;
    if (made != NULL) {
        r = *made;
    } else {
        const char *before = getenv("ATTN_COST");
        char *saved = before != NULL ? kept_copy(before) : NULL;
        setenv("ATTN_COST", "check", 1);
        r = keep_run(key, run_program(program, args));
        if (saved != NULL) {
            setenv("ATTN_COST", saved, 1);
            free(saved);
        } else {
            unsetenv("ATTN_COST");
        }
    }
    const char *at = strstr(r.err, ": cost: predicted bytes=");
    at = at != NULL ? strstr(at, " seconds=") : NULL;
    return r.status == 0 && at != NULL ? strtod(at + strlen(" seconds="), NULL) : -1.0;
}

bool made_in_this_test(const char *program, const char *const *args, const char **left) {
    double seconds = long_tests() ? 0.0 : estimated_seconds(program, args);
    if (seconds <= CHEAP_SECONDS) {
        return true;
    }
    const char *name = strrchr(program, '/') != NULL ? strrchr(program, '/') + 1 : program;
    char *words = (char *)run_key("", args);
    for (char *c = words; *c != '\0'; c++) {
        *c = *c == '\n' ? ' ' : *c;   // run_key's newlines between the words
    }
    *left = path_join("%s%s (about %.0f s)", name, words, seconds);
    return false;
}

// Start `program` with `args` in directory `dir` (NULL: here), its stdout
// and stderr on out_fd and err_fd, SIGINT and SIGTERM at their defaults
// (a test run in the background inherits them ignored), stopped after
// `seconds` (0: never) by SIGALRM. Returns its pid.
static pid_t spawn(const char *dir, int seconds, const char *program, const char *const *args,
                   int out_fd, int err_fd) {
    int n_args = 0;
    while (args[n_args] != NULL) {
        n_args += 1;
    }
    char **argv = calloc((size_t)n_args + 2, sizeof *argv);
    ck_assert(argv != NULL);
    if (dir != NULL && program[0] != '/') {   // made absolute, to hold after the chdir
        char here[1024];
        ck_assert(getcwd(here, sizeof here) != NULL);
        program = path_join("%s/%s", here, program);
    }
    argv[0] = (char *)program;
    for (int i = 0; i < n_args; i++) {
        argv[i + 1] = (char *)args[i];
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        dup2(out_fd, 1);
        dup2(err_fd, 2);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (dir != NULL && chdir(dir) != 0) {   // `program` is relative to where we are
            _exit(126);
        }
        // The alarm outlives execv: after `seconds` SIGALRM ends the program.
        alarm((unsigned)seconds);
        execv(program, argv);
        _exit(127);
    }
    free(argv);
    return pid;
}

pid_t start_program(const char *dir, const char *program, const char *const *args) {
    int null = open("/dev/null", O_WRONLY);
    ck_assert(null >= 0);
    pid_t pid = spawn(dir, 0, program, args, null, null);
    close(null);
    return pid;
}

RunResult run_program_with(const char *dir, int seconds, const char *program,
                           const char *const *args) {
    // stdout and stderr go to temporary files, read back after the exit,
    // so a chatty program can never fill a pipe and block.
    char out_path[] = "/tmp/attn-test-out-XXXXXX";
    char err_path[] = "/tmp/attn-test-err-XXXXXX";
    int out_fd = mkstemp(out_path);
    int err_fd = mkstemp(err_path);
    ck_assert(out_fd >= 0 && err_fd >= 0);
    pid_t pid = spawn(dir, seconds, program, args, out_fd, err_fd);
    int status;
    waitpid(pid, &status, 0);
    RunResult result;
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    lseek(out_fd, 0, SEEK_SET);
    lseek(err_fd, 0, SEEK_SET);
    result.out = slurp(out_fd);
    result.err = slurp(err_fd);
    close(out_fd);
    close(err_fd);
    unlink(out_path);
    unlink(err_path);
    return result;
}

void run_programs_once(int n, const char *const *programs, const char *const *const *args) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int jobs = cpus < 1 ? 1 : cpus > 16 ? 16 : (int)cpus;
    typedef struct {
        pid_t pid;
        int out, err;      // where its stdout and stderr go
        const char *key;
    } Running;
    Running running[16];
    int n_running = 0, next = 0;
    while (next < n || n_running > 0) {
        while (next < n && n_running < jobs) {   // start the next run not made yet
            const char *key = run_key(programs[next], args[next]);
            bool started = made_run(key) != NULL;
            for (int r = 0; r < n_running; r++) {
                started = started || strcmp(running[r].key, key) == 0;
            }
            if (!started) {
                char out_path[] = "/tmp/attn-test-out-XXXXXX";
                char err_path[] = "/tmp/attn-test-err-XXXXXX";
                int out = mkstemp(out_path), err = mkstemp(err_path);
                ck_assert(out >= 0 && err >= 0);
                unlink(out_path);
                unlink(err_path);
                pid_t pid = spawn(NULL, 0, programs[next], args[next], out, err);
                running[n_running++] = (Running){pid, out, err, key};
            }
            next += 1;
        }
        if (n_running == 0) {
            continue;
        }
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        ck_assert(pid > 0);
        for (int r = 0; r < n_running; r++) {
            if (running[r].pid != pid) {
                continue;
            }
            RunResult result;
            result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            lseek(running[r].out, 0, SEEK_SET);
            lseek(running[r].err, 0, SEEK_SET);
            result.out = slurp(running[r].out);
            result.err = slurp(running[r].err);
            close(running[r].out);
            close(running[r].err);
            keep_run(running[r].key, result);
            running[r] = running[--n_running];
            break;
        }
    }
}

// The runs planned so far (arena strings: plan and make them in the same test).
static const char **planned_programs;
static const char *const **planned_args;
static int n_planned, planned_capacity;

void plan_run_once(const char *program, const char *const *args) {
    if (n_planned == planned_capacity) {
        planned_capacity = planned_capacity == 0 ? 256 : 2 * planned_capacity;
        const char **programs = arena_alloc((size_t)planned_capacity, sizeof *programs);
        const char *const **argss = arena_alloc((size_t)planned_capacity, sizeof *argss);
        for (int i = 0; i < n_planned; i++) {
            programs[i] = planned_programs[i];
            argss[i] = planned_args[i];
        }
        planned_programs = programs;
        planned_args = argss;
    }
    int n = 0;
    while (args[n] != NULL) {
        n += 1;
    }
    const char **copy = arena_alloc((size_t)n + 1, sizeof *copy);
    for (int i = 0; i < n; i++) {
        copy[i] = path_join("%s", args[i]);
    }
    planned_programs[n_planned] = path_join("%s", program);
    planned_args[n_planned] = copy;
    n_planned += 1;
}

void make_planned_runs(void) {
    run_programs_once(n_planned, planned_programs, planned_args);
    n_planned = 0;
    planned_capacity = 0;
}

const char *lesson_binary(const char *dir) {
    return path_join("%s/lessons/%s", BUILD_DIR, dir);
}

const char *make_temp_dir(void) {
    char *path = arena_alloc(64, 1);
    snprintf(path, 64, "/tmp/attn-test-XXXXXX");
    ck_assert_msg(mkdtemp(path) != NULL, "mkdtemp failed");
    return path;
}

// Remove a directory the tests made, and the files in it (one level).
void remove_dir(const char *path) {
    DIR *dir = opendir(path);
    if (dir == NULL) {
        return;
    }
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0) {
            unlink(path_join("%s/%s", path, entry->d_name));
        }
    }
    closedir(dir);
    rmdir(path);
}

// --- a lesson's main() in this process ------------------------------------------------

// The call under way: where lesson_exit and fail() jump back to, and what they saw.
static jmp_buf *call_return = NULL;
static int call_status;
static bool call_stopped;
static BudgetCheck call_budget;
static char call_parsed[8192];

// "--dim 4 --train 0 ...": every flag the lesson has, with its value now.
static void describe_flags(const Lesson *lesson) {
    size_t used = 0, size = sizeof call_parsed;
    call_parsed[0] = '\0';
#define PUT(...) used += (size_t)snprintf(call_parsed + used, used < size ? size - used : 0, \
                                          __VA_ARGS__)
    for (int i = 0; i < lesson->n_sizes; i++) {
        PUT("%s %d ", lesson->sizes[i].flag, *lesson->sizes[i].value);
    }
    for (int i = 0; i < lesson->n_ints; i++) {
        PUT("%s %d ", lesson->ints[i].flag, *lesson->ints[i].value);
    }
    for (int i = 0; i < lesson->n_floats; i++) {
        PUT("%s %.17g ", lesson->floats[i].flag, *lesson->floats[i].value);
    }
    for (int i = 0; i < lesson->n_probabilities; i++) {
        PUT("%s %.17g ", lesson->probabilities[i].flag, *lesson->probabilities[i].value);
    }
    for (int i = 0; i < lesson->n_choices; i++) {
        PUT("%s %s ", lesson->choices[i].flag, *lesson->choices[i].value);
    }
    for (int i = 0; i < lesson->n_switches; i++) {
        PUT("%s %d ", lesson->switches[i].flag, *lesson->switches[i].value);
    }
    for (int i = 0; i < lesson->n_paths; i++) {
        const char *path = *lesson->paths[i].value;
        PUT("%s %s ", lesson->paths[i].flag, path != NULL ? path : "-");
    }
    PUT("--seed %llu --dump %s --dot %s --heatmap %d; given:", (unsigned long long)lesson->seed,
        lesson->dump_dir != NULL ? lesson->dump_dir : "-",
        lesson->dot_file != NULL ? lesson->dot_file : "-", lesson->heatmap);
    for (int i = 0; i < lesson->n_given && lesson->given != NULL; i++) {
        PUT(" %s", lesson->given[i]);
    }
#undef PUT
}

// lesson_exit's hook: note how the run ended, and jump back into call_lesson.
static void end_of_call(const Lesson *lesson, int status) {
    call_status = status;
    call_budget = last_budget_check();
    call_stopped = stopped_before_work();
    if (lesson != NULL) {
        describe_flags(lesson);
    }
    longjmp(*call_return, 1);
}

// fail()'s: as the program would, say so on stderr, and end with status 1.
static void failed_in_call(const char *message) {
    fflush(stdout);
    fprintf(stderr, "error: %s\n", message);
    call_status = 1;
    longjmp(*call_return, 1);
}

// Where a call's stdout and stderr go: two files of this process (made once, removed at
// once, so nothing is left behind), emptied before each call.
static int caught_fd[2] = {-1, -1};
static pid_t caught_by = 0;   // the process that made them (check forks one per test)

static int caught_file(int i) {
    if (caught_fd[i] < 0 || caught_by != getpid()) {
        char path[] = "/tmp/attn-test-call-XXXXXX";
        caught_fd[i] = mkstemp(path);
        ck_assert(caught_fd[i] >= 0);
        unlink(path);
        caught_by = getpid();
    }
    ck_assert(ftruncate(caught_fd[i], 0) == 0);
    lseek(caught_fd[i], 0, SEEK_SET);
    return caught_fd[i];
}

static LessonCall call(LessonMain main, const char *const *args, bool stop_before_work) {
    ck_assert_msg(call_return == NULL, "call_lesson: a call inside a call");
    int argc = 1;
    while (args[argc - 1] != NULL) {
        argc += 1;
    }
    char **argv = arena_alloc((size_t)argc + 1, sizeof *argv);
    argv[0] = "lesson";
    for (int i = 1; i < argc; i++) {
        argv[i] = (char *)args[i - 1];
    }
    int out = caught_file(0), err = caught_file(1);
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    ck_assert(saved_out >= 0 && saved_err >= 0);
    dup2(out, 1);
    dup2(err, 2);

    static jmp_buf back;
    call_return = &back;
    call_status = -1;
    call_stopped = false;
    call_budget = (BudgetCheck){.made = false};
    call_parsed[0] = '\0';
    forget_budget_check();
    InProcess settings = {end_of_call, arena_mark(), stop_before_work};
    run_in_process(&settings);
    set_fail_handler(failed_in_call);
    if (setjmp(back) == 0) {
        int status = main(argc, argv);   // it ran to its end: lesson_finish released it
        call_status = status;
        call_budget = last_budget_check();
        forget_budget_check();
    } else {
        release_run();                    // what exit() would have done (but free the arena
                                          // only down to the call's mark)
    }
    set_fail_handler(NULL);
    run_in_process(NULL);
    call_return = NULL;

    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    LessonCall result = {call_status, NULL, NULL, call_stopped, call_budget, NULL};
    lseek(out, 0, SEEK_SET);
    lseek(err, 0, SEEK_SET);
    result.out = slurp(out);
    result.err = slurp(err);
    char *parsed = arena_alloc(strlen(call_parsed) + 1, 1);
    result.parsed = strcpy(parsed, call_parsed);
    return result;
}

LessonCall call_lesson(LessonMain main, const char *const *args) {
    return call(main, args, true);
}

LessonCall call_lesson_to_the_end(LessonMain main, const char *const *args) {
    return call(main, args, false);
}

RunResult call_as_run(LessonCall call) {
    return (RunResult){call.status, call.out, call.err};
}

// --- a lesson's budget -------------------------------------------------------------------

static const LessonBudget *budget_of_lesson;   // add_budget_tests's: one a test program

START_TEST(test_refused_before_anything_runs) {
    const BudgetRefusal *refusal = &budget_of_lesson->refusals[_i];
    const char *sandbox = make_temp_dir();
    const char *argv[20];
    int n = 0;
    if (refusal->args[0] == NULL || strcmp(refusal->args[0], "--bench") != 0) {
        argv[n++] = "--dot";
        argv[n++] = path_join("%s/graph.dot", sandbox);
    }
    for (int i = 0; refusal->args[i] != NULL; i++) {
        ck_assert(n < 19);
        argv[n++] = refusal->args[i];
    }
    argv[n] = NULL;
    const char *name = NULL, *before = NULL;
    if (refusal->variable != NULL) {
        const char *equals = strchr(refusal->variable, '=');
        name = path_join("%.*s", (int)(equals - refusal->variable), refusal->variable);
        before = getenv(name) != NULL ? path_join("%s", getenv(name)) : NULL;
        setenv(name, equals + 1, 1);
    }
    LessonCall call = call_lesson(budget_of_lesson->main, argv);
    if (name != NULL && before != NULL) {
        setenv(name, before, 1);
    } else if (name != NULL) {
        unsetenv(name);
    }
    assert_one_line_refusal(call_as_run(call), path_join("%.9s", refusal->line), refusal->line);
    ck_assert_str_eq(call.err, path_join("%s\n", refusal->line));
    ck_assert_msg(call.budget.made && !call.budget.admitted, "refused, not by the budget: %s",
                  call.err);
    ck_assert_int_eq(count_entries(sandbox), 0);
    remove_dir(sandbox);
}
END_TEST

START_TEST(test_prediction_holds) {
    const SizedRun *sized = &budget_of_lesson->sized[_i];
    const char *sandbox = make_temp_dir();
    const char *argv[28];
    int n = 0;
    for (int i = 0; sized->args[i] != NULL; i++) {
        bool dump_dir = i > 0 && strcmp(sized->args[i - 1], "--dump") == 0;
        bool dot_file = i > 0 && strcmp(sized->args[i - 1], "--dot") == 0;
        argv[n++] = dump_dir ? path_join("%s/out", sandbox)
                    : dot_file ? path_join("%s/graph.dot", sandbox) : sized->args[i];
    }
    argv[n] = NULL;
    const char *lesson = budget_of_lesson->lesson;
    setenv("ATTN_COST", "show", 1);
    RunResult r = run_program_with(NULL, 120, lesson_binary(lesson), argv);
    unsetenv("ATTN_COST");
    ck_assert_msg(r.status == 0, "%s (case %d): exit %d: %s", lesson, _i, r.status, r.err);
    double predicted = -1, held = -1;
    const char *predicted_line = strstr(r.err, "cost: predicted bytes=");
    const char *held_line = strstr(r.err, "cost: held bytes=");
    ck_assert_msg(predicted_line != NULL && held_line != NULL, "%s: no cost lines in: %s", lesson,
                  r.err);
    sscanf(predicted_line, "cost: predicted bytes=%lf", &predicted);
    sscanf(held_line, "cost: held bytes=%lf", &held);
    ck_assert_msg(strstr(r.err, "warning") == NULL, "%s (case %d): %s", lesson, _i, r.err);
    const double mib = 1024.0 * 1024.0;
    ck_assert_msg(held <= predicted + mib, "%s (case %d): held %.0f bytes, predicted %.0f",
                  lesson, _i, held, predicted);
    ck_assert_msg(predicted <= 1.5 * held, "%s (case %d): predicted %.0f bytes, held only %.0f",
                  lesson, _i, predicted, held);
    ck_assert_msg(held > 8 * mib, "%s (case %d): held only %.0f bytes: choose larger sizes",
                  lesson, _i, held);
    remove_tree(sandbox);
}
END_TEST

// Does this CPU have the vector kernels that lessons 13, 14 and 16 pick (AVX2 and FMA)?
static bool vector_kernels_here(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

START_TEST(test_admitted) {
    const AdmittedRun *run = &budget_of_lesson->admitted[_i];
    if (!run->vector_kernels) {
        LessonCall call = call_lesson(budget_of_lesson->main, run->args);
        ck_assert_msg(call.status == 0 && call.reached_work, "%s (case %d): exit %d: %s",
                      budget_of_lesson->lesson, _i, call.status, call.err);
        return;
    }
    // Priced by the kernels the CPU has: as the program, which runs on the CPU itself
    // (this test may run under valgrind, whose CPU has no AVX-512), under ATTN_COST=check.
    bool expected = vector_kernels_here();
    const char *forced = getenv("ATTN_KERNELS");
    forced = forced != NULL ? path_join("%s", forced) : NULL;
    unsetenv("ATTN_KERNELS");
    setenv("ATTN_COST", "check", 1);
    RunResult r = run_program(lesson_binary(budget_of_lesson->lesson), run->args);
    unsetenv("ATTN_COST");
    if (forced != NULL) {
        setenv("ATTN_KERNELS", forced, 1);
    }
    ck_assert_msg(r.status == (expected ? 0 : 2) && (expected || strstr(r.err, "ATTN_MAX_")),
                  "%s (case %d): exit %d%s: %s", budget_of_lesson->lesson, _i, r.status,
                  expected ? "" : " (refused by the budget here, without vector kernels)",
                  r.err);
}
END_TEST

void add_budget_tests(Suite *suite, const LessonBudget *budget) {
    budget_of_lesson = budget;
    TCase *tc = new_tcase("budget");
    tcase_add_loop_test(tc, test_refused_before_anything_runs, 0, budget->n_refusals);
    int sized = long_tests() || budget->n_sized < 1 ? budget->n_sized : 1;
    tcase_add_loop_test(tc, test_prediction_holds, 0, sized);
    tcase_add_loop_test(tc, test_admitted, 0, budget->n_admitted);
    suite_add_tcase(suite, tc);
}

// --- comparing printed text --------------------------------------------------------

const char *next_line(const char **cursor) {
    const char *start = *cursor;
    if (*start == '\0') {
        return NULL;
    }
    const char *end = strchr(start, '\n');
    size_t length = end != NULL ? (size_t)(end - start) : strlen(start);
    char *line = arena_alloc(length + 1, 1);
    memcpy(line, start, length);
    *cursor = end != NULL ? end + 1 : start + length;
    return line;
}

// Does a number start at s ("0.5", "-1.2e-06"; not "-" alone)?
static bool number_starts(const char *s) {
    return isdigit((unsigned char)s[0]) || (s[0] == '-' && isdigit((unsigned char)s[1]));
}

// One unit of the last printed digit of the number in [start, end): 1e-4 for "0.6261",
// 1e-10 for "6.0337e-06"; 0 for an integer, which must be printed exactly.
static double last_digit_unit(const char *start, const char *end) {
    const char *dot = memchr(start, '.', (size_t)(end - start));
    const char *e = memchr(start, 'e', (size_t)(end - start));
    int decimals = dot == NULL ? 0 : (int)((e != NULL ? e : end) - dot - 1);
    return dot == NULL && e == NULL ? 0.0 : pow(10.0, (e != NULL ? atoi(e + 1) : 0) - decimals);
}

bool same_line_to_last_digit(const char *got, const char *want) {
    while (*got != '\0' && *want != '\0') {
        if (*got == ' ' || *want == ' ') {
            got += strspn(got, " ");
            want += strspn(want, " ");
        } else if (number_starts(got) && number_starts(want)) {
            char *got_end, *want_end;
            double a = strtod(got, &got_end), b = strtod(want, &want_end);
            double unit = last_digit_unit(want, want_end);
            bool same_text = got_end - got == want_end - want &&
                             strncmp(got, want, (size_t)(want_end - want)) == 0;
            if (!same_text && !(unit > 0.0 && fabs(a - b) <= unit * (1 + 1e-9))) {
                return false;
            }
            got = got_end;
            want = want_end;
        } else if (*got++ != *want++) {
            return false;
        }
    }
    return got[strspn(got, " ")] == '\0' && want[strspn(want, " ")] == '\0';
}

static bool same_text(const char *got, const char *want) { return strcmp(got, want) == 0; }

// lines_in_order, each line matched by `same`.
static int lines_in_order_by(const char *text, const char *expected, const char **missing,
                             bool (*same)(const char *got, const char *want)) {
    const char *cursor = text;
    const char *want;
    while ((want = next_line(&expected)) != NULL) {
        const char *line = next_line(&cursor);
        while (line != NULL && !same(line, want)) {
            line = next_line(&cursor);
        }
        if (line == NULL) {
            *missing = want;
            return 0;
        }
    }
    return 1;
}

int lines_in_order(const char *text, const char *expected, const char **missing) {
    return lines_in_order_by(text, expected, missing, same_text);
}

int lines_in_order_to_last_digit(const char *text, const char *expected, const char **missing) {
    return lines_in_order_by(text, expected, missing, same_line_to_last_digit);
}

// --- what every lesson test does ---------------------------------------------------

// The NULL-terminated list `list` appended to argv[*n], NULL-terminated.
static void append_args(const char **argv, int *n, int capacity, const char *const *list) {
    for (int i = 0; list != NULL && list[i] != NULL; i++) {
        ck_assert_msg(*n < capacity - 1, "too many arguments");
        argv[*n] = list[i];
        *n += 1;
    }
    argv[*n] = NULL;
}

RunResult check_against_reference(const ReferenceRun *run) {
    const char *dir = make_temp_dir();
    const char *argv[32] = {"--dump", dir};
    int n = 2;
    append_args(argv, &n, 32, run->args);
    RunResult result = run_program(lesson_binary(run->lesson), argv);
    ck_assert_msg(result.status == 0, "%s (%s): exit %d, stderr: %s", run->lesson,
                  run->reference, result.status, result.err);
    ck_assert_msg(result.err[0] == '\0', "%s (%s): stderr not empty: %s", run->lesson,
                  run->reference, result.err);

    for (int i = 0; run->exact != NULL && run->exact[i] != NULL; i++) {
        const char *name = run->exact[i];
        assert_bitwise_equal(load_npy(path_join("%s/%s.npy", dir, name)),
                             load_npy(path_join("%s/%s.npy", run->reference, name)),
                             path_join("%s %s", run->reference, name));
    }
    for (int i = 0; run->computed != NULL && run->computed[i] != NULL; i++) {
        const char *name = run->computed[i];
        assert_close(load_npy(path_join("%s/%s.npy", dir, name)),
                     load_npy(path_join("%s/%s.npy", run->reference, name)), run->atol,
                     run->rtol, path_join("%s %s", run->reference, name));
    }
    for (int i = 0; run->loose != NULL && run->loose[i] != NULL; i++) {
        const char *name = run->loose[i];
        assert_close(load_npy(path_join("%s/%s.npy", dir, name)),
                     load_npy(path_join("%s/%s.npy", run->reference, name)), run->loose_atol,
                     run->loose_rtol, path_join("%s %s", run->reference, name));
    }
    const char *expected = read_text(path_join("%s/stdout.txt", run->reference));
    if (run->starts_with_reference) {
        ck_assert_msg(strncmp(result.out, expected, strlen(expected)) == 0,
                      "%s: stdout does not start with PyTorch's text:\n%s\n--- got:\n%s",
                      run->reference, expected, result.out);
    } else {
        const char *missing = NULL;
        ck_assert_msg(lines_in_order(result.out, expected, &missing),
                      "%s: PyTorch's line not printed (in order): '%s'", run->reference,
                      missing);
    }
    remove_dir(dir);
    return result;
}

void check_bad_flags(const char *lesson, const char *program, const BadFlags *cases,
                     int n_cases) {
    const char *tmp = make_temp_dir();
    const char *dump = path_join("%s/out", tmp);
    const char *prefix = path_join("%s: ", program);
    for (int i = 0; i < n_cases; i++) {
        const char *argv[16] = {"--dump", dump};
        int n = 2;
        append_args(argv, &n, 16, cases[i].args);
        // The lesson's main(), when the test has it (add_budget_tests), called in this
        // process; its program otherwise.
        bool callable = budget_of_lesson != NULL && strcmp(budget_of_lesson->lesson, lesson) == 0;
        RunResult r = callable ? call_as_run(call_lesson(budget_of_lesson->main, argv))
                               : run_program(lesson_binary(lesson), argv);
        const char *named = cases[i].named;
        ck_assert_msg(r.status == 2, "%s: exit %d, expected 2 (stderr: %s)", named, r.status,
                      r.err);
        ck_assert_msg(r.out[0] == '\0', "%s: stdout not empty: %s", named, r.out);
        const char *newline = strchr(r.err, '\n');
        ck_assert_msg(newline != NULL && newline[1] == '\0', "%s: not one line: %s", named,
                      r.err);
        ck_assert_msg(strncmp(r.err, prefix, strlen(prefix)) == 0,
                      "%s: the message does not start with '%s': %s", named, prefix, r.err);
        ck_assert_msg(strstr(r.err, named) != NULL, "'%s' not named in: %s", named, r.err);
        ck_assert_msg(access(dump, F_OK) != 0, "%s: the --dump directory was created", named);
    }
    remove_dir(tmp);
}

const char *lesson_graph(const char *lesson, const char *const *args, int *nodes) {
    const char *dir = make_temp_dir();
    const char *argv[32] = {"--dot", path_join("%s/graph.dot", dir)};
    int n = 2;
    append_args(argv, &n, 32, args);
    RunResult run = run_program(lesson_binary(lesson), argv);
    ck_assert_msg(run.status == 0, "%s --dot: exit %d: %s", lesson, run.status, run.err);
    const char *text = read_text(argv[1]);
    remove_dir(dir);
    *nodes = 0;
    const char *cursor = text;
    for (const char *line = next_line(&cursor); line != NULL; line = next_line(&cursor)) {
        *nodes += strstr(line, "[label=") != NULL && strstr(line, "->") == NULL;
    }
    return text;
}

// --- the runs recorded from PyTorch: tests/data/lessonNN/cases.txt ----------------

static const char *cases_path(const char *data) {
    return path_join("%s/cases.txt", data);
}

// A line of the list that names a run: not empty, not a # comment.
static bool is_case_line(const char *line) {
    return line[0] != '\0' && line[0] != '#';
}

// Is `word` ("train=0") one of the line's words? Every line is when word is NULL.
static bool has_word(const char *line, const char *word) {
    if (word == NULL) {
        return true;
    }
    size_t n = strlen(word);
    for (const char *at = strstr(line, word); at != NULL; at = strstr(at + 1, word)) {
        if ((at == line || at[-1] == ' ') && (at[n] == ' ' || at[n] == '\0')) {
            return true;
        }
    }
    return false;
}

int recorded_case_count_where(const char *data, const char *value) {
    // Called from main() too, before any test: no arena, no ck_assert.
    char path[1024];
    snprintf(path, sizeof path, "%s/cases.txt", data);
    FILE *file = fopen(path, "r");
    int count = 0;
    char line[4096];
    while (file != NULL && fgets(line, sizeof line, file) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        count += is_case_line(line) && has_word(line, value);
    }
    if (file != NULL) {
        fclose(file);
    }
    if (count == 0) {
        fprintf(stderr, "%s: no recorded runs%s%s (tests/reference writes it)\n", path,
                value != NULL ? " with " : "", value != NULL ? value : "");
        exit(EXIT_FAILURE);
    }
    return count;
}

int recorded_case_count(const char *data) {
    return recorded_case_count_where(data, NULL);
}

// One line of the list: "dir name=value ... --flag value ...".
static RecordedCase *parse_case(const char *data, const char *line) {
    RecordedCase *c = arena_alloc(1, sizeof *c);
    char *words = arena_alloc(strlen(line) + 1, 1);
    strcpy(words, line);
    int n_words = 0, n_args = 0;
    char *save = NULL;
    for (char *word = strtok_r(words, " ", &save); word != NULL;
         word = strtok_r(NULL, " ", &save)) {
        char *equals = strchr(word, '=');
        if (n_words == 0) {
            c->dir = word;
        } else if (n_args == 0 && word[0] != '-' && equals != NULL) {
            ck_assert_msg(c->n_values < MAX_CASE_WORDS, "%s: too many values", line);
            *equals = '\0';
            c->names[c->n_values] = word;
            c->values[c->n_values] = equals + 1;
            c->n_values += 1;
        } else {
            ck_assert_msg(n_args < MAX_CASE_WORDS - 1, "%s: too many flags", line);
            c->args[n_args++] = word;
        }
        n_words += 1;
    }
    ck_assert_msg(c->dir != NULL, "%s: an empty run", cases_path(data));
    c->args[n_args] = NULL;
    c->reference = path_join("%s/%s", data, c->dir);
    return c;
}

// Run `index` of the runs with `value` (NULL: of all), or (dir not NULL) the run
// whose directory is dir.
static const RecordedCase *find_case(const char *data, int index, const char *value,
                                     const char *dir) {
    const char *cursor = read_text(cases_path(data));
    int i = 0;
    for (const char *line = next_line(&cursor); line != NULL; line = next_line(&cursor)) {
        if (!is_case_line(line) || !has_word(line, value)) {
            continue;
        }
        const RecordedCase *c = parse_case(data, line);
        if (dir != NULL ? strcmp(c->dir, dir) == 0 : i == index) {
            return c;
        }
        i += 1;
    }
    ck_abort_msg("%s lists no run %s%s%s", cases_path(data),
                 dir != NULL ? dir : path_join("%d", index), value != NULL ? " with " : "",
                 value != NULL ? value : "");
}

const RecordedCase *recorded_case(const char *data, int i) {
    return find_case(data, i, NULL, NULL);
}

const RecordedCase *recorded_case_where(const char *data, const char *value, int i) {
    return find_case(data, i, value, NULL);
}

const RecordedCase *recorded_case_named(const char *data, const char *dir) {
    return find_case(data, 0, NULL, dir);
}

const char *case_text(const RecordedCase *c, const char *name) {
    for (int v = 0; v < c->n_values; v++) {
        if (strcmp(c->names[v], name) == 0) {
            return c->values[v];
        }
    }
    ck_abort_msg("%s: the recorded run has no value %s", c->reference, name);
}

long case_int(const RecordedCase *c, const char *name) {
    const char *text = case_text(c, name);
    char *end;
    long value = strtol(text, &end, 10);
    ck_assert_msg(end != text && *end == '\0', "%s: %s=%s is not a whole number", c->reference,
                  name, text);
    return value;
}

Tensor *load_reference(const char *reference, const char *name) {
    return load_npy(path_join("%s/%s.npy", reference, name));
}

RunResult check_recorded_case(ReferenceRun shared, const RecordedCase *c) {
    shared.reference = c->reference;
    shared.args = c->args;
    return check_against_reference(&shared);
}

Linear linear_from(const Tensor *weight, const Tensor *bias) {
    Linear layer = {weight, bias, size(weight, 1), size(weight, 0)};
    return layer;
}

Linear recorded_linear(const char *reference, const char *name) {
    return linear_from(load_npy(path_join("%s/%s.weight.npy", reference, name)),
                       load_npy(path_join("%s/%s.bias.npy", reference, name)));
}

void set_linear(Linear *layer, const float *weight, const float *bias) {
    memcpy(layer->weight->data, weight, sizeof(float) * numel(layer->weight));
    memcpy(layer->bias->data, bias, sizeof(float) * numel(layer->bias));
}

RunResult check_prints(const char *lesson, const char *const *args, const char *lines) {
    RunResult r = run_program(lesson_binary(lesson), args);
    ck_assert_msg(r.status == 0, "%s: exit %d: %s", lesson, r.status, r.err);
    ck_assert_msg(r.err[0] == '\0', "%s: stderr: %s", lesson, r.err);
    const char *missing = NULL;
    ck_assert_msg(lines_in_order(r.out, lines, &missing),
                  "%s: line not printed: %s\n--- output ---\n%s", lesson, missing, r.out);
    return r;
}

void check_prints_each(const char *lesson, const PrintsCase *cases, int n_cases) {
    for (int i = 0; i < n_cases; i++) {
        check_prints(lesson, cases[i].args, cases[i].lines);
    }
}

// --- bad input and output paths ------------------------------------------------------

void assert_one_line_refusal(RunResult r, const char *prefix, const char *what) {
    ck_assert_msg(r.status == 2, "%s: exit %d, expected 2; stderr: %s", what, r.status, r.err);
    ck_assert_msg(r.out[0] == '\0', "%s: stdout not empty: %s", what, r.out);
    const char *newline = strchr(r.err, '\n');
    ck_assert_msg(newline != NULL && newline[1] == '\0', "%s: stderr is not one line: \"%s\"",
                  what, r.err);
    ck_assert_msg(strncmp(r.err, prefix, strlen(prefix)) == 0,
                  "%s: stderr does not start with '%s': %s", what, prefix, r.err);
    ck_assert_msg(strstr(r.err, ": Success\n") == NULL, "%s: errno was lost: %s", what, r.err);
}

int count_entries(const char *path) {
    DIR *dir = opendir(path);
    if (dir == NULL) {
        return -1;
    }
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        count += strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0;
    }
    closedir(dir);
    return count;
}

void remove_tree(const char *path) {
    struct stat info;
    if (lstat(path, &info) != 0) {
        return;
    }
    if (S_ISDIR(info.st_mode)) {
        DIR *dir = opendir(path);
        struct dirent *entry;
        while (dir != NULL && (entry = readdir(dir)) != NULL) {
            if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0) {
                char *child = malloc(strlen(path) + strlen(entry->d_name) + 2);
                ck_assert(child != NULL);
                sprintf(child, "%s/%s", path, entry->d_name);   // may be longer than path_join's
                remove_tree(child);
                free(child);
            }
        }
        if (dir != NULL) {
            closedir(dir);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int find_lesson_dirs(const char **dirs, int capacity) {
    DIR *dir = opendir("lessons");
    ck_assert_msg(dir != NULL, "no lessons/ directory (run the tests from the project root)");
    int n = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        const char *name = entry->d_name;
        if (name[0] >= '0' && name[0] <= '9' && name[1] >= '0' && name[1] <= '9' &&
            name[2] == '-') {
            ck_assert_msg(n < capacity, "more than %d lessons", capacity);
            dirs[n++] = path_join("%s", name);
        }
    }
    closedir(dir);
    qsort(dirs, (size_t)n, sizeof *dirs, compare_names);
    return n;
}

const char *check_fails(Action fn, void *arg, const char *start) {
    const char *message = failure_of(fn, arg);
    ck_assert_msg(message != NULL, "expected a failure starting \"%s\", but the call returned",
                  start);
    ck_assert_msg(strncmp(message, start, strlen(start)) == 0,
                  "expected a failure starting \"%s\", got \"%s\"", start, message);
    return message;
}
