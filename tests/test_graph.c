// test_graph.c - common/graph.c: the dataflow that --dot writes.
//
// A few operations are run with the graph recording; the dot text must
// hold one node per tensor (its name, if it has one, and its shape) and one
// edge per input, labelled with the operation. Node numbers are given in
// the order tensors are first seen, so the whole text can be spelled out.
#include <string.h>

#include "harness.h"

// Write the recorded graph to a temporary file and read it back.
static const char *graph_text(const char *title) {
    const char *dir = make_temp_dir();
    const char *path = path_join("%s/graph.dot", dir);
    ck_assert(graph_write(path, title));
    const char *text = read_text(path);
    remove_dir(dir);
    return text;
}

START_TEST(test_nodes_and_edges) {
    ck_assert(!graph_recording());       // nothing is recorded before graph_start
    graph_start();
    ck_assert(graph_recording());
    Tensor *x = named("x", zeros(shape2(2, 3)));               // node t0
    Tensor *x_t = transpose(x, 0, 1);                          // t1, unnamed
    Tensor *scores = matmul(x, x_t);                           // t2
    named("scores", scores);                                   // named after the fact
    graph_pause(true);                                         // not recorded:
    ck_assert(!graph_recording());
    Tensor *hidden = mul_scalar(scores, 2.0f);
    graph_pause(false);
    ck_assert(graph_recording());
    Tensor *w = named("w", softmax(scores, -1));               // t3
    (void)hidden;
    const char *text = graph_text("a test graph");
    graph_clear();
    ck_assert(!graph_recording());

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
        "  t2 -> t3 [label=\"softmax(dim=-1)\"];\n"
        "}\n";
    ck_assert_str_eq(text, expected);
    ck_assert_ptr_null(strstr(text, "* 2"));   // the paused op left no trace
    ck_assert_str_eq(w->name, "w");
}
END_TEST

START_TEST(test_record_by_hand) {
    graph_start();
    Tensor *a = zeros(shape1(4));
    Tensor *b = zeros(shape3(1, 2, 3));
    Tensor *c = zeros(shape2(5, 5));
    Tensor *out = zeros((Shape){.ndim = 0});
    graph_record("three inputs", out, (const Tensor *const[]){a, b, c}, 3);
    graph_record1("one", c, a);
    graph_name(c, "named later");
    const char *text = graph_text("by hand");
    graph_clear();
    const char *missing = NULL;
    ck_assert_msg(lines_in_order(text,
                                 "  t0 [label=\"()\", style=\"rounded,dashed\", fontsize=8];\n"
                                 "  t1 [label=\"(4)\", style=\"rounded,dashed\", fontsize=8];\n"
                                 "  t2 [label=\"(1, 2, 3)\", style=\"rounded,dashed\", fontsize=8];\n"
                                 "  t3 [label=\"named later\\n(5, 5)\"];\n"
                                 "  t1 -> t0 [label=\"three inputs\"];\n"
                                 "  t2 -> t0 [label=\"three inputs\"];\n"
                                 "  t3 -> t0 [label=\"three inputs\"];\n"
                                 "  t1 -> t3 [label=\"one\"];\n",
                                 &missing),
                  "missing \"%s\" in:\n%s", missing, text);
}
END_TEST

START_TEST(test_not_recording) {
    // Without graph_start (a lesson run without --dot) nothing is kept:
    // the written graph has no nodes.
    graph_clear();
    Tensor *x = named("x", zeros(shape2(2, 2)));
    matmul(x, x);
    const char *text = graph_text("empty");
    ck_assert_ptr_null(strstr(text, "t0"));
    ck_assert_ptr_null(strstr(text, "->"));
    // And an unwritable path is reported, not ignored.
    ck_assert(!graph_write("/nonexistent-attn-dir/g.dot", "x"));
    // graph_start forgets what an earlier run recorded.
    graph_start();
    matmul(x, x);
    graph_start();
    text = graph_text("fresh");
    graph_clear();
    ck_assert_ptr_null(strstr(text, "t0"));
}
END_TEST

static Suite *graph_suite(void) {
    Suite *suite = suite_create("graph");
    TCase *tc = new_tcase("dot");
    tcase_add_test(tc, test_nodes_and_edges);
    tcase_add_test(tc, test_record_by_hand);
    tcase_add_test(tc, test_not_recording);
    suite_add_tcase(suite, tc);
    return suite;
}

int main(void) { return run_suite(graph_suite()); }
