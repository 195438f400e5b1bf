// test_print.c - tensor_str() and size_str() against PyTorch 1.13's own text.
//
// Three kinds of test:
//   * recorded cases: tests/reference/gen_print.py saved, for each rule of
//     docs/pytorch-print.md, a tensor (<case>.npy) and the text
//     of str(tensor) (<case>.txt). manifest.txt lists the cases, with the
//     suffix to pass and, for a view, the permutation to apply first.
//   * fuzz: 400 random tensors (0-5 dims, float32/int64/bool, nan, inf, -0,
//     -1e20 and 1e-7 injected, some summarised, some permuted), their values
//     in fuzz_values.npy and their texts in fuzz.txt.
//   * hand-written: tensors built here whose text is spelled out below, from
//     docs/pytorch-print.md, so the rules can be read without opening a data file.
// Every comparison is of the whole string; a mismatch shows both texts.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "exact/print.h"

#define PRINT_DIR DATA_DIR "/print"
#define FUZZ_CASES 400

// --- comparing texts -------------------------------------------------------------

// Counts mismatches over many cases and keeps the first one to show. check
// cannot carry a message over about 4 KB, so the failure message shows the
// first 1500 characters of each text; stderr gets them whole.
typedef struct {
    int checked;
    int failed;
    const char *first_name;
    const char *first_got;
    const char *first_want;
} Tally;

static void compare(Tally *tally, const char *name, const char *got, const char *want) {
    tally->checked += 1;
    if (strcmp(got, want) == 0) {
        return;
    }
    if (tally->failed == 0) {
        fprintf(stderr, "print mismatch: %s\n--- got ---\n%s\n--- want (PyTorch) ---\n%s\n",
                name, got, want);
        tally->first_name = name;
        tally->first_got = got;
        tally->first_want = want;
    } else {
        fprintf(stderr, "print mismatch: %s\n", name);
    }
    tally->failed += 1;
}

static void assert_no_mismatch(const Tally *tally) {
    ck_assert_msg(tally->failed == 0,
                  "%d of %d texts differ (all named on stderr); first %s:\n"
                  "--- got ---\n%.1500s\n--- want (PyTorch) ---\n%.1500s",
                  tally->failed, tally->checked, tally->first_name, tally->first_got,
                  tally->first_want);
}

static void assert_prints(const Tensor *t, const char *suffix, const char *want) {
    ck_assert_str_eq(tensor_str(t, suffix), want);
}

// `order` as digits ("201") or "-" for none: the view PyTorch printed.
static const Tensor *permuted(const Tensor *t, const char *order) {
    if (strcmp(order, "-") == 0) {
        return t;
    }
    int dims[MAX_DIMS];
    ck_assert_int_eq((int)strlen(order), t->shape.ndim);
    for (int d = 0; d < t->shape.ndim; d++) {
        dims[d] = order[d] - '0';
    }
    return permute(t, dims);
}

// --- recorded cases ----------------------------------------------------------------

START_TEST(test_recorded_cases) {
    const char *manifest = read_text(PRINT_DIR "/manifest.txt");
    Tally tally = {0};
    const char *line;
    while ((line = next_line(&manifest)) != NULL) {
        char name[128], suffix[128], order[8];
        ck_assert_msg(sscanf(line, "%127s %127s %7s", name, suffix, order) == 3,
                      "bad manifest line '%s'", line);
        const Tensor *t = permuted(load_npy(path_join(PRINT_DIR "/%s.npy", name)), order);
        const char *want = read_text(path_join(PRINT_DIR "/%s.txt", name));
        const char *got = tensor_str(t, strcmp(suffix, "-") == 0 ? NULL : suffix);
        compare(&tally, path_join("%s", name), got, want);
    }
    ck_assert_int_ge(tally.checked, 100);  // the manifest was not cut short
    assert_no_mismatch(&tally);
}
END_TEST

// --- fuzz ------------------------------------------------------------------------------

// One fuzz case: a header line "# <dtype> <ndim> <shape...> <order...>",
// then the text, ending where the next header starts.
typedef struct {
    DType dtype;
    Shape shape;
    int order[MAX_DIMS];
    const char *text;
} FuzzCase;

static DType dtype_named(const char *name) {
    if (strcmp(name, "int64") == 0) {
        return DTYPE_INT64;
    }
    if (strcmp(name, "bool") == 0) {
        return DTYPE_BOOL;
    }
    ck_assert_str_eq(name, "float32");
    return DTYPE_FLOAT32;
}

// Read the next whole number from the header, moving *cursor past it.
static int header_number(const char **cursor) {
    char *end;
    long value = strtol(*cursor, &end, 10);
    ck_assert_msg(end != *cursor, "fuzz.txt: a number expected at '%.20s'", *cursor);
    *cursor = end;
    return (int)value;
}

