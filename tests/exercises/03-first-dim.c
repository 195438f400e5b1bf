// A planted mistake for tests/exercises.sh: the first dim cut, not the last.
// expect: narrow the last dim
#include "attention.h"

void split(const Tensor **parts, const Tensor *t, int split_size, int count) {
    for (int i = 0; i < count; i++) {
        parts[i] = narrow(t, 1, i * split_size, split_size);
    }
}
