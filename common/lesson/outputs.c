// outputs.c - the files a run leaves: --dump's .npy files, --dot's graph,
// and a lesson's own (lesson 16's --save checkpoint and --svg image).
//
// All are checked before any work (prepare_outputs: a path that cannot be
// written, or that names what another output or an input names, is refused with
// exit 2, like a bad flag), kept while the lesson runs (keep_dump takes each
// named tensor's bytes as it is named, keep_output a lesson's file), and
// written at the end as one transaction (write_outputs): every file under a
// temporary name first, then all renamed into place, so a run's output lands
// whole or not at all. A run that fails, is refused, or is stopped by SIGINT,
// SIGTERM, SIGHUP or SIGPIPE (Ctrl-C, kill, a closed terminal or pipe) removes
// what it made - its temporary files and the directories --dump (or --save)
// created - and leaves what was there before as it was.
#define _XOPEN_SOURCE 700   // realpath(), beside POSIX 2008
#include "lesson/outputs.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/arena.h"
#include "core/error.h"
#include "lesson/files.h"
#include "lesson/graph.h"
#include "lesson/npy.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif
#ifndef NAME_MAX
#define NAME_MAX 255
#endif

// --- what this run made, and removing it ------------------------------------------------

// What this run has made on disk and must remove unless it finishes: the
// directories --dump created (innermost last) and, while write_outputs
// runs, the temporary files it writes. A signal handler reads these lists
// at any moment, so they only change with the signals blocked, and the
// handler does nothing but unlink() and rmdir() the names in them (both
// safe in a handler) before the program dies of the signal.
static const char *made_dirs[PATH_MAX / 2];   // more than a path of PATH_MAX can name
static volatile sig_atomic_t n_made_dirs = 0;
static char **temporaries = NULL;             // n_outputs + 1 places (write_outputs)
static volatile sig_atomic_t n_temporaries = 0;

static const int CAUGHT[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
#define N_CAUGHT ((int)(sizeof CAUGHT / sizeof CAUGHT[0]))

// Hold the caught signals back (they wait, pending) while a list changes
// or the dump is renamed into place; *saved keeps the mask to restore.
static void block_signals(sigset_t *saved) {
    sigset_t blocked;
    sigemptyset(&blocked);
    for (int i = 0; i < N_CAUGHT; i++) {
        sigaddset(&blocked, CAUGHT[i]);
    }
    sigprocmask(SIG_BLOCK, &blocked, saved);
}

static void restore_signals(const sigset_t *saved) {
    sigprocmask(SIG_SETMASK, saved, NULL);
}

// Remove the temporary files and the directories this run made. Only
// unlink() and rmdir(): a signal handler calls it. rmdir() fails, leaving
// the directory, if something else is in it by now.
static void remove_unfinished(void) {
    for (int i = 0; i < n_temporaries; i++) {
        unlink(temporaries[i]);
    }
    for (int i = n_made_dirs - 1; i >= 0; i--) {
        rmdir(made_dirs[i]);
    }
}

void remove_unfinished_outputs(void) {
    remove_unfinished();
}

void undo_outputs(void) {
    sigset_t saved;
    block_signals(&saved);
    remove_unfinished();
    n_temporaries = 0;
    n_made_dirs = 0;
    restore_signals(&saved);
}

// SIGINT and the others: clean up, then die of the signal as if it had
// not been caught (the shell that started the lesson sees why it ended).
// The handler runs with the other caught signals blocked, so it runs once.
static void on_signal(int signal_number) {
    remove_unfinished();
    struct sigaction by_default;
    memset(&by_default, 0, sizeof by_default);
    by_default.sa_handler = SIG_DFL;
    sigemptyset(&by_default.sa_mask);
    sigaction(signal_number, &by_default, NULL);
    raise(signal_number);   // pending until the handler returns, then fatal
}

// Catch the signals that would end the run, except one the lesson was
// started with ignored (nohup, a background job): that one stays ignored.
static void catch_signals(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < N_CAUGHT; i++) {
        sigaddset(&action.sa_mask, CAUGHT[i]);
    }
    for (int i = 0; i < N_CAUGHT; i++) {
        struct sigaction before;
        if (sigaction(CAUGHT[i], NULL, &before) == 0 && before.sa_handler != SIG_IGN) {
            sigaction(CAUGHT[i], &action, NULL);
        }
    }
}

