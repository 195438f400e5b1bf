// test_lesson05.c - lesson 5 (SelfAttV4, the interview version).
//
// Reference values in tests/data/lesson05/<case>/ were recorded from
// PyTorch 1.13 by tests/reference/gen_lesson05.py (CPU, no MKL, so dropout
// uses the generic bernoulli path of TORCH_RNG.md section 6). The lesson
// source is included with its main() renamed, so the tests can also call
// SelfAttV4_init / SelfAttV4_forward with weights set by hand.
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define main lesson_main
#include "../lessons/05-self-attention-v4/self_attention_v4.c"
#undef main

#define LESSON_DIR "05-self-attention-v4"
#define REF_DIR DATA_DIR "/lesson05"
#define V3_DIR DATA_DIR "/lesson04"   // lesson 4's recorded SelfAttV3 runs

// Computed tensors go through different summation orders here and in
// PyTorch (its matmul/addmm kernels vs our plain loops, its vectorised exp),
// so they agree to a few float32 roundings, not bit for bit. The values are
// O(1): atol 1e-6 covers the roundings near 0, rtol 1e-5 (~80 ulps) the rest.
#define ATOL 1e-6f
#define RTOL 1e-5f

// One recorded PyTorch run: keep in step with CASES in gen_lesson05.py.
typedef struct {
    const char *dir;
    uint64_t seed;
    int batch, seq, dim;
    bool train;
    const char *args[12];   // the lesson's flags for this run
} Case;

static const Case CASES[] = {
    {"seed0", 0, 3, 4, 2, false, {NULL}},
    {"seed0-train", 0, 3, 4, 2, true, {"--train", NULL}},
    {"seed7", 7, 5, 3, 4, false,
     {"--seed", "7", "--batch", "5", "--seq", "3", "--dim", "4", NULL}},
    {"seed7-train", 7, 5, 3, 4, true,
     {"--seed", "7", "--batch", "5", "--seq", "3", "--dim", "4", "--train", NULL}},
    {"seed123", 123, 2, 6, 8, false,
     {"--seed", "123", "--batch", "2", "--seq", "6", "--dim", "8", NULL}},
};
enum { N_CASES = sizeof CASES / sizeof CASES[0] };

static const char *const INPUTS[] = {
    "X", "mask", "query_proj.weight", "query_proj.bias", "key_proj.weight", "key_proj.bias",
    "value_proj.weight", "value_proj.bias", "output_proj.weight", "output_proj.bias"};
static const char *const COMPUTED[] = {"Q", "K", "V", "att_weight", "output", "ret"};

static Tensor *reference(const Case *c, const char *name) {
    return load_npy(path_join("%s/%s/%s.npy", REF_DIR, c->dir, name));
}

// The forward prints att_weight; keep that off the test's own output.
static int quiet_begin(void) {
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    close(null);
    return saved;
}

static void quiet_end(int saved) {
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
}

// The run of the cell as the lesson does it, inside this process: the same
// draws in the same order (X, then the module), so the tensors are PyTorch's.
typedef struct {
    Tensor *X;                  // (B, T, C)
    Tensor *b;                  // (B, S)
    Tensor *mask;               // (B, T, S)
    SelfAttV4 net;
    SelfAttV4Weights weights;
    Tensor *ret;                // (B, T, C)
} Run;

static Run run_cell(const Case *c, bool train) {
    Run run;
    manual_seed(c->seed);
    run.X = rand_tensor(shape3(c->batch, c->seq, c->dim));
    run.b = padding_rows(c->batch, c->seq);
    run.mask = repeat(unsqueeze(run.b, 1), (int[]){1, c->seq, 1});
    run.net = SelfAttV4_init(c->dim);
    run.net.training = train;
    int saved = quiet_begin();
    run.ret = SelfAttV4_forward(&run.net, run.X, run.mask, &run.weights);
    quiet_end(saved);
    return run;
}

// --- against PyTorch ------------------------------------------------------------------

