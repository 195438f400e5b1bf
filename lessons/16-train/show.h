// show.h - how lesson 16 prints what it computed: tokens as text, attention maps as shades,
// the loss and accuracy as a chart, what each head attends to (show.c).
#ifndef SHOW16_H
#define SHOW16_H

#include "adamw.h"
#include "model.h"

// The text of token `id`: recall's keys as letters A, B, ... and values as digits 0, 1, ...;
// reverse's symbols as 0-9 then a-z and its separator as '|' (numbers when there are more
// than one character can name). An arena string.
const char *token_text(const Config *config, int id);
// A sequence of N token ids as text: "A3 C1 F6 | C1 D7" (recall), "3 1 4 | 4 1 3" (reverse).
const char *sequence_text(const Config *config, const float *ids);
// A weight as one character: ' ' for 0, then . : - = + * # % @ for the ninths of (0, 1]
// ('.' below 1/9, ..., '@' from 8/9 to 1). Part 4 prints this key.
#define SHADES_SPACED ". : - = + * # % @"
char shade(float weight);

// The maps of every head of one layer, side by side: row t is query t, column s key s,
// each labelled with its token. att is (H, N, N).
void print_maps(const Config *config, const float *ids, const float *att, int layer);

// The loss (left scale) and accuracy (right scale) of every step, as a text chart.
void print_chart(const float *loss, const float *accuracy, int steps);

// Where head h of a layer looks, measured on the example: the mean weight its queries put
// on the token just before them, and at the positions where an answer is asked, on the token
// that answers it (recall: the value after the key asked; reverse: the token to copy).
typedef struct {
    float previous;   // mean over t >= 1 of att[t][t-1]
    float answer;     // mean over the asked positions of the weight on the answer's source
} HeadFocus;
HeadFocus head_focus(const Config *config, const float *ids, const float *labels,
                     const float *att_head);

// Part 1's opening: the task, the model and its draws, the example, the optimizer.
void print_setup(const Config *config, const Settings *settings, const AdamW *opt,
                 const char *example);
// What the two numbers under each head of part 4 measure, and what they mean for the task.
void print_focus_key(const Config *config);

#endif
