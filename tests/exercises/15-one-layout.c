// A planted mistake for tests/exercises.sh: rotate_half's pairs whatever the layout.
// expect: the same in both layouts
#include "attention.h"

typedef enum { ROTATE_HALF, INTERLEAVED } RopeLayout;

Tensor *rotate(const Tensor *x, const Tensor *cos, const Tensor *sin, RopeLayout layout) {
    int B = size(x, 0), heads = size(x, 1), T = size(x, 2), D = size(x, 3), half = D / 2;
    Tensor *out = zeros(shape4(B, heads, T, D));   // (B, heads, T, D)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < heads; h++) {
            for (int t = 0; t < T; t++) {
                for (int i = 0; i < half; i++) {
#define SIGN
                    (void)layout;
                    int first = i, second = i + half;
                    float a = *at4(x, b, h, t, first), e = *at4(x, b, h, t, second);
                    float c = *at2(cos, t, i), s = *at2(sin, t, i);
                    *at4(out, b, h, t, first) = a * c - SIGN e * s;
                    *at4(out, b, h, t, second) = e * c + SIGN a * s;
                }
            }
        }
    }
    return out;
}
