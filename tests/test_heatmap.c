// test_heatmap.c - --heatmap's drawing: one scale with a legend, on which
// 0.01, 0.1 and 0.5 read apart; blanks for zeros, '?' for NaN, UTF-8 shades
// or ASCII by the locale, one grid per leading index, and the caps on big
// tensors that keep every line within 100 columns.
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

// The number of characters (UTF-8 code points) of the line at `line`.
static int columns(const char *line) {
    int width = 0;
    for (const char *c = line; *c != '\0' && *c != '\n'; c++) {
        width += ((unsigned char)*c & 0xC0) != 0x80;   // not a continuation byte
    }
    return width;
}

// Every line of `text` fits 100 columns.
static void assert_fits_100_columns(const char *text) {
    for (const char *line = text; *line != '\0'; line += strcspn(line, "\n") + 1) {
        ck_assert_msg(columns(line) <= 100, "a line of %d columns: %.120s", columns(line), line);
        if (line[strcspn(line, "\n")] == '\0') {
            break;
        }
    }
}

// A causal pattern: row 0 sees only key 0, row 1 splits 0.5/0.5, row 2
// weighs 0.2/0.2/0.6. One scale for every row, the legend's.
START_TEST(test_ascii_shades) {
    float w[9] = {1.0f, 0.0f, 0.0f, 0.5f, 0.5f, 0.0f, 0.2f, 0.2f, 0.6f};
    const char *text = draw("C", "w", tensor_from(shape2(3, 3), w));
    ck_assert_str_eq(line_starting(text, "w: "), "w: heatmap (rows: query t, columns: key s)");
    ck_assert_str_eq(line_starting(text, "  shades"), "  shades: blank 0, . below 0.01, : 0.01 to "
                     "0.05, + 0.05 to 0.2, # 0.2 to 0.5, @ 0.5 and up, ? nan");
    ck_assert_ptr_nonnull(strstr(text, "\nw[:, :]\n"));
    // Each cell is two characters: "@@" for 0.5 and up, "##" for 0.2, "  " for 0.
    ck_assert_str_eq(line_starting(text, "    0 "), "    0 @@    ");
    ck_assert_str_eq(line_starting(text, "    1 "), "    1 @@@@  ");
    ck_assert_str_eq(line_starting(text, "    2 "), "    2 ####@@");
}
END_TEST

// Issue 17: with four shades relative to each row's largest weight, lesson
// 1's 6e-06 and 0.135 looked the same. On the legend's scale a weight of
// 0.01 reads apart from 0.1 and from 0.5, a tiny one from a masked one (0),
// and each threshold starts its shade.
START_TEST(test_weights_read_apart) {
    float w[10] = {6e-06f, 0.135f, 0.01f, 0.1f, 0.5f, 0.0f, 0.0099f, 0.05f, 0.2f, 1.25f};
    const char *text = draw("C", "w", tensor_from(shape2(1, 10), w));
    ck_assert_str_eq(line_starting(text, "    0 "), "    0 ..++::++@@  ..++##@@");
    text = draw("en_US.UTF-8", "w", tensor_from(shape2(1, 10), w));
    ck_assert_str_eq(line_starting(text, "    0 "), "    0 \u00b7\u00b7\u2592\u2592\u2591\u2591"
                     "\u2592\u2592\u2588\u2588  \u00b7\u00b7\u2592\u2592\u2593\u2593\u2588\u2588");
    // Lesson 1's weights, the issue's example: input-2's row.
    float lesson1[3] = {6.0337e-06f, 9.8201e-01f, 1.7986e-02f};
    text = draw("C", "weights", tensor_from(shape2(1, 3), lesson1));
    ck_assert_str_eq(line_starting(text, "    0 "), "    0 ..@@::");
}
END_TEST

START_TEST(test_utf8_shades_and_nan) {
    float w[3] = {1.0f, NAN, 0.001f};
    const char *text = draw("en_US.UTF-8", "w", tensor_from(shape2(1, 3), w));
    // 1 -> full block; NaN -> '?'; 0.001 -> the lightest shade, never blank.
    ck_assert_str_eq(line_starting(text, "    0 "), "    0 \u2588\u2588??\u00b7\u00b7");
    ck_assert_ptr_nonnull(strstr(text, "  shades: blank 0, \u00b7 below 0.01, \u2591 0.01 to 0.05, "
                                       "\u2592 0.05 to 0.2, \u2593 0.2 to 0.5, \u2588 0.5 and up, "
                                       "? nan\n"));
    assert_fits_100_columns(text);
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
    ck_assert_ptr_nonnull(strstr(text, "attention_weight[0, 0, :, :]\n"));
    ck_assert_ptr_nonnull(strstr(text, "attention_weight[1, 2, :, :]\n"));
}
END_TEST

// Long sequences are cropped to 46 x 46 cells, saying so, and every line
// fits 100 columns, in either palette.
START_TEST(test_big_tensors_are_capped) {
    Tensor *w = full(shape3(10, 64, 64), 0.25f);
    const char *text = draw("C", "w", w);
    ck_assert_ptr_nonnull(strstr(text, "w[0, :, :]\n  (the first 46 x 46 of 64 x 64)\n"));
    // 46 cells of two characters after the 6 of the row number: 98 columns.
    ck_assert_int_eq(columns(line_starting(text, "   45 ")), 98);
    ck_assert_ptr_null(strstr(text, "\n   46 "));
    ck_assert_ptr_nonnull(strstr(text, "(2 more grids not drawn)"));
    ck_assert_ptr_null(strstr(text, "w[8, :, :]"));
    assert_fits_100_columns(text);
    assert_fits_100_columns(draw("en_US.UTF-8", "attention_probs (last batch row)",
                                 full(shape4(1, 2, 300, 7), 1.0f / 7.0f)));
}
END_TEST

Suite *heatmap_suite(void) {
    Suite *suite = suite_create("heatmap");
    TCase *tc = new_tcase("heatmap");
    tcase_add_test(tc, test_ascii_shades);
    tcase_add_test(tc, test_weights_read_apart);
    tcase_add_test(tc, test_utf8_shades_and_nan);
    tcase_add_test(tc, test_two_line_column_numbers);
    tcase_add_test(tc, test_one_grid_per_head);
    tcase_add_test(tc, test_big_tensors_are_capped);
    suite_add_tcase(suite, tc);
    return suite;
}

int main(void) { return run_suite(heatmap_suite()); }