// --- what the lesson declared: its own outputs, its inputs ----------------------------------

typedef struct {
    const char *flag;       // "--save"
    const char *path;       // as given
    OutputKind kind;
    const char *resolved;   // the path with "..", "//" and symbolic links resolved (arena)
} Place;

#define MAX_PLACES 8
static Place declared[MAX_PLACES];   // the lesson's own outputs and inputs, then --dump, --dot
static int n_declared = 0;

static void declare(const char *flag, const char *path, OutputKind kind) {
    if (n_declared == MAX_PLACES) {
        fail("declare_output: more than %d outputs and inputs", MAX_PLACES);
    }
    declared[n_declared++] = (Place){flag, path, kind, NULL};
}

void declare_output(const char *flag, const char *path, OutputKind kind) {
    declare(flag, path, kind);
}

void declare_input(const char *flag, const char *dir) {
    declare(flag, dir, INPUT_DIRECTORY);
}

// --- where the outputs write ------------------------------------------------------------

// The path without trailing slashes and without a leading "./", for
// comparing two spellings of the same relative path ("out/" and "./out").
static const char *plain_path(const char *path) {
    while (path[0] == '.' && path[1] == '/') {
        path += 2;
    }
    size_t length = strlen(path);
    while (length > 1 && path[length - 1] == '/') {
        length -= 1;
    }
    char *copy = arena_alloc(length + 1, 1);
    memcpy(copy, path, length);
    return copy;
}

// The directory part of a file path ("." for a bare name).
static const char *parent_of(const char *path) {
    const char *plain = plain_path(path);
    const char *slash = strrchr(plain, '/');
    if (slash == NULL) {
        return ".";
    }
    if (slash == plain) {
        return "/";
    }
    char *parent = arena_alloc((size_t)(slash - plain) + 1, 1);
    memcpy(parent, plain, (size_t)(slash - plain));
    return parent;
}

static bool is_directory(const char *path) {
    struct stat info;
    return stat(path, &info) == 0 && S_ISDIR(info.st_mode);
}

// Can a file be made in the directory? Try: make a temporary one (named
// as save_file names its own, so it is no longer than those), remove it.
// On false, errno says why.
static bool can_create_in(const char *dir) {
    char *probe = arena_alloc(strlen(dir) + 1 + sizeof SAVE_FILE_TEMPORARY, 1);
    sprintf(probe, "%s/%s", dir, SAVE_FILE_TEMPORARY);
    sigset_t saved;
    block_signals(&saved);   // no signal between making the probe and removing it
    int fd = mkstemp(probe);
    int error = errno;
    if (fd >= 0) {
        close(fd);
        unlink(probe);
    }
    restore_signals(&saved);
    errno = error;
    return fd >= 0;
}

// Refuse a path the system could not take once something is added to it:
// longer than PATH_MAX with `extra` more characters after it, or a name in
// it (between slashes) longer than NAME_MAX, or its last name longer than
// NAME_MAX with `last_extra` more characters.
static void check_path_length(const Lesson *lesson, const char *flag, const char *path,
                              size_t extra, size_t last_extra) {
    size_t length = strlen(path);
    if (length + extra >= PATH_MAX) {
        usage_error(lesson, "%s: the path is %zu characters long, more than the %zu allowed", flag,
                    length, (size_t)PATH_MAX - extra - 1);
    }
    const char *name = path;   // where the current name starts
    for (const char *c = path;; c++) {
        if (*c == '/' || *c == '\0') {
            size_t limit = *c == '\0' ? NAME_MAX - last_extra : NAME_MAX;
            if ((size_t)(c - name) > limit) {
                usage_error(lesson, "%s: a name in the path is %zu characters long, more than "
                            "the %zu allowed", flag, (size_t)(c - name), limit);
            }
            name = c + 1;
        }
        if (*c == '\0') {
            break;
        }
    }
}

