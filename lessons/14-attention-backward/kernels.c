// kernels.c - lesson 14's kernels (kernels.h says what each computes): an
// appendix to attention_backward.c, for the reader who wants to know how
// the tiled forward and backward are made fast on one CPU core.
//
// Each kernel is here up to three times, in this order:
//   - the scalar twin: plain C11, every fused multiply-add an fmaf(). It is
//     the specification, and what runs on a CPU without AVX2 or with a
//     compiler other than GCC and Clang.
//   - AVX2 + FMA: 8 floats per register, 16 registers.
//   - AVX-512: 16 floats per register, 32 registers (matmul and
//     softmax_backward, the two the backward spends its time in; the AVX-512
//     table takes the AVX2 version of the others, which any AVX-512 CPU runs).
// Each vector lane does the float operations of one turn of the scalar
// loop, in the same order, so all three give the same bits; the tests check
// it. The project builds with -ffp-contract=off (no multiply-add is fused
// unless written), so every fused multiply-add is spelled out: fmaf,
// _mm256_fmadd_ps, _mm512_fmadd_ps. The vector code is compiled for its
// instruction set by a target attribute on each function (AVX2_CODE,
// AVX512_CODE: common/speed/vectors.h), so the Makefile's flags stay the
// project's and the binary runs on any x86-64: kernels_named() asks the CPU
// at run time which versions it can run (common/speed/cpu.h), and
// kernels_best() takes the set ATTN_KERNELS names (common/speed/choice.h).
// docs/14-attention-backward.md links to what they were measured to do.
#include "kernels.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "speed/choice.h"
#include "speed/cpu.h"
#include "speed/vectors.h"

static int lesser(int a, int b) {
    return a < b ? a : b;
}

// =========================================================================================
// exp: e^x = 2^n e^r, n = round(x / ln 2), r = x - n ln 2 (|r| <= ln(2)/2)
// =========================================================================================
// r is computed in two steps, ln 2 split into a float and what that float
// lost, so that it is exact enough; e^r is its Taylor polynomial of degree 7,
// by Horner's rule; 2^n is a float built from its bits. kernels.h says how
// close it is, and how that is checked on every float.
#define LOG2E 0x1.715476p+0f        // 1 / ln 2
#define LN2_HI 0x1.62e430p-1f       // ln 2 rounded to float ...
#define LN2_LO (-0x1.05c610p-29f)   // ... and what that rounding lost
#define ROUND_MAGIC 0x1.8p23f       // 1.5 * 2^23: x / ln 2 + this rounds to an integer
#define C2 (1.0f / 2)
#define C3 (1.0f / 6)
#define C4 (1.0f / 24)
#define C5 (1.0f / 120)
#define C6 (1.0f / 720)
#define C7 (1.0f / 5040)

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

float flash_expf(float x) {
    x = EXP_HI < x ? EXP_HI : x;   // written this way round, a NaN stays NaN
    float t = fmaf(x, LOG2E, ROUND_MAGIC);
    float n = t - ROUND_MAGIC;
    float r = fmaf(n, -LN2_HI, x);
    r = fmaf(n, -LN2_LO, r);
    float poly = C7;
    poly = fmaf(poly, r, C6);
    poly = fmaf(poly, r, C5);
    poly = fmaf(poly, r, C4);
    poly = fmaf(poly, r, C3);
    poly = fmaf(poly, r, C2);
    poly = fmaf(poly, r, 1.0f);
    poly = fmaf(poly, r, 1.0f);
    uint32_t n_int = float_bits(t) - float_bits(ROUND_MAGIC);   // n, in the low bits
    float y = poly * bits_float((n_int + 127u) << 23);          // times 2^n
    return x >= EXP_LO ? y : 0.0f;
}

