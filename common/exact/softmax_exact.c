// softmax_exact.c - PyTorch 1.13's CPU float32 softmax, bit for bit.
//
// The textbook softmax (expf(x - max), a running sum, then x / sum; lesson
// 1 writes it out) is right to within a float's last bit, but PyTorch's own
// kernel rounds differently in three places, so a textbook softmax now and
// then prints a different last digit than the notebook. This file does what
// the kernel does, step by step:
//
//   1. max = the largest x                  (exact, so the order is free)
//   2. e_i = exp(x_i - max)                 with Sleef's expf, not the C library's
//   3. sum = e_0 + e_1 + ...                in 8 interleaved partial sums (n >= 8)
//   4. y_i = e_i * (1 / sum)                a multiply by the reciprocal, not e_i / sum
//
// Where it comes from (PyTorch v1.13.1 sources):
//   aten/src/ATen/native/SoftMax.cpp           softmax_cpu_out: dim == last ->
//                                              softmax_lastdim_kernel, else softmax_kernel
//   aten/src/ATen/native/cpu/SoftMaxKernel.cpp _vec_softmax_lastdim (steps 1-4),
//                                              _vec_softmax (other dims),
//                                              _vec_host_softmax_backward_lastdim
//                                              (the backward's sum)
//   aten/src/ATen/cpu/vec/functional_base.h    vec::reduce_all, vec_reduce_all, vec::map
//   aten/src/ATen/cpu/vec/vec256/vec256_float.h  Vectorized<float>::exp() = Sleef_expf8_u10
//   Sleef 3.5.1, src/libm/sleefsimdsp.c        xexpf; src/arch/helperavx2.h (fma)
//
// PyTorch compiles its kernels several times and picks one at start-up by
// CPU: AVX2 on any x86-64 with AVX2 and FMA (also on AVX-512 machines: 1.13
// uses AVX-512 only when ATEN_CPU_CAPABILITY=avx512 asks for it). This file
// is that AVX2 kernel, in portable C: it gives the same bits on any machine.
// The vector code works on 8 floats at once ("lanes"); here the lanes are
// written out one float at a time, with fmaf() exactly where the AVX2 code
// fuses a multiply and an add. The Makefile's -ffp-contract=off keeps the
// compiler from adding fusions of its own. (A PyTorch on a CPU without AVX2
// sums the 8 lanes in another order and uses the C library's expf: there its
// last bits can differ from these.)
#include "exact/softmax_exact.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum { LANES = 8 };   // floats in one AVX2 vector

