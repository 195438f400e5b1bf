// kernels.c - lesson 13's inner loops, where the lesson leaves portable C.
// (kernels.h says what each kernel computes. Lessons 14 and 16 have vector
// kernels of their own, written the same way.)
//
// Each kernel is here three times, in this order:
//   - the scalar twin: plain C11, every fused multiply-add an fmaf(). It is
//     the specification, and what runs on a CPU without AVX2 or with a
//     compiler other than GCC and Clang.
//   - AVX2 + FMA: 8 floats per register, 16 registers.
//   - AVX-512: 16 floats per register, 32 registers.
// The vector versions compute every number as the twin does, in the same
// order (each vector lane is one turn of the scalar loop), so all three
// give the same bits; the tests check it. Where a vector version takes a
// shortcut, it is one that rounds alike: an instruction in place of a few
// of the twin's steps (exp2_16), a multiply by alpha skipped where every
// alpha of a register tile is 1 (rescaled). They are written with
// GCC/Clang vector extensions (`a + b` on 16 floats) and one intrinsic per
// operation C has no operator for (the fused multiply-add, max), and each
// function carries a target attribute, so the Makefile's flags stay those
// of the rest of the project: the binary runs on any x86-64. The vector
// types, their helpers (load8, fma16, ...) and the attributes are in
// common/speed/vectors.h, which lessons 14 and 16 use too; which sets this
// CPU runs, and which one a run takes (ATTN_KERNELS), common/speed/cpu.h
// and choice.h say, at run time (the end of this file). The project builds
// with -ffp-contract=off (no multiply-add is fused unless written), so
// every fma is spelled out.
//
// How they are fast (docs/fast-on-a-cpu.md, "Lesson 13: the tiled forward",
// has the numbers):
//   - The two products run in a register tile (the "micro-kernel"): a
//     block of the result stays in registers while the sum runs, so each
//     step loads one row of B, broadcasts one number of A per row, and
//     does one FMA per register of the tile: 12 registers (AVX2, 6 x 16
//     floats) or 16 (AVX-512, 4 x 64). Each FMA waits for the one before
//     it on the same register (about 4 cycles on the AMD EPYC, Zen 4, this
//     was tuned on; `lscpu` names yours); 12 or 16 independent sums keep
//     the FMA units busy meanwhile.
//   - exp2 is a short polynomial, vectorised (the scalar exp of libm would
//     cost more than the products). On Zen 4 it keeps both kinds of units
//     busy, the FMA units (its six multiply-adds, and the compare of its
//     test for -inf) and the others (the subtractions, rounding, scaling;
//     the pipes as LLVM's Zen 4 model, from AMD's optimisation guide, has
//     them): so with AVX-512, tiles without the mask skip that test (one of
//     its seven operations on the FMA units), and
//     each query's sum of weights, l, is added up in accumulate's tile,
//     where the adders have nothing else to do, not beside the exps.
//   - Causal: tiles of the register tile that lie wholly above the
//     diagonal are not computed (the diagonal tile is a triangle), and the
//     accumulation stops at the last key each query sees.
//   - The query block's transposed copy (load_queries, written twice:
//     the twin and AVX-512) moves 16 x 16 floats at a time in registers.
#include "kernels.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "speed/blocks.h"
#include "speed/choice.h"
#include "speed/cpu.h"
#include "speed/vectors.h"

static int lesser(int a, int b) {
    return a < b ? a : b;
}

// =========================================================================================
// exp2
// =========================================================================================
// exp2(x) = 2^n * 2^r with n = round(x) and r = x - n in [-0.5, 0.5]: 2^r is
// a polynomial of degree 6 (the minimax coefficients for relative error on
// [-0.5, 0.5], whose largest is 2.0e-9, rounded to float, which makes it
// 1.6e-8: still below the float rounding of its evaluation), and 2^n
// multiplies it, rounding once. Checked on every float from EXP2_LO to 0
// against double exp2: at most 0.952 ulp from it. Below -126 the results
// are subnormal floats, spaced 2^-149 apart, each within 1 ulp (2^-149) of
// exp2(x), the nearest one for about 97% of them: the rounding of the
// scaling cannot undo the polynomial's own error. From EXP2_LO down it is 0.
#define ROUND_MAGIC 0x1.8p23f      // 1.5 * 2^23: x + this rounds x to an integer
#define EXP2_C1 0x1.62e430p-1f          // ln 2 (to float): the Taylor series' r ln 2 ...
#define EXP2_C2 0x1.ebfbdcp-3f          // ... (r ln 2)^2 / 2, and so on, moved to the
#define EXP2_C3 0x1.c6aee8p-5f          //     minimax ones, then rounded to float
#define EXP2_C4 0x1.3b2d4cp-7f
#define EXP2_C5 0x1.5f3e54p-10f
#define EXP2_C6 0x1.41fbbep-13f
#define SCALE_UP 64                 // 2^n in two steps: 2^(n + SCALE_UP), exact ...
#define SCALE_DOWN 0x1p-64f         // ... then times 2^-SCALE_UP, rounded once

