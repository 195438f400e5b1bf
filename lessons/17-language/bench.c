// bench.c - --bench: milliseconds per training step and tokens per second, at the lesson's
// sizes and at a larger model, on one core (lesson 16's bench, on text).
//
// Each case is a whole training step as part 2 takes it: get_batch, the forward, the loss,
// loss.backward(), clip_grad_norm_, AdamW. The cases are timed in rounds, in turn (case 1,
// case 2, case 1, ...), so that a busy machine slows them alike; each keeps its best round,
// and the spread of its rounds says how steady the machine was (the clock and the rounds'
// best and spread: common/speed/timing.h). tools/bench_pytorch_language.py runs this beside
// PyTorch training the same model on the same text and prints the ratio.
//
// The step's matrix products are also timed inside it (every kernels->gemm call, through
// timed_gemm), and set against two peaks of the core measured before and after the rounds
// (common/speed/peak.h): its FMA peak, and the rate of a multiply then an add, unfused, which
// is how the products must take their terms to give PyTorch's bits (kernels.h): on a core
// whose adds share the FMA units, that is half the FMA peak, and the products' ceiling.
#include "bench.h"

#include <stdio.h>

#include "kernels.h"
#include "speed/peak.h"
#include "speed/timing.h"
#include "language.h"

enum { CASES = 2, ROUNDS = 7, WARMUP = 3, PEAK_RUNS = 5 };

// The kernels the bench wraps, and the seconds their products took since it was last reset.
static const Kernels *untimed;
static double product_seconds;

// kernels->gemm, timed: the clock read twice a call (tens of ns, against the microseconds a
// product of these sizes takes).
static void timed_gemm(float *c, int ldc, const float *a, int a_row, int a_col, const float *b,
                       int ldb, int m, int n, int k, bool accumulate) {
    double start = now_seconds();
    untimed->gemm(c, ldc, a, a_row, a_col, b, ldb, m, n, k, accumulate);
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
    return s;
}

// The two cases: the flags' sizes and the larger model, each with room for every step the
// rounds take; how many steps a round takes of each (more for small work, whose rounds
// would be too short to time).
static void bench_cases(Settings cases[CASES], int steps_per_round[CASES], const Settings *s) {
    cases[0] = *s;
    cases[1] = larger(s);
    for (int i = 0; i < CASES; i++) {
        cases[i].steps = WARMUP + ROUNDS * 20;
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
        Cost steps = steps_cost(&cases[i], WARMUP + ROUNDS * steps_per_round[i]);
        cost.bytes += run_bytes(&cases[i], 0);
        cost.kernel_seconds += steps.kernel_seconds;
        cost.exps += steps.exps;
        cost.elements += steps.elements;
    }
    cost.kernel_seconds += 2.0;   // the peaks, measured twice: under 0.5 s here, 1.5 s scalar
    return cost;
}

int bench_training(const Lesson *lesson, const Settings *settings, const Data *data) {
    Settings cases[CASES];
    int steps_per_round[CASES];
    Run runs[CASES];
    bench_cases(cases, steps_per_round, settings);
    for (int i = 0; i < CASES; i++) {
        manual_seed(0);
        if (cases[i].config.seq >= data->n_train || cases[i].config.seq >= data->n_val) {
            usage_error(lesson, "--bench: the larger model's windows of %d tokens do not fit "
                        "the text's splits", cases[i].config.seq);
        }
        runs[i] = run_init(&cases[i], data);
    }
    Timing times[CASES] = {{0}}, products[CASES] = {{0}};
    int taken[CASES] = {0};
    for (int i = 0; i < CASES; i++) {
        for (int w = 0; w < WARMUP; w++) {
            train_step(&runs[i], taken[i]++);
        }
    }
    double peaks[2] = {0.0, 0.0};   // FMA, multiply then add
    measure_peaks(peaks);
    Kernels timed = *kernels;   // the same kernels, the products timed
    timed.gemm = timed_gemm;
    untimed = kernels;
    kernels = &timed;
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < CASES; i++) {
            product_seconds = 0.0;
            double start = now_seconds();
            for (int k = 0; k < steps_per_round[i]; k++) {
                train_step(&runs[i], taken[i]++);
            }
            add_time(&times[i], (now_seconds() - start) * 1e3 / steps_per_round[i]);
            add_time(&products[i], product_seconds * 1e3 / steps_per_round[i]);
        }
    }
    kernels = untimed;
    measure_peaks(peaks);
    printf("training steps on one core, kernels %s: best of %d rounds, each case in turn\n",
           kernels->name, ROUNDS);
    for (int i = 0; i < CASES; i++) {
        double gflop = 2 * step_multiply_adds(&cases[i]) * 1e-9;   // a multiply, an add
        double rate = gflop / (products[i].best * 1e-3);
        printf("  case %d: %d steps a round, best %.3f ms, worst %.3f ms (spread %.0f%%)\n"
               "          %.2f GFLOP of matrix products a step: %.1f GFLOP/s at the best\n"
               "          the products alone (their best round): %.3f ms, %.0f%% of the step's "
               "best,\n          %.1f GFLOP/s: %.0f%% of the FMA peak, %.0f%% of the multiply-"
               "then-add peak\n", i + 1, steps_per_round[i], times[i].best, times[i].worst,
               100.0 * spread(&times[i]), gflop, gflop / (times[i].best * 1e-3), products[i].best,
               100.0 * products[i].best / times[i].best, rate, 100.0 * rate / peaks[0],
               100.0 * rate / peaks[1]);
    }
    printf("this core's peaks with %s registers, 12 independent chains, the higher of before and "
           "after:\n  FMA %.1f GFLOP/s; a multiply then an add, unfused as the products take "
           "them, %.1f\n", kernels->name, peaks[0], peaks[1]);
    for (int i = 0; i < CASES; i++) {
        const Config *c = &cases[i].config;
        printf("bench tokenizer=%s vocab=%d layers=%d dim=%d seq=%d batch=%d ms_per_step=%.3f "
               "tokens_per_s=%.0f products_ms=%.3f fma_peak=%.1f mul_add_peak=%.1f\n",
               data->tok.kind == CHARS ? "chars" : "bpe", c->vocab_size, c->num_hidden_layers,
               c->hidden_size, c->seq, cases[i].batch, times[i].best,
               cases[i].batch * c->seq / (times[i].best * 1e-3), products[i].best, peaks[0],
               peaks[1]);
    }
    return 0;
}
