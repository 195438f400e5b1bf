// test_outputs.c - where --dump and --dot write (common/lesson/outputs.c), and
// how (common/lesson/files.c, graph.c): the paths a reliability probe found
// mishandled, each now refused before any work or written all or nothing.
//
// Each run of the lesson (lesson 2: it has size flags and 13 dumps) starts
// in a fresh sandbox directory as its working directory, so "the refused
// run made nothing" is checked as "the sandbox is still empty". The places
// no file can be written are made by the tests (Places below), so nothing
// is assumed of what /sys or /proc hold; the tests may run as root, whom
// permissions do not stop.
#define _DEFAULT_SOURCE   // mount() and umount2() (Linux), with POSIX 2008
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/mount.h>
#endif

#include "lesson/files.h"
#include "lesson/graph.h"
#include "harness.h"
#include "lesson/npy.h"

#define LESSON "02-self-attention-v1"
#define PREFIX "lesson-2: "

// The lesson run_in runs: lesson 2, or lesson 16 for the tests of its own outputs
// (--save, --svg), which set it and set it back.
static const char *lesson_run = LESSON;

static RunResult run_in(const char *sandbox, const char *const *args) {
    return run_program_with(sandbox, 30, lesson_binary(lesson_run), args);
}

// The run must be refused with one line starting PREFIX `expected`, and
// leave the sandbox as empty as it was.
static void assert_refused(const char *sandbox, const char *const *args, const char *expected) {
    RunResult r = run_in(sandbox, args);
    assert_one_line_refusal(r, path_join(PREFIX "%s", expected), expected);
    ck_assert_msg(count_entries(sandbox) == 0, "%s: the refused run left something in %s",
                  expected, sandbox);
}

// `length` characters of path: `start`, then "/ddd...d" names of 200.
static const char *long_path(const char *start, size_t length) {
    char *path = arena_alloc(length + 1, 1);
    size_t used = (size_t)snprintf(path, length + 1, "%s", start);
    while (used < length) {
        path[used] = used % 201 == 0 ? '/' : 'd';
        used += 1;
    }
    path[length] = '\0';
    return path;
}

static const char *repeated(char c, size_t n) {
    char *text = arena_alloc(n + 1, 1);
    memset(text, c, n);
    return text;
}

static bool is_fifo(const char *path) {
    struct stat info;
    return lstat(path, &info) == 0 && S_ISFIFO(info.st_mode);
}

// Can a file be made in `dir`? Try, and leave nothing.
static bool can_make_file_in(const char *dir) {
    char *probe = arena_alloc(strlen(dir) + 16, 1);
    sprintf(probe, "%s/probe-XXXXXX", dir);
    int fd = mkstemp(probe);
    if (fd < 0) {
        return false;
    }
    close(fd);
    unlink(probe);
    return true;
}

// Places no file can be written, made in a temporary directory of their
// own (not the sandbox, which must stay empty):
typedef struct {
    const char *root;       // the temporary directory, for remove_tree
    const char *file;       // a regular file: "<file>/anything" fails with
                            // ENOTDIR, for everyone, root included
    const char *fifo;       // a FIFO: --dot must not write into one
    // An existing directory in which no file can be made: a directory of
    // mode 0555 where permissions apply; for root, whom they do not stop,
    // the first of /sys and /proc that refuses a file when tried (either
    // may be missing or writable, so each is tried, not assumed); NULL if
    // there is none, and the checks that need one are skipped.
    const char *read_only;
} Places;

static Places make_places(void) {
    Places p;
    p.root = make_temp_dir();
    p.file = path_join("%s/file", p.root);
    ck_assert(save_file(p.file, "x", 1));
    p.fifo = path_join("%s/fifo", p.root);
    ck_assert_int_eq(mkfifo(p.fifo, 0666), 0);
    const char *ro = path_join("%s/ro", p.root);
    ck_assert_int_eq(mkdir(ro, 0555), 0);
    const char *const candidates[] = {ro, "/sys", "/proc"};
    p.read_only = NULL;
    for (int i = 0; i < 3 && p.read_only == NULL; i++) {
        struct stat info;
        if (stat(candidates[i], &info) == 0 && S_ISDIR(info.st_mode) &&
            !can_make_file_in(candidates[i])) {
            p.read_only = candidates[i];
        }
    }
    return p;
}

static void remove_places(Places p) {
    chmod(path_join("%s/ro", p.root), 0755);
    remove_tree(p.root);
}

// --- paths too long: refused before anything is made ---------------------------------

START_TEST(test_long_paths) {
    const char *sandbox = make_temp_dir();
    // named() used to cut paths at 4096 bytes: weight and bias collided.
    const char *dir = long_path(sandbox, 4085);
    assert_refused(sandbox, (const char *[]){"--dump", dir, NULL},
                   "--dump: the path is 4085 characters long, more than the 3839 allowed");
    // This one failed with "...: Success".
    assert_refused(sandbox, (const char *[]){"--dump", long_path(sandbox, 4096), NULL},
                   "--dump: the path is 4096 characters long, more than the 3839 allowed");
    // A name longer than NAME_MAX deep inside: x/ and x/y/ used to stay behind.
    const char *deep = path_join("x/y/%s/w", repeated('z', 300));
    assert_refused(sandbox, (const char *[]){"--dump", deep, NULL},
                   "--dump: a name in the path is 300 characters long, more than the 255 "
                   "allowed");
    // --dot's file is written as "<name>.tmp-XXXXXX" first: 11 characters less.
    assert_refused(sandbox, (const char *[]){"--dot", repeated('q', 250), NULL},
                   "--dot: a name in the path is 250 characters long, more than the 244 "
                   "allowed");
    assert_refused(sandbox, (const char *[]){"--dot", long_path(sandbox, 4090), NULL},
                   "--dot: the path is 4090 characters long, more than the 4084 allowed");
    remove_tree(sandbox);
}
END_TEST

