// outputs.h - the files --dump and --dot write, for run.c: checked before
// the work, kept during it, written after it (outputs.c says how).
#ifndef OUTPUTS_H
#define OUTPUTS_H

#include <stddef.h>

#include "core/tensor.h"
#include "lesson/flags.h"

// Check that --dot's file and --dump's directory can be written, making the
// directory (and its parents) if needed, or exit 2 naming the flag. From
// here on, SIGINT, SIGTERM, SIGHUP and SIGPIPE remove what the run made
// (its temporary files, the directories it created) before the program
// dies of them.
void prepare_outputs(const Lesson *lesson);

// Keep t's .npy bytes as they are now, to write as <name>.npy at the end
// (named again: the later one wins). A name that cannot be a file name
// fails (exit 1).
void keep_dump(const char *name, const Tensor *t);

// Write every kept dump into --dump's directory and the recorded graph to
// --dot's file, all or nothing: each under a temporary name first, then,
// when all are written, each renamed over its path (the signals held back
// meanwhile). A failure puts back what was there and fails the run (exit
// 1). Then they are the run's output, and undo_outputs no longer touches
// them.
void write_outputs(const Lesson *lesson);

// Remove what this run made (temporary files, the directories it created),
// unless write_outputs has finished.
void undo_outputs(void);

// Free the kept dumps.
void free_dumps(void);
// The most bytes the kept dumps have taken at once (budget.h).
size_t dumps_peak_bytes(void);

#endif
