// harness.h - what every test program shares.
//
// Each tests/test_*.c is one program with one check Suite. It ends with
//     int main(void) { return run_suite(rng_suite()); }
// and `make test` runs them all (`make test-N` those of lesson N).
//
// A test that calls a lesson's functions includes the lesson's .c files
// into itself, the lesson file first with its main() renamed:
//     #define main lesson_main
//     #include "../lessons/02-self-attention-v1/self_attention_v1.c"
//     #undef main
// then, the same way, each sibling .c file of the lesson's directory (the
// speed or measurement code a long lesson keeps beside it: lesson/lesson.h).
//
// Paths are relative to the project root (make runs the tests from there);
// BUILD_DIR is where the lessons are built.
#ifndef HARNESS_H
#define HARNESS_H

#include <check.h>
// check.h defines a deprecated macro fail(); ours (core/error.h) is the one we mean.
#undef fail

#include "attention.h"

#ifndef BUILD_DIR
#define BUILD_DIR "build"
#endif
#define DATA_DIR "tests/data"

// Run the suite, print check's summary, return 0 if every check passed.
int run_suite(Suite *suite);
// A test case whose tests each end by freeing the arena (so valgrind and
// LeakSanitizer see no leaks even with CK_FORK=no).
TCase *new_tcase(const char *name);

// --- reference data recorded from PyTorch (tests/data) ---------------------
// Read a .npy file ('<f4', '<i8' or '|b1', C order) into an arena tensor;
// a missing or malformed file fails the current test with its path.
Tensor *load_npy(const char *path);
// Read a whole text file into an arena string; fails the test if missing.
const char *read_text(const char *path);
// printf-style path building into an arena string.
const char *path_join(const char *format, ...) __attribute__((format(printf, 1, 2)));

// torch.arange(numel).view(shape): 0, 1, 2, ... in row-major order, so
// element [i, j, k] of a (2, 3, 4) tensor is 12*i + 4*j + k, easy to check.
Tensor *arange(Shape shape);

// --- comparing tensors --------------------------------------------------------
// Every |got - want| <= atol + rtol*|want| (NaN only matches NaN). On
// failure the message names `what`, the worst index and both values.
void assert_close(const Tensor *got, const Tensor *want, float atol, float rtol,
                  const char *what);
// Bit for bit (same shape, same float bits), for generator outputs.
void assert_bitwise_equal(const Tensor *got, const Tensor *want, const char *what);

// --- error paths ----------------------------------------------------------------
// Run fn(arg) and return the message it passed to fail(), or NULL if it
// returned normally. Tests the "matmul: shapes ..." texts.
typedef void (*Action)(void *arg);
const char *failure_of(Action fn, void *arg);

// --- running a lesson as a program ----------------------------------------------
typedef struct {
    int status;          // exit status, or 128 + signal
    const char *out;     // everything it wrote on stdout (arena string)
    const char *err;     // everything it wrote on stderr (arena string)
} RunResult;
// Run `program` (a path) with arguments (NULL-terminated list).
RunResult run_program(const char *program, const char *const *args);
// The built lesson binary for lesson directory `dir` ("02-self-attention-v1").
const char *lesson_binary(const char *dir);

// A fresh empty directory under /tmp (arena string), and rm -r of one.
const char *make_temp_dir(void);
void remove_dir(const char *path);

// True if the lines of `expected` appear in `text` in the same order (each
// as a whole line; other lines may come between). On false, *missing points
// at the first expected line not found (arena string).
int lines_in_order(const char *text, const char *expected, const char **missing);
// The line at *cursor (without its newline) as an arena string, moving
// *cursor to the next line; NULL when *cursor is at the end of the text.
const char *next_line(const char **cursor);

// --- what every lesson test does ------------------------------------------------

// Silence stdout (a forward that prints, called in-process) and bring it back:
//     int saved = quiet_stdout();  ...  restore_stdout(saved);
int quiet_stdout(void);
void restore_stdout(int saved);

