// test_graph.c - common/lesson/trace.c and common/lesson/graph.c: the hook every
// operation reports to, and the dataflow that --dot draws from it.
//
// A few operations are run with graph_record installed as the trace hook;
// the dot text must hold one node per tensor (its name, if it has one, and
// its shape) and one edge per input; each operation is named once, with its
// numbers, on the edge from its first input, and the edges of an operation
// of several inputs meet at one point of its result (samehead). Node numbers
// are given in the order tensors are first seen, so the whole text can be
// spelled out.
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lesson/graph.h"
#include "harness.h"

// The recorded graph as text (an arena string).
static const char *graph_text(const char *title) {
    TextStream text;
    graph_write(text_stream_open(&text), title);
    return text_stream_close(&text);
}

// Every test starts and ends with no hook, nothing paused, an empty graph.
static void reset(void) {
    trace_set_hook(NULL);
    trace_pause(false);
    graph_clear();
}

START_TEST(test_nodes_and_edges) {
    ck_assert_ptr_null(trace_set_hook(graph_record));   // nobody listened before
    const Tensor *x = named("x", zeros(shape2(2, 3)));           // node t0
    const Tensor *x_t = transpose(x, 0, 1);                      // t1, unnamed
    const Tensor *scores = matmul(x, x_t);                       // t2
    named("scores", scores);                                     // named after the fact
    ck_assert(!trace_pause(true));                               // was running; not recorded:
    const Tensor *hidden = mul_scalar(scores, 2.0f);
    ck_assert(trace_pause(true));                                // pausing again nests...
    ck_assert(trace_pause(true));                                // ...and says it was paused
    ck_assert(trace_pause(false));
    named("w", softmax(scores, -1));                             // t3
    (void)hidden;
    const char *text = graph_text("a test graph");
    ck_assert_ptr_eq(trace_set_hook(NULL), graph_record);

    const char *expected =
        "// a test graph\n"
        "// written by the lesson's --dot; render: dot -Tsvg\n"
        "digraph dataflow {\n"
        "  rankdir=TB;\n"
        "  node [shape=box, style=rounded, fontname=\"monospace\", fontsize=10];\n"
        "  edge [fontname=\"monospace\", fontsize=9];\n"
        "  t0 [label=\"x\\n(2, 3)\"];\n"
        "  t1 [label=\"(3, 2)\", style=\"rounded,dashed\", fontsize=8];\n"
        "  t2 [label=\"scores\\n(2, 2)\"];\n"
        "  t3 [label=\"w\\n(2, 2)\"];\n"
        "  t0 -> t1 [label=\"transpose(0, 1)\"];\n"
        "  t0 -> t2 [label=\"matmul\", samehead=\"op1\"];\n"
        "  t1 -> t2 [samehead=\"op1\"];\n"
        "  t2 -> t3 [label=\"softmax(-1)\"];\n"
        "}\n";
    ck_assert_str_eq(text, expected);
    ck_assert_ptr_null(strstr(text, "* 2"));   // the paused op left no trace
}
END_TEST

// trace() by hand: three inputs, numbers, an operator symbol, a label.
START_TEST(test_record_by_hand) {
    trace_set_hook(graph_record);
    const Tensor *a = zeros(shape1(4));
    const Tensor *b = zeros(shape3(1, 2, 3));
    const Tensor *c = zeros(shape2(5, 5));
    const Tensor *out = zeros((Shape){.ndim = 0});
    trace("three inputs", out, 3, (const Tensor *const[]){a, b, c}, 2,
          (const double[]){1, -0.5});
    trace("*", c, 1, &a, 1, (const double[]){0.125});
    labeled("labeled later", c);
    const char *text = graph_text("by hand");
    const char *missing = NULL;
    ck_assert_msg(lines_in_order(text,
                                 "  t0 [label=\"()\", style=\"rounded,dashed\", fontsize=8];\n"
                                 "  t1 [label=\"(4,)\", style=\"rounded,dashed\", fontsize=8];\n"
                                 "  t2 [label=\"(1, 2, 3)\", style=\"rounded,dashed\", "
                                 "fontsize=8];\n"
                                 "  t3 [label=\"labeled later\\n(5, 5)\"];\n"
                                 "  t1 -> t0 [label=\"three inputs(1, -0.5)\", "
                                 "samehead=\"op0\"];\n"
                                 "  t2 -> t0 [samehead=\"op0\"];\n"
                                 "  t3 -> t0 [samehead=\"op0\"];\n"
                                 "  t1 -> t3 [label=\"* 0.125\"];\n",
                                 &missing),
                  "missing \"%s\" in:\n%s", missing, text);
}
END_TEST

