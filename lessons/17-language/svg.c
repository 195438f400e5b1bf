// svg.c - the run as an SVG image, written as text (no library): the losses as they fall,
// then the sentence's attention maps of every head before training, halfway and at the end.
//
// The chart: each step's training loss (a grey line), and at each evaluation the loss on the
// fixed windows of the training split (blue) and of the validation split (red); the gap
// between the last two is what the model learned of the training text that does not carry
// over. The maps: lesson 16's, a cell as dark as its weight rounded to sixteenths, all the
// cells of one shade one <path>, the sentence's tokens along the first map of each row. The
// same run gives the same bytes.
#define _POSIX_C_SOURCE 200809L
#include "svg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lesson/outputs.h"

enum { CELL = 8, GAP = 14, LAYER_GAP = 18, LEFT = 112, TOP = 44, ROW_GAP = 30, SHADES = 16,
       KEY = 12, KEY_HEIGHT = 34, CHART_W = 480, CHART_H = 150, CHART_TOP = 40 };

typedef struct {
    char *text;
    size_t used, capacity;
} SvgText;

static void emit(SvgText *t, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void emit(SvgText *t, const char *format, ...) {
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

// A token's text for an SVG label: visible() with &, < and > escaped (an arena string).
static const char *xml_label(const Tokenizer *tok, int id) {
    const char *text = token_visible(tok, id);
    char *out = arena_alloc(strlen(text) * 5 + 1, 1);
    size_t used = 0;
    for (const char *c = text; *c != '\0'; c++) {
        const char *entity = *c == '&' ? "&amp;" : *c == '<' ? "&lt;" : *c == '>' ? "&gt;" : NULL;
        if (entity != NULL) {
            memcpy(out + used, entity, strlen(entity));
            used += strlen(entity);
        } else {
            out[used++] = *c;
        }
    }
    return out;
}

// A loss as drawn: within [0, top], a NaN or an Inf (a run that diverged) at the top.
static double drawn(float loss, float top) {
    return isfinite(loss) ? fmin(fmax((double)loss, 0.0), (double)top) : (double)top;
}

// The chart of the losses at (x0, y0), CHART_W by CHART_H, loss 0 at the bottom.
static void chart(SvgText *t, const Run *run, int x0, int y0) {
    int steps = run->s.steps;
    float top = 0.0f;   // the largest finite loss, rounded up (1 if there is none)
    for (int s = 0; s < steps; s++) {
        top = isfinite(run->loss[s]) ? fmaxf(top, run->loss[s]) : top;
    }
    for (int e = 0; e < run->n_evals; e++) {
        float both = fmaxf(run->eval_train[e], run->eval_val[e]);
        top = isfinite(both) ? fmaxf(top, both) : top;
    }
    top = top > 0.0f ? ceilf(top) : 1.0f;
    double x_scale = steps > 0 ? (double)CHART_W / steps : 0, y_scale = CHART_H / (double)top;
    emit(t, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#bbb\"/>\n",
         x0, y0, CHART_W, CHART_H);
    emit(t, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%g</text>\n", x0 - 4, y0 + 4,
         (double)top);
    emit(t, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>\n", x0 - 4, y0 + CHART_H + 4);
    emit(t, "<text x=\"%d\" y=\"%d\">step %d</text>\n", x0 + CHART_W - 40, y0 + CHART_H + 14,
         steps);
    emit(t, "<polyline fill=\"none\" stroke=\"#999\" stroke-width=\"0.7\" points=\"");
    for (int s = 0; s < steps; s++) {
        emit(t, "%s%.1f,%.1f", s > 0 ? " " : "", x0 + (s + 1) * x_scale,
             y0 + CHART_H - drawn(run->loss[s], top) * y_scale);
    }
    emit(t, "\"/>\n");
    const float *series[2] = {run->eval_train, run->eval_val};
    const char *colours[2] = {"#1f5fbf", "#c0392b"}, *names[2] = {"train windows", "validation"};
    for (int k = 0; k < 2; k++) {
        emit(t, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", colours[k]);
        for (int e = 0; e < run->n_evals; e++) {
            emit(t, "%s%.1f,%.1f", e > 0 ? " " : "", x0 + run->eval_step[e] * x_scale,
                 y0 + CHART_H - drawn(series[k][e], top) * y_scale);
        }
        emit(t, "\"/>\n");
        emit(t, "<text x=\"%d\" y=\"%d\" fill=\"%s\">%s</text>\n", x0 + CHART_W + 10,
             y0 + 20 + 14 * k, colours[k], names[k]);
    }
    emit(t, "<text x=\"%d\" y=\"%d\" fill=\"#999\">each step's batch</text>\n",
         x0 + CHART_W + 10, y0 + 48);
}

const char *svg_text(size_t *length, const Run *run, const float *maps, const int *steps) {
    const Config *c = &run->s.config;
    const Tokenizer *tok = &run->data.tok;
    int n = run->n_sentence, H = c->num_attention_heads, L = c->num_hidden_layers;
    int map = n * CELL, maps_top = CHART_TOP + CHART_H + 60;
    int width = LEFT + L * H * (map + GAP) + (L - 1) * LAYER_GAP + 10;
    width = width > LEFT + CHART_W + 130 ? width : LEFT + CHART_W + 130;
    int height = maps_top + 3 * (map + ROW_GAP) + KEY_HEIGHT;
    SvgText t = {arena_alloc(1 << 16, 1), 0, 1 << 16};
    emit(&t, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
        "font-family=\"monospace\" font-size=\"9\">\n", width, height);
    emit(&t, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", width, height);
    emit(&t, "<text x=\"4\" y=\"14\" font-size=\"11\">the loss as it falls, on %d windows of each "
        "split at every evaluation</text>\n", run->s.batch * run->s.eval_batches);
    chart(&t, run, LEFT, CHART_TOP);
    emit(&t, "<text x=\"4\" y=\"%d\" font-size=\"11\">the attention of every head on the sentence "
        "(row: the query, column: the key; darker: more weight)</text>\n", maps_top - 26);
    const char *when[3] = {"at the start", "after step %d", "after step %d"};
    for (int m = 0; m < 3; m++) {
        int y0 = maps_top + m * (map + ROW_GAP);
        char title[40];
        snprintf(title, sizeof title, when[m], steps[m]);
        emit(&t, "<text x=\"4\" y=\"%d\">%s</text>\n", y0 + map / 2, title);
        for (int l = 0; l < L; l++) {
            for (int h = 0; h < H; h++) {
                int x0 = LEFT + (l * H + h) * (map + GAP) + l * LAYER_GAP;
                if (m == 0) {
                    emit(&t, "<text x=\"%d\" y=\"%d\">layer %d head %d</text>\n", x0,
                         maps_top - 12, l, h);
                }
                if (l == 0 && h == 0) {   // the tokens along the first map of a row
                    for (int i = 0; i < n; i++) {
                        const char *label = xml_label(tok, run->sentence[i]);
                        emit(&t, "<text x=\"%d\" y=\"%d\" font-size=\"7\">%s</text>\n", x0 - 9,
                             y0 + i * CELL + CELL - 1, label);
                        emit(&t, "<text x=\"%d\" y=\"%d\" font-size=\"7\">%s</text>\n",
                             x0 + i * CELL + 1, y0 - 3, label);
                    }
                }
                emit(&t, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                    "stroke=\"#bbb\"/>\n", x0, y0, map, map);
                const float *att = maps + (((long)m * L + l) * H + h) * n * n;
                for (int shade_level = 1; shade_level <= SHADES; shade_level++) {
                    bool any = false;
                    for (int i = 0; i < n * n; i++) {
                        // Compared as floats before any becomes an int: a NaN (weights
                        // loaded as NaN) is left white, and no float past an int's range
                        // is converted (undefined behaviour).
                        float w = att[i];
                        int level = w > 0.0f ? (w < 1.0f ? (int)(w * SHADES + 0.5f) : SHADES) : 0;
                        if (level != shade_level) {
                            continue;
                        }
                        emit(&t, "%sM%d %dh%dv%dh-%dz", any ? "" : "<path d=\"",
                             x0 + i % n * CELL, y0 + i / n * CELL, CELL, CELL, CELL);
                        any = true;
                    }
                    if (any) {
                        emit(&t, "\" fill-opacity=\"%.4f\"/>\n", (double)shade_level / SHADES);
                    }
                }
            }
        }
    }
    int y_key = maps_top + 3 * (map + ROW_GAP) - 6;
    emit(&t, "<text x=\"4\" y=\"%d\">weight</text>\n", y_key + 9);
    for (int level = 0; level <= SHADES; level++) {
        emit(&t, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill-opacity=\"%.4f\" "
            "stroke=\"#bbb\"/>\n", LEFT + level * KEY, y_key, KEY, KEY, (double)level / SHADES);
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

void svg_language(const char *path, const Run *run, const float *maps, const int *steps) {
    size_t length;
    const char *text = svg_text(&length, run, maps, steps);
    unsigned char *bytes = malloc(length);   // keep_output's to free
    if (bytes != NULL) {
        memcpy(bytes, text, length);
    }
    keep_output("--svg", path, bytes, length);   // written with the run's other outputs
}
