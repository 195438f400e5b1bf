// test_block_ops.c - layer_norm and gelu against PyTorch, bit for bit.
//
// tests/reference/gen_block_ops.py ran F.layer_norm and F.gelu (PyTorch 1.13)
// on inputs chosen to reach every path of their kernels: rows shorter than
// the 8-lane vector, with a tail, of one 128-number chunk and of many;
// BERT's eps; a constant row; GELU on one element (PyTorch's own kernel)
// and on many (oneDNN's), far enough out that exp(-z^2) underflows.
// common/exact/layer_norm_exact.c and common/exact/gelu_exact.c do PyTorch's
// arithmetic, so every output must match to the bit. The textbook forms
// (sums in double, the C library's erff) are right to within a rounding and
// differ from PyTorch's in many last bits: the last test shows they would
// fail here, so the comparison is a real one.
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define BLOCK_DATA DATA_DIR "/block_ops"

// The names of the recorded cases of one kind: every "<prefix><name>_x.npy"
// in BLOCK_DATA gives <name>. Returns how many (at most max).
static int recorded_cases(const char **names, int max, const char *prefix) {
    DIR *dir = opendir(BLOCK_DATA);
    ck_assert_msg(dir != NULL, "no " BLOCK_DATA " (tests/reference/gen_block_ops.py writes it)");
    int count = 0;
    size_t skip = strlen(prefix);
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL && count < max) {
        const char *file = entry->d_name;
        size_t length = strlen(file);
        if (length > skip + 6 && strncmp(file, prefix, skip) == 0 &&
            strcmp(file + length - 6, "_x.npy") == 0) {
            names[count] = path_join("%.*s", (int)(length - skip - 6), file + skip);
            count += 1;
        }
    }
    closedir(dir);
    return count;
}

static Tensor *recorded(const char *kind, const char *name, const char *part) {
    return load_npy(path_join(BLOCK_DATA "/%s_%s_%s.npy", kind, name, part));
}

START_TEST(test_layer_norm_matches_pytorch_bit_for_bit) {
    const char *names[64];
    int count = recorded_cases(names, 64, "layer_norm_");
    ck_assert_int_eq(count, 33);
    for (int i = 0; i < count; i++) {
        double eps = atof(read_text(path_join(BLOCK_DATA "/layer_norm_%s_eps.txt", names[i])));
        const Tensor *y = layer_norm(recorded("layer_norm", names[i], "x"),
                                     recorded("layer_norm", names[i], "weight"),
                                     recorded("layer_norm", names[i], "bias"), eps);
        assert_bitwise_equal(y, recorded("layer_norm", names[i], "y"),
                             path_join("layer_norm %s", names[i]));
    }
}
END_TEST

START_TEST(test_gelu_matches_pytorch_bit_for_bit) {
    const char *names[16];
    int count = recorded_cases(names, 16, "gelu_");
    ck_assert_int_eq(count, 10);
    for (int i = 0; i < count; i++) {
        assert_bitwise_equal(gelu(recorded("gelu", names[i], "x")),
                             recorded("gelu", names[i], "y"), path_join("gelu %s", names[i]));
    }
}
END_TEST

