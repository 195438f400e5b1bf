// pow_exact.c - PyTorch 1.13's float pow on x86-64, bit for bit: Sleef's powf.
//
// RoPE's speeds are inv_freq = 1.0 / (base ** (torch.arange(0, D, 2).float() / D)), a pow of
// D/2 numbers. PyTorch's kernel for it (cpu_kernel_vec) takes the numbers in blocks of two
// vectors, 16 floats with its AVX2 kernels, and hands each whole block to its vector pow,
// which is Sleef's powf; the last D/2 mod 16 numbers go to std::pow, the C library's powf.
// The two are both within 1 ULP of the true power but do not always round alike: with base
// 10000, 24 of the 49 even head_dims from 32 to 128 get a theta_i whose last bit differs, 48
// (theta_10) and 96 among them; 32, 64 and 128 happen to get none. So lesson 15 computes the
// whole blocks with this function and the rest with powf, as PyTorch does.
//
// How Sleef computes x^y = exp(y log x), to within 1 ULP from float arithmetic alone: it
// carries log x and y log x in two floats, a "double-float" (hi, lo) whose sum holds about
// twice a float's bits (lo is what rounding hi lost), then
//   log x: x = m 2^e, m in [0.75, 1.5): log x = e ln2 + 2 atanh(r), r = (m - 1) / (m + 1),
//          2 atanh(r) = 2r + r^3 (2/3 + 2/5 r^2 + ...), the tail a polynomial Sleef tuned;
//   exp d: d = q ln2 + s, q = round(d / ln2): exp d = 2^q (1 + s + s^2 (1/2 + s/6 + ...)).
// The lines below are Sleef's, lane by lane, with fmaf() exactly where its AVX2 code fuses a
// multiply and an add (-ffp-contract=off keeps the compiler from fusing any other).
//
// Where it comes from:
//   PyTorch v1.13.1 aten/src/ATen/native/cpu/PowKernel.cpp   pow_tensor_tensor_kernel:
//       cpu_kernel_vec(std::pow, Vectorized::pow); aten/src/ATen/native/cpu/Loops.h
//       vectorized_loop (blocks of 2 * Vectorized<float>::size(), the rest basic_loop);
//       aten/src/ATen/cpu/vec/vec256/vec256_float.h   Vectorized<float>::pow = Sleef_powf8_u10
//   Sleef 3.5.1 src/libm/sleefsimdsp.c   xpowf, logkf, expkf, vldexp_vf_vf_vi2;
//       src/libm/df.h (the double-float operations, ENABLE_FMA_SP); src/arch/helperavx2.h
// PyTorch's AVX-512 kernels (ATEN_CPU_CAPABILITY=avx512) take blocks of 32 to Sleef's
// 16-lane powf, whose numbers are the same. Checked on this project's machine against
// Debian's libsleef3 3.5.1 (Sleef_powf8_u10avx2) on 48 million pairs (x, y), NaNs,
// infinities, zeros, negatives and subnormals among them: every bit equal; and against
// PyTorch 1.13's inv_freq for every even head_dim from 2 to 1024 with nine bases, with its
// AVX2 kernels (blocks of 16) and its AVX-512 ones (blocks of 32).
#include "exact/pow_exact.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

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

// --- double-float arithmetic (Sleef's df.h) --------------------------------------------------

// A number as hi + lo, |lo| below half a unit of hi's last bit.
typedef struct {
    float hi, lo;
} DoubleFloat;

// x + y exactly, for any x and y (Knuth's two-sum).
static DoubleFloat df_add2_ff(float x, float y) {
    float s = x + y, v = s - x;
    return (DoubleFloat){s, (x - (s - v)) + (y - v)};
}

// x + y, x a double-float (two-sum on the high parts, then x's low part).
static DoubleFloat df_add2_df_f(DoubleFloat x, float y) {
    float s = x.hi + y, v = s - x.hi;
    return (DoubleFloat){s, ((x.hi - (s - v)) + (y - v)) + x.lo};
}

static DoubleFloat df_add2_df_df(DoubleFloat x, DoubleFloat y) {
    float s = x.hi + y.hi, v = s - x.hi;
    return (DoubleFloat){s, ((x.hi - (s - v)) + (y.hi - v)) + (x.lo + y.lo)};
}

// x + y when |x| >= |y| (the cheaper fast two-sum).
static DoubleFloat df_add_df_df(DoubleFloat x, DoubleFloat y) {
    float s = x.hi + y.hi;
    return (DoubleFloat){s, (((x.hi - s) + y.hi) + x.lo) + y.lo};
}

static DoubleFloat df_add_f_df(float x, DoubleFloat y) {
    float s = x + y.hi;
    return (DoubleFloat){s, ((x - s) + y.hi) + y.lo};
}

static DoubleFloat df_normalize(DoubleFloat t) {
    float s = t.hi + t.lo;
    return (DoubleFloat){s, (t.hi - s) + t.lo};
}

static DoubleFloat df_scale(DoubleFloat d, float s) {
    return (DoubleFloat){d.hi * s, d.lo * s};
}

// Products: fmaf(a, b, -a*b) is the rounding error of a*b, exactly.
static DoubleFloat df_mul_df_f(DoubleFloat x, float y) {
    float s = x.hi * y;
    return (DoubleFloat){s, fmaf(x.lo, y, fmaf(x.hi, y, -s))};
}

static DoubleFloat df_mul_df_df(DoubleFloat x, DoubleFloat y) {
    float s = x.hi * y.hi;
    return (DoubleFloat){s, fmaf(x.hi, y.lo, fmaf(x.lo, y.hi, fmaf(x.hi, y.hi, -s)))};
}

