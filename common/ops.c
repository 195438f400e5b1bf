// ops.c - the operations attention is made of, written as plain loops.
//
// Most functions here walk the output in row-major order with an index
// array (next_index in tensor.h) and read their inputs through at(), so
// they work on any view (transposed, expanded, narrowed) without copying.
#include "ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arena.h"
#include "error.h"
#include "graph.h"
#include "rng.h"

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
    int lead = out_ndim - t->ndim;
    for (int d = 0; d < t->ndim; d++) {
        index[d] = t->shape[d] == 1 ? 0 : out_index[d + lead];
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
    if (!broadcast_shapes(&shape, a->shape, a->ndim, b->shape, b->ndim)) {
        fail("%s: shapes (%s) and (%s) cannot be broadcast together", op, shape_text(a),
             shape_text(b));
    }
    Tensor *out = zeros(shape);
    int index[MAX_DIMS] = {0};
    long n = numel(out);
    for (long i = 0; i < n; i++) {
        out->data[i] = fn(read_broadcast(a, index, shape.ndim), read_broadcast(b, index, shape.ndim));
        next_index(index, out->shape, out->ndim);
    }
    graph_record2(op, out, a, b);
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
    char label[48];
    snprintf(label, sizeof label, "%s %g", symbol, (double)s);
    graph_record1(label, out, t);
    return out;
}

Tensor *mul_scalar(const Tensor *t, float s) { return with_scalar("*", mul_fn, t, s); }
Tensor *div_scalar(const Tensor *t, float s) { return with_scalar("/", div_fn, t, s); }

// --- matmul ------------------------------------------------------------------------------

// Where row 0, column 0 of t's matrix sits for one batch index of the
// output (batch_ndim entries). t's leading dims line up with the last of
// the batch dims, and a dim of size 1 is broadcast: its index stays 0.
static const float *matrix_start(const Tensor *t, const int *batch, int batch_ndim) {
    int lead = batch_ndim - (t->ndim - 2);   // batch dims that t does not have
    long position = t->offset;
    for (int d = 0; d < t->ndim - 2; d++) {
        int i = t->shape[d] == 1 ? 0 : batch[lead + d];
        position += (long)i * t->stride[d];
    }
    return &t->data[position];
}

// out[..., i, j] = sum over p of a[..., i, p] * b[..., p, j]
Tensor *matmul(const Tensor *a, const Tensor *b) {
    if (a->ndim < 2 || b->ndim < 2) {
        fail("matmul: both arguments need at least 2 dimensions, got (%s) and (%s)",
             shape_text(a), shape_text(b));
    }
    int n = a->shape[a->ndim - 2];
    int k = a->shape[a->ndim - 1];
    int m = b->shape[b->ndim - 1];
    if (b->shape[b->ndim - 2] != k) {
        fail("matmul: shapes (%s) and (%s) cannot be multiplied", shape_text(a), shape_text(b));
    }
    // The leading (batch) dims broadcast; the last two are the matrices.
    Shape batch;
    if (!broadcast_shapes(&batch, a->shape, a->ndim - 2, b->shape, b->ndim - 2)) {
        fail("matmul: batch dims of (%s) and (%s) cannot be broadcast together", shape_text(a),
             shape_text(b));
    }
    Shape shape = batch;   // at most 3 batch dims (inputs have at most 5), then (n, m)
    shape.size[shape.ndim] = n;
    shape.size[shape.ndim + 1] = m;
    shape.ndim += 2;
    Tensor *out = zeros(shape);

    // How far one step down a column (row stride) or along a row (column
    // stride) moves in each input; a transposed input just swaps them.
    int a_row = a->stride[a->ndim - 2], a_col = a->stride[a->ndim - 1];
    int b_row = b->stride[b->ndim - 2], b_col = b->stride[b->ndim - 1];
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
    graph_record2("matmul", out, a, b);
    return out;
}

// --- softmax -------------------------------------------------------------------------------

// softmax of the n numbers x[0], x[step], ..., x[(n-1)*step], in place:
// exp(x_i - max) / sum_j exp(x_j - max). Subtracting the max changes nothing
// mathematically (exp(-max) cancels in the ratio) but keeps exp() from
// overflowing: the largest term becomes exp(0) = 1. A row that is all -inf
// has max = -inf, and -inf - (-inf) is NaN: the row becomes NaN, as in PyTorch.
static void softmax_row(float *x, int n, long step) {
    float max = -INFINITY;
    for (int i = 0; i < n; i++) {
        max = fmaxf(max, x[i * step]);
    }
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i * step] = expf(x[i * step] - max);
        sum += x[i * step];
    }
    for (int i = 0; i < n; i++) {
        x[i * step] /= sum;
    }
}

