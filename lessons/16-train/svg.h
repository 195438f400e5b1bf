// svg.h - the attention maps as an SVG image (svg.c).
#ifndef SVG16_H
#define SVG16_H

#include <stdbool.h>

#include "model.h"

// maps (3, layers, H, N, N): the example's attention before training and after steps[1] and
// steps[2], drawn and kept to be written at the end with the run's other outputs, all or
// nothing (lesson/outputs.h: --svg's file was declared and checked before any work).
// The image as text (an arena string of *length bytes).
const char *svg_text(size_t *length, const Config *config, const float *ids, const float *maps,
                     const int *steps);
void svg_maps(const char *path, const Config *config, const float *ids, const float *maps,
              const int *steps);

#endif
