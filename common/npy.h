// npy.h - write a tensor as a NumPy .npy file (format version 1.0).
//
// float tensors are written as '<f4', int64/bool ones as '<i8', in C order
// and in their logical shape (a view is written as its elements, not its
// storage), so numpy.load() and torch.from_numpy() read them back.
#ifndef NPY_H
#define NPY_H

#include <stdbool.h>

#include "tensor.h"

// Returns false (and leaves errno set) when the file cannot be written.
bool npy_write(const char *path, const Tensor *t);

#endif