static uint32_t float_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float bits_float(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

// The scalar twin; exp2_8 below is this, line for line (exp2_16 has an
// instruction for each of its two integer steps).
float flash_exp2(float x) {
    // x + 1.5 * 2^23 lies in [2^23, 2^24), where floats are exactly 1 apart:
    // the addition rounds x to the nearest integer n, and leaves n in the
    // low bits of t.
    float t = x + ROUND_MAGIC;
    float n = t - ROUND_MAGIC;
    float r = x - n;                        // exact
    float poly = EXP2_C6;                        // 2^r, Horner's way
    poly = fmaf(poly, r, EXP2_C5);
    poly = fmaf(poly, r, EXP2_C4);
    poly = fmaf(poly, r, EXP2_C3);
    poly = fmaf(poly, r, EXP2_C2);
    poly = fmaf(poly, r, EXP2_C1);
    poly = fmaf(poly, r, 1.0f);
    // poly * 2^(n + 64): n + 64 added to poly's exponent field (bits 23..30),
    // exact, since the result is a normal float for every n from -151 to 0.
    // t's low bits hold n (two's complement, the magic's own low bits are
    // 0), and shifting left by 23 drops everything above them.
    uint32_t y = float_bits(poly) + ((float_bits(t) + SCALE_UP) << 23);
    // Then times 2^-64: exact where 2^x is a normal float, and where it is
    // not, rounded once to the nearest subnormal (what AVX-512's scalef does
    // in one instruction).
    float e = bits_float(y) * SCALE_DOWN;
    return x >= EXP2_LO ? e : 0.0f;   // a NaN compares false: 0
}

// max as the x86 max instruction has it: the second argument unless the
// first is larger.
static float max_float(float a, float b) {
    return a > b ? a : b;
}

#ifdef HAVE_VECTOR_KERNELS   // speed/vectors.h: x86-64, GCC or Clang
// flash_exp2 on 8 lanes, line for line.
AVX2_CODE ALWAYS_INLINE v8f exp2_8(v8f x) {
    v8f t = x + ROUND_MAGIC;
    v8f n = t - ROUND_MAGIC;
    v8f r = x - n;
    v8f poly = splat8(EXP2_C6);
    poly = fma8(poly, r, splat8(EXP2_C5));
    poly = fma8(poly, r, splat8(EXP2_C4));
    poly = fma8(poly, r, splat8(EXP2_C3));
    poly = fma8(poly, r, splat8(EXP2_C2));
    poly = fma8(poly, r, splat8(EXP2_C1));
    poly = fma8(poly, r, splat8(1.0f));
    v8u y = (v8u)poly + (((v8u)t + SCALE_UP) << 23);   // (v8u)t: the same bits, as integers
    v8f e = (v8f)y * SCALE_DOWN;
    v8i keep = x >= EXP2_LO;              // all ones where true, 0 where false (and NaN)
    return (v8f)((v8i)e & keep);
}

// flash_exp2 on 16 lanes, with the two AVX-512 instructions made for it:
// roundscale rounds to the nearest integer (what the magic addition does),
// and scalef multiplies by 2^n, rounding once (what the twin's two steps
// do). (Measured on the AMD Zen 4 the lesson was tuned on, gcc 12 -O2,
// 2026-11-27, these two were faster than the magic addition and the
// integer add; no figure was recorded.)
//
// `masked`: whether to test x >= EXP2_LO, zeroing the lanes where it is
// not. Without the test, a finite x below EXP2_LO gives 0 all the same
// (2^n * poly is at most 2^-150.5 there, less than half the smallest
// subnormal), so it only matters for -inf (r = -inf - -inf is NaN) and NaN:
// the causal mask's scores, and the running max before the first block. A
// tile without the mask has neither, and skips the test: on Zen 4 the
// compare runs on the FMA units (LLVM's Zen 4 model), one of this function's
// seven operations there, beside its six multiply-adds.
AVX512_CODE ALWAYS_INLINE v16f exp2_16(const bool masked, v16f x) {
    v16f n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v16f r = x - n;
    v16f poly = splat16(EXP2_C6);
    poly = fma16(poly, r, splat16(EXP2_C5));
    poly = fma16(poly, r, splat16(EXP2_C4));
    poly = fma16(poly, r, splat16(EXP2_C3));
    poly = fma16(poly, r, splat16(EXP2_C2));
    poly = fma16(poly, r, splat16(EXP2_C1));
    poly = fma16(poly, r, splat16(1.0f));
    if (!masked) {
        return _mm512_scalef_ps(poly, n);
    }
    __mmask16 keep = _mm512_cmp_ps_mask(x, splat16(EXP2_LO), _CMP_GE_OQ);
    return _mm512_maskz_scalef_ps(keep, poly, n);
}

// The register tiles: MR8 rows by 16 floats with AVX2 (12 of its 16
// registers), MR16 rows by 64 with AVX-512 (16 of its 32). A tile of fewer
// rows is computed as a full one whose missing rows repeat the last (memory
// that exists); they are not stored. `nv`, the registers a row takes, is a
// constant where each tile function is called (a switch picks the copy), so
// the compiler unrolls the loops over rows and registers and keeps the whole
// tile in registers.
enum { MR8 = 6, MR16 = 4 };
#endif

// =========================================================================================
// load_queries: q_t = the query block, transposed and scaled
// =========================================================================================

static void load_queries_scalar(float *q_t, const Tile *tile, const float *q, float scale) {
    int D = tile->head_dim, W = tile->width;
    for (int d = 0; d < D; d++) {
        for (int j = 0; j < W; j++) {
            q_t[d * W + j] = j < tile->queries ? q[j * D + d] * scale : 0.0f;
        }
    }
}

#ifdef HAVE_VECTOR_KERNELS
// 16 queries by 16 numbers at a time: 16 rows of q loaded (a query past the
// block's is a row of zeros) and scaled, each number the twin's one
// multiply; then transposed in registers (pairs of rows interleaved, then
// pairs of pairs, then 128-bit quarters twice over) and stored as 16 rows
// of q_t. The numbers of a head past its last multiple of 16 go through
// the twin's loop.
AVX512_CODE static void load_queries_avx512(float *q_t, const Tile *tile, const float *q,
                                            float scale) {
    int D = tile->head_dim, W = tile->width, vector_dims = D / 16 * 16;
    // The block's rows are fetched from memory first, all at once (a cache
    // line a prefetch), rather than a line at a time as the loads reach them.
    for (int i = 0; i < tile->queries * D; i += 16) {
        __builtin_prefetch(q + i, 0, 3);
    }
    for (int j0 = 0; j0 < W; j0 += 16) {
        for (int d0 = 0; d0 < vector_dims; d0 += 16) {
            __m512 r[16], t[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) {
                r[i] = j0 + i < tile->queries
                           ? (__m512)(load16(q + (j0 + i) * D + d0) * splat16(scale))
                           : _mm512_setzero_ps();
            }
#pragma GCC unroll 8
            for (int i = 0; i < 16; i += 2) {   // per 128 bits: r_i[0] r_i+1[0] r_i[1] ...
                t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
                t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
            }
#pragma GCC unroll 4
            for (int i = 0; i < 16; i += 4) {   // per 128 bits: one number of 4 rows
#pragma GCC unroll 2
                for (int h = 0; h < 2; h++) {
                    __m512d a = _mm512_castps_pd(t[i + h]), b = _mm512_castps_pd(t[i + h + 2]);
                    r[i + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
                    r[i + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
                }
            }
            // r[4g + c], quarter k: rows 4g .. 4g+3 of number 4k + c.
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                __m512 even0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
                __m512 odd0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);
                __m512 even1 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
                __m512 odd1 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
                t[c] = _mm512_shuffle_f32x4(even0, even1, 0x88);        // number c
                t[8 + c] = _mm512_shuffle_f32x4(even0, even1, 0xdd);    // number 8 + c
                t[4 + c] = _mm512_shuffle_f32x4(odd0, odd1, 0x88);      // number 4 + c
                t[12 + c] = _mm512_shuffle_f32x4(odd0, odd1, 0xdd);     // number 12 + c
            }
#pragma GCC unroll 16
            for (int c = 0; c < 16; c++) {
                store16(q_t + (d0 + c) * W + j0, (v16f)t[c]);
            }
        }
    }
    for (int d = vector_dims; d < D; d++) {
        for (int j = 0; j < W; j++) {
            q_t[d * W + j] = j < tile->queries ? q[j * D + d] * scale : 0.0f;
        }
    }
}
#endif

// =========================================================================================
// scores: s_t = k @ q_t, masked, and each column's largest
// =========================================================================================

static void scores_scalar(float *s_t, float *block_max, const Tile *tile, const float *k,
                          const float *q_t) {
    int D = tile->head_dim, W = tile->width;
    for (int j = 0; j < W; j++) {
        block_max[j] = -INFINITY;
    }
    for (int p = 0; p < tile->keys; p++) {
        for (int j = 0; j < W; j++) {
            float acc = -INFINITY;   // key p comes after query j: masked
            if (p <= j + tile->diagonal) {
                acc = 0.0f;
                for (int d = 0; d < D; d++) {
                    acc = fmaf(k[p * D + d], q_t[d * W + j], acc);
                }
            }
            s_t[p * W + j] = acc;
            block_max[j] = max_float(block_max[j], acc);
        }
    }
}

#ifdef HAVE_VECTOR_KERNELS
// One register tile of scores: keys p0 .. p0+MR-1 against queries j0 ..
// j0 + lanes * nv - 1, summed over d in order; then the causal mask (where
// key p0+i comes after query j0+j, that is j < masked + i, with `masked`
// row p0's masked columns: 0 or less where the mask does not reach), each
// column's largest into col_max (registers the caller keeps), the row
// stored. The vector versions compute whole registers of queries; the
// rows and registers wholly masked they do not compute (below).
AVX2_CODE ALWAYS_INLINE void scores_tile8(const int nv, const bool diagonal, float *s_t,
                                          v8f *col_max, const Tile *tile, const float *k,
                                          const float *q_t, int p0, int j0, int masked) {
    int D = tile->head_dim, W = tile->width, mr = lesser(MR8, tile->keys - p0);
    const float *k_rows[MR8];
    v8f c[MR8][2];
#pragma GCC unroll 8
    for (int i = 0; i < MR8; i++) {
        k_rows[i] = k + (p0 + (i < mr ? i : mr - 1)) * D;
#pragma GCC unroll 2
        for (int u = 0; u < nv; u++) {
            c[i][u] = splat8(0.0f);
        }
    }
    for (int d = 0; d < D; d++) {
        v8f q_d[2];
#pragma GCC unroll 2
        for (int u = 0; u < nv; u++) {
            q_d[u] = load8(q_t + d * W + j0 + 8 * u);
        }
#pragma GCC unroll 8
        for (int i = 0; i < MR8; i++) {
            v8f k_id = splat8(k_rows[i][d]);
#pragma GCC unroll 2
            for (int u = 0; u < nv; u++) {
                c[i][u] = fma8(k_id, q_d[u], c[i][u]);
            }
        }
    }
    const v8i lane = {0, 1, 2, 3, 4, 5, 6, 7};
#pragma GCC unroll 8
    for (int i = 0; i < MR8; i++) {
#pragma GCC unroll 2
        for (int u = 0; u < nv; u++) {
            if (diagonal && masked + i > 8 * u) {   // is_masked: all ones in the masked lanes
                v8i is_masked = lane + 8 * u < masked + i;
                c[i][u] = (v8f)(((v8i)c[i][u] & ~is_masked) |
                                ((v8i)splat8(-INFINITY) & is_masked));
            }
            if (i < mr) {
                col_max[u] = max8(col_max[u], c[i][u]);
                store8(s_t + (p0 + i) * W + j0 + 8 * u, c[i][u]);
            }
        }
    }
}

// Every register tile of queries j0 .. j0 + 8 nv - 1, down the keys, the
// columns' largest kept in registers all the way.
AVX2_CODE ALWAYS_INLINE void scores_columns8(const int nv, const bool diagonal, float *s_t,
                                             float *block_max,
                                             const Tile *tile, const float *k,
                                             const float *q_t, int j0) {
    v8f col_max[2];
#pragma GCC unroll 2
    for (int u = 0; u < nv; u++) {
        col_max[u] = splat8(-INFINITY);
    }
    for (int p0 = 0; p0 < tile->keys; p0 += MR8) {
        // Row p0 masks its columns before j0 + masked (the rows after it,
        // more): the registers of queries that every key of the tile comes
        // after are -inf, and not computed.
        int masked = p0 - tile->diagonal - j0;
        int skip = !diagonal || masked <= 0 ? 0 : lesser(nv, masked / 8);
        for (int p = p0; skip > 0 && p < lesser(p0 + MR8, tile->keys); p++) {
            for (int j = j0; j < j0 + 8 * skip; j++) {
                s_t[p * tile->width + j] = -INFINITY;
            }
        }
        if (nv - skip == 2) {
            scores_tile8(2, diagonal, s_t, col_max, tile, k, q_t, p0, j0, masked);
        } else if (nv - skip == 1) {
            scores_tile8(1, diagonal, s_t, col_max + skip, tile, k, q_t, p0, j0 + 8 * skip,
                         masked - 8 * skip);
        }
    }
#pragma GCC unroll 2
    for (int u = 0; u < nv; u++) {
        store8(block_max + j0 + 8 * u, col_max[u]);
    }
}

AVX2_CODE static void scores_avx2(float *s_t, float *block_max, const Tile *tile,
                                  const float *k, const float *q_t) {
    for (int j0 = 0; j0 < tile->width; j0 += 16) {
        bool diagonal = tile->diagonal != NO_MASK;   // (a constant in each copy below)
        if (tile->width - j0 >= 16 && diagonal) {
            scores_columns8(2, true, s_t, block_max, tile, k, q_t, j0);
        } else if (tile->width - j0 >= 16) {
            scores_columns8(2, false, s_t, block_max, tile, k, q_t, j0);
        } else {
            scores_columns8(1, diagonal, s_t, block_max, tile, k, q_t, j0);
        }
    }
}

// The same with 16 floats a register.
AVX512_CODE ALWAYS_INLINE void scores_tile16(const int nv, const bool diagonal, float *s_t,
                                             v16f *col_max, const Tile *tile, const float *k,
                                             const float *q_t, int p0, int j0, int masked) {
    int D = tile->head_dim, W = tile->width, mr = lesser(MR16, tile->keys - p0);
    const float *k_rows[MR16];
    v16f c[MR16][4];
#pragma GCC unroll 4
    for (int i = 0; i < MR16; i++) {
        k_rows[i] = k + (p0 + (i < mr ? i : mr - 1)) * D;
#pragma GCC unroll 4
        for (int u = 0; u < nv; u++) {
            c[i][u] = splat16(0.0f);
        }
    }
    for (int d = 0; d < D; d++) {
        v16f q_d[4];
#pragma GCC unroll 4
        for (int u = 0; u < nv; u++) {
            q_d[u] = load16(q_t + d * W + j0 + 16 * u);
        }
#pragma GCC unroll 4
        for (int i = 0; i < MR16; i++) {
            v16f k_id = splat16(k_rows[i][d]);
#pragma GCC unroll 4
            for (int u = 0; u < nv; u++) {
                c[i][u] = fma16(k_id, q_d[u], c[i][u]);
            }
        }
    }
    const v16i lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
#pragma GCC unroll 4
    for (int i = 0; i < MR16; i++) {
#pragma GCC unroll 4
        for (int u = 0; u < nv; u++) {
            if (diagonal && masked + i > 16 * u) {
                v16i is_masked = lane + 16 * u < masked + i;
                c[i][u] = (v16f)(((v16i)c[i][u] & ~is_masked) |
                                 ((v16i)splat16(-INFINITY) & is_masked));
            }
            if (i < mr) {
                col_max[u] = max16(col_max[u], c[i][u]);
                store16(s_t + (p0 + i) * W + j0 + 16 * u, c[i][u]);
            }
        }
    }
}

AVX512_CODE ALWAYS_INLINE void scores_columns16(const int nv, const bool diagonal, float *s_t,
                                             float *block_max,
                                                const Tile *tile, const float *k,
                                                const float *q_t, int j0) {
    v16f col_max[4];
#pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        col_max[u] = splat16(-INFINITY);
    }
    for (int p0 = 0; p0 < tile->keys; p0 += MR16) {
        int masked = p0 - tile->diagonal - j0;
        int skip = !diagonal || masked <= 0 ? 0 : lesser(nv, masked / 16);
        for (int p = p0; skip > 0 && p < lesser(p0 + MR16, tile->keys); p++) {
            for (int j = j0; j < j0 + 16 * skip; j++) {
                s_t[p * tile->width + j] = -INFINITY;
            }
        }
        int from = j0 + 16 * skip, left = masked - 16 * skip;
        switch (nv - skip) {   // the registers left, each count a copy of the tile
        case 4: scores_tile16(4, diagonal, s_t, col_max, tile, k, q_t, p0, from, left); break;
        case 3: scores_tile16(3, diagonal, s_t, col_max + skip, tile, k, q_t, p0, from, left);
            break;
        case 2: scores_tile16(2, diagonal, s_t, col_max + skip, tile, k, q_t, p0, from, left);
            break;
        case 1: scores_tile16(1, diagonal, s_t, col_max + skip, tile, k, q_t, p0, from, left);
            break;
        default: break;
        }
    }
#pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        store16(block_max + j0 + 16 * u, col_max[u]);
    }
}

