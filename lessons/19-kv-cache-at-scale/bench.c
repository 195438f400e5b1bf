// bench.c - part 7: one decode step per cache kind, its sizes, and its time: measured for a
// few rounds by the default run (unless ATTN_NO_TIMING is set: the tests set it, so that a
// run prints the same every time), for more rounds with the machine's load by --bench.
//
// A decode step here is attention alone for one new token of one sequence in one layer: the
// query is given (for MLA, already absorbed into the latent's space); the step reads every
// cached number once, computes the scores, their softmax and the weighted sum. The layer's
// projections, the same for every kind, are left out. Each kind is a layer of Llama 3 8B's
// attention shape, 32 query heads of 128, with its cache: 32, 8 or 1 key/value heads, 8 of
// them in int8, 8 read over a window of a quarter of the tokens, or DeepSeek-V2's latent of
// 512 + 64 (with 32 heads, not its 128, so that the heads are the others').
//
// The kernels are written for speed, not for the lesson's bits: with AVX2 and FMA (when the
// CPU has them and ATTN_KERNELS allows), blocks of 64 tokens whose keys come from memory once
// and serve every query head that reads them, eight keys a register; else plain loops of 8
// lanes, each cached number read once for the heads that read it. tests/test_lesson19.c
// checks both against plain loops in double, to a tolerance. The clock, the rounds and the
// machine's load: common/speed/timing.h.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "at_scale.h"
#include "speed/choice.h"
#include "speed/cpu.h"
#include "speed/timing.h"
#include "speed/vectors.h"

enum { HEADS = 32, HEAD_DIM = 128, LATENT = 512, ROPE_DIM = 64, KINDS = 6 };
enum { ROUNDS = 5, QUICK_ROUNDS = 2 };   // timed rounds: --bench's, the default run's

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
}

bool timing_wanted(void) {
    return getenv("ATTN_NO_TIMING") == NULL;
}

// --- the kernels: plain C, and AVX2 where the CPU has it -----------------------------------

// The float and int8 caches of one sequence and layer, (L, KV, D), and MLA's, (L, KR + DR).
typedef struct {
    float *key, *value;               // FLOAT_KV
    int8_t *key_q, *value_q;          // INT8_KV
    float *key_scale, *value_scale;   // INT8_KV: (L, KV)
    float *latent;                    // LATENT_KV: (L, LATENT + ROPE_DIM)
} BenchCache;

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

// The plain step: for each key/value head, each cached token once, for the query heads that
// read it; MLA's latent once for every head. query (HEADS, D), or for MLA (HEADS, LATENT +
// ROPE_DIM): each head's absorbed query, then its q_pe; out (HEADS, D) or (HEADS, LATENT), the
// weighted sum of values or of latents. scores: (HEADS, read) of scratch. The last `read` of
// the L cached tokens are attended to (all of them but for the window).
static void decode_step_plain(float *out, float *scores, const float *query,
                              const BenchCache *cache, const Kind *kind, int L, int read) {
    int first_token = L - read;
    int KV = kind->storage == LATENT_KV ? 1 : kind->kv_heads, R = HEADS / KV;
    int width = kind->storage == LATENT_KV ? LATENT + ROPE_DIM : HEAD_DIM;   // of a key
    int out_width = kind->storage == LATENT_KV ? LATENT : HEAD_DIM;          // of a value
    long stride = kind->storage == LATENT_KV ? width : (long)KV * HEAD_DIM;
    float scale = 1.0f / sqrtf((float)(kind->storage == LATENT_KV ? HEAD_DIM + ROPE_DIM
                                                                  : HEAD_DIM));
    memset(out, 0, (size_t)HEADS * out_width * sizeof(float));
    for (int g = 0; g < KV; g++) {
        for (int s = 0; s < read; s++) {   // key s of head g read once, for its R query heads
            long at = (first_token + s) * stride + (long)g * HEAD_DIM;
            float key_scale = kind->storage == INT8_KV
                ? cache->key_scale[(long)(first_token + s) * KV + g] : 1.0f;
            for (int r = 0; r < R; r++) {
                const float *q = &query[(long)(g * R + r) * width];
                float lane[8] = {0};
                for (int d = 0; d < width; d += 8) {
                    for (int j = 0; j < 8; j++) {
                        float k = kind->storage == INT8_KV ? (float)cache->key_q[at + d + j]
                                  : kind->storage == FLOAT_KV ? cache->key[at + d + j]
                                                              : cache->latent[at + d + j];
                        lane[j] += q[d + j] * k;
                    }
                }
                float dot = ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
                            ((lane[4] + lane[5]) + (lane[6] + lane[7]));
                scores[(long)(g * R + r) * read + s] = dot * key_scale * scale;
            }
        }
    }
    softmax_rows(scores, HEADS, read);
    for (int g = 0; g < KV; g++) {
        for (int s = 0; s < read; s++) {
            long at = (first_token + s) * stride + (long)g * HEAD_DIM;
            float value_scale = kind->storage == INT8_KV
                ? cache->value_scale[(long)(first_token + s) * KV + g] : 1.0f;
            for (int r = 0; r < R; r++) {
                int h = g * R + r;
                float w = scores[(long)h * read + s] * value_scale;
                for (int d = 0; d < out_width; d++) {
                    float v = kind->storage == INT8_KV ? (float)cache->value_q[at + d]
                              : kind->storage == FLOAT_KV ? cache->value[at + d]
                                                          : cache->latent[at + d];
                    out[(long)h * out_width + d] += w * v;
                }
            }
        }
    }
}

