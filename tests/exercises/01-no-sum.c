// A planted mistake for tests/exercises.sh: the exps, never divided by their sum.
// expect: does not sum to 1
#include <math.h>

#include "exact/softmax_exact.h"

void softmax_exact_lastdim(float *data, long rows, int n) {
    for (long r = 0; r < rows; r++) {
        float *x = &data[r * n];
        float max = x[0];
        for (int s = 1; s < n; s++) {
            max = fmaxf(max, x[s]);
        }
        for (int s = 0; s < n; s++) {
            x[s] = expf(x[s] - max);
        }
    }
}