// --- refused after --dump made its directory: the directories go again ---------------

START_TEST(test_refused_after_mkdir_removes_it) {
    const char *sandbox = make_temp_dir();
    assert_refused(sandbox, (const char *[]){"--dump", "x/y", "--dot", "x/y/none/g.dot", NULL},
                   "--dot cannot write 'x/y/none/g.dot': no directory 'x/y/none'");
    assert_refused(sandbox, (const char *[]){"--dump", "x/y", "--dot", "x", NULL},
                   "--dot: 'x' is a directory that --dump makes; give a file name");
    // A directory that was there before stays, and so does what is in it.
    const char *keep = path_join("%s/keep", sandbox);
    ck_assert_int_eq(mkdir(keep, 0777), 0);
    ck_assert(save_file(path_join("%s/mine.npy", keep), "mine", 4));
    RunResult r = run_in(sandbox, (const char *[]){"--dump", "keep/new", "--dot",
                                                   "keep/new/none/g.dot", NULL});
    assert_one_line_refusal(r, PREFIX "--dot cannot write 'keep/new/none/g.dot'", "keep/new");
    ck_assert_int_eq(count_entries(sandbox), 1);
    ck_assert_int_eq(count_entries(keep), 1);
    ck_assert_str_eq(read_text(path_join("%s/mine.npy", keep)), "mine");
    remove_tree(sandbox);
}
END_TEST

// --- places that take no file: refused up front, with the reason -------------------------

START_TEST(test_unwritable_places) {
    const char *sandbox = make_temp_dir();
    Places places = make_places();
    // Both used to be found only after the whole run (exit 1), --dot with no reason.
    if (places.read_only != NULL) {
        const char *ro = places.read_only;
        assert_refused(sandbox, (const char *[]){"--dump", ro, NULL},
                       path_join("--dump cannot write in '%s': ", ro));
        const char *dot = path_join("%s/attn-test.dot", ro);
        assert_refused(sandbox, (const char *[]){"--dot", dot, NULL},
                       path_join("--dot cannot write '%s': ", dot));
    } else {
        note_skipped("no directory here refuses a new file (root, and /sys and /proc take "
                     "one): not tried");
    }
    assert_refused(sandbox, (const char *[]){"--dot", places.fifo, NULL},
                   path_join("--dot: '%s' is not a regular file; give a regular file or a new "
                             "name", places.fifo));
    const char *under_file = path_join("%s/attn-test/out", places.file);
    assert_refused(sandbox, (const char *[]){"--dump", under_file, NULL},
                   path_join("--dump cannot create the directory '%s/attn-test': Not a "
                             "directory", places.file));
    assert_refused(sandbox, (const char *[]){"--dump", places.file, NULL},
                   path_join("--dump: '%s' is not a directory", places.file));
    const char *dot_under_file = path_join("%s/g.dot", places.file);
    assert_refused(sandbox, (const char *[]){"--dot", dot_under_file, NULL},
                   path_join("--dot cannot write '%s': no directory '%s'", dot_under_file,
                             places.file));
    assert_refused(sandbox, (const char *[]){"--dot", "/dev/null", NULL},
                   "--dot: '/dev/null' is not a regular file; give a regular file or a new name");
    assert_refused(sandbox, (const char *[]){"--dot", "/", NULL},
                   "--dot: '/' ends in '/'; give a file name");
    assert_refused(sandbox, (const char *[]){"--dot", ".", NULL},
                   "--dot: '.' is a directory; give a regular file or a new name");
    assert_refused(sandbox, (const char *[]){"--dot", "new/", NULL},
                   "--dot: 'new/' ends in '/'; give a file name");
    remove_tree(sandbox);
    remove_places(places);
}
END_TEST

// --- --dot and --dump together ----------------------------------------------------------------

