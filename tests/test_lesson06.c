// test_lesson06.c - lesson 6, multi-head attention: PyTorch's recorded
// numbers and text for several seeds and sizes, the invariants (one head is
// lesson 5's single-head attention, heads do not see each other, a fully
// masked row is uniform), a hand-worked two-head case, view()'s refusal of
// a transposed tensor, and the bad flags.
#include "family_multi_head.h"
#include "harness.h"

#include <math.h>

#define main lesson_main
#include "../lessons/06-multi-head/multi_head.c"
#undef main

#define LESSON "06-multi-head"
#define DATA DATA_DIR "/lesson06"

// Drawn by the generator: must be PyTorch's bits exactly.
static const char *const DRAWN[] = {
    "attention_mask", "x", "q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias",
    "v_proj.weight", "v_proj.bias", "o_proj.weight", "o_proj.bias", NULL,
};
// Computed: equal to float rounding.
static const char *const COMPUTED[] = {
    "Q", "K", "V", "q_state", "k_state", "v_state", "attention_weight", "output_mid", "output",
    NULL,
};

// Every dump of every case against PyTorch's, and each line PyTorch
// printed in the lesson's output, in order (the loop index is the case).
START_TEST(test_matches_pytorch) {
    // Sums of up to 128 products (the projections, two matmuls): PyTorch's
    // kernels add in another order, so the last bits differ; measured at
    // most 2.4e-7 (Q, K, V agree exactly). 2e-6 absolute plus 1e-5 relative
    // leaves room for that and nothing more: a wrong head, a wrong scale or
    // a missing mask moves these numbers by 1e-2 or more.
    ReferenceRun every_case = {
        .lesson = LESSON, .exact = DRAWN, .computed = COMPUTED, .atol = 2e-6f, .rtol = 1e-5f,
    };
    check_recorded_case(every_case, recorded_case(DATA, _i));
}
END_TEST

// The notebook's own output, word for word, opens the lesson's: the four
// shapes its forward prints, then the cell's value.
START_TEST(test_notebook_shape_lines) {
    check_output_opens_with(LESSON, "Q: torch.Size([3, 2, 128])\n"
                                    "q_state: torch.Size([3, 8, 2, 16])\n"
                                    "attention_weight: torch.Size([3, 8, 2, 2])\n"
                                    "torch.Size([3, 8, 2, 16])\n"
                                    "torch.Size([3, 2, 128])\n");
}
END_TEST

// Make a module with the generator at `seed`; eval mode.
static MultiHeadAttention make_net(uint64_t seed, int dim, int heads) {
    manual_seed(seed);
    MultiHeadAttention net = MultiHeadAttention_init(dim, heads);
    net.training = false;
    return net;
}

// With one head, multi-head attention is lesson 5's SelfAttV4 (no mask,
// eval): head_dim = hidden_dim, view/transpose only add an axis of size 1,
// and the scale is sqrt(hidden_dim). SelfAttV4 is written out here with the
// library's ops and the same four Linear layers (o_proj as its output_proj).
START_TEST(test_one_head_is_single_head_attention) {
    int batch = 2, seq = 5, dim = 12;
    MultiHeadAttention net = make_net(11, dim, 1);
    const Tensor *X = rand_tensor(shape3(batch, seq, dim));                  // (B, T, C)

    const Tensor *Q = linear(&net.q_proj, X);                                // (B, T, C)
    const Tensor *K = linear(&net.k_proj, X);                                // (B, T, C)
    const Tensor *V = linear(&net.v_proj, X);                                // (B, T, C)
    const Tensor *att_weight = softmax(div_scalar(matmul(Q, transpose(K, -1, -2)),
                                            sqrtf((float)dim)), -1);         // (B, T, T)
    const Tensor *ret = linear(&net.o_proj, matmul(att_weight, V));          // (B, T, C)

    MultiHeadAttentionSteps steps;
    const Tensor *output = MultiHeadAttention_forward(&steps, &net, X, NULL);  // (B, T, C)
    // The same floats go through the same operations in the same order, so
    // the results agree bit for bit; a wrong scale (sqrt of anything but
    // 12) or a mixed-up axis would not.
    assert_bitwise_equal(view(steps.attention_weight, shape3(batch, seq, seq)), att_weight,
                         "one head: attention_weight");
    assert_bitwise_equal(output, ret, "one head: output");
}
END_TEST

