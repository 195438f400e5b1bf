// graph.h - the lesson's dataflow, recorded while it runs, for --dot.
//
// graph_record() is a trace hook (trace.h): given every operation
// "out = op(inputs)" and every name, it keeps one node per tensor (its name
// and shape) and one edge per input of each operation; the operation and its
// numbers ("transpose(1, 2)", "* 0.125", "linear") label the edge from its
// first input only, so that each operation is named once. graph_write()
// prints them as a Graphviz graph. The diagram is drawn from what the code
// actually did, so it cannot drift from the code.
#ifndef GRAPH_H
#define GRAPH_H

#include <stdbool.h>
#include <stdio.h>

#include "lesson/trace.h"

void graph_record(const TraceEvent *event);

// Write what was recorded as Graphviz dot text, titled `title` in a comment.
void graph_write(FILE *file, const char *title);
// Forget everything recorded.
void graph_clear(void);

#endif
