// family_masked.c - the checks tests 4 and 5 share, SelfAttV3 and SelfAttV4
// (family_masked.h says what each does).
#include "family_masked.h"

#include <math.h>
#include <string.h>

MaskedCell masked_cell(const RecordedCase *c) {
    MaskedCell cell = {(uint64_t)case_int(c, "seed"), (int)case_int(c, "batch"),
                       (int)case_int(c, "seq"), (int)case_int(c, "dim")};
    return cell;
}

MaskedRun run_masked_cell(const MaskedModule *module, MaskedCell cell, bool train) {
    MaskedRun run;
    manual_seed(cell.seed);
    run.X = rand_tensor(shape3(cell.batch, cell.seq, cell.dim));
    run.b = module->padding_rows(cell.batch, cell.seq);
    run.mask = repeat(unsqueeze(run.b, 1), (int[]){1, cell.seq, 1});
    run.net = module->init(cell.dim, train);
    run.ret = module->forward(&run.weights, run.net, run.X, run.mask);
    return run;
}

// The module the tests below check, set by add_masked_module_tests: one per
// test program (check's tests take no arguments, so it waits here).
static const MaskedModule *module_under_test;

START_TEST(test_matches_pytorch) {
    const MaskedModule *m = module_under_test;
    ReferenceRun run = {.lesson = m->lesson, .exact = m->exact, .computed = m->computed,
                        .atol = ROUNDING_ATOL, .rtol = ROUNDING_RTOL,
                        .starts_with_reference = true};
    check_recorded_case(run, recorded_case(m->data, _i));
}
END_TEST

// `dropped` is zero exactly where `want` is (same shape, element for element).
static void assert_same_zeros(const Tensor *dropped, const Tensor *want, const char *what) {
    assert_same_shape(dropped, want, what);
    int index[MAX_DIMS] = {0};
    for (long e = 0; e < numel(want); e++) {
        ck_assert_msg((*at(dropped, index) == 0.0f) == (*at(want, index) == 0.0f),
                      "%s: element %s dropped in one and not the other", what,
                      index_text(index, want->shape.ndim));
        next_index(index, want->shape.size, want->shape.ndim);
    }
}

START_TEST(test_dropout_matches_pytorch) {
    const char *data = module_under_test->data;
    for (int i = 0; i < recorded_case_count(data); i++) {
        const RecordedCase *c = recorded_case(data, i);
        if (!case_int(c, "train")) {
            continue;
        }
        MaskedRun run = run_masked_cell(module_under_test, masked_cell(c), true);
        const Tensor *want = load_reference(c->reference, "att_weight_dropped");
        const Tensor *got = run.weights.att_weight_dropped;
        assert_close(got, want, ROUNDING_ATOL, ROUNDING_RTOL,
                     path_join("%s att_weight_dropped", c->dir));
        assert_same_zeros(got, want, c->dir);
    }
}
END_TEST

START_TEST(test_rows_sum_to_one_and_masked_are_zero) {
    const char *data = module_under_test->data;
    for (int i = 0; i < recorded_case_count(data); i++) {
        const RecordedCase *c = recorded_case(data, i);
        MaskedRun run = run_masked_cell(module_under_test, masked_cell(c), false);
        int masked = check_weight_rows(run.weights.att_weight, run.mask, c->dir);
        ck_assert_int_gt(masked, 0);
    }
}
END_TEST

START_TEST(test_padding_rows) {
    const float notebook[] = {1, 1, 1, 0, 1, 1, 0, 0, 1, 0, 0, 0};
    Tensor *want = tensor_from(shape2(3, 4), notebook);
    want->dtype = DTYPE_INT64;
    assert_bitwise_equal(module_under_test->padding_rows(3, 4), want, "b for 3x4");
    const float tall[] = {1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0};   // batch 5, seq 3
    Tensor *want_tall = tensor_from(shape2(5, 3), tall);
    want_tall->dtype = DTYPE_INT64;
    assert_bitwise_equal(module_under_test->padding_rows(5, 3), want_tall, "b for 5x3");
    const Tensor *single = module_under_test->padding_rows(2, 1);
    ck_assert(*at2(single, 0, 0) == 1.0f && *at2(single, 1, 0) == 1.0f);
}
END_TEST

START_TEST(test_dropout_scales_survivors) {
    MaskedCell big = {3, 4, 32, 2};   // 4*32*32 weights: a fair sample
    MaskedRun eval = run_masked_cell(module_under_test, big, false);
    uint32_t after_eval = random32();
    MaskedRun train = run_masked_cell(module_under_test, big, true);
    manual_seed(big.seed);
    rand_tensor(shape3(big.batch, big.seq, big.dim));
    module_under_test->init(big.dim, false);
    ck_assert_msg(random32() == after_eval, "eval-mode forward drew random numbers");

    const Tensor *before = eval.weights.att_weight;              // (B, T, S)
    const Tensor *dropped = train.weights.att_weight_dropped;    // (B, T, S)
    assert_bitwise_equal(train.weights.att_weight, before, "att_weight before dropout");
    assert_same_shape(dropped, before, "att_weight after dropout");
    long kept = 0, n_dropped = 0;
    int index[MAX_DIMS] = {0};
    for (long e = 0; e < numel(before); e++) {
        float weight = *at(before, index), after = *at(dropped, index);
        if (weight == 0.0f) {
            ck_assert(after == 0.0f);   // masked stays 0; dropout of a 0 cannot be seen
        } else if (after == 0.0f) {
            n_dropped++;
        } else {
            kept++;
            // PyTorch's arithmetic exactly: noise = 1.0f / 0.9f (the float
            // 1/(1-p)), out = weight * noise. That is weight / 0.9 to one rounding.
            float want = weight * (1.0f / 0.9f);
            ck_assert_msg(after == want, "kept %.9g, eval %.9g * (1/0.9) = %.9g",
                          (double)after, (double)weight, (double)want);
            ck_assert(fabs(after - weight / 0.9) <= 2e-7 * after);
        }
        next_index(index, before->shape.size, before->shape.ndim);
    }
    double fraction = (double)n_dropped / (double)(kept + n_dropped);
    ck_assert_msg(fraction > 0.05 && fraction < 0.15, "dropped %.3f of the weights", fraction);
}
END_TEST

