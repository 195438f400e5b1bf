// bench.c - lesson 14's --bench: an appendix to attention_backward.c. It
// times the backward alone, both ways, on one core: the standard backward
// (P kept, as autograd keeps it) run by the lesson's plain loops, and
// FlashAttention-2's tiled backward. Each is handed its forward's output
// (and the loops their P), made once a case. With --threads N the tiled
// backward runs on N threads and on one in every round, and the two are
// compared: their times, and their gradients bit for bit; the loops are
// left out then (--bench alone runs them).
//
// Each case runs both backwards in turns, the tiled one until it has had a
// second (3 to 10 runs), the loops 3 times (2 when a run takes over a
// second), and keeps each one's best time. The table prints the spread of
// the runs too (slowest / best - 1; a case's first run is often its
// slowest, so the spread alone is no measure of load). Whether other
// programs took this core, the remarks say (common/speed/timing.h: the
// processor time this thread got during its runs against the time they
// took, and how slow each case's median run was). Then the cases' lines,
// one each:
//     bench seq=2048 causal=0 loops_ms=... tiled_ms=... tiled_gflops=...
//           standard_extra_mib=... tiled_extra_mib=...
// (with --threads N, `threads=N` after causal=, and tiled_ms is the time on N threads).
//
// The clocks, the runs' best and spread, that verdict and the FMA peak are
// common/speed/'s, shared with lessons 13 and 16.

#include "bench.h"

#define _POSIX_C_SOURCE 200809L   // sysconf

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "speed/blocks.h"
#include "speed/cpu.h"
#include "speed/peak.h"
#include "speed/timing.h"

#define BENCH_HEADS 8
#define BENCH_HEAD_DIM 64
#define BENCH_REPEATS 3        // each case runs at least this many times, the paths taking turns,
#define BENCH_MAX_REPEATS 10   // ... and again while the tiled path has had less than
#define BENCH_MIN_SECONDS 1.0  //     a second, up to 10 times;
#define BENCH_SLOW_MS 1000.0   // the loops 3 times at most, twice if a run takes longer
#define BENCH_MAX_SEQ 16384    // --bench --seq beyond this would take minutes a run
#define GOAL_PEAK 0.75         // the tiled backward's share of the FMA peak at seq 2048, and
#define GOAL_THREADS 1.7       // two threads on two cores against one, without the mask
                               // (issue 36's goals)

static double mib(double bytes) {
    return bytes / (1024.0 * 1024.0);
}

// One core's FMA peak in GFLOP/s with the kernels' own registers, best of 5
// (common/speed/peak.h); 0 for the scalar twins: their fmaf is a call into
// libm, not one instruction, and no peak of the core.
static double fma_peak_of(const Kernels *kernels) {
    return kernels->lanes > 1 ? fma_peak(kernels->name, false, 5) : 0.0;
}

// --- one case: the two backwards at one seq, causal or not ---

typedef struct {
    int seq;
    bool causal;
    Timing loops, tiled;      // loops.runs == 0: not run (its P would not fit, or --threads)
    Timing tiled_one;         // the tiled backward on one thread (--threads N > 1)
    TiledCounts counts;       // the tiled backward's FLOPs, blocks, delta, workers
    size_t standard_extra, tiled_extra;
    float diff;               // max |tiled - loops| over the three gradients
    bool same_bits;           // one thread's gradients are N threads', bit for bit
} BenchCase;

// The tiled backward's time on one thread: tiled_one when it also ran on more.
static const Timing *one_thread(const BenchCase *c, int threads) {
    return threads > 1 ? &c->tiled_one : &c->tiled;
}

// The cores N threads run on: N, or as many as the machine has; and no more
// than the bench's units of work, its 8 heads (more threads are not started).
static int cores_used(int threads) {
    threads = threads < BENCH_HEADS ? threads : BENCH_HEADS;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 0 && cores < threads ? (int)cores : threads;
}

