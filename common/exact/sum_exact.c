// sum_exact.c - PyTorch 1.13's CPU float32 sum of a contiguous row, bit for bit.
//
// Adding n floats left to right gives the sum to within n roundings; PyTorch
// adds them in another order, so the two differ in the last bit now and then,
// and RMSNorm (lesson 15), which divides by the square root of a mean of
// squares, would print another last digit. PyTorch's order, for a row of n
// contiguous floats:
//
//   n < 8:   four running sums s0..s3: s_k gets x[k] (the first 4 values, one
//            each), then x[4], x[5], ... go into s0; the result is
//            ((s0 + s1) + s2) + s3.
//   n >= 8:  the same with 8-float vectors in place of numbers (lane l of
//            vector v is x[8v + l]): four running vector sums, which for long
//            rows are themselves summed in a cascade of levels (below);
//            then the n % 8 floats left at the end are summed on their own,
//            left to right, starting from 0; then the 8 lanes of the vector
//            sum are added to that, lane 0 first.
//
// The cascade ("multi_row_sum"): the four running sums are kept at 4 levels.
// Values go into level 0; after every `step` values (step = 16, or 2^k for
// long rows) level 0 is added into level 1 and emptied; every `step` of
// those, level 1 into level 2, and so on. So each addition joins numbers of
// about the same size, which loses less than adding small values one by one
// to a large total. At the end levels 1..3 are added into level 0.
//
// Where it comes from (PyTorch v1.13.1 sources):
//   aten/src/ATen/native/ReduceOps.cpp            mean on the CPU: sum, then div_ by n
//   aten/src/ATen/native/cpu/SumKernel.cpp        cascade_sum: vectorized_inner_sum
//                                                 (n >= 8), scalar_inner_sum (n < 8),
//                                                 row_sum, multi_row_sum
// The accumulator is a float (at::acc_type<float, /*is_cuda=*/true>), as here.
// The AVX2 build has 8 floats in a vector. Checked against PyTorch 1.13
// (Debian's, AVX2) on rows of 1 to 10000 numbers: every bit agrees
// (tests/test_sum_exact.c). A row longer than 32768 numbers summed on several
// threads is split between them: this is the one-thread order.
#include "exact/sum_exact.h"

enum {
    LANES = 8,    // floats in one AVX2 vector
    ROWS = 4,     // running sums side by side (row_sum's ilp_factor)
    LEVELS = 4,   // levels of the cascade (multi_row_sum's num_levels)
};

// ceil(log2(n)) for n >= 1 (utils::CeilLog2); 0 for n <= 1.
static int ceil_log2(long n) {
    int bits = 0;
    while ((1L << bits) < n) {
        bits += 1;
    }
    return bits;
}

// The four running sums of `count` groups of 4 "values" (a value: `width` floats side by
// side, 1 or LANES), with the cascade above: sums[k * width + l] gets lane l of value k of
// every group. Group g starts at x[g * group_stride], its value k at + k * value_stride.
// Only what is used is zeroed, and with fewer than `step` groups the higher levels, which
// would stay 0, are left out: adding +0 to a sum that started at +0 changes no bit.
static inline __attribute__((always_inline)) void multi_row_sum(
    float *sums, const float *x, long count, int width, long group_stride, long value_stride) {
    int power = ceil_log2(count) / LEVELS;
    power = power > 4 ? power : 4;
    long step = 1L << power, mask = step - 1;
    float acc[LEVELS][ROWS * LANES];
    int levels = count >= step ? LEVELS : 1;
    for (int level = 0; level < levels; level++) {
        for (int i = 0; i < ROWS * width; i++) {
            acc[level][i] = 0.0f;
        }
    }
    long g = 0;
    while (g + step <= count) {
        for (long j = 0; j < step; j++, g++) {
            for (int k = 0; k < ROWS; k++) {
                for (int l = 0; l < width; l++) {
                    acc[0][k * width + l] += x[g * group_stride + k * value_stride + l];
                }
            }
        }
        for (int level = 1; level < LEVELS; level++) {
            for (int i = 0; i < ROWS * width; i++) {
                acc[level][i] += acc[level - 1][i];
                acc[level - 1][i] = 0.0f;
            }
            if ((g & (mask << (level * power))) != 0) {
                break;
            }
        }
    }
    for (; g < count; g++) {
        for (int k = 0; k < ROWS; k++) {
            for (int l = 0; l < width; l++) {
                acc[0][k * width + l] += x[g * group_stride + k * value_stride + l];
            }
        }
    }
    for (int level = 1; level < levels; level++) {
        for (int i = 0; i < ROWS * width; i++) {
            acc[0][i] += acc[level][i];
        }
    }
    for (int i = 0; i < ROWS * width; i++) {
        sums[i] = acc[0][i];
    }
}

