// Exercise 2: write the attention scores, Q @ K^T, for a batch.
//
// WHAT TO WRITE
//   attention_scores(Q, K): Q and K are (B, T, C) (batch, sequence, hidden_dim);
//   return the (B, T, S) tensor (S = T here: the keys are the same sequence)
//       attention_value[b, t, s] = sum over c of Q[b, t, c] * K[b, s, c]
//   every query against every key of the same batch row: PyTorch's
//   Q @ K.transpose(-1, -2). Unscaled: the lesson divides by sqrt(hidden_dim)
//   after (attention_weight = softmax(attention_value / sqrt(C))).
//   Lesson 2's own is attention_scores in
//   lessons/02-self-attention-v1/self_attention_v1.c; write yours with loops:
//   size(Q, 0) is B, zeros(shape3(B, T, S)) a tensor of 0s, *at3(Q, b, t, c)
//   one number of Q, *at3(out, b, t, s) = x sets one (common/core/tensor.h).
//
// CHECK IT
//   make exercise-2   runs lesson 2 with yours in place of its own at three flag
//                     sets and compares attention_value, attention_weight,
//                     output and every printed number.
//   The answer is on the page, docs/02-self-attention-v1.md, under Exercises.
#include "attention.h"

Tensor *attention_scores(const Tensor *Q, const Tensor *K) {
    int B = size(Q, 0), T = size(Q, 1), S = size(K, 1);
    Tensor *attention_value = zeros(shape3(B, T, S));   // (B, T, S)
    // Your code here.
    return attention_value;
}