// The standard forward's P (1, H, N, N), as autograd keeps it: lesson 13's
// naive path run one head at a time, its scores and their copies freed
// after each head, so that the bench holds what it reports (P, dP and dS).
static const Tensor *standard_P(const Tensor *query, const Tensor *key, const Tensor *value,
                                bool causal) {
    int H = size(query, 1), N = size(query, 2);
    Tensor *P = zeros(shape4(1, H, N, N));                                     // (1, H, N, N)
    for (int h = 0; h < H; h++) {
        size_t mark = arena_mark();
        const Tensor *P_h;                                                     // (1, 1, N, N)
        standard_attention(&P_h, narrow(query, 1, h, 1), narrow(key, 1, h, 1),
                           narrow(value, 1, h, 1), causal);
        memcpy(at4(P, 0, h, 0, 0), at4(P_h, 0, 0, 0, 0), (size_t)N * N * sizeof(float));
        arena_release(mark);
    }
    return P;
}

static float max_diff(Tensor *const *a, Tensor *const *b) {
    return fmaxf(fmaxf(max_abs_diff(a[0], b[0]), max_abs_diff(a[1], b[1])),
                 max_abs_diff(a[2], b[2]));
}

// The three gradients equal bit for bit (all of them made contiguous by the backward).
static bool same_bits(Tensor *const *a, Tensor *const *b) {
    for (int i = 0; i < 3; i++) {
        if (numel(a[i]) != numel(b[i]) ||
            memcmp(a[i]->data + a[i]->offset, b[i]->data + b[i]->offset,
                   (size_t)numel(a[i]) * sizeof(float)) != 0) {
            return false;
        }
    }
    return true;
}

static void bench_case(BenchCase *c, Shares *shares, int N, const BenchRun *run, uint64_t seed) {
    size_t mark = arena_mark();
    manual_seed(seed);
    Shape shape = shape4(1, BENCH_HEADS, N, BENCH_HEAD_DIM);
    const Tensor *query = randn(shape), *key = randn(shape), *value = randn(shape);
    const Tensor *grad_out = randn(shape);
    Tensor *lse;
    const Tensor *out = bench_tiled_forward(&lse, run, query, key, value);
    // The loops run where their P fits, and on one thread only: with --threads the rounds
    // go to the tiled backward on one thread and on N (the loops would double the bench).
    bool fits = (double)BENCH_HEADS * N * N <= (double)MAX_ELEMENTS && run->threads == 1;
    const Tensor *P = fits ? standard_P(query, key, value, run->causal) : NULL;
    *c = (BenchCase){.seq = N, .causal = run->causal,
                     .standard_extra = standard_extra_bytes(1, BENCH_HEADS, N), .diff = NAN,
                     .same_bits = true};
    BenchRun one = *run;      // with --threads N > 1, the same on one thread in every round
    one.threads = 1;
    bool both = run->threads > 1;
    Tensor *tiled_grads[3];   // the first run's, kept; later runs' are freed
    double spent = 0.0;       // seconds the tiled path has run on one thread
    for (int r = 0; r < BENCH_REPEATS || (spent < BENCH_MIN_SECONDS && r < BENCH_MAX_REPEATS);
         r++) {
        size_t run_mark = arena_mark();
        Tensor *grads[3];
        // On several threads, the time on the wall: this thread's processor time
        // would miss the others' (timing.h), and its share is not counted.
        Instant start = now_instant();
        bench_tiled_backward(grads, &c->counts, run, query, key, value, out, lse, grad_out);
        double seconds = both ? now_seconds() - start.wall : seconds_since(shares, start);
        add_time(&c->tiled, seconds * 1e3);
        c->tiled_extra = (size_t)c->counts.workers * (c->counts.blocks + c->counts.delta) +
                         (size_t)numel(lse) * sizeof(float);
        if (r == 0) {
            memcpy(tiled_grads, grads, sizeof grads);
        } else {   // every run on N threads, and (below) on one: the first run's bits
            c->same_bits = c->same_bits && (!both || same_bits(grads, tiled_grads));
            arena_release(run_mark);
        }
        if (both) {
            size_t one_mark = arena_mark();
            TiledCounts unused;
            start = now_instant();
            bench_tiled_backward(grads, &unused, &one, query, key, value, out, lse, grad_out);
            seconds = seconds_since(shares, start);
            add_time(&c->tiled_one, seconds * 1e3);
            c->same_bits = c->same_bits && same_bits(grads, tiled_grads);
            arena_release(one_mark);
        }
        spent += seconds;
        if (fits && r < BENCH_REPEATS && (r < 2 || c->loops.best < BENCH_SLOW_MS)) {
            run_mark = arena_mark();   // every run's gradients, dP and dS freed once compared
            start = now_instant();
            bench_loops_backward(grads, P, query, key, value, grad_out);
            add_time(&c->loops, seconds_since(shares, start) * 1e3);
            if (r == 0) {
                c->diff = max_diff(tiled_grads, grads);
            }
            arena_release(run_mark);
        }
    }
    arena_release(mark);
}

