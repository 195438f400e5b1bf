// outputs.h - the files --dump and --dot write, for run.c: checked before
// the work, kept during it, written after it (outputs.c says how).
#ifndef OUTPUTS_H
#define OUTPUTS_H

#include <stddef.h>

#include "core/tensor.h"
#include "lesson/flags.h"

// A lesson's own outputs and inputs, beside --dump and --dot (lesson 16's --save, --svg
// and --load), declared when its flags are read, before check_budget: prepare_outputs
// checks them with the others, and write_outputs writes the outputs in the same
// transaction.
typedef enum {
    OUTPUT_FILE,        // one file, replaced whole (--dot, --svg)
    OUTPUT_DIRECTORY,   // a directory made if missing, files written into it (--dump, --save)
    INPUT_DIRECTORY,    // a directory the run reads (--load): no output may overwrite it
} OutputKind;
void declare_output(const char *flag, const char *path, OutputKind kind);
void declare_input(const char *flag, const char *dir);
// Forget the declarations (run.c, when a run is released).
void forget_outputs(void);

// Check that every output can be written, making the directories (and
// their parents) if needed, and that no two name the same path, or the
// same as an input, however each is spelled ("..", "//", symbolic links);
// else exit 2 naming the flag. A file output must be a regular file or a
// new name (not a directory, FIFO, device or symbolic link). From here on,
// SIGINT, SIGTERM, SIGHUP and SIGPIPE remove what the run made (its
// temporary files, the directories it created) before the program dies of
// them.
void prepare_outputs(const Lesson *lesson);

// Keep `length` bytes (malloc'd: outputs.c frees them) to write at `path` at the end, in
// write_outputs' transaction; `flag` (a declared output's) names it in messages.
void keep_output(const char *flag, const char *path, unsigned char *bytes, size_t length);

// Keep t's .npy bytes as they are now, to write as <name>.npy at the end
// (named again: the later one wins). A name that cannot be a file name
// fails (exit 1).
void keep_dump(const char *name, const Tensor *t);

// Write every kept dump into --dump's directory, the recorded graph to --dot's
// file and the lesson's kept outputs, all or nothing: each under a temporary
// name first, then, when all are written, each renamed over its path (the
// signals held back meanwhile). A failure puts back what was there and fails
// the run (exit 1). Then they are the run's output, and undo_outputs no longer
// touches them.
void write_outputs(const Lesson *lesson);

// Remove what this run made (temporary files, the directories it created),
// unless write_outputs has finished.
void undo_outputs(void);

// remove_unfinished's unlink() and rmdir() of what an unfinished run made, and nothing
// else: safe in a signal handler (budget.c's, when a run passes its time).
void remove_unfinished_outputs(void);

// Free the kept dumps.
void free_dumps(void);
// The most bytes the kept dumps have taken at once (budget.h).
size_t dumps_peak_bytes(void);

#endif
