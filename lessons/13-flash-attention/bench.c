// bench.c - lesson 13's --bench: the tiled path against the naive one and
// against the core's own FMA peak.
//
// The machine may be shared, and a single timing can catch another job:
// every case is run in several rounds, interleaved (round 1 of every case,
// then round 2, ...), each figure is the best of its rounds, and the table
// prints how much slower the slowest round was (the spread). The closing
// remarks compare ratios with what is expected, say when the spread is too
// large to conclude, and say whether the machine was busy. Each sequence
// length's rows print as soon as they are measured.
//
// The clocks, the rounds' best, spread and median, the verdict on the
// machine, the FMA peak and the CPU's name are common/speed/'s (timing.h,
// peak.h, cpu.h), shared with lessons 14 and 16; this file has the bench's
// cases, its table and what it says about them.
#define _POSIX_C_SOURCE 200809L   // clock_gettime, sysconf

#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "speed/blocks.h"
#include "speed/choice.h"
#include "speed/cpu.h"
#include "speed/peak.h"
#include "speed/timing.h"

#define BENCH_HEADS 8
#define BENCH_HEAD_DIM 64
#define TILED_ROUNDS 5        // rounds of every tiled case with --long ...
#define NAIVE_ROUNDS 3        // ... and of every naive one (seconds each at seq 2048)
#define WORTH_SEQ 512         // the kernels compared at this length
#define NOISY 0.10            // a spread above this is too large to read small ratios
static const int BENCH_SEQS[] = {512, 1024, 2048, 4096, 8192};
// Without --long, fewer rounds where a round takes a second or more, so that
// the default run takes under a minute (bench_seconds): of the tiled cases
// at each seq, and of the naive ones (0: it does not run there).
static const int TILED_SHORT[] = {5, 5, 5, 3, 2};
static const int NAIVE_SHORT[] = {3, 2, 1, 0, 0};
enum { N_BENCH_SEQS = sizeof BENCH_SEQS / sizeof BENCH_SEQS[0] };

static double mib(double bytes) {
    return bytes / (1024.0 * 1024.0);
}

// The FLOPs of attention as --bench counts them, 4*B*H*N*N*D: the two
// products, 2 FLOPs a multiply-add; causal, only the scores on or below the
// diagonal, 2*B*H*N*(N+1)*D.
static double attention_flops(int batch, int heads, int seq, int head_dim, bool causal) {
    double BHD = (double)batch * heads * head_dim;
    return causal ? 2.0 * BHD * seq * (seq + 1.0) : 4.0 * BHD * seq * seq;
}

static bool naive_runs_at(int seq) {   // its scores (1, 8, N, N) within the helper's limit
    return (double)BENCH_HEADS * seq * seq <= (double)MAX_ELEMENTS;
}

// The rounds of a tiled and of a naive case at the i-th seq.
static int tiled_rounds(int i, bool long_sweep) {
    return long_sweep ? TILED_ROUNDS : TILED_SHORT[i];
}

static int naive_rounds(int i, bool long_sweep) {
    return !naive_runs_at(BENCH_SEQS[i]) ? 0 : long_sweep ? NAIVE_ROUNDS : NAIVE_SHORT[i];
}

// --- the cases ------------------------------------------------------------------------------

typedef struct {
    int seq;
    bool causal;
    Timing naive, tiled, tiled_one;  // tiled_one: the same on one thread (--threads N > 1)
    size_t naive_extra, tiled_extra;
    float diff;                      // max |out - out_naive|
    double peak;                     // the FMA peak measured in its rounds, the highest
    double peak_low;                 // ... and the lowest
} BenchCase;

// The milliseconds since `start`. A run on this thread alone also adds its
// processor time to *shares (timing.h); one on several threads passes NULL.
static double ms_since(Shares *shares, Instant start) {
    return (shares != NULL ? seconds_since(shares, start) : now_seconds() - start.wall) * 1e3;
}

