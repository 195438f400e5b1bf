// peak.c - fma_chains in each kernel set's registers, and the FMA peak
// (peak.h). Chain c runs acc = acc * 0.999999 + 0.001 from acc = c: the
// numbers move toward 1000 (where the step leaves them unchanged) and never
// overflow, and the compiler cannot skip a step. Unfused (mul_add_peak), the
// step is a multiply, rounded, then an add: two instructions where an FMA is
// one, which a core runs as fast only if it has adders beside its FMA units.
#include "speed/peak.h"

#include <math.h>
#include <string.h>

#include "speed/timing.h"
#include "speed/vectors.h"

enum { CHAINS = 12 };

static float chains_scalar(long steps, bool one_chain, bool fused) {
    float acc[CHAINS];
    int chains = one_chain ? 1 : CHAINS;
    for (int c = 0; c < CHAINS; c++) {
        acc[c] = (float)c;
    }
    for (long i = 0; i < steps; i++) {
        for (int c = 0; c < chains; c++) {
            acc[c] = fused ? fmaf(acc[c], 0.999999f, 1e-3f) : acc[c] * 0.999999f + 1e-3f;
        }
    }
    float total = 0.0f;
    for (int c = 0; c < CHAINS; c++) {
        total += acc[c];
    }
    return total;
}

#ifdef HAVE_VECTOR_KERNELS
// The same on 8 lanes: every lane of a chain does the scalar chain's steps.
AVX2_CODE __attribute__((noinline)) static float chains_avx2(long steps, bool one_chain,
                                                              bool fused) {
    v8f acc[CHAINS], a = splat8(0.999999f), b = splat8(1e-3f);
#pragma GCC unroll 12
    for (int c = 0; c < CHAINS; c++) {
        acc[c] = splat8((float)c);
    }
    if (one_chain) {
        for (long i = 0; i < steps; i++) {
            acc[0] = fma8(acc[0], a, b);
        }
    } else if (fused) {
        for (long i = 0; i < steps; i++) {
#pragma GCC unroll 12
            for (int c = 0; c < CHAINS; c++) {
                acc[c] = fma8(acc[c], a, b);
            }
        }
    } else {   // -ffp-contract=off: a multiply, then an add
        for (long i = 0; i < steps; i++) {
#pragma GCC unroll 12
            for (int c = 0; c < CHAINS; c++) {
                acc[c] = acc[c] * a + b;
            }
        }
    }
    v8f total = splat8(0.0f);
    for (int c = 0; c < CHAINS; c++) {
        total += acc[c];
    }
    return total[0];
}

AVX512_CODE __attribute__((noinline)) static float chains_avx512(long steps, bool one_chain,
                                                                  bool fused) {
    v16f acc[CHAINS], a = splat16(0.999999f), b = splat16(1e-3f);
#pragma GCC unroll 12
    for (int c = 0; c < CHAINS; c++) {
        acc[c] = splat16((float)c);
    }
    if (one_chain) {
        for (long i = 0; i < steps; i++) {
            acc[0] = fma16(acc[0], a, b);
        }
    } else if (fused) {
        for (long i = 0; i < steps; i++) {
#pragma GCC unroll 12
            for (int c = 0; c < CHAINS; c++) {
                acc[c] = fma16(acc[c], a, b);
            }
        }
    } else {
        for (long i = 0; i < steps; i++) {
#pragma GCC unroll 12
            for (int c = 0; c < CHAINS; c++) {
                acc[c] = acc[c] * a + b;
            }
        }
    }
    v16f total = splat16(0.0f);
    for (int c = 0; c < CHAINS; c++) {
        total += acc[c];
    }
    return total[0];
}
#endif

static float chains(const char *name, long steps, bool one_chain, bool fused) {
#ifdef HAVE_VECTOR_KERNELS
    if (strcmp(name, "avx512") == 0) {
        return chains_avx512(steps, one_chain, fused);
    }
    if (strcmp(name, "avx2") == 0) {
        return chains_avx2(steps, one_chain, fused);
    }
#endif
    return chains_scalar(steps, one_chain, fused);
}

float fma_chains(const char *name, long steps, bool one_chain) {
    return chains(name, steps, one_chain, true);
}

float mul_add_chains(const char *name, long steps) {
    return chains(name, steps, false, false);
}

// The best of `runs` runs of 12 chains (or one) of `steps` steps, in GFLOP/s (2 a lane a step).
static double chains_peak(const char *name, bool one_chain, bool fused, int runs) {
    int lanes = strcmp(name, "avx512") == 0 ? 16 : strcmp(name, "avx2") == 0 ? 8 : 1;
    // 1.5 GFLOP a run with AVX-512's registers; the scalar chains do fewer
    // steps, their fmaf being a call into the C library (the project's flags
    // do not let the compiler assume an FMA instruction outside the kernels).
    long steps = lanes > 1 ? 4000000 : 250000;
    double best = 1e30;
    volatile float sink = 0.0f;   // keeps the loops from being optimised away
    for (int run = 0; run < runs; run++) {
        double start = now_seconds();
        sink = sink + chains(name, steps, one_chain, fused);
        double seconds = now_seconds() - start;
        best = seconds < best ? seconds : best;
    }
    return 2.0 * lanes * (one_chain ? 1 : CHAINS) * steps / best * 1e-9;
}

double fma_peak(const char *name, bool one_chain, int runs) {
    return chains_peak(name, one_chain, true, runs);
}

double mul_add_peak(const char *name, int runs) {
    return chains_peak(name, false, false, runs);
}