// mkdir -p: make each missing directory on the path, then check that a
// file can be written in the last one. If not: exit 2 (and undo_outputs
// removes the directories made).
static void make_output_dir(const Lesson *lesson, const char *flag, const char *dir) {
    // Room after the directory for "/<name>.npy" and save_file's temporary name.
    check_path_length(lesson, flag, dir, 1 + NAME_MAX, 0);
    size_t length = strlen(dir);
    for (size_t i = 1; i <= length; i++) {
        if (dir[i] != '/' && dir[i] != '\0') {
            continue;
        }
        char *partial = arena_alloc(i + 1, 1);
        memcpy(partial, dir, i);
        sigset_t saved;
        block_signals(&saved);   // a signal now must see the directory in made_dirs
        int made = mkdir(partial, 0777);
        int error = errno;
        if (made == 0) {
            made_dirs[n_made_dirs] = partial;
            n_made_dirs += 1;
        }
        restore_signals(&saved);
        if (made != 0 && error != EEXIST) {
            if (!is_directory(partial)) {   // some systems say EACCES or EROFS for one that exists
                usage_error(lesson, "%s cannot create the directory '%s': %s", flag,
                            shown(partial), strerror(error));
            }
        }
    }
    if (!is_directory(dir)) {
        usage_error(lesson, "%s: '%s' is not a directory", flag, shown(dir));
    }
    if (!can_create_in(dir)) {
        int error = errno;
        usage_error(lesson, "%s cannot write in '%s': %s", flag, shown(dir), strerror(error));
    }
}

// A file output (--dot's graph, --svg's image) must be a regular file (replaced at the
// end) or a new name. Anything else is refused: a directory cannot be replaced by a file,
// a FIFO would block the write, a device would take the output elsewhere, and a symbolic
// link (dangling or not) would be replaced by a plain file, not written through. This
// check makes nothing, so it comes first.
static void check_output_file(const Lesson *lesson, const char *flag, const char *file) {
    // save_file writes "<file>.tmp-XXXXXX" first: that name must fit too.
    size_t temporary = strlen(SAVE_FILE_TEMPORARY);
    check_path_length(lesson, flag, file, temporary, temporary);
    if (file[0] == '\0') {
        usage_error(lesson, "%s: give a file name", flag);
    }
    if (file[strlen(file) - 1] == '/') {
        usage_error(lesson, "%s: '%s' ends in '/'; give a file name", flag, shown(file));
    }
    for (int i = 0; i < n_declared; i++) {   // a name a directory output would make
        if (declared[i].kind != OUTPUT_FILE &&
            strcmp(plain_path(file), plain_path(declared[i].path)) == 0) {
            usage_error(lesson, "%s and %s both name '%s'", flag, declared[i].flag, shown(file));
        }
    }
    struct stat info;
    if (lstat(file, &info) == 0 && !S_ISREG(info.st_mode)) {
        usage_error(lesson, "%s: '%s' is %s; give a regular file or a new name", flag,
                    shown(file), S_ISDIR(info.st_mode) ? "a directory"
                    : S_ISLNK(info.st_mode) ? "a symbolic link" : "not a regular file");
    }
}

// After the directory outputs are made: a file output's directory must exist now (it may
// be one they made) and take a new file, and they must not have made its path itself (one
// directory spelled two ways).
static void check_output_file_directory(const Lesson *lesson, const char *flag,
                                        const char *file) {
    const char *parent = parent_of(file);
    if (!is_directory(parent)) {
        usage_error(lesson, "%s cannot write '%s': no directory '%s'", flag, shown(file),
                    shown(parent));
    }
    if (!can_create_in(parent)) {
        int error = errno;
        usage_error(lesson, "%s cannot write '%s': %s", flag, shown(file), strerror(error));
    }
    struct stat info;
    if (lstat(file, &info) == 0 && !S_ISREG(info.st_mode)) {
        const char *maker = "--dump";
        for (int i = 0; i < n_declared; i++) {
            maker = declared[i].kind == OUTPUT_DIRECTORY ? declared[i].flag : maker;
        }
        usage_error(lesson, "%s: '%s' is a directory that %s makes; give a file name", flag,
                    shown(file), maker);
    }
}

