// test_heatmap.c - --heatmap's drawing: blanks for zeros, the darkest shade
// for 1, '?' for NaN, UTF-8 shades or ASCII by the locale, one grid per
// leading index, and the caps on big tensors.
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// Everything print_heatmap writes to stdout, as an arena string, drawn
// with LANG set to `lang` (LC_ALL and LC_CTYPE cleared).
static const char *draw(const char *lang, const char *title, const Tensor *weights) {
    unsetenv("LC_ALL");
    unsetenv("LC_CTYPE");
    setenv("LANG", lang, 1);
    char path[] = "/tmp/attn-heatmap-XXXXXX";
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    fflush(stdout);
    int saved = dup(1);
    dup2(fd, 1);
    print_heatmap(title, weights);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    close(fd);
    const char *text = read_text(path);
    unlink(path);
    return text;
}

// The line of `text` that starts with `prefix` (arena string), or fail.
static const char *line_starting(const char *text, const char *prefix) {
    const char *line = text;
    while (line != NULL && *line != '\0') {
        if (strncmp(line, prefix, strlen(prefix)) == 0) {
            const char *end = strchr(line, '\n');
            size_t length = end != NULL ? (size_t)(end - line) : strlen(line);
            char *copy = arena_alloc(length + 1, 1);
            memcpy(copy, line, length);
            return copy;
        }
        line = strchr(line, '\n');
        line = line != NULL ? line + 1 : NULL;
    }
    ck_abort_msg("no line starting with '%s' in:\n%s", prefix, text);
}

// A causal pattern: row 0 sees only key 0, row 1 splits 0.5/0.5, row 2
// weighs 0.2/0.2/0.6. Each row is shaded relative to its own largest weight.
START_TEST(test_ascii_shades) {
    float w[9] = {1.0f, 0.0f, 0.0f, 0.5f, 0.5f, 0.0f, 0.2f, 0.2f, 0.6f};
    const char *text = draw("C", "w", tensor_from(shape2(3, 3), w));
    ck_assert_ptr_nonnull(strstr(text, "w: heatmap"));
    ck_assert_ptr_nonnull(strstr(text, "w[:, :]"));
    // Each cell is two characters: "@@" for the row's largest, "  " for 0;
    // 0.2 of a row whose largest is 0.6 rounds up to level ceil(0.2/0.6 * 9)
    // = 3 of " .:-=+*#%@", which is '-'.
    ck_assert_str_eq(line_starting(text, "    0 "), "    0 @@    ");
    ck_assert_str_eq(line_starting(text, "    1 "), "    1 @@@@  ");
    ck_assert_str_eq(line_starting(text, "    2 "), "    2 ----@@");
}
END_TEST

START_TEST(test_utf8_shades_and_nan) {
    float w[3] = {1.0f, NAN, 0.01f};
    const char *text = draw("en_US.UTF-8", "w", tensor_from(shape2(1, 3), w));
    // 1 -> full block; NaN -> '?'; 0.01 -> the lightest shade, never blank.
    ck_assert_str_eq(line_starting(text, "    0 "), "    0 \u2588\u2588??\u2591\u2591");
}
END_TEST

// Column numbers above 9 are written as tens over units.
START_TEST(test_two_line_column_numbers) {
    Tensor *w = full(shape2(1, 12), 1.0f / 12.0f);
    const char *text = draw("C", "w", w);
    ck_assert_ptr_nonnull(strstr(text, "\n                           1 1\n"
                                       "       0 1 2 3 4 5 6 7 8 9 0 1\n"));
}
END_TEST

START_TEST(test_one_grid_per_head) {
    Tensor *w = full(shape4(2, 3, 2, 2), 0.5f);   // (batch, heads, T, S)
    const char *text = draw("C", "attention_weight", w);
    ck_assert_ptr_nonnull(strstr(text, "attention_weight[0, 0, :, :]"));
    ck_assert_ptr_nonnull(strstr(text, "attention_weight[1, 2, :, :]"));
}
END_TEST

START_TEST(test_big_tensors_are_capped) {
    Tensor *w = full(shape3(10, 64, 64), 0.25f);
    const char *text = draw("C", "w", w);
    ck_assert_ptr_nonnull(strstr(text, "w[0, :, :]  rows: query t, columns: key s\n"
                                       "  (first 32 x 32 of 64 x 64)\n"));
    // 32 cells of two characters after the 6 of the row number: 70 columns.
    ck_assert_str_eq(line_starting(text, "   31 "), "   31 @@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
                                                  "@@@@@@@@@@@@@@@@@@@@@@@@");
    ck_assert_ptr_null(strstr(text, "\n   32 "));
    ck_assert_ptr_nonnull(strstr(text, "(2 more grids not drawn)"));
    ck_assert_ptr_null(strstr(text, "w[8, :, :]"));
}
END_TEST

Suite *heatmap_suite(void) {
    Suite *suite = suite_create("heatmap");
    TCase *tc = new_tcase("heatmap");
    tcase_add_test(tc, test_ascii_shades);
    tcase_add_test(tc, test_utf8_shades_and_nan);
    tcase_add_test(tc, test_two_line_column_numbers);
    tcase_add_test(tc, test_one_grid_per_head);
    tcase_add_test(tc, test_big_tensors_are_capped);
    suite_add_tcase(suite, tc);
    return suite;
}

int main(void) { return run_suite(heatmap_suite()); }
