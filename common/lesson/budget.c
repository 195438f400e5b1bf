// budget.c - check_budget: the run's predicted cost against the budget
// (budget.h), before any work; and, at the end, what it held against what
// was predicted.
#define _POSIX_C_SOURCE 200809L
#include "lesson/budget.h"

#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "core/arena.h"
#include "lesson/outputs.h"
#include "lesson/run.h"

#define MIB (1024.0 * 1024.0)

// What everything but the lesson's tensors takes from the arena (names,
// shape strings, printed text) is small; a prediction may leave it out.
#define UNCOUNTED_BYTES MIB

static BudgetCheck last = {.made = false};   // what check_budget weighed: the prediction

static void hold_to_budget(const Lesson *lesson, double max_bytes, double max_seconds,
                           double estimate);

// A budget from the environment (`name`: a decimal number above 0, digits
// and at most one '.'), or the default. Anything else is refused like a
// bad flag.
static double budget_from(const Lesson *lesson, const char *name, double fallback) {
    const char *text = getenv(name);
    if (text == NULL) {
        return fallback;
    }
    int digits = 0, dots = 0;
    for (const char *c = text; *c != '\0'; c++) {
        digits += *c >= '0' && *c <= '9';
        dots += *c == '.';
    }
    double value = digits > 0 && dots <= 1 && digits + dots == (int)strlen(text)
                   ? strtod(text, NULL) : 0.0;
    if (!(value > 0.0 && value <= 1e12)) {
        usage_error(lesson, "%s expects a number above 0 (such as 2048), got '%s'", name,
                    shown(text));
    }
    return value;
}

// "6.6 GiB", "512 MiB", "12 KiB", "100 bytes".
static const char *bytes_text(double bytes) {
    char *text = arena_alloc(32, 1);
    if (bytes >= 1024 * MIB) {
        snprintf(text, 32, "%.1f GiB", bytes / (1024 * MIB));
    } else if (bytes >= MIB) {
        snprintf(text, 32, "%.0f MiB", bytes / MIB);
    } else if (bytes >= 1024) {
        snprintf(text, 32, "%.0f KiB", bytes / 1024);
    } else {
        snprintf(text, 32, "%.0f bytes", bytes);
    }
    return text;
}

// "0.5 seconds", "40 seconds", "6 minutes", "3 hours", "12 days".
static const char *seconds_text(double seconds) {
    char *text = arena_alloc(32, 1);
    if (seconds < 10) {
        snprintf(text, 32, "%.2g seconds", seconds);
    } else if (seconds < 120) {
        snprintf(text, 32, "%.0f seconds", seconds);
    } else if (seconds < 2 * 3600) {
        snprintf(text, 32, "%.0f minutes", seconds / 60);
    } else if (seconds < 2 * 86400) {
        snprintf(text, 32, "%.0f hours", seconds / 3600);
    } else {
        snprintf(text, 32, "%.0f days", seconds / 86400);
    }
    return text;
}

// The flags to blame: those given above their defaults, else those given
// at all (smaller blocks can mean more work), else the defaults.
static const char *culprits(const Lesson *lesson) {
    if (lesson->raised != NULL && lesson->raised[0] != '\0') {
        return lesson->raised;
    }
    if (lesson->changed != NULL && lesson->changed[0] != '\0') {
        return lesson->changed;
    }
    return lesson->n_sizes + lesson->n_ints + lesson->n_floats > 0 ? "the default sizes"
                                                                   : "this run";
}

// A number to suggest: `needed`, rounded up to two significant digits.
static unsigned long long rounded_up(double needed) {
    double step = pow(10.0, floor(log10(needed > 1 ? needed : 1)) - 1);
    if (step < 1) {
        step = 1;
    }
    return (unsigned long long)(ceil(needed / step) * step);
}

void check_budget(const Lesson *lesson, Cost cost) {
    double bytes = cost.bytes + (lesson->dump_dir != NULL ? cost.dumped : 0.0);
    double seconds = (cost.multiply_adds * NS_PER_MULTIPLY_ADD + cost.exps * NS_PER_EXP +
                      cost.elements * NS_PER_ELEMENT) * 1e-9 + cost.kernel_seconds;
    double max_mib = budget_from(lesson, "ATTN_MAX_MIB", DEFAULT_MAX_MIB);
    double max_seconds = budget_from(lesson, "ATTN_MAX_SECONDS", DEFAULT_MAX_SECONDS);
    const char *show = getenv("ATTN_COST");
    last = (BudgetCheck){true, bytes <= max_mib * MIB && seconds <= max_seconds, cost, bytes,
                         seconds, max_mib * MIB, max_seconds};
    if (show != NULL) {
        fprintf(stderr, "%s: cost: predicted bytes=%.0f seconds=%.3g (multiply-adds %.3g, exps "
                "%.3g, elements %.3g, kernels %.3g s); budget bytes=%.0f seconds=%.0f\n",
                lesson->program, bytes, seconds, cost.multiply_adds, cost.exps, cost.elements,
                cost.kernel_seconds, max_mib * MIB, max_seconds);
    }
    // Memory first: a run that swaps is the worse of the two.
    if (bytes > max_mib * MIB) {
        usage_error(lesson, "%s would hold about %s at once, more than the %s allowed; choose "
                    "smaller sizes, or allow it with ATTN_MAX_MIB=%llu", culprits(lesson),
                    bytes_text(bytes), bytes_text(max_mib * MIB), rounded_up(bytes / MIB));
    }
    if (seconds > max_seconds) {
        usage_error(lesson, "%s would take about %s (estimated from the sizes), more than the "
                    "%s allowed; choose smaller sizes, or allow it with ATTN_MAX_SECONDS=%llu",
                    culprits(lesson), seconds_text(seconds), seconds_text(max_seconds),
                    rounded_up(seconds));
    }
    if (show != NULL && strcmp(show, "check") == 0) {
        lesson_exit(lesson, 0);   // a dry run: the run would be allowed
    }
    stop_before_work(lesson);   // a test's run in its own process ends here (run.h)
    hold_to_budget(lesson, max_mib * MIB, max_seconds, seconds);
}

