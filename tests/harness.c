// harness.c - shared test support: run a suite, read recorded data,
// compare tensors, catch fail(), run a lesson program.
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

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
    SRunner *runner = srunner_create(suite);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

static void free_arena(void) {
    arena_free_all();
}

TCase *new_tcase(const char *name) {
    TCase *tc = tcase_create(name);
    tcase_add_checked_fixture(tc, NULL, free_arena);
    tcase_set_timeout(tc, 120);
    return tc;
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

Tensor *arange(Shape shape) {
    Tensor *t = zeros(shape);
    long n = numel(t);
    for (long i = 0; i < n; i++) {
        t->data[i] = (float)i;
    }
    return t;
}

// --- comparing -------------------------------------------------------------------

static void assert_same_shape(const Tensor *got, const Tensor *want, const char *what) {
    ck_assert_msg(same_shape(got, want), "%s: shape %s, expected %s", what, size_str(got),
                  size_str(want));
}

// "[1, 0, 2]"
static const char *index_text(const int *index, int ndim) {
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
        ck_assert_msg(gb == wb, "%s: first difference at %s (element %ld of %ld): got %.9g "
                      "(0x%08x), expected %.9g (0x%08x)", what, index_text(index, got->shape.ndim),
                      i, n, (double)g, gb, (double)w, wb);
        next_index(index, got->shape.size, got->shape.ndim);
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
    // stdout and stderr go to temporary files, read back after the exit,
    // so a chatty program can never fill a pipe and block.
    char out_path[] = "/tmp/attn-test-out-XXXXXX";
    char err_path[] = "/tmp/attn-test-err-XXXXXX";
    int out_fd = mkstemp(out_path);
    int err_fd = mkstemp(err_path);
    ck_assert(out_fd >= 0 && err_fd >= 0);
    int n_args = 0;
    while (args[n_args] != NULL) {
        n_args += 1;
    }
    char **argv = calloc((size_t)n_args + 2, sizeof *argv);
    ck_assert(argv != NULL);
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
        execv(program, argv);
        _exit(127);
    }
    free(argv);
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

int lines_in_order(const char *text, const char *expected, const char **missing) {
    const char *cursor = text;
    const char *want;
    while ((want = next_line(&expected)) != NULL) {
        const char *line = next_line(&cursor);
        while (line != NULL && strcmp(line, want) != 0) {
            line = next_line(&cursor);
        }
        if (line == NULL) {
            *missing = want;
            return 0;
        }
    }
    return 1;
}

// --- what every lesson test does ---------------------------------------------------

int quiet_stdout(void) {
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    int null = open("/dev/null", O_WRONLY);
    ck_assert(saved >= 0 && null >= 0);
    dup2(null, STDOUT_FILENO);
    close(null);
    return saved;
}

void restore_stdout(int saved) {
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
}

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
        RunResult r = run_program(lesson_binary(lesson), argv);
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

// --- shared by the tests of lessons 6-10 ---------------------------------------------

Linear linear_from(const Tensor *weight, const Tensor *bias) {
    Linear layer = {weight, bias, size(weight, 1), size(weight, 0)};
    return layer;
}

Linear recorded_linear(const char *reference, const char *name) {
    return linear_from(load_npy(path_join("%s/%s.weight.npy", reference, name)),
                       load_npy(path_join("%s/%s.bias.npy", reference, name)));
}

// --- shared by the tests of lessons 6-8 -----------------------------------------------

RunResult check_recorded_case(ReferenceRun shared, const char *data, const RecordedCase *c) {
    shared.reference = path_join("%s/%s", data, c->dir);
    shared.args = c->args;
    return check_against_reference(&shared);
}

void check_output_opens_with(const char *lesson, const char *opening) {
    RunResult run = run_program(lesson_binary(lesson), (const char *const[]){NULL});
    ck_assert_msg(run.status == 0, "%s: exit %d: %s", lesson, run.status, run.err);
    ck_assert_msg(run.err[0] == '\0', "%s: stderr: %s", lesson, run.err);
    ck_assert_msg(strncmp(run.out, opening, strlen(opening)) == 0,
                  "%s: the output does not open with the notebook's lines:\n%s\n--- got:\n%.*s",
                  lesson, opening, (int)strlen(opening) + 200, run.out);
}

int check_multi_head_weights(const Tensor *weights, const Tensor *mask, const char *what) {
    ck_assert_msg(weights->shape.ndim == 4 && same_shape(weights, mask),
                  "%s: weights %s and mask %s, expected two equal (B, H, T, S) shapes", what,
                  size_str(weights), size_str(mask));
    int B = size(weights, 0), H = size(weights, 1), T = size(weights, 2), S = size(weights, 3);
    int all_masked = 0;
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            for (int t = 0; t < T; t++) {
                int visible = 0;
                for (int s = 0; s < S; s++) {
                    visible += *at4(mask, b, h, t, s) != 0.0f;
                }
                all_masked += visible == 0;
                double sum = 0.0;
                for (int s = 0; s < S; s++) {
                    float w = *at4(weights, b, h, t, s);
                    sum += w;
                    if (visible == 0) {
                        ck_assert_msg(w == 1.0f / (float)S, "%s: row [%d, %d, %d] is all masked, "
                                      "weight %d is %.9g, not 1/%d", what, b, h, t, s, (double)w,
                                      S);
                    } else if (*at4(mask, b, h, t, s) == 0.0f) {
                        ck_assert_msg(w == 0.0f, "%s: masked weight [%d, %d, %d, %d] = %g", what,
                                      b, h, t, s, (double)w);
                    } else {
                        ck_assert_msg(w > 0.0f, "%s: visible weight [%d, %d, %d, %d] = %g", what,
                                      b, h, t, s, (double)w);
                    }
                }
                ck_assert_msg(fabs(sum - 1.0) < 1e-6, "%s: row [%d, %d, %d] sums to %.9f", what,
                              b, h, t, sum);
            }
        }
    }
    return all_masked;
}

