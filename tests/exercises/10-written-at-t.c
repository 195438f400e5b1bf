// A planted mistake for tests/exercises.sh: every call writes at position t, over the cache's
// start.
// expect: after what the cache holds
#include "attention.h"

void append_in_place(Tensor *cache, int cache_len, const Tensor *rows) {
    int B = size(rows, 0), T = size(rows, 1), KV = size(rows, 2), D = size(rows, 3);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            for (int h = 0; h < KV; h++) {
                for (int d = 0; d < D; d++) {
                    (void)cache_len;
                    *at4(cache, b, t, h, d) = *at4(rows, b, t, h, d);
                }
            }
        }
    }
}
