// A planted mistake for tests/exercises.sh: the token that carries the mass past p is cut
// (the mass INCLUDING each token compared with p).
// expect: one token too few
#include <stdlib.h>

#include "lessons/17-language/sample.h"

void top_p(float *kept, const float *probs, int n, float p) {
    int *order = malloc((size_t)n * sizeof *order);
    for (int i = 0; i < n; i++) {
        order[i] = i;
    }
    for (int i = 1; i < n; i++) {   // insertion sort: most likely first, ties by id
        int o = order[i], j = i;
        while (j > 0 && probs[order[j - 1]] < probs[o]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = o;
    }
    double mass = 0.0;
    for (int r = 0; r < n; r++) {
        int i = order[r];
        mass += probs[i];
        kept[i] = (float)mass >= p ? 0.0f : probs[i];
    }
    free(order);
}