// A float's bits, and the float of given bits.
static uint32_t bits_of(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float float_of(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

// --- exp: Sleef's expf, "u10" (at most 1.0 ULP off) ---------------------------------------

// 2^e for -126 <= e <= 127, made from its bits (a float's exponent field
// holds e + 127): what ldexpf(1.0f, e) returns, without a call.
static float power_of_two(int e) {
    return float_of((uint32_t)(e + 127) << 23);
}

// exp(d) = 2^q * exp(s), where q = round(d / ln 2) is an integer and s = d - q*ln2
// is small (|s| <= ln2/2). exp(s) comes from a polynomial, 2^q from the exponent bits.
float sleef_expf(float d) {
    if (isnan(d)) {
        return d;
    }
    if (d < -104.0f) {           // Sleef's cut-offs: the result is 0 below -104 ...
        return 0.0f;
    }
    if (d > 100.0f) {            // ... and infinity above 100
        return INFINITY;
    }
    int q = (int)rintf(d * 1.442695040888963407359924681001892137426645954152985934135449406931f);
    // s = d - q*ln2, with ln2 split in a high part (q times it is exact) and a low part
    float s = fmaf((float)q, -0.693145751953125f, d);
    s = fmaf((float)q, -1.428606765330187045e-06f, s);
    // exp(s) ~ 1 + s + s^2 * (1/2 + s/6 + s^2/24 + ...), the coefficients tuned by Sleef
    float u = 0.000198527617612853646278381f;
    u = fmaf(u, s, 0.00139304355252534151077271f);
    u = fmaf(u, s, 0.00833336077630519866943359f);
    u = fmaf(u, s, 0.0416664853692054748535156f);
    u = fmaf(u, s, 0.166666671633720397949219f);
    u = fmaf(u, s, 0.5f);
    u = 1.0f + fmaf(s * s, u, s);
    // times 2^q, as two factors 2^h * 2^(q-h) (h = floor(q/2)) so that
    // neither overflows; for q < -126 the result is subnormal
    int h = q >= 0 ? q / 2 : -((1 - q) / 2);
    return u * power_of_two(h) * power_of_two(q - h);
}

// --- softmax along the last dim -------------------------------------------------------------

// The sum of e[0..n-1] in the order the AVX2 kernel adds them (vec::reduce_all):
//   n < 8:  one after the other, e0 + e1 + e2 + ...
//   n >= 8: lane k sums e[k], e[k+8], e[k+16], ... (a last, partial block of
//           n % 8 values goes into lanes 0, 1, ...); then the 8 lane sums are
//           folded in halves: lane k + lane k+4, then k + k+2, then k + k+1.
static float kernel_sum(const float *e, int n) {
    if (n < LANES) {
        float sum = e[0];
        for (int i = 1; i < n; i++) {
            sum += e[i];
        }
        return sum;
    }
    float lane[LANES];
    for (int k = 0; k < LANES; k++) {
        lane[k] = e[k];
    }
    for (int i = LANES; i < n; i++) {
        lane[i % LANES] += e[i];
    }
    float even = (lane[0] + lane[4]) + (lane[2] + lane[6]);
    float odd = (lane[1] + lane[5]) + (lane[3] + lane[7]);
    return even + odd;
}

// _vec_softmax_lastdim, for one row of n floats.
static void softmax_lastdim_row(float *x, int n) {
    float max = x[0];                    // 1. (a NaN in the row makes every result NaN, here
    for (int i = 1; i < n; i++) {        //     and in PyTorch, though not the same NaN bits)
        max = fmaxf(max, x[i]);
    }
    for (int i = 0; i < n; i++) {        // 2. x - max is rounded to a float, then exp'd
        x[i] = sleef_expf(x[i] - max);   //    (all -inf: -inf - -inf = NaN, the row is NaN)
    }
    float inv = 1.0f / kernel_sum(x, n); // 3.
    for (int i = 0; i < n; i++) {        // 4.
        x[i] *= inv;
    }
}

void softmax_exact_lastdim(float *data, long rows, int n) {
    if (n < 1) {                          // nothing to do (PyTorch returns at once too)
        return;
    }
    for (long r = 0; r < rows; r++) {
        softmax_lastdim_row(data + r * n, n);
    }
}

// _vec_host_softmax_backward_lastdim's sum (vec::map2_reduce_all): the first
// 8 products grad * out rounded, each later one added into its lane with a
// fused multiply-add (the compiler fused PyTorch's acc + x * y), then the
// lanes added as kernel_sum adds.
float softmax_exact_backward_row(const float *grad, const float *out, int n) {
    if (n < 1) {
        return 0.0f;
    }
    float products[LANES];
    if (n < LANES) {
        for (int i = 0; i < n; i++) {
            products[i] = grad[i] * out[i];
        }
        return kernel_sum(products, n);
    }
    float lane[LANES];
    for (int k = 0; k < LANES; k++) {
        lane[k] = grad[k] * out[k];
    }
    for (int i = LANES; i < n; i++) {
        lane[i % LANES] = fmaf(grad[i], out[i], lane[i % LANES]);
    }
    return kernel_sum(lane, LANES);
}

// --- softmax along any other dim ------------------------------------------------------------

// _vec_softmax works on (outer, n, inner) differently: it puts 8 neighbouring
// softmaxes (inner positions j .. j+7) in the 8 lanes, so each lane walks its
// own n values in order: a plain running sum, and a true division at the end,
// like ops.c. What differs is the exp: positions in a full group of 8 use
// Sleef's, the leftover inner % 8 positions of each outer block take a scalar
// path with std::exp, i.e. the C library's expf.
// (This is the single-threaded order. PyTorch splits the outer*inner
// positions among threads when there are more than 32768 / n of them, and a
// thread's share can then end inside a group of 8, moving a few more
// positions to the expf path.)
static void softmax_column(float *x, int n, long step, float (*exp_fn)(float)) {
    float max = x[0];
    for (int i = 1; i < n; i++) {
        max = fmaxf(max, x[i * step]);
    }
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i * step] = exp_fn(x[i * step] - max);
        sum += x[i * step];
    }
    for (int i = 0; i < n; i++) {
        x[i * step] /= sum;
    }
}

static float libc_expf(float d) {
    return expf(d);
}

void softmax_exact_otherdim(float *data, long outer, int n, long inner) {
    if (n < 1) {
        return;
    }
    long vectorized = inner - inner % LANES;   // positions handled 8 at a time
    for (long o = 0; o < outer; o++) {
        for (long j = 0; j < inner; j++) {
            float (*exp_fn)(float) = j < vectorized ? sleef_expf : libc_expf;
            softmax_column(&data[o * n * inner + j], n, inner, exp_fn);
        }
    }
}

