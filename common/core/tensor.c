// tensor.c - making tensors, reading them, and viewing them differently.
#include "core/tensor.h"

#include <stdio.h>
#include <string.h>

#include "core/arena.h"
#include "core/error.h"
#include "lesson/trace.h"

// --- shapes -------------------------------------------------------------------

Shape shape1(int s0) { return (Shape){1, {s0}}; }
Shape shape2(int s0, int s1) { return (Shape){2, {s0, s1}}; }
Shape shape3(int s0, int s1, int s2) { return (Shape){3, {s0, s1, s2}}; }
Shape shape4(int s0, int s1, int s2, int s3) { return (Shape){4, {s0, s1, s2, s3}}; }
Shape shape5(int s0, int s1, int s2, int s3, int s4) {
    return (Shape){5, {s0, s1, s2, s3, s4}};
}

// The product of n sizes (all >= 0), or MAX_ELEMENTS + 1 if it is larger
// than MAX_ELEMENTS. Each step checks before it multiplies
// (count > MAX_ELEMENTS / size), so nothing can overflow however large the
// sizes; a 0 anywhere makes the product 0.
static long capped_product(const int *sizes, int n) {
    long count = 1;
    bool too_big = false;
    for (int d = 0; d < n; d++) {
        if (sizes[d] == 0) {
            return 0;
        }
        if (too_big || count > MAX_ELEMENTS / sizes[d]) {
            too_big = true;   // keep looking: a later 0 still makes it 0
        } else {
            count *= sizes[d];
        }
    }
    return too_big ? MAX_ELEMENTS + 1 : count;
}

// --- sizes as text ---------------------------------------------------------------

const char *sizes_str(const int *sizes, int n, SizesStyle style) {
    static const char *const open[] = {"", "[", "(", "torch.Size(["};
    static const char *const close[] = {"", "]", ")", "])"};
    const char *separator = style == SIZES_X ? "x" : ", ";
    // Every number takes at most 11 characters ("-2147483648").
    char *text = arena_alloc((size_t)n * (11 + strlen(separator)) + 16, 1);
    size_t used = (size_t)sprintf(text, "%s", open[style]);
    for (int d = 0; d < n; d++) {
        used += (size_t)sprintf(text + used, "%s%d", d == 0 ? "" : separator, sizes[d]);
    }
    // A Python tuple of one needs its comma: (5,)
    sprintf(text + used, "%s%s", style == SIZES_TUPLE && n == 1 ? "," : "", close[style]);
    return text;
}

const char *shape_str(Shape shape, SizesStyle style) {
    return sizes_str(shape.size, shape.ndim, style);
}

const char *size_str(const Tensor *t) { return shape_str(t->shape, SIZES_TORCH); }
const char *stride_str(const Tensor *t) { return sizes_str(t->stride, t->shape.ndim, SIZES_TUPLE); }
const char *size_x_str(const Tensor *t) { return shape_str(t->shape, SIZES_X); }

static const char *list_str(Shape shape) { return shape_str(shape, SIZES_LIST); }

// --- making tensors -------------------------------------------------------------

static int next_id = 0;   // every tensor gets a number, for tracing

// Row-major strides: the last dim moves by 1, each earlier one by the
// product of the sizes after it.
static void set_contiguous_strides(Tensor *t) {
    int step = 1;
    for (int d = t->shape.ndim - 1; d >= 0; d--) {
        t->stride[d] = step;
        step *= t->shape.size[d];
    }
}

// A new Tensor header that looks at the same storage as `t` (for views).
static Tensor *new_header(const Tensor *t) {
    Tensor *header = arena_alloc(1, sizeof *header);
    *header = *t;
    header->id = next_id++;
    return header;
}