AVX512_CODE static void scores_avx512(float *s_t, float *block_max, const Tile *tile,
                                      const float *k, const float *q_t) {
    bool diagonal = tile->diagonal != NO_MASK;
    for (int j0 = 0; j0 < tile->width; j0 += 64) {
        int nv = lesser(64, tile->width - j0) / 16;
        if (nv == 4 && !diagonal) {   // the case the forward spends its time in
            scores_columns16(4, false, s_t, block_max, tile, k, q_t, j0);
        } else if (nv == 4) {
            scores_columns16(4, true, s_t, block_max, tile, k, q_t, j0);
        } else if (nv == 3) {
            scores_columns16(3, diagonal, s_t, block_max, tile, k, q_t, j0);
        } else if (nv == 2) {
            scores_columns16(2, diagonal, s_t, block_max, tile, k, q_t, j0);
        } else {
            scores_columns16(1, diagonal, s_t, block_max, tile, k, q_t, j0);
        }
    }
}
#endif

// =========================================================================================
// online_softmax: one block's step of the running max, and its weights
// =========================================================================================

// Not static: make exercise-13 links the reader's own in its place (exercises/
// 13-flash-attention.c), and runs the lesson with --kernels scalar.
void online_softmax_scalar(float *s_t, float *m, float *alpha, const float *block_max,
                           const Tile *tile) {
    int W = tile->width;
    for (int j = 0; j < W; j++) {
        float m_new = max_float(m[j], block_max[j]);
        for (int p = 0; p < tile->keys; p++) {
            s_t[p * W + j] = flash_exp2(s_t[p * W + j] - m_new);
        }
        alpha[j] = flash_exp2(m[j] - m_new);
        m[j] = m_new;
    }
}