void assert_only_slice_changed(const Tensor *before, const Tensor *after, int dim, int changed,
                               float min_change, const char *what) {
    assert_same_shape(after, before, what);
    for (int i = 0; i < size(before, dim); i++) {
        const Tensor *old_i = narrow(before, dim, i, 1);
        const Tensor *new_i = narrow(after, dim, i, 1);
        if (i == changed) {
            float moved = max_abs_diff(old_i, new_i);
            ck_assert_msg(moved > min_change, "%s %d did not change (max diff %g, expected "
                          "more than %g)", what, i, (double)moved, (double)min_change);
        } else {
            assert_bitwise_equal(new_i, old_i, path_join("%s %d", what, i));
        }
    }
}

// view(B, T, -1) of the transposed (B, H, T, D) zeros whose shape is *arg.
static void view_transposed(void *arg) {
    const Shape *output_mid = arg;
    Shape merged = shape3(output_mid->size[0], output_mid->size[2], -1);   // (B, T, C)
    view(transpose(zeros(*output_mid), 1, 2), merged);
}

void check_view_needs_contiguous(Shape output_mid) {
    const char *message = failure_of(view_transposed, &output_mid);
    ck_assert_msg(message != NULL, "view() accepted a transposed %s",
                  shape_str(output_mid, SIZES_TUPLE));
    ck_assert_str_eq(message, "view: view size is not compatible with input tensor's size and "
                     "stride (at least one dimension spans across two contiguous subspaces). "
                     "Use .reshape(...) instead.");
    Shape merged = shape3(output_mid.size[0], output_mid.size[2], -1);
    const Tensor *values = arange(output_mid);                          // (B, H, T, D)
    const Tensor *swapped = transpose(values, 1, 2);                    // (B, T, H, D)
    const Tensor *reshaped = reshape(swapped, merged);                  // (B, T, C)
    ck_assert_msg(reshaped->data != values->data, "reshape() of a transposed tensor did not copy");
    assert_bitwise_equal(reshaped, view(contiguous(swapped), merged),
                         "reshape == contiguous().view()");
}

