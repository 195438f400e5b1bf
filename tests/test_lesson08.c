// test_lesson08.c - lesson 8 (gqa) against PyTorch and against itself.
//
// Recorded: tests/reference/gen_lesson08.py ran the GQA notebook's cells (group sum
// fixed) in PyTorch 1.13 and wrote tests/data/lesson08/seed<S>/. The lesson
// binary is run with the same seed and sizes and --dump; its inputs must be
// PyTorch's bit for bit, its outputs equal to float rounding, its printed
// lines those of the PyTorch cell.
// In-process: the lesson's functions (its source is included with main
// renamed) against the repeat_interleave version, lesson 6's multi-head
// attention, multi-query attention, and hand-worked cases.
#include <math.h>
#include <string.h>

#include "harness.h"

#define main lesson_main
#include "../lessons/08-gqa/gqa.c"
#undef main

#define LESSON "08-gqa"
#define BINARY lesson_binary(LESSON)
#define DATA DATA_DIR "/lesson08"   // what gen_lesson08.py recorded, cases.txt lists

// --- reference runs -------------------------------------------------------------

// torch.randn, both of its paths: bit for bit.
static const char *const INPUTS[] = {"query", "key", "value", NULL};

// The lesson run with the case's flags and --dump against PyTorch's run:
// inputs bit for bit, the computed tensors to float rounding, the printed
// lines (the notebook's, and the tensor values PyTorch prints) in order.
//
// out: our loops sum in a different order than PyTorch's einsum (bmm), so
// they agree to float rounding only. The scores are sums of D products of
// N(0,1) numbers, up to ~30 in size: a relative rounding of 2^-24 per term
// gives score errors of ~1e-6 and outputs (weighted means of the values) of
// a few 1e-7; measured worst: 3.6e-7 at seed 0.
// out_group_sum: the notebook's scores sum R*D products (four times larger
// logits), so they get a tolerance ten times looser; measured worst: 5.7e-6.
START_TEST(test_recorded_runs) {
    ReferenceRun every_case = {
        .lesson = LESSON,
        .exact = INPUTS,
        .computed = (const char *const[]){"out", NULL},
        .atol = 2e-6f,
        .rtol = 1e-5f,
        .loose = (const char *const[]){"out_group_sum", NULL},
        .loose_atol = 2e-5f,
        .loose_rtol = 1e-4f,
    };
    check_recorded_case(every_case, recorded_case(DATA, _i));
}
END_TEST

// The dumps have the shapes docs/08-gqa.md gives them: out one head per
// query head, out_group_sum and key one per key/value head.
START_TEST(test_dump_shapes) {
    const char *dump = make_temp_dir();
    RunResult run = run_program(BINARY, (const char *const[]){"--dump", dump, "--seed", "1",
                                                              "--batch", "2", "--seq", "5",
                                                              "--heads", "6", "--kv-heads", "3",
                                                              "--head-dim", "4", NULL});
    ck_assert_int_eq(run.status, 0);
    const Tensor *out = load_npy(path_join("%s/out.npy", dump));
    const Tensor *out_group_sum = load_npy(path_join("%s/out_group_sum.npy", dump));
    ck_assert_str_eq(size_str(out), "torch.Size([2, 5, 6, 4])");
    ck_assert_str_eq(size_str(out_group_sum), "torch.Size([2, 5, 3, 4])");
    ck_assert_str_eq(size_str(load_npy(path_join("%s/key.npy", dump))),
                     "torch.Size([2, 5, 3, 4])");
    remove_dir(dump);
}
END_TEST

// --- in-process: the loops against other ways of computing the same ----------

typedef struct {
    const Tensor *query, *key, *value;
} Inputs;

static Inputs draw(uint64_t seed, int batch, int seq, int heads, int kv_heads, int head_dim) {
    manual_seed(seed);
    Inputs in;
    in.query = randn(shape4(batch, seq, heads, head_dim));                   // (B, N, H, D)
    in.key = randn(shape4(batch, seq, kv_heads, head_dim));                  // (B, S, KV, D)
    in.value = randn(shape4(batch, seq, kv_heads, head_dim));
    return in;
}