// One run of a path, timed; its output copied into out (after the clock
// stops) and everything it allocated released.
static double time_tiled(Tensor *out, Shares *shares, const BenchRun *run,
                         const Tensor *const in[3], size_t *extra) {
    size_t mark = arena_mark();
    Instant start = now_instant();
    const Tensor *result = tiled_run(extra, run, in[0], in[1], in[2]);
    double ms = ms_since(run->threads == 1 ? shares : NULL, start);
    memcpy(out->data, result->data, (size_t)numel(out) * sizeof(float));
    arena_release(mark);
    return ms;
}

// The heads the naive path takes at once at this seq: all of them, or half
// as many until what it makes fits NAIVE_MAX_MIB (at seq 2048, causal, the
// eight heads' scores, scaled scores, masked scores and weights, and the
// three (N, N) masks, would take 560 MiB, more than the 512 a whole run may
// hold: lesson/budget.h).
static int naive_heads_at_once(int seq, bool causal) {
    int heads = BENCH_HEADS;
    while (heads > 1 && naive_bytes(1, heads, seq, causal) > NAIVE_MAX_MIB * 1024.0 * 1024.0) {
        heads /= 2;
    }
    return heads;
}

// The naive path, a group of heads at a time; *extra is what one group made.
static double time_naive(Tensor *out, Shares *shares, bool causal, const Tensor *const in[3],
                         size_t *extra) {
    int N = size(in[0], 2), group = naive_heads_at_once(N, causal);
    size_t head = (size_t)N * BENCH_HEAD_DIM;   // floats of one (N, D) head
    double ms = 0.0;
    for (int h = 0; h < BENCH_HEADS; h += group) {
        size_t mark = arena_mark();
        Instant start = now_instant();
        const Tensor *result = contiguous(naive_run(extra, causal, narrow(in[0], 1, h, group),
                                                    narrow(in[1], 1, h, group),
                                                    narrow(in[2], 1, h, group)));
        ms += ms_since(shares, start);
        memcpy(out->data + h * head, result->data, group * head * sizeof(float));
        arena_release(mark);
    }
    return ms;
}

static double case_gflops(const BenchCase *c, double ms) {
    return attention_flops(1, BENCH_HEADS, c->seq, BENCH_HEAD_DIM, c->causal) / (ms * 1e6);
}

// Both causal cases of one sequence length, every round interleaved.
static void measure_seq(BenchCase cases[2], Shares *shares, int i_seq, const BenchRun *settings) {
    int seq = BENCH_SEQS[i_seq];
    size_t mark = arena_mark();
    Shape shape = shape4(1, BENCH_HEADS, seq, BENCH_HEAD_DIM);
    const Tensor *in[3] = {randn(shape), randn(shape), randn(shape)};        // (1, H, N, D)
    Tensor *out = zeros(shape), *out_naive = zeros(shape);                    // (1, H, N, D)
    BenchRun one = *settings;
    one.threads = 1;
    for (int causal = 0; causal < 2; causal++) {
        cases[causal] = (BenchCase){.seq = seq, .causal = causal, .diff = NAN};
    }
    for (int round = 0; round < tiled_rounds(i_seq, settings->long_sweep); round++) {
        // The peak again, in every round: a job that shares the core slows
        // it as much as the runs, so their share of it stays right; and how
        // much it moves says whether one did.
        double peak = fma_peak(fastest_kernels(), false, 1);   // the widest registers'
        for (int causal = 0; causal < 2; causal++) {
            cases[causal].peak = peak > cases[causal].peak ? peak : cases[causal].peak;
            cases[causal].peak_low = round == 0 || peak < cases[causal].peak_low
                                         ? peak : cases[causal].peak_low;
        }
        for (int causal = 0; causal < 2; causal++) {
            BenchCase *c = &cases[causal];
            BenchRun run = *settings;
            run.causal = one.causal = causal;
            add_time(&c->tiled, time_tiled(out, shares, &run, in, &c->tiled_extra));
            if (settings->threads > 1) {
                size_t unused;
                add_time(&c->tiled_one, time_tiled(out, shares, &one, in, &unused));
            }
            if (round < naive_rounds(i_seq, settings->long_sweep)) {
                add_time(&c->naive, time_naive(out_naive, shares, causal, in, &c->naive_extra));
                c->diff = max_abs_diff(out, out_naive);
            }
        }
    }
    arena_release(mark);
}

