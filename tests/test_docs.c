// test_docs.c - the docs cannot drift from the code: every lesson has its
// page, the page embeds the lesson's diagram, the committed diagram source
// (docs/diagrams/NN-name.dot) is exactly what the lesson's --dot writes
// now, and the README's table links the lesson and its page.
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LESSONS 32

static int compare_names(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

// The lesson directories ("01-toy-qkv", ...) in order; returns how many.
static int lesson_dirs(const char **names) {
    DIR *dir = opendir("lessons");
    ck_assert_msg(dir != NULL, "no lessons/ directory (run the tests from the project root)");
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL && count < MAX_LESSONS) {
        const char *n = entry->d_name;
        if (n[0] >= '0' && n[0] <= '9' && n[1] >= '0' && n[1] <= '9' && n[2] == '-') {
            char *copy = arena_alloc(strlen(n) + 1, 1);
            memcpy(copy, n, strlen(n) + 1);
            names[count] = copy;
            count += 1;
        }
    }
    closedir(dir);
    qsort(names, (size_t)count, sizeof *names, compare_names);
    return count;
}

START_TEST(test_lessons_are_numbered_in_order) {
    const char *names[MAX_LESSONS];
    int count = lesson_dirs(names);
    ck_assert_int_ge(count, 1);
    for (int i = 0; i < count; i++) {
        ck_assert_msg(atoi(names[i]) == i + 1, "lesson %d is %s: numbers must run 1, 2, 3...",
                      i + 1, names[i]);
    }
}
END_TEST

START_TEST(test_every_lesson_has_its_page_and_diagram) {
    const char *names[MAX_LESSONS];
    int count = lesson_dirs(names);
    for (int i = 0; i < count; i++) {
        const char *page_path = path_join("docs/%s.md", names[i]);
        ck_assert_msg(access(page_path, R_OK) == 0, "%s has no page %s", names[i], page_path);
        const char *page = read_text(page_path);
        const char *embed = path_join("](diagrams/%s.svg)", names[i]);
        ck_assert_msg(strstr(page, embed) != NULL, "%s does not embed diagrams/%s.svg",
                      page_path, names[i]);
        const char *svg = path_join("docs/diagrams/%s.svg", names[i]);
        ck_assert_msg(access(svg, R_OK) == 0, "%s is missing (make docs draws it)", svg);
    }
}
END_TEST

// The committed .dot equals what the lesson draws now (make docs redraws it).
START_TEST(test_committed_diagrams_match_the_code) {
    const char *names[MAX_LESSONS];
    int count = lesson_dirs(names);
    const char *dir = make_temp_dir();
    for (int i = 0; i < count; i++) {
        const char *fresh = path_join("%s/%s.dot", dir, names[i]);
        const char *args[] = {"--dot", fresh, NULL};
        RunResult run = run_program(lesson_binary(names[i]), args);
        ck_assert_msg(run.status == 0, "%s --dot exited %d: %s", names[i], run.status, run.err);
        const char *committed = path_join("docs/diagrams/%s.dot", names[i]);
        ck_assert_msg(access(committed, R_OK) == 0, "%s is missing (make docs writes it)",
                      committed);
        ck_assert_msg(strcmp(read_text(fresh), read_text(committed)) == 0,
                      "%s differs from what lesson %s draws now: run make docs and commit",
                      committed, names[i]);
    }
    remove_dir(dir);
}
END_TEST

START_TEST(test_readme_links_every_lesson) {
    const char *names[MAX_LESSONS];
    int count = lesson_dirs(names);
    const char *readme = read_text("README.md");
    for (int i = 0; i < count; i++) {
        ck_assert_msg(strstr(readme, path_join("](lessons/%s/)", names[i])) != NULL,
                      "README.md does not link lessons/%s/", names[i]);
        ck_assert_msg(strstr(readme, path_join("](docs/%s.md)", names[i])) != NULL,
                      "README.md does not link docs/%s.md", names[i]);
    }
}
END_TEST

Suite *docs_suite(void) {
    Suite *suite = suite_create("docs");
    TCase *tc = new_tcase("docs");
    tcase_add_test(tc, test_lessons_are_numbered_in_order);
    tcase_add_test(tc, test_every_lesson_has_its_page_and_diagram);
    tcase_add_test(tc, test_committed_diagrams_match_the_code);
    tcase_add_test(tc, test_readme_links_every_lesson);
    suite_add_tcase(suite, tc);
    return suite;
}

int main(void) { return run_suite(docs_suite()); }
