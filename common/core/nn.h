// nn.h - nn.Linear and nn.LayerNorm: their parameters, initialisation and forward.
#ifndef NN_H
#define NN_H

#include <stdbool.h>

#include "core/tensor.h"

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
Tensor *linear(const Linear *self, const Tensor *x);

typedef struct {
    const Tensor *weight;   // (dim,), starts as ones
    const Tensor *bias;     // (dim,), starts as zeros
    double eps;             // added to the variance: 1e-5 by default, BERT uses 1e-12
} LayerNorm;

// nn.LayerNorm(dim, eps): weight ones and bias zeros, so it draws nothing
// from the generator. Its parameters are named "<name>.weight" and
// "<name>.bias", as in the state_dict.
LayerNorm layer_norm_init(const char *name, int dim, double eps);

// The module's forward: layer_norm (ops.h) over the last dim with its own
// weight, bias and eps.
Tensor *layer_norm_forward(const LayerNorm *self, const Tensor *x);

#endif
