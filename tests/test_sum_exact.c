// test_sum_exact.c - sum_exact against PyTorch's torch.sum, bit for bit.
//
// tests/reference/gen_sum_exact.py recorded x.sum() (PyTorch 1.13) for rows
// of 0 to 10000 floats chosen to reach every path of its kernel (fewer than 8
// numbers, whole vectors, a tail, one and two levels of the cascade).
// common/exact/sum_exact.c adds in PyTorch's order, so every sum must match to the
// bit; the last test shows that adding left to right would not, so the
// comparison is a real one.
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

#define SUM_DATA DATA_DIR "/sum_exact"

enum { MAX_ROWS = 64 };

typedef struct {
    const Tensor *rows;   // every row, one after the other
    const Tensor *sums;   // (count,)
    long length[MAX_ROWS];
    int count;
} Recorded;

static Recorded recorded(void) {
    Recorded r;
    r.rows = load_npy(SUM_DATA "/rows.npy");
    r.sums = load_npy(SUM_DATA "/sums.npy");
    r.count = 0;
    const char *cursor = read_text(SUM_DATA "/lengths.txt");
    for (const char *line = next_line(&cursor); line != NULL; line = next_line(&cursor)) {
        ck_assert_int_lt(r.count, MAX_ROWS);
        r.length[r.count++] = atol(line);
    }
    ck_assert_int_eq(r.count, size(r.sums, 0));
    return r;
}

START_TEST(test_sum_matches_pytorch_bit_for_bit) {
    Recorded r = recorded();
    long start = 0;
    for (int i = 0; i < r.count; i++) {
        float got = sum_exact(&r.rows->data[start], r.length[i]);
        float want = r.sums->data[i];
        ck_assert_msg(memcmp(&got, &want, sizeof got) == 0, "row of %ld: %.9g, PyTorch %.9g",
                      r.length[i], (double)got, (double)want);
        start += r.length[i];
    }
    ck_assert_int_eq(start, numel(r.rows));
}
END_TEST

// Left to right, the textbook sum: right to within the roundings, and yet
// another float than PyTorch's for many of the longer rows.
START_TEST(test_left_to_right_differs) {
    Recorded r = recorded();
    long start = 0;
    int differ = 0;
    for (int i = 0; i < r.count; i++) {
        float sum = 0.0f;
        for (long j = 0; j < r.length[i]; j++) {
            sum += r.rows->data[start + j];
        }
        differ += sum != r.sums->data[i];
        start += r.length[i];
    }
    ck_assert_msg(differ >= 10, "only %d of %d rows differ", differ, r.count);
}
END_TEST

// Hand-worked: 6 numbers go into four running sums, s0 = 1 + 16 + 32,
// s1 = 2, s2 = 4, s3 = 8: ((49 + 2) + 4) + 8 = 63; an empty row is 0.
START_TEST(test_small_rows_by_hand) {
    const float x[6] = {1, 2, 4, 8, 16, 32};
    ck_assert(sum_exact(x, 6) == 63.0f);
    ck_assert(sum_exact(x, 0) == 0.0f);
    // Where the order shows: {1, 2^24, 0, 0, 1}. Left to right 1 + 2^24 rounds to 2^24 (a
    // tie, to even) and the last 1 is lost again: 2^24. Here s0 = 1 + 1 = 2 and s1 = 2^24:
    // 2 + 2^24 is a float, exactly.
    const float order[5] = {1.0f, 16777216.0f, 0.0f, 0.0f, 1.0f};
    ck_assert(sum_exact(order, 5) == 16777218.0f);
}
END_TEST

static Suite *sum_exact_suite(void) {
    Suite *suite = suite_create("sum_exact");
    TCase *tc = new_tcase("sum_exact");
    tcase_add_test(tc, test_sum_matches_pytorch_bit_for_bit);
    tcase_add_test(tc, test_left_to_right_differs);
    tcase_add_test(tc, test_small_rows_by_hand);
    suite_add_tcase(suite, tc);
    return suite;
}

int main(void) { return run_suite(sum_exact_suite()); }
