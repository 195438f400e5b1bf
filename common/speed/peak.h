// peak.h - what one core's fused multiply-add units can do: the peak a
// bench compares its kernels' FLOPs with.
//
// An FMA waits for the one before it on the same register for a few cycles
// (4 on the AMD Zen 4 the lessons were tuned on): one chain of them runs at
// a fraction of the peak; 12 independent chains, as many as a register tile
// keeps, fill the units. A step of a chain is one FMA on a register of
// `lanes` floats: 2 * lanes FLOPs.
#ifndef SPEED_PEAK_H
#define SPEED_PEAK_H

#include <stdbool.h>

// `steps` FMAs on each of 12 chains (or on the first alone, `one_chain`),
// in the registers of kernel set `name` ("avx512", "avx2", "scalar", which
// this CPU must run: cpu_runs), each lane doing what the scalar chain does.
// Returns the sum of the chains' lane 0, the same bits for every set (so
// that the loop cannot be optimised away, and the sets can be compared).
float fma_chains(const char *name, long steps, bool one_chain);

// One core's FMA rate in GFLOP/s with the registers of set `name`, the best
// of `runs` timed runs of fma_chains.
double fma_peak(const char *name, bool one_chain, int runs);

// The same with each step a multiply, rounded, then an add, as the products of lessons 16 to
// 18 must take them (PyTorch's reference BLAS rounds both): the 12 chains' lane 0 summed (the
// same bits for every set), and their rate in GFLOP/s. A core whose adds have units of their
// own should run it at its FMA peak (Zen 4's adds have pipes apart from its FMAs; there lesson
// 16's product blocks reached 85-95% of the FMA peak; this rate was not measured there); one
// whose 512-bit adds share the FMA units' ports runs it at half (the Intel Xeon of
// docs/fast-on-a-cpu.md, 2026-12-07: 106 to 110 GFLOP/s against an FMA peak of 215 to 222).
float mul_add_chains(const char *name, long steps);
double mul_add_peak(const char *name, int runs);

#endif
