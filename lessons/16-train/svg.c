// svg.c - the example's attention maps as an SVG image, written as text (no library).
//
// One row of maps per moment (before training, halfway, at the end), in each row every
// head of every layer; a cell of a map is a grey square as dark as the weight, rounded to
// sixteenths (16 shades; a weight below 1/32 is left white), all the cells of one shade one
// <path>, so the file stays small. A key of the 16 shades runs along the bottom. The same
// weights give the same bytes: make docs redraws the committed images and the check
// compares them.
#define _POSIX_C_SOURCE 200809L
#include "svg.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "lesson/outputs.h"
#include "show.h"

enum { CELL = 6, GAP = 14, LAYER_GAP = 18, LEFT = 112, TOP = 44, ROW_GAP = 30, SHADES = 16,
       KEY = 12, KEY_HEIGHT = 34 };

typedef struct {
    char *text;
    size_t used, capacity;
} Text;

static void emit(Text *t, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void emit(Text *t, const char *format, ...) {
    va_list args;
    va_start(args, format);
    int n = vsnprintf(NULL, 0, format, args);
    va_end(args);
    if (t->used + (size_t)n + 1 > t->capacity) {
        t->capacity = (t->used + (size_t)n + 1) * 2;
        char *bigger = arena_alloc(t->capacity, 1);
        memcpy(bigger, t->text, t->used);
        t->text = bigger;
    }
    va_start(args, format);
    vsnprintf(t->text + t->used, (size_t)n + 1, format, args);
    va_end(args);
    t->used += (size_t)n;
}

const char *svg_text(size_t *length, const Config *c, const float *ids, const float *maps,
                     const int *steps) {
    int N = c->seq, H = c->num_attention_heads, L = c->num_hidden_layers, map = N * CELL;
    int width = LEFT + L * H * (map + GAP) + (L - 1) * LAYER_GAP + 10;
    int height = TOP + 3 * (map + ROW_GAP) + KEY_HEIGHT;
    Text t = {arena_alloc(1 << 16, 1), 0, 1 << 16};
    emit(&t, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
        "font-family=\"monospace\" font-size=\"9\">\n", width, height);
    emit(&t, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", width, height);
    emit(&t, "<text x=\"4\" y=\"12\" font-size=\"11\">%s: the attention of every head on the "
        "example (row: the query, column: the key; darker: more weight)</text>\n",
        c->task == RECALL ? "recall" : "reverse");
    const char *when[3] = {"at the start", "after step %d", "after step %d"};
    for (int m = 0; m < 3; m++) {
        int y0 = TOP + m * (map + ROW_GAP);
        char title[40];
        snprintf(title, sizeof title, when[m], steps[m]);
        emit(&t, "<text x=\"4\" y=\"%d\">%s</text>\n", y0 + map / 2, title);
        for (int l = 0; l < L; l++) {
            for (int h = 0; h < H; h++) {
                int x0 = LEFT + (l * H + h) * (map + GAP) + l * LAYER_GAP;
                if (m == 0) {
                    emit(&t, "<text x=\"%d\" y=\"%d\">layer %d head %d</text>\n", x0, TOP - 18, l,
                        h);
                }
                if (l == 0 && h == 0) {   // the tokens along the first map of a row
                    for (int i = 0; i < N; i++) {
                        emit(&t, "<text x=\"%d\" y=\"%d\" font-size=\"7\">%s</text>\n", x0 - 8,
                            y0 + i * CELL + CELL, token_text(c, (int)ids[i]));
                        emit(&t, "<text x=\"%d\" y=\"%d\" font-size=\"7\">%s</text>\n",
                            x0 + i * CELL + 1, y0 - 3, token_text(c, (int)ids[i]));
                    }
                }
                emit(&t, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                    "stroke=\"#bbb\"/>\n", x0, y0, map, map);
                const float *att = maps + (((long)m * L + l) * H + h) * N * N;
                for (int shade_level = 1; shade_level <= SHADES; shade_level++) {
                    bool any = false;
                    for (int i = 0; i < N * N; i++) {
                        // Compared as floats before any becomes an int: a NaN (weights
                        // loaded as NaN) is left white, and no float past an int's range
                        // is converted (undefined behaviour).
                        float w = att[i];
                        int level = w > 0.0f ? (w < 1.0f ? (int)(w * SHADES + 0.5f) : SHADES) : 0;
                        if (level != shade_level) {
                            continue;
                        }
                        emit(&t, "%sM%d %dh%dv%dh-%dz", any ? "" : "<path d=\"",
                            x0 + i % N * CELL, y0 + i / N * CELL, CELL, CELL, CELL);
                        any = true;
                    }
                    if (any) {
                        emit(&t, "\" fill-opacity=\"%.4f\"/>\n", (double)shade_level / SHADES);
                    }
                }
            }
        }
    }
    // The key: a square of each shade, 0 (white) to 16/16 (black), and what a shade means.
    int y_key = TOP + 3 * (map + ROW_GAP) - 6;
    emit(&t, "<text x=\"4\" y=\"%d\">weight</text>\n", y_key + 9);
    for (int level = 0; level <= SHADES; level++) {
        emit(&t, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill-opacity=\"%.4f\" "
            "stroke=\"#bbb\"/>\n", LEFT + level * KEY, y_key, KEY, KEY,
            (double)level / SHADES);
    }
    const char *marks[3] = {"0", "1/2", "1"};
    for (int i = 0; i < 3; i++) {
        emit(&t, "<text x=\"%d\" y=\"%d\">%s</text>\n", LEFT + i * (SHADES / 2) * KEY + 2,
            y_key + KEY + 10, marks[i]);
    }
    emit(&t, "<text x=\"%d\" y=\"%d\">a cell is as dark as its weight, rounded to sixteenths "
        "(below 1/32: white)</text>\n", LEFT + (SHADES + 1) * KEY + 10, y_key + 9);
    emit(&t, "</svg>\n");
    *length = t.used;
    return t.text;
}

void svg_maps(const char *path, const Config *c, const float *ids, const float *maps,
              const int *steps) {
    size_t length;
    const char *text = svg_text(&length, c, ids, maps, steps);
    unsigned char *bytes = malloc(length);   // keep_output's to free
    if (bytes != NULL) {
        memcpy(bytes, text, length);
    }
    keep_output("--svg", path, bytes, length);   // written with the run's other outputs
}