// The binary, run with --dump: inputs and parameters bit for bit, computed
// tensors to float rounding, and its stdout starts with exactly the text
// PyTorch printed ("att_weight:", the weights one space in, the output shape).
START_TEST(test_matches_pytorch) {
    const Case *c = &CASES[_i];
    const char *dir = make_temp_dir();
    const char *args[16] = {"--dump", dir};
    int n = 2;
    for (int i = 0; c->args[i] != NULL; i++) {
        args[n++] = c->args[i];
    }
    args[n] = NULL;
    RunResult r = run_program(lesson_binary(LESSON_DIR), args);
    ck_assert_msg(r.status == 0, "%s: exit %d, stderr: %s", c->dir, r.status, r.err);

    for (size_t i = 0; i < sizeof INPUTS / sizeof INPUTS[0]; i++) {
        Tensor *got = load_npy(path_join("%s/%s.npy", dir, INPUTS[i]));
        assert_bitwise_equal(got, reference(c, INPUTS[i]), path_join("%s %s", c->dir, INPUTS[i]));
    }
    for (size_t i = 0; i < sizeof COMPUTED / sizeof COMPUTED[0]; i++) {
        Tensor *got = load_npy(path_join("%s/%s.npy", dir, COMPUTED[i]));
        assert_close(got, reference(c, COMPUTED[i]), ATOL, RTOL,
                     path_join("%s %s", c->dir, COMPUTED[i]));
    }
    const char *expected = read_text(path_join("%s/%s/stdout.txt", REF_DIR, c->dir));
    const char *missing = NULL;
    ck_assert_msg(lines_in_order(r.out, expected, &missing), "%s: line not printed: %s",
                  c->dir, missing);
    // Stronger: the notebook's lines come first and verbatim, so a diff
    // against the notebook's output shows nothing but the lesson's extras.
    ck_assert_msg(strncmp(r.out, expected, strlen(expected)) == 0,
                  "%s: stdout does not start with PyTorch's text:\n%s", c->dir, r.out);
    remove_dir(dir);
}
END_TEST

// Train mode: the lesson's dropout draws are PyTorch's. The same positions
// are zeroed, the kept weights agree to rounding (they are PyTorch's
// att_weight * (1/0.9), and att_weight agrees to rounding).
START_TEST(test_dropout_matches_pytorch) {
    for (int i = 0; i < N_CASES; i++) {
        const Case *c = &CASES[i];
        if (!c->train) {
            continue;
        }
        Run run = run_cell(c, true);
        Tensor *want = reference(c, "att_weight_dropped");
        Tensor *got = run.weights.att_weight_dropped;
        assert_close(got, want, ATOL, RTOL, path_join("%s att_weight_dropped", c->dir));
        int index[MAX_DIMS] = {0};
        for (long e = 0; e < numel(want); e++) {
            ck_assert_msg((*at(got, index) == 0.0f) == (*at(want, index) == 0.0f),
                          "%s: element %ld dropped in one and not the other", c->dir, e);
            next_index(index, want->shape, want->ndim);
        }
    }
}
END_TEST

// --- invariants -------------------------------------------------------------------------

// Every row of att_weight sums to 1 and masked weights are exactly 0 (not
// merely tiny): exp(-1e20 - max) underflows to 0.0f.
START_TEST(test_rows_sum_to_one_and_masked_are_zero) {
    for (int i = 0; i < N_CASES; i++) {
        Run run = run_cell(&CASES[i], false);
        Tensor *w = run.weights.att_weight;                            // (B, T, S)
        int masked = 0;
        for (int b = 0; b < size(w, 0); b++) {
            for (int t = 0; t < size(w, 1); t++) {
                double sum = 0.0;
                for (int s = 0; s < size(w, 2); s++) {
                    float weight = *at3(w, b, t, s);
                    sum += weight;
                    if (*at3(run.mask, b, t, s) == 0.0f) {
                        ck_assert_msg(weight == 0.0f, "%s: masked weight [%d, %d, %d] = %g",
                                      CASES[i].dir, b, t, s, (double)weight);
                        masked++;
                    } else {
                        ck_assert_msg(weight > 0.0f, "unmasked weight is 0");
                    }
                }
                ck_assert_msg(fabs(sum - 1.0) < 1e-6, "%s: row [%d, %d] sums to %.9f",
                              CASES[i].dir, b, t, sum);
            }
        }
        ck_assert_int_gt(masked, 0);
    }
}
END_TEST

