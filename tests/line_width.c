// line_width.c - every line a lesson prints fits 100 columns: a tcase of
// test_docs (line_width.h), which runs the same documented runs to check
// what the pages quote; each run is made once for both (run_program_once).
//
// The runs checked: the default run of every lesson in lessons/ (a new one
// is covered the day it lands; made with --dot, as test_docs makes it to
// compare the drawing, so that it runs once for both), every run the pages and the README
// document, `make lesson-N ARGS="..."` (a learner copies those). A run's lines, stdout
// and stderr, must each be at most 100 columns wide, a column being a character, two for
// a wide one (the CJK characters some headings quote from the notes). Runs whose ARGS
// hold a placeholder (an all-capital word: N, S, DIR) are not commands; a documented
// --bench run times for a minute, so a lesson's own test checks a short run of its bench
// instead (assert_lines_fit); --dump and --dot and lesson 16's --save and --svg are
// dropped, as they change files, not what is printed. A run its lesson's budget estimates
// over CHEAP_SECONDS is made by make test-long only (harness.h: made_in_this_test).
//
// One kind of line is exempt: a bench's machine-readable lines, starting
// "bench " (lesson 13's `bench seq=2048 causal=0 naive_ms=... tiled_extra_mib=0.3`).
// Their format is fixed, one line per case with every field named, so that
// scripts (the peers' comparisons, the pages' tables) read them (issues 19,
// 20 and 22); wrapping one would break every reader. Every other line a
// bench prints, its table and its remarks, fits like any other.
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "line_width.h"

#include <ctype.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_COLUMNS 100
#define MAX_LESSONS 32
#define MAX_RUNS 256
#define MAX_WORDS 16

// The columns a line takes on a terminal: one per character (UTF-8
// continuation bytes are not characters), two for the wide ones of East
// Asian scripts (the ranges of Unicode's East_Asian_Width W and F that
// these lessons can print: CJK ideographs and punctuation, fullwidth forms).
static int columns(const char *line, size_t length) {
    int width = 0;
    for (size_t i = 0; i < length;) {
        unsigned char c = (unsigned char)line[i];
        int bytes = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        unsigned code = c < 0x80 ? c : c & (0xFF >> (bytes + 1));
        for (int k = 1; k < bytes && i + (size_t)k < length; k++) {
            code = (code << 6) | ((unsigned char)line[i + (size_t)k] & 0x3F);
        }
        bool wide = (code >= 0x1100 && code <= 0x115F) || (code >= 0x2E80 && code <= 0xA4CF) ||
                    (code >= 0xAC00 && code <= 0xD7A3) || (code >= 0xF900 && code <= 0xFAFF) ||
                    (code >= 0xFE30 && code <= 0xFE4F) || (code >= 0xFF00 && code <= 0xFF60) ||
                    (code >= 0xFFE0 && code <= 0xFFE6);
        width += wide ? 2 : 1;
        i += (size_t)bytes;
    }
    return width;
}

START_TEST(test_columns_counts_characters) {
    ck_assert_int_eq(columns("tensor([1.])", 12), 12);
    ck_assert_int_eq(columns("\xe2\x96\x88\xe2\x96\x93 x", 8), 4);      // two shade blocks: 1 each
    ck_assert_int_eq(columns("\xe4\xbb\x8b\xe7\xbb\x8d notes", 12), 10); // 介绍 is 4 columns
}
END_TEST

// One run: a lesson and its flags.
typedef struct {
    int lesson;                    // its number
    const char *args[MAX_WORDS];   // NULL-terminated
    const char *where;             // "the default run", "docs/06-multi-head.md"
} Run;

typedef struct {
    Run run[MAX_RUNS];
    int count;
} Runs;

static bool same_run(const Run *a, const Run *b) {
    if (a->lesson != b->lesson) {
        return false;
    }
    int i = 0;
    for (; a->args[i] != NULL && b->args[i] != NULL; i++) {
        if (strcmp(a->args[i], b->args[i]) != 0) {
            return false;
        }
    }
    return a->args[i] == NULL && b->args[i] == NULL;
}

static void add_run(Runs *runs, const Run *run) {
    for (int i = 0; i < runs->count; i++) {
        if (same_run(&runs->run[i], run)) {
            return;
        }
    }
    ck_assert_msg(runs->count < MAX_RUNS, "more than %d documented runs", MAX_RUNS);
    runs->run[runs->count++] = *run;
}

static bool is_placeholder(const char *word) {
    if (word[0] == '\0') {
        return false;
    }
    for (const char *c = word; *c != '\0'; c++) {
        if (!isupper((unsigned char)*c)) {
            return false;
        }
    }
    return true;
}

