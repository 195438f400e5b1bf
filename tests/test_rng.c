// test_rng.c - common/exact/rng.c against numbers recorded from PyTorch 1.13.
//
// The reference files in tests/data/rng/ were written by
// tests/reference/gen_rng.py on an AVX2 machine. A file called
// "<what>_seed<tag>.npy" holds what PyTorch returned for <what> right after
// torch.manual_seed(seed). Every comparison is bit for bit: the whole point
// of rng.c is that a lesson starts from exactly the notebook's numbers.
// Section numbers (§) refer to docs/pytorch-rng.md.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define RNG_DIR DATA_DIR "/rng"

typedef struct {
    uint64_t seed;     // what manual_seed() gets
    const char *tag;   // how the file names spell it
} Seed;

// 2^32 + 5 must act like 5, and -1 is passed as its two's complement (§1).
static const Seed SEEDS[] = {
    {0, "0"}, {1, "1"}, {42, "42"}, {1234, "1234"},
    {(1ULL << 32) + 5, "4294967301"}, {(uint64_t)-1, "minus1"},
};
enum { N_SEEDS = sizeof SEEDS / sizeof SEEDS[0] };

// --- helpers -------------------------------------------------------------------

// "3x2x128", as gen_rng.py names shapes.
static const char *shape_name(Shape shape) {
    return shape_str(shape, SIZES_X);
}

static const char *reference_path(const char *what, const char *tag) {
    return path_join("%s/%s_seed%s.npy", RNG_DIR, what, tag);
}

// Compare bit for bit with tests/data/rng/<what>_seed<tag>.npy.
static void check_bits(const Tensor *got, const char *what, const char *tag) {
    const char *path = reference_path(what, tag);
    assert_bitwise_equal(got, load_npy(path), path);
}

// `count` generator words, each split into its high and low 16 bits (a float
// holds a 16-bit integer exactly; gen_rng.py splits them the same way).
static Tensor *next_words_split(int count) {
    Tensor *t = zeros(shape2(count, 2));
    t->dtype = DTYPE_INT64;
    for (int i = 0; i < count; i++) {
        uint32_t word = random32();
        *at2(t, i, 0) = (float)(word >> 16);
        *at2(t, i, 1) = (float)(word & 0xFFFFu);
    }
    return t;
}

// The bounds nn.Linear's reset_parameters uses, in PyTorch's order of
// double operations (§3): kaiming_uniform_(a = sqrt(5)) for the weight,
// 1/sqrt(fan_in) for the bias.
static double linear_weight_bound(int in_features) {
    double a = sqrt(5.0);
    double gain = sqrt(2.0 / (1 + a * a));
    return sqrt(3.0) * (gain / sqrt((double)in_features));
}

static double linear_bias_bound(int in_features) {
    return 1 / sqrt((double)in_features);
}

// nn.Linear(in, out)'s draws spelled out with uniform_, checked against the
// recorded weight and bias "<prefix>_weight_seed<tag>" / "_bias_".
static void check_linear_draws(const char *prefix, const char *tag, int in, int out,
                               bool bias) {
    Tensor *weight = zeros(shape2(out, in));
    double wb = linear_weight_bound(in);
    uniform_(weight, -wb, wb);
    check_bits(weight, path_join("%s_weight", prefix), tag);
    if (bias) {
        Tensor *b = zeros(shape1(out));
        double bb = linear_bias_bound(in);
        uniform_(b, -bb, bb);
        check_bits(b, path_join("%s_bias", prefix), tag);
    }
}

// --- §1 the engine ---------------------------------------------------------------

START_TEST(test_raw_words_match_numpy) {
    const Seed *s = &SEEDS[_i];
    manual_seed(s->seed);
    // 1300 words: the first twist, a second one, and some words beyond it.
    check_bits(next_words_split(1300), "raw", s->tag);
}
END_TEST

