// run.c - a lesson's run from lesson_start to lesson_finish, and what is
// cleaned up when the program ends, however it ends.
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
    free_dumps();
    graph_clear();
    arena_free_all();
    current = NULL;
}

void release_at_exit(void) {
    static bool registered = false;
    if (!registered) {
        atexit(release_all);
        registered = true;
    }
}

void lesson_start(Lesson *lesson) {
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
    trace_set_hook(NULL);
    report_cost(lesson);
    write_outputs(lesson);
    release_all();
    return 0;
}
