// budget.c - check_budget: the run's predicted cost against the budget
// (budget.h), before any work; and, at the end, what it held against what
// was predicted.
#define _POSIX_C_SOURCE 200809L
#include "lesson/budget.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "lesson/outputs.h"
#include "lesson/run.h"

#define MIB (1024.0 * 1024.0)

// What everything but the lesson's tensors takes from the arena (names,
// shape strings, printed text) is small; a prediction may leave it out.
#define UNCOUNTED_BYTES MIB

static BudgetCheck last = {.made = false};   // what check_budget weighed: the prediction

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
}

BudgetCheck last_budget_check(void) {
    return last;
}

void forget_budget_check(void) {
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
