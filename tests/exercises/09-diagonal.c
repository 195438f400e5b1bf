// A planted mistake for tests/exercises.sh: the query's own key hidden too (s >= rather than s >).
// expect: hides the diagonal
#include "attention.h"

Tensor *causal_mask(int q_len, int cache_len) {
    Tensor *mask = zeros(shape2(q_len, cache_len + q_len));   // (q_len, cache_len + q_len)
    for (int t = 0; t < q_len; t++) {
        for (int s = 0; s < cache_len + q_len; s++) {
            *at2(mask, t, s) = s >= cache_len + t ? 1.0f : 0.0f;
        }
    }
    return mask;
}