// The notebook's b for 3x4, and for batch > seq every row keeps one key.
START_TEST(test_padding_rows) {
    const float notebook[] = {1, 1, 1, 0, 1, 1, 0, 0, 1, 0, 0, 0};
    Tensor *want = tensor_from(shape2(3, 4), notebook);
    want->dtype = DTYPE_INT64;
    assert_bitwise_equal(padding_rows(3, 4), want, "b for 3x4");
    const float tall[] = {1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0};   // batch 5, seq 3
    Tensor *want_tall = tensor_from(shape2(5, 3), tall);
    want_tall->dtype = DTYPE_INT64;
    assert_bitwise_equal(padding_rows(5, 3), want_tall, "b for 5x3");
    Tensor *single = padding_rows(2, 1);
    ck_assert(*at2(single, 0, 0) == 1.0f && *at2(single, 1, 0) == 1.0f);
}
END_TEST

// Build a V4 from V3's weights: rows 0..C-1 of proj.weight are query_proj,
// C..2C-1 key_proj, 2C..3C-1 value_proj (torch.split of QKV takes its
// columns in that order, and output column o comes from weight row o).
// The parts are views into proj, as weight[p*C:(p+1)*C] would be in
// PyTorch; linear() reads a view through its offset, so nothing is copied.
static void load_v3_weights(SelfAttV4 *net, const char *case_dir) {
    int C = net->dim;
    Tensor *proj_weight = load_npy(path_join("%s/%s/proj.weight.npy", V3_DIR, case_dir));
    Tensor *proj_bias = load_npy(path_join("%s/%s/proj.bias.npy", V3_DIR, case_dir));
    Linear *parts[3] = {&net->query_proj, &net->key_proj, &net->value_proj};
    for (int p = 0; p < 3; p++) {
        parts[p]->weight = narrow(proj_weight, 0, p * C, C);   // (C, C)
        parts[p]->bias = narrow(proj_bias, 0, p * C, C);       // (C)
    }
    net->output_proj.weight =
        load_npy(path_join("%s/%s/output_proj.weight.npy", V3_DIR, case_dir));
    net->output_proj.bias = load_npy(path_join("%s/%s/output_proj.bias.npy", V3_DIR, case_dir));
}

// V4 with V3's weights split equals V3: lesson 4's recorded PyTorch
// SelfAttV3 runs, eval and train. In train mode the dropout draws line up
// as well: both modules draw the same number of parameters (3C*C + 3C, then
// output_proj), so after init the generator is at the same place.
START_TEST(test_v4_with_v3_weights_equals_v3) {
    static const struct { const char *dir; uint64_t seed; int batch, seq, dim; bool train; } V3[] = {
        {"seed0", 0, 3, 4, 2, false}, {"seed0-train", 0, 3, 4, 2, true},
        {"seed7", 7, 5, 3, 4, false}, {"seed7-train", 7, 5, 3, 4, true},
        {"seed123", 123, 2, 6, 8, false},
    };
    for (size_t i = 0; i < sizeof V3 / sizeof V3[0]; i++) {
        manual_seed(V3[i].seed);
        Tensor *X = rand_tensor(shape3(V3[i].batch, V3[i].seq, V3[i].dim));
        assert_bitwise_equal(X, load_npy(path_join("%s/%s/X.npy", V3_DIR, V3[i].dir)), "X");
        SelfAttV4 net = SelfAttV4_init(V3[i].dim);   // draws as many numbers as SelfAttV3
        net.training = V3[i].train;
        load_v3_weights(&net, V3[i].dir);
        Tensor *mask = load_npy(path_join("%s/%s/mask.npy", V3_DIR, V3[i].dir));
        SelfAttV4Weights w;
        int saved = quiet_begin();
        Tensor *ret = SelfAttV4_forward(&net, X, mask, &w);
        quiet_end(saved);
        const char *what = path_join("V4 with V3 weights, %s", V3[i].dir);
        assert_close(w.att_weight, load_npy(path_join("%s/%s/att_weight.npy", V3_DIR, V3[i].dir)),
                     ATOL, RTOL, what);
        assert_close(ret, load_npy(path_join("%s/%s/ret.npy", V3_DIR, V3[i].dir)), ATOL, RTOL,
                     what);
    }
}
END_TEST