// The notebook's cells 9 and 11 as written, after cell 8 (which
// grouped_query_attention runs and keeps in its steps), as main() runs them.
static const Tensor *group_sum_of(Inputs in) {
    GroupedQueryAttentionSteps steps;
    grouped_query_attention(&steps, in.query, in.key, in.value);
    return group_sum_attention(NULL, steps.query, steps.key, steps.value);
}

// Lesson 6's attention without a mask, written here with library ops:
// q (B, N, H, D); k, v (B, S, H, D) -> (B, N, H, D).
static const Tensor *lesson6_attention(const Tensor *q, const Tensor *k, const Tensor *v) {
    const Tensor *q_state = transpose(q, 1, 2);
    const Tensor *k_state = transpose(k, 1, 2);
    const Tensor *v_state = transpose(v, 1, 2);
    const Tensor *weight = softmax(div_scalar(matmul(q_state, transpose(k_state, -1, -2)),
                                        (float)sqrt((double)size(q, 3))), -1);
    return contiguous(transpose(matmul(weight, v_state), 1, 2));
}

// kv_heads = 1 (MQA), strictly between (2 and 4 of 8; 3 of 6), and = heads.
START_TEST(test_loops_equal_repeat_interleave) {
    const int configs[][3] = {{8, 1, 5}, {8, 2, 6}, {8, 4, 7}, {8, 8, 8}, {6, 3, 9}};
    for (int c = 0; c < 5; c++) {
        int heads = configs[c][0], kv_heads = configs[c][1];
        Inputs in = draw((uint64_t)configs[c][2], 2, 7, heads, kv_heads, 5);
        const Tensor *loops = grouped_query_attention(NULL, in.query, in.key, in.value);
        const Tensor *repeated = repeat_interleave_attention(in.query, in.key, in.value);
        ck_assert_str_eq(size_str(loops), path_join("torch.Size([2, 7, %d, 5])", heads));
        // Same products, summed in the same order: they agree to rounding
        // (in fact bit for bit today, but the claim is only the math).
        assert_close(loops, repeated, 1e-6f, 1e-5f,
                     path_join("heads %d kv_heads %d", heads, kv_heads));
    }
}
END_TEST

// kv_heads = heads is lesson 6's multi-head attention.
START_TEST(test_mha_is_lesson6) {
    Inputs in = draw(11, 3, 6, 8, 8, 16);
    const Tensor *loops = grouped_query_attention(NULL, in.query, in.key, in.value);
    assert_close(loops, lesson6_attention(in.query, in.key, in.value), 1e-6f, 1e-5f,
                 "kv_heads = heads against lesson 6");
    // With R = 1 there is nothing to sum over g: the notebook's einsum is
    // then right, and equal to true GQA.
    assert_close(group_sum_of(in), loops, 1e-6f, 1e-5f, "group sum with R = 1");
}
END_TEST

// kv_heads = 1 is multi-query attention: lesson 6's attention with the one
// key/value head given to every query head.
START_TEST(test_mqa_is_shared_head) {
    Inputs in = draw(12, 2, 9, 4, 1, 8);
    const Tensor *loops = grouped_query_attention(NULL, in.query, in.key, in.value);
    const Tensor *k_shared = contiguous(expand(in.key, shape4(-1, -1, 4, -1)));
    const Tensor *v_shared = contiguous(expand(in.value, shape4(-1, -1, 4, -1)));
    assert_close(loops, lesson6_attention(in.query, k_shared, v_shared), 1e-6f, 1e-5f,
                 "kv_heads = 1 against one shared head");
}
END_TEST

