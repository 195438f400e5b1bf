// print.h - text exactly as PyTorch's print() gives it.
//
// tensor_str(t, NULL) is the text of `print(t)` with default print options
// (precision 4, threshold 1000, edgeitems 3, linewidth 80), so a lesson's
// output can be diffed against the notebook's. The rules are in
// docs/pytorch-print.md. It returns an arena string. (print(t.shape) is size_str in tensor.h.)
#ifndef PRINT_H
#define PRINT_H

#include "core/tensor.h"

// `suffix` is NULL, or one suffix such as "grad_fn=<SoftmaxBackward0>",
// placed (on the last line or wrapped) as PyTorch places it.
const char *tensor_str(const Tensor *t, const char *suffix);

#endif
