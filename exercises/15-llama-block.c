// Exercise 15: write RoPE, in both layouts.
//
// WHAT TO WRITE
//   rotate(x, cos, sin, layout): x is (B, heads, T, D) (the queries or the keys of
//   T positions), cos and sin are (T, D/2): cos[t, i] = cos(m * theta_i) for the
//   position m of row t. Return a new (B, heads, T, D) tensor in which each pair
//   i < D/2 of each head, the numbers (a, e) at two places of the last dim, is
//   turned by its angle:
//       a' = a * cos[t, i] - e * sin[t, i]
//       e' = e * cos[t, i] + a * sin[t, i]
//   The layouts differ only in where pair i sits:
//       ROTATE_HALF (transformers' apply_rotary_pos_emb):  (i, i + D/2)
//       INTERLEAVED (Meta's apply_rotary_emb):             (2i, 2i + 1)
//   Lesson 15's own is rotate in lessons/15-llama-block/llama_block.c; write
//   yours with loops: zeros(shape4(...)), *at4(x, b, h, t, d), *at2(cos, t, i)
//   (common/core/tensor.h).
//
// CHECK IT
//   make exercise-15   runs lesson 15 with yours in place of its own at four
//                      flag sets (both layouts, three RoPE bases) and compares
//                      query_states, key_states, attn_weights, out, cached_out
//                      and every printed number.
//   The answer is on the page, docs/15-llama-block.md, under Exercises.
#include "attention.h"

// As lessons/15-llama-block/llama_block.c declares it.
typedef enum { ROTATE_HALF, INTERLEAVED } RopeLayout;

Tensor *rotate(const Tensor *x, const Tensor *cos, const Tensor *sin, RopeLayout layout) {
    (void)cos;
    (void)sin;
    (void)layout;
    Tensor *out = clone(x);   // (B, heads, T, D)
    // Your code here.
    return out;
}
