// timing.h - timing runs on a machine that may be shared, and saying when it
// was: the clocks, a case's rounds (best, spread, median), and whether the
// machine was busy.
//
// A bench runs every case several times (rounds, interleaved with the other
// cases') and keeps each case's best: what the code can do when nothing
// gets in its way. Whether another program got in its way, machine_load
// reads from two signs, each of which can miss what the other sees:
//   - the thread's share of the time: the processor time it got over the
//     time its runs took on the wall. Below 95%, the core was shared. (A
//     job that slows the core without taking this thread's time, one on
//     the other hyperthread of the same core, say, leaves it near 100%.)
//   - how much slower the median round of a case was than its best. One
//     slow round is a cold cache or an interrupt, and leaves the median
//     where it was; a job that has the core for a while slows most of the
//     rounds it overlaps, and moves it: past 10%, the machine was busy. (A
//     job with a steady share of the core slows every round alike, and
//     leaves it near 0.)
#ifndef SPEED_TIMING_H
#define SPEED_TIMING_H

#include <stdbool.h>
#include <stdio.h>

// Seconds on a clock that only goes forward (CLOCK_MONOTONIC), from an
// arbitrary start: subtract two readings.
double now_seconds(void);

// Two clocks read together: the wall's (now_seconds) and the processor
// time this thread has had (CLOCK_THREAD_CPUTIME_ID). Seconds.
typedef struct {
    double wall, cpu;
} Instant;
Instant now_instant(void);

// Over every run timed on this thread: the time they took on the wall, and
// the processor time this thread had meanwhile. cpu / wall below 1: other
// programs had the core part of the time. (A run on several threads does
// not count here: its first thread waits for the others.)
typedef struct {
    double wall, cpu;
} Shares;
// The seconds since `start` on the wall; both clocks' share added to *shares.
double seconds_since(Shares *shares, Instant start);

// The rounds of one case, in milliseconds.
#define KEPT_ROUNDS 16
typedef struct {
    double best, worst;
    int runs;
    double round_ms[KEPT_ROUNDS];   // the first KEPT_ROUNDS, in the order they ran
} Timing;
void add_time(Timing *t, double ms);
// How much slower the slowest round was than the best: worst / best - 1
// (0 before any round).
double spread(const Timing *t);
// How much slower the median round was than the best, over the rounds kept:
// of an even number of rounds, the faster of the middle two, so that it
// passes 10% only when more than half of the rounds ran more than 10% slow
// (of 2 rounds, never; of 3, 2 of them; of 5, 3).
double median_spread(const Timing *t);

// What a bench's timings say about the machine.
#define BUSY_SHARE 0.95    // a thread that ran less than this of its runs' time was not alone
#define SLOW_MEDIAN 0.10   // a median round this much slower than the best: most rounds slow
typedef struct {
    double worst;    // the largest spread of the timings
    double median;   // the largest median spread
    double share;    // shares->cpu / shares->wall (1 when nothing was timed on one thread)
    bool busy;       // share < BUSY_SHARE, or median > SLOW_MEDIAN
} Load;
Load machine_load(const Shares *shares, const Timing *const *timings, int n_timings);
// The bench's remark on it, a few lines starting "- the load: ".
void print_load(FILE *out, const Load *load);

#endif
