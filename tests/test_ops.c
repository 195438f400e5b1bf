// test_ops.c - common/core/ops.c and common/core/nn.c: every operation on cases
// worked out by hand, the invariants attention relies on (softmax rows sum
// to 1, masked weights are exactly 0), and every error text.
//
// Tolerances: sums of small integers are exact in float, so most results
// are compared exactly. Where exp() is involved the reference is the exact
// value worked out in double and rounded once; a float softmax lands within
// a few ulp of it, so 1e-6 relative (about 8 ulp) is allowed.
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define SOFTMAX_RTOL 1e-6f

// --- helpers ---------------------------------------------------------------------

// t equals a tensor of the given shape and values, bit for bit.
static void assert_exact(const Tensor *t, Shape shape, const float *values, const char *what) {
    assert_bitwise_equal(t, tensor_from(shape, values), what);
}

static void assert_fails_with(Action action, void *arg, const char *expected) {
    const char *message = failure_of(action, arg);
    ck_assert_msg(message != NULL, "expected the failure \"%s\", but the call returned",
                  expected);
    ck_assert_str_eq(message, expected);
}

// Two tensors for the binary operations that are expected to fail.
typedef struct {
    const Tensor *a, *b;
    int n;
} Pair;

static void do_matmul(void *arg) { matmul(((Pair *)arg)->a, ((Pair *)arg)->b); }
static void do_add(void *arg) { add(((Pair *)arg)->a, ((Pair *)arg)->b); }
static void do_mul(void *arg) { mul(((Pair *)arg)->a, ((Pair *)arg)->b); }
static void do_masked_fill(void *arg) { masked_fill(((Pair *)arg)->a, ((Pair *)arg)->b, 0.0f); }
static void do_max_abs_diff(void *arg) { max_abs_diff(((Pair *)arg)->a, ((Pair *)arg)->b); }
static void do_softmax(void *arg) { softmax(((Pair *)arg)->a, ((Pair *)arg)->n); }
static void do_triu(void *arg) { triu(((Pair *)arg)->a, 0); }
static void do_split(void *arg) {
    const Tensor *parts[4];
    split(parts, ((Pair *)arg)->a, ((Pair *)arg)->n, 2);
}
static void do_cat(void *arg) {
    const Tensor *both[2] = {((Pair *)arg)->a, ((Pair *)arg)->b};
    cat(both, 2, ((Pair *)arg)->n);
}
static void do_repeat_interleave(void *arg) {
    repeat_interleave(((Pair *)arg)->a, ((Pair *)arg)->n, 0);
}
static void do_dropout(void *arg) { dropout(((Pair *)arg)->a, 1.5, true); }

// --- matmul ------------------------------------------------------------------------

// [[1 2 3]    [[ 7  8]     [[1*7+2*9+3*11  1*8+2*10+3*12]    [[ 58  64]
//  [4 5 6]] @  [ 9 10]  =   [4*7+5*9+6*11  4*8+5*10+6*12]] =  [139 154]]
//              [11 12]]
static const float A23[6] = {1, 2, 3, 4, 5, 6};
static const float B32[6] = {7, 8, 9, 10, 11, 12};
static const float AB[4] = {58, 64, 139, 154};

START_TEST(test_matmul_2d) {
    const Tensor *a = tensor_from(shape2(2, 3), A23);
    const Tensor *b = tensor_from(shape2(3, 2), B32);
    assert_exact(matmul(a, b), shape2(2, 2), AB, "(2x3) @ (3x2)");
    // The same matrices stored transposed and viewed back (strides (1, 2)
    // and (1, 3)): matmul reads through the strides, no copy needed.
    const Tensor *a_t = tensor_from(shape2(3, 2), (float[]){1, 4, 2, 5, 3, 6});
    const Tensor *b_t = tensor_from(shape2(2, 3), (float[]){7, 9, 11, 8, 10, 12});
    assert_exact(matmul(transpose(a_t, 0, 1), transpose(b_t, 0, 1)), shape2(2, 2), AB,
                 "transposed inputs");
    // A narrowed input (columns 1..3 of a wider matrix, offset 1).
    const Tensor *wide = tensor_from(shape2(2, 4), (float[]){0, 1, 2, 3, 0, 4, 5, 6});
    assert_exact(matmul(narrow(wide, 1, 1, 3), b), shape2(2, 2), AB, "narrowed input");
    // (3x2) @ (2x3): [[1 4] [2 5] [3 6]] @ [[1 2 3] [4 5 6]]
    //   = [[1+16 2+20 3+24] [2+20 4+25 6+30] [3+24 6+30 9+36]]
    assert_exact(matmul(a_t, a), shape2(3, 3), (float[]){17, 22, 27, 22, 29, 36, 27, 36, 45},
                 "(3x2) @ (2x3)");
}
END_TEST

START_TEST(test_matmul_batched) {
    // Batch 0: [[1 2] [3 4]] @ [[5 6] [7 8]] = [[19 22] [43 50]]
    // Batch 1: [[2 0] [0 2]] @ [[1 1] [1 1]] = [[2 2] [2 2]]
    const Tensor *a = tensor_from(shape3(2, 2, 2), (float[]){1, 2, 3, 4, 2, 0, 0, 2});
    const Tensor *b = tensor_from(shape3(2, 2, 2), (float[]){5, 6, 7, 8, 1, 1, 1, 1});
    assert_exact(matmul(a, b), shape3(2, 2, 2), (float[]){19, 22, 43, 50, 2, 2, 2, 2},
                 "batched");
    // K^T as the lessons write it: transpose(K, -2, -1) of a (2, 2, 2) key.
    const Tensor *k_t = tensor_from(shape3(2, 2, 2), (float[]){5, 7, 6, 8, 1, 1, 1, 1});
    assert_exact(matmul(a, transpose(k_t, -2, -1)), shape3(2, 2, 2),
                 (float[]){19, 22, 43, 50, 2, 2, 2, 2}, "batched, transposed b");
}
END_TEST