START_TEST(test_dot_and_dump_together) {
    const char *sandbox = make_temp_dir();
    // The same name twice: used to run, then fail at the end.
    assert_refused(sandbox, (const char *[]){"--dot", "dd", "--dump", "dd", NULL},
                   "--dot and --dump both name 'dd'");
    assert_refused(sandbox, (const char *[]){"--dot", "./dd", "--dump", "dd/", NULL},
                   "--dot and --dump both name './dd'");
    const char *absolute = path_join("%s/dd", sandbox);   // the same, spelled another way
    assert_refused(sandbox, (const char *[]){"--dot", absolute, "--dump", "dd", NULL},
                   path_join("--dot: '%s' is a directory that --dump makes; give a file name",
                             absolute));

    // A graph inside the directory --dump makes: used to be refused.
    RunResult r = run_in(sandbox, (const char *[]){"--dot", "dd/g.dot", "--dump", "dd", NULL});
    ck_assert_msg(r.status == 0 && r.err[0] == '\0', "exit %d: %s", r.status, r.err);
    const char *graph = read_text(path_join("%s/dd/g.dot", sandbox));
    ck_assert_msg(strstr(graph, "digraph dataflow {\n") != NULL, "not a graph: %s", graph);
    ck_assert_int_eq(count_entries(path_join("%s/dd", sandbox)), 13 + 1);
    ck_assert_str_eq(size_x_str(load_npy(path_join("%s/dd/X.npy", sandbox))), "3x2x4");
    // Written files get the usual permissions, not mkstemp's private 0600.
    mode_t mask = umask(0);
    umask(mask);
    struct stat info;
    ck_assert_int_eq(stat(path_join("%s/dd/X.npy", sandbox), &info), 0);
    ck_assert_int_eq(info.st_mode & 0777, 0666 & ~mask);

    r = run_in(sandbox, (const char *[]){"--dot", path_join("%s/d2/g.dot", sandbox), "--dump",
                                         "./d2/", NULL});
    ck_assert_msg(r.status == 0 && r.err[0] == '\0', "exit %d: %s", r.status, r.err);
    ck_assert_int_eq(count_entries(path_join("%s/d2", sandbox)), 13 + 1);
    remove_tree(sandbox);
}
END_TEST

// --- --dot onto a link, a FIFO, a directory ---------------------------------------------

START_TEST(test_dot_onto_links_and_fifos) {
    const char *sandbox = make_temp_dir();
    const char *link = path_join("%s/link", sandbox);
    const char *target = path_join("%s/target", sandbox);
    ck_assert_int_eq(symlink("target", link), 0);   // dangling: target does not exist
    RunResult r = run_in(sandbox, (const char *[]){"--dot", "link", NULL});
    // This used to delete the link and create the target.
    assert_one_line_refusal(r, PREFIX "--dot: 'link' is a symbolic link; give a regular file "
                            "or a new name", "dangling link");
    char points_to[64] = {0};
    ck_assert_int_eq(readlink(link, points_to, sizeof points_to - 1), 6);
    ck_assert_str_eq(points_to, "target");
    ck_assert_int_eq(access(target, F_OK), -1);

    ck_assert(save_file(target, "keep", 4));        // now the link leads to a file
    r = run_in(sandbox, (const char *[]){"--dot", "link", NULL});
    assert_one_line_refusal(r, PREFIX "--dot: 'link' is a symbolic link", "link to a file");
    ck_assert_str_eq(read_text(target), "keep");
    ck_assert_int_eq(count_entries(sandbox), 2);

    // Opening a FIFO to write blocks until someone reads: this used to hang
    // for ever. run_program_with stops it after 20 seconds (RUN_TIMED_OUT).
    const char *fifo = path_join("%s/fifo", sandbox);
    ck_assert_int_eq(mkfifo(fifo, 0666), 0);
    r = run_program_with(sandbox, 20, lesson_binary(LESSON), (const char *[]){"--dot", "fifo",
                                                                             NULL});
    ck_assert_msg(r.status != RUN_TIMED_OUT, "--dot onto a FIFO blocked");
    assert_one_line_refusal(r, PREFIX "--dot: 'fifo' is not a regular file; give a regular "
                            "file or a new name", "FIFO");
    ck_assert(is_fifo(fifo));

    ck_assert_int_eq(mkdir(path_join("%s/dir", sandbox), 0777), 0);
    r = run_in(sandbox, (const char *[]){"--dot", "dir", NULL});
    assert_one_line_refusal(r, PREFIX "--dot: 'dir' is a directory; give a regular file or a "
                            "new name", "directory");
    ck_assert_int_eq(count_entries(path_join("%s/dir", sandbox)), 0);
    remove_tree(sandbox);
}
END_TEST

// --- echoed arguments stay on one line -------------------------------------------------------

START_TEST(test_arguments_echoed_on_one_line) {
    const char *sandbox = make_temp_dir();
    assert_refused(sandbox, (const char *[]){"--bogus\nx", NULL},
                   "unknown flag '--bogus\\nx' (try --help)");
    assert_refused(sandbox, (const char *[]){"--dim", "4\n", NULL},
                   "--dim expects a whole number from 1 to 65536, got '4\\n'");
    assert_refused(sandbox, (const char *[]){"--seed", "1\r\n\t2\x7f", NULL},
                   "--seed expects an integer from -2^63 to 2^64-1, got '1\\x0d\\n\\t2\\x7f'");
    Places places = make_places();
    assert_refused(sandbox, (const char *[]){"--dump", path_join("%s/a\nb", places.file), NULL},
                   path_join("--dump cannot create the directory '%s/a\\nb': ", places.file));
    remove_places(places);
    assert_refused(sandbox, (const char *[]){"--dot", "no\ndir/g.dot", NULL},
                   "--dot cannot write 'no\\ndir/g.dot': no directory 'no\\ndir'");
    // At most 60 bytes are echoed, and a UTF-8 character is never cut in two:
    // "---" and 28 two-byte characters make 59 bytes; the 29th would pass 60.
    const char *accents = "éééééééééééééééééééééééééééééééééééééééé";   // 40
    assert_refused(sandbox, (const char *[]){path_join("---%s", accents), NULL},
                   path_join("unknown flag '---%.56s...' (try --help)", accents));
    assert_refused(sandbox, (const char *[]){path_join("--%s", repeated('x', 5000)), NULL},
                   path_join("unknown flag '--%s...' (try --help)", repeated('x', 58)));
    remove_tree(sandbox);
}
END_TEST

