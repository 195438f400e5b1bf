// tensor.c - making tensors, reading them, and viewing them differently.
#include "tensor.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "arena.h"
#include "error.h"
#include "graph.h"

// --- shapes -------------------------------------------------------------------

Shape shape1(int s0) { return (Shape){1, {s0}}; }
Shape shape2(int s0, int s1) { return (Shape){2, {s0, s1}}; }
Shape shape3(int s0, int s1, int s2) { return (Shape){3, {s0, s1, s2}}; }
Shape shape4(int s0, int s1, int s2, int s3) { return (Shape){4, {s0, s1, s2, s3}}; }
Shape shape5(int s0, int s1, int s2, int s3, int s4) {
    return (Shape){5, {s0, s1, s2, s3, s4}};
}

const char *join_sizes(const int *sizes, int n, const char *separator) {
    char *text = arena_alloc((size_t)n * (16 + strlen(separator)) + 1, 1);
    size_t used = 0;
    for (int d = 0; d < n; d++) {
        used += (size_t)sprintf(text + used, "%s%d", d == 0 ? "" : separator, sizes[d]);
    }
    return text;
}

// "[3, -1]" for messages about a requested shape.
static const char *shape_list_text(Shape shape) {
    const char *sizes = join_sizes(shape.size, shape.ndim, ", ");
    char *text = arena_alloc(strlen(sizes) + 3, 1);
    sprintf(text, "[%s]", sizes);
    return text;
}

// --- making tensors -------------------------------------------------------------

static int next_id = 0;   // every tensor gets a number, for the --dot graph

// Row-major strides: the last dim moves by 1, each earlier one by the
// product of the sizes after it.
static void set_contiguous_strides(Tensor *t) {
    int step = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        t->stride[d] = step;
        step *= t->shape[d];
    }
}

// A new Tensor header that looks at the same storage as `t` (for views).
static Tensor *new_header(const Tensor *t) {
    Tensor *header = arena_alloc(1, sizeof *header);
    *header = *t;
    header->id = next_id++;
    header->name = NULL;
    return header;
}

static long shape_numel(Shape shape) {
    long count = 1;
    for (int d = 0; d < shape.ndim; d++) {
        count *= shape.size[d];
    }
    return count;
}

static void check_shape(const char *op, Shape shape) {
    if (shape.ndim < 0 || shape.ndim > MAX_DIMS) {
        fail("%s: %d dimensions requested, at most %d are supported", op, shape.ndim,
             MAX_DIMS);
    }
    long count = 1;
    for (int d = 0; d < shape.ndim; d++) {
        if (shape.size[d] < 0) {
            fail("%s: negative size %d in shape %s", op, shape.size[d], shape_list_text(shape));
        }
        count *= shape.size[d];
        if (count > INT_MAX) {
            fail("%s: shape %s has more than %d elements", op, shape_list_text(shape), INT_MAX);
        }
    }
}

Tensor *zeros(Shape shape) {
    check_shape("zeros", shape);
    Tensor *t = arena_alloc(1, sizeof *t);
    t->ndim = shape.ndim;
    for (int d = 0; d < shape.ndim; d++) {
        t->shape[d] = shape.size[d];
    }
    set_contiguous_strides(t);
    t->data = arena_alloc((size_t)shape_numel(shape), sizeof(float));
    t->offset = 0;
    t->dtype = DTYPE_FLOAT32;
    t->id = next_id++;
    t->name = NULL;
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

long numel(const Tensor *t) {
    return shape_numel(shape_of(t));
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
    return t->shape[wrap_dim("size", dim, t->ndim)];
}

Shape shape_of(const Tensor *t) {
    Shape shape = {t->ndim, {0}};
    for (int d = 0; d < t->ndim; d++) {
        shape.size[d] = t->shape[d];
    }
    return shape;
}

// Contiguous = laid out row-major with nothing in between. Dims of size 1
// do not matter (one never steps along them), as in PyTorch.
bool is_contiguous(const Tensor *t) {
    int expected = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->stride[d] != expected) {
            return false;
        }
        expected *= t->shape[d];
    }
    return true;
}

