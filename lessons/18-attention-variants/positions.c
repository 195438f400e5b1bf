// positions.c - the five ways a model here knows where a token is (--positions), each forward
// beside its backward:
//   rope        lesson 16's: q and k turned by angles that grow with the position, so a
//               score q_t . k_s depends on t - s (Su et al. 2021; Llama)
//   alibi       no angles and no table: each head adds slope * (s - t) to its scores, a
//               penalty that grows with the distance back (Press et al. 2022; BLOOM, MPT)
//   sinusoidal  a fixed table of sines and cosines added to the token embeddings
//               (Vaswani et al. 2017, the original Transformer)
//   learned     a trained table added to the embeddings (GPT-2): one row per position, so a
//               position never seen in training has a row that never learned anything
//   none        nothing (NoPE): only the causal mask tells a token how many came before it
//               (Haviv et al. 2022, Kazemnejad et al. 2023)
// The first two act inside attention (on q and k, on the scores); the other three on the
// stream at the bottom of the model. Of them, only the learned table has a gradient: RoPE's
// angles, ALiBi's slopes and the sinusoidal table are fixed numbers, and their backward is
// the chain rule passing through (RoPE turns the gradient back; the other two leave it as
// it is).
//
// Size letters as in model.h: P positions a table holds, C hidden_size, D head_dim.
#include "positions.h"

#include <math.h>
#include <string.h>

#include "exact/pow_exact.h"
#include "exact/sum_exact.h"

// --- RoPE and the sinusoidal table's angles -------------------------------------------------

// Position t turns pair i by t * theta_i, theta_i = base^(-2i/D) (lesson 15 and 16): theta_i
// takes the pow PyTorch's kernel uses, Sleef's on whole blocks of 16 and the C library's powf
// on the rest; the angle is a float product; cos and sin are worked in double, rounded once.
void angle_table(float *cos_t, float *sin_t, int P, int D, int base) {
    int whole_blocks = D / 2 / 16 * 16;
    for (int i = 0; i < D / 2; i++) {
        float exponent = (float)(2 * i) / (float)D;
        float power = i < whole_blocks ? sleef_powf((float)base, exponent)
                                       : powf((float)base, exponent);
        float inv_freq = 1.0f / power;
        for (int t = 0; t < P; t++) {
            float angle = (float)t * inv_freq;
            cos_t[(long)t * (D / 2) + i] = (float)cos((double)angle);
            sin_t[(long)t * (D / 2) + i] = (float)sin((double)angle);
        }
    }
}

// x * cos + rotate_half(x) * sin, each product rounded: the pair (a, e) = (x[i], x[i + D/2])
// becomes (a c - e s, e c + a s), the 2x2 rotation [c -s; s c].
void rope_forward(float *x, const float *cos, const float *sin, int rows, int N, int start,
                  int heads, int D) {
    int half = D / 2;
    for (int r = 0; r < rows; r++) {
        long t = start + r % N;
        for (int h = 0; h < heads; h++) {
            float *x_h = x + ((long)r * heads + h) * D;
            for (int i = 0; i < half; i++) {
                float a = x_h[i], e = x_h[i + half];
                float c = cos[t * half + i], s = sin[t * half + i];
                x_h[i] = a * c - e * s;
                x_h[i + half] = e * c + a * s;
            }
        }
    }
}

// The backward multiplies by the transpose [c s; -s c]: the gradient turned back.
void rope_backward(float *d, const float *cos, const float *sin, int rows, int N, int start,
                   int heads, int D) {
    int half = D / 2;
    for (int r = 0; r < rows; r++) {
        long t = start + r % N;
        for (int h = 0; h < heads; h++) {
            float *d_h = d + ((long)r * heads + h) * D;
            for (int i = 0; i < half; i++) {
                float a = d_h[i], e = d_h[i + half];
                float c = cos[t * half + i], s = sin[t * half + i];
                d_h[i] = a * c + e * s;
                d_h[i + half] = e * c - a * s;
            }
        }
    }
}

