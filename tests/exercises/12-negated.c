// A planted mistake for tests/exercises.sh: key minus query: the sign flipped.
// expect: the query's position minus the key's
#include "attention.h"

Tensor *relative_distance(int T, int L) {
    Tensor *distance = zeros(shape2(T, L));   // (T, L)
    distance->dtype = DTYPE_INT64;
    for (int t = 0; t < T; t++) {
        for (int s = 0; s < L; s++) {
            *at2(distance, t, s) = (float)(s - (L - T + t));
        }
    }
    return distance;
}
