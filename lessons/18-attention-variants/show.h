// show.h - how lesson 18 prints what it computed: tokens as text, attention maps and rows as
// shades, the loss as a chart, where each head looks (show.c; lesson 16's, for recall at any
// length).
#ifndef SHOW18_H
#define SHOW18_H

#include "model.h"

// The text of token `id`: keys as letters A, B, ... (k0, k1, ... past 26), values as digits
// 0, 1, ... (v0, v1, ... past 10). An arena string.
const char *token_text(const Task *task, int id);
// A sequence of N tokens as text: "A3 C1 F6 | C1 D7", the questions after the bar.
const char *sequence_text(const Task *task, const float *ids, int N);
// A weight as one character: ' ' for 0, then . : - = + * # % @ for the ninths of (0, 1]
// ('.' below 1/9, ..., '@' from 8/9 to 1).
#define SHADES_SPACED ". : - = + * # % @"
char shade(float weight);
// n weights as n shades (an arena string).
const char *shades(const float *weights, int n);

// The maps of `heads` heads of one layer, side by side: row t is query t, column s key s,
// each labelled with its token's first character. att is (heads, N, N).
void print_maps(const Task *task, const float *ids, const float *att, int heads, int N,
                int layer);

// The loss (left scale) and accuracy (right scale) of every step, as a text chart.
void print_chart(const float *loss, const float *accuracy, int steps);

// Where a head looks on one sequence: the mean weight its queries put on the token just
// before them, and at the questions, on the value that answers them.
typedef struct {
    float previous;   // mean over t >= 1 of att[t][t-1]
    float answer;     // mean over the asked positions of the weight on the answer's value
} HeadFocus;
HeadFocus head_focus(const float *ids, const float *labels, const float *att, int N);
// The position of the value that answers the question at t of a sequence of N tokens: the
// token after the key asked, among the pairs.
int answer_position(const float *ids, int N, int t);

#endif