static FuzzCase next_fuzz_case(const char **cursor) {
    FuzzCase c;
    const char *header = next_line(cursor);
    char dtype[16];
    ck_assert_msg(sscanf(header, "# %15s", dtype) == 1, "fuzz.txt: bad header '%s'", header);
    c.dtype = dtype_named(dtype);
    const char *numbers = header + 2 + strlen(dtype);
    c.shape.ndim = header_number(&numbers);
    for (int d = 0; d < c.shape.ndim; d++) {
        c.shape.size[d] = header_number(&numbers);
    }
    for (int d = 0; d < c.shape.ndim; d++) {
        c.order[d] = header_number(&numbers);
    }
    // The text runs to the newline before the next "# " header (or the end).
    const char *next = strstr(*cursor, "\n# ");
    size_t length = next != NULL ? (size_t)(next - *cursor) : strlen(*cursor) - 1;
    char *text = arena_alloc(length + 1, 1);
    memcpy(text, *cursor, length);
    c.text = text;
    *cursor += length + 1;  // and the newline after the text
    return c;
}

START_TEST(test_fuzz) {
    const char *cursor = read_text(PRINT_DIR "/fuzz.txt");
    const Tensor *values = load_npy(PRINT_DIR "/fuzz_values.npy");
    long used = 0;  // values taken by the cases so far
    Tally tally = {0};
    for (int k = 0; k < FUZZ_CASES; k++) {
        FuzzCase c = next_fuzz_case(&cursor);
        Tensor *base = tensor_from(c.shape, values->data + used);
        base->dtype = c.dtype;
        used += numel(base);
        ck_assert_int_le(used, numel(values));
        const Tensor *t = base->shape.ndim >= 2 ? permute(base, c.order) : base;
        compare(&tally, path_join("fuzz case %d", k), tensor_str(t, NULL), c.text);
    }
    ck_assert_int_eq(used, numel(values));  // every value used: the file was read in step
    ck_assert_str_eq(cursor, "");
    assert_no_mismatch(&tally);
}
END_TEST

// --- hand-written cases -------------------------------------------------------------

static Tensor *vector(int n, const float *values) {
    return tensor_from(shape1(n), values);
}

START_TEST(test_nan_inf_and_negative_zero) {
    // -NAN has its sign bit set: glibc's printf would write "-nan".
    assert_prints(vector(2, (float[]){1.0f, -NAN}), NULL, "tensor([1., nan])");
    assert_prints(vector(2, (float[]){1.0f, -INFINITY}), NULL, "tensor([1., -inf])");
    assert_prints(vector(2, (float[]){-0.0f, 1.0f}), NULL, "tensor([-0., 1.])");
    assert_prints(vector(3, (float[]){0.0f, 0.5f, -0.0f}), NULL,
                  "tensor([0.0000, 0.5000, -0.0000])");
    assert_prints(tensor_from(shape2(2, 2), (float[]){1.0f, NAN, 1e-5f, -2.0f}), NULL,
                  "tensor([[ 1.0000e+00,         nan],\n"
                  "        [ 1.0000e-05, -2.0000e+00]])");
}
END_TEST

START_TEST(test_modes_and_boundaries) {
    assert_prints(vector(3, (float[]){1.0f, 0.0f, 1e5f}), NULL,
                  "tensor([1.0000e+00, 0.0000e+00, 1.0000e+05])");
    assert_prints(vector(1, (float[]){1e8f}), NULL, "tensor([100000000.])");
    assert_prints(vector(1, (float[]){1.5e8f}), NULL, "tensor([1.5000e+08])");
    assert_prints(vector(2, (float[]){0.03125f, 1.0f}), NULL, "tensor([0.0312, 1.0000])");
    // float32 1e-4 is 9.99999974738e-05, below 1e-4: sci mode.
    assert_prints(vector(2, (float[]){1e-4f, 1e-2f}), NULL, "tensor([1.0000e-04, 1.0000e-02])");
    // The ratio is 1000.0000032 in double but exactly 1000 in float: sci.
    assert_prints(vector(2, (float[]){9.2148f, 0.0092148f}), NULL,
                  "tensor([9.2148e+00, 9.2148e-03])");
}
END_TEST

START_TEST(test_zero_dims) {
    Shape scalar = {.ndim = 0};
    assert_prints(full(scalar, 3.5f), NULL, "tensor(3.5000)");
    assert_prints(full(scalar, -0.0f), NULL, "tensor(-0.)");
    assert_prints(full(scalar, 1e-5f), NULL, "tensor(1.0000e-05)");
    Tensor *five = full(scalar, 5.0f);
    five->dtype = DTYPE_INT64;
    assert_prints(five, NULL, "tensor(5)");
}
END_TEST

