// graph.c - record the dataflow from the trace, write it as dot.
//
// Nodes are kept by tensor id with a copy of their label, so the graph
// stays valid after the tensors themselves are freed (arena_release).
//
// An operation of several inputs (a Linear's x, weight and bias; a
// matmul's two factors) is one edge per input, but it is named once: on the
// edge from its first input (the data: x, the left factor), the others
// unlabelled. In the drawing the edges of one operation meet at one point of
// their result (dot's samehead), so they read as one operation, and each
// operation's name is written once, which keeps the graph narrow.
#include "lesson/graph.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"

#define MAX_NODES 4096
#define MAX_EDGES 8192
#define LABEL_SIZE 64
#define MAX_SAMEHEAD 5   // dot refuses more groups of joined edges at one node (an error)

typedef struct {
    int id;                  // the tensor's id
    char name[LABEL_SIZE];   // its notebook name, or "" if it has none
    char shape[LABEL_SIZE];  // "(3, 2, 4)"
} Node;

typedef struct {
    int from, to;            // node indices
    int op;                  // which operation: the edges of one share it
    char label[LABEL_SIZE];  // the operation's name on its first edge, "" on the others
} Edge;

static Node nodes[MAX_NODES];
static int n_nodes = 0;
static Edge edges[MAX_EDGES];
static int n_edges = 0;
static int n_ops = 0;

void graph_clear(void) {
    n_nodes = 0;
    n_edges = 0;
    n_ops = 0;
}

// The node of tensor t, added the first time t is seen.
static int node_of(const Tensor *t) {
    for (int i = n_nodes - 1; i >= 0; i--) {
        if (nodes[i].id == t->id) {
            return i;
        }
    }
    if (n_nodes == MAX_NODES) {
        fail("graph: more than %d tensors recorded; pause the trace in loops", MAX_NODES);
    }
    Node *node = &nodes[n_nodes];
    node->id = t->id;
    node->name[0] = '\0';
    snprintf(node->shape, LABEL_SIZE, "%s", shape_str(t->shape, SIZES_TUPLE));
    n_nodes += 1;
    return n_nodes - 1;
}

// The edge label: "transpose(1, 2)" for a named op with numbers, "matmul"
// for one without, "* 0.125" for an operator symbol.
static void edge_label(char *label, const TraceEvent *event) {
    bool is_symbol = !isalpha((unsigned char)event->op[0]);
    int length = snprintf(label, LABEL_SIZE, "%s", event->op);
    for (int i = 0; i < event->n_args && length < LABEL_SIZE; i++) {
        const char *before = is_symbol ? " " : i == 0 ? "(" : ", ";
        length += snprintf(label + length, LABEL_SIZE - (size_t)length, "%s%g", before,
                           event->args[i]);
    }
    if (!is_symbol && event->n_args > 0 && length < LABEL_SIZE) {
        snprintf(label + length, LABEL_SIZE - (size_t)length, ")");
    }
}

void graph_record(const TraceEvent *event) {
    if (event->name != NULL) {   // a name, not an operation
        snprintf(nodes[node_of(event->out)].name, LABEL_SIZE, "%s", event->name);
        return;
    }
    int to = node_of(event->out);
    for (int i = 0; i < event->n_inputs; i++) {
        if (n_edges == MAX_EDGES) {
            fail("graph: more than %d operations recorded; pause the trace in loops",
                 MAX_EDGES);
        }
        Edge *edge = &edges[n_edges];
        edge->from = node_of(event->inputs[i]);
        edge->to = to;
        edge->op = n_ops;
        edge->label[0] = '\0';
        if (i == 0) {   // the operation named once, on its first input's edge
            edge_label(edge->label, event);
        }
        n_edges += 1;
    }
    n_ops += 1;
}

// Whether edge e's operation has other edges (the edges of one operation
// are recorded one after another).
static bool shares_op(int e) {
    return (e > 0 && edges[e - 1].op == edges[e].op) ||
           (e + 1 < n_edges && edges[e + 1].op == edges[e].op);
}

// How many operations of several inputs end at node `to` (each would be a
// samehead group there).
static int joined_ops_at(int to) {
    int count = 0;
    for (int e = 0; e < n_edges; e++) {
        bool first_of_op = e == 0 || edges[e - 1].op != edges[e].op;
        count += edges[e].to == to && first_of_op && shares_op(e);
    }
    return count;
}

// Write text for a dot "quoted string": a double quote or a backslash would
// end the string or begin an escape there, so each gets a backslash before
// it; a newline becomes dot's \n (a line break in the label), and other
// control characters are dropped. Used for the title comment too, which a
// newline would end.
static void write_escaped(FILE *file, const char *text) {
    for (const char *c = text; *c != '\0'; c++) {
        unsigned char byte = (unsigned char)*c;
        if (byte == '"' || byte == '\\') {
            fputc('\\', file);
            fputc(byte, file);
        } else if (byte == '\n') {
            fputs("\\n", file);
        } else if (byte >= 0x20 && byte != 0x7f) {
            fputc(byte, file);
        }
    }
}

void graph_write(FILE *file, const char *title) {
    fputs("// ", file);
    write_escaped(file, title);
    fprintf(file, "\n// written by the lesson's --dot; render: dot -Tsvg\n");
    fprintf(file, "digraph dataflow {\n");
    fprintf(file, "  rankdir=TB;\n");
    fprintf(file, "  node [shape=box, style=rounded, fontname=\"monospace\", fontsize=10];\n");
    fprintf(file, "  edge [fontname=\"monospace\", fontsize=9];\n");
    for (int i = 0; i < n_nodes; i++) {
        // Named tensors are the notebook's variables; unnamed ones are the
        // intermediate results (a transposed K, a scaled score) drawn small.
        fprintf(file, "  t%d [label=\"", i);
        if (nodes[i].name[0] != '\0') {
            write_escaped(file, nodes[i].name);
            fprintf(file, "\\n%s\"];\n", nodes[i].shape);
        } else {
            fprintf(file, "%s\", style=\"rounded,dashed\", fontsize=8];\n", nodes[i].shape);
        }
    }
    for (int i = 0; i < n_edges; i++) {
        const Edge *edge = &edges[i];
        bool joined = shares_op(i) && joined_ops_at(edge->to) <= MAX_SAMEHEAD;
        fprintf(file, "  t%d -> t%d", edge->from, edge->to);
        if (edge->label[0] != '\0' || joined) {
            fputs(" [", file);
            if (edge->label[0] != '\0') {
                fputs("label=\"", file);
                write_escaped(file, edge->label);
                fputs(joined ? "\", " : "\"", file);
            }
            if (joined) {
                fprintf(file, "samehead=\"op%d\"", edge->op);
            }
            fputs("]", file);
        }
        fputs(";\n", file);
    }
    fprintf(file, "}\n");
}