// The reference for broadcasting: every output element summed by hand from
// the index rule "a size-1 or missing batch dim repeats".
START_TEST(test_matmul_broadcast_3d) {
    // (1, 2, 3) @ (4, 3, 5) -> (4, 2, 5): a's one matrix meets each of b's four.
    const Tensor *a = tensor_from(shape3(1, 2, 3), A23);
    const Tensor *b = arange(shape3(4, 3, 5));
    const Tensor *out = matmul(a, b);
    ck_assert_str_eq(size_x_str(out), "4x2x5");
    Tensor *want = zeros(shape3(4, 2, 5));
    for (int n = 0; n < 4; n++) {
        for (int i = 0; i < 2; i++) {
            for (int j = 0; j < 5; j++) {
                float sum = 0.0f;
                for (int p = 0; p < 3; p++) {
                    sum += *at3(a, 0, i, p) * *at3(b, n, p, j);
                }
                *at3(want, n, i, j) = sum;
            }
        }
    }
    assert_bitwise_equal(out, want, "(1,2,3) @ (4,3,5)");
    // One element by hand: out[3, 1, 4] = 4*b[3,0,4] + 5*b[3,1,4] + 6*b[3,2,4]
    //                                    = 4*49 + 5*54 + 6*59 = 820
    ck_assert_float_eq(*at3(out, 3, 1, 4), 820.0f);
}
END_TEST

START_TEST(test_matmul_broadcast_4d) {
    // (2, 1, 3, 4) @ (5, 4, 2) -> (2, 5, 3, 2): b gains a leading dim, a's
    // size-1 dim stretches to 5.
    const Tensor *a = arange(shape4(2, 1, 3, 4));
    const Tensor *b = mul_scalar(arange(shape3(5, 4, 2)), 0.5f);
    const Tensor *out = matmul(a, b);
    ck_assert_str_eq(size_x_str(out), "2x5x3x2");
    Tensor *want = zeros(shape4(2, 5, 3, 2));
    for (int x = 0; x < 2; x++) {
        for (int y = 0; y < 5; y++) {
            for (int i = 0; i < 3; i++) {
                for (int j = 0; j < 2; j++) {
                    float sum = 0.0f;
                    for (int p = 0; p < 4; p++) {
                        sum += *at4(a, x, 0, i, p) * *at3(b, y, p, j);
                    }
                    *at4(want, x, y, i, j) = sum;
                }
            }
        }
    }
    assert_bitwise_equal(out, want, "(2,1,3,4) @ (5,4,2)");
    // out[1, 4, 2, 1] = sum_p a[1,0,2,p] * b[4,p,1] = 20*16.5 + 21*17.5 + 22*18.5 + 23*19.5
    //                 = 330 + 367.5 + 407 + 448.5 = 1553
    ck_assert_float_eq(*at4(out, 1, 4, 2, 1), 1553.0f);
}
END_TEST

START_TEST(test_matmul_errors) {
    Pair p = {zeros(shape2(6, 4)), zeros(shape2(3, 4)), 0};
    assert_fails_with(do_matmul, &p, "matmul: shapes (6x4) and (3x4) cannot be multiplied");
    p = (Pair){zeros(shape3(2, 3, 4)), zeros(shape3(5, 4, 2)), 0};
    assert_fails_with(do_matmul, &p, "matmul: batch dims of (2x3x4) and (5x4x2) cannot be "
                      "broadcast together");
    p = (Pair){zeros(shape1(3)), zeros(shape2(3, 2)), 0};
    assert_fails_with(do_matmul, &p, "matmul: both arguments need at least 2 dimensions, got "
                      "(3) and (3x2)");
}
END_TEST

// --- elementwise -------------------------------------------------------------------

START_TEST(test_add_mul_broadcast) {
    const Tensor *col = tensor_from(shape2(2, 1), (float[]){1, 2});
    const Tensor *row = tensor_from(shape1(3), (float[]){10, 20, 30});
    // (2, 1) with (3,): (3,) becomes (1, 3), both stretch to (2, 3).
    assert_exact(add(col, row), shape2(2, 3), (float[]){11, 21, 31, 12, 22, 32}, "add");
    assert_exact(mul(col, row), shape2(2, 3), (float[]){10, 20, 30, 20, 40, 60}, "mul");
    assert_exact(add(row, col), shape2(2, 3), (float[]){11, 21, 31, 12, 22, 32}, "add swapped");
    // (2, 1, 3) with (4, 1) -> (2, 4, 3): out[i, j, k] = a[i, 0, k] + b[j, 0]
    const Tensor *a = arange(shape3(2, 1, 3));
    const Tensor *b = mul_scalar(arange(shape2(4, 1)), 100.0f);
    const Tensor *sum = add(a, b);
    ck_assert_str_eq(size_x_str(sum), "2x4x3");
    ck_assert_float_eq(*at3(sum, 1, 3, 2), 305.0f);   // a[1, 0, 2] = 5, b[3, 0] = 300
    ck_assert_float_eq(*at3(sum, 0, 2, 1), 201.0f);
    // A transposed input is read through its strides.
    const Tensor *m = arange(shape2(2, 3));
    assert_exact(add(transpose(m, 0, 1), zeros(shape2(3, 2))), shape2(3, 2),
                 (float[]){0, 3, 1, 4, 2, 5}, "add(transposed)");
    // The inputs are left alone.
    ck_assert_float_eq(col->data[1], 2.0f);

    Pair p = {zeros(shape2(2, 3)), zeros(shape1(4)), 0};
    assert_fails_with(do_add, &p, "add: shapes (2x3) and (4) cannot be broadcast together");
    p = (Pair){zeros(shape3(2, 3, 4)), zeros(shape2(2, 4)), 0};
    assert_fails_with(do_mul, &p, "mul: shapes (2x3x4) and (2x4) cannot be broadcast together");
}
END_TEST

START_TEST(test_scalar_ops) {
    const Tensor *t = tensor_from(shape2(2, 2), (float[]){1, -2, 5, 7});
    assert_exact(mul_scalar(t, 0.5f), shape2(2, 2), (float[]){0.5f, -1, 2.5f, 3.5f},
                 "mul_scalar");
    // div_scalar is a true division: 5/3 rounds to 1.6666666 but
    // 5 * (1/3) to 1.6666667 in float (and 7: 2.3333333 vs 2.3333335).
    // PyTorch's CPU division computes a / b, so ours must too.
    const Tensor *third = div_scalar(t, 3.0f);
    ck_assert_float_eq(*at2(third, 1, 0), 5.0f / 3.0f);
    ck_assert_float_eq(*at2(third, 1, 1), 7.0f / 3.0f);
    ck_assert_msg(*at2(third, 1, 0) != 5.0f * (1.0f / 3.0f), "the test value does not tell "
                  "a / b from a * (1 / b)");
    ck_assert_float_eq(*at2(third, 0, 1), -2.0f / 3.0f);
    // An integer tensor divided gives floats (torch true division).
    Tensor *ints = tensor_from(shape1(2), (float[]){3, 4});
    ints->dtype = DTYPE_INT64;
    ck_assert_int_eq(div_scalar(ints, 2.0f)->dtype, DTYPE_FLOAT32);
    // On a transposed input, the result is in logical order.
    assert_exact(mul_scalar(transpose(t, 0, 1), 2.0f), shape2(2, 2), (float[]){2, 10, -4, 14},
                 "mul_scalar(transposed)");
    ck_assert_float_eq(t->data[0], 1.0f);   // input untouched
}
END_TEST

