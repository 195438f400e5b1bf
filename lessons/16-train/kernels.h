// kernels.h - where lesson 16 spends its time: a matrix product, softmax's rows, SwiGLU's
// silu, AdamW and the elementwise passes, each as a plain loop and as AVX2 / AVX-512 code
// that gives the same bits (kernels.c: the plain loops first, then each vector set). Which
// sets this CPU runs, and which one a run takes, is common/speed/'s (cpu.h, choice.h).
#ifndef KERNELS16_H
#define KERNELS16_H

#include <stdbool.h>

// One AdamW step's numbers, rounded to floats as PyTorch rounds them (adamw.c works them out).
typedef struct {
    float decay;                   // 1 - lr * weight_decay
    float beta1, one_minus_beta1;  // 0.9, 0.1
    float beta2, one_minus_beta2;  // 0.99, 0.01
    float correction2;             // sqrt(1 - beta2^step)
    float eps;
    float minus_step_size;         // -lr / (1 - beta1^step)
} AdamWStep;

typedef struct {
    const char *name;   // "scalar", "avx2", "avx512"
    // c (m x n) = a (m x k) @ b (k x n), or c += it (accumulate): every element summed over
    // p = 0, 1, ..., k-1 in order, each product rounded, then added (no fused multiply-add):
    //     sum = 0;  for p: sum = sum + a[i][p] * b[p][j];   c[i][j] = sum  (or c[i][j] + sum)
    // the order of the reference BLAS's sgemm and of PyTorch's own small bmm, so that every
    // product of the lesson is PyTorch's to the bit. a[i][p] = a[i*a_row + p*a_col] (a
    // transposed matrix is a_row = 1), b[p][j] = b[p*ldb + j], c[i][j] = c[i*ldc + j].
    void (*gemm)(float *c, int ldc, const float *a, int a_row, int a_col, const float *b,
                 int ldb, int m, int n, int k, bool accumulate);
    // softmax_exact_lastdim (common/exact/softmax_exact.h): `rows` rows of n, in place.
    void (*softmax_rows)(float *x, long rows, int n);
    // out = z / (1 + exp(-z)) over n contiguous floats, as PyTorch's F.silu: Sleef's exp in
    // whole blocks of 16, the C library's for the n % 16 left.
    void (*silu)(float *out, const float *z, long n);
    // its backward: s = 1 / (1 + exp(-z)), dz = dy * s * (1 + z * (1 - s)), the last
    // multiply-add fused, the exps as the forward's.
    void (*silu_backward)(float *dz, const float *dy, const float *z, long n);
    // AdamW on n weights (adamw.c has the formula): value, exp_avg and exp_avg_sq updated in
    // place from grad, with torch.optim.AdamW's roundings and fused multiply-adds.
    void (*adamw)(float *value, float *exp_avg, float *exp_avg_sq, const float *grad, long n,
                  const AdamWStep *step);
    // torch.norm(x, 2) of n floats: the square root of their sum of squares, added in
    // PyTorch's order (norm_scalar says which).
    float (*norm)(const float *x, long n);
    // The elementwise passes of the forward and the backward (residuals, SwiGLU's product,
    // RMSNorm's rows), over n contiguous floats (out may be a or b, or x):
    //     add: out = a + b        mul: out = a * b        scale: out = x * s
    void (*add)(float *out, const float *a, const float *b, long n);
    void (*mul)(float *out, const float *a, const float *b, long n);
    void (*scale)(float *out, const float *x, float s, long n);
    // sum_exact (common/exact/sum_exact.h): the sum of n floats in PyTorch's order.
    float (*sum)(const float *x, long n);
    // softmax_exact_backward_row (common/exact/softmax_exact.h): the sum over a row of
    // grad * out in PyTorch's order, what the softmax's backward takes from every row.
    float (*softmax_backward_row)(const float *grad, const float *out, int n);
    // Attention's scores (T, L) scaled and masked in place, query t seeing keys 0 .. start+t:
    //     att[t][s] = att[t][s] / scale  where s <= start + t,  -inf after
    void (*causal_scale)(float *att, int T, int L, int start, float scale);
    // The gradient of one query's scores from its weights' (n of each), scaled:
    //     d_scores[s] = ((dp[s] - row) * p[s]) / scale  for s < seen,  0 after
    void (*softmax_backward_scaled)(float *d_scores, const float *dp, const float *p, float row,
                                    float scale, int seen, int n);
    // A training step's time over its products' multiply-adds with these kernels, in ns, for
    // the budget's estimate (lesson/budget.h; train.c's steps_cost). Whole default runs took
    // 0.83 (scalar), 0.057 (avx2), 0.035 (avx512) on the 2-core AMD EPYC (Zen 4) virtual
    // machine of docs/fast-on-a-cpu.md with the other core busy (2026-11-27; its family and
    // model, the compiler and the flags not recorded; the Makefile's default was -O2), and
    // 0.82, 0.045, 0.035 on an Intel Xeon (family 6, model 167; gcc 12, 2026-12-07); these
    // round up, for a slower machine.
    double ns_per_multiply_add;
    // The rows of c its gemm computes together, the height of its blocks (12 with AVX-512,
    // which finishes with 8 or 4; 4 with AVX2; 1, the plain loop): --threads deals each
    // product out in whole blocks (threads.c).
    int row_block;
} Kernels;

// The kernels this run uses, set by kernels_choose(): ATTN_KERNELS=scalar, avx2 or avx512
// if set (make valgrind sets scalar), else the fastest this CPU has (common/speed/choice.h).
// All of them give the same bits.
extern const Kernels *kernels;
void kernels_choose(void);
// NULL if the kernels called `name` cannot run here (or there are none by that name).
const Kernels *kernels_named(const char *name);

#endif
