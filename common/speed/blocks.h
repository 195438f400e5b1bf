// blocks.h - the block sizes lessons 13's and 14's --bench use on the core
// they run on, and why.
//
// A tiled kernel's speed depends on its blocks (Bq queries by Bk keys): how
// much of the work is FMAs against the exp and the bookkeeping of each tile,
// and whether a block's scores, keys and values stay in the core's L2
// cache. Which blocks are best differs between cores, with their FMA units'
// width and their caches, so --bench picks them from what CPUID says the
// core is (speed/cpu.h: vendor, family, model, L2), by the table in
// blocks.c: a row for each kind of core the blocks were measured on, with
// the reason, and a fallback for the rest. --block-q and --block-k still
// choose any blocks; every block size gives the same bits with every kernel
// set (the blocks change the order of the online softmax's rescaling, not
// which set computes it).
//
// The lessons' ordinary runs keep their own defaults (64 x 64 in lesson 13,
// 2 x 2 in lesson 14), which their pages' printed tiles and maps show.
#ifndef SPEED_BLOCKS_H
#define SPEED_BLOCKS_H

#include "speed/cpu.h"

typedef struct {
    int forward_q, forward_k;     // lesson 13's --bench: the tiled forward's Bq x Bk
    int backward_q, backward_k;   // lesson 14's --bench: the tiled backward's
    bool sums_apart;              // lesson 13's AVX-512 accumulate: the softmax's sums in a
                                  // pass of their own, not in its register tiles
    const char *core;             // the row that chose them: "AMD Zen 4", ...
    const char *why;              // why that core wants them, in a sentence or two
} BenchBlocks;

// The blocks for `core` running kernels of `lanes` floats a register (16:
// AVX-512, 8: AVX2, 1: the scalar twins). A pure function of its arguments
// (the tests give it cores this machine is not).
BenchBlocks bench_blocks(const Core *core, int lanes);
// The same for the core this runs on (this_core()).
BenchBlocks bench_blocks_here(int lanes);

// What a bench prints of its blocks, Bq x Bk, wrapped to 100 columns: the
// row that chose them and why, when they are `chosen_q` x `chosen_k`;
// else that the flags chose them, and what the row would have.
void print_bench_blocks(int block_q, int block_k, int chosen_q, int chosen_k,
                        const BenchBlocks *row);

#endif