#ifdef HAVE_VECTOR_KERNELS
// flash_expf on 8 lanes, line for line.
AVX2_CODE static inline __m256 exp8(__m256 x) {
    x = _mm256_min_ps(_mm256_set1_ps(EXP_HI), x);   // min gives x where x is NaN
    __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(LOG2E), _mm256_set1_ps(ROUND_MAGIC));
    __m256 n = _mm256_sub_ps(t, _mm256_set1_ps(ROUND_MAGIC));
    __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-LN2_HI), x);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(-LN2_LO), r);
    __m256 poly = _mm256_set1_ps(C7);
    poly = _mm256_fmadd_ps(poly, r, _mm256_set1_ps(C6));
    poly = _mm256_fmadd_ps(poly, r, _mm256_set1_ps(C5));
    poly = _mm256_fmadd_ps(poly, r, _mm256_set1_ps(C4));
    poly = _mm256_fmadd_ps(poly, r, _mm256_set1_ps(C3));
    poly = _mm256_fmadd_ps(poly, r, _mm256_set1_ps(C2));
    poly = _mm256_fmadd_ps(poly, r, _mm256_set1_ps(1.0f));
    poly = _mm256_fmadd_ps(poly, r, _mm256_set1_ps(1.0f));
    __m256i n_int = _mm256_sub_epi32(_mm256_castps_si256(t),
                                     _mm256_set1_epi32((int)float_bits(ROUND_MAGIC)));
    __m256i two_n = _mm256_slli_epi32(_mm256_add_epi32(n_int, _mm256_set1_epi32(127)), 23);
    __m256 y = _mm256_mul_ps(poly, _mm256_castsi256_ps(two_n));
    return _mm256_and_ps(y, _mm256_cmp_ps(x, _mm256_set1_ps(EXP_LO), _CMP_GE_OQ));
}

// flash_expf on 16 lanes; poly * 2^n in one instruction (scalef: exact, as
// the product by 2^n is, for the n >= -126 that x >= EXP_LO leaves).
AVX512_CODE static inline __m512 exp16(__m512 x) {
    x = _mm512_min_ps(_mm512_set1_ps(EXP_HI), x);
    __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(LOG2E), _mm512_set1_ps(ROUND_MAGIC));
    __m512 n = _mm512_sub_ps(t, _mm512_set1_ps(ROUND_MAGIC));
    __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-LN2_HI), x);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(-LN2_LO), r);
    __m512 poly = _mm512_set1_ps(C7);
    poly = _mm512_fmadd_ps(poly, r, _mm512_set1_ps(C6));
    poly = _mm512_fmadd_ps(poly, r, _mm512_set1_ps(C5));
    poly = _mm512_fmadd_ps(poly, r, _mm512_set1_ps(C4));
    poly = _mm512_fmadd_ps(poly, r, _mm512_set1_ps(C3));
    poly = _mm512_fmadd_ps(poly, r, _mm512_set1_ps(C2));
    poly = _mm512_fmadd_ps(poly, r, _mm512_set1_ps(1.0f));
    poly = _mm512_fmadd_ps(poly, r, _mm512_set1_ps(1.0f));
    __m512 y = _mm512_scalef_ps(poly, n);
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(EXP_LO), _CMP_GE_OQ), y);
}

// Lanes 0 .. count-1 of 8 on (all bits set), the rest off: for maskload/maskstore.
AVX2_CODE static inline __m256i lanes8(int count) {
    __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), index);
}

// Lanes 0 .. count-1 of 16 (count may be below 0 or above 16).
static inline __mmask16 lanes16(int count) {
    return count >= 16 ? (__mmask16)0xFFFF : count <= 0 ? 0 : (__mmask16)((1u << count) - 1);
}
#endif

// =========================================================================================
// matmul: C (+)= A B, each element summed in order, one fused multiply-add a step
// =========================================================================================

static void matmul_scalar(float *c, int ldc, const float *a, int a_row, int a_col,
                          const float *b, int ldb, int m, int n, int k, bool accumulate) {
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
            float acc = accumulate ? c[(long)i * ldc + j] : 0.0f;
            for (int p = 0; p < k; p++) {
                acc = fmaf(a[(long)i * a_row + (long)p * a_col], b[(long)p * ldb + j], acc);
            }
            c[(long)i * ldc + j] = acc;
        }
    }
}

