// trace.c - the hook, and the calls that report to it.
#include "lesson/trace.h"

#include <stddef.h>

static TraceHook current_hook = NULL;
static bool paused = false;

TraceHook trace_set_hook(TraceHook hook) {
    TraceHook previous = current_hook;
    current_hook = hook;
    return previous;
}

bool trace_pause(bool pause) {
    bool previous = paused;
    paused = pause;
    return previous;
}

static void report(const TraceEvent *event) {
    if (current_hook != NULL && !paused) {
        current_hook(event);
    }
}

void trace(const char *op, const Tensor *out, int n_inputs, const Tensor *const *inputs,
           int n_args, const double *args) {
    TraceEvent event = {op, NULL, out, n_inputs, inputs, n_args, args};
    report(&event);
}

void trace1(const char *op, const Tensor *out, const Tensor *in) {
    trace(op, out, 1, &in, 0, NULL);
}

void trace2(const char *op, const Tensor *out, const Tensor *in0, const Tensor *in1) {
    trace(op, out, 2, (const Tensor *const[]){in0, in1}, 0, NULL);
}

const Tensor *named(const char *name, const Tensor *t) {
    TraceEvent event = {"named", name, t, 0, NULL, 0, NULL};
    report(&event);
    return t;
}

const Tensor *labeled(const char *label, const Tensor *t) {
    TraceEvent event = {"labeled", label, t, 0, NULL, 0, NULL};
    report(&event);
    return t;
}
