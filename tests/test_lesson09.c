// test_lesson09.c - lesson 9 (causal-mask: the masks, the GQA notebook's causal GQA).
//
// Reference values in tests/data/lesson09/<case>/ were recorded from
// PyTorch 1.13 by tests/reference/gen_lesson09.py. The lesson source is
// included with its main() renamed, so the tests can call GQA_forward and
// causal_mask directly, with PyTorch's recorded weights or weights of their own.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "family_gqa.h"
#include "harness.h"

#define main lesson_main
#include "../lessons/09-causal-mask/causal_mask.c"
#undef main

#define LESSON_DIR "09-causal-mask"
#define REF_DIR DATA_DIR "/lesson09"

// Computed tensors go through different summation orders here and in
// PyTorch (its blocked matmul kernels vs our plain loops, its vectorised
// exp), so they agree to a few float32 roundings, not bit for bit. Values
// are O(1) or smaller: atol 1e-6 covers the roundings near 0, rtol 1e-5
// (~80 ulps) the rest; a real error (a wrong head, a wrong mask) is 1e-2 or more.
#define ATOL 1e-6f
#define RTOL 1e-5f

// A recorded PyTorch run (REF_DIR/cases.txt lists them), with the sizes
// the tests use.
typedef struct {
    const char *dir;   // tests/data/lesson09/<case>: what PyTorch wrote
    int batch, seq, dim, heads, kv_heads;
    bool train;
    const RecordedCase *recorded;   // its line of cases.txt: its flags
} Case;

static const Case *case_of(const RecordedCase *r) {
    Case *c = arena_alloc(1, sizeof *c);
    *c = (Case){.dir = r->reference,
                .batch = (int)case_int(r, "batch"),
                .seq = (int)case_int(r, "seq"),
                .dim = (int)case_int(r, "dim"),
                .heads = (int)case_int(r, "heads"),
                .kv_heads = (int)case_int(r, "kv_heads"),
                .train = case_int(r, "train"),
                .recorded = r};
    return c;
}

// The command lines this lesson refuses besides those of the module
// (check_gqa_bad_flags in family_gqa.h runs both).
static const BadFlags BAD_FLAGS[] = {
    {{"--seq", "0", NULL}, "--seq"},
    {{"--cache", "2", NULL}, "--cache"},
    {{"--seq", "8000", NULL}, "attn"},                    // 4*8*8000^2 > 2^26
    {{"--batch", "65536", NULL}, "attn"},                 // 65536*8*32*32 = 2^29
    {{"--seq", "65536", "--heads", "1", "--kv-heads", "1", NULL}, "attn"},
    {{"--batch", "65536", "--seq", "65536", "--dim", "65536", NULL}, "attn"},   // 2^51
};
enum { N_BAD_FLAGS = sizeof BAD_FLAGS / sizeof BAD_FLAGS[0] };

// Drawn from the generator (or, for the mask, made without arithmetic):
// must match bit for bit.
static const char *const EXACT[] = {
    "w_query.weight", "w_query.bias", "w_key.weight", "w_key.bias", "w_value.weight",
    "w_value.bias", "o_proj.weight", "o_proj.bias", "query", "key", "value", "mask", NULL,
};

// A GQA holding the parameters PyTorch recorded for case c, in eval mode.
static GQA recorded_gqa(const Case *c) {
    GQA gqa;
    gqa.num_heads = c->heads;
    gqa.head_dim = c->dim / c->heads;
    gqa.num_groups = c->kv_heads;
    recorded_gqa_linears((Linear *const[]){&gqa.w_query, &gqa.w_key, &gqa.w_value, &gqa.o_proj},
                         c->dir);
    gqa.training = false;
    return gqa;
}

// The three inputs PyTorch drew for case c, each (B, T, C).
typedef struct {
    const Tensor *query, *key, *value;
} Inputs;

static Inputs recorded_inputs(const Case *c) {
    Inputs in = {load_reference(c->dir, "query"), load_reference(c->dir, "key"),
                 load_reference(c->dir, "value")};
    return in;
}

// --- against PyTorch --------------------------------------------------------------------

