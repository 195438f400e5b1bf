// show.c - lesson 16's printing: tokens, attention maps, the training chart, where each head
// looks, part 1's setup.
#include "show.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

// Room for the widest token: "k" or "v" and an int's digits and sign ("k-2147483648").
#define TOKEN_TEXT_MAX 16

const char *token_text(const Config *config, int id) {
    char *text = arena_alloc(TOKEN_TEXT_MAX, 1);
    int NV = config->vocab_size, keys = NV / 2;
    if (config->task == RECALL) {
        if (id < keys) {
            snprintf(text, TOKEN_TEXT_MAX, keys <= 26 ? "%c" : "k%d", keys <= 26 ? 'A' + id : id);
        } else {
            snprintf(text, TOKEN_TEXT_MAX, NV - keys <= 10 ? "%c" : "v%d",
                     NV - keys <= 10 ? '0' + id - keys : id - keys);
        }
    } else if (id == NV - 1) {
        snprintf(text, TOKEN_TEXT_MAX, "|");
    } else {
        const char *symbols = "0123456789abcdefghijklmnopqrstuvwxyz";
        snprintf(text, TOKEN_TEXT_MAX, NV - 1 <= 36 ? "%c" : "%d",
                 NV - 1 <= 36 ? symbols[id] : id);
    }
    return text;
}