// row_sum: `count` values of `width` floats, value v at x[v * stride], into one value
// (width floats): four running sums, value v going into sum v % 4.
static inline __attribute__((always_inline)) void row_sum(float *sum, const float *x, long count,
                                                         int width, long stride) {
    float sums[ROWS * LANES];
    multi_row_sum(sums, x, count / ROWS, width, ROWS * stride, stride);
    for (long v = count / ROWS * ROWS; v < count; v++) {   // the values left over
        for (int l = 0; l < width; l++) {
            sums[l] += x[v * stride + l];
        }
    }
    for (int k = 1; k < ROWS; k++) {
        for (int l = 0; l < width; l++) {
            sums[l] += sums[k * width + l];
        }
    }
    for (int l = 0; l < width; l++) {
        sum[l] = sums[l];
    }
}

float sum_exact(const float *x, long n) {
    if (n < LANES) {                      // scalar_inner_sum
        float sum;
        row_sum(&sum, x, n, 1, 1);
        return 0.0f + sum;                // the output starts at 0 and the sum is added to it
    }
    long vectors = n / LANES;             // vectorized_inner_sum
    float lanes[LANES];
    row_sum(lanes, x, vectors, LANES, LANES);
    float sum = 0.0f;
    for (long i = vectors * LANES; i < n; i++) {
        sum += x[i];
    }
    for (int l = 0; l < LANES; l++) {
        sum += lanes[l];
    }
    return sum;
}

// The sum over rows of a contiguous (rows, cols) matrix, as PyTorch's cascade_sum reduces
// the leading dims with the last one kept (vectorized_outer_sum, or scalar_outer_sum when
// cols < 8): the columns in blocks of 32 (4 vectors; 4 single columns when cols < 8) are
// each one running sum down the rows, with the cascade; the columns left over use
// row_sum's four running sums, rows 4g + k going into sum k.
void sum_exact_columns(float *sums, const float *x, long rows, long cols) {
    if (cols < LANES) {
        sum_exact_columns_strided(sums, x, rows, cols, cols, 1);
        return;
    }
    long c = 0;
    for (; c + ROWS * LANES <= cols; c += ROWS * LANES) {
        multi_row_sum(&sums[c], &x[c], rows, LANES, cols, LANES);
    }
    for (; c < cols; c++) {
        row_sum(&sums[c], &x[c], rows, 1, cols);
    }
}

// scalar_outer_sum: blocks of 4 columns, each a running sum down the rows with the
// cascade; the columns left over, row_sum's four running sums.
void sum_exact_columns_strided(float *sums, const float *x, long rows, long cols,
                               long row_stride, long col_stride) {
    long c = 0;
    for (; c + ROWS <= cols; c += ROWS) {
        multi_row_sum(&sums[c], &x[c * col_stride], rows, 1, row_stride, col_stride);
    }
    for (; c < cols; c++) {
        row_sum(&sums[c], &x[c * col_stride], rows, 1, row_stride);
    }
}