#ifdef HAVE_VECTOR_KERNELS
// The register tile (the "micro-kernel"): a block of C stays in registers
// while p runs, so each step loads one row of B, broadcasts one number of A
// per row, and does one FMA per register; the registers' sums are
// independent chains, which keep the FMA units busy while each FMA waits for
// the one before it on its register. Every element is still summed over p
// in order, one FMA a step: the scalar twin's bits.
//
// AVX2: MR2 x 16 of C in 12 registers (each row as two vectors of 8). A tile
// of fewer than MR2 rows repeats row mr-1 (memory that exists; not stored);
// of fewer than 16 columns, masked loads and stores (vmaskmovps), which full
// tiles avoid: plain loads and stores there.
enum { MR2 = 6, NR2 = 16 };

AVX2_CODE static void tile_avx2(float *c, int ldc, const float *a, int a_row, int a_col,
                                const float *b, int ldb, int mr, int nr, int kc, bool accumulate) {
    __m256i m0 = lanes8(nr), m1 = lanes8(nr - 8);
    const float *a_rows[MR2];
    __m256 c0[MR2], c1[MR2];
#pragma GCC unroll 8
    for (int i = 0; i < MR2; i++) {
        int row = i < mr ? i : mr - 1;
        a_rows[i] = a + (long)row * a_row;
        c0[i] = _mm256_setzero_ps();
        c1[i] = _mm256_setzero_ps();
        if (accumulate && nr == NR2) {
            c0[i] = _mm256_loadu_ps(c + (long)row * ldc);
            c1[i] = _mm256_loadu_ps(c + (long)row * ldc + 8);
        } else if (accumulate) {
            c0[i] = _mm256_maskload_ps(c + (long)row * ldc, m0);
            c1[i] = _mm256_maskload_ps(c + (long)row * ldc + 8, m1);
        }
    }
    if (nr == NR2) {
        for (int p = 0; p < kc; p++) {
            __m256 b0 = _mm256_loadu_ps(b + (long)p * ldb);
            __m256 b1 = _mm256_loadu_ps(b + (long)p * ldb + 8);
#pragma GCC unroll 8
            for (int i = 0; i < MR2; i++) {
                __m256 a_ip = _mm256_set1_ps(a_rows[i][(long)p * a_col]);
                c0[i] = _mm256_fmadd_ps(a_ip, b0, c0[i]);
                c1[i] = _mm256_fmadd_ps(a_ip, b1, c1[i]);
            }
        }
    } else {
        for (int p = 0; p < kc; p++) {
            __m256 b0 = _mm256_maskload_ps(b + (long)p * ldb, m0);
            __m256 b1 = _mm256_maskload_ps(b + (long)p * ldb + 8, m1);
#pragma GCC unroll 8
            for (int i = 0; i < MR2; i++) {
                __m256 a_ip = _mm256_set1_ps(a_rows[i][(long)p * a_col]);
                c0[i] = _mm256_fmadd_ps(a_ip, b0, c0[i]);
                c1[i] = _mm256_fmadd_ps(a_ip, b1, c1[i]);
            }
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR2; i++) {
        if (i < mr && nr == NR2) {
            _mm256_storeu_ps(c + (long)i * ldc, c0[i]);
            _mm256_storeu_ps(c + (long)i * ldc + 8, c1[i]);
        } else if (i < mr) {
            _mm256_maskstore_ps(c + (long)i * ldc, m0, c0[i]);
            _mm256_maskstore_ps(c + (long)i * ldc + 8, m1, c1[i]);
        }
    }
}

AVX2_CODE static void matmul_avx2(float *c, int ldc, const float *a, int a_row, int a_col,
                                  const float *b, int ldb, int m, int n, int k, bool accumulate) {
    for (int i0 = 0; i0 < m; i0 += MR2) {
        for (int j0 = 0; j0 < n; j0 += NR2) {
            tile_avx2(c + (long)i0 * ldc + j0, ldc, a + (long)i0 * a_row, a_row, a_col, b + j0,
                      ldb, lesser(MR2, m - i0), lesser(NR2, n - j0), k, accumulate);
        }
    }
}

// AVX-512: MR3 x 32 of C in 16 registers, per step two loads of B, one
// broadcast of A per row and 16 FMAs. B is loaded plainly in full tiles and
// with masks in tiles of fewer than 32 columns; C is always loaded and
// stored with masks (all lanes on in a full tile).
enum { MR3 = 8, NR3 = 32 };

AVX512_CODE static void tile_avx512(float *c, int ldc, const float *a, int a_row, int a_col,
                                    const float *b, int ldb, int mr, int nr, int kc,
                                    bool accumulate) {
    __mmask16 m0 = lanes16(nr), m1 = lanes16(nr - 16);
    const float *a_rows[MR3];
    __m512 c0[MR3], c1[MR3];
#pragma GCC unroll 8
    for (int i = 0; i < MR3; i++) {
        int row = i < mr ? i : mr - 1;
        a_rows[i] = a + (long)row * a_row;
        c0[i] = _mm512_setzero_ps();
        c1[i] = _mm512_setzero_ps();
        if (accumulate) {
            c0[i] = _mm512_maskz_loadu_ps(m0, c + (long)row * ldc);
            c1[i] = _mm512_maskz_loadu_ps(m1, c + (long)row * ldc + 16);
        }
    }
    if (nr == NR3) {
        for (int p = 0; p < kc; p++) {
            __m512 b0 = _mm512_loadu_ps(b + (long)p * ldb);
            __m512 b1 = _mm512_loadu_ps(b + (long)p * ldb + 16);
#pragma GCC unroll 8
            for (int i = 0; i < MR3; i++) {
                __m512 a_ip = _mm512_set1_ps(a_rows[i][(long)p * a_col]);
                c0[i] = _mm512_fmadd_ps(a_ip, b0, c0[i]);
                c1[i] = _mm512_fmadd_ps(a_ip, b1, c1[i]);
            }
        }
    } else {
        for (int p = 0; p < kc; p++) {
            __m512 b0 = _mm512_maskz_loadu_ps(m0, b + (long)p * ldb);
            __m512 b1 = _mm512_maskz_loadu_ps(m1, b + (long)p * ldb + 16);
#pragma GCC unroll 8
            for (int i = 0; i < MR3; i++) {
                __m512 a_ip = _mm512_set1_ps(a_rows[i][(long)p * a_col]);
                c0[i] = _mm512_fmadd_ps(a_ip, b0, c0[i]);
                c1[i] = _mm512_fmadd_ps(a_ip, b1, c1[i]);
            }
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR3; i++) {
        if (i < mr) {
            _mm512_mask_storeu_ps(c + (long)i * ldc, m0, c0[i]);
            _mm512_mask_storeu_ps(c + (long)i * ldc + 16, m1, c1[i]);
        }
    }
}

AVX512_CODE static void matmul_avx512(float *c, int ldc, const float *a, int a_row, int a_col,
                                      const float *b, int ldb, int m, int n, int k,
                                      bool accumulate) {
    for (int i0 = 0; i0 < m; i0 += MR3) {
        for (int j0 = 0; j0 < n; j0 += NR3) {
            tile_avx512(c + (long)i0 * ldc + j0, ldc, a + (long)i0 * a_row, a_row, a_col,
                        b + j0, ldb, lesser(MR3, m - i0), lesser(NR3, n - j0), k, accumulate);
        }
    }
}
#endif

// =========================================================================================
// column_max and exp_columns: the forward's online softmax, a column per query
// =========================================================================================

// max as the x86 max instruction has it: the second argument unless the first is larger.
static float max_float(float a, float b) {
    return a > b ? a : b;
}

static void column_max_scalar(float *m, const float *s, int rows, int cols, int lds) {
    for (int j = 0; j < cols; j++) {
        for (int p = 0; p < rows; p++) {
            m[j] = max_float(m[j], s[(long)p * lds + j]);
        }
    }
}

static void exp_columns_scalar(float *s, float *sums, const float *m, int rows, int cols,
                               int lds) {
    for (int j = 0; j < cols; j++) {
        float sum = 0.0f;
        for (int p = 0; p < rows; p++) {
            float e = flash_expf(s[(long)p * lds + j] - m[j]);
            s[(long)p * lds + j] = e;
            sum += e;
        }
        sums[j] = sum;
    }
}

#ifdef HAVE_VECTOR_KERNELS
AVX2_CODE static void column_max_avx2(float *m, const float *s, int rows, int cols, int lds) {
    for (int j = 0; j < cols; j += 8) {   // 8 columns, one per lane
        __m256 m8 = _mm256_loadu_ps(m + j);
        for (int p = 0; p < rows; p++) {
            m8 = _mm256_max_ps(m8, _mm256_loadu_ps(s + (long)p * lds + j));
        }
        _mm256_storeu_ps(m + j, m8);
    }
}

AVX2_CODE static void exp_columns_avx2(float *s, float *sums, const float *m, int rows, int cols,
                                       int lds) {
    for (int j = 0; j < cols; j += 8) {
        __m256 m8 = _mm256_loadu_ps(m + j), sum = _mm256_setzero_ps();
        for (int p = 0; p < rows; p++) {
            __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(s + (long)p * lds + j), m8));
            _mm256_storeu_ps(s + (long)p * lds + j, e);
            sum = _mm256_add_ps(sum, e);
        }
        _mm256_storeu_ps(sums + j, sum);
    }
}
#endif

