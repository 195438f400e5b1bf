// llama_print.h - what lesson 15 prints and measures with, so that llama_block.c keeps the
// layer and what its parts show: a part's heading, a tensor's first numbers, a score, and
// the three tables that count rather than compute (parts 3, 5 and 9). Sizes as in
// llama_block.c's legend.
#ifndef LLAMA_PRINT_H
#define LLAMA_PRINT_H

#include "attention.h"

// "\n-- part N: what (flags) --", the heading every part after the first opens with.
void part(int number, const char *what, const char *flags);

// t[0, ..., 0, :count], fewer if t is shorter: a view, to print.
const Tensor *first(const Tensor *t, int count);

// a . b / sqrt(D) of two vectors (D,), the products summed in order: a score, to print.
float score(const Tensor *a, const Tensor *b);

// Part 3: lesson 12's relative_key table (BERT's 512 positions) against RoPE, for N tokens.
void print_relative_costs(int N, int H, int KV, int D);

// Part 5: positions per turn, 2 pi / theta_i, of up to 8 pairs from first to last (of
// `half`), one column per base; inv_freq[b] (half,) is base b's theta.
void print_periods(const int *bases, const Tensor *const *inv_freq, int n_bases, int half);

// Part 9: parameters (attention, MLP, norms) and multiply-adds over N tokens of ViT's block,
// BERT's layer and the Llama layer at the same width C, with the formulas under the table.
void print_block_costs(int N, int C, int H, int KV, int D, int F);

#endif
