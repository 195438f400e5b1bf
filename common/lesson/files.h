// files.h - writing an output file all or nothing.
//
// --dump and --dot write files at the end of a run. A write that fails
// half way (a full disk, a vanished directory) must not leave half a file
// that looks like a result, so save_file writes to a temporary name in the
// same directory and renames it over `path` only when every byte is out.
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

#endif
