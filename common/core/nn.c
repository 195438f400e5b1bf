// nn.c - nn.Linear and nn.LayerNorm.
#include "core/nn.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/arena.h"
#include "core/error.h"
#include "core/ops.h"
#include "exact/rng.h"
#include "lesson/trace.h"

// "query_proj" and "weight" give "query_proj.weight" (an arena string).
static const char *parameter_name(const char *module, const char *parameter) {
    char *text = arena_alloc(strlen(module) + strlen(parameter) + 2, 1);
    sprintf(text, "%s.%s", module, parameter);
    return text;
}

// PyTorch's Linear.reset_parameters (docs/pytorch-rng.md section 3):
//   kaiming_uniform_(weight, a=sqrt(5)) -> uniform(-wb, wb),
//       wb = sqrt(3) * gain / sqrt(in),  gain = sqrt(2 / (1 + a^2))
//   bias -> uniform(-1/sqrt(in), 1/sqrt(in))
// worked in double in exactly this order, as Python does. (Both bounds come
// out as 1/sqrt(in); the long way round is kept so the floats agree.)
Linear linear_init(const char *name, int in_features, int out_features, bool bias) {
    Linear layer = {NULL, NULL, in_features, out_features};
    Tensor *weight = zeros(shape2(out_features, in_features));   // (out, in)
    double a = sqrt(5.0);
    double gain = sqrt(2.0 / (1.0 + a * a));
    double weight_bound = sqrt(3.0) * (gain / sqrt((double)in_features));
    uniform_(weight, -weight_bound, weight_bound);
    layer.weight = named(parameter_name(name, "weight"), weight);

    if (bias) {
        Tensor *bias_values = zeros(shape1(out_features));           // (out,)
        double bias_bound = 1.0 / sqrt((double)in_features);
        uniform_(bias_values, -bias_bound, bias_bound);
        layer.bias = named(parameter_name(name, "bias"), bias_values);
    }
    return layer;
}

// y[r, o] = sum_i x[r, i] * W[o, i] + b[o] for every row r of x.
Tensor *linear(const Linear *self, const Tensor *x) {
    int in = self->in_features;
    int out_features = self->out_features;
    if (x->shape.ndim < 1 || x->shape.size[x->shape.ndim - 1] != in) {
        fail("linear: shapes (%s) and (%dx%d) cannot be multiplied", size_x_str(x), in,
             out_features);   // like PyTorch, the weight is shown as W^T: (in x out)
    }
    const Tensor *xc = contiguous(x);
    Shape shape = x->shape;
    shape.size[shape.ndim - 1] = out_features;
    Tensor *y = zeros(shape);                         // (..., out)
    long rows = numel(x) / (in == 0 ? 1 : in);
    // The weight may be a view (a slice of a fused weight, say): read it
    // row-major from where it starts, copying it first if it must.
    const Tensor *Wc = contiguous(self->weight);
    const float *W = &Wc->data[Wc->offset];          // (out, in), row-major
    for (long r = 0; r < rows; r++) {
        const float *x_r = &xc->data[xc->offset + r * in];
        float *y_r = &y->data[r * out_features];
        for (int o = 0; o < out_features; o++) {
            const float *W_o = &W[(long)o * in];
            float sum = 0.0f;
            for (int i = 0; i < in; i++) {
                sum += x_r[i] * W_o[i];
            }
            y_r[o] = self->bias != NULL ? sum + *at1(self->bias, o) : sum;
        }
    }
    const Tensor *inputs[] = {x, self->weight, self->bias};   // the bias may be NULL
    trace("linear", y, self->bias != NULL ? 3 : 2, inputs, 0, NULL);
    return y;
}

LayerNorm layer_norm_init(const char *name, int dim, double eps) {
    LayerNorm norm;
    norm.weight = named(parameter_name(name, "weight"), ones(shape1(dim)));    // (dim,)
    norm.bias = named(parameter_name(name, "bias"), zeros(shape1(dim)));       // (dim,)
    norm.eps = eps;
    return norm;
}

Tensor *layer_norm_forward(const LayerNorm *self, const Tensor *x) {
    return layer_norm(x, self->weight, self->bias, self->eps);
}
