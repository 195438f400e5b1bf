// rng.c - PyTorch 1.13's CPU generator, bit for bit.
//
// Why bother? A lesson is only checkable against its notebook if it starts
// from the same numbers: torch.manual_seed(0); torch.rand(3, 2, 4) must give
// the same 24 floats here as in Python, down to the last bit. So this file
// copies, step by step, what PyTorch does. docs/pytorch-rng.md explains
// each step with numbers to check; "(§5b)" below points into it.
//
// The pieces, bottom up:
//   mt19937                 the engine: 32-bit words from a 624-word state (§1)
//   rand_tensor, uniform_   one word -> one float in [0, 1), then scaled (§2, §3)
//   randint                 one word (or two) modulo the range (§4)
//   randn, normal_          Box-Muller: two uniforms -> two normals (§5)
//   bernoulli_draw          dropout's keep/drop coin (§6)
//
// Where PyTorch picks a kernel by CPU capability, this file implements the
// AVX2 one only (§3, §5b): that is what x86 machines with AVX2 or AVX-512
// run, including the one the reference data was recorded on. The vector
// code is written out here one float at a time, with fmaf() exactly where
// the compiled PyTorch fuses a multiply and an add. The build uses
// -ffp-contract=off, so the compiler adds no fusions of its own.
#include "exact/rng.h"

#include <math.h>

#include "core/error.h"

// ---------------------------------------------------------------------------
// §1  The generator: mt19937 plus one cached normal value
// ---------------------------------------------------------------------------

enum { MT_N = 624, MT_M = 397 };  // state words; offset used by the twist

// PyTorch's CPUGeneratorImpl default seed. PyTorch itself seeds its default
// generator from the OS at start-up; we use this fixed value instead so that
// a program that forgets manual_seed() still runs the same way every time.
#define DEFAULT_SEED 67280421310721ULL

static struct {
    uint32_t state[MT_N];
    int next;                  // index of the next word to hand out
    bool seeded;
    bool has_cached_normal;    // §5a: Box-Muller makes two values, uses one
    double cached_normal;
} gen;

void manual_seed(uint64_t seed) {
    // Only the low 32 bits reach the engine, so 2^32 + 5 acts like 5 (§1).
    gen.state[0] = (uint32_t)seed;
    for (int i = 1; i < MT_N; i++) {
        uint32_t prev = gen.state[i - 1];
        // Knuth's init_genrand; unsigned arithmetic wraps mod 2^32 for us.
        gen.state[i] = 1812433253u * (prev ^ (prev >> 30)) + (uint32_t)i;
    }
    gen.next = MT_N;           // the first draw twists the whole state first
    gen.seeded = true;
    gen.has_cached_normal = false;   // manual_seed is the only thing that clears it
}

// Replace all 624 words with the next 624 (the textbook MT19937 twist).
static void mt_twist(void) {
    const uint32_t matrix_a = 0x9908b0dfu;
    for (int i = 0; i < MT_N; i++) {
        // the top bit of word i joined with the low 31 bits of word i+1
        uint32_t y = (gen.state[i] & 0x80000000u) | (gen.state[(i + 1) % MT_N] & 0x7fffffffu);
        uint32_t word = gen.state[(i + MT_M) % MT_N] ^ (y >> 1);
        if (y & 1u) {
            word ^= matrix_a;
        }
        gen.state[i] = word;
    }
    gen.next = 0;
}

