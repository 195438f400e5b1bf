// family_gqa.c - what the tests of lessons 9 and 10 share (family_gqa.h says
// what each does).
#include "family_gqa.h"

#include <math.h>
#include <stdbool.h>

void recorded_gqa_linears(Linear *const layers[4], const char *reference) {
    const char *const names[4] = {"w_query", "w_key", "w_value", "o_proj"};
    for (int i = 0; i < 4; i++) {
        *layers[i] = recorded_linear(reference, names[i]);
    }
}

static const BadFlags GQA_BAD_FLAGS[] = {
    {{"--kv-heads", "3", NULL}, "--kv-heads 3 does not divide --heads 8"},
    {{"--kv-heads", "16", NULL}, "--kv-heads 16 does not divide --heads 8"},
    {{"--heads", "7", NULL}, "--heads 7 does not divide --dim 512"},
    {{"--heads", NULL}, "--heads"},                     // missing value
    {{"--dim", "x", NULL}, "--dim"},
    {{"--batch", "-1", NULL}, "--batch"},
    {{"--dim", "65536", NULL}, "w_query.weight (dim, dim)"},   // 2^32 elements
};

void check_gqa_bad_flags(const char *lesson, const char *program, const BadFlags *cases,
                         int n_cases) {
    check_bad_flags(lesson, program, GQA_BAD_FLAGS,
                    (int)(sizeof GQA_BAD_FLAGS / sizeof GQA_BAD_FLAGS[0]));
    check_bad_flags(lesson, program, cases, n_cases);
}

void check_causal_weights(const Tensor *attn, int cache_len, const char *what) {
    ck_assert_msg(attn->shape.ndim == 4, "%s: attn has %d dims, expected 4", what,
                  attn->shape.ndim);
    int B = size(attn, 0), H = size(attn, 1), T = size(attn, 2), L = size(attn, 3);
    ck_assert_msg(L == cache_len + T, "%s: attn (%s) after %d cached keys", what,
                  size_x_str(attn), cache_len);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            for (int t = 0; t < T; t++) {
                double sum = 0.0;
                for (int s = 0; s < L; s++) {
                    float w = *at4(attn, b, h, t, s);
                    bool future = s > cache_len + t;
                    ck_assert_msg(future ? w == 0.0f : w > 0.0f,
                                  "%s: attn[%d, %d, %d, %d] = %g, key %d %s query %d", what, b,
                                  h, t, s, (double)w, s, future ? "after" : "not after",
                                  cache_len + t);
                    sum += w;
                }
                ck_assert_msg(fabs(sum - 1.0) < 1e-6, "%s: row [%d, %d, %d] sums to %.9f", what,
                              b, h, t, sum);
            }
            if (cache_len == 0) {
                ck_assert_msg(*at4(attn, b, h, 0, 0) == 1.0f, "%s: attn[%d, %d, 0, 0] = %.9g",
                              what, b, h, (double)*at4(attn, b, h, 0, 0));
            }
        }
    }
}
