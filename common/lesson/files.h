// files.h - writing an output file all or nothing.
//
// --dump and --dot write files at the end of a run. A write that fails
// half way (a full disk, a vanished directory) must not leave half a file
// that looks like a result, so a file is written under a temporary name in
// the same directory and renamed over `path` only when every byte is out.
// save_file does all of it for one file; outputs.c uses the two halves,
// open_temporary and write_and_close, to write a whole dump before it
// renames any of it.
#ifndef FILES_H
#define FILES_H

#include <stdbool.h>
#include <stddef.h>

// The temporary name is `path` followed by this (mkstemp fills in the X's),
// so a path must leave room for it.
#define SAVE_FILE_TEMPORARY ".tmp-XXXXXX"

// Write `length` bytes to `path`, replacing any file there (the new file
// gets the usual permissions: 0666 less the umask). Returns false (errno
// set, nothing left behind) when that cannot be done.
bool save_file(const char *path, const void *bytes, size_t length);

// "<path>.tmp-XXXXXX" (malloc'd; free it), for open_temporary; NULL if
// memory runs out.
char *temporary_name(const char *path);
// Create the file `name` names (its X's replaced by mkstemp) and return
// its descriptor, or -1 (errno set).
int open_temporary(char *name);
// Give the file the usual permissions (0666 less the umask), write every
// byte, close it. False (errno set) if any of it fails; the descriptor is
// closed either way.
bool write_and_close(int fd, const void *bytes, size_t length);

#endif