// Hand-worked: make every value of key/value head h equal to 10*h + 1. A
// softmax's weights sum to 1, so query head i's output is exactly the
// constant of the key/value head it reads: 10*(i / R) + 1, never i % KV.
START_TEST(test_query_head_reads_kv_head_i_over_R) {
    int heads = 8, kv_heads = 2, R = 4;
    Inputs in = draw(13, 1, 5, heads, kv_heads, 3);
    Tensor *value = clone(in.value);
    in.value = value;
    for (int s = 0; s < 5; s++) {
        for (int h = 0; h < kv_heads; h++) {
            for (int d = 0; d < 3; d++) {
                *at4(value, 0, s, h, d) = 10.0f * (float)h + 1.0f;
            }
        }
    }
    const Tensor *out = grouped_query_attention(NULL, in.query, in.key, in.value);
    for (int n = 0; n < 5; n++) {
        for (int i = 0; i < heads; i++) {
            for (int d = 0; d < 3; d++) {
                float want = 10.0f * (float)(i / R) + 1.0f;
                ck_assert_msg(fabsf(*at4(out, 0, n, i, d) - want) <= 1e-5f,
                              "out[0, %d, %d, %d] = %g, want %g (kv head %d)", n, i, d,
                              (double)*at4(out, 0, n, i, d), (double)want, i / R);
            }
        }
    }
}
END_TEST

// The notebook's einsum: kv_heads heads, not heads; not any true GQA head;
// and exactly attention with each group's queries added into one.
START_TEST(test_group_sum_is_wrong_as_explained) {
    int heads = 8, kv_heads = 2, R = 4;
    Inputs in = draw(14, 2, 10, heads, kv_heads, 8);
    const Tensor *out = grouped_query_attention(NULL, in.query, in.key, in.value);
    const Tensor *out_group_sum = group_sum_of(in);
    ck_assert_str_eq(size_str(out_group_sum), "torch.Size([2, 10, 2, 8])");
    ck_assert_str_eq(size_str(out), "torch.Size([2, 10, 8, 8])");
    // It matches none of the R true heads that share its key/value head.
    for (int h = 0; h < kv_heads; h++) {
        for (int g = 0; g < R; g++) {
            const Tensor *true_head = narrow(out, 2, h * R + g, 1);
            const Tensor *summed_head = narrow(out_group_sum, 2, h, 1);
            float diff = max_abs_diff(true_head, summed_head);
            ck_assert_msg(diff > 0.05f, "kv head %d, query head %d: differs only by %g", h,
                          h * R + g, (double)diff);
        }
    }
    // What it is: the R queries of a group summed, then ordinary attention.
    Tensor *summed_query = zeros(shape4(2, 10, kv_heads, 8));
    for (int b = 0; b < 2; b++) {
        for (int n = 0; n < 10; n++) {
            for (int i = 0; i < heads; i++) {
                for (int d = 0; d < 8; d++) {
                    *at4(summed_query, b, n, i / R, d) += *at4(in.query, b, n, i, d);
                }
            }
        }
    }
    // Looser than above: the summed scores are ~R times larger, and the
    // two sides add the R*D products in different orders.
    assert_close(out_group_sum, lesson6_attention(summed_query, in.key, in.value), 1e-5f,
                 1e-4f, "group sum against attention of summed queries");
}
END_TEST

