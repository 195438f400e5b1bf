// family_self_attention.h - what the tests of lessons 2 to 5 share: one head,
// attention weights (B, T, S), the notebook's thop profile (2 and 3).
#ifndef FAMILY_SELF_ATTENTION_H
#define FAMILY_SELF_ATTENTION_H

#include "harness.h"

// Lessons 2 and 3: check_against_reference for recorded run c (`exact` and
// `computed` as there, tolerances ROUNDING_*, PyTorch's lines printed in
// order), and then stdout must start, verbatim, with stdout.txt up to and
// including its first line ending " M" (the notebook's profile() lines), so
// a diff against the notebook shows only the extras.
RunResult check_profiled_run(const char *lesson, const RecordedCase *c, const char *const *exact,
                             const char *const *computed);

// Attention weights (B, T, S): every row sums to 1 (to 1e-6), and where
// `mask` (B, T, S) is 0 the weight is exactly 0 (exp(-1e20 - max)
// underflows), elsewhere above 0. mask NULL: nothing is masked. Returns how
// many weights were masked. `what` names the run in a failure.
int check_weight_rows(const Tensor *att_weight, const Tensor *mask, const char *what);

#endif
