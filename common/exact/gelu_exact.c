// gelu_exact.c - PyTorch 1.13's CPU float32 GELU (the erf form), bit for bit.
//
//     gelu(x) = x * Phi(x) = x/2 * (1 + erf(x / sqrt(2)))
//
// The C library's erff gives this to within a rounding or two, and yet about
// one output in three then differs from PyTorch's in the last bit. That is
// because PyTorch 1.13 does not call erf at all for a float tensor of two or
// more elements in contiguous memory: F.gelu hands it to oneDNN (the Intel
// library PyTorch is built with, "MKL-DNN v2.6.3" in torch.__config__.show()),
// whose vector code approximates erf with the formula 7.1.26 of Abramowitz
// and Stegun's Handbook of Mathematical Functions (error below 1.5e-7):
//
//     t   = 1 / (1 + p |z|),                      p = 0.3275911
//     erf = sign(z) * (1 - (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) exp(-z^2))
//
// with its own exp. This file does what that code does, step by step, with
// fmaf() exactly where it uses a fused multiply-add instruction. (A tensor of
// one element, or one that is not contiguous, goes to PyTorch's own kernel
// instead; the single element's case is below. The lessons never pass a
// non-contiguous tensor.)
//
// Where it comes from:
//   PyTorch v1.13.1 aten/src/ATen/native/Activation.cpp   gelu_out_cpu: oneDNN's
//       eltwise_gelu_erf when use_mkldnn(self) (float32, contiguous, numel > 1),
//       else GeluKernel
//   oneDNN v2.6.3 src/cpu/x64/injectors/jit_uni_eltwise_injector.cpp
//       gelu_erf_compute_vector_fwd, exp_compute_vector_fwd, and the table of
//       constants below (their bit patterns are copied, not retyped decimals)
// Checked against PyTorch 1.13 (Debian's) on 126344 floats: every bit agrees.
#include "exact/gelu_exact.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

// A float from its bit pattern: oneDNN lists its constants this way.
static float from_bits(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

// --- exp: oneDNN's exp_compute_vector_fwd --------------------------------------------------

// exp(x) = 2^n * exp(r), n = floor(x / ln2 + 1/2), r = x - n ln2 (|r| <= ln2/2);
// exp(r) from a degree-5 polynomial. 2^n is built from its bits; oneDNN
// builds 2^(n-1) and doubles the product, so that n = 128 does not overflow.
float onednn_expf(float x) {
    const float ln_flt_min = from_bits(0xc2aeac50);   // -87.336: exp(x) < FLT_MIN below
    const float ln_flt_max = from_bits(0x42b17218);   //  88.722: exp(x) > FLT_MAX above
    const float log2e = from_bits(0x3fb8aa3b);        // 1 / ln 2
    const float ln2 = from_bits(0x3f317218);
    const float p1 = from_bits(0x3f7ffffb);           // 0.999999701
    const float p2 = from_bits(0x3efffee3);           // 0.499991506
    const float p3 = from_bits(0x3e2aad40);           // 0.166676521
    const float p4 = from_bits(0x3d2b9d0d);           // 0.0418978221
    const float p5 = from_bits(0x3c07cfce);           // 0.00828929059
    bool underflows = x < ln_flt_min;                 // these give exactly 0 below
    x = fmaxf(fminf(x, ln_flt_max), ln_flt_min);
    float n = floorf(x * log2e + 0.5f);               // a multiply, then an add: not fused
    float r = fmaf(-n, ln2, x);                       // x - n ln2, rounded once
    // 2^(n-1) from its bits: exponent field n - 1 + 127. For n = -126 the
    // field is 0, which makes 0.0f (oneDNN shifts the bits; no subnormal).
    uint32_t field = (uint32_t)((int32_t)(n - 1.0f) + 127);
    float two_n_minus_1 = underflows ? 0.0f : from_bits(field << 23);
    float poly = fmaf(p5, r, p4);
    poly = fmaf(poly, r, p3);
    poly = fmaf(poly, r, p2);
    poly = fmaf(poly, r, p1);
    poly = fmaf(poly, r, 1.0f);                       // exp(r) = 1 + r + r^2/2 + ...
    return poly * two_n_minus_1 * 2.0f;
}

// --- GELU: oneDNN's gelu_erf_compute_vector_fwd ---------------------------------------------

static float gelu_onednn(float s) {
    const float one_over_sqrt2 = from_bits(0x3f3504f3);
    const float p = from_bits(0x3ea7ba05);            // 0.3275911
    const float a1 = from_bits(0x3e827906);           //  0.254829592
    const float a2 = from_bits(0xbe91a98e);           // -0.284496736
    const float a3 = from_bits(0x3fb5f0e3);           //  1.421413741
    const float a4 = from_bits(0xbfba00e3);           // -1.453152027
    const float a5 = from_bits(0x3f87dc22);           //  1.061405429
    float z = s * one_over_sqrt2;                     // erf's argument
    float t = 1.0f / fmaf(p, fabsf(z), 1.0f);
    float minus_exp_t = -onednn_expf(-(z * z)) * t;   // -exp(-z^2) * t
    float poly = fmaf(a5, t, a4);                     // a1 + a2 t + ... + a5 t^4
    poly = fmaf(poly, t, a3);
    poly = fmaf(poly, t, a2);
    poly = fmaf(poly, t, a1);
    float erf_abs = fmaf(minus_exp_t, poly, 1.0f);    // 1 - t poly exp(-z^2) = erf(|z|)
    float erf = signbit(z) ? -erf_abs : erf_abs;      // oneDNN flips the sign bit
    float half = 0.5f * s;
    return fmaf(erf, half, half);                     // s/2 + s/2 * erf, rounded once
}

// A one-element tensor goes to PyTorch's own GeluKernel, whose scalar code is
// the formula with the C library's erff: x * 0.5 * (1 + erf(x / sqrt(2))).
static float gelu_aten_scalar(float x) {
    const float alpha = 0.70710678118654752f;   // M_SQRT1_2
    return x * 0.5f * (1.0f + erff(x * alpha));
}

void gelu_exact(float *data, long n) {
    for (long i = 0; i < n; i++) {
        data[i] = n > 1 ? gelu_onednn(data[i]) : gelu_aten_scalar(data[i]);
    }
}
