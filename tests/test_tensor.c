// test_tensor.c - common/core/tensor.c: making tensors, asking about them, views
// (which share storage), and the copies contiguous() / reshape() / clone().
//
// Expected strides were recorded from PyTorch 1.13 by hand, e.g.
//     >>> torch.arange(24.).view(2, 3, 4).transpose(1, 2).stride()
//     (12, 1, 4)
// and each is written next to the check that uses it. Error texts are the
// whole message fail() gets: "<op>: " and then PyTorch's wording where
// PyTorch has one.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"

// --- helpers ---------------------------------------------------------------------

static void assert_shape(const Tensor *t, Shape want, const char *what) {
    ck_assert_msg(t->shape.ndim == want.ndim, "%s: %d dims, expected %d", what, t->shape.ndim,
                  want.ndim);
    for (int d = 0; d < want.ndim; d++) {
        ck_assert_msg(t->shape.size[d] == want.size[d], "%s: shape[%d] = %d, expected %d", what, d,
                      t->shape.size[d], want.size[d]);
    }
}

// Strides as a Shape-like list, to compare in one line.
static void assert_strides(const Tensor *t, Shape want, const char *what) {
    ck_assert_msg(t->shape.ndim == want.ndim, "%s: %d dims, expected %d", what, t->shape.ndim,
                  want.ndim);
    for (int d = 0; d < want.ndim; d++) {
        ck_assert_msg(t->stride[d] == want.size[d], "%s: stride[%d] = %d, expected %d", what, d,
                      t->stride[d], want.size[d]);
    }
}

// Every element of t, in logical row-major order, equals want[i] exactly.
static void assert_values(const Tensor *t, const float *want, const char *what) {
    int index[MAX_DIMS] = {0};
    long n = numel(t);
    for (long i = 0; i < n; i++) {
        float got = *at(t, index);
        ck_assert_msg(got == want[i], "%s: element %ld is %g, expected %g", what, i,
                      (double)got, (double)want[i]);
        next_index(index, t->shape.size, t->shape.ndim);
    }
}

// The arguments of the operations that are expected to fail.
typedef struct {
    const Tensor *t;
    Shape shape;
    int a, b, c;
} Args;

static void assert_fails_with(Action action, Args args, const char *expected) {
    const char *message = failure_of(action, &args);
    ck_assert_msg(message != NULL, "expected the failure \"%s\", but the call returned",
                  expected);
    ck_assert_str_eq(message, expected);
}

static void do_zeros(void *arg) { zeros(((Args *)arg)->shape); }
static void do_size(void *arg) { size(((Args *)arg)->t, ((Args *)arg)->a); }
static void do_view(void *arg) { view(((Args *)arg)->t, ((Args *)arg)->shape); }
static void do_reshape(void *arg) { reshape(((Args *)arg)->t, ((Args *)arg)->shape); }
static void do_expand(void *arg) { expand(((Args *)arg)->t, ((Args *)arg)->shape); }
static void do_at2(void *arg) {
    Args *x = arg;
    at2(x->t, x->a, x->b);
}
static void do_at4(void *arg) {
    Args *x = arg;
    at4(x->t, x->a, x->b, x->c, 0);
}
static void do_transpose(void *arg) {
    Args *x = arg;
    transpose(x->t, x->a, x->b);
}
static void do_permute(void *arg) {
    Args *x = arg;
    permute(x->t, x->shape.size);
}
static void do_unsqueeze(void *arg) { unsqueeze(((Args *)arg)->t, ((Args *)arg)->a); }
static void do_narrow(void *arg) {
    Args *x = arg;
    narrow(x->t, x->a, x->b, x->c);
}
static void do_select(void *arg) {
    Args *x = arg;
    select_index(x->t, x->a, x->b);
}

// --- making tensors ------------------------------------------------------------------

START_TEST(test_creation) {
    const Tensor *z = zeros(shape3(2, 3, 4));
    assert_shape(z, shape3(2, 3, 4), "zeros");
    assert_strides(z, shape3(12, 4, 1), "zeros");   // row-major
    ck_assert_int_eq(z->offset, 0);
    ck_assert_int_eq(z->dtype, DTYPE_FLOAT32);
    for (int i = 0; i < 24; i++) {
        ck_assert_msg(z->data[i] == 0.0f && !signbit(z->data[i]), "zeros[%d] = %g", i,
                      (double)z->data[i]);
    }
    const Tensor *o = ones(shape2(2, 2));
    assert_values(o, (float[]){1, 1, 1, 1}, "ones");
    const Tensor *f = full(shape1(3), -2.5f);
    assert_values(f, (float[]){-2.5f, -2.5f, -2.5f}, "full");

    // tensor_from copies: changing the source afterwards changes nothing.
    float source[6] = {1, 2, 3, 4, 5, 6};
    const Tensor *t = tensor_from(shape2(2, 3), source);
    source[0] = 100.0f;
    assert_values(t, (float[]){1, 2, 3, 4, 5, 6}, "tensor_from");
    ck_assert_ptr_ne(t->data, source);

    // Each tensor is its own node in the --dot graph.
    ck_assert_int_ne(z->id, o->id);
}
END_TEST