// The notebook's first cell: scaled_dot_product_attention on (b, n, h, d)
// tensors, key and value repeated to every query head. Against PyTorch's
// F._scaled_dot_product_attention on the recorded inputs; with the heads in
// front it is GQA; as the cell calls it, no position sees another: changing
// token 0's key and value leaves every other position's output bit for bit.
START_TEST(test_first_cell) {
    const RecordedCase *c = recorded_case(DATA, _i);
    const char *reference = c->reference;
    Inputs in = {load_npy(path_join("%s/query.npy", reference)),
                 load_npy(path_join("%s/key.npy", reference)),
                 load_npy(path_join("%s/value.npy", reference))};
    int N = size(in.query, 1), R = size(in.query, 2) / size(in.key, 2);
    const Tensor *key_h = repeat_interleave(in.key, R, 2);                   // (B, S, H, D)
    Tensor *value_h = repeat_interleave(in.value, R, 2);                     // (B, S, H, D)
    const Tensor *weights;
    const Tensor *wrong = scaled_dot_product_attention(&weights, in.query, key_h, value_h);
    assert_close(wrong, load_npy(path_join("%s/sdpa_bnhd.npy", reference)), 2e-6f, 1e-5f,
                 path_join("%s: the notebook's call", c->dir));
    const Tensor *right = transpose(scaled_dot_product_attention(&weights,
        transpose(in.query, 1, 2), transpose(key_h, 1, 2), transpose(value_h, 1, 2)), 1, 2);
    assert_close(right, grouped_query_attention(NULL, in.query, in.key, in.value), 1e-6f, 1e-5f,
                 path_join("%s: heads in front against GQA", c->dir));
    if (N > 1) {
        Tensor *key_moved = clone(key_h);
        for (int b = 0; b < size(key_h, 0); b++) {
            for (int h = 0; h < size(key_h, 2); h++) {
                for (int d = 0; d < size(key_h, 3); d++) {
                    *at4(key_moved, b, 0, h, d) += 1.0f;
                    *at4(value_h, b, 0, h, d) += 1.0f;
                }
            }
        }
        const Tensor *moved =
            scaled_dot_product_attention(&weights, in.query, key_moved, value_h);
        assert_bitwise_equal(narrow(moved, 1, 1, N - 1), narrow(wrong, 1, 1, N - 1),
                             "the notebook's call: positions after 0");
        ck_assert(max_abs_diff(narrow(moved, 1, 0, 1), narrow(wrong, 1, 0, 1)) > 1e-3f);
    }
}
END_TEST

// The rearranges on their own, on numbered elements.
START_TEST(test_rearranges_by_hand) {
    // (1, 4, 1, 1) query heads numbered 0..3, R = 2: slot [0, g, h] holds
    // head h*2 + g, and merging puts every head back where it was.
    Tensor *heads = zeros(shape4(1, 4, 1, 1));
    for (int i = 0; i < 4; i++) {
        *at4(heads, 0, i, 0, 0) = (float)i;
    }
    const Tensor *grouped = rearrange_split_groups(heads, 2);
    ck_assert_str_eq(size_str(grouped), "torch.Size([1, 2, 2, 1, 1])");
    ck_assert_float_eq(*at5(grouped, 0, 0, 0, 0, 0), 0.0f);
    ck_assert_float_eq(*at5(grouped, 0, 1, 0, 0, 0), 1.0f);
    ck_assert_float_eq(*at5(grouped, 0, 0, 1, 0, 0), 2.0f);
    ck_assert_float_eq(*at5(grouped, 0, 1, 1, 0, 0), 3.0f);
    // "b g h n d -> b n (h g) d" expects (b, g, h, n, d) with n, d = 1.
    const Tensor *merged = rearrange_merge_groups(grouped);
    ck_assert_str_eq(size_str(merged), "torch.Size([1, 1, 4, 1])");
    for (int i = 0; i < 4; i++) {
        ck_assert_float_eq(*at4(merged, 0, 0, i, 0), (float)i);
    }
    // "b n h d -> b h n d" then "b h n d -> b n h d" is the identity.
    manual_seed(15);
    const Tensor *x = randn(shape4(2, 3, 4, 5));
    const Tensor *heads_first = rearrange_heads_first(x, "b n h d -> b h n d");
    ck_assert_str_eq(size_str(heads_first), "torch.Size([2, 4, 3, 5])");
    ck_assert_float_eq(*at4(heads_first, 1, 3, 2, 4), *at4(x, 1, 2, 3, 4));
    assert_bitwise_equal(rearrange_heads_back(heads_first), x, "there and back");
}
END_TEST

