// show.c - lesson 17's printing: the text and its tokens, the model, windows, written text,
// the loss chart.
#include "show.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

// --- text as it prints ---------------------------------------------------------------------

// The columns UTF-8 text takes (a wide character two; a byte that is not UTF-8 one).
static int text_columns(const char *s) {
    int columns = 0;
    long n = (long)strlen(s);
    for (long i = 0; i < n;) {
        int length = utf8_sequence((const unsigned char *)s + i, n - i), code = '?';
        if (length > 0) {
            utf8_decode(&code, (const unsigned char *)s + i, length);
        }
        columns += columns_of(code);
        i += length > 0 ? length : 1;
    }
    return columns;
}

const char *padded(const char *s, int width) {
    int missing = width - text_columns(s);
    size_t n = strlen(s);
    char *out = arena_alloc(n + (size_t)(missing > 0 ? missing : 0) + 1, 1);
    memcpy(out, s, n);
    for (int i = 0; i < missing; i++) {
        out[n + (size_t)i] = ' ';
    }
    return out;
}

const char *quoted(const Tokenizer *tok, int id) {
    const char *text = token_visible(tok, id);
    char *out = arena_alloc(strlen(text) + 3, 1);
    sprintf(out, "'%s'", text);
    return out;
}

// The text of n tokens as it prints: decoded, each ill-formed piece of UTF-8 replaced by
// U+FFFD (Python's errors="replace"), and the control characters but the line break made
// visible: a tab as '→', the others as \xNN (*length: its bytes; an arena string).
static char *decoded(long *length, const Tokenizer *tok, const int *ids, long n) {
    unsigned char *bytes = arena_alloc((size_t)decoded_length(tok, ids, n) + 1, 1);
    long used = decode(bytes, tok, ids, n), replaced;
    const char *text = utf8_replaced(&replaced, bytes, used);
    char *out = arena_alloc((size_t)replaced * 4 + 1, 1);
    long k = 0;
    for (long i = 0; i < replaced; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\t') {
            memcpy(out + k, "\xE2\x86\x92", 3);
            k += 3;
        } else if ((c < 0x20 && c != '\n') || c == 0x7F) {
            k += sprintf(out + k, "\\x%02x", c);
        } else {
            out[k++] = (char)c;
        }
    }
    out[k] = '\0';
    *length = k;
    return out;
}

const char *inline_text(const Tokenizer *tok, const int *ids, long n) {
    long length;
    const char *text = decoded(&length, tok, ids, n);
    char *out = arena_alloc((size_t)length * 3 + 1, 1);
    long used = 0;
    for (long i = 0; i < length; i++) {
        if (text[i] == '\n') {
            memcpy(out + used, "\xE2\x86\xB5", 3);   // ↵
            used += 3;
        } else {
            out[used++] = text[i];
        }
    }
    out[used] = '\0';
    return out;
}

// `text` cut to at most `columns` columns, "..." ending it when something was cut.
static const char *clipped(const char *text, int columns) {
    if (text_columns(text) <= columns) {
        return text;
    }
    long n = (long)strlen(text), used = 0;
    char *out = arena_alloc((size_t)n + 4, 1);
    int taken = 0;
    for (long i = 0; i < n;) {
        int length = utf8_sequence((const unsigned char *)text + i, n - i), code = '?';
        if (length > 0) {
            utf8_decode(&code, (const unsigned char *)text + i, length);
        }
        length = length > 0 ? length : 1;
        if (taken + columns_of(code) > columns - 3) {
            break;
        }
        memcpy(out + used, text + i, (size_t)length);
        used += length;
        taken += columns_of(code);
        i += length;
    }
    memcpy(out + used, "...", 4);
    return out;
}

// One line of written text: two spaces, then the line without blanks at its end (nothing
// at all for an empty one).
static void print_line(const char *line, long n) {
    while (n > 0 && line[n - 1] == ' ') {
        n -= 1;
    }
    printf("%s%.*s\n", n > 0 ? "  " : "", (int)n, line);
}

// Written text is printed as it is decoded, a token at a time, so that what printing holds
// does not grow with the text (a sample of --new 65536 tokens): the bytes of a character a
// later token may complete (at most 3), and the line so far (at most WRAP columns, of at most
// 4 bytes each). It prints what decoded() makes of the whole text, cut into lines.
typedef struct {
    unsigned char pending[4];   // the start of a character not yet whole
    int n_pending;
    char line[4 * WRAP + 4];    // the line so far, and its columns
    int used, columns;
} Wrapper;

