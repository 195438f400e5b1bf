// svg.h - the attention maps as an SVG image (svg.c).
#ifndef SVG16_H
#define SVG16_H

#include <stdbool.h>

#include "model.h"

// --svg: check before any work that FILE can be written (exit 2 if not).
void svg_check(const Lesson *lesson, const char *path);
// maps (3, layers, H, N, N): the example's attention before training and after steps[1] and
// steps[2]. Writes the image all or nothing; false (errno set) if it cannot.
bool svg_maps(const char *path, const Config *config, const float *ids, const float *maps,
              const int *steps);

#endif
