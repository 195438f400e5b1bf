// kernels.c - lesson 16's hot loops, copied (lessons are standalone): each as the plain loop
// that says what it computes, and the same loop 8 (AVX2) or 16 (AVX-512) floats at a time,
// giving the same bits.
//
// Training spends its time multiplying matrices (each Linear's forward x @ W^T, its two
// backward products dY @ W and dY^T @ X, attention's two forward and four backward products
// per head) and in the exps of softmax and silu. The lesson needs PyTorch's bits, and
// PyTorch's reference BLAS adds each element's k products one after the other, in order,
// rounding each product and each sum.
// That order forbids splitting a sum over k, but every element of c is its own sum: the
// vector gemm computes 8 or 16 neighbouring elements of a row of c at once, one lane per
// element, each lane doing exactly what gemm_scalar does for its element, with a multiply
// and an add (a fused multiply-add rounds once and would change the last bit). Several rows
// of c (4 with AVX2, 12 with AVX-512) share each loaded row of b. The exps are Sleef's (what
// PyTorch's vector code calls), the scalar sleef_expf of common/exact/softmax_exact.c
// written for 8 lanes: the same operations, the same fused multiply-adds. The passes over
// every element (the residuals' adds, SwiGLU's product, RMSNorm's rows) round once an
// element, so any number go at a time; sum_exact's order (PyTorch's cascade) already adds
// vectors of 8 floats, which the AVX2 twin keeps in registers. The project builds with
// -ffp-contract=off, so the compiler fuses nothing on its own. Each vector function carries a
// target attribute (AVX2_CODE, AVX512_CODE: common/speed/vectors.h), so the binary runs on any
// x86-64; which sets this CPU runs, and which one a run takes (ATTN_KERNELS), is
// common/speed/cpu.h's and choice.h's, asked at run time (the end of this file).
#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exact/softmax_exact.h"
#include "exact/sum_exact.h"
#include "speed/choice.h"
#include "speed/cpu.h"
#include "speed/vectors.h"

// --- the scalar loop: what every kernel computes ------------------------------------------

static void gemm_scalar(float *c, int ldc, const float *a, int a_row, int a_col, const float *b,
                   int ldb, int m, int n, int k, bool accumulate) {
    for (int i = 0; i < m; i++) {
        const float *a_i = a + (long)i * a_row;      // row i of a, its elements a_col apart
        float *c_i = c + (long)i * ldc;
        for (int j = 0; j < n; j++) {
            float sum = 0.0f;
            for (int p = 0; p < k; p++) {
                sum = sum + a_i[(long)p * a_col] * b[(long)p * ldb + j];
            }
            c_i[j] = accumulate ? c_i[j] + sum : sum;
        }
    }
}

static void silu_scalar(float *out, const float *z, long n) {
    long whole = n / 16 * 16;
    for (long i = 0; i < n; i++) {
        out[i] = z[i] / (1.0f + (i < whole ? sleef_expf(-z[i]) : expf(-z[i])));
    }
}

static void silu_backward_scalar(float *dz, const float *dy, const float *z, long n) {
    long whole = n / 16 * 16;
    for (long i = 0; i < n; i++) {
        float sigmoid = 1.0f / (1.0f + (i < whole ? sleef_expf(-z[i]) : expf(-z[i])));
        dz[i] = dy[i] * sigmoid * fmaf(z[i], 1.0f - sigmoid, 1.0f);
    }
}

static void adamw_scalar(float *value, float *exp_avg, float *exp_avg_sq, const float *grad,
                         long n, const AdamWStep *k) {
    for (long i = 0; i < n; i++) {
        float g = grad[i];
        value[i] = value[i] * k->decay;
        exp_avg[i] = fmaf(g, k->one_minus_beta1, exp_avg[i] * k->beta1);
        exp_avg_sq[i] = fmaf(k->one_minus_beta2 * g, g, exp_avg_sq[i] * k->beta2);
        float denom = sqrtf(exp_avg_sq[i]) / k->correction2 + k->eps;
        value[i] = value[i] + k->minus_step_size * exp_avg[i] / denom;
    }
}

// torch.norm(x, 2) over n floats as PyTorch's vectorised kernel adds: 8 lanes of running
// sums of squares, each step a fused multiply-add, the lanes added in order; then the
// n % 8 left over, as the compiler built that loop: 4 at a time while 4 remain (each square
// rounded, then added), the last 1 to 3 fused; then the square root.
static float norm_tail(float sum, const float *x, long i, long n) {
    for (; i + 4 <= n; i += 4) {
        for (int k = 0; k < 4; k++) {
            sum = sum + x[i + k] * x[i + k];
        }
    }
    for (; i < n; i++) {
        sum = fmaf(x[i], x[i], sum);
    }
    return sqrtf(sum);
}

static float norm_scalar(const float *x, long n) {
    float lane[8] = {0};
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        for (int l = 0; l < 8; l++) {
            lane[l] = fmaf(x[i + l], x[i + l], lane[l]);
        }
    }
    float sum = lane[0];
    for (int l = 1; l < 8; l++) {
        sum = sum + lane[l];
    }
    return norm_tail(sum, x, i, n);
}

