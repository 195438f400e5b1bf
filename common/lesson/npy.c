// npy.c - the .npy format, version 1.0:
//
//   "\x93NUMPY"  1  0  <header length, 2 bytes little-endian>  <header>  <data>
//
// The header is a Python dict literal, padded with spaces and ending in a
// newline so that the data starts at a multiple of 64 bytes:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 2, 4), }
#include "lesson/npy.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "lesson/files.h"

// The header dict for t, padded; returns its length.
static int npy_header(char *header, size_t capacity, const Tensor *t) {
    const char *descr = t->dtype == DTYPE_FLOAT32 ? "<f4" : "<i8";
    // The shape as a Python tuple: (3, 2, 4), but (5,) for one dim.
    int length = snprintf(header, capacity, "{'descr': '%s', 'fortran_order': False, "
                          "'shape': %s, }", descr, shape_str(t->shape, SIZES_TUPLE));
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

unsigned char *npy_encode(size_t *length, const Tensor *t) {
    char header[256];
    int header_length = npy_header(header, sizeof header, t);
    size_t item = t->dtype == DTYPE_FLOAT32 ? sizeof(float) : sizeof(int64_t);
    size_t total = 10 + (size_t)header_length + (size_t)numel(t) * item;
    unsigned char *bytes = malloc(total);
    if (bytes == NULL) {
        return NULL;
    }
    unsigned char preamble[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                  (unsigned char)(header_length & 0xff),
                                  (unsigned char)(header_length >> 8)};
    memcpy(bytes, preamble, sizeof preamble);
    memcpy(bytes + 10, header, (size_t)header_length);

    // The elements in logical row-major order, whatever the strides.
    // (Little-endian machines only: x86 and ARM as they run here.)
    unsigned char *data = bytes + 10 + header_length;
    int index[MAX_DIMS] = {0};
    long n = numel(t);
    for (long i = 0; i < n; i++) {
        float value = *at(t, index);
        if (t->dtype == DTYPE_FLOAT32) {
            memcpy(data + (size_t)i * item, &value, item);
        } else {
            // Converting a NaN, an infinity or anything past 2^63 to an
            // int64 is undefined: an integer tensor holding one is a bug.
            if (!(value >= -9223372036854775808.0f && value < 9223372036854775808.0f)) {
                free(bytes);
                fail("npy: an integer tensor (%s) holds %g, which is no int64", size_x_str(t),
                     (double)value);
            }
            int64_t whole = (int64_t)value;
            memcpy(data + (size_t)i * item, &whole, item);
        }
        next_index(index, t->shape.size, t->shape.ndim);
    }
    *length = total;
    return bytes;
}

bool npy_write(const char *path, const Tensor *t) {
    size_t length;
    unsigned char *bytes = npy_encode(&length, t);
    if (bytes == NULL) {
        errno = ENOMEM;
        return false;
    }
    bool ok = save_file(path, bytes, length);
    int saved_errno = errno;
    free(bytes);
    errno = saved_errno;
    return ok;
}