// The ops report their numbers: each label as the graph writes it.
START_TEST(test_op_labels) {
    trace_set_hook(graph_record);
    const Tensor *x = ones(shape3(2, 3, 4));
    permute(x, (const int[]){2, 0, 1});
    narrow(x, 1, 1, 2);
    div_scalar(x, 8.0f);
    masked_fill(x, eq_scalar(x, 1.0f), -INFINITY);
    triu(x, 1);
    repeat_interleave(x, 2, 0);
    const Tensor *parts[2];
    split(parts, x, 2, 2);
    cat(parts, 2, -1);
    const char *text = graph_text("labels");
    const char *labels[] = {"permute(2, 0, 1)", "narrow(1, 1, 2)", "/ 8", "== 1",
                            "masked_fill(-inf)", "triu(1)", "repeat_interleave(2, 0)",
                            "narrow(2, 0, 2)", "narrow(2, 2, 2)", "cat(-1)"};
    for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++) {
        const char *want = path_join("[label=\"%s\"", labels[i]);   // then ']' or a samehead
        ck_assert_msg(strstr(text, want) != NULL, "no %s in:\n%s", want, text);
    }
}
END_TEST

// --- one label per operation ---

// An edge of the written graph: its nodes, its label ("" for none) and its
// samehead group ("" for none).
typedef struct {
    int from, to;
    char label[64], group[16];
} DotEdge;

// The edges of dot text as graph_write writes them, in order.
static int read_edges(DotEdge *edges, int max, const char *text) {
    int n = 0;
    for (const char *line = strstr(text, "  t"); line != NULL; line = strstr(line + 1, "\n  t")) {
        line += line[0] == '\n';
        DotEdge e = {0};
        int used = 0;
        if (sscanf(line, "  t%d -> t%d%n", &e.from, &e.to, &used) < 2) {
            continue;   // a node
        }
        const char *attrs = line + used, *end = strchr(attrs, '\n');
        const char *label = strstr(attrs, "label=\""), *group = strstr(attrs, "samehead=\"");
        if (label != NULL && label < end) {
            sscanf(label, "label=\"%63[^\"]\"", e.label);
        }
        if (group != NULL && group < end) {
            sscanf(group, "samehead=\"%15[^\"]\"", e.group);
        }
        ck_assert_int_lt(n, max);
        edges[n++] = e;
    }
    return n;
}