// The elementwise passes: one rounding an element, so 8 lanes give the same bits as one.
static void add_scalar(float *out, const float *a, const float *b, long n) {
    for (long i = 0; i < n; i++) {
        out[i] = a[i] + b[i];
    }
}

static void mul_scalar(float *out, const float *a, const float *b, long n) {
    for (long i = 0; i < n; i++) {
        out[i] = a[i] * b[i];
    }
}

static void scale_scalar(float *out, const float *x, float s, long n) {
    for (long i = 0; i < n; i++) {
        out[i] = x[i] * s;
    }
}

// Attention's scores, scaled and masked: row t of (T, L) sees keys 0 .. start + t.
static void causal_scale_scalar(float *att, int T, int L, int start, float scale) {
    for (int t = 0; t < T; t++) {
        for (int s = 0; s < L; s++) {
            att[t * L + s] = s <= start + t ? att[t * L + s] / scale : -INFINITY;
        }
    }
}

// Softmax's backward on one row, scaled: the gradient of the scores a query saw (s < seen).
static void softmax_backward_scaled_scalar(float *d_scores, const float *dp, const float *p,
                                           float row, float scale, int seen, int n) {
    for (int s = 0; s < n; s++) {
        d_scores[s] = s < seen ? ((dp[s] - row) * p[s]) / scale : 0.0f;
    }
}

static const Kernels SCALAR = {"scalar", gemm_scalar, softmax_exact_lastdim, silu_scalar,
                               silu_backward_scalar, adamw_scalar, norm_scalar, add_scalar,
                               mul_scalar, scale_scalar, sum_exact, log_softmax_exact_lastdim,
                               log_softmax_exact_backward_lastdim, softmax_exact_backward_row,
                               causal_scale_scalar, softmax_backward_scaled_scalar, 1.0};

#ifdef HAVE_VECTOR_KERNELS   // speed/vectors.h: x86-64, GCC or Clang

// --- AVX2: 8 columns per register ---------------------------------------------------------

// Rows i .. i+3 of c, columns j .. j+15: 8 running sums of 8 lanes.
AVX2_CODE static void block_4x16_avx2(float *c, int ldc, const float *a, int a_row, int a_col,
                                      const float *b, int ldb, int k, bool accumulate) {
    __m256 s00 = _mm256_setzero_ps(), s01 = _mm256_setzero_ps();
    __m256 s10 = _mm256_setzero_ps(), s11 = _mm256_setzero_ps();
    __m256 s20 = _mm256_setzero_ps(), s21 = _mm256_setzero_ps();
    __m256 s30 = _mm256_setzero_ps(), s31 = _mm256_setzero_ps();
    for (int p = 0; p < k; p++) {
        const float *a_p = a + (long)p * a_col, *b_p = b + (long)p * ldb;
        __m256 b0 = _mm256_loadu_ps(b_p), b1 = _mm256_loadu_ps(b_p + 8);
        __m256 a0 = _mm256_set1_ps(a_p[0]), a1 = _mm256_set1_ps(a_p[a_row]);
        __m256 a2 = _mm256_set1_ps(a_p[2L * a_row]), a3 = _mm256_set1_ps(a_p[3L * a_row]);
        s00 = _mm256_add_ps(s00, _mm256_mul_ps(a0, b0));
        s01 = _mm256_add_ps(s01, _mm256_mul_ps(a0, b1));
        s10 = _mm256_add_ps(s10, _mm256_mul_ps(a1, b0));
        s11 = _mm256_add_ps(s11, _mm256_mul_ps(a1, b1));
        s20 = _mm256_add_ps(s20, _mm256_mul_ps(a2, b0));
        s21 = _mm256_add_ps(s21, _mm256_mul_ps(a2, b1));
        s30 = _mm256_add_ps(s30, _mm256_mul_ps(a3, b0));
        s31 = _mm256_add_ps(s31, _mm256_mul_ps(a3, b1));
    }
    __m256 sums[8] = {s00, s01, s10, s11, s20, s21, s30, s31};
    for (int r = 0; r < 4; r++) {
        for (int h = 0; h < 2; h++) {
            float *c_rh = c + (long)r * ldc + 8 * h;
            __m256 s = sums[2 * r + h];
            _mm256_storeu_ps(c_rh, accumulate ? _mm256_add_ps(_mm256_loadu_ps(c_rh), s) : s);
        }
    }
}

// Rows i .. i+3 of c, columns j .. j+7: the tail of a row too short for 16.
AVX2_CODE static void block_4x8_avx2(float *c, int ldc, const float *a, int a_row, int a_col,
                                     const float *b, int ldb, int k, bool accumulate) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    for (int p = 0; p < k; p++) {
        const float *a_p = a + (long)p * a_col;
        __m256 b0 = _mm256_loadu_ps(b + (long)p * ldb);
        s0 = _mm256_add_ps(s0, _mm256_mul_ps(_mm256_set1_ps(a_p[0]), b0));
        s1 = _mm256_add_ps(s1, _mm256_mul_ps(_mm256_set1_ps(a_p[a_row]), b0));
        s2 = _mm256_add_ps(s2, _mm256_mul_ps(_mm256_set1_ps(a_p[2L * a_row]), b0));
        s3 = _mm256_add_ps(s3, _mm256_mul_ps(_mm256_set1_ps(a_p[3L * a_row]), b0));
    }
    __m256 sums[4] = {s0, s1, s2, s3};
    for (int r = 0; r < 4; r++) {
        float *c_r = c + (long)r * ldc;
        _mm256_storeu_ps(c_r, accumulate ? _mm256_add_ps(_mm256_loadu_ps(c_r), sums[r]) : sums[r]);
    }
}

