// layer_norm_exact.c - PyTorch 1.13's CPU float32 LayerNorm, bit for bit.
//
// LayerNorm normalises each row of n numbers: y = (x - mean) / sqrt(var + eps)
// * weight + bias, with the mean and the BIASED variance (divided by n) of
// the row. Summing the row in double (ops.c did that before) gives the mean
// and variance right to within a float's rounding, and yet about two in
// three outputs then differ from PyTorch's in the last bit, enough to change
// a printed digit now and then. PyTorch's kernel gets its moments another
// way, and rounds at other places; this file does what it does:
//
//   1. Welford's running mean and variance, in 8 lanes at once:
//          delta = x - m1;  m1 += delta * (1/k);  m2 += delta * (x - m1)
//      for the k-th value a lane sees (k = 1, 2, ...; m1 the mean so far,
//      m2 the sum of squared deviations). Lane l takes x[l], x[l+8], ...
//      in chunks of 16 values per lane (128 numbers of the row).
//   2. The chunks' moments are merged pairwise, like a binary counter: two
//      chunks into one of 32 values, two of those into 64, ... (a "cascade
//      sum": every merge adds two results of similar size, which loses less
//      than adding small pieces one by one to a large running total).
//   3. The n % 8 numbers left at the end of the row go through Welford one
//      by one, then the 8 lanes are merged into that, lane 0 first.
//   4. rstd = 1 / sqrt(var + eps), and y = (x * rstd + (-rstd * mean)) *
//      weight + bias, with both multiply-adds fused (fmaf).
// Merging two sets of statistics (counts na and nb, means ma and mb, sums of
// squared deviations Ma and Mb) uses Chan's formula:
//      delta = mb - ma,  c = nb / (na + nb)
//      mean  = ma + c * delta
//      M     = Ma + (Mb + delta^2 * c * na)
// (the variance of the union is the two variances plus the spread between
// the two means).
//
// Where it comes from (PyTorch v1.13.1 sources):
//   aten/src/ATen/native/layer_norm.cpp            layer_norm_cpu -> LayerNormKernel
//   aten/src/ATen/native/cpu/layer_norm_kernel.cpp LayerNormKernelImplInternal (step 4)
//   aten/src/ATen/native/cpu/moments_utils.h       RowwiseMoments (steps 1-3),
//                                                  AddMoments, AddMomentsVec
// As with softmax_exact.c, this is the AVX2 build of the kernel (8 floats per
// vector) written out one lane at a time. The source has no explicit fused
// multiply-add: where the compiler fused one is measured, not read. Against
// PyTorch 1.13 (Debian's, AVX2 kernels) on 9 million numbers in rows of 1 to
// 12345 every output bit agrees with exactly this choice: step 4 fused, steps
// 1-3 not (fusing any one of the others makes thousands of outputs differ).
// The rows are independent, so threads do not change the result.
#include "exact/layer_norm_exact.h"

#include <math.h>
#include <string.h>

enum {
    LANES = 8,        // floats in one AVX2 vector
    CHUNK = 16,       // vectors per chunk (PyTorch's kChunkSize)
    MAX_DEPTH = 64,   // merge levels: enough for any row length
};

// Running statistics of one lane (or of a whole row): how many values, their
// mean, and the sum of their squared deviations from it.
typedef struct {
    long count;
    float mean;
    float m2;
} Moments;

// Merge `add` into `into` (AddMoments, Chan's formula above).
static void merge(Moments *into, Moments add) {
    long n = into->count + add.count;
    float c = n == 0 ? 0.0f : (float)add.count / (float)n;
    float delta = add.mean - into->mean;
    into->mean = into->mean + c * delta;
    into->m2 = into->m2 + (add.m2 + delta * delta * c * (float)into->count);
    into->count = n;
}

// The same for all 8 lanes of a vector, which share one count
// (AddMomentsVec): lane by lane it is exactly merge().
static void merge_lanes(Moments *into, const Moments *add) {
    for (int l = 0; l < LANES; l++) {
        merge(&into[l], add[l]);
    }
}