START_TEST(test_numel_size_shape) {
    const Tensor *t = zeros(shape3(2, 3, 4));
    ck_assert_int_eq(numel(t), 24);
    ck_assert_int_eq(size(t, 0), 2);
    ck_assert_int_eq(size(t, 2), 4);
    ck_assert_int_eq(size(t, -1), 4);   // -1 is the last dim
    ck_assert_int_eq(size(t, -3), 2);   // -ndim is the first
    Shape s = t->shape;
    ck_assert_int_eq(s.ndim, 3);
    ck_assert_int_eq(s.size[0], 2);
    ck_assert_int_eq(s.size[1], 3);
    ck_assert_int_eq(s.size[2], 4);
    ck_assert_str_eq(size_x_str(t), "2x3x4");
    ck_assert(same_shape(t, zeros(shape3(2, 3, 4))));
    ck_assert(!same_shape(t, zeros(shape3(2, 4, 3))));
    ck_assert(!same_shape(t, zeros(shape2(6, 4))));

    const Tensor *scalar = full((Shape){.ndim = 0}, 7.0f);   // 0-d: one element
    ck_assert_int_eq(numel(scalar), 1);
    ck_assert_str_eq(size_x_str(scalar), "");
    ck_assert_int_eq(numel(zeros(shape2(0, 3))), 0);   // empty

    // PyTorch: t.size(3) -> "Dimension out of range (expected to be in range of [-3, 2], but
    // got 3)"
    Args args = {.t = t, .a = 3};
    assert_fails_with(do_size, args, "size: dimension out of range (expected to be in range "
                      "of [-3, 2], but got 3)");
    args.a = -4;
    assert_fails_with(do_size, args, "size: dimension out of range (expected to be in range "
                      "of [-3, 2], but got -4)");
}
END_TEST

START_TEST(test_invalid_shapes) {
    Args args = {.shape = shape2(2, -1)};
    assert_fails_with(do_zeros, args, "zeros: negative size -1 in shape [2, -1]");
    args.shape = (Shape){.ndim = 6};
    assert_fails_with(do_zeros, args, "zeros: 6 dimensions requested, at most 5 are supported");
    args.shape = shape3(65536, 65536, 2);   // 2^33 elements: far past MAX_ELEMENTS (2^26)
    assert_fails_with(do_zeros, args,
                      "zeros: shape [65536, 65536, 2] has more than 67108864 elements");
    args.shape = shape2(8193, 8192);        // one row past 2^26
    assert_fails_with(do_zeros, args, "zeros: shape [8193, 8192] has more than 67108864 elements");
    // Sizes whose product overflows 64 bits are refused, not wrapped (UBSan
    // would stop `make sanitize` if the product were ever computed).
    args.shape = shape5(2147483647, 2147483647, 2147483647, 2147483647, 2);
    assert_fails_with(do_zeros, args, "zeros: shape [2147483647, 2147483647, 2147483647, "
                      "2147483647, 2] has more than 67108864 elements");
}
END_TEST

START_TEST(test_is_contiguous) {
    const Tensor *t = arange(shape2(3, 4));
    ck_assert(is_contiguous(t));
    ck_assert(!is_contiguous(transpose(t, 0, 1)));
    ck_assert(!is_contiguous(narrow(t, 1, 1, 2)));   // columns: rows have gaps
    ck_assert(is_contiguous(narrow(t, 0, 1, 2)));    // whole rows: no gaps (offset 4)
    ck_assert(is_contiguous(unsqueeze(t, 0)));
    ck_assert(!is_contiguous(expand(zeros(shape2(1, 4)), shape2(3, 4))));
    // Size-1 dims never step, so their stride does not matter (as in PyTorch:
    // torch.zeros(1, 4).t().is_contiguous() is True, strides (1, 4)).
    const Tensor *column = transpose(zeros(shape2(1, 4)), 0, 1);
    assert_strides(column, shape2(1, 4), "zeros(1, 4).t()");
    ck_assert(is_contiguous(column));
    ck_assert(is_contiguous(full((Shape){.ndim = 0}, 1.0f)));
}
END_TEST

