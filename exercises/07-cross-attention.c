// Exercise 7: write the mix of the other sequence's values.
//
// WHAT TO WRITE
//   mix_values(weights, v_state): weights is (B, H, T, S), each of the T queries'
//   attention over the S keys of the OTHER sequence (rows summing to 1); v_state
//   is (B, H, S, D), the values of that sequence, head by head. Return the
//   (B, H, T, D) tensor
//       out[b, h, t, d] = sum over s < S of weights[b, h, t, s] * v_state[b, h, s, d]
//   PyTorch's weights @ v_state: (T x S) @ (S x D), so S disappears and every query
//   gets one mix of the other sequence's values. T and S differ here.
//   Lesson 7's own is mix_values in lessons/07-cross-attention/cross_attention.c;
//   write yours with loops: size(weights, 3) is S, zeros(shape4(...)),
//   *at4(t, a, b, c, d) reads or writes one number (common/core/tensor.h).
//
// CHECK IT
//   make exercise-7   runs lesson 7 with yours in place of its own at four flag sets
//                     and compares output_mid, output and every printed number.
//   The answer is on the page, docs/07-cross-attention.md, under Exercises.
#include "attention.h"

Tensor *mix_values(const Tensor *weights, const Tensor *v_state) {
    int B = size(weights, 0), H = size(weights, 1), T = size(weights, 2);
    int D = size(v_state, 3);
    Tensor *out = zeros(shape4(B, H, T, D));   // (B, H, T, D)
    // Your code here.
    return out;
}