static void clear_lanes(Moments *lanes) {
    memset(lanes, 0, LANES * sizeof *lanes);
}

// Step 1 for one chunk: `vectors` groups of 8 numbers from x, Welford in
// each lane. 1/k is rounded to a float first, as PyTorch precomputes it.
static void chunk_moments(Moments *lanes, const float *x, long vectors) {
    clear_lanes(lanes);
    for (long k = 0; k < vectors; k++) {
        float inverse = 1.0f / (float)(k + 1);
        for (int l = 0; l < LANES; l++) {
            float value = x[k * LANES + l];
            float delta = value - lanes[l].mean;
            lanes[l].mean = lanes[l].mean + delta * inverse;
            lanes[l].m2 = lanes[l].m2 + delta * (value - lanes[l].mean);
            lanes[l].count = k + 1;
        }
    }
}

// CeilLog2 of PyTorch's utils.h: 1 for 0, 1 and 2, else ceil(log2(m)).
static int ceil_log2(long m) {
    int bits = 0;
    for (long rest = m - 1; rest > 0; rest >>= 1) {
        bits += 1;
    }
    return m <= 2 ? 1 : bits;
}

void layer_norm_exact_moments(float *mean, float *var, const float *x, long n) {
    long vectors = n / LANES;                     // whole vectors in the row
    long chunks = (vectors + CHUNK - 1) / CHUNK;
    int depth = ceil_log2(chunks);
    // stack[d] holds the merged moments of 2^d chunks, lane by lane, until
    // a second such group arrives and both move up to stack[d + 1].
    Moments stack[MAX_DEPTH][LANES];
    memset(stack, 0, sizeof stack);
    for (long i = 0; i < chunks; i++) {
        long in_chunk = vectors - i * CHUNK < CHUNK ? vectors - i * CHUNK : CHUNK;
        Moments lanes[LANES];
        chunk_moments(lanes, &x[i * CHUNK * LANES], in_chunk);
        merge_lanes(stack[0], lanes);
        // Step 2: chunk i + 1 completes a group of 2, 4, 8, ... chunks for
        // every trailing zero bit of i + 1: carry each level up, like adding
        // 1 to a binary counter.
        long counter = i + 1;
        for (int d = 1; d < depth && (counter & 1) == 0; d++) {
            merge_lanes(stack[d], stack[d - 1]);
            clear_lanes(stack[d - 1]);
            counter >>= 1;
        }
    }
    for (int d = 1; d < depth; d++) {   // what is left on the stack, into stack[0]
        merge_lanes(stack[0], stack[d]);
    }
    // Step 3: the last n % 8 numbers one by one (here 1/k is a true division) ...
    Moments row = {0, 0.0f, 0.0f};
    for (long i = vectors * LANES; i < n; i++) {
        float delta = x[i] - row.mean;
        row.count += 1;
        row.mean = row.mean + delta / (float)row.count;
        row.m2 = row.m2 + delta * (x[i] - row.mean);
    }
    // ... then the 8 lanes, each with the count of whole vectors.
    for (int l = 0; l < LANES; l++) {
        Moments lane = {vectors, stack[0][l].mean, stack[0][l].m2};
        merge(&row, lane);
    }
    *mean = row.mean;
    *var = row.m2 / (float)n;   // biased: divided by n, not n - 1
}

void layer_norm_exact_row(float *y, const float *x, const float *weight, const float *bias, long n,
                          float eps) {
    float mean, var;
    layer_norm_exact_moments(&mean, &var, x, n);
    float rstd = 1.0f / sqrtf(var + eps);
    float shift = -rstd * mean;   // so that (x - mean) * rstd = x * rstd + shift
    for (long i = 0; i < n; i++) {
        y[i] = fmaf(fmaf(x[i], rstd, shift), weight[i], bias[i]);
    }
}
