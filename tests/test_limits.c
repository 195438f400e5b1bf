// test_limits.c - every operation that makes a shape refuses sizes near
// INT_MAX and MAX_ELEMENTS with a message, and never multiplies them in a
// type they could overflow (under `make sanitize`, UBSan would stop the
// program at the first signed overflow; here the message is checked). The
// .npy writer does not convert a float to an int64 that cannot hold it.
//
// Nothing big is allocated: the large inputs are expand()ed views of one
// element (stride 0), which cost nothing however many elements they show.
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lesson/npy.h"

#define BIG INT_MAX
#define LIMIT ((int)MAX_ELEMENTS)   // 2^26

// One element, seen as `shape` (no storage behind the other elements).
static const Tensor *wide(Shape shape) {
    const Tensor *one = zeros((Shape){shape.ndim, {1, 1, 1, 1, 1}});
    return expand(one, shape);
}

// The arguments of the calls below, and the calls.
typedef struct {
    const Tensor *a, *b;
    Shape shape;
    int n, m;
    int reps[MAX_DIMS];
    const Tensor *list[4];
} Call;

static void do_zeros(void *arg) { zeros(((Call *)arg)->shape); }
static void do_full(void *arg) { full(((Call *)arg)->shape, 1.0f); }
static void do_expand(void *arg) { expand(((Call *)arg)->a, ((Call *)arg)->shape); }
static void do_view(void *arg) { view(((Call *)arg)->a, ((Call *)arg)->shape); }
static void do_reshape(void *arg) { reshape(((Call *)arg)->a, ((Call *)arg)->shape); }
static void do_repeat(void *arg) { repeat(((Call *)arg)->a, ((Call *)arg)->reps); }
static void do_repeat_interleave(void *arg) {
    repeat_interleave(((Call *)arg)->a, ((Call *)arg)->n, ((Call *)arg)->m);
}
static void do_cat(void *arg) { cat(((Call *)arg)->list, ((Call *)arg)->n, ((Call *)arg)->m); }
static void do_matmul(void *arg) { matmul(((Call *)arg)->a, ((Call *)arg)->b); }
static void do_split(void *arg) {
    const Tensor *parts[4];
    split(parts, ((Call *)arg)->a, ((Call *)arg)->n, ((Call *)arg)->m);
}
static void do_narrow(void *arg) {
    narrow(((Call *)arg)->a, 0, ((Call *)arg)->n, ((Call *)arg)->m);
}
static void do_transpose(void *arg) { transpose(((Call *)arg)->a, ((Call *)arg)->n, 0); }
static void do_npy_encode(void *arg) {
    size_t length;
    free(npy_encode(&length, ((Call *)arg)->a));
}

START_TEST(test_zeros_at_the_limit) {
    Call c = {.shape = shape2(BIG, BIG)};
    check_fails(do_zeros, &c, "zeros: shape [2147483647, 2147483647] has more than 67108864");
    c.shape = shape1(LIMIT + 1);
    check_fails(do_zeros, &c, "zeros: shape [67108865] has more than 67108864 elements");
    c.shape = shape5(BIG, BIG, BIG, BIG, BIG);
    check_fails(do_full, &c, "zeros: shape [2147483647, 2147483647, 2147483647, 2147483647, "
                "2147483647] has more than");
    c.shape = shape2(INT_MIN, 1);
    check_fails(do_zeros, &c, "zeros: negative size -2147483648");
    // No elements, but the strides would be 2^62: refused too (they used
    // to be multiplied out as int).
    c.shape = shape3(0, BIG, BIG);
    check_fails(do_zeros, &c, "zeros: shape [0, 2147483647, 2147483647] has no elements, but "
                "its other sizes multiply to more than 67108864");
    c.shape = shape4(65536, 0, 65536, 2);
    check_fails(do_zeros, &c, "zeros: shape [65536, 0, 65536, 2] has no elements");
    // Right at the limit is fine, as long as a 0 keeps it empty.
    ck_assert_int_eq(numel(zeros(shape3(0, 8192, 8192))), 0);
}
END_TEST

