// test_lesson03.c - lesson 3 (SelfAttV2: fused proj, split, output_proj).
//
// Reference values in tests/data/lesson03/<case>/ were recorded from
// PyTorch 1.13 by tests/reference/gen_lesson03.py; lesson 2's recorded
// SelfAttV1 runs (tests/data/lesson02/) give the "V2 with V1's weights
// stacked equals V1" check. The lesson source is included with its main()
// renamed, so the tests can call SelfAttV2_forward with weights of their own.
#include <math.h>
#include <string.h>

#include "harness.h"

#define main lesson_main
#include "../lessons/03-self-attention-v2/self_attention_v2.c"
#undef main

#define LESSON_DIR "03-self-attention-v2"
#define REF_DIR DATA_DIR "/lesson03"
#define V1_DIR DATA_DIR "/lesson02"

// Computed tensors go through different summation orders here and in
// PyTorch (its addmm/bmm kernels vs our plain loops, its vectorised exp), so
// they agree to a few float32 roundings, not bit for bit. The values are
// O(1): atol 1e-6 covers the roundings near 0, rtol 1e-5 (~80 ulps) the rest.
#define ATOL 1e-6f
#define RTOL 1e-5f

// One recorded PyTorch run: keep in step with CASES in gen_lesson03.py.
typedef struct {
    const char *dir;
    int batch, seq, dim;
    const char *args[10];   // the lesson's flags for this run
} Case;

static const Case CASES[] = {
    {"seed0", 3, 2, 4, {NULL}},
    {"seed7", 3, 2, 4, {"--seed", "7", NULL}},
    {"seed1_batch2_seq5_dim8", 2, 5, 8,
     {"--seed", "1", "--batch", "2", "--seq", "5", "--dim", "8", NULL}},
};
enum { N_CASES = sizeof CASES / sizeof CASES[0] };

// Lesson 2's recorded runs (gen_lesson02.py), for the stacking check.
static const Case V1_CASES[] = {
    {"seed0", 3, 2, 4, {NULL}},
    {"seed7", 3, 2, 4, {NULL}},
    {"seed1_batch2_seq5_dim8", 2, 5, 8, {NULL}},
    {"seed3_batch2_seq40_dim16", 2, 40, 16, {NULL}},
};

// Drawn from the generator: must match bit for bit.
static const char *const INPUTS[] = {"X", "proj.weight", "proj.bias", "output_proj.weight",
                                     "output_proj.bias", NULL};
// Computed from them: must match to float rounding.
static const char *const COMPUTED[] = {"QKV", "Q", "K", "V", "att_weight", "output", "ret",
                                       NULL};

static Tensor *reference(const char *base, const Case *c, const char *name) {
    return load_npy(path_join("%s/%s/%s.npy", base, c->dir, name));
}

static Linear linear_of(Tensor *weight, Tensor *bias) {
    Linear layer = {weight, bias, size(weight, 1), size(weight, 0)};
    return layer;
}

// A SelfAttV2 holding the parameters PyTorch recorded for case c.
static SelfAttV2 recorded_net(const Case *c) {
    SelfAttV2 net;
    net.dim = c->dim;
    net.proj = linear_of(reference(REF_DIR, c, "proj.weight"), reference(REF_DIR, c, "proj.bias"));
    net.output_proj = linear_of(reference(REF_DIR, c, "output_proj.weight"),
                                reference(REF_DIR, c, "output_proj.bias"));
    return net;
}

// --- against PyTorch --------------------------------------------------------------------

// The binary, run with --dump: inputs and parameters bit for bit, computed
// tensors to float rounding, every line PyTorch printed printed in order,
// and the notebook's three lines ([INFO], the two profile lines with the
// corrected label) first and verbatim.
START_TEST(test_matches_pytorch) {
    const Case *c = &CASES[_i];
    const char *recorded = path_join("%s/%s", REF_DIR, c->dir);
    ReferenceRun run = {LESSON_DIR, recorded, c->args, INPUTS, COMPUTED, ATOL, RTOL, false};
    RunResult r = check_against_reference(&run);
    check_notebook_lines_first(r.out, recorded);
    // The notebook's label was SelfAttV1; ours must not repeat it.
    ck_assert_ptr_null(strstr(r.out, "SelfAttV1 FLOPs"));
}
END_TEST

// The forward alone on PyTorch's recorded X and weights (no generator).
START_TEST(test_forward_on_recorded_weights) {
    for (int i = 0; i < N_CASES; i++) {
        const Case *c = &CASES[i];
        SelfAttV2 net = recorded_net(c);
        SelfAttV2Steps steps;
        const Tensor *ret = SelfAttV2_forward(&steps, &net, reference(REF_DIR, c, "X"));
        assert_close(ret, reference(REF_DIR, c, "ret"), ATOL, RTOL, path_join("%s ret", c->dir));
        assert_close(steps.att_weight, reference(REF_DIR, c, "att_weight"), ATOL, RTOL,
                     path_join("%s att_weight", c->dir));
    }
}
END_TEST

