// cpu.h - the core a lesson runs on: which kernel sets it can run, and its
// name as it gives it.
//
// Lessons 13, 14 and 16 write each hot loop three times, as three kernel
// sets that give the same bits: "scalar" (plain C11, runs anywhere), "avx2"
// (8 floats a register; the CPU needs AVX2 and FMA) and "avx512" (16; it
// needs AVX-512F besides). The CPU is asked when the lesson runs, not when
// it is built, so one binary takes the fastest set of each machine.
#ifndef SPEED_CPU_H
#define SPEED_CPU_H

#include <stdbool.h>

// The sets, fastest first, and NULL.
extern const char *const KERNEL_SETS[4];

// Whether this CPU can run the set called `name` (and the compiler built it:
// only GCC and Clang on x86-64 build vector kernels, speed/vectors.h).
// "scalar": always; a name that is not a set's: never.
bool cpu_runs(const char *name);

// The first of KERNEL_SETS this CPU runs: "avx512", "avx2" or "scalar".
const char *fastest_kernels(void);

// The core as CPUID describes it: what speed/blocks.h chooses block sizes
// from. vendor is "AuthenticAMD", "GenuineIntel", ... ("" off x86-64);
// family and model with their extended bits, as `lscpu` prints them.
typedef struct {
    char vendor[13];
    char name[49];         // the brand string, "AMD EPYC 9R14 96-Core Processor"
    unsigned family, model;
    unsigned l1d_kib, l2_kib;   // a core's data caches (0 where it does not say)
} Core;
Core this_core(void);

// Two lines naming the CPU as it names itself (CPUID: brand, family, model,
// its L1 and L2 data caches), as `lscpu` shows them; on another architecture,
// that it is not x86-64.
void describe_cpu(void);

#endif