// --- a write that fails half way leaves nothing -----------------------------------------------

START_TEST(test_failed_write_leaves_nothing) {
    const char *sandbox = make_temp_dir();
    char here[1024];
    ck_assert(getcwd(here, sizeof here) != NULL);
    const char *lesson = path_join("%s/%s", here, lesson_binary(LESSON));
    // A file size limit of 32 KiB (64 blocks of 512 bytes) lets the lesson
    // print and write its small weights, and makes X.npy (--batch 65536: 2
    // MiB) fail half way with EFBIG. SIGXFSZ is ignored so write() returns
    // the error instead of killing the lesson.
    const char *limit = "ulimit -f 64 && trap '' XFSZ && exec \"$0\" \"$@\"";
    const char *const args[] = {"-c", limit, lesson, "--batch", "65536", "--dump", "d", "--dot",
                                "g.dot", NULL};
    RunResult r = run_program_with(sandbox, 60, "/bin/sh", args);
    ck_assert_msg(r.status == 1, "exit %d, expected 1: %s", r.status, r.err);
    ck_assert_str_eq(r.err, path_join("error: --dump: cannot write 'd/X.npy': %s\n",
                                      strerror(EFBIG)));
    ck_assert_msg(r.out[0] != '\0', "the lesson printed nothing before it wrote its files");
    // No half-written X.npy, no temporary file, none of the dumps written
    // before X, no graph, and not the directory the run made.
    ck_assert_msg(count_entries(sandbox) == 0, "the failed run left files in %s", sandbox);

    // A directory that was there before stays (empty).
    ck_assert_int_eq(mkdir(path_join("%s/d", sandbox), 0777), 0);
    r = run_program_with(sandbox, 60, "/bin/sh", args);
    ck_assert_int_eq(r.status, 1);
    ck_assert_int_eq(count_entries(sandbox), 1);
    ck_assert_int_eq(count_entries(path_join("%s/d", sandbox)), 0);
    remove_tree(sandbox);
}
END_TEST

// --- a failed or interrupted dump leaves the last good one -----------------------------------

// What a directory holds: each entry's name, size and a hash of its bytes,
// sorted by name, one a line (an arena string). Two listings are equal
// when the directory holds the same files with the same contents.
static const char *listing(const char *dir) {
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot read %s", dir);
    const char *names[256];
    int n = 0;
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL) {
        if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0) {
            ck_assert(n < 256);
            names[n++] = path_join("%s", entry->d_name);
        }
    }
    closedir(d);
    for (int i = 1; i < n; i++) {   // insertion sort: a few dozen names
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *swap = names[j];
            names[j] = names[j - 1];
            names[j - 1] = swap;
        }
    }
    const char *text = "";
    for (int i = 0; i < n; i++) {
        const char *path = path_join("%s/%s", dir, names[i]);
        struct stat info;
        ck_assert_int_eq(lstat(path, &info), 0);
        uint64_t hash = FNV1A_START;   // of the bytes
        if (S_ISREG(info.st_mode)) {
            int fd = open(path, O_RDONLY);
            ck_assert(fd >= 0);
            unsigned char buffer[65536];
            ssize_t got;
            while ((got = read(fd, buffer, sizeof buffer)) > 0) {
                hash = fnv1a(hash, buffer, (size_t)got);
            }
            close(fd);
        }
        text = path_join("%s%s %s %lld %016llx\n", text, names[i],
                         S_ISDIR(info.st_mode) ? "dir" : "file", (long long)info.st_size,
                         (unsigned long long)hash);
    }
    return text;
}

// A previous run's dump in dd; then a run whose output cannot all be
// written (K.npy is now a directory with a file in it) fails, and every
// file of the previous dump is still there, unchanged.
START_TEST(test_failed_dump_keeps_the_previous_one) {
    const char *sandbox = make_temp_dir();
    RunResult r = run_in(sandbox, (const char *[]){"--dump", "dd", NULL});
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    const char *dd = path_join("%s/dd", sandbox);
    ck_assert_int_eq(unlink(path_join("%s/K.npy", dd)), 0);
    ck_assert_int_eq(mkdir(path_join("%s/K.npy", dd), 0777), 0);
    ck_assert(save_file(path_join("%s/K.npy/x", dd), "x", 1));
    const char *before = listing(dd);

    r = run_in(sandbox, (const char *[]){"--seed", "1", "--dump", "dd", "--dot", "g.dot", NULL});
    ck_assert_msg(r.status == 1, "exit %d, expected 1: %s", r.status, r.err);
    ck_assert_str_eq(r.err, "error: --dump: cannot write 'dd/K.npy': Is a directory\n");
    // This used to leave only the files named before K: X, the weights, Q.
    ck_assert_str_eq(listing(dd), before);
    ck_assert_int_eq(count_entries(sandbox), 1);   // no g.dot either
    remove_tree(sandbox);
}
END_TEST

