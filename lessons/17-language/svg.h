// svg.h - the losses and the attention maps as an SVG image (svg.c).
#ifndef SVG17_H
#define SVG17_H

#include <stdbool.h>

#include "language.h"

// --svg: check before any work that FILE can be written (exit 2 if not).
void svg_check(const Lesson *lesson, const char *path);
// The run's losses (every step's, and both splits' at every evaluation) as a chart, and
// maps (3, L, H, n, n): the sentence's attention before training and after steps[1] and
// steps[2]. Writes the image all or nothing; false (errno set) if it cannot.
bool svg_language(const char *path, const Run *run, const float *maps, const int *steps);

#endif