static double bench_flops(int N, bool causal) {   // 10*B*H*N*N*D, causal 5*B*H*N*(N+1)*D
    double HND = (double)BENCH_HEADS * N * BENCH_HEAD_DIM;
    return causal ? 5.0 * HND * (N + 1.0) : 10.0 * HND * N;
}

// --- the table and what it says ---

static void print_table(const BenchCase *cases, int n_cases, double peak, int threads) {
    printf("  seq causal loops ms spread tiled ms spread speedup GFLOP/s  %%peak P+dP+dS MiB "
           "tiled MiB max|diff|\n");
    for (int i = 0; i < n_cases; i++) {
        const BenchCase *c = &cases[i];
        double gflops = bench_flops(c->seq, c->causal) / (c->tiled.best * 1e6);
        printf("%5d %6d", c->seq, c->causal);
        if (c->loops.runs > 0) {
            printf(" %8.1f %5.0f%%", c->loops.best, 100.0 * spread(&c->loops));
        } else {
            printf(" %8s %6s", "-", "");
        }
        printf(" %8.1f %5.0f%%", c->tiled.best, 100.0 * spread(&c->tiled));
        if (c->loops.runs > 0) {
            printf(" %6.1fx", c->loops.best / c->tiled.best);
        } else {
            printf(" %7s", "-");
        }
        if (peak > 0.0) {
            printf(" %7.1f %5.1f%%", gflops, 100.0 * gflops / (peak * cores_used(threads)));
        } else {
            printf(" %7.1f %6s", gflops, "-");
        }
        if (c->loops.runs > 0) {
            printf(" %11.1f %9.2f %9.1e\n", mib(c->standard_extra), mib(c->tiled_extra),
                   c->diff);
        } else {
            printf(" %11s %9.2f %9s\n", "-", mib(c->tiled_extra), "-");
        }
    }
}

static const char *verdict(double measured, double goal) {
    return measured >= goal ? "met" : "missed";
}

// The goals at seq 2048 (issue 36): one thread at GOAL_PEAK of the peak, and
// two threads on two cores GOAL_THREADS times as fast as one, both without the
// mask. The second is judged only where it can be: --threads 2, two cores.
static void print_goals(const BenchCase *plain, double peak, int threads) {
    if (peak > 0.0) {
        double share = bench_flops(2048, false) / (one_thread(plain, threads)->best * 1e6) / peak;
        printf("- the goal at seq 2048: the tiled backward at %.0f%% of the peak or more, "
               "without the mask: %s.\n", 100 * GOAL_PEAK, verdict(share, GOAL_PEAK));
    }
    printf("- the goal at seq 2048: two threads at least %.1fx one, without the mask: ",
           GOAL_THREADS);
    if (threads == 2 && cores_used(2) == 2) {
        double faster = plain->tiled_one.best / plain->tiled.best;
        printf("%.2fx, %s.\n", faster, verdict(faster, GOAL_THREADS));
    } else {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        printf("not judged\n  (it is for --threads 2 on two cores; this run: %d thread%s, %ld "
               "core%s online).\n", threads, threads > 1 ? "s" : "", cores, cores == 1 ? "" : "s");
    }
}

