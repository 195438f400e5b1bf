// files.c - save_file: a temporary file, then rename().
#define _POSIX_C_SOURCE 200809L
#include "lesson/files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// write() may write less than asked; keep going until all is out.
static bool write_all(int fd, const char *bytes, size_t length) {
    while (length > 0) {
        ssize_t done = write(fd, bytes, length);
        if (done < 0) {
            if (errno == EINTR) {
                continue;
            }
            return false;
        }
        bytes += done;
        length -= (size_t)done;
    }
    return true;
}

char *temporary_name(const char *path) {
    // "<path>.tmp-XXXXXX": in the same directory, so rename() only changes
    // a name and cannot fail half way.
    size_t path_length = strlen(path);
    char *name = malloc(path_length + sizeof SAVE_FILE_TEMPORARY);
    if (name == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    memcpy(name, path, path_length);
    memcpy(name + path_length, SAVE_FILE_TEMPORARY, sizeof SAVE_FILE_TEMPORARY);
    return name;
}

int open_temporary(char *name) {
    return mkstemp(name);
}

bool write_and_close(int fd, const void *bytes, size_t length) {
    // mkstemp makes the file private (0600); an output file is made the
    // way fopen() makes one: 0666 less the umask (read for all, usually).
    mode_t umask_bits = umask(0);
    umask(umask_bits);
    bool ok = fchmod(fd, 0666 & ~umask_bits) == 0 && write_all(fd, bytes, length);
    int saved_errno = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        saved_errno = errno;
    }
    errno = saved_errno;
    return ok;
}

bool save_file(const char *path, const void *bytes, size_t length) {
    char *temporary = temporary_name(path);
    if (temporary == NULL) {
        return false;
    }
    int fd = open_temporary(temporary);
    bool ok = fd >= 0 && write_and_close(fd, bytes, length) && rename(temporary, path) == 0;
    int saved_errno = errno;
    if (!ok && fd >= 0) {
        unlink(temporary);
    }
    free(temporary);
    errno = saved_errno;
    return ok;
}
