// A planted mistake for tests/exercises.sh: view(B, H, T, D) straight away.
// expect: cuts each head out of the wrong places
#include "attention.h"

const Tensor *split_heads(const Tensor *x, int heads) {
    int B = size(x, 0), T = size(x, 1), C = size(x, 2), D = C / heads;
    return view(x, shape4(B, heads, T, D));
}