#ifdef HAVE_VECTOR_KERNELS
// Columns j0 .. j0 + lanes * nv - 1, a row at a time: nv independent exp2s
// in flight, where one alone would wait on its own chain of FMAs.
AVX2_CODE ALWAYS_INLINE void softmax_columns8(const int nv, float *s_t, float *m, float *alpha,
                                              const float *block_max, const Tile *tile,
                                              int j0) {
    int W = tile->width;
    v8f m_new[2];
#pragma GCC unroll 2
    for (int u = 0; u < nv; u++) {
        m_new[u] = max8(load8(m + j0 + 8 * u), load8(block_max + j0 + 8 * u));
    }
    for (int p = 0; p < tile->keys; p++) {
#pragma GCC unroll 2
        for (int u = 0; u < nv; u++) {
            float *x = s_t + p * W + j0 + 8 * u;
            store8(x, exp2_8(load8(x) - m_new[u]));
        }
    }
#pragma GCC unroll 2
    for (int u = 0; u < nv; u++) {
        int j = j0 + 8 * u;
        store8(alpha + j, exp2_8(load8(m + j) - m_new[u]));
        store8(m + j, m_new[u]);
    }
}

AVX2_CODE static void online_softmax_avx2(float *s_t, float *m, float *alpha,
                                          const float *block_max, const Tile *tile) {
    for (int j0 = 0; j0 < tile->width; j0 += 16) {   // 8 columns a register, one per lane
        softmax_columns8(2, s_t, m, alpha, block_max, tile, j0);
    }
}