// --- softmax -------------------------------------------------------------------------

START_TEST(test_softmax_hand_worked) {
    // Row [2, 4, 4]: e^2 / (e^2 + 2e^4) = 1 / (1 + 2e^2) = 0.0633789383,
    //                e^4 / (e^2 + 2e^4) = 0.4683105308 (the lesson-1 numbers).
    const Tensor *w = softmax(tensor_from(shape2(1, 3), (float[]){2, 4, 4}), -1);
    float low = (float)0.0633789383, high = (float)0.4683105308;
    assert_close(w, tensor_from(shape2(1, 3), (float[]){low, high, high}), 0.0f, SOFTMAX_RTOL,
                 "softmax([2, 4, 4])");
    ck_assert_float_eq(*at2(w, 0, 1), *at2(w, 0, 2));   // equal scores, equal weights

    // Along dim 0: each column is a softmax. Columns [0, 0] -> 1/2, 1/2;
    // [1, 3] -> 1/(1+e^2) = 0.1192029220, 0.8807970780;
    // [2, -1] -> 1/(1+e^-3) = 0.9525741268, 0.0474258732.
    const Tensor *t = tensor_from(shape2(2, 3), (float[]){0, 1, 2, 0, 3, -1});
    float want0[6] = {0.5f, (float)0.1192029220, (float)0.9525741268,
                      0.5f, (float)0.8807970780, (float)0.0474258732};
    assert_close(softmax(t, 0), tensor_from(shape2(2, 3), want0), 0.0f, SOFTMAX_RTOL,
                 "softmax dim 0");
    assert_close(softmax(t, -2), tensor_from(shape2(2, 3), want0), 0.0f, SOFTMAX_RTOL,
                 "softmax dim -2");

    // A middle dim of (2, 2, 2): pairs t[b, :, k]. With ln 3: [0, ln3] -> 1/4, 3/4.
    float ln3 = logf(3.0f);
    const Tensor *m = tensor_from(shape3(2, 2, 2), (float[]){0, 0, 0, ln3, ln3, 0, 0, 0});
    float want1[8] = {0.5f, 0.25f, 0.5f, 0.75f, 0.75f, 0.5f, 0.25f, 0.5f};
    assert_close(softmax(m, 1), tensor_from(shape3(2, 2, 2), want1), 0.0f, SOFTMAX_RTOL,
                 "softmax dim 1");
    // A transposed input: softmax over dim 0 of t^T is softmax over dim 1 of t.
    assert_close(softmax(transpose(t, 0, 1), 0), transpose(softmax(t, 1), 0, 1), 0.0f, 0.0f,
                 "softmax of a view");
    ck_assert_float_eq(t->data[1], 1.0f);   // input untouched

    Pair p = {t, NULL, 2};
    assert_fails_with(do_softmax, &p, "softmax: dimension out of range (expected to be in "
                      "range of [-2, 1], but got 2)");
}
END_TEST

START_TEST(test_softmax_rows_sum_to_one) {
    // 6 rows of 64 spread-out values; each row's sum of 64 floats, each
    // within an ulp or two, is 1 within 64 * 2^-24 < 4e-6.
    manual_seed(3);
    const Tensor *x = mul_scalar(randn(shape2(6, 64)), 5.0f);
    const Tensor *w = softmax(x, -1);
    for (int r = 0; r < 6; r++) {
        double sum = 0.0;
        for (int c = 0; c < 64; c++) {
            float v = *at2(w, r, c);
            ck_assert_msg(v >= 0.0f && v <= 1.0f, "weight [%d, %d] = %g", r, c, (double)v);
            sum += v;
        }
        ck_assert_msg(fabs(sum - 1.0) < 4e-6, "row %d sums to %.9f", r, sum);
    }
}
END_TEST

START_TEST(test_softmax_extremes) {
    float inf = INFINITY;
    // Row 0 all -inf: NaN (PyTorch does the same); row 1 untouched by it;
    // row 2 masked with -inf: exactly 0 there.
    const Tensor *t = tensor_from(shape2(3, 2), (float[]){-inf, -inf, 1, 1, 0, -inf});
    const Tensor *w = softmax(t, -1);
    ck_assert(isnan(*at2(w, 0, 0)) && isnan(*at2(w, 0, 1)));
    ck_assert_float_eq(*at2(w, 1, 0), 0.5f);
    ck_assert_float_eq(*at2(w, 2, 0), 1.0f);
    ck_assert_float_eq(*at2(w, 2, 1), 0.0f);
    // Large values do not overflow: exp(1000) is inf in float, exp(0) is not.
    const Tensor *big = softmax(tensor_from(shape2(2, 2), (float[]){1000, 1000, -1000, -1000}), -1);
    assert_exact(big, shape2(2, 2), (float[]){0.5f, 0.5f, 0.5f, 0.5f}, "softmax(+-1000)");
    const Tensor *peak = softmax(tensor_from(shape1(2), (float[]){200, 0}), 0);
    ck_assert_float_eq(*at1(peak, 0), 1.0f);
    ck_assert_float_eq(*at1(peak, 1), 0.0f);   // exp(-200) underflows to 0 in float
    // masked_fill with -1e20 (the notebooks' choice): a fully masked row is
    // uniform, a partly masked one has exact zeros.
    const Tensor *masked = tensor_from(shape2(2, 4), (float[]){-1e20f, -1e20f, -1e20f, -1e20f,
                                                        3, -1e20f, 3, -1e20f});
    assert_exact(softmax(masked, -1), shape2(2, 4), (float[]){0.25f, 0.25f, 0.25f, 0.25f,
                                                            0.5f, 0, 0.5f, 0},
                 "softmax with -1e20");
}
END_TEST

// --- masks -----------------------------------------------------------------------------

