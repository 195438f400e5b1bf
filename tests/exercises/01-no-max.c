// A planted mistake for tests/exercises.sh: exp() of the scores as they are, the max not
// subtracted.
// expect: subtract the row's largest number
#include <math.h>

#include "exact/softmax_exact.h"

void softmax_exact_lastdim(float *data, long rows, int n) {
    for (long r = 0; r < rows; r++) {
        float *x = &data[r * n];
        float sum = 0.0f;
        for (int s = 0; s < n; s++) {
            x[s] = expf(x[s]);
            sum += x[s];
        }
        for (int s = 0; s < n; s++) {
            x[s] /= sum;
        }
    }
}