// One row of c, columns j .. j+7.
AVX2_CODE static void block_1x8_avx2(float *c, const float *a, int a_col, const float *b, int ldb,
                                     int k, bool accumulate) {
    __m256 s = _mm256_setzero_ps();
    for (int p = 0; p < k; p++) {
        s = _mm256_add_ps(s, _mm256_mul_ps(_mm256_set1_ps(a[(long)p * a_col]),
                                           _mm256_loadu_ps(b + (long)p * ldb)));
    }
    _mm256_storeu_ps(c, accumulate ? _mm256_add_ps(_mm256_loadu_ps(c), s) : s);
}

// What the blocks of rows left: rows i .. m-1 whole, and in rows 0 .. i-1 the columns
// from `done` on: 8 at a time, then one by one.
AVX2_CODE static void gemm_rest_avx2(float *c, int ldc, const float *a, int a_row, int a_col,
                                     const float *b, int ldb, int m, int n, int k, bool accumulate,
                                     int i, int done) {
    if (i == m && done == n) {   // nothing left (attention's small products call this often)
        return;
    }
    int eights = n / 8 * 8;
    for (int r = 0; r < m; r++) {
        for (int j = r < i ? done : 0; j < eights; j += 8) {
            block_1x8_avx2(c + (long)r * ldc + j, a + (long)r * a_row, a_col, b + j, ldb, k,
                           accumulate);
        }
        gemm_scalar(c + (long)r * ldc + eights, ldc, a + (long)r * a_row, a_row, a_col,
                    b + eights, ldb, 1, n - eights, k, accumulate);
    }
}

AVX2_CODE static void gemm_avx2(float *c, int ldc, const float *a, int a_row, int a_col,
                                const float *b, int ldb, int m, int n, int k, bool accumulate) {
    int sixteens = n / 16 * 16, eights = n / 8 * 8, i = 0;
    for (; i + 4 <= m; i += 4) {
        float *c_i = c + (long)i * ldc;
        const float *a_i = a + (long)i * a_row;
        for (int j = 0; j < sixteens; j += 16) {
            block_4x16_avx2(c_i + j, ldc, a_i, a_row, a_col, b + j, ldb, k, accumulate);
        }
        if (eights > sixteens) {
            block_4x8_avx2(c_i + sixteens, ldc, a_i, a_row, a_col, b + sixteens, ldb, k,
                           accumulate);
        }
    }
    gemm_rest_avx2(c, ldc, a, a_row, a_col, b, ldb, m, n, k, accumulate, i, eights);
}

// sleef_expf for 8 lanes (softmax_exact.c has the scalar one and says how it works).
AVX2_CODE static __m256 exp_avx2(__m256 d) {
    __m256 log2e = _mm256_set1_ps(1.442695040888963407359924681001892137426645954152985934f);
    __m256 q = _mm256_round_ps(_mm256_mul_ps(d, log2e),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);   // rintf
    __m256 s = _mm256_fmadd_ps(q, _mm256_set1_ps(-0.693145751953125f), d);
    s = _mm256_fmadd_ps(q, _mm256_set1_ps(-1.428606765330187045e-06f), s);
    __m256 u = _mm256_set1_ps(0.000198527617612853646278381f);
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.00139304355252534151077271f));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.00833336077630519866943359f));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.0416664853692054748535156f));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.166666671633720397949219f));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.5f));
    u = _mm256_add_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(_mm256_mul_ps(s, s), u, s));
    __m256i qi = _mm256_cvtps_epi32(q);
    __m256i h = _mm256_srai_epi32(qi, 1);                          // floor(q / 2)
    __m256i bias = _mm256_set1_epi32(127);
    __m256 two_h = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, bias), 23));
    __m256 two_rest = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(qi, h), bias), 23));
    u = _mm256_mul_ps(_mm256_mul_ps(u, two_h), two_rest);
    __m256 tiny = _mm256_cmp_ps(d, _mm256_set1_ps(-104.0f), _CMP_LT_OQ);   // Sleef's cut-offs
    __m256 huge = _mm256_cmp_ps(d, _mm256_set1_ps(100.0f), _CMP_GT_OQ);
    u = _mm256_blendv_ps(_mm256_blendv_ps(u, _mm256_setzero_ps(), tiny), _mm256_set1_ps(INFINITY),
                         huge);
    return _mm256_blendv_ps(u, d, _mm256_cmp_ps(d, d, _CMP_UNORD_Q));   // NaN stays NaN
}