// The binary, run with --dump: parameters, inputs and mask bit for bit,
// output to float rounding, and every line PyTorch printed, in order. With
// --train too: the dropout draws are PyTorch's (its generic CPU path), so
// the output and every printed line match, including the causality check
// that restarts the generator for both runs.
START_TEST(test_matches_pytorch) {
    const Case *c = case_of(recorded_case(REF_DIR, _i));
    ReferenceRun recorded = {
        .lesson = LESSON_DIR,
        .exact = EXACT,
        .computed = (const char *const[]){"output", NULL},
        .atol = ATOL,
        .rtol = RTOL,
    };
    RunResult run = check_recorded_case(recorded, c->recorded);
    if (c->train) {
        const char *line = path_join("  max |output2 - output1| at positions 0..%d: 0\n",
                                     c->seq - 2);
        ck_assert_msg(strstr(run.out, line) != NULL, "%s: no line '%s'", c->dir, line);
    }
}
END_TEST

// The forward alone on PyTorch's recorded inputs and weights: the output
// and the attention weights, and those are causal: row t is exactly 0
// after column t, the rest is positive and sums to 1, and row 0 is
// [1, 0, 0, ...]. (The runs without --train: a --train run's dropout is
// checked against PyTorch's by test_matches_pytorch.)
START_TEST(test_forward_on_recorded_weights) {
    const Case *c = case_of(recorded_case_where(REF_DIR, "train=0", _i));
    GQA gqa = recorded_gqa(c);
    Inputs in = recorded_inputs(c);
    GQASteps steps;
    const Tensor *output = GQA_forward(&steps, &gqa, in.query, in.key, in.value);   // (B, T, C)
    assert_close(output, load_reference(c->dir, "output"), ATOL, RTOL,
                 path_join("%s output", c->dir));
    assert_close(steps.attn, load_reference(c->dir, "attn"), ATOL, RTOL,
                 path_join("%s attn", c->dir));
    check_causal_weights(steps.attn, 0, c->dir);
}
END_TEST

// --- the causal property --------------------------------------------------------------

// Changing token p of the query, the key or the value changes no output
// before p, bit for bit, and does change output p (except query
// and key at 0: see below).
START_TEST(test_later_token_never_changes_earlier_output) {
    const Case *c = case_of(recorded_case_named(REF_DIR, "seed7"));   // seq 6
    GQA gqa = recorded_gqa(c);
    Inputs in = recorded_inputs(c);
    const Tensor *inputs[3] = {in.query, in.key, in.value};                   // (B, T, C) each
    const Tensor *output = GQA_forward(NULL, &gqa, in.query, in.key, in.value);   // (B, T, C)
    for (int which = 0; which < 3; which++) {
        for (int p = 0; p < c->seq; p++) {
            const Tensor *changed[3] = {inputs[0], inputs[1], inputs[2]};
            Tensor *moved = clone(inputs[which]);
            for (int b = 0; b < c->batch; b++) {
                for (int d = 0; d < c->dim; d++) {
                    *at3(moved, b, p, d) += 0.5f * (float)(d % 3) - 0.3f;
                }
            }
            changed[which] = moved;
            const Tensor *output2 = GQA_forward(NULL, &gqa, changed[0], changed[1],
                                                changed[2]);                  // (B, T, C)
            if (p > 0) {
                assert_bitwise_equal(narrow(output2, 1, 0, p), narrow(output, 1, 0, p),
                                     path_join("input %d changed at %d: outputs before it", which,
                                               p));
            }
            if (which < 2 && p == 0) {
                // The first query sees one key only: its weight is 1 whatever
                // the query and the key are, so output 0 is v_0 projected.
                assert_bitwise_equal(narrow(output2, 1, 0, 1), narrow(output, 1, 0, 1),
                                     path_join("input %d changed at 0: output 0", which));
                continue;
            }
            ck_assert_msg(diff_of_positions(output2, output, p, p + 1) > 1e-4f,
                          "input %d changed at %d: output %d did not change", which, p, p);
        }
    }
}
END_TEST