// --- the budget held while the run works -------------------------------------------------
//
// A prediction can be wrong (a flag combination its counts miss): the memory is held to
// the budget where it is spent, by the arena, and the time by a timer of the processor
// time the run has used (all its threads), which stops it at STOP_FACTOR times
// ATTN_MAX_SECONDS. Either ends the run with one line and exit 2, before its outputs are
// written (they are written only at its end): what was there stays as it was.

static const Lesson *held_lesson = NULL;   // the run held to its budget, for the lines
static double held_max_bytes = 0.0;
static char time_line[512];                // the timer's line, written before it may be needed
static size_t time_line_length = 0;

static void refuse_memory(size_t would_hold) {
    // The same line as check_budget's, with what the run would have held at this moment
    // (at least that much: the arena refused the allocation that passed the budget).
    usage_error(held_lesson, "%s would hold at least %s at once, more than the %s allowed; "
                "choose smaller sizes, or allow it with ATTN_MAX_MIB=%llu (its estimate "
                "said %s)", culprits(held_lesson), bytes_text((double)would_hold),
                bytes_text(held_max_bytes), rounded_up(2.0 * (double)would_hold / MIB),
                bytes_text(last.bytes));
}

// SIGPROF: the run has used STOP_FACTOR times its seconds. Only what a signal handler may
// do: write the line, remove the unfinished outputs' files, end.
static void on_time_limit(int signal_number) {
    (void)signal_number;
    ssize_t ignored = write(STDERR_FILENO, time_line, time_line_length);
    (void)ignored;
    remove_unfinished_outputs();
    _exit(2);
}

static void set_timer(double seconds) {
    struct itimerval timer = {{0, 0}, {0, 0}};
    if (seconds > 0) {
        timer.it_value.tv_sec = (time_t)seconds;
        timer.it_value.tv_usec = (suseconds_t)((seconds - floor(seconds)) * 1e6);
    }
    setitimer(ITIMER_PROF, &timer, NULL);
}

// What the timer allows beyond STOP_FACTOR: a sanitizer build (make sanitize) runs 3 to 5
// times slower, valgrind (make valgrind) 20 to 50 times, where the estimate does not know it.
// 0: no timer (under valgrind, which names its libraries in LD_PRELOAD).
static double slowdown(void) {
    const char *preload = getenv("LD_PRELOAD");
    if (preload != NULL && strstr(preload, "vgpreload") != NULL) {
        return 0.0;
    }
#if defined(__SANITIZE_ADDRESS__)
    return 5.0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
    return 5.0;
#else
    return 1.0;
#endif
#else
    return 1.0;
#endif
}

double time_stop_seconds(double max_seconds) {
    return STOP_FACTOR * slowdown() * max_seconds;
}

static void hold_to_budget(const Lesson *lesson, double max_bytes, double max_seconds,
                           double estimate) {
    held_lesson = lesson;
    held_max_bytes = max_bytes;
    arena_set_limit(max_bytes < (double)SIZE_MAX ? (size_t)max_bytes : 0, refuse_memory);
    char said[64] = "";   // (a bench estimates its time itself, after check_budget)
    if (estimate > 0) {
        snprintf(said, sizeof said, " (its estimate said %s)", seconds_text(estimate));
    }
    int length = snprintf(time_line, sizeof time_line, "%s: %s was stopped after %s of work, "
                          "past the %s allowed%s; nothing was written; choose smaller sizes, "
                          "or allow more with ATTN_MAX_SECONDS\n", lesson->program,
                          culprits(lesson),
                          seconds_text(time_stop_seconds(max_seconds)),
                          seconds_text(max_seconds), said);
    time_line_length = length > 0 ? (size_t)length < sizeof time_line ? (size_t)length
                                                                       : sizeof time_line - 1
                                  : 0;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_time_limit;
    sigemptyset(&action.sa_mask);
    sigaction(SIGPROF, &action, NULL);
    set_timer(time_stop_seconds(max_seconds));   // (0: none)
}

void release_budget(void) {
    set_timer(0);
    arena_set_limit(0, NULL);
    held_lesson = NULL;
}

BudgetCheck last_budget_check(void) {
    return last;
}

void forget_budget_check(void) {
    release_budget();
    last = (BudgetCheck){.made = false};
}

void report_cost(const Lesson *lesson) {
    double held = (double)arena_peak_bytes() + (double)dumps_peak_bytes();
    if (getenv("ATTN_COST") != NULL) {
        fprintf(stderr, "%s: cost: held bytes=%.0f (arena %zu, --dump %zu)\n", lesson->program,
                held, arena_peak_bytes(), dumps_peak_bytes());
    }
    if (last.made && held > last.bytes + UNCOUNTED_BYTES) {
        fprintf(stderr, "%s: warning: the run held %s, more than the %s its budget predicted "
                "(check_budget's cost is wrong)\n", lesson->program, bytes_text(held),
                bytes_text(last.bytes));
    }
}