// Head h reads only rows h*D .. h*D+D-1 of q_proj: changing them changes
// output_mid[:, h] and no other head's.
START_TEST(test_heads_are_independent) {
    int batch = 2, seq = 4, dim = 16, heads = 4, D = dim / heads, changed = 2;
    MultiHeadAttention net = make_net(5, dim, heads);
    const Tensor *X = rand_tensor(shape3(batch, seq, dim));                  // (B, T, C)
    MultiHeadAttentionSteps before;
    MultiHeadAttention_forward(&before, &net, X, NULL);

    Tensor *q_weight = clone(net.q_proj.weight);   // a Linear's weight is const: change a copy
    for (int o = changed * D; o < (changed + 1) * D; o++) {
        for (int i = 0; i < dim; i++) {
            *at2(q_weight, o, i) *= -3.0f;   // a very different query for head 2
        }
    }
    net.q_proj.weight = q_weight;
    MultiHeadAttentionSteps after;
    MultiHeadAttention_forward(&after, &net, X, NULL);
    // output_mid (B, H, T, D): along dim 1, only head 2 moved.
    assert_only_slice_changed(before.output_mid, after.output_mid, 1, changed, 1e-3f,
                              "output_mid of head");
}
END_TEST

// Two heads of one number each, identity projections: head h attends with
// the scalar x[t, h] alone, weights[t, s] = softmax_s(x[t, h] * x[s, h] / 1),
// worked out in double.
START_TEST(test_hand_worked_two_heads) {
    int seq = 3, dim = 2, heads = 2;
    MultiHeadAttention net = make_net(0, dim, heads);
    Linear *layers[4] = {&net.q_proj, &net.k_proj, &net.v_proj, &net.o_proj};
    for (int l = 0; l < 4; l++) {
        Tensor *identity = zeros(shape2(dim, dim));
        for (int o = 0; o < dim; o++) {
            *at2(identity, o, o) = 1.0f;
        }
        *layers[l] = linear_from(identity, zeros(shape1(dim)));
    }
    float x_values[6] = {1.0f, -2.0f,  0.5f, 0.0f,  -1.0f, 1.5f};            // (1, T=3, C=2)
    const Tensor *X = tensor_from(shape3(1, seq, dim), x_values);
    MultiHeadAttentionSteps steps;
    const Tensor *output = MultiHeadAttention_forward(&steps, &net, X, NULL);
    for (int h = 0; h < heads; h++) {
        for (int t = 0; t < seq; t++) {
            double e[3], sum = 0.0, out = 0.0;
            for (int s = 0; s < seq; s++) {
                e[s] = exp((double)x_values[t * dim + h] * x_values[s * dim + h]);
                sum += e[s];
            }
            for (int s = 0; s < seq; s++) {
                ck_assert_double_eq_tol(*at4(steps.attention_weight, 0, h, t, s), e[s] / sum,
                                        1e-6);
                out += e[s] / sum * x_values[s * dim + h];
            }
            // With identity o_proj, output[t, h] is head h's output.
            ck_assert_double_eq_tol(*at3(output, 0, t, h), out, 1e-6);
        }
    }
}
END_TEST

// A row whose mask is all zeros becomes S equal scores of -1e20: uniform
// weights 1/S exactly. Masked entries of other rows are exactly 0.
START_TEST(test_fully_masked_row_is_uniform) {
    int batch = 1, seq = 4, dim = 8, heads = 2;
    MultiHeadAttention net = make_net(3, dim, heads);
    const Tensor *X = rand_tensor(shape3(batch, seq, dim));                  // (B, T, C)
    Tensor *mask = ones(shape4(batch, heads, seq, seq));                     // (B, H, T, S)
    for (int s = 0; s < seq; s++) {
        *at4(mask, 0, 1, 2, s) = 0.0f;           // head 1, query 2: nothing visible
    }
    *at4(mask, 0, 0, 1, 3) = 0.0f;               // head 0, query 1: key 3 hidden
    MultiHeadAttentionSteps steps;
    MultiHeadAttention_forward(&steps, &net, X, mask);
    ck_assert_int_eq(check_multi_head_weights(steps.attention_weight, mask, "lesson 6"), 1);
}
END_TEST