// The last name of a path (after plain_path: no trailing '/').
static const char *last_name(const char *path) {
    const char *plain = plain_path(path);
    const char *slash = strrchr(plain, '/');
    return slash != NULL ? slash + 1 : plain;
}

// Where a place is once "..", "//" and symbolic links are resolved: a directory (made by
// now, or an input that exists) as realpath() gives it; a file as its directory's realpath
// and its own name (it may not exist yet, and it is not a link: check_output_file). NULL if
// it cannot be resolved.
static const char *resolved(const Place *place) {
    const char *dir = place->kind == OUTPUT_FILE ? parent_of(place->path) : place->path;
    char *real = realpath(dir, NULL);
    if (real == NULL) {
        return NULL;
    }
    const char *name = place->kind == OUTPUT_FILE ? last_name(place->path) : NULL;
    char *path = arena_alloc(strlen(real) + (name != NULL ? strlen(name) + 2 : 1), 1);
    sprintf(path, name != NULL ? "%s/%s" : "%s", real, name != NULL ? name : "");
    if (name != NULL && strcmp(real, "/") == 0) {
        sprintf(path, "/%s", name);
    }
    free(real);
    return path;
}

// Is `inner` a .npy name directly in the directory `outer` (both resolved)?
static bool npy_name_in(const char *inner, const char *outer) {
    size_t length = strlen(outer), inner_length = strlen(inner);
    bool root = strcmp(outer, "/") == 0;
    if (!root && (strncmp(inner, outer, length) != 0 || inner[length] != '/')) {
        return false;
    }
    const char *name = inner + (root ? 1 : length + 1);
    return inner_length >= 4 && strcmp(inner + inner_length - 4, ".npy") == 0 &&
           strchr(name, '/') == NULL;
}

// Every pair of places, once resolved: two outputs may not name one path (the later would
// overwrite the earlier, or a directory hold a file's bytes); no file may be a .npy name
// in a directory that .npy files are written to or read from (--dump's or --save's would
// overwrite it; --load's would read it); no output may be an input (but for the one flag
// that rewrites it: --save over --load's checkpoint writes what --load read).
static void check_pairs(const Lesson *lesson) {
    for (int i = 0; i < n_declared; i++) {
        declared[i].resolved = resolved(&declared[i]);
    }
    for (int j = 0; j < n_declared; j++) {
        const Place *b = &declared[j];
        for (int i = 0; i < n_declared; i++) {
            const Place *a = &declared[i];
            if (i == j || a->resolved == NULL || b->resolved == NULL ||
                (a->kind == INPUT_DIRECTORY && b->kind == INPUT_DIRECTORY)) {
                continue;
            }
            bool rewrite = a->kind == INPUT_DIRECTORY && b->kind == OUTPUT_DIRECTORY &&
                           strcmp(b->flag, "--save") == 0;
            if (i < j && strcmp(a->resolved, b->resolved) == 0 && !rewrite) {
                usage_error(lesson, "%s and %s both name '%s'", b->flag, a->flag,
                            shown(b->path));
            }
            if (a->kind != OUTPUT_FILE && b->kind != INPUT_DIRECTORY &&
                npy_name_in(b->resolved, a->resolved)) {
                usage_error(lesson, "%s '%s' is a .npy name in %s's directory, where %s %s its "
                            "<name>.npy files; give %s another name", b->flag, shown(b->path),
                            a->flag, a->flag, a->kind == INPUT_DIRECTORY ? "reads" : "writes",
                            strcmp(b->flag, "--dot") == 0 ? "the graph" : "it");
            }
        }
    }
}