#ifdef HAVE_VECTOR_KERNELS
enum { KEY_BLOCK = 64 };   // tokens a block: its keys stay in L1 or L2 while every head reads them

// The totals of eight vectors, a[k]'s in lane k.
AVX2_CODE ALWAYS_INLINE v8f totals8(v8f a0, v8f a1, v8f a2, v8f a3, v8f a4, v8f a5, v8f a6,
                                    v8f a7) {
    v8f u0 = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    v8f u1 = _mm256_hadd_ps(_mm256_hadd_ps(a4, a5), _mm256_hadd_ps(a6, a7));
    return _mm256_permute2f128_ps(u0, u1, 0x20) + _mm256_permute2f128_ps(u0, u1, 0x31);
}

// 8 int8 at p as floats.
AVX2_CODE ALWAYS_INLINE v8f load8_i8(const int8_t *p) {
    int64_t bytes;
    memcpy(&bytes, p, 8);
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(bytes)));
}

// A key's 8 numbers at p + d: floats, or bytes.
AVX2_CODE ALWAYS_INLINE v8f key8(const float *f, const int8_t *b, long at) {
    return f != NULL ? load8(f + at) : load8_i8(b + at);
}

// scores[j] = q . row j, for `count` rows of n numbers (a multiple of 8), `stride` apart, of
// floats (f) or bytes (b): eight rows at a time, each in its own register, their totals taken
// together at the end (a row's total alone would cost as much as its products).
AVX2_CODE static void dots_avx2(float *scores, const float *q, const float *f, const int8_t *b,
                                long stride, int count, int n) {
    int j = 0;
    for (; j + 8 <= count; j += 8) {
        v8f a0 = splat8(0.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        long at = j * stride;
        for (int d = 0; d < n; d += 8) {
            v8f qd = load8(q + d);
            a0 = fma8(qd, key8(f, b, at + d), a0);
            a1 = fma8(qd, key8(f, b, at + stride + d), a1);
            a2 = fma8(qd, key8(f, b, at + 2 * stride + d), a2);
            a3 = fma8(qd, key8(f, b, at + 3 * stride + d), a3);
            a4 = fma8(qd, key8(f, b, at + 4 * stride + d), a4);
            a5 = fma8(qd, key8(f, b, at + 5 * stride + d), a5);
            a6 = fma8(qd, key8(f, b, at + 6 * stride + d), a6);
            a7 = fma8(qd, key8(f, b, at + 7 * stride + d), a7);
        }
        store8(scores + j, totals8(a0, a1, a2, a3, a4, a5, a6, a7));
    }
    for (; j < count; j++) {   // the last rows, one at a time
        v8f a = splat8(0.0f);
        for (int d = 0; d < n; d += 8) {
            a = fma8(load8(q + d), key8(f, b, j * stride + d), a);
        }
        v8f t = totals8(a, a, a, a, a, a, a, a);
        scores[j] = t[0];
    }
}

// out (n numbers, a multiple of 64) += sum_j w[j] * row j, `count` rows `stride` apart, of
// floats or bytes: 64 numbers of out at a time, held in 8 registers over every row.
AVX2_CODE static void weighted_rows_avx2(float *out, const float *w, const float *f,
                                         const int8_t *b, long stride, int count, int n) {
    for (int d = 0; d < n; d += 64) {
        v8f o0 = load8(out + d), o1 = load8(out + d + 8), o2 = load8(out + d + 16);
        v8f o3 = load8(out + d + 24), o4 = load8(out + d + 32), o5 = load8(out + d + 40);
        v8f o6 = load8(out + d + 48), o7 = load8(out + d + 56);
        for (int j = 0; j < count; j++) {
            v8f wj = splat8(w[j]);
            long at = j * stride + d;
            o0 = fma8(wj, key8(f, b, at), o0);
            o1 = fma8(wj, key8(f, b, at + 8), o1);
            o2 = fma8(wj, key8(f, b, at + 16), o2);
            o3 = fma8(wj, key8(f, b, at + 24), o3);
            o4 = fma8(wj, key8(f, b, at + 32), o4);
            o5 = fma8(wj, key8(f, b, at + 40), o5);
            o6 = fma8(wj, key8(f, b, at + 48), o6);
            o7 = fma8(wj, key8(f, b, at + 56), o7);
        }
        store8(out + d, o0);
        store8(out + d + 8, o1);
        store8(out + d + 16, o2);
        store8(out + d + 24, o3);
        store8(out + d + 32, o4);
        store8(out + d + 40, o5);
        store8(out + d + 48, o6);
        store8(out + d + 56, o7);
    }
}

// The step in blocks of KEY_BLOCK tokens: a block's keys (of one key/value head, or MLA's
// latents) come from memory once, and every query head that reads them takes them from the
// core's own caches; the same for the values.
AVX2_CODE static void decode_step_avx2(float *out, float *scores, const float *query,
                                       const BenchCache *cache, const Kind *kind, int L,
                                       int read) {
    int first_token = L - read;
    bool latent = kind->storage == LATENT_KV, bytes = kind->storage == INT8_KV;
    int KV = latent ? 1 : kind->kv_heads, R = HEADS / KV;
    int width = latent ? LATENT + ROPE_DIM : HEAD_DIM, out_width = latent ? LATENT : HEAD_DIM;
    long stride = latent ? width : (long)KV * HEAD_DIM;
    float scale = 1.0f / sqrtf((float)(latent ? HEAD_DIM + ROPE_DIM : HEAD_DIM));
    float w[KEY_BLOCK];
    memset(out, 0, (size_t)HEADS * out_width * sizeof(float));
    for (int g = 0; g < KV; g++) {
        for (int s0 = 0; s0 < read; s0 += KEY_BLOCK) {
            int count = read - s0 < KEY_BLOCK ? read - s0 : KEY_BLOCK;
            long at = (first_token + s0) * stride + (long)g * HEAD_DIM;
            const float *f = latent ? cache->latent + at : bytes ? NULL : cache->key + at;
            const int8_t *b = bytes ? cache->key_q + at : NULL;
            for (int r = 0; r < R; r++) {
                float *row = &scores[(long)(g * R + r) * read + s0];
                dots_avx2(row, &query[(long)(g * R + r) * width], f, b, stride, count, width);
                for (int j = 0; j < count; j++) {
                    row[j] *= scale * (bytes ? cache->key_scale[(long)(first_token + s0 + j) *
                                                                KV + g] : 1.0f);
                }
            }
        }
    }
    softmax_rows(scores, HEADS, read);
    for (int g = 0; g < KV; g++) {
        for (int s0 = 0; s0 < read; s0 += KEY_BLOCK) {
            int count = read - s0 < KEY_BLOCK ? read - s0 : KEY_BLOCK;
            long at = (first_token + s0) * stride + (long)g * HEAD_DIM;
            const float *f = latent ? cache->latent + at : bytes ? NULL : cache->value + at;
            const int8_t *b = bytes ? cache->value_q + at : NULL;
            for (int r = 0; r < R; r++) {
                int h = g * R + r;
                const float *weights = &scores[(long)h * read + s0];
                if (bytes) {   // each token's value scale goes into its weight
                    for (int j = 0; j < count; j++) {
                        w[j] = weights[j] * cache->value_scale[(long)(first_token + s0 + j) *
                                                               KV + g];
                    }
                    weights = w;
                }
                weighted_rows_avx2(&out[(long)h * out_width], weights, f, b, stride, count,
                                   out_width);
            }
        }
    }
}
#endif

static bool use_avx2(void) {
#ifdef HAVE_VECTOR_KERNELS
    return strcmp(kernels_wanted(), "scalar") != 0;
#else
    return false;
#endif
}

static void decode_step(float *out, float *scores, const float *query, const BenchCache *cache,
                        const Kind *kind, int L, int read, bool avx2) {
#ifdef HAVE_VECTOR_KERNELS
    if (avx2) {
        decode_step_avx2(out, scores, query, cache, kind, L, read);
        return;
    }
#endif
    (void)avx2;
    decode_step_plain(out, scores, query, cache, kind, L, read);
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

// What timing `rounds` rounds (and the round that warms up) of every kind takes.
static Cost timed_cost(int context, int rounds) {
    double bytes = cache_bytes(context), flops = 0, read = 0;
    for (int i = 0; i < KINDS; i++) {
        const Kind *k = &KINDS_TIMED[i];
        double steps = (rounds + 1.0) * steps_per_round(k, context);
        flops += steps * 2 * macs_per_token(k) * tokens_read(k, context);
        read += steps * bytes_per_token(k) * tokens_read(k, context);
    }
    // Filling the caches: an element each; a step: at least 1 GB/s and 1 GFLOP/s on one core
    // (the scalar kernels), the exps at the price of an element.
    return (Cost){.bytes = bytes + 4.0 * HEADS * (context + 2 * LATENT + ROPE_DIM) + 65536,
                  .elements = bytes / 2 + (rounds + 1.0) * 64 * HEADS * context,
                  .kernel_seconds = read / 1e9 + flops / 1e9};
}

Cost bench_cost(int context) {
    return timed_cost(context, ROUNDS);
}

Cost part7_cost(int context) {
    return timing_wanted() ? timed_cost(context, QUICK_ROUNDS) : (Cost){0};
}

// Each kind's decode step, `rounds` rounds of steps_per_round steps after one that warms the
// caches up, untimed; each round's time a step in times[i] (and the thread's share of the
// time in *shares). The caches are let go at the end.
static void time_kinds(Timing times[KINDS], Shares *shares, int context, int rounds,
                       bool avx2) {
    size_t mark = arena_mark();
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
    for (int round = 0; round <= rounds; round++) {   // round 0 warms the caches up, untimed
        for (int i = 0; i < KINDS; i++) {
            const Kind *k = &KINDS_TIMED[i];
            int steps = steps_per_round(k, context), read = tokens_read(k, context);
            Instant start = now_instant();
            for (int n = 0; n < steps; n++) {
                decode_step(out, scores, query, &caches[i], k, context, read, avx2);
            }
            double seconds = seconds_since(shares, start);
            if (round > 0) {
                add_time(&times[i], seconds * 1e3 / steps);
            }
        }
    }
    arena_release(mark);
}

void print_part7_times(int context) {
    if (!timing_wanted()) {
        printf("timed here: left out, as ATTN_NO_TIMING asks (the tests set it: "
               "runs print alike)\n");
        return;
    }
    bool avx2 = use_avx2();
    Timing times[KINDS] = {{0}};
    Shares shares = {0};
    time_kinds(times, &shares, context, QUICK_ROUNDS, avx2);
    printf("timed here, one thread, %s kernels, the best of %d rounds (it varies from run to "
           "run;\n  make lesson-19 ARGS=--bench times %d rounds and weighs the machine's load):\n",
           avx2 ? "avx2" : "scalar", QUICK_ROUNDS, ROUNDS);
    describe_cpu();
    printf("%-31s %11s %9s %8s %9s %8s\n", "cache kind", "bytes/token", "cache MiB", "best ms",
           "tokens/s", "GB/s");
    for (int i = 0; i < KINDS; i++) {
        const Kind *k = &KINDS_TIMED[i];
        double bytes = bytes_per_token(k) * tokens_read(k, context);
        printf("%-31s %11.0f %9.1f %8.3f %9.1f %8.2f\n", k->name, bytes_per_token(k),
               bytes / 1048576.0, times[i].best, 1e3 / times[i].best,
               bytes / (times[i].best * 1e-3) / 1e9);
    }
}

int run_bench(int context) {
    bool avx2 = use_avx2();
    Timing times[KINDS] = {{0}};
    Shares shares = {0};
    time_kinds(times, &shares, context, ROUNDS, avx2);
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
