// A planted mistake for tests/exercises.sh: 2^(-8h/H) for every H, a power of two or not.
// expect: right for a power of two, not for 6 heads
#include <math.h>

#include "lessons/18-attention-variants/positions.h"

void alibi_slopes(float *slopes, int H) {
    for (int h = 0; h < H; h++) {
        slopes[h] = (float)pow(2.0, -8.0 * (h + 1) / H);
    }
}
