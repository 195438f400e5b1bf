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
//                                              _vec_host_softmax_backward_lastdim (the backward's sum)
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

#include <math.h>

enum { LANES = 8 };   // floats in one AVX2 vector

// --- exp: Sleef's expf, "u10" (at most 1.0 ULP off) ---------------------------------------

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
    return u * ldexpf(1.0f, h) * ldexpf(1.0f, q - h);
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

// _vec_host_softmax_backward_lastdim's sum (vec::map2_reduce_all): each
// product grad * out rounded, then added as kernel_sum adds.
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
        lane[i % LANES] += grad[i] * out[i];
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