// softmax_exact_lastdim's row, 8 lanes at a time: the lanes are its 8 running sums.
AVX2_CODE static void softmax_rows_avx2(float *x, long rows, int n) {
    if (n < 8) {
        softmax_exact_lastdim(x, rows, n);
        return;
    }
    int whole = n / 8 * 8;
    for (long r = 0; r < rows; r++) {
        float *row = x + r * n;
        __m256 most = _mm256_loadu_ps(row);   // the max: exact in any order (no NaN here)
        for (int i = 8; i < whole; i += 8) {
            most = _mm256_max_ps(most, _mm256_loadu_ps(row + i));
        }
        float lanes[8], max = row[0];
        _mm256_storeu_ps(lanes, most);
        for (int l = 0; l < 8; l++) {
            max = lanes[l] > max ? lanes[l] : max;
        }
        for (int i = whole; i < n; i++) {
            max = row[i] > max ? row[i] : max;
        }
        __m256 m = _mm256_set1_ps(max), sums = _mm256_setzero_ps();
        __m256 minus_inf = _mm256_set1_ps(-INFINITY);
        for (int i = 0; i < whole; i += 8) {
            __m256 x8 = _mm256_loadu_ps(row + i);
            // Eight -inf (attention's masked keys, sampling's cut tokens) have exp 0: stored
            // as such, without the exp, and not added (sums + 0 is sums: an exp is never -0,
            // so no lane holds -0). Not when the max itself is -inf: exp(-inf - -inf) is NaN.
            if (max > -INFINITY &&
                _mm256_movemask_ps(_mm256_cmp_ps(x8, minus_inf, _CMP_EQ_OQ)) == 0xff) {
                _mm256_storeu_ps(row + i, _mm256_setzero_ps());
                continue;
            }
            __m256 e = exp_avx2(_mm256_sub_ps(x8, m));
            _mm256_storeu_ps(row + i, e);
            sums = _mm256_add_ps(sums, e);   // the first: 0 + e = e
        }
        float lane[8];
        _mm256_storeu_ps(lane, sums);
        for (int i = whole; i < n; i++) {   // the last n % 8 go into lanes 0, 1, ...
            row[i] = sleef_expf(row[i] - max);
            lane[i - whole] += row[i];
        }
        float sum = ((lane[0] + lane[4]) + (lane[2] + lane[6])) +
                    ((lane[1] + lane[5]) + (lane[3] + lane[7]));
        __m256 inv = _mm256_set1_ps(1.0f / sum);
        for (int i = 0; i < whole; i += 8) {
            _mm256_storeu_ps(row + i, _mm256_mul_ps(_mm256_loadu_ps(row + i), inv));
        }
        for (int i = whole; i < n; i++) {
            row[i] *= 1.0f / sum;
        }
    }
}

// The 8 lanes of a row's sum folded as common/exact/softmax_exact.c's kernel_sum folds them.
static float fold_lanes(const float *lane) {
    float even = (lane[0] + lane[4]) + (lane[2] + lane[6]);
    float odd = (lane[1] + lane[5]) + (lane[3] + lane[7]);
    return even + odd;
}

// log_softmax_exact_lastdim's row (PyTorch's _vec_log_softmax_lastdim), 8 lanes at a time:
// the max, exp(x - max) summed in the softmax's lanes, Sleef's log of the sum (once a row,
// the scalar sleef_logf), then (x - max) - log(sum), two roundings.
AVX2_CODE static void log_softmax_rows_avx2(float *out, const float *x, long rows, int n) {
    if (n < 8) {
        log_softmax_exact_lastdim(out, x, rows, n);
        return;
    }
    int whole = n / 8 * 8;
    for (long r = 0; r < rows; r++) {
        const float *row = x + r * n;
        float *o = out + r * n;
        __m256 most = _mm256_loadu_ps(row);   // the max: exact in any order (no NaN here)
        for (int i = 8; i < whole; i += 8) {
            most = _mm256_max_ps(most, _mm256_loadu_ps(row + i));
        }
        float lane[8], max = row[0];
        _mm256_storeu_ps(lane, most);
        for (int l = 0; l < 8; l++) {
            max = lane[l] > max ? lane[l] : max;
        }
        for (int i = whole; i < n; i++) {
            max = row[i] > max ? row[i] : max;
        }
        __m256 m = _mm256_set1_ps(max), sums = _mm256_setzero_ps();
        for (int i = 0; i < whole; i += 8) {   // out holds exp(x - max) for a moment
            __m256 e = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(row + i), m));
            _mm256_storeu_ps(o + i, e);
            sums = i == 0 ? e : _mm256_add_ps(sums, e);
        }
        _mm256_storeu_ps(lane, sums);
        for (int i = whole; i < n; i++) {      // the last n % 8 go into lanes 0, 1, ...
            o[i] = sleef_expf(row[i] - max);
            lane[i - whole] += o[i];
        }
        float log_sum = sleef_logf(fold_lanes(lane));
        __m256 log_sum8 = _mm256_set1_ps(log_sum);
        for (int i = 0; i < whole; i += 8) {
            __m256 shifted = _mm256_sub_ps(_mm256_loadu_ps(row + i), m);
            _mm256_storeu_ps(o + i, _mm256_sub_ps(shifted, log_sum8));
        }
        for (int i = whole; i < n; i++) {
            o[i] = (row[i] - max) - log_sum;
        }
    }
}

