// ops.c - the operations attention is made of, written as plain loops.
//
// Most functions here walk the output in row-major order with an index
// array (next_index in tensor.h) and read their inputs through at(), so
// they work on any view (transposed, expanded, narrowed) without copying.
#include "core/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/arena.h"
#include "core/error.h"
#include "exact/gelu_exact.h"
#include "exact/layer_norm_exact.h"
#include "exact/rng.h"
#include "exact/softmax_exact.h"
#include "lesson/trace.h"

// --- broadcasting -------------------------------------------------------------------
// PyTorch lines shapes up from the right; a dim of size 1 (or a missing
// leading dim) stretches to match the other. (3, 1, 4) and (2, 1) give (3, 2, 4).

static bool broadcast_shapes(Shape *out, const int *a, int a_ndim, const int *b, int b_ndim) {
    int ndim = a_ndim > b_ndim ? a_ndim : b_ndim;
    out->ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        int da = d - (ndim - a_ndim);   // matching dim of a, or < 0 if missing
        int db = d - (ndim - b_ndim);
        int sa = da >= 0 ? a[da] : 1;
        int sb = db >= 0 ? b[db] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            return false;
        }
        out->size[d] = sa == 1 ? sb : sa;
    }
    return true;
}

// The element of t that lands on out_index once t is broadcast to out_ndim dims.
static float read_broadcast(const Tensor *t, const int *out_index, int out_ndim) {
    int index[MAX_DIMS] = {0};
    int lead = out_ndim - t->shape.ndim;
    for (int d = 0; d < t->shape.ndim; d++) {
        index[d] = t->shape.size[d] == 1 ? 0 : out_index[d + lead];
    }
    return *at(t, index);
}

// --- elementwise ----------------------------------------------------------------------

typedef float (*BinaryFn)(float a, float b);

static float add_fn(float a, float b) { return a + b; }
static float mul_fn(float a, float b) { return a * b; }
static float div_fn(float a, float b) { return a / b; }

static Tensor *binary(const char *op, BinaryFn fn, const Tensor *a, const Tensor *b) {
    Shape shape;
    if (!broadcast_shapes(&shape, a->shape.size, a->shape.ndim, b->shape.size, b->shape.ndim)) {
        fail("%s: shapes (%s) and (%s) cannot be broadcast together", op, size_x_str(a),
             size_x_str(b));
    }
    Tensor *out = zeros(shape);
    int index[MAX_DIMS] = {0};
    long n = numel(out);
    for (long i = 0; i < n; i++) {
        out->data[i] = fn(read_broadcast(a, index, shape.ndim),
                          read_broadcast(b, index, shape.ndim));
        next_index(index, out->shape.size, out->shape.ndim);
    }
    trace2(op, out, a, b);
    return out;
}

Tensor *add(const Tensor *a, const Tensor *b) { return binary("add", add_fn, a, b); }
Tensor *mul(const Tensor *a, const Tensor *b) { return binary("mul", mul_fn, a, b); }

static Tensor *with_scalar(const char *symbol, BinaryFn fn, const Tensor *t, float s) {
    Tensor *out = clone(t);
    long n = numel(out);
    for (long i = 0; i < n; i++) {
        out->data[i] = fn(out->data[i], s);
    }
    out->dtype = DTYPE_FLOAT32;
    trace(symbol, out, 1, &t, 1, (const double[]){s});
    return out;
}

Tensor *mul_scalar(const Tensor *t, float s) { return with_scalar("*", mul_fn, t, s); }
Tensor *div_scalar(const Tensor *t, float s) { return with_scalar("/", div_fn, t, s); }

// --- matmul ------------------------------------------------------------------------------

// Where row 0, column 0 of t's matrix sits for one batch index of the
// output (batch_ndim entries). t's leading dims line up with the last of
// the batch dims, and a dim of size 1 is broadcast: its index stays 0.
static const float *matrix_start(const Tensor *t, const int *batch, int batch_ndim) {
    int lead = batch_ndim - (t->shape.ndim - 2);   // batch dims that t does not have
    long position = t->offset;
    for (int d = 0; d < t->shape.ndim - 2; d++) {
        int i = t->shape.size[d] == 1 ? 0 : batch[lead + d];
        position += (long)i * t->stride[d];
    }
    return &t->data[position];
}

