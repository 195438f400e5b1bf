// tensor.h - a float32 tensor of up to 5 dimensions, and its views.
//
// A Tensor is a window onto a block of floats (its storage):
//
//     element [i0, i1, ..., ik] = data[offset + i0*stride[0] + ... + ik*stride[k]]
//
// Because the window is described by size, stride and offset, transpose,
// permute, unsqueeze, expand and narrow make a NEW window onto the SAME
// storage and copy nothing; PyTorch calls these views. view() re-reads the
// sizes without copying, and works whenever PyTorch's rule allows it (a
// transposed tensor can often be viewed, but not always: see view() below);
// reshape() is view() when possible and a copy otherwise; contiguous()
// copies into a fresh row-major block unless the tensor already is one.
//
// const: a function that takes a `const Tensor *` never changes its
// elements. What it returns is
//   - a NEW tensor (`Tensor *`): fresh storage, yours to fill or change
//     (zeros, clone, matmul, softmax, ... in ops.h);
//   - or a VIEW of its input, or the input itself (`const Tensor *`): it
//     shares the input's storage, so it is exactly as read-only as the
//     input (the views below, contiguous, reshape, split, dropout).
// So writing into a tensor needs a `Tensor *` that you made; a `const
// Tensor *` cannot be written through the helper without a visible cast.
//
// Integer tensors (masks, torch.randint) are stored as floats too (every
// integer below 2^24 is exact in a float); `dtype` only tells the printer to
// print `1` instead of `1.` and the .npy writer to write int64.
//
// All tensors live in the arena (arena.h): never free one yourself.
#ifndef TENSOR_H
#define TENSOR_H

#include <stdbool.h>

#define MAX_DIMS 5   // GQA needs five: (b, g, h, n, d)
// No tensor, and no view, may have more elements than this: 2^26 floats,
// 256 MiB. Below it every index, stride and offset fits an int with room
// to spare, so no size arithmetic in the helper can overflow. Lessons check
// their sizes against it before they start (check_fits in lesson/flags.h).
#define MAX_ELEMENTS (1L << 26)

typedef enum { DTYPE_FLOAT32, DTYPE_INT64, DTYPE_BOOL } DType;

// A list of sizes: the shape of a tensor, or the argument of view().
typedef struct {
    int ndim;
    int size[MAX_DIMS];
} Shape;

Shape shape1(int s0);
Shape shape2(int s0, int s1);
Shape shape3(int s0, int s1, int s2);
Shape shape4(int s0, int s1, int s2, int s3);
Shape shape5(int s0, int s1, int s2, int s3, int s4);

typedef struct {
    float *data;              // the storage, shared by every view of it
    Shape shape;              // t.shape: shape.ndim dims (0 .. MAX_DIMS), shape.size[d]
                              // indices along dim d (t.size(d); or size(t, d) below)
    int stride[MAX_DIMS];     // t.stride(d): how far (in floats) one step along dim d moves
    int offset;               // t.storage_offset(): where element [0, 0, ...] sits in data
    DType dtype;              // how to print and dump it; storage is float
    int id;                   // a serial number: tells tensors apart in a trace (trace.h)
} Tensor;

// --- making tensors (new storage, row-major, all from the arena) ----------
// Each fails if a size is negative or there are more than MAX_ELEMENTS
// (a 0 counted as 1 here: an empty tensor's strides still multiply its
// other sizes).
Tensor *zeros(Shape shape);
Tensor *ones(Shape shape);
Tensor *full(Shape shape, float value);
Tensor *tensor_from(Shape shape, const float *values);  // copies numel values

// --- asking about a tensor --------------------------------------------------
long numel(const Tensor *t);
int size(const Tensor *t, int dim);      // dim may be negative: -1 is the last
bool is_contiguous(const Tensor *t);
bool same_shape(const Tensor *a, const Tensor *b);
// PyTorch's dim wrapping: -1 is the last of ndim dims, -ndim the first. A dim
// out of range fails with PyTorch's text, naming `op`.
int wrap_dim(const char *op, int dim, int ndim);