START_TEST(test_eq_scalar_masked_fill) {
    // The causal mask of the notebooks: mask = tril(ones(3, 3)); scores
    // .masked_fill(mask == 0, -inf) on (b, h, seq, seq) = (2, 2, 3, 3).
    const Tensor *mask = tensor_from(shape2(3, 3), (float[]){1, 0, 0, 1, 1, 0, 1, 1, 1});
    const Tensor *is_zero = eq_scalar(mask, 0.0f);
    ck_assert_int_eq(is_zero->dtype, DTYPE_BOOL);
    assert_exact(is_zero, shape2(3, 3), (float[]){0, 1, 1, 0, 0, 1, 0, 0, 0}, "mask == 0");
    const Tensor *scores = arange(shape4(2, 2, 3, 3));
    const Tensor *filled = masked_fill(scores, is_zero, -INFINITY);
    ck_assert_str_eq(size_x_str(filled), "2x2x3x3");
    int index[4] = {0};
    for (int e = 0; e < 36; e++) {
        int t = index[2], s = index[3];
        float want = s > t ? -INFINITY : (float)e;   // key after query: masked
        ck_assert_msg(*at(filled, index) == want, "filled[%d, %d, %d, %d] = %g, expected %g",
                      index[0], index[1], t, s, (double)*at(filled, index), (double)want);
        next_index(index, filled->shape.size, 4);
    }
    ck_assert_float_eq(scores->data[1], 1.0f);   // input untouched
    // A mask of shape (batch, 1, 1, seq) (padding) broadcasts too.
    const Tensor *pad = tensor_from(shape4(2, 1, 1, 3), (float[]){0, 0, 1, 0, 1, 1});
    const Tensor *padded = masked_fill(scores, pad, -1e20f);
    ck_assert_float_eq(*at4(padded, 0, 1, 2, 2), -1e20f);
    ck_assert_float_eq(*at4(padded, 0, 1, 2, 1), 16.0f);
    ck_assert_float_eq(*at4(padded, 1, 0, 0, 0), 18.0f);
    ck_assert_float_eq(*at4(padded, 1, 0, 0, 1), -1e20f);

    Pair p = {zeros(shape2(2, 3)), zeros(shape2(3, 2)), 0};
    assert_fails_with(do_masked_fill, &p, "masked_fill: the mask (3x2) cannot be broadcast to "
                      "the tensor (2x3)");
    // A mask bigger than the tensor would grow it: refused.
    p = (Pair){zeros(shape2(3, 3)), zeros(shape3(2, 3, 3)), 0};
    assert_fails_with(do_masked_fill, &p, "masked_fill: the mask (2x3x3) cannot be broadcast "
                      "to the tensor (3x3)");
    p = (Pair){zeros(shape2(1, 3)), zeros(shape2(2, 3)), 0};
    assert_fails_with(do_masked_fill, &p, "masked_fill: the mask (2x3) cannot be broadcast to "
                      "the tensor (1x3)");
}
END_TEST

START_TEST(test_triu) {
    const Tensor *x = add(ones(shape2(3, 3)), zeros(shape2(3, 3)));
    assert_exact(triu(x, 0), shape2(3, 3), (float[]){1, 1, 1, 0, 1, 1, 0, 0, 1}, "triu 0");
    assert_exact(triu(x, 1), shape2(3, 3), (float[]){0, 1, 1, 0, 0, 1, 0, 0, 0}, "triu 1");
    assert_exact(triu(x, -1), shape2(3, 3), (float[]){1, 1, 1, 1, 1, 1, 0, 1, 1}, "triu -1");
    // The KV-cache case: 2 new queries after 2 cached keys, 4 keys in all;
    // torch.triu(torch.ones(2, 4), diagonal=3) keeps only j - i >= 3.
    assert_exact(triu(ones(shape2(2, 4)), 3), shape2(2, 4), (float[]){0, 0, 0, 1, 0, 0, 0, 0},
                 "triu(ones(2, 4), 3)");
    // Batched: each (2, 2) matrix on its own; values kept as they are.
    const Tensor *b = arange(shape3(2, 2, 2));
    assert_exact(triu(b, 0), shape3(2, 2, 2), (float[]){0, 1, 0, 3, 4, 5, 0, 7}, "batched triu");
    Pair p = {zeros(shape1(3)), NULL, 0};
    assert_fails_with(do_triu, &p, "triu: input tensor must have at least 2 dimensions, got (3)");
}
END_TEST

// --- split, cat, repeat ----------------------------------------------------------------

START_TEST(test_split) {
    Tensor *t = arange(shape2(2, 6));
    const Tensor *parts[3];
    split(parts, t, 2, 3);
    for (int i = 0; i < 3; i++) {
        ck_assert_str_eq(size_x_str(parts[i]), "2x2");
        ck_assert_ptr_eq(parts[i]->data, t->data);        // views
        ck_assert_int_eq(parts[i]->offset, 2 * i);
        ck_assert_int_eq(parts[i]->stride[0], 6);
        ck_assert_int_eq(parts[i]->stride[1], 1);
    }
    assert_exact(parts[2], shape2(2, 2), (float[]){4, 5, 10, 11}, "third part");
    t->data[8] = -1.0f;                                    // t[1, 2] = parts[1][1, 0]
    ck_assert_float_eq(*at2(parts[1], 1, 0), -1.0f);

    Pair p = {t, NULL, 4};   // 2 parts of 4 make 8, not 6
    assert_fails_with(do_split, &p, "split: 2 parts of size 4 do not make up the last dim of "
                      "(2x6)");
    p.n = 0;
    assert_fails_with(do_split, &p, "split: 2 parts of size 0 do not make up the last dim of "
                      "(2x6)");
}
END_TEST

