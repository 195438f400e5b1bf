// A planted mistake for tests/exercises.sh: the query one position too far: P + t + 1.
// expect: one position off
#include "attention.h"

Tensor *relative_distance(int T, int L) {
    Tensor *distance = zeros(shape2(T, L));   // (T, L)
    distance->dtype = DTYPE_INT64;
    for (int t = 0; t < T; t++) {
        for (int s = 0; s < L; s++) {
            *at2(distance, t, s) = (float)((L - T + t + 1) - s);
        }
    }
    return distance;
}