// One character of the text as it prints (well-formed UTF-8, k bytes) onto the line: a line
// break ends the line; a character the line has no room for starts the next one.
static void wrap_character(Wrapper *w, const char *c, int k) {
    if (c[0] == '\n') {
        print_line(w->line, w->used);
        w->used = w->columns = 0;
        return;
    }
    int code;
    utf8_decode(&code, (const unsigned char *)c, k);
    if (w->columns + columns_of(code) > WRAP) {   // full: cut the line here
        print_line(w->line, w->used);
        w->used = w->columns = 0;
    }
    memcpy(w->line + w->used, c, (size_t)k);
    w->used += k;
    w->columns += columns_of(code);
}

// One character of the decoded text (k bytes), as decoded() shows it: a tab as '→', the
// other control characters but the line break as \xNN, one character at a time.
static void show_character(Wrapper *w, const unsigned char *c, int k) {
    if (k == 1 && c[0] == '\t') {
        wrap_character(w, "\xE2\x86\x92", 3);
    } else if (k == 1 && ((c[0] < 0x20 && c[0] != '\n') || c[0] == 0x7F)) {
        char escaped[5];
        snprintf(escaped, sizeof escaped, "\\x%02x", c[0]);
        for (int i = 0; i < 4; i++) {
            wrap_character(w, escaped + i, 1);
        }
    } else {
        wrap_character(w, (const char *)c, k);
    }
}

// The pending bytes read as utf8_replaced reads them: a whole character is shown, an
// ill-formed piece becomes U+FFFD; a well-formed start that the bytes so far end is kept
// for the next token's bytes, unless the text ends (`last`).
static void take_pending(Wrapper *w, bool last) {
    while (w->n_pending > 0) {
        bool whole;
        int k = utf8_prefix(&whole, w->pending, w->n_pending);
        if (!whole && k == w->n_pending && !last) {
            return;   // the next byte may complete it
        }
        show_character(w, whole ? w->pending : (const unsigned char *)"\xEF\xBF\xBD",
                       whole ? k : 3);
        k = k > 0 ? k : 1;
        w->n_pending -= k;
        memmove(w->pending, w->pending + k, (size_t)w->n_pending);
    }
}

void print_wrapped(const Tokenizer *tok, const int *ids, long n) {
    Wrapper w = {.n_pending = 0, .used = 0, .columns = 0};
    for (long i = 0; i < n; i++) {
        for (int j = 0; j < tok->length[ids[i]]; j++) {
            w.pending[w.n_pending++] = tok->bytes[ids[i]][j];
            take_pending(&w, false);
        }
    }
    take_pending(&w, true);
    print_line(w.line, w.used);
}

void print_window(const char *label, const Tokenizer *tok, const float *ids, int n) {
    int *tokens = arena_alloc((size_t)n, sizeof(int));
    for (int t = 0; t < n; t++) {
        tokens[t] = (int)ids[t];
    }
    printf("  %s = \"%s\"\n", label, clipped(inline_text(tok, tokens, n), 80));
}

// --- part 1 ----------------------------------------------------------------------------------

// The vocabulary's first 24 and last 8 tokens, visible, in quotes.
static void print_vocabulary(const Tokenizer *tok) {
    int NV = tok->vocab_size, first = NV < 24 ? NV : 24;
    printf("  the first %d:", first);
    for (int i = 0; i < first; i++) {
        printf(" %s", token_visible(tok, i));
    }
    printf("\n");
    if (NV > first) {
        int last = NV - first < 8 ? NV - first : 8;
        printf("  the last %d:", last);
        for (int i = NV - last; i < NV; i++) {
            printf(" %s", token_visible(tok, i));
        }
        printf("\n");
    }
}

