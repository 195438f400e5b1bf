// kernels.h - lesson 14's kernels: the few functions the tiled forward and
// backward spend their time in (attention_backward.c's appendix A defines
// them), kept out of the lesson file so that it reads as the lesson.
#ifndef KERNELS_H
#define KERNELS_H

#include <stdbool.h>

// Everything the tiled paths spend their time in goes through these
// functions. Each exists as a scalar twin in plain C and as AVX2 and AVX-512
// versions that give the same bits; all of them are in the appendix after
// main(), chosen at run time (kernels_best).
typedef struct {
    const char *name;
    // C (m x n) = (accumulate ? C : 0) + A (m x k) @ B (k x n), each element
    // summed over p = 0 .. k-1 in order, one fused multiply-add a step:
    //     C[i][j] = fma(A[i][p], B[p][j], C[i][j])
    // C[i][j] = c[i*ldc + j], A[i][p] = a[i*a_row + p*a_col], B[p][j] = b[p*ldb + j].
    void (*matmul)(float *c, int ldc, const float *a, int a_row, int a_col, const float *b,
                   int ldb, int m, int n, int k, bool accumulate);
    // The forward's online softmax (lesson 13), columns = queries, cols a multiple of 8:
    // m[j] = max(m[j], s[p][j]) over p; then s[p][j] = exp(s[p][j] - m[j]), sums[j] their sum.
    void (*column_max)(float *m, const float *s, int rows, int cols, int lds);
    void (*exp_columns)(float *s, float *sums, const float *m, int rows, int cols, int lds);
    // The backward's, rows = queries, in place: s[j][p] becomes P = exp(s[j][p] - lse[j]),
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

#endif
