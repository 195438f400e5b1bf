// rename_fault.c - stand-ins for rename(2), write(2) and puts(3) that test_outputs.c loads
// into a lesson with LD_PRELOAD, to make its output transaction meet, at a moment the test
// chooses, what a real disk or a real user would bring only by chance:
//
// - ATTN_TEST_RENAME_FAILS=<end of a path>: the move of a temporary file
//   ("<path>.tmp-XXXXXX") onto a path ending so fails with EIO, after the files before it
//   are already in place. Every other rename (the roll-back's among them) is the C
//   library's.
// - ATTN_TEST_SIGNAL="<signal> <call> <n>" ("15 write 3"): the n-th call of <call>
//   (write, rename or puts, counted from the program's start) raises the signal before it
//   does its work. The lesson writes each output file with one write() and moves it into
//   place with one rename(), and prints lines with puts() while it computes, so the test
//   can stop it while it computes, at any file being written, or at any file being moved.
#define _GNU_SOURCE   // RTLD_NEXT
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

// The C library's `name` (the next definition after this library's).
static void *next_definition(const char *name) {
    return dlsym(RTLD_NEXT, name);
}

// Counts this call of `call` and raises ATTN_TEST_SIGNAL's signal if it is the chosen one.
static void signal_at(const char *call) {
    static int calls[3];   // of write, rename and puts
    static const char *const names[3] = {"write", "rename", "puts"};
    int which = 0;
    while (which < 2 && strcmp(names[which], call) != 0) {
        which += 1;
    }
    calls[which] += 1;
    const char *chosen = getenv("ATTN_TEST_SIGNAL");
    int signal_number = 0, n = 0;
    char chosen_call[16] = "";
    if (chosen != NULL && sscanf(chosen, "%d %15s %d", &signal_number, chosen_call, &n) == 3 &&
        strcmp(chosen_call, call) == 0 && calls[which] == n) {
        raise(signal_number);
    }
}

int rename(const char *from, const char *to) {
    signal_at("rename");
    const char *fails = getenv("ATTN_TEST_RENAME_FAILS");
    size_t n = fails != NULL ? strlen(fails) : 0, length = strlen(to);
    if (n > 0 && length >= n && strcmp(to + length - n, fails) == 0 &&
        strstr(from, ".tmp-") != NULL) {
        errno = EIO;
        return -1;
    }
    int (*real)(const char *, const char *);
    *(void **)&real = next_definition("rename");   // POSIX's way to a function's address
    return real(from, to);
}

ssize_t write(int fd, const void *bytes, size_t length) {
    signal_at("write");
    ssize_t (*real)(int, const void *, size_t);
    *(void **)&real = next_definition("write");
    return real(fd, bytes, length);
}

int puts(const char *line) {
    signal_at("puts");
    int (*real)(const char *);
    *(void **)&real = next_definition("puts");
    return real(line);
}
