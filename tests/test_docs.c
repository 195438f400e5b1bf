// test_docs.c - the docs cannot drift from the code: every lesson has its
// page, the page embeds the lesson's diagram, the committed diagram source
// (docs/diagrams/NN-name.dot) is exactly what the lesson's --dot writes
// now, the README's and docs/README.md's tables link the lesson and its page,
// each page has the one PyTorch block that make compare-N runs, every output a
// page quotes is what the lesson prints now (with the flags the page names for
// it), and the README's table of flags is what the lessons' --help says (read by
// calling each lesson's main() in this process: harness.h, call_lesson). And
// every line a lesson prints fits 100 columns (line_width.c, in this program
// since its runs are largely these: each is made once for both, and all of them
// first, as many at a time as there are CPUs). make test makes the runs their
// lesson's budget estimates at 5 s or less, make test-long all (harness.h:
// made_in_this_test); the checks that leave some name them as skipped. The tables are written by hand
// (a title, what the lesson teaches); for a lesson without its row, the test
// says the row to add.
//
// And the repository stands alone: every relative link of a Markdown file
// (and its #anchor) and every ../ path in any file leads to a file or a
// heading inside the repository, and nothing names the notes' folder that
// lives outside it.
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "line_width.h"

#include <ctype.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LESSONS 32
#define MAX_FILES 16384   // the repository holds about 4,200 (recorded test data, most of them)

// The lesson directories ("01-toy-qkv", ...) in order; returns how many.
static int lesson_dirs(const char **names) {
    return find_lesson_dirs(names, MAX_LESSONS);
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

// The README's table of lessons and docs/README.md's (the reading path) each have a row
// for every lesson, linking its folder and its page. They are written by hand (a title
// and what the lesson adds, in words); a lesson without its row is told the row to add.
START_TEST(test_readme_links_every_lesson) {
    const char *names[MAX_LESSONS];
    int count = lesson_dirs(names);
    const char *readme = read_text("README.md");
    const char *reading_path = read_text("docs/README.md");
    for (int i = 0; i < count; i++) {
        int n = atoi(names[i]);
        const char *row = path_join("| %d | TITLE | [`lessons/%s`](lessons/%s/) | "
                                    "[docs/%s.md](docs/%s.md) | WHAT IT TEACHES |", n,
                                    names[i], names[i], names[i], names[i]);
        ck_assert_msg(strstr(readme, path_join("](lessons/%s/)", names[i])) != NULL &&
                      strstr(readme, path_join("](docs/%s.md)", names[i])) != NULL,
                      "README.md's table of lessons has no row for lessons/%s; add after row "
                      "%d:\n%s", names[i], n - 1, row);
        const char *file = path_join("%s.c", strchr(names[i], '-') + 1);
        for (char *c = (char *)file; *c != '\0'; c++) {
            *c = *c == '-' ? '_' : *c;
        }
        row = path_join("| %d | [TITLE](%s.md) | [`%s`](../lessons/%s/%s) | WHAT IT ADDS |", n,
                        names[i], file, names[i], file);
        ck_assert_msg(strstr(reading_path, path_join("](%s.md)", names[i])) != NULL &&
                      strstr(reading_path, path_join("](../lessons/%s/", names[i])) != NULL,
                      "docs/README.md's table of lessons has no row for lessons/%s; add after "
                      "row %d:\n%s\n(a lesson of several files links its folder, "
                      "../lessons/%s/, and says where to start)", names[i], n - 1, row,
                      names[i]);
    }
}
END_TEST

// Each lesson page has exactly one block for make compare-N: the line
// "<!-- make compare-N runs the next block -->" right before a ```python
// fence (tools/compare.py finds it the same way).
START_TEST(test_every_page_has_one_compare_block) {
    const char *names[MAX_LESSONS];
    int count = lesson_dirs(names);
    for (int i = 0; i < count; i++) {
        const char *page_path = path_join("docs/%s.md", names[i]);
        const char *page = read_text(page_path);
        const char *marker = path_join("\n<!-- make compare-%d runs the next block -->\n",
                                       atoi(names[i]));
        const char *first = strstr(page, marker);
        ck_assert_msg(first != NULL, "%s has no line '%s'", page_path, marker + 1);
        ck_assert_msg(strstr(first + 1, marker) == NULL, "%s has the compare marker twice",
                      page_path);
        ck_assert_msg(strncmp(first + strlen(marker), "```python\n", 10) == 0,
                      "%s: the line after the compare marker is not ```python", page_path);
    }
}
END_TEST

// --- the repository stands alone ------------------------------------------------

// The files to check: git's list (tracked, plus new files not ignored) when
// git is there, else every file under the root except build output.
typedef struct {
    const char *path[MAX_FILES];
    int count;
} FileList;

static void add_file(FileList *files, const char *path) {
    ck_assert_msg(files->count < MAX_FILES, "more than %d files", MAX_FILES);
    size_t n = strlen(path);
    char *copy = arena_alloc(n + 1, 1);
    memcpy(copy, path, n + 1);
    files->path[files->count] = copy;
    files->count += 1;
}

static void walk_tree(FileList *files, const char *dir) {
    DIR *d = opendir(dir[0] != '\0' ? dir : ".");
    ck_assert_msg(d != NULL, "cannot list %s", dir);
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL) {
        const char *n = entry->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || strcmp(n, ".git") == 0 ||
            (dir[0] == '\0' && (strcmp(n, "build") == 0 || strcmp(n, "out") == 0))) {
            continue;
        }
        const char *path = dir[0] != '\0' ? path_join("%s/%s", dir, n) : path_join("%s", n);
        struct stat st;
        ck_assert(stat(path, &st) == 0);
        if (S_ISDIR(st.st_mode)) {
            walk_tree(files, path);
        } else {
            add_file(files, path);
        }
    }
    closedir(d);
}