// The cores N threads run on: N, or as many as the machine has.
static int cores_used(int threads) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 0 && cores < threads ? (int)cores : threads;
}

static void print_row(const BenchCase *c, int threads) {
    char naive[32] = "        -      -";
    if (c->naive.runs == 1) {   // one round: no spread
        snprintf(naive, sizeof naive, "%9.1f      -", c->naive.best);
    } else if (c->naive.runs > 1) {
        snprintf(naive, sizeof naive, "%9.1f %5.0f%%", c->naive.best, 100 * spread(&c->naive));
    }
    double gflops = case_gflops(c, c->tiled.best);
    printf("  %4d %6d %s %9.1f %5.0f%%", c->seq, c->causal, naive, c->tiled.best,
           100 * spread(&c->tiled));
    if (c->naive.runs > 0) {
        printf(" %6.1fx", c->naive.best / c->tiled.best);
    } else {
        printf(" %7s", "-");
    }
    printf(" %8.1f %8.1f%%", gflops, 100 * gflops / (c->peak * cores_used(threads)));
    if (c->naive.runs > 0) {
        printf(" %9.1f", mib((double)c->naive_extra));
    } else {
        printf(" %9s", "-");
    }
    printf(" %9.2f\n", mib((double)c->tiled_extra));
}

// --- what the kernels are worth -----------------------------------------------------------

// The same forward at WORTH_SEQ with each kernel set this CPU has,
// interleaved, best of 3.
static void compare_kernels(const BenchRun *settings) {
    static const char *const names[] = {"avx512", "avx2", "scalar"};
    size_t mark = arena_mark();
    Shape shape = shape4(1, BENCH_HEADS, WORTH_SEQ, BENCH_HEAD_DIM);
    const Tensor *in[3] = {randn(shape), randn(shape), randn(shape)};        // (1, H, N, D)
    Tensor *out = zeros(shape);                                               // (1, H, N, D)
    Timing times[3];
    memset(times, 0, sizeof times);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 3; i++) {
            BenchRun run = *settings;
            run.kernels = kernels_named(names[i]);
            size_t unused;
            if (run.kernels != NULL) {
                add_time(&times[i], time_tiled(out, NULL, &run, in, &unused));
            }
        }
    }
    printf("the same forward with each kernel set this CPU runs (seq %d, not causal, best of 3; "
           "same bits):\n", WORTH_SEQ);
    double fastest = 0.0;
    for (int i = 0; i < 3; i++) {
        if (times[i].runs == 0) {
            continue;
        }
        fastest = fastest > 0.0 ? fastest : times[i].best;
        printf("  %-7s %9.1f ms (spread %3.0f%%), %5.1fx the time of the fastest\n", names[i],
               times[i].best, 100 * spread(&times[i]), times[i].best / fastest);
    }
    arena_release(mark);
}

// --- the remarks ------------------------------------------------------------------------------

// "1.93x, as expected (about 2x)" or why it cannot be read.
static void print_ratio(double measured, double expected, double noise) {
    if (noise > 2 * NOISY) {
        printf("%.2fx; the rounds varied by up to %.0f%%,\n  too much to compare it with the "
               "expected %.1fx", measured, 100 * noise, expected);
    } else if (fabs(measured / expected - 1) <= (noise > NOISY ? noise : NOISY)) {
        printf("%.2fx, as expected (about %.1fx)", measured, expected);
    } else {
        printf("%.2fx, not the expected %.1fx\n  (the rounds varied by up to %.0f%%, less than "
               "that)", measured, expected, 100 * noise);
    }
}

