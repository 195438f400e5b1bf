// Exercise 13: write the online softmax's update for one block.
//
// WHAT TO WRITE
//   online_softmax_scalar(s_t, m, alpha, block_max, tile): one block of keys has
//   just been scored against a block of queries. For each query column
//   j < tile->width (W), with the block's scores in column j of s_t
//   (s_t[p * W + j] for the keys p < tile->keys):
//       m_new          = max(m[j], block_max[j])       the running max so far
//       s_t[p * W + j] = exp2(s_t[p * W + j] - m_new)  the block's weights
//       alpha[j]       = exp2(m[j] - m_new)            how much to shrink what the
//                                                      earlier blocks added (0 for
//                                                      the first: m is -inf)
//       m[j]           = m_new
//   The scores are in base 2 (the queries were scaled by log2(e)), so exp2,
//   not exp: flash_exp2(x) is the lesson's (kernels.h), exp2f works too.
//   Masked scores are -inf and their weight exp2(-inf) = 0. The lesson then
//   does o = alpha * o + weights @ v and l = alpha * l + the weights' sum.
//   Lesson 13's own is online_softmax_scalar in lessons/13-flash-attention/
//   kernels.c (kernels.h says what each kernel does).
//
// CHECK IT
//   make exercise-13   runs lesson 13 with yours in place of its own (with
//                      --kernels scalar, which calls it) at four flag sets, the
//                      causal mask and blocks of 1 among them, and compares out
//                      and every printed number.
//   The answer is on the page, docs/13-flash-attention.md, under Exercises.
#include <math.h>

#include "lessons/13-flash-attention/kernels.h"

void online_softmax_scalar(float *s_t, float *m, float *alpha, const float *block_max,
                           const Tile *tile) {
    (void)s_t;
    (void)m;
    (void)alpha;
    (void)block_max;
    (void)tile;
    // Your code here.
}
