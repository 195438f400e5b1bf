// A planted mistake for tests/exercises.sh: the sum runs one number past the row: past the last
// row's end.
// expect: heap-buffer-overflow
#include <math.h>

#include "exact/softmax_exact.h"

void softmax_exact_lastdim(float *data, long rows, int n) {
    for (long r = 0; r < rows; r++) {
        float *x = &data[r * n];
        float sum = 0.0f;
        for (int s = 0; s <= n; s++) {   // one too many
            sum += expf(x[s]);
        }
        for (int s = 0; s < n; s++) {
            x[s] = expf(x[s]) / sum;
        }
    }
}
