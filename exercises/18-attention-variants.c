// Exercise 18: write two variants' pieces: ALiBi's slopes and linear attention's step.
//
// WHAT TO WRITE
//   alibi_slopes(slopes, H): the slope of each of H heads (Press et al. 2022). For H
//   a power of two, the geometric sequence 2^(-8h/H), h = 1..H (start and ratio both
//   2^(-8/H)): 4 heads get 1/4, 1/16, 1/64, 1/256. Otherwise the slopes of the largest
//   power of two P below H, then every other slope of 2P's (its 1st, 3rd, 5th, ...)
//   until there are H: 6 heads get 4's four, then 1/2 and 1/8. Work in double, round
//   each to a float. Lesson 18's own is in lessons/18-attention-variants/positions.c.
//
//   linear_state_update(S, z, k_phi, v, D): one token written into linear attention's
//   state, the RNN's step that training, decoding and the backward all call:
//       S[d][e] += k_phi[d] * v[e]    (S is D x D, row d at S + d * D)
//       z[d]    += k_phi[d]
//   k_phi = elu(k) + 1 is the token's key through the feature map, v its value (D
//   each). Lesson 18's own is in lessons/18-attention-variants/attend.c.
//
//   make exercise-18 checks linear attention's runs first, then ALiBi's: write
//   linear_state_update first, or both.
//
// CHECK IT
//   make exercise-18   runs lesson 18 with yours in place of its own: linear
//                      attention, every experiment for 2 steps (part 1 prints the
//                      slopes), ALiBi with 4 and 6 heads; and compares the losses,
//                      logits, attention weights and every printed number.
//   The answer is on the page, docs/18-attention-variants.md, under Exercises.
#include <math.h>

#include "lessons/18-attention-variants/attend.h"
#include "lessons/18-attention-variants/positions.h"

void alibi_slopes(float *slopes, int H) {
    for (int h = 0; h < H; h++) {
        slopes[h] = 0.0f;   // the starting file's: no bias, as if there were no positions
    }
    // Your code here.
}

void linear_state_update(float *S, float *z, const float *k_phi, const float *v, int D) {
    (void)S;
    (void)z;
    (void)k_phi;
    (void)v;
    (void)D;
    // Your code here.
}
