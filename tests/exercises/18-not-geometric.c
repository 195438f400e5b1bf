// A planted mistake for tests/exercises.sh: the slopes falling as 1/h, not geometrically.
// expect: not a geometric sequence
#include "lessons/18-attention-variants/positions.h"

void alibi_slopes(float *slopes, int H) {
    for (int h = 0; h < H; h++) {
        slopes[h] = 0.25f / (float)(h + 1);
    }
}