// The lesson's claim, checked on the helper: view() on the transposed
// output_mid (3, 8, 2, 16) stops with PyTorch's message, reshape() copies.
START_TEST(test_view_of_transposed_fails) {
    check_view_needs_contiguous(shape4(3, 8, 2, 16));
}
END_TEST

// The iThome Day 7 post's MyMultiHeadAttention on every recorded case's
// weights and x, against what PyTorch's run of the class (typo fixed)
// returned; its two merge lines (contiguous().view and reshape) give the
// same floats; and it is lesson 6's module without a mask: bit for bit when
// head_dim ** -0.5 is a power of 2 (head_dim 16), to rounding otherwise (12).
START_TEST(test_post_class) {
    const RecordedCase *c = recorded_case(DATA, _i);
    const char *reference = c->reference;
    const Tensor *x = load_npy(path_join("%s/x.npy", reference));            // (B, T, C)
    int dim = size(x, 2);
    int heads = size(load_npy(path_join("%s/q_state.npy", reference)), 1);
    MultiHeadAttention net = make_net(0, dim, heads);
    net.q_proj = recorded_linear(reference, "q_proj");
    net.k_proj = recorded_linear(reference, "k_proj");
    net.v_proj = recorded_linear(reference, "v_proj");
    net.o_proj = recorded_linear(reference, "o_proj");
    MyMultiHeadAttention my = MyMultiHeadAttention_from(&net);
    ck_assert_float_eq(my.scaling, (float)pow((double)net.head_dim, -0.5));
    const Tensor *viewed = MyMultiHeadAttention_forward(&my, x, false);      // (B, T, C)
    const Tensor *reshaped = MyMultiHeadAttention_forward(&my, x, true);     // (B, T, C)
    assert_close(viewed, load_npy(path_join("%s/my_output.npy", reference)), 2e-6f, 1e-5f,
                 path_join("%s my(x)", c->dir));
    assert_bitwise_equal(reshaped, viewed, "reshape against contiguous().view");
    const Tensor *output = MultiHeadAttention_forward(NULL, &net, x, NULL);  // (B, T, C)
    if (net.head_dim == 16) {
        assert_bitwise_equal(viewed, output, "my(x) against net(x), head_dim 16");
    } else {
        assert_close(viewed, output, 1e-7f, 1e-5f, "my(x) against net(x)");
    }
}
END_TEST

// The commented-out mask: the cell's rows for 3 x 2, and their pattern for
// other sizes; expanded with stride 0 (nothing copied); run, it gives every
// padding key exactly 0, and the sentence that is all padding uniform rows
// (1/S, not nan): heads * seq of them for each such sentence.
START_TEST(test_commented_out_padding) {
    const Tensor *padding = commented_out_padding(3, 2);
    const float cell[] = {0, 1, 0, 0, 1, 0};
    assert_bitwise_equal(padding, tensor_from(shape2(3, 2), cell), "the cell's rows");
    const Tensor *longer = commented_out_padding(4, 4);
    const float rows[] = {0, 1, 1, 1,  0, 0, 0, 0,  1, 1, 1, 0,  0, 1, 1, 1};
    assert_bitwise_equal(longer, tensor_from(shape2(4, 4), rows), "4 sentences of 4");

    int batch = 4, seq = 4, dim = 12, heads = 3;
    MultiHeadAttention net = make_net(8, dim, heads);
    const Tensor *x = rand_tensor(shape3(batch, seq, dim));                  // (B, T, C)
    const Tensor *mask = expand(unsqueeze(unsqueeze(longer, 1), 2),
                                shape4(batch, heads, seq, seq));             // (B, H, T, S)
    ck_assert_str_eq(stride_str(mask), "(4, 0, 0, 1)");
    MultiHeadAttentionSteps steps;
    MultiHeadAttention_forward(&steps, &net, x, mask);
    ck_assert_int_eq(check_multi_head_weights(steps.attention_weight, mask, "padding mask"),
                     heads * seq);   // sentence 1
    check_prints(LESSON, (const char *const[]){NULL},
                 "attention_mask = padding.unsqueeze(1).unsqueeze(2).expand(3, 8, 2, 2): "
                 "stride (2, 0, 0, 1)\n"
                 "that is all padding every key gets -1e20: uniform weights, 1/2 each, not nan\n");
}
END_TEST

