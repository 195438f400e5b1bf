// svg.h - the losses and the attention maps as an SVG image (svg.c).
#ifndef SVG17_H
#define SVG17_H

#include <stddef.h>

#include "language.h"

// The run's losses (every step's, and both splits' at every evaluation) as a chart, and
// maps (3, L, H, n, n): the sentence's attention before training and after steps[1] and
// steps[2]: the image as text (an arena string of *length bytes).
const char *svg_text(size_t *length, const Run *run, const float *maps, const int *steps);
// That image, kept to be written at the end with the run's other outputs, all or nothing
// (lesson/outputs.h: --svg's file was declared and checked before any work).
void svg_language(const char *path, const Run *run, const float *maps, const int *steps);

#endif