// The goals the kernels are measured against (issue 36), at seq 2048 on one core: this
// share of the FMA peak without the mask and with it, and two threads on two cores at
// least this many times one thread's speed, with and without the mask.
#define GOAL_PEAK 0.88
#define GOAL_PEAK_CAUSAL 0.82
#define GOAL_THREADS 1.85

static const char *verdict(double measured, double goal) {
    return measured >= goal ? "met" : "missed";
}

static void print_goals(const BenchCase *plain, const BenchCase *causal, int threads) {
    const Timing *plain_one = threads > 1 ? &plain->tiled_one : &plain->tiled;
    const Timing *causal_one = threads > 1 ? &causal->tiled_one : &causal->tiled;
    double share = case_gflops(plain, plain_one->best) / plain->peak;
    double share_causal = case_gflops(causal, causal_one->best) / causal->peak;
    printf("- the goals at seq 2048: one thread at %.0f%% of the peak without the mask (goal "
           "%.0f%%: %s),\n  %.0f%% with it (goal %.0f%%: %s)", 100 * share, 100 * GOAL_PEAK,
           verdict(share, GOAL_PEAK), 100 * share_causal, 100 * GOAL_PEAK_CAUSAL,
           verdict(share_causal, GOAL_PEAK_CAUSAL));
    if (threads > 1 && cores_used(threads) == 2) {   // the goal is for two cores
        double faster = plain->tiled_one.best / plain->tiled.best;
        double faster_causal = causal->tiled_one.best / causal->tiled.best;
        printf("; %d threads %.2fx one without the mask\n  (goal %.2fx: %s), %.2fx with it "
               "(%s)", threads, faster, GOAL_THREADS, verdict(faster, GOAL_THREADS),
               faster_causal, verdict(faster_causal, GOAL_THREADS));
    }
    printf(".\n");
}

