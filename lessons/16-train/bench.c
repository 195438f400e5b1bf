// bench.c - --bench: milliseconds per training step and tokens per second, at the lesson's
// sizes and at a larger model, on one core; with --threads N (N > 1), on one thread and on N.
//
// Each case is a whole training step as part 3 takes it: make_batch, the forward, the loss,
// loss.backward(), clip_grad_norm_, AdamW. The cases are timed in rounds, in turn (case 1,
// case 2, case 1, ...), so that a busy machine slows them alike; each keeps its best round,
// and the spread of its rounds says how steady the machine was (the clock and the rounds'
// best and spread: common/speed/timing.h). tools/bench_pytorch_train.py runs this beside
// PyTorch training the same model and prints the ratio. With --threads N, each round times
// each case on one thread and then on N (threads.c's pool, limited to one thread and then
// let use all), the steps of one run going on from one to the other.
//
// The step's matrix products are also timed inside it (every product of layers.c: bench
// points layers_gemm at timed_gemm for the rounds), and set against two peaks of the core
// measured before and after the rounds (common/speed/peak.h): its FMA peak, and the rate of a
// multiply then an add, unfused, which is how the products must take their terms to give
// PyTorch's bits (kernels.h): on a core whose adds share the FMA units, that is half the FMA
// peak, and the products' ceiling. A product shared among --threads N threads is timed whole,
// on the calling thread, around threads_gemm: from handing it out until its last share is
// done (its own share, the wait for the workers' and the waking on both sides), the product's
// time on the wall, not the sum of its threads' times. The peaks are one core's, measured on
// this thread while the workers wait.
#define _POSIX_C_SOURCE 200809L   // sysconf

#include "bench.h"

#include <stdio.h>
#include <unistd.h>

#include "kernels.h"
#include "layers.h"
#include "speed/peak.h"
#include "speed/timing.h"
#include "threads.h"
#include "train.h"

enum { CASES = 2, ROUNDS = 7, WARMUP = 3, PEAK_RUNS = 5 };

// The seconds the step's products took since the bench last reset it.
static double product_seconds;

// threads_gemm (layers_gemm's own), timed: the clock read twice a call (tens of ns, against
// the microseconds a product of these sizes takes).
static void timed_gemm(float *c, int ldc, const float *a, int a_row, int a_col, const float *b,
                       int ldb, int m, int n, int k, bool accumulate) {
    double start = now_seconds();
    threads_gemm(c, ldc, a, a_row, a_col, b, ldb, m, n, k, accumulate);
    product_seconds += now_seconds() - start;
}

// The core's two peaks with the registers of the kernels in use (GFLOP/s), each the higher
// of this measure and the one in *peaks: the machine may be shared, and a peak is what the
// core can do at best.
static void measure_peaks(double peaks[2]) {
    double fma = fma_peak(kernels->name, false, PEAK_RUNS);
    double mul_add = mul_add_peak(kernels->name, PEAK_RUNS);
    peaks[0] = fma > peaks[0] ? fma : peaks[0];
    peaks[1] = mul_add > peaks[1] ? mul_add : peaks[1];
}

// How many thread counts each case is timed at: one, and N if --threads N is more.
static int passes(const Settings *s) {
    return s->threads > 1 ? 2 : 1;
}

// The larger model: twice the width, four layers, twice the sequence, twice the heads and
// the key/value heads (8 and 4 from the defaults, so that a head stays 16 wide).
static Settings larger(const Settings *base) {
    Settings s = *base;
    Config *c = &s.config;
    c->hidden_size *= 2;
    c->num_attention_heads *= 2;
    c->num_key_value_heads *= 2;
    c->num_hidden_layers = 4;
    c->seq *= 2;
    c->intermediate_size = (8 * c->hidden_size / 3 + 7) / 8 * 8;
    c->vocab_size = c->vocab_size > c->seq ? c->vocab_size : c->seq;   // recall's keys fit
    return s;
}

// The two cases: the flags' sizes and the larger model, each with room for every step the
// rounds take; how many steps a round takes of each (more for small work, whose rounds
// would be too short to time).
static void bench_cases(Settings cases[CASES], int steps_per_round[CASES], const Settings *s) {
    cases[0] = *s;
    cases[1] = larger(s);
    for (int i = 0; i < CASES; i++) {
        cases[i].steps = WARMUP + passes(s) * ROUNDS * 20;
        cases[i].load_dir = cases[i].save_dir = cases[i].svg_file = NULL;
        const Config *c = &cases[i].config;
        double work = (double)cases[i].batch * c->seq * c->hidden_size * c->num_hidden_layers;
        steps_per_round[i] = work < 2e5 ? 20 : work < 2e7 ? 5 : 2;
    }
}

Cost bench_cost(const Settings *settings) {
    Settings cases[CASES];
    int steps_per_round[CASES];
    bench_cases(cases, steps_per_round, settings);
    Cost cost = {0};
    for (int i = 0; i < CASES; i++) {   // both runs are made first, then timed in turn
        Cost steps = steps_cost(&cases[i], WARMUP + passes(settings) * ROUNDS *
                                               steps_per_round[i]);
        cost.bytes += run_bytes(&cases[i]);
        cost.kernel_seconds += steps.kernel_seconds;
        cost.exps += steps.exps;
        cost.elements += steps.elements;
    }
    cost.kernel_seconds += 2.0;   // the peaks, measured twice: under 0.5 s here, 1.5 s scalar
    return cost;
}

