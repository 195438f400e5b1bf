// Lesson 13: flash-attention - the same attention without the (N x N) scores:
// online softmax and FlashAttention-2's tiled forward, on one core and on all.
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
//      and its accumulator o; at the end out = o / l, and lse = m + log(l)
//      (the logsumexp of its scores, which lesson 14's backward needs).
//   3. Parallel. A block of queries needs nothing from any other block, so
//      --threads N workers share the blocks of every batch row and head (as
//      FlashAttention-2 does on a GPU), with the same bits for any N.
//   Causal: tiles wholly above the diagonal are skipped, tiles on it are
//   masked and computed as the triangles they are. GQA: query head h reads
//   key/value head h / R in place (lesson 10).
//   The inner loops are in kernels.c, each as a plain scalar twin and as
//   AVX2 and AVX-512 versions that give the same bits; --bench (bench.c)
//   measures them against the naive path and the core's own peak. What
//   lessons 13, 14 and 16 share of that plumbing (which kernels this CPU
//   runs, ATTN_KERNELS, the vector types, the clocks, the FMA peak) is in
//   common/speed/; README.md in this folder says what to read in what order.
//
// THE MATH (one query t of one head; s runs over the keys it sees)
//   x_s = q_t . k_s / sqrt(D)
//   two passes: m = max_s x_s,  l = sum_s exp(x_s - m),  out_t = sum_s exp(x_s - m) v_s / l
//   one pass:   m = -inf, l = 0, o = 0; for each block of keys:
//               m_new = max(m, max of the block's x_s);  alpha = exp(m - m_new)
//               l = alpha l + sum_s exp(x_s - m_new);  o = alpha o + sum_s exp(x_s - m_new) v_s
//               m = m_new;   and at the end out_t = o / l: the same number.
//   The kernels work in base 2, as FlashAttention-2 does (it folds log2(e)
//   into the scale it applies to each score); here the queries are
//   multiplied by log2(e) / sqrt(D), so each score is x_s * log2(e) and
//   exp(x - m) = exp2(score - m), one multiply per score fewer.
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
//   make lesson-13       flags: --batch 1 --seq 256 --heads 8 --kv-heads (as --heads)
//                        --head-dim 64 --block-q 64 --block-k 64 --causal --threads 1
//                        --kernels, --seed, --dump, --dot, --heatmap
//   make lesson-13 ARGS="--seed 8 --seq 10 --block-q 4 --block-k 3 --causal"   a small example
//   make lesson-13 ARGS="--seq 4096"    the tiled path alone (the naive one cannot)
//   make lesson-13 ARGS=--bench        time it against the naive path and the FMA peak
//
// THE PARTS (each a function below, called from main in this order)
//   1. the draws, as the PyTorch script prints them, and the shapes
//   2. online softmax on one row: the one-pass table's last m and l are the
//      two-pass m and l, so both print the same probabilities
//   3. the tiled loop: which tiles are computed, masked, skipped; query N-1
//      going through its key blocks (alpha is 0 for the first block and 1
//      when a block does not raise the maximum), and its lse
//   4. the tiled kernel against the naive path: equal to about 1e-6
//   5. what the two paths cost: FLOPs, extra memory (the tiled path's does
//      not grow with N), bytes moved
//
// Size letters: B batch, H query heads (--heads), KV key/value heads
//   (--kv-heads), R = H / KV query heads per key/value head, N positions
//   (--seq, queries and keys alike), D head_dim, Bq and Bk the block sizes
//   (--block-q, --block-k, at most N).
// Index letters: b batch, h query head, g = h / R its key/value head, t a
//   query position, s a key position, d inside a head; qs and ks are the
//   first query and key of a block, j a query inside its block, p a key
//   inside its block.

#define _POSIX_C_SOURCE 200809L   // pthreads

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "bench.h"
#include "kernels.h"

#define MAX_BLOCK 4096      // --block-q and --block-k go from 1 to this
#define MAX_THREADS 256     // --threads goes from 1 to this
#define TOLERANCE 1e-5f     // out against out_naive: float rounding only
#define MAP_MAX_BLOCKS 16   // the tile map is drawn up to 16 x 16 blocks
#define ROWS_SHOWN 8        // of a longer walk through key blocks: the first 8 and the last 8
#define LOG2_E 1.4426950408889634   // log2(e) = 1 / ln 2
#define LN_2 0.6931471805599453
#define MIB (1024.0 * 1024.0)
// How much faster the vector kernels are than the scalar twins, for the
// budget: --seq 4096 took 0.65 s with them and 52 s without on one core of
// an AMD EPYC (Zen 4, family 25 model 17; gcc 12, -O2; 2026-11-27), 80x;
// counted as 32x (`lscpu` names your CPU).
#define VECTOR_SPEEDUP 32.0
// What a tile (a block of queries against a block of keys) costs beyond its pairs' work,
// in ns: the call of the kernels, the running max and sum, the rescale of the block's
// outputs; grows with head_dim. Small blocks pay it for every pair: --block-q 1 --block-k
// 1 ran at about 100 ns a tile at head_dim 64 and 33 at head_dim 1 (processor time on an
// Intel Xeon, family 6 model 167, AVX-512 kernels, gcc 12 -O2, under load, 2026-12-07),
// where the pairs' count alone predicted a sixth of the time.
#define NS_PER_TILE 30.0
#define NS_PER_TILE_PER_DIM 1.1