// The flags that write files (--dump, --dot, lesson 16's --save and --svg),
// with their value after a space or '=': dropped from a documented run, as
// they change files, not what is printed (and a test writes nothing into the
// working tree).
static bool writes_files(const char *word) {
    static const char *const FLAGS[] = {"--dump", "--dot", "--save", "--svg"};
    for (size_t i = 0; i < sizeof FLAGS / sizeof FLAGS[0]; i++) {
        size_t n = strlen(FLAGS[i]);
        if (strncmp(word, FLAGS[i], n) == 0 && (word[n] == '\0' || word[n] == '=')) {
            return true;
        }
    }
    return false;
}

// The words of an ARGS value (spaces and newlines between them), as a run
// of lesson `lesson`; false when the value is not a command to run here.
static bool parse_args(Run *run, int lesson, const char *value, size_t length,
                       const char *where) {
    char *text = (char *)path_join("%.*s", (int)length, value);
    *run = (Run){.lesson = lesson, .where = where};
    int n = 0;
    bool skip_next = false;
    for (char *word = strtok(text, " \n\t"); word != NULL; word = strtok(NULL, " \n\t")) {
        if (is_placeholder(word) || strcmp(word, "--bench") == 0) {
            return false;
        }
        if (skip_next) {
            skip_next = false;
            continue;
        }
        if (writes_files(word)) {
            skip_next = strchr(word, '=') == NULL;   // --dump DIR, not --dump=DIR
            continue;
        }
        ck_assert_msg(n + 1 < MAX_WORDS, "%s: ARGS with more than %d words", where, MAX_WORDS);
        run->args[n++] = word;
    }
    run->args[n] = NULL;
    return true;
}

