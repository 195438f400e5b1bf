// family_gqa.h - what the tests of lessons 9 and 10 share: both build the
// GQA notebook's GQA module, with the same parameters, the same names and
// the same flags, and both mask causally.
#ifndef FAMILY_GQA_H
#define FAMILY_GQA_H

#include "harness.h"

// The module's Linear layers as PyTorch recorded them in `reference`, in
// the order it draws them: *layers[0..3] get w_query, w_key, w_value, o_proj.
void recorded_gqa_linears(Linear *const layers[4], const char *reference);

// check_bad_flags with what both lessons must refuse of the module's flags
// at the notebook's sizes (--dim 512 --heads 8 --kv-heads 2: kv-heads not
// dividing heads, heads not dividing dim, malformed values, a (dim, dim)
// weight too large), then with the lesson's own `cases`.
void check_gqa_bad_flags(const char *lesson, const char *program, const BadFlags *cases,
                         int n_cases);

// Causal weights: attn (B, H, T, L) of T new queries after cache_len
// cached keys (L = cache_len + T; cache_len 0 without a cache). In row t
// every weight after key cache_len + t is exactly 0 (exp(-inf)), every
// other one is above 0, the row sums to 1 (to 1e-6), and without a cache
// row 0 is exactly [1, 0, ...] (the first token sees only itself). `what`
// names the run in a failure.
void check_causal_weights(const Tensor *attn, int cache_len, const char *what);

#endif
