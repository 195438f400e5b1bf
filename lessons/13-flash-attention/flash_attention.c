// Lesson 13: flash-attention - the same attention without the (seq x seq) scores:
// online softmax and FlashAttention-2's tiled forward, measured.
//
// WHAT THIS ADDS
//   Every lesson so far builds the whole score matrix, as the notes do:
//   (B, H, N, N) floats, 128 MiB at N = 2048 with 8 heads, written and read
//   several times for an output of only (B, H, N, D). FlashAttention (Dao et
//   al., 2022; the loop order here is FlashAttention-2's, Dao, 2023)
//   computes the same output, exactly, without ever storing the scores:
//   1. Online softmax. A row's softmax needs its maximum m and its sum l of
//      exp(x - m). Both can be kept running in ONE pass over the scores: when
//      a new score raises the maximum, multiply what was summed so far by
//      exp(m_old - m_new). So the keys may arrive in blocks.
//   2. Tiling. Take Bq queries at a time and stream the keys and values past
//      them Bk at a time. A (Bq x Bk) block of scores lives in the cache: it
//      is made, turned into exp(score - m), multiplied into an output
//      accumulator, and overwritten by the next block. Each query keeps m, l
//      and its accumulator o; at the end out = o / l.
//   Causal: tiles wholly above the diagonal are skipped, only tiles on it are
//   masked. GQA: query head h reads key/value head h / R in place (lesson 10).
//   Made fast on one CPU core: the two products run in a small register-tiled
//   kernel with a vectorised exp, the one part of the project that leaves
//   portable C, kept in one marked section beside plain scalar twins that
//   give the same bits.
//
// THE MATH (one query t of one head; s runs over the keys it sees)
//   x_s = q_t . k_s / sqrt(D)
//   two passes: m = max_s x_s,  l = sum_s exp(x_s - m),  out_t = sum_s exp(x_s - m) v_s / l
//   one pass:   m = -inf, l = 0, o = 0; for each block of keys:
//               m_new = max(m, max of the block's x_s);  alpha = exp(m - m_new)
//               l = alpha l + sum_s exp(x_s - m_new);  o = alpha o + sum_s exp(x_s - m_new) v_s
//               m = m_new;   and at the end out_t = o / l: the same number.
//
// THE PYTORCH IT MIRRORS (beyond the notes; docs/13-flash-attention.md has the
// complete script, with the same tiled loop written in PyTorch)
//   torch.manual_seed(seed)
//   query = torch.randn(batch, heads, seq, head_dim)
//   key = torch.randn(batch, kv_heads, seq, head_dim)
//   value = torch.randn(batch, kv_heads, seq, head_dim)
//   k = key.repeat_interleave(heads // kv_heads, dim=1)    # and v: query head h reads h // R
//   scores = query @ k.transpose(-2, -1) / math.sqrt(head_dim)
//   scores = scores.masked_fill(torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1),
//                               float("-inf"))             # with --causal only
//   out_naive = torch.softmax(scores, dim=-1) @ v
//
// RUN IT
//   make lesson-13       flags: --batch 1 --seq 256 --heads 8 --kv-heads 8 --head-dim 64
//                        --block-q 64 --block-k 64 --causal, --seed, --dump, --dot, --heatmap
//   make lesson-13 ARGS="--seed 8 --seq 10 --block-q 4 --block-k 3 --causal"   a small example
//   make lesson-13 ARGS=--bench     time it against the naive path, on one core
//
// WHAT TO LOOK FOR
//   - Part 1: the one-pass table's last m and l are the two-pass m and l, so
//     both print the same probabilities.
//   - Part 2: alpha is 0 for the first block (nothing summed yet) and 1 when
//     a block does not raise the maximum; the causal map skips the tiles above
//     the diagonal and masks only those on it.
//   - Part 3: out equals out_naive to about 1e-7, for any block sizes.
//   - Part 4: the naive path's extra memory is (B, H, N, N) several times
//     over; the tiled one's depends on the block sizes only, not on seq.
//   - --bench: the FMA peak this core measures, the tiled kernel's share of
//     it, and each path's time and memory from seq 512 to 8192.
//
// Size letters: B batch, H query heads (--heads), KV key/value heads
//   (--kv-heads), R = H / KV query heads per key/value head, N positions
//   (--seq, queries and keys alike), D head_dim, Bq and Bk the block sizes
//   (--block-q, --block-k, at most N).
// Index letters: b batch, h query head, g = h / R its key/value head, t a
//   query position, s a key position, d inside a head; qs and ks are the
//   first query and key of a block, j a query inside its block, p a key
//   inside its block.

#define _POSIX_C_SOURCE 200809L   // clock_gettime(CLOCK_MONOTONIC) for --bench

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "attention.h"

#define MAX_BLOCK 4096      // --block-q and --block-k go from 1 to this
#define TOLERANCE 1e-5f     // out against out_naive: float rounding only
#define MAP_MAX_BLOCKS 16   // the tile map is drawn up to 16 x 16 blocks
#define ROWS_SHOWN 8        // of a longer walk through key blocks: the first 8 and the last 8

// The register tile of the matrix kernel (the marked section below):
// MR rows by NR columns of the product stay in registers while it runs.
enum { MR = 6, NR = 16 };

// The inner loops of the tiled forward, everything it spends its time in.
// Each exists twice, with the same results bit for bit: a scalar twin in
// plain C and a vector version; both are in the marked section further down.
typedef struct {
    const char *name;
    // C = (accumulate ? C : 0) + A @ B on an mr x nr tile (mr <= MR, nr <= NR),
    // summing over p = 0 .. kc-1 in that order, one fused multiply-add a step:
    //     C[i][j] = fma(A[i][p], B[p][j], C[i][j])
    // A[i][p] = a[i*a_row + p*a_col], B[p][j] = b[p*ldb + j], C[i][j] = c[i*ldc + j].
    void (*tile)(int mr, int nr, int kc, const float *a, int a_row, int a_col, const float *b,
                 int ldb, float *c, int ldc, bool accumulate);
    // m[j] = max(m[j], s[p][j]) for p = 0 .. rows-1 in order; j < cols (a multiple of 8),
    // s[p][j] = s[p*lds + j].
    void (*column_max)(float *m, const float *s, int rows, int cols, int lds);
    // s[p][j] = exp(s[p][j] - m[j]), and sums[j] = their sum over p, in order.
    void (*exp_columns)(float *s, float *sums, const float *m, int rows, int cols, int lds);
} Kernels;

static const Kernels *kernels_best(void);   // the vector kernels if this CPU has them
static float flash_expf(float x);           // the scalar exp the kernels use
static float max_float(float a, float b);   // a > b ? a : b, as the vector max has it

// --- the module: attention, tiled ------------------------------------------------------

typedef struct {
    int num_heads;             // H
    int num_kv_heads;          // KV: query head h reads key/value head h / (H / KV)
    bool causal;               // query t sees keys 0 .. t only
    int block_q;               // Bq: queries per block
    int block_k;               // Bk: keys per block
    const Kernels *kernels;    // the vector kernels where the CPU has them, else the scalar twins
} FlashAttention;

// What a tile of Bq queries x Bk keys is, for the causal mask.
typedef enum { TILE_FULL, TILE_DIAGONAL, TILE_SKIPPED } TileKind;

// One key block as query N-1 of batch 0, head 0 saw it (it sees every key,
// causal or not): the numbers part 2 of the lesson prints.
typedef struct {
    int ks, nk;          // keys ks .. ks + nk - 1
    float block_max;     // the largest of its scores in this block
    float m;             // its running max after the block
    float alpha;         // exp(m_before - m): what its l and o were multiplied by
    float l;             // its running sum after the block
} RowStep;

// What the forward did besides its output, for the lesson to print and the
// tests to check.
typedef struct {
    long tiles[3];          // tiles of each TileKind, over all batches and heads
    double flops;           // multiply-adds * 2 actually done, masked scores included
    double kv_rows;         // key rows read by the tiles (value rows: as many)
    size_t scratch_bytes;   // extra memory: everything it allocated besides out
    int n_row_steps;        // key blocks query N-1 of batch 0, head 0 went through
    RowStep *row_steps;     // (n_row_steps) in order
} FlashAttentionSteps;

