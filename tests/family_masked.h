// family_masked.h - what the tests of lessons 4 and 5 share: SelfAttV3 and
// SelfAttV4, masked single-head attention with dropout.
//
// The two modules compute the same attention from differently laid out
// parameters, and gen_lesson04.py and gen_lesson05.py record the same runs
// for both (MASKED_CASES in tests/reference/reference.py), so tests 4 and 5
// make the same checks: each test describes its module once, as a
// MaskedModule, and add_masked_module_tests adds the shared checks to its
// suite.
#ifndef FAMILY_MASKED_H
#define FAMILY_MASKED_H

#include <stdbool.h>
#include <stdint.h>

#include "family_self_attention.h"
#include "harness.h"

// What the checks read from a forward's steps.
typedef struct {
    const Tensor *att_weight;           // (B, T, S) after softmax, before dropout
    const Tensor *att_weight_dropped;   // (B, T, S) after dropout (att_weight in eval)
} MaskedWeights;

typedef struct {
    const char *lesson;            // "04-self-attention-v3"
    const char *program;           // "lesson-4", the first word of its messages
    const char *data;              // DATA_DIR "/lesson04": its recorded runs (cases.txt)
    const char *const *exact;      // dumps equal to PyTorch's bit for bit (NULL-terminated)
    const char *const *computed;   // dumps equal to PyTorch's to rounding
    // Name_init(dim), then .training = training: the module's draws. The
    // module lives in the arena.
    const void *(*init)(int dim, bool training);
    // Name_forward(&steps, net, X, attention_mask) (the mask may be NULL);
    // the weights of its steps go to *weights unless weights is NULL.
    const Tensor *(*forward)(MaskedWeights *weights, const void *net, const Tensor *X,
                             const Tensor *attention_mask);
    // The lesson's padding_rows(batch, seq): the cell's b.
    const Tensor *(*padding_rows)(int batch, int seq);
} MaskedModule;

// Adds to `suite` (one module per test program) the checks tests 4 and 5
// share, in three test cases:
//   "pytorch":    test_matches_pytorch: the binary, with --dump and the flags
//                 of each recorded run: `exact` dumps bit for bit,
//                 `computed` ones to rounding, stdout starting with exactly
//                 the text PyTorch printed;
//                 test_dropout_matches_pytorch: in train mode the lesson's
//                 dropout zeroes the weights PyTorch's did, and the kept ones
//                 agree to rounding;
//   "invariants": test_rows_sum_to_one_and_masked_are_zero;
//                 test_padding_rows: the notebook's b for 3x4, and for
//                 batch > seq every row keeps at least one key;
//                 test_all_ones_mask_is_no_mask: bit for bit, every eval run;
//                 test_dropout_scales_survivors: each survivor is the eval
//                 weight * (1.0f / 0.9f) exactly as PyTorch computes it,
//                 zeros stay zero, 5% to 15% of a large sample is dropped,
//                 and eval mode draws nothing from the generator;
//                 test_fully_masked_row: a batch row whose keys are all
//                 masked gets exactly uniform weights (every score is -1e20,
//                 exp(0) = 1 each) and outputs that are not NaN;
//   "flags":      test_bad_flags: bad sizes, --seed and --train values, an
//                 unknown flag, sizes too large together: each exits 2 with
//                 one line on stderr naming the flag, and makes no --dump
//                 directory.
void add_masked_module_tests(Suite *suite, const MaskedModule *module);

// The seed and sizes of a run of the cell.
typedef struct {
    uint64_t seed;
    int batch, seq, dim;
} MaskedCell;
// Those of recorded run c.
MaskedCell masked_cell(const RecordedCase *c);

// The cell as the lesson runs it, in this process: the same draws in the
// same order (X, then the module), so X and the parameters are PyTorch's.
typedef struct {
    const Tensor *X;      // (B, T, C)
    const Tensor *b;      // (B, S)
    const Tensor *mask;   // (B, T, S)
    const void *net;      // what module->init made
    MaskedWeights weights;
    const Tensor *ret;    // (B, T, C)
} MaskedRun;
MaskedRun run_masked_cell(const MaskedModule *module, MaskedCell cell, bool train);

// The example worked by hand in family_masked.c: dim 2, X = [[1, 0], [0, 1],
// [1, 1]], key 2 padding, and `net` set by the test so that Q = K = V = X
// and output_proj is the identity (in eval mode).
void check_hand_worked(const MaskedModule *module, const void *net);

#endif
