// show.h - how lesson 17 prints what it computed: the text and its tokens, the model, a
// window, text a model wrote, the losses as a chart (show.c).
#ifndef SHOW17_H
#define SHOW17_H

#include "adamw.h"
#include "language.h"
#include "tokenizer.h"

// s followed by spaces up to `width` columns (a wide character takes two): what Python's
// f"{s:<width}" does for text of narrow characters. An arena string.
const char *padded(const char *s, int width);
// Token id as 'text', visible() inside quotes (an arena string).
const char *quoted(const Tokenizer *tok, int id);
// The text of n tokens on one line: decoded, ill-formed UTF-8 replaced (as Python's
// errors="replace"), a line break shown as '↵', a tab as '→', other control characters as
// \xNN. An arena string.
const char *inline_text(const Tokenizer *tok, const int *ids, long n);
// The text of n tokens as it reads: decoded and replaced as inline_text's, but for its line
// breaks; each line indented by two spaces and cut every WRAP columns, so that no printed
// line passes 100. Printed as it is decoded, a token at a time: it holds no copy of the text.
#define WRAP 96
void print_wrapped(const Tokenizer *tok, const int *ids, long n);
// A window of a batch (n token ids as floats), labelled: `label = "text"` with its tokens.
void print_window(const char *label, const Tokenizer *tok, const float *ids, int n);

// Part 1's opening: the text, the split, the tokenizer and what it does to the text.
void print_text_and_tokens(const Settings *s, const Text *text, const Data *data);
// The model and the order of its draws, and the optimizer.
void print_model(const Config *config, const AdamW *opt, const Settings *s);

// The training loss of every step (*) and the validation loss of every evaluation (o), as a
// text chart.
void print_loss_chart(const float *loss, int steps, const int *eval_step, const float *eval_val,
                      int evals);

#endif