static DoubleFloat df_square(DoubleFloat x) {
    float s = x.hi * x.hi;
    return (DoubleFloat){s, fmaf(x.hi + x.hi, x.lo, fmaf(x.hi, x.hi, -s))};
}

static DoubleFloat df_div(DoubleFloat n, DoubleFloat d) {
    float t = 1.0f / d.hi;
    float s = n.hi * t;
    float u = fmaf(t, n.hi, -s);
    float v = fmaf(-d.lo, t, fmaf(-d.hi, t, 1.0f));
    return (DoubleFloat){s, fmaf(s, v, fmaf(n.lo, t, u))};
}

// --- log and exp in double-float (Sleef's logkf and expkf) -----------------------------------

// log d for d > 0, as a double-float.
static DoubleFloat log_df(float d) {
    bool subnormal = d < FLT_MIN;
    if (subnormal) {
        d = d * 0x1p64f;
    }
    // d = m 2^e with m in [0.75, 1.5): e from the exponent bits of d / 0.75
    int e = (int)((bits_of(d * (1.0f / 0.75f)) >> 23) & 0xff) - 0x7f;
    float m = float_of(bits_of(d) - ((uint32_t)e << 23));   // d / 2^e
    e = subnormal ? e - 64 : e;
    DoubleFloat r = df_div(df_add2_ff(-1.0f, m), df_add2_ff(1.0f, m));   // (m - 1) / (m + 1)
    DoubleFloat r2 = df_square(r);
    float t = 0.240320354700088500976562f;
    t = fmaf(t, r2.hi, 0.285112679004669189453125f);
    t = fmaf(t, r2.hi, 0.400007992982864379882812f);
    DoubleFloat two_thirds = {0.66666662693023681640625f, 3.69183861259614332084311e-09f};
    DoubleFloat ln2 = {0.69314718246459960938f, -1.904654323148236017e-09f};
    DoubleFloat s = df_mul_df_f(ln2, (float)e);                            // e ln2
    s = df_add_df_df(s, df_scale(r, 2.0f));                                // + 2r
    s = df_add_df_df(s, df_mul_df_df(df_mul_df_df(r2, r),                  // + r^3 (2/3 + ...)
                                     df_add2_df_df(df_mul_df_f(r2, t), two_thirds)));
    return s;
}

// x 2^q for a q the exponent of a float may not hold: Sleef's vldexp, which multiplies by
// 2^(16 (q/64)) four times, then by 2^(q - 64 (q/64)) (C's / truncates toward 0, as Sleef's
// shifts do here).
static float scale_by_power_of_two(float x, int q) {
    int m = q / 64 * 16;
    q = q - 4 * m;
    m = m + 127;
    m = m < 0 ? 0 : m > 255 ? 255 : m;   // 2^(m-127) from its bits: 0 below, inf above
    float u = float_of((uint32_t)m << 23);
    x = x * u * u * u * u;
    return x * float_of((uint32_t)(q + 127) << 23);
}

// exp(d.hi + d.lo).
static float exp_df(DoubleFloat d) {
    const float log2e = 1.442695040888963407359924681001892137426645954152985934135449406931f;
    if (d.hi < -104.0f) {                 // Sleef's cut-off: 0 below
        return 0.0f;
    }
    float u = (d.hi + d.lo) * log2e;
    if (!(u < 256.0f)) {                  // 2^256 and more: Sleef gives inf (NaN stays NaN)
        return isnan(u) ? NAN : INFINITY;
    }
    int q = (int)rintf(u);
    // s = d - q ln2, ln2 in a high part (q times it is exact) and a low part
    DoubleFloat s = df_add2_df_f(d, (float)q * -0.693145751953125f);
    s = df_add2_df_f(s, (float)q * -1.428606765330187045e-06f);
    s = df_normalize(s);
    u = 0.00136324646882712841033936f;
    u = fmaf(u, s.hi, 0.00836596917361021041870117f);
    u = fmaf(u, s.hi, 0.0416710823774337768554688f);
    u = fmaf(u, s.hi, 0.166665524244308471679688f);
    u = fmaf(u, s.hi, 0.499999850988388061523438f);
    DoubleFloat t = df_add_df_df(s, df_mul_df_f(df_square(s), u));   // s + s^2 u
    t = df_add_f_df(1.0f, t);
    return scale_by_power_of_two(t.hi + t.lo, q);
}

// --- pow -------------------------------------------------------------------------------------

float sleef_powf(float x, float y) {
    if (y == 0.0f || x == 1.0f) {         // the cases in Sleef's order, the last one first
        return 1.0f;
    }
    if (isnan(x) || isnan(y)) {
        return NAN;
    }
    bool y_is_int = truncf(y) == y || fabsf(y) > 0x1p24f;
    bool y_is_odd = fabsf(y) < 0x1p24f && y_is_int && (int)truncf(y) % 2 != 0;
    if (isinf(x) || x == 0.0f) {
        float sign = y_is_odd ? copysignf(1.0f, x) : 1.0f;
        return sign * ((x == 0.0f ? -y : y) < 0.0f ? 0.0f : INFINITY);
    }
    if (isinf(y)) {                       // |x| < 1 vanishes, |x| > 1 grows, 1 stays
        float towards = signbit(y) ? 1.0f - fabsf(x) : fabsf(x) - 1.0f;
        return towards < 0.0f ? 0.0f : towards == 0.0f ? 1.0f : INFINITY;
    }
    float result = exp_df(df_mul_df_f(log_df(fabsf(x)), y));   // exp(y log |x|)
    result = isnan(result) ? INFINITY : result;
    if (x < 0.0f) {                       // a negative x: its sign for an odd y, NaN unless y
        result = result * (y_is_int ? (y_is_odd ? -1.0f : 1.0f) : NAN);   // is whole
    }
    return result;
}