static FlashAttention FlashAttention_init(int num_heads, int num_kv_heads, bool causal,
                                          int block_q, int block_k) {
    return (FlashAttention){num_heads, num_kv_heads, causal, block_q, block_k, kernels_best()};
}

// A tile of queries qs .. qs+nq-1 and keys ks .. ks+nk-1. Causal: skipped when
// its first key comes after its last query (every score masked), on the
// diagonal when some key comes after some query (masked in part), full when
// its last key comes before or at its first query. Without the mask, full.
static TileKind tile_kind(bool causal, int qs, int nq, int ks, int nk) {
    if (!causal || ks + nk - 1 <= qs) {
        return TILE_FULL;
    }
    return ks > qs + nq - 1 ? TILE_SKIPPED : TILE_DIAGONAL;
}

// The sizes of one head's work and the scratch it reuses for every block.
// The scores are kept TRANSPOSED, one column per query: s_t[p][j] is key
// ks+p against query qs+j. Then everything a query keeps (its m, l) is one
// lane of a vector, and the softmax runs down the columns, 16 queries at once.
typedef struct {
    int N, D, Bq, Bk;    // Bq, Bk: the block sizes, at most N
    int ldS;             // Bq rounded up to a multiple of NR: a row of q_t and s_t
    bool causal;
    const Kernels *kernels;
    float *q_t;          // (D, ldS)  the query block, transposed and times 1/sqrt(D)
    float *s_t;          // (Bk, ldS) its scores against one key block, then exp(score - m)
    float *m;            // (ldS)     each query's running max
    float *l;            // (ldS)     each query's running sum of exp(score - m)
    float *m_new;        // (ldS)     the max after this key block
    float *block_sum;    // (ldS)     this key block's sum of exp(score - m_new)
} Tiling;

static int min_int(int a, int b) {
    return a < b ? a : b;
}

// All the scratch in ONE allocation, whose size depends on Bq, Bk and D only:
// that is the whole extra memory of the tiled path, and it does not grow
// with N. (Computing the scores transposed is what keeps it so: the query
// block is the one operand that must be rearranged for the kernel, and it is
// (D, Bq). The keys and values are read where they lie.)
static Tiling Tiling_start(const FlashAttention *self, int N, int D, size_t *bytes) {
    Tiling w;
    w.N = N;
    w.D = D;
    w.Bq = min_int(self->block_q, N);
    w.Bk = min_int(self->block_k, N);
    w.ldS = (w.Bq + NR - 1) / NR * NR;
    w.causal = self->causal;
    w.kernels = self->kernels;
    size_t floats = ((size_t)D + (size_t)w.Bk + 4) * (size_t)w.ldS;
    float *scratch = arena_alloc(floats, sizeof(float));
    *bytes = floats * sizeof(float);
    w.q_t = scratch;
    w.s_t = w.q_t + (size_t)D * w.ldS;
    w.m = w.s_t + (size_t)w.Bk * w.ldS;
    w.l = w.m + w.ldS;
    w.m_new = w.l + w.ldS;
    w.block_sum = w.m_new + w.ldS;
    return w;
}

// Queries qs .. qs+nq-1 of one head against every key they see.
// q, k, v, out point at row 0 of the head: (N, D) each, row-major; the rows
// qs .. qs+nq-1 of out double as the accumulator o. `watch` (may be NULL)
// records query N-1's steps when it is in this block.
static void attend_query_block(FlashAttentionSteps *steps, const Tiling *w, const float *q,
                               const float *k, const float *v, float *out, int qs, int nq,
                               bool watch) {
    int N = w->N, D = w->D, ldS = w->ldS;
    float scale = 1.0f / sqrtf((float)D);
    float *o = out + (long)qs * D;                            // (nq, D) the accumulator

    // The query block, transposed and scaled: q_t[d][j] = q[qs+j][d] / sqrt(D).
    // Columns nq .. ldS-1 are zero: queries that do not exist score 0 and
    // are never read back. Scaling the queries instead of the scores is one
    // multiply per query number rather than one per score.
    for (int d = 0; d < D; d++) {
        for (int j = 0; j < ldS; j++) {
            w->q_t[(long)d * ldS + j] = j < nq ? q[(long)(qs + j) * D + d] * scale : 0.0f;
        }
    }
    for (int j = 0; j < ldS; j++) {
        w->m[j] = -INFINITY;   // no score seen yet
        w->l[j] = 0.0f;
    }
    memset(o, 0, (size_t)nq * D * sizeof(float));

    for (int ks = 0; ks < N; ks += w->Bk) {                  // stream the key blocks past
        int nk = min_int(w->Bk, N - ks);
        TileKind kind = tile_kind(w->causal, qs, nq, ks, nk);
        if (steps != NULL) {
            steps->tiles[kind] += 1;
        }
        if (kind == TILE_SKIPPED) {
            continue;   // every key after every query: all its weights are exp(-inf) = 0
        }
        // Keys after the block's last query are masked for all its queries:
        // on a diagonal tile they are not even computed.
        int visible = kind == TILE_DIAGONAL ? min_int(nk, qs + nq - ks) : nk;
        const float *k_block = k + (long)ks * D;             // (visible, D) keys, in place
        const float *v_block = v + (long)ks * D;             // (visible, D) values, in place

        // 1. Scores, transposed: s_t (visible, ldS) = k_block (visible, D) @ q_t (D, ldS),
        //    tile by tile of MR keys x NR queries.
        for (int p0 = 0; p0 < visible; p0 += MR) {
            for (int j0 = 0; j0 < ldS; j0 += NR) {
                w->kernels->tile(min_int(MR, visible - p0), NR, D, k_block + (long)p0 * D,
                            D, 1, w->q_t + j0, ldS, w->s_t + (long)p0 * ldS + j0, ldS, false);
            }
        }
        // 2. The causal mask, on diagonal tiles only: key ks+p after query qs+j.
        if (kind == TILE_DIAGONAL) {
            for (int p = 0; p < visible; p++) {
                for (int j = 0; j < nq; j++) {
                    if (ks + p > qs + j) {
                        w->s_t[(long)p * ldS + j] = -INFINITY;
                    }
                }
            }
        }
        // The block's largest score of query N-1, before exp: for part 2 only.
        int j_watched = N - 1 - qs;
        float watched_max = -INFINITY;
        for (int p = 0; watch && p < visible; p++) {
            watched_max = max_float(watched_max, w->s_t[(long)p * ldS + j_watched]);
        }
        // 3. Online softmax, one column per query: the new running max, then
        //    s_t = exp(s_t - m_new) and each column's sum, then rescale what
        //    was summed before by alpha = exp(m - m_new).
        memcpy(w->m_new, w->m, (size_t)ldS * sizeof(float));
        w->kernels->column_max(w->m_new, w->s_t, visible, ldS, ldS);
        w->kernels->exp_columns(w->s_t, w->block_sum, w->m_new, visible, ldS, ldS);
        for (int j = 0; j < nq; j++) {
            // Key 0 is in the first block and every query sees it, so m_new
            // is finite from the first block on; alpha is exp(-inf) = 0 there.
            float alpha = flash_expf(w->m[j] - w->m_new[j]);
            w->l[j] = w->l[j] * alpha + w->block_sum[j];
            w->m[j] = w->m_new[j];
            if (alpha != 1.0f) {   // the max grew: rescale what this query summed so far
                float *o_j = o + (long)j * D;                 // (D) query qs+j's accumulator
                for (int d = 0; d < D; d++) {
                    o_j[d] *= alpha;
                }
            }
            if (watch && j == j_watched) {
                RowStep *step = &steps->row_steps[steps->n_row_steps++];
                *step = (RowStep){ks, visible, watched_max, w->m[j], alpha, w->l[j]};
            }
        }
        // 4. o (nq, D) += P (nq, visible) @ v_block (visible, D), where P[j][p] = s_t[p][j]:
        //    tile by tile of MR queries x NR numbers of a head.
        for (int i0 = 0; i0 < nq; i0 += MR) {
            for (int d0 = 0; d0 < D; d0 += NR) {
                w->kernels->tile(min_int(MR, nq - i0), min_int(NR, D - d0), visible,
                            w->s_t + i0, 1, ldS, v_block + d0, D, o + (long)i0 * D + d0, D, true);
            }
        }
        if (steps != NULL) {
            steps->flops += 4.0 * nq * visible * D;   // two products of 2 * nq * visible * D
            steps->kv_rows += visible;
        }
    }
    // 5. Divide by the softmax's sum, once per query.
    for (int j = 0; j < nq; j++) {
        float *o_j = o + (long)j * D;
        for (int d = 0; d < D; d++) {
            o_j[d] /= w->l[j];
        }
    }
}

