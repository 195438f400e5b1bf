// A planted mistake for tests/exercises.sh: keys against queries: Q and K swapped in the product.
// expect: swapped: row t
#include <math.h>

#include "attention.h"

Tensor *attention_scores(const Tensor *Q, const Tensor *K) {
    int B = size(Q, 0), T = size(Q, 1), S = size(K, 1), C = size(Q, 2);
    Tensor *attention_value = zeros(shape3(B, T, S));   // (B, T, S)
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            for (int s = 0; s < S; s++) {
                float sum = 0.0f;
                for (int c = 0; c < C; c++) {
                    sum += *at3(K, b, t, c) * *at3(Q, b, s, c);
                }
                *at3(attention_value, b, t, s) = sum;
            }
        }
    }
    return attention_value;
}
