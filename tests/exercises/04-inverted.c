// A planted mistake for tests/exercises.sh: the real tokens' scores filled, the padding's kept.
// expect: fill where attention_mask is 0
#include "attention.h"

Tensor *fill_padding(const Tensor *scores, const Tensor *attention_mask) {
    Tensor *out = clone(scores);   // (B, T, S)
    int B = size(scores, 0), T = size(scores, 1), S = size(scores, 2);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            for (int s = 0; s < S; s++) {
                if (*at3(attention_mask, b, t, s) != 0) {
                    *at3(out, b, t, s) = -1e20f;
                }
            }
        }
    }
    return out;
}