// query (B, H, N, D), key and value (B, KV, N, D); returns out (B, H, N, D).
// `steps` may be NULL.
static Tensor *FlashAttention_forward(FlashAttentionSteps *steps, const FlashAttention *self,
                                      const Tensor *query, const Tensor *key,
                                      const Tensor *value) {
    int B = size(query, 0), H = size(query, 1), N = size(query, 2), D = size(query, 3);
    int KV = size(key, 1);
    if (H != self->num_heads || KV != self->num_kv_heads || H % KV != 0 ||
        !same_shape(key, value) || size(key, 0) != B || size(key, 2) != N || size(key, 3) != D) {
        fail("FlashAttention: query (%s), key (%s) and value (%s) do not fit %d heads and %d "
             "key/value heads", size_x_str(query), size_x_str(key), size_x_str(value),
             self->num_heads, self->num_kv_heads);
    }
    int R = H / KV;   // query heads per key/value head
    // The kernels read each head's rows in place: inputs must be row-major. A
    // view that is not gets copied first, and the copy counts as extra memory.
    const Tensor *q = contiguous(query), *k = contiguous(key), *v = contiguous(value);
    Tensor *out = zeros(shape4(B, H, N, D));                                  // (B, H, N, D)
    size_t scratch_bytes;
    Tiling w = Tiling_start(self, N, D, &scratch_bytes);
    const Tensor *copies[3][2] = {{q, query}, {k, key}, {v, value}};
    for (int i = 0; i < 3; i++) {
        if (copies[i][0] != copies[i][1]) {
            scratch_bytes += (size_t)numel(copies[i][0]) * sizeof(float);
        }
    }
    if (steps != NULL) {
        memset(steps, 0, sizeof *steps);
        steps->scratch_bytes = scratch_bytes;
        steps->row_steps = arena_alloc((size_t)((N + w.Bk - 1) / w.Bk), sizeof(RowStep));
    }
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            int g = h / R;   // the key/value head query head h reads, where it lies: no copy
            const float *q_h = at4(q, b, h, 0, 0);                            // (N, D)
            const float *k_g = at4(k, b, g, 0, 0);                            // (N, D)
            const float *v_g = at4(v, b, g, 0, 0);                            // (N, D)
            float *out_h = at4(out, b, h, 0, 0);                              // (N, D)
            for (int qs = 0; qs < N; qs += w.Bq) {
                int nq = min_int(w.Bq, N - qs);
                bool watch = steps != NULL && b == 0 && h == 0 && qs + nq == N;
                attend_query_block(steps, &w, q_h, k_g, v_g, out_h, qs, nq, watch);
            }
        }
    }
    char label[96];
    snprintf(label, sizeof label, "tiled attention%s, blocks %d x %d",
             self->causal ? " (causal)" : "", w.Bq, w.Bk);
    const Tensor *inputs[3] = {query, key, value};
    trace(label, out, 3, inputs, 0, NULL);
    return out;
}

// --- the naive path: the helper's matmul, softmax, matmul --------------------------------

// What the naive path made besides out.
typedef struct {
    const Tensor *attention_weight;   // (B, KV, R, N, N) the softmax, R query heads per key head
    size_t extra_bytes;               // every tensor it allocated except out
    int score_passes;                 // how often a (B, H, N, N) tensor is written or read
} NaiveSteps;

static size_t tensor_bytes(const Tensor *t) {
    return (size_t)numel(t) * sizeof(float);
}

// out_naive = softmax(query @ key^T / sqrt(D) [causal: -inf above the diagonal]) @ value,
// query head h against key/value head h / R. query (B, H, N, D), key and value
// (B, KV, N, D); returns (B, H, N, D). `steps` may be NULL.
static const Tensor *naive_attention(NaiveSteps *steps, const Tensor *query, const Tensor *key,
                                     const Tensor *value, bool causal) {
    int B = size(query, 0), H = size(query, 1), N = size(query, 2), D = size(query, 3);
    int KV = size(key, 1), R = H / KV;
    // GQA without a copy: the R query heads of key/value head g side by side,
    // and ONE key head that matmul broadcasts to all R of them.
    const Tensor *q = view(contiguous(query), shape5(B, KV, R, N, D));        // (B, KV, R, N, D)
    const Tensor *k = unsqueeze(key, 2);                                      // (B, KV, 1, N, D)
    const Tensor *v = unsqueeze(value, 2);                                    // (B, KV, 1, N, D)
    Tensor *scores = matmul(q, transpose(k, -2, -1));                         // (B, KV, R, N, N)
    labeled("scores", scores);
    size_t bytes = tensor_bytes(scores);
    int passes = 1;   // matmul writes the scores
    // PyTorch divides the scores by math.sqrt(head_dim) rounded to float.
    Tensor *scaled = div_scalar(scores, (float)sqrt((double)D));              // (B, KV, R, N, N)
    bytes += tensor_bytes(scaled);
    passes += 2;      // read, written
    if (causal) {
        Tensor *all = ones(shape2(N, N));                                     // (N, N)
        Tensor *mask = triu(all, 1);                                          // (N, N) 1 above the diagonal
        Tensor *is_future = eq_scalar(mask, 1.0f);                            // (N, N)
        scaled = masked_fill(scaled, is_future, -INFINITY);                   // (B, KV, R, N, N)
        bytes += tensor_bytes(all) + tensor_bytes(mask) + tensor_bytes(is_future);
        bytes += tensor_bytes(scaled);
        passes += 2;
    }
    const Tensor *weights = labeled("attention_weight", softmax(scaled, -1)); // (B, KV, R, N, N)
    bytes += tensor_bytes(weights);
    passes += 2;
    const Tensor *out = matmul(weights, v);                                   // (B, KV, R, N, D)
    passes += 1;
    if (steps != NULL) {
        *steps = (NaiveSteps){weights, bytes, passes};
    }
    return view(out, shape4(B, H, N, D));                                     // (B, H, N, D)
}

// ===========================================================================================
// THE KERNELS: the one place in this project that leaves portable C.
//
// Everything the tiled forward spends its time in goes through three
// functions: a small matrix product (tile), the running max of each column
// (column_max), and exp with each column's sum (exp_columns). Each exists
// twice with the same contract and the same results, bit for bit:
//   - the scalar twin: plain C11 with fmaf(), the specification;
//   - the vector version: 8 floats at a time, with GCC/Clang vector
//     extensions (`a + b` on 8 floats) and one x86 intrinsic per fused
//     multiply-add (_mm256_fmadd_ps), compiled for AVX2 + FMA by a target
//     attribute on each function, so the Makefile's flags stay those of the
//     rest of the project. kernels_best() uses it only if the CPU reports
//     AVX2 and FMA at run time (and the compiler is GCC or Clang on x86-64).
// Both do the same float operations in the same order per number: each
// vector lane is one scalar loop. The project builds with -ffp-contract=off
// (no fused multiply-add unless written), so both spell every fma out.
// Why this is fast, and why -march=native is not used: docs/13-flash-attention.md.
// ===========================================================================================

