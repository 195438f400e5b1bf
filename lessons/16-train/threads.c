// threads.c - --threads N: a training step's matrix products shared among N threads, the
// same bits for any N.
//
// WHY THE BITS CANNOT CHANGE
//   kernels->gemm computes every element of c as its own sum, over p = 0, 1, ..., k-1 in
//   order, each product rounded, then added (kernels.h): no element's sum is ever split,
//   whatever the kernel set (the vector kernels give the scalar loop's bits, for any number
//   of rows: the tests check it). So the rows of c can be dealt out to threads, each thread
//   calling the same kernel on its own rows: every element is still computed by exactly the
//   same operations, in the same order, as on one thread. What a split of the sum over p
//   would change (the order of the additions, so the last bits: lesson 14 splits nothing for
//   that reason) never happens here. Each thread writes only its own rows of c and reads a
//   and b, which no thread writes: there is nothing to race on.
//
// WHAT IS SHARED, WHAT IS NOT
//   Only the products (every Linear's forward and its two backward products, attention's
//   products of each head, through threads_gemm in layers.c). They are most of a step's
//   arithmetic (train.c: step_multiply_adds). Everything else (softmax, silu, the norms,
//   AdamW, the elementwise passes, clipping's norm) stays on one thread: short next to the
//   products, and clipping's norm and the sums are reductions whose order is PyTorch's.
//   A product of fewer than MIN_SHARED_WORK multiply-adds (attention's, one head at a time,
//   at the lesson's sizes) stays on the calling thread too: too small to be worth waking the
//   workers for (the threshold is a round number, not a measured one).
//
// THE POOL
//   The workers are started once (threads_start) and wait on a condition variable; each
//   product is a new "generation": the calling thread writes the product into `pool.job`,
//   counts the generation up and wakes them all; each worker computes its share, counts
//   `pool.pending` down, and the last one wakes the caller, which has done share 0 meanwhile.
//   The mutex orders it all: what the caller wrote before waking the workers is what they
//   read, and what they wrote before counting down is what the caller reads after. Starting
//   threads for every product instead (as lesson 13 starts its workers for each forward) would
//   create and join them 45 times a step at the lesson's sizes (87 at --bench's larger
//   model: every Linear's 3 products, lm_head's too).
//   If the system refuses a thread, the ones started share the products among themselves.
//
// The budget (train.c: steps_cost) prices a step as on one thread: the safe side.
#define _POSIX_C_SOURCE 200809L   // pthreads

#include "threads.h"

#include <pthread.h>
#include <stdlib.h>

#include "kernels.h"

// One product: kernels->gemm's arguments (kernels.h), and how many shares it is cut into.
typedef struct {
    void (*gemm)(float *c, int ldc, const float *a, int a_row, int a_col, const float *b,
                 int ldb, int m, int n, int k, bool accumulate);
    float *c;
    const float *a, *b;
    int ldc, a_row, a_col, ldb, m, n, k;
    bool accumulate;
    int block;    // the kernel's rows at once: every share starts at a multiple of it
    int shares;   // share 0 is the caller's, share w is worker w's (1 .. shares-1)
} Product;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t product_ready;   // the caller to the workers: a new generation
    pthread_cond_t shares_done;     // the last worker to finish its share, to the caller
    pthread_t workers[MAX_THREADS];
    int started;            // workers running (worker w = 1 .. started is workers[w])
    int limit;              // the threads a product may use (threads_limit), 1 .. started + 1
    unsigned long generation;   // counts the products; a worker waits for it to move
    unsigned long born;     // the generation when the workers were started
    int pending;            // the workers whose share of this generation is not done yet
    bool stopping;          // threads_stop: the workers return
    Product job;            // this generation's product
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
          .limit = 1};

void share_rows(int *first, int *end, int m, int block, int share, int shares) {
    int blocks = (m + block - 1) / block;
    int each = blocks / shares, extra = blocks % shares;   // the first `extra` get one more
    int start = share * each + (share < extra ? share : extra);
    int count = each + (share < extra ? 1 : 0);
    *first = start * block < m ? start * block : m;
    *end = (start + count) * block < m ? (start + count) * block : m;
}