// --- lessons 9 and 10 ------------------------------------------------------------------

Tensor *load_reference(const char *reference, const char *name) {
    return load_npy(path_join("%s/%s.npy", reference, name));
}

void recorded_gqa_linears(Linear *const layers[4], const char *reference) {
    const char *const names[4] = {"w_query", "w_key", "w_value", "o_proj"};
    for (int i = 0; i < 4; i++) {
        *layers[i] = recorded_linear(reference, names[i]);
    }
}

static const BadFlags GQA_BAD_FLAGS[] = {
    {{"--kv-heads", "3", NULL}, "--kv-heads 3 does not divide --heads 8"},
    {{"--kv-heads", "16", NULL}, "--kv-heads 16 does not divide --heads 8"},
    {{"--heads", "7", NULL}, "--heads 7 does not divide --dim 512"},
    {{"--heads", NULL}, "--heads"},                     // missing value
    {{"--dim", "x", NULL}, "--dim"},
    {{"--batch", "-1", NULL}, "--batch"},
    {{"--dim", "65536", NULL}, "w_query.weight (dim, dim)"},   // 2^32 elements
};

void check_gqa_bad_flags(const char *lesson, const char *program, const BadFlags *cases,
                         int n_cases) {
    check_bad_flags(lesson, program, GQA_BAD_FLAGS,
                    (int)(sizeof GQA_BAD_FLAGS / sizeof GQA_BAD_FLAGS[0]));
    check_bad_flags(lesson, program, cases, n_cases);
}

void check_causal_weights(const Tensor *attn, int cache_len, const char *what) {
    ck_assert_msg(attn->shape.ndim == 4, "%s: attn has %d dims, expected 4", what,
                  attn->shape.ndim);
    int B = size(attn, 0), H = size(attn, 1), T = size(attn, 2), L = size(attn, 3);
    ck_assert_msg(L == cache_len + T, "%s: attn (%s) after %d cached keys", what,
                  size_x_str(attn), cache_len);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            for (int t = 0; t < T; t++) {
                double sum = 0.0;
                for (int s = 0; s < L; s++) {
                    float w = *at4(attn, b, h, t, s);
                    bool future = s > cache_len + t;
                    ck_assert_msg(future ? w == 0.0f : w > 0.0f,
                                  "%s: attn[%d, %d, %d, %d] = %g, key %d %s query %d", what, b,
                                  h, t, s, (double)w, s, future ? "after" : "not after",
                                  cache_len + t);
                    sum += w;
                }
                ck_assert_msg(fabs(sum - 1.0) < 1e-6, "%s: row [%d, %d, %d] sums to %.9f", what,
                              b, h, t, sum);
            }
            if (cache_len == 0) {
                ck_assert_msg(*at4(attn, b, h, 0, 0) == 1.0f, "%s: attn[%d, %d, 0, 0] = %.9g",
                              what, b, h, (double)*at4(attn, b, h, 0, 0));
            }
        }
    }
}

// --- shared by the lesson 1-5 tests ------------------------------------------------

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

Tensor *load_recorded(const char *data, const RecordedCase *c, const char *name) {
    return load_npy(path_join("%s/%s/%s.npy", data, c->dir, name));
}

const RecordedCase V1_CASES[N_V1_CASES] = {
    {"seed0", {NULL}, 0, 3, 2, 4, false},
    {"seed7", {"--seed", "7", NULL}, 7, 3, 2, 4, false},
    {"seed1_batch2_seq5_dim8",
     {"--seed", "1", "--batch", "2", "--seq", "5", "--dim", "8", NULL}, 1, 2, 5, 8, false},
    {"seed3_batch2_seq40_dim16",
     {"--seed", "3", "--batch", "2", "--seq", "40", "--dim", "16", NULL}, 3, 2, 40, 16, false},
};