// Refuse a shape with a bad number of dims, a negative size, or more than
// MAX_ELEMENTS elements.
static void check_shape(const char *op, Shape shape) {
    if (shape.ndim < 0 || shape.ndim > MAX_DIMS) {
        fail("%s: %d dimensions requested, at most %d are supported", op, shape.ndim,
             MAX_DIMS);
    }
    for (int d = 0; d < shape.ndim; d++) {
        if (shape.size[d] < 0) {
            fail("%s: negative size %d in shape %s", op, shape.size[d], list_str(shape));
        }
    }
    if (capped_product(shape.size, shape.ndim) > MAX_ELEMENTS) {
        fail("%s: shape %s has more than %ld elements", op, list_str(shape), MAX_ELEMENTS);
    }
    // A tensor with a 0 in its shape has no elements, but its strides are
    // still products of the other sizes ((0, 65536, 65536) would need a
    // stride of 2^32): those must keep within the limit too.
    int nonzero[MAX_DIMS];
    for (int d = 0; d < shape.ndim; d++) {
        nonzero[d] = shape.size[d] == 0 ? 1 : shape.size[d];
    }
    if (capped_product(nonzero, shape.ndim) > MAX_ELEMENTS) {
        fail("%s: shape %s has no elements, but its other sizes multiply to more than %ld", op,
             list_str(shape), MAX_ELEMENTS);
    }
}

Tensor *zeros(Shape shape) {
    check_shape("zeros", shape);
    Tensor *t = arena_alloc(1, sizeof *t);
    t->shape = shape;
    set_contiguous_strides(t);
    t->data = arena_alloc((size_t)capped_product(shape.size, shape.ndim), sizeof(float));
    t->offset = 0;
    t->dtype = DTYPE_FLOAT32;
    t->id = next_id++;
    return t;
}

Tensor *full(Shape shape, float value) {
    Tensor *t = zeros(shape);
    long n = numel(t);
    for (long i = 0; i < n; i++) {
        t->data[i] = value;
    }
    return t;
}

Tensor *ones(Shape shape) {
    return full(shape, 1.0f);
}

Tensor *tensor_from(Shape shape, const float *values) {
    Tensor *t = zeros(shape);
    memcpy(t->data, values, (size_t)numel(t) * sizeof(float));
    return t;
}

// --- asking about a tensor ---------------------------------------------------------

// Every tensor has at most MAX_ELEMENTS elements (zeros and expand see to
// it), so this product is exact.
long numel(const Tensor *t) {
    return capped_product(t->shape.size, t->shape.ndim);
}

int wrap_dim(const char *op, int dim, int ndim) {
    int wrapped = dim < 0 ? dim + ndim : dim;
    if (wrapped < 0 || wrapped >= ndim) {
        fail("%s: dimension out of range (expected to be in range of [%d, %d], but got %d)",
             op, -ndim, ndim - 1, dim);
    }
    return wrapped;
}

int size(const Tensor *t, int dim) {
    return t->shape.size[wrap_dim("size", dim, t->shape.ndim)];
}

// Contiguous = laid out row-major with nothing in between. Dims of size 1
// do not matter (one never steps along them), as in PyTorch.
bool is_contiguous(const Tensor *t) {
    int expected = 1;
    for (int d = t->shape.ndim - 1; d >= 0; d--) {
        if (t->shape.size[d] != 1 && t->stride[d] != expected) {
            return false;
        }
        expected *= t->shape.size[d];
    }
    return true;
}

bool same_shape(const Tensor *a, const Tensor *b) {
    if (a->shape.ndim != b->shape.ndim) {
        return false;
    }
    for (int d = 0; d < a->shape.ndim; d++) {
        if (a->shape.size[d] != b->shape.size[d]) {
            return false;
        }
    }
    return true;
}

// --- element access ---------------------------------------------------------------

const float *at_read(const Tensor *t, int n_index, const int *index) {
    if (n_index != -1 && n_index != t->shape.ndim) {
        fail("at%d: the tensor has %d dimensions (%s)", n_index, t->shape.ndim, size_x_str(t));
    }
    int position = t->offset;
    for (int d = 0; d < t->shape.ndim; d++) {
        if (index[d] < 0 || index[d] >= t->shape.size[d]) {
            fail("at: index %d is out of bounds for dimension %d with size %d", index[d], d,
                 t->shape.size[d]);
        }
        position += index[d] * t->stride[d];
    }
    return &t->data[position];
}

