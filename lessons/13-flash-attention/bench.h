// bench.h - lesson 13's --bench (bench.c), and the little of
// flash_attention.c it uses.
#ifndef BENCH_H
#define BENCH_H

#include <stdbool.h>
#include <stddef.h>

#include "attention.h"
#include "kernels.h"

// How --bench runs the tiled path: the flags it takes.
typedef struct {
    bool causal;
    int block_q, block_k;      // --block-q, --block-k
    int threads;               // --threads
    const Kernels *kernels;    // --kernels
    bool long_sweep;           // --long: every case in as many rounds as the shortest
} BenchRun;

// In flash_attention.c. One run of each path on (query, key, value): its
// output (B, H, N, D), and in *extra the memory it allocated besides.
const Tensor *tiled_run(size_t *extra, const BenchRun *run, const Tensor *query,
                        const Tensor *key, const Tensor *value);
const Tensor *naive_run(size_t *extra, bool causal, const Tensor *query, const Tensor *key,
                        const Tensor *value);
// The naive path's extra memory: (B, H, N, N) scores, scaled scores,
// (causal) masked scores and weights, and (causal) three (N, N) masks. It
// runs only when that is at most NAIVE_MAX_MIB.
#define NAIVE_MAX_MIB 256
double naive_bytes(double B, double H, double N, bool causal);
// What a tile (a block of queries against a block of keys) costs beyond
// its pairs' work at this head_dim, in ns (the budget's price).
double tile_ns(int head_dim);

// In bench.c.
// --kernels NAME as a table ("auto": what ATTN_KERNELS names, else the
// fastest this CPU runs), or exit 2 naming what this CPU lacks; a bad
// ATTN_KERNELS is refused whatever --kernels says (common/speed/choice.h).
const Kernels *check_kernels(const Lesson *lesson, const char *name);
// --bench times its own sizes: the shape flags are refused, and so are
// block sizes, kernels or threads with which it could not finish within
// its budget (memory: lesson/budget.h; time: bench_seconds). Sets its own
// block sizes where --block-q and --block-k are not given (speed/blocks.h).
void check_bench(const Lesson *lesson, BenchRun *settings);
// The processor seconds --bench with these settings is estimated to take
// (all its threads), from the work of its cases at fixed prices for each
// kernel set: the same on every machine with that set, and no run timed.
double bench_seconds(const BenchRun *settings);
void bench(const BenchRun *settings);

#endif
