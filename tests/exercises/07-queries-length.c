// A planted mistake for tests/exercises.sh: the sum over the first T keys only (T < S here).
// expect: runs over the S keys
#include "attention.h"

Tensor *mix_values(const Tensor *weights, const Tensor *v_state) {
    int B = size(weights, 0), H = size(weights, 1), T = size(weights, 2);
    int S = size(weights, 3), D = size(v_state, 3);
    Tensor *out = zeros(shape4(B, H, T, D));   // (B, H, T, D)
    (void)S;
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            for (int t = 0; t < T; t++) {
                for (int d = 0; d < D; d++) {
                    float sum = 0.0f;
                    for (int s = 0; s < T; s++) {
                        sum += *at4(weights, b, h, t, s) * *at4(v_state, b, h, s, d);
                    }
                    *at4(out, b, h, t, d) = sum;
                }
            }
        }
    }
    return out;
}
