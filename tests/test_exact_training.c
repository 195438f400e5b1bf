// test_exact_training.c - the exact kernels training needs, against PyTorch 1.13 bit for bit.
//
// tests/reference/gen_exact_training.py recorded what PyTorch's CPU kernels give for
// torch.log, log_softmax and its backward, softmax's backward, and torch.sum down the first
// dim of a contiguous matrix and of a permuted one; common/exact/ must give the same floats
// (lesson 16 builds cross-entropy, attention's backward and the weight gradients of RMSNorm
// and of grouped-query attention from them). The sizes reach every path: rows shorter than
// 8, whole vectors and tails, 32-column blocks and the columns after them, blocks of 4, more
// rows than one level of the sum's cascade. The last tests show the orders matter: the
// textbook formulas give other floats for some of the same inputs.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exact/softmax_exact.h"
#include "exact/sum_exact.h"
#include "harness.h"

#define DATA DATA_DIR "/exact_training"

enum { MAX_SHAPES = 16 };

// The shapes of one recording, a line each of sizes.txt ("rows n", or "rows a b").
typedef struct {
    long size[MAX_SHAPES][3];
    int count;
} Shapes;

static Shapes shapes(const char *name) {
    Shapes s = {.count = 0};
    const char *cursor = read_text(path_join("%s/%s", DATA, name));
    for (const char *line = next_line(&cursor); line != NULL; line = next_line(&cursor)) {
        ck_assert_int_lt(s.count, MAX_SHAPES);
        long *size = s.size[s.count++];
        size[2] = 1;
        ck_assert_int_ge(sscanf(line, "%ld %ld %ld", &size[0], &size[1], &size[2]), 2);
    }
    return s;
}

static const float *recorded(const char *name) {
    return load_npy(path_join("%s/%s.npy", DATA, name))->data;
}

static float *floats_of(long n) {
    float *x = malloc((size_t)n * sizeof(float));
    ck_assert_ptr_nonnull(x);
    return x;
}

START_TEST(test_log_matches_pytorch) {
    const Tensor *x = load_npy(DATA "/log_x.npy");
    const float *want = recorded("log_y");
    float *got = floats_of(numel(x));
    for (long i = 0; i < numel(x); i++) {
        got[i] = sleef_logf(x->data[i]);
    }
    assert_same_floats(got, want, numel(x), "log of 1e-30 .. 1e30");
    free(got);
    ck_assert(sleef_logf(1.0f) == 0.0f);
    ck_assert(isinf(sleef_logf(0.0f)) && sleef_logf(0.0f) < 0);
    ck_assert(isnan(sleef_logf(-1.0f)));
}
END_TEST

START_TEST(test_log_softmax_and_its_backward_match_pytorch) {
    Shapes s = shapes("ls_sizes.txt");
    const float *x = recorded("ls_x"), *g = recorded("ls_g");
    const float *y = recorded("ls_y"), *dx = recorded("ls_dx");
    long at = 0;
    for (int i = 0; i < s.count; i++) {
        long rows = s.size[i][0], n = s.size[i][1];
        float *out = floats_of(rows * n), *grad_input = floats_of(rows * n);
        log_softmax_exact_lastdim(out, &x[at], rows, (int)n);
        assert_same_floats(out, &y[at], rows * n, path_join("log_softmax (%ld, %ld)", rows, n));
        log_softmax_exact_backward_lastdim(grad_input, &g[at], out, rows, (int)n);
        assert_same_floats(grad_input, &dx[at], rows * n,
                           path_join("log_softmax's backward (%ld, %ld)", rows, n));
        free(out);
        free(grad_input);
        at += rows * n;
    }
}
END_TEST

// softmax's backward: (g - sum_i g_i y_i) * y for each row, y = softmax(x).
START_TEST(test_softmax_backward_matches_pytorch) {
    Shapes s = shapes("sm_sizes.txt");
    const float *x = recorded("sm_x"), *g = recorded("sm_g"), *dx = recorded("sm_dx");
    long at = 0;
    for (int i = 0; i < s.count; i++) {
        long rows = s.size[i][0], n = s.size[i][1];
        float *y = floats_of(rows * n), *grad_input = floats_of(rows * n);
        memcpy(y, &x[at], (size_t)(rows * n) * sizeof(float));
        softmax_exact_lastdim(y, rows, (int)n);
        for (long r = 0; r < rows; r++) {
            const float *gr = &g[at + r * n], *yr = &y[r * n];
            float row = softmax_exact_backward_row(gr, yr, (int)n);
            for (long k = 0; k < n; k++) {
                grad_input[r * n + k] = (gr[k] - row) * yr[k];
            }
        }
        assert_same_floats(grad_input, &dx[at], rows * n,
                           path_join("softmax's backward (%ld, %ld)", rows, n));
        free(y);
        free(grad_input);
        at += rows * n;
    }
}
END_TEST