// out[..., i, j] = sum over p of a[..., i, p] * b[..., p, j]
Tensor *matmul(const Tensor *a, const Tensor *b) {
    if (a->shape.ndim < 2 || b->shape.ndim < 2) {
        fail("matmul: both arguments need at least 2 dimensions, got (%s) and (%s)",
             size_x_str(a), size_x_str(b));
    }
    int n = a->shape.size[a->shape.ndim - 2];
    int k = a->shape.size[a->shape.ndim - 1];
    int m = b->shape.size[b->shape.ndim - 1];
    if (b->shape.size[b->shape.ndim - 2] != k) {
        fail("matmul: shapes (%s) and (%s) cannot be multiplied", size_x_str(a), size_x_str(b));
    }
    // The leading (batch) dims broadcast; the last two are the matrices.
    Shape batch;
    if (!broadcast_shapes(&batch, a->shape.size, a->shape.ndim - 2, b->shape.size,
                          b->shape.ndim - 2)) {
        fail("matmul: batch dims of (%s) and (%s) cannot be broadcast together", size_x_str(a),
             size_x_str(b));
    }
    Shape shape = batch;   // at most 3 batch dims (inputs have at most 5), then (n, m)
    shape.size[shape.ndim] = n;
    shape.size[shape.ndim + 1] = m;
    shape.ndim += 2;
    Tensor *out = zeros(shape);

    // How far one step down a column (row stride) or along a row (column
    // stride) moves in each input; a transposed input just swaps them.
    int a_row = a->stride[a->shape.ndim - 2], a_col = a->stride[a->shape.ndim - 1];
    int b_row = b->stride[b->shape.ndim - 2], b_col = b->stride[b->shape.ndim - 1];
    long n_batches = 1;
    for (int d = 0; d < batch.ndim; d++) {
        n_batches *= batch.size[d];
    }
    int index[MAX_DIMS] = {0};   // the batch index, counted like an odometer
    for (long batch_i = 0; batch_i < n_batches; batch_i++) {
        const float *a_mat = matrix_start(a, index, batch.ndim);   // (n, k)
        const float *b_mat = matrix_start(b, index, batch.ndim);   // (k, m)
        float *out_mat = &out->data[batch_i * n * m];              // (n, m)
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < m; j++) {
                float sum = 0.0f;   // row i of a . column j of b
                for (int p = 0; p < k; p++) {
                    sum += a_mat[i * a_row + p * a_col] * b_mat[p * b_row + j * b_col];
                }
                out_mat[i * m + j] = sum;
            }
        }
        next_index(index, batch.size, batch.ndim);
    }
    trace2("matmul", out, a, b);
    return out;
}

// --- softmax -------------------------------------------------------------------------------

// softmax along `dim`: for each row of n numbers x along dim,
//     softmax(x)_i = exp(x_i - max) / sum_j exp(x_j - max).
// Subtracting the max changes nothing mathematically (exp(-max) cancels in
// the ratio) but keeps exp() from overflowing: the largest term becomes
// exp(0) = 1. A row that is all -inf has max = -inf, and -inf - (-inf) is
// NaN: the row becomes NaN, as in PyTorch.
//
// The rows are computed on a row-major copy of t, seen as (outer, n, inner)
// around dim: outer * inner softmaxes of n values each, the values of one
// `inner` floats apart (inner = 1 for the last dim). The arithmetic itself
// is in softmax_exact.c: the same four steps, rounded where PyTorch's own
// kernel rounds, so the lessons print PyTorch's digits.
Tensor *softmax(const Tensor *t, int dim) {
    int d = wrap_dim("softmax", dim, t->shape.ndim);
    Tensor *out = clone(t);
    out->dtype = DTYPE_FLOAT32;
    int n = out->shape.size[d];
    long outer = 1, inner = 1;   // the sizes before dim, and after it, multiplied
    for (int e = 0; e < d; e++) {
        outer *= out->shape.size[e];
    }
    for (int e = d + 1; e < out->shape.ndim; e++) {
        inner *= out->shape.size[e];
    }
    if (d == out->shape.ndim - 1) {   // PyTorch has two kernels: the last dim, and any other
        softmax_exact_lastdim(out->data, outer, n);
    } else {
        softmax_exact_otherdim(out->data, outer, n, inner);
    }
    trace("softmax", out, 1, &t, 1, (const double[]){dim});
    return out;
}