static void repository_files(FileList *files) {
    files->count = 0;
    FILE *git = popen("git ls-files --cached --others --exclude-standard 2>/dev/null", "r");
    if (git != NULL) {
        char line[4096];
        while (fgets(line, sizeof line, git) != NULL) {
            line[strcspn(line, "\n")] = '\0';
            if (access(line, R_OK) == 0) {      // a file deleted but not yet committed is gone
                add_file(files, line);
            }
        }
        if (pclose(git) != 0) {
            files->count = 0;                   // not a git checkout: walk the tree
        }
    }
    if (files->count == 0) {
        walk_tree(files, "");
    }
    ck_assert_msg(files->count > 0, "found no files");
}

static bool starts_with(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

// Recorded data and rendered diagrams are not text anyone writes links in.
static bool is_checked_text(const char *path) {
    return !starts_with(path, "tests/data/") && !ends_with(path, ".svg") &&
           !ends_with(path, ".npy");
}

// `target` (as written in `from`) resolved against from's directory, with
// "." and ".." taken out: from docs/x.md, one level up and then lessons/a is
// lessons/a. NULL when the path climbs above the repository's root.
static const char *resolve(const char *from, const char *target, size_t target_len) {
    const char *slash = strrchr(from, '/');
    size_t dir_len = slash != NULL ? (size_t)(slash - from) : 0;
    size_t cap = dir_len + target_len + 2;
    char *joined = arena_alloc(cap, 1);
    snprintf(joined, cap, "%.*s%s%.*s", (int)dir_len, from, dir_len > 0 ? "/" : "",
             (int)target_len, target);
    char *out = arena_alloc(cap, 1);
    size_t used = 0;
    for (char *part = strtok(joined, "/"); part != NULL; part = strtok(NULL, "/")) {
        if (strcmp(part, ".") == 0) {
            continue;
        }
        if (strcmp(part, "..") == 0) {
            if (used == 0) {
                return NULL;
            }
            while (used > 0 && out[used - 1] != '/') {
                used -= 1;
            }
            used -= used > 0;                   // the '/' before the dropped part
            continue;
        }
        used += (size_t)snprintf(out + used, cap - used, "%s%s", used > 0 ? "/" : "", part);
    }
    out[used] = '\0';
    return out;
}

// A file of the list, or a directory holding one.
static bool exists_in(const FileList *files, const char *path) {
    size_t n = strlen(path);
    for (int i = 0; i < files->count; i++) {
        const char *f = files->path[i];
        if (strcmp(f, path) == 0 || n == 0 || (strncmp(f, path, n) == 0 && f[n] == '/')) {
            return true;
        }
    }
    return false;
}

// GitHub's anchor for a heading: lower case, spaces to '-', punctuation
// dropped (ASCII, and the CJK and typographic marks these pages use),
// other letters kept.
static const char *heading_anchor(const char *heading, size_t len) {
    static const char *const dropped[] = {"“", "”", "‘", "’", "、", "，", "。", "：", "（", "）",
                                          "—", "–", "·", "×", "→", "…", "《", "》"};
    char *out = arena_alloc(len + 1, 1);
    size_t used = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)heading[i];
        if (c < 0x80) {
            if (isalnum(c) || c == '-' || c == '_') {
                out[used++] = (char)tolower(c);
            } else if (c == ' ') {
                out[used++] = '-';
            }
            i += 1;
            continue;
        }
        size_t width = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        bool drop = false;
        for (size_t k = 0; k < sizeof dropped / sizeof dropped[0]; k++) {
            drop = drop || strncmp(heading + i, dropped[k], strlen(dropped[k])) == 0;
        }
        for (size_t k = 0; k < width && !drop && i + k < len; k++) {
            out[used++] = heading[i + k];
        }
        i += width;
    }
    out[used] = '\0';
    return out;
}