// Run the lesson with tests/rename_fault.c loaded (LD_PRELOAD) and its environment
// variable `variable` set to `value`. (The sanitizers' runtime, which the lessons of `make
// sanitize` have, must come first among the libraries a program loads unless told not to
// check.)
static RunResult run_with_fault(const char *sandbox, const char *const *args,
                                const char *variable, const char *value) {
    const char *asan = getenv("ASAN_OPTIONS");
    char *asan_before = asan != NULL ? strcpy(arena_alloc(strlen(asan) + 1, 1), asan) : NULL;
    char *library = realpath(BUILD_DIR "/tests/rename_fault.so", NULL);   // the lesson's
    ck_assert_msg(library != NULL, "no " BUILD_DIR "/tests/rename_fault.so");   // cwd is sandbox
    setenv("LD_PRELOAD", library, 1);
    free(library);
    setenv(variable, value, 1);
    setenv("ASAN_OPTIONS", path_join("%s%sverify_asan_link_order=0", asan != NULL ? asan : "",
                                      asan != NULL && asan[0] != '\0' ? ":" : ""), 1);
    RunResult r = run_in(sandbox, args);
    unsetenv("LD_PRELOAD");
    unsetenv(variable);
    if (asan_before != NULL) {
        setenv("ASAN_OPTIONS", asan_before, 1);
    } else {
        unsetenv("ASAN_OPTIONS");
    }
    return r;
}

// The move of the new file onto a path ending in `fails` fails (EIO), after the files
// before it were moved into place.
static RunResult run_with_failing_rename(const char *sandbox, const char *const *args,
                                         const char *fails) {
    return run_with_fault(sandbox, args, "ATTN_TEST_RENAME_FAILS", fails);
}

START_TEST(test_failed_rename_puts_back_what_it_replaced) {
    const char *sandbox = make_temp_dir();
    const char *const again[] = {"--seed", "1", "--dump", "dd", "--dot", "g.dot", NULL};
    RunResult r = run_with_failing_rename(sandbox, again, "dd/Q.npy");
    ck_assert_msg(r.status == 1, "exit %d, expected 1: %s", r.status, r.err);
    ck_assert_str_eq(r.err, "error: --dump: cannot write 'dd/Q.npy': Input/output error\n");
    ck_assert_msg(count_entries(sandbox) == 0, "a first run that failed left:\n%s",
                  listing(sandbox));

    r = run_in(sandbox, (const char *[]){"--dump", "dd", "--dot", "g.dot", NULL});
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    const char *dd = path_join("%s/dd", sandbox);
    const char *before = listing(dd), *before_all = listing(sandbox);
    r = run_with_failing_rename(sandbox, again, "dd/Q.npy");
    ck_assert_msg(r.status == 1, "exit %d, expected 1: %s", r.status, r.err);
    ck_assert_str_eq(r.err, "error: --dump: cannot write 'dd/Q.npy': Input/output error\n");
    ck_assert_str_eq(listing(dd), before);
    ck_assert_str_eq(listing(sandbox), before_all);   // g.dot as it was
    // The same run without the failure replaces them all: the failure was the only reason.
    r = run_in(sandbox, again);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strcmp(listing(dd), before) != 0, "--seed 1 wrote the same dump");
    remove_tree(sandbox);
}
END_TEST