// In train mode the causality check holds because both runs restart the
// generator: the same dropout masks, so the earlier positions are bitwise
// equal. Without the restart the second run draws other masks and every
// position moves, which is what the lesson printed before it reseeded.
START_TEST(test_causality_check_in_train_mode) {
    const Case *c = case_of(recorded_case_named(REF_DIR, "seed7"));   // seq 6
    GQA gqa = recorded_gqa(c);
    gqa.training = true;
    Inputs in = recorded_inputs(c);
    Tensor *value2 = clone(in.value);                                         // (B, T, C)
    for (int b = 0; b < c->batch; b++) {
        for (int d = 0; d < c->dim; d++) {
            *at3(value2, b, c->seq - 1, d) += 1.0f;
        }
    }
    manual_seed(7);
    const Tensor *output1 = GQA_forward(NULL, &gqa, in.query, in.key, in.value);   // (B, T, C)
    manual_seed(7);
    const Tensor *output2 = GQA_forward(NULL, &gqa, in.query, in.key, value2);     // (B, T, C)
    int T = c->seq;
    assert_bitwise_equal(narrow(output2, 1, 0, T - 1), narrow(output1, 1, 0, T - 1),
                         "train mode, same masks: outputs before the changed token");
    ck_assert(diff_of_positions(output2, output1, T - 1, T) > 1e-3f);
    const Tensor *other_masks = GQA_forward(NULL, &gqa, in.query, in.key, value2);  // (B, T, C)
    ck_assert_msg(diff_of_positions(other_masks, output1, 0, T - 1) > 1e-3f,
                  "other dropout masks should move the earlier positions too");
    // The binary at the notebook's sizes, where it used to print 0.759525.
    RunResult run = run_program(lesson_binary(LESSON_DIR), (const char *const[]){"--train", NULL});
    ck_assert_int_eq(run.status, 0);
    ck_assert_ptr_nonnull(strstr(run.out, "torch.manual_seed(0) and draw the same ones"));
    ck_assert_ptr_nonnull(strstr(run.out, "  max |output2 - output1| at positions 0..30: 0\n"));
}
END_TEST

// The general mask, element by element: 1 exactly where key s lies after
// the query's own position cache_len + t.
START_TEST(test_mask_with_offset) {
    for (int q_len = 1; q_len <= 5; q_len++) {
        for (int cache_len = 0; cache_len <= 4; cache_len++) {
            const Tensor *mask = causal_mask(q_len, cache_len);
            ck_assert_int_eq(size(mask, 0), q_len);
            ck_assert_int_eq(size(mask, 1), cache_len + q_len);
            for (int t = 0; t < q_len; t++) {
                ck_assert_msg(*at2(mask, t, cache_len + t) == 0.0f, "the diagonal is masked");
                for (int s = 0; s < cache_len + q_len; s++) {
                    float want = s > cache_len + t ? 1.0f : 0.0f;
                    ck_assert_msg(*at2(mask, t, s) == want, "q_len %d cache_len %d [%d, %d]",
                                  q_len, cache_len, t, s);
                }
            }
        }
    }
    // Worked by hand: 2 queries after 2 cached keys; the notebook's one row.
    const float chunk[] = {0, 0, 0, 1,  0, 0, 0, 0};
    assert_bitwise_equal(causal_mask(2, 2), tensor_from(shape2(2, 4), chunk), "chunk mask");
    assert_bitwise_equal(causal_mask(1, 2), zeros(shape2(1, 3)), "mask_w_cache");
    const float square[] = {0, 1, 1, 1,  0, 0, 1, 1,  0, 0, 0, 1,  0, 0, 0, 0};
    assert_bitwise_equal(causal_mask(4, 0), tensor_from(shape2(4, 4), square), "4x4 mask");
}
END_TEST

// Query head i uses key/value head i / R: a GQA with G key/value heads
// equals the GQA with H key/value heads whose key and value weights repeat
// each of the G heads R times in a row (repeat_interleave, not repeat).
START_TEST(test_query_head_i_uses_kv_head_i_over_R) {
    const Case *c = case_of(recorded_case_named(REF_DIR, "seed7"));   // R = 4 / 2
    GQA gqa = recorded_gqa(c);
    int H = c->heads, R = c->heads / c->kv_heads, D = c->dim / c->heads;
    GQA mha = gqa;
    mha.num_groups = H;
    Linear *layers[2] = {&mha.w_key, &mha.w_value};
    const Linear *grouped[2] = {&gqa.w_key, &gqa.w_value};
    for (int l = 0; l < 2; l++) {
        Tensor *weight = zeros(shape2(H * D, c->dim));                        // (H*D, C)
        Tensor *bias = zeros(shape1(H * D));                                  // (H*D,)
        for (int h = 0; h < H; h++) {
            for (int d = 0; d < D; d++) {
                int from = (h / R) * D + d;   // row of kv head h / R
                for (int i = 0; i < c->dim; i++) {
                    *at2(weight, h * D + d, i) = *at2(grouped[l]->weight, from, i);
                }
                *at1(bias, h * D + d) = *at1(grouped[l]->bias, from);
            }
        }
        *layers[l] = linear_from(weight, bias);
    }
    Inputs in = recorded_inputs(c);
    assert_bitwise_equal(GQA_forward(NULL, &mha, in.query, in.key, in.value),
                         GQA_forward(NULL, &gqa, in.query, in.key, in.value),
                         "GQA vs MHA with interleaved kv weights");
}
END_TEST

