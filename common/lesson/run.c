// run.c - a lesson's run from lesson_start to lesson_finish, what is cleaned
// up when the program ends, however it ends, and lesson_exit.
#include "lesson/run.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "exact/rng.h"
#include "lesson/budget.h"
#include "lesson/graph.h"
#include "lesson/outputs.h"
#include "lesson/trace.h"

static const Lesson *current = NULL;   // the running lesson, for its trace hook
static InProcess in_process = {NULL, 0, false};   // a test's settings (run.h), or none
static bool stopped = false;                      // stop_before_work ended the run

// While a lesson runs with --dot or --dump, every operation comes here:
// --dot draws it, --dump keeps each named tensor.
static void lesson_trace(const TraceEvent *event) {
    if (current->dot_file != NULL) {
        graph_record(event);
    }
    if (current->dump_dir != NULL && event->name != NULL && strcmp(event->op, "named") == 0) {
        keep_dump(event->name, event->out);
    }
}

static void release_all(void) {
    undo_outputs();
    trace_set_hook(NULL);
    trace_pause(false);
    free_dumps();
    forget_outputs();
    graph_clear();
    forget_budget_check();
    stopped = false;
    if (in_process.exit_hook != NULL) {
        arena_release(in_process.arena_base);   // the test's own allocations stay
    } else {
        arena_free_all();
    }
    current = NULL;
}

void release_run(void) {
    release_all();
}

void release_at_exit(void) {
    static bool registered = false;
    if (!registered) {
        atexit(release_all);
        registered = true;
    }
}

_Noreturn void lesson_exit(const Lesson *lesson, int status) {
    if (in_process.exit_hook != NULL) {
        in_process.exit_hook(lesson, status);   // a test's: it jumps back into the test
    }
    exit(status);
}

void run_in_process(const InProcess *settings) {
    in_process = settings != NULL ? *settings : (InProcess){NULL, 0, false};
}

void stop_before_work(const Lesson *lesson) {
    if (in_process.stop_before_work) {
        release_at_exit();
        prepare_outputs(lesson);   // refused here as the run would be; undone by release_run
        stopped = true;
        lesson_exit(lesson, 0);
    }
}

bool stopped_before_work(void) {
    return stopped;
}

void lesson_start(Lesson *lesson) {
    stop_before_work(lesson);   // a test's run stops here if it never checked its budget
    release_at_exit();
    prepare_outputs(lesson);
    current = lesson;
    if (lesson->dot_file != NULL || lesson->dump_dir != NULL) {
        graph_clear();
        trace_set_hook(lesson_trace);
    }
    manual_seed(lesson->seed);
}

int lesson_finish(Lesson *lesson) {
    release_budget();   // the work is done: writing the outputs is not stopped half way
    trace_set_hook(NULL);
    report_cost(lesson);
    write_outputs(lesson);
    release_all();
    return 0;
}
