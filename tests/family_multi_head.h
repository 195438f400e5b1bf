// family_multi_head.h - what the tests of lessons 6, 7 and 11 share:
// several heads, weights (B, H, T, S), the notebook's lines first.
#ifndef FAMILY_MULTI_HEAD_H
#define FAMILY_MULTI_HEAD_H

#include "harness.h"

// Run the lesson without flags: exit 0, nothing on stderr, and stdout
// opening with `opening`, verbatim (the notebook's own lines come first).
void check_output_opens_with(const char *lesson, const char *opening);

// Attention weights (B, H, T, S) computed under `mask` (B, H, T, S): every
// row sums to 1 (to 1e-6); where the mask is 0 the weight is exactly 0 and
// elsewhere above 0, except in a row whose mask is all zeros, which is
// uniform, exactly 1/S (a -1e20 fill, not -inf: no NaN). Returns how many
// rows were all masked. `what` names the run in a failure.
int check_multi_head_weights(const Tensor *weights, const Tensor *mask, const char *what);

// `after` is `before` recomputed with one input slice changed. Along `dim`,
// slice `changed` moved by more than `min_change` and every other slice is
// bitwise unchanged: heads that do not see each other, queries that do not.
// A failure names "<what> <index>".
void assert_only_slice_changed(const Tensor *before, const Tensor *after, int dim, int changed,
                               float min_change, const char *what);

// The claim lessons 6 and 7 print about output_mid, for a (B, H, T, D)
// shape with H > 1 and T > 1: view(B, T, -1) of its transpose(1, 2) fails
// with PyTorch's message, and reshape(B, T, -1) copies instead, equal to
// contiguous().view(B, T, -1).
void check_view_needs_contiguous(Shape output_mid);

#endif