// Does Markdown file `path` have a heading whose anchor is `anchor`? (A
// repeated heading gets "-1", "-2", ...: those are accepted too.)
static bool has_anchor(const char *path, const char *anchor) {
    const char *text = read_text(path);
    bool in_fence = false;
    for (const char *line = text; *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
        if (starts_with(line, "```")) {
            in_fence = !in_fence;
        } else if (!in_fence && line[0] == '#') {
            size_t hashes = strspn(line, "#");
            if (hashes <= 6 && line[hashes] == ' ') {
                const char *a = heading_anchor(line + hashes + 1, len - hashes - 1);
                size_t n = strlen(a);
                bool repeated = strncmp(a, anchor, n) == 0 && anchor[n] == '-' &&
                                isdigit((unsigned char)anchor[n + 1]);
                if (strcmp(a, anchor) == 0 || repeated) {
                    return true;
                }
            }
        }
        line += len + (end != NULL);
    }
    return false;
}

// Problems found, one per line, reported all at once.
typedef struct {
    char text[3500];   // check passes a failure message of at most 4 KiB
    size_t used;
    int count;
} Problems;

static void clear_problems(Problems *p) {
    p->used = 0;
    p->count = 0;
}

// The start of every scan of the repository: its files, and no problems yet.
static void start_scan(FileList *files, Problems *p) {
    repository_files(files);
    clear_problems(p);
}