START_TEST(test_random64_first_word_is_high) {
    // int64 random_() is random64() mod 2^63; compare in four 16-bit pieces.
    const Seed *s = &SEEDS[_i];
    manual_seed(s->seed);
    Tensor *got = zeros(shape2(64, 4));
    got->dtype = DTYPE_INT64;
    for (int i = 0; i < 64; i++) {
        uint64_t value = random64() & (UINT64_MAX >> 1);
        for (int k = 0; k < 4; k++) {
            *at2(got, i, k) = (float)((value >> (16 * (3 - k))) & 0xFFFFu);
        }
    }
    check_bits(got, "random64", s->tag);
}
END_TEST

START_TEST(test_known_mt19937_values) {
    // Values every MT19937 must produce: the first output for seed 5489
    // (std::mt19937's default seed), and the 10000th, which the C++ standard
    // names as the check value of std::mt19937.
    manual_seed(5489);
    ck_assert_uint_eq(random32(), 3499211612u);
    for (int i = 2; i < 10000; i++) {
        random32();
    }
    ck_assert_uint_eq(random32(), 4123659995u);
}
END_TEST

START_TEST(test_only_low_32_bits_of_seed_count) {
    uint32_t with_high_bits[5];
    manual_seed((7ULL << 32) + 99);
    for (int i = 0; i < 5; i++) {
        with_high_bits[i] = random32();
    }
    manual_seed(99);
    for (int i = 0; i < 5; i++) {
        ck_assert_uint_eq(random32(), with_high_bits[i]);
    }
}
END_TEST

// --- §2 rand ------------------------------------------------------------------------

static Shape rand_shapes(int k) {
    const Shape shapes[] = {shape3(3, 2, 4), shape3(3, 4, 2), shape3(3, 2, 128),
                            shape3(3, 4, 128), shape3(3, 6, 128)};
    return shapes[k];
}
enum { N_RAND_SHAPES = 5 };

START_TEST(test_rand_lesson_shapes) {
    const Seed *s = &SEEDS[_i];
    for (int k = 0; k < N_RAND_SHAPES; k++) {
        Shape shape = rand_shapes(k);
        manual_seed(s->seed);
        check_bits(rand_tensor(shape), path_join("rand_%s", shape_name(shape)), s->tag);
    }
}
END_TEST

// --- §5 randn, both paths ------------------------------------------------------------

START_TEST(test_randn_sizes) {
    // < 16: serial Box-Muller; 16: one block; 17, 33, 100, 24: the tail rule.
    const Shape shapes[] = {shape1(1), shape1(5), shape1(15), shape1(16), shape1(17),
                            shape1(33), shape1(100), shape3(3, 2, 4)};
    const Seed *s = &SEEDS[_i];
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        manual_seed(s->seed);
        check_bits(randn(shapes[k]), path_join("randn_%s", shape_name(shapes[k])), s->tag);
    }
}
END_TEST

START_TEST(test_randn_lesson_sizes) {
    // Lesson 8's query (1, 256, 8, 64) and lesson 9's (4, 32, 512).
    manual_seed(0);
    check_bits(randn(shape4(1, 256, 8, 64)), "randn_1x256x8x64", "0");
    manual_seed(1234);
    check_bits(randn(shape3(4, 32, 512)), "randn_4x32x512", "1234");
}
END_TEST

START_TEST(test_normal_mean_std) {
    const double params[][2] = {{0.3, 2.5}, {-1.0, 0.02}, {0.0, 0.02}};
    const Shape shapes[] = {shape1(5), shape1(40), shape3(3, 4, 128)};
    for (int p = 0; p < 3; p++) {
        for (int k = 0; k < 3; k++) {
            manual_seed(0);
            Tensor *t = zeros(shapes[k]);
            normal_(t, params[p][0], params[p][1]);
            check_bits(t, path_join("normal_p%d_%s", p, shape_name(shapes[k])), "0");
        }
    }
}
END_TEST

// Concatenate two 1-d tensors (enough for the cache test).
static Tensor *cat1(const Tensor *a, const Tensor *b) {
    Tensor *t = zeros(shape1((int)(numel(a) + numel(b))));
    memcpy(t->data, a->data, sizeof(float) * (size_t)numel(a));
    memcpy(t->data + numel(a), b->data, sizeof(float) * (size_t)numel(b));
    return t;
}

