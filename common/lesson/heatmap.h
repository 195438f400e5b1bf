// heatmap.h - attention weights drawn as a grid of shaded cells (--heatmap).
//
// Each (query x key) matrix in the last two dims of `weights` is drawn as
// one grid: a row per query position t, a column per key position s, each
// cell shaded by its weight on one scale for every row, with thresholds a
// legend above the grids states:
//
//     blank 0, · below 0.01, ░ 0.01 to 0.05, ▒ 0.05 to 0.2, ▓ 0.2 to 0.5, █ 0.5 and up
//
// so a weight of 0.01 reads apart from 0.1 and from 0.5, a masked cell
// (exactly 0) from a tiny one, and a causal triangle, a padding mask's dead
// columns or a uniform row (1/S everywhere) are seen at a glance. Leading
// dims (batch, head, ...) give one grid each, titled with their index (the
// first 8 grids, then a line saying how many more there were). NaN
// cells show as '?'. Plain text; Unicode shades when LANG/LC_ALL/LC_CTYPE
// name UTF-8, ASCII " .:+#@" otherwise. Every line fits 100 columns: a grid
// shows at most 46 rows and columns, and says when it shows fewer.
#ifndef HEATMAP_H
#define HEATMAP_H

#include "core/tensor.h"

void print_heatmap(const char *title, const Tensor *weights);

#endif
