// A planted mistake for tests/exercises.sh: the bias left out.
// expect: the bias is missing
#include "attention.h"

Tensor *linear(const Linear *self, const Tensor *x) {
    int B = size(x, 0), T = size(x, 1), in = size(x, 2), out = self->out_features;
    Tensor *y = zeros(shape3(B, T, out));   // (B, T, out)
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            for (int o = 0; o < out; o++) {
                float sum = 0.0f;
                for (int i = 0; i < in; i++) {
                    sum += *at3(x, b, t, i) * *at2(self->weight, o, i);
                }
                *at3(y, b, t, o) = sum;
            }
        }
    }
    return y;
}
