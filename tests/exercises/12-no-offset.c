// A planted mistake for tests/exercises.sh: the post's bug: query t at position t, not P + t.
// expect: query t sits at position P + t
#include "attention.h"

Tensor *relative_distance(int T, int L) {
    Tensor *distance = zeros(shape2(T, L));   // (T, L)
    distance->dtype = DTYPE_INT64;
    for (int t = 0; t < T; t++) {
        for (int s = 0; s < L; s++) {
            *at2(distance, t, s) = (float)(t - s);
        }
    }
    return distance;
}
