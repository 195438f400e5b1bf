// attention.h - the one include of a lesson: the tiny tensor helper.
//
// The helper is in four folders, by what it does for a lesson. Read the
// first; look into the second when you wonder how the digits come out
// exactly PyTorch's; skip the third unless you care how the command line,
// --dump and --dot work, and the fourth unless you care how lessons 13, 14
// and 16 are made fast and timed.
//
// core/ - what a lesson is built from. Read these first, in this order:
//   core/tensor.h   the tensor, its views (transpose, view, ...), contiguous
//                   and reshape, sizes as text
//   core/ops.h      matmul, softmax, masked_fill, split, cat, dropout, ...
//   core/nn.h       nn.Linear and nn.LayerNorm
//   core/arena.h    who owns memory (one arena, freed at the end)
//   core/error.h    how a wrong shape is reported
//
// exact/ - what makes the numbers PyTorch's to the bit. Use them as
// PyTorch's own: manual_seed, rand_tensor, randn, tensor_str. Their .c
// files follow PyTorch's kernels, rounding where they round; read them for
// that, not to learn attention.
//   exact/rng.h               PyTorch's random numbers (docs/pytorch-rng.md)
//   exact/print.h             PyTorch's print() text (docs/pytorch-print.md)
//   exact/softmax_exact.h     softmax's arithmetic on rows of floats
//   exact/layer_norm_exact.h  the same for LayerNorm
//   exact/gelu_exact.h        the same for GELU
//   exact/sum_exact.h         torch.sum's order of additions on a row (lesson 15's RMSNorm)
//   exact/pow_exact.h         pow as PyTorch's vector code computes it (Sleef's; RoPE's inv_freq)
//
// lesson/ - the plumbing every lesson shares. A lesson calls named() and
// print_heatmap() and the few functions of lesson.h; the rest works behind
// them.
//   lesson/lesson.h   how a lesson file reads; flags.h and run.h
//   lesson/flags.h    the command line: the flags, --help, refusing bad input
//   lesson/budget.h   what a run may take: memory and time, checked up front
//   lesson/run.h      lesson_start and lesson_finish
//   lesson/outputs.h  the files --dump and --dot write (used by run.c)
//   lesson/trace.h    the hook every operation reports to, and named()
//   lesson/graph.h    the --dot graph, drawn from the trace
//   lesson/heatmap.h  attention weights as shaded grids (--heatmap)
//   lesson/npy.h      a tensor as a NumPy .npy file (--dump)
//   lesson/files.h    writing a file all or nothing
//
// speed/ - what lessons 13, 14 and 16 share of their speed work: the
// plumbing around their vector kernels and their --bench. Each lesson keeps
// its own kernels (beside their scalar twins) and its own bench tables; this
// folder is what all three would otherwise copy. A learner may skip it.
//   speed/cpu.h       which kernel sets (scalar, avx2, avx512) this CPU runs,
//                     and its vendor, family, model, name and caches
//   speed/choice.h    the set a run takes: ATTN_KERNELS, checked with the flags
//   speed/vectors.h   the vector kernels' register types, helpers and targets
//   speed/timing.h    clocks, a case's rounds (best, spread, median), and
//                     whether the machine was busy
//   speed/peak.h      one core's FMA peak, what a bench compares with
//   speed/blocks.h    the blocks lessons 13's and 14's benches take on this
//                     core (a table of cores, from CPUID), and why
// A lesson includes these itself (attention.h does not): "speed/choice.h".
//
// Includes name their folder ("core/tensor.h"), so a reader sees where each
// one lives; make adds common/ to the include path.
//
// EVERY SIGNATURE here and in the lessons reads in one order:
//   1. outputs: what the function fills in through a pointer (a forward's
//      steps, split's parts, layer_norm_exact_moments' mean and var);
//      most functions just return their one result;
//   2. the module or the thing acted on: `self` (linear(&net.q_proj, x)
//      reads as self.q_proj(x)), the Lesson;
//   3. the inputs: tensors and values, const;
//   4. the numbers that configure the call: dims, sizes, eps, p, style.
// A function that makes a tensor takes its shape first, as torch.zeros(size)
// and torch.full(size, value) do; one that mirrors a PyTorch function keeps
// its order (randint(low, high, shape), layer_norm(x, weight, bias, eps));
// a name or label comes first where the call reads as a label
// (named("Q", t), print_heatmap("att_weight", w)); a count sits beside the
// array it counts.
#ifndef ATTENTION_H
#define ATTENTION_H

#include "core/arena.h"
#include "core/error.h"
#include "core/nn.h"
#include "core/ops.h"
#include "core/tensor.h"
#include "exact/gelu_exact.h"
#include "exact/layer_norm_exact.h"
#include "exact/print.h"
#include "exact/rng.h"
#include "exact/pow_exact.h"
#include "exact/softmax_exact.h"
#include "exact/sum_exact.h"
#include "lesson/heatmap.h"
#include "lesson/lesson.h"
#include "lesson/trace.h"

#endif