START_TEST(test_cat) {
    const Tensor *a = tensor_from(shape2(2, 2), (float[]){1, 2, 3, 4});
    const Tensor *b = tensor_from(shape2(1, 2), (float[]){5, 6});
    const Tensor *c = tensor_from(shape2(2, 3), (float[]){7, 8, 9, 10, 11, 12});
    assert_exact(cat((const Tensor *[]){a, b}, 2, 0), shape2(3, 2), (float[]){1, 2, 3, 4, 5, 6},
                 "cat dim 0");
    float along1[10] = {1, 2, 7, 8, 9, 3, 4, 10, 11, 12};
    assert_exact(cat((const Tensor *[]){a, c}, 2, 1), shape2(2, 5), along1, "cat dim 1");
    assert_exact(cat((const Tensor *[]){a, c}, 2, -1), shape2(2, 5), along1, "cat dim -1");
    // Views are read in logical order; three at once; a single one is a copy.
    const Tensor *a_t = transpose(a, 0, 1);   // [[1 3] [2 4]]
    assert_exact(cat((const Tensor *[]){a_t, b, a_t}, 3, 0), shape2(5, 2),
                 (float[]){1, 3, 2, 4, 5, 6, 1, 3, 2, 4}, "cat of views");
    const Tensor *alone = cat((const Tensor *[]){a}, 1, 0);
    ck_assert_ptr_ne(alone->data, a->data);
    // The KV cache grows along the sequence dim of (b, h, seq, d).
    const Tensor *cache = arange(shape4(1, 2, 2, 2));
    const Tensor *step = full(shape4(1, 2, 1, 2), -1.0f);
    const Tensor *grown = cat((const Tensor *[]){cache, step}, 2, 2);
    assert_exact(grown, shape4(1, 2, 3, 2), (float[]){0, 1, 2, 3, -1, -1, 4, 5, 6, 7, -1, -1},
                 "cat dim 2");

    Pair p = {a, c, 0};
    assert_fails_with(do_cat, &p, "cat: sizes of tensors must match except in dimension 0; got "
                      "(2x2) and (2x3)");
    p = (Pair){a, zeros(shape1(2)), -1};
    assert_fails_with(do_cat, &p, "cat: sizes of tensors must match except in dimension -1; got "
                      "(2x2) and (2)");
}
END_TEST

START_TEST(test_repeat) {
    // The notebook: b = (2, 3) mask rows, b.unsqueeze(1).repeat(1, 4, 1) -> (2, 4, 3)
    Tensor *b = tensor_from(shape2(2, 3), (float[]){1, 1, 0, 1, 0, 0});
    b->dtype = DTYPE_INT64;
    const Tensor *r = repeat(unsqueeze(b, 1), (int[]){1, 4, 1});
    ck_assert_str_eq(size_x_str(r), "2x4x3");
    ck_assert_int_eq(r->dtype, DTYPE_INT64);
    for (int i = 0; i < 2; i++) {
        for (int t = 0; t < 4; t++) {
            for (int s = 0; s < 3; s++) {
                ck_assert_float_eq(*at3(r, i, t, s), *at2(b, i, s));
            }
        }
    }
    ck_assert_ptr_ne(r->data, b->data);   // a copy
    // Tiling, not interleaving: [1, 2].repeat(3) = [1, 2, 1, 2, 1, 2]
    const Tensor *v = tensor_from(shape1(2), (float[]){1, 2});
    assert_exact(repeat(v, (int[]){3}), shape1(6), (float[]){1, 2, 1, 2, 1, 2}, "repeat(3)");
    assert_exact(repeat(tensor_from(shape2(1, 2), (float[]){1, 2}), (int[]){2, 2}), shape2(2, 4),
                 (float[]){1, 2, 1, 2, 1, 2, 1, 2}, "repeat(2, 2)");
}
END_TEST

START_TEST(test_repeat_interleave) {
    // Each slice repeated in place: [1, 2] -> [1, 1, 2, 2] (0 0 1 1 order).
    const Tensor *v = tensor_from(shape1(2), (float[]){1, 2});
    assert_exact(repeat_interleave(v, 2, 0), shape1(4), (float[]){1, 1, 2, 2},
                 "repeat_interleave");
    // GQA: (b, kv_heads, seq, d) = (1, 2, 1, 2), each kv head twice along dim 1.
    const Tensor *kv = arange(shape4(1, 2, 1, 2));
    assert_exact(repeat_interleave(kv, 2, 1), shape4(1, 4, 1, 2),
                 (float[]){0, 1, 0, 1, 2, 3, 2, 3}, "repeat_interleave dim 1");
    assert_exact(repeat_interleave(arange(shape2(2, 2)), 3, -1), shape2(2, 6),
                 (float[]){0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}, "repeat_interleave dim -1");
    Pair p = {v, NULL, 0};
    assert_fails_with(do_repeat_interleave, &p, "repeat_interleave: repeats must be positive, "
                      "got 0");
}
END_TEST

// --- dropout --------------------------------------------------------------------------

START_TEST(test_dropout_eval_draws_nothing) {
    const Tensor *x = arange(shape2(4, 4));
    // Eval mode: the very same tensor, and the generator has not moved: the
    // next word after dropout is the first word after the seed.
    manual_seed(11);
    uint32_t first = random32();
    manual_seed(11);
    ck_assert_ptr_eq(dropout(x, 0.1, false), x);
    ck_assert_uint_eq(random32(), first);
    // p = 0 in training is the identity too, and draws nothing.
    manual_seed(11);
    ck_assert_ptr_eq(dropout(x, 0.0, true), x);
    ck_assert_uint_eq(random32(), first);
    // p = 1 drops everything, draws nothing; like PyTorch's input * 0 the
    // zeros keep the sign of the input: dropout([-3., 2.], 1.0) is [-0., 0.].
    manual_seed(11);
    const Tensor *signed_x = tensor_from(shape1(2), (float[]){-3, 2});
    const Tensor *none = dropout(signed_x, 1.0, true);
    ck_assert_uint_eq(random32(), first);
    ck_assert_float_eq(*at1(none, 0), 0.0f);
    ck_assert_msg(signbit(*at1(none, 0)), "dropout(-3, p=1) is +0, PyTorch gives -0");
    ck_assert_msg(!signbit(*at1(none, 1)), "dropout(2, p=1) is -0, PyTorch gives +0");
    ck_assert_ptr_ne(none, signed_x);

    Pair p = {x, NULL, 0};
    assert_fails_with(do_dropout, &p, "dropout: probability has to be between 0 and 1, but got "
                      "1.5");
}
END_TEST

START_TEST(test_dropout_training) {
    // 1..400, p = 0.1. PyTorch: noise = bernoulli(0.9) as floats; noise /= 0.9
    // (a float tensor divided by the scalar, so 1.0f / 0.9f); out = x * noise.
    // A kept element is therefore x * (1.0f / 0.9f), which differs from
    // x / 0.9f for x = 11 (12.222223 vs 12.222222): checked below.
    const Tensor *x = zeros(shape2(20, 20));
    for (int i = 0; i < 400; i++) {
        x->data[i] = (float)(i + 1);
    }
    manual_seed(0);
    const Tensor *out = dropout(x, 0.1, true);
    // The same draws, one per element in row-major order.
    manual_seed(0);
    float noise = 1.0f / (float)0.9;
    int kept = 0;
    for (int i = 0; i < 400; i++) {
        bool keep = bernoulli_draw(0.9);
        float want = keep ? x->data[i] * noise : 0.0f;
        ck_assert_msg(out->data[i] == want, "element %d: got %.9g, expected %.9g (%s)", i,
                      (double)out->data[i], (double)want, keep ? "kept" : "dropped");
        kept += keep;
    }
    ck_assert_msg(11.0f * noise != 11.0f / 0.9f, "x = 11 does not tell x*(1/p) from x/p");
    // 400 draws of keep probability 0.9: 360 expected, sd 6; 30 sd-free margin.
    ck_assert_msg(kept > 330 && kept < 390, "%d of 400 kept", kept);
    ck_assert_float_eq(x->data[0], 1.0f);   // input untouched
    // A non-contiguous view (x stored transposed, viewed back) is dropped
    // in its logical order.
    const Tensor *x_view = transpose(contiguous(transpose(x, 0, 1)), 0, 1);
    ck_assert(!is_contiguous(x_view));
    manual_seed(0);
    const Tensor *from_view = dropout(x_view, 0.1, true);
    assert_bitwise_equal(from_view, out, "dropout of a view");
}
END_TEST