// --- element access --------------------------------------------------------------------

START_TEST(test_at_and_bounds) {
    const Tensor *t = arange(shape3(2, 3, 4));
    ck_assert_float_eq(*at3(t, 1, 2, 3), 23.0f);   // 12 + 8 + 3
    ck_assert_float_eq(*at(t, ((const int[]){1, 0, 2})), 14.0f);
    ck_assert_ptr_eq(at3(t, 0, 1, 0), &t->data[4]);
    ck_assert_float_eq(*at1(arange(shape1(5)), 4), 4.0f);
    ck_assert_float_eq(*at4(arange(shape4(2, 2, 2, 2)), 1, 0, 1, 1), 11.0f);   // 8 + 2 + 1
    ck_assert_float_eq(*at5(arange(shape5(1, 2, 1, 2, 3)), 0, 1, 0, 1, 2), 11.0f);   // 6 + 3 + 2

    const Tensor *m = arange(shape2(3, 4));
    Args args = {.t = m, .a = 0, .b = 4};
    assert_fails_with(do_at2, args, "at: index 4 is out of bounds for dimension 1 with size 4");
    args = (Args){.t = m, .a = -1, .b = 0};
    assert_fails_with(do_at2, args, "at: index -1 is out of bounds for dimension 0 with size 3");
    args = (Args){.t = m, .a = 3, .b = 0};
    assert_fails_with(do_at2, args, "at: index 3 is out of bounds for dimension 0 with size 3");
    // at4 on a 3-D tensor: the count of indices is wrong.
    args = (Args){.t = t, .a = 0, .b = 0, .c = 0};
    assert_fails_with(do_at4, args, "at4: the tensor has 3 dimensions (2x3x4)");
    // A view's bounds are its own shape, not its storage's.
    args = (Args){.t = narrow(m, 1, 0, 2), .a = 0, .b = 2};
    assert_fails_with(do_at2, args, "at: index 2 is out of bounds for dimension 1 with size 2");
}
END_TEST

START_TEST(test_next_index_order) {
    int shape[2] = {2, 3};
    int index[2] = {0, 0};
    // Row-major: the last index moves fastest, like an odometer.
    const int want[6][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}};
    for (int step = 0; step < 6; step++) {
        ck_assert_msg(index[0] == want[step][0] && index[1] == want[step][1],
                      "step %d: [%d, %d], expected [%d, %d]", step, index[0], index[1],
                      want[step][0], want[step][1]);
        bool more = next_index(index, shape, 2);
        ck_assert_msg(more == (step < 5), "step %d: next_index returned %d", step, more);
    }
    ck_assert(index[0] == 0 && index[1] == 0);   // wrapped around to the start
    ck_assert(!next_index(index, shape, 0));     // a 0-d tensor has one index: done
}
END_TEST

// --- views --------------------------------------------------------------------------------

START_TEST(test_transpose_and_permute) {
    Tensor *base = arange(shape3(2, 3, 4));
    const Tensor *t = transpose(base, 1, 2);
    assert_shape(t, shape3(2, 4, 3), "transpose");
    // torch.arange(24.).view(2, 3, 4).transpose(1, 2).stride() == (12, 1, 4)
    assert_strides(t, shape3(12, 1, 4), "transpose");
    ck_assert_ptr_eq(t->data, base->data);
    ck_assert_float_eq(*at3(t, 1, 3, 2), 23.0f);   // = base[1, 2, 3]
    ck_assert_float_eq(*at3(t, 0, 1, 2), 9.0f);    // = base[0, 2, 1]
    base->data[9] = 100.0f;                        // write into the base ...
    ck_assert_float_eq(*at3(t, 0, 1, 2), 100.0f);  // ... and the view sees it
    ck_assert_float_eq(*at3(base, 0, 2, 1), 100.0f);
    // Negative dims, and transposing back gives the base's strides again.
    assert_strides(transpose(t, -1, -2), shape3(12, 4, 1), "transpose back");

    // torch.arange(24.).view(2, 3, 4).permute(2, 0, 1).stride() == (1, 12, 4)
    const Tensor *p = permute(base, (int[]){2, 0, 1});
    assert_shape(p, shape3(4, 2, 3), "permute");
    assert_strides(p, shape3(1, 12, 4), "permute");
    ck_assert_ptr_eq(p->data, base->data);
    ck_assert_float_eq(*at3(p, 3, 1, 2), 23.0f);   // = base[1, 2, 3]
    base->data[12] = -1.0f;                        // base[1, 0, 0] = p[0, 1, 0]
    ck_assert_float_eq(*at3(p, 0, 1, 0), -1.0f);

    Args args = {.t = base, .a = 0, .b = 3};
    assert_fails_with(do_transpose, args, "transpose: dimension out of range (expected to be "
                      "in range of [-3, 2], but got 3)");
    args.shape = shape3(0, 2, 0);
    assert_fails_with(do_permute, args, "permute: repeated dim 0 in the order");
}
END_TEST