// The same element, writable: t is not const, so neither is its storage.
// (The one cast that makes the pair: at_read does the work for both.)
float *at_write(Tensor *t, int n_index, const int *index) {
    return (float *)at_read(t, n_index, index);
}

// Like an odometer: bump the last digit; when it rolls over, carry left.
bool next_index(int *index, const int *size, int ndim) {
    for (int d = ndim - 1; d >= 0; d--) {
        index[d] += 1;
        if (index[d] < size[d]) {
            return true;
        }
        index[d] = 0;
    }
    return false;
}

// --- views ---------------------------------------------------------------------------

// Swapping two dims is just swapping their sizes and strides.
const Tensor *transpose(const Tensor *t, int dim0, int dim1) {
    int a = wrap_dim("transpose", dim0, t->shape.ndim);
    int b = wrap_dim("transpose", dim1, t->shape.ndim);
    Tensor *out = new_header(t);
    out->shape.size[a] = t->shape.size[b];
    out->stride[a] = t->stride[b];
    out->shape.size[b] = t->shape.size[a];
    out->stride[b] = t->stride[a];
    trace("transpose", out, 1, &t, 2, (const double[]){dim0, dim1});
    return out;
}

const Tensor *permute(const Tensor *t, const int *order) {
    Tensor *out = new_header(t);
    bool used[MAX_DIMS] = {false};
    double args[MAX_DIMS];
    for (int d = 0; d < t->shape.ndim; d++) {
        int from = wrap_dim("permute", order[d], t->shape.ndim);
        if (used[from]) {
            fail("permute: repeated dim %d in the order", order[d]);
        }
        used[from] = true;
        out->shape.size[d] = t->shape.size[from];
        out->stride[d] = t->stride[from];
        args[d] = order[d];
    }
    trace("permute", out, 1, &t, t->shape.ndim, args);
    return out;
}

// A new dim of size 1 at `dim`; its stride never matters (PyTorch gives it
// the size * stride of the dim after it).
const Tensor *unsqueeze(const Tensor *t, int dim) {
    if (t->shape.ndim == MAX_DIMS) {
        fail("unsqueeze: the tensor already has %d dimensions", MAX_DIMS);
    }
    int at_dim = wrap_dim("unsqueeze", dim, t->shape.ndim + 1);
    Tensor *out = new_header(t);
    out->shape.ndim = t->shape.ndim + 1;
    for (int d = t->shape.ndim; d > at_dim; d--) {
        out->shape.size[d] = t->shape.size[d - 1];
        out->stride[d] = t->stride[d - 1];
    }
    out->shape.size[at_dim] = 1;
    out->stride[at_dim] =
        at_dim + 1 < out->shape.ndim ? out->shape.size[at_dim + 1] * out->stride[at_dim + 1] : 1;
    trace("unsqueeze", out, 1, &t, 1, (const double[]){dim});
    return out;
}

// A size-1 dim becomes size n with stride 0: every index reads the same
// element, so nothing is copied. New leading dims may be added too.
const Tensor *expand(const Tensor *t, Shape shape) {
    if (shape.ndim < t->shape.ndim || shape.ndim > MAX_DIMS) {
        fail("expand: the number of sizes provided (%d) must be greater or equal to the number "
             "of dimensions in the tensor (%d)", shape.ndim, t->shape.ndim);
    }
    Tensor *out = new_header(t);
    out->shape.ndim = shape.ndim;
    int lead = shape.ndim - t->shape.ndim;   // new dims added in front
    for (int d = 0; d < shape.ndim; d++) {
        int old = d - lead;            // the matching dim of t, if any
        int old_size = old >= 0 ? t->shape.size[old] : 1;
        int want = shape.size[d] == -1 && old >= 0 ? old_size : shape.size[d];
        if (want < 0) {
            fail("expand: the expanded size %d is not allowed in a leading, non-existing "
                 "dimension %d", shape.size[d], d);
        }
        if (old_size == want) {
            out->shape.size[d] = want;
            out->stride[d] = old >= 0 ? t->stride[old] : 0;
        } else if (old_size == 1) {
            out->shape.size[d] = want;
            out->stride[d] = 0;
        } else {
            fail("expand: the expanded size of the tensor (%d) must match the existing size "
                 "(%d) at non-singleton dimension %d. Target sizes: %s. Tensor sizes: %s",
                 want, old_size, d, list_str(shape), list_str(t->shape));
        }
    }
    // Nothing is copied, but every later loop over the view visits all its
    // elements: the same limit as for a real tensor.
    check_shape("expand", out->shape);
    trace1("expand", out, t);
    return out;
}