bool same_shape(const Tensor *a, const Tensor *b) {
    if (a->ndim != b->ndim) {
        return false;
    }
    for (int d = 0; d < a->ndim; d++) {
        if (a->shape[d] != b->shape[d]) {
            return false;
        }
    }
    return true;
}

const char *shape_text(const Tensor *t) {
    return join_sizes(t->shape, t->ndim, "x");
}

// --- element access ---------------------------------------------------------------

float *at(const Tensor *t, const int *index) {
    int position = t->offset;
    for (int d = 0; d < t->ndim; d++) {
        if (index[d] < 0 || index[d] >= t->shape[d]) {
            fail("at: index %d is out of bounds for dimension %d with size %d", index[d], d,
                 t->shape[d]);
        }
        position += index[d] * t->stride[d];
    }
    return &t->data[position];
}

static float *at_n(const Tensor *t, int ndim, const int *index) {
    if (t->ndim != ndim) {
        fail("at%d: the tensor has %d dimensions (%s)", ndim, t->ndim, shape_text(t));
    }
    return at(t, index);
}

float *at1(const Tensor *t, int i0) { return at_n(t, 1, (int[]){i0}); }
float *at2(const Tensor *t, int i0, int i1) { return at_n(t, 2, (int[]){i0, i1}); }
float *at3(const Tensor *t, int i0, int i1, int i2) {
    return at_n(t, 3, (int[]){i0, i1, i2});
}
float *at4(const Tensor *t, int i0, int i1, int i2, int i3) {
    return at_n(t, 4, (int[]){i0, i1, i2, i3});
}
float *at5(const Tensor *t, int i0, int i1, int i2, int i3, int i4) {
    return at_n(t, 5, (int[]){i0, i1, i2, i3, i4});
}

// Like an odometer: bump the last digit; when it rolls over, carry left.
bool next_index(int *index, const int *shape, int ndim) {
    for (int d = ndim - 1; d >= 0; d--) {
        index[d] += 1;
        if (index[d] < shape[d]) {
            return true;
        }
        index[d] = 0;
    }
    return false;
}

// --- views ---------------------------------------------------------------------------

// Swapping two dims is just swapping their sizes and strides.
Tensor *transpose(const Tensor *t, int dim0, int dim1) {
    int a = wrap_dim("transpose", dim0, t->ndim);
    int b = wrap_dim("transpose", dim1, t->ndim);
    Tensor *out = new_header(t);
    out->shape[a] = t->shape[b];
    out->stride[a] = t->stride[b];
    out->shape[b] = t->shape[a];
    out->stride[b] = t->stride[a];
    char label[48];
    snprintf(label, sizeof label, "transpose(%d, %d)", dim0, dim1);
    graph_record1(label, out, t);
    return out;
}

Tensor *permute(const Tensor *t, const int *order) {
    Tensor *out = new_header(t);
    bool used[MAX_DIMS] = {false};
    char label[64];
    int length = snprintf(label, sizeof label, "permute(");
    for (int d = 0; d < t->ndim; d++) {
        int from = wrap_dim("permute", order[d], t->ndim);
        if (used[from]) {
            fail("permute: repeated dim %d in the order", order[d]);
        }
        used[from] = true;
        out->shape[d] = t->shape[from];
        out->stride[d] = t->stride[from];
        length += snprintf(label + length, sizeof label - (size_t)length,
                           d == 0 ? "%d" : ", %d", order[d]);
    }
    snprintf(label + length, sizeof label - (size_t)length, ")");
    graph_record1(label, out, t);
    return out;
}

