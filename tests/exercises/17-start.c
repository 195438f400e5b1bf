// Exercise 17: write top-p (nucleus) sampling's cut.
//
// WHAT TO WRITE
//   top_p(kept, probs, n, p): probs holds the next token's n probabilities (summing
//   to 1). Copy them into kept, setting to 0 every token outside the nucleus: the
//   smallest set of the most likely tokens whose probabilities add up to at least
//   p. Going down the tokens from the most likely (equal ones in the order of their
//   ids), a token is kept while the mass of those ABOVE it is still below p:
//       kept[i] = (mass of the tokens before i in that order) >= p ? 0 : probs[i]
//   The most likely token is always kept (nothing is above it). kept and probs are
//   different arrays. Lesson 17's own is top_p in lessons/17-language/sample.c
//   (it adds the mass in double and compares in float, as torch.cumsum does).
//
// CHECK IT
//   make exercise-17   trains lesson 17 for a few steps with yours in place of its
//                      own at three flag sets and compares every printed number:
//                      part 4 prints how many tokens top-p keeps, the cut
//                      probabilities and the samples drawn from them.
//   The answer is on the page, docs/17-language.md, under Exercises.
#include <stdlib.h>

#include "lessons/17-language/sample.h"

void top_p(float *kept, const float *probs, int n, float p) {
    (void)p;
    for (int i = 0; i < n; i++) {
        kept[i] = probs[i];   // the starting file keeps every token
    }
    // Your code here.
}
