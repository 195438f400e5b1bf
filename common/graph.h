// graph.h - the lesson's dataflow, recorded while it runs, for --dot.
//
// Every operation in ops.c / tensor.c / nn.c reports itself here: its
// output, its inputs and a label ("matmul", "transpose(1, 2)"). When the
// lesson was started with --dot FILE, these become a Graphviz graph: one
// node per tensor (its name and shape), one edge per input of each
// operation, labelled with the operation. The diagram is drawn from what
// the code actually did, so it cannot drift from the code.
#ifndef GRAPH_H
#define GRAPH_H

#include <stdbool.h>

#include "tensor.h"

void graph_start(void);           // begin recording (lesson_start does it)
void graph_pause(bool paused);    // stop recording, e.g. inside a benchmark
bool graph_recording(void);

// Record `out = op(inputs...)`.
void graph_record(const char *op, const Tensor *out,
                  const Tensor *const *inputs, int n_inputs);
void graph_record1(const char *op, const Tensor *out, const Tensor *in);
void graph_record2(const char *op, const Tensor *out, const Tensor *in0,
                   const Tensor *in1);
// A tensor got its name (named() in lesson.h).
void graph_name(const Tensor *t, const char *name);

// Write the graph as Graphviz dot text; false if the file cannot be written.
bool graph_write(const char *path, const char *title);
void graph_clear(void);

#endif
