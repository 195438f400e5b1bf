// family_multi_head.c - what the tests of lessons 6, 7 and 11 share
// (family_multi_head.h says what each does).
#include "family_multi_head.h"

#include <math.h>
#include <string.h>

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
