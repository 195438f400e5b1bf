// A planted mistake for tests/exercises.sh: each term overwrites the sum (= for +=).
// expect: a sum over all qk_nope_head_dim
#include "lessons/19-kv-cache-at-scale/at_scale.h"

void absorb_query(float *q_latent, const float *q_nope, const float *w_uk, int qk_nope_head_dim,
                  int kv_lora_rank) {
    for (int c = 0; c < kv_lora_rank; c++) {
        for (int i = 0; i < qk_nope_head_dim; i++) {
            q_latent[c] = q_nope[i] * w_uk[(long)i * kv_lora_rank + c];
        }
    }
}
