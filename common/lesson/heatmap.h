// heatmap.h - attention weights drawn as a grid of shaded cells (--heatmap).
//
// Each (query x key) matrix in the last two dims of `weights` is drawn as
// one grid: a row per query position t, a column per key position s, each
// cell shaded by its weight (blank = exactly 0, darkest = the largest weight
// of its row: each row is one query's distribution), with the row and
// column numbers around it, so a causal triangle, a padding mask's dead
// columns or a fully masked (uniform) row are seen at a glance. Leading
// dims (batch, head, ...) give one grid each, titled with their index.
// NaN cells show as '?'. Plain text; Unicode shades when LANG/LC_ALL/LC_CTYPE
// name UTF-8, ASCII " .:-=+*#%@" otherwise.
#ifndef HEATMAP_H
#define HEATMAP_H

#include "core/tensor.h"

void print_heatmap(const char *title, const Tensor *weights);

#endif