// The same on a full disk: a 1 MiB tmpfs (where one can be mounted: root on
// Linux; skipped, saying so, elsewhere) takes the default dump, not the
// one of --seq 512 (two (1, 512, 512) tensors of 1 MiB each).
START_TEST(test_full_disk_keeps_the_previous_dump) {
#ifdef __linux__
    const char *sandbox = make_temp_dir();
    const char *disk = path_join("%s/disk", sandbox);
    ck_assert_int_eq(mkdir(disk, 0777), 0);
    if (mount("tmpfs", disk, "tmpfs", 0, "size=1m") != 0) {
        int error = errno;
        remove_tree(sandbox);
        skip_test("no tmpfs could be mounted here (%s): root on Linux can", strerror(error));
    }
    RunResult r = run_in(disk, (const char *[]){"--dump", "d", NULL});
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    const char *before = listing(path_join("%s/d", disk));
    r = run_in(disk, (const char *[]){"--seed", "1", "--batch", "1", "--seq", "512", "--dim", "1",
                                      "--dump", "d", NULL});
    const char *after = listing(path_join("%s/d", disk));
    int entries = count_entries(disk);
    umount2(disk, MNT_DETACH);
    ck_assert_msg(r.status == 1, "exit %d, expected 1: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, strerror(ENOSPC)) != NULL, "not a full disk: %s", r.err);
    ck_assert_str_eq(after, before);
    ck_assert_int_eq(entries, 1);
    remove_tree(sandbox);
#else
    skip_test("it needs Linux's tmpfs");
#endif
}
END_TEST

// The lesson gets `signal_number` at the n-th call of `call` (tests/rename_fault.c).
static RunResult run_with_signal(const char *sandbox, const char *const *args,
                                 int signal_number, const char *call, int n) {
    return run_with_fault(sandbox, args, "ATTN_TEST_SIGNAL",
                          path_join("%d %s %d", signal_number, call, n));
}

// A sandbox holding a previous dump, dd/, with a file of the user's in it.
static const char *sandbox_with_a_dump(void) {
    const char *sandbox = make_temp_dir();
    RunResult r = run_in(sandbox, (const char *[]){"--dump", "dd", NULL});
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert(save_file(path_join("%s/dd/stale.txt", sandbox), "mine", 4));   // not the lesson's
    return sandbox;
}

// A run that writes its dump and graph over the previous ones (13 .npy files and g.dot:
// 14 files, each written with one write() and moved into place with one rename()), stopped
// by SIGINT or SIGTERM at a moment tests/rename_fault.c chooses, every time at the same
// point: while it computes (at its first puts), while a file is written under its
// temporary name (the first, the second, the last), or while the files are moved into
// place (the first, the last). Before the moves, the directory must be exactly as it was,
// with no temporary file left; during them, the signals are held back until every file is
// in place, so it holds the whole new dump, as the same run without a signal leaves it.
// Either way the lesson dies of the signal. (This test used to send the signal when it saw
// a temporary file appear, polling the directory with a core at full speed, and to retry
// when the lesson finished first.)
START_TEST(test_signals_keep_the_previous_dump) {
    const char *const again[] = {"--seed", "3", "--dump", "dd", "--dot", "dd/g.dot", NULL};
    const char *sandbox = sandbox_with_a_dump();
    const char *dd = path_join("%s/dd", sandbox);
    const char *before = listing(dd);
    const char *finished = sandbox_with_a_dump();
    RunResult r = run_in(finished, again);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    const char *new_dump = listing(path_join("%s/dd", finished));
    ck_assert_msg(strcmp(new_dump, before) != 0, "--seed 3 wrote the same dump");
    remove_tree(finished);
    // The counts the moments rely on: the 15th write and rename come after the run's last.
    const char *const calls[2] = {"write", "rename"};
    for (int c = 0; c < 2; c++) {
        const char *other = sandbox_with_a_dump();
        r = run_with_signal(other, again, SIGTERM, calls[c], 15);
        ck_assert_msg(r.status == 0, "a signal at %s 15: exit %d, so %s was called 15 times",
                      calls[c], r.status, calls[c]);
        ck_assert_str_eq(listing(path_join("%s/dd", other)), new_dump);
        remove_tree(other);
    }
    const int signals[] = {SIGINT, SIGTERM};
    const struct {
        const char *call;
        int n;
    } moments[] = {{"puts", 1}, {"write", 1}, {"write", 2}, {"write", 14}, {"rename", 1},
                   {"rename", 14}};
    for (int s = 0; s < 2; s++) {
        for (size_t m = 0; m < sizeof moments / sizeof moments[0]; m++) {
            bool moving = strcmp(moments[m].call, "rename") == 0;
            const char *where = moving ? sandbox_with_a_dump() : sandbox;
            r = run_with_signal(where, again, signals[s], moments[m].call, moments[m].n);
            ck_assert_msg(r.status == 128 + signals[s], "signal %d at %s %d: exit %d, %s",
                          signals[s], moments[m].call, moments[m].n, r.status, r.err);
            ck_assert_str_eq(listing(path_join("%s/dd", where)), moving ? new_dump : before);
            if (moving) {
                remove_tree(where);
            }
        }
    }
    // A directory --dump made goes again, and the ones it was made in.
    r = run_with_signal(sandbox, (const char *[]){"--dump", "new/deeper", NULL}, SIGINT,
                        "write", 1);
    ck_assert_int_eq(r.status, 128 + SIGINT);
    ck_assert_int_eq(access(path_join("%s/new", sandbox), F_OK), -1);
    ck_assert_int_eq(count_entries(sandbox), 1);   // dd alone
    remove_tree(sandbox);
}
END_TEST

// --- lesson 16's --save and --svg: in the same transaction --------------------------------

// A small lesson 16 run with --save ck, --svg m.svg and --dump dd (the seed and `more`
// after them), in the sandbox: the checkpoint's 21 files, the image and the dump's are one
// transaction.
static const char *const *run16_args(const char *seed) {
    static const char *args[20];
    const char *const small[] = {"--dim", "8", "--heads", "2", "--kv-heads", "1", "--seq", "4",
                                 "--steps", "2", "--save", "ck", "--svg", "m.svg", "--dump",
                                 "dd", "--seed", seed, NULL};
    for (int i = 0; i < 19; i++) {
        args[i] = small[i];
    }
    return args;
}

// What the outputs are: how many entries the sandbox has, its two directories' files,
// the image's bytes. (Not a directory's size, which the file system may keep grown after temporary
// files came and went.)
static const char *outputs16(const char *sandbox) {
    const char *svg = path_join("%s/m.svg", sandbox);
    uint64_t image = access(svg, F_OK) == 0 ? fnv1a(FNV1A_START, read_text(svg),
                                                    strlen(read_text(svg))) : 0;
    return path_join("%d entries\n%s--\n%s--\nm.svg %016llx\n", count_entries(sandbox),
                     listing(path_join("%s/ck", sandbox)), listing(path_join("%s/dd", sandbox)),
                     (unsigned long long)image);
}

// A sandbox holding a first run's outputs.
static const char *sandbox16(void) {
    const char *sandbox = make_temp_dir();
    RunResult r = run_in(sandbox, run16_args("0"));
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    return sandbox;
}

// A rename that fails (EIO) half way through: every output as it was, whichever flag's
// file it hit. --save used to leave a checkpoint mixed from two runs (the files renamed
// before the failure new, the others old), and to be kept when --svg or --dump failed
// after it.
START_TEST(test_save_and_svg_roll_back_with_the_dump) {
    lesson_run = "16-train";
    const char *sandbox = sandbox16();
    const char *before = outputs16(sandbox);
    const char *const fails[][2] = {
        {"ck/layers.0.mlp.up_proj.weight.npy",
         "error: --save: cannot write 'ck/layers.0.mlp.up_proj.weight.npy': "},
        {"m.svg", "error: --svg: cannot write 'm.svg': "},
        {"dd/logits.npy", "error: --dump: cannot write 'dd/logits.npy': "},
    };
    for (int i = 0; i < 3; i++) {
        RunResult r = run_with_failing_rename(sandbox, run16_args("1"), fails[i][0]);
        ck_assert_msg(r.status == 1, "%s: exit %d: %s", fails[i][0], r.status, r.err);
        ck_assert_str_eq(r.err, path_join("%sInput/output error\n", fails[i][1]));
        ck_assert_str_eq(outputs16(sandbox), before);
    }
    RunResult r = run_in(sandbox, run16_args("1"));   // without the failure: all replaced
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strcmp(outputs16(sandbox), before) != 0, "--seed 1 wrote the same outputs");
    remove_tree(sandbox);
    lesson_run = LESSON;
}
END_TEST