const Tensor *narrow(const Tensor *t, int dim, int start, int length) {
    int d = wrap_dim("narrow", dim, t->shape.ndim);
    if (start < 0 || length < 0 || start > t->shape.size[d] - length) {
        fail("narrow: start (%d) + length (%d) exceeds dimension size (%d)", start, length,
             t->shape.size[d]);
    }
    Tensor *out = new_header(t);
    out->shape.size[d] = length;
    out->offset = t->offset + start * t->stride[d];
    trace("narrow", out, 1, &t, 3, (const double[]){dim, start, length});
    return out;
}

// The dim disappears; every other dim keeps its size and stride, and the
// offset moves to `index` along the dropped one.
const Tensor *select_index(const Tensor *t, int dim, int index) {
    if (t->shape.ndim == 0) {
        fail("select: select() cannot be applied to a 0-dim tensor.");
    }
    int d = wrap_dim("select", dim, t->shape.ndim);
    int i = index < 0 ? index + t->shape.size[d] : index;   // -1 is the last, as in Python
    if (i < 0 || i >= t->shape.size[d]) {
        fail("select: index %d out of range for tensor of size %s at dimension %d", index,
             list_str(t->shape), dim);
    }
    Tensor *out = new_header(t);
    out->shape.ndim = t->shape.ndim - 1;
    out->offset = t->offset + i * t->stride[d];
    for (int e = d; e < out->shape.ndim; e++) {
        out->shape.size[e] = t->shape.size[e + 1];
        out->stride[e] = t->stride[e + 1];
    }
    out->shape.size[out->shape.ndim] = 0;   // no longer a dim
    out->stride[out->shape.ndim] = 0;
    trace("select", out, 1, &t, 2, (const double[]){dim, index});
    return out;
}

// Replace one -1 in `shape` by whatever makes the element counts agree.
static Shape infer_size(const char *op, Shape shape, long count) {
    check_shape(op, (Shape){shape.ndim, {0}});   // only the number of dims
    int infer_at = -1;
    int known[MAX_DIMS] = {0};   // the sizes other than the -1
    int n_known = 0;
    for (int d = 0; d < shape.ndim; d++) {
        if (shape.size[d] == -1 && infer_at == -1) {
            infer_at = d;
        } else if (shape.size[d] == -1) {
            fail("%s: only one dimension can be inferred", op);
        } else if (shape.size[d] < 0) {
            fail("%s: invalid shape dimension %d", op, shape.size[d]);
        } else {
            known[n_known++] = shape.size[d];
        }
    }
    long product = capped_product(known, n_known);   // > count if too large
    if (infer_at >= 0 && product != 0 && count % product == 0) {
        shape.size[infer_at] = (int)(count / product);
        return shape;
    }
    if (infer_at < 0 && product == count) {
        check_shape(op, shape);   // count 0: the other sizes must still fit (strides)
        return shape;
    }
    fail("%s: shape '%s' is invalid for input of size %ld", op, list_str(shape), count);
}

