// bench.c - part 7: one decode step per cache kind, timed (--bench), and the sizes it times
// (the default run prints those without timing them).
//
// A decode step here is attention alone for one new token of one sequence in one layer: the
// query is given (for MLA, already absorbed into the latent's space); the step reads every
// cached number once, computes the scores, their softmax and the weighted sum. The layer's
// projections, the same for every kind, are left out. Each kind is a layer of Llama 3 8B's
// attention shape, 32 query heads of 128, with its cache: 32, 8 or 1 key/value heads, 8 of
// them in int8, 8 read over a window of a quarter of the tokens, or DeepSeek-V2's latent of
// 512 + 64 (with 32 heads, not its 128, so that the heads are the others').
//
// The kernels are written for speed, not for the lesson's bits: 8 lanes of sums (AVX2 and FMA
// when the CPU has them, else the same arithmetic in plain C), each cached number loaded once
// for all the query heads that read it. tests/test_lesson19.c checks them against the
// lesson's attention to a tolerance. The clock, the rounds and the machine's load:
// common/speed/timing.h.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "at_scale.h"
#include "speed/choice.h"
#include "speed/cpu.h"
#include "speed/timing.h"
#include "speed/vectors.h"

enum { HEADS = 32, HEAD_DIM = 128, LATENT = 512, ROPE_DIM = 64, KINDS = 6, ROUNDS = 5 };

typedef enum { FLOAT_KV, INT8_KV, LATENT_KV } Storage;

typedef struct {
    const char *name, *tag;   // the table's, and the bench line's
    Storage storage;
    int kv_heads;             // FLOAT_KV and INT8_KV
    int window_divisor;       // the window is context / this (1: every token)
} Kind;

static const Kind KINDS_TIMED[KINDS] = {
    {"MHA, 32 key/value heads", "mha", FLOAT_KV, 32, 1},
    {"GQA, 8 key/value heads", "gqa", FLOAT_KV, 8, 1},
    {"MQA, 1 key/value head", "mqa", FLOAT_KV, 1, 1},
    {"GQA 8, a window of 1/4", "window", FLOAT_KV, 8, 4},
    {"GQA 8, int8, scales per token", "int8", INT8_KV, 8, 1},
    {"MLA, latent 512 + rope 64", "mla", LATENT_KV, 0, 1},
};

// Bytes a cached token takes, and the tokens a step reads.
static double bytes_per_token(const Kind *k) {
    switch (k->storage) {
    case FLOAT_KV: return 2.0 * k->kv_heads * HEAD_DIM * 4;
    case INT8_KV: return 2.0 * k->kv_heads * HEAD_DIM + 2.0 * k->kv_heads * 4;
    default: return (LATENT + ROPE_DIM) * 4.0;
    }
}

static int tokens_read(const Kind *k, int context) {
    int window = context / k->window_divisor;
    return window > 0 ? window : 1;
}

// Multiply-adds a step does per token read: a score and a weighted sum per query head.
static double macs_per_token(const Kind *k) {
    return k->storage == LATENT_KV ? HEADS * (LATENT + ROPE_DIM + LATENT)
                                   : 2.0 * HEADS * HEAD_DIM;
}

void print_bench_plan(int context) {
    printf("one decode step, one layer, 32 query heads of 128, %d cached tokens; a float is 4 "
           "bytes\n", context);
    printf("%-31s %11s %10s %10s %10s\n", "cache kind", "bytes/token", "tokens", "cache MiB",
           "flops/byte");
    for (int i = 0; i < KINDS; i++) {
        const Kind *k = &KINDS_TIMED[i];
        int read = tokens_read(k, context);
        printf("%-31s %11.0f %10d %10.1f %10.2f\n", k->name, bytes_per_token(k), read,
               bytes_per_token(k) * read / 1048576.0, 2 * macs_per_token(k) / bytes_per_token(k));
    }
    printf("make lesson-19 ARGS=--bench times each (docs/fast-on-a-cpu.md, lesson 19)\n");
}

// --- the kernels: scalar, and AVX2 where the CPU has it -----------------------------------