// Empty tensors built here, including dtype + suffix combinations.
START_TEST(test_empty) {
    assert_prints(zeros(shape1(0)), NULL, "tensor([])");
    assert_prints(zeros(shape2(0, 3)), NULL, "tensor([], size=(0, 3))");
    Tensor *ints = zeros(shape2(2, 0));
    ints->dtype = DTYPE_INT64;
    assert_prints(ints, NULL, "tensor([], size=(2, 0), dtype=torch.int64)");
    assert_prints(ints, "requires_grad=True",
                  "tensor([], size=(2, 0), dtype=torch.int64, requires_grad=True)");
    Tensor *flags = zeros(shape5(1, 2, 0, 4, 5));
    flags->dtype = DTYPE_BOOL;
    assert_prints(flags, NULL, "tensor([], size=(1, 2, 0, 4, 5), dtype=torch.bool)");
}
END_TEST

START_TEST(test_int64_and_bool) {
    Tensor *ints = vector(3, (float[]){-5.0f, 100.0f, 7.0f});
    ints->dtype = DTYPE_INT64;
    assert_prints(ints, NULL, "tensor([ -5, 100,   7])");
    Tensor *flags = vector(2, (float[]){1.0f, 0.0f});
    flags->dtype = DTYPE_BOOL;
    assert_prints(flags, NULL, "tensor([ True, False])");
}
END_TEST

// Views read through their strides: an expanded row repeats (stride 0),
// a narrowed column starts at an offset.
START_TEST(test_views) {
    Tensor *row = tensor_from(shape2(1, 3), (float[]){1.0f, 2.0f, 3.0f});
    assert_prints(expand(row, shape2(2, 3)), NULL,
                  "tensor([[1., 2., 3.],\n"
                  "        [1., 2., 3.]])");
    Tensor *grid = tensor_from(shape2(2, 3), (float[]){0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f});
    assert_prints(narrow(grid, 1, 1, 2), NULL,
                  "tensor([[1.5000, 2.5000],\n"
                  "        [4.5000, 5.5000]])");
    assert_prints(transpose(grid, 0, 1), NULL,
                  "tensor([[0.5000, 3.5000],\n"
                  "        [1.5000, 4.5000],\n"
                  "        [2.5000, 5.5000]])");
}
END_TEST

// A suffix stays on the line while that line plus ", " + suffix + ")" fits in 80.
START_TEST(test_suffix_placement) {
    assert_prints(vector(3, (float[]){0.068f, 1.8885f, 1.7604f}), "grad_fn=<MulBackward0>",
                  "tensor([0.0680, 1.8885, 1.7604], grad_fn=<MulBackward0>)");
    float seven[7] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f};
    assert_prints(vector(7, seven), "requires_grad=True",
                  "tensor([0.1000, 0.2000, 0.3000, 0.4000, 0.5000, 0.6000, 0.7000],\n"
                  "       requires_grad=True)");
}
END_TEST

START_TEST(test_size_str) {
    ck_assert_str_eq(size_str(zeros(shape3(3, 2, 4))), "torch.Size([3, 2, 4])");
    ck_assert_str_eq(size_str(zeros(shape1(5))), "torch.Size([5])");
    ck_assert_str_eq(size_str(zeros((Shape){.ndim = 0})), "torch.Size([])");
    ck_assert_str_eq(size_str(zeros(shape2(0, 3))), "torch.Size([0, 3])");
    ck_assert_str_eq(size_str(zeros(shape5(1, 256, 8, 2, 64))), "torch.Size([1, 256, 8, 2, 64])");
    ck_assert_str_eq(size_str(transpose(zeros(shape2(2, 7)), 0, 1)), "torch.Size([7, 2])");
}
END_TEST

static Suite *print_suite(void) {
    Suite *suite = suite_create("print");
    TCase *recorded = new_tcase("recorded from PyTorch");
    tcase_add_test(recorded, test_recorded_cases);
    tcase_add_test(recorded, test_fuzz);
    suite_add_tcase(suite, recorded);
    TCase *by_hand = new_tcase("hand-written");
    tcase_add_test(by_hand, test_nan_inf_and_negative_zero);
    tcase_add_test(by_hand, test_modes_and_boundaries);
    tcase_add_test(by_hand, test_zero_dims);
    tcase_add_test(by_hand, test_empty);
    tcase_add_test(by_hand, test_int64_and_bool);
    tcase_add_test(by_hand, test_views);
    tcase_add_test(by_hand, test_suffix_placement);
    tcase_add_test(by_hand, test_size_str);
    suite_add_tcase(suite, by_hand);
    return suite;
}

int main(void) { return run_suite(print_suite()); }