RunResult check_profiled_run(const char *lesson, const char *data, const RecordedCase *c,
                             const char *const *exact, const char *const *computed) {
    const char *reference = path_join("%s/%s", data, c->dir);
    ReferenceRun run = {lesson, reference, c->args, exact, computed, ROUNDING_ATOL,
                        ROUNDING_RTOL, false};
    RunResult result = check_against_reference(&run);
    const char *expected = read_text(path_join("%s/stdout.txt", reference));
    const char *notebook_end = strstr(expected, " M\n");   // end of the Parameters line
    ck_assert_msg(notebook_end != NULL, "%s: no Parameters line in stdout.txt", reference);
    size_t notebook_length = (size_t)(notebook_end - expected) + 3;
    ck_assert_msg(strncmp(result.out, expected, notebook_length) == 0,
                  "%s: stdout does not start with the notebook's lines:\n%s", reference,
                  result.out);
    return result;
}

int check_weight_rows(const Tensor *att_weight, const Tensor *mask, const char *what) {
    const Tensor *w = att_weight;                                       // (B, T, S)
    ck_assert_msg(w->shape.ndim == 3, "%s: att_weight has %d dims, expected 3", what,
                  w->shape.ndim);
    int masked = 0;
    for (int b = 0; b < size(w, 0); b++) {
        for (int t = 0; t < size(w, 1); t++) {
            double sum = 0.0;
            for (int s = 0; s < size(w, 2); s++) {
                float weight = *at3(w, b, t, s);
                sum += weight;
                if (mask != NULL && *at3(mask, b, t, s) == 0.0f) {
                    ck_assert_msg(weight == 0.0f, "%s: masked weight [%d, %d, %d] = %g", what,
                                  b, t, s, (double)weight);
                    masked++;
                } else {
                    ck_assert_msg(weight > 0.0f, "%s: unmasked weight [%d, %d, %d] is %g", what,
                                  b, t, s, (double)weight);
                }
            }
            ck_assert_msg(fabs(sum - 1.0) < 1e-6, "%s: row [%d, %d] sums to %.9f", what, b, t,
                          sum);
        }
    }
    return masked;
}

// --- lessons 4 and 5: SelfAttV3 and SelfAttV4 ------------------------------------------

const RecordedCase MASKED_CASES[N_MASKED_CASES] = {
    {"seed0", {NULL}, 0, 3, 4, 2, false},
    {"seed0-train", {"--train", NULL}, 0, 3, 4, 2, true},
    {"seed7",
     {"--seed", "7", "--batch", "5", "--seq", "3", "--dim", "4", NULL}, 7, 5, 3, 4, false},
    {"seed7-train",
     {"--seed", "7", "--batch", "5", "--seq", "3", "--dim", "4", "--train", NULL}, 7, 5, 3, 4, true},
    {"seed123",
     {"--seed", "123", "--batch", "2", "--seq", "6", "--dim", "8", NULL}, 123, 2, 6, 8, false},
};

MaskedRun run_masked_cell(const MaskedModule *module, const RecordedCase *c, bool train) {
    MaskedRun run;
    manual_seed(c->seed);
    run.X = rand_tensor(shape3(c->batch, c->seq, c->dim));
    run.b = module->padding_rows(c->batch, c->seq);
    run.mask = repeat(unsqueeze(run.b, 1), (int[]){1, c->seq, 1});
    run.net = module->init(c->dim, train);
    run.ret = module->forward(&run.weights, run.net, run.X, run.mask);
    return run;
}

// The module the tests below check, set by add_masked_module_tests: one per
// test program (check's tests take no arguments, so it waits here).
static const MaskedModule *module_under_test;

