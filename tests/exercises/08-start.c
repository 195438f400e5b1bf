// Exercise 8: write the grouped scores einsum as loops.
//
// WHAT TO WRITE
//   einsum_scores(query, key): query is (B, R, KV, N, D) (batch, the R query
//   heads of a group, the KV key/value heads, positions, head_dim) and key is
//   (B, KV, S, D). Every query against every key of ITS key/value head h:
//       scores[b, g, h, n, s] = sum over d of query[b, g, h, n, d] * key[b, h, s, d]
//   einsum("b g h n d, b h s d -> b g h n s"): b and h are matched, d is
//   summed, g, n and s are kept. Unscaled: the lesson divides by sqrt(D) after.
//   Lesson 8's own is einsum_scores in lessons/08-gqa/gqa.c; write yours with
//   loops: size(query, 1) is R, zeros(shape5(...)) a tensor of 0s,
//   *at5(query, b, g, h, n, d) and *at4(key, b, h, s, d) read one number,
//   *at5(scores, b, g, h, n, s) = x writes one (common/core/tensor.h).
//
// CHECK IT
//   make exercise-8   runs lesson 8 with yours in place of its own at three flag
//                     sets and compares out (true GQA) and every printed number.
//   The answer is on the page, docs/08-gqa.md, under Exercises.
#include "attention.h"

Tensor *einsum_scores(const Tensor *query, const Tensor *key) {
    int B = size(query, 0), R = size(query, 1), KV = size(query, 2);
    int N = size(query, 3), S = size(key, 2);
    Tensor *scores = zeros(shape5(B, R, KV, N, S));   // (B, R, KV, N, S)
    // Your code here.
    return scores;
}