static void print_remarks(const BenchCase *cases, const BenchRun *settings,
                          const Shares *shares) {
    const BenchCase *plain = &cases[4], *causal = &cases[5];   // seq 2048
    double peak_high = 0.0, peak_low = 1e30;
    const Timing *timings[3 * 2 * N_BENCH_SEQS];   // naive, tiled, tiled_one of every case
    for (int i = 0; i < 2 * N_BENCH_SEQS; i++) {
        peak_high = cases[i].peak > peak_high ? cases[i].peak : peak_high;
        peak_low = cases[i].peak_low < peak_low ? cases[i].peak_low : peak_low;
        timings[3 * i] = &cases[i].naive;
        timings[3 * i + 1] = &cases[i].tiled;
        timings[3 * i + 2] = &cases[i].tiled_one;
    }
    printf("what the numbers say (this machine, this run):\n");
    const Timing *one_thread = settings->threads > 1 ? &plain->tiled_one : &plain->tiled;
    printf("- naive: %.1f GFLOP/s at seq 2048, %.1fx slower than tiled on one thread. The "
           "helper's\n  loops do "
           "one multiply-add at a time, and the (B, H, N, N) scores (%.0f MiB at 2048)\n  go "
           "through memory several times: its extra memory grows 4x each time seq doubles\n  "
           "(at 2048 it takes %d heads at a time, %d with the mask, to stay within %d MiB).\n",
           case_gflops(plain, plain->naive.best), plain->naive.best / one_thread->best,
           mib(BENCH_HEADS * 2048.0 * 2048.0 * sizeof(float)), naive_heads_at_once(2048, false),
           naive_heads_at_once(2048, true), NAIVE_MAX_MIB);
    printf("- tiled: %.0f%% of the core's peak at seq 2048 without the mask, on one thread. "
           "What is\n  not the products keeps it below: the exp2 of every score (its "
           "multiply-adds take\n  the FMA units too), copying each query block, storing the "
           "scores and loading them\n  back. Its extra memory is %.2f MiB at seq 2048, and no "
           "more at any seq.\n", 100 * case_gflops(plain, one_thread->best) / plain->peak,
           mib((double)plain->tiled_extra));
    printf("- causal: a query sees (N+1)/2N of the keys, so about 2x faster is expected; at "
           "seq 2048\n  it is ");
    print_ratio(plain->tiled.best / causal->tiled.best, 2.0 * 2048 / 2049,
                spread(&plain->tiled) + spread(&causal->tiled));
    printf(".\n");
    if (settings->threads > 1) {
        printf("- %d threads on %ld cores against one, at seq 2048: ", settings->threads,
               sysconf(_SC_NPROCESSORS_ONLN));
        print_ratio(plain->tiled_one.best / plain->tiled.best, cores_used(settings->threads),
                    spread(&plain->tiled) + spread(&plain->tiled_one));
        printf(".\n  The same bits either way.\n");
    }
    print_goals(plain, causal, settings->threads);
    float diff = 0.0f;
    for (int i = 0; i < 2 * N_BENCH_SEQS; i++) {
        diff = cases[i].diff > diff ? cases[i].diff : diff;
    }
    printf("- max |out - out_naive| over the cases: %.2g, float rounding.\n", diff);
    Load load = machine_load(shares, timings, 3 * 2 * N_BENCH_SEQS);
    print_load(stdout, &load);
    // A job that has the core for a steady share slows every round alike:
    // the spread misses it; the thread's share of the time (above) and the
    // peak measured in every round do not.
    printf("- the FMA peak, measured again in every round: from %.1f to %.1f GFLOP/s%s\n",
           peak_low, peak_high, (peak_high - peak_low) / peak_high > NOISY
               ? ".\n  It moved: another job had the core part of the time, and the times "
                 "above are slower\n  by as much (their shares of the peak, measured beside "
                 "them, much less so)." : ": steady.");
    if (settings->threads > 1) {
        printf("  It is measured on one core: a job on another core slows the runs on %d "
               "threads\n  and not the peak, so their share of it reads low then.\n",
               settings->threads);
    }
}

// Which blocks this run uses and why: the table's row for this core
// (speed/blocks.h), or the flags that chose others.
static void print_blocks_choice(const BenchRun *settings) {
    BenchBlocks row = bench_blocks_here(settings->kernels->lanes);
    print_bench_blocks(settings->block_q, settings->block_k, row.forward_q, row.forward_k, &row);
}

// --- the bench --------------------------------------------------------------------------------

