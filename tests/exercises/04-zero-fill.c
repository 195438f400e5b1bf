// A planted mistake for tests/exercises.sh: the padding's scores set to 0, not -1e20.
// expect: a score of 0 is not small
#include "attention.h"

Tensor *fill_padding(const Tensor *scores, const Tensor *attention_mask) {
    Tensor *out = clone(scores);   // (B, T, S)
    int B = size(scores, 0), T = size(scores, 1), S = size(scores, 2);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            for (int s = 0; s < S; s++) {
                if (*at3(attention_mask, b, t, s) == 0) {
                    *at3(out, b, t, s) = 0.0f;
                }
            }
        }
    }
    return out;
}