static void print_remarks(const BenchCase *cases, int n_seqs, double peak, int threads,
                          const Shares *shares) {
    printf("what the numbers say:\n");
    const BenchCase *last = &cases[2 * n_seqs - 2];   // seq 2048 if it ran, else the largest
    for (int i = 0; i < n_seqs; i++) {
        last = cases[2 * i].seq == 2048 ? &cases[2 * i] : last;
    }
    if (peak > 0.0) {
        printf("- tiled: %.0f%% of the measured peak at seq %d%s: its five products are FMAs;\n"
               "  the exp, delta, the copies of K_j and V_j and the edges of the tiles are not.\n",
               100.0 * bench_flops(last->seq, false) / (one_thread(last, threads)->best * 1e6) /
                   peak, last->seq, threads > 1 ? ", on one thread" : "");
    }
    if (threads > 1) {
        const BenchCase *causal = last + 1;
        bool same = true;
        for (int i = 0; i < 2 * n_seqs; i++) {
            same = same && cases[i].same_bits;
        }
        printf("- %d threads on %d core%s against one, at seq %d: %.2fx without the mask, %.2fx "
               "with it\n  (the rounds varied by up to %.0f%%). %s\n", threads,
               cores_used(threads), cores_used(threads) > 1 ? "s" : "", last->seq,
               last->tiled_one.best / last->tiled.best,
               causal->tiled_one.best / causal->tiled.best,
               100 * fmax(spread(&last->tiled) + spread(&last->tiled_one),
                          spread(&causal->tiled) + spread(&causal->tiled_one)),
               same ? "The same gradients either way, bit for bit, in every round."
                    : "NOT the same gradients in every round: a bug.");
    }
    if (last->seq == 2048) {
        print_goals(last, peak, threads);
    }
    if (threads > 1) {
        printf("- tiled: its blocks stay %.1f KiB a thread at any seq; with lse (4 bytes a query) "
               "and each\n  thread's delta (4 bytes a query of one head), its %d threads need "
               "%.2f MiB at seq %d.\n", last->counts.blocks / 1024.0, last->counts.workers,
               mib(last->tiled_extra), last->seq);
    } else {
        printf("- tiled: its blocks stay %.1f KiB at any seq; with lse and delta (4 bytes a query) "
               "it needs\n  %.2f MiB at seq %d.\n", last->counts.blocks / 1024.0,
               mib(last->tiled_extra), last->seq);
    }
    for (int i = 0; i < n_seqs; i++) {
        const BenchCase *full = &cases[2 * i], *causal = &cases[2 * i + 1];
        if (full->loops.runs > 0 && (i + 1 == n_seqs || cases[2 * i + 2].loops.runs == 0)) {
            printf("- the standard backward, seq %d: it keeps P and makes dP and dS, (B, H, N, N) "
                   "each:\n  %.0f MiB, 4x more each time seq doubles; it does 4 of the 5 "
                   "products (P is kept, not\n  recomputed). The lesson's loops run it in plain "
                   "C: a reference to check against, not a\n  contender.\n", full->seq,
                   mib(full->standard_extra));
        }
        if (i + 1 == n_seqs) {
            printf("- causal, seq %d: the tiled backward skips the tiles above the diagonal "
                   "and took %.2f of the time\n  it took without the mask, for %.2f of its "
                   "FLOPs (the tiles on the diagonal computed in full).\n", full->seq,
                   causal->tiled.best / full->tiled.best,
                   causal->counts.flops / full->counts.flops);
        }
    }
    const Timing *timings[30];   // loops, tiled and tiled_one of every case (at most 10)
    int n_timings = 0;
    for (int i = 0; i < 2 * n_seqs; i++) {
        timings[n_timings++] = &cases[i].loops;
        timings[n_timings++] = &cases[i].tiled;
        if (threads > 1) {
            timings[n_timings++] = &cases[i].tiled_one;
        }
    }
    Load load = machine_load(shares, timings, n_timings);
    print_load(stdout, &load);
}

