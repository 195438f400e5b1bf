// A planted mistake for tests/exercises.sh: the right columns, copied.
// expect: your parts are copies
#include "attention.h"

void split(const Tensor **parts, const Tensor *t, int split_size, int count) {
    for (int i = 0; i < count; i++) {
        parts[i] = contiguous(narrow(t, -1, i * split_size, split_size));
    }
}
