// Exercise 9: write the causal mask, with the cache's offset.
//
// WHAT TO WRITE
//   causal_mask(q_len, cache_len): a (q_len, cache_len + q_len) tensor of 0s and
//   1s. Row t is the query at absolute position cache_len + t (cache_len keys
//   are already cached before it); column s is the key at position s. Put 1
//   where the query may NOT see the key (the key is in its future), 0 where it
//   may: mask[t, s] = 1 exactly when s > cache_len + t. The lesson fills the
//   scores where the mask is 1 with -inf.
//   Lesson 9's own is causal_mask in lessons/09-causal-mask/causal_mask.c
//   (torch.triu(torch.ones(q_len, cache_len + q_len), diagonal=1 + cache_len));
//   write yours with loops: zeros(shape2(rows, cols)) makes a tensor of 0s,
//   *at2(mask, t, s) = 1.0f sets one number (common/core/tensor.h).
//   The lesson calls it in GQA_forward (causal_mask(seq_len, 0), dumped as
//   `mask`) and in part 1 (q_len = 2 after cache_len = 2, and two more).
//
// CHECK IT
//   make exercise-9   runs lesson 9 with your causal_mask in place of its own at
//                     three flag sets and compares mask, output and every
//                     printed number.
//   The answer is on the page, docs/09-causal-mask.md, under Exercises (folded).
#include "attention.h"

Tensor *causal_mask(int q_len, int cache_len) {
    Tensor *mask = zeros(shape2(q_len, cache_len + q_len));   // (q_len, cache_len + q_len)
    // Your code here: set the 1s.
    return mask;
}