void prepare_outputs(const Lesson *lesson) {
    if (lesson->dump_dir != NULL) {
        declare("--dump", lesson->dump_dir, OUTPUT_DIRECTORY);
    }
    if (lesson->dot_file != NULL) {
        declare("--dot", lesson->dot_file, OUTPUT_FILE);
    }
    bool any = false;
    for (int i = 0; i < n_declared; i++) {
        any = any || declared[i].kind != INPUT_DIRECTORY;
    }
    if (any) {
        catch_signals();
    }
    // --dot, then the lesson's own files: the checks that make nothing.
    for (int i = n_declared - 1; i >= 0; i--) {
        if (declared[i].kind == OUTPUT_FILE) {
            check_output_file(lesson, declared[i].flag, declared[i].path);
        }
    }
    for (int i = n_declared - 1; i >= 0; i--) {   // --dump first, then --save
        if (declared[i].kind == OUTPUT_DIRECTORY) {
            make_output_dir(lesson, declared[i].flag, declared[i].path);
        }
    }
    for (int i = n_declared - 1; i >= 0; i--) {
        if (declared[i].kind == OUTPUT_FILE) {
            check_output_file_directory(lesson, declared[i].flag, declared[i].path);
        }
    }
    check_pairs(lesson);
}

void forget_outputs(void) {
    n_declared = 0;
}

// --- what --dump keeps -----------------------------------------------------------------

// Each named tensor's .npy bytes, taken when it was named (later changes to
// it, or the arena releasing it, do not matter), written by lesson_finish.
typedef struct {
    char *name;
    unsigned char *bytes;
    size_t length;
} Dump;

static Dump *dumps = NULL;
static int n_dumps = 0;
static int dumps_capacity = 0;
static size_t dump_bytes = 0;        // the sum of their lengths
static size_t dump_bytes_peak = 0;   // the most it has been (budget.c reports it)

static void count_dump_bytes(size_t added, size_t removed) {
    arena_hold_outside(added, removed);   // the budget's limit counts them (core/arena.h)
    dump_bytes = dump_bytes + added - removed;
    if (dump_bytes > dump_bytes_peak) {
        dump_bytes_peak = dump_bytes;
    }
}

size_t dumps_peak_bytes(void) {
    return dump_bytes_peak;
}

// "<name>.npy" and save_file's temporary name after it must fit NAME_MAX.
#define MAX_DUMP_NAME (NAME_MAX - (int)sizeof ".npy" + 1 - (int)sizeof SAVE_FILE_TEMPORARY + 1)

void keep_dump(const char *name, const Tensor *t) {
    if (name[0] == '\0' || strchr(name, '/') != NULL || strlen(name) > (size_t)MAX_DUMP_NAME) {
        fail("named: '%s' cannot be a --dump file name (it must be 1 to %d characters, no '/')",
             shown(name), MAX_DUMP_NAME);
    }
    size_t length;
    unsigned char *bytes = npy_encode(&length, t);
    if (bytes == NULL) {
        fail("--dump: out of memory keeping '%s'", name);
    }
    for (int i = 0; i < n_dumps; i++) {
        if (strcmp(dumps[i].name, name) == 0) {   // named again: the later one wins
            count_dump_bytes(length, dumps[i].length);
            free(dumps[i].bytes);
            dumps[i].bytes = bytes;
            dumps[i].length = length;
            return;
        }
    }
    if (n_dumps == dumps_capacity) {
        int capacity = dumps_capacity == 0 ? 32 : 2 * dumps_capacity;
        Dump *grown = realloc(dumps, (size_t)capacity * sizeof *grown);
        if (grown == NULL) {
            free(bytes);
            fail("--dump: out of memory keeping '%s'", name);
        }
        dumps = grown;
        dumps_capacity = capacity;
    }
    char *name_copy = malloc(strlen(name) + 1);
    if (name_copy == NULL) {
        free(bytes);
        fail("--dump: out of memory keeping '%s'", name);
    }
    strcpy(name_copy, name);
    dumps[n_dumps++] = (Dump){name_copy, bytes, length};
    count_dump_bytes(length, 0);
}

