// A planted mistake for tests/exercises.sh: S's row from the value, its column from the key.
// expect: row d from the key
#include "lessons/18-attention-variants/attend.h"

void linear_state_update(float *S, float *z, const float *k_phi, const float *v, int D) {
    for (int d = 0; d < D; d++) {
        for (int e = 0; e < D; e++) {
            S[d * D + e] = S[d * D + e] + v[d] * k_phi[e];
        }
        z[d] = z[d] + k_phi[d];
    }
}