// Tempering scrambles the bits of a state word so that outputs are well
// distributed in every bit position.
static uint32_t mt_temper(uint32_t y) {
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

uint32_t random32(void) {
    if (!gen.seeded) {
        manual_seed(DEFAULT_SEED);
    }
    if (gen.next >= MT_N) {
        mt_twist();
    }
    uint32_t word = gen.state[gen.next];
    gen.next += 1;
    return mt_temper(word);
}

uint64_t random64(void) {
    // Two separate statements: the FIRST word must become the high half, and
    // C does not fix the order in which the operands of `|` are evaluated.
    uint64_t high = random32();
    uint64_t low = random32();
    return (high << 32) | low;
}

// ---------------------------------------------------------------------------
// §2  Uniform numbers
// ---------------------------------------------------------------------------

// A float in [0, 1 - 2^-24]: the low 24 bits of one word, times 2^-24. A
// float has a 24-bit significand, so every value is exact.
static float uniform_float(void) {
    uint32_t bits = random32() & 0xFFFFFFu;
    return (float)bits * 0x1p-24f;
}

// A double in [0, 1 - 2^-53] from 53 bits of one random64 (two words).
static double uniform_double(void) {
    uint64_t bits = random64() & ((1ULL << 53) - 1);
    return (double)bits * 0x1p-53;
}

// The first element of a contiguous tensor's storage.
static float *contiguous_data(const Tensor *t, const char *op) {
    if (!is_contiguous(t)) {
        fail("%s: expected a contiguous tensor, got a strided view of shape (%s)",
             op, size_x_str(t));
    }
    return t->data + t->offset;
}

// ---------------------------------------------------------------------------
// §3  uniform_(from, to), and torch.rand as uniform_(0, 1)
// ---------------------------------------------------------------------------

void uniform_(Tensor *t, double from, double to) {
    if (!(from <= to)) {
        fail("uniform_: expects to return a [from, to) range, but found from=%g > to=%g",
             from, to);
    }
    float *data = contiguous_data(t, "uniform_");
    // The bounds are rounded to float first, and the span is a float too.
    float low = (float)from;
    float span = (float)to - low;
    long n = numel(t);
    for (long i = 0; i < n; i++) {
        // AVX2 kernel: x*span + low in ONE rounding (the DEFAULT kernel
        // rounds the product first; about half the elements would differ).
        data[i] = fmaf(uniform_float(), span, low);
    }
}

Tensor *rand_tensor(Shape shape) {
    // torch.rand is empty(shape).uniform_(0, 1); fmaf(x, 1, 0) is just x.
    Tensor *t = zeros(shape);
    uniform_(t, 0.0, 1.0);
    return t;
}

// ---------------------------------------------------------------------------
// §4  randint(low, high): a word modulo the range
// ---------------------------------------------------------------------------

Tensor *randint(long low, long high, Shape shape) {
    if (low >= high) {
        fail("randint: expects 'from' to be less than 'to', but got from=%ld >= to=%ld",
             low, high);
    }
    Tensor *t = zeros(shape);
    t->dtype = DTYPE_INT64;
    uint64_t range = (uint64_t)high - (uint64_t)low;
    long n = numel(t);
    for (long i = 0; i < n; i++) {
        // A range that fits in 32 bits costs one word, a larger one two.
        // PyTorch does no rejection sampling, so there is a tiny modulo bias.
        uint64_t v = range >= (1ULL << 32) ? random64() : random32();
        long value = (long)((uint64_t)low + v % range);
        t->data[i] = (float)value;   // exact below 2^24 (see tensor.h)
    }
    return t;
}

// ---------------------------------------------------------------------------
// §5a  Few elements (numel < 16): serial Box-Muller in double, with a cache
// ---------------------------------------------------------------------------

// Box-Muller turns two uniforms into two independent normals,
//     r = sqrt(-2 ln(1 - u2)),  theta = 2 pi u1,  r cos(theta) and r sin(theta).
// PyTorch returns the cosine one and keeps the sine one for the next call.
// The cache lives in the generator, so it survives rand, randint and the
// numel >= 16 path, and even crosses from one randn call to the next:
// randn(5) followed by randn(1) gives the same six numbers as randn(6).
static double serial_normal(double mean, double std) {
    if (gen.has_cached_normal) {
        gen.has_cached_normal = false;
        // One double FMA on AVX2 builds (exact anyway for mean 0, std 1).
        return fma(gen.cached_normal, std, mean);
    }
    double u1 = uniform_double();   // drawn first, used for the angle
    double u2 = uniform_double();
    double r = sqrt(-2.0 * log(1.0 - u2));
    double theta = 6.283185307179586 * u1;   // 2*pi, as the double 2.0 * pi
    gen.cached_normal = r * sin(theta);
    gen.has_cached_normal = true;
    return fma(r * cos(theta), std, mean);
}

static void normal_serial_fill(float *data, long n, double mean, double std) {
    for (long i = 0; i < n; i++) {
        data[i] = (float)serial_normal(mean, std);
    }
}

// ---------------------------------------------------------------------------
// §5b  Many elements (numel >= 16): the AVX2 normal_fill kernel, in float
// ---------------------------------------------------------------------------
//
// The vector kernel needs its own log, sin and cos for 8 floats at once; it
// uses the Cephes polynomials of avx_mathfun.h. They are not glibc's logf
// and sinf, so their last bits differ, and we must copy them exactly: the
// same float constants, and fmaf() wherever GCC fused the vector multiply
// and add when it compiled PyTorch (§5b lists where).

// Cephes log for x in [2^-24, 1] (§5b LOG). Write x = m * 2^e with m in
// [sqrt(1/2), sqrt(2)); then log x = e ln 2 + log(m), and log(m) comes from
// a polynomial in (m - 1). ln 2 is split as q2 + q1 for extra precision.
static float cephes_log(float x) {
    const float p[9] = {7.0376836292E-2f, -1.1514610310E-1f, 1.1676998740E-1f,
                        -1.2420140846E-1f, 1.4249322787E-1f, -1.6668057665E-1f,
                        2.0000714765E-1f, -2.4999993993E-1f, 3.3333331174E-1f};
    const float q1 = -2.12194440e-4f;
    const float q2 = 0.693359375f;

    // Split the float into exponent and mantissa with m in [0.5, 1).
    int exponent;
    float m = frexpf(x, &exponent);   // x = m * 2^exponent, exact
    // frexpf's exponent is the unbiased one plus 1 (its m is in [0.5, 1),
    // not [1, 2)): (E - 127) + 1 for a float whose exponent bits are E.
    float e = (float)exponent;
    if (m < 0.707106781186547524f) {
        e = e - 1.0f;
        m = (m - 1.0f) + m;    // 2m - 1, computed as the vector code does
    } else {
        m = m - 1.0f;
    }
    float z = m * m;

    float y = fmaf(p[0], m, p[1]);
    for (int k = 2; k <= 8; k++) {
        y = fmaf(y, m, p[k]);
    }
    y = y * m;
    y = fmaf(y, z, e * q1);    // e*q1 is rounded on its own
    y = fmaf(-z, 0.5f, y);     // y - z/2
    return fmaf(e, q2, m + y);
}

// Cephes sine and cosine of x >= 0 together (§5b SINCOS). Reduce x by a
// multiple j of pi/4 to a small x', evaluate both polynomials on x', and
// let j pick which one is the sine and which signs to flip.
static void cephes_sincos(float x, float *sin_out, float *cos_out) {
    const float four_over_pi = 1.27323954473516f;
    const float c0 = 2.443315711809948E-005f, c1 = -1.388731625493765E-003f,
                c2 = 4.166664568298827E-002f;
    const float s0 = -1.9515295891E-4f, s1 = 8.3321608736E-3f, s2 = -1.6666654611E-1f;

    // j = x/(pi/4), truncated, then rounded up to even: x' = x - j*pi/4
    // lies in [-pi/4, pi/4]. pi/4 is subtracted in three parts (DP1..DP3)
    // so that the reduction loses almost no precision.
    int32_t j = (int32_t)(x * four_over_pi);
    j = (j + 1) & ~1;
    float y = (float)j;
    x = fmaf(y, -0.78515625f, x);
    x = fmaf(y, -2.4187564849853515625e-4f, x);
    x = fmaf(y, -3.77489497744594108e-8f, x);
    float z = x * x;

    float c = fmaf(c0, z, c1);     // cos x' = 1 - z/2 + z^2 * poly(z)
    c = fmaf(c, z, c2);
    c = c * z;
    c = fmaf(c, z, -(z * 0.5f));
    c = c + 1.0f;

    float s = fmaf(s0, z, s1);     // sin x' = x' + x' * z * poly(z)
    s = fmaf(s, z, s2);
    s = s * z;
    s = fmaf(s, x, x);

    // In quadrants 2 and 3 (j & 2) sine and cosine swap roles. The vector
    // code blends by adding a zero, which turns -0 into +0; so do we.
    bool swap = (j & 2) != 0;
    float sine = (swap ? c : s) + 0.0f;
    float cosine = (swap ? s : c) + 0.0f;
    if (j & 4) {
        sine = -sine;
    }
    if (((j - 2) & 4) == 0) {
        cosine = -cosine;
    }
    *sin_out = sine;
    *cos_out = cosine;
}

// Turn 16 uniforms into 16 normals in place: element i (i < 8) pairs with
// element i + 8; the first gets R cos T, the second R sin T.
static void normal_fill_16(float *block, float mean, float std) {
    const float two_pi = (float)6.283185307179586;   // 2*pi rounded to float
    for (int i = 0; i < 8; i++) {
        float u1 = 1.0f - block[i];      // in [2^-24, 1], so the log is finite
        float u2 = block[i + 8];
        float radius = sqrtf(-2.0f * cephes_log(u1));
        float theta = two_pi * u2;
        float sin_theta, cos_theta;
        cephes_sincos(theta, &sin_theta, &cos_theta);
        block[i] = fmaf(radius * cos_theta, std, mean);
        block[i + 8] = fmaf(radius * sin_theta, std, mean);
    }
}

static void normal_fill(float *data, long n, float mean, float std) {
    // Pass 1: n uniforms, in order.
    for (long i = 0; i < n; i++) {
        data[i] = uniform_float();
    }
    // Pass 2: every whole block of 16.
    for (long i = 0; i + 16 <= n; i += 16) {
        normal_fill_16(data + i, mean, std);
    }
    // Pass 3, the tail rule: a vector kernel cannot do a partial block, so
    // PyTorch draws 16 FRESH uniforms into the last 16 slots (overwriting
    // some finished normals) and transforms that block again.
    if (n % 16 != 0) {
        float *last_block = data + n - 16;
        for (int i = 0; i < 16; i++) {
            last_block[i] = uniform_float();
        }
        normal_fill_16(last_block, mean, std);
    }
}

// ---------------------------------------------------------------------------
// §5  randn and normal_: choose the path by size
// ---------------------------------------------------------------------------

void normal_(Tensor *t, double mean, double std) {
    if (!(std >= 0.0)) {
        fail("normal_: expects std >= 0.0, but found std %g", std);
    }
    float *data = contiguous_data(t, "normal_");
    long n = numel(t);
    if (n >= 16) {
        normal_fill(data, n, (float)mean, (float)std);   // the kernel takes floats
    } else {
        normal_serial_fill(data, n, mean, std);
    }
}

Tensor *randn(Shape shape) {
    Tensor *t = zeros(shape);
    normal_(t, 0.0, 1.0);
    return t;
}

// ---------------------------------------------------------------------------
// §6  Dropout's coin: keep an element with probability keep_prob = 1 - p
// ---------------------------------------------------------------------------

bool bernoulli_draw(double keep_prob) {
    // A 53-bit uniform (two words), compared in double.
    return uniform_double() < keep_prob;
}
