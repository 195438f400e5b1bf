// kernels.h - lesson 14's kernels: the few functions the tiled forward and
// backward spend their time in, each written three times: a scalar twin in
// plain C11 (the specification), an AVX2 + FMA version (8 floats a step) and
// an AVX-512 one (16; where it has none, it uses the AVX2 one), which give
// the scalar twin's results bit for bit. kernels.c has them, each vector
// version beside its twin; attention_backward.c calls them through a Kernels
// table picked at run time.
#ifndef KERNELS_H
#define KERNELS_H

#include <stdbool.h>

typedef struct {
    const char *name;   // "scalar", "avx2" or "avx512"
    int lanes;          // floats per vector register: 1, 8 or 16
    // C (m x n) = (accumulate ? C : 0) + A (m x k) @ B (k x n), each element
    // summed over p = 0 .. k-1 in order, one fused multiply-add a step:
    //     C[i][j] = fma(A[i][p], B[p][j], C[i][j])
    // C[i][j] = c[i*ldc + j], A[i][p] = a[i*a_row + p*a_col], B[p][j] = b[p*ldb + j]:
    // A is read by rows (a_col = 1) or by columns (a_row = 1, a transpose read in place).
    void (*matmul)(float *c, int ldc, const float *a, int a_row, int a_col, const float *b,
                   int ldb, int m, int n, int k, bool accumulate);
    // The forward's online softmax, one column per query, cols a multiple of 8:
    // m[j] = max(m[j], s[p][j]) over p; then s[p][j] = exp(s[p][j] - m[j]), sums[j] their sum.
    void (*column_max)(float *m, const float *s, int rows, int cols, int lds);
    void (*exp_columns)(float *s, float *sums, const float *m, int rows, int cols, int lds);
    // The backward's, one row per query, in place: s[j][p] becomes P = exp(s[j][p] - lse[j]),
    // or 0 where key p comes after query j (p > j + diagonal); then ds[j][p] becomes
    // dS = (P * (ds[j][p] - delta[j])) * scale.
    void (*softmax_backward)(float *s, float *ds, const float *lse, const float *delta, int rows,
                             int cols, int lds, float scale, int diagonal);
    // delta[j] = sum over d of x[j][d] * y[j][d], rows of length D, summed in matmul's
    // order (d = 0, 1, ..., one fma a step), so that a dot product of the same
    // two rows comes out the same whichever of the two computes it.
    void (*row_dots)(float *delta, const float *x, const float *y, int rows, int D);
    // y[i] = x[i] * s for i < count: a query block times 1/sqrt(D), as the forward scales it.
    void (*scale)(float *y, const float *x, long count, float s);
} Kernels;

extern const Kernels SCALAR_KERNELS;

// The kernels the run takes (common/speed/choice.h): those the environment
// variable ATTN_KERNELS names ("scalar", "avx2" or "avx512"; make valgrind
// sets scalar, since valgrind 3.19 cannot run AVX-512) when this CPU has
// them, else the fastest this CPU runs. Never NULL.
const Kernels *kernels_best(void);
// The kernels called `name` ("scalar", "avx2", "avx512"), or NULL where this
// CPU or compiler does not have them (common/speed/cpu.h).
const Kernels *kernels_named(const char *name);

// The kernels' exp: e^x = 2^n e^r with n = round(x / ln 2), |r| <= ln(2)/2,
// e^r by its Taylor polynomial of degree 7 (eight terms). On every float
// from EXP_LO to EXP_HI (where e^x is a normal float) it is within 0.94 ulp
// of e^x; below EXP_LO, and for -inf and NaN, it is 0 (so a masked score's
// P is exactly 0); above EXP_HI it is e^EXP_HI (softmax's arguments are at
// most 0). tools/exp_every_float_14.sh checks all of this on all 2^32 floats
// (the largest error, 0.9386 ulp, is at x = 26.688921); the tests check
// 16,384 points (within 1 ulp of expf).
#define EXP_LO (-87.33654f)   // ln(FLT_MIN): below it, e^x would be subnormal
#define EXP_HI 88.37f         // 2^n, and so the result, stay finite below this
float flash_expf(float x);

#endif