// log_softmax_exact_backward_lastdim's row: the sum of the gradient in the softmax's lanes,
// then grad - exp(out) * sum, one fused multiply-add an element.
AVX2_CODE static void log_softmax_backward_rows_avx2(float *grad_input, const float *grad,
                                                     const float *out, long rows, int n) {
    if (n < 8) {
        log_softmax_exact_backward_lastdim(grad_input, grad, out, rows, n);
        return;
    }
    int whole = n / 8 * 8;
    for (long r = 0; r < rows; r++) {
        const float *g = grad + r * n, *y = out + r * n;
        float *gi = grad_input + r * n;
        __m256 lanes = _mm256_loadu_ps(g);
        for (int i = 8; i < whole; i += 8) {
            lanes = _mm256_add_ps(lanes, _mm256_loadu_ps(g + i));
        }
        float lane[8];
        _mm256_storeu_ps(lane, lanes);
        for (int i = whole; i < n; i++) {
            lane[i - whole] += g[i];
        }
        float sum = fold_lanes(lane);
        __m256 sum8 = _mm256_set1_ps(sum);
        for (int i = 0; i < whole; i += 8) {   // -(exp(y) * sum) + g, rounded once
            __m256 e = exp_avx2(_mm256_loadu_ps(y + i));
            _mm256_storeu_ps(gi + i, _mm256_fnmadd_ps(e, sum8, _mm256_loadu_ps(g + i)));
        }
        for (int i = whole; i < n; i++) {
            gi[i] = fmaf(-sleef_expf(y[i]), sum, g[i]);
        }
    }
}

AVX2_CODE static void silu_avx2(float *out, const float *z, long n) {
    long whole = n / 16 * 16;
    __m256 one = _mm256_set1_ps(1.0f);
    for (long i = 0; i < whole; i += 8) {
        __m256 zi = _mm256_loadu_ps(z + i);
        __m256 e = exp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), zi));
        _mm256_storeu_ps(out + i, _mm256_div_ps(zi, _mm256_add_ps(one, e)));
    }
    silu_scalar(out + whole, z + whole, n - whole);   // fewer than 16: expf, as PyTorch
}

AVX2_CODE static void silu_backward_avx2(float *dz, const float *dy, const float *z, long n) {
    long whole = n / 16 * 16;
    __m256 one = _mm256_set1_ps(1.0f);
    for (long i = 0; i < whole; i += 8) {
        __m256 zi = _mm256_loadu_ps(z + i);
        __m256 e = exp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), zi));
        __m256 sigmoid = _mm256_div_ps(one, _mm256_add_ps(one, e));
        __m256 slope = _mm256_fmadd_ps(zi, _mm256_sub_ps(one, sigmoid), one);
        __m256 dy_sigmoid = _mm256_mul_ps(_mm256_loadu_ps(dy + i), sigmoid);
        _mm256_storeu_ps(dz + i, _mm256_mul_ps(dy_sigmoid, slope));
    }
    silu_backward_scalar(dz + whole, dy + whole, z + whole, n - whole);
}

AVX2_CODE static void adamw_avx2(float *value, float *exp_avg, float *exp_avg_sq, const float *grad,
                                 long n, const AdamWStep *k) {
    __m256 decay = _mm256_set1_ps(k->decay), beta1 = _mm256_set1_ps(k->beta1);
    __m256 one_minus_beta1 = _mm256_set1_ps(k->one_minus_beta1);
    __m256 beta2 = _mm256_set1_ps(k->beta2), one_minus_beta2 = _mm256_set1_ps(k->one_minus_beta2);
    __m256 correction2 = _mm256_set1_ps(k->correction2), eps = _mm256_set1_ps(k->eps);
    __m256 minus_step_size = _mm256_set1_ps(k->minus_step_size);
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 g = _mm256_loadu_ps(grad + i);
        __m256 w = _mm256_mul_ps(_mm256_loadu_ps(value + i), decay);
        __m256 m = _mm256_fmadd_ps(g, one_minus_beta1,
                                   _mm256_mul_ps(_mm256_loadu_ps(exp_avg + i), beta1));
        __m256 v = _mm256_fmadd_ps(_mm256_mul_ps(one_minus_beta2, g), g,
                                   _mm256_mul_ps(_mm256_loadu_ps(exp_avg_sq + i), beta2));
        __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(v), correction2), eps);
        w = _mm256_add_ps(w, _mm256_div_ps(_mm256_mul_ps(minus_step_size, m), denom));
        _mm256_storeu_ps(exp_avg + i, m);
        _mm256_storeu_ps(exp_avg_sq + i, v);
        _mm256_storeu_ps(value + i, w);
    }
    adamw_scalar(value + i, exp_avg + i, exp_avg_sq + i, grad + i, n - i, k);
}

// norm_scalar's 8 lanes in one register.
AVX2_CODE static float norm_avx2(const float *x, long n) {
    __m256 lanes = _mm256_setzero_ps();
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        lanes = _mm256_fmadd_ps(v, v, lanes);
    }
    float lane[8];
    _mm256_storeu_ps(lane, lanes);
    float sum = lane[0];
    for (int l = 1; l < 8; l++) {
        sum = sum + lane[l];
    }
    return norm_tail(sum, x, i, n);
}