// One lesson run against one run recorded from PyTorch
// (tests/reference/gen_lessonNN.py wrote `reference`/<name>.npy and stdout.txt).
typedef struct {
    const char *lesson;            // "04-self-attention-v3"
    const char *reference;         // "tests/data/lesson04/seed0"
    const char *const *args;       // the case's flags, NULL-terminated (NULL: none)
    const char *const *exact;      // dumps that must match bit for bit: drawn
                                   // inputs and parameters (NULL-terminated)
    const char *const *computed;   // dumps that must match to atol + rtol*|x|
    float atol, rtol;
    bool starts_with_reference;    // stdout must START with stdout.txt, verbatim
                                   // (otherwise its lines must appear in order)
} ReferenceRun;
// Run the lesson with the case's flags and --dump into a temporary
// directory; it must exit 0 with nothing on stderr. Compare every listed
// dump and the printed text with the reference, clean up, and return the
// run (for further checks).
RunResult check_against_reference(const ReferenceRun *run);

// One run recorded from PyTorch by tests/reference/gen_lessonNN.py: its
// directory under the lesson's data directory, the lesson's flags that make
// the same draws, and (for tests that redo the run in-process) its seed and
// sizes.
typedef struct {
    const char *dir;        // "seed3_batch2_seq5_dim48_heads4", in tests/data/lessonNN
    const char *args[24];   // the lesson's flags for this run, NULL-terminated
    uint64_t seed;
    int batch, seq, dim;
    bool train;
} RecordedCase;
// <data>/<case dir>/<name>.npy, e.g. load_recorded(DATA_DIR "/lesson02", c, "X").
Tensor *load_recorded(const char *data, const RecordedCase *c, const char *name);

// A command line the lesson must refuse.
typedef struct {
    const char *args[8];   // NULL-terminated
    const char *named;     // text the one stderr line must contain (the flag)
} BadFlags;
// Each case, run with "--dump DIR" in front, must exit 2 with nothing on
// stdout, exactly one line on stderr starting "<program>: " and containing
// `named`, and must not create DIR.
void check_bad_flags(const char *lesson, const char *program, const BadFlags *cases,
                     int n_cases);

// The --dot graph the lesson draws when run with `args` (NULL-terminated;
// NULL: none) and --dot into a temporary file: its text (arena string). The
// run must exit 0. *nodes gets the number of nodes (each on a line of its
// own with a label, edges being the lines with "->"): a diagram a learner
// takes in at a glance has at most about 40.
const char *lesson_graph(const char *lesson, const char *const *args, int *nodes);

// --- shared by the tests of lessons 6-10 ------------------------------------------

// A Linear around given tensors: weight (out, in), bias (out,) or NULL.
Linear linear_from(const Tensor *weight, const Tensor *bias);
// The Linear `name` PyTorch recorded in the directory `reference`:
// <reference>/<name>.weight.npy and <name>.bias.npy.
Linear recorded_linear(const char *reference, const char *name);

// --- shared by the tests of lessons 6-8 (multi-head, cross-attention, gqa) and 11 -----

// check_against_reference for case `c`: `shared` holds what every case of
// the lesson has in common (the lesson, the dumps to compare, the
// tolerances), the case adds its directory under `data`
// ("tests/data/lesson06") and its flags.
RunResult check_recorded_case(ReferenceRun shared, const char *data, const RecordedCase *c);

// Run the lesson without flags: exit 0, nothing on stderr, and stdout
// opening with `opening`, verbatim (the notebook's own lines come first).
void check_output_opens_with(const char *lesson, const char *opening);

