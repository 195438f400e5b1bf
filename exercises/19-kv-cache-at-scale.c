// Exercise 19: write multi-head latent attention's absorbed query.
//
// WHAT TO WRITE
//   absorb_query(q_latent, q_nope, w_uk, qk_nope_head_dim, kv_lora_rank): one head's
//   query moved into the latent's space, so that every score's content part is a dot
//   product with a cached latent c (kv_lora_rank numbers), nothing decompressed:
//       q_nope . k_nope = q_nope . (W_UK c) = (W_UK^T q_nope) . c
//       q_latent[c] = sum over i < qk_nope_head_dim of q_nope[i] * W_UK[i][c]
//   w_uk is W_UK (qk_nope_head_dim, kv_lora_rank), the head's key rows of
//   kv_b_proj.weight, row-major: W_UK[i][c] is w_uk[i * kv_lora_rank + c]. q_nope
//   has qk_nope_head_dim numbers, q_latent kv_lora_rank (all 0 when called).
//   Lesson 19's own is absorb_query in lessons/19-kv-cache-at-scale/mla.c; its
//   absorbed forward calls it for every head and query token.
//
// CHECK IT
//   make exercise-19   runs lesson 19 with yours in place of its own at four flag
//                      sets (one with a single latent channel, three recorded from
//                      PyTorch) and compares the absorbed outputs (part 2's
//                      out_absorbed, part 3's decoded_absorbed) and every printed
//                      number.
//   The answer is on the page, docs/19-kv-cache-at-scale.md, under Exercises.
#include "lessons/19-kv-cache-at-scale/at_scale.h"

void absorb_query(float *q_latent, const float *q_nope, const float *w_uk, int qk_nope_head_dim,
                  int kv_lora_rank) {
    (void)q_latent;
    (void)q_nope;
    (void)w_uk;
    (void)qk_nope_head_dim;
    (void)kv_lora_rank;
    // Your code here.
}
