// A planted mistake for tests/exercises.sh: one position too far: cache_len + t + 1.
// expect: index out of range
#include "attention.h"

void append_in_place(Tensor *cache, int cache_len, const Tensor *rows) {
    int B = size(rows, 0), T = size(rows, 1), KV = size(rows, 2), D = size(rows, 3);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            for (int h = 0; h < KV; h++) {
                for (int d = 0; d < D; d++) {
                    *at4(cache, b, cache_len + t + 1, h, d) = *at4(rows, b, t, h, d);
                }
            }
        }
    }
}