// Attention weights (B, H, T, S) computed under `mask` (B, H, T, S): every
// row sums to 1 (to 1e-6); where the mask is 0 the weight is exactly 0 and
// elsewhere above 0, except in a row whose mask is all zeros, which is
// uniform, exactly 1/S (a -1e20 fill, not -inf: no NaN). Returns how many
// rows were all masked. `what` names the run in a failure.
int check_multi_head_weights(const Tensor *weights, const Tensor *mask, const char *what);

// `after` is `before` recomputed with one input slice changed. Along `dim`,
// slice `changed` moved by more than `min_change` and every other slice is
// bitwise unchanged: heads that do not see each other, queries that do not.
// A failure names "<what> <index>".
void assert_only_slice_changed(const Tensor *before, const Tensor *after, int dim, int changed,
                               float min_change, const char *what);

// The claim lessons 6 and 7 print about output_mid, for a (B, H, T, D)
// shape with H > 1 and T > 1: view(B, T, -1) of its transpose(1, 2) fails
// with PyTorch's message, and reshape(B, T, -1) copies instead, equal to
// contiguous().view(B, T, -1).
void check_view_needs_contiguous(Shape output_mid);

// --- shared by the tests of lessons 9 and 10 -----------------------------------------

// Lessons 9 and 10 both build the GQA notebook's GQA module: the same parameters,
// the same names, the same flags.

// <reference>/<name>.npy, recorded from PyTorch.
Tensor *load_reference(const char *reference, const char *name);
// The module's Linear layers as PyTorch recorded them in `reference`, in
// the order it draws them: *layers[0..3] get w_query, w_key, w_value, o_proj.
void recorded_gqa_linears(Linear *const layers[4], const char *reference);

// check_bad_flags with what both lessons must refuse of the module's flags
// at the notebook's sizes (--dim 512 --heads 8 --kv-heads 2: kv-heads not
// dividing heads, heads not dividing dim, malformed values, a (dim, dim)
// weight too large), then with the lesson's own `cases`.
void check_gqa_bad_flags(const char *lesson, const char *program, const BadFlags *cases,
                         int n_cases);

// Causal weights: attn (B, H, T, L) of T new queries after cache_len
// cached keys (L = cache_len + T; cache_len 0 without a cache). In row t
// every weight after key cache_len + t is exactly 0 (exp(-inf)), every
// other one is above 0, the row sums to 1 (to 1e-6), and without a cache
// row 0 is exactly [1, 0, ...] (the first token sees only itself). `what`
// names the run in a failure.
void check_causal_weights(const Tensor *attn, int cache_len, const char *what);

// --- shared by the lesson 1-5 tests ------------------------------------------------
// (helpers for more than one of tests/test_lesson01..05.c and test_cli.c)

// Copy numel values into a Linear's existing weight and bias (hand-set layers).
void set_linear(Linear *layer, const float *weight, const float *bias);

// Run the lesson with `args` (NULL-terminated); it must exit 0 with nothing
// on stderr and print every line of `lines`, in order. Returns the run.
RunResult check_prints(const char *lesson, const char *const *args, const char *lines);

// A command line and lines the lesson must print for it (check_prints).
typedef struct {
    const char *args[12];   // NULL-terminated
    const char *lines;
} PrintsCase;
void check_prints_each(const char *lesson, const PrintsCase *cases, int n_cases);

// The tensors lessons 2-5 compute go through other summation orders than
// PyTorch's (its addmm/bmm kernels against plain loops, its vectorised exp),
// so they agree with the recorded ones to a few float32 roundings, not bit
// for bit. The values are O(1): ROUNDING_ATOL covers the roundings near 0,
// ROUNDING_RTOL (~80 ulps) the rest.
#define ROUNDING_ATOL 1e-6f
#define ROUNDING_RTOL 1e-5f


// The four SelfAttV1 runs gen_lesson02.py records (keep in step with its
// CASES), which test 3 reads too.
enum { N_V1_CASES = 4 };
extern const RecordedCase V1_CASES[N_V1_CASES];

