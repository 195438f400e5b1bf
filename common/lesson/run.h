// run.h - a lesson's run: lesson_start before the work, lesson_finish after.
#ifndef RUN_H
#define RUN_H

#include "lesson/flags.h"

// manual_seed(seed); check that --dot's file and --dump's directory can be
// written (creating the directory), or exit 2 leaving nothing behind; then
// start tracing (trace.h) for them. --dot must name a regular file or a new
// one (in a directory that exists or that --dump makes); a directory, a
// FIFO, a device or a symbolic link is refused.
void lesson_start(Lesson *lesson);
// Write the --dump files (every tensor named while tracing, as it was when
// named) and the --dot graph, each all or nothing (files.h), free the
// arena; returns the exit status (0). A run that ends before this is done
// (fail(), exit 1) writes neither: what it wrote and the directories it
// made are removed when it exits.
int lesson_finish(Lesson *lesson);

// Make sure that when the program exits, however it exits, what an
// unfinished run made on disk is removed and everything the arena, --dump
// and --dot hold is freed (so valgrind sees no leaks). lesson_start and
// parse_lesson_args call it; calling it again does nothing.
void release_at_exit(void);

#endif
