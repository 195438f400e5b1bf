// timing.c - the clocks, a case's rounds, and the verdict on the machine
// (timing.h).
#define _POSIX_C_SOURCE 200809L   // clock_gettime
#include "speed/timing.h"

#include <time.h>

static double seconds_of(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double now_seconds(void) {
    return seconds_of(CLOCK_MONOTONIC);
}

Instant now_instant(void) {
    return (Instant){seconds_of(CLOCK_MONOTONIC), seconds_of(CLOCK_THREAD_CPUTIME_ID)};
}

double seconds_since(Shares *shares, Instant start) {
    Instant end = now_instant();
    shares->wall += end.wall - start.wall;
    shares->cpu += end.cpu - start.cpu;
    return end.wall - start.wall;
}

void add_time(Timing *t, double ms) {
    t->best = t->runs == 0 || ms < t->best ? ms : t->best;
    t->worst = t->runs == 0 || ms > t->worst ? ms : t->worst;
    if (t->runs < KEPT_ROUNDS) {
        t->round_ms[t->runs] = ms;
    }
    t->runs += 1;
}

double spread(const Timing *t) {
    return t->runs > 0 ? t->worst / t->best - 1.0 : 0.0;
}

double median_spread(const Timing *t) {
    int n = t->runs < KEPT_ROUNDS ? t->runs : KEPT_ROUNDS;
    double sorted[KEPT_ROUNDS];
    for (int i = 0; i < n; i++) {   // insertion sort: a handful of rounds
        int j = i;
        for (; j > 0 && sorted[j - 1] > t->round_ms[i]; j--) {
            sorted[j] = sorted[j - 1];
        }
        sorted[j] = t->round_ms[i];
    }
    return n > 0 ? sorted[(n - 1) / 2] / t->best - 1.0 : 0.0;
}

Load machine_load(const Shares *shares, const Timing *const *timings, int n_timings) {
    Load load = {0.0, 0.0, shares->wall > 0.0 ? shares->cpu / shares->wall : 1.0, false};
    for (int i = 0; i < n_timings; i++) {
        double worst = spread(timings[i]), median = median_spread(timings[i]);
        load.worst = worst > load.worst ? worst : load.worst;
        load.median = median > load.median ? median : load.median;
    }
    load.busy = load.share < BUSY_SHARE || load.median > SLOW_MEDIAN;
    return load;
}

void print_load(FILE *out, const Load *load) {
    fprintf(out, "- the load: each time is the best of its runs; the slowest run of a case was "
            "up to %.0f%%\n  slower than its best, the median run up to %.0f%%; this thread "
            "ran %.0f%% of the time its\n  runs on one thread took.\n", 100 * load->worst,
            100 * load->median, 100 * load->share);
    if (load->share < BUSY_SHARE) {
        fprintf(out, "  Less than %.0f%%: other programs had its core part of the time.\n",
                100 * BUSY_SHARE);
    }
    if (load->median > SLOW_MEDIAN) {
        fprintf(out, "  A median more than %.0f%% slow: most runs of a case ran slow.\n",
                100 * SLOW_MEDIAN);
    }
    if (load->busy) {
        fprintf(out, "  So the machine was busy. The best times are still what the code can "
                "do, but small\n  differences between them may be noise; run again when it is "
                "quiet.\n");
    } else if (load->worst > SLOW_MEDIAN) {
        fprintf(out, "  At most half the runs of a case were more than %.0f%% slow (a first "
                "run may start with\n  cold caches), and this thread had its core: no sign of "
                "another job.\n", 100 * SLOW_MEDIAN);
    } else {
        fprintf(out, "  No sign of another job.\n");
    }
}