void bench(const BenchRun *settings) {
    printf("-- bench: batch 1, %d heads, head_dim %d, blocks of %d x %d, %d thread%s, "
           "%s kernels --\n", BENCH_HEADS, BENCH_HEAD_DIM, settings->block_q, settings->block_k,
           settings->threads, settings->threads > 1 ? "s" : "", settings->kernels->name);
    describe_cpu();
    print_blocks_choice(settings);
    // The core's peak: the widest registers it has (AVX-512 and AVX2 where
    // both exist: on some CPUs the same FLOPs a cycle, on others twice).
    printf("FMA peak of one core, 12 independent chains, best of 5 (an FMA is 2 FLOPs a "
           "float):\n ");
    double peak = 0.0;
    for (int i = 0; KERNEL_SETS[i] != NULL; i++) {
        const Kernels *k = kernels_named(KERNEL_SETS[i]);
        if (k != NULL && (k->lanes > 1 || peak == 0.0)) {
            double gflops = fma_peak(k->name, false, 5);
            printf(" %s (%d floats) %.1f GFLOP/s;", k->name, k->lanes, gflops);
            peak = gflops > peak ? gflops : peak;
        }
    }
    printf(" one chain\n  alone %.1f GFLOP/s (each FMA waits for the one before)\n",
           fma_peak(settings->kernels->name, true, 5));

    BenchCase cases[2 * N_BENCH_SEQS];
    Shares shares = {0.0, 0.0};   // the runs on one thread: the time this thread ran
    if (settings->long_sweep) {
        printf("best of %d interleaved rounds (naive: %d)\n", TILED_ROUNDS, NAIVE_ROUNDS);
    } else {
        printf("best of %d interleaved rounds, %d at seq %d, %d at %d (naive: %d, %d and %d at "
               "%d to %d;\n  --long: more)\n", TILED_SHORT[0], TILED_SHORT[3], BENCH_SEQS[3],
               TILED_SHORT[4], BENCH_SEQS[4], NAIVE_SHORT[0], NAIVE_SHORT[1], NAIVE_SHORT[2],
               BENCH_SEQS[0], BENCH_SEQS[2]);
    }
    printf("spread: how much slower the slowest was; of peak: of the FMA peak of %d core%s,\n"
           "  measured again in the same rounds\n", cores_used(settings->threads),
           cores_used(settings->threads) > 1 ? "s" : "");
    printf("   seq causal  naive ms spread  tiled ms spread speedup  GFLOP/s  of peak "
           "naive MiB tiled MiB\n");
    for (int i = 0; i < N_BENCH_SEQS; i++) {
        measure_seq(&cases[2 * i], &shares, i, settings);
        print_row(&cases[2 * i], settings->threads);
        print_row(&cases[2 * i + 1], settings->threads);
        fflush(stdout);
    }
    if (settings->threads > 1) {
        printf("the tiled path on one thread and on %d, the same rounds:\n", settings->threads);
        printf("   seq causal  1 thread ms spread  %2d threads ms spread  faster by\n",
               settings->threads);
        for (int i = 0; i < 2 * N_BENCH_SEQS; i++) {
            const BenchCase *c = &cases[i];
            printf("  %4d %6d %12.1f %5.0f%% %15.1f %5.0f%% %9.2fx\n", c->seq, c->causal,
                   c->tiled_one.best, 100 * spread(&c->tiled_one), c->tiled.best,
                   100 * spread(&c->tiled), c->tiled_one.best / c->tiled.best);
        }
    }
    compare_kernels(settings);
    print_remarks(cases, settings, &shares);
    for (int i = 0; i < 2 * N_BENCH_SEQS; i++) {
        const BenchCase *c = &cases[i];
        printf("bench seq=%d causal=%d threads=%d ", c->seq, c->causal, settings->threads);
        if (c->naive.runs > 0) {
            printf("naive_ms=%.1f ", c->naive.best);
        } else {
            printf("naive_ms=- ");
        }
        printf("tiled_ms=%.1f tiled_gflops=%.1f ", c->tiled.best, case_gflops(c, c->tiled.best));
        if (c->naive.runs > 0) {
            printf("naive_extra_mib=%.1f ", mib((double)c->naive_extra));
        } else {
            printf("naive_extra_mib=- ");
        }
        printf("tiled_extra_mib=%.1f\n", mib((double)c->tiled_extra));
    }
}

// --- the checks before it runs ------------------------------------------------------------

const Kernels *check_kernels(const Lesson *lesson, const char *name) {
    return kernels_named(check_kernels_flag(lesson, "--kernels", name));   // speed/choice.h
}

// --- what it may take --------------------------------------------------------------------

// The prices of the estimate (bench_seconds), in processor ns: a (query, key)
// pair of the tiled path at head_dim 64 (its 128 multiply-adds and its exp2)
// with each kernel set, and a score of the naive path (its 128 multiply-adds
// in the helper's loops, the softmax, the mask). Measured at seq 2048 (the
// scalar twins at 512) with --bench's blocks, one core: on an AMD EPYC (Zen 4,
// family 25 model 17; 2026-11-27, idle) 2.4 ns with AVX-512, 2.9 with AVX2,
// 350 with the scalar twins, 117 a naive score; on an Intel Xeon (family 6,
// model 167; 2026-12-07, with other jobs running) 2.3, 4.9, 258 and 125. Counted
// here at about 1.5x the slower machine's, as every budget price is rounded up.
#define PAIR_NS_AVX512 4.0
#define PAIR_NS_AVX2 6.0
#define PAIR_NS_SCALAR 400.0
#define NAIVE_SCORE_NS 160.0
#define DRAW_NS 40.0           // a draw of randn (the budget's price of an exp)
#define PEAKS_SECONDS 1.0      // the FMA peak: 15 runs at the start, one a round

