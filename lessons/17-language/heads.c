// heads.c - what each head learned to look at: three measures and the maps of a sentence.
//
// A head's attention weights say, for each query, how much of each earlier token it reads.
// On text, three patterns have names (Elhage et al., "A Mathematical Framework for
// Transformer Circuits", 2021; Olsson et al., "In-context Learning and Induction Heads",
// 2022), and each is a number here, measured at every evaluation as training goes:
//   previous token   weight on the token just before: a head that hands each position its
//                    neighbour, the bigram's "what came before me"
//   last boundary    weight on the last space or line break before the query: where the
//                    current word began
//   induction        on a random string seen twice, from a token of the second copy, the
//                    weight on the token that followed it in the first copy: "the last
//                    time this came, what came next?" Random tokens carry no meaning, so
//                    only a head that finds the earlier copy can predict them; the loss on
//                    the second copy falls when it forms. It needs two layers: a
//                    previous-token head below writes into each position which token
//                    preceded it, and the induction head's query (the current token) finds
//                    the key that says "preceded by me".
// Every sum here adds floats one after the other, in the order of the loops; the page's
// script adds them in the same order.
#include "heads.h"

#include <stdio.h>
#include <string.h>

#include "layers.h"

// --- the measures -------------------------------------------------------------------------------

static bool boundary_token(const Tokenizer *tok, int id) {
    for (int i = 0; i < tok->length[id]; i++) {
        if (tok->bytes[id][i] == ' ' || tok->bytes[id][i] == '\n') {
            return true;
        }
    }
    return false;
}

void measure_windows(HeadMeasures *m, const Activations *acts, const float *ids,
                     const Tokenizer *tok, const Config *c, int B) {
    int N = c->seq, L = c->num_hidden_layers, H = c->num_attention_heads;
    for (int l = 0; l < L; l++) {
        for (int h = 0; h < H; h++) {
            float previous = 0.0f, boundary = 0.0f;
            int counted = 0;
            for (int b = 0; b < B; b++) {
                const float *att = acts->layers[l].att + ((long)b * H + h) * N * N;   // (N, N)
                int last = -1;   // the last boundary token before t
                for (int t = 0; t < N; t++) {
                    if (t >= 1) {
                        previous += att[t * N + t - 1];
                    }
                    if (last >= 0) {
                        boundary += att[t * N + last];
                        counted += 1;
                    }
                    last = boundary_token(tok, (int)ids[b * N + t]) ? t : last;
                }
            }
            m->previous[l * H + h] = previous / (float)(B * (N - 1));
            m->boundary[l * H + h] = counted > 0 ? boundary / (float)counted : 0.0f;
        }
    }
}

void measure_induction(HeadMeasures *m, Activations *one, const Model *model,
                       const int *repeated) {
    const Config *c = &model->config;
    int N = c->seq, P = N / 2, NV = c->vocab_size, L = c->num_hidden_layers;
    int H = c->num_attention_heads, asked;
    size_t mark = arena_mark();
    float *ids = floats(2L * P);                       // (2P) the string, then again
    Tensor *labels = zeros(shape1(P - 1));             // (P-1) tokens 1 .. P-1 of the string
    for (int t = 0; t < 2 * P; t++) {
        ids[t] = (float)repeated[t % P];
    }
    for (int t = 0; t < P - 1; t++) {
        labels->data[t] = (float)repeated[t + 1];
    }
    model_forward(one, model, ids, 1, 0, 2 * P);
    // F.cross_entropy(logits[0, :P-1], r[1:]) and F.cross_entropy(logits[0, P:2P-1], r[1:])
    m->first = cross_entropy_forward(one->log_probs, &asked, one->logits, labels, NV);
    m->second = cross_entropy_forward(one->log_probs + (long)P * NV, &asked,
                                      one->logits + (long)P * NV, labels, NV);
    for (int l = 0; l < L; l++) {
        for (int h = 0; h < H; h++) {
            const float *att = one->layers[l].att + (long)h * N * N;   // (2P, 2P), packed
            float sum = 0.0f;
            for (int t = P; t < 2 * P; t++) {   // token t's earlier copy is at t - P
                sum += att[t * 2 * P + t - P + 1];
            }
            m->induction[l * H + h] = sum / (float)P;
        }
    }
    arena_release(mark);
}

// --- printing ------------------------------------------------------------------------------------

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

