// A planted mistake for tests/exercises.sh: view(B, T, H, D) without the transpose.
// expect: then transpose dims 1 and 2
#include "attention.h"

const Tensor *split_heads(const Tensor *x, int heads) {
    int B = size(x, 0), T = size(x, 1), C = size(x, 2), D = C / heads;
    return view(x, shape4(B, T, heads, D));
}