// One run of the tiled path at seq N on `run`'s kernels and blocks, in
// processor seconds (all its threads): every tile it visits (causal: those
// on or below the diagonal, the diagonal's in full) at its padded width
// times its keys' pairs, plus tile_ns (the call, the running max and sum,
// the rescale), which is most of a run with small blocks.
static double tiled_seconds(const BenchRun *run, int seq, bool causal) {
    double N = seq, Bq = fmin(run->block_q, N), Bk = fmin(run->block_k, N);
    double width = ceil(Bq / KERNEL_COLUMNS) * KERNEL_COLUMNS;
    double q_blocks = ceil(N / Bq), k_blocks = ceil(N / Bk);
    double tiles = BENCH_HEADS * (causal ? (q_blocks * k_blocks + fmin(q_blocks, k_blocks)) / 2
                                         : q_blocks * k_blocks);
    double pair_ns = run->kernels->lanes == 16 ? PAIR_NS_AVX512
                     : run->kernels->lanes == 8 ? PAIR_NS_AVX2 : PAIR_NS_SCALAR;
    return tiles * (width * Bk * pair_ns * BENCH_HEAD_DIM / 64.0 + tile_ns(BENCH_HEAD_DIM)) * 1e-9;
}

double bench_seconds(const BenchRun *settings) {
    BenchRun one = *settings;
    one.threads = 1;
    double seconds = PEAKS_SECONDS;
    for (int i = 0; i < N_BENCH_SEQS; i++) {
        int N = BENCH_SEQS[i];
        seconds += 3.0 * BENCH_HEADS * N * BENCH_HEAD_DIM * DRAW_NS * 1e-9;   // its inputs
        for (int causal = 0; causal < 2; causal++) {
            double tiled = tiled_seconds(settings, N, causal);   // on its threads ...
            if (settings->threads > 1) {                          // ... and on one
                tiled += tiled_seconds(&one, N, causal);
            }
            seconds += tiled_rounds(i, settings->long_sweep) * tiled +
                       naive_rounds(i, settings->long_sweep) * (double)BENCH_HEADS * N * N *
                           NAIVE_SCORE_NS * 1e-9;
        }
    }
    static const char *const names[] = {"avx512", "avx2", "scalar"};
    for (int i = 0; i < 3; i++) {   // the kernel sets compared, 3 rounds
        if ((one.kernels = kernels_named(names[i])) != NULL) {
            seconds += 3 * tiled_seconds(&one, WORTH_SEQ, false);
        }
    }
    return seconds;
}

// The flags that make a run of --bench slow, as text: " --block-q 1 --block-k 1".
static const char *slow_flags(const Lesson *lesson, const BenchRun *settings) {
    static char with[160];
    with[0] = '\0';
    if (settings->long_sweep) {
        snprintf(with, sizeof with, " --long");
    }
    int values[3] = {settings->block_q, settings->block_k, settings->threads};
    static const char *const tuning[] = {"--block-q", "--block-k", "--threads"};
    for (int f = 0; f < 3; f++) {
        if (flag_given(lesson, tuning[f])) {
            snprintf(with + strlen(with), sizeof with - strlen(with), " %s %d", tuning[f],
                     values[f]);
        }
    }
    if (flag_given(lesson, "--kernels") || with[0] == '\0') {   // "with --block-q 1 and the ..."
        snprintf(with + strlen(with), sizeof with - strlen(with), "%s the %s kernels",
                 with[0] != '\0' ? " and" : "", settings->kernels->name);
    }
    return with;
}