// a . b over n floats (n a multiple of 8), in 8 lanes.
static float dot_lanes(const float *a, const float *b, int n) {
    float lane[8] = {0};
    for (int d = 0; d < n; d += 8) {
        for (int j = 0; j < 8; j++) {
            lane[j] += a[d + j] * b[d + j];
        }
    }
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
           ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

static void axpy_lanes(float *y, float a, const float *x, int n) {
    for (int d = 0; d < n; d++) {
        y[d] += a * x[d];
    }
}

#ifdef HAVE_VECTOR_KERNELS
AVX2_CODE static float sum8(v8f v) {
    return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

AVX2_CODE static float dot_avx2(const float *a, const float *b, int n) {
    v8f s0 = splat8(0.0f), s1 = splat8(0.0f);
    for (int d = 0; d < n; d += 16) {
        s0 = fma8(load8(a + d), load8(b + d), s0);
        s1 = fma8(load8(a + d + 8), load8(b + d + 8), s1);
    }
    return sum8(s0 + s1);
}

AVX2_CODE static void axpy_avx2(float *y, float a, const float *x, int n) {
    v8f va = splat8(a);
    for (int d = 0; d < n; d += 8) {
        store8(y + d, fma8(va, load8(x + d), load8(y + d)));
    }
}

// 8 int8 at p as floats.
AVX2_CODE static v8f load8_i8(const int8_t *p) {
    int64_t bytes;
    memcpy(&bytes, p, 8);
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(bytes)));
}

AVX2_CODE static float dot_i8_avx2(const float *a, const int8_t *b, int n) {
    v8f s0 = splat8(0.0f), s1 = splat8(0.0f);
    for (int d = 0; d < n; d += 16) {
        s0 = fma8(load8(a + d), load8_i8(b + d), s0);
        s1 = fma8(load8(a + d + 8), load8_i8(b + d + 8), s1);
    }
    return sum8(s0 + s1);
}

AVX2_CODE static void axpy_i8_avx2(float *y, float a, const int8_t *x, int n) {
    v8f va = splat8(a);
    for (int d = 0; d < n; d += 8) {
        store8(y + d, fma8(va, load8_i8(x + d), load8(y + d)));
    }
}
#endif