// --- max_abs_diff ------------------------------------------------------------------------

START_TEST(test_max_abs_diff) {
    const Tensor *a = tensor_from(shape2(2, 2), (float[]){1, 2, 3, 4});
    const Tensor *b = tensor_from(shape2(2, 2), (float[]){1, 2.5f, 2.75f, 4});
    ck_assert_float_eq(max_abs_diff(a, b), 0.5f);
    ck_assert_float_eq(max_abs_diff(a, a), 0.0f);
    // Views compare element by element in logical order.
    const Tensor *a_t = tensor_from(shape2(2, 2), (float[]){1, 3, 2, 4});
    ck_assert_float_eq(max_abs_diff(transpose(a_t, 0, 1), a), 0.0f);
    // Identical infinities (masked scores) do not count as a difference ...
    float inf = INFINITY;
    const Tensor *masked = tensor_from(shape1(2), (float[]){-inf, 1});
    ck_assert_float_eq(max_abs_diff(masked, masked), 0.0f);
    // ... but a NaN must never hide: a check "diff < 1e-6" has to fail.
    const Tensor *with_nan = tensor_from(shape1(2), (float[]){NAN, 1});
    ck_assert(isnan(max_abs_diff(with_nan, masked)));
    ck_assert(isnan(max_abs_diff(masked, with_nan)));
    ck_assert(isnan(max_abs_diff(with_nan, with_nan)));
    Pair p = {a, zeros(shape1(4)), 0};
    assert_fails_with(do_max_abs_diff, &p, "max_abs_diff: shapes (2x2) and (4) differ");
}
END_TEST

// --- nn.Linear ----------------------------------------------------------------------------

// W = [[1 0 -1]   b = [0.5, -1]    x = [[1 2 3]
//      [2 1  0]]                        [4 5 6]]
// x W^T = [[1-3, 2+2], [4-6, 8+5]] = [[-2, 4], [-2, 13]]; + b = [[-1.5, 3], [-1.5, 12]]
static Linear hand_linear(bool with_bias) {
    Linear layer = {
        .weight = tensor_from(shape2(2, 3), (float[]){1, 0, -1, 2, 1, 0}),
        .bias = with_bias ? tensor_from(shape1(2), (float[]){0.5f, -1}) : NULL,
        .in_features = 3,
        .out_features = 2,
    };
    return layer;
}

static void do_linear(void *arg) {
    Linear layer = hand_linear(true);
    linear(&layer, ((Pair *)arg)->a);
}

START_TEST(test_linear) {
    Linear with_bias = hand_linear(true);
    Linear no_bias = hand_linear(false);
    const Tensor *x = tensor_from(shape2(2, 3), A23);
    assert_exact(linear(&with_bias, x), shape2(2, 2), (float[]){-1.5f, 3, -1.5f, 12}, "bias");
    assert_exact(linear(&no_bias, x), shape2(2, 2), (float[]){-2, 4, -2, 13}, "no bias");
    // (..., in) -> (..., out): (2, 1, 2, 3) -> (2, 1, 2, 2), each row alone.
    const Tensor *x4 =
        tensor_from(shape4(2, 1, 2, 3), (float[]){1, 2, 3, 4, 5, 6, 0, 0, 0, 1, 1, 1});
    assert_exact(linear(&with_bias, x4), shape4(2, 1, 2, 2),
                 (float[]){-1.5f, 3, -1.5f, 12, 0.5f, -1, 0.5f, 2}, "4-D input");
    // A transposed input (x stored as x^T) gives the same numbers.
    const Tensor *x_t = tensor_from(shape2(3, 2), (float[]){1, 4, 2, 5, 3, 6});
    assert_exact(linear(&with_bias, transpose(x_t, 0, 1)), shape2(2, 2),
                 (float[]){-1.5f, 3, -1.5f, 12}, "transposed input");
    // Rows at an offset (the second row alone).
    assert_exact(linear(&no_bias, narrow(x, 0, 1, 1)), shape2(1, 2), (float[]){-2, 13},
                 "narrowed input");
    // A 1-D input is one row.
    assert_exact(linear(&no_bias, tensor_from(shape1(3), A23)), shape1(2), (float[]){-2, 4},
                 "1-D input");

    // PyTorch words it with the weight as W^T: (in x out).
    Pair p = {zeros(shape2(2, 4)), NULL, 0};
    assert_fails_with(do_linear, &p, "linear: shapes (2x4) and (3x2) cannot be multiplied");
    p.a = zeros(shape3(5, 2, 2));
    assert_fails_with(do_linear, &p, "linear: shapes (5x2x2) and (3x2) cannot be multiplied");
}
END_TEST

// The names the last two named() calls gave, and to what (a trace hook).
static const char *last_names[2];
static const Tensor *last_named[2];
static void keep_names(const TraceEvent *event) {
    if (event->name != NULL) {
        last_names[0] = last_names[1];
        last_named[0] = last_named[1];
        last_names[1] = event->name;
        last_named[1] = event->out;
    }
}