// Lessons 2 and 3: check_against_reference for recorded case c of `data`
// (`exact` and `computed` as there, tolerances ROUNDING_*, PyTorch's lines
// printed in order), and then stdout must start, verbatim, with stdout.txt
// up to and including its first line ending " M" (the notebook's profile()
// lines), so a diff against the notebook shows only the extras.
RunResult check_profiled_run(const char *lesson, const char *data, const RecordedCase *c,
                             const char *const *exact, const char *const *computed);

// Attention weights (B, T, S): every row sums to 1 (to 1e-6), and where
// `mask` (B, T, S) is 0 the weight is exactly 0 (exp(-1e20 - max)
// underflows), elsewhere above 0. mask NULL: nothing is masked. Returns how
// many weights were masked. `what` names the run in a failure.
int check_weight_rows(const Tensor *att_weight, const Tensor *mask, const char *what);

// --- lessons 4 and 5: SelfAttV3 and SelfAttV4 ------------------------------------------
// The two modules compute the same attention from differently laid out
// parameters, and gen_lesson04.py and gen_lesson05.py record the same runs
// for both (MASKED_CASES), so tests 4 and 5 make the same checks: each test
// describes its module once, as a MaskedModule, and add_masked_module_tests
// adds the shared checks to its suite.

// What the checks read from a forward's steps.
typedef struct {
    const Tensor *att_weight;           // (B, T, S) after softmax, before dropout
    const Tensor *att_weight_dropped;   // (B, T, S) after dropout (att_weight in eval)
} MaskedWeights;

typedef struct {
    const char *lesson;            // "04-self-attention-v3"
    const char *program;           // "lesson-4", the first word of its messages
    const char *data;              // DATA_DIR "/lesson04": its recorded MASKED_CASES
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

// The five runs both record (the same seeds and sizes for V3 and V4, so
// test 5 can also check V4 against lesson 4's V3): keep in step with
// MASKED_CASES in tests/reference/reference.py.
enum { N_MASKED_CASES = 5 };
extern const RecordedCase MASKED_CASES[N_MASKED_CASES];

// Adds to `suite` (one module per test program) the checks tests 4 and 5
// share, in three test cases:
//   "pytorch":    test_matches_pytorch: the binary, with --dump and the flags
//                 of each MASKED_CASES run: `exact` dumps bit for bit,
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
MaskedRun run_masked_cell(const MaskedModule *module, const RecordedCase *c, bool train);

// The example worked by hand in harness.c: dim 2, X = [[1, 0], [0, 1],
// [1, 1]], key 2 padding, and `net` set by the test so that Q = K = V = X
// and output_proj is the identity (in eval mode).
void check_hand_worked(const MaskedModule *module, const void *net);

// --- bad input and output paths (test_outputs, test_fuzz_cli, test_limits) ---------

// run_program, with two more controls: the program runs in directory `dir`
// (NULL: the current one; `program` may still be relative to the current
// one), and is stopped after `seconds` (0: never) by timeout(1), which then
// makes the status 124.
RunResult run_program_with(const char *dir, int seconds, const char *program,
                           const char *const *args);

// A refusal: exit 2, nothing on stdout, and exactly one line on stderr that
// starts with `prefix` ("lesson-2: ") and does not end in ": Success" (a
// message built after errno was lost). `what` names the case in a failure.
void assert_one_line_refusal(RunResult r, const char *prefix, const char *what);

// How many entries (other than . and ..) the directory holds; -1 if it
// cannot be read.
int count_entries(const char *dir);
// rm -rf: the directory and everything under it (symbolic links are
// removed, never followed).
void remove_tree(const char *path);

// The lesson directories in lessons/ ("01-toy-qkv", ...), sorted, at most
// `capacity` of them; returns how many.
int find_lesson_dirs(const char **dirs, int capacity);

// fn(arg) must fail() with a message starting with `start`; returns the message.
const char *check_fails(Action fn, void *arg, const char *start);

#endif