START_TEST(test_randn_cache_rule) {
    const Seed *s = &SEEDS[_i];
    // randn(5) makes three Box-Muller pairs and caches the sixth value, so
    // randn(5) followed by randn(1) is randn(6) (§5a).
    manual_seed(s->seed);
    Tensor *five = randn(shape1(5));
    Tensor *one = randn(shape1(1));
    check_bits(cat1(five, one), "cache_randn6", s->tag);

    // The cache survives rand, randint and the numel >= 16 kernel.
    manual_seed(s->seed);
    check_bits(randn(shape1(5)), "cache_survives_a", s->tag);
    check_bits(rand_tensor(shape1(3)), "cache_survives_b", s->tag);
    check_bits(randint(0, 10, shape1(4)), "cache_survives_c", s->tag);
    check_bits(randn(shape1(20)), "cache_survives_d", s->tag);
    check_bits(randn(shape1(1)), "cache_survives_e", s->tag);

    // manual_seed clears it: after a reseed, randn(1) is a fresh randn(1).
    manual_seed(s->seed);
    randn(shape1(5));
    manual_seed(s->seed);
    check_bits(randn(shape1(1)), "randn_1", s->tag);
}
END_TEST

// --- §4 randint ----------------------------------------------------------------------

START_TEST(test_randint_masks) {
    // The attention masks of lessons 6 and 7.
    const Shape shapes[] = {shape4(3, 8, 2, 2), shape4(3, 8, 4, 6)};
    const Seed *s = &SEEDS[_i];
    for (int k = 0; k < 2; k++) {
        manual_seed(s->seed);
        Tensor *mask = randint(0, 2, shapes[k]);
        ck_assert_int_eq(mask->dtype, DTYPE_INT64);
        check_bits(mask, path_join("randint_0_2_%s", shape_name(shapes[k])), s->tag);
    }
}
END_TEST

// --- one seed, many kinds of draws -----------------------------------------------------

START_TEST(test_mixed_sequence) {
    const char *tags[] = {"0", "42"};
    const uint64_t seeds[] = {0, 42};
    const char *tag = tags[_i];
    manual_seed(seeds[_i]);
    check_bits(rand_tensor(shape3(3, 2, 4)), "seq_a_rand", tag);
    check_bits(randn(shape3(3, 2, 4)), "seq_b_randn", tag);
    check_bits(randint(0, 2, shape4(3, 8, 2, 2)), "seq_c_randint", tag);
    check_bits(randn(shape1(5)), "seq_d_randn", tag);
    check_bits(randint(-5, 7, shape1(50)), "seq_e_randint", tag);
    // A range of 2^33 takes two words per element (§4). Its values are too
    // big for a float to hold exactly, but both sides round them alike, and
    // the draws after it show how many words it consumed.
    check_bits(randint(0, 1L << 33, shape1(10)), "seq_f_randint", tag);
    check_bits(randn(shape1(1)), "seq_g_randn", tag);   // the cached value
    check_bits(rand_tensor(shape1(4)), "seq_h_rand", tag);
}
END_TEST

// --- §3 uniform_ and nn.Linear ----------------------------------------------------------

START_TEST(test_uniform_ranges) {
    const double ranges[][2] = {{-1.0, 1.0}, {0.0, 1.0}, {-0.5, 0.5},
                                {2.0, 5.0}, {-3.7, 11.2}, {-0.02, 0.02}};
    const Shape shapes[] = {shape1(7), shape2(8, 33)};
    const char *tag = SEEDS[_i].tag;   // seeds 0 and 1
    for (int r = 0; r < 6; r++) {
        for (int k = 0; k < 2; k++) {
            manual_seed(SEEDS[_i].seed);
            Tensor *t = zeros(shapes[k]);
            uniform_(t, ranges[r][0], ranges[r][1]);
            check_bits(t, path_join("uniform_r%d_%s", r, shape_name(shapes[k])), tag);
        }
    }
}
END_TEST

