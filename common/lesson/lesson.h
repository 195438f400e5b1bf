// lesson.h - the shape every lesson file has, and what its main() calls.
//
// HOW A LESSON FILE READS (lessons/NN-name/name.c), top to bottom. The file
// a learner opens teaches, and reads in one sitting (under about 800
// lines). lessons/02-self-attention-v1/self_attention_v1.c is the worked
// example.
//
//   1. The header comment: what this lesson adds over the last one, the
//      math in three to five lines, the PyTorch it mirrors, how to run it
//      (make lesson-N and its flags), what to look for in the output, and
//      the legend of the size and index letters.
//
//   2. The module and its forward, as the notebook's class: a struct with
//      the notebook's field names, Name_init() (its __init__), and
//
//          Tensor *Name_forward(NameSteps *steps, const Name *self, inputs...);
//
//      in the order of every signature here (attention.h): outputs, the
//      module, the inputs, the numbers. It returns what the notebook's
//      forward returns. `steps` may be NULL; when it is not, the forward
//      keeps there the notebook's local variables the lesson prints
//      afterwards (Q, K, V, att_weight, ...). `self` is const unless the
//      forward changes the module itself, as a KV cache does. The forward
//      follows the notebook line by line and prints nothing. Two forwards
//      a reader should compare (a copy and an index) sit next to each other.
//
//   3. The demonstrations, in numbered parts, each one function (or a few)
//      under a heading comment, called from main in order:
//
//          // --- part 2: what thop counted, and what it left out ------------
//
//      Part 1 is the notebook's cell: it prints the notebook's own lines
//      first, verbatim and unannounced, so that the output diffs cleanly
//      against the notebook's. Every later part prints one opening line
//      that says what it shows and which flag varies it, then shows it (a
//      bug shown running, an invariant checked, a cost counted):
//
//          -- part 3: the mask at work (--seq and --pad change it) --
//
//   4. main(), about 30 lines: declare the flags, parse them, the lesson's
//      own checks, lesson_start, the parts in order, lesson_finish:
//
//          int main(int argc, char **argv) {
//              int batch = 3, seq = 2, dim = 4;             // the notebook's sizes
//              SizeFlag sizes[] = {
//                  {"--batch", &batch, "batch size"},
//                  {"--seq", &seq, "sequence length"},
//                  {"--dim", &dim, "hidden dimension"},
//              };
//              Lesson lesson = {
//                  .program = "lesson-2", .summary = "self-attention V1: ...",
//                  .sizes = sizes, .n_sizes = 3,
//              };
//              parse_lesson_args(&lesson, argc, argv);  // flags (exit 2 if bad)
//              check_fits(&lesson, ...);                // the lesson's own checks
//              check_budget(&lesson, v1_cost(batch, seq, dim));   // see THE BUDGET
//              lesson_start(&lesson);                   // seed; --dump and --dot
//              Cell cell = part1_the_notebooks_cell(batch, seq, dim);
//              part2_...(&cell);
//              return lesson_finish(&lesson);           // write the files, free all
//          }
//
//   5. What serves speed or measurement rather than the idea (vector
//      kernels, benches) comes after main, under appendix headings:
//
//          // === appendix A: what --bench calls ===============================
//
//      or, when it is long, in a sibling file of the lesson's directory
//      (lessons/13-flash-attention/bench.c), the way llama2.c keeps runq.c
//      beside run.c. make compiles every .c of a lesson's directory into
//      the lesson, so a sibling needs no Makefile change. What the files
//      share is declared in the sibling's header (bench.h), included by
//      both, and is not static; each file's own helpers are static, with
//      names the other file does not use (a test sees both files at once).
//      What such appendices would copy from lesson to lesson (choosing the
//      kernels for the CPU and ATTN_KERNELS, the vector types, the clocks
//      and a bench's rounds, the FMA peak) is in common/speed/ instead:
//      the lesson keeps its own kernels, their scalar twins, and its bench.
//
// THE BUDGET (budget.h). A learner who types a big number gets a result in
// reasonable time or, before anything runs, one line naming the flags, the
// budget (512 MiB held at once, about 60 seconds of work) and how to raise
// it (ATTN_MAX_MIB, ATTN_MAX_SECONDS). So every lesson, after its own checks
// and before lesson_start, calls
//
//     check_budget(&lesson, cost);
//
// with a Cost it works out from its flags: a static function just above
// main(), named after the lesson (v1_cost, gqa_cost: a test may include two
// lessons), that counts what the code makes, in doubles:
//
//     .bytes          every tensor the run keeps at once, 4 bytes a float
//                     (the arena frees nothing until the end, except inside
//                     an arena_mark/arena_release bracket: count the
//                     largest bracket's tensors once);
//     .dumped         the bytes of the tensors --dump writes (named ones;
//                     int64 masks at 8 bytes): --dump keeps a copy of each;
//     .multiply_adds  every term of every dot product (matmul, Linear, loops);
//     .exps           elements through exp, erf or log (softmax, GELU, randn);
//     .elements       every other element written (copies, masks, adds);
//     .kernel_seconds the time of work done in the lesson's own vector kernels,
//                     which the prices above (plain loops') do not fit: the
//                     lesson's estimate (lesson 16 prices its products so).
//
// Count each forward the parts run, not just the notebook's. A bench (a
// mode that times sizes of its own) gets its own Cost, so that it refuses
// what it could not finish. Every run compares what it held with .bytes
// when it finishes and warns on stderr if it held more (the tests see the
// warning); ATTN_COST=show prints both, ATTN_COST=check only the prediction.
// The lesson's own test lists the refusals' words and the sizes at which
// its prediction must hold (tests/harness.h: add_budget_tests); test_budget,
// test_budget_edges and test_fuzz_cli take every lesson of lessons/ (each size
// flag at the edge of a lowered budget, and at the limit) with no list to
// add it to. They call main() in their own process up to where the work
// starts (run.h: lesson_exit), so everything main does before lesson_start
// must end through lesson_exit (usage_error does) and start from its
// defaults however often it is called (parse_lesson_args sees to the flags).
//
// A TEST THAT CALLS A LESSON'S FUNCTIONS includes the lesson's .c files
// into itself: the lesson file first, with its main() renamed, then the
// siblings it calls, except those linked in instead, whose functions a
// lesson reaches through an extern table (tests/harness.h says which).
//
// The helper that main() calls is in four files, one job each: flags.h
// (the command line, and refusing bad input with exit 2), budget.h (what a
// run may take), run.h (lesson_start, lesson_finish, lesson_exit) and, behind
// them, outputs.h (the files --dump and --dot write).
#ifndef LESSON_H
#define LESSON_H

#include "lesson/budget.h"
#include "lesson/flags.h"
#include "lesson/run.h"

#endif