// The helper's gelu is x * Phi(x) to within |x|/2 times erf's error: the
// approximation's 1.5e-7, plus the roundings of 1 - t * poly * exp(-z^2),
// which cancels for small z (measured: at most 4.2e-7 on [-8, 8]); oneDNN's exp is
// exp() to within 4e-7 relative (its polynomial; measured 3.8e-7 at most),
// exactly 0 where exp(x) < FLT_MIN, and 0 also from -87.34 to about -86.99,
// where n = floor(x / ln2 + 1/2) = -126: oneDNN builds 2^(n-1) = 2^-127 from
// its bits and gets 0, not a subnormal.
START_TEST(test_gelu_close_to_the_true_function) {
    for (int i = -8000; i <= 8000; i += 7) {
        float x = (float)i / 1000.0f;
        double want = x * 0.5 * (1.0 + erf(x / sqrt(2.0)));
        float got = *at1(gelu(tensor_from(shape1(2), (float[]){x, 0.0f})), 0);
        ck_assert_msg(fabs(got - want) <= fabs(x) * 0.5 * 5e-7 + 2.4e-7 * fabs(want) + 1e-12,
                      "gelu(%g) = %.9g, true %.9g", (double)x, (double)got, want);
    }
    for (int i = -869; i <= 880; i += 3) {
        float x = (float)i / 10.0f;
        double want = exp((double)x);
        ck_assert_msg(fabs(onednn_expf(x) - want) <= 4e-7 * want, "exp(%g) = %.9g, not %.9g",
                      (double)x, (double)onednn_expf(x), want);
    }
    ck_assert(onednn_expf(-88.0f) == 0.0f && onednn_expf(-1000.0f) == 0.0f);
    ck_assert(onednn_expf(-87.0f) == 0.0f);   // n = floor(-87 / ln2 + 0.5) = -126
    ck_assert(onednn_expf(-86.9f) > 0.0f);    // n = -125: 2^-126, a normal float
}
END_TEST

// What the exact files are for: the textbook LayerNorm (mean and variance
// summed in double, y = (x - mean) / sqrt(var + eps) * w + b) and GELU
// (the C library's erff) are within a rounding of PyTorch, yet differ from
// it in the last bit in many places. Were the helper's ops written so, the
// two tests above would fail.
START_TEST(test_textbook_forms_differ_from_pytorch) {
    const Tensor *x = recorded("layer_norm", "len100", "x");                     // (rows, 100)
    const Tensor *w = recorded("layer_norm", "len100", "weight");
    const Tensor *b = recorded("layer_norm", "len100", "bias");
    const Tensor *want = recorded("layer_norm", "len100", "y");
    int rows = size(x, 0), n = size(x, 1), ln_differ = 0;
    for (int r = 0; r < rows; r++) {
        double mean = 0.0, var = 0.0;
        for (int c = 0; c < n; c++) {
            mean += *at2(x, r, c) / n;
        }
        for (int c = 0; c < n; c++) {
            var += (*at2(x, r, c) - mean) * (*at2(x, r, c) - mean) / n;
        }
        for (int c = 0; c < n; c++) {
            float y = (float)((*at2(x, r, c) - mean) / sqrt(var + 1e-5) * *at1(w, c) + *at1(b, c));
            ln_differ += y != *at2(want, r, c);
            ck_assert_msg(fabsf(y - *at2(want, r, c)) <= 1e-5f * (1.0f + fabsf(y)), "row %d", r);
        }
    }
    const Tensor *grid = recorded("gelu", "grid", "x");
    const Tensor *gelu_want = recorded("gelu", "grid", "y");
    int gelu_differ = 0;
    for (int i = 0; i < size(grid, 0); i++) {
        float s = *at1(grid, i);
        float y = s * 0.5f * (1.0f + erff(s * 0.70710678118654752f));
        gelu_differ += y != *at1(gelu_want, i);
    }
    ck_assert_msg(ln_differ > rows * n / 10, "textbook layer_norm differs in %d of %d", ln_differ,
                  rows * n);
    ck_assert_msg(gelu_differ > size(grid, 0) / 10, "erff's gelu differs in %d of %d",
                  gelu_differ, size(grid, 0));
}
END_TEST

static Suite *block_ops_suite(void) {
    Suite *suite = suite_create("block_ops");
    TCase *exact = new_tcase("layer_norm and gelu against PyTorch");
    tcase_add_test(exact, test_layer_norm_matches_pytorch_bit_for_bit);
    tcase_add_test(exact, test_gelu_matches_pytorch_bit_for_bit);
    tcase_add_test(exact, test_gelu_close_to_the_true_function);
    tcase_add_test(exact, test_textbook_forms_differ_from_pytorch);
    suite_add_tcase(suite, exact);
    return suite;
}

int main(void) { return run_suite(block_ops_suite()); }
