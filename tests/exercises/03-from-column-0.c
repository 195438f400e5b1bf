// A planted mistake for tests/exercises.sh: every part from column 0.
// expect: starts at column 0
#include "attention.h"

void split(const Tensor **parts, const Tensor *t, int split_size, int count) {
    for (int i = 0; i < count; i++) {
        parts[i] = narrow(t, -1, 0, split_size);
    }
}
