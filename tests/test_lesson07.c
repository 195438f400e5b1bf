// test_lesson07.c - lesson 7, cross-attention: PyTorch's recorded numbers
// and text for several seeds and sizes (seq_q < seq_k and seq_q > seq_k),
// K = V = Q input against lesson 6's MultiHeadAttention, unequal lengths
// against a double-precision reference written out here, queries that do
// not see each other, a fully masked row, and the bad flags.
#include "family_multi_head.h"
#include "harness.h"

#include <math.h>

// Both lessons, each with its main renamed: lesson 6's module is the
// self-attention that cross-attention must reduce to. Each lesson reads
// alone, so their parts have the same names: lesson 6's are renamed here.
#define main lesson06_main
#define Cell lesson06_Cell
#define part1_the_notebooks_cell lesson06_part1_the_notebooks_cell
#define part2_numbers lesson06_part2_numbers
#include "../lessons/06-multi-head/multi_head.c"
#undef main
#undef Cell
#undef part1_the_notebooks_cell
#undef part2_numbers
#define main lesson07_main
#include "../lessons/07-cross-attention/cross_attention.c"
#undef main

#define LESSON "07-cross-attention"
#define DATA DATA_DIR "/lesson07"

// Drawn by the generator: must be PyTorch's bits exactly.
static const char *const DRAWN[] = {
    "Q", "K", "V", "attention_mask", "q_proj.weight", "q_proj.bias", "k_proj.weight",
    "k_proj.bias", "v_proj.weight", "v_proj.bias", "o_proj.weight", "o_proj.bias", NULL,
};
// Computed: equal to float rounding.
static const char *const COMPUTED[] = {
    "q_state", "k_state", "v_state", "attention_weight", "output_mid", "output", NULL,
};

// Every dump of every case against PyTorch's, and each line PyTorch (and
// the post's numpy) printed in the lesson's output, in order (the loop
// index is the case).
START_TEST(test_matches_pytorch) {
    // PyTorch's kernels add the same products in another order: measured
    // at most 1.2e-7 apart. 2e-6 absolute plus 1e-5 relative allows that
    // and nothing more: a swapped K and V, a wrong scale or a missing mask
    // moves these numbers by 1e-2 or more.
    ReferenceRun every_case = {
        .lesson = LESSON, .exact = DRAWN, .computed = COMPUTED, .atol = 2e-6f, .rtol = 1e-5f,
    };
    check_recorded_case(every_case, recorded_case(DATA, _i));
}
END_TEST

// The notebook's sixteen lines, word for word, open the lesson's output:
// the inputs' four shapes, the eleven its forward prints, the cell's last.
START_TEST(test_notebook_shape_lines) {
    check_output_opens_with(LESSON, "Q shape: torch.Size([3, 4, 128])\n"
                                    "K shape: torch.Size([3, 6, 128])\n"
                                    "V shape: torch.Size([3, 6, 128])\n"
                                    "attention_mask shape: torch.Size([3, 8, 4, 6])\n"
                                    "Q after projection: torch.Size([3, 4, 128])\n"
                                    "K after projection: torch.Size([3, 6, 128])\n"
                                    "V after projection: torch.Size([3, 6, 128])\n"
                                    "q_state: torch.Size([3, 8, 4, 16])\n"
                                    "k_state: torch.Size([3, 8, 6, 16])\n"
                                    "v_state: torch.Size([3, 8, 6, 16])\n"
                                    "attention_weight before mask: torch.Size([3, 8, 4, 6])\n"
                                    "attention_weight after mask: torch.Size([3, 8, 4, 6])\n"
                                    "attention_weight after softmax: torch.Size([3, 8, 4, 6])\n"
                                    "output_mid: torch.Size([3, 8, 4, 16])\n"
                                    "output: torch.Size([3, 4, 128])\n"
                                    "Output shape: torch.Size([3, 4, 128])\n");
}
END_TEST