START_TEST(test_fully_masked_row) {
    MaskedRun run = run_masked_cell(module_under_test, (MaskedCell){0, 2, 4, 2}, false);
    Tensor *mask = ones(shape3(2, 4, 4));   // batch row 1: every key masked
    for (int t = 0; t < 4; t++) {
        for (int s = 0; s < 4; s++) {
            *at3(mask, 1, t, s) = 0.0f;
        }
    }
    MaskedWeights w;
    const Tensor *ret = module_under_test->forward(&w, run.net, run.X, mask);   // (2, 4, 2)
    for (int t = 0; t < 4; t++) {
        for (int s = 0; s < 4; s++) {
            ck_assert_msg(*at3(w.att_weight, 1, t, s) == 0.25f, "fully masked row not uniform");
        }
        ck_assert(!isnan(*at3(ret, 1, t, 0)) && !isnan(*at3(ret, 1, t, 1)));
    }
}
END_TEST

START_TEST(test_all_ones_mask_is_no_mask) {
    const char *data = module_under_test->data;
    for (int i = 0; i < recorded_case_count(data); i++) {
        const RecordedCase *c = recorded_case(data, i);
        if (case_int(c, "train")) {
            continue;
        }
        MaskedCell cell = masked_cell(c);
        MaskedRun run = run_masked_cell(module_under_test, cell, false);
        const Tensor *ones_mask = ones(shape3(cell.batch, cell.seq, cell.seq));  // (B, T, S)
        const Tensor *with_ones = module_under_test->forward(NULL, run.net, run.X, ones_mask);
        const Tensor *unmasked = module_under_test->forward(NULL, run.net, run.X, NULL);
        assert_bitwise_equal(with_ones, unmasked, path_join("%s: all-ones mask vs no mask",
                                                            c->dir));
    }
}
END_TEST

// X = [[1, 0], [0, 1], [1, 1]], and key 2 is padding:
//   scores row 0 = [1, 0, 1] / sqrt(2) -> masked [0.7071, 0, -1e20]
//   weights row 0 = [e^0.7071, 1, 0] / (e^0.7071 + 1) = [0.66976, 0.33024, 0]
//   ret row 0 = 0.66976 * [1, 0] + 0.33024 * [0, 1]
// Query 2 is padding, yet it gets weights too: scores [1, 1, 2]/sqrt(2)
// masked to [0.7071, 0.7071, -1e20] -> [0.5, 0.5, 0] and ret [0.5, 0.5].
void check_hand_worked(const MaskedModule *module, const void *net) {
    const float x_values[] = {1, 0, 0, 1, 1, 1};
    const Tensor *X = tensor_from(shape3(1, 3, 2), x_values);
    const float b_values[] = {1, 1, 0};
    const Tensor *b = tensor_from(shape2(1, 3), b_values);
    const Tensor *mask = repeat(unsqueeze(b, 1), (int[]){1, 3, 1});   // (1, 3, 3)
    MaskedWeights w;
    const Tensor *ret = module->forward(&w, net, X, mask);

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

START_TEST(test_bad_flags) {
    static const BadFlags BAD[] = {
        {{"--dim", "0", NULL}, "--dim"},
        {{"--seq", "x", NULL}, "--seq"},
        {{"--batch", "-1", NULL}, "--batch"},
        {{"--dim", "2.5", NULL}, "--dim"},
        {{"--seq", "70000", NULL}, "--seq"},
        {{"--seed", "abc", NULL}, "--seed"},
        {{"--dim", NULL}, "--dim"},                      // missing value
        {{"--bogus", "1", NULL}, "--bogus"},
        {{"--train", "yes", NULL}, "yes"},               // --train takes no value
        {{"--batch", "65536", "--seq", "65536", NULL}, "att_weight"},   // too big together
    };
    check_bad_flags(module_under_test->lesson, module_under_test->program, BAD,
                    sizeof BAD / sizeof BAD[0]);
}
END_TEST

void add_masked_module_tests(Suite *suite, const MaskedModule *module) {
    module_under_test = module;
    TCase *pytorch = new_tcase("pytorch");
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, recorded_case_count(module->data));
    tcase_add_test(pytorch, test_dropout_matches_pytorch);
    suite_add_tcase(suite, pytorch);
    TCase *invariants = new_tcase("invariants");
    tcase_add_test(invariants, test_rows_sum_to_one_and_masked_are_zero);
    tcase_add_test(invariants, test_padding_rows);
    tcase_add_test(invariants, test_all_ones_mask_is_no_mask);
    tcase_add_test(invariants, test_dropout_scales_survivors);
    tcase_add_test(invariants, test_fully_masked_row);
    suite_add_tcase(suite, invariants);
    TCase *flags = new_tcase("flags");
    tcase_add_test(flags, test_bad_flags);
    suite_add_tcase(suite, flags);
}
