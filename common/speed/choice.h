// choice.h - which kernel set a run of lesson 13, 14 or 16 uses.
//
// The fastest set this CPU runs (speed/cpu.h), unless the environment
// variable ATTN_KERNELS names another: scalar, avx2 or avx512. Every set
// gives the same bits, so the choice changes the speed and nothing printed.
// make valgrind sets ATTN_KERNELS=scalar: valgrind 3.19 cannot run AVX-512.
//
// A lesson checks ATTN_KERNELS with its flags, before any work: a value
// that is not a set's name, or names a set this CPU cannot run, is refused
// with one line on stderr and exit 2, the value shown escaped (flags.h,
// shown()), as every bad flag is. An empty ATTN_KERNELS is no choice.
#ifndef SPEED_CHOICE_H
#define SPEED_CHOICE_H

#include "lesson/flags.h"

// The set the run uses: ATTN_KERNELS's when this CPU runs it, else
// fastest_kernels(). Never refuses (for code that has no Lesson: a test).
const char *kernels_wanted(void);

// NULL if ATTN_KERNELS may be used (or is unset or empty); else the one
// line that refuses it (an arena string), e.g.
//     ATTN_KERNELS expects scalar, avx2 or avx512, got 'sse\x1b[1m'
//     ATTN_KERNELS=avx512: this CPU (or compiler) cannot run the avx512 kernels ...
const char *kernels_variable_problem(void);
// That line, with usage_error (exit 2), if there is one.
void check_kernels_variable(const Lesson *lesson);

// The set a flag names (lesson 13's --kernels NAME), "auto" meaning
// kernels_wanted(). ATTN_KERNELS is checked first, even when the flag
// overrides it; then NAME must be a set this CPU runs. Exit 2 otherwise.
const char *check_kernels_flag(const Lesson *lesson, const char *flag, const char *name);

#endif
