// npy.c - the .npy format, version 1.0:
//
//   "\x93NUMPY"  1  0  <header length, 2 bytes little-endian>  <header>  <data>
//
// The header is a Python dict literal, padded with spaces and ending in a
// newline so that the data starts at a multiple of 64 bytes:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 2, 4), }
#include "npy.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

// The header dict for t, padded; returns its length.
static int npy_header(char *header, size_t capacity, const Tensor *t) {
    const char *descr = t->dtype == DTYPE_FLOAT32 ? "<f4" : "<i8";
    // The shape as a Python tuple: (3, 2, 4), but (5,) for one dim.
    const char *sizes = join_sizes(t->shape, t->ndim, ", ");
    int length = snprintf(header, capacity, "{'descr': '%s', 'fortran_order': False, "
                          "'shape': (%s%s), }", descr, sizes, t->ndim == 1 ? "," : "");
    // 10 bytes of preamble + header (with its final '\n') must be a multiple of 64.
    while ((10 + length + 1) % 64 != 0) {
        header[length] = ' ';
        length += 1;
    }
    header[length] = '\n';
    length += 1;
    header[length] = '\0';
    return length;
}

bool npy_write(const char *path, const Tensor *t) {
    char header[256];
    int header_length = npy_header(header, sizeof header, t);
    FILE *file = fopen(path, "wb");
    if (file == NULL) {
        return false;
    }
    unsigned char preamble[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                  (unsigned char)(header_length & 0xff),
                                  (unsigned char)(header_length >> 8)};
    bool ok = fwrite(preamble, 1, sizeof preamble, file) == sizeof preamble;
    ok = ok && fwrite(header, 1, (size_t)header_length, file) == (size_t)header_length;

    // The elements in logical row-major order, whatever the strides.
    // (Little-endian machines only: x86 and ARM as they run here.)
    int index[MAX_DIMS] = {0};
    long n = numel(t);
    for (long i = 0; i < n && ok; i++) {
        float value = *at(t, index);
        if (t->dtype == DTYPE_FLOAT32) {
            ok = fwrite(&value, sizeof value, 1, file) == 1;
        } else {
            int64_t whole = (int64_t)value;
            ok = fwrite(&whole, sizeof whole, 1, file) == 1;
        }
        next_index(index, t->shape, t->ndim);
    }
    return fclose(file) == 0 && ok;
}