AVX2_CODE static void add_avx2(float *out, const float *a, const float *b, long n) {
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    }
    add_scalar(out + i, a + i, b + i, n - i);
}

AVX2_CODE static void mul_avx2(float *out, const float *a, const float *b, long n) {
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    }
    mul_scalar(out + i, a + i, b + i, n - i);
}

AVX2_CODE static void scale_avx2(float *out, const float *x, float s, long n) {
    __m256 s8 = _mm256_set1_ps(s);
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), s8));
    }
    scale_scalar(out + i, x + i, s, n - i);
}

// ceil(log2(n)) for n >= 1, 0 for n <= 1 (as common/exact/sum_exact.c has it).
static int ceil_log2(long n) {
    int bits = 0;
    while ((1L << bits) < n) {
        bits += 1;
    }
    return bits;
}

// sum_exact (common/exact/sum_exact.c, which explains the order) with its vectors of 8
// floats in registers: four running sums, value v of the row into sum v % 4, kept at up to
// four levels of its cascade; then the floats past the last whole vector, then the lanes.
AVX2_CODE static float sum_avx2(const float *x, long n) {
    if (n < 8) {
        return sum_exact(x, n);
    }
    long vectors = n / 8, count = vectors / 4;   // count: groups of four vectors
    int power = ceil_log2(count) / 4;
    power = power > 4 ? power : 4;
    long step = 1L << power, mask = step - 1;
    int levels = count >= step ? 4 : 1;
    __m256 acc[4][4];   // [level][running sum]
    for (int level = 0; level < 4; level++) {
        for (int k = 0; k < 4; k++) {
            acc[level][k] = _mm256_setzero_ps();
        }
    }
    long g = 0;
    while (g + step <= count) {
        for (long j = 0; j < step; j++, g++) {
            for (int k = 0; k < 4; k++) {
                acc[0][k] = _mm256_add_ps(acc[0][k], _mm256_loadu_ps(x + g * 32 + k * 8));
            }
        }
        for (int level = 1; level < 4; level++) {
            for (int k = 0; k < 4; k++) {
                acc[level][k] = _mm256_add_ps(acc[level][k], acc[level - 1][k]);
                acc[level - 1][k] = _mm256_setzero_ps();
            }
            if ((g & (mask << (level * power))) != 0) {
                break;
            }
        }
    }
    for (; g < count; g++) {
        for (int k = 0; k < 4; k++) {
            acc[0][k] = _mm256_add_ps(acc[0][k], _mm256_loadu_ps(x + g * 32 + k * 8));
        }
    }
    for (int level = 1; level < levels; level++) {
        for (int k = 0; k < 4; k++) {
            acc[0][k] = _mm256_add_ps(acc[0][k], acc[level][k]);
        }
    }
    __m256 lanes8 = acc[0][0];
    for (long v = count * 4; v < vectors; v++) {   // the vectors past the last group
        lanes8 = _mm256_add_ps(lanes8, _mm256_loadu_ps(x + v * 8));
    }
    for (int k = 1; k < 4; k++) {
        lanes8 = _mm256_add_ps(lanes8, acc[0][k]);
    }
    float lanes[8], sum = 0.0f;
    _mm256_storeu_ps(lanes, lanes8);
    for (long i = vectors * 8; i < n; i++) {
        sum += x[i];
    }
    for (int l = 0; l < 8; l++) {
        sum += lanes[l];
    }
    return sum;
}

// softmax_exact_backward_row (common/exact/softmax_exact.c says the order): lane l sums
// grad * out over i = l, l + 8, ..., the first product rounded, the rest fused; then the
// lanes in pairs.
AVX2_CODE static float softmax_backward_row_avx2(const float *grad, const float *out, int n) {
    if (n < 8) {
        return softmax_exact_backward_row(grad, out, n);
    }
    __m256 lanes8 = _mm256_mul_ps(_mm256_loadu_ps(grad), _mm256_loadu_ps(out));
    int i = 8;
    for (; i + 8 <= n; i += 8) {
        lanes8 = _mm256_fmadd_ps(_mm256_loadu_ps(grad + i), _mm256_loadu_ps(out + i), lanes8);
    }
    float lane[8];
    _mm256_storeu_ps(lane, lanes8);
    for (; i < n; i++) {   // the last n % 8 into lanes 0, 1, ...
        lane[i % 8] = fmaf(grad[i], out[i], lane[i % 8]);
    }
    float even = (lane[0] + lane[4]) + (lane[2] + lane[6]);
    float odd = (lane[1] + lane[5]) + (lane[3] + lane[7]);
    return even + odd;
}

// Lanes s .. s+7 where s < seen: all ones; 0 elsewhere.
AVX2_CODE static __m256 lanes_below(int s, int seen) {
    __m256i index = _mm256_add_epi32(_mm256_set1_epi32(s),
                                     _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(seen), index));
}