// SIGINT or SIGTERM while the outputs are written under their temporary names: all as
// before, no temporary file left (--save left *.npy.saving files, --svg m.svg.tmp-*);
// while they are moved into place: held back until all are in, the whole new output. The
// moments: while it computes, the last write; the first rename (a dump's), the first of
// --save's, --svg's (the last); make test-long: every write and every rename.
START_TEST(test_signals_during_save_and_svg) {
    lesson_run = "16-train";
    const char *sandbox = sandbox16();
    const char *before = outputs16(sandbox);
    const char *finished = sandbox16();
    RunResult r = run_in(finished, run16_args("1"));
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    const char *after = outputs16(finished);
    int files = count_entries(path_join("%s/dd", finished)) + 21 + 1;   // dump, ck, m.svg
    remove_tree(finished);
    const char *calls[] = {"puts", "write", "rename", "rename", "rename"};
    int at[] = {1, files, 1, files - 21, files};
    int n_moments = 5;
    if (long_tests()) {
        n_moments = 2 * files;
    }
    for (int m = 0; m < n_moments; m++) {
        const char *call = long_tests() ? (m < files ? "write" : "rename") : calls[m];
        int n = long_tests() ? m % files + 1 : at[m];
        int signal_number = m % 2 == 0 ? SIGTERM : SIGINT;
        bool moving = strcmp(call, "rename") == 0;
        const char *where = moving ? sandbox16() : sandbox;
        r = run_with_signal(where, run16_args("1"), signal_number, call, n);
        ck_assert_msg(r.status == 128 + signal_number, "signal %d at %s %d: exit %d, %s",
                      signal_number, call, n, r.status, r.err);
        ck_assert_msg(strcmp(outputs16(where), moving ? after : before) == 0,
                      "signal at %s %d:\n%s", call, n, outputs16(where));
        if (moving) {
            remove_tree(where);
        }
    }
    remove_tree(sandbox);
    lesson_run = LESSON;
}
END_TEST

// --dot onto a .npy name in --dump's directory: --dump would overwrite it.
START_TEST(test_dot_onto_a_dump_file) {
    const char *sandbox = make_temp_dir();
    // This used to exit 0 with dd/X.npy holding Graphviz text.
    assert_refused(sandbox, (const char *[]){"--dump", "dd", "--dot", "dd/X.npy", NULL},
                   "--dot 'dd/X.npy' is a .npy name in --dump's directory, where --dump writes "
                   "its <name>.npy files; give the graph another name");
    const char *absolute = path_join("%s/dd/../dd/query.npy", sandbox);
    assert_refused(sandbox, (const char *[]){"--dot", absolute, "--dump", "./dd/", NULL},
                   path_join("--dot '%s' is a .npy name in --dump's directory, where --dump "
                             "writes its <name>.npy files; give the graph another name",
                             absolute));
    // A .npy graph elsewhere, or another name in the directory, is fine.
    RunResult r = run_in(sandbox, (const char *[]){"--dump", "dd", "--dot", "graph.npy", NULL});
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(read_text(path_join("%s/graph.npy", sandbox)), "digraph"));
    remove_tree(sandbox);
}
END_TEST

// --- save_file itself ---------------------------------------------------------------------------