START_TEST(test_unsqueeze) {
    Tensor *base = arange(shape2(2, 3));
    // PyTorch: zeros(2, 3).unsqueeze(1).stride() == (3, 3, 1),
    //          .unsqueeze(2) -> (3, 1, 1), .t().unsqueeze(0) -> (3, 1, 3)
    const Tensor *u1 = unsqueeze(base, 1);
    assert_shape(u1, shape3(2, 1, 3), "unsqueeze(1)");
    assert_strides(u1, shape3(3, 3, 1), "unsqueeze(1)");
    assert_strides(unsqueeze(base, 2), shape3(3, 1, 1), "unsqueeze(2)");
    assert_strides(unsqueeze(base, -1), shape3(3, 1, 1), "unsqueeze(-1)");
    assert_strides(unsqueeze(transpose(base, 0, 1), 0), shape3(3, 1, 3), "t().unsqueeze(0)");
    ck_assert_ptr_eq(u1->data, base->data);
    base->data[5] = 50.0f;
    ck_assert_float_eq(*at3(u1, 1, 0, 2), 50.0f);

    Args args = {.t = zeros(shape5(1, 1, 1, 1, 1)), .a = 0};
    assert_fails_with(do_unsqueeze, args, "unsqueeze: the tensor already has 5 dimensions");
    args = (Args){.t = base, .a = 3};   // a 2-D tensor takes dims -3 .. 2
    assert_fails_with(do_unsqueeze, args, "unsqueeze: dimension out of range (expected to be in "
                      "range of [-3, 2], but got 3)");
}
END_TEST

START_TEST(test_expand) {
    Tensor *row = tensor_from(shape2(1, 3), (float[]){1, 2, 3});
    const Tensor *e = expand(row, shape2(2, 3));
    // torch.arange(3.).view(1, 3).expand(2, 3).stride() == (0, 1)
    assert_strides(e, shape2(0, 1), "expand");
    ck_assert_ptr_eq(e->data, row->data);
    assert_values(e, (float[]){1, 2, 3, 1, 2, 3}, "expand");
    row->data[2] = 30.0f;                   // both rows of e are this one row
    ck_assert_float_eq(*at2(e, 0, 2), 30.0f);
    ck_assert_float_eq(*at2(e, 1, 2), 30.0f);

    // New leading dims have stride 0; -1 keeps a size.
    // torch.arange(6.).view(2, 3).expand(4, 2, 3).stride() == (0, 3, 1)
    const Tensor *m = arange(shape2(2, 3));
    assert_strides(expand(m, shape3(4, 2, 3)), shape3(0, 3, 1), "expand(4, 2, 3)");
    const Tensor *kept = expand(m, shape2(-1, 3));
    assert_shape(kept, shape2(2, 3), "expand(-1, 3)");
    assert_strides(kept, shape2(3, 1), "expand(-1, 3)");

    Args args = {.t = zeros(shape2(2, 3)), .shape = shape2(2, 5)};
    // PyTorch: "The expanded size of the tensor (5) must match the existing size (3)
    // at non-singleton dimension 1.  Target sizes: [2, 5].  Tensor sizes: [2, 3]"
    assert_fails_with(do_expand, args, "expand: the expanded size of the tensor (5) must match "
                      "the existing size (3) at non-singleton dimension 1. Target sizes: [2, 5]. "
                      "Tensor sizes: [2, 3]");
    args.shape = shape1(3);
    assert_fails_with(do_expand, args, "expand: the number of sizes provided (1) must be greater "
                      "or equal to the number of dimensions in the tensor (2)");
    args = (Args){.t = zeros(shape1(3)), .shape = shape2(-1, 3)};
    assert_fails_with(do_expand, args, "expand: the expanded size -1 is not allowed in a "
                      "leading, non-existing dimension 0");
}
END_TEST