// --- invariants ---------------------------------------------------------------------------

// V2 with V1's three weight matrices (and biases) stacked into proj, and
// output_proj the identity, is V1: its Q, K, V and its output before
// output_proj equal what PyTorch recorded for SelfAttV1 in lesson 2.
START_TEST(test_v1_weights_stacked_equal_v1) {
    for (size_t i = 0; i < sizeof V1_CASES / sizeof V1_CASES[0]; i++) {
        const Case *c = &V1_CASES[i];
        const Tensor *weights[3], *biases[3];
        const char *names[] = {"query_proj", "key_proj", "value_proj"};
        for (int p = 0; p < 3; p++) {
            weights[p] = reference(V1_DIR, c, path_join("%s.weight", names[p]));   // (C, C)
            biases[p] = reference(V1_DIR, c, path_join("%s.bias", names[p]));      // (C,)
        }
        SelfAttV2 net;
        net.dim = c->dim;
        net.proj = linear_of(cat(weights, 3, 0), cat(biases, 3, 0));   // (3C, C), (3C,)
        Tensor *identity = zeros(shape2(c->dim, c->dim));
        for (int d = 0; d < c->dim; d++) {
            *at2(identity, d, d) = 1.0f;
        }
        net.output_proj = linear_of(identity, zeros(shape1(c->dim)));

        SelfAttV2Steps steps;
        const Tensor *ret = SelfAttV2_forward(&steps, &net, reference(V1_DIR, c, "X"));
        const char *what = path_join("lesson02 %s", c->dir);
        assert_close(steps.Q, reference(V1_DIR, c, "Q"), ATOL, RTOL, path_join("%s Q", what));
        assert_close(steps.K, reference(V1_DIR, c, "K"), ATOL, RTOL, path_join("%s K", what));
        assert_close(steps.V, reference(V1_DIR, c, "V"), ATOL, RTOL, path_join("%s V", what));
        assert_close(steps.att_weight, reference(V1_DIR, c, "attention_weight"), ATOL, RTOL,
                     path_join("%s weights", what));
        assert_close(steps.output, reference(V1_DIR, c, "output"), ATOL, RTOL,
                     path_join("%s output", what));
        // x * 1 + 0 * others + 0 is exact: identity output_proj changes nothing.
        assert_bitwise_equal(ret, steps.output, "identity output_proj");
    }
}
END_TEST

// Rows of att_weight sum to 1, and every weight is positive.
START_TEST(test_rows_sum_to_one) {
    for (int i = 0; i < N_CASES; i++) {
        const Case *c = &CASES[i];
        SelfAttV2 net = recorded_net(c);
        SelfAttV2Steps steps;
        SelfAttV2_forward(&steps, &net, reference(REF_DIR, c, "X"));
        check_weight_rows(steps.att_weight, NULL, c->dir);   // (B, T, T)
    }
}
END_TEST

// split made views: Q, K and V share QKV's storage, keep its strides, start
// at offsets 0, dim and 2*dim, and a write into QKV shows through them.
START_TEST(test_split_gives_views) {
    const Case *c = &CASES[2];   // dim 8: offsets 0, 8, 16; stride (5*24, 24, 1)
    SelfAttV2 net = recorded_net(c);
    SelfAttV2Steps steps;
    SelfAttV2_forward(&steps, &net, reference(REF_DIR, c, "X"));
    const Tensor *parts[] = {steps.Q, steps.K, steps.V};
    for (int p = 0; p < 3; p++) {
        ck_assert_ptr_eq(parts[p]->data, steps.QKV->data);
        ck_assert_int_eq(parts[p]->offset, p * 8);
        ck_assert_int_eq(parts[p]->stride[0], 120);
        ck_assert_int_eq(parts[p]->stride[1], 24);
        ck_assert_int_eq(parts[p]->stride[2], 1);
        ck_assert(!is_contiguous(parts[p]));
    }
    // QKV is a fresh result of linear(); a visible cast lets the test write
    // into it, and K, a view of it, sees the write.
    *at3((Tensor *)steps.QKV, 1, 2, 8 + 3) = 42.0f;   // column 3 of K
    ck_assert(*at3(steps.K, 1, 2, 3) == 42.0f);
}
END_TEST

// --- hand-worked counts ------------------------------------------------------------------------

