// Exercise 12: write the relative distances, with the cache's offset.
//
// WHAT TO WRITE
//   relative_distance(T, L): the (T, L) matrix BERT's relative position
//   embeddings look up, distance = position_ids_l - position_ids_r, for T
//   queries (this call's new tokens) against L keys (the cached ones and the new
//   ones). The new tokens come after the P = L - T cached ones, so query t sits
//   at position P + t and key s at position s:
//       distance[t, s] = (P + t) - s
//   int64 in PyTorch: set distance->dtype = DTYPE_INT64 (the numbers are stored
//   as floats all the same). Lesson 12's own is relative_distance in
//   lessons/12-bert-layer/bert_layer.c (the post's code took P = 0: part 6 runs
//   it). Write yours with loops: zeros(shape2(T, L)), *at2(distance, t, s) = x.
//
// CHECK IT
//   make exercise-12   runs lesson 12 with yours in place of its own at four flag
//                      sets (relative positions, with and without a cache, cross-
//                      attention) and compares attention_probs, attention_output,
//                      layer_output and every printed number (part 1 prints the
//                      distance matrix).
//   The answer is on the page, docs/12-bert-layer.md, under Exercises.
#include "attention.h"

Tensor *relative_distance(int T, int L) {
    Tensor *distance = zeros(shape2(T, L));   // (T, L)
    distance->dtype = DTYPE_INT64;
    // Your code here.
    return distance;
}
