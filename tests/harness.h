// harness.h - what every test program shares.
//
// Each tests/test_*.c is one program with one check Suite. It ends with
//     int main(void) { return run_suite(rng_suite()); }
// and `make test` runs them all. Paths are relative to the project root
// (make runs the tests from there); BUILD_DIR is where the lessons are built.
#ifndef HARNESS_H
#define HARNESS_H

#include <check.h>
// check.h defines a deprecated macro fail(); ours (error.h) is the one we mean.
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

// --- shared by the tests of lessons 6-10 ------------------------------------------

// For tests that call a printing forward in-process: every test of `tc`
// runs with stdout sent to /dev/null (quiet_stdout/restore_stdout as a
// checked fixture), so `make test` shows only check's report.
void quiet_stdout_in(TCase *tc);

// A Linear around given tensors: weight (out, in), bias (out,) or NULL.
Linear linear_from(const Tensor *weight, const Tensor *bias);
// The Linear `name` PyTorch recorded in the directory `reference`:
// <reference>/<name>.weight.npy and <name>.bias.npy.
Linear recorded_linear(const char *reference, const char *name);

// --- shared by the lesson 1-5 tests ------------------------------------------------
// (helpers for more than one of tests/test_lesson01..05.c and test_cli.c)

// Copy numel values into a Linear's existing weight and bias (hand-set layers).
void set_linear(Linear *layer, const float *weight, const float *bias);

// Run the lesson with `args` (NULL-terminated); it must exit 0 with nothing
// on stderr and print every line of `lines`, in order. Returns the run.
RunResult check_prints(const char *lesson, const char *const *args, const char *lines);

// stdout must start, verbatim, with stdout.txt of `reference` up to and
// including its first line ending " M" (the notebook's profile() lines of
// lessons 2 and 3), so a diff against the notebook shows only the extras.
void check_notebook_lines_first(const char *out, const char *reference);

// Attention weights (B, T, S): every row sums to 1 (to 1e-6), and where
// `mask` (B, T, S) is 0 the weight is exactly 0 (exp(-1e20 - max)
// underflows), elsewhere above 0. mask NULL: nothing is masked. Returns how
// many weights were masked. `what` names the run in a failure.
int check_weight_rows(const Tensor *att_weight, const Tensor *mask, const char *what);

// Dropout, p = 0.1 as in every notebook. `dropped` zero exactly where `want`
// is (same shape, element for element).
void assert_same_zeros(const Tensor *dropped, const Tensor *want, const char *what);
// `dropped` is `before` after dropout in train mode: zeros stay zero, each
// survivor is before * (1.0f / 0.9f) exactly as PyTorch computes it, and
// between 5% and 15% of the non-zero weights were dropped (a large sample).
void check_dropout_survivors(const Tensor *before, const Tensor *dropped);

// padding_rows of lessons 4 and 5: the notebook's b for 3x4, and for
// batch > seq every row keeps at least one key.
void check_padding_rows(const Tensor *(*padding_rows)(int batch, int seq));

// The masked example of lessons 4 and 5, worked by hand: dim 2, Q = K = V = X
// and output_proj the identity, X = [[1, 0], [0, 1], [1, 1]], key 2 padding.
Tensor *hand_worked_X(void);      // (1, 3, 2)
Tensor *hand_worked_mask(void);   // (1, 3, 3): b = [1, 1, 0] repeated per query
void check_hand_worked(const Tensor *att_weight, const Tensor *ret);

// A (batch, seq, seq) mask of ones but for batch row `hidden`, whose every
// key is masked.
Tensor *mask_hiding_batch_row(int batch, int seq, int hidden);

// The five runs gen_lesson04.py and gen_lesson05.py both record (the same
// seeds and sizes for V3 and V4, so test_lesson05 can also check V4 against
// lesson 4's V3): keep in step with MASKED_CASES in tests/reference/reference.py.
typedef struct {
    const char *dir;
    uint64_t seed;
    int batch, seq, dim;
    bool train;
    const char *args[12];   // the lesson's flags for this run
} MaskedCase;
enum { N_MASKED_CASES = 5 };
extern const MaskedCase MASKED_CASES[N_MASKED_CASES];

// The command lines lessons 4 and 5 (sizes, --seed, --train) must refuse.
enum { N_MASKED_BAD_FLAGS = 10 };
extern const BadFlags MASKED_BAD_FLAGS[N_MASKED_BAD_FLAGS];

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