// --train: dropout on the weights changes the output; eval is the default.
START_TEST(test_train_switch) {
    const Case *c = case_of(recorded_case_named(REF_DIR, "seed7"));
    const char *args[24];
    int n = 0;
    for (int i = 0; c->recorded->args[i] != NULL; i++) {
        args[n++] = c->recorded->args[i];
    }
    args[n] = NULL;
    RunResult eval_run = run_program(lesson_binary(LESSON_DIR), args);
    args[n] = "--train";
    args[n + 1] = NULL;
    RunResult train_run = run_program(lesson_binary(LESSON_DIR), args);
    ck_assert_int_eq(eval_run.status, 0);
    ck_assert_int_eq(train_run.status, 0);
    ck_assert_msg(strcmp(eval_run.out, train_run.out) != 0, "--train changed nothing");
}
END_TEST

// --- the diagram -------------------------------------------------------------------------------

// --dot draws the module's dataflow only: its own mask, not the masks
// printed in part 1 (triu(3) of the cache examples), nor the asides.
START_TEST(test_diagram_is_the_module) {
    int nodes = 0;
    const char *graph = lesson_graph(LESSON_DIR, NULL, &nodes);
    ck_assert_msg(nodes <= 40, "the diagram has %d nodes", nodes);
    ck_assert_ptr_nonnull(strstr(graph, "mask\\n(32, 32)"));
    ck_assert_ptr_nonnull(strstr(graph, "output\\n(4, 32, 512)"));
    ck_assert_ptr_null(strstr(graph, "triu(3)"));
    ck_assert_ptr_null(strstr(graph, "(4, 4)"));
}
END_TEST

// --- bad flags ---------------------------------------------------------------------------------

// Each: exit 2, nothing on stdout, exactly one line on stderr naming the
// flag (or the tensor that would not fit), and the --dump directory not made.
START_TEST(test_bad_flags) {
    check_gqa_bad_flags(LESSON_DIR, "lesson-9", BAD_FLAGS, N_BAD_FLAGS);
}
END_TEST

// --- what a run may take (common/lesson/budget.h; harness.h: add_budget_tests) -----------

// Refused by the budget before anything runs, in one line that names the flags, the budget
// and how to raise it.
static const BudgetRefusal REFUSED[] = {
    {{"--batch", "8", "--seq", "64", "--dim", "4096", NULL},
     "lesson-9: --batch 8 --seq 64 --dim 4096 would take about 110 seconds (estimated from the "
     "sizes), more than the 60 seconds allowed; choose smaller sizes, or allow it with "
     "ATTN_MAX_SECONDS=110", NULL},
};

// Sizes where the tensors that grow with the flags are most of what a run holds, each
// flag raised in one of them, and the switches that add tensors on: what a run holds is
// its prediction (make test runs the first, make test-long all).
static const SizedRun SIZED[] = {
    {{"--batch", "2", "--seq", "256", "--dim", "64", "--heads", "8", "--kv-heads", "2", "--train",
      NULL}},
    {{"--batch", "4", "--seq", "128", "--dim", "64", "--dump", "", NULL}},
};

static const LessonBudget BUDGET = {
    "09-causal-mask", lesson_main, REFUSED, sizeof REFUSED / sizeof REFUSED[0], SIZED,
    sizeof SIZED / sizeof SIZED[0], NULL, 0,
};

static Suite *lesson09_suite(void) {
    Suite *suite = suite_create("lesson09");
    TCase *pytorch = new_tcase("pytorch");
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, recorded_case_count(REF_DIR));
    tcase_add_loop_test(pytorch, test_forward_on_recorded_weights, 0,
                        recorded_case_count_where(REF_DIR, "train=0"));
    suite_add_tcase(suite, pytorch);
    TCase *causal = new_tcase("causal");
    tcase_add_test(causal, test_later_token_never_changes_earlier_output);
    tcase_add_test(causal, test_causality_check_in_train_mode);
    tcase_add_test(causal, test_mask_with_offset);
    tcase_add_test(causal, test_query_head_i_uses_kv_head_i_over_R);
    tcase_add_test(causal, test_diagram_is_the_module);
    suite_add_tcase(suite, causal);
    TCase *flags = new_tcase("flags");
    tcase_add_test(flags, test_train_switch);
    tcase_add_test(flags, test_bad_flags);
    suite_add_tcase(suite, flags);
    add_budget_tests(suite, &BUDGET);
    return suite;
}

int main(void) { return run_suite(lesson09_suite()); }
