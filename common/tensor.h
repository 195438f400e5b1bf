// tensor.h - a float32 tensor of up to 5 dimensions, and its views.
//
// A Tensor is a window onto a block of floats (its storage):
//
//     element [i0, i1, ..., ik] = data[offset + i0*stride[0] + ... + ik*stride[k]]
//
// Because the window is described by shape, stride and offset, the
// operations transpose, permute, unsqueeze, expand and narrow make a NEW
// window onto the SAME storage and copy nothing; PyTorch calls these views.
// contiguous() copies into a fresh block laid out row-major. view() only
// re-reads the shape of a contiguous block, so it refuses a transposed
// input, exactly like PyTorch, and reshape() copies only when it must.
//
// Integer tensors (masks, torch.randint) are stored as floats too (every
// integer below 2^24 is exact in a float); `dtype` only tells the printer to
// print `1` instead of `1.` and the .npy writer to write int64.
//
// All tensors live in the arena (arena.h): never free one yourself.
#ifndef TENSOR_H
#define TENSOR_H

#include <stdbool.h>

#define MAX_DIMS 5  // GQA needs five: (b, g, h, n, d)

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
    int ndim;                 // 0 .. MAX_DIMS
    int shape[MAX_DIMS];      // size of each dimension
    int stride[MAX_DIMS];     // how far (in floats) one step in each dim moves
    int offset;               // where element [0, 0, ...] sits in data
    DType dtype;              // how to print and dump it; storage is float
    int id;                   // this tensor's node number in the --dot graph
    const char *name;         // set by named() (lesson.h); NULL otherwise
} Tensor;

// --- making tensors (new storage, row-major, all from the arena) ----------
Tensor *zeros(Shape shape);
Tensor *ones(Shape shape);
Tensor *full(Shape shape, float value);
Tensor *tensor_from(Shape shape, const float *values);  // copies numel values

// --- asking about a tensor --------------------------------------------------
long numel(const Tensor *t);
int size(const Tensor *t, int dim);      // dim may be negative: -1 is the last
Shape shape_of(const Tensor *t);
bool is_contiguous(const Tensor *t);
bool same_shape(const Tensor *a, const Tensor *b);
// "3x4" for messages (arena string), like PyTorch's error texts.
const char *shape_text(const Tensor *t);
// The n sizes joined by `separator`: (3, 2, 4) and ", " give "3, 2, 4"
// (arena string). shape_text, torch.Size and the .npy header are made from it.
const char *join_sizes(const int *sizes, int n, const char *separator);
// PyTorch's dim wrapping: -1 is the last of ndim dims, -ndim the first. A dim
// out of range fails with PyTorch's text, naming `op`.
int wrap_dim(const char *op, int dim, int ndim);

// --- element access ---------------------------------------------------------
// A pointer to one element; the index must have t->ndim entries, each in range.
float *at(const Tensor *t, const int *index);
float *at1(const Tensor *t, int i0);
float *at2(const Tensor *t, int i0, int i1);
float *at3(const Tensor *t, int i0, int i1, int i2);
float *at4(const Tensor *t, int i0, int i1, int i2, int i3);
float *at5(const Tensor *t, int i0, int i1, int i2, int i3, int i4);

// Visit every index of `shape` in row-major order: start with all zeros,
// call next_index() until it returns false.
bool next_index(int *index, const int *shape, int ndim);

// --- views: same storage, new shape/stride/offset ---------------------------
Tensor *transpose(const Tensor *t, int dim0, int dim1);
Tensor *permute(const Tensor *t, const int *order);     // order has ndim entries
Tensor *unsqueeze(const Tensor *t, int dim);
Tensor *expand(const Tensor *t, Shape shape);           // -1 keeps a size
Tensor *narrow(const Tensor *t, int dim, int start, int length);
Tensor *view(const Tensor *t, Shape shape);             // -1 is inferred
// --- copies ----------------------------------------------------------------
Tensor *contiguous(const Tensor *t);   // returns t itself if already contiguous
Tensor *reshape(const Tensor *t, Shape shape);  // a view when it can be one
Tensor *clone(const Tensor *t);        // always a fresh copy

#endif