START_TEST(test_narrow) {
    Tensor *base = arange(shape2(3, 4));
    const Tensor *cols = narrow(base, 1, 1, 2);   // base[:, 1:3]
    assert_shape(cols, shape2(3, 2), "narrow");
    // torch.arange(12.).view(3, 4)[:, 1:3]: stride (4, 1), storage_offset 1
    assert_strides(cols, shape2(4, 1), "narrow");
    ck_assert_int_eq(cols->offset, 1);
    ck_assert_ptr_eq(cols->data, base->data);
    assert_values(cols, (float[]){1, 2, 5, 6, 9, 10}, "narrow");
    base->data[10] = -10.0f;                // base[2, 2] = cols[2, 1]
    ck_assert_float_eq(*at2(cols, 2, 1), -10.0f);
    // A narrow of a narrow adds the offsets: rows 1..2 of columns 1..2.
    const Tensor *inner = narrow(cols, 0, 1, 2);
    ck_assert_int_eq(inner->offset, 5);
    assert_values(inner, (float[]){5, 6, 9, -10}, "narrow of narrow");
    ck_assert_int_eq(numel(narrow(base, 0, 3, 0)), 0);   // an empty slice at the end is fine

    Args args = {.t = base, .a = 1, .b = 3, .c = 2};
    assert_fails_with(do_narrow, args, "narrow: start (3) + length (2) exceeds dimension size "
                      "(4)");
    args = (Args){.t = base, .a = 0, .b = -1, .c = 1};
    assert_fails_with(do_narrow, args, "narrow: start (-1) + length (1) exceeds dimension size "
                      "(3)");
}
END_TEST

// t[i] and t.select(dim, i): PyTorch keeps the other dims' strides, even a
// size-1 dim's (a view() of the same numbers may pick another stride there).
START_TEST(test_select) {
    Tensor *base = arange(shape3(2, 3, 4));
    // torch.arange(24.).view(2, 3, 4).permute(2, 0, 1)[1]: size (2, 3),
    // stride (12, 4), storage_offset 1, the numbers base[:, :, 1]
    const Tensor *moved = permute(base, (const int[]){2, 0, 1});              // (4, 2, 3)
    const Tensor *one = select_index(moved, 0, 1);                             // (2, 3)
    assert_shape(one, shape2(2, 3), "select");
    assert_strides(one, shape2(12, 4), "select");
    ck_assert_int_eq(one->offset, 1);
    ck_assert_ptr_eq(one->data, base->data);
    assert_values(one, (float[]){1, 5, 9, 13, 17, 21}, "select");
    // base.select(1, -1) = base[:, 2]: stride (12, 1), offset 8
    const Tensor *last = select_index(base, 1, -1);                            // (2, 4)
    assert_strides(last, shape2(12, 1), "select -1");
    ck_assert_int_eq(last->offset, 8);
    // torch.zeros(1, 5, 6).view(1, 5, 2, 3).permute(2, 0, 1, 3)[0]: the
    // size-1 dim keeps its stride 30.
    const Tensor *heads = permute(view(zeros(shape3(1, 5, 6)), shape4(1, 5, 2, 3)),
                                  (const int[]){2, 0, 1, 3});                 // (2, 1, 5, 3)
    assert_strides(select_index(heads, 0, 0), shape3(30, 6, 1), "select keeps a size-1 stride");

    Args args = {.t = base, .a = 0, .b = 2};
    assert_fails_with(do_select, args, "select: index 2 out of range for tensor of size "
                      "[2, 3, 4] at dimension 0");
    args = (Args){.t = base, .a = 3, .b = 0};
    assert_fails_with(do_select, args, "select: dimension out of range (expected to be in range "
                      "of [-3, 2], but got 3)");
}
END_TEST

// --- contiguous, view, reshape, clone -------------------------------------------------------

