// A planted mistake for tests/exercises.sh: view(B, T, H, D) without the transpose.
// expect: transpose(..., 1, 2) makes it
#include "attention.h"

const Tensor *split_heads(const Tensor *x, int heads) {
    int B = size(x, 0), T = size(x, 1), C = size(x, 2), D = C / heads;
    return view(x, shape4(B, T, heads, D));
}
