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

#include "speed/choice.h"
#include "speed/cpu.h"
#include "speed/peak.h"
#include "speed/timing.h"

#define BENCH_HEADS 8
#define BENCH_HEAD_DIM 64
#define TILED_ROUNDS 5        // rounds of every tiled case ...
#define NAIVE_ROUNDS 3        // ... and of every naive one (seconds each at seq 2048)
#define PROBE_SEQ 128         // the estimate is scaled from runs at this length
#define WORTH_SEQ 512         // the kernels compared at this length
#define BENCH_BLOCK_Q 64      // its blocks, unless --block-q and --block-k say otherwise:
#define BENCH_BLOCK_K 1024    // with the AVX-512 kernels
#define BENCH_BLOCK_K_NARROW 512   // with AVX2's or the twins
#define NOISY 0.10            // a spread above this is too large to read small ratios
static const int BENCH_SEQS[] = {512, 1024, 2048, 4096, 8192};
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
static void measure_seq(BenchCase cases[2], Shares *shares, int seq, const BenchRun *settings) {
    size_t mark = arena_mark();
    Shape shape = shape4(1, BENCH_HEADS, seq, BENCH_HEAD_DIM);
    const Tensor *in[3] = {randn(shape), randn(shape), randn(shape)};        // (1, H, N, D)
    Tensor *out = zeros(shape), *out_naive = zeros(shape);                    // (1, H, N, D)
    BenchRun one = *settings;
    one.threads = 1;
    for (int causal = 0; causal < 2; causal++) {
        cases[causal] = (BenchCase){.seq = seq, .causal = causal, .diff = NAN};
    }
    for (int round = 0; round < TILED_ROUNDS; round++) {
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
            if (round < NAIVE_ROUNDS && naive_runs_at(seq)) {
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
    if (c->naive.runs > 0) {
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

// --- the bench --------------------------------------------------------------------------------

void bench(const BenchRun *settings) {
    printf("-- bench: batch 1, %d heads, head_dim %d, blocks of %d x %d, %d thread%s, "
           "%s kernels --\n", BENCH_HEADS, BENCH_HEAD_DIM, settings->block_q, settings->block_k,
           settings->threads, settings->threads > 1 ? "s" : "", settings->kernels->name);
    describe_cpu();
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
    printf("best of %d interleaved rounds (naive: %d); spread: how much slower the slowest "
           "was;\nof peak: of the FMA peak of %d core%s, measured again in the same rounds\n",
           TILED_ROUNDS, NAIVE_ROUNDS, cores_used(settings->threads),
           cores_used(settings->threads) > 1 ? "s" : "");
    printf("   seq causal  naive ms spread  tiled ms spread speedup  GFLOP/s  of peak "
           "naive MiB tiled MiB\n");
    for (int i = 0; i < N_BENCH_SEQS; i++) {
        measure_seq(&cases[2 * i], &shares, BENCH_SEQS[i], settings);
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

// The processor time of one run of the tiled path at PROBE_SEQ (or of the
// naive one, when `naive`), in seconds, per thread: on a busy machine the
// clock on the wall runs on while other jobs have the core, this one does
// not, so the estimate is of the work and not of the load.
static double probe_seconds(const BenchRun *run, bool naive) {
    size_t mark = arena_mark();
    Shape shape = shape4(1, BENCH_HEADS, PROBE_SEQ, BENCH_HEAD_DIM);
    const Tensor *in[3] = {randn(shape), randn(shape), randn(shape)};        // (1, H, N, D)
    size_t unused;
    struct timespec start, end;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
    if (naive) {
        naive_run(&unused, run->causal, in[0], in[1], in[2]);
    } else {
        tiled_run(&unused, run, in[0], in[1], in[2]);
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &end);
    arena_release(mark);
    double seconds = (double)(end.tv_sec - start.tv_sec) + 1e-9 * (end.tv_nsec - start.tv_nsec);
    return seconds / (naive ? 1 : run->threads);
}

// The flags that make a run of --bench slow, as text: " --block-q 1 --block-k 1".
static const char *slow_flags(const Lesson *lesson, const BenchRun *settings) {
    static char with[160];
    with[0] = '\0';
    int values[3] = {settings->block_q, settings->block_k, settings->threads};
    static const char *const tuning[] = {"--block-q", "--block-k", "--threads"};
    for (int f = 0; f < 3; f++) {
        if (flag_given(lesson, tuning[f])) {
            snprintf(with + strlen(with), sizeof with - strlen(with), " %s %d", tuning[f],
                     values[f]);
        }
    }
    if (flag_given(lesson, "--kernels") || with[0] == '\0') {
        snprintf(with + strlen(with), sizeof with - strlen(with), " the %s kernels",
                 settings->kernels->name);
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
    // Its own block sizes unless given: the ones that ran fastest on the AMD
    // EPYC (Zen 4, family 25 model 17) the lesson was tuned on, with each
    // width of register (gcc 12 -O2, 2026-11-27: AVX2's were 4% slower with
    // 1024 keys, AVX-512's 0.5 ms (0.6%) faster at seq 2048).
    int block_k = settings->kernels->lanes == 16 ? BENCH_BLOCK_K : BENCH_BLOCK_K_NARROW;
    settings->block_q = flag_given(lesson, "--block-q") ? settings->block_q : BENCH_BLOCK_Q;
    settings->block_k = flag_given(lesson, "--block-k") ? settings->block_k : block_k;
    check_budget(lesson, bench_cost(settings));
    // Its time is held to the same budget as every run's: ATTN_MAX_SECONDS (lesson/budget.h).
    double budget = last_budget_check().max_seconds;
    // The time of every run it will make, scaled from single runs at
    // PROBE_SEQ by the work, N * N pairs (a little over half of them
    // causal): the tiled runs first, then the naive ones, then the kernel
    // sets compared at WORTH_SEQ; it refuses if the sum passes the budget.
    double scale = 0.0, seconds = 0.0;
    for (int i = 0; i < N_BENCH_SEQS; i++) {
        scale += (double)BENCH_SEQS[i] * BENCH_SEQS[i] / (PROBE_SEQ * PROBE_SEQ);
    }
    BenchRun one = *settings;
    one.threads = 1;
    double naive_scale = 0.0;
    for (int i = 0; i < N_BENCH_SEQS && naive_runs_at(BENCH_SEQS[i]); i++) {
        naive_scale += (double)BENCH_SEQS[i] * BENCH_SEQS[i] / (PROBE_SEQ * PROBE_SEQ);
    }
    static const char *const names[] = {"avx512", "avx2", "scalar"};
    for (int step = 0; step < 6; step++) {
        if (step == 0) {
            seconds += TILED_ROUNDS * 1.6 * scale * probe_seconds(settings, false);
        } else if (step == 1 && settings->threads > 1) {
            seconds += TILED_ROUNDS * 1.6 * scale * probe_seconds(&one, false);
        } else if (step == 2) {
            seconds += NAIVE_ROUNDS * 2 * naive_scale * probe_seconds(settings, true);
        } else if (step >= 3 && (one.kernels = kernels_named(names[step - 3])) != NULL) {
            double worth = (double)WORTH_SEQ * WORTH_SEQ / (PROBE_SEQ * PROBE_SEQ);
            seconds += 3 * worth * probe_seconds(&one, false);
        }
    }
    if (seconds > budget) {
        usage_error(lesson, "--bench with%s would take about %.0f s (estimated from runs at "
                    "seq %d), more than the %.0f s allowed; allow it with ATTN_MAX_SECONDS=%.0f",
                    slow_flags(lesson, settings), seconds, PROBE_SEQ, budget, ceil(seconds));
    }
}
