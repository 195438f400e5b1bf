// A planted mistake for tests/exercises.sh: the key of head g (the group member) instead of h:
// out of range.
// expect: key/value head h
#include <math.h>

#include "attention.h"

Tensor *einsum_scores(const Tensor *query, const Tensor *key) {
    int B = size(query, 0), R = size(query, 1), KV = size(query, 2);
    int N = size(query, 3), D = size(query, 4), S = size(key, 2);
    Tensor *scores = zeros(shape5(B, R, KV, N, S));   // (B, R, KV, N, S)
    for (int b = 0; b < B; b++) {
        for (int g = 0; g < R; g++) {
            for (int h = 0; h < KV; h++) {
                for (int n = 0; n < N; n++) {
                    for (int s = 0; s < S; s++) {
                        float sum = 0.0f;
                        for (int d = 0; d < D; d++) {
                            sum += *at5(query, b, g, h, n, d) * *at4(key, b, g, s, d);
                        }
                        *at5(scores, b, g, h, n, s) = sum;
                    }
                }
            }
        }
    }
    return scores;
}