// --- the command line -------------------------------------------------------------

// Exit 2, one line on stderr naming the flag (or the tensor that would not
// fit), nothing on stdout, no dump dir.
START_TEST(test_bad_flags) {
    static const BadFlags BAD[] = {
        {{"--kv-heads", "3", NULL}, "--kv-heads"},
        {{"--kv-heads", "0", NULL}, "--kv-heads"},
        {{"--kv-heads", "16", NULL}, "--kv-heads"},
        {{"--heads", "6", "--kv-heads", "4", NULL}, "--kv-heads"},
        {{"--heads", "0", NULL}, "--heads"},
        {{"--head-dim", "-4", NULL}, "--head-dim"},
        {{"--seq", "many", NULL}, "--seq"},
        {{"--batch", NULL}, "--batch"},
        {{"--groups", "2", NULL}, "--groups"},
        {{"--seq", "60000", "--heads", "64", "--kv-heads", "8", NULL}, "scores"},
        // The first cell's (batch, seq, heads, heads) weights were not checked.
        {{"--seq", "1", "--heads", "16384", "--kv-heads", "1", "--head-dim", "1", NULL},
         "the first cell's weights (batch, seq, heads, heads) (1, 1, 16384, 16384)"},
    };
    check_bad_flags(LESSON, "lesson-8", BAD, sizeof BAD / sizeof BAD[0]);
    // The exact text for the usual mistake.
    RunResult run = run_program(BINARY, (const char *const[]){"--kv-heads", "3", NULL});
    ck_assert_str_eq(run.err, "lesson-8: --kv-heads 3 does not divide --heads 8\n");
}
END_TEST

// --dot draws the einsum steps, cell 8 once for both continuations, the
// notes' way as one step: 18 nodes, taken in at a glance. --heatmap draws
// the weights.
START_TEST(test_dot_and_heatmap) {
    int nodes = 0;
    const char *graph = lesson_graph(LESSON, (const char *const[]){"--seq", "4", "--head-dim", "2",
                                                                   NULL}, &nodes);
    ck_assert_int_eq(nodes, 18);
    const char *expected[] = {"b (h g) n d -> b g h n d", "b g h n d, b h s d\\n-> b g h n s",
                              "b g h n s, b h s d\\n-> b g h n d", "b g h n d -> b n (h g) d",
                              "b g h n d, b h s d\\n-> b h n s (sums g)", "out_group_sum",
                              "output (repeat_interleave)"};
    for (int i = 0; i < 7; i++) {
        ck_assert_msg(strstr(graph, expected[i]) != NULL, "the graph lacks '%s'", expected[i]);
    }
    // Cell 8 is drawn once, shared by the fixed einsum and the one that sums g.
    int rearranges = 0;
    for (const char *c = strstr(graph, "b (h g) n d -> b g h n d"); c != NULL;
         c = strstr(c + 1, "b (h g) n d -> b g h n d")) {
        rearranges += 1;
    }
    ck_assert_int_eq(rearranges, 1);
    RunResult run = run_program(BINARY, (const char *const[]){"--seq", "4", "--head-dim", "2",
                                                              "--heatmap", NULL});
    ck_assert_int_eq(run.status, 0);
    ck_assert_msg(strstr(run.out, "attention (b, g, h)") != NULL, "no heatmap printed");
}
END_TEST

// The number of characters (UTF-8 code points) of the line at `line`.
static int line_width(const char *line) {
    int width = 0;
    for (const char *c = line; *c != '\0' && *c != '\n'; c++) {
        width += ((unsigned char)*c & 0xC0) != 0x80;   // not a continuation byte
    }
    return width;
}

