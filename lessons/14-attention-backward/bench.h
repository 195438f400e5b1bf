// bench.h - lesson 14's --bench (bench.c), and the little of
// attention_backward.c it uses.
#ifndef BENCH_H
#define BENCH_H

#include <stdbool.h>
#include <stddef.h>

#include "attention.h"
#include "kernels.h"

// How --bench runs the tiled path: its mask, blocks, kernels and threads.
typedef struct {
    bool causal;
    int block_q, block_k;
    const Kernels *kernels;
    int threads;   // the tiled backward's workers (--threads); the forward runs on one
} BenchRun;

// What one run of the tiled backward counted.
typedef struct {
    double flops;     // the FLOPs it did
    size_t blocks;    // the bytes of one worker's blocks (K_j^T, V_j^T, Q_i / sqrt(D), P, dS)
    size_t delta;     // the bytes of one worker's delta: N floats
    int workers;      // the threads that shared it: min(--threads, heads), each with both
} TiledCounts;

// In attention_backward.c (appendix A), on query, key, value and grad_out
// (1, H, N, D) each, a key/value head per query head:
// the tiled forward: out (1, H, N, D), and *lse (1, H, N);
const Tensor *bench_tiled_forward(Tensor **lse, const BenchRun *run, const Tensor *query,
                                  const Tensor *key, const Tensor *value);
// one run of the tiled backward on run->threads threads: query.grad, key.grad and
// value.grad in grads[0..2], and what it counted;
void bench_tiled_backward(Tensor **grads, TiledCounts *counts, const BenchRun *run,
                          const Tensor *query, const Tensor *key, const Tensor *value,
                          const Tensor *out, const Tensor *lse, const Tensor *grad_out);
// the standard forward (lesson 13's naive path), which keeps P (1, H, N, N);
const Tensor *standard_attention(const Tensor **P, const Tensor *query, const Tensor *key,
                                 const Tensor *value, bool causal);
// one run of the standard backward as the lesson's loops run it, from that P;
void bench_loops_backward(Tensor **grads, const Tensor *P, const Tensor *query,
                          const Tensor *key, const Tensor *value, const Tensor *grad_out);
// what the standard backward holds besides the gradients: P, dP and dS, (B, H, N, N) each.
size_t standard_extra_bytes(int B, int H, int N);

// In bench.c. --bench: the tiled backward against the loops, on one core, at
// its own sizes (seq: one of them, if --seq is given; blocks of block_q x
// block_k); with threads > 1 the tiled backward runs on that many threads and
// on one, in the same rounds. The flags it cannot take are refused first, then
// the runs it estimates it could not finish within its budget (lesson/budget.h).
void bench(const Lesson *lesson, int seq, int block_q, int block_k, int threads);

#endif