START_TEST(test_linear_init) {
    trace_set_hook(keep_names);
    manual_seed(7);
    Linear proj = linear_init("proj", 4, 6, true);
    ck_assert_str_eq(size_x_str(proj.weight), "6x4");   // (out, in) as PyTorch stores it
    ck_assert_str_eq(size_x_str(proj.bias), "6");
    ck_assert_int_eq(proj.in_features, 4);
    ck_assert_int_eq(proj.out_features, 6);
    ck_assert_str_eq(last_names[0], "proj.weight");   // named as in the state_dict
    ck_assert_str_eq(last_names[1], "proj.bias");
    ck_assert_ptr_eq(last_named[0], proj.weight);
    ck_assert_ptr_eq(last_named[1], proj.bias);
    trace_set_hook(NULL);
    // Both bounds are 1/sqrt(in) = 0.5 (values bit-exact: test_rng.c).
    for (int i = 0; i < 24; i++) {
        ck_assert(fabsf(proj.weight->data[i]) <= 0.5f);
    }
    for (int i = 0; i < 6; i++) {
        ck_assert(fabsf(proj.bias->data[i]) <= 0.5f);
    }
    uint32_t after_init = random32();

    // The draws follow the seed: the same seed, the same weights; another
    // seed, other weights. And they are exactly weight (24 draws) then bias
    // (6): the generator ends where two uniform_ fills leave it.
    manual_seed(7);
    Linear again = linear_init("again", 4, 6, true);
    assert_bitwise_equal(again.weight, proj.weight, "same seed, weight");
    assert_bitwise_equal(again.bias, proj.bias, "same seed, bias");
    manual_seed(7);
    uniform_(zeros(shape2(6, 4)), -0.5, 0.5);
    uniform_(zeros(shape1(6)), -0.5, 0.5);
    ck_assert_uint_eq(random32(), after_init);
    manual_seed(8);
    Linear other = linear_init("other", 4, 6, true);
    ck_assert_float_ne(max_abs_diff(other.weight, proj.weight), 0.0f);

    manual_seed(7);
    Linear bare = linear_init("bare", 4, 6, false);
    ck_assert_ptr_null(bare.bias);
    assert_bitwise_equal(bare.weight, proj.weight, "bias=False, weight");
    // Forward on the initialised layer: (3, 4) -> (3, 6).
    ck_assert_str_eq(size_x_str(linear(&proj, zeros(shape2(3, 4)))), "3x6");
}
END_TEST

// --- the block's ops: layer_norm, gelu, bernoulli ----------------------------------------

// x = [1, 2, 3, 4]: mean 2.5, biased variance (2.25 + 0.25 + 0.25 + 2.25) / 4
// = 1.25, so y = (x - 2.5) / sqrt(1.25 + eps) times weight plus bias.
START_TEST(test_layer_norm_by_hand) {
    const Tensor *x = tensor_from(shape2(2, 4), (float[]){1, 2, 3, 4, 10, 10, 10, 10});
    const Tensor *w = tensor_from(shape1(4), (float[]){1, 2, 1, 1});
    const Tensor *b = tensor_from(shape1(4), (float[]){0, 0, 1, 0});
    const Tensor *y = layer_norm(x, w, b, 1e-5);
    double r = 1.0 / sqrt(1.25 + 1e-5);
    const float want[8] = {(float)(-1.5 * r), (float)(2 * -0.5 * r), (float)(0.5 * r + 1),
                           (float)(1.5 * r),
                           // a constant row has variance 0: all (x - mean) = 0, then + bias
                           0, 0, 1, 0};
    assert_close(y, tensor_from(shape2(2, 4), want), 1e-6f, 1e-6f, "layer_norm by hand");

    // Invariant: with weight 1 and bias 0, every row has mean 0 and
    // (biased) variance 1 (less eps's share), whatever the row was.
    manual_seed(3);
    const Tensor *r3 = mul_scalar(randn(shape3(2, 5, 16)), 7.0f);            // (2, 5, 16)
    const Tensor *n = layer_norm(r3, ones(shape1(16)), zeros(shape1(16)), 1e-5);
    for (int i = 0; i < 2; i++) {
        for (int t = 0; t < 5; t++) {
            double mean = 0.0, var = 0.0;
            for (int c = 0; c < 16; c++) {
                mean += *at3(n, i, t, c) / 16.0;
            }
            for (int c = 0; c < 16; c++) {
                var += (*at3(n, i, t, c) - mean) * (*at3(n, i, t, c) - mean) / 16.0;
            }
            ck_assert_msg(fabs(mean) < 1e-6, "row mean %g", mean);
            ck_assert_msg(fabs(var - 1.0) < 1e-5, "row variance %.9f", var);
        }
    }
}
END_TEST

static void do_layer_norm(void *arg) {
    layer_norm(((Pair *)arg)->a, ones(shape1(((Pair *)arg)->n)), zeros(shape1(3)), 1e-5);
}

START_TEST(test_layer_norm_shapes) {
    Pair p = {zeros(shape2(2, 3)), NULL, 4};
    assert_fails_with(do_layer_norm, &p, "layer_norm: input (2x3) with weight (4) and bias (3): "
                      "both must be (3)");
    // nn.LayerNorm draws nothing: weight ones, bias zeros.
    manual_seed(0);
    uint32_t before = random32();
    manual_seed(0);
    LayerNorm norm = layer_norm_init("norm1", 3, 1e-12);
    ck_assert_uint_eq(random32(), before);
    assert_exact(norm.weight, shape1(3), (float[]){1, 1, 1}, "norm1.weight");
    assert_exact(norm.bias, shape1(3), (float[]){0, 0, 0}, "norm1.bias");
    ck_assert(norm.eps == 1e-12);
}
END_TEST

// gelu(x) = x * Phi(x): the values at -3, -1, 0, 1, 3 worked out in double
// (Python: x * 0.5 * (1 + math.erf(x / math.sqrt(2)))), and the tanh form's.
START_TEST(test_gelu_by_hand) {
    const Tensor *x = tensor_from(shape1(5), (float[]){-3, -1, 0, 1, 3});
    const float erf_form[5] = {-0.00404969409489031f, -0.15865525393145707f, 0.0f,
                               0.8413447460685429f, 2.99595030590511f};
    const float tanh_form[5] = {-0.0036373920817729943f, -0.15880800939172324f, 0.0f,
                                0.8411919906082768f, 2.996362607918227f};
    // gelu is PyTorch's, which approximates erf to about 1.5e-7 (gelu_exact.c):
    // at x = -3 it gives -0.00404986739, 1.7e-7 from the true value.
    assert_close(gelu(x), tensor_from(shape1(5), erf_form), 8e-7f, 2e-7f, "gelu");
    assert_close(gelu_tanh(x), tensor_from(shape1(5), tanh_form), 1e-7f, 2e-7f, "gelu_tanh");
    // The two forms differ by at most 4.8e-4 (PyTorch 1.13 on 100001 points of
    // [-6, 6]: 0.000473 at x = 2.687); far out they agree: both are x or 0.
    Tensor *grid = zeros(shape1(1201));
    for (int i = 0; i <= 1200; i++) {
        grid->data[i] = -6.0f + 0.01f * (float)i;
    }
    float worst = max_abs_diff(gelu(grid), gelu_tanh(grid));
    ck_assert_msg(worst > 4.5e-4f && worst < 4.8e-4f, "largest difference %g", (double)worst);
}
END_TEST

