// rename_fault.c - a stand-in for rename(2) that test_outputs.c loads into a lesson with
// LD_PRELOAD, to make one rename of a run's output transaction fail where nothing on a
// real disk would: the move of a temporary file ("<path>.tmp-XXXXXX") onto a path ending
// in $ATTN_TEST_RENAME_FAILS fails with EIO, after the files before it are already in
// place. Every other rename (the roll-back's among them) is the C library's.
#define _GNU_SOURCE   // RTLD_NEXT
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rename(const char *from, const char *to) {
    const char *fails = getenv("ATTN_TEST_RENAME_FAILS");
    size_t n = fails != NULL ? strlen(fails) : 0, length = strlen(to);
    if (n > 0 && length >= n && strcmp(to + length - n, fails) == 0 &&
        strstr(from, ".tmp-") != NULL) {
        errno = EIO;
        return -1;
    }
    int (*real)(const char *, const char *);
    *(void **)&real = dlsym(RTLD_NEXT, "rename");   // POSIX's way to a function's address
    return real(from, to);
}