// --- ALiBi ------------------------------------------------------------------------------------

// The slopes of H heads. For n heads, n a power of two, slope h (from 0) is start^(h+1),
// start = 2^(-2^-(log2(n) - 3)) = 2^(-8/n): 2^-(8/n), 2^-(16/n), ..., 2^-8. The paper
// trains only 2^a heads; for other counts its code takes the slopes of the largest power of
// two below H, then every other slope of twice that (its first, third, ...) until there are
// H: 6 heads get 4's slopes (1/4, 1/16, 1/64, 1/256), then 8's first and third (1/2, 1/8):
// one steeper than any of the four (a shorter horizon), one between 1/4 and 1/16.
// Worked in double with the C library's pow and log2, as Python's floats are (get_slopes in
// ofirpress/attention_with_linear_biases: `start = (2**(-2**-(math.log2(n)-3)));
// ratio = start; return [start*ratio**i for i in range(n)]`), each rounded to a float as
// torch.tensor(slopes) rounds it. The exercise's piece: no helper, so that it can be swapped.
void alibi_slopes(float *slopes, int H) {
    int closest = 1;
    while (closest * 2 <= H) {
        closest *= 2;
    }
    for (int h = 0; h < H; h++) {
        int n = h < closest ? closest : 2 * closest;   // the power of two it is taken from
        int i = h < closest ? h : 2 * (h - closest);   // its index among n's slopes
        double start = pow(2.0, -pow(2.0, -(log2((double)n) - 3.0)));
        slopes[h] = (float)(start * pow(start, (double)i));
    }
}

// scores[s - first] += slope * (s - t): 0 on the query's own key, -slope one back, -2 slope
// two back, ... The distance is an exact float, the product rounded once (as PyTorch's
// slopes[:, None, None] * distance table). -inf + anything stays -inf.
void alibi_bias(float *scores, float slope, int t, int first, int n) {
    for (int i = 0; i < n; i++) {
        scores[i] = scores[i] + slope * (float)(first + i - t);
    }
}

// --- the sinusoidal table and the learned one ---------------------------------------------------

// PE[t][2i] = sin(t theta_i), PE[t][2i+1] = cos(t theta_i): sines and cosines interleaved,
// from the same angles as RoPE's with D = C (torch.stack([sin, cos], -1).reshape(P, C)).
void sinusoidal_table(float *table, int P, int C) {
    float *cos_t = arena_alloc((size_t)P * (C / 2), sizeof(float));
    float *sin_t = arena_alloc((size_t)P * (C / 2), sizeof(float));
    angle_table(cos_t, sin_t, P, C, 10000);
    for (long t = 0; t < P; t++) {
        for (int i = 0; i < C / 2; i++) {
            table[t * C + 2 * i] = sin_t[t * (C / 2) + i];
            table[t * C + 2 * i + 1] = cos_t[t * (C / 2) + i];
        }
    }
}

// x = embed_tokens[ids] + table[t]: one rounding an element.
void add_positions(float *x, const float *table, int rows, int N, int start, int C) {
    for (int r = 0; r < rows; r++) {
        const float *row = table + (long)(start + r % N) * C;
        for (int c = 0; c < C; c++) {
            x[(long)r * C + c] = x[(long)r * C + c] + row[c];
        }
    }
}

// x = tokens (B, N, C) + positions (N, C): the table's rows were added to every sequence of
// the batch, so each row's gradient is the sum of d_x over the batch (torch.sum down the
// first dim, in its order: sum_exact_columns); then embed_positions(arange(N)) puts row t
// back at row t of the table. Rows from N on saw nothing: 0. They stay as they were drawn,
// zeros here, however long the model trains: what the length experiment asks them.
void learned_positions_backward(float *d_table, const float *d_x, int B, int N, int P, int C) {
    sum_exact_columns(d_table, d_x, B, (long)N * C);
    memset(d_table + (long)N * C, 0, (size_t)(P - N) * C * sizeof(float));
}
