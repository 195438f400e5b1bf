// A planted mistake for tests/exercises.sh: exp where the scores are in base 2.
// expect: take exp2, not exp
#include <math.h>

#include "lessons/13-flash-attention/kernels.h"

void online_softmax_scalar(float *s_t, float *m, float *alpha, const float *block_max,
                           const Tile *tile) {
    int W = tile->width;
    for (int j = 0; j < W; j++) {
        float m_new = fmaxf(m[j], block_max[j]);
        for (int p = 0; p < tile->keys; p++) {
            s_t[p * W + j] = expf(s_t[p * W + j] - m_new);
        }
        alpha[j] = expf(m[j] - m_new);
        m[j] = m_new;
    }
}
