// nn.h - nn.Linear: its weights, its initialisation and its forward pass.
#ifndef NN_H
#define NN_H

#include <stdbool.h>

#include "tensor.h"

typedef struct {
    const Tensor *weight;   // (out_features, in_features), as PyTorch stores it
    const Tensor *bias;     // (out_features,), or NULL for bias=False
    int in_features;
    int out_features;
} Linear;

// nn.Linear(in, out, bias) with PyTorch's default initialisation, drawn
// from the generator in PyTorch's order (weight then bias). `name` is the
// module name in the notebook ("query_proj"); the parameters are named
// "query_proj.weight" and "query_proj.bias" (named() in trace.h), as in
// the module's state_dict.
Linear linear_init(const char *name, int in_features, int out_features, bool bias);

// y = x W^T + b over the last dim of x: (..., in) -> (..., out).
Tensor *linear(const Tensor *x, const Linear *layer);

#endif
