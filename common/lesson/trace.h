// trace.h - one optional hook that sees every operation as it runs.
//
// The operations in tensor.c, ops.c and nn.c compute and nothing else; at
// the end each reports one fact, "out = op(inputs; numbers)", by calling
// trace(). A lesson's tensors get their notebook names the same way, with
// named(). Nobody listens by default and trace() returns at once. The
// lesson's --dot and --dump (lesson/run.c) install a hook: --dot draws the
// graph from the operations (graph.h), --dump keeps the named tensors to
// write them when the lesson finishes. A test can install its own.
#ifndef TRACE_H
#define TRACE_H

#include <stdbool.h>

#include "core/tensor.h"

typedef struct {
    const char *op;                // "transpose", "matmul", "*"; "named" or "labeled"
    const char *name;              // for "named" and "labeled": the name; otherwise NULL
    const Tensor *out;             // the result (for "named": the tensor named)
    int n_inputs;
    const Tensor *const *inputs;   // what out was computed from
    int n_args;
    const double *args;            // the op's numbers: transpose's two dims, softmax's dim
} TraceEvent;

typedef void (*TraceHook)(const TraceEvent *event);

// Install `hook` (NULL: nobody listens). Returns the hook it replaces.
TraceHook trace_set_hook(TraceHook hook);

// Stop (true) or resume (false) reporting to the hook, e.g. around an aside
// that runs the module again and must not redraw the graph or overwrite the
// dumps. Returns the previous state, so it nests without bookkeeping:
//     bool was_paused = trace_pause(true);
//     ... the aside ...
//     trace_pause(was_paused);
bool trace_pause(bool paused);

// Report out = op(inputs; args) to the hook, if one listens.
void trace(const char *op, const Tensor *out, int n_inputs, const Tensor *const *inputs,
           int n_args, const double *args);
// The two most common shapes of it: one input or two, no numbers.
void trace1(const char *op, const Tensor *out, const Tensor *in);
void trace2(const char *op, const Tensor *out, const Tensor *in0, const Tensor *in1);

// Give t its notebook name ("Q", "query_proj.weight"), which labels it in
// the --dot graph and is its file name with --dump. Returns t, so a line
// can read `const Tensor *Q = named("Q", linear(&net.query_proj, X));`.
const Tensor *named(const char *name, const Tensor *t);
// A label for the --dot graph only, for a tensor that is not one of the
// lesson's dumps (the storage of a cache, a result of an aside).
const Tensor *labeled(const char *label, const Tensor *t);

#endif
