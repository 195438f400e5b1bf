// heatmap.c - attention weights as a grid of shaded cells (see heatmap.h).
//
//   weights: heatmap (rows: query t, columns: key s)
//     shades: blank 0, · below 0.01, ░ 0.01 to 0.05, ▒ 0.05 to 0.2, ▓ 0.2 to 0.5, ...
//   weights[:, :]
//          0 1 2
//       0 ▒▒▓▓▓▓          each cell is two characters wide so the grid is
//       1 ··██░░          roughly square
//       2 ··██▒▒
#define _POSIX_C_SOURCE 200809L
#include "lesson/heatmap.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GRIDS 8    // draw at most this many (batch, head) grids
#define MAX_CELLS 46   // and at most this many rows and columns of each: 6 + 2*46 = 98
                       // characters wide, so every line fits 100 columns

// The scale, the same for every row: a weight w gets the shade of the last
// threshold it reaches. Apart by a factor of 2.5 to 5, so that weights a
// learner compares (0.01, 0.1, 0.5; 1/seq for a uniform row) fall apart.
static const float THRESHOLDS[] = {0.01f, 0.05f, 0.2f, 0.5f};
#define LEVELS 6   // blank (0), below the first threshold, then one per threshold

static const char *const UTF8_SHADES[LEVELS] = {" ", "\u00b7", "\u2591", "\u2592", "\u2593",
                                                "\u2588"};
static const char *const ASCII_SHADES[LEVELS] = {" ", ".", ":", "+", "#", "@"};

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

// Zero (or less) stays blank, so masked cells are seen as holes; any
// positive weight gets at least the lightest shade.
static const char *shade(const char *const *shades, float w) {
    if (isnan(w)) {
        return "?";
    }
    if (w <= 0.0f) {
        return shades[0];
    }
    int level = 1;
    for (int i = 0; i < LEVELS - 2; i++) {
        level += w >= THRESHOLDS[i];
    }
    return shades[level];
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
static void print_grid(const char *const *shades, const char *title, const Tensor *w,
                       const int *lead, int n_lead) {
    int T = w->shape.size[n_lead];
    int S = w->shape.size[n_lead + 1];
    int rows = T < MAX_CELLS ? T : MAX_CELLS;
    int cols = S < MAX_CELLS ? S : MAX_CELLS;

    printf("%s[", title);
    for (int d = 0; d < n_lead; d++) {
        printf("%d, ", lead[d]);
    }
    printf(":, :]\n");
    if (rows < T || cols < S) {
        printf("  (the first %d x %d of %d x %d)\n", rows, cols, T, S);
    }
    print_column_numbers(cols);
    for (int t = 0; t < rows; t++) {
        printf("  %3d ", t);
        for (int s = 0; s < cols; s++) {
            const char *c = shade(shades, cell(w, lead, n_lead, t, s));
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
    const char *const *shades = terminal_speaks_utf8() ? UTF8_SHADES : ASCII_SHADES;
    printf("%s: heatmap (rows: query t, columns: key s)\n", title);
    printf("  shades: blank 0, %s below %g", shades[1], THRESHOLDS[0]);
    for (int i = 0; i < LEVELS - 3; i++) {
        printf(", %s %g to %g", shades[i + 2], THRESHOLDS[i], THRESHOLDS[i + 1]);
    }
    printf(", %s %g and up, ? nan\n", shades[LEVELS - 1], THRESHOLDS[LEVELS - 3]);

    // One grid per index of the leading dims (batch, head, ...).
    int n_lead = weights->shape.ndim - 2;
    int lead[MAX_DIMS] = {0};
    long n_grids = 1;
    for (int d = 0; d < n_lead; d++) {
        n_grids *= weights->shape.size[d];
    }
    for (long g = 0; g < n_grids && g < MAX_GRIDS; g++) {
        print_grid(shades, title, weights, lead, n_lead);
        next_index(lead, weights->shape.size, n_lead);
    }
    if (n_grids > MAX_GRIDS) {
        printf("(%ld more grids not drawn)\n", n_grids - MAX_GRIDS);
    }
}