START_TEST(test_matches_pytorch) {
    const MaskedModule *m = module_under_test;
    const RecordedCase *c = &MASKED_CASES[_i];
    ReferenceRun run = {m->lesson, path_join("%s/%s", m->data, c->dir), c->args, m->exact,
                        m->computed, ROUNDING_ATOL, ROUNDING_RTOL, true};
    check_against_reference(&run);
}
END_TEST

// `dropped` is zero exactly where `want` is (same shape, element for element).
static void assert_same_zeros(const Tensor *dropped, const Tensor *want, const char *what) {
    assert_same_shape(dropped, want, what);
    int index[MAX_DIMS] = {0};
    for (long e = 0; e < numel(want); e++) {
        ck_assert_msg((*at(dropped, index) == 0.0f) == (*at(want, index) == 0.0f),
                      "%s: element %s dropped in one and not the other", what,
                      index_text(index, want->shape.ndim));
        next_index(index, want->shape.size, want->shape.ndim);
    }
}

START_TEST(test_dropout_matches_pytorch) {
    for (int i = 0; i < N_MASKED_CASES; i++) {
        const RecordedCase *c = &MASKED_CASES[i];
        if (!c->train) {
            continue;
        }
        MaskedRun run = run_masked_cell(module_under_test, c, true);
        const Tensor *want = load_recorded(module_under_test->data, c, "att_weight_dropped");
        const Tensor *got = run.weights.att_weight_dropped;
        assert_close(got, want, ROUNDING_ATOL, ROUNDING_RTOL,
                     path_join("%s att_weight_dropped", c->dir));
        assert_same_zeros(got, want, c->dir);
    }
}
END_TEST

START_TEST(test_rows_sum_to_one_and_masked_are_zero) {
    for (int i = 0; i < N_MASKED_CASES; i++) {
        MaskedRun run = run_masked_cell(module_under_test, &MASKED_CASES[i], false);
        int masked = check_weight_rows(run.weights.att_weight, run.mask, MASKED_CASES[i].dir);
        ck_assert_int_gt(masked, 0);
    }
}
END_TEST

START_TEST(test_padding_rows) {
    const float notebook[] = {1, 1, 1, 0, 1, 1, 0, 0, 1, 0, 0, 0};
    Tensor *want = tensor_from(shape2(3, 4), notebook);
    want->dtype = DTYPE_INT64;
    assert_bitwise_equal(module_under_test->padding_rows(3, 4), want, "b for 3x4");
    const float tall[] = {1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0};   // batch 5, seq 3
    Tensor *want_tall = tensor_from(shape2(5, 3), tall);
    want_tall->dtype = DTYPE_INT64;
    assert_bitwise_equal(module_under_test->padding_rows(5, 3), want_tall, "b for 5x3");
    const Tensor *single = module_under_test->padding_rows(2, 1);
    ck_assert(*at2(single, 0, 0) == 1.0f && *at2(single, 1, 0) == 1.0f);
}
END_TEST

START_TEST(test_dropout_scales_survivors) {
    RecordedCase big = {"big", {NULL}, 3, 4, 32, 2, false};   // 4*32*32 weights: a fair sample
    MaskedRun eval = run_masked_cell(module_under_test, &big, false);
    uint32_t after_eval = random32();
    MaskedRun train = run_masked_cell(module_under_test, &big, true);
    manual_seed(big.seed);
    rand_tensor(shape3(big.batch, big.seq, big.dim));
    module_under_test->init(big.dim, false);
    ck_assert_msg(random32() == after_eval, "eval-mode forward drew random numbers");

    const Tensor *before = eval.weights.att_weight;              // (B, T, S)
    const Tensor *dropped = train.weights.att_weight_dropped;    // (B, T, S)
    assert_bitwise_equal(train.weights.att_weight, before, "att_weight before dropout");
    assert_same_shape(dropped, before, "att_weight after dropout");
    long kept = 0, n_dropped = 0;
    int index[MAX_DIMS] = {0};
    for (long e = 0; e < numel(before); e++) {
        float weight = *at(before, index), after = *at(dropped, index);
        if (weight == 0.0f) {
            ck_assert(after == 0.0f);   // masked stays 0; dropout of a 0 cannot be seen
        } else if (after == 0.0f) {
            n_dropped++;
        } else {
            kept++;
            // PyTorch's arithmetic exactly: noise = 1.0f / 0.9f (the float
            // 1/(1-p)), out = weight * noise. That is weight / 0.9 to one rounding.
            float want = weight * (1.0f / 0.9f);
            ck_assert_msg(after == want, "kept %.9g, eval %.9g * (1/0.9) = %.9g",
                          (double)after, (double)weight, (double)want);
            ck_assert(fabs(after - weight / 0.9) <= 2e-7 * after);
        }
        next_index(index, before->shape.size, before->shape.ndim);
    }
    double fraction = (double)n_dropped / (double)(kept + n_dropped);
    ck_assert_msg(fraction > 0.05 && fraction < 0.15, "dropped %.3f of the weights", fraction);
}
END_TEST

