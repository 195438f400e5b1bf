// heads.h - what each head learned to look at, measured and drawn (heads.c).
#ifndef HEADS17_H
#define HEADS17_H

#include "language.h"
#include "model.h"
#include "tokenizer.h"

// The share of attention each head puts, over B windows of text whose forward left `acts`
// (ids (B, N) their tokens), on the token just before the query, and on the last token
// before the query that holds a space or a line break: m->previous and m->boundary.
void measure_windows(HeadMeasures *m, const Activations *acts, const float *ids,
                     const Tokenizer *tok, const Config *config, int B);
// The induction test: `repeated` (N/2 random tokens) twice in a row, run through `one`.
// m->first and m->second: the loss on predicting each copy's tokens 1 .. N/2-1; an
// induction head makes the second much lower, since the first copy says what comes next.
// m->induction: each head's share of attention, from each token of the second copy, on the
// token after that token's place in the first copy.
void measure_induction(HeadMeasures *m, Activations *one, const Model *model,
                       const int *repeated);

// The three measures of every head at (up to 8 of) the evaluations.
void print_measures(const HeadMeasures *measures, const int *eval_step, int evals, int L,
                    int H);
// The maps (L, H, n, n) of a sentence of n tokens, every head, each query's row labelled
// with its token, and where each query looks most.
void print_sentence_maps(const Tokenizer *tok, const int *sentence, int n, const float *maps,
                         int L, int H);

// The columns a key takes in those maps: 2 when a token's label is a wide character.
int map_cell(const Tokenizer *tok, const int *sentence, int n);
// A weight as one character: ' ' for 0, then . : - = + * # % @ for the ninths of (0, 1].
#define SHADES_SPACED ". : - = + * # % @"
char shade(float weight);

#endif
