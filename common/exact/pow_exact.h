// pow_exact.h - x^y as PyTorch 1.13's vectorized pow computes it on x86-64 (Sleef's powf),
// so that RoPE's inv_freq (lesson 15) has PyTorch's bits for every head_dim (pow_exact.c
// says why the C library's powf is not enough).
#ifndef POW_EXACT_H
#define POW_EXACT_H

// x^y exactly as Sleef_powf8_u10 (Sleef 3.5.1, AVX2 with FMA) computes it, for x > 0 (what
// RoPE's base is): within 1 ULP of the true x^y. Any NaN gives NaN; x <= 0 is not handled.
float sleef_powf(float x, float y);

#endif