// --- masks ---------------------------------------------------------------------------------

Tensor *eq_scalar(const Tensor *mask, float value) {
    Tensor *out = clone(mask);
    long n = numel(out);
    for (long i = 0; i < n; i++) {
        out->data[i] = out->data[i] == value ? 1.0f : 0.0f;
    }
    out->dtype = DTYPE_BOOL;
    trace("==", out, 1, &mask, 1, (const double[]){value});
    return out;
}

// Can `from` be broadcast to exactly the shape of `to`? Each of its dims,
// lined up from the right, is 1 or `to`'s size, and it has no extra dims.
static bool broadcasts_to(const Tensor *from, const Tensor *to) {
    int lead = to->shape.ndim - from->shape.ndim;
    if (lead < 0) {
        return false;
    }
    for (int d = 0; d < from->shape.ndim; d++) {
        if (from->shape.size[d] != 1 && from->shape.size[d] != to->shape.size[lead + d]) {
            return false;
        }
    }
    return true;
}

Tensor *masked_fill(const Tensor *t, const Tensor *condition, float value) {
    if (!broadcasts_to(condition, t)) {
        fail("masked_fill: the mask (%s) cannot be broadcast to the tensor (%s)",
             size_x_str(condition), size_x_str(t));
    }
    Tensor *out = clone(t);
    int index[MAX_DIMS] = {0};
    long n = numel(out);
    for (long i = 0; i < n; i++) {
        if (read_broadcast(condition, index, t->shape.ndim) != 0.0f) {
            out->data[i] = value;
        }
        next_index(index, out->shape.size, out->shape.ndim);
    }
    trace("masked_fill", out, 2, (const Tensor *const[]){t, condition}, 1,
          (const double[]){value});
    return out;
}

Tensor *triu(const Tensor *t, int diagonal) {
    if (t->shape.ndim < 2) {
        fail("triu: input tensor must have at least 2 dimensions, got (%s)", size_x_str(t));
    }
    Tensor *out = clone(t);
    int index[MAX_DIMS] = {0};
    long n = numel(out);
    for (long e = 0; e < n; e++) {
        int i = index[t->shape.ndim - 2];   // row
        int j = index[t->shape.ndim - 1];   // column
        if (j - i < diagonal) {
            out->data[e] = 0.0f;
        }
        next_index(index, out->shape.size, out->shape.ndim);
    }
    trace("triu", out, 1, &t, 1, (const double[]){diagonal});
    return out;
}

// size * factor as a new size, refused (before it can overflow) if the
// tensor would pass MAX_ELEMENTS with that one dim alone.
static int grown_size(const char *op, int size, long factor) {
    if (factor < 0) {
        fail("%s: the number of repeats must not be negative, got %ld", op, factor);
    }
    if (factor > 0 && size > MAX_ELEMENTS / factor) {
        fail("%s: a dimension of %d times %ld is more than %ld elements", op, size, factor,
             MAX_ELEMENTS);
    }
    return (int)(size * factor);
}

// --- splitting, joining, repeating -----------------------------------------------------------

void split(const Tensor **parts, const Tensor *t, int split_size, int count) {
    int last = t->shape.ndim - 1;
    if (t->shape.ndim == 0 || split_size <= 0 || count <= 0 ||
        (long)split_size * count != t->shape.size[last]) {
        fail("split: %d parts of size %d do not make up the last dim of (%s)", count,
             split_size, size_x_str(t));
    }
    for (int i = 0; i < count; i++) {
        parts[i] = narrow(t, last, i * split_size, split_size);   // views, no copy
    }
}

