// heatmap.c - attention weights as a grid of shaded cells (see heatmap.h).
//
//   att_weight[0, :, :]  rows: query t, columns: key s
//          0 1 2
//       0 ██▓▓▓▓          each cell is two characters wide so the grid is
//       1 ▒▒██▒▒          roughly square; darker = closer to the largest
//       2 ░░▒▒██          weight of its row, blank = exactly 0
#define _POSIX_C_SOURCE 200809L
#include "lesson/heatmap.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GRIDS 8    // draw at most this many (batch, head) grids
#define MAX_CELLS 32   // and at most this many rows and columns of each: 6 + 2*32 = 70
                       // characters wide, so a grid fits an 80-column terminal

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
    int levels;   // shades[0] is "exactly zero", shades[levels-1] the darkest
} Palette;

// Shade w on a scale whose darkest shade is `top` (its row's largest
// weight). Zero stays blank, so masked cells are seen as holes; any positive
// weight gets at least the lightest shade, rounding up.
static const char *shade(const Palette *palette, float w, float top) {
    if (isnan(w)) {
        return "?";
    }
    if (w <= 0.0f || top <= 0.0f) {
        return palette->shades[0];
    }
    int level = (int)ceilf(w / top * (float)(palette->levels - 1));
    if (level < 1) {
        level = 1;
    }
    if (level > palette->levels - 1) {
        level = palette->levels - 1;
    }
    return palette->shades[level];
}

// The weight at row t, column s of the grid at `lead` (the leading indices).
static float cell(const Tensor *w, const int *lead, int n_lead, int t, int s) {
    int index[MAX_DIMS] = {0};
    memcpy(index, lead, (size_t)n_lead * sizeof(int));
    index[n_lead] = t;
    index[n_lead + 1] = s;
    return *at(w, index);
}

// Column numbers, two characters per column: one line when they all have
// one digit, else a line of tens above a line of units (12 = "1" over "2").
static void print_column_numbers(int cols) {
    if (cols > 10) {
        printf("      ");
        for (int s = 0; s < cols; s++) {
            printf(s >= 10 ? "%2d" : "  ", (s / 10) % 10);
        }
        printf("\n");
    }
    printf("      ");
    for (int s = 0; s < cols; s++) {
        printf("%2d", s % 10);
    }
    printf("\n");
}

// One (T x S) grid: the matrix at `lead` (the leading indices). At most
// MAX_CELLS rows and columns are drawn, and a line under the title says so.
static void print_grid(const Palette *palette, const char *title, const Tensor *w,
                       const int *lead, int n_lead) {
    int T = w->shape.size[n_lead];
    int S = w->shape.size[n_lead + 1];
    int rows = T < MAX_CELLS ? T : MAX_CELLS;
    int cols = S < MAX_CELLS ? S : MAX_CELLS;

    printf("%s[", title);
    for (int d = 0; d < n_lead; d++) {
        printf("%d, ", lead[d]);
    }
    printf(":, :]  rows: query t, columns: key s\n");
    if (rows < T || cols < S) {
        printf("  (first %d x %d of %d x %d)\n", rows, cols, T, S);
    }
    print_column_numbers(cols);
    for (int t = 0; t < rows; t++) {
        // Each row (one query's weights, summing to 1) is shaded relative to
        // its own largest weight: with 256 keys every weight is near 1/256,
        // and on a fixed 0..1 scale all cells would look alike.
        float top = 0.0f;
        for (int s = 0; s < S; s++) {
            top = fmaxf(top, cell(w, lead, n_lead, t, s));   // fmaxf skips NaN
        }
        printf("  %3d ", t);
        for (int s = 0; s < cols; s++) {
            const char *c = shade(palette, cell(w, lead, n_lead, t, s), top);
            printf("%s%s", c, c);   // two characters per cell
        }
        printf("\n");
    }
}

void print_heatmap(const char *title, const Tensor *weights) {
    if (weights->shape.ndim < 2) {
        printf("%s: a heatmap needs at least 2 dims, got %d\n", title, weights->shape.ndim);
        return;
    }
    Palette palette = {ASCII_SHADES, 10};
    if (terminal_speaks_utf8()) {
        palette = (Palette){UTF8_SHADES, 5};
    }
    printf("%s: heatmap\n  each row shaded from 0 (blank) to its own largest weight (%s), "
           "? = nan\n", title, palette.shades[palette.levels - 1]);

    // One grid per index of the leading dims (batch, head, ...).
    int n_lead = weights->shape.ndim - 2;
    int lead[MAX_DIMS] = {0};
    long n_grids = 1;
    for (int d = 0; d < n_lead; d++) {
        n_grids *= weights->shape.size[d];
    }
    for (long g = 0; g < n_grids && g < MAX_GRIDS; g++) {
        print_grid(&palette, title, weights, lead, n_lead);
        next_index(lead, weights->shape.size, n_lead);
    }
    if (n_grids > MAX_GRIDS) {
        printf("(%ld more grids not drawn)\n", n_grids - MAX_GRIDS);
    }
}
