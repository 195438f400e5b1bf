// A planted mistake for tests/exercises.sh: the state overwritten by each token, = for +=.
// expect: state forgets
#include "lessons/18-attention-variants/attend.h"

void linear_state_update(float *S, float *z, const float *k_phi, const float *v, int D) {
    for (int d = 0; d < D; d++) {
        for (int e = 0; e < D; e++) {
            S[d * D + e] = k_phi[d] * v[e];
        }
        z[d] = k_phi[d];
    }
}