// Can `t` be seen in `shape` without copying? This is PyTorch's rule
// (computeStride in ATen): the new shape may split or merge dims only where
// the old dims sit next to each other in memory. When it can, the new
// strides are written to `stride` and the answer is true.
static bool view_strides(int *stride, const Tensor *t, Shape shape) {
    if (numel(t) == 0 || t->shape.ndim == 0) {
        Tensor plain = {.shape = shape};
        set_contiguous_strides(&plain);
        memcpy(stride, plain.stride, sizeof plain.stride);
        return true;
    }
    int view_d = shape.ndim - 1;
    long chunk_stride = t->stride[t->shape.ndim - 1];   // stride of the current chunk's last dim
    long tensor_numel = 1;
    long view_numel = 1;
    for (int d = t->shape.ndim - 1; d >= 0; d--) {
        tensor_numel *= t->shape.size[d];
        // A chunk ends where the dim before it is not laid out right after it.
        bool chunk_ends = d == 0 || (t->shape.size[d - 1] != 1 &&
                                     t->stride[d - 1] != tensor_numel * chunk_stride);
        if (!chunk_ends) {
            continue;
        }
        while (view_d >= 0 && (view_numel < tensor_numel || shape.size[view_d] == 1)) {
            stride[view_d] = (int)(view_numel * chunk_stride);
            view_numel *= shape.size[view_d];
            view_d -= 1;
        }
        if (view_numel != tensor_numel) {
            return false;
        }
        if (d > 0) {
            chunk_stride = t->stride[d - 1];
            tensor_numel = 1;
            view_numel = 1;
        }
    }
    return view_d == -1;
}

static Tensor *view_as_shape(const Tensor *t, Shape shape, const int *stride) {
    Tensor *out = new_header(t);
    out->shape = shape;
    for (int d = 0; d < shape.ndim; d++) {
        out->stride[d] = stride[d];
    }
    return out;
}

const Tensor *view(const Tensor *t, Shape shape) {
    shape = infer_size("view", shape, numel(t));
    int stride[MAX_DIMS] = {0};
    if (!view_strides(stride, t, shape)) {
        fail("view: view size is not compatible with input tensor's size and stride (at least "
             "one dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
    }
    Tensor *out = view_as_shape(t, shape, stride);
    trace1("view", out, t);
    return out;
}

// --- copies ---------------------------------------------------------------------------

// Copy one row (the last dim) at a time: in t its n elements are `step`
// floats apart, in the copy they sit side by side. Finding where a row
// starts goes through the strides (at()); the row itself is a plain loop.
Tensor *clone(const Tensor *t) {
    Tensor *out = zeros(t->shape);
    out->dtype = t->dtype;
    if (numel(t) == 0) {
        return out;
    }
    if (t->shape.ndim == 0) {
        out->data[0] = t->data[t->offset];   // one element, no rows
        return out;
    }
    int last = t->shape.ndim - 1;
    int n = t->shape.size[last];
    int step = t->stride[last];
    long rows = numel(t) / n;
    int index[MAX_DIMS] = {0};   // index[last] stays 0: the start of a row
    for (long r = 0; r < rows; r++) {
        const float *row = at(t, index);
        float *out_row = &out->data[r * n];
        for (int i = 0; i < n; i++) {
            out_row[i] = row[i * step];
        }
        next_index(index, t->shape.size, last);   // the next row: count in the dims before last
    }
    return out;
}

const Tensor *contiguous(const Tensor *t) {
    if (is_contiguous(t)) {
        return t;   // like PyTorch: already contiguous, the same tensor
    }
    Tensor *out = clone(t);
    trace1("contiguous", out, t);
    return out;
}

const Tensor *reshape(const Tensor *t, Shape shape) {
    shape = infer_size("reshape", shape, numel(t));
    int stride[MAX_DIMS] = {0};
    const Tensor *out;
    if (view_strides(stride, t, shape)) {
        out = view_as_shape(t, shape, stride);              // no copy needed
    } else {
        Tensor *copy = clone(t);                           // copy, then view
        view_strides(stride, copy, shape);
        out = view_as_shape(copy, shape, stride);
    }
    trace1("reshape", out, t);
    return out;
}