Tensor *cat(const Tensor *const *tensors, int count, int dim) {
    if (count < 1) {
        fail("cat: expected a non-empty list of tensors");
    }
    const Tensor *first = tensors[0];
    int d = wrap_dim("cat", dim, first->shape.ndim);
    Shape shape = first->shape;
    long total = 0;   // the inputs' sizes along d, added up
    for (int i = 0; i < count; i++) {
        const Tensor *t = tensors[i];
        for (int e = 0; e < first->shape.ndim; e++) {
            if (t->shape.ndim != first->shape.ndim ||
                (e != d && t->shape.size[e] != first->shape.size[e])) {
                fail("cat: sizes of tensors must match except in dimension %d; got (%s) and "
                     "(%s)", dim, size_x_str(first), size_x_str(t));
            }
        }
        total += t->shape.size[d];
        if (total > MAX_ELEMENTS) {
            fail("cat: the result would have more than %ld elements", MAX_ELEMENTS);
        }
    }
    shape.size[d] = (int)total;
    Tensor *out = zeros(shape);
    out->dtype = first->dtype;
    int start = 0;   // where the next input goes along dim d
    for (int i = 0; i < count; i++) {
        const Tensor *t = tensors[i];
        int index[MAX_DIMS] = {0};
        long n = numel(t);
        for (long e = 0; e < n; e++) {
            int out_index[MAX_DIMS];
            memcpy(out_index, index, sizeof out_index);
            out_index[d] += start;
            *at(out, out_index) = *at(t, index);
            next_index(index, t->shape.size, t->shape.ndim);
        }
        start += t->shape.size[d];
    }
    trace("cat", out, count, tensors, 1, (const double[]){dim});
    return out;
}

// out[i0, i1, ...] = t[i0 % size0, i1 % size1, ...]
Tensor *repeat(const Tensor *t, const int *reps) {
    Shape shape = t->shape;
    for (int d = 0; d < t->shape.ndim; d++) {
        shape.size[d] = grown_size("repeat", t->shape.size[d], reps[d]);
    }
    Tensor *out = zeros(shape);
    out->dtype = t->dtype;
    int index[MAX_DIMS] = {0};
    long n = numel(out);
    for (long e = 0; e < n; e++) {
        int from[MAX_DIMS] = {0};
        for (int d = 0; d < t->shape.ndim; d++) {
            from[d] = index[d] % t->shape.size[d];
        }
        out->data[e] = *at(t, from);
        next_index(index, out->shape.size, out->shape.ndim);
    }
    trace1("repeat", out, t);
    return out;
}

// out[..., i, ...] = t[..., i / repeats, ...] along dim: 0 0 1 1 2 2, not 0 1 2 0 1 2.
Tensor *repeat_interleave(const Tensor *t, int repeats, int dim) {
    int d = wrap_dim("repeat_interleave", dim, t->shape.ndim);
    if (repeats < 1) {
        fail("repeat_interleave: repeats must be positive, got %d", repeats);
    }
    Shape shape = t->shape;
    shape.size[d] = grown_size("repeat_interleave", t->shape.size[d], repeats);
    Tensor *out = zeros(shape);
    out->dtype = t->dtype;
    int index[MAX_DIMS] = {0};
    long n = numel(out);
    for (long e = 0; e < n; e++) {
        int from[MAX_DIMS];
        memcpy(from, index, sizeof from);
        from[d] = index[d] / repeats;
        out->data[e] = *at(t, from);
        next_index(index, out->shape.size, out->shape.ndim);
    }
    trace("repeat_interleave", out, 1, &t, 2, (const double[]){repeats, dim});
    return out;
}

// --- dropout -----------------------------------------------------------------------------------

// PyTorch on the CPU: noise = bernoulli(1 - p) (1.0 or 0.0 per element,
// row-major), noise /= (1 - p), out = t * noise (docs/pytorch-rng.md section 6).
// Dividing the survivors by 1 - p keeps the expected value of each
// element unchanged, so eval mode (no dropout) needs no rescaling.
const Tensor *dropout(const Tensor *t, double p, bool training) {
    if (p < 0.0 || p > 1.0) {
        fail("dropout: probability has to be between 0 and 1, but got %g", p);
    }
    if (!training || p == 0.0) {
        return t;   // eval mode: the identity, and no random draws
    }
    if (p == 1.0) {
        // Everything dropped; PyTorch draws nothing and returns input * 0
        // (not zeros: -3 * 0 is -0., and PyTorch keeps that sign).
        Tensor *out = clone(t);
        long n = numel(out);
        for (long i = 0; i < n; i++) {
            out->data[i] = out->data[i] * 0.0f;
        }
        trace("dropout", out, 1, &t, 1, (const double[]){p});
        return out;
    }
    Tensor *out = clone(t);
    long n = numel(out);
    float scale = (float)(1.0 - p);
    for (long i = 0; i < n; i++) {
        float noise = bernoulli_draw(1.0 - p) ? 1.0f : 0.0f;
        noise = noise / scale;
        out->data[i] = out->data[i] * noise;
    }
    trace("dropout", out, 1, &t, 1, (const double[]){p});
    return out;
}