// --heatmap at the notebook's sizes (256 x 256 weights, 8 query heads):
// one grid per key/value head (batch 0, g = 0), each cut to 46 x 46 and
// saying so, every line of it within 100 columns, and the whole output a
// readable length (it was 465 lines and 102 columns wide).
START_TEST(test_heatmap_fits_100_columns) {
    RunResult run = run_program(BINARY, (const char *const[]){"--heatmap", NULL});
    ck_assert_int_eq(run.status, 0);
    const char *start = strstr(run.out, "attention (b, g, h): heatmap (rows: query t, columns: "
                                        "key s)\n");
    const char *end = strstr(run.out, "-- part 2: which key/value head each query head reads");
    ck_assert(start != NULL && end != NULL && start < end);
    for (const char *line = start; line < end; line = strchr(line, '\n') + 1) {
        ck_assert_msg(line_width(line) <= 100, "a heatmap line of %d columns: %.100s",
                      line_width(line), line);
    }
    ck_assert_ptr_nonnull(strstr(start, "attention (b, g, h)[0, 0, 0, :, :]\n"
                                        "  (the first 46 x 46 of 256 x 256)\n"));
    ck_assert_ptr_nonnull(strstr(start, "attention (b, g, h)[0, 0, 1, :, :]"));
    ck_assert_ptr_null(strstr(start, "attention (b, g, h)[0, 1, "));   // no second query head
    int lines = 0;
    for (const char *c = run.out; *c != '\0'; c++) {
        lines += *c == '\n';
    }
    ck_assert_msg(lines < 200, "--heatmap printed %d lines", lines);
}
END_TEST

// --- what a run may take (common/lesson/budget.h; harness.h: add_budget_tests) -----------

// Refused by the budget before anything runs, in one line that names the flags, the budget
// and how to raise it.
static const BudgetRefusal REFUSED[] = {
    // Issue 18's table, each command as the probe ran it: it took gigabytes or minutes.
    {{"--head-dim", "32768", NULL},
     "lesson-8: --head-dim 32768 would hold about 7.9 GiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=8200", NULL},
};

// Sizes where the tensors that grow with the flags are most of what a run holds, each
// flag raised in one of them, and the switches that add tensors on: what a run holds is
// its prediction (make test runs the first, make test-long all).
static const SizedRun SIZED[] = {
    {{"--seq", "320", "--head-dim", "16", NULL}},
    {{"--batch", "2", "--seq", "64", "--heads", "16", "--kv-heads", "4", "--head-dim", "128",
      "--dump", "", NULL}},
};

static const LessonBudget BUDGET = {
    "08-gqa", lesson_main, REFUSED, sizeof REFUSED / sizeof REFUSED[0], SIZED,
    sizeof SIZED / sizeof SIZED[0], NULL, 0,
};

static Suite *lesson08_suite(void) {
    Suite *suite = suite_create("lesson08");
    TCase *recorded = new_tcase("recorded from PyTorch");
    tcase_add_loop_test(recorded, test_recorded_runs, 0, recorded_case_count(DATA));
    tcase_add_test(recorded, test_dump_shapes);
    suite_add_tcase(suite, recorded);
    TCase *invariants = new_tcase("invariants");
    tcase_add_test(invariants, test_loops_equal_repeat_interleave);
    tcase_add_test(invariants, test_mha_is_lesson6);
    tcase_add_test(invariants, test_mqa_is_shared_head);
    tcase_add_test(invariants, test_query_head_reads_kv_head_i_over_R);
    tcase_add_test(invariants, test_group_sum_is_wrong_as_explained);
    tcase_add_test(invariants, test_rearranges_by_hand);
    tcase_add_loop_test(invariants, test_first_cell, 0, recorded_case_count(DATA));
    suite_add_tcase(suite, invariants);
    TCase *command_line = new_tcase("command line");
    tcase_add_test(command_line, test_bad_flags);
    tcase_add_test(command_line, test_dot_and_heatmap);
    tcase_add_test(command_line, test_heatmap_fits_100_columns);
    suite_add_tcase(suite, command_line);
    add_budget_tests(suite, &BUDGET);
    return suite;
}

int main(void) { return run_suite(lesson08_suite()); }