// What --bench holds at once (lesson/budget.h): at each seq its inputs, out
// and out_naive, and one run of a path (the tiled path's out and scratch,
// or what the naive path makes for the heads it takes at once). Its time is
// not counted from sizes (its kernels run many times faster than the
// budget's plain loops): check_bench estimates it from runs it times.
static Cost bench_cost(const BenchRun *settings) {
    double most = 0.0, D = BENCH_HEAD_DIM, H = BENCH_HEADS;
    for (int i = 0; i < N_BENCH_SEQS; i++) {
        double N = BENCH_SEQS[i], head = N * D * sizeof(float);   // one (N, D) head
        double Bq = fmin(settings->block_q, N), Bk = fmin(settings->block_k, N);
        double width = ceil(Bq / KERNEL_COLUMNS) * KERNEL_COLUMNS;
        double tiled = H * head + settings->threads * ((D + Bk + 4) * width + 16) * 4;
        double naive = 0.0;
        for (int causal = 0; causal < 2 && naive_runs_at(BENCH_SEQS[i]); causal++) {
            int heads = naive_heads_at_once(BENCH_SEQS[i], causal);
            naive = fmax(naive, naive_bytes(1, heads, N, causal) + heads * head);
        }
        most = fmax(most, 5 * H * head + fmax(tiled, naive));
    }
    return (Cost){.bytes = most};
}

void check_bench(const Lesson *lesson, BenchRun *settings) {
    static const char *const ignored[] = {"--batch", "--seq", "--heads", "--kv-heads",
                                          "--head-dim", "--causal", "--dump", "--dot",
                                          "--heatmap"};
    for (size_t f = 0; f < sizeof ignored / sizeof ignored[0]; f++) {
        if (flag_given(lesson, ignored[f])) {
            usage_error(lesson, "--bench times its own sizes (batch 1, 8 heads, head_dim 64, "
                        "seq 512 to 8192, causal and not); drop %s", ignored[f]);
        }
    }
    // Its own block sizes unless given: the row of speed/blocks.h's table for
    // this core and these kernels.
    BenchBlocks row = bench_blocks_here(settings->kernels->lanes);
    settings->block_q = flag_given(lesson, "--block-q") ? settings->block_q : row.forward_q;
    settings->block_k = flag_given(lesson, "--block-k") ? settings->block_k : row.forward_k;
    // Its time is held to the same budget as every run's, ATTN_MAX_SECONDS (lesson/budget.h),
    // and refused here in its own words (check_budget's would say "choose smaller sizes",
    // which --bench does not take); a value check_budget would refuse is left to it.
    double seconds = bench_seconds(settings), budget = DEFAULT_MAX_SECONDS;
    const char *limit = getenv("ATTN_MAX_SECONDS");
    const char *dot = limit != NULL ? strchr(limit, '.') : NULL;
    if (limit != NULL && strspn(limit, "0123456789.") == strlen(limit) &&
        (dot == NULL || strchr(dot + 1, '.') == NULL) && strtod(limit, NULL) > 0.0) {
        budget = strtod(limit, NULL);
    } else if (limit != NULL) {
        budget = INFINITY;   // check_budget refuses the value itself
    }
    if (seconds > budget) {
        usage_error(lesson, "--bench with%s would take about %.0f s of processor time, more "
                    "than the %g s allowed; allow it with ATTN_MAX_SECONDS=%.0f",
                    slow_flags(lesson, settings), seconds, budget, ceil(seconds));
    }
    // Then what it holds, and the prediction recorded (ATTN_COST=show prints it; the
    // budget's timer stops the run at STOP_FACTOR times the limit).
    Cost cost = bench_cost(settings);
    cost.kernel_seconds = seconds;
    check_budget(lesson, cost);
}