// Real operations of one, two and three inputs, one using the same tensor
// twice: each is named once, on its first input's edge, and the edges of
// each operation of several inputs share one samehead group of their own.
START_TEST(test_one_label_per_operation) {
    trace_set_hook(graph_record);
    manual_seed(0);
    Linear layer = linear_init("proj", 4, 3, true);
    const Tensor *x = named("x", rand_tensor(shape2(2, 4)));         // t2 (weight t0, bias t1)
    const Tensor *y = named("y", linear(&layer, x));                 // t3 = linear(x, W, b)
    const Tensor *scores = named("s", matmul(y, transpose(y, 0, 1)));   // t5 = matmul(t3, t4)
    const Tensor *gram = named("g", matmul(x, transpose(x, 0, 1)));     // t7
    named("self", add(scores, scores));                              // t8 = add(t5, t5)
    named("w", softmax(gram, -1));                                   // t9
    const char *text = graph_text("operations");
    DotEdge edges[32];
    int n = read_edges(edges, 32, text);
    // Node numbers in first-seen order: the parameters are drawn first.
    struct {
        const char *label;
        int first, to, n_inputs;
    } ops[] = {{"linear", 2, 3, 3}, {"transpose(0, 1)", 3, 4, 1}, {"matmul", 3, 5, 2},
               {"transpose(0, 1)", 2, 6, 1}, {"matmul", 2, 7, 2}, {"add", 5, 8, 2},
               {"softmax(-1)", 7, 9, 1}};
    int n_ops = sizeof ops / sizeof ops[0], e = 0;
    for (int k = 0; k < n_ops; k++) {
        ck_assert_msg(e + ops[k].n_inputs <= n, "%s: too few edges in:\n%s", ops[k].label, text);
        // The first edge carries the name; the others none, all into the result.
        ck_assert_int_eq(edges[e].from, ops[k].first);
        ck_assert_str_eq(edges[e].label, ops[k].label);
        for (int i = 0; i < ops[k].n_inputs; i++) {
            ck_assert_int_eq(edges[e + i].to, ops[k].to);
            ck_assert_msg(i == 0 || edges[e + i].label[0] == '\0', "%s named twice in:\n%s",
                          ops[k].label, text);
            // One group per operation of several inputs, shared by its edges only.
            if (ops[k].n_inputs == 1) {
                ck_assert_str_eq(edges[e + i].group, "");
            } else {
                ck_assert_str_ne(edges[e + i].group, "");
                ck_assert_str_eq(edges[e + i].group, edges[e].group);
            }
        }
        for (int other = 0; other < e && ops[k].n_inputs > 1; other++) {
            ck_assert_str_ne(edges[other].group, edges[e].group);
        }
        e += ops[k].n_inputs;
    }
    ck_assert_int_eq(e, n);   // no other edges
}
END_TEST

// dot refuses more than 5 samehead groups at one node ("too many (> 5)
// same{head,tail} groups"): a tensor that 6 operations of two inputs write
// into gets no groups, and each operation is still named once.
START_TEST(test_samehead_at_most_five_a_node) {
    trace_set_hook(graph_record);
    const Tensor *into = zeros(shape1(2)), *other = zeros(shape1(2));
    for (int joined = 5; joined <= 6; joined++) {
        graph_clear();
        for (int k = 0; k < joined; k++) {
            const Tensor *source = zeros(shape1(2));
            trace("append", into, 2, (const Tensor *const[]){source, other}, 0, NULL);
        }
        const char *text = graph_text("appends");
        DotEdge edges[16];
        int n = read_edges(edges, 16, text), labels = 0, groups = 0;
        ck_assert_int_eq(n, 2 * joined);
        for (int i = 0; i < n; i++) {
            labels += edges[i].label[0] != '\0';
            groups += edges[i].group[0] != '\0';
        }
        ck_assert_int_eq(labels, joined);
        ck_assert_msg(groups == (joined <= 5 ? n : 0), "%d edges grouped in:\n%s", groups, text);
    }
}
END_TEST

START_TEST(test_not_recording) {
    // Without a hook (a lesson run without --dot or --dump) nothing is
    // kept: the written graph has no nodes.
    const Tensor *x = named("x", zeros(shape2(2, 2)));
    matmul(x, x);
    const char *text = graph_text("empty");
    ck_assert_ptr_null(strstr(text, "t0"));
    ck_assert_ptr_null(strstr(text, "->"));
    // graph_clear forgets what was recorded.
    trace_set_hook(graph_record);
    matmul(x, x);
    graph_clear();
    text = graph_text("fresh");
    ck_assert_ptr_null(strstr(text, "t0"));
}
END_TEST

static Suite *graph_suite(void) {
    Suite *suite = suite_create("graph");
    TCase *tc = new_tcase("dot");
    tcase_add_checked_fixture(tc, reset, reset);
    tcase_add_test(tc, test_nodes_and_edges);
    tcase_add_test(tc, test_record_by_hand);
    tcase_add_test(tc, test_op_labels);
    tcase_add_test(tc, test_one_label_per_operation);
    tcase_add_test(tc, test_samehead_at_most_five_a_node);
    tcase_add_test(tc, test_not_recording);
    suite_add_tcase(suite, tc);
    return suite;
}

int main(void) { return run_suite(graph_suite()); }
