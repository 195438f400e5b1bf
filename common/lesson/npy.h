// npy.h - a tensor as a NumPy .npy file (format version 1.0).
//
// float tensors are written as '<f4', int64/bool ones as '<i8', in C order
// and in their logical shape (a view is written as its elements, not its
// storage), so numpy.load() and torch.from_numpy() read them back.
#ifndef NPY_H
#define NPY_H

#include <stdbool.h>
#include <stddef.h>

#include "core/tensor.h"

// The whole file's bytes, in a buffer from malloc() (free it); *length
// gets its size. NULL if memory runs out.
unsigned char *npy_encode(size_t *length, const Tensor *t);

// npy_encode, then save_file (files.h): all or nothing. Returns false (and
// leaves errno set) when the file cannot be written.
bool npy_write(const char *path, const Tensor *t);

#endif
