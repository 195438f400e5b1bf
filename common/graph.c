// graph.c - record the dataflow as the operations run, write it as dot.
//
// Nodes are kept by tensor id with a copy of their label, so the graph
// stays valid after the tensors themselves are freed (arena_release).
#define _POSIX_C_SOURCE 200809L
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#define MAX_NODES 4096
#define MAX_EDGES 8192
#define LABEL_SIZE 64

typedef struct {
    int id;                  // the tensor's id
    char name[LABEL_SIZE];   // its notebook name, or "" if it has none
    char shape[LABEL_SIZE];  // "(3, 2, 4)"
} Node;

typedef struct {
    int from, to;            // node indices
    char op[LABEL_SIZE];
} Edge;

static bool recording = false;
static bool paused = false;
static Node nodes[MAX_NODES];
static int n_nodes = 0;
static Edge edges[MAX_EDGES];
static int n_edges = 0;

void graph_start(void) {
    graph_clear();
    recording = true;
}

void graph_pause(bool pause) {
    paused = pause;
}

bool graph_recording(void) {
    return recording && !paused;
}

void graph_clear(void) {
    recording = false;
    paused = false;
    n_nodes = 0;
    n_edges = 0;
}

// The node of tensor t, added the first time t is seen.
static int node_of(const Tensor *t) {
    for (int i = n_nodes - 1; i >= 0; i--) {
        if (nodes[i].id == t->id) {
            return i;
        }
    }
    if (n_nodes == MAX_NODES) {
        fail("graph: more than %d tensors recorded; pause the graph in loops", MAX_NODES);
    }
    Node *node = &nodes[n_nodes];
    node->id = t->id;
    snprintf(node->name, LABEL_SIZE, "%s", t->name != NULL ? t->name : "");
    snprintf(node->shape, LABEL_SIZE, "(%s)", join_sizes(t->shape, t->ndim, ", "));
    n_nodes += 1;
    return n_nodes - 1;
}

void graph_record(const char *op, const Tensor *out, const Tensor *const *inputs,
                  int n_inputs) {
    if (!graph_recording()) {
        return;
    }
    int to = node_of(out);
    for (int i = 0; i < n_inputs; i++) {
        if (n_edges == MAX_EDGES) {
            fail("graph: more than %d operations recorded; pause the graph in loops", MAX_EDGES);
        }
        edges[n_edges].from = node_of(inputs[i]);
        edges[n_edges].to = to;
        snprintf(edges[n_edges].op, LABEL_SIZE, "%s", op);
        n_edges += 1;
    }
}

void graph_record1(const char *op, const Tensor *out, const Tensor *in) {
    graph_record(op, out, (const Tensor *const[]){in}, 1);
}

void graph_record2(const char *op, const Tensor *out, const Tensor *in0, const Tensor *in1) {
    graph_record(op, out, (const Tensor *const[]){in0, in1}, 2);
}

void graph_name(const Tensor *t, const char *name) {
    if (!graph_recording()) {
        return;
    }
    snprintf(nodes[node_of(t)].name, LABEL_SIZE, "%s", name);
}

bool graph_write(const char *path, const char *title) {
    FILE *file = fopen(path, "w");
    if (file == NULL) {
        return false;
    }
    fprintf(file, "// %s\n// written by the lesson's --dot; render: dot -Tsvg\n", title);
    fprintf(file, "digraph dataflow {\n");
    fprintf(file, "  rankdir=TB;\n");
    fprintf(file, "  node [shape=box, style=rounded, fontname=\"monospace\", fontsize=10];\n");
    fprintf(file, "  edge [fontname=\"monospace\", fontsize=9];\n");
    for (int i = 0; i < n_nodes; i++) {
        // Named tensors are the notebook's variables; unnamed ones are the
        // intermediate results (a transposed K, a scaled score) drawn small.
        if (nodes[i].name[0] != '\0') {
            fprintf(file, "  t%d [label=\"%s\\n%s\"];\n", i, nodes[i].name, nodes[i].shape);
        } else {
            fprintf(file, "  t%d [label=\"%s\", style=\"rounded,dashed\", fontsize=8];\n", i,
                    nodes[i].shape);
        }
    }
    for (int i = 0; i < n_edges; i++) {
        fprintf(file, "  t%d -> t%d [label=\"%s\"];\n", edges[i].from, edges[i].to, edges[i].op);
    }
    fprintf(file, "}\n");
    return fclose(file) == 0;
}