START_TEST(test_contiguous) {
    Tensor *base = arange(shape2(3, 4));
    const Tensor *t = transpose(base, 0, 1);                      // (4, 3), strides (1, 4)
    const Tensor *c = contiguous(t);
    ck_assert_ptr_ne(c, t);
    ck_assert_ptr_ne(c->data, base->data);                  // new storage
    assert_shape(c, shape2(4, 3), "contiguous");
    assert_strides(c, shape2(3, 1), "contiguous");          // row-major
    ck_assert_int_eq(c->offset, 0);
    ck_assert(is_contiguous(c));
    assert_values(c, (float[]){0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}, "contiguous");
    // The storage itself is in that order now, and independent of the base.
    ck_assert_float_eq(c->data[1], 4.0f);
    c->data[0] = 99.0f;
    ck_assert_float_eq(base->data[0], 0.0f);

    // Already contiguous: the very same tensor, as in PyTorch.
    ck_assert_ptr_eq(contiguous(base), base);
    const Tensor *rows = narrow(base, 0, 1, 2);                   // contiguous, offset 4
    ck_assert_ptr_eq(contiguous(rows), rows);

    // A stride-0 view is copied into real rows; the dtype goes along.
    Tensor *mask = tensor_from(shape2(1, 2), (float[]){1, 0});
    mask->dtype = DTYPE_BOOL;
    const Tensor *wide = contiguous(expand(mask, shape2(3, 2)));
    assert_strides(wide, shape2(2, 1), "contiguous(expand)");
    assert_values(wide, (float[]){1, 0, 1, 0, 1, 0}, "contiguous(expand)");
    ck_assert_int_eq(wide->dtype, DTYPE_BOOL);

    // clone() always copies, even a contiguous tensor.
    const Tensor *copy = clone(base);
    ck_assert_ptr_ne(copy->data, base->data);
    assert_values(copy, base->data, "clone");
}
END_TEST

// clone() copies one row (the last dim) at a time. Views whose rows are
// laid out every way: stride 0 along the row (expand), a large stride
// (permute), rows at an offset (narrow), 5 dims, a single element, none.
START_TEST(test_clone_of_views) {
    const Tensor *big = arange(shape4(2, 3, 4, 5));
    const Tensor *views[] = {
        expand(arange(shape3(2, 3, 1)), shape3(2, 3, 4)),            // row stride 0
        permute(big, (int[]){3, 1, 0, 2}),                           // row stride 5
        permute(big, (int[]){0, 3, 2, 1}),                           // row stride 20
        narrow(narrow(big, 3, 1, 3), 1, 1, 2),                       // offset 6, gaps
        unsqueeze(transpose(arange(shape2(3, 2)), 0, 1), -1),        // rows of length 1
        permute(arange(shape5(2, 1, 3, 2, 2)), (int[]){4, 2, 0, 3, 1}),
        narrow(arange(shape1(9)), 0, 4, 1),                          // one element
        full((Shape){.ndim = 0}, -7.0f),                             // 0-d
        narrow(big, 2, 4, 0),                                        // empty
    };
    for (size_t v = 0; v < sizeof views / sizeof views[0]; v++) {
        const Tensor *t = views[v];
        const Tensor *c = clone(t);
        const char *what = path_join("clone of view %zu (%s)", v, size_x_str(t));
        ck_assert_msg(same_shape(c, t) && is_contiguous(c) && c->offset == 0, "%s", what);
        int index[MAX_DIMS] = {0};
        for (long i = 0; i < numel(t); i++) {
            ck_assert_msg(c->data[i] == *at(t, index), "%s: element %ld is %g, expected %g",
                          what, i, (double)c->data[i], (double)*at(t, index));
            next_index(index, t->shape.size, t->shape.ndim);
        }
    }
}
END_TEST

START_TEST(test_view_contiguous_input) {
    Tensor *base = arange(shape3(2, 3, 4));
    const Tensor *v = view(base, shape2(6, -1));                  // -1 is inferred: 4
    assert_shape(v, shape2(6, 4), "view(6, -1)");
    assert_strides(v, shape2(4, 1), "view(6, -1)");
    ck_assert_ptr_eq(v->data, base->data);                  // no copy
    base->data[23] = -5.0f;
    ck_assert_float_eq(*at2(v, 5, 3), -5.0f);
    assert_shape(view(base, shape1(-1)), shape1(24), "view(-1)");
    const Tensor *heads = view(base, shape4(2, 3, 2, 2));         // split the last dim
    assert_strides(heads, shape4(12, 4, 2, 1), "view(2, 3, 2, 2)");
    ck_assert_float_eq(*at4(heads, 1, 2, 1, 0), 22.0f);     // 12 + 8 + 2
    // A view of a view with an offset keeps the offset.
    const Tensor *rows = narrow(arange(shape2(3, 4)), 0, 1, 2);
    const Tensor *flat = view(rows, shape1(8));
    ck_assert_int_eq(flat->offset, 4);
    ck_assert_float_eq(*at1(flat, 0), 4.0f);
    // 0-d to 1-d and back.
    const Tensor *scalar = full((Shape){.ndim = 0}, 3.0f);
    assert_shape(view(scalar, shape2(1, -1)), shape2(1, 1), "view of 0-d");
    ck_assert_int_eq(view(zeros(shape1(1)), (Shape){.ndim = 0})->shape.ndim, 0);
}
END_TEST

