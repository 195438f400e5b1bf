// threads.h - --threads N: a step's matrix products (all but the smallest: MIN_SHARED_WORK)
// shared among N threads by rows of their output, with the same bits for any N (threads.c
// says why they cannot change).
#ifndef THREADS16_H
#define THREADS16_H

#include <stdbool.h>

#define MAX_THREADS 64   // --threads goes from 1 to this

// Start the pool: `threads` in all, this thread among them, so threads - 1 workers, started
// once and left waiting for products. Returns the threads the products will use: fewer if
// the system refused to start a worker (the others then take its share). A pool already
// running is stopped first.
int threads_start(int threads);
// End the workers and join them (called at the end of a run; exit() calls it too).
void threads_stop(void);
// Let the products use at most n of the pool's threads (bench.c times 1 against all of them);
// threads_start uses all.
void threads_limit(int n);

// kernels->gemm (kernels.h: its arguments and the order of its sums), the rows of c shared
// among the pool's threads, each thread calling kernels->gemm on its own rows: share_rows
// says which. A product of fewer than MIN_SHARED_WORK multiply-adds stays on this thread.
void threads_gemm(float *c, int ldc, const float *a, int a_row, int a_col, const float *b,
                  int ldb, int m, int n, int k, bool accumulate);
enum { MIN_SHARED_WORK = 65536 };

// The rows [*first, *end) of m that share `share` (0 .. shares-1) of `shares` takes: whole
// blocks of `block` rows (the last block of m may be shorter), dealt out in order, as evenly
// as they go (two shares differ by one block at most). With more shares than blocks, the
// last shares are empty (*first == *end).
void share_rows(int *first, int *end, int m, int block, int share, int shares);

#endif