// Bad flags, each refused with one line naming the flag (check_bad_flags).
START_TEST(test_bad_flags) {
    static const BadFlags BAD[] = {
        {{"--heads", "7", NULL}, "lesson-6: --heads 7 does not divide --dim 128"},
        {{"--heads", "256", NULL}, "--heads 256 does not divide --dim 128"},
        {{"--heads", "0", NULL}, "--heads expects a whole number"},
        {{"--dim", "0", NULL}, "--dim expects a whole number"},
        {{"--seq", "0", NULL}, "--seq expects a whole number"},
        {{"--batch", "0", NULL}, "--batch expects a whole number"},
        {{"--seq", "-2", NULL}, "--seq expects a whole number"},
        {{"--seq", "65536", NULL}, "attention_weight (batch, heads, seq, seq)"},
        {{"--seq-q", "4", NULL}, "unknown flag '--seq-q'"},
    };
    check_bad_flags(LESSON, "lesson-6", BAD, sizeof BAD / sizeof BAD[0]);
}
END_TEST

// --heatmap draws one grid per (batch, head), each under its title line.
START_TEST(test_heatmap_flag) {
    check_prints(LESSON, (const char *const[]){"--heatmap", "--batch", "1", "--heads", "2", NULL},
                 "attention_weight[0, 0, :, :]\n"
                 "attention_weight[0, 1, :, :]\n");
}
END_TEST

// --- what a run may take (common/lesson/budget.h; harness.h: add_budget_tests) -----------

// Refused by the budget before anything runs, in one line that names the flags, the budget
// and how to raise it.
static const BudgetRefusal REFUSED[] = {
    {{"--batch", "8", "--seq", "64", "--dim", "4096", NULL},
     "lesson-6: --batch 8 --seq 64 --dim 4096 would hold about 548 MiB at once, more than the 512 "
     "MiB allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=550", NULL},
};

// Sizes where the tensors that grow with the flags are most of what a run holds, each
// flag raised in one of them, and the switches that add tensors on: what a run holds is
// its prediction (make test runs the first, make test-long all).
static const SizedRun SIZED[] = {
    {{"--batch", "2", "--seq", "256", "--dim", "64", "--heads", "4", "--train", NULL}},
    {{"--batch", "16", "--seq", "16", "--dim", "256", "--dump", "", NULL}},
};

static const LessonBudget BUDGET = {
    "06-multi-head", lesson_main, REFUSED, sizeof REFUSED / sizeof REFUSED[0], SIZED,
    sizeof SIZED / sizeof SIZED[0], NULL, 0,
};

Suite *lesson06_suite(void) {
    Suite *suite = suite_create("lesson06");
    TCase *pytorch = new_tcase("pytorch");
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, recorded_case_count(DATA));
    tcase_add_test(pytorch, test_notebook_shape_lines);
    suite_add_tcase(suite, pytorch);
    TCase *invariants = new_tcase("invariants");
    tcase_add_test(invariants, test_one_head_is_single_head_attention);
    tcase_add_test(invariants, test_heads_are_independent);
    tcase_add_test(invariants, test_hand_worked_two_heads);
    tcase_add_test(invariants, test_fully_masked_row_is_uniform);
    tcase_add_test(invariants, test_view_of_transposed_fails);
    tcase_add_loop_test(invariants, test_post_class, 0, recorded_case_count(DATA));
    tcase_add_test(invariants, test_commented_out_padding);
    suite_add_tcase(suite, invariants);
    TCase *cli = new_tcase("command line");
    tcase_add_test(cli, test_bad_flags);
    tcase_add_test(cli, test_heatmap_flag);
    suite_add_tcase(suite, cli);
    add_budget_tests(suite, &BUDGET);
    return suite;
}

int main(void) { return run_suite(lesson06_suite()); }