// =========================================================================================
// softmax_backward: the one pass over a tile, P = exp(S - lse), dS = P (dP - delta) scale
// =========================================================================================

static void softmax_backward_scalar(float *s, float *ds, const float *lse, const float *delta,
                                    int rows, int cols, int lds, float scale, int diagonal) {
    for (int j = 0; j < rows; j++) {
        for (int p = 0; p < cols; p++) {
            float P = p > j + diagonal ? 0.0f : flash_expf(s[(long)j * lds + p] - lse[j]);
            float g = P * (ds[(long)j * lds + p] - delta[j]);
            s[(long)j * lds + p] = P;
            ds[(long)j * lds + p] = g * scale;
        }
    }
}

#ifdef HAVE_VECTOR_KERNELS
// 8 keys of a row at a time; the row's last keys (fewer than 8) go through the twin.
AVX2_CODE static void softmax_backward_avx2(float *s, float *ds, const float *lse,
                                            const float *delta, int rows, int cols, int lds,
                                            float scale, int diagonal) {
    __m256 scale8 = _mm256_set1_ps(scale);
    __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int j = 0; j < rows; j++) {
        float *s_j = s + (long)j * lds, *ds_j = ds + (long)j * lds;
        __m256 lse8 = _mm256_set1_ps(lse[j]), delta8 = _mm256_set1_ps(delta[j]);
        int p = 0;
        for (; p + 8 <= cols; p += 8) {
            __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(s_j + p), lse8));
            __m256i seen = _mm256_cmpgt_epi32(_mm256_set1_epi32(j + diagonal - p + 1), index);
            __m256 P = _mm256_and_ps(e, _mm256_castsi256_ps(seen));
            __m256 g = _mm256_mul_ps(P, _mm256_sub_ps(_mm256_loadu_ps(ds_j + p), delta8));
            _mm256_storeu_ps(s_j + p, P);
            _mm256_storeu_ps(ds_j + p, _mm256_mul_ps(g, scale8));
        }
        softmax_backward_scalar(s_j + p, ds_j + p, lse + j, delta + j, 1, cols - p, lds, scale,
                                j + diagonal - p);
    }
}