// K = V = Q input: cross-attention is lesson 6's MultiHeadAttention, with
// the same weights (both modules draw them in the same order), with a mask,
// and in train mode with the same dropout draws. Bit for bit: the same
// floats go through the same operations.
START_TEST(test_same_input_is_lesson6_self_attention) {
    int batch = 2, seq = 5, dim = 24, heads = 3;
    for (int train = 0; train <= 1; train++) {
        manual_seed(21);
        const Tensor *X = rand_tensor(shape3(batch, seq, dim));              // (B, T, C)
        const Tensor *mask = randint(0, 2, shape4(batch, heads, seq, seq));  // (B, H, T, T)
        manual_seed(8);
        CrossAttention cross = CrossAttention_init(dim, heads);
        cross.training = train;
        manual_seed(8);
        MultiHeadAttention mha = MultiHeadAttention_init(dim, heads);
        mha.training = train;

        manual_seed(99);   // the dropout draws, if any
        CrossAttentionSteps cross_steps;
        const Tensor *cross_out = CrossAttention_forward(&cross_steps, &cross, X, X, X, mask);
        manual_seed(99);
        MultiHeadAttentionSteps mha_steps;
        const Tensor *mha_out = MultiHeadAttention_forward(&mha_steps, &mha, X, mask);
        const char *mode = train ? "train" : "eval";
        assert_bitwise_equal(cross_steps.attention_weight, mha_steps.attention_weight,
                             path_join("%s: attention_weight", mode));
        assert_bitwise_equal(cross_steps.output_mid, mha_steps.output_mid,
                             path_join("%s: output_mid", mode));
        assert_bitwise_equal(cross_out, mha_out, path_join("%s: output", mode));
    }
}
END_TEST

// y = x W^T + b for one row, in double.
static void linear_row(double *y, const float *x, const Linear *layer) {
    for (int o = 0; o < layer->out_features; o++) {
        double sum = *at1(layer->bias, o);
        for (int i = 0; i < layer->in_features; i++) {
            sum += (double)x[i] * *at2(layer->weight, o, i);
        }
        y[o] = sum;
    }
}

// Cross-attention written out from the formula, in double, for one batch
// element: Qin (T, C), Kin and Vin (S, C), no mask, eval. Writes out (T, C).
static void reference_cross_attention(double *out, const CrossAttention *net,
                                      const Tensor *Qin, const Tensor *Kin, const Tensor *Vin) {
    int T = size(Qin, 0), S = size(Kin, 0), C = net->hidden_dim;
    int H = net->nums_head, D = net->head_dim;
    double *q = arena_alloc((size_t)T * C, sizeof *q);
    double *k = arena_alloc((size_t)S * C, sizeof *k);
    double *v = arena_alloc((size_t)S * C, sizeof *v);
    double *mid = arena_alloc((size_t)T * C, sizeof *mid);   // heads side by side
    double *w = arena_alloc((size_t)S, sizeof *w);
    for (int t = 0; t < T; t++) {
        linear_row(&q[t * C], at2(Qin, t, 0), &net->q_proj);
    }
    for (int s = 0; s < S; s++) {
        linear_row(&k[s * C], at2(Kin, s, 0), &net->k_proj);
        linear_row(&v[s * C], at2(Vin, s, 0), &net->v_proj);
    }
    for (int h = 0; h < H; h++) {
        for (int t = 0; t < T; t++) {
            double max = -INFINITY, sum = 0.0;
            for (int s = 0; s < S; s++) {
                double dot = 0.0;
                for (int d = 0; d < D; d++) {
                    dot += q[t * C + h * D + d] * k[s * C + h * D + d];
                }
                w[s] = dot / sqrt((double)D);
                max = fmax(max, w[s]);
            }
            for (int s = 0; s < S; s++) {
                w[s] = exp(w[s] - max);
                sum += w[s];
            }
            for (int d = 0; d < D; d++) {
                double acc = 0.0;
                for (int s = 0; s < S; s++) {
                    acc += w[s] / sum * v[s * C + h * D + d];
                }
                mid[t * C + h * D + d] = acc;
            }
        }
    }
    for (int t = 0; t < T; t++) {
        for (int o = 0; o < C; o++) {
            double acc = *at1(net->o_proj.bias, o);
            for (int i = 0; i < C; i++) {
                acc += mid[t * C + i] * *at2(net->o_proj.weight, o, i);
            }
            out[t * C + o] = acc;
        }
    }
}