float max_abs_diff(const Tensor *a, const Tensor *b) {
    if (!same_shape(a, b)) {
        fail("max_abs_diff: shapes (%s) and (%s) differ", size_x_str(a), size_x_str(b));
    }
    float worst = 0.0f;
    int index[MAX_DIMS] = {0};
    long n = numel(a);
    for (long i = 0; i < n; i++) {
        float x = *at(a, index);
        float y = *at(b, index);
        // Any NaN makes the answer NaN (fmaxf alone would skip it, and a
        // check `diff < tol` would pass); equal values, including the same
        // infinity as in masked scores, differ by 0.
        if (isnan(x) || isnan(y)) {
            return NAN;
        }
        if (x != y) {
            worst = fmaxf(worst, fabsf(x - y));
        }
        next_index(index, a->shape.size, a->shape.ndim);
    }
    return worst;
}

// --- what a Transformer block adds around attention ------------------------------------------

Tensor *layer_norm(const Tensor *x, const Tensor *weight, const Tensor *bias, double eps) {
    int C = x->shape.ndim > 0 ? x->shape.size[x->shape.ndim - 1] : 0;
    if (x->shape.ndim < 1 || weight->shape.ndim != 1 || bias->shape.ndim != 1 ||
        weight->shape.size[0] != C || bias->shape.size[0] != C) {
        fail("layer_norm: input (%s) with weight (%s) and bias (%s): both must be (%d)",
             size_x_str(x), size_x_str(weight), size_x_str(bias), C);
    }
    const Tensor *xc = contiguous(x);
    const Tensor *wc = contiguous(weight);
    const Tensor *bc = contiguous(bias);
    Tensor *y = zeros(x->shape);
    long rows = C == 0 ? 0 : numel(x) / C;
    for (long r = 0; r < rows; r++) {
        layer_norm_exact_row(&y->data[r * C], &xc->data[xc->offset + r * C],
                             &wc->data[wc->offset], &bc->data[bc->offset], C, (float)eps);
    }
    trace("layer_norm", y, 3, (const Tensor *const[]){x, weight, bias}, 1,
          (const double[]){eps});
    return y;
}

// gelu: PyTorch's arithmetic is in gelu_exact.c (oneDNN's erf approximation,
// which is what PyTorch runs). gelu_tanh is written in the order of
// PyTorch's own kernel (GeluKernel), so its roundings are PyTorch's but for
// tanh's own last bit (the C library's tanhf, where PyTorch's vector code
// uses Sleef's).
static float gelu_tanh_fn(float x) {
    const float beta = 0.79788456080286536f;    // sqrt(2 / pi)
    const float kappa = 0.044715f;
    float cube = x * x * x;
    return 0.5f * x * (1.0f + tanhf(beta * (x + kappa * cube)));
}

Tensor *gelu(const Tensor *x) {
    Tensor *y = clone(x);   // contiguous, so gelu_exact sees PyTorch's layout
    y->dtype = DTYPE_FLOAT32;
    gelu_exact(y->data, numel(y));
    trace1("gelu", y, x);
    return y;
}

Tensor *gelu_tanh(const Tensor *x) {
    Tensor *y = clone(x);
    y->dtype = DTYPE_FLOAT32;
    long n = numel(y);
    for (long i = 0; i < n; i++) {
        y->data[i] = gelu_tanh_fn(y->data[i]);
    }
    trace1("gelu_tanh", y, x);
    return y;
}

Tensor *bernoulli(Shape shape, double p) {
    if (!(p >= 0.0 && p <= 1.0)) {
        fail("bernoulli: probability has to be between 0 and 1, but got %g", p);
    }
    Tensor *mask = zeros(shape);
    long n = numel(mask);
    for (long i = 0; i < n; i++) {
        mask->data[i] = bernoulli_draw(p) ? 1.0f : 0.0f;
    }
    return mask;
}