// 16 keys of a row at a time, the last ones with masked loads and stores.
AVX512_CODE static void softmax_backward_avx512(float *s, float *ds, const float *lse,
                                                const float *delta, int rows, int cols, int lds,
                                                float scale, int diagonal) {
    __m512 scale16 = _mm512_set1_ps(scale);
    for (int j = 0; j < rows; j++) {
        float *s_j = s + (long)j * lds, *ds_j = ds + (long)j * lds;
        __m512 lse16 = _mm512_set1_ps(lse[j]), delta16 = _mm512_set1_ps(delta[j]);
        for (int p = 0; p < cols; p += 16) {
            __mmask16 inside = lanes16(cols - p), seen = lanes16(j + diagonal - p + 1);
            __m512 x = _mm512_sub_ps(_mm512_maskz_loadu_ps(inside, s_j + p), lse16);
            __m512 P = _mm512_maskz_mov_ps(seen, exp16(x));
            __m512 g = _mm512_mul_ps(P, _mm512_sub_ps(_mm512_maskz_loadu_ps(inside, ds_j + p),
                                                      delta16));
            _mm512_mask_storeu_ps(s_j + p, inside, P);
            _mm512_mask_storeu_ps(ds_j + p, inside, _mm512_mul_ps(g, scale16));
        }
    }
}
#endif