// seq_q < seq_k and seq_q > seq_k: shapes follow the query, values follow
// the formula (computed above in double, independently of the ops).
START_TEST(test_unequal_lengths_both_ways) {
    int lengths[2][2] = {{2, 7}, {7, 2}};   // {seq_q, seq_k}
    int batch = 2, dim = 12, heads = 4;
    for (int c = 0; c < 2; c++) {
        int T = lengths[c][0], S = lengths[c][1];
        manual_seed(40 + c);
        const Tensor *Q = rand_tensor(shape3(batch, T, dim));                // (B, T, C)
        const Tensor *K = rand_tensor(shape3(batch, S, dim));                // (B, S, C)
        const Tensor *V = rand_tensor(shape3(batch, S, dim));                // (B, S, C)
        CrossAttention net = CrossAttention_init(dim, heads);
        net.training = false;
        CrossAttentionSteps steps;
        const Tensor *output = CrossAttention_forward(&steps, &net, Q, K, V, NULL);  // (B, T, C)
        int D = dim / heads;
        ck_assert(same_shape(steps.attention_weight, zeros(shape4(batch, heads, T, S))));
        ck_assert(same_shape(steps.output_mid, zeros(shape4(batch, heads, T, D))));
        ck_assert(same_shape(output, zeros(shape3(batch, T, dim))));
        for (int b = 0; b < batch; b++) {
            double *want = arena_alloc((size_t)T * dim, sizeof *want);
            reference_cross_attention(want, &net, slice0(Q, b), slice0(K, b), slice0(V, b));
            Tensor *want_t = zeros(shape2(T, dim));
            for (int i = 0; i < T * dim; i++) {
                want_t->data[i] = (float)want[i];
            }
            // float against double over sums of 12 products: 1e-6 is a
            // few float roundings on values below 1.
            assert_close(slice0(output, b), want_t, 1e-6f, 1e-5f,
                         path_join("seq_q %d, seq_k %d, batch %d", T, S, b));
        }
    }
}
END_TEST

// Without a mask each query is on its own: changing query t changes
// output[:, t] only; changing one key changes every query's output.
START_TEST(test_queries_do_not_see_each_other) {
    int batch = 1, T = 4, S = 5, dim = 8, heads = 2, changed = 1;
    manual_seed(13);
    const Tensor *Q = rand_tensor(shape3(batch, T, dim));                    // (B, T, C)
    const Tensor *K = rand_tensor(shape3(batch, S, dim));                    // (B, S, C)
    const Tensor *V = rand_tensor(shape3(batch, S, dim));                    // (B, S, C)
    CrossAttention net = CrossAttention_init(dim, heads);
    net.training = false;
    const Tensor *before = CrossAttention_forward(NULL, &net, Q, K, V, NULL);  // (B, T, C)
    Tensor *Q2 = clone(Q);
    for (int i = 0; i < dim; i++) {
        *at3(Q2, 0, changed, i) += 1.0f;
    }
    const Tensor *after = CrossAttention_forward(NULL, &net, Q2, K, V, NULL);  // (B, T, C)
    assert_only_slice_changed(before, after, 1, changed, 1e-4f, "output of query");
    Tensor *K2 = clone(K);
    *at3(K2, 0, 3, 0) += 2.0f;                                                 // one key
    const Tensor *after_key = CrossAttention_forward(NULL, &net, Q, K2, V, NULL);  // (B, T, C)
    for (int t = 0; t < T; t++) {
        ck_assert_msg(max_abs_diff(narrow(before, 1, t, 1), narrow(after_key, 1, t, 1)) > 0.0f,
                      "query %d ignored a changed key", t);
    }
}
END_TEST

// A query whose mask row is all zeros: S equal scores, weights 1/S exactly.
START_TEST(test_fully_masked_row_is_uniform) {
    int batch = 1, T = 3, S = 6, dim = 8, heads = 2;
    manual_seed(2);
    const Tensor *Q = rand_tensor(shape3(batch, T, dim));                    // (B, T, C)
    const Tensor *K = rand_tensor(shape3(batch, S, dim));                    // (B, S, C)
    CrossAttention net = CrossAttention_init(dim, heads);
    net.training = false;
    Tensor *mask = ones(shape4(batch, heads, T, S));                         // (B, H, T, S)
    for (int s = 0; s < S; s++) {
        *at4(mask, 0, 0, 1, s) = 0.0f;
    }
    *at4(mask, 0, 1, 2, 4) = 0.0f;
    CrossAttentionSteps steps;
    CrossAttention_forward(&steps, &net, Q, K, K, mask);
    ck_assert_int_eq(check_multi_head_weights(steps.attention_weight, mask, "lesson 7"), 1);
}
END_TEST

