// A planted mistake for tests/exercises.sh: W_UK read as if stored by columns.
// expect: W_UK used untransposed
#include "lessons/19-kv-cache-at-scale/at_scale.h"

void absorb_query(float *q_latent, const float *q_nope, const float *w_uk, int qk_nope_head_dim,
                  int kv_lora_rank) {
    for (int c = 0; c < kv_lora_rank; c++) {
        float sum = 0.0f;
        for (int i = 0; i < qk_nope_head_dim; i++) {
            sum += q_nope[i] * w_uk[(long)c * qk_nope_head_dim + i];
        }
        q_latent[c] = sum;
    }
}
