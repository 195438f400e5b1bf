// A planted mistake for tests/exercises.sh: softmax down each column (dim 0), rows and columns
// swapped.
// expect: down each column
#include <math.h>

#include "exact/softmax_exact.h"

void softmax_exact_lastdim(float *data, long rows, int n) {
    for (int s = 0; s < n; s++) {   // a column: data[0 * n + s], data[1 * n + s], ...
        float max = data[s];
        for (long r = 1; r < rows; r++) {
            max = fmaxf(max, data[r * n + s]);
        }
        float sum = 0.0f;
        for (long r = 0; r < rows; r++) {
            data[r * n + s] = expf(data[r * n + s] - max);
            sum += data[r * n + s];
        }
        for (long r = 0; r < rows; r++) {
            data[r * n + s] /= sum;
        }
    }
}