START_TEST(test_views_at_the_limit) {
    Call c = {.a = zeros(shape2(1, 1)), .shape = shape2(LIMIT, 1)};
    ck_assert_int_eq(numel(wide(shape2(LIMIT, 1))), LIMIT);   // exactly the limit: a view
    c.shape = shape2(LIMIT, 2);
    check_fails(do_expand, &c, "expand: shape [67108864, 2] has more than 67108864");
    c.shape = shape3(BIG, BIG, 1);
    check_fails(do_expand, &c, "expand: shape [2147483647, 2147483647, 1] has more than");
    c.shape = shape3(0, BIG, 1);
    check_fails(do_expand, &c, "expand: shape [0, 2147483647, 1] has no elements");

    // view and reshape: the sizes must multiply to the element count, which
    // is worked out without overflow even when they are huge.
    c.a = wide(shape2(8192, 8192));   // 2^26 elements, stride 0
    c.shape = shape3(BIG, BIG, -1);
    check_fails(do_view, &c, "view: shape '[2147483647, 2147483647, -1]' is invalid for input "
                "of size 67108864");
    c.shape = shape2(-1, BIG);
    check_fails(do_reshape, &c, "reshape: shape '[-1, 2147483647]' is invalid for input of "
                "size 67108864");
    c.shape = shape3(LIMIT, 2, -1);
    check_fails(do_reshape, &c, "reshape: shape '[67108864, 2, -1]' is invalid");
    // An empty tensor takes any shape with a 0, but its strides must fit.
    c.a = zeros(shape1(0));
    c.shape = shape3(0, BIG, BIG);
    check_fails(do_view, &c, "view: shape [0, 2147483647, 2147483647] has no elements");
    check_fails(do_reshape, &c, "reshape: shape [0, 2147483647, 2147483647] has no elements");
    c.shape = shape3(BIG, 0, -1);
    check_fails(do_view, &c, "view: shape '[2147483647, 0, -1]' is invalid for input of size 0");

    // narrow: start + length is never added up where it could overflow.
    c.a = zeros(shape1(5));
    const int starts[][2] = {{BIG, BIG}, {1, BIG}, {BIG, 1}, {-1, 2}, {2, -1}, {INT_MIN, 1},
                             {5, 1}};
    for (int i = 0; i < 7; i++) {
        c.n = starts[i][0];
        c.m = starts[i][1];
        check_fails(do_narrow, &c, path_join("narrow: start (%d) + length (%d) exceeds "
                                             "dimension size (5)", c.n, c.m));
    }
    ck_assert_int_eq(numel(narrow(c.a, 0, 5, 0)), 0);   // an empty slice at the end is fine
    // A dim of INT_MIN is wrapped without overflow, and refused.
    c.n = INT_MIN;
    check_fails(do_transpose, &c, "transpose: dimension out of range (expected to be in range "
                "of [-1, 0], but got -2147483648)");
}
END_TEST

START_TEST(test_copies_at_the_limit) {
    Call c = {.a = zeros(shape1(2)), .reps = {BIG}};
    check_fails(do_repeat, &c, "repeat: a dimension of 2 times 2147483647 is more than 67108864");
    c.reps[0] = -1;
    check_fails(do_repeat, &c, "repeat: the number of repeats must not be negative, got -1");
    c.a = zeros(shape2(2, 2));
    c.reps[0] = 65536;
    c.reps[1] = 65536;   // each dim fits, the whole does not
    check_fails(do_repeat, &c, "zeros: shape [131072, 131072] has more than 67108864");
    c.a = zeros(shape2(1, 1));
    c.reps[0] = 0;
    c.reps[1] = BIG;
    check_fails(do_repeat, &c, "repeat: a dimension of 1 times 2147483647 is more than");

    c.a = zeros(shape1(3));
    c.n = BIG;
    c.m = 0;
    check_fails(do_repeat_interleave, &c, "repeat_interleave: a dimension of 3 times "
                "2147483647 is more than 67108864");
    c.a = wide(shape2(8192, 2));
    c.n = 8192;
    c.m = 1;
    check_fails(do_repeat_interleave, &c, "zeros: shape [8192, 16384] has more than");

    // cat: the sizes along the dim are added in 64 bits and checked as they go.
    const Tensor *half = wide(shape1(LIMIT / 2 + 1));
    c = (Call){.list = {half, half}, .n = 2, .m = 0};
    check_fails(do_cat, &c, "cat: the result would have more than 67108864 elements");
    const Tensor *row = wide(shape2(1, LIMIT));
    c = (Call){.list = {row, row, row, row}, .n = 4, .m = 0};
    check_fails(do_cat, &c, "zeros: shape [4, 67108864] has more than 67108864");
    const Tensor *all = wide(shape1(LIMIT));
    c = (Call){.list = {all, all, all, all}, .n = 4, .m = -1};
    check_fails(do_cat, &c, "cat: the result would have more than");
}
END_TEST