// --- the module: attention, tiled ------------------------------------------------------

typedef struct {
    int num_heads;             // H
    int num_kv_heads;          // KV: query head h reads key/value head h / (H / KV)
    bool causal;               // query t sees keys 0 .. t only
    int block_q;               // Bq: queries per block
    int block_k;               // Bk: keys per block
    const Kernels *kernels;    // how the inner loops run (kernels.h): the same bits whichever
    int threads;               // workers sharing the query blocks: the same bits however many
} FlashAttention;

static FlashAttention FlashAttention_init(int num_heads, int num_kv_heads, bool causal,
                                          int block_q, int block_k) {
    return (FlashAttention){num_heads, num_kv_heads, causal, block_q, block_k, kernels_best(),
                            1};
}

// One key block as query N-1 of batch 0, head 0 saw it (it sees every key,
// causal or not): the numbers part 3 prints. Scores in natural units.
typedef struct {
    int ks, nk;          // keys ks .. ks + nk - 1
    float block_max;     // the largest of its scores in this block
    float m;             // its running max after the block
    float alpha;         // exp(m_before - m): what its l and o were multiplied by
    float l;             // its running sum after the block
} RowStep;

// What a tile of Bq queries x Bk keys is, for the causal mask.
typedef enum { TILE_FULL, TILE_DIAGONAL, TILE_SKIPPED } TileKind;

// What the forward did besides its outputs, for the lesson to print and the
// tests to check.
typedef struct {
    long tiles[3];          // tiles of each TileKind, over all batches and heads
    double flops;           // 4 * D per (query, key) pair a query sees, over every tile
    double kv_rows;         // key rows read by the tiles (value rows: as many)
    size_t scratch_bytes;   // extra memory: everything it allocated besides out and lse
    int n_row_steps;        // key blocks query N-1 of batch 0, head 0 went through
    RowStep *row_steps;     // (n_row_steps) in order
} FlashAttentionSteps;

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

static int min_int(int a, int b) {
    return a < b ? a : b;
}

// One worker's scratch, reused for every block it takes. The scores are kept
// TRANSPOSED, one column per query: s_t[p][j] is key ks+p against query
// qs+j. Then everything a query keeps (its m, l) is one lane of a vector,
// and the softmax runs down the columns, 16 queries at once.
typedef struct {
    int N, D, Bq, Bk;    // Bq, Bk: the block sizes, at most N
    int width;           // Bq rounded up to a multiple of 16: a row of q_t and s_t
    bool causal;
    const Kernels *kernels;
    float *q_t;          // (D, width)  the query block, transposed, times log2(e) / sqrt(D)
    float *s_t;          // (Bk, width) its scores against one key block, then exp2(score - m)
    float *m;            // (width)     each query's running max
    float *l;            // (width)     each query's running sum of exp2(score - m)
    float *alpha;        // (width)     exp2(m_before - m) of the last block
    float *block_max;    // (width)     each column's largest score in the last block
} Tiling;

// All the scratch in ONE allocation, whose size depends on Bq, Bk and D only:
// that is the whole extra memory of a worker, and it does not grow with N.
// (Computing the scores transposed is what keeps it so: the query block is
// the one operand that must be rearranged for the kernels, and it is
// (D, Bq). The keys and values are read where they lie.)
static Tiling Tiling_start(const FlashAttention *self, int N, int D, size_t *bytes) {
    Tiling w;
    w.N = N;
    w.D = D;
    w.Bq = min_int(self->block_q, N);
    w.Bk = min_int(self->block_k, N);
    w.width = (w.Bq + KERNEL_COLUMNS - 1) / KERNEL_COLUMNS * KERNEL_COLUMNS;
    w.causal = self->causal;
    w.kernels = self->kernels;
    // 16 floats more, so that q_t can start on a 64-byte boundary: a cache
    // line, and an AVX-512 register. (A vector load that straddles two
    // lines costs two.)
    size_t floats = ((size_t)D + (size_t)w.Bk + 4) * (size_t)w.width + 16;
    float *scratch = arena_alloc(floats, sizeof(float));
    *bytes = floats * sizeof(float);
    w.q_t = scratch + (64 - (uintptr_t)scratch % 64) % 64 / sizeof(float);
    w.s_t = w.q_t + (size_t)D * w.width;
    w.m = w.s_t + (size_t)w.Bk * w.width;
    w.l = w.m + w.width;
    w.alpha = w.l + w.width;
    w.block_max = w.alpha + w.width;
    return w;
}

// What one worker counted, added to the FlashAttentionSteps at the end.
typedef struct {
    long tiles[3];
    double flops, kv_rows;
} Counts;