// An all-ones mask changes nothing at all, bit for bit, against no mask.
START_TEST(test_all_ones_mask_is_no_mask) {
    Run run = run_cell(&CASES[0], false);
    Tensor *ones_mask = ones(shape3(3, 4, 4));
    int saved = quiet_begin();
    Tensor *with_ones = SelfAttV4_forward(&run.net, run.X, ones_mask, NULL);
    Tensor *unmasked = SelfAttV4_forward(&run.net, run.X, NULL, NULL);
    quiet_end(saved);
    assert_bitwise_equal(with_ones, unmasked, "all-ones mask vs no mask");
}
END_TEST

// In train mode the kept weights are the eval weights / 0.9 and the
// dropped ones are exactly 0; about 10% are dropped; eval mode draws
// nothing from the generator.
START_TEST(test_dropout_scales_survivors) {
    Case big = {"big", 3, 4, 32, 2, false, {NULL}};   // 4*32*32 weights: a fair sample
    Run eval = run_cell(&big, false);
    uint32_t after_eval = random32();
    Run train = run_cell(&big, true);
    manual_seed(big.seed);
    rand_tensor(shape3(big.batch, big.seq, big.dim));
    SelfAttV4_init(big.dim);
    ck_assert_msg(random32() == after_eval, "eval-mode forward drew random numbers");

    Tensor *w = eval.weights.att_weight, *d = train.weights.att_weight_dropped;
    assert_bitwise_equal(train.weights.att_weight, w, "att_weight before dropout");
    long kept = 0, dropped = 0;
    int index[MAX_DIMS] = {0};
    for (long e = 0; e < numel(w); e++) {
        float weight = *at(w, index), after = *at(d, index);
        if (weight == 0.0f) {
            ck_assert(after == 0.0f);   // masked stays 0; dropout of a 0 cannot be seen
        } else if (after == 0.0f) {
            dropped++;
        } else {
            kept++;
            // PyTorch's arithmetic exactly: noise = 1.0f / 0.9f (the float
            // 1/(1-p)), out = weight * noise. That is weight / 0.9 to one rounding.
            float want = weight * (1.0f / 0.9f);
            ck_assert_msg(after == want, "kept %.9g, eval %.9g * (1/0.9) = %.9g",
                          (double)after, (double)weight, (double)want);
            ck_assert(fabs(after - weight / 0.9) <= 2e-7 * after);
        }
        next_index(index, w->shape, w->ndim);
    }
    double fraction = (double)dropped / (double)(kept + dropped);
    ck_assert_msg(fraction > 0.05 && fraction < 0.15, "dropped %.3f of the weights", fraction);
}
END_TEST

// --- hand-worked -------------------------------------------------------------------------

static void set_linear(Linear *layer, const float *weight, const float *bias) {
    memcpy(layer->weight->data, weight, sizeof(float) * numel(layer->weight));
    memcpy(layer->bias->data, bias, sizeof(float) * numel(layer->bias));
}