// --- what the lesson's own outputs keep ----------------------------------------------------

typedef struct {
    const char *flag;
    char *path;              // malloc'd
    unsigned char *bytes;    // malloc'd
    size_t length;
} Kept;

static Kept *kept = NULL;
static int n_kept = 0;

void keep_output(const char *flag, const char *path, unsigned char *bytes, size_t length) {
    Kept *grown = realloc(kept, (size_t)(n_kept + 1) * sizeof *grown);
    char *path_copy = malloc(strlen(path) + 1);
    kept = grown != NULL ? grown : kept;   // (a failed realloc leaves the old array)
    if (grown == NULL || path_copy == NULL || bytes == NULL) {
        free(bytes);
        free(path_copy);
        fail("%s: out of memory keeping '%s'", flag, shown(path));
    }
    strcpy(path_copy, path);
    kept[n_kept++] = (Kept){flag, path_copy, bytes, length};
    count_dump_bytes(length, 0);
}

void free_dumps(void) {
    for (int i = 0; i < n_dumps; i++) {
        free(dumps[i].name);
        free(dumps[i].bytes);
    }
    free(dumps);
    dumps = NULL;
    n_dumps = 0;
    dumps_capacity = 0;
    for (int i = 0; i < n_kept; i++) {
        free(kept[i].path);
        free(kept[i].bytes);
    }
    free(kept);
    kept = NULL;
    n_kept = 0;
    arena_hold_outside(0, dump_bytes);
    dump_bytes = 0;
}

// --- writing them: one transaction ------------------------------------------------------

// One file of the run's output.
typedef struct {
    const char *flag;    // "--dump" or "--dot", for messages
    const char *path;    // where it goes
    const void *bytes;
    size_t length;
    char *temporary;     // "<path>.tmp-XXXXXX" while it is being written (malloc'd)
    char *old;           // "<path>.old-XXXXXX": the file it replaces, kept until all are in
} Output;

static Output *outputs = NULL;
static int n_outputs = 0;

// Free the names; what they name on disk is handled before this.
static void free_outputs(void) {
    for (int i = 0; i < n_outputs; i++) {
        free(outputs[i].temporary);
        free(outputs[i].old);
    }
    n_outputs = 0;
    outputs = NULL;   // an arena array
}

// A failed transaction: put back the files replaced so far (or remove the
// new ones where there was none), remove the temporary files and the
// directories this run made, and fail (exit 1) naming the file and why.
_Noreturn static void roll_back(int renamed, const Output *failed, int error) {
    for (int i = renamed - 1; i >= 0; i--) {
        if (outputs[i].old != NULL) {
            rename(outputs[i].old, outputs[i].path);
        } else {
            unlink(outputs[i].path);
        }
    }
    undo_outputs();
    const char *flag = failed->flag;
    const char *path = shown(failed->path);
    free_outputs();
    fail("%s: cannot write '%s': %s", flag, path, strerror(error));
}

// Phase 1: write every file under its temporary name. Each name goes on
// the list a signal handler removes before the file is made.
static void write_temporaries(void) {
    temporaries = arena_alloc((size_t)n_outputs + 1, sizeof *temporaries);
    for (int i = 0; i < n_outputs; i++) {
        Output *out = &outputs[i];
        struct stat info;
        if (lstat(out->path, &info) == 0 && S_ISDIR(info.st_mode)) {
            roll_back(0, out, EISDIR);   // rename() could not replace it
        }
        out->temporary = temporary_name(out->path);
        if (out->temporary == NULL) {
            roll_back(0, out, ENOMEM);
        }
        sigset_t saved;
        block_signals(&saved);
        int fd = open_temporary(out->temporary);
        int error = errno;
        if (fd >= 0) {
            temporaries[n_temporaries] = out->temporary;
            n_temporaries += 1;
        }
        restore_signals(&saved);
        if (fd < 0 || !write_and_close(fd, out->bytes, out->length)) {
            roll_back(0, out, fd < 0 ? error : errno);
        }
    }
}

