// choice.c - ATTN_KERNELS and the kernel set a run uses (choice.h).
#include "speed/choice.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "speed/cpu.h"

// The set called `name` as KERNEL_SETS spells it, or NULL.
static const char *kernel_set(const char *name) {
    for (int i = 0; KERNEL_SETS[i] != NULL; i++) {
        if (strcmp(name, KERNEL_SETS[i]) == 0) {
            return KERNEL_SETS[i];
        }
    }
    return NULL;
}

const char *kernels_wanted(void) {
    const char *forced = getenv("ATTN_KERNELS");
    const char *set = forced != NULL ? kernel_set(forced) : NULL;
    return set != NULL && cpu_runs(set) ? set : fastest_kernels();
}

// NULL if this CPU runs the set `name`; else why not, naming it as the user
// did: `said` then `name` ("ATTN_KERNELS=" "avx512", "--kernels " "avx512").
static const char *cannot_run(const char *said, const char *name) {
    if (cpu_runs(name)) {
        return NULL;
    }
    enum { SIZE = 256 };
    char *line = arena_alloc(SIZE, 1);
    snprintf(line, SIZE, "%s%s: this CPU (or compiler) cannot run the %s kernels (they need %s; "
             "lscpu lists the CPU's flags); the fastest it runs are %s", said, name, name,
             strcmp(name, "avx512") == 0 ? "avx512f, avx2 and fma" : "avx2 and fma",
             fastest_kernels());
    return line;
}

const char *kernels_variable_problem(void) {
    const char *forced = getenv("ATTN_KERNELS");
    if (forced == NULL || forced[0] == '\0') {
        return NULL;
    }
    if (kernel_set(forced) == NULL) {
        const char *value = shown(forced);   // control characters spelled out
        const char *format = "ATTN_KERNELS expects scalar, avx2 or avx512, got '%s'";
        size_t size = strlen(format) + strlen(value);
        char *line = arena_alloc(size, 1);
        snprintf(line, size, format, value);
        return line;
    }
    return cannot_run("ATTN_KERNELS=", forced);
}

void check_kernels_variable(const Lesson *lesson) {
    const char *problem = kernels_variable_problem();
    if (problem != NULL) {
        usage_error(lesson, "%s", problem);
    }
}

const char *check_kernels_flag(const Lesson *lesson, const char *flag, const char *name) {
    check_kernels_variable(lesson);
    if (strcmp(name, "auto") == 0) {
        return kernels_wanted();
    }
    if (kernel_set(name) == NULL) {   // the lesson's list of choices should not let one by
        usage_error(lesson, "%s expects auto, scalar, avx2 or avx512, got '%s'", flag,
                    shown(name));
    }
    char said[64];
    snprintf(said, sizeof said, "%.50s ", flag);
    const char *problem = cannot_run(said, name);
    if (problem != NULL) {
        usage_error(lesson, "%s", problem);
    }
    return kernel_set(name);
}