START_TEST(test_save_file) {
    const char *sandbox = make_temp_dir();
    const char *file = path_join("%s/f.npy", sandbox);
    ck_assert(save_file(file, "abc", 3));
    ck_assert_str_eq(read_text(file), "abc");
    ck_assert(save_file(file, "defg", 4));          // replaces it
    ck_assert_str_eq(read_text(file), "defg");
    ck_assert_int_eq(count_entries(sandbox), 1);    // no temporary file left
    ck_assert(unlink(file) == 0);

    // Into a directory that has been removed.
    const char *gone = path_join("%s/gone", sandbox);
    ck_assert_int_eq(mkdir(gone, 0777), 0);
    ck_assert_int_eq(rmdir(gone), 0);
    errno = 0;
    ck_assert(!save_file(path_join("%s/f.npy", gone), "abc", 3));
    ck_assert_int_eq(errno, ENOENT);
    // Onto a directory: the rename fails, the temporary file goes.
    ck_assert_int_eq(mkdir(gone, 0777), 0);
    errno = 0;
    ck_assert(!save_file(gone, "abc", 3));
    ck_assert_int_eq(errno, EISDIR);
    ck_assert_int_eq(count_entries(sandbox), 1);
    ck_assert_int_eq(count_entries(gone), 0);
    ck_assert_int_eq(rmdir(gone), 0);
    // A name longer than NAME_MAX.
    errno = 0;
    ck_assert(!save_file(path_join("%s/%s", sandbox, repeated('n', 300)), "abc", 3));
    ck_assert_int_eq(errno, ENAMETOOLONG);
    // Where no one may make a file: under a regular file (ENOTDIR), and in a
    // read-only directory. What is there is untouched.
    Places places = make_places();
    errno = 0;
    ck_assert(!save_file(path_join("%s/child", places.file), "abc", 3));
    ck_assert_int_eq(errno, ENOTDIR);
    ck_assert_str_eq(read_text(places.file), "x");
    if (places.read_only != NULL) {
        errno = 0;
        ck_assert(!save_file(path_join("%s/attn-test.npy", places.read_only), "abc", 3));
        ck_assert_msg(errno != 0, "save_file failed without saying why");
    } else {
        note_skipped("no directory here refuses a new file (root, and /sys and /proc take "
                     "one): not tried");
    }
    remove_places(places);

    // A write that fails half way (the file size limit, EFBIG): nothing is
    // left, neither the file nor its temporary name.
    struct rlimit saved;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &saved), 0);
    struct rlimit small = {64 * 1024, saved.rlim_max};
    void (*saved_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    size_t length = 1 << 20;
    char *big = arena_alloc(length, 1);
    errno = 0;
    bool saved_big = save_file(file, big, length);
    int error = errno;
    bool saved_npy = npy_write(file, zeros(shape2(512, 512)));   // 1 MiB of floats
    int npy_error = errno;
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, saved_handler);
    ck_assert(!saved_big);
    ck_assert_int_eq(error, EFBIG);
    ck_assert(!saved_npy);
    ck_assert_int_eq(npy_error, EFBIG);
    ck_assert_int_eq(count_entries(sandbox), 0);
    remove_tree(sandbox);
}
END_TEST

// --- the --dot text stays valid whatever the names --------------------------------------------

START_TEST(test_dot_labels_escaped) {
    graph_clear();
    trace_set_hook(graph_record);
    const Tensor *x = named("say \"hi\" \\ twice\nnow\x01", zeros(shape1(2)));
    trace("a\"b\\c", zeros(shape1(2)), 1, &x, 0, NULL);
    trace_set_hook(NULL);
    TextStream text;
    graph_write(text_stream_open(&text), "a title\non two lines");
    const char *copy = text_stream_close(&text);
    graph_clear();
    // Quotes and backslashes escaped, the newline as dot's \n, the control
    // character dropped; the title stays one comment line.
    ck_assert_msg(strstr(copy, "// a title\\non two lines\n") == copy, "title: %s", copy);
    const char *escaped = "  t0 [label=\"say \\\"hi\\\" \\\\ twice\\nnow\\n(2,)\"];\n";
    ck_assert_msg(strstr(copy, escaped) != NULL, "node label not escaped: %s", copy);
    ck_assert_msg(strstr(copy, "  t0 -> t1 [label=\"a\\\"b\\\\c\"];\n") != NULL,
                  "edge label not escaped: %s", copy);
}
END_TEST

static Suite *outputs_suite(void) {
    Suite *suite = suite_create("outputs");
    TCase *refused = new_tcase("refused up front");
    tcase_add_test(refused, test_long_paths);
    tcase_add_test(refused, test_refused_after_mkdir_removes_it);
    tcase_add_test(refused, test_unwritable_places);
    tcase_add_test(refused, test_dot_onto_links_and_fifos);
    tcase_add_test(refused, test_arguments_echoed_on_one_line);
    tcase_add_test(refused, test_dot_onto_a_dump_file);
    suite_add_tcase(suite, refused);
    TCase *written = new_tcase("written all or nothing");
    tcase_add_test(written, test_dot_and_dump_together);
    tcase_add_test(written, test_failed_write_leaves_nothing);
    tcase_add_test(written, test_failed_dump_keeps_the_previous_one);
    tcase_add_test(written, test_failed_rename_puts_back_what_it_replaced);
    tcase_add_test(written, test_full_disk_keeps_the_previous_dump);
    tcase_add_test(written, test_signals_keep_the_previous_dump);
    tcase_add_test(written, test_save_file);
    tcase_add_test(written, test_dot_labels_escaped);
    tcase_add_test(written, test_save_and_svg_roll_back_with_the_dump);
    tcase_add_test(written, test_signals_during_save_and_svg);
    suite_add_tcase(suite, written);
    return suite;
}

int main(void) { return run_suite(outputs_suite()); }
