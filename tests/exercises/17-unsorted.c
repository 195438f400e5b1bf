// A planted mistake for tests/exercises.sh: the tokens taken in the order of their ids,
// not most likely first.
// expect: most likely first
#include "lessons/17-language/sample.h"

void top_p(float *kept, const float *probs, int n, float p) {
    double above = 0.0;
    for (int i = 0; i < n; i++) {
        kept[i] = (float)above >= p ? 0.0f : probs[i];
        above += probs[i];
    }
}
