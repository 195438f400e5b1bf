// budget.h - what a run may take, predicted from the flags and checked
// before it starts.
//
// A learner who types a big number gets a result in reasonable time or a
// clear refusal, never a machine that swaps. Each lesson predicts what a
// run of its sizes holds and does, and main() checks that against the
// budget after its other checks and before lesson_start():
//
//     check_budget(&lesson, cost(batch, seq, dim));
//
// where the lesson's cost() counts, from its sizes, what its code makes:
//
//     static Cost cost(double B, double T, double C) {
//         return (Cost){
//             .bytes = 4 * (6 * B*T*T + 12 * B*T*C + 3 * C*C),   // every tensor it keeps
//             .dumped = 4 * (2 * B*T*T + 5 * B*T*C + 3 * C*C),   // the ones --dump writes
//             .multiply_adds = 2 * (3 * B*T*C*C + 2 * B*T*T*C),  // matmuls, Linear layers
//             .exps = 2 * B*T*T,                                  // softmax, GELU, randn
//             .elements = 4 * B*T*T + 8 * B*T*C,                  // everything else written
//         };
//     }
//
// (doubles: a product of sizes may pass what an int or a long holds; the
// budget only needs it roughly). A run over the budget ends there, exit 2,
// with one line that names the flags that made it big, the budget, and how
// to raise it:
//
//     lesson-4: --seq 8192 would hold about 6.6 GiB at once, more than the
//     512 MiB allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=6800
//
// THE BUDGET: at most ATTN_MAX_MIB MiB held at once (default 512) and
// about ATTN_MAX_SECONDS seconds of work (default 60), both environment
// variables a learner may raise (decimals allowed). The seconds are an
// estimate: each multiply-add, exp and other element counted costs the time
// below. Those are the slower end of what the lessons' loops took on one core
// of an AMD EPYC (Zen 4, family 25 model 17; CPU time with gcc -O2, other
// jobs running beside them): a multiply-add that walks down a column of a
// matrix too big for the cache takes 2 ns, most take under 1; softmax's and
// GELU's exact exp and erf 20 to 30 ns; a copy, a mask or a sum 3 to 5. So
// most runs finish in a half to a third of the estimate, and a sanitizer
// build (make sanitize) takes 3 to 5 times longer. `lscpu` names your CPU.
//
// A bench that times fixed sizes of its own checks what its flags can
// change (a block size, say) the same way, and refuses what it could not
// finish.
//
// HELD WHILE IT RUNS: a prediction can miss (a combination of flags its
// counts do not see), so an admitted run is held to the budget where it
// spends it. The arena refuses the allocation that would take what the run
// holds (with --dump's copies) past ATTN_MAX_MIB, with check_budget's line
// ("... would hold at least ..."), exit 2; and a timer of the processor time
// the run has used (all its threads) stops it at STOP_FACTOR times
// ATTN_MAX_SECONDS with one line, exit 2 (five times later in a sanitizer
// build; not under valgrind, which runs 20 to 50 times slower). Both come before the run writes its
// outputs (lesson_finish writes them all at its end), so what was there
// stays as it was. lesson_finish, and a test's release of a run, end both.
//
// TESTS: every run compares what it held with the prediction when it
// finishes (the arena's peak plus what --dump kept): more than predicted
// prints a warning on stderr, which the tests see. ATTN_COST=show prints the
// prediction and what was held; ATTN_COST=check prints the prediction and
// stops before any work (exit 0), or refuses as a run would. A test that
// calls a lesson's main() in its own process (run.h) reads what the budget
// weighed from last_budget_check.
#ifndef BUDGET_H
#define BUDGET_H

#include "lesson/flags.h"

typedef struct {
    double bytes;           // the most the lesson's tensors take at once (the arena's peak)
    double dumped;          // the bytes of the tensors --dump writes (it keeps them until
                            // the end); counted only with --dump
    double multiply_adds;   // one per term of every dot product: matmul, Linear, einsum loops
    double exps;            // elements that go through exp, erf or log: softmax, GELU,
                            // randn, dropout's draws
    double elements;        // every other element written: copies, masks, scales, sums
    double kernel_seconds;  // work done in a lesson's own blocked or vector kernels, which
                            // the prices below do not fit (lesson 16's matrix products run 10
                            // to 70 times faster than a plain loop's): the lesson's estimate
} Cost;

// What one of each takes, in nanoseconds (measured as above).
#define NS_PER_MULTIPLY_ADD 2.5
#define NS_PER_EXP 40.0
#define NS_PER_ELEMENT 8.0

#define DEFAULT_MAX_MIB 512
#define DEFAULT_MAX_SECONDS 60
// A run is stopped when its processor time passes this many times ATTN_MAX_SECONDS: the
// estimate is "about", and a run admitted near the limit on a loaded machine may pass it.
#define STOP_FACTOR 1.5

// Refuse the run (exit 2, one line) if `cost` passes the budget.
void check_budget(const Lesson *lesson, Cost cost);

// What check_budget weighed last: the cost, what it comes to, the budget.
typedef struct {
    bool made;            // check_budget has weighed a cost (since forget_budget_check)
    bool admitted;        // and the run fits the budget
    Cost cost;
    double bytes;         // held at once, --dump's copies included when given
    double seconds;       // the estimated time
    double max_bytes;     // the budget: ATTN_MAX_MIB in bytes
    double max_seconds;   // ATTN_MAX_SECONDS
} BudgetCheck;
BudgetCheck last_budget_check(void);
// Forget it, and the prediction report_cost compares with, and stop holding the run to the
// budget (release_budget) (run.c, when a run is released).
void forget_budget_check(void);
// The processor time at which a run admitted under `max_seconds` is stopped (0: never).
double time_stop_seconds(double max_seconds);
// Stop holding the run to its budget (the arena's limit, the timer): its work is done.
void release_budget(void);

// For lesson_finish: when a prediction was made, compare what the run held
// with it (a warning if more) and, with ATTN_COST=show, print both.
void report_cost(const Lesson *lesson);

#endif