// Queries qs .. qs+nq-1 of one head against every key they see.
// q, k, v, out point at row 0 of the head, (N, D) each, row-major, and lse at
// its (N); the rows qs .. qs+nq-1 of out double as the accumulator o.
// `watch` (may be NULL) records query N-1's steps: this block has it.
static void attend_query_block(Counts *counts, FlashAttentionSteps *watch, const Tiling *w,
                               const float *q, const float *k, const float *v, float *out,
                               float *lse, int qs, int nq) {
    int N = w->N, D = w->D, W = w->width;
    float *o = out + (long)qs * D;                            // (nq, D) the accumulator

    // The query block, transposed and scaled: q_t[d][j] = q[qs+j][d] * log2(e) / sqrt(D).
    // Columns nq .. W-1 are zero: queries that do not exist score 0 and are
    // never read back. Scaling the queries instead of the scores is one
    // multiply per query number rather than one per score.
    float scale = (float)(LOG2_E / sqrt((double)D));
    Tile block = {0, nq, W, D, NO_MASK};   // (the kernel's contract: kernels.h)
    w->kernels->load_queries(w->q_t, &block, q + (long)qs * D, scale);
    for (int j = 0; j < W; j++) {
        w->m[j] = -INFINITY;   // no score seen yet (and o starts at 0: out is made by zeros)
        w->l[j] = 0.0f;
    }

    for (int ks = 0; ks < N; ks += w->Bk) {                  // stream the key blocks past
        int nk = min_int(w->Bk, N - ks);
        TileKind kind = tile_kind(w->causal, qs, nq, ks, nk);
        counts->tiles[kind] += 1;
        if (kind == TILE_SKIPPED) {
            continue;   // every key after every query: all its weights are exp(-inf) = 0
        }
        // Keys after the block's last query are masked for all its queries:
        // on a diagonal tile they are not even computed. Query j sees key p
        // when ks + p <= qs + j, that is p <= j + diagonal.
        Tile tile = {kind == TILE_DIAGONAL ? min_int(nk, qs + nq - ks) : nk, nq, W, D,
                     kind == TILE_DIAGONAL ? qs - ks : NO_MASK};
        const float *k_block = k + (long)ks * D;             // (keys, D) keys, in place
        const float *v_block = v + (long)ks * D;             // (keys, D) values, in place

        // 1. Scores, transposed: s_t (keys, W) = k_block (keys, D) @ q_t (D, W),
        //    with the causal mask on diagonal tiles: -inf where key ks+p comes
        //    after query qs+j (exp2 makes it 0); and each column's largest.
        w->kernels->scores(w->s_t, w->block_max, &tile, k_block, w->q_t);
        // 2. Online softmax, one column per query: m_new = max(m, block_max),
        //    alpha = exp2(m - m_new), s_t = exp2(s_t - m_new), m = m_new.
        w->kernels->online_softmax(w->s_t, w->m, w->alpha, w->block_max, &tile);
        // 3. o = alpha o + P @ v_block, where P[j][p] = s_t[p][j], and l =
        //    alpha l + each query's sum of its weights (added as they are used).
        w->kernels->accumulate(o, w->l, &tile, w->alpha, w->s_t, v_block);

        // 4 FLOPs per number of a head for each (query, key) pair a query sees:
        // all nq x keys of a full tile, a triangle and what is left of a diagonal one.
        double pairs = (double)nq * tile.keys;
        for (int j = 0; kind == TILE_DIAGONAL && j < nq; j++) {   // j sees keys 0 .. j+diagonal
            int seen = min_int(tile.keys, j + tile.diagonal + 1);
            pairs -= tile.keys - (seen > 0 ? seen : 0);
        }
        counts->flops += 4.0 * D * pairs;
        counts->kv_rows += tile.keys;
        if (watch != NULL) {
            int j = N - 1 - qs;
            RowStep *step = &watch->row_steps[watch->n_row_steps++];
            *step = (RowStep){ks, tile.keys, (float)(w->block_max[j] * LN_2),
                              (float)(w->m[j] * LN_2), w->alpha[j], w->l[j]};
        }
    }
    // 4. out = o / l, once per query (one division, then D multiplies), and
    //    lse = m + log(l), back in natural units: ln(sum_s exp(x_s)). The
    //    multiplies are step 3 with no keys: o = alpha o, alpha = 1 / l.
    for (int j = 0; j < nq; j++) {
        w->alpha[j] = 1.0f / w->l[j];
        lse[qs + j] = (w->m[j] + log2f(w->l[j])) * (float)LN_2;
    }
    Tile no_keys = {0, nq, W, D, NO_MASK};
    w->kernels->accumulate(o, NULL, &no_keys, w->alpha, w->s_t, v);
}

// --- the parallel split: FlashAttention-2's, over batch, heads and query blocks ---

// One worker. The work items are the (b, h, query block) triples, numbered
// 0 .. n_items-1; each worker takes the next one nobody has taken, from a
// shared atomic counter (one fetch-and-add per block: no lock, and no
// waiting in the inner loops). An item writes only its own rows of out and
// lse, with its own scratch, so the workers never write the same memory, and
// each output number is computed by the same operations in the same order
// whichever worker does it: the same bits for any number of threads.
typedef struct {
    const FlashAttention *self;
    const Tensor *q, *k, *v;
    Tensor *out, *lse;
    atomic_int *next_item;       // shared by all the workers
    Tiling w;                    // this worker's scratch
    Counts counts;               // what this worker did
    FlashAttentionSteps *steps;  // where query N-1 of batch 0, head 0 is recorded (may be NULL)
} Worker;