// A case's line on `threads` threads: its best, worst and spread, and the products' rate.
static void print_times(const Timing *t, int threads, double gflop) {
    printf("    %2d thread%s best %.3f ms, worst %.3f ms (spread %.0f%%), %.1f GFLOP/s",
           threads, threads > 1 ? "s:" : ": ", t->best, t->worst, 100.0 * spread(t),
           gflop / (t->best * 1e-3));
}

// The products timed alone (their best round) against the step's best and the two peaks.
static void print_products(const Timing *products, const Timing *step, double gflop,
                           const double peaks[2]) {
    double rate = gflop / (products->best * 1e-3);
    printf("          the products alone (their best round): %.3f ms, %.0f%% of the step's "
           "best,\n          %.1f GFLOP/s: %.0f%% of the FMA peak, %.0f%% of the multiply-"
           "then-add peak\n", products->best, 100.0 * products->best / step->best, rate,
           100.0 * rate / peaks[0], 100.0 * rate / peaks[1]);
}

int bench_training(const Lesson *lesson, const Settings *settings) {
    (void)lesson;
    Settings cases[CASES];
    int steps_per_round[CASES];
    Run runs[CASES];
    bench_cases(cases, steps_per_round, settings);
    for (int i = 0; i < CASES; i++) {
        manual_seed(0);
        runs[i] = run_init(&cases[i]);
    }
    // threads[0] is 1; threads[1] the pool's, which may be fewer than --threads said if the
    // system refused some (--threads 1: the pool is this thread alone, one pass).
    int threads[2] = {1, threads_start(settings->threads)}, n_passes = threads[1] > 1 ? 2 : 1;
    Timing times[CASES][2] = {{{0}}}, products[CASES][2] = {{{0}}};
    int taken[CASES] = {0};
    for (int i = 0; i < CASES; i++) {
        for (int w = 0; w < WARMUP; w++) {
            train_step(&runs[i], taken[i]++);
        }
    }
    double peaks[2] = {0.0, 0.0};   // FMA, multiply then add
    measure_peaks(peaks);
    layers_gemm = timed_gemm;
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < CASES; i++) {
            for (int pass = 0; pass < n_passes; pass++) {
                threads_limit(threads[pass]);
                product_seconds = 0.0;
                double start = now_seconds();
                for (int k = 0; k < steps_per_round[i]; k++) {
                    train_step(&runs[i], taken[i]++);
                }
                add_time(&times[i][pass], (now_seconds() - start) * 1e3 / steps_per_round[i]);
                add_time(&products[i][pass], product_seconds * 1e3 / steps_per_round[i]);
            }
        }
    }
    layers_gemm = threads_gemm;
    measure_peaks(peaks);
    threads_stop();
    if (n_passes == 1) {
        printf("training steps on one core, kernels %s: best of %d rounds, each case in turn\n",
               kernels->name, ROUNDS);
    } else {
        printf("training steps on one thread and on %d (%ld processors online), kernels %s:\n"
               "best of %d rounds, each case in turn, on one thread then on %d\n", threads[1],
               sysconf(_SC_NPROCESSORS_ONLN), kernels->name, ROUNDS, threads[1]);
    }
    if (threads[1] < settings->threads) {
        printf("(--threads %d: the system refused to start %d of the %d workers)\n",
               settings->threads, settings->threads - threads[1], settings->threads - 1);
    }
    for (int i = 0; i < CASES; i++) {
        double gflop = 2 * step_multiply_adds(&cases[i]) * 1e-9;   // a multiply, an add
        if (n_passes == 1) {
            printf("  case %d: %d steps a round, best %.3f ms, worst %.3f ms (spread %.0f%%)\n"
                   "          %.2f GFLOP of matrix products a step: %.1f GFLOP/s at the best\n",
                   i + 1, steps_per_round[i], times[i][0].best, times[i][0].worst,
                   100.0 * spread(&times[i][0]), gflop, gflop / (times[i][0].best * 1e-3));
            print_products(&products[i][0], &times[i][0], gflop, peaks);
            continue;
        }
        printf("  case %d: %d steps a round, %.2f GFLOP of matrix products a step\n", i + 1,
               steps_per_round[i], gflop);
        print_times(&times[i][0], 1, gflop);
        printf("\n");
        print_products(&products[i][0], &times[i][0], gflop, peaks);
        print_times(&times[i][1], threads[1], gflop);
        printf(", %.2fx one thread\n", times[i][0].best / times[i][1].best);
        print_products(&products[i][1], &times[i][1], gflop, peaks);
    }
    printf("%s core's peaks with %s registers, 12 independent chains, the higher of before and "
           "after:\n  FMA %.1f GFLOP/s; a multiply then an add, unfused as the products take "
           "them, %.1f\n", n_passes == 1 ? "this" : "one", kernels->name, peaks[0], peaks[1]);
    if (n_passes > 1) {
        printf("  (on %d threads too, the products are set against one core's peaks)\n",
               threads[1]);
    }
    for (int i = 0; i < CASES; i++) {
        const Config *c = &cases[i].config;
        for (int pass = 0; pass < n_passes; pass++) {
            printf("bench task=%s layers=%d dim=%d seq=%d batch=%d ", c->task == RECALL
                   ? "recall" : "reverse", c->num_hidden_layers, c->hidden_size, c->seq,
                   cases[i].batch);
            if (n_passes > 1) {   // (one thread alone: the format bench_pytorch_train.py reads)
                printf("threads=%d ", threads[pass]);
            }
            printf("ms_per_step=%.3f tokens_per_s=%.0f products_ms=%.3f fma_peak=%.1f "
                   "mul_add_peak=%.1f\n", times[i][pass].best,
                   cases[i].batch * c->seq / (times[i][pass].best * 1e-3),
                   products[i][pass].best, peaks[0], peaks[1]);
        }
    }
    return 0;
}