// bernoulli() draws as dropout does: with the same seed, its zeros are the
// elements dropout zeroes (p = 0.25: keep with probability 0.75).
START_TEST(test_bernoulli_is_dropouts_draw) {
    manual_seed(11);
    const Tensor *mask = bernoulli(shape3(4, 1, 1), 0.75);                       // (4, 1, 1)
    manual_seed(11);
    const Tensor *dropped = dropout(ones(shape3(4, 1, 1)), 0.25, true);          // (4, 1, 1)
    int kept = 0;
    for (int i = 0; i < 4; i++) {
        float m = *at3(mask, i, 0, 0);
        ck_assert(m == 0.0f || m == 1.0f);
        ck_assert_msg((m == 0.0f) == (*at3(dropped, i, 0, 0) == 0.0f), "sample %d", i);
        kept += m == 1.0f;
    }
    ck_assert_msg(kept > 0 && kept < 4, "seed 11 should keep some samples and drop some");
    // p = 1 keeps everything, p = 0 nothing (both still draw, like PyTorch's
    // bernoulli_; only dropout skips the draws at p = 0).
    assert_exact(bernoulli(shape1(3), 1.0), shape1(3), (float[]){1, 1, 1}, "p = 1");
    assert_exact(bernoulli(shape1(3), 0.0), shape1(3), (float[]){0, 0, 0}, "p = 0");
}
END_TEST

// --- softmax against PyTorch, bit for bit ---------------------------------------------------

// tests/reference/gen_softmax.py ran torch.softmax on 77 inputs (every row
// length from 1 to 20, longer rows, three scales, -inf and -1e20 masks, a
// 4-D tensor, a softmax along dim 1). softmax_exact.c does PyTorch's
// arithmetic in PyTorch's order, so every output must match to the bit
// (NaN only where PyTorch has NaN). A textbook softmax (glibc expf, a plain
// sum, a division) differs in the last bit on about half of these.
START_TEST(test_softmax_matches_pytorch_bit_for_bit) {
    DIR *dir = opendir(DATA_DIR "/softmax");
    ck_assert_msg(dir != NULL, "no " DATA_DIR "/softmax");
    int cases = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        size_t length = strlen(entry->d_name);
        if (length < 7 || strcmp(entry->d_name + length - 7, "_in.npy") != 0) {
            continue;
        }
        const char *name = path_join("%.*s", (int)(length - 7), entry->d_name);
        const Tensor *x = load_npy(path_join(DATA_DIR "/softmax/%s_in.npy", name));
        const Tensor *want = load_npy(path_join(DATA_DIR "/softmax/%s_out.npy", name));
        int dim = atoi(read_text(path_join(DATA_DIR "/softmax/%s_dim.txt", name)));
        assert_bitwise_equal(softmax(x, dim), want, name);
        cases += 1;
    }
    closedir(dir);
    ck_assert_int_eq(cases, 77);
}
END_TEST

// Sleef's exp, which softmax_exact.c uses, at a few points: exact where the
// answer is a float (exp(0) = 1), within a float's rounding of exp()
// elsewhere, 0 below -104 and inf above 100 as Sleef cuts off.
START_TEST(test_sleef_expf) {
    ck_assert(sleef_expf(0.0f) == 1.0f);
    const float xs[] = {-87.5f, -10.0f, -1.0f, -1e-3f, 1e-3f, 0.5f, 1.0f, 10.0f, 88.0f};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double want = exp((double)xs[i]);
        ck_assert_msg(fabs(sleef_expf(xs[i]) - want) <= 1.2e-7 * want, "exp(%g) = %.9g, not %.9g",
                      (double)xs[i], (double)sleef_expf(xs[i]), want);
    }
    ck_assert(sleef_expf(-105.0f) == 0.0f && sleef_expf(-INFINITY) == 0.0f);
    ck_assert(isinf(sleef_expf(101.0f)) && isnan(sleef_expf(NAN)));
}
END_TEST

static Suite *ops_suite(void) {
    Suite *suite = suite_create("ops");
    TCase *mm = new_tcase("matmul");
    tcase_add_test(mm, test_matmul_2d);
    tcase_add_test(mm, test_matmul_batched);
    tcase_add_test(mm, test_matmul_broadcast_3d);
    tcase_add_test(mm, test_matmul_broadcast_4d);
    tcase_add_test(mm, test_matmul_errors);
    suite_add_tcase(suite, mm);

    TCase *elementwise = new_tcase("elementwise and softmax");
    tcase_add_test(elementwise, test_add_mul_broadcast);
    tcase_add_test(elementwise, test_scalar_ops);
    tcase_add_test(elementwise, test_softmax_hand_worked);
    tcase_add_test(elementwise, test_softmax_rows_sum_to_one);
    tcase_add_test(elementwise, test_softmax_extremes);
    suite_add_tcase(suite, elementwise);

    TCase *shaping = new_tcase("masks, split, cat, repeat");
    tcase_add_test(shaping, test_eq_scalar_masked_fill);
    tcase_add_test(shaping, test_triu);
    tcase_add_test(shaping, test_split);
    tcase_add_test(shaping, test_cat);
    tcase_add_test(shaping, test_repeat);
    tcase_add_test(shaping, test_repeat_interleave);
    suite_add_tcase(suite, shaping);

    TCase *other = new_tcase("dropout, max_abs_diff, linear");
    tcase_add_test(other, test_dropout_eval_draws_nothing);
    tcase_add_test(other, test_dropout_training);
    tcase_add_test(other, test_max_abs_diff);
    tcase_add_test(other, test_linear);
    tcase_add_test(other, test_linear_init);
    tcase_add_test(other, test_softmax_matches_pytorch_bit_for_bit);
    tcase_add_test(other, test_sleef_expf);
    tcase_add_test(other, test_layer_norm_by_hand);
    tcase_add_test(other, test_layer_norm_shapes);
    tcase_add_test(other, test_gelu_by_hand);
    tcase_add_test(other, test_bernoulli_is_dropouts_draw);
    suite_add_tcase(suite, other);
    return suite;
}

int main(void) { return run_suite(ops_suite()); }
