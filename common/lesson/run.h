// run.h - a lesson's run: lesson_start before the work, lesson_finish after,
// and lesson_exit, the one way a run ends before its work.
#ifndef RUN_H
#define RUN_H

#include <stdbool.h>
#include <stddef.h>

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

// End the run before its work with `status`: a refusal (usage_error, 2),
// --help (0), ATTN_COST=check's dry run (0). Every such end of the helper
// comes here, and it is exit(status) - unless a test runs the lesson in its
// own process (below), which then gets the lesson (NULL if unknown) and the
// status instead.
_Noreturn void lesson_exit(const Lesson *lesson, int status);

// --- a lesson run inside a test's process ------------------------------------------------
//
// A test checks a lesson's flags and budget by the thousand by calling its
// main() in the test's own process (tests/harness.h: call_lesson), up to
// where the work would start, instead of starting the program each time.
// It sets these, calls main(), and sets NULL again after:
typedef struct {
    // Called instead of exit() by lesson_exit; it must not return (it
    // longjmp()s back into the test, which then calls release_run).
    void (*exit_hook)(const Lesson *lesson, int status);
    // What a run frees stops at this arena mark (arena_mark()), so that the
    // test's own allocations outlive the lesson's.
    size_t arena_base;
    // End the run (lesson_exit, status 0) where its work would start: when
    // check_budget admits it, after checking --dump and --dot as
    // lesson_start would (creating --dump's directory, then removing it);
    // or at lesson_start, in a run that never checked its budget.
    bool stop_before_work;
} InProcess;
void run_in_process(const InProcess *settings);   // NULL: a program's own behaviour

// Where a run stops with stop_before_work (budget.c calls it when it
// admits a run); without it, this does nothing.
void stop_before_work(const Lesson *lesson);
// Did it end the run (until release_run)? For the test's exit hook.
bool stopped_before_work(void);

// Undo and free what the run made, as exiting does (release_at_exit): for a
// test whose exit hook jumped out of the run.
void release_run(void);

#endif