#define VIEW_ERROR "view: view size is not compatible with input tensor's size and stride (at " \
    "least one dimension spans across two contiguous subspaces). Use .reshape(...) instead."

START_TEST(test_view_noncontiguous_input) {
    // t = torch.arange(24.).view(4, 6).t(): shape (6, 4), strides (1, 6).
    Tensor *base = arange(shape2(4, 6));
    const Tensor *t = transpose(base, 0, 1);
    // Merging dims that are not next to each other in memory: refused.
    Args args = {.t = t, .shape = shape1(24)};
    assert_fails_with(do_view, args, VIEW_ERROR);
    args.shape = shape2(4, 6);
    assert_fails_with(do_view, args, VIEW_ERROR);

    // Splitting a dim is always possible. PyTorch 1.13:
    //   t.view(6, 2, 2).stride() == (1, 12, 6)   (split the last dim)
    //   t.view(3, 2, 4).stride() == (2, 1, 6)    (split the first dim)
    const Tensor *split_last = view(t, shape3(6, 2, 2));
    assert_strides(split_last, shape3(1, 12, 6), "t.view(6, 2, 2)");
    ck_assert_ptr_eq(split_last->data, base->data);
    ck_assert_float_eq(*at3(split_last, 1, 1, 0), 13.0f);   // t[1, 2] = base[2, 1]
    assert_strides(view(t, shape3(3, 2, 4)), shape3(2, 1, 6), "t.view(3, 2, 4)");

    // The transposed 3-D case: torch.arange(24.).view(2, 3, 4).transpose(1, 2)
    // .view(2, 4, 3, 1).stride() == (12, 1, 4, 4)
    const Tensor *t3 = transpose(arange(shape3(2, 3, 4)), 1, 2);
    assert_strides(view(t3, shape4(2, 4, 3, 1)), shape4(12, 1, 4, 4), "view(2, 4, 3, 1)");
    args = (Args){.t = t3, .shape = shape2(2, 12)};
    assert_fails_with(do_view, args, VIEW_ERROR);

    // Narrowed columns [:, 1:3] of a (3, 4): stride (4, 1), offset 1.
    // PyTorch: n.view(6) fails; n.view(3, 2, 1) -> (4, 1, 1); n.view(3, 1, 2) -> (4, 2, 1).
    const Tensor *cols = narrow(arange(shape2(3, 4)), 1, 1, 2);
    args = (Args){.t = cols, .shape = shape1(6)};
    assert_fails_with(do_view, args, VIEW_ERROR);
    const Tensor *cols3 = view(cols, shape3(3, 2, 1));
    assert_strides(cols3, shape3(4, 1, 1), "n.view(3, 2, 1)");
    ck_assert_int_eq(cols3->offset, 1);
    assert_strides(view(cols, shape3(3, 1, 2)), shape3(4, 2, 1), "n.view(3, 1, 2)");

    // Expanded: torch.arange(3.).view(1, 3).expand(2, 3).view(2, 3, 1).stride() == (0, 1, 1)
    const Tensor *e = expand(arange(shape2(1, 3)), shape2(2, 3));
    assert_strides(view(e, shape3(2, 3, 1)), shape3(0, 1, 1), "expand(...).view(2, 3, 1)");
    args = (Args){.t = e, .shape = shape1(6)};
    assert_fails_with(do_view, args, VIEW_ERROR);
}
END_TEST

START_TEST(test_view_invalid_shapes) {
    // PyTorch: torch.zeros(7).view(3, -1) -> "shape '[3, -1]' is invalid for input of size 7"
    Args args = {.t = zeros(shape1(7)), .shape = shape2(3, -1)};
    assert_fails_with(do_view, args, "view: shape '[3, -1]' is invalid for input of size 7");
    assert_fails_with(do_reshape, args,
                      "reshape: shape '[3, -1]' is invalid for input of size 7");
    args = (Args){.t = zeros(shape3(2, 3, 4)), .shape = shape2(5, 5)};
    assert_fails_with(do_view, args, "view: shape '[5, 5]' is invalid for input of size 24");
    args.shape = shape2(-1, -1);   // PyTorch: "only one dimension can be inferred"
    assert_fails_with(do_view, args, "view: only one dimension can be inferred");
    args.shape = shape2(-2, 12);
    assert_fails_with(do_view, args, "view: invalid shape dimension -2");
    args.shape = (Shape){.ndim = 6, .size = {1, 1, 1, 1, 1}};
    assert_fails_with(do_view, args, "view: 6 dimensions requested, at most 5 are supported");
    assert_fails_with(do_reshape, args,
                      "reshape: 6 dimensions requested, at most 5 are supported");
}
END_TEST

