// A planted mistake for tests/exercises.sh: S takes each token, z never does.
// expect: z stays 0
#include "lessons/18-attention-variants/attend.h"

void linear_state_update(float *S, float *z, const float *k_phi, const float *v, int D) {
    (void)z;
    for (int d = 0; d < D; d++) {
        for (int e = 0; e < D; e++) {
            S[d * D + e] = S[d * D + e] + k_phi[d] * v[e];
        }
    }
}