// thop's numbers and the full count for two sizes other than the notebook's,
// against numbers worked out by hand here.
//
// batch 2, seq 5, dim 8 (80 vectors):
//   proj 8 x (2*5*24) = 1920, output_proj 8 x (2*5*8) = 640; thop 2560 -> 0.002560
//   params (8*24 + 24) + (8*8 + 8) = 216 + 72 = 288                   -> 0.000288 M
//   not seen: 400 + 50 + 150 + 400 = 1000; whole 3560                 -> 0.003560 M
// batch 1, seq 64, dim 16 (64 vectors):
//   proj 16 x (64*48) = 49152, output_proj 16 x (64*16) = 16384; thop 65536
//   params (16*48 + 48) + (16*16 + 16) = 816 + 272 = 1088             -> 0.001088 M
//   not seen: 65536 + 4096 + 12288 + 65536 = 147456; whole 212992
START_TEST(test_counts_two_sizes) {
    static const struct {
        const char *args[8];
        const char *lines;
    } SIZES[] = {
        {{"--batch", "2", "--seq", "5", "--dim", "8", NULL},
         "SelfAttV2 FLOPs: 0.002560 MFLOPs\n"
         "SelfAttV2 Parameters: 0.000288 M\n"
         "  proj         8 x (2*5*24) = 1920  (= V1's three projections)\n"
         "  output_proj  8 x (2*5*8) = 640\n"
         "  Parameters = (dim*3*dim + 3*dim) + (dim*dim + dim) = 216 + 72 = 288\n"
         "  not seen by thop: Q @ K^T, / sqrt(dim), softmax, att_weight @ V = 1000\n"
         "counted by thop:    2560 = 0.002560 M\n"
         "the whole forward:  3560 = 0.003560 M\n"},
        {{"--batch", "1", "--seq", "64", "--dim", "16", NULL},
         "SelfAttV2 FLOPs: 0.065536 MFLOPs\n"
         "SelfAttV2 Parameters: 0.001088 M\n"
         "  proj         16 x (1*64*48) = 49152  (= V1's three projections)\n"
         "  output_proj  16 x (1*64*16) = 16384\n"
         "  Parameters = (dim*3*dim + 3*dim) + (dim*dim + dim) = 816 + 272 = 1088\n"
         "  not seen by thop: Q @ K^T, / sqrt(dim), softmax, att_weight @ V = 147456\n"
         "the whole forward:  212992 = 0.212992 M\n"},
    };
    for (size_t i = 0; i < sizeof SIZES / sizeof SIZES[0]; i++) {
        check_prints(LESSON_DIR, SIZES[i].args, SIZES[i].lines);
    }
}
END_TEST

// The defaults: the notebook's numbers and the stacking demo's zeros.
START_TEST(test_notebook_numbers) {
    check_prints(LESSON_DIR, (const char *const[]){NULL},
                 "SelfAttV2 FLOPs: 0.000384 MFLOPs\n"
                 "SelfAttV2 Parameters: 0.000080 M\n"
                 "stacked weights torch.Size([12, 4]), max |stacked - proj.weight| = 0\n"
                 "max |query_proj(X) - Q| = 0\n"
                 "max |key_proj(X) - K|   = 0\n"
                 "max |value_proj(X) - V| = 0\n"
                 "the whole forward:  528 = 0.000528 M\n");
}
END_TEST

// --- bad flags ---------------------------------------------------------------------------------

// Each: exit 2, nothing on stdout, exactly one line on stderr naming the
// flag (or the tensor that would not fit), and the --dump directory not made.
START_TEST(test_bad_flags) {
    static const BadFlags BAD[] = {
        {{"--dim", "0", NULL}, "--dim"},
        {{"--seq", "x", NULL}, "--seq"},
        {{"--batch", "-2", NULL}, "--batch"},
        {{"--dim", "1e3", NULL}, "--dim"},
        {{"--dim", NULL}, "--dim"},                       // missing value
        {{"--seq", "--dim", "4", NULL}, "--seq"},         // value missing, next flag follows
        {{"--seed", "1.5", NULL}, "--seed"},
        {{"--heads", "2", NULL}, "--heads"},              // V2 has one head
        {{"--dim", "20000", NULL}, "proj.weight"},        // 3*dim*dim > 2^26
        {{"--seq", "60000", "--dim", "1", NULL}, "att_weight"},   // batch*seq*seq > 2^26
    };
    check_bad_flags(LESSON_DIR, "lesson-3", BAD, sizeof BAD / sizeof BAD[0]);
}
END_TEST

static Suite *lesson03_suite(void) {
    Suite *suite = suite_create("lesson03");
    TCase *pytorch = new_tcase("pytorch");
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, N_CASES);
    tcase_add_test(pytorch, test_forward_on_recorded_weights);
    suite_add_tcase(suite, pytorch);
    TCase *invariants = new_tcase("invariants");
    tcase_add_test(invariants, test_v1_weights_stacked_equal_v1);
    tcase_add_test(invariants, test_rows_sum_to_one);
    tcase_add_test(invariants, test_split_gives_views);
    suite_add_tcase(suite, invariants);
    TCase *counts = new_tcase("counts");
    tcase_add_test(counts, test_counts_two_sizes);
    tcase_add_test(counts, test_notebook_numbers);
    suite_add_tcase(suite, counts);
    TCase *flags = new_tcase("flags");
    tcase_add_test(flags, test_bad_flags);
    suite_add_tcase(suite, flags);
    return suite;
}

int main(void) { return run_suite(lesson03_suite()); }
