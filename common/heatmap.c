// heatmap.c - attention weights as a grid of shaded cells (see heatmap.h).
//
//   att_weight[0]        keys s ->
//        0 1 2 3
//     0 ▓▓▒▒▒▒          each cell is two characters wide so the grid is
//     1 ▒▒▓▓▒▒          roughly square; darker = closer to 1
//     2 ░░▒▒██
#define _POSIX_C_SOURCE 200809L
#include "heatmap.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GRIDS 8    // draw at most this many (batch, head) grids
#define MAX_CELLS 48   // and at most this many rows and columns of each

static const char *const UTF8_SHADES[] = {" ", "\u2591", "\u2592", "\u2593", "\u2588"};
static const char *const ASCII_SHADES[] = {" ", ".", ":", "-", "=", "+", "*", "#", "%", "@"};

// The first of LC_ALL, LC_CTYPE, LANG that is set decides, as in setlocale().
static bool terminal_speaks_utf8(void) {
    const char *names[] = {"LC_ALL", "LC_CTYPE", "LANG"};
    for (int i = 0; i < 3; i++) {
        const char *value = getenv(names[i]);
        if (value != NULL && value[0] != '\0') {
            char lower[64] = {0};
            for (size_t c = 0; c < sizeof lower - 1 && value[c] != '\0'; c++) {
                lower[c] = (char)tolower((unsigned char)value[c]);
            }
            return strstr(lower, "utf-8") != NULL || strstr(lower, "utf8") != NULL;
        }
    }
    return false;
}

typedef struct {
    const char *const *shades;
    int levels;   // shades[0] is "exactly zero", shades[levels-1] is "1"
} Palette;

// Zero stays blank, so masked cells are seen as holes; any positive weight
// gets at least the lightest shade, rounding up.
static const char *shade(const Palette *palette, float w) {
    if (isnan(w)) {
        return "?";
    }
    if (w <= 0.0f) {
        return palette->shades[0];
    }
    int level = (int)ceilf(w * (float)(palette->levels - 1));
    if (level < 1) {
        level = 1;
    }
    if (level > palette->levels - 1) {
        level = palette->levels - 1;
    }
    return palette->shades[level];
}

// One (T x S) grid: the matrix at `lead` (the leading indices).
static void print_grid(const Palette *palette, const char *title, const Tensor *w,
                       const int *lead, int n_lead) {
    int T = w->shape[w->ndim - 2];
    int S = w->shape[w->ndim - 1];
    int rows = T < MAX_CELLS ? T : MAX_CELLS;
    int cols = S < MAX_CELLS ? S : MAX_CELLS;

    printf("%s[", title);
    for (int d = 0; d < n_lead; d++) {
        printf(d == 0 ? "%d" : ", %d", lead[d]);
    }
    printf(n_lead == 0 ? ":, :]" : ", :, :]");
    printf("  rows: query t, columns: key s");
    if (rows < T || cols < S) {
        printf(" (first %d x %d of %d x %d)", rows, cols, T, S);
    }
    printf("\n      ");
    for (int s = 0; s < cols; s++) {
        printf("%2d", s % 100);
    }
    printf("\n");

    int index[MAX_DIMS] = {0};
    memcpy(index, lead, (size_t)n_lead * sizeof(int));
    for (int t = 0; t < rows; t++) {
        printf("  %3d ", t);
        for (int s = 0; s < cols; s++) {
            index[w->ndim - 2] = t;
            index[w->ndim - 1] = s;
            const char *cell = shade(palette, *at(w, index));
            printf("%s%s", cell, cell);   // two characters per cell
        }
        printf("\n");
    }
}

void print_heatmap(const char *title, const Tensor *weights) {
    if (weights->ndim < 2) {
        printf("%s: a heatmap needs at least 2 dims, got %d\n", title, weights->ndim);
        return;
    }
    Palette palette = {ASCII_SHADES, 10};
    if (terminal_speaks_utf8()) {
        palette = (Palette){UTF8_SHADES, 5};
    }
    printf("%s: heatmap, shades from 0 (blank) to 1 (", title);
    printf("%s), ? = nan\n", palette.shades[palette.levels - 1]);

    // One grid per index of the leading dims (batch, head, ...).
    int n_lead = weights->ndim - 2;
    int lead[MAX_DIMS] = {0};
    long n_grids = 1;
    for (int d = 0; d < n_lead; d++) {
        n_grids *= weights->shape[d];
    }
    for (long g = 0; g < n_grids && g < MAX_GRIDS; g++) {
        print_grid(&palette, title, weights, lead, n_lead);
        next_index(lead, weights->shape, n_lead);
    }
    if (n_grids > MAX_GRIDS) {
        printf("(%ld more grids not drawn)\n", n_grids - MAX_GRIDS);
    }
}
