// Exercise 5: write nn.Linear's forward, y = x W^T + b.
//
// WHAT TO WRITE
//   linear(self, x): x is (B, T, in) (every call in lesson 5 passes a 3-d x);
//   self->weight is (out, in), as PyTorch stores it, self->bias (out,) or NULL.
//   Return the (B, T, out) tensor
//       y[b, t, o] = bias[o] + sum over i of x[b, t, i] * weight[o, i]
//   (x W^T: row o of the weight is the o-th output's weights). Lesson 5 makes Q,
//   K and V with three of them and ret with a fourth (output_proj).
//   The helper's own is linear in common/core/nn.c (any rank of x); write yours
//   with loops: size(x, 2) is `in`, zeros(shape3(B, T, out)), *at3(x, b, t, i),
//   *at2(self->weight, o, i), *at1(self->bias, o) (common/core/tensor.h).
//
// CHECK IT
//   make exercise-5   runs lesson 5 with yours in place of the helper's at four
//                     flag sets and compares Q, K, V, att_weight, output, ret
//                     and every printed number.
//   The answer is on the page, docs/05-self-attention-v4.md, under Exercises.
#include "attention.h"

Tensor *linear(const Linear *self, const Tensor *x) {
    int B = size(x, 0), T = size(x, 1);
    Tensor *y = zeros(shape3(B, T, self->out_features));   // (B, T, out)
    // Your code here.
    return y;
}