// softmax along `dim`, on a row-major copy of t. Seen as (outer, n, inner)
// around dim, the copy holds outer * inner softmaxes of n values each, the
// values of one `inner` floats apart (inner = 1 for the last dim).
Tensor *softmax(const Tensor *t, int dim) {
    int d = wrap_dim("softmax", dim, t->ndim);
    Tensor *out = clone(t);
    out->dtype = DTYPE_FLOAT32;
    int n = out->shape[d];
    long outer = 1, inner = 1;   // the sizes before dim, and after it, multiplied
    for (int e = 0; e < d; e++) {
        outer *= out->shape[e];
    }
    for (int e = d + 1; e < out->ndim; e++) {
        inner *= out->shape[e];
    }
    for (long o = 0; o < outer; o++) {
        for (long r = 0; r < inner; r++) {
            softmax_row(&out->data[o * n * inner + r], n, inner);
        }
    }
    char label[32];
    snprintf(label, sizeof label, "softmax(dim=%d)", dim);
    graph_record1(label, out, t);
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
    char label[32];
    snprintf(label, sizeof label, "== %g", (double)value);
    graph_record1(label, out, mask);
    return out;
}

// Can `from` be broadcast to exactly the shape of `to`? Each of its dims,
// lined up from the right, is 1 or `to`'s size, and it has no extra dims.
static bool broadcasts_to(const Tensor *from, const Tensor *to) {
    int lead = to->ndim - from->ndim;
    if (lead < 0) {
        return false;
    }
    for (int d = 0; d < from->ndim; d++) {
        if (from->shape[d] != 1 && from->shape[d] != to->shape[lead + d]) {
            return false;
        }
    }
    return true;
}

Tensor *masked_fill(const Tensor *t, const Tensor *condition, float value) {
    if (!broadcasts_to(condition, t)) {
        fail("masked_fill: the mask (%s) cannot be broadcast to the tensor (%s)",
             shape_text(condition), shape_text(t));
    }
    Tensor *out = clone(t);
    int index[MAX_DIMS] = {0};
    long n = numel(out);
    for (long i = 0; i < n; i++) {
        if (read_broadcast(condition, index, t->ndim) != 0.0f) {
            out->data[i] = value;
        }
        next_index(index, out->shape, out->ndim);
    }
    char label[48];
    snprintf(label, sizeof label, "masked_fill(%g)", (double)value);
    graph_record2(label, out, t, condition);
    return out;
}

Tensor *triu(const Tensor *t, int diagonal) {
    if (t->ndim < 2) {
        fail("triu: input tensor must have at least 2 dimensions, got (%s)", shape_text(t));
    }
    Tensor *out = clone(t);
    int index[MAX_DIMS] = {0};
    long n = numel(out);
    for (long e = 0; e < n; e++) {
        int i = index[t->ndim - 2];   // row
        int j = index[t->ndim - 1];   // column
        if (j - i < diagonal) {
            out->data[e] = 0.0f;
        }
        next_index(index, out->shape, out->ndim);
    }
    char label[32];
    snprintf(label, sizeof label, "triu(diagonal=%d)", diagonal);
    graph_record1(label, out, t);
    return out;
}

// --- splitting, joining, repeating -----------------------------------------------------------

void split(Tensor **parts, const Tensor *t, int split_size, int count) {
    int last = t->ndim - 1;
    if (t->ndim == 0 || split_size <= 0 || split_size * count != t->shape[last]) {
        fail("split: %d parts of size %d do not make up the last dim of (%s)", count,
             split_size, shape_text(t));
    }
    for (int i = 0; i < count; i++) {
        parts[i] = narrow(t, last, i * split_size, split_size);   // views, no copy
    }
}

Tensor *cat(Tensor *const *tensors, int count, int dim) {
    if (count < 1) {
        fail("cat: expected a non-empty list of tensors");
    }
    const Tensor *first = tensors[0];
    int d = wrap_dim("cat", dim, first->ndim);
    Shape shape = shape_of(first);
    shape.size[d] = 0;
    for (int i = 0; i < count; i++) {
        const Tensor *t = tensors[i];
        for (int e = 0; e < first->ndim; e++) {
            if (t->ndim != first->ndim || (e != d && t->shape[e] != first->shape[e])) {
                fail("cat: sizes of tensors must match except in dimension %d; got (%s) and "
                     "(%s)", dim, shape_text(first), shape_text(t));
            }
        }
        shape.size[d] += t->shape[d];
    }
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
            next_index(index, t->shape, t->ndim);
        }
        start += t->shape[d];
    }
    graph_record("cat", out, (const Tensor *const *)tensors, count);
    return out;
}

