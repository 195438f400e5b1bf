// show.c - lesson 18's printing: tokens, attention maps and rows as shades, the training
// chart, where each head looks (lesson 16's show.c, for recall at any length).
#include "show.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

// Room for the widest token: "k" or "v" and an int's digits and sign ("k-2147483648").
#define TOKEN_TEXT_MAX 16

const char *token_text(const Task *task, int id) {
    char *text = arena_alloc(TOKEN_TEXT_MAX, 1);
    if (id < task->keys) {
        snprintf(text, TOKEN_TEXT_MAX, task->keys <= 26 ? "%c" : "k%d",
                 task->keys <= 26 ? 'A' + id : id);
    } else {
        int value = id - task->keys;
        snprintf(text, TOKEN_TEXT_MAX, task->values <= 10 ? "%c" : "v%d",
                 task->values <= 10 ? '0' + value : value);
    }
    return text;
}

const char *sequence_text(const Task *task, const float *ids, int N) {
    int p = pairs(N);
    const char **pieces = arena_alloc((size_t)N, sizeof *pieces);   // each token's text
    const char **gaps = arena_alloc((size_t)N, sizeof *gaps);       // and what comes before it
    size_t length = 1;   // the buffer is sized from what goes in it: the '\0', then each piece
    for (int t = 0; t < N; t++) {
        gaps[t] = t == 0 ? "" : t == 2 * p ? " | " : t % 2 == 0 ? " " : "";
        pieces[t] = token_text(task, (int)ids[t]);
        length += strlen(gaps[t]) + strlen(pieces[t]);
    }
    char *text = arena_alloc(length, 1);
    size_t used = 0;
    for (int t = 0; t < N; t++) {
        used += (size_t)snprintf(text + used, length - used, "%s%s", gaps[t], pieces[t]);
    }
    return text;
}

char shade(float weight) {
    const char *levels = ".:-=+*#%@";   // 9 shades for (0, 1], SHADES_SPACED
    if (!(weight > 0.0f)) {
        return ' ';
    }
    // The ninth of (0, 1] it falls in; 1 itself (and more: an Inf) in the last. Compared as a
    // float first: converting a float past an int's range to int is undefined behaviour.
    int level = weight < 1.0f ? (int)(weight * 9.0f) : 8;
    return levels[level > 8 ? 8 : level];
}

const char *shades(const float *weights, int n) {
    char *text = arena_alloc((size_t)n + 1, 1);
    for (int i = 0; i < n; i++) {
        text[i] = shade(weights[i]);
    }
    text[n] = '\0';
    return text;
}

// Print `line` without its trailing blanks (a map's future keys are blank).
static void print_trimmed(char *line, size_t used) {
    while (used > 0 && line[used - 1] == ' ') {
        used -= 1;
    }
    printf("%.*s\n", (int)used, line);
}

void print_maps(const Task *task, const float *ids, const float *att, int heads, int N,
                int layer) {
    // The widest line: "layer L" (at most 17 characters), then a head's label, "  head h"
    // (at most 18 with an int's digits) padded to its map's N columns, for every head.
    size_t width = 24 + (size_t)heads * ((size_t)N + 18);
    char *line = arena_alloc(width, 1);
    size_t used = (size_t)snprintf(line, width, "layer %d", layer);
    for (int h = 0; h < heads; h++) {
        used += (size_t)snprintf(line + used, width - used, "%*shead %d%*s", h == 0 ? 3 : 2, "",
                                 h, N - 6 > 0 ? N - 6 : 0, "");
    }
    print_trimmed(line, used);
    used = (size_t)snprintf(line, width, "%10s", "");   // the keys' tokens above each map
    for (int h = 0; h < heads; h++) {
        for (int s = 0; s < N; s++) {
            line[used++] = token_text(task, (int)ids[s])[0];
        }
        used += (size_t)snprintf(line + used, width - used, "%s", h + 1 < heads ? "  " : "");
    }
    print_trimmed(line, used);
    for (int t = 0; t < N; t++) {   // query t: its weight on each key s, head after head
        used = (size_t)snprintf(line, width, "%7s %c ", "", token_text(task, (int)ids[t])[0]);
        for (int h = 0; h < heads; h++) {
            for (int s = 0; s < N; s++) {
                line[used++] = shade(att[((long)h * N + t) * N + s]);
            }
            used += (size_t)snprintf(line + used, width - used, "%s", h + 1 < heads ? "  " : "");
        }
        print_trimmed(line, used);
    }
}

void print_chart(const float *loss, const float *accuracy, int steps) {
    enum { WIDTH = 60, HEIGHT = 10 };
    float top = 0.0f;
    for (int s = 0; s < steps; s++) {
        top = fmaxf(top, loss[s]);
    }
    top = ceilf(top);
    char grid[HEIGHT][WIDTH];
    memset(grid, ' ', sizeof grid);
    int columns = steps < WIDTH ? steps : WIDTH;
    for (int x = 0; x < columns; x++) {   // column x: the mean of its steps
        int from = x * steps / columns, to = (x + 1) * steps / columns;
        double l = 0.0, a = 0.0;
        for (int s = from; s < to; s++) {
            l += loss[s];
            a += accuracy[s];
        }
        int row_loss = (int)lround(l / (to - from) / top * (HEIGHT - 1));
        int row_acc = (int)lround(a / (to - from) * (HEIGHT - 1));
        grid[HEIGHT - 1 - row_acc][x] = 'o';
        grid[HEIGHT - 1 - row_loss][x] = '*';
    }
    printf("loss *%*saccuracy o\n", columns + 1, "");
    for (int y = 0; y < HEIGHT; y++) {
        float at_loss = top * (float)(HEIGHT - 1 - y) / (HEIGHT - 1);
        float at_acc = (float)(HEIGHT - 1 - y) / (HEIGHT - 1);
        bool labelled = y == 0 || y == HEIGHT - 1;
        if (labelled) {
            printf("%5.2f |%.*s| %.2f\n", (double)at_loss, columns, grid[y], (double)at_acc);
        } else {
            printf("%5s |%.*s|\n", "", columns, grid[y]);
        }
    }
    printf("%5s  step 1%*d\n", "", columns > 7 ? columns - 5 : 2, steps);
}

int answer_position(const float *ids, int N, int t) {
    for (int s = 0; s < 2 * pairs(N); s += 2) {
        if (ids[s] == ids[t]) {
            return s + 1;
        }
    }
    return t;   // not a question
}

HeadFocus head_focus(const float *ids, const float *labels, const float *att, int N) {
    int asked = 0;
    HeadFocus focus = {0.0f, 0.0f};
    for (int t = 1; t < N; t++) {
        focus.previous += att[t * N + t - 1];
    }
    focus.previous /= (float)(N - 1);
    for (int t = 0; t < N; t++) {
        if ((int)labels[t] != IGNORE_INDEX) {
            focus.answer += att[t * N + answer_position(ids, N, t)];
            asked += 1;
        }
    }
    focus.answer /= (float)(asked > 0 ? asked : 1);
    return focus;
}