// view() on the transposed output_mid (3, 8, 4, 16) of the default run
// (T = 4 queries, not S = 6 keys) fails as PyTorch's does.
START_TEST(test_view_of_transposed_fails) {
    check_view_needs_contiguous(shape4(3, 8, 4, 16));
}
END_TEST

// Bad flags: the sizes of two sequences, and the check that --heads
// divides --dim (check_bad_flags says what a refusal must look like).
START_TEST(test_bad_flags) {
    static const BadFlags BAD[] = {
        {{"--heads", "5", NULL}, "lesson-7: --heads 5 does not divide --dim 128"},
        {{"--dim", "100", NULL}, "--heads 8 does not divide --dim 100"},
        {{"--heads", "0", NULL}, "--heads expects a whole number"},
        {{"--seq-q", "0", NULL}, "--seq-q expects a whole number"},
        {{"--seq-k", "0", NULL}, "--seq-k expects a whole number"},
        {{"--dim", "0", NULL}, "--dim expects a whole number"},
        {{"--batch", "0", NULL}, "--batch expects a whole number"},
        {{"--seq-k", "x", NULL}, "--seq-k expects a whole number"},
        {{"--dim", "65536", NULL}, "q_proj.weight (dim, dim)"},
        {{"--seq", "4", NULL}, "unknown flag '--seq'"},
    };
    check_bad_flags(LESSON, "lesson-7", BAD, sizeof BAD / sizeof BAD[0]);
}
END_TEST

// --heatmap: each grid has a row per query and a column per key, 2 x 5 here.
START_TEST(test_heatmap_flag) {
    check_prints(LESSON, (const char *const[]){"--heatmap", "--seq-q", "2", "--seq-k", "5", NULL},
                 "attention_weight[0, 0, :, :]\n"
                 "       0 1 2 3 4\n");
}
END_TEST

// --- what a run may take (common/lesson/budget.h; harness.h: add_budget_tests) -----------

// Refused by the budget before anything runs, in one line that names the flags, the budget
// and how to raise it.
static const BudgetRefusal REFUSED[] = {
    // Issue 18's table, each command as the probe ran it: it took gigabytes or minutes.
    {{"--batch", "65536", NULL},
     "lesson-7: --batch 65536 would hold about 4.3 GiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=4400", NULL},
};

// Sizes where the tensors that grow with the flags are most of what a run holds, each
// flag raised in one of them, and the switches that add tensors on: what a run holds is
// its prediction (make test runs the first, make test-long all).
static const SizedRun SIZED[] = {
    {{"--batch", "2", "--seq-q", "200", "--seq-k", "300", "--dim", "32", "--heads", "4", "--train",
      NULL}},
    {{"--batch", "32", "--seq-q", "8", "--seq-k", "24", "--dim", "256", "--dump", "", NULL}},
};

static const LessonBudget BUDGET = {
    "07-cross-attention", lesson07_main, REFUSED, sizeof REFUSED / sizeof REFUSED[0], SIZED,
    sizeof SIZED / sizeof SIZED[0], NULL, 0,
};

Suite *lesson07_suite(void) {
    Suite *suite = suite_create("lesson07");
    TCase *pytorch = new_tcase("pytorch");
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, recorded_case_count(DATA));
    tcase_add_test(pytorch, test_notebook_shape_lines);
    suite_add_tcase(suite, pytorch);
    TCase *invariants = new_tcase("invariants");
    tcase_add_test(invariants, test_same_input_is_lesson6_self_attention);
    tcase_add_test(invariants, test_unequal_lengths_both_ways);
    tcase_add_test(invariants, test_queries_do_not_see_each_other);
    tcase_add_test(invariants, test_fully_masked_row_is_uniform);
    tcase_add_test(invariants, test_view_of_transposed_fails);
    suite_add_tcase(suite, invariants);
    TCase *cli = new_tcase("command line");
    tcase_add_test(cli, test_bad_flags);
    tcase_add_test(cli, test_heatmap_flag);
    suite_add_tcase(suite, cli);
    add_budget_tests(suite, &BUDGET);
    return suite;
}

int main(void) { return run_suite(lesson07_suite()); }
