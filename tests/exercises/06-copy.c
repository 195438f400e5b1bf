// A planted mistake for tests/exercises.sh: the right numbers, copied into fresh memory.
// expect: your split copies
#include "attention.h"

const Tensor *split_heads(const Tensor *x, int heads) {
    int B = size(x, 0), T = size(x, 1), C = size(x, 2), D = C / heads;
    return contiguous(transpose(view(x, shape4(B, T, heads, D)), 1, 2));
}
