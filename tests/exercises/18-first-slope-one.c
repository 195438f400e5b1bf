// A planted mistake for tests/exercises.sh: the slopes' h counted from 0 (the first slope 1).
// expect: your first slope is 1
#include <math.h>

#include "lessons/18-attention-variants/positions.h"

void alibi_slopes(float *slopes, int H) {
    int closest = 1;
    while (closest * 2 <= H) {
        closest *= 2;
    }
    for (int h = 0; h < H; h++) {
        int n = h < closest ? closest : 2 * closest, i = h < closest ? h : 2 * (h - closest);
        slopes[h] = (float)pow(2.0, -8.0 / n * i);
    }
}