void print_text_and_tokens(const Settings *s, const Text *text, const Data *d) {
    const Tokenizer *tok = &d->tok;
    printf("the text: %s, %ld bytes of UTF-8, %ld characters\n", s->text_file, text->n_bytes,
           text->n_chars);
    printf("  train = text[:%ld] (the first 90%%), val = text[%ld:] (the last 10%%, never "
           "trained on)\n", text->split_chars, text->split_chars);
    if (s->load_dir != NULL) {
        printf("tokenizer: %s/tokenizer.txt's, %s, %d tokens\n", s->load_dir,
               tok->kind == CHARS ? "characters" : "byte pairs", tok->vocab_size);
    } else if (tok->kind == CHARS) {
        printf("tokenizer: characters, as nanoGPT's: chars = sorted(set(text)), %d of them\n",
               tok->vocab_size);
    } else {
        printf("tokenizer: byte pairs learned from the training split: 256 bytes + %d merges "
               "= %d tokens\n", tok->n_merges, tok->vocab_size);
    }
    if (tok->kind == CHARS) {
        print_vocabulary(tok);
    } else if (s->load_dir == NULL) {
        int shown = tok->n_merges < 10 ? tok->n_merges : 10;
        printf("  the first %d merges (each the most frequent pair then; the first seen, on a "
               "tie):\n", shown);
        for (int m = 0; m < shown; m++) {
            printf("    %d = %s + %s -> %s  (%d times)\n", 256 + m,
                   quoted(tok, tok->merges[m][0]), quoted(tok, tok->merges[m][1]),
                   quoted(tok, 256 + m), tok->merge_counts[m]);
        }
    }
    long val_bytes = text->n_bytes - text->split_bytes;
    printf("  train: %ld tokens, val: %ld tokens; %.2f bytes a token\n", d->n_train, d->n_val,
           (double)text->split_bytes / (double)d->n_train);
    if (tok->kind == BPE) {
        const char *word = "\xE6\xB3\xA8\xE6\x84\x8F\xE5\x8A\x9B";   // 注意力, attention
        int ids[9], missing;
        long n = encode(ids, &missing, tok, (const unsigned char *)word, 9);
        printf("  %s (attention, 9 bytes) is %ld token%s:", word, n, n == 1 ? "" : "s");
        for (long i = 0; i < n; i++) {
            printf(" %s", quoted(tok, ids[i]));
        }
        printf("\n");
    }
    unsigned char *back = arena_alloc((size_t)decoded_length(tok, d->val, d->n_val) + 1, 1);
    long n_back = decode(back, tok, d->val, d->n_val);
    bool same = n_back == val_bytes && memcmp(back, text->bytes + text->split_bytes,
                                              (size_t)val_bytes) == 0;
    printf("  decode(encode(val)) %s its %ld bytes\n", same ? "gives back every one of"
           : "DIFFERS from", val_bytes);
}

void print_model(const Config *c, const AdamW *opt, const Settings *s) {
    long count = 0;
    for (int i = 0; i < opt->n_params; i++) {
        count += opt->params[i].numel;
    }
    printf("model = TinyLlama(config), lesson 16's: %d layers, hidden_size %d, %d heads of %d "
           "(%d key/value\n  heads), intermediate_size %d, vocab_size %d: %ld parameters, "
           "drawn in this order:\n", c->num_hidden_layers, c->hidden_size,
           c->num_attention_heads, c->head_dim, c->num_key_value_heads, c->intermediate_size,
           c->vocab_size, count);
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
    printf("  then repeated = train[torch.randint(len(train), (%d,))]: %d tokens drawn at random "
           "from\n  the training split, the string part 3 repeats\n", c->seq / 2, c->seq / 2);
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

// --- the loss chart -------------------------------------------------------------------------

void print_loss_chart(const float *loss, int steps, const int *eval_step, const float *eval_val,
                      int evals) {
    enum { WIDTH = 60, HEIGHT = 10 };
    float top = 0.0f;
    for (int s = 0; s < steps; s++) {
        top = fmaxf(top, loss[s]);
    }
    for (int e = 0; e < evals; e++) {
        top = fmaxf(top, eval_val[e]);
    }
    top = ceilf(top);
    char grid[HEIGHT][WIDTH];
    memset(grid, ' ', sizeof grid);
    int columns = steps < WIDTH ? steps : WIDTH;
    for (int x = 0; x < columns; x++) {   // column x: the mean of its steps' losses
        int from = x * steps / columns, to = (x + 1) * steps / columns;
        double sum = 0.0;
        for (int s = from; s < to; s++) {
            sum += loss[s];
        }
        grid[HEIGHT - 1 - (int)lround(sum / (to - from) / top * (HEIGHT - 1))][x] = '*';
    }
    for (int e = 0; e < evals; e++) {     // evaluation e, after step eval_step[e], at its column
        int x = eval_step[e] > 0 ? (eval_step[e] - 1) * columns / steps : 0;
        grid[HEIGHT - 1 - (int)lround((double)eval_val[e] / top * (HEIGHT - 1))][x] = 'o';
    }
    printf("loss: * the training batch's, o the validation windows'\n");
    for (int y = 0; y < HEIGHT; y++) {
        float at = top * (float)(HEIGHT - 1 - y) / (HEIGHT - 1);
        if (y == 0 || y == HEIGHT - 1) {
            printf("%5.2f |%.*s|\n", (double)at, columns, grid[y]);
        } else {
            printf("%5s |%.*s|\n", "", columns, grid[y]);
        }
    }
    printf("%5s  step 1%*d\n", "", columns > 7 ? columns - 5 : 2, steps);
}