START_TEST(test_matmul_and_split_at_the_limit) {
    // (65536 x 1) @ (1 x 65536): the output would be 2^32 elements.
    Call c = {.a = wide(shape2(65536, 1)), .b = wide(shape2(1, 65536))};
    check_fails(do_matmul, &c, "zeros: shape [65536, 65536] has more than 67108864");
    // Batch dims that broadcast to more than the limit.
    c.a = wide(shape4(8192, 1, 1, 1));
    c.b = wide(shape4(1, 8192, 1, 2));
    check_fails(do_matmul, &c, "zeros: shape [8192, 8192, 1, 2] has more than");
    // An empty output whose other sizes are huge: its strides would be
    // 2^42 (and the loop over its 2^16 batches would do nothing for long).
    c.a = zeros(shape4(0, 1, 65536, 1));
    c.b = wide(shape4(1, 65536, 1, 1024));
    check_fails(do_matmul, &c, "zeros: shape [0, 65536, 65536, 1024] has no elements");

    c = (Call){.a = zeros(shape1(4)), .n = BIG, .m = 2};
    check_fails(do_split, &c, "split: 2 parts of size 2147483647 do not make up the last dim");
    c.n = 2;
    c.m = BIG;
    check_fails(do_split, &c, "split: 2147483647 parts of size 2 do not make up the last dim");
    c.n = INT_MIN;
    c.m = -2;
    check_fails(do_split, &c, "split: -2 parts of size -2147483648 do not make up");
}
END_TEST

// An integer tensor is written as int64: a value no int64 can hold (its
// conversion would be undefined) is refused; the largest that fit are not.
START_TEST(test_npy_int64_at_the_limit) {
    const float values[] = {NAN, INFINITY, -INFINITY, 9.3e18f, -1e30f};
    const char *shown[] = {"nan", "inf", "-inf", "9.3e+18", "-1e+30"};
    for (int i = 0; i < 5; i++) {
        Tensor *t = full(shape1(2), values[i]);
        t->dtype = DTYPE_INT64;
        Call c = {.a = t};
        check_fails(do_npy_encode, &c, path_join("npy: an integer tensor (2) holds %s, which is "
                                                 "no int64", shown[i]));
    }
    Tensor *edges = tensor_from(shape1(2), (float[]){-9223372036854775808.0f, 9.2e18f});
    edges->dtype = DTYPE_INT64;
    size_t length;
    unsigned char *bytes = npy_encode(&length, edges);
    int64_t low;
    memcpy(&low, bytes + 128, 8);
    free(bytes);
    ck_assert(low == INT64_MIN);
}
END_TEST

static Suite *limits_suite(void) {
    Suite *suite = suite_create("limits");
    TCase *tc = new_tcase("near INT_MAX and MAX_ELEMENTS");
    tcase_add_test(tc, test_zeros_at_the_limit);
    tcase_add_test(tc, test_views_at_the_limit);
    tcase_add_test(tc, test_copies_at_the_limit);
    tcase_add_test(tc, test_matmul_and_split_at_the_limit);
    tcase_add_test(tc, test_npy_int64_at_the_limit);
    suite_add_tcase(suite, tc);
    return suite;
}

int main(void) { return run_suite(limits_suite()); }