START_TEST(test_fully_masked_row) {
    RecordedCase c = {"masked", {NULL}, 0, 2, 4, 2, false};
    MaskedRun run = run_masked_cell(module_under_test, &c, false);
    Tensor *mask = ones(shape3(2, 4, 4));   // batch row 1: every key masked
    for (int t = 0; t < 4; t++) {
        for (int s = 0; s < 4; s++) {
            *at3(mask, 1, t, s) = 0.0f;
        }
    }
    MaskedWeights w;
    const Tensor *ret = module_under_test->forward(&w, run.net, run.X, mask);   // (2, 4, 2)
    for (int t = 0; t < 4; t++) {
        for (int s = 0; s < 4; s++) {
            ck_assert_msg(*at3(w.att_weight, 1, t, s) == 0.25f, "fully masked row not uniform");
        }
        ck_assert(!isnan(*at3(ret, 1, t, 0)) && !isnan(*at3(ret, 1, t, 1)));
    }
}
END_TEST

START_TEST(test_all_ones_mask_is_no_mask) {
    for (int i = 0; i < N_MASKED_CASES; i++) {
        const RecordedCase *c = &MASKED_CASES[i];
        if (c->train) {
            continue;
        }
        MaskedRun run = run_masked_cell(module_under_test, c, false);
        const Tensor *ones_mask = ones(shape3(c->batch, c->seq, c->seq));        // (B, T, S)
        const Tensor *with_ones = module_under_test->forward(NULL, run.net, run.X, ones_mask);
        const Tensor *unmasked = module_under_test->forward(NULL, run.net, run.X, NULL);
        assert_bitwise_equal(with_ones, unmasked, path_join("%s: all-ones mask vs no mask",
                                                            c->dir));
    }
}
END_TEST

// X = [[1, 0], [0, 1], [1, 1]], and key 2 is padding:
//   scores row 0 = [1, 0, 1] / sqrt(2) -> masked [0.7071, 0, -1e20]
//   weights row 0 = [e^0.7071, 1, 0] / (e^0.7071 + 1) = [0.66976, 0.33024, 0]
//   ret row 0 = 0.66976 * [1, 0] + 0.33024 * [0, 1]
// Query 2 is padding, yet it gets weights too: scores [1, 1, 2]/sqrt(2)
// masked to [0.7071, 0.7071, -1e20] -> [0.5, 0.5, 0] and ret [0.5, 0.5].
void check_hand_worked(const MaskedModule *module, const void *net) {
    const float x_values[] = {1, 0, 0, 1, 1, 1};
    const Tensor *X = tensor_from(shape3(1, 3, 2), x_values);
    const float b_values[] = {1, 1, 0};
    const Tensor *b = tensor_from(shape2(1, 3), b_values);
    const Tensor *mask = repeat(unsqueeze(b, 1), (int[]){1, 3, 1});   // (1, 3, 3)
    MaskedWeights w;
    const Tensor *ret = module->forward(&w, net, X, mask);

    double e = exp(1.0 / sqrt(2.0));
    double w0 = e / (e + 1.0), w1 = 1.0 / (e + 1.0);
    double e_row1 = exp(1.0 / sqrt(2.0));   // query 1 = [0, 1]: scores [0, 1, 1]/sqrt(2)
    const float want_w[] = {
        (float)w0, (float)w1, 0,
        (float)(1.0 / (1.0 + e_row1)), (float)(e_row1 / (1.0 + e_row1)), 0,
        0.5f, 0.5f, 0,
    };
    assert_close(w.att_weight, tensor_from(shape3(1, 3, 3), want_w), 1e-6f, 1e-6f,
                 "hand-worked att_weight");
    const float want_ret[] = {
        (float)w0, (float)w1,
        (float)(1.0 / (1.0 + e_row1)), (float)(e_row1 / (1.0 + e_row1)),
        0.5f, 0.5f,
    };
    assert_close(ret, tensor_from(shape3(1, 3, 2), want_ret), 1e-6f, 1e-6f, "hand-worked ret");
}