// A new dim of size 1 at `dim`; its stride never matters.
Tensor *unsqueeze(const Tensor *t, int dim) {
    if (t->ndim == MAX_DIMS) {
        fail("unsqueeze: the tensor already has %d dimensions", MAX_DIMS);
    }
    int at_dim = wrap_dim("unsqueeze", dim, t->ndim + 1);
    Tensor *out = new_header(t);
    out->ndim = t->ndim + 1;
    for (int d = t->ndim; d > at_dim; d--) {
        out->shape[d] = t->shape[d - 1];
        out->stride[d] = t->stride[d - 1];
    }
    out->shape[at_dim] = 1;
    out->stride[at_dim] = at_dim + 1 < out->ndim ? out->shape[at_dim + 1] * out->stride[at_dim + 1] : 1;
    char label[32];
    snprintf(label, sizeof label, "unsqueeze(%d)", dim);
    graph_record1(label, out, t);
    return out;
}

// A size-1 dim becomes size n with stride 0: every index reads the same
// element, so nothing is copied. New leading dims may be added too.
Tensor *expand(const Tensor *t, Shape shape) {
    if (shape.ndim < t->ndim || shape.ndim > MAX_DIMS) {
        fail("expand: the number of sizes provided (%d) must be greater or equal to the number "
             "of dimensions in the tensor (%d)", shape.ndim, t->ndim);
    }
    Tensor *out = new_header(t);
    out->ndim = shape.ndim;
    int lead = shape.ndim - t->ndim;   // new dims added in front
    for (int d = 0; d < shape.ndim; d++) {
        int old = d - lead;            // the matching dim of t, if any
        int old_size = old >= 0 ? t->shape[old] : 1;
        int want = shape.size[d] == -1 && old >= 0 ? old_size : shape.size[d];
        if (want < 0) {
            fail("expand: the expanded size %d is not allowed in a leading, non-existing "
                 "dimension %d", shape.size[d], d);
        }
        if (old_size == want) {
            out->shape[d] = want;
            out->stride[d] = old >= 0 ? t->stride[old] : 0;
        } else if (old_size == 1) {
            out->shape[d] = want;
            out->stride[d] = 0;
        } else {
            fail("expand: the expanded size of the tensor (%d) must match the existing size "
                 "(%d) at non-singleton dimension %d. Target sizes: %s. Tensor sizes: %s",
                 want, old_size, d, shape_list_text(shape),
                 shape_list_text(shape_of(t)));   // fix: was "[2x3]", PyTorch says "[2, 3]"
        }
    }
    graph_record1("expand", out, t);
    return out;
}

Tensor *narrow(const Tensor *t, int dim, int start, int length) {
    int d = wrap_dim("narrow", dim, t->ndim);
    if (start < 0 || length < 0 || start + length > t->shape[d]) {
        fail("narrow: start (%d) + length (%d) exceeds dimension size (%d)", start, length,
             t->shape[d]);
    }
    Tensor *out = new_header(t);
    out->shape[d] = length;
    out->offset = t->offset + start * t->stride[d];
    char label[48];
    snprintf(label, sizeof label, "narrow(%d, %d, %d)", dim, start, length);
    graph_record1(label, out, t);
    return out;
}

// Replace one -1 in `shape` by whatever makes the element counts agree.
static Shape infer_size(const char *op, Shape shape, long count) {
    int infer_at = -1;
    long known = 1;
    for (int d = 0; d < shape.ndim; d++) {
        if (shape.size[d] == -1 && infer_at == -1) {
            infer_at = d;
        } else if (shape.size[d] == -1) {   // fix: a second -1 was "invalid shape dimension -1"
            fail("%s: only one dimension can be inferred", op);
        } else if (shape.size[d] < 0) {
            fail("%s: invalid shape dimension %d", op, shape.size[d]);
        } else {
            known *= shape.size[d];
        }
    }
    if (infer_at >= 0 && known != 0 && count % known == 0) {
        shape.size[infer_at] = (int)(count / known);
        return shape;
    }
    if (infer_at < 0 && known == count) {
        return shape;
    }
    fail("%s: shape '%s' is invalid for input of size %ld", op, shape_list_text(shape), count);
}