START_TEST(test_reshape) {
    // Contiguous: a view, same storage.
    Tensor *base = arange(shape2(2, 6));
    const Tensor *r = reshape(base, shape3(3, -1, 2));
    assert_shape(r, shape3(3, 2, 2), "reshape(3, -1, 2)");
    ck_assert_ptr_eq(r->data, base->data);
    assert_strides(r, shape3(4, 2, 1), "reshape(3, -1, 2)");

    // Transposed and merged: must copy (PyTorch: data_ptr differs), values in logical order.
    const Tensor *t = transpose(base, 0, 1);                      // (6, 2)
    const Tensor *flat = reshape(t, shape1(12));
    ck_assert_ptr_ne(flat->data, base->data);
    assert_values(flat, (float[]){0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11}, "reshape(t, 12)");

    // Transposed but only split: no copy needed, so none is made.
    const Tensor *split = reshape(t, shape3(3, 2, 2));
    ck_assert_ptr_eq(split->data, base->data);
    ck_assert_float_eq(*at3(split, 2, 1, 1), 11.0f);        // t[5, 1] = base[1, 5]

    // Contiguous rows at an offset: a view that keeps the offset.
    const Tensor *rows = narrow(arange(shape2(3, 4)), 0, 1, 2);
    const Tensor *r2 = reshape(rows, shape2(4, 2));
    ck_assert_ptr_eq(r2->data, rows->data);
    ck_assert_int_eq(r2->offset, 4);
    // Narrowed columns cannot be flattened in place: copy.
    const Tensor *cols = narrow(arange(shape2(3, 4)), 1, 1, 2);
    const Tensor *r3 = reshape(cols, shape1(-1));
    ck_assert_ptr_ne(r3->data, cols->data);
    assert_values(r3, (float[]){1, 2, 5, 6, 9, 10}, "reshape(cols, -1)");
}
END_TEST

// The arena's blocks start on a cache line (64 bytes) whatever their size, small or large
// enough for the C library to map pages for them (where calloc's start 16 bytes in), and
// come zeroed; a zero-sized one is not NULL.
START_TEST(test_arena_blocks_aligned_and_zeroed) {
    size_t mark = arena_mark();
    const size_t counts[] = {0, 1, 3, 17, 1000, 40000, 300000};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        for (size_t item = 1; item <= 8; item *= 2) {
            unsigned char *block = arena_alloc(counts[i], item);
            ck_assert_ptr_nonnull(block);
            ck_assert_msg((uintptr_t)block % 64 == 0, "%zu x %zu bytes at %p", counts[i], item,
                          (void *)block);
            size_t b = 0;
            while (b < counts[i] * item && block[b] == 0) {
                b += 1;
            }
            ck_assert_msg(b == counts[i] * item, "%zu x %zu bytes: byte %zu is %d", counts[i],
                          item, b, block[b]);
            memset(block, 0xAB, counts[i] * item);   // the next blocks come zeroed all the same
        }
    }
    arena_release(mark);
}
END_TEST

static Suite *tensor_suite(void) {
    Suite *suite = suite_create("tensor");
    TCase *making = new_tcase("making and asking");
    tcase_add_test(making, test_creation);
    tcase_add_test(making, test_numel_size_shape);
    tcase_add_test(making, test_invalid_shapes);
    tcase_add_test(making, test_is_contiguous);
    tcase_add_test(making, test_at_and_bounds);
    tcase_add_test(making, test_next_index_order);
    tcase_add_test(making, test_arena_blocks_aligned_and_zeroed);
    suite_add_tcase(suite, making);

    TCase *views = new_tcase("views");
    tcase_add_test(views, test_transpose_and_permute);
    tcase_add_test(views, test_unsqueeze);
    tcase_add_test(views, test_expand);
    tcase_add_test(views, test_narrow);
    tcase_add_test(views, test_select);
    suite_add_tcase(suite, views);

    TCase *copies = new_tcase("contiguous, view, reshape");
    tcase_add_test(copies, test_contiguous);
    tcase_add_test(copies, test_clone_of_views);
    tcase_add_test(copies, test_view_contiguous_input);
    tcase_add_test(copies, test_view_noncontiguous_input);
    tcase_add_test(copies, test_view_invalid_shapes);
    tcase_add_test(copies, test_reshape);
    suite_add_tcase(suite, copies);
    return suite;
}

int main(void) { return run_suite(tensor_suite()); }