START_TEST(test_linear_init_draws) {
    // Lesson 2: X = torch.rand(3, 2, 4), then three nn.Linear(4, 4).
    manual_seed(0);
    check_bits(rand_tensor(shape3(3, 2, 4)), "linear_seq_x", "0");
    for (int k = 0; k < 3; k++) {
        check_linear_draws(path_join("linear_seq_%d_4x4", k), "0", 4, 4, true);
    }
    manual_seed(0);
    check_linear_draws("linear_128x128", "0", 128, 128, true);
    manual_seed(1);
    check_linear_draws("linear_512x128", "1", 512, 128, true);
    // bias=False draws only the weight: the rand after it shows that.
    manual_seed(42);
    check_linear_draws("linear_nobias_128x64", "42", 128, 64, false);
    check_bits(rand_tensor(shape1(4)), "linear_nobias_after", "42");
}
END_TEST

// The same references through nn.h's linear_init, which lessons call.
static void check_linear_layer(const Linear *layer, const char *prefix, const char *tag) {
    check_bits(layer->weight, path_join("%s_weight", prefix), tag);
    if (layer->bias != NULL) {
        check_bits(layer->bias, path_join("%s_bias", prefix), tag);
    }
}

START_TEST(test_linear_init_matches_torch) {
    manual_seed(0);
    check_bits(rand_tensor(shape3(3, 2, 4)), "linear_seq_x", "0");
    const char *names[] = {"query_proj", "key_proj", "value_proj"};
    for (int k = 0; k < 3; k++) {
        Linear layer = linear_init(names[k], 4, 4, true);
        check_linear_layer(&layer, path_join("linear_seq_%d_4x4", k), "0");
    }
    manual_seed(0);
    Linear square = linear_init("proj", 128, 128, true);
    check_linear_layer(&square, "linear_128x128", "0");
    manual_seed(1);
    Linear wide = linear_init("proj", 512, 128, true);
    check_linear_layer(&wide, "linear_512x128", "1");
    manual_seed(42);
    Linear no_bias = linear_init("proj", 128, 64, false);
    ck_assert_ptr_null(no_bias.bias);
    check_linear_layer(&no_bias, "linear_nobias_128x64", "42");
    check_bits(rand_tensor(shape1(4)), "linear_nobias_after", "42");
}
END_TEST

START_TEST(test_linear_bounds_as_floats) {
    // wb and bb differ in the last bit as doubles (wb(4) = 0.49999999999999994)
    // but agree once rounded to float, which is all uniform_ uses (§3).
    ck_assert(linear_weight_bound(4) < 0.5);
    for (int in = 1; in <= 1024; in++) {
        ck_assert_float_eq((float)linear_weight_bound(in), (float)linear_bias_bound(in));
    }
}
END_TEST

// --- §6 dropout's Bernoulli draws ---------------------------------------------------------

START_TEST(test_dropout_masks) {
    const double ps[] = {0.1, 0.25, 0.5};
    for (int k = 0; k < 3; k++) {
        manual_seed(0);
        Tensor *keep = zeros(shape1(2000));
        keep->dtype = DTYPE_BOOL;
        for (int i = 0; i < 2000; i++) {
            *at1(keep, i) = bernoulli_draw(1.0 - ps[k]) ? 1.0f : 0.0f;
        }
        check_bits(keep, path_join("dropout_p%d_mask", k), "0");
        check_bits(rand_tensor(shape1(4)), path_join("dropout_p%d_after", k), "0");
    }
}
END_TEST

// --- how many words each operation consumes ------------------------------------------------

// After manual_seed(0), run `draw`, then the next word must be word number
// `expected_words` of the stream (counting from 0).
typedef void (*Draw)(void);
static void draw_rand7(void) { rand_tensor(shape1(7)); }
static void draw_randn5(void) { randn(shape1(5)); }
static void draw_randn16(void) { randn(shape1(16)); }
static void draw_randn17(void) { randn(shape1(17)); }
static void draw_randint_big(void) { randint(0, 1L << 32, shape1(3)); }
static void draw_bernoulli(void) { bernoulli_draw(0.5); }

static void check_words_consumed(Draw draw, int expected_words, const char *what) {
    manual_seed(0);
    uint32_t stream[64];
    for (int i = 0; i < 64; i++) {
        stream[i] = random32();
    }
    manual_seed(0);
    draw();
    ck_assert_msg(random32() == stream[expected_words], "%s should consume %d words",
                  what, expected_words);
}