// Can `t` be seen in `shape` without copying? This is PyTorch's rule
// (computeStride in ATen): the new shape may split or merge dims only where
// the old dims sit next to each other in memory. When it can, the new
// strides are written to `stride` and the answer is true.
static bool view_strides(int *stride, const Tensor *t, Shape shape) {
    if (numel(t) == 0 || t->ndim == 0) {
        Tensor plain = {.ndim = shape.ndim};
        for (int d = 0; d < shape.ndim; d++) {
            plain.shape[d] = shape.size[d];
        }
        set_contiguous_strides(&plain);
        memcpy(stride, plain.stride, sizeof plain.stride);
        return true;
    }
    int view_d = shape.ndim - 1;
    long chunk_stride = t->stride[t->ndim - 1];   // stride of the current chunk's last dim
    long tensor_numel = 1;
    long view_numel = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        tensor_numel *= t->shape[d];
        // A chunk ends where the dim before it is not laid out right after it.
        bool chunk_ends = d == 0 || (t->shape[d - 1] != 1 &&
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

static Tensor *view_as_shape(const Tensor *t, Shape shape, int *stride) {
    Tensor *out = new_header(t);
    out->ndim = shape.ndim;
    for (int d = 0; d < shape.ndim; d++) {
        out->shape[d] = shape.size[d];
        out->stride[d] = stride[d];
    }
    return out;
}

Tensor *view(const Tensor *t, Shape shape) {
    check_shape("view", (Shape){shape.ndim, {0}});
    shape = infer_size("view", shape, numel(t));
    int stride[MAX_DIMS] = {0};
    if (!view_strides(stride, t, shape)) {
        fail("view: view size is not compatible with input tensor's size and stride (at least "
             "one dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
    }
    Tensor *out = view_as_shape(t, shape, stride);
    graph_record1("view", out, t);
    return out;
}

// --- copies ---------------------------------------------------------------------------

// Copy one row (the last dim) at a time: in t its n elements are `step`
// floats apart, in the copy they sit side by side. Finding where a row
// starts goes through the strides (at()); the row itself is a plain loop.
Tensor *clone(const Tensor *t) {
    Tensor *out = zeros(shape_of(t));
    out->dtype = t->dtype;
    if (numel(t) == 0) {
        return out;
    }
    if (t->ndim == 0) {
        out->data[0] = t->data[t->offset];   // one element, no rows
        return out;
    }
    int last = t->ndim - 1;
    int n = t->shape[last];
    int step = t->stride[last];
    long rows = numel(t) / n;
    int index[MAX_DIMS] = {0};   // index[last] stays 0: the start of a row
    for (long r = 0; r < rows; r++) {
        const float *row = at(t, index);
        float *out_row = &out->data[r * n];
        for (int i = 0; i < n; i++) {
            out_row[i] = row[i * step];
        }
        next_index(index, t->shape, last);   // the next row: count in the dims before last
    }
    return out;
}

Tensor *contiguous(const Tensor *t) {
    if (is_contiguous(t)) {
        return (Tensor *)t;   // like PyTorch: already contiguous, same tensor
    }
    Tensor *out = clone(t);
    graph_record1("contiguous", out, t);
    return out;
}

Tensor *reshape(const Tensor *t, Shape shape) {
    // fix: without this check a Shape of more than MAX_DIMS dims was read past its end
    check_shape("reshape", (Shape){shape.ndim, {0}});
    shape = infer_size("reshape", shape, numel(t));
    int stride[MAX_DIMS] = {0};
    Tensor *out;
    if (view_strides(stride, t, shape)) {
        out = view_as_shape(t, shape, stride);              // no copy needed
    } else {
        Tensor *copy = clone(t);                           // copy, then view
        view_strides(stride, copy, shape);
        out = view_as_shape(copy, shape, stride);
    }
    graph_record1("reshape", out, t);
    return out;
}
