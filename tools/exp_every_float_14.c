// exp_every_float_14.c - lesson 14's exp (flash_expf, kernels.h) on every float.
//
//     sh tools/exp_every_float_14.sh       (builds this against the lesson's kernels.o, runs it)
//
// kernels.h promises that flash_expf is within 0.94 ulp of e^x on every
// float from EXP_LO to EXP_HI, 0 below EXP_LO and for -inf and NaN, e^EXP_HI
// above EXP_HI; and kernels.c that its AVX2 and AVX-512 versions give its
// bits. The tests check 16,384 points (test_exp in tests/test_lesson14.c:
// within 1 ulp of expf, and the vector versions' bits).
// This checks all of it on all 2^32 floats, in about two minutes of one core
// (not part of make test):
//   - from EXP_LO to EXP_HI: the error |flash_expf(x) - e^x| against exp() in
//     double, in ulps of the float at e^x (the spacing of the floats in e^x's
//     binade; e^x is a normal float there), its largest and where;
//   - below EXP_LO (-inf included) and for every NaN: exactly 0; above EXP_HI
//     (+inf included): flash_expf(EXP_HI);
//   - each vector set this CPU runs (kernels_named): its softmax_backward with
//     lse = 0 makes P = exp(s) with its own exp, and that is the scalar bits on
//     every float (P is compared; dS is not looked at).
// It prints what it found and exits 0 when every promise holds, 1 otherwise.
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "speed/cpu.h"

#define CLAIMED_ULP 0.94   // kernels.h's bound
enum { CHUNK = 1 << 16 };  // floats a softmax_backward call

static float bits_float(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static uint32_t float_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

// |y - e| in ulps of the float at e: the spacing of floats in e's binade.
static double ulps(float y, double e) {
    int exponent;
    frexp(e, &exponent);   // e = m 2^exponent, 0.5 <= m < 1: binade [2^(exponent-1), 2^exponent)
    return fabs((double)y - e) / ldexp(1.0, exponent - 1 - 23);
}

int main(void) {
    bool ok = true;
    long in_range = 0, outside = 0, wrong_outside = 0;
    long mismatches[4] = {0, 0, 0, 0};   // per KERNEL_SETS entry: lanes unlike the scalar bits
    double worst = 0.0;
    float worst_x = 0.0f;
    const float at_hi = flash_expf(EXP_HI);
    static float x[CHUNK], want[CHUNK];
    uint64_t bits = 0;
    while (bits <= UINT32_MAX) {
        for (int i = 0; i < CHUNK; i++) {
            x[i] = bits_float((uint32_t)(bits + (uint64_t)i));
            float y = flash_expf(x[i]);
            want[i] = y;
            if (x[i] >= EXP_LO && x[i] <= EXP_HI) {
                in_range++;
                double error = ulps(y, exp((double)x[i]));
                if (error > worst) {
                    worst = error;
                    worst_x = x[i];
                }
            } else {
                outside++;
                float expected = x[i] > EXP_HI ? at_hi : 0.0f;
                if (float_bits(y) != float_bits(expected)) {
                    if (wrong_outside++ < 5) {
                        printf("exp(%.9g) = %.9g, expected %.9g\n", x[i], y, expected);
                    }
                }
            }
        }
        for (int k = 0; KERNEL_SETS[k] != NULL; k++) {
            const Kernels *set = kernels_named(KERNEL_SETS[k]);
            if (set == NULL || strcmp(set->name, "scalar") == 0) {
                continue;
            }
            static float s[CHUNK], ds[CHUNK];
            float zero = 0.0f;
            memcpy(s, x, sizeof x);
            memset(ds, 0, sizeof ds);
            set->softmax_backward(s, ds, &zero, &zero, 1, CHUNK, CHUNK, 1.0f, CHUNK);
            for (int i = 0; i < CHUNK; i++) {
                if (float_bits(s[i]) != float_bits(want[i]) && mismatches[k]++ < 5) {
                    printf("%s: exp(%.9g) = %.9g, the scalar twin %.9g\n", set->name, x[i], s[i],
                           want[i]);
                }
            }
        }
        bits += CHUNK;
    }
    printf("%ld floats from EXP_LO = %.9g to EXP_HI = %.9g: largest error %.4f ulp, at x = %.9g "
           "(kernels.h: within %.2f)\n", in_range, EXP_LO, EXP_HI, worst, worst_x, CLAIMED_ULP);
    printf("%ld floats outside (NaNs and infinities included): %ld not 0 below EXP_LO or NaN, "
           "or not exp(EXP_HI) = %.9g above\n", outside, wrong_outside, at_hi);
    for (int k = 0; KERNEL_SETS[k] != NULL; k++) {
        const Kernels *set = kernels_named(KERNEL_SETS[k]);
        if (set != NULL && strcmp(set->name, "scalar") != 0) {
            printf("%s kernels: exp on every float, %ld unlike the scalar twin's bits\n",
                   set->name, mismatches[k]);
            ok = ok && mismatches[k] == 0;
        } else if (set == NULL) {
            printf("%s kernels: not on this CPU, not checked\n", KERNEL_SETS[k]);
        }
    }
    ok = ok && worst <= CLAIMED_ULP && wrong_outside == 0;
    printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