// Keep the file at `out->path` (if any) under a second name, out->old, so
// it can be put back. A hard link keeps the path in place meanwhile; where
// the file system has none, the file is renamed aside.
static bool keep_old(Output *out) {
    struct stat info;
    if (lstat(out->path, &info) != 0) {
        return errno == ENOENT;   // nothing there: nothing to keep
    }
    size_t length = strlen(out->temporary);
    out->old = malloc(length + 1);
    if (out->old == NULL) {
        errno = ENOMEM;
        return false;
    }
    // "<path>.tmp-Ab12Cd" -> "<path>.old-Ab12Cd", a name beside it that is free.
    memcpy(out->old, out->temporary, length + 1);
    memcpy(out->old + length - strlen(SAVE_FILE_TEMPORARY), ".old", 4);
    if (lstat(out->old, &info) == 0) {
        errno = EEXIST;
        return false;
    }
    if (link(out->path, out->old) == 0) {
        return true;
    }
    return (errno == EPERM || errno == ENOTSUP || errno == EMLINK) &&
           rename(out->path, out->old) == 0;
}

// Phase 2, with the signals held back: move every file into place, keeping
// what each replaces until all are in; then drop what they replaced. A
// failure puts everything back as it was.
static void move_into_place(void) {
    sigset_t saved;
    block_signals(&saved);
    for (int i = 0; i < n_outputs; i++) {
        Output *out = &outputs[i];
        if (!keep_old(out)) {
            int error = errno;
            free(out->old);
            out->old = NULL;
            roll_back(i, out, error);
        }
        if (rename(out->temporary, out->path) != 0) {
            int error = errno;
            if (out->old != NULL) {
                rename(out->old, out->path);   // if it was renamed aside; a link just goes
                unlink(out->old);
                free(out->old);
                out->old = NULL;
            }
            roll_back(i, out, error);
        }
    }
    for (int i = 0; i < n_outputs; i++) {
        if (outputs[i].old != NULL) {
            unlink(outputs[i].old);
        }
    }
    // All written: the files and directories are the run's output now.
    n_temporaries = 0;
    n_made_dirs = 0;
    restore_signals(&saved);   // a signal that came meanwhile ends the program now
}

// The recorded graph as dot text (an arena string).
static const char *graph_text(size_t *length, const char *title) {
    char *text = NULL;
    FILE *stream = open_memstream(&text, length);
    if (stream == NULL) {
        fail("--dot: out of memory");
    }
    graph_write(stream, title);
    fclose(stream);
    char *copy = arena_alloc(*length + 1, 1);
    memcpy(copy, text, *length);
    free(text);
    return copy;
}

void write_outputs(const Lesson *lesson) {
    outputs = arena_alloc((size_t)n_dumps + (size_t)n_kept + 1, sizeof *outputs);
    n_outputs = 0;
    for (int i = 0; lesson->dump_dir != NULL && i < n_dumps; i++) {
        const char *dir = lesson->dump_dir;
        char *path = arena_alloc(strlen(dir) + strlen(dumps[i].name) + sizeof "/.npy", 1);
        sprintf(path, "%s/%s.npy", dir, dumps[i].name);
        outputs[n_outputs++] = (Output){"--dump", path, dumps[i].bytes, dumps[i].length, NULL,
                                        NULL};
    }
    if (lesson->dot_file != NULL) {
        size_t length;
        const char *text = graph_text(&length, lesson->summary);
        outputs[n_outputs++] = (Output){"--dot", lesson->dot_file, text, length, NULL, NULL};
    }
    for (int i = 0; i < n_kept; i++) {
        outputs[n_outputs++] = (Output){kept[i].flag, kept[i].path, kept[i].bytes,
                                        kept[i].length, NULL, NULL};
    }
    write_temporaries();
    move_into_place();
    free_outputs();
}