// =========================================================================================
// row_dots (delta = rowsum(dO * O)) and scale (a query block times 1/sqrt(D))
// =========================================================================================

static void row_dots_scalar(float *delta, const float *x, const float *y, int rows, int D) {
    for (int j = 0; j < rows; j++) {
        float acc = 0.0f;
        for (int d = 0; d < D; d++) {
            acc = fmaf(x[(long)j * D + d], y[(long)j * D + d], acc);
        }
        delta[j] = acc;
    }
}

static void scale_scalar(float *y, const float *x, long count, float s) {
    for (long i = 0; i < count; i++) {
        y[i] = x[i] * s;
    }
}

#ifdef HAVE_VECTOR_KERNELS
// The scalar twin's chains, 8 rows at a time so that 8 independent chains
// keep the FMA units busy (fmaf is one FMA instruction in an AVX2 + FMA
// function; N rows a head: no need for more).
AVX2_CODE static void row_dots_avx2(float *delta, const float *x, const float *y, int rows, int D) {
    int j = 0;
    for (; j + 8 <= rows; j += 8) {
        float acc[8] = {0.0f};
        for (int d = 0; d < D; d++) {
#pragma GCC unroll 8
            for (int r = 0; r < 8; r++) {
                acc[r] = fmaf(x[(long)(j + r) * D + d], y[(long)(j + r) * D + d], acc[r]);
            }
        }
        memcpy(delta + j, acc, sizeof acc);
    }
    row_dots_scalar(delta + j, x + (long)j * D, y + (long)j * D, rows - j, D);
}

AVX2_CODE static void scale_avx2(float *y, const float *x, long count, float s) {
    long i = 0;
    for (; i + 8 <= count; i += 8) {
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_set1_ps(s)));
    }
    scale_scalar(y + i, x + i, count - i, s);
}
#endif

// =========================================================================================
// Which kernels run here
// =========================================================================================

const Kernels SCALAR_KERNELS = {"scalar", 1, matmul_scalar, column_max_scalar,
                                exp_columns_scalar, softmax_backward_scalar, row_dots_scalar,
                                scale_scalar};
#ifdef HAVE_VECTOR_KERNELS
static const Kernels AVX2_KERNELS = {"avx2", 8, matmul_avx2, column_max_avx2, exp_columns_avx2,
                                     softmax_backward_avx2, row_dots_avx2, scale_avx2};
static const Kernels AVX512_KERNELS = {"avx512", 16, matmul_avx512, column_max_avx2,
                                       exp_columns_avx2, softmax_backward_avx512,
                                       row_dots_avx2, scale_avx2};
#endif

// speed/cpu.h says which sets this CPU runs, speed/choice.h which one a run
// takes (ATTN_KERNELS).
const Kernels *kernels_named(const char *name) {
    if (!cpu_runs(name)) {
        return NULL;
    }
#ifdef HAVE_VECTOR_KERNELS
    if (strcmp(name, "avx512") == 0) {
        return &AVX512_KERNELS;
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