AVX2_CODE static void causal_scale_avx2(float *att, int T, int L, int start, float scale) {
    __m256 scale8 = _mm256_set1_ps(scale), minus_inf = _mm256_set1_ps(-INFINITY);
    for (int t = 0; t < T; t++) {
        float *row = att + t * L;
        int s = 0;
        for (; s + 8 <= L; s += 8) {
            if (s > start + t) {   // eight keys after the query: -inf, nothing to divide
                _mm256_storeu_ps(row + s, minus_inf);
                continue;
            }
            __m256 scaled = _mm256_div_ps(_mm256_loadu_ps(row + s), scale8);
            _mm256_storeu_ps(row + s, _mm256_blendv_ps(minus_inf, scaled,
                                                       lanes_below(s, start + t + 1)));
        }
        for (; s < L; s++) {
            row[s] = s <= start + t ? row[s] / scale : -INFINITY;
        }
    }
}

AVX2_CODE static void softmax_backward_scaled_avx2(float *d_scores, const float *dp, const float *p,
                                                   float row, float scale, int seen, int n) {
    __m256 row8 = _mm256_set1_ps(row), scale8 = _mm256_set1_ps(scale);
    int s = 0;
    for (; s + 8 <= n; s += 8) {
        if (s >= seen) {   // eight keys the query did not see: 0, nothing to compute
            _mm256_storeu_ps(d_scores + s, _mm256_setzero_ps());
            continue;
        }
        __m256 d = _mm256_sub_ps(_mm256_loadu_ps(dp + s), row8);
        d = _mm256_div_ps(_mm256_mul_ps(d, _mm256_loadu_ps(p + s)), scale8);
        _mm256_storeu_ps(d_scores + s, _mm256_and_ps(d, lanes_below(s, seen)));
    }
    softmax_backward_scaled_scalar(d_scores + s, dp + s, p + s, row, scale, seen - s, n - s);
}

static const Kernels AVX2_KERNELS = {"avx2", gemm_avx2, softmax_rows_avx2, silu_avx2,
                                     silu_backward_avx2, adamw_avx2, norm_avx2, add_avx2,
                                     mul_avx2, scale_avx2, sum_avx2, log_softmax_rows_avx2,
                                     log_softmax_backward_rows_avx2, softmax_backward_row_avx2,
                                     causal_scale_avx2, softmax_backward_scaled_avx2, 0.059};

// --- AVX-512: 16 columns per register -----------------------------------------------------

// Loops over the rows of a block unrolled whole, so that each row's running sums stay in a
// register: GCC's pragma, or clang's (which unrolls only when told the exact count or "full").
#if defined(__clang__)
#define UNROLL_FULLY _Pragma("clang loop unroll(full)")
#else
#define UNROLL_FULLY _Pragma("GCC unroll 16")
#endif

// `rows` rows of c (12, 8 or 4), columns j .. j+15: one register of 16 running sums a row.
// Each row of b loaded serves every row of the block; 12 rows keep the two adders busy
// (measured on an AMD EPYC, Zen 4: 115 GFLOP/s against 80 for 4 rows of 32 columns, on the
// lesson's shapes).
// `resume`: the sums start from c, where an earlier call left them part-way (gemm_avx512's
// chunks), instead of from 0.
AVX512_CODE static inline __attribute__((always_inline)) void block_x16_avx512(
    float *c, int ldc, const float *a, int a_row, int a_col, const float *b, int ldb, int k,
    bool accumulate, bool resume, const int rows) {
    __m512 s[12];
    UNROLL_FULLY
    for (int r = 0; r < rows; r++) {
        s[r] = resume ? _mm512_loadu_ps(c + (long)r * ldc) : _mm512_setzero_ps();
    }
    for (int p = 0; p < k; p++) {
        const float *a_p = a + (long)p * a_col;
        __m512 b_p = _mm512_loadu_ps(b + (long)p * ldb);
        UNROLL_FULLY
        for (int r = 0; r < rows; r++) {
            s[r] = _mm512_add_ps(s[r], _mm512_mul_ps(_mm512_set1_ps(a_p[(long)r * a_row]), b_p));
        }
    }
    UNROLL_FULLY
    for (int r = 0; r < rows; r++) {
        float *c_r = c + (long)r * ldc;
        _mm512_storeu_ps(c_r, accumulate ? _mm512_add_ps(_mm512_loadu_ps(c_r), s[r]) : s[r]);
    }
}

AVX512_CODE static void block_12x16_avx512(float *c, int ldc, const float *a, int a_row, int a_col,
                                           const float *b, int ldb, int k, bool accumulate,
                                           bool resume) {
    block_x16_avx512(c, ldc, a, a_row, a_col, b, ldb, k, accumulate, resume, 12);
}

AVX512_CODE static void block_8x16_avx512(float *c, int ldc, const float *a, int a_row, int a_col,
                                          const float *b, int ldb, int k, bool accumulate,
                                          bool resume) {
    block_x16_avx512(c, ldc, a, a_row, a_col, b, ldb, k, accumulate, resume, 8);
}

AVX512_CODE static void block_4x16_avx512(float *c, int ldc, const float *a, int a_row, int a_col,
                                          const float *b, int ldb, int k, bool accumulate,
                                          bool resume) {
    block_x16_avx512(c, ldc, a, a_row, a_col, b, ldb, k, accumulate, resume, 4);
}

