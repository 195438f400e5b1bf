// A planted mistake for tests/exercises.sh: the variance divided by C - 1.
// expect: divided by C, not C - 1
#include <math.h>

#include "attention.h"

Tensor *layer_norm(const Tensor *x, const Tensor *weight, const Tensor *bias, double eps) {
    int B = size(x, 0), N = size(x, 1), C = size(x, 2);
    Tensor *y = zeros(x->shape);   // (B, N, C)
    for (int b = 0; b < B; b++) {
        for (int n = 0; n < N; n++) {
            double mean = 0, var = 0;
            for (int c = 0; c < C; c++) {
                mean += *at3(x, b, n, c);
            }
            mean /= C;
            for (int c = 0; c < C; c++) {
                var += (*at3(x, b, n, c) - mean) * (*at3(x, b, n, c) - mean);
            }
            var /= C - 1;
            for (int c = 0; c < C; c++) {
                *at3(y, b, n, c) = (float)((*at3(x, b, n, c) - mean) / sqrt(var + eps) *
                                           *at1(weight, c) + *at1(bias, c));
            }
        }
    }
    return y;
}