// --- exp ---
// exp(x) = 2^n * e^r with n = round(x / ln 2) and r = x - n ln 2, so that
// |r| <= ln(2)/2 = 0.347, where seven terms of e^r's Taylor series are
// enough (the first left out, r^8/8!, is below 6e-9: under half a unit in
// the last place). Within 1 ulp of libm's expf. Softmax calls it with
// x = score - max <= 0; larger x are clamped to EXP_HI, and results below
// FLT_MIN (x < EXP_LO) are flushed to 0, so exp(-inf) = 0 and masked scores
// drop out (NaN gives 0 too).
#define EXP_LO (-87.33654f)         // ln(FLT_MIN) = ln(2^-126)
#define EXP_HI 88.37f               // just below 127.5 ln 2: 2^n stays finite
#define LOG2E 0x1.715476p+0f        // 1 / ln 2, rounded to float
#define LN2_HI 0x1.62e430p-1f       // ln 2 rounded to float ...
#define LN2_LO (-0x1.05c610p-29f)   // ... and what that rounding lost
#define ROUND_MAGIC 0x1.8p23f       // 1.5 * 2^23: see below
#define C2 (1.0f / 2)               // the Taylor coefficients 1/k!
#define C3 (1.0f / 6)
#define C4 (1.0f / 24)
#define C5 (1.0f / 120)
#define C6 (1.0f / 720)
#define C7 (1.0f / 5040)

