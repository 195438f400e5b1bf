// A planted mistake for tests/exercises.sh: each layout given the other's pairs.
// expect: pairs of the other layout
#include "attention.h"

typedef enum { ROTATE_HALF, INTERLEAVED } RopeLayout;

Tensor *rotate(const Tensor *x, const Tensor *cos, const Tensor *sin, RopeLayout layout) {
    int B = size(x, 0), heads = size(x, 1), T = size(x, 2), D = size(x, 3), half = D / 2;
    Tensor *out = zeros(shape4(B, heads, T, D));   // (B, heads, T, D)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < heads; h++) {
            for (int t = 0; t < T; t++) {
                for (int i = 0; i < half; i++) {
                    int first = layout == INTERLEAVED ? i : 2 * i;
                    int second = layout == INTERLEAVED ? i + half : 2 * i + 1;
                    float a = *at4(x, b, h, t, first), e = *at4(x, b, h, t, second);
                    float c = *at2(cos, t, i), s = *at2(sin, t, i);
                    *at4(out, b, h, t, first) = a * c - e * s;
                    *at4(out, b, h, t, second) = e * c + a * s;
                }
            }
        }
    }
    return out;
}