const char *sequence_text(const Config *config, const float *ids) {
    int N = config->seq, questions = N / 8 > 1 ? N / 8 : 1, pairs = N / 2 - questions;
    const char **pieces = arena_alloc((size_t)N, sizeof *pieces);   // each token's text
    const char **gaps = arena_alloc((size_t)N, sizeof *gaps);       // and what comes before it
    size_t length = 1;   // the buffer is sized from what goes in it: the '\0', then each piece
    for (int t = 0; t < N; t++) {
        gaps[t] = "";
        if (t > 0 && config->task == RECALL) {
            gaps[t] = t == 2 * pairs ? " | " : t % 2 == 0 ? " " : "";
        } else if (t > 0) {
            gaps[t] = " ";
        }
        pieces[t] = token_text(config, (int)ids[t]);
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
    const char *shades = ".:-=+*#%@";   // 9 shades for (0, 1], SHADES_SPACED
    if (!(weight > 0.0f)) {
        return ' ';
    }
    // The ninth of (0, 1] it falls in; 1 itself (and more: an Inf) in the last. Compared as a
    // float first: converting a float past an int's range to int is undefined behaviour.
    int level = weight < 1.0f ? (int)(weight * 9.0f) : 8;
    return shades[level > 8 ? 8 : level];
}

// Print `line` without its trailing blanks (a map's future keys are blank).
static void print_trimmed(char *line, size_t used) {
    while (used > 0 && line[used - 1] == ' ') {
        used -= 1;
    }
    printf("%.*s\n", (int)used, line);
}

void print_maps(const Config *c, const float *ids, const float *att, int layer) {
    int N = c->seq, H = c->num_attention_heads;
    // The longest line: "layer 7" and, per head, "   head 12345" or N shades and 2 spaces.
    size_t width = 32 + (size_t)H * ((size_t)N + 24);
    char *line = arena_alloc(width, 1);
    size_t used = (size_t)snprintf(line, width, "layer %d", layer);
    for (int h = 0; h < H; h++) {
        used += (size_t)snprintf(line + used, width - used, "%*shead %d%*s", h == 0 ? 3 : 2, "",
                                 h, N - 6 > 0 ? N - 6 : 0, "");
    }
    print_trimmed(line, used);
    used = (size_t)snprintf(line, width, "%10s", "");   // the keys' tokens above each map
    for (int h = 0; h < H; h++) {
        for (int s = 0; s < N; s++) {
            line[used++] = token_text(c, (int)ids[s])[0];
        }
        used += (size_t)snprintf(line + used, width - used, "%s", h + 1 < H ? "  " : "");
    }
    print_trimmed(line, used);
    for (int t = 0; t < N; t++) {   // query t: its weight on each key s, head after head
        used = (size_t)snprintf(line, width, "%7s %c ", "", token_text(c, (int)ids[t])[0]);
        for (int h = 0; h < H; h++) {
            for (int s = 0; s < N; s++) {
                line[used++] = shade(att[((long)h * N + t) * N + s]);
            }
            used += (size_t)snprintf(line + used, width - used, "%s", h + 1 < H ? "  " : "");
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

HeadFocus head_focus(const Config *c, const float *ids, const float *labels,
                     const float *att) {
    int N = c->seq, asked = 0;
    HeadFocus focus = {0.0f, 0.0f};
    for (int t = 1; t < N; t++) {
        focus.previous += att[t * N + t - 1];
    }
    focus.previous /= (float)(N - 1);
    for (int t = 0; t < N; t++) {
        if ((int)labels[t] == IGNORE_INDEX) {
            continue;
        }
        int source = 2 * (N / 2) - 1 - t;      // reverse: the token to copy
        if (c->task == RECALL) {                // recall: the value after the key asked
            for (int s = 0; s + 1 < t; s += 2) {
                source = ids[s] == ids[t] ? s + 1 : source;
            }
        }
        focus.answer += att[t * N + source];
        asked += 1;
    }
    focus.answer /= (float)(asked > 0 ? asked : 1);
    return focus;
}

void print_setup(const Config *c, const Settings *s, const AdamW *opt, const char *example) {
    int N = c->seq, NV = c->vocab_size, questions = N / 8 > 1 ? N / 8 : 1;
    if (c->task == RECALL) {
        printf("task recall: %d key/value pairs, then %d questions: a key again, whose value "
               "comes next\n  keys %s..%s are tokens 0..%d, values %s..%s are %d..%d, %d "
               "tokens a sequence; loss at the questions\n", N / 2 - questions, questions,
               token_text(c, 0), token_text(c, NV / 2 - 1), NV / 2 - 1, token_text(c, NV / 2),
               token_text(c, NV - 1), NV / 2, NV - 1, N);
    } else {
        printf("task reverse: %d tokens (%s..%s, tokens 0..%d), the separator | (token %d), "
               "then the same\n  tokens in reverse order; the loss at the %d positions that "
               "write them\n", N / 2, token_text(c, 0), token_text(c, NV - 2), NV - 2, NV - 1,
               N / 2);
    }
    long count = 0;
    for (int i = 0; i < opt->n_params; i++) {
        count += opt->params[i].numel;
    }
    printf("model = TinyLlama(config): %d layers, hidden_size %d, %d heads of %d (%d key/value "
           "heads),\n  intermediate_size %d: %ld parameters, drawn in this order:\n",
           c->num_hidden_layers, c->hidden_size, c->num_attention_heads, c->head_dim,
           c->num_key_value_heads, c->intermediate_size, count);
    printf("    embed_tokens.weight %s: normal_(0, 1)\n    each layer's", shape_str(
               opt->params[0].shape, SIZES_TUPLE));
    for (int i = 1; i <= 7; i++) {
        const char *name = strrchr(opt->params[i].name, '.');   // ".weight"
        const char *start = name - 1;
        while (start > opt->params[i].name && start[-1] != '.') {
            start -= 1;
        }
        printf("%s %.*s %s", i == 1 ? "" : i == 5 ? ",\n     " : ",", (int)(name - start), start,
               shape_str(opt->params[i].shape, SIZES_TUPLE));
    }
    printf(": kaiming_uniform_\n    lm_head.weight %s: kaiming_uniform_; the RMSNorm weights "
           "are ones\n", shape_str(opt->params[opt->n_params - 1].shape, SIZES_TUPLE));
    printf("example = make_batch(1): %s\n", example);
    printf("opt = AdamW(lr=%g, betas=(%g, %g), eps=%g, weight_decay=%g); clip_grad_norm_(max_norm="
           "%g)\n", s->lr, s->beta1, s->beta2, s->eps, s->weight_decay,
           s->clip > 0 ? s->clip : INFINITY);
    printf("  the learning rate: ");   // adamw.c's learning_rate, in words
    if (s->steps == 0) {
        printf("none, no step is taken (--steps 0)\n");
    } else if (s->warmup >= s->steps) {
        printf("linear warmup to %g at step %d; the run ends at step %d, at %g\n", s->lr,
               s->warmup, s->steps, learning_rate(s->steps, s->steps, s->warmup, s->lr));
    } else if (s->warmup == 0) {
        printf("no warmup, a cosine from %g down to %g at step %d\n", s->lr, s->lr * 0.1,
               s->steps);
    } else {
        printf("linear warmup to %g at step %d, then a cosine down to %g at step %d\n", s->lr,
               s->warmup, s->lr * 0.1, s->steps);
    }
}

void print_focus_key(const Config *c) {
    printf("under each head: how much its queries look at the token just before them, and at the\n"
           "questions, at ");
    if (c->task == RECALL) {
        printf("the value that answers them (the token after the key asked).\n"
               "A head of layer 0 that looks back one token lets each value take in its key; a\n"
               "head of layer 1 that looks from a question to that value is an induction head:\n"
               "it finds where the key came before, and copies what followed it.\n");
    } else {
        printf("the token they must write (position N - 1 - t).\n"
               "The answer at t is the input at N - 1 - t: the map of a head that reads it has\n"
               "an anti-diagonal in the rows after the separator.\n");
    }
}