static void problem(Problems *p, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void problem(Problems *p, const char *format, ...) {
    p->count += 1;
    if (p->used + 200 >= sizeof p->text) {
        return;
    }
    va_list args;
    va_start(args, format);
    p->used += (size_t)vsnprintf(p->text + p->used, sizeof p->text - p->used, format, args);
    va_end(args);
    p->used += (size_t)snprintf(p->text + p->used, sizeof p->text - p->used, "\n");
}

// One relative reference `target` (a link's target, or a ../ path) written in `from`.
static void check_reference(Problems *p, const FileList *files, const char *from, int line,
                            const char *target, size_t len) {
    const char *hash = memchr(target, '#', len);
    size_t path_len = hash != NULL ? (size_t)(hash - target) : len;
    const char *resolved = path_len > 0 ? resolve(from, target, path_len) : from;
    if (resolved == NULL) {
        problem(p, "%s:%d: %.*s leaves the repository", from, line, (int)len, target);
    } else if (!exists_in(files, resolved)) {
        problem(p, "%s:%d: %.*s leads nowhere (no %s)", from, line, (int)len, target, resolved);
    } else if (hash != NULL && ends_with(resolved, ".md")) {
        const char *anchor = path_join("%.*s", (int)(len - path_len - 1), hash + 1);
        if (!has_anchor(resolved, anchor)) {
            problem(p, "%s:%d: %.*s: %s has no heading #%s", from, line, (int)len, target,
                    resolved, anchor);
        }
    }
}

// Every Markdown link [text](target) outside code: a relative target must
// exist in the repository, and so must its #anchor.
static void check_markdown_links(Problems *p, const FileList *files, const char *path) {
    const char *text = read_text(path);
    bool in_fence = false;
    int number = 1;
    for (const char *line = text; *line != '\0'; number++) {
        const char *end = strchr(line, '\n');
        size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
        if (starts_with(line, "```")) {
            in_fence = !in_fence;
        } else if (!in_fence) {
            bool in_code = false;
            for (size_t i = 0; i + 1 < len; i++) {
                in_code = line[i] == '`' ? !in_code : in_code;
                if (in_code || line[i] != ']' || line[i + 1] != '(') {
                    continue;
                }
                const char *target = line + i + 2;
                size_t n = strcspn(target, ") \n");
                bool external = memchr(target, ':', n) != NULL;    // https:, mailto:
                if (!external && n > 0) {
                    check_reference(p, files, path, number, target, n);
                }
            }
        }
        line += len + (end != NULL);
    }
}

// Every ../ path in any text file (code comments, includes, pages) must
// resolve inside the repository to something that exists.
static void check_parent_paths(Problems *p, const FileList *files, const char *path) {
    const char *text = read_text(path);
    int number = 1;
    for (const char *c = text; *c != '\0'; c++) {
        if (*c == '\n') {
            number += 1;
        }
        bool starts = starts_with(c, "../") && (c == text || strchr(" \t\"'`(<[=", c[-1]) != NULL);
        if (!starts) {
            continue;
        }
        size_t n = strspn(c, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-");
        while (n > 3 && (c[n - 1] == '.' || c[n - 1] == ',')) {
            n -= 1;                             // the end of a sentence, not of the path
        }
        check_reference(p, files, path, number, c, n);
        c += n - 1;
    }
}

// --- the recorded data come from the pages' blocks as they are now ----------------

// The block make compare-N runs, on a page read in full: the lines after the marker
// and its ```python fence up to the closing fence, each with its newline, as
// tools/compare.py cuts it out. NULL if there is none (the test above says so).
static const char *compare_block(const char *page, int lesson, size_t *length) {
    const char *marker = path_join("\n<!-- make compare-%d runs the next block -->\n```python\n",
                                   lesson);
    const char *start = strstr(page, marker);
    if (start == NULL) {
        return NULL;
    }
    start += strlen(marker);
    const char *end = strstr(start - 1, "\n```\n");      // the newline before it is the block's
    if (end == NULL && ends_with(page, "\n```")) {
        end = page + strlen(page) - 4;
    }
    if (end == NULL || end < start) {
        return NULL;
    }
    *length = (size_t)(end + 1 - start);
    return start;
}

// The scripts that record a lesson's data by running its page's block (those of
// tests/reference that call page_block) write the block's FNV-1a hash beside the data,
// tests/data/lessonNN/page_block.txt; the block on the page must still have it, or the
// data no longer come from the code the page shows. (Page 13's block once changed after
// its data were recorded: make compare-13 failed with --causal, the tests passed.)
START_TEST(test_recorded_data_come_from_the_pages_blocks) {
    const char *names[MAX_LESSONS];
    int count = lesson_dirs(names);
    static Problems p;
    clear_problems(&p);
    int checked = 0;
    for (int i = 0; i < count; i++) {
        int n = atoi(names[i]);
        const char *data = path_join("tests/data/lesson%02d", n);
        const char *script = path_join("tests/reference/gen_lesson%02d.py", n);
        const char *recorded = path_join("%s/page_block.txt", data);
        bool runs_block = access(script, R_OK) == 0 && strstr(read_text(script), "page_block(");
        bool has_hash = access(recorded, R_OK) == 0;
        if (!runs_block && !has_hash) {
            continue;
        }
        const char *page_path = path_join("docs/%s.md", names[i]);
        const char *again = path_join("record them again with /usr/bin/python3 %s and commit "
                                      "what changes (git status %s)", script, data);
        if (!has_hash) {
            problem(&p, "%s is missing: %s records %s/ by running the block of %s that make "
                    "compare-%d runs; %s", recorded, script, data, page_path, n, again);
            continue;
        }
        char page_then[1024] = "", hash_then[32] = "";
        const char *cursor = read_text(recorded);
        for (const char *line = next_line(&cursor); line != NULL; line = next_line(&cursor)) {
            if (line[0] != '#' && sscanf(line, "%1023s %31s", page_then, hash_then) != 2) {
                problem(&p, "%s: '%s' is not '<page> <hash>'", recorded, line);
            }
        }
        size_t length = 0;
        const char *block = compare_block(read_text(page_path), n, &length);
        if (block == NULL) {
            continue;
        }
        const char *hash_now = path_join("%016llx",
                                         (unsigned long long)fnv1a(FNV1A_START, block, length));
        if (strcmp(page_then, page_path) != 0 || strcmp(hash_then, hash_now) != 0) {
            problem(&p, "%s: the block make compare-%d runs is not the one %s/ was recorded "
                    "from (its hash %s, in %s; %s now): %s", page_path, n, data, hash_then,
                    recorded, hash_now, again);
        }
        checked += 1;
    }
    ck_assert_msg(p.count == 0, "recorded data that do not come from their page's block as it "
                  "is now (%d):\n%s", p.count, p.text);
    ck_assert_msg(checked > 0, "no lesson's data are recorded from its page's block");
}
END_TEST

START_TEST(test_relative_links_and_paths_stay_inside) {
    static FileList files;
    static Problems p;
    start_scan(&files, &p);
    for (int i = 0; i < files.count; i++) {
        const char *path = files.path[i];
        if (!is_checked_text(path)) {
            continue;
        }
        if (ends_with(path, ".md")) {
            check_markdown_links(&p, &files, path);
        }
        check_parent_paths(&p, &files, path);
    }
    ck_assert_msg(p.count == 0, "%d links or paths lead outside the repository or nowhere:\n%s",
                  p.count, p.text);
}
END_TEST

// The notes and the generator's and printer's references used to live in a
// folder beside the repository. Nothing may point there any more: what the
// repository needs is in docs/ (sources.md, pytorch-rng.md, pytorch-print.md).
START_TEST(test_nothing_points_at_the_folder_outside) {
    // Spelled in two pieces so that this file does not match itself.
    const char *const forbidden[] = {"shared" "/seeds", "shared" "/reference", "../" "shared",
                                     "/work/" "shared"};
    static FileList files;
    static Problems p;
    start_scan(&files, &p);
    for (int i = 0; i < files.count; i++) {
        const char *path = files.path[i];
        if (starts_with(path, "tests/data/") || ends_with(path, ".npy")) {
            continue;
        }
        const char *text = read_text(path);
        for (size_t k = 0; k < sizeof forbidden / sizeof forbidden[0]; k++) {
            if (strstr(text, forbidden[k]) != NULL) {
                problem(&p, "%s mentions %s", path, forbidden[k]);
            }
        }
    }
    ck_assert_msg(p.count == 0, "%d files point outside the repository:\n%s", p.count, p.text);
}
END_TEST

// --- quoted output -----------------------------------------------------------------

// A text cut into lines (arena strings, without their '\n').
typedef struct {
    const char **line;
    int count;
} Lines;

static Lines split_lines(const char *text) {
    int n = 1;
    for (const char *c = text; *c != '\0'; c++) {
        n += *c == '\n';
    }
    Lines lines = {arena_alloc((size_t)n, sizeof(const char *)), 0};
    for (const char *line = text; *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
        lines.line[lines.count++] = path_join("%.*s", (int)len, line);
        line += len + (end != NULL);
    }
    return lines;
}

static bool is_blank(const char *line) { return line[strspn(line, " ")] == '\0'; }

static bool is_elision(const char *line) {
    const char *t = line + strspn(line, " ");
    return strcmp(t, "...") == 0;
}

static bool has_line(const Lines *out, const char *line) {
    for (int k = 0; k < out->count; k++) {
        if (strcmp(out->line[k], line) == 0) {
            return true;
        }
    }
    return false;
}

// Do block lines [from, to) appear in `out` as runs of consecutive lines, in
// order, a line "..." standing for lines left out? Returns the first block
// line that does not (after the longest run that does), or -1.
static int block_mismatch(const Lines *block, int from, int to, const Lines *out) {
    int pos = 0;
    for (int start = from; start < to;) {
        int end = start;
        while (end < to && !is_elision(block->line[end])) {
            end += 1;
        }
        int len = end - start, best = 0, found = -1;
        for (int k = pos; k < out->count && found < 0 && len > 0; k++) {
            int j = 0;
            while (j < len && k + j < out->count &&
                   strcmp(out->line[k + j], block->line[start + j]) == 0) {
                j += 1;
            }
            found = j == len ? k : -1;
            best = j > best ? j : best;
        }
        if (len > 0 && found < 0) {
            return start + best;
        }
        pos = len > 0 ? found + len : pos;
        start = end + 1;
    }
    return -1;
}

// The first pass over the pages only plans the runs the second makes (all at once:
// test_the_runs_are_made_at_once).
static bool planning = false;

// The runs make test leaves to make test-long (harness.h: made_in_this_test), each once.
static const char *left_runs[64];
static int n_left_runs;

static bool made_here(const char *dir, const char *const *args) {
    const char *left;
    if (made_in_this_test(lesson_binary(dir), args, &left)) {
        return true;
    }
    bool known = false;
    for (int i = 0; i < n_left_runs && !known; i++) {
        known = strcmp(left_runs[i], left) == 0;
    }
    if (!known && n_left_runs < 64) {
        left_runs[n_left_runs++] = left;
    }
    return false;
}

// The runs left, as one line for note_skipped: "2 runs: a; b".
static const char *left_runs_text(void) {
    const char *text = path_join("%d run%s", n_left_runs, n_left_runs == 1 ? "" : "s");
    for (int i = 0; i < n_left_runs; i++) {
        text = path_join("%s%s%s", text, i == 0 ? ": " : "; ", left_runs[i]);
    }
    return text;
}

// What lesson `dir` prints when run with `args_text` (words split at spaces);
// the run is made once (the line width test reads it too).
static Lines lesson_output(const char *dir, const char *args_text) {
    const char *args[16];
    int n = 0;
    char *copy = (char *)path_join("%s", args_text);
    for (char *word = strtok(copy, " "); word != NULL && n < 15; word = strtok(NULL, " ")) {
        args[n++] = word;
    }
    args[n] = NULL;
    if (!made_here(dir, args)) {
        return (Lines){NULL, -1};   // left to make test-long
    }
    if (planning) {
        plan_run_once(lesson_binary(dir), args);
        return (Lines){NULL, 0};
    }
    RunResult run = run_program_once(lesson_binary(dir), args);
    ck_assert_msg(run.status == 0, "%s %s exited %d: %s", dir, args_text, run.status, run.err);
    return split_lines(run.out);
}

// The lesson's default run, with --dot: the diagram it draws must be the
// committed docs/diagrams/<dir>.dot (make docs redraws it). Its output (count -1:
// left to make test-long, with the check of the diagram).
static Lines default_run_and_diagram(Problems *p, const char *dir) {
    if (!made_here(dir, (const char *const[]){NULL})) {
        return (Lines){NULL, -1};
    }
    if (planning) {
        plan_default_run_drawn(dir);
        return (Lines){NULL, 0};
    }
    const char *fresh;
    RunResult run = default_run_drawn(dir, &fresh);
    ck_assert_msg(run.status == 0, "%s exited %d: %s", dir, run.status, run.err);
    Lines lines = split_lines(run.out);
    const char *committed = path_join("docs/diagrams/%s.dot", dir);
    if (access(committed, R_OK) != 0) {
        problem(p, "%s is missing (make docs writes it)", committed);
    } else if (strcmp(read_text(fresh), read_text(committed)) != 0) {
        problem(p, "%s differs from what lesson %s draws now: run make docs and commit",
                committed, dir);
    }
    return lines;
}

// The flags of the run a line names, when the line is nothing but that
// command: "$ make lesson-N ARGS=..." (a block's first line), or
// `make lesson-N ARGS="..."` with or without its backticks and a closing ':'
// (the line before a block). "" for the default run; NULL when the line is
// anything else or names another lesson.
static const char *named_run_args(const char *line, int lesson) {
    const char *c = line + strspn(line, " ");
    c += starts_with(c, "$ ") ? 2 : 0;
    c += c[0] == '`';
    const char *command = path_join("make lesson-%d", lesson);
    if (!starts_with(c, command)) {
        return NULL;
    }
    char *args = (char *)path_join("%s", c + strlen(command));
    size_t n = strlen(args);
    while (n > 0 && (args[n - 1] == ':' || args[n - 1] == '`' || args[n - 1] == ' ')) {
        args[--n] = '\0';
    }
    if (args[0] == '\0') {
        return args;
    }
    if (!starts_with(args, " ARGS=")) {
        return NULL;
    }
    args += strlen(" ARGS=");
    for (char *q = strchr(args, '"'); q != NULL; q = strchr(q, '"')) {
        memmove(q, q + 1, strlen(q));
    }
    return args;
}

// Every output a page quotes is what the lesson prints now. A quoted output
// is a plain ``` block. When the block names its run, by its first line
// ("$ make lesson-N ARGS=...") or by the line just before it (a line that is
// only `make lesson-N ARGS="..."`, as an example or an exercise gives it),
// it is checked against that run, whatever it holds; the --bench timings
// vary and are left alone. Any other block with at least one line the
// lesson prints is checked against the default run (and the --train run,
// where there is one). Its lines must be the lesson's, in order,
// consecutive except where a line "..." leaves some out. And the committed
// diagram is what the default run draws with --dot. A run make test does not make
// (harness.h: made_in_this_test) checks nothing here: a block of its output is left,
// with the run, to make test-long (left_runs names the runs).
static void check_quoted_outputs(Problems *p) {
    const char *names[MAX_LESSONS];
    int count = lesson_dirs(names);
    n_left_runs = 0;
    for (int i = 0; i < count; i++) {
        const char *page_path = path_join("docs/%s.md", names[i]);
        Lines page = split_lines(read_text(page_path));
        LessonCall help = call_lesson(lesson_entry(names[i])->main,
                                      (const char *const[]){"--help", NULL});
        Lines runs[2];
        int n_runs = 0;
        Lines made = default_run_and_diagram(p, names[i]);
        if (made.count >= 0) {
            runs[n_runs++] = made;
        }
        if (strstr(help.out, "  --train ") != NULL) {
            made = lesson_output(names[i], "--train");
            if (made.count >= 0) {
                runs[n_runs++] = made;
            }
        }
        for (int k = 0; k < page.count; k++) {
            if (!starts_with(page.line[k], "```")) {
                continue;
            }
            bool plain = strcmp(page.line[k], "```") == 0;     // not ```python, ```c, ...
            int from = k + 1, to = from;
            while (to < page.count && !starts_with(page.line[to], "```")) {
                to += 1;
            }
            k = to;                                            // past the closing fence
            if (!plain) {
                continue;
            }
            Lines named_run[1];
            const Lines *candidates = runs;
            int n_candidates = n_runs;
            const char *args = NULL;
            int before = from - 2;                        // the last line before the fence
            if (from < to && starts_with(page.line[from], "$ make lesson-")) {
                args = named_run_args(page.line[from], atoi(names[i]));
                from += 1;
            }
            while (args == NULL && before >= 0 && is_blank(page.line[before])) {
                before -= 1;
            }
            if (args == NULL && before >= 0) {
                args = named_run_args(page.line[before], atoi(names[i]));
            }
            if (args != NULL) {
                if (strstr(args, "--bench") != NULL) {
                    continue;
                }
                named_run[0] = lesson_output(names[i], args);
                if (named_run[0].count < 0) {
                    continue;   // its run is left to make test-long
                }
                candidates = named_run;
                n_candidates = 1;
            } else if (n_runs == 0) {
                continue;       // the runs it may quote are left to make test-long
            }
            bool quoted = args != NULL;                   // a named run's block is its output
            for (int j = from; j < to && !quoted; j++) {
                for (int r = 0; r < n_candidates && !quoted; r++) {
                    quoted = !is_blank(page.line[j]) && has_line(&candidates[r], page.line[j]);
                }
            }
            int mismatch = quoted ? block_mismatch(&page, from, to, &candidates[0]) : -1;
            for (int r = 1; r < n_candidates && mismatch >= 0; r++) {
                int other = block_mismatch(&page, from, to, &candidates[r]);
                mismatch = other < 0 || other > mismatch ? other : mismatch;   // the closest run
            }
            if (mismatch >= 0 && !planning) {
                problem(p, "%s:%d: the lesson does not print this: %.100s", page_path,
                        mismatch + 1, page.line[mismatch]);
            }
        }
    }
}

// Every run the tests below make (the lessons' documented runs, each lesson's default
// run drawn), made at once, as many at a time as there are CPUs: most of this program's
// time is these runs, lesson 16's training most of it.
START_TEST(test_the_runs_are_made_at_once) {
    static Problems p;
    clear_problems(&p);
    planning = true;
    check_quoted_outputs(&p);
    planning = false;
    plan_line_width_runs();
    make_planned_runs();
}
END_TEST

START_TEST(test_quoted_output_and_diagram_are_the_lessons) {
    static Problems p;
    clear_problems(&p);
    check_quoted_outputs(&p);
    ck_assert_msg(p.count == 0, "%d quoted outputs or diagrams differ from what the lessons "
                  "print and draw now (run the lesson and paste its lines):\n%s", p.count,
                  p.text);
    if (n_left_runs > 0) {
        note_skipped("the quoted outputs of %s, estimated over %g s, are left to make "
                     "test-long", left_runs_text(), CHEAP_SECONDS);
    }
}
END_TEST

// --- the README's table of flags is the lessons' --help ----------------------------

// The flags a --help text lists, one word each as the README's table writes
// them: "--batch 3" (the flag and its default), "--dump DIR" (a value with
// no default: its placeholder), "--train" (a switch).
static Lines help_flags(const char *help) {
    Lines lines = split_lines(help), flags = {arena_alloc((size_t)lines.count + 1,
                                                          sizeof(const char *)), 0};
    for (int k = 0; k < lines.count; k++) {
        const char *l = lines.line[k];
        if (!starts_with(l, "  --")) {
            continue;
        }
        const char *flag = l + 2;
        size_t flag_len = strcspn(flag, " ");
        const char *rest = flag + flag_len + strspn(flag + flag_len, " ");
        size_t word_len = strcspn(rest, " ");
        bool takes_value = word_len > 0 && isupper((unsigned char)rest[0]) &&
                           isupper((unsigned char)rest[word_len - 1]);
        const char *def = strstr(l, "(default ");
        const char *end = def != NULL ? strchr(def, ')') : NULL;
        if (takes_value && def != NULL && end != NULL && end[1] == '\0') {
            def += strlen("(default ");
            flags.line[flags.count++] =
                path_join("%.*s %.*s", (int)flag_len, flag, (int)(end - def), def);
        } else if (takes_value) {
            flags.line[flags.count++] =
                path_join("%.*s %.*s", (int)flag_len, flag, (int)word_len, rest);
        } else {
            flags.line[flags.count++] = path_join("%.*s", (int)flag_len, flag);
        }
    }
    return flags;
}

// The `--flag value` words of one table row's second column.
static Lines row_flags(const char *row) {
    Lines flags = {arena_alloc(strlen(row) + 1, sizeof(const char *)), 0};
    for (const char *c = strchr(row, '`'); c != NULL; c = strchr(c + 1, '`')) {
        const char *end = strchr(c + 1, '`');
        if (end == NULL) {
            break;
        }
        if (starts_with(c + 1, "--")) {
            flags.line[flags.count++] = path_join("%.*s", (int)(end - c - 1), c + 1);
        }
        c = end;
    }
    return flags;
}

// The README's table of flags (the rows after the line that says the test
// checks it) against every lesson's --help: the same flags, with the same
// defaults, in both directions. The row "all" holds the common flags, which
// every lesson must list; row N holds lesson N's own.
START_TEST(test_readme_flag_table_is_the_lessons_help) {
    const char *names[MAX_LESSONS];
    int count = lesson_dirs(names);
    Lines readme = split_lines(read_text("README.md"));
    int k = 0;
    const char *marker = "<!-- tests/test_docs.c checks this table";
    while (k < readme.count && !starts_with(readme.line[k], marker)) {
        k += 1;
    }
    ck_assert_msg(k < readme.count, "README.md has no table of flags (the line "
                  "'<!-- tests/test_docs.c checks this table ...' above it)");
    Lines common = {NULL, 0};
    const Lines *own[MAX_LESSONS + 1] = {NULL};
    Lines rows[MAX_LESSONS + 1];
    for (k += 1; k < readme.count && starts_with(readme.line[k], "|"); k++) {
        const char *cell = readme.line[k] + 1 + strspn(readme.line[k] + 1, " ");
        if (starts_with(cell, "all ")) {
            common = row_flags(cell);
        } else if (isdigit((unsigned char)cell[0])) {
            int n = atoi(cell);
            ck_assert_msg(n >= 1 && n <= MAX_LESSONS, "README.md: a row for lesson %d", n);
            rows[n] = row_flags(strchr(cell, '|') != NULL ? strchr(cell, '|') : cell);
            own[n] = &rows[n];
        }
    }
    ck_assert_msg(common.count > 0, "README.md's table of flags has no row 'all'");
    static Problems p;
    clear_problems(&p);
    for (int i = 0; i < count; i++) {
        int n = atoi(names[i]);
        LessonCall run = call_lesson(lesson_entry(names[i])->main,
                                     (const char *const[]){"--help", NULL});
        ck_assert_msg(run.status == 0, "%s --help exited %d", names[i], run.status);
        Lines help = help_flags(run.out);
        if (own[n] == NULL) {   // the row to add, its flags as --help lists them
            const char *row = path_join("| %d |", n);
            for (int f = 0; f < help.count; f++) {
                if (!has_line(&common, help.line[f])) {
                    row = path_join("%s `%s`", row, help.line[f]);
                }
            }
            problem(&p, "README.md's table of flags has no row for lesson %d; add after row "
                    "%d:\n%s |", n, n - 1, row);
            continue;
        }
        for (int f = 0; f < help.count; f++) {
            if (!has_line(own[n], help.line[f]) && !has_line(&common, help.line[f])) {
                problem(&p, "lesson %d's --help lists `%s`; README.md's table does not", n,
                        help.line[f]);
            }
        }
        for (int f = 0; f < own[n]->count; f++) {
            if (!has_line(&help, own[n]->line[f])) {
                problem(&p, "README.md's table gives lesson %d `%s`; its --help does not",
                        n, own[n]->line[f]);
            }
        }
        for (int f = 0; f < common.count; f++) {
            if (!has_line(&help, common.line[f])) {
                problem(&p, "README.md's row 'all' has `%s`; lesson %d's --help does not",
                        common.line[f], n);
            }
        }
    }
    ck_assert_msg(p.count == 0, "%d differences between README.md's table of flags and the "
                  "lessons' --help:\n%s", p.count, p.text);
}
END_TEST

Suite *docs_suite(void) {
    Suite *suite = suite_create("docs");
    TCase *tc = new_tcase("docs");
    tcase_add_test(tc, test_the_runs_are_made_at_once);
    tcase_add_test(tc, test_lessons_are_numbered_in_order);
    tcase_add_test(tc, test_every_lesson_has_its_page_and_diagram);
    tcase_add_test(tc, test_readme_links_every_lesson);
    tcase_add_test(tc, test_every_page_has_one_compare_block);
    tcase_add_test(tc, test_recorded_data_come_from_the_pages_blocks);
    tcase_add_test(tc, test_relative_links_and_paths_stay_inside);
    tcase_add_test(tc, test_nothing_points_at_the_folder_outside);
    tcase_add_test(tc, test_quoted_output_and_diagram_are_the_lessons);
    tcase_add_test(tc, test_readme_flag_table_is_the_lessons_help);
    suite_add_tcase(suite, tc);
    suite_add_tcase(suite, line_width_tcase());
    return suite;
}

int main(void) {
    // One process for every test (check forks one per test by default), so
    // that a lesson's run made for one test is not made again for the next
    // (run_program_once): lesson 16's documented runs train for seconds each.
    setenv("CK_FORK", "no", 1);
    // The lessons it runs run natively, also under make valgrind, whose ATTN_KERNELS=scalar
    // is for the programs valgrind runs: with the scalar kernels lesson 17's default run is
    // estimated at 13 minutes, and refused.
    unsetenv("ATTN_KERNELS");
    return run_suite(docs_suite());
}