static uint32_t float_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float bits_float(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

// The scalar twin of exp8 below, line for line.
static float flash_expf(float x) {
    x = EXP_HI < x ? EXP_HI : x;   // written this way round, a NaN stays NaN
    // x / ln 2 + 1.5 * 2^23 lies in [2^23, 2^24), where floats are exactly 1
    // apart: the fma rounds x / ln 2 to the nearest integer n, and leaves n
    // in the low bits of t.
    float t = fmaf(x, LOG2E, ROUND_MAGIC);
    float n = t - ROUND_MAGIC;
    float r = fmaf(n, -LN2_HI, x);   // exact: n * LN2_HI has few enough bits
    r = fmaf(n, -LN2_LO, r);
    float poly = C7;                 // e^r = 1 + r + r^2/2 + ... + r^7/7!, Horner's way
    poly = fmaf(poly, r, C6);
    poly = fmaf(poly, r, C5);
    poly = fmaf(poly, r, C4);
    poly = fmaf(poly, r, C3);
    poly = fmaf(poly, r, C2);
    poly = fmaf(poly, r, 1.0f);
    poly = fmaf(poly, r, 1.0f);
    // 2^n: the float whose exponent field is n + 127 and mantissa 0. The
    // unsigned subtraction wraps for negative n and the shift puts it right.
    uint32_t n_int = float_bits(t) - float_bits(ROUND_MAGIC);
    float two_n = bits_float((n_int + 127u) << 23);
    float y = poly * two_n;
    return x >= EXP_LO ? y : 0.0f;
}

// max as the x86 max instruction has it: the second argument unless the
// first is larger (so a NaN in either gives the second).
static float max_float(float a, float b) {
    return a > b ? a : b;
}

// --- the scalar twins ---

static void tile_scalar(int mr, int nr, int kc, const float *a, int a_row, int a_col,
                        const float *b, int ldb, float *c, int ldc, bool accumulate) {
    for (int i = 0; i < mr; i++) {
        for (int j = 0; j < nr; j++) {
            float acc = accumulate ? c[i * ldc + j] : 0.0f;
            for (int p = 0; p < kc; p++) {
                acc = fmaf(a[i * a_row + p * a_col], b[p * ldb + j], acc);
            }
            c[i * ldc + j] = acc;
        }
    }
}

static void column_max_scalar(float *m, const float *s, int rows, int cols, int lds) {
    for (int j = 0; j < cols; j++) {
        for (int p = 0; p < rows; p++) {
            m[j] = max_float(m[j], s[p * lds + j]);
        }
    }
}

static void exp_columns_scalar(float *s, float *sums, const float *m, int rows, int cols,
                               int lds) {
    for (int j = 0; j < cols; j++) {
        float sum = 0.0f;
        for (int p = 0; p < rows; p++) {
            float e = flash_expf(s[p * lds + j] - m[j]);
            s[p * lds + j] = e;
            sum += e;
        }
        sums[j] = sum;
    }
}

// One core's peak: `chains` independent running sums, each updated with a
// fused multiply-add per step. The scalar twin runs 12 chains of fmaf.
static float fma_chains_scalar(long steps) {
    float acc[12];
    for (int c = 0; c < 12; c++) {
        acc[c] = (float)c;
    }
    for (long i = 0; i < steps; i++) {
        for (int c = 0; c < 12; c++) {
            acc[c] = fmaf(acc[c], 0.999999f, 1e-3f);
        }
    }
    float total = 0.0f;
    for (int c = 0; c < 12; c++) {
        total += acc[c];
    }
    return total;
}

static const Kernels SCALAR_KERNELS = {"scalar twin", tile_scalar, column_max_scalar,
                                       exp_columns_scalar};

// --- the vector versions: AVX2 + FMA, 8 floats per register ---

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_VECTOR_KERNELS 1
#include <immintrin.h>

#define VECTOR_CODE __attribute__((target("avx2,fma")))

typedef float v8f __attribute__((vector_size(32)));      // 8 floats: one AVX register
typedef uint32_t v8u __attribute__((vector_size(32)));   // the same 32 bytes as 8 uint32
typedef int32_t v8i __attribute__((vector_size(32)));    // ... and as 8 int32

VECTOR_CODE static inline v8f load8(const float *p) {
    v8f v;
    memcpy(&v, p, sizeof v);   // one unaligned load
    return v;
}

VECTOR_CODE static inline void store8(float *p, v8f v) {
    memcpy(p, &v, sizeof v);
}

VECTOR_CODE static inline v8f splat8(float x) {
    return (v8f){x, x, x, x, x, x, x, x};
}

// fmaf on each of 8 lanes: a * b + c rounded once.
VECTOR_CODE static inline v8f fma8(v8f a, v8f b, v8f c) {
    return _mm256_fmadd_ps(a, b, c);
}

// max_float on each lane (the instruction max_float imitates); min likewise:
// a < b ? a : b.
VECTOR_CODE static inline v8f max8(v8f a, v8f b) {
    return _mm256_max_ps(a, b);
}

VECTOR_CODE static inline v8f min8(v8f a, v8f b) {
    return _mm256_min_ps(a, b);
}

// flash_expf on 8 lanes; every line is the line of flash_expf in its place.
VECTOR_CODE static inline v8f exp8(v8f x) {
    x = min8(splat8(EXP_HI), x);
    v8f t = fma8(x, splat8(LOG2E), splat8(ROUND_MAGIC));
    v8f n = t - ROUND_MAGIC;
    v8f r = fma8(n, splat8(-LN2_HI), x);
    r = fma8(n, splat8(-LN2_LO), r);
    v8f poly = splat8(C7);
    poly = fma8(poly, r, splat8(C6));
    poly = fma8(poly, r, splat8(C5));
    poly = fma8(poly, r, splat8(C4));
    poly = fma8(poly, r, splat8(C3));
    poly = fma8(poly, r, splat8(C2));
    poly = fma8(poly, r, splat8(1.0f));
    poly = fma8(poly, r, splat8(1.0f));
    v8u n_int = (v8u)t - float_bits(ROUND_MAGIC);   // (v8u)t: the same bits, as integers
    v8f two_n = (v8f)((n_int + 127u) << 23);
    v8f y = poly * two_n;
    v8i keep = x >= EXP_LO;   // all ones where true, 0 where false (and for NaN)
    return (v8f)((v8i)y & keep);
}

// The micro-kernel. The MR x NR = 6 x 16 tile of C lives in 12 registers
// (each row as two vectors of 8) while p runs: each step loads one row of B
// (two vectors), broadcasts one number of A per row, and does 12 FMAs.
// Twelve independent sums keep the FMA units busy although each FMA waits
// about 4 cycles for its previous result (--bench measures both). A tile of
// fewer than MR rows is computed as a full one whose missing rows repeat
// row mr-1 (memory that exists; those results are not stored). A tile of
// fewer than NR columns (a head_dim not a multiple of 16) goes to the twin.
VECTOR_CODE static void tile_vector(int mr, int nr, int kc, const float *a, int a_row,
                                    int a_col, const float *b, int ldb, float *c, int ldc,
                                    bool accumulate) {
    if (nr != NR) {
        tile_scalar(mr, nr, kc, a, a_row, a_col, b, ldb, c, ldc, accumulate);
        return;
    }
    const float *a_rows[MR];
    v8f c0[MR], c1[MR];   // row i, columns 0..7 and 8..15
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
        int row = i < mr ? i : mr - 1;
        a_rows[i] = a + row * a_row;
        c0[i] = accumulate ? load8(c + row * ldc) : splat8(0.0f);
        c1[i] = accumulate ? load8(c + row * ldc + 8) : splat8(0.0f);
    }
    for (int p = 0; p < kc; p++) {
        v8f b0 = load8(b + p * ldb);
        v8f b1 = load8(b + p * ldb + 8);
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            v8f a_ip = splat8(a_rows[i][p * a_col]);
            c0[i] = fma8(a_ip, b0, c0[i]);
            c1[i] = fma8(a_ip, b1, c1[i]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
        if (i < mr) {
            store8(c + i * ldc, c0[i]);
            store8(c + i * ldc + 8, c1[i]);
        }
    }
}

VECTOR_CODE static void column_max_vector(float *m, const float *s, int rows, int cols,
                                          int lds) {
    for (int j = 0; j < cols; j += 8) {   // 8 columns, one per lane
        v8f m8 = load8(m + j);
        for (int p = 0; p < rows; p++) {
            m8 = max8(m8, load8(s + p * lds + j));
        }
        store8(m + j, m8);
    }
}

VECTOR_CODE static void exp_columns_vector(float *s, float *sums, const float *m, int rows,
                                           int cols, int lds) {
    for (int j = 0; j < cols; j += 8) {
        v8f m8 = load8(m + j), sum = splat8(0.0f);
        for (int p = 0; p < rows; p++) {
            v8f e = exp8(load8(s + p * lds + j) - m8);
            store8(s + p * lds + j, e);
            sum += e;
        }
        store8(sums + j, sum);
    }
}

// The peak loops: 12 chains as the micro-kernel keeps, and 1 chain, where
// every FMA waits for the one before. Each step of a chain is 16 FLOPs
// (8 lanes, a multiply and an add).
VECTOR_CODE __attribute__((noinline)) static float fma_chains_vector(long steps) {
    v8f acc[12], a = splat8(0.999999f), b = splat8(1e-3f);
#pragma GCC unroll 12
    for (int c = 0; c < 12; c++) {
        acc[c] = splat8((float)c);
    }
    for (long i = 0; i < steps; i++) {
#pragma GCC unroll 12
        for (int c = 0; c < 12; c++) {
            acc[c] = fma8(acc[c], a, b);
        }
    }
    v8f total = acc[0];
    for (int c = 1; c < 12; c++) {
        total += acc[c];
    }
    return total[0];
}

VECTOR_CODE __attribute__((noinline)) static float fma_chain_one_vector(long steps) {
    v8f acc = splat8(0.0f), a = splat8(0.999999f), b = splat8(1e-3f);
    for (long i = 0; i < steps; i++) {
        acc = fma8(acc, a, b);
    }
    return acc[0];
}

static const Kernels VECTOR_KERNELS = {"avx2+fma", tile_vector, column_max_vector,
                                       exp_columns_vector};
// The vector matrix kernel with the scalar exp: only to measure what the
// vectorised exp is worth (--bench).
static const Kernels VECTOR_TILE_SCALAR_EXP = {"avx2+fma tile, scalar exp", tile_vector,
                                               column_max_vector, exp_columns_scalar};

static bool cpu_has_avx2_fma(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif   // x86-64 with GCC or Clang

// The vector kernels, or NULL where this CPU or compiler has none.
static const Kernels *kernels_vector(void) {
#ifdef HAVE_VECTOR_KERNELS
    if (cpu_has_avx2_fma()) {
        return &VECTOR_KERNELS;
    }
#endif
    return NULL;
}

static const Kernels *kernels_best(void) {
    const Kernels *vector = kernels_vector();
    return vector != NULL ? vector : &SCALAR_KERNELS;
}

// ===========================================================================================
// (end of the kernels: portable C again from here on)
// ===========================================================================================

// --- the demonstrations ------------------------------------------------------------------

typedef struct {
    int batch, seq, heads, kv_heads, head_dim, block_q, block_k;
    bool causal;
} Sizes;

// Part 1. The scores of query N-1 of head 0 against its first n keys (n up
// to 8), softmaxed in two passes and in one.
static void show_online_softmax(const Tensor *query, const Tensor *key) {
    int N = size(query, 2), D = size(query, 3), n = N < 8 ? N : 8, t = N - 1;
    const Tensor *q_t = narrow(narrow(narrow(query, 0, 0, 1), 1, 0, 1), 2, t, 1);   // (1, 1, 1, D)
    const Tensor *k_s = narrow(narrow(narrow(key, 0, 0, 1), 1, 0, 1), 2, 0, n);     // (1, 1, n, D)
    const Tensor *scores = matmul(q_t, transpose(k_s, -2, -1));                     // (1, 1, 1, n)
    const Tensor *x = reshape(div_scalar(scores, (float)sqrt((double)D)), shape1(n));  // (n)
    printf("\n-- 1. online softmax on one row: the scores of query %d (head 0) against keys "
           "0..%d --\n", t, n - 1);
    printf("x = (query[0, 0, %d] @ key[0, 0, :%d].T) / math.sqrt(%d)\n%s\n", t, n, D,
           tensor_str(x, NULL));

    // Two passes, as torch.softmax does: the max first, then the sum of exps.
    float m = -INFINITY;
    for (int s = 0; s < n; s++) {
        m = max_float(m, *at1(x, s));
    }
    float l = 0.0f;
    for (int s = 0; s < n; s++) {
        l += flash_expf(*at1(x, s) - m);
    }
    const Tensor *p_two = softmax(x, -1);                                     // (n)
    printf("two passes, as torch.softmax does:\n");
    printf("  pass 1: m = x.max()                = %.4f\n", m);
    printf("  pass 2: l = torch.exp(x - m).sum() = %.4f,  p = torch.exp(x - m) / l\n", l);
    printf("%s\n", tensor_str(p_two, NULL));

    // One pass: a running max and a running sum, rescaled when the max grows.
    printf("one pass: m = -inf, l = 0, and for each score x[s]:\n"
           "  m_new = max(m, x[s]);  l = l * exp(m - m_new) + exp(x[s] - m_new);  m = m_new\n");
    printf("   s      x[s]     m_new  exp(m - m_new)         l\n");
    float m_run = -INFINITY, l_run = 0.0f;
    for (int s = 0; s < n; s++) {
        float m_new = max_float(m_run, *at1(x, s));
        float alpha = flash_expf(m_run - m_new);   // exp(-inf) = 0 at the first score
        l_run = l_run * alpha + flash_expf(*at1(x, s) - m_new);
        m_run = m_new;
        printf("  %2d %9.4f %9.4f %15.4f %9.4f\n", s, *at1(x, s), m_new, alpha, l_run);
    }
    Tensor *p_one = zeros(shape1(n));                                         // (n)
    for (int s = 0; s < n; s++) {
        *at1(p_one, s) = flash_expf(*at1(x, s) - m_run) / l_run;
    }
    printf("  then p = torch.exp(x - m) / l, with the last m = %.4f and l = %.4f\n%s\n", m_run,
           l_run, tensor_str(p_one, NULL));
    printf("max |p (one pass) - p (two passes)| = %.3g\n", max_abs_diff(p_one, p_two));
    printf("why they agree: after score s, m = max(x[0..s]) and l = sum over j <= s of "
           "exp(x[j] - m).\n"
           "  True after s = 0 (l = exp(0) = 1). If true before score s, then\n"
           "  l * exp(m - m_new) = sum over j < s of exp(x[j] - m_new), and adding "
           "exp(x[s] - m_new)\n"
           "  keeps it true. After the last score m and l are the two-pass m and l.\n");
}

static const char TILE_MARK[3] = {'#', '\\', '.'};   // TILE_FULL, TILE_DIAGONAL, TILE_SKIPPED

// Part 2. The tiles of one head, and query N-1 going through its key blocks.
static void show_tiled_loop(const FlashAttentionSteps *steps, const Sizes *n, const Tensor *out) {
    int N = n->seq, Bq = min_int(n->block_q, N), Bk = min_int(n->block_k, N);
    int q_blocks = (N + Bq - 1) / Bq, k_blocks = (N + Bk - 1) / Bk;
    printf("\n-- 2. the tiled loop: blocks of %d queries, each streaming %d blocks of %d keys "
           "--\n", Bq, k_blocks, Bk);
    if (q_blocks <= MAP_MAX_BLOCKS && k_blocks <= MAP_MAX_BLOCKS) {
        printf("the tiles of one head, a row per query block and a column per key block:\n"
               "  # computed   \\ on the diagonal: computed, then masked   . skipped\n");
        for (int qs = 0; qs < N; qs += Bq) {
            int nq = min_int(Bq, N - qs);
            printf("  queries %5d..%-5d ", qs, qs + nq - 1);
            for (int ks = 0; ks < N; ks += Bk) {
                printf(" %c", TILE_MARK[tile_kind(n->causal, qs, nq, ks, min_int(Bk, N - ks))]);
            }
            printf("\n");
        }
    } else {
        printf("(%d x %d tiles a head: the map is drawn up to %d x %d)\n", q_blocks, k_blocks,
               MAP_MAX_BLOCKS, MAP_MAX_BLOCKS);
    }
    long heads = (long)n->batch * n->heads;
    printf("per head: %ld tiles computed (%ld of them masked), %ld skipped\n",
           (steps->tiles[TILE_FULL] + steps->tiles[TILE_DIAGONAL]) / heads,
           steps->tiles[TILE_DIAGONAL] / heads, steps->tiles[TILE_SKIPPED] / heads);

    printf("query %d of head 0, block by block: m its running max, l its running sum of "
           "exp(x - m),\n"
           "o its running sum of exp(x - m) * value; alpha = exp(m_before - m) rescales l and "
           "o:\n", N - 1);
    printf("         keys  block max         m     alpha          l\n");
    int count = steps->n_row_steps;
    for (int i = 0; i < count; i++) {
        if (count > 2 * ROWS_SHOWN && i == ROWS_SHOWN) {   // the middle left out
            printf("  ... %d blocks more ...\n", count - 2 * ROWS_SHOWN);
            i = count - ROWS_SHOWN;
        }
        const RowStep *r = &steps->row_steps[i];
        char keys[32];
        snprintf(keys, sizeof keys, "%d..%d", r->ks, r->ks + r->nk - 1);
        printf("  %11s %10.4f %9.4f %9.4f %10.4f\n", keys, r->block_max, r->m, r->alpha, r->l);
    }
    int width = n->head_dim < 4 ? n->head_dim : 4;
    const Tensor *row = narrow(narrow(narrow(narrow(out, 0, 0, 1), 1, 0, 1), 2, N - 1, 1), 3, 0,
                               width);                                        // (1, 1, 1, 4)
    printf("out[0, 0, %d, :%d] = o / l\n%s\n", N - 1, width,
           tensor_str(reshape(row, shape1(width)), NULL));
}

// The top-left corner of a (B, H, N, D) tensor: t[0, 0, :4, :4].
static const char *corner_str(const Tensor *t) {
    int rows = size(t, 2) < 4 ? size(t, 2) : 4, cols = size(t, 3) < 4 ? size(t, 3) : 4;
    const Tensor *c = narrow(narrow(narrow(narrow(t, 0, 0, 1), 1, 0, 1), 2, 0, rows), 3, 0,
                             cols);                                           // (1, 1, 4, 4)
    return tensor_str(reshape(c, shape2(rows, cols)), NULL);                  // (4, 4)
}

// Part 3. The tiled kernel against the helper's matmul, softmax, matmul.
static void show_against_naive(const Tensor *out, const Tensor *out_naive, const Sizes *n) {
    int R = n->heads / n->kv_heads;
    printf("\n-- 3. the tiled kernel against the naive path --\n");
    printf("out_naive = torch.softmax(query @ key.transpose(-2, -1) / math.sqrt(%d)%s, dim=-1) "
           "@ value\n  (query head h reads key/value head h // %d)\n", n->head_dim,
           n->causal ? " [-inf above the diagonal]" : "", R);
    int rows = n->seq < 4 ? n->seq : 4, cols = n->head_dim < 4 ? n->head_dim : 4;
    printf("out[0, 0, :%d, :%d]\n%s\n", rows, cols, corner_str(out));
    printf("out_naive[0, 0, :%d, :%d]\n%s\n", rows, cols, corner_str(out_naive));
    float diff = max_abs_diff(out, out_naive);
    printf("max |out - out_naive| = %.3g (%s 1e-5: float rounding only)\n", diff,
           diff <= TOLERANCE ? "within" : "NOT within");
}

static double mib(double bytes) {
    return bytes / (1024.0 * 1024.0);
}

// The FLOPs of attention as --bench counts them: the two products, 2 FLOPs
// a multiply-add; causal, only the scores on or below the diagonal.
static double attention_flops(int batch, int heads, int seq, int head_dim, bool causal) {
    double BHD = (double)batch * heads * head_dim;
    return causal ? 2.0 * BHD * seq * (seq + 1.0) : 4.0 * BHD * seq * seq;
}

// Part 4. What the two paths cost at these sizes: FLOPs, memory, bytes moved.
static void show_cost(const FlashAttentionSteps *tiled, const NaiveSteps *naive, const Sizes *n) {
    double B = n->batch, H = n->heads, KV = n->kv_heads, N = n->seq, D = n->head_dim;
    printf("\n-- 4. what the two paths cost at these sizes --\n");
    printf("FLOPs (a multiply-add is 2): the naive path 4*B*H*N*N*D = %.0f, the tiled one %.0f\n",
           4.0 * B * H * N * N * D, tiled->flops);
    printf("  (%s)\n", n->causal ? "causal: the tiled one skips the tiles above the diagonal; "
                                   "2*B*H*N*(N+1)*D are needed"
                                 : "the same work, in another order");
    printf("extra memory, besides out (what each path allocated):\n");
    printf("  naive: %10.2f KiB: the scores, the scaled scores%s and the weights, "
           "(B, H, N, N) each%s\n", naive->extra_bytes / 1024.0,
           n->causal ? ", the masked scores" : "", n->causal ? ", and 3 (N, N) masks" : "");
    printf("  tiled: %10.2f KiB: a (D, Bq) query block, a (Bk, Bq) score block and 4 vectors of "
           "Bq\n", tiled->scratch_bytes / 1024.0);
    printf("  (Bq rounded up to a multiple of 16): it depends on the blocks and D, not on N\n");
    double score_bytes = naive->score_passes * B * H * N * N * 4.0;
    double naive_io = (2.0 * B * H * N * D + 2.0 * B * KV * N * D) * 4.0;
    double tiled_io = (2.0 * B * H * N * D + 2.0 * tiled->kv_rows * D) * 4.0;
    printf("bytes to and from memory, if nothing but a tile stayed in the cache:\n");
    printf("  naive: the (B, H, N, N) scores written or read %d times, %.0f bytes, and query, "
           "key, value, out once, %.0f\n", naive->score_passes, score_bytes, naive_io);
    printf("  tiled: no score leaves its tile; query and out once, key and value once per "
           "tile: %.0f\n", tiled_io);
    printf("  FLOPs per byte: naive %.1f, tiled %.1f\n",
           4.0 * B * H * N * N * D / (score_bytes + naive_io), tiled->flops / tiled_io);
    printf("the speed: make lesson-13 ARGS=--bench\n");
}

// --- the bench: one core, naive against tiled ------------------------------------------

#define BENCH_HEADS 8
#define BENCH_HEAD_DIM 64
#define BENCH_NAIVE_MAX_SEQ 2048    // beyond: (B, H, N, N) passes the helper's size limit
#define BENCH_MIN_SECONDS 1.0       // repeat a measurement until this much time is spent...
#define BENCH_MAX_RUNS 10           // ... or this many runs

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// One core's FMA peak in GFLOP/s, best of 5; `one_chain` measures the
// latency of one dependent chain instead. Returns 0 where the vector
// kernels are not used.
static double fma_peak(bool one_chain) {
    long steps = 20000000;
    double best = 1e30, flops = 0.0;
    volatile float sink = 0.0f;   // keeps the loops from being optimised away
    for (int run = 0; run < 5; run++) {
        double start = now_seconds();
#ifdef HAVE_VECTOR_KERNELS
        if (kernels_vector() != NULL) {
            sink = sink + (one_chain ? fma_chain_one_vector(steps) : fma_chains_vector(steps));
            flops = 16.0 * steps * (one_chain ? 1 : 12);
        }
#endif
        if (kernels_vector() == NULL) {
            sink = sink + fma_chains_scalar(steps / 16);
            flops = 2.0 * (steps / 16) * 12;
        }
        double seconds = now_seconds() - start;
        best = seconds < best ? seconds : best;
    }
    return flops / best * 1e-9;
}

typedef enum { RUN_NAIVE, RUN_TILED } BenchPath;

typedef struct {
    double ms;          // the best run
    int runs;
    size_t extra;       // bytes allocated besides out
    const Tensor *out;  // the last run's output, kept
} Timing;

// Run one path on (query, key, value) until BENCH_MIN_SECONDS are spent (at
// least 2 runs, at most BENCH_MAX_RUNS); the best time. Everything a run
// allocates is released before the next one, except the last output.
static Timing time_path(BenchPath path, const FlashAttention *flash, const Tensor *query,
                        const Tensor *key, const Tensor *value, Tensor *out) {
    Timing timing = {1e30, 0, 0, out};
    double spent = 0.0;
    while (timing.runs < BENCH_MAX_RUNS && (timing.runs < 2 || spent < BENCH_MIN_SECONDS)) {
        size_t mark = arena_mark();
        double start = now_seconds();
        const Tensor *result;
        if (path == RUN_NAIVE) {
            NaiveSteps steps;
            result = naive_attention(&steps, query, key, value, flash->causal);
            timing.extra = steps.extra_bytes;
        } else {
            FlashAttentionSteps steps;
            result = FlashAttention_forward(&steps, flash, query, key, value);
            timing.extra = steps.scratch_bytes;
        }
        double seconds = now_seconds() - start;
        memcpy(out->data, result->data, (size_t)numel(out) * sizeof(float));
        arena_release(mark);
        spent += seconds;
        timing.runs += 1;
        timing.ms = seconds * 1e3 < timing.ms ? seconds * 1e3 : timing.ms;
    }
    return timing;
}

typedef struct {
    int seq;
    bool causal;
    Timing naive, tiled;   // naive.runs == 0: not run
    float diff;            // max |out - out_naive|
} BenchCase;

// The causal tiles of one head of N positions in blocks of Bq x Bk, by kind.
static void count_tiles(long counts[3], int N, int block_q, int block_k) {
    int Bq = min_int(block_q, N), Bk = min_int(block_k, N);
    for (int qs = 0; qs < N; qs += Bq) {
        for (int ks = 0; ks < N; ks += Bk) {
            counts[tile_kind(true, qs, min_int(Bq, N - qs), ks, min_int(Bk, N - ks))] += 1;
        }
    }
}

static void bench(int block_q, int block_k) {
    const int seqs[] = {512, 1024, 2048, 4096, 8192};
    enum { N_SEQS = sizeof seqs / sizeof seqs[0], N_CASES = 2 * N_SEQS };
    const Kernels *best = kernels_best();
    printf("-- bench: batch 1, %d heads, head_dim %d, blocks of %d queries x %d keys, one "
           "thread --\n", BENCH_HEADS, BENCH_HEAD_DIM, block_q, block_k);
    printf("kernels: %s (picked at run time; the scalar twin gives the same bits)\n",
           best->name);
    // The machine may be shared: the peak is measured before and after the
    // runs, and the higher of the two kept.
    double peak = fma_peak(false);

    BenchCase cases[N_CASES];
    for (int i = 0; i < N_SEQS; i++) {
        int N = seqs[i];
        size_t mark = arena_mark();
        Shape shape = shape4(1, BENCH_HEADS, N, BENCH_HEAD_DIM);
        const Tensor *query = randn(shape), *key = randn(shape), *value = randn(shape);
        Tensor *out = zeros(shape), *out_naive = zeros(shape);               // (1, H, N, D)
        for (int causal = 0; causal < 2; causal++) {
            BenchCase *c = &cases[2 * i + causal];
            c->seq = N;
            c->causal = causal;
            FlashAttention flash =
                FlashAttention_init(BENCH_HEADS, BENCH_HEADS, causal, block_q, block_k);
            c->tiled = time_path(RUN_TILED, &flash, query, key, value, out);
            c->naive = (Timing){0.0, 0, 0, NULL};
            c->diff = NAN;
            if (N <= BENCH_NAIVE_MAX_SEQ) {
                c->naive = time_path(RUN_NAIVE, &flash, query, key, value, out_naive);
                c->diff = max_abs_diff(out, out_naive);
            }
        }
        arena_release(mark);
    }
    double peak_after = fma_peak(false);
    peak = peak_after > peak ? peak_after : peak;
    printf("FMA peak of this core, measured: 12 independent chains of 8-float FMAs, "
           "%.1f GFLOP/s;\n", peak);
    printf("  one chain alone, %.1f GFLOP/s: each FMA waits for the one before (the "
           "micro-kernel keeps 12)\n", fma_peak(true));
    printf("best of 2 to %d runs each; GFLOP/s count 4*B*H*N*N*D, causal 2*B*H*N*(N+1)*D:\n",
           BENCH_MAX_RUNS);
    printf("   seq causal  naive ms  tiled ms speedup tiled GFLOP/s %% of peak  naive MiB  "
           "tiled MiB  max|out-naive|\n");
    for (int i = 0; i < N_CASES; i++) {
        const BenchCase *c = &cases[i];
        double gflops = attention_flops(1, BENCH_HEADS, c->seq, BENCH_HEAD_DIM, c->causal) /
                        (c->tiled.ms * 1e6);
        printf("  %4d %6d", c->seq, c->causal);
        if (c->naive.runs > 0) {
            printf(" %9.1f %9.1f %6.1fx", c->naive.ms, c->tiled.ms, c->naive.ms / c->tiled.ms);
        } else {
            printf(" %9s %9.1f %7s", "-", c->tiled.ms, "-");
        }
        printf(" %13.1f %9.1f%%", gflops, 100.0 * gflops / peak);
        if (c->naive.runs > 0) {
            printf(" %10.1f %10.2f %15.2g\n", mib(c->naive.extra), mib(c->tiled.extra),
                   c->diff);
        } else {
            printf(" %10s %10.2f %15s\n", "-", mib(c->tiled.extra), "-");
        }
    }

    // What the vector code is worth, on one case: the same forward with the
    // scalar exp, and with the scalar twins throughout (same bits, slower).
    int N = 1024;
    size_t mark = arena_mark();
    Shape shape = shape4(1, BENCH_HEADS, N, BENCH_HEAD_DIM);
    const Tensor *query = randn(shape), *key = randn(shape), *value = randn(shape);
    Tensor *out = zeros(shape);
    FlashAttention flash = FlashAttention_init(BENCH_HEADS, BENCH_HEADS, false, block_q, block_k);
    double fast_ms = time_path(RUN_TILED, &flash, query, key, value, out).ms;
    printf("seq %d, not causal, %.1f ms with the vector kernels; the same forward with\n", N,
           fast_ms);
#ifdef HAVE_VECTOR_KERNELS
    if (kernels_vector() != NULL) {
        flash.kernels = &VECTOR_TILE_SCALAR_EXP;
        double ms = time_path(RUN_TILED, &flash, query, key, value, out).ms;
        printf("  the scalar exp (one number at a time):  %8.1f ms, %.1fx slower\n", ms,
               ms / fast_ms);
    }
#endif
    flash.kernels = &SCALAR_KERNELS;
    double scalar_ms = time_path(RUN_TILED, &flash, query, key, value, out).ms;
    printf("  the scalar twins throughout:            %8.1f ms, %.1fx slower\n", scalar_ms,
           scalar_ms / fast_ms);
    arena_release(mark);

    const BenchCase *at2048 = &cases[4], *causal2048 = &cases[5];
    double naive_gflops = attention_flops(1, BENCH_HEADS, 2048, BENCH_HEAD_DIM, false) /
                          (at2048->naive.ms * 1e6);
    printf("what the numbers say:\n"
           "- naive: %.1f GFLOP/s at seq 2048. The helper's loops do one multiply-add at a time,\n"
           "  each waiting for the one before, and the (B, H, N, N) scores (%.0f MiB) go through\n"
           "  memory several times: its extra memory grows 4x each time seq doubles.\n",
           naive_gflops, mib(BENCH_HEADS * 2048.0 * 2048.0 * sizeof(float)));
    printf("- tiled: %.0f%% of the peak at seq 2048. What it does besides FMAs keeps it below:\n"
           "  the exp and max of every score, the rescaling, loading the operands of each\n"
           "  tile, and short tiles at the block edges. Its extra memory stays %.2f MiB.\n",
           100.0 * attention_flops(1, BENCH_HEADS, 2048, BENCH_HEAD_DIM, false) /
               (at2048->tiled.ms * 1e6) / peak,
           mib(at2048->tiled.extra));
    printf("- causal: the tiled kernel skips the tiles above the diagonal and is %.1fx faster "
           "than\n  without the mask at seq 2048; the naive path computes every score, then "
           "masks.\n", at2048->tiled.ms / causal2048->tiled.ms);
    long small[3] = {0, 0, 0}, large[3] = {0, 0, 0};
    count_tiles(small, seqs[0], block_q, block_k);
    count_tiles(large, seqs[N_SEQS - 1], block_q, block_k);
    printf("- causal, small seq: of the %ld tiles a head computes at seq %d, %ld are on the "
           "diagonal,\n  computed in full and masked in part; at seq %d, %ld of %ld.\n",
           small[TILE_FULL] + small[TILE_DIAGONAL], seqs[0], small[TILE_DIAGONAL],
           seqs[N_SEQS - 1], large[TILE_DIAGONAL], large[TILE_FULL] + large[TILE_DIAGONAL]);
    for (int i = 0; i < N_CASES; i++) {
        const BenchCase *c = &cases[i];
        double gflops = attention_flops(1, BENCH_HEADS, c->seq, BENCH_HEAD_DIM, c->causal) /
                        (c->tiled.ms * 1e6);
        if (c->naive.runs > 0) {
            printf("bench seq=%d causal=%d naive_ms=%.1f tiled_ms=%.1f tiled_gflops=%.1f "
                   "naive_extra_mib=%.1f tiled_extra_mib=%.1f\n", c->seq, c->causal,
                   c->naive.ms, c->tiled.ms, gflops, mib(c->naive.extra), mib(c->tiled.extra));
        } else {
            printf("bench seq=%d causal=%d naive_ms=- tiled_ms=%.1f tiled_gflops=%.1f "
                   "naive_extra_mib=- tiled_extra_mib=%.1f\n", c->seq, c->causal, c->tiled.ms,
                   gflops, mib(c->tiled.extra));
        }
    }
}

// --bench times its own sizes: the shape flags and the files would be
// ignored, so they are refused. The block sizes and --seed are used.
static void refuse_with_bench(const Lesson *lesson, int argc, char **argv) {
    const char *ignored[] = {"--batch", "--seq", "--heads", "--kv-heads", "--head-dim",
                             "--causal", "--dump", "--dot", "--heatmap"};
    for (int i = 1; i < argc; i++) {
        for (size_t f = 0; f < sizeof ignored / sizeof ignored[0]; f++) {
            size_t n = strlen(ignored[f]);   // --seq 512, or --seq=512
            if (strncmp(argv[i], ignored[f], n) == 0 && (argv[i][n] == '\0' || argv[i][n] == '=')) {
                usage_error(lesson, "--bench times its own sizes (batch 1, 8 heads, head_dim 64, "
                            "seq 512 to 8192, causal and not); drop %s", ignored[f]);
            }
        }
    }
}

// --- the lesson -------------------------------------------------------------------------

int main(int argc, char **argv) {
    Sizes n = {.batch = 1, .seq = 256, .heads = 8, .kv_heads = 8, .head_dim = 64,
               .block_q = 64, .block_k = 64, .causal = false};
    bool run_bench = false;
    SizeFlag sizes[] = {
        {"--batch", &n.batch, "batch size"},
        {"--seq", &n.seq, "sequence length (queries and keys)"},
        {"--heads", &n.heads, "query heads"},
        {"--kv-heads", &n.kv_heads, "key/value heads (must divide --heads)"},
        {"--head-dim", &n.head_dim, "numbers per head"},
    };
    IntFlag ints[] = {
        {"--block-q", &n.block_q, "queries per block (Bq)", 1, MAX_BLOCK},
        {"--block-k", &n.block_k, "keys per block (Bk)", 1, MAX_BLOCK},
    };
    SwitchFlag switches[] = {
        {"--causal", &n.causal, "query t sees keys 0..t only"},
        {"--bench", &run_bench, "time naive against tiled on one core (its own sizes)"},
    };
    Lesson lesson = {
        .program = "lesson-13",
        .summary = "flash-attention: online softmax and the tiled forward, against the naive path",
        .sizes = sizes, .n_sizes = 5, .ints = ints, .n_ints = 2,
        .switches = switches, .n_switches = 2,
    };
    parse_lesson_args(&lesson, argc, argv);
    if (run_bench) {
        refuse_with_bench(&lesson, argc, argv);
    }
    check_divides(&lesson, "--kv-heads", n.kv_heads, "--heads", n.heads);
    // The largest tensors: the naive path's scores (B, H, N, N), and the
    // inputs and outputs (B, H, N, D). The tiled path's scratch is smaller:
    // its query block (D, Bq) and score block (Bk, Bq) have at most N rows or
    // columns where query has N (and at most 4096 x 4096 floats).
    check_fits(&lesson, "the naive scores (batch, heads, seq, seq)",
               shape4(n.batch, n.heads, n.seq, n.seq));
    check_fits(&lesson, "query (batch, heads, seq, head_dim)",
               shape4(n.batch, n.heads, n.seq, n.head_dim));
    lesson_start(&lesson);

    if (run_bench) {
        bench(n.block_q, n.block_k);   // --bench refuses --dot and --dump: nothing traces it
        return lesson_finish(&lesson);
    }

    printf("query = torch.randn(%d, %d, %d, %d)\n", n.batch, n.heads, n.seq, n.head_dim);
    printf("key = torch.randn(%d, %d, %d, %d)\n", n.batch, n.kv_heads, n.seq, n.head_dim);
    printf("value = torch.randn(%d, %d, %d, %d)\n", n.batch, n.kv_heads, n.seq, n.head_dim);
    const Tensor *query = named("query", randn(shape4(n.batch, n.heads, n.seq, n.head_dim)));
    Shape kv_shape = shape4(n.batch, n.kv_heads, n.seq, n.head_dim);
    const Tensor *key = named("key", randn(kv_shape));                       // (B, KV, N, D)
    const Tensor *value = named("value", randn(kv_shape));                   // (B, KV, N, D)

    FlashAttention flash =
        FlashAttention_init(n.heads, n.kv_heads, n.causal, n.block_q, n.block_k);
    FlashAttentionSteps tiled;
    const Tensor *out = named("out", FlashAttention_forward(&tiled, &flash, query, key, value));
    NaiveSteps naive;
    const Tensor *out_naive =
        named("out_naive", naive_attention(&naive, query, key, value, n.causal));   // (B, H, N, D)

    bool was_paused = trace_pause(true);   // the rest prints and checks: not dataflow
    printf("out: %s, out_naive: %s\n", size_str(out), size_str(out_naive));
    show_online_softmax(query, key);
    show_tiled_loop(&tiled, &n, out);
    show_against_naive(out, out_naive, &n);
    if (lesson.heatmap) {
        int shown = n.seq < 16 ? n.seq : 16;
        const Tensor *w = narrow(narrow(naive.attention_weight, 0, 0, 1), 1, 0, 1);
        w = narrow(narrow(narrow(w, 2, 0, 1), 3, 0, shown), 4, 0, shown);   // (1, 1, 1, 16, 16)
        w = reshape(w, shape2(shown, shown));                                // (16, 16)
        printf("the naive path's weights of head 0, queries and keys 0..%d (the tiled kernel "
               "never stores them):\n", shown - 1);
        print_heatmap("attention_weight", w);
    }
    show_cost(&tiled, &naive, &n);
    trace_pause(was_paused);
    return lesson_finish(&lesson);
}