// The rows of the next block when `left` rows are left (at least 4): 12, then 8 or 4.
static int block_rows(int left) {
    return left >= 12 ? 12 : left >= 8 ? 8 : 4;
}

// Rows 0 .. m - m % 4 of c, columns 0 .. sixteens-1, in blocks of 16 columns.
AVX512_CODE static void blocks_x16_avx512(float *c, int ldc, const float *a, int a_row, int a_col,
                                          const float *b, int ldb, int m, int sixteens, int k,
                                          bool accumulate, bool resume) {
    for (int i = 0; i + 4 <= m; i += block_rows(m - i)) {
        int rows = block_rows(m - i);
        void (*block)(float *, int, const float *, int, int, const float *, int, int, bool,
                      bool) = rows == 12 ? block_12x16_avx512
                              : rows == 8 ? block_8x16_avx512
                                          : block_4x16_avx512;
        for (int j = 0; j < sixteens; j += 16) {
            block(c + (long)i * ldc + j, ldc, a + (long)i * a_row, a_row, a_col, b + j, ldb, k,
                  accumulate, resume);
        }
    }
}

// A long sum goes in chunks of K_CHUNK terms, all of c through one chunk before the next:
// the weights' gradients dW = dy^T @ x sum over every row of the batch (4,096 at --bench's
// larger model), and a chunk of dy and x stays in the L2 cache for every block, where the
// whole of x (5.4 MiB for down_proj's input there, 4,096 rows of 344) would come from memory
// again for each block of rows. Each element still adds its terms in order, its partial sum
// stored in c and loaded back between chunks (exact). The columns and rows past the blocks
// take their whole sums in one go (gemm_rest_avx2).
//
// Each chunk starts by asking for its rows of b, and of a where a is transposed (a_row 1: its
// chunk is rows p0 .. p0+terms-1 of the matrix in memory, one run of addresses), to be
// brought into the L2 cache, in address order (prefetch hints: they change no value). A
// weight's gradient reads x, which the forward wrote long before and which is larger than the
// L2 at --bench's larger model (down_proj's x: 5.4 MiB), and dy; there, on the Xeon of
// docs/fast-on-a-cpu.md's lesson 17 section, the hints took the weights' gradients from about
// 60 to 73 GFLOP/s (timed inside the step, 2026-12-07).
enum { K_CHUNK = 256 };

// Hints that the floats x[0 .. n-1] be brought into the L2 cache: one a cache line.
AVX512_CODE static void prefetch_floats(const float *x, long n) {
    const char *bytes = (const char *)x;
    for (long offset = 0; offset < n * (long)sizeof(float); offset += 64) {
        _mm_prefetch(bytes + offset, _MM_HINT_T1);
    }
}

AVX512_CODE static void gemm_avx512(float *c, int ldc, const float *a, int a_row, int a_col,
                                    const float *b, int ldb, int m, int n, int k, bool accumulate) {
    int sixteens = n / 16 * 16, eights = n / 8 * 8, blocked = m - m % 4;
    if (!accumulate && k > K_CHUNK) {
        for (int p0 = 0; p0 < k; p0 += K_CHUNK) {
            int terms = k - p0 < K_CHUNK ? k - p0 : K_CHUNK;
            prefetch_floats(b + (long)p0 * ldb, (long)(terms - 1) * ldb + n);
            if (a_row == 1) {
                prefetch_floats(a + (long)p0 * a_col, (long)(terms - 1) * a_col + m);
            }
            blocks_x16_avx512(c, ldc, a + (long)p0 * a_col, a_row, a_col, b + (long)p0 * ldb,
                              ldb, m, sixteens, terms, false, p0 > 0);
        }
    } else {
        blocks_x16_avx512(c, ldc, a, a_row, a_col, b, ldb, m, sixteens, k, accumulate, false);
    }
    for (int i = 0; eights > sixteens && i < blocked; i += 4) {
        block_4x8_avx2(c + (long)i * ldc + sixteens, ldc, a + (long)i * a_row, a_row, a_col,
                       b + sixteens, ldb, k, accumulate);
    }
    gemm_rest_avx2(c, ldc, a, a_row, a_col, b, ldb, m, n, k, accumulate, blocked, eights);
}

static const Kernels AVX512_KERNELS = {"avx512", gemm_avx512, softmax_rows_avx2, silu_avx2,
                                       silu_backward_avx2, adamw_avx2, norm_avx2, add_avx2,
                                       mul_avx2, scale_avx2, sum_avx2, log_softmax_rows_avx2,
                                       log_softmax_backward_rows_avx2,
                                       softmax_backward_row_avx2, causal_scale_avx2,
                                       softmax_backward_scaled_avx2, 0.05};
#endif

// --- choosing ------------------------------------------------------------------------------
// speed/cpu.h says which sets this CPU runs, speed/choice.h which one a run takes
// (ATTN_KERNELS, checked with the flags: train_flags.c).

const Kernels *kernels = &SCALAR;

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
    return &SCALAR;
}

void kernels_choose(void) {
    kernels = kernels_named(kernels_wanted());
}