// --- sizes as text (arena strings) --------------------------------------------
// One function, four spellings of the same list of numbers:
typedef enum {
    SIZES_X,       // 3x4                  PyTorch's error texts: "shapes (6x4) and (3x4)"
    SIZES_LIST,    // [3, 4]               a Python list: view's argument in its errors
    SIZES_TUPLE,   // (3, 4), (5,), ()     a Python tuple: t.stride(), numpy's .shape
    SIZES_TORCH,   // torch.Size([3, 4])   print(t.shape)
} SizesStyle;
const char *sizes_str(const int *sizes, int n, SizesStyle style);
const char *shape_str(Shape shape, SizesStyle style);   // sizes_str of its sizes
// The three uses of it that come up everywhere, for a tensor t:
const char *size_str(const Tensor *t);     // print(t.shape):    torch.Size([3, 4])
const char *stride_str(const Tensor *t);   // print(t.stride()): (4, 1)
const char *size_x_str(const Tensor *t);   // in error messages: 3x4

// --- element access ---------------------------------------------------------
// at4(t, i0, i1, i2, i3) points at one element: `float *` (you may write
// through it) when t is a `Tensor *`, `const float *` (read only) when t is
// a `const Tensor *`. C11's _Generic picks at_write or at_read by the type
// of t; the two differ only in that const. The number of indices must be
// t->shape.ndim and each must be in range, or the call fails.
// at(t, index) takes the indices as an array of t->shape.ndim ints.
const float *at_read(const Tensor *t, int n_index, const int *index);
float *at_write(Tensor *t, int n_index, const int *index);
#define AT_(t, n, index) \
    _Generic((t), Tensor *: at_write, const Tensor *: at_read)((t), (n), (index))
#define at(t, index) AT_(t, -1, index)
#define at1(t, i0) AT_(t, 1, ((const int[]){i0}))
#define at2(t, i0, i1) AT_(t, 2, ((const int[]){i0, i1}))
#define at3(t, i0, i1, i2) AT_(t, 3, ((const int[]){i0, i1, i2}))
#define at4(t, i0, i1, i2, i3) AT_(t, 4, ((const int[]){i0, i1, i2, i3}))
#define at5(t, i0, i1, i2, i3, i4) AT_(t, 5, ((const int[]){i0, i1, i2, i3, i4}))

// Visit every index of `size` in row-major order: start with all zeros,
// call next_index() until it returns false.
bool next_index(int *index, const int *size, int ndim);

// --- views: same storage, new size/stride/offset ---------------------------
const Tensor *transpose(const Tensor *t, int dim0, int dim1);
const Tensor *permute(const Tensor *t, const int *order);     // order has ndim entries
const Tensor *unsqueeze(const Tensor *t, int dim);
const Tensor *expand(const Tensor *t, Shape shape);           // -1 keeps a size
const Tensor *narrow(const Tensor *t, int dim, int start, int length);
// t.select(dim, index), which t[index] is for dim 0: one dim fewer, the
// others keep their sizes and strides, the offset moves to `index`. A
// negative index counts from the end.
const Tensor *select_index(const Tensor *t, int dim, int index);
// -1 in `shape` is inferred. Fails (with PyTorch's message) when the new
// sizes would need elements that are not evenly spaced in memory: PyTorch's
// rule, which lets many non-contiguous tensors through (a transpose viewed
// with a size-1 dim added, say) and refuses e.g. merging two transposed dims.
const Tensor *view(const Tensor *t, Shape shape);

// --- copies, or not ------------------------------------------------------
const Tensor *contiguous(const Tensor *t);       // t itself if already contiguous
const Tensor *reshape(const Tensor *t, Shape shape);  // a view when it can be one
Tensor *clone(const Tensor *t);                  // always a fresh, writable copy

#endif
