// positions.h - how a model knows where each token is: the five schemes of --positions, each
// forward beside its backward (positions.c). Size letters as in model.h.
#ifndef POSITIONS18_H
#define POSITIONS18_H

#include "model.h"

// cos and sin (P, D/2) of t * theta_i, theta_i = base^(-2i/D): RoPE's angles (lesson 16), and
// with D = C the sinusoidal table's.
void angle_table(float *cos_t, float *sin_t, int P, int D, int base);

// RoPE in place on `rows` rows of `heads` heads of D, row r at position start + r % N: the
// pairs (i, i + D/2) turned by their angles. Training is start 0, N the sequence; decoding
// one row at `start`.
void rope_forward(float *x, const float *cos, const float *sin, int rows, int N, int start,
                  int heads, int D);
// The gradient turned back by the same angles, in place.
void rope_backward(float *d, const float *cos, const float *sin, int rows, int N, int start,
                   int heads, int D);

// ALiBi's slope of each of H heads (Press et al. 2022): for a power of two, the geometric
// sequence 2^(-8/H * h), h = 1 .. H; otherwise the slopes of the largest power of two below
// H, then every other slope of twice that, as many as are missing. The exercise's piece:
// one function, swappable (docs/18-attention-variants.md, exercise 1).
void alibi_slopes(float *slopes, int H);
// ALiBi's bias on one row of scores: query t, keys first .. first+n-1, each score (already
// divided by sqrt(D)) plus slope * (s - t), a penalty growing with the distance back.
// Entries that are -inf (masked) stay -inf.
void alibi_bias(float *scores, float slope, int t, int first, int n);

// Vaswani et al.'s table (P, C): PE[t][2i] = sin(t theta_i), PE[t][2i+1] = cos(t theta_i),
// theta_i = 10000^(-2i/C).
void sinusoidal_table(float *table, int P, int C);
// x (rows, C) += table row by row, row r at position start + r % N: the sinusoidal table or
// the learned one, added to the token embeddings.
void add_positions(float *x, const float *table, int rows, int N, int start, int C);
// The learned table's gradient (P, C): row t the sum over the batch of d_x's rows at
// position t, rows N .. P-1 zero (no sequence reached them).
void learned_positions_backward(float *d_table, const float *d_x, int B, int N, int P, int C);

#endif