void print_measures(const HeadMeasures *measures, const int *eval_step, int evals, int L,
                    int H) {
    int shown[8], n = evals < 8 ? evals : 8;
    for (int i = 0; i < n; i++) {   // up to 8 evaluations, spread evenly, the last included
        shown[i] = n > 1 ? i * (evals - 1) / (n - 1) : 0;
    }
    static const char induction[] = "the share on the token after the query's earlier copy "
                                    "(induction, a random string twice)";
    const char *titles[3] = {
        "the share of attention on the token just before the query (previous token)",
        "the share on the last space or line break before the query (last boundary)", induction};
    printf("each head, measured at the evaluations: the first two on the first %s,\n"
           "the third on the random string drawn at the start, twice in a row\n",
           "validation batch");
    for (int k = 0; k < 3; k++) {
        printf("%s\n  %-15s", titles[k], "after step");
        for (int i = 0; i < n; i++) {
            printf("%7d", eval_step[shown[i]]);
        }
        printf("\n");
        for (int l = 0; l < L; l++) {
            for (int h = 0; h < H; h++) {
                printf("  layer %d head %d ", l, h);
                for (int i = 0; i < n; i++) {
                    const HeadMeasures *m = &measures[shown[i]];
                    const float *value = k == 0 ? m->previous : k == 1 ? m->boundary
                                                                       : m->induction;
                    printf("%7.3f", (double)value[l * H + h]);
                }
                printf("\n");
            }
        }
    }
}

// Each token's label in the maps: its first character, visible (tokenizer.h), padded to
// `cell` columns (an arena string).
static const char *label_of(const Tokenizer *tok, int id, int cell) {
    const char *text = token_visible(tok, id);
    int length = utf8_sequence((const unsigned char *)text, (long)strlen(text)), code = '?';
    if (length > 0) {
        utf8_decode(&code, (const unsigned char *)text, length);
    }
    length = length > 0 ? length : 1;
    char *label = arena_alloc(8, 1);
    memcpy(label, text, (size_t)length);
    if (columns_of(code) < cell) {
        label[length] = ' ';
    }
    return label;
}

// The columns a key takes in the maps: 2 when a label is a wide character, else 1.
int map_cell(const Tokenizer *tok, const int *sentence, int n) {
    int cell = 1;
    for (int t = 0; t < n; t++) {
        const char *text = token_visible(tok, sentence[t]);
        int length = utf8_sequence((const unsigned char *)text, (long)strlen(text)), code = '?';
        if (length > 0) {
            utf8_decode(&code, (const unsigned char *)text, length);
        }
        cell = columns_of(code) > cell ? columns_of(code) : cell;
    }
    return cell;
}

void print_sentence_maps(const Tokenizer *tok, const int *sentence, int n, const float *maps,
                         int L, int H) {
    int cell = map_cell(tok, sentence, n);
    const char **labels = arena_alloc((size_t)n, sizeof(char *));
    for (int t = 0; t < n; t++) {
        labels[t] = label_of(tok, sentence[t], cell);
    }
    int width = n * cell > 16 ? n * cell : 16;      // a head's block: its map, or its name
    int per_row = (100 - 10 + 2) / (width + 2);
    per_row = per_row < 1 ? 1 : per_row;
    char *line = arena_alloc((size_t)(10 + per_row * (width + 2) * 2) + 8, 1);
    printf("the sentence's maps after training: row: the query's token, column: the key's; "
           "darker:\n  more weight (blank for 0, then %s for each ninth of (0, 1])\n",
           SHADES_SPACED);
    for (int first = 0; first < L * H; first += per_row) {
        int last = first + per_row < L * H ? first + per_row : L * H;
        printf("\n%10s", "");
        for (int k = first; k < last; k++) {   // the heads' names
            char name[40];
            snprintf(name, sizeof name, "layer %d head %d", k / H, k % H);
            printf("%-*s", k + 1 < last ? width + 2 : 0, name);
        }
        printf("\n%10s", "");
        for (int k = first; k < last; k++) {   // the keys' tokens
            for (int s = 0; s < n; s++) {
                printf("%s", labels[s]);
            }
            printf("%*s", k + 1 < last ? width + 2 - n * cell : 0, "");
        }
        printf("\n");
        for (int t = 0; t < n; t++) {          // query t's row of every map
            int used = sprintf(line, "%8s%s ", "", labels[t]);
            for (int k = first; k < last; k++) {
                const float *att = maps + (long)k * n * n + (long)t * n;
                for (int s = 0; s < n * cell; s++) {
                    line[used++] = shade(att[s / cell]);
                }
                for (int pad = n * cell; k + 1 < last && pad < width + 2; pad++) {
                    line[used++] = ' ';
                }
            }
            while (used > 0 && line[used - 1] == ' ') {
                used -= 1;   // a map's future keys are blank
            }
            printf("%.*s\n", used, line);
        }
    }
    printf("\nwhere each query looks most (the key of its largest weight), head by head:\n");
    printf("  %-16s", "the sentence");
    for (int t = 0; t < n; t++) {
        printf("%s", labels[t]);
    }
    printf("\n");
    for (int k = 0; k < L * H; k++) {
        printf("  layer %d head %d  ", k / H, k % H);
        for (int t = 0; t < n; t++) {
            const float *att = maps + (long)k * n * n + (long)t * n;
            int best = 0;
            for (int s = 1; s <= t; s++) {
                best = att[s] > att[best] ? s : best;
            }
            printf("%s", labels[best]);
        }
        printf("\n");
    }
}