// --- log_softmax along the last dim, and its backward (cross-entropy, lesson 16) -------------

// log(d) as Sleef_logf8_u10 computes it (Sleef 3.5.1, xlogf_u1, AVX2 with FMA): write
// d = m * 2^e with m in [0.75, 1.5), then log d = e ln 2 + 2 atanh((m - 1) / (m + 1)),
// the quotient and the sum carried in two floats (a "double-float": value + what its
// rounding lost) so that the result is within 1 ULP. fmaf exactly where Sleef fuses.
float sleef_logf(float d) {
    if (isnan(d) || d < 0.0f) {
        return NAN;
    }
    if (d == 0.0f) {
        return -INFINITY;
    }
    if (isinf(d)) {
        return INFINITY;
    }
    bool subnormal = d < FLT_MIN;
    if (subnormal) {
        d = d * 0x1p64f;
    }
    int e = (int)((bits_of(d * (1.0f / 0.75f)) >> 23) & 0xff) - 0x7f;
    float m = float_of(bits_of(d) - ((uint32_t)e << 23));     // d / 2^e
    e = subnormal ? e - 64 : e;
    // s = e * ln 2, ln 2 in two parts: (0.69314718246459960938, -1.904654323148236017e-09)
    float ef = (float)e;
    float s_hi = 0.69314718246459960938f * ef;
    float s_lo = fmaf(-1.904654323148236017e-09f, ef, fmaf(0.69314718246459960938f, ef, -s_hi));
    // x = (m - 1) / (m + 1), numerator and denominator each exact as two floats
    float n_hi = -1.0f + m, v = n_hi - -1.0f;
    float n_lo = (-1.0f - (n_hi - v)) + (m - v);
    float d_hi = 1.0f + m;
    v = d_hi - 1.0f;
    float d_lo = (1.0f - (d_hi - v)) + (m - v);
    float t = 1.0f / d_hi;
    float x_hi = n_hi * t;
    float u = fmaf(t, n_hi, -x_hi);
    float w = fmaf(-d_lo, t, fmaf(-d_hi, t, 1.0f));
    float x_lo = fmaf(x_hi, w, fmaf(n_lo, t, u));
    // 2 atanh(x) = 2x + x^3 (2/3 + 2/5 x^2 + ...), the polynomial as Sleef tuned it
    float x2 = x_hi * x_hi;
    float p = fmaf(fmaf(0.3027294874f, x2, 0.3996108174f), x2, 0.6666694880f);
    float sum = s_hi + x_hi * 2.0f;
    float sum_lo = (((s_hi - sum) + x_hi * 2.0f) + s_lo) + x_lo * 2.0f;
    float tail = (x2 * x_hi) * p;
    float total = sum + tail;
    float total_lo = ((sum - total) + tail) + sum_lo;
    return total + total_lo;
}

// _vec_log_softmax_lastdim, one row: max, the sum of exp(x - max) as the softmax adds it,
// Sleef's log of it, then (x - max) - log(sum): two roundings, in that order.
void log_softmax_exact_lastdim(float *out, const float *x, long rows, int n) {
    for (long r = 0; r < rows; r++) {
        const float *x_r = x + r * n;
        float *out_r = out + r * n;
        float max = x_r[0];
        for (int i = 1; i < n; i++) {
            max = fmaxf(max, x_r[i]);
        }
        for (int i = 0; i < n; i++) {       // out holds exp(x - max) for a moment
            out_r[i] = sleef_expf(x_r[i] - max);
        }
        float log_sum = sleef_logf(kernel_sum(out_r, n));
        for (int i = 0; i < n; i++) {
            out_r[i] = (x_r[i] - max) - log_sum;
        }
    }
}

// _vec_host_softmax_backward_lastdim<log_softmax = true>, one row: the sum of the row's
// gradient (as the softmax sums), then grad - exp(out) * sum, one fused multiply-add (the
// compiler fused PyTorch's x - exp(y) * sum).
void log_softmax_exact_backward_lastdim(float *grad_input, const float *grad, const float *out,
                                        long rows, int n) {
    for (long r = 0; r < rows; r++) {
        const float *g = grad + r * n, *y = out + r * n;
        float sum = kernel_sum(g, n);
        for (int i = 0; i < n; i++) {
            grad_input[r * n + i] = fmaf(-sleef_expf(y[i]), sum, g[i]);
        }
    }
}