// Every `make lesson-N ARGS=...` of a file: ARGS="..." (a quoted value may
// run onto the next line, as a wrapped paragraph breaks it) or ARGS=word.
static void add_documented_runs(Runs *runs, const char *path, int n_lessons) {
    const char *text = read_text(path);
    for (const char *at = strstr(text, "make lesson-"); at != NULL;
         at = strstr(at + 1, "make lesson-")) {
        char *end;
        long lesson = strtol(at + strlen("make lesson-"), &end, 10);
        if (end == at + strlen("make lesson-") || strncmp(end, " ARGS=", 6) != 0 ||
            lesson < 1 || lesson > n_lessons) {
            continue;
        }
        const char *value = end + 6;
        size_t length;
        if (*value == '"') {
            value += 1;
            const char *close = strchr(value, '"');
            ck_assert_msg(close != NULL, "%s: an ARGS=\" that is never closed", path);
            length = (size_t)(close - value);
        } else {
            length = strcspn(value, " \n\t`\")");
        }
        Run run;
        if (parse_args(&run, (int)lesson, value, length, path)) {
            add_run(runs, &run);
        }
    }
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

// The default run of every lesson (lessons 1 .. n_lessons) and the runs the README and
// docs/*.md document.
static void collect_runs(Runs *runs, int n_lessons) {
    runs->count = 0;
    for (int n = 1; n <= n_lessons; n++) {
        add_run(runs, &(Run){.lesson = n, .args = {NULL}, .where = "the default run"});
    }
    add_documented_runs(runs, "README.md", n_lessons);
    DIR *docs = opendir("docs");
    ck_assert_msg(docs != NULL, "cannot list docs/");
    struct dirent *entry;
    while ((entry = readdir(docs)) != NULL) {
        if (ends_with(entry->d_name, ".md")) {
            add_documented_runs(runs, path_join("docs/%s", entry->d_name), n_lessons);
        }
    }
    closedir(docs);
}

// Problems found, reported all at once.
typedef struct {
    char text[3500];   // check passes a failure message of at most 4 KiB
    size_t used;
    int count;
} Problems;

// Each line of `out` too wide (but a bench's machine-readable lines) noted in *p as one of
// `what`'s.
static void check_lines(Problems *p, const char *what, const char *out) {
    for (const char *line = out; *line != '\0';) {
        size_t length = strcspn(line, "\n");
        int width = columns(line, length);
        bool bench_line = strncmp(line, "bench ", 6) == 0;   // exempt: see the top
        if (width > MAX_COLUMNS && !bench_line) {
            p->count += 1;
            if (p->used + 400 < sizeof p->text) {
                p->used += (size_t)snprintf(p->text + p->used, sizeof p->text - p->used,
                                            "%s: %d columns: %.100s\n", what, width, line);
            }
        }
        line += length + (line[length] == '\n');
    }
}

static void check_run_lines(Problems *p, const Run *run, const char *out, const char *stream) {
    char args[200] = "";
    for (int i = 0; run->args[i] != NULL; i++) {
        snprintf(args + strlen(args), sizeof args - strlen(args), " %s", run->args[i]);
    }
    check_lines(p, path_join("lesson-%d%s (%s, %s)", run->lesson, args, run->where, stream), out);
}

void assert_lines_fit(const char *what, RunResult run) {
    static Problems p;
    p.used = 0;
    p.count = 0;
    check_lines(&p, path_join("%s, stdout", what), run.out);
    check_lines(&p, path_join("%s, stderr", what), run.err);
    ck_assert_msg(p.count == 0, "%d printed lines are wider than %d columns:\n%s", p.count,
                  MAX_COLUMNS, p.text);
}

// The directory the default runs draw into: made by the first call, emptied
// and removed at exit.
static char drawings[64];

static void remove_drawings(void) {
    DIR *dir = opendir(drawings);
    struct dirent *entry;
    char path[sizeof drawings + 300];
    while (dir != NULL && (entry = readdir(dir)) != NULL) {
        snprintf(path, sizeof path, "%s/%s", drawings, entry->d_name);
        if (entry->d_name[0] != '.') {
            unlink(path);
        }
    }
    if (dir != NULL) {
        closedir(dir);
    }
    rmdir(drawings);
}

// The words of a lesson's default run, drawn.
static const char *const *drawn_args(const char *dir, const char **drawing) {
    if (drawings[0] == '\0') {
        snprintf(drawings, sizeof drawings, "/tmp/attn-test-drawings-XXXXXX");
        ck_assert_msg(mkdtemp(drawings) != NULL, "mkdtemp failed");
        atexit(remove_drawings);
    }
    *drawing = path_join("%s/%s.dot", drawings, dir);
    const char **args = arena_alloc(3, sizeof *args);
    args[0] = "--dot";
    args[1] = *drawing;
    return args;
}

RunResult default_run_drawn(const char *dir, const char **drawing) {
    return run_program_once(lesson_binary(dir), drawn_args(dir, drawing));
}

void plan_default_run_drawn(const char *dir) {
    const char *drawing;
    plan_run_once(lesson_binary(dir), drawn_args(dir, &drawing));
}

void plan_line_width_runs(void) {
    static Runs runs;
    const char *dirs[MAX_LESSONS];
    int n_dirs = find_lesson_dirs(dirs, MAX_LESSONS);
    collect_runs(&runs, n_dirs);
    for (int i = 0; i < runs.count; i++) {
        const Run *run = &runs.run[i];
        const char *left;
        if (!made_in_this_test(lesson_binary(dirs[run->lesson - 1]), run->args, &left)) {
            continue;
        }
        if (run->args[0] == NULL) {
            plan_default_run_drawn(dirs[run->lesson - 1]);
        } else {
            plan_run_once(lesson_binary(dirs[run->lesson - 1]), run->args);
        }
    }
}

START_TEST(test_every_line_fits_100_columns) {
    static Runs runs;
    const char *dirs[MAX_LESSONS];
    int n_dirs = find_lesson_dirs(dirs, MAX_LESSONS);
    ck_assert_msg(n_dirs >= 12, "only %d lessons in lessons/", n_dirs);
    collect_runs(&runs, n_dirs);
    // A default run a lesson, and the pages document several dozen more, such
    // as lesson 12's part 6 (a quoted ARGS that docs/12 wraps onto a new line).
    ck_assert_int_ge(runs.count, n_dirs + 30);
    Run part6 = {.lesson = 12, .args = {"--part", "6", "--position", "relative_key", "--past",
                                        "3", "--seq", "2", NULL}};
    bool found = false;
    for (int i = 0; i < runs.count && !found; i++) {
        found = same_run(&runs.run[i], &part6);
    }
    ck_assert_msg(found, "the documented runs lack lesson 12's --part 6 run");
    static Problems p;
    p.used = 0;
    p.count = 0;
    const char *left_runs = "";   // the runs left to make test-long (harness.h)
    int n_left = 0;
    for (int i = 0; i < runs.count; i++) {
        const Run *run = &runs.run[i];
        ck_assert_msg(run->lesson <= n_dirs, "no lesson %d", run->lesson);
        const char *binary = lesson_binary(dirs[run->lesson - 1]);
        const char *drawing, *left;
        if (!made_in_this_test(binary, run->args, &left)) {
            left_runs = path_join("%s%s%s", left_runs, n_left > 0 ? "; " : "", left);
            n_left += 1;
            continue;
        }
        RunResult r = run->args[0] == NULL ? default_run_drawn(dirs[run->lesson - 1], &drawing)
                                           : run_program_once(binary, run->args);
        ck_assert_msg(r.status == 0 || r.status == 2, "lesson-%d (%s) exited %d: %s",
                      run->lesson, run->where, r.status, r.err);
        check_run_lines(&p, run, r.out, "stdout");
        check_run_lines(&p, run, r.err, "stderr");
    }
    ck_assert_msg(p.count == 0, "%d printed lines are wider than %d columns:\n%s", p.count,
                  MAX_COLUMNS, p.text);
    if (n_left > 0) {
        note_skipped("the lines of %d run%s, estimated over %g s, are left to make test-long: "
                     "%s", n_left, n_left == 1 ? "" : "s", CHEAP_SECONDS, left_runs);
    }
}
END_TEST

TCase *line_width_tcase(void) {
    TCase *tc = new_tcase("line width");
    tcase_add_test(tc, test_columns_counts_characters);
    tcase_add_test(tc, test_every_line_fits_100_columns);
    return tc;
}