static void *work(void *arg) {
    Worker *me = arg;
    int B = size(me->q, 0), H = size(me->q, 1), N = size(me->q, 2);
    int R = H / size(me->k, 1);   // query heads per key/value head
    int q_blocks = (N + me->w.Bq - 1) / me->w.Bq, n_items = B * H * q_blocks;
    for (int i = atomic_fetch_add(me->next_item, 1); i < n_items;
         i = atomic_fetch_add(me->next_item, 1)) {
        // One head's blocks one after the other, so that its keys and values
        // stay in the cache; inside a head the last query blocks first: with
        // the causal mask they see the most keys, and the short ones left for
        // the end even out the finish.
        int bh = i / q_blocks, b = bh / H, h = bh % H, g = h / R;   // g: h's key/value head
        int qs = (q_blocks - 1 - i % q_blocks) * me->w.Bq, nq = min_int(me->w.Bq, N - qs);
        bool watched = me->steps != NULL && b == 0 && h == 0 && qs + nq == N;
        attend_query_block(&me->counts, watched ? me->steps : NULL, &me->w,
                           at4(me->q, b, h, 0, 0), at4(me->k, b, g, 0, 0),
                           at4(me->v, b, g, 0, 0), at4(me->out, b, h, 0, 0),
                           at3(me->lse, b, h, 0), qs, nq);
    }
    return NULL;
}