// `masked`: a constant in each copy (exp2_16 says why a tile without the
// mask skips a test). alpha always takes the test: m is -inf before the
// first block.
AVX512_CODE ALWAYS_INLINE void softmax_columns16(const int nv, const bool masked, float *s_t,
                                                 float *m, float *alpha,
                                                 const float *block_max, const Tile *tile,
                                                 int j0) {
    int W = tile->width;
    v16f m_new[4];
#pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        m_new[u] = max16(load16(m + j0 + 16 * u), load16(block_max + j0 + 16 * u));
    }
    for (int p = 0; p < tile->keys; p++) {
#pragma GCC unroll 4
        for (int u = 0; u < nv; u++) {
            float *x = s_t + p * W + j0 + 16 * u;
            store16(x, exp2_16(masked, load16(x) - m_new[u]));
        }
    }
#pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        int j = j0 + 16 * u;
        store16(alpha + j, exp2_16(true, load16(m + j) - m_new[u]));
        store16(m + j, m_new[u]);
    }
}

AVX512_CODE static void online_softmax_avx512(float *s_t, float *m, float *alpha,
                                              const float *block_max, const Tile *tile) {
    bool masked = tile->diagonal != NO_MASK;
    for (int j0 = 0; j0 < tile->width; j0 += 64) {   // 16 columns a register, one per lane
        int nv = lesser(4, (tile->width - j0) / 16);
        if (nv == 4 && !masked) {   // the case the forward spends its time in
            softmax_columns16(4, false, s_t, m, alpha, block_max, tile, j0);
        } else if (nv == 4) {
            softmax_columns16(4, true, s_t, m, alpha, block_max, tile, j0);
        } else if (nv == 3) {
            softmax_columns16(3, true, s_t, m, alpha, block_max, tile, j0);
        } else if (nv == 2) {
            softmax_columns16(2, true, s_t, m, alpha, block_max, tile, j0);
        } else {
            softmax_columns16(1, true, s_t, m, alpha, block_max, tile, j0);
        }
    }
}
#endif

// =========================================================================================
// accumulate: o = alpha o + p_t^T @ v, and l = alpha l + the weights' sums
// =========================================================================================

// Columns d_from .. d_to-1 of every row of o (the twin does them all; the
// vector versions leave it the columns that do not fill a register).
static void accumulate_columns(float *o, const Tile *tile, const float *alpha,
                               const float *p_t, const float *v, int d_from, int d_to) {
    int D = tile->head_dim, W = tile->width;
    for (int j = 0; j < tile->queries; j++) {
        int seen = lesser(tile->keys, j + tile->diagonal + 1);   // keys 0 .. seen-1
        for (int d = d_from; d < d_to; d++) {
            float acc = o[j * D + d] * alpha[j];
            for (int p = 0; p < seen; p++) {
                acc = fmaf(p_t[p * W + j], v[p * D + d], acc);
            }
            o[j * D + d] = acc;
        }
    }
}

// l = alpha l + the weights of the keys each query sees, added in order
// (the twin's, and the vector versions' where a head has fewer numbers
// than a register holds).
static void sum_weights(float *l, const Tile *tile, const float *alpha, const float *p_t) {
    int W = tile->width;
    for (int j = 0; j < tile->queries; j++) {
        int seen = lesser(tile->keys, j + tile->diagonal + 1);
        float sum = 0.0f;
        for (int p = 0; p < seen; p++) {
            sum += p_t[p * W + j];
        }
        l[j] = l[j] * alpha[j] + sum;
    }
}

static void accumulate_scalar(float *o, float *l, const Tile *tile, const float *alpha,
                              const float *p_t, const float *v) {
    if (l != NULL) {
        sum_weights(l, tile, alpha, p_t);
    }
    accumulate_columns(o, tile, alpha, p_t, v, 0, tile->head_dim);
}

#ifdef HAVE_VECTOR_KERNELS
// Whether any of rows i .. i+mr-1 is rescaled (alpha is 1 for most rows of
// most blocks; multiplying by 1 changes no bit, so those skip it).
static bool rescaled(const float *alpha, int i, int mr) {
    for (int r = i; r < i + mr; r++) {
        if (alpha[r] != 1.0f) {
            return true;
        }
    }
    return false;
}