// dim 2, Q = K = V = X and output_proj = identity, so everything is
// computable by hand. X = [[1, 0], [0, 1], [1, 1]], and key 2 is padding.
//   scores row 0 = [1, 0, 1] / sqrt(2) -> masked [0.7071, 0, -1e20]
//   weights row 0 = [e^0.7071, 1, 0] / (e^0.7071 + 1) = [0.66976, 0.33024, 0]
//   ret row 0 = 0.66976 * [1, 0] + 0.33024 * [0, 1]
// Query 2 is padding, yet it gets weights too: scores [1, 1, 2]/sqrt(2)
// masked to [0.7071, 0.7071, -1e20] -> [0.5, 0.5, 0] and ret [0.5, 0.5].
START_TEST(test_hand_worked) {
    SelfAttV4 net = SelfAttV4_init(2);
    net.training = false;
    const float identity[] = {1, 0, 0, 1};
    const float zeros2[] = {0, 0};
    set_linear(&net.query_proj, identity, zeros2);   // Q = X
    set_linear(&net.key_proj, identity, zeros2);     // K = X
    set_linear(&net.value_proj, identity, zeros2);   // V = X
    set_linear(&net.output_proj, identity, zeros2);
    const float x_values[] = {1, 0, 0, 1, 1, 1};
    Tensor *X = tensor_from(shape3(1, 3, 2), x_values);
    const float b_values[] = {1, 1, 0};
    Tensor *mask = repeat(unsqueeze(tensor_from(shape2(1, 3), b_values), 1), (int[]){1, 3, 1});
    SelfAttV4Weights w;
    int saved = quiet_begin();
    Tensor *ret = SelfAttV4_forward(&net, X, mask, &w);
    quiet_end(saved);

    double e = exp(1.0 / sqrt(2.0));
    double w0 = e / (e + 1.0), w1 = 1.0 / (e + 1.0);
    double e_row1 = exp(1.0 / sqrt(2.0));   // query 1 = [0, 1]: scores [0, 1, 1]/sqrt(2)
    const float want_w[] = {
        (float)w0, (float)w1, 0,
        (float)(1.0 / (1.0 + e_row1)), (float)(e_row1 / (1.0 + e_row1)), 0,
        0.5f, 0.5f, 0,
    };
    assert_close(w.att_weight, tensor_from(shape3(1, 3, 3), want_w), 1e-6f, 1e-6f,
                 "hand-worked att_weight");
    const float want_ret[] = {
        (float)w0, (float)w1,
        (float)(1.0 / (1.0 + e_row1)), (float)(e_row1 / (1.0 + e_row1)),
        0.5f, 0.5f,
    };
    assert_close(ret, tensor_from(shape3(1, 3, 2), want_ret), 1e-6f, 1e-6f, "hand-worked ret");
}
END_TEST

// A row whose keys are all masked gets exactly uniform weights with the
// -1e20 fill (every score is -1e20, exp(0) = 1 each), not NaN.
START_TEST(test_fully_masked_row) {
    Case c = {"masked", 0, 2, 4, 2, false, {NULL}};
    Run run = run_cell(&c, false);
    Tensor *mask = ones(shape3(2, 4, 4));
    for (int t = 0; t < 4; t++) {
        for (int s = 0; s < 4; s++) {
            *at3(mask, 1, t, s) = 0.0f;
        }
    }
    SelfAttV4Weights w;
    int saved = quiet_begin();
    Tensor *ret = SelfAttV4_forward(&run.net, run.X, mask, &w);
    quiet_end(saved);
    for (int t = 0; t < 4; t++) {
        for (int s = 0; s < 4; s++) {
            ck_assert_msg(*at3(w.att_weight, 1, t, s) == 0.25f, "fully masked row not uniform");
        }
        ck_assert(!isnan(*at3(ret, 1, t, 0)));
    }
}
END_TEST

// The interview part of the output, with numbers worked by hand for the
// defaults (dim 2) and for --dim 8: 3 x (64 + 8) = 216, 192 without bias.
START_TEST(test_prints_interview_points) {
    RunResult r = run_program(lesson_binary(LESSON_DIR), (const char *const[]){NULL});
    ck_assert_int_eq(r.status, 0);
    const char *expected =
        "-- what to say about each choice --\n"
        "  gives the same Q, K, V (largest difference 0): the same math in one matmul instead of three.\n"
        "bias: 3 x (2*2 + 2) = 18 parameters for Q, K, V with biases, 12 without; + 6 for output_proj.\n"
        "scaling: scores are divided by sqrt(dim) = 1.4142 so their variance does not grow with dim.\n"
        "dropout: p = 0.1 on att_weight (before @ V), off now (eval mode).\n";
    const char *missing = NULL;
    ck_assert_msg(lines_in_order(r.out, expected, &missing), "not printed: %s", missing);
    RunResult t = run_program(lesson_binary(LESSON_DIR),
                              (const char *const[]){"--dim", "8", "--train", NULL});
    ck_assert_int_eq(t.status, 0);
    ck_assert_msg(strstr(t.out, "bias: 3 x (8*8 + 8) = 216 parameters for Q, K, V with biases, "
                                "192 without; + 72 for output_proj.") != NULL, "%s", t.out);
    ck_assert_msg(strstr(t.out, "largest difference 0)") != NULL, "%s", t.out);
    ck_assert_msg(strstr(t.out, "on now (--train)") != NULL, "%s", t.out);
}
END_TEST