// Share `share` of the product: its rows of c, by the same kernel as one thread would call.
static void compute_share(const Product *p, int share) {
    int first, end;
    share_rows(&first, &end, p->m, p->block, share, p->shares);
    if (first < end) {
        p->gemm(p->c + (long)first * p->ldc, p->ldc, p->a + (long)first * p->a_row, p->a_row,
                p->a_col, p->b, p->ldb, end - first, p->n, p->k, p->accumulate);
    }
}

// A worker: wait for a new generation, compute its share (if the product has one for it),
// count down; until threads_stop.
static void *work(void *arg) {
    int me = (int)(long)arg;   // 1 .. started
    pthread_mutex_lock(&pool.lock);
    // Not pool.generation: the caller may have handed out a product before this thread
    // first got the lock, and that product has a share for it.
    unsigned long seen = pool.born;
    for (;;) {
        while (pool.generation == seen && !pool.stopping) {
            pthread_cond_wait(&pool.product_ready, &pool.lock);
        }
        if (pool.stopping) {
            break;
        }
        seen = pool.generation;
        Product job = pool.job;
        if (me >= job.shares) {   // a product cut into fewer shares than threads
            continue;
        }
        pthread_mutex_unlock(&pool.lock);
        compute_share(&job, me);
        pthread_mutex_lock(&pool.lock);
        pool.pending -= 1;
        if (pool.pending == 0) {
            pthread_cond_signal(&pool.shares_done);
        }
    }
    pthread_mutex_unlock(&pool.lock);
    return NULL;
}

void threads_stop(void) {
    pthread_mutex_lock(&pool.lock);
    pool.stopping = true;
    pthread_cond_broadcast(&pool.product_ready);
    pthread_mutex_unlock(&pool.lock);
    for (int w = 1; w <= pool.started; w++) {
        pthread_join(pool.workers[w], NULL);
    }
    pool.started = 0;
    pool.limit = 1;
    pool.stopping = false;
}

int threads_start(int threads) {
    static bool registered = false;
    if (!registered) {   // a run that fails part-way (exit 1) still joins its workers
        atexit(threads_stop);
        registered = true;
    }
    threads_stop();
    threads = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
    pool.born = pool.generation;
    // A worker's stack holds a kernel's registers and a few locals: 1 MiB, not the system's
    // default (often 8 MiB of address space a thread).
    pthread_attr_t attributes;
    bool sized = pthread_attr_init(&attributes) == 0;
    if (sized) {
        pthread_attr_setstacksize(&attributes, (size_t)1 << 20);
    }
    while (pool.started + 1 < threads &&
           pthread_create(&pool.workers[pool.started + 1], sized ? &attributes : NULL, work,
                          (void *)(long)(pool.started + 1)) == 0) {
        pool.started += 1;
    }
    if (sized) {
        pthread_attr_destroy(&attributes);
    }
    pool.limit = pool.started + 1;
    return pool.limit;
}

void threads_limit(int n) {
    pool.limit = n < 1 ? 1 : n > pool.started + 1 ? pool.started + 1 : n;
}

void threads_gemm(float *c, int ldc, const float *a, int a_row, int a_col, const float *b,
                  int ldb, int m, int n, int k, bool accumulate) {
    int block = kernels->row_block, blocks = (m + block - 1) / block;
    int shares = pool.limit < blocks ? pool.limit : blocks;   // no more shares than blocks
    if (shares <= 1 || (double)m * n * k < MIN_SHARED_WORK) {
        kernels->gemm(c, ldc, a, a_row, a_col, b, ldb, m, n, k, accumulate);
        return;
    }
    Product job = {kernels->gemm, c, a, b, ldc, a_row, a_col, ldb, m, n, k, accumulate, block,
                   shares};
    pthread_mutex_lock(&pool.lock);
    pool.job = job;
    pool.pending = shares - 1;
    pool.generation += 1;
    pthread_cond_broadcast(&pool.product_ready);
    pthread_mutex_unlock(&pool.lock);
    compute_share(&job, 0);
    pthread_mutex_lock(&pool.lock);
    while (pool.pending > 0) {
        pthread_cond_wait(&pool.shares_done, &pool.lock);
    }
    pthread_mutex_unlock(&pool.lock);
}