// --- --bench ---

static void refuse_with_bench(const Lesson *lesson);
static Cost bench_cost(const int *seqs, int n_seqs, const BenchRun *run);

void bench(const Lesson *lesson, int seq, int block_q, int block_k, int threads) {
    if (flag_given(lesson, "--seq") && seq > BENCH_MAX_SEQ) {
        usage_error(lesson, "--bench --seq %d: the tiled backward alone would take minutes a "
                    "run; --bench takes --seq up to %d", seq, BENCH_MAX_SEQ);
    }
    refuse_with_bench(lesson);
    BenchRun run = {false, block_q, block_k, kernels_best(), threads};
    // Its blocks, unless given: the row of speed/blocks.h's table for this core.
    BenchBlocks row = bench_blocks_here(run.kernels->lanes);
    run.block_q = flag_given(lesson, "--block-q") ? block_q : row.backward_q;
    run.block_k = flag_given(lesson, "--block-k") ? block_k : row.backward_k;
    const int default_seqs[] = {512, 1024, 2048, 4096, 8192};
    int n_seqs = flag_given(lesson, "--seq") ? 1 : 5;
    const int *seqs = flag_given(lesson, "--seq") ? &seq : default_seqs;
    check_budget(lesson, bench_cost(seqs, n_seqs, &run));
    char on[24] = "one thread";
    if (threads > 1) {
        snprintf(on, sizeof on, "%d threads", threads);
    }
    printf("-- bench: the backward, batch 1, %d heads, head_dim %d, blocks of %d x %d, %s --\n",
           BENCH_HEADS, BENCH_HEAD_DIM, run.block_q, run.block_k, on);
    printf("kernels: %s (picked at run time; ATTN_KERNELS=scalar, avx2 or avx512 chooses: the "
           "same bits)\n", run.kernels->name);
    describe_cpu();
    print_bench_blocks(run.block_q, run.block_k, row.backward_q, row.backward_k, &row);
    double peak = fma_peak_of(run.kernels);
    BenchCase cases[10];
    Shares shares = {0.0, 0.0};
    for (int i = 0; i < n_seqs; i++) {
        for (int causal = 0; causal < 2; causal++) {
            run.causal = causal;
            bench_case(&cases[2 * i + causal], &shares, seqs[i], &run, lesson->seed);
        }
    }
    double peak_after = fma_peak_of(run.kernels);   // the machine may be shared: keep the higher
    peak = peak_after > peak ? peak_after : peak;
    if (peak > 0.0) {
        printf("FMA peak of this core, measured: 12 independent chains of FMAs, %.1f GFLOP/s\n",
               peak);
    } else {
        printf("FMA peak: not measured with the scalar twins (their fmaf is a call into libm)\n");
    }
    printf("loops: the standard backward (P kept, as autograd keeps it) in the lesson's plain "
           "loops;\ntiled: FlashAttention-2's. Each time is the best of its runs, the two taking "
           "turns: tiled\n%d to %d runs (a second's worth), loops %d (2 when one takes over a "
           "second); spread = slowest\n/ best - 1; GFLOP/s count 10*B*H*N*N*D (causal "
           "5*B*H*N*(N+1)*D), the tiled backward's five\nproducts; P+dP+dS: what the standard "
           "backward holds besides the gradients\n", BENCH_REPEATS, BENCH_MAX_REPEATS,
           BENCH_REPEATS);
    if (threads > 1) {
        printf("tiled, with --threads %d: on %d threads, then on one, in every round (a "
               "second's worth\nof the runs on one thread); %%peak: of %d core%s' peak; the "
               "loops left out (--bench\nwithout --threads runs them)\n",
               threads, threads, cores_used(threads), cores_used(threads) > 1 ? "s" : "");
        if (threads > BENCH_HEADS) {   // the backward's units: (batch row, key/value head)
            printf("  (only %d of them start: it is shared by heads, and there are %d)\n",
                   BENCH_HEADS, BENCH_HEADS);
        }
    }
    print_table(cases, 2 * n_seqs, peak, threads);
    if (threads > 1) {
        printf("the tiled backward on one thread and on %d, the same rounds:\n", threads);
        printf("  seq causal  1 thread ms spread  %4d threads ms spread  faster by\n", threads);
        for (int i = 0; i < 2 * n_seqs; i++) {
            const BenchCase *c = &cases[i];
            printf("%5d %6d %12.1f %5.0f%% %16.1f %5.0f%% %9.2fx\n", c->seq, c->causal,
                   c->tiled_one.best, 100 * spread(&c->tiled_one), c->tiled.best,
                   100 * spread(&c->tiled), c->tiled_one.best / c->tiled.best);
        }
    }
    print_remarks(cases, n_seqs, peak, threads, &shares);
    for (int i = 0; i < 2 * n_seqs; i++) {
        const BenchCase *c = &cases[i];
        double gflops = bench_flops(c->seq, c->causal) / (c->tiled.best * 1e6);
        printf("bench seq=%d causal=%d ", c->seq, c->causal);
        if (threads > 1) {
            printf("threads=%d ", threads);
        }
        if (c->loops.runs > 0) {
            printf("loops_ms=%.1f tiled_ms=%.1f tiled_gflops=%.1f standard_extra_mib=%.1f "
                   "tiled_extra_mib=%.2f\n", c->loops.best, c->tiled.best, gflops,
                   mib(c->standard_extra), mib(c->tiled_extra));
        } else {
            printf("loops_ms=- tiled_ms=%.1f tiled_gflops=%.1f standard_extra_mib=- "
                   "tiled_extra_mib=%.2f\n", c->tiled.best, gflops, mib(c->tiled_extra));
        }
    }
}