// --- bad flags ------------------------------------------------------------------------------

// Each: exit 2, nothing on stdout, one line on stderr naming the flag, and
// the --dump directory not created.
START_TEST(test_bad_flags) {
    static const struct {
        const char *flag, *value;   // value NULL: the flag alone at the end
        const char *named;          // what the message must mention
    } BAD[] = {
        {"--dim", "0", "--dim"},     {"--seq", "x", "--seq"},
        {"--batch", "-1", "--batch"}, {"--dim", "2.5", "--dim"},
        {"--seq", "70000", "--seq"}, {"--seed", "abc", "--seed"},
        {"--dim", NULL, "--dim"},    {"--bogus", "1", "--bogus"},
        {"--train", "yes", "yes"},   {"--batch", "65536", "att_weight"},
    };
    const char *tmp = make_temp_dir();
    const char *dump = path_join("%s/out", tmp);
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        const char *args[8] = {"--dump", dump, BAD[i].flag, BAD[i].value, NULL};
        if (strcmp(BAD[i].named, "att_weight") == 0) {   // sizes that are each fine, too big together
            args[4] = "--seq";
            args[5] = "65536";
            args[6] = NULL;
        }
        RunResult r = run_program(lesson_binary(LESSON_DIR), args);
        ck_assert_msg(r.status == 2, "%s %s: exit %d", BAD[i].flag, BAD[i].value, r.status);
        ck_assert_msg(r.out[0] == '\0', "%s: printed on stdout: %s", BAD[i].flag, r.out);
        const char *newline = strchr(r.err, '\n');
        ck_assert_msg(newline != NULL && newline[1] == '\0', "%s: not one line: %s",
                      BAD[i].flag, r.err);
        ck_assert_msg(strstr(r.err, BAD[i].named) != NULL && strstr(r.err, "lesson-5") == r.err,
                      "%s: message does not name it: %s", BAD[i].flag, r.err);
        struct stat info;
        ck_assert_msg(stat(dump, &info) != 0, "%s: the dump directory was created", BAD[i].flag);
    }
    remove_dir(tmp);
}
END_TEST

static Suite *lesson05_suite(void) {
    Suite *suite = suite_create("lesson05");
    TCase *pytorch = new_tcase("pytorch");
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, N_CASES);
    tcase_add_test(pytorch, test_dropout_matches_pytorch);
    suite_add_tcase(suite, pytorch);
    TCase *invariants = new_tcase("invariants");
    tcase_add_test(invariants, test_rows_sum_to_one_and_masked_are_zero);
    tcase_add_test(invariants, test_padding_rows);
    tcase_add_test(invariants, test_v4_with_v3_weights_equals_v3);
    tcase_add_test(invariants, test_all_ones_mask_is_no_mask);
    tcase_add_test(invariants, test_dropout_scales_survivors);
    tcase_add_test(invariants, test_hand_worked);
    tcase_add_test(invariants, test_fully_masked_row);
    tcase_add_test(invariants, test_prints_interview_points);
    suite_add_tcase(suite, invariants);
    TCase *flags = new_tcase("flags");
    tcase_add_test(flags, test_bad_flags);
    suite_add_tcase(suite, flags);
    return suite;
}

int main(void) { return run_suite(lesson05_suite()); }
