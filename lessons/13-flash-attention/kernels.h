// kernels.h - the three inner loops of lesson 13's tiled forward, each
// written three times: a scalar twin in plain C11 (the specification), an
// AVX2 + FMA version (8 floats a step) and an AVX-512 version (16), which
// give the scalar twin's results bit for bit; and the copy of the query
// block they work on (a scalar twin and AVX-512). kernels.c has them, each
// vector version beside its twin; flash_attention.c calls them through a
// Kernels table picked at run time.
//
// The numbers they work on are in base 2: the queries arrive multiplied by
// log2(e) / sqrt(D), so a score is x * log2(e) and exp(x - m) is
// exp2(score - m). (FlashAttention-2 works in base 2 too, but folds
// log2(e) into the scale it applies to each score; here the queries carry
// it, and no score needs a multiply of its own.)
#ifndef KERNELS_H
#define KERNELS_H

#include <stdbool.h>

// The score block is kept transposed, one column per query, and its width
// is the block's queries rounded up to a multiple of this (so every vector
// of columns is whole).
#define KERNEL_COLUMNS 16
// `diagonal` when no key of the tile is after any of its queries.
#define NO_MASK (1 << 28)

// One tile: a block of queries against a block of keys.
typedef struct {
    int keys;        // the keys the tile computes: rows of s_t
    int queries;     // the queries of the block: rows of o
    int width;       // columns of q_t and s_t: `queries` rounded up to KERNEL_COLUMNS
    int head_dim;    // D
    int diagonal;    // query j sees key p when p <= j + diagonal; NO_MASK: every key
} Tile;

typedef struct {
    const char *name;   // "avx512", "avx2" or "scalar"
    int lanes;          // floats per vector register: 16, 8, or 1
    // The query block, transposed and scaled: for d < head_dim, j < width,
    //     q_t[d][j] = q[j][d] * scale    for j < queries (one multiply)
    //               = 0                  for the columns past them
    // q (queries, D) is row-major with rows of D (the block's first query
    // at q[0]); q_t (D, width) has rows of `width`. (AVX2 runs the twin.)
    void (*load_queries)(float *q_t, const Tile *tile, const float *q, float scale);
    // The scores, transposed, in base 2 (q_t holds the scaled queries), and
    // the causal mask: for p < keys, j < width,
    //     s_t[p][j] = sum over d of k[p][d] * q_t[d][j]   where query j sees key p
    //               = -inf                                 where it does not
    // summed in the order d = 0, 1, ..., one fused multiply-add a step; and
    //     block_max[j] = the largest of column j.
    // k (keys, D) and v are row-major with rows of D; q_t (D, width) and
    // s_t (keys, width) have rows of `width`.
    void (*scores)(float *s_t, float *block_max, const Tile *tile, const float *k,
                   const float *q_t);
    // One step of the online softmax, one column per query, j < width:
    //     m_new = max(m, block_max)
    //     alpha = exp2(m - m_new)                 (0 for a first block: m = -inf)
    //     s_t   = exp2(s_t - m_new)               (the block's weights, unnormalised)
    //     m     = m_new
    // (The running sum l is accumulate's.) On a tile without the mask
    // (diagonal == NO_MASK) every score must be finite, as the forward's
    // are: the AVX-512 version skips there the test that turns the mask's
    // -inf into 0 (kernels.c, exp2).
    void (*online_softmax)(float *s_t, float *m, float *alpha, const float *block_max,
                           const Tile *tile);
    // The output accumulator of each query j < queries, o (queries, D), and
    // its running sum of weights l (queries):
    //     o[j] = o[j] * alpha[j] + sum over the keys it sees of p_t[p][j] * v[p]
    //     l[j] = l[j] * alpha[j] + sum over the keys it sees of p_t[p][j]
    // each sum in the order p = 0, 1, ...: o's one fused multiply-add a
    // step, l's one addition a step, from 0. (l is o's sum with a value of
    // 1 for every key: the AVX-512 version adds each weight as it uses it,
    // on adders its FMAs leave idle; AVX2's, short of registers, in a pass
    // of its own.) With no keys it is o[j] * alpha[j] alone: the forward's
    // o / l, with l NULL.
    void (*accumulate)(float *o, float *l, const Tile *tile, const float *alpha,
                       const float *p_t, const float *v);
} Kernels;

extern const Kernels SCALAR_KERNELS;

// The kernels the run takes (common/speed/choice.h): those the environment
// variable ATTN_KERNELS names ("scalar", "avx2" or "avx512"; make valgrind
// sets scalar, since valgrind 3.19 cannot run AVX-512) when this CPU has
// them, else the fastest this CPU runs. Never NULL.
const Kernels *kernels_best(void);
// The kernels called `name` ("avx512", "avx2", "scalar"), or NULL where
// this CPU or compiler does not have them (common/speed/cpu.h).
const Kernels *kernels_named(const char *name);
// The AVX-512 set with l's sums in the register tiles (false) or in a pass
// of their own (true), whichever this core wants being kernels_named's
// (speed/blocks.h: sums_apart); NULL where this CPU has no AVX-512.
const Kernels *avx512_variant(bool sums_apart);

// The twins' exp2, for x <= 0 (the only arguments softmax has): within
// 1 ulp of exp2, rounded once to a float, so below about -126 to a
// subnormal one, and 0 from EXP2_LO down (2^x is then less than half the
// smallest float); 0 for -inf (masked scores drop out) and for NaN. The
// vector versions compute the same bits.
#define EXP2_LO (-151.0f)
float flash_exp2(float x);

#endif