// out[i0, i1, ...] = t[i0 % size0, i1 % size1, ...]
Tensor *repeat(const Tensor *t, const int *reps) {
    Shape shape = shape_of(t);
    for (int d = 0; d < t->ndim; d++) {
        shape.size[d] *= reps[d];
    }
    Tensor *out = zeros(shape);
    out->dtype = t->dtype;
    int index[MAX_DIMS] = {0};
    long n = numel(out);
    for (long e = 0; e < n; e++) {
        int from[MAX_DIMS] = {0};
        for (int d = 0; d < t->ndim; d++) {
            from[d] = index[d] % t->shape[d];
        }
        out->data[e] = *at(t, from);
        next_index(index, out->shape, out->ndim);
    }
    graph_record1("repeat", out, t);
    return out;
}

// out[..., i, ...] = t[..., i / repeats, ...] along dim: 0 0 1 1 2 2, not 0 1 2 0 1 2.
Tensor *repeat_interleave(const Tensor *t, int repeats, int dim) {
    int d = wrap_dim("repeat_interleave", dim, t->ndim);
    if (repeats < 1) {
        fail("repeat_interleave: repeats must be positive, got %d", repeats);
    }
    Shape shape = shape_of(t);
    shape.size[d] *= repeats;
    Tensor *out = zeros(shape);
    out->dtype = t->dtype;
    int index[MAX_DIMS] = {0};
    long n = numel(out);
    for (long e = 0; e < n; e++) {
        int from[MAX_DIMS];
        memcpy(from, index, sizeof from);
        from[d] = index[d] / repeats;
        out->data[e] = *at(t, from);
        next_index(index, out->shape, out->ndim);
    }
    char label[48];
    snprintf(label, sizeof label, "repeat_interleave(%d, dim=%d)", repeats, dim);
    graph_record1(label, out, t);
    return out;
}

// --- dropout -----------------------------------------------------------------------------------

// PyTorch on the CPU: noise = bernoulli(1 - p) (1.0 or 0.0 per element,
// row-major), noise /= (1 - p), out = t * noise (TORCH_RNG.md section 6).
// Dividing the survivors by 1 - p keeps the expected value of each
// element unchanged, so eval mode (no dropout) needs no rescaling.
Tensor *dropout(const Tensor *t, double p, bool training) {
    if (p < 0.0 || p > 1.0) {
        fail("dropout: probability has to be between 0 and 1, but got %g", p);
    }
    if (!training || p == 0.0) {
        return (Tensor *)t;   // eval mode: the identity, and no random draws
    }
    if (p == 1.0) {
        // Everything dropped; PyTorch draws nothing and returns input * 0.
        // fix: was zeros(), which lost the sign PyTorch keeps (-3 * 0 = -0.)
        Tensor *out = clone(t);
        long n = numel(out);
        for (long i = 0; i < n; i++) {
            out->data[i] = out->data[i] * 0.0f;
        }
        graph_record1("dropout(p=1)", out, t);
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
    char label[32];
    snprintf(label, sizeof label, "dropout(p=%g)", p);
    graph_record1(label, out, t);
    return out;
}

float max_abs_diff(const Tensor *a, const Tensor *b) {
    if (!same_shape(a, b)) {
        fail("max_abs_diff: shapes (%s) and (%s) differ", shape_text(a), shape_text(b));
    }
    float worst = 0.0f;
    int index[MAX_DIMS] = {0};
    long n = numel(a);
    for (long i = 0; i < n; i++) {
        float x = *at(a, index);
        float y = *at(b, index);
        // fix: fmaxf() skips NaN, so a NaN anywhere used to read as "no
        // difference". Now any NaN makes the answer NaN; equal values
        // (including the same infinity, as in masked scores) differ by 0.
        if (isnan(x) || isnan(y)) {
            return NAN;
        }
        if (x != y) {
            worst = fmaxf(worst, fabsf(x - y));
        }
        next_index(index, a->shape, a->ndim);
    }
    return worst;
}