START_TEST(test_column_sums_match_pytorch) {
    Shapes s = shapes("col_sizes.txt");
    const float *x = recorded("col_x"), *want = recorded("col_sums");
    long at = 0, out = 0;
    for (int i = 0; i < s.count; i++) {
        long rows = s.size[i][0], cols = s.size[i][1];
        float *sums = floats_of(cols);
        sum_exact_columns(sums, &x[at], rows, cols);
        assert_same_floats(sums, &want[out], cols, path_join("x.sum(0), x (%ld, %ld)", rows, cols));
        free(sums);
        at += rows * cols;
        out += cols;
    }
}
END_TEST

// x (rows, a, b) contiguous, x.permute(0, 2, 1).sum(0), a contiguous (b, a): PyTorch walks
// the result's rows, j of b, each the sums of `a` columns x[r][i][j] that are b floats apart
// (rows a * b apart), in blocks of 4 columns (scalar_outer_sum): sum_exact_columns_strided.
START_TEST(test_permuted_sums_match_pytorch) {
    Shapes s = shapes("perm_sizes.txt");
    const float *x = recorded("perm_x"), *want = recorded("perm_sums");
    long at = 0, out = 0;
    for (int i = 0; i < s.count; i++) {
        long rows = s.size[i][0], a = s.size[i][1], b = s.size[i][2];
        float *sums = floats_of(a * b);
        for (long j = 0; j < b; j++) {
            sum_exact_columns_strided(&sums[j * a], &x[at + j], rows, a, a * b, b);
        }
        assert_same_floats(sums, &want[out], a * b,
                           path_join("x.permute(0, 2, 1).sum(0), x (%ld, %ld, %ld)", rows, a, b));
        free(sums);
        at += rows * a * b;
        out += a * b;
    }
}
END_TEST

// The textbook orders give other floats for some of the same inputs: a column summed top to
// bottom, softmax's row term summed left to right, each product rounded.
START_TEST(test_textbook_orders_differ) {
    Shapes s = shapes("col_sizes.txt");
    const float *x = recorded("col_x"), *want = recorded("col_sums");
    long at = 0, out = 0;
    int differ = 0;
    for (int i = 0; i < s.count; i++) {
        long rows = s.size[i][0], cols = s.size[i][1];
        for (long c = 0; c < cols; c++) {
            float sum = 0.0f;
            for (long r = 0; r < rows; r++) {
                sum += x[at + r * cols + c];
            }
            differ += sum != want[out + c];
        }
        at += rows * cols;
        out += cols;
    }
    ck_assert_msg(differ >= 20, "only %d column sums differ", differ);
    Shapes sm = shapes("sm_sizes.txt");
    const float *sx = recorded("sm_x"), *g = recorded("sm_g"), *dx = recorded("sm_dx");
    differ = 0;
    at = 0;
    for (int i = 0; i < sm.count; i++) {
        long rows = sm.size[i][0], n = sm.size[i][1];
        float *y = floats_of(rows * n);
        memcpy(y, &sx[at], (size_t)(rows * n) * sizeof(float));
        softmax_exact_lastdim(y, rows, (int)n);
        for (long r = 0; r < rows; r++) {
            float row = 0.0f;
            for (long k = 0; k < n; k++) {
                row += g[at + r * n + k] * y[r * n + k];
            }
            for (long k = 0; k < n; k++) {
                differ += (g[at + r * n + k] - row) * y[r * n + k] != dx[at + r * n + k];
            }
        }
        free(y);
        at += rows * n;
    }
    ck_assert_msg(differ >= 20, "only %d softmax gradients differ", differ);
}
END_TEST

static Suite *exact_training_suite(void) {
    Suite *suite = suite_create("exact_training");
    TCase *tc = new_tcase("exact_training");
    tcase_add_test(tc, test_log_matches_pytorch);
    tcase_add_test(tc, test_log_softmax_and_its_backward_match_pytorch);
    tcase_add_test(tc, test_softmax_backward_matches_pytorch);
    tcase_add_test(tc, test_column_sums_match_pytorch);
    tcase_add_test(tc, test_permuted_sums_match_pytorch);
    tcase_add_test(tc, test_textbook_orders_differ);
    suite_add_tcase(suite, tc);
    return suite;
}

int main(void) { return run_suite(exact_training_suite()); }