// One register tile of the output: queries i0 .. i0+mr-1 and numbers d0 ..
// d0 + lanes * nv - 1 of a head, o = alpha o + the weighted values, summed
// in registers over the keys in order. On a diagonal tile query i0+i sums
// keys 0 .. seen + i - 1 and no more (the staircase), as the twin does:
// adding a masked weight's 0 * v could turn a -0 into +0.
AVX2_CODE ALWAYS_INLINE void accumulate_tile8(const int nv, const bool whole, float *o,
                                              const Tile *tile, const float *alpha,
                                              const float *p_t, const float *v, int i0, int d0) {
    int D = tile->head_dim, W = tile->width, mr = lesser(MR8, tile->queries - i0);
    int seen = lesser(tile->keys, i0 + tile->diagonal + 1);   // query i0's keys (maybe none)
    int every_row = seen > 0 ? seen : 0;
    int last_row = tile->diagonal == NO_MASK ? every_row
                                             : lesser(tile->keys, every_row + MR8 - 1);
    bool scaled = rescaled(alpha, i0, mr);
    // Row i of the tile is query i0 + i; a tile that is not whole repeats its
    // last query in the missing rows (`whole` is a constant in each copy, so
    // a whole tile's rows are constant offsets).
    int rows[MR8];
    v8f c[MR8][2];
#pragma GCC unroll 8
    for (int i = 0; i < MR8; i++) {
        rows[i] = whole ? i : (i < mr ? i : mr - 1);
#pragma GCC unroll 2
        for (int u = 0; u < nv; u++) {
            c[i][u] = load8(o + (i0 + rows[i]) * D + d0 + 8 * u);
            c[i][u] = scaled ? c[i][u] * splat8(alpha[i0 + rows[i]]) : c[i][u];
        }
    }
    const float *p_i0 = p_t + i0;   // p_i0[p * W + i]: query i0 + i's weight for key p
    for (int p = 0; p < every_row; p++) {
        v8f v_p[2];
#pragma GCC unroll 2
        for (int u = 0; u < nv; u++) {
            v_p[u] = load8(v + p * D + d0 + 8 * u);
        }
#pragma GCC unroll 8
        for (int i = 0; i < MR8; i++) {
            v8f weight = splat8(p_i0[p * W + rows[i]]);
#pragma GCC unroll 2
            for (int u = 0; u < nv; u++) {
                c[i][u] = fma8(weight, v_p[u], c[i][u]);
            }
        }
    }
    for (int p = every_row; p < last_row; p++) {   // the staircase: queries with p < seen + i
#pragma GCC unroll 8
        for (int i = 0; i < MR8; i++) {
#pragma GCC unroll 2
            for (int u = 0; u < nv; u++) {
                if (p < seen + i) {
                    c[i][u] = fma8(splat8(p_i0[p * W + rows[i]]), load8(v + p * D + d0 + 8 * u),
                                   c[i][u]);
                }
            }
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR8; i++) {
#pragma GCC unroll 2
        for (int u = 0; u < nv; u++) {
            if (i < mr) {
                store8(o + (i0 + rows[i]) * D + d0 + 8 * u, c[i][u]);
            }
        }
    }
}

// l's sums, in a pass of their own: AVX2's tile takes all 16 registers, and
// sums inside it would not fit. Columns j0 .. j0 + 8 nv - 1, nv independent
// sums (one alone would wait on its own additions). On a diagonal tile a
// weight the query does not see (p > j + diagonal) is left out by a mask,
// as the twin's loop stops before it.
AVX2_CODE ALWAYS_INLINE void sum_columns8(const int nv, const bool diagonal, float *l,
                                          const Tile *tile, const float *alpha,
                                          const float *p_t, int j0) {
    int W = tile->width;
    const v8i lane = {0, 1, 2, 3, 4, 5, 6, 7};
    v8f sum[4];
#pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        sum[u] = splat8(0.0f);
    }
    for (int p = 0; p < tile->keys; p++) {
#pragma GCC unroll 4
        for (int u = 0; u < nv; u++) {
            v8f w = load8(p_t + p * W + j0 + 8 * u);
            if (diagonal) {
                v8i sees = p <= lane + (j0 + 8 * u + tile->diagonal);   // all ones: it does
                w = (v8f)((v8i)w & sees);
            }
            sum[u] += w;
        }
    }
#pragma GCC unroll 4
    for (int u = 0; u < nv; u++) {
        int j = j0 + 8 * u;
        store8(l + j, load8(l + j) * load8(alpha + j) + sum[u]);
    }
}

AVX2_CODE static void sum_weights_avx2(float *l, const Tile *tile, const float *alpha,
                                       const float *p_t) {
    bool diagonal = tile->diagonal != NO_MASK;
    int j0 = 0, vector_queries = tile->queries / 8 * 8;
    for (; vector_queries - j0 >= 32; j0 += 32) {
        if (diagonal) {
            sum_columns8(4, true, l, tile, alpha, p_t, j0);
        } else {
            sum_columns8(4, false, l, tile, alpha, p_t, j0);
        }
    }
    for (; j0 < vector_queries; j0 += 8) {
        sum_columns8(1, diagonal, l, tile, alpha, p_t, j0);
    }
    Tile rest = *tile;   // the last queries, fewer than 8: the twin's loop
    rest.queries -= vector_queries;
    rest.diagonal = diagonal ? tile->diagonal + vector_queries : NO_MASK;
    sum_weights(l + vector_queries, &rest, alpha + vector_queries, p_t + vector_queries);
}

