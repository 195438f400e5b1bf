// test_graph.c - common/lesson/trace.c and common/lesson/graph.c: the hook every
// operation reports to, and the dataflow that --dot draws from it.
//
// A few operations are run with graph_record installed as the trace hook;
// the dot text must hold one node per tensor (its name, if it has one, and
// its shape) and one edge per input, labelled with the operation and its
// numbers. Node numbers are given in the order tensors are first seen, so
// the whole text can be spelled out.
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
        "  t0 -> t2 [label=\"matmul\"];\n"
        "  t1 -> t2 [label=\"matmul\"];\n"
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
                                 "  t1 -> t0 [label=\"three inputs(1, -0.5)\"];\n"
                                 "  t2 -> t0 [label=\"three inputs(1, -0.5)\"];\n"
                                 "  t3 -> t0 [label=\"three inputs(1, -0.5)\"];\n"
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
        const char *want = path_join("[label=\"%s\"]", labels[i]);
        ck_assert_msg(strstr(text, want) != NULL, "no %s in:\n%s", want, text);
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
    tcase_add_test(tc, test_not_recording);
    suite_add_tcase(suite, tc);
    return suite;
}

int main(void) { return run_suite(graph_suite()); }