START_TEST(test_words_consumed) {
    check_words_consumed(draw_rand7, 7, "rand(7)");
    check_words_consumed(draw_randn5, 12, "randn(5): 3 pairs x 2 doubles x 2 words");
    check_words_consumed(draw_randn16, 16, "randn(16)");
    check_words_consumed(draw_randn17, 33, "randn(17): 17 + 16 fresh for the tail");
    check_words_consumed(draw_randint_big, 6, "randint(0, 2^32, (3,))");
    check_words_consumed(draw_bernoulli, 2, "bernoulli_draw");
}
END_TEST

// --- errors -------------------------------------------------------------------------------

// A view is const (tensor.h), so only a visible cast can hand one to a
// fill; the fill still refuses it rather than fill the wrong elements.
static void normal_on_transposed(void *arg) {
    (void)arg;
    normal_((Tensor *)transpose(zeros(shape2(4, 5)), 0, 1), 0.0, 1.0);
}
static void uniform_on_transposed(void *arg) {
    (void)arg;
    uniform_((Tensor *)transpose(zeros(shape2(4, 5)), 0, 1), 0.0, 1.0);
}
static void randint_empty_range(void *arg) {
    (void)arg;
    randint(3, 3, shape1(2));
}
static void uniform_reversed(void *arg) {
    (void)arg;
    uniform_(zeros(shape1(2)), 1.0, -1.0);
}

static void check_failure(Action action, const char *expected_part) {
    const char *message = failure_of(action, NULL);
    ck_assert_msg(message != NULL, "expected a failure mentioning \"%s\"", expected_part);
    ck_assert_msg(strstr(message, expected_part) != NULL, "message \"%s\" lacks \"%s\"",
                  message, expected_part);
}

START_TEST(test_errors) {
    check_failure(normal_on_transposed, "normal_: expected a contiguous tensor");
    check_failure(uniform_on_transposed, "uniform_: expected a contiguous tensor");
    check_failure(randint_empty_range, "from=3 >= to=3");
    check_failure(uniform_reversed, "from=1 > to=-1");
}
END_TEST

// --- the suite -------------------------------------------------------------------------------

static Suite *rng_suite(void) {
    Suite *suite = suite_create("rng");

    TCase *engine = new_tcase("engine");
    tcase_add_loop_test(engine, test_raw_words_match_numpy, 0, N_SEEDS);
    tcase_add_loop_test(engine, test_random64_first_word_is_high, 0, N_SEEDS);
    tcase_add_test(engine, test_known_mt19937_values);
    tcase_add_test(engine, test_only_low_32_bits_of_seed_count);
    tcase_add_test(engine, test_words_consumed);
    suite_add_tcase(suite, engine);

    TCase *uniform = new_tcase("uniform");
    tcase_add_loop_test(uniform, test_rand_lesson_shapes, 0, N_SEEDS);
    tcase_add_loop_test(uniform, test_uniform_ranges, 0, 2);
    tcase_add_test(uniform, test_linear_init_draws);
    tcase_add_test(uniform, test_linear_init_matches_torch);
    tcase_add_test(uniform, test_linear_bounds_as_floats);
    suite_add_tcase(suite, uniform);

    TCase *normal = new_tcase("normal");
    tcase_add_loop_test(normal, test_randn_sizes, 0, N_SEEDS);
    tcase_add_loop_test(normal, test_randn_cache_rule, 0, N_SEEDS);
    tcase_add_test(normal, test_randn_lesson_sizes);
    tcase_add_test(normal, test_normal_mean_std);
    suite_add_tcase(suite, normal);

    TCase *other = new_tcase("randint, dropout, sequences, errors");
    tcase_add_loop_test(other, test_randint_masks, 0, N_SEEDS);
    tcase_add_loop_test(other, test_mixed_sequence, 0, 2);
    tcase_add_test(other, test_dropout_masks);
    tcase_add_test(other, test_errors);
    suite_add_tcase(suite, other);

    return suite;
}

int main(void) { return run_suite(rng_suite()); }
