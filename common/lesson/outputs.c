// outputs.c - the files a run leaves: --dump's .npy files and --dot's graph.
//
// Both are checked before any work (prepare_outputs: a path that cannot be
// written is refused with exit 2, like a bad flag), kept while the lesson
// runs (keep_dump takes each named tensor's bytes as it is named), and
// written at the end, each file all or nothing (write_outputs). Until then
// undo_outputs removes what the run made, so a run that fails leaves
// nothing behind.
#define _POSIX_C_SOURCE 200809L
#include "lesson/outputs.h"

#include <errno.h>
#include <limits.h>
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

// --- where --dump and --dot write -----------------------------------------------------

// What this run has made on disk: the directories --dump created (innermost
// last) and the files write_outputs has written. Until write_outputs is
// done, undo_outputs removes them (run.c calls it when the program ends), so
// a run that is refused (exit 2) or fails (exit 1) leaves nothing behind.
static const char *made_dirs[PATH_MAX / 2];   // more than a path of PATH_MAX can name
static int n_made_dirs = 0;
static const char **written = NULL;
static int n_written = 0;

void undo_outputs(void) {
    while (n_written > 0) {
        n_written -= 1;
        unlink(written[n_written]);
    }
    while (n_made_dirs > 0) {
        n_made_dirs -= 1;
        rmdir(made_dirs[n_made_dirs]);
    }
}

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
    int fd = mkstemp(probe);
    if (fd < 0) {
        return false;
    }
    close(fd);
    unlink(probe);
    return true;
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
static void make_dump_dir(const Lesson *lesson, const char *dir) {
    // Room after the directory for "/<name>.npy" and save_file's temporary name.
    check_path_length(lesson, "--dump", dir, 1 + NAME_MAX, 0);
    size_t length = strlen(dir);
    for (size_t i = 1; i <= length; i++) {
        if (dir[i] != '/' && dir[i] != '\0') {
            continue;
        }
        char *partial = arena_alloc(i + 1, 1);
        memcpy(partial, dir, i);
        if (mkdir(partial, 0777) == 0) {
            made_dirs[n_made_dirs++] = partial;
        } else if (errno != EEXIST) {
            int error = errno;
            if (!is_directory(partial)) {   // some systems say EACCES or EROFS for one that exists
                usage_error(lesson, "--dump cannot create the directory '%s': %s",
                            shown(partial), strerror(error));
            }
        }
    }
    if (!is_directory(dir)) {
        usage_error(lesson, "--dump: '%s' is not a directory", shown(dir));
    }
    if (!can_create_in(dir)) {
        int error = errno;
        usage_error(lesson, "--dump cannot write in '%s': %s", shown(dir), strerror(error));
    }
}

// --dot's file must be a regular file (replaced at the end) or a new name.
// Anything else is refused: a directory cannot be replaced by a file, a
// FIFO would block the write, a device would take the graph elsewhere, and
// a symbolic link (dangling or not) would be replaced by a plain file, not
// written through. This check makes nothing, so it comes first.
static void check_dot_file(const Lesson *lesson, const char *file) {
    // save_file writes "<file>.tmp-XXXXXX" first: that name must fit too.
    size_t temporary = strlen(SAVE_FILE_TEMPORARY);
    check_path_length(lesson, "--dot", file, temporary, temporary);
    if (file[strlen(file) - 1] == '/') {
        usage_error(lesson, "--dot: '%s' ends in '/'; give a file name", shown(file));
    }
    if (lesson->dump_dir != NULL && strcmp(plain_path(file), plain_path(lesson->dump_dir)) == 0) {
        usage_error(lesson, "--dot and --dump both name '%s'", shown(file));
    }
    struct stat info;
    if (lstat(file, &info) == 0 && !S_ISREG(info.st_mode)) {
        usage_error(lesson, "--dot: '%s' is %s; give a regular file or a new name", shown(file),
                    S_ISDIR(info.st_mode) ? "a directory"
                    : S_ISLNK(info.st_mode) ? "a symbolic link" : "not a regular file");
    }
}

// After --dump made its directory: --dot's directory must exist now (it
// may be the one --dump made) and take a new file, and --dump must not
// have made --dot's path itself (one directory spelled two ways).
static void check_dot_directory(const Lesson *lesson, const char *file) {
    const char *parent = parent_of(file);
    if (!is_directory(parent)) {
        usage_error(lesson, "--dot cannot write '%s': no directory '%s'", shown(file),
                    shown(parent));
    }
    if (!can_create_in(parent)) {
        int error = errno;
        usage_error(lesson, "--dot cannot write '%s': %s", shown(file), strerror(error));
    }
    struct stat info;
    if (lstat(file, &info) == 0 && !S_ISREG(info.st_mode)) {
        usage_error(lesson, "--dot: '%s' is a directory that --dump makes; give a file name",
                    shown(file));
    }
}

void prepare_outputs(const Lesson *lesson) {
    if (lesson->dot_file != NULL) {
        check_dot_file(lesson, lesson->dot_file);
    }
    if (lesson->dump_dir != NULL) {
        make_dump_dir(lesson, lesson->dump_dir);
    }
    if (lesson->dot_file != NULL) {
        check_dot_directory(lesson, lesson->dot_file);
    }
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
}

// --- writing them ---------------------------------------------------------------------

// Write one file of the run's output, or fail() (exit 1; undo_outputs then
// removes what this run wrote and made).
static void write_output(const char *flag, const char *path, const void *bytes, size_t length) {
    if (!save_file(path, bytes, length)) {
        int error = errno;
        fail("%s: cannot write '%s': %s", flag, shown(path), strerror(error));
    }
    written[n_written++] = path;
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
    written = arena_alloc((size_t)n_dumps + 1, sizeof *written);
    for (int i = 0; lesson->dump_dir != NULL && i < n_dumps; i++) {
        const char *dir = lesson->dump_dir;
        char *path = arena_alloc(strlen(dir) + strlen(dumps[i].name) + sizeof "/.npy", 1);
        sprintf(path, "%s/%s.npy", dir, dumps[i].name);
        write_output("--dump", path, dumps[i].bytes, dumps[i].length);
    }
    if (lesson->dot_file != NULL) {
        size_t length;
        const char *text = graph_text(&length, lesson->summary);
        write_output("--dot", lesson->dot_file, text, length);
    }
    // All written: the files and directories are the run's output now.
    n_written = 0;
    n_made_dirs = 0;
}