AVX2_CODE static void accumulate_avx2(float *o, float *l, const Tile *tile, const float *alpha,
                                      const float *p_t, const float *v) {
    if (l != NULL) {
        sum_weights_avx2(l, tile, alpha, p_t);
    }
    int D = tile->head_dim, vector_cols = D / 8 * 8;
    for (int i0 = 0; i0 < tile->queries; i0 += MR8) {
        for (int d0 = 0; d0 < vector_cols; d0 += 16) {
            bool whole = tile->queries - i0 >= MR8;
            if (vector_cols - d0 >= 16 && whole) {   // the case the forward spends its time in
                accumulate_tile8(2, true, o, tile, alpha, p_t, v, i0, d0);
            } else if (vector_cols - d0 >= 16) {
                accumulate_tile8(2, false, o, tile, alpha, p_t, v, i0, d0);
            } else {
                accumulate_tile8(1, false, o, tile, alpha, p_t, v, i0, d0);
            }
        }
    }
    accumulate_columns(o, tile, alpha, p_t, v, vector_cols, D);
}

// accumulate_tile8 with 16 floats a register; and here, with 32 registers,
// the tile also adds up its rows' weights for l (where l is not NULL), on
// the adders, which the FMAs leave idle: cheaper than adding them up in
// online_softmax, whose exp2s keep the adders busy.
AVX512_CODE ALWAYS_INLINE void accumulate_tile16(const int nv, float *o, float *l,
                                                 const Tile *tile, const float *alpha,
                                                 const float *p_t, const float *v, int i0,
                                                 int d0) {
    int D = tile->head_dim, W = tile->width, mr = lesser(MR16, tile->queries - i0);
    int seen = lesser(tile->keys, i0 + tile->diagonal + 1);
    int every_row = seen > 0 ? seen : 0;
    int last_row = tile->diagonal == NO_MASK ? every_row
                                             : lesser(tile->keys, every_row + MR16 - 1);
    bool scaled = rescaled(alpha, i0, mr);
    int rows[MR16];
    v16f c[MR16][4];
#pragma GCC unroll 4
    for (int i = 0; i < MR16; i++) {
        rows[i] = i0 + (i < mr ? i : mr - 1);
#pragma GCC unroll 4
        for (int u = 0; u < nv; u++) {
            c[i][u] = load16(o + rows[i] * D + d0 + 16 * u);
            c[i][u] = scaled ? c[i][u] * splat16(alpha[rows[i]]) : c[i][u];
        }
    }
    // sum[i]: row i's weights added up. The weights of queries i0 .. i0+3
    // for key p are 4 floats side by side in p_t (W is a multiple of 16, so
    // they exist; those past the block's queries are never used): one load
    // and one addition per key for the 4 rows, in lanes 0-3 of a register
    // whose other lanes the load leaves 0. (With a 4-float register, gcc 12
    // moved one of the tile's sums to memory: 2.5% slower on the Zen 4,
    // 2026-11-27.)
    v16f sum = splat16(0.0f);
    for (int p = 0; p < every_row; p++) {
        v16f v_p[4];
#pragma GCC unroll 4
        for (int u = 0; u < nv; u++) {
            v_p[u] = load16(v + p * D + d0 + 16 * u);
        }
        sum += _mm512_maskz_loadu_ps(0xf, p_t + p * W + i0);   // lanes 0-3: p_t[p][i0 ..]
#pragma GCC unroll 4
        for (int i = 0; i < MR16; i++) {
            v16f weight = splat16(p_t[p * W + rows[i]]);
#pragma GCC unroll 4
            for (int u = 0; u < nv; u++) {
                c[i][u] = fma16(weight, v_p[u], c[i][u]);
            }
        }
    }
    for (int p = every_row; p < last_row; p++) {
#pragma GCC unroll 4
        for (int i = 0; i < MR16; i++) {
            if (p < seen + i) {
                float w = p_t[p * W + rows[i]];
                sum[i] += w;
#pragma GCC unroll 4
                for (int u = 0; u < nv; u++) {
                    c[i][u] = fma16(splat16(w), load16(v + p * D + d0 + 16 * u), c[i][u]);
                }
            }
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < MR16; i++) {
#pragma GCC unroll 4
        for (int u = 0; u < nv; u++) {
            if (i < mr) {
                store16(o + rows[i] * D + d0 + 16 * u, c[i][u]);
            }
        }
        if (l != NULL && i < mr) {
            l[rows[i]] = l[rows[i]] * alpha[rows[i]] + sum[i];
        }
    }
}

// accumulate_tile16's unmasked case (every row sees every key) for keys
// p0 .. p1-1 only: the keys in chunks of ACCUMULATE_CHUNK, each chunk
// taken by every register tile of the block before the next, so that the
// chunk of v (16 KiB at head_dim 64) is read from L1 by every tile instead
// of the whole block of v (256 KiB at 1024 keys) from L2 by each: on a
// core with two 512-bit FMA ports, the whole block's 4 loads of v per 16
// FMAs ask L2 for more than it gives (accumulate took 47% of the forward's
// time, scores 26%, at the same FMAs; Intel Xeon, family 6 model 167,
// 2026-12-07). The same operations in the same order: the tile's sums
// leave for memory between chunks (o in place; l's in `carry`, lanes 0-3
// of each 4 rows) and come back exactly, and alpha scales o before the
// first chunk's FMAs, as in accumulate_tile16.
#define ACCUMULATE_CHUNK 64
#define CHUNKED_MAX_WIDTH 1024   // carry's floats: wider blocks are not chunked

AVX512_CODE ALWAYS_INLINE void accumulate_chunk16(float *o, float *l, float *carry,
                                                  const Tile *tile, const float *alpha,
                                                  const float *p_t, const float *v, int i0,
                                                  int d0, int p0, int p1) {
    int D = tile->head_dim, W = tile->width, mr = lesser(MR16, tile->queries - i0);
    bool scaled = p0 == 0 && rescaled(alpha, i0, mr);
    int rows[MR16];
    v16f c[MR16][4];
#pragma GCC unroll 4
    for (int i = 0; i < MR16; i++) {
        rows[i] = i0 + (i < mr ? i : mr - 1);
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            c[i][u] = load16(o + rows[i] * D + d0 + 16 * u);
            c[i][u] = scaled ? c[i][u] * splat16(alpha[rows[i]]) : c[i][u];
        }
    }
    v16f sum = splat16(0.0f);
    if (p0 > 0 && l != NULL) {
        sum = _mm512_maskz_loadu_ps(0xf, carry + i0);   // lanes 0-3: the sums so far
    }
    for (int p = p0; p < p1; p++) {
        v16f v_p[4];
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            v_p[u] = load16(v + p * D + d0 + 16 * u);
        }
        sum += _mm512_maskz_loadu_ps(0xf, p_t + p * W + i0);   // lanes 0-3: p_t[p][i0 ..]
#pragma GCC unroll 4
        for (int i = 0; i < MR16; i++) {
            v16f weight = splat16(p_t[p * W + rows[i]]);
#pragma GCC unroll 4
            for (int u = 0; u < 4; u++) {
                c[i][u] = fma16(weight, v_p[u], c[i][u]);
            }
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < MR16; i++) {
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            if (i < mr) {
                store16(o + rows[i] * D + d0 + 16 * u, c[i][u]);
            }
        }
    }
    if (l != NULL && p1 == tile->keys) {
        for (int i = 0; i < mr; i++) {
            l[rows[i]] = l[rows[i]] * alpha[rows[i]] + sum[i];
        }
    } else if (l != NULL) {
        _mm512_mask_storeu_ps(carry + i0, 0xf, sum);
    }
}