// query (B, H, N, D), key and value (B, KV, N, D); returns out (B, H, N, D)
// and, when `lse` is not NULL, sets *lse to the (B, H, N) logsumexp of every
// query's scores. `steps` may be NULL.
static Tensor *FlashAttention_forward(Tensor **lse, FlashAttentionSteps *steps,
                                      const FlashAttention *self, const Tensor *query,
                                      const Tensor *key, const Tensor *value) {
    int B = size(query, 0), H = size(query, 1), N = size(query, 2), D = size(query, 3);
    int KV = size(key, 1);
    if (H != self->num_heads || KV != self->num_kv_heads || H % KV != 0 ||
        !same_shape(key, value) || size(key, 0) != B || size(key, 2) != N || size(key, 3) != D) {
        fail("FlashAttention: query (%s), key (%s) and value (%s) do not fit %d heads and %d "
             "key/value heads", size_x_str(query), size_x_str(key), size_x_str(value),
             self->num_heads, self->num_kv_heads);
    }
    // The kernels read each head's rows in place: inputs must be row-major. A
    // view that is not gets copied first, and the copy counts as extra memory.
    const Tensor *q = contiguous(query), *k = contiguous(key), *v = contiguous(value);
    Tensor *out = zeros(shape4(B, H, N, D));                                  // (B, H, N, D)
    Tensor *row_lse = zeros(shape3(B, H, N));                                 // (B, H, N)
    int q_blocks = (N + min_int(self->block_q, N) - 1) / min_int(self->block_q, N);
    int threads = min_int(self->threads, B * H * q_blocks);   // no more workers than blocks
    Worker *workers = arena_alloc((size_t)threads, sizeof(Worker));
    pthread_t *ids = arena_alloc((size_t)threads, sizeof(pthread_t));
    atomic_int next_item;
    atomic_init(&next_item, 0);
    size_t scratch_bytes = 0, bytes;
    if (steps != NULL) {
        memset(steps, 0, sizeof *steps);
        steps->row_steps =
            arena_alloc((size_t)((N + min_int(self->block_k, N) - 1) / min_int(self->block_k, N)),
                        sizeof(RowStep));
    }
    for (int t = 0; t < threads; t++) {
        workers[t] = (Worker){self, q, k, v, out, row_lse, &next_item,
                              Tiling_start(self, N, D, &bytes), {{0, 0, 0}, 0.0, 0.0}, steps};
        scratch_bytes += bytes;
    }
    // Worker 0 is this thread. If the system refuses a thread, the workers
    // that did start take its blocks.
    int started = 1;
    while (started < threads && pthread_create(&ids[started], NULL, work, &workers[started]) == 0) {
        started += 1;
    }
    work(&workers[0]);
    for (int t = 1; t < started; t++) {
        pthread_join(ids[t], NULL);
    }

    const Tensor *copies[3][2] = {{q, query}, {k, key}, {v, value}};
    for (int i = 0; i < 3; i++) {
        if (copies[i][0] != copies[i][1]) {
            scratch_bytes += (size_t)numel(copies[i][0]) * sizeof(float);
        }
    }
    for (int t = 0; steps != NULL && t < threads; t++) {
        for (int kind = 0; kind < 3; kind++) {
            steps->tiles[kind] += workers[t].counts.tiles[kind];
        }
        steps->flops += workers[t].counts.flops;
        steps->kv_rows += workers[t].counts.kv_rows;
    }
    if (steps != NULL) {
        steps->scratch_bytes = scratch_bytes;
    }
    // The diagram: one edge for each input, saying what the loop takes of it, and lse
    // beside out, made by the same loop.
    char label[96];
    snprintf(label, sizeof label, "tiled attention%s: %d queries a block",
             self->causal ? " (causal)" : "", min_int(self->block_q, N));
    trace1(label, out, query);
    int Bk = min_int(self->block_k, N);
    snprintf(label, sizeof label, "%d keys a block, read where they lie", Bk);
    trace1(label, out, key);
    snprintf(label, sizeof label, "%d values a block, read where they lie", Bk);
    trace1(label, out, value);
    trace1("m + log(l) of each query, the same loop", row_lse, out);
    if (lse != NULL) {
        *lse = row_lse;
    }
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
        Tensor *mask = triu(all, 1);                      // (N, N): 1 above the diagonal
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

// The bytes the naive path allocates besides out: the scores, the scaled
// scores, (causal) the masked scores and the weights, (B, H, N, N) each,
// and (causal) three (N, N) masks.
double naive_bytes(double B, double H, double N, bool causal) {
    return ((causal ? 4 : 3) * B * H * N * N + (causal ? 3 : 0) * N * N) * sizeof(float);
}

// The naive path runs when its scores fit the helper's limit on one tensor
// and all it makes fits NAIVE_MAX_MIB (half the budget a run may hold:
// lesson/budget.h); beyond, the tiled path runs alone.
static bool naive_fits(int batch, int heads, int seq, bool causal) {
    return (double)batch * heads * seq * seq <= (double)MAX_ELEMENTS &&
           naive_bytes(batch, heads, seq, causal) <= NAIVE_MAX_MIB * MIB;
}

// --- part 1: the draws, as the PyTorch script prints them ---------------------------------

typedef struct {
    int batch, seq, heads, kv_heads, head_dim, block_q, block_k, threads;
    bool causal;
    const char *kernels;   // --kernels: auto, avx512, avx2, scalar
} Sizes;

typedef struct {
    const Tensor *query, *key, *value;   // (B, H, N, D), (B, KV, N, D), (B, KV, N, D)
} Draws;

static Draws draw_inputs(const Sizes *n) {
    printf("query = torch.randn(%d, %d, %d, %d)\n", n->batch, n->heads, n->seq, n->head_dim);
    printf("key = torch.randn(%d, %d, %d, %d)\n", n->batch, n->kv_heads, n->seq, n->head_dim);
    printf("value = torch.randn(%d, %d, %d, %d)\n", n->batch, n->kv_heads, n->seq, n->head_dim);
    Shape kv_shape = shape4(n->batch, n->kv_heads, n->seq, n->head_dim);
    Draws draws;
    draws.query = named("query", randn(shape4(n->batch, n->heads, n->seq, n->head_dim)));
    draws.key = named("key", randn(kv_shape));                               // (B, KV, N, D)
    draws.value = named("value", randn(kv_shape));                           // (B, KV, N, D)
    return draws;
}

// --- part 2: online softmax on one row --------------------------------------------------

// The scores of query N-1 of head 0 against its first n keys (n up to 8),
// softmaxed in two passes and in one, with libm's exp: the idea, before the
// kernels' base-2 version of it.
static void show_online_softmax(const Tensor *query, const Tensor *key) {
    int N = size(query, 2), D = size(query, 3), n = N < 8 ? N : 8, t = N - 1;
    const Tensor *q_t = narrow(narrow(narrow(query, 0, 0, 1), 1, 0, 1), 2, t, 1);   // (1, 1, 1, D)
    const Tensor *k_s = narrow(narrow(narrow(key, 0, 0, 1), 1, 0, 1), 2, 0, n);     // (1, 1, n, D)
    const Tensor *scores = matmul(q_t, transpose(k_s, -2, -1));                     // (1, 1, 1, n)
    const Tensor *x = reshape(div_scalar(scores, (float)sqrt((double)D)), shape1(n));  // (n)
    printf("\n-- part 2: online softmax on one row, query %d of head 0 against keys 0..%d "
           "(--seq picks it) --\n", t, n - 1);
    printf("x = (query[0, 0, %d] @ key[0, 0, :%d].T) / math.sqrt(%d)\n%s\n", t, n, D,
           tensor_str(x, NULL));

    // Two passes, as torch.softmax does: the max first, then the sum of exps.
    float m = -INFINITY;
    for (int s = 0; s < n; s++) {
        m = *at1(x, s) > m ? *at1(x, s) : m;
    }
    float l = 0.0f;
    for (int s = 0; s < n; s++) {
        l += expf(*at1(x, s) - m);
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
        float m_new = *at1(x, s) > m_run ? *at1(x, s) : m_run;
        float alpha = expf(m_run - m_new);   // exp(-inf) = 0 at the first score
        l_run = l_run * alpha + expf(*at1(x, s) - m_new);
        m_run = m_new;
        printf("  %2d %9.4f %9.4f %15.4f %9.4f\n", s, *at1(x, s), m_new, alpha, l_run);
    }
    Tensor *p_one = zeros(shape1(n));                                         // (n)
    for (int s = 0; s < n; s++) {
        *at1(p_one, s) = expf(*at1(x, s) - m_run) / l_run;
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

// --- part 3: the tiled loop -------------------------------------------------------------

static const char TILE_MARK[3] = {'#', '\\', '.'};   // TILE_FULL, TILE_DIAGONAL, TILE_SKIPPED

// The tiles of one head, and query N-1 going through its key blocks.
static void show_tiled_loop(const FlashAttentionSteps *steps, const Sizes *n, const Tensor *out,
                            const Tensor *lse) {
    int N = n->seq, Bq = min_int(n->block_q, N), Bk = min_int(n->block_k, N);
    int q_blocks = (N + Bq - 1) / Bq, k_blocks = (N + Bk - 1) / Bk;
    printf("\n-- part 3: the tiled loop, blocks of %d quer%s x %d key%s (--block-q, --block-k, "
           "--causal) --\n", Bq, Bq == 1 ? "y" : "ies", Bk, Bk == 1 ? "" : "s");
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
    long computed = (steps->tiles[TILE_FULL] + steps->tiles[TILE_DIAGONAL]) / heads;
    long masked = steps->tiles[TILE_DIAGONAL] / heads;
    if (computed == 1) {
        printf("per head: 1 tile computed (%s), %ld skipped\n", masked ? "masked" : "not masked",
               steps->tiles[TILE_SKIPPED] / heads);
    } else {
        printf("per head: %ld tiles computed (%ld of them masked), %ld skipped\n", computed,
               masked, steps->tiles[TILE_SKIPPED] / heads);
    }

    printf("query %d of head 0, block by block: m its running max, l its running sum of "
           "exp(x - m),\n"
           "o its running sum of exp(x - m) * value; alpha = exp(m_before - m) rescales l and "
           "o:\n", N - 1);
    printf("         keys  block max         m     alpha          l\n");
    int count = steps->n_row_steps;
    for (int i = 0; i < count; i++) {
        if (count > 2 * ROWS_SHOWN && i == ROWS_SHOWN) {   // the middle left out
            printf("  ... %d block%s more ...\n", count - 2 * ROWS_SHOWN,
                   count - 2 * ROWS_SHOWN == 1 ? "" : "s");
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
    printf("lse[0, 0, %d] = m + log(l) = %.4f: the logsumexp of its scores (lesson 14 needs "
           "it)\n", N - 1, *at3(lse, 0, 0, N - 1));
}

// --- part 4: the tiled kernel against the naive path --------------------------------------

// The top-left corner of a (B, H, N, D) tensor: t[0, 0, :4, :4].
static const char *corner_str(const Tensor *t) {
    int rows = size(t, 2) < 4 ? size(t, 2) : 4, cols = size(t, 3) < 4 ? size(t, 3) : 4;
    const Tensor *c = narrow(narrow(narrow(narrow(t, 0, 0, 1), 1, 0, 1), 2, 0, rows), 3, 0,
                             cols);                                           // (1, 1, 4, 4)
    return tensor_str(reshape(c, shape2(rows, cols)), NULL);                  // (4, 4)
}

// The decimals that show `mib` above `limit` (0 for 300 MiB against 256; 2 for 256.26):
// "256 MiB, more than the 256 MiB" would not say why the naive path is skipped.
static int decimals_above(double mib, double limit) {
    int decimals = 0;
    char text[64];
    for (; decimals < 9; decimals++) {
        snprintf(text, sizeof text, "%.*f", decimals, mib);
        if (strtod(text, NULL) > limit) {
            break;
        }
    }
    return decimals;
}

static void show_against_naive(const Tensor *out, const Tensor *out_naive, const Sizes *n) {
    int R = n->heads / n->kv_heads;
    printf("\n-- part 4: the tiled kernel against the naive path (--kv-heads, --threads) --\n");
    if (out_naive == NULL) {
        double mib = naive_bytes(n->batch, n->heads, n->seq, n->causal) / MIB;
        printf("the naive path is skipped: its (%d, %d, %d, %d) tensors would take %.*f MiB, "
               "more\n  than the %d MiB it may hold (the tiled path needs no such tensor)\n",
               n->batch, n->heads, n->seq, n->seq, decimals_above(mib, NAIVE_MAX_MIB), mib,
               NAIVE_MAX_MIB);
        return;
    }
    printf("out_naive = torch.softmax(query @ key.transpose(-2, -1) / math.sqrt(%d), dim=-1) "
           "@ value\n%s  (query head h reads key/value head h // %d)\n", n->head_dim,
           n->causal ? "  with -inf above the diagonal before the softmax\n" : "", R);
    int rows = n->seq < 4 ? n->seq : 4, cols = n->head_dim < 4 ? n->head_dim : 4;
    printf("out[0, 0, :%d, :%d]\n%s\n", rows, cols, corner_str(out));
    printf("out_naive[0, 0, :%d, :%d]\n%s\n", rows, cols, corner_str(out_naive));
    float diff = max_abs_diff(out, out_naive);
    printf("max |out - out_naive| = %.3g (%s 1e-5: float rounding only)\n", diff,
           diff <= TOLERANCE ? "within" : "NOT within");
}

// --- part 5: what the two paths cost ----------------------------------------------------

static void show_cost(const FlashAttentionSteps *tiled, const Sizes *n, bool naive_ran) {
    double B = n->batch, H = n->heads, KV = n->kv_heads, N = n->seq, D = n->head_dim;
    int passes = n->causal ? 8 : 6;   // the naive path's: see naive_attention
    printf("\n-- part 5: what the two paths cost at these sizes (--seq, --block-q, --block-k) "
           "--\n");
    printf("FLOPs (a multiply-add is 2): the naive path 4*B*H*N*N*D = %.0f,\n",
           4.0 * B * H * N * N * D);
    printf("  the tiled one %.0f (%s)\n", tiled->flops,
           n->causal ? "2*B*H*N*(N+1)*D: no tile above the diagonal, triangles on it"
                     : "the same work, in another order");
    printf("extra memory, besides out and lse (what each path allocates):\n");
    printf("  naive: %10.2f KiB: the scores, the scaled scores%s and the weights,\n"
           "         (B, H, N, N) each%s%s\n", naive_bytes(B, H, N, n->causal) / 1024.0,
           n->causal ? ", the masked scores" : "", n->causal ? ", and 3 (N, N) masks" : "",
           naive_ran ? "" : " (had it run)");
    printf("  tiled: %10.2f KiB: a (D, Bq) query block, a (Bk, Bq) score block and 4 vectors\n"
           "         of Bq, Bq rounded up to a multiple of 16%s: it does not grow with N\n",
           tiled->scratch_bytes / 1024.0, n->threads > 1 ? ", for each thread" : "");
    double score_bytes = passes * B * H * N * N * 4.0;
    double naive_io = (2.0 * B * H * N * D + 2.0 * B * KV * N * D) * 4.0;
    double tiled_io = (2.0 * B * H * N * D + 2.0 * tiled->kv_rows * D) * 4.0;
    printf("bytes to and from memory, if nothing but a tile stayed in the cache:\n");
    printf("  naive: the (B, H, N, N) scores written or read %d times, %.0f bytes,\n"
           "         and query, key, value, out once, %.0f\n", passes, score_bytes, naive_io);
    printf("  tiled: no score leaves its tile; query and out once, key and value once a tile,\n"
           "         %.0f\n", tiled_io);
    printf("  FLOPs per byte: naive %.1f, tiled %.1f\n",
           4.0 * B * H * N * N * D / (score_bytes + naive_io), tiled->flops / tiled_io);
    printf("the speed: make lesson-13 ARGS=--bench\n");
}

// The naive path's weights of head 0 as a grid, queries and keys 0..15.
static void show_heatmap(const NaiveSteps *naive, int seq) {
    if (naive->attention_weight == NULL) {
        printf("(--heatmap draws the naive path's weights: skipped with it)\n");
        return;
    }
    int shown = seq < 16 ? seq : 16;
    const Tensor *w = narrow(narrow(naive->attention_weight, 0, 0, 1), 1, 0, 1);
    w = narrow(narrow(narrow(w, 2, 0, 1), 3, 0, shown), 4, 0, shown);         // (1, 1, 1, 16, 16)
    w = reshape(w, shape2(shown, shown));                                     // (16, 16)
    printf("the naive path's weights of head 0, queries and keys 0..%d (the tiled kernel "
           "never stores them):\n", shown - 1);
    print_heatmap("attention_weight", w);
}

// --- the budget: what a run of these sizes holds and does (lesson/budget.h) -------------

// Counted from the code above: query, key, value, out, lse, a Tiling a
// worker, and what the naive path makes when it runs (part 2's few numbers
// left out). The tiled path does 2*D multiply-adds and an exp2 for each
// (query, key) pair a query sees: the scalar twins counted at 1.5x a plain
// multiply-add's price (an estimate: no run behind it was recorded), the
// vector kernels VECTOR_SPEEDUP times faster; and each tile costs its call
// (NS_PER_TILE), which is most of a run with small blocks.
static Cost flash_cost(const Sizes *n, const Kernels *kernels) {
    double B = n->batch, H = n->heads, KV = n->kv_heads, N = n->seq, D = n->head_dim;
    double query = B * H * N * D, key = B * KV * N * D, lse = B * H * N;
    double pairs = n->causal ? B * H * N * (N + 1) / 2 : B * H * N * N;
    double Bq = fmin(n->block_q, N), Bk = fmin(n->block_k, N);
    double width = ceil(Bq / KERNEL_COLUMNS) * KERNEL_COLUMNS;
    double workers = fmin(n->threads, B * H * ceil(N / Bq));
    double speed = kernels->lanes > 1 ? VECTOR_SPEEDUP : 1.0;
    double query_blocks = ceil(N / Bq), key_blocks = ceil(N / Bk);   // causal: those on or
    double tiles = B * H * (n->causal ? (query_blocks * key_blocks +           // below the
                                         fmin(query_blocks, key_blocks)) / 2   // diagonal
                                      : query_blocks * key_blocks);
    Cost cost = {
        .bytes = 4 * (2 * query + 2 * key + lse + workers * ((D + Bk + 4) * width + 16)),
        .dumped = 4 * (2 * query + 2 * key + lse),
        .multiply_adds = 1.5 * 2 * D * pairs / speed,
        .exps = query + 2 * key + pairs / speed,   // randn, then the scores' exp2
        .elements = 2 * query + lse,               // out's zeros, the scaled query blocks, lse
        .kernel_seconds = tiles * (NS_PER_TILE + NS_PER_TILE_PER_DIM * D) * 1e-9,
    };
    if (naive_fits(n->batch, n->heads, n->seq, n->causal)) {
        double scores = B * H * N * N;
        cost.bytes += naive_bytes(B, H, N, n->causal) + 4 * query;
        cost.dumped += 4 * query;
        cost.multiply_adds += 2 * D * scores;
        cost.exps += scores;
        cost.elements += (n->causal ? 5 : 3) * scores;
    }
    return cost;
}

// --- the lesson -------------------------------------------------------------------------

// The flags (appendix B): parsed into *lesson and checked together; *kernels are the ones
// --kernels names.
static Sizes read_flags(Lesson *lesson, bool *run_bench, const Kernels **kernels, int argc,
                        char **argv);

int main(int argc, char **argv) {
    Lesson lesson;
    bool run_bench;
    const Kernels *kernels;
    Sizes n = read_flags(&lesson, &run_bench, &kernels, argc, argv);   // appendix B
    if (run_bench) {   // its own sizes, budget and time limit (bench.c); no --dot, no --dump
        BenchRun settings = {false, n.block_q, n.block_k, n.threads, kernels};
        check_bench(&lesson, &settings);
        lesson_start(&lesson);
        bench(&settings);
        return lesson_finish(&lesson);
    }
    check_budget(&lesson, flash_cost(&n, kernels));
    lesson_start(&lesson);
    Draws in = draw_inputs(&n);                                               // part 1
    FlashAttention flash = {n.heads, n.kv_heads, n.causal, n.block_q, n.block_k, kernels,
                            n.threads};
    FlashAttentionSteps tiled;
    Tensor *lse;
    const Tensor *out =
        named("out", FlashAttention_forward(&lse, &tiled, &flash, in.query, in.key, in.value));
    named("lse", lse);                                                        // (B, H, N)
    NaiveSteps naive = {NULL, 0, 0};
    const Tensor *out_naive = NULL;
    if (naive_fits(n.batch, n.heads, n.seq, n.causal)) {
        out_naive = named("out_naive", naive_attention(&naive, in.query, in.key, in.value,
                                                       n.causal));            // (B, H, N, D)
    }
    bool was_paused = trace_pause(true);   // the rest prints and checks: not dataflow
    printf("out: %s, lse: %s\n", size_str(out), size_str(lse));
    show_online_softmax(in.query, in.key);                                    // part 2
    show_tiled_loop(&tiled, &n, out, lse);                                    // part 3
    show_against_naive(out, out_naive, &n);                                   // part 4
    if (lesson.heatmap) {
        show_heatmap(&naive, n.seq);
    }
    show_cost(&tiled, &n, out_naive != NULL);                                 // part 5
    trace_pause(was_paused);
    return lesson_finish(&lesson);
}

// === appendix A: what --bench (bench.c) calls =====================================

// One run of each path, for --bench (bench.h): its output, and in *extra
// the memory it allocated besides.
const Tensor *tiled_run(size_t *extra, const BenchRun *run, const Tensor *query,
                        const Tensor *key, const Tensor *value) {
    FlashAttention flash = FlashAttention_init(size(query, 1), size(key, 1), run->causal,
                                               run->block_q, run->block_k);
    flash.kernels = run->kernels;
    flash.threads = run->threads;
    FlashAttentionSteps steps;
    const Tensor *out = FlashAttention_forward(NULL, &steps, &flash, query, key, value);
    *extra = steps.scratch_bytes;
    return out;
}

const Tensor *naive_run(size_t *extra, bool causal, const Tensor *query, const Tensor *key,
                        const Tensor *value) {
    NaiveSteps steps;
    const Tensor *out = naive_attention(&steps, query, key, value, causal);
    *extra = steps.extra_bytes;
    return out;
}

// === appendix B: the flags =====================================================================

static const char *const KERNEL_CHOICES[] = {"auto", "avx512", "avx2", "scalar", NULL};

static Sizes read_flags(Lesson *lesson, bool *run_bench, const Kernels **kernels, int argc,
                        char **argv) {
    static Sizes n = {.batch = 1, .seq = 256, .heads = 8, .kv_heads = 0, .head_dim = 64,
                      .block_q = 64, .block_k = 64, .threads = 1, .causal = false,
                      .kernels = "auto"};
    static bool bench_switch = false;
    static SizeFlag sizes[] = {{"--batch", &n.batch, "batch size"},
                               {"--seq", &n.seq, "sequence length (queries and keys)"},
                               {"--heads", &n.heads, "query heads"},
                               {"--head-dim", &n.head_dim, "numbers per head"}};
    static IntFlag ints[] = {
        {"--kv-heads", &n.kv_heads, "key/value heads, dividing --heads; 0: as many", 0, 65536},
        {"--block-q", &n.block_q, "queries per block (Bq)", 1, MAX_BLOCK},
        {"--block-k", &n.block_k, "keys per block (Bk)", 1, MAX_BLOCK},
        {"--threads", &n.threads, "threads sharing the query blocks", 1, MAX_THREADS}};
    static ChoiceFlag choices[] = {
        {"--kernels", &n.kernels, "the inner loops (kernels.c): auto, avx512, avx2 or scalar",
         KERNEL_CHOICES}};
    static SwitchFlag switches[] = {
        {"--causal", &n.causal, "query t sees keys 0..t only"},
        {"--bench", &bench_switch, "time tiled against naive (its own sizes)"}};
    *lesson = (Lesson){.program = "lesson-13", .summary = "flash-attention: online softmax and "
                       "the tiled forward, against the naive path", .sizes = sizes, .n_sizes = 4,
                       .ints = ints, .n_ints = 4, .choices = choices, .n_choices = 1,
                       .switches = switches, .n_switches = 2};
    parse_lesson_args(lesson, argc, argv);
    n.kv_heads = n.kv_heads == 0 ? n.heads : n.kv_heads;
    *kernels = check_kernels(lesson, n.kernels);
    check_divides(lesson, "--kv-heads", n.kv_heads, "--heads", n.heads);
    check_fits(lesson, "query (batch, heads, seq, head_dim)",
               shape4(n.batch, n.heads, n.seq, n.head_dim));
    *run_bench = bench_switch;
    return n;
}