static float dot_i8_lanes(const float *a, const int8_t *b, int n) {
    float lane[8] = {0};
    for (int d = 0; d < n; d += 8) {
        for (int j = 0; j < 8; j++) {
            lane[j] += a[d + j] * (float)b[d + j];
        }
    }
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
           ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

static void axpy_i8_lanes(float *y, float a, const int8_t *x, int n) {
    for (int d = 0; d < n; d++) {
        y[d] += a * (float)x[d];
    }
}

static bool use_avx2(void) {
#ifdef HAVE_VECTOR_KERNELS
    return strcmp(kernels_wanted(), "scalar") != 0;
#else
    return false;
#endif
}

static float dot(const float *a, const float *b, int n, bool avx2) {
#ifdef HAVE_VECTOR_KERNELS
    if (avx2) {
        return dot_avx2(a, b, n);
    }
#endif
    (void)avx2;
    return dot_lanes(a, b, n);
}

static void axpy(float *y, float a, const float *x, int n, bool avx2) {
#ifdef HAVE_VECTOR_KERNELS
    if (avx2) {
        axpy_avx2(y, a, x, n);
        return;
    }
#endif
    (void)avx2;
    axpy_lanes(y, a, x, n);
}

static float dot_i8(const float *a, const int8_t *b, int n, bool avx2) {
#ifdef HAVE_VECTOR_KERNELS
    if (avx2) {
        return dot_i8_avx2(a, b, n);
    }
#endif
    (void)avx2;
    return dot_i8_lanes(a, b, n);
}

static void axpy_i8(float *y, float a, const int8_t *x, int n, bool avx2) {
#ifdef HAVE_VECTOR_KERNELS
    if (avx2) {
        axpy_i8_avx2(y, a, x, n);
        return;
    }
#endif
    (void)avx2;
    axpy_i8_lanes(y, a, x, n);
}

// Softmax of each of `rows` rows of n scores, in place (the C library's expf).
static void softmax_rows(float *scores, int rows, int n) {
    for (int r = 0; r < rows; r++) {
        float *x = &scores[(long)r * n], largest = x[0], sum = 0.0f;
        for (int s = 1; s < n; s++) {
            largest = fmaxf(largest, x[s]);
        }
        for (int s = 0; s < n; s++) {
            x[s] = expf(x[s] - largest);
            sum += x[s];
        }
        for (int s = 0; s < n; s++) {
            x[s] /= sum;
        }
    }
}

// The float and int8 caches of one sequence and layer, (L, KV, D), and MLA's, (L, KR + DR).
typedef struct {
    float *key, *value;            // FLOAT_KV
    int8_t *key_q, *value_q;       // INT8_KV
    float *key_scale, *value_scale;   // INT8_KV: (L, KV)
    float *latent;                 // LATENT_KV: (L, LATENT + ROPE_DIM)
} BenchCache;

// One decode step: query (HEADS, D) or, for MLA, q_latent (HEADS, LATENT) then q_pe (HEADS,
// ROPE_DIM); out (HEADS, D) or o_latent (HEADS, LATENT). scores: (HEADS, L) of scratch. The
// last `read` of the L cached tokens are attended to (all of them but for the window).
static void decode_step(float *out, float *scores, const float *query, const BenchCache *cache,
                 const Kind *kind, int L, int read, bool avx2) {
    int first_token = L - read;
    if (kind->storage == LATENT_KV) {
        int width = LATENT + ROPE_DIM;
        const float *q_pe = query + (long)HEADS * LATENT;
        float scale = 1.0f / sqrtf((float)(HEAD_DIM + ROPE_DIM));
        for (int s = 0; s < read; s++) {   // each cached latent read once, for every head
            const float *c_s = &cache->latent[(long)(first_token + s) * width];
            for (int h = 0; h < HEADS; h++) {
                scores[(long)h * read + s] = (dot(&query[(long)h * LATENT], c_s, LATENT, avx2) +
                                              dot(&q_pe[h * ROPE_DIM], c_s + LATENT, ROPE_DIM,
                                                  avx2)) * scale;
            }
        }
        softmax_rows(scores, HEADS, read);
        memset(out, 0, (size_t)HEADS * LATENT * sizeof(float));
        for (int s = 0; s < read; s++) {
            const float *c_s = &cache->latent[(long)(first_token + s) * width];
            for (int h = 0; h < HEADS; h++) {
                axpy(&out[(long)h * LATENT], scores[(long)h * read + s], c_s, LATENT, avx2);
            }
        }
        return;
    }
    int KV = kind->kv_heads, R = HEADS / KV, D = HEAD_DIM;
    float scale = 1.0f / sqrtf((float)D);
    for (int g = 0; g < KV; g++) {
        for (int s = 0; s < read; s++) {   // key s of head g read once, for its R query heads
            long at = ((long)(first_token + s) * KV + g) * D;
            for (int r = 0; r < R; r++) {
                int h = g * R + r;
                float score = kind->storage == FLOAT_KV
                    ? dot(&query[(long)h * D], &cache->key[at], D, avx2)
                    : dot_i8(&query[(long)h * D], &cache->key_q[at], D, avx2) *
                          cache->key_scale[(long)(first_token + s) * KV + g];
                scores[(long)h * read + s] = score * scale;
            }
        }
    }
    softmax_rows(scores, HEADS, read);
    memset(out, 0, (size_t)HEADS * D * sizeof(float));
    for (int g = 0; g < KV; g++) {
        for (int s = 0; s < read; s++) {
            long at = ((long)(first_token + s) * KV + g) * D;
            for (int r = 0; r < R; r++) {
                int h = g * R + r;
                float w = scores[(long)h * read + s];
                if (kind->storage == FLOAT_KV) {
                    axpy(&out[(long)h * D], w, &cache->value[at], D, avx2);
                } else {
                    axpy_i8(&out[(long)h * D], w * cache->value_scale[(long)(first_token + s) *
                                                                      KV + g],
                            &cache->value_q[at], D, avx2);
                }
            }
        }
    }
}

// --- the bench ------------------------------------------------------------------------------

// Numbers in [-1, 1) from a counter: cheap, and they touch every page the cache has.
static float filler(uint64_t *state) {
    *state = *state * 6364136223846793005u + 1442695040888963407u;
    return (float)(int32_t)(*state >> 32) / 2147483648.0f;
}

static BenchCache make_cache(const Kind *k, int L) {
    BenchCache c = {0};
    uint64_t state = 19;
    long n = (long)L * k->kv_heads * HEAD_DIM;
    if (k->storage == FLOAT_KV) {
        c.key = arena_alloc((size_t)n, sizeof(float));
        c.value = arena_alloc((size_t)n, sizeof(float));
        for (long j = 0; j < n; j++) {
            c.key[j] = filler(&state);
            c.value[j] = filler(&state);
        }
    } else if (k->storage == INT8_KV) {
        c.key_q = arena_alloc((size_t)n, 1);
        c.value_q = arena_alloc((size_t)n, 1);
        c.key_scale = arena_alloc((size_t)L * k->kv_heads, sizeof(float));
        c.value_scale = arena_alloc((size_t)L * k->kv_heads, sizeof(float));
        for (long j = 0; j < n; j++) {
            c.key_q[j] = (int8_t)(filler(&state) * 127.0f);
            c.value_q[j] = (int8_t)(filler(&state) * 127.0f);
        }
        for (long j = 0; j < (long)L * k->kv_heads; j++) {
            c.key_scale[j] = c.value_scale[j] = 1.0f / 127.0f;
        }
    } else {
        long m = (long)L * (LATENT + ROPE_DIM);
        c.latent = arena_alloc((size_t)m, sizeof(float));
        for (long j = 0; j < m; j++) {
            c.latent[j] = filler(&state);
        }
    }
    return c;
}

// The steps a round takes of kind k: enough for a round of a few milliseconds.
static int steps_per_round(const Kind *k, int context) {
    double bytes = bytes_per_token(k) * tokens_read(k, context);
    int steps = (int)(16.0 * 1048576.0 / bytes);
    return steps < 1 ? 1 : steps > 64 ? 64 : steps;
}

static double cache_bytes(int context) {
    double total = 0;
    for (int i = 0; i < KINDS; i++) {
        total += bytes_per_token(&KINDS_TIMED[i]) * context;
    }
    return total;
}

Cost bench_cost(int context) {
    double bytes = cache_bytes(context), flops = 0, read = 0;
    for (int i = 0; i < KINDS; i++) {
        const Kind *k = &KINDS_TIMED[i];
        double steps = (ROUNDS + 1.0) * steps_per_round(k, context);
        flops += steps * 2 * macs_per_token(k) * tokens_read(k, context);
        read += steps * bytes_per_token(k) * tokens_read(k, context);
    }
    // Filling the caches: an element each; a step: at least 1 GB/s and 1 GFLOP/s on one core
    // (the scalar kernels), the exps at the price of an element.
    return (Cost){.bytes = bytes + 4.0 * HEADS * (context + 2 * LATENT + ROPE_DIM),
                  .elements = bytes / 2 + (ROUNDS + 1.0) * 64 * HEADS * context,
                  .kernel_seconds = read / 1e9 + flops / 1e9};
}

int run_bench(int context) {
    bool avx2 = use_avx2();
    BenchCache caches[KINDS];
    for (int i = 0; i < KINDS; i++) {
        caches[i] = make_cache(&KINDS_TIMED[i], context);
    }
    float *query = arena_alloc((size_t)HEADS * (LATENT + ROPE_DIM), sizeof(float));
    float *out = arena_alloc((size_t)HEADS * LATENT, sizeof(float));
    float *scores = arena_alloc((size_t)HEADS * context, sizeof(float));
    uint64_t state = 7;
    for (int j = 0; j < HEADS * (LATENT + ROPE_DIM); j++) {
        query[j] = filler(&state) * 0.1f;
    }
    Timing times[KINDS] = {{0}};
    Shares shares = {0};
    for (int round = 0; round <= ROUNDS; round++) {   // round 0 warms the caches up, untimed
        for (int i = 0; i < KINDS; i++) {
            const Kind *k = &KINDS_TIMED[i];
            int steps = steps_per_round(k, context), read = tokens_read(k, context);
            Instant start = now_instant();
            for (int n = 0; n < steps; n++) {
                decode_step(out, scores, query, &caches[i], k, context, read, avx2);
            }
            double seconds = seconds_since(&shares, start);
            if (round > 0) {
                add_time(&times[i], seconds * 1e3 / steps);
            }
        }
    }
    printf("-- bench: a decode step, one layer, 32 query heads of 128, %d cached tokens, one "
           "thread,\n   %s kernels --\n", context, avx2 ? "avx2" : "scalar");
    describe_cpu();
    printf("%-31s %11s %9s %9s %8s %9s %8s\n", "cache kind", "bytes/token", "cache MiB",
           "flops/B", "best ms", "tokens/s", "GB/s");
    for (int i = 0; i < KINDS; i++) {
        const Kind *k = &KINDS_TIMED[i];
        double bytes = bytes_per_token(k) * tokens_read(k, context);
        printf("%-31s %11.0f %9.1f %9.2f %8.3f %9.1f %8.2f\n", k->name, bytes_per_token(k),
               bytes / 1048576.0, 2 * macs_per_token(k) / bytes_per_token(k), times[i].best,
               1e3 / times[i].best, bytes / (times[i].best * 1e-3) / 1e9);
    }
    const Timing *all[KINDS];
    for (int i = 0; i < KINDS; i++) {
        all[i] = &times[i];
    }
    Load load = machine_load(&shares, all, KINDS);
    print_load(stdout, &load);
    for (int i = 0; i < KINDS; i++) {
        const Kind *k = &KINDS_TIMED[i];
        double bytes = bytes_per_token(k) * tokens_read(k, context);
        printf("bench kind=%s context=%d bytes_per_token=%.0f cache_mib=%.1f ms=%.3f "
               "spread=%.2f tokens_per_s=%.1f gb_per_s=%.2f\n", k->tag, context,
               bytes_per_token(k), bytes / 1048576.0, times[i].best, spread(&times[i]),
               1e3 / times[i].best, bytes / (times[i].best * 1e-3) / 1e9);
    }
    return 0;
}