// sums_apart: l's sums in a pass of their own (sum_weights_avx2, as the
// AVX2 kernels do) where the keys come in chunks, not in the register
// tiles: which is faster depends on the core (speed/blocks.h), and both add
// the same weights in the same order.
AVX512_CODE ALWAYS_INLINE void accumulate_avx512_with(const bool sums_apart, float *o, float *l,
                                                      const Tile *tile, const float *alpha,
                                                      const float *p_t, const float *v) {
    int D = tile->head_dim, vector_cols = D / 16 * 16;
    if (tile->diagonal == NO_MASK && D % 64 == 0 && tile->width <= CHUNKED_MAX_WIDTH &&
        tile->keys > ACCUMULATE_CHUNK) {   // the case the forward spends its time in
        float carry[CHUNKED_MAX_WIDTH];
        if (sums_apart && l != NULL) {
            sum_weights_avx2(l, tile, alpha, p_t);
            l = NULL;
        }
        for (int p0 = 0; p0 < tile->keys; p0 += ACCUMULATE_CHUNK) {
            int p1 = lesser(tile->keys, p0 + ACCUMULATE_CHUNK);
            for (int i0 = 0; i0 < tile->queries; i0 += MR16) {
                for (int d0 = 0; d0 < D; d0 += 64) {
                    accumulate_chunk16(o, d0 == 0 ? l : NULL, carry, tile, alpha, p_t, v, i0,
                                       d0, p0, p1);
                }
            }
        }
        return;
    }
    for (int i0 = 0; i0 < tile->queries; i0 += MR16) {
        for (int d0 = 0; d0 < vector_cols; d0 += 64) {
            float *l_d0 = d0 == 0 ? l : NULL;
            switch (lesser(4, (vector_cols - d0) / 16)) {
            case 4: accumulate_tile16(4, o, l_d0, tile, alpha, p_t, v, i0, d0); break;
            case 3: accumulate_tile16(3, o, l_d0, tile, alpha, p_t, v, i0, d0); break;
            case 2: accumulate_tile16(2, o, l_d0, tile, alpha, p_t, v, i0, d0); break;
            default: accumulate_tile16(1, o, l_d0, tile, alpha, p_t, v, i0, d0); break;
            }
        }
    }
    if (vector_cols == 0 && l != NULL) {
        sum_weights(l, tile, alpha, p_t);
    }
    accumulate_columns(o, tile, alpha, p_t, v, vector_cols, D);
}

AVX512_CODE static void accumulate_avx512(float *o, float *l, const Tile *tile,
                                          const float *alpha, const float *p_t, const float *v) {
    accumulate_avx512_with(false, o, l, tile, alpha, p_t, v);
}

AVX512_CODE static void accumulate_avx512_apart(float *o, float *l, const Tile *tile,
                                                const float *alpha, const float *p_t,
                                                const float *v) {
    accumulate_avx512_with(true, o, l, tile, alpha, p_t, v);
}
#endif

// =========================================================================================
// Which kernels run here
// =========================================================================================

const Kernels SCALAR_KERNELS = {"scalar", 1, load_queries_scalar, scores_scalar,
                                online_softmax_scalar, accumulate_scalar};
#ifdef HAVE_VECTOR_KERNELS
static const Kernels AVX2_KERNELS = {"avx2", 8, load_queries_scalar, scores_avx2,
                                     online_softmax_avx2, accumulate_avx2};
static const Kernels AVX512_KERNELS = {"avx512", 16, load_queries_avx512, scores_avx512,
                                       online_softmax_avx512, accumulate_avx512};
static const Kernels AVX512_SUMS_APART = {"avx512", 16, load_queries_avx512, scores_avx512,
                                          online_softmax_avx512, accumulate_avx512_apart};
#endif

const Kernels *avx512_variant(bool sums_apart) {
    if (!cpu_runs("avx512")) {
        return NULL;
    }
#ifdef HAVE_VECTOR_KERNELS
    return sums_apart ? &AVX512_SUMS_APART : &AVX512_KERNELS;
#else
    return NULL;
#endif
}

// speed/cpu.h says which sets this CPU runs, speed/choice.h which one a run
// takes (ATTN_KERNELS).
const Kernels *kernels_named(const char *name) {
    if (!cpu_runs(name)) {
        return NULL;
    }
#ifdef HAVE_VECTOR_KERNELS
    if (strcmp(name, "avx512") == 0) {   // the variant this core wants (speed/blocks.h)
        return avx512_variant(bench_blocks_here(16).sums_apart);
    }
    if (strcmp(name, "avx2") == 0) {
        return &AVX2_KERNELS;
    }
#endif
    return &SCALAR_KERNELS;
}

const Kernels *kernels_best(void) {
    return kernels_named(kernels_wanted());
}