START_TEST(test_bad_flags) {
    static const BadFlags BAD[] = {
        {{"--dim", "0", NULL}, "--dim"},
        {{"--seq", "x", NULL}, "--seq"},
        {{"--batch", "-1", NULL}, "--batch"},
        {{"--dim", "2.5", NULL}, "--dim"},
        {{"--seq", "70000", NULL}, "--seq"},
        {{"--seed", "abc", NULL}, "--seed"},
        {{"--dim", NULL}, "--dim"},                      // missing value
        {{"--bogus", "1", NULL}, "--bogus"},
        {{"--train", "yes", NULL}, "yes"},               // --train takes no value
        {{"--batch", "65536", "--seq", "65536", NULL}, "att_weight"},   // too big together
    };
    check_bad_flags(module_under_test->lesson, module_under_test->program, BAD,
                    sizeof BAD / sizeof BAD[0]);
}
END_TEST

void add_masked_module_tests(Suite *suite, const MaskedModule *module) {
    module_under_test = module;
    TCase *pytorch = new_tcase("pytorch");
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, N_MASKED_CASES);
    tcase_add_test(pytorch, test_dropout_matches_pytorch);
    suite_add_tcase(suite, pytorch);
    TCase *invariants = new_tcase("invariants");
    tcase_add_test(invariants, test_rows_sum_to_one_and_masked_are_zero);
    tcase_add_test(invariants, test_padding_rows);
    tcase_add_test(invariants, test_all_ones_mask_is_no_mask);
    tcase_add_test(invariants, test_dropout_scales_survivors);
    tcase_add_test(invariants, test_fully_masked_row);
    suite_add_tcase(suite, invariants);
    TCase *flags = new_tcase("flags");
    tcase_add_test(flags, test_bad_flags);
    suite_add_tcase(suite, flags);
}

// --- bad input and output paths ------------------------------------------------------

RunResult run_program_with(const char *dir, int seconds, const char *program,
                           const char *const *args) {
    const char *path = program;   // made absolute, so that it still holds after the chdir
    if (program[0] != '/') {
        char here_name[1024];
        ck_assert(getcwd(here_name, sizeof here_name) != NULL);
        path = path_join("%s/%s", here_name, program);
    }
    const char *argv[256] = {"-s", "TERM", path_join("%d", seconds), path};
    int n = 4;
    append_args(argv, &n, 256, args);
    int here = open(".", O_RDONLY | O_DIRECTORY);
    ck_assert(here >= 0);
    ck_assert_msg(dir == NULL || chdir(dir) == 0, "cannot enter %s", dir);
    // timeout(1) with 0 seconds never times out; run it always, so the
    // program's argv is built one way.
    RunResult r = run_program("/usr/bin/timeout", argv);
    int back = fchdir(here);
    close(here);
    ck_assert(back == 0);
    return r;
}

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
