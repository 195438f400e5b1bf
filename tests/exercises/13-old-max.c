// A planted mistake for tests/exercises.sh: the weights taken against the old running
// max, -inf before the first block.
// expect: not the old m
#include <math.h>

#include "lessons/13-flash-attention/kernels.h"

void online_softmax_scalar(float *s_t, float *m, float *alpha, const float *block_max,
                           const Tile *tile) {
    int W = tile->width;
    for (int j = 0; j < W; j++) {
        float m_new = fmaxf(m[j], block_max[j]);
        for (int p = 0; p < tile->keys; p++) {
            s_t[p * W + j] = exp2f(s_t[p * W + j] - m[j]);
        }
        alpha[j] = exp2f(m[j] - m_new);
        m[j] = m_new;
    }
}