// --bench times its own sizes (--seq picks one of them): the other shape flags
// and the files would be ignored, so they are refused.
static void refuse_with_bench(const Lesson *lesson) {
    const char *ignored[] = {"--batch", "--dim", "--heads", "--kv-heads", "--head-dim",
                             "--causal", "--train", "--dump", "--dot", "--heatmap"};
    for (size_t f = 0; f < sizeof ignored / sizeof ignored[0]; f++) {
        if (flag_given(lesson, ignored[f])) {   // --batch 1, or --batch=1
            usage_error(lesson, "--bench times its own sizes (batch 1, 8 heads, head_dim 64, seq "
                        "512 to 8192 or --seq N, causal and not); drop %s", ignored[f]);
        }
    }
}

// --bench's budget. Memory: the largest case's inputs, outputs, the tiled
// path's two sets of gradients (the first run's, kept, and a later run's) and
// its (Bq, Bk) tiles, and where the loops run, P (H, N, N), a run's dP and dS,
// and one head's scores while P is made. Time: the bench's loops are not the
// plain loops whose rates the budget's prices describe (budget.h), so it
// estimates its own seconds, from rates set on one core of an AMD EPYC (Zen 4)
// under load, gcc -O2: the loops at 0.4 ns a multiply-add; the tiled kernels at
// 0.4 ns a multiply-add divided by the floats a register holds (8, 16; the
// scalar twins at 1.1 ns, below), a tile's products taking at least 900 ns (its
// rows are padded to 16: with blocks of 1 query and 1 key the bench's time came
// to 750 to 930 ns a tile at seq 256 and 512 on the Xeon below, 2026-12-07;
// counted by its pairs alone, it took 2 to 4 times its estimate), plus 100 ns a
// visited tile and 0.5 ns an element of P for what is not a product (the exp,
// the copies); the standard forward's P at 0.4 ns a multiply-add of its two
// products and 20 ns an element; fma_peak, 0.2 s. Checked on an Intel Xeon
// (family 6, model 167, gcc 12 -O2, under load): the loops ran at 0.37 ns a
// multiply-add (gcc vectorises none of them: -fopt-info-vec reports 0 loops in
// standard_backward; clang 14 vectorises the dQ, dK loop), the AVX-512 kernels
// faster than estimated (11 ms for an estimated 18 at seq 512), but the scalar
// twins at 1.1 ns a multiply-add, the price they are counted at now (at 0.4,
// ATTN_KERNELS=scalar took up to 5 times its estimate). Each case runs the
// tiled backward at least BENCH_REPEATS times and then while it has run less
// than a second, the loops BENCH_REPEATS times (twice when slow). With
// --threads N > 1 every round runs the tiled backward twice, on N threads and
// on one (as many rounds: they count the one-thread runs' second), and the
// processor time of a run on N threads is counted as one thread's (the same
// work); the first round holds both runs' blocks and delta, one set for each
// of the N-thread run's workers (min(N, 8): one a head) and one for the other.
static Cost bench_cost(const int *seqs, int n_seqs, const BenchRun *run) {
    double H = BENCH_HEADS, D = BENCH_HEAD_DIM, bytes = 0, seconds = 0.2;
    double lanes = run->kernels->lanes;
    double runs = run->threads > 1 ? 2 : 1;                  // tiled runs a round
    double sets = fmin(run->threads, H) + (run->threads > 1);   // blocks and deltas held
    for (int i = 0; i < n_seqs; i++) {
        double N = seqs[i], HNN = H * N * N;
        bool fits = HNN <= (double)MAX_ELEMENTS && run->threads == 1;   // the loops run
        double tiles = H * ceil(N / fmin(run->block_q, N)) * ceil(N / fmin(run->block_k, N));
        double Bq = fmin(run->block_q, N), Bk = fmin(run->block_k, N);
        double tile_products = 5 * Bq * Bk * D * (lanes > 1 ? 0.4e-9 / lanes : 1.1e-9);
        double tiled_run = tiles * (fmax(tile_products, 900e-9) + 100e-9) + HNN * 0.5e-9;
        double loops_run = 4 * HNN * D * 0.4e-9;
        double ldk = 16 * ceil(Bk / 16), set = (2 * D + 2 * Bq) * ldk + Bq * D + N;
        double held = 11 * H * N * D + H * N + 5 * fmin(run->block_q, N) * fmin(run->block_k, N) +
                      (sets - 1) * set +
                      fits * (HNN + fmax(7 * N * N + 2 * N * D, 2 * HNN + 3 * H * N * D));
        bytes = fmax(bytes, 4 * held);
        for (int causal = 0; causal < 2; causal++) {   // the causal case: about half the tiles
            double share = causal ? 0.5 : 1.0;
            seconds += runs * fmax(BENCH_REPEATS * share * tiled_run,
                                   fmin(BENCH_MAX_REPEATS,
                                        1 + BENCH_MIN_SECONDS / (share * tiled_run)) *
                                   share * tiled_run) +
                       fits * (2 * HNN * D * 0.4e-9 + HNN * 20e-9 +
                               (loops_run > BENCH_SLOW_MS * 1e-3 ? 2 : BENCH_REPEATS) * loops_run);
        }
    }
    return (Cost){.bytes = bytes, .kernel_seconds = seconds};
}
