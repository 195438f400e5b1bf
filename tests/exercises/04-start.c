// Exercise 4: write masked_fill with the padding mask.
//
// WHAT TO WRITE
//   fill_padding(scores, attention_mask): both are (B, T, S) (batch, queries,
//   keys); attention_mask is 1 for a real key and 0 for padding. Return a new
//   (B, T, S) tensor equal to scores, except that where attention_mask is 0
//   the score becomes -1e20 (the notebook's float("-1e20")), so that softmax
//   gives that key a weight of exactly 0:
//       out[b, t, s] = attention_mask[b, t, s] == 0 ? -1e20 : scores[b, t, s]
//   PyTorch: scores.masked_fill(attention_mask == 0, float("-1e20")).
//   Lesson 4's own is fill_padding in lessons/04-self-attention-v3/
//   self_attention_v3.c; write yours with loops: clone(scores) is a writable
//   copy, *at3(t, b, i, j) one number (common/core/tensor.h).
//
// CHECK IT
//   make exercise-4   runs lesson 4 with yours in place of its own at four flag
//                     sets and compares att_weight, output, ret and every
//                     printed number.
//   The answer is on the page, docs/04-self-attention-v3.md, under Exercises.
#include "attention.h"

Tensor *fill_padding(const Tensor *scores, const Tensor *attention_mask) {
    (void)attention_mask;
    Tensor *out = clone(scores);   // (B, T, S)
    // Your code here.
    return out;
}
