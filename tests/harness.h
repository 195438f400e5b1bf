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
// then, the same way, the sibling .c files it calls (the parts, flags and
// measurement code a long lesson keeps beside it: lesson/lesson.h). A
// sibling whose functions the lesson reaches through an extern table, the
// kernels.c of lessons 13, 14 and 16, is not included: the Makefile links the
// lesson's own object of it into the test, so it compiles once, at the
// lesson's flags.
//
// Paths are relative to the project root (make runs the tests from there);
// BUILD_DIR is where the lessons are built.
//
// The lesson's main() so included (lesson_main) is what the lesson's test
// hands its budget checks (add_budget_tests), which call it in this process;
// the tests that call every lesson take their main() from the table LESSONS.
//
// What only a family of lessons' tests shares is in a file of its own,
// linked into every test like this one: family_self_attention.h (lessons 2
// to 5), family_masked.h (4 and 5), family_multi_head.h (6, 7 and 11),
// family_gqa.h (9 and 10).
#ifndef HARNESS_H
#define HARNESS_H

#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
// check.h defines a deprecated macro fail(); ours (core/error.h) is the one we mean.
#undef fail

#include "attention.h"

#ifndef BUILD_DIR
#define BUILD_DIR "build"
#endif
#define DATA_DIR "tests/data"

// Run the suite, print check's summary, return 0 if every check passed.
int run_suite(Suite *suite);
// `make test-long` sets ATTN_TEST_LONG=1: the tests then also make the runs that need
// many programs (every fuzzed command line and every size at its limit as a program,
// every flag run at its budget's edge, every run a lesson's test lists as long).
bool long_tests(void);
// A test case whose tests each end by freeing the arena (so valgrind and
// LeakSanitizer see no leaks even with CK_FORK=no).
TCase *new_tcase(const char *name);

// --- checks that cannot run here ---------------------------------------------------
// A check that cannot do what it is for on this machine or in this build (the
// lessons it compares with are not built, the CPU lacks the kernels it compares)
// must not pass in silence. In a test of a new_tcase:
//     skip_test("lessons 5 and 13 are not built");    says so, and ends the test
//     note_skipped("no %s kernels here", name);       says so, and the test goes on
//                                                     with what it can check
// The first in a check prints "SKIPPED <test>: <why>" on stdout, any more in the same
// check "  and: <why>"; tests/run-tests.sh counts the checks that printed the first as
// skipped rather than passed (one that also failed is counted in both).
#define note_skipped(...) note_skipped_in(__func__, __VA_ARGS__)
#define skip_test(...)             \
    do {                           \
        note_skipped(__VA_ARGS__); \
        return;                    \
    } while (0)
// note_skipped, with `function` (the test's, as __func__ names it) for <test>.
void note_skipped_in(const char *function, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

// --- reference data recorded from PyTorch (tests/data) ---------------------
// Read a .npy file ('<f4', '<i8' or '|b1', C order) into an arena tensor;
// a missing or malformed file fails the current test with its path.
Tensor *load_npy(const char *path);
// Read a whole text file into an arena string; fails the test if missing.
const char *read_text(const char *path);
// printf-style path building into an arena string.
const char *path_join(const char *format, ...) __attribute__((format(printf, 1, 2)));
// What a function writes to a FILE, as text: hand it text_stream_open(&s), then
// text_stream_close(&s) returns all it wrote (an arena string).
typedef struct {
    FILE *file;
    char *buffer;    // open_memstream's
    size_t length;
} TextStream;
FILE *text_stream_open(TextStream *stream);
const char *text_stream_close(TextStream *stream);

// FNV-1a, 64 bits: `hash` (FNV1A_START before the first bytes) carried on over `length`
// more bytes. A fingerprint of a text or a file, the one tests/reference/reference.py
// computes of a page's block (block_fingerprint).
#define FNV1A_START UINT64_C(0xcbf29ce484222325)
uint64_t fnv1a(uint64_t hash, const void *bytes, size_t length);

// torch.arange(numel).view(shape): 0, 1, 2, ... in row-major order, so
// element [i, j, k] of a (2, 3, 4) tensor is 12*i + 4*j + k, easy to check.
Tensor *arange(Shape shape);

// --- comparing tensors --------------------------------------------------------
// Same sizes, or the test fails naming `what` and both shapes.
void assert_same_shape(const Tensor *got, const Tensor *want, const char *what);
// An index as text: "[1, 0, 2]" (arena string).
const char *index_text(const int *index, int ndim);
// Every |got - want| <= atol + rtol*|want| (NaN only matches NaN). On
// failure the message names `what`, the worst index and both values.
void assert_close(const Tensor *got, const Tensor *want, float atol, float rtol,
                  const char *what);
// Bit for bit (same shape, same float bits), for generator outputs.
void assert_bitwise_equal(const Tensor *got, const Tensor *want, const char *what);
// got and want, n floats, the same bits; `what` names them in the failure,
// which shows the first element that differs.
void assert_same_floats(const float *got, const float *want, long n, const char *what);

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
// run_program, made once per process for the same program and words: a
// second call returns the first one's result (kept outside the arena). For a
// test program whose tests check the same runs in different ways (test_docs:
// what the pages quote, and every line's width) and which runs its tests in
// one process (CK_FORK=no), so that one test's runs serve the next.
RunResult run_program_once(const char *program, const char *const *args);
// Make n runs for run_program_once at once (programs[i] with args[i], NULL-terminated),
// as many at a time as the machine has CPUs (up to 16), each that it has not made yet.
void run_programs_once(int n, const char *const *programs, const char *const *const *args);
// Note a run for run_programs_once, and make every run noted (in the same test: the
// notes are arena strings).
void plan_run_once(const char *program, const char *const *args);
void make_planned_runs(void);
// --- runs too dear for make test ----------------------------------------------------
// make test makes a run the pages document (test_docs, line_width.c) only when the
// lesson's own budget (common/lesson/budget.h) estimates it at CHEAP_SECONDS or less;
// make test-long makes every one. The estimates are the slow end (most runs take a half
// to a fifth of theirs, though lesson 16's --lr 0.03 took 4.0 s against 2.9 estimated on an
// Intel core, where its products' subnormal results cost more), so make test makes the
// quick runs and leaves nine (make test names them): lessons 16's, 17's and 18's default
// runs (3 s, and about 50 s each, estimated), lesson 13's --seq 1024 (3.4 s), lesson 18's
// --experiment length (9 s), lesson 17's byte pairs (7 s estimated, under 2 taken), ...:
// with them, test_docs alone took 12 of make test's 36 s on 2 cores.
// A test that leaves runs says so with note_skipped, naming them, so that none is left
// in silence (the runner counts the check as skipped).
#define CHEAP_SECONDS 2.5
// The seconds `program` (a lesson) estimates for a run with `args`: run once with
// ATTN_COST=check, which prints the prediction and stops before any work; -1 when the
// budget refuses the run or the program prints no prediction (such a run is cheap).
double estimated_seconds(const char *program, const char *const *args);
// True when this test makes the run: under make test-long always, under make test when
// estimated_seconds is at most CHEAP_SECONDS. When not, *left names the run and its
// estimate, "17-language --steps 900 (about 52 s)" (an arena string).
bool made_in_this_test(const char *program, const char *const *args, const char **left);

// The built lesson binary for lesson directory `dir` ("02-self-attention-v1").
const char *lesson_binary(const char *dir);

// A fresh empty directory under /tmp (arena string), and rm -r of one.
const char *make_temp_dir(void);
void remove_dir(const char *path);

// True if the lines of `expected` appear in `text` in the same order (each
// as a whole line; other lines may come between). On false, *missing points
// at the first expected line not found (arena string).
int lines_in_order(const char *text, const char *expected, const char **missing);
// Does the line `got` print what `want` prints, to the last printed digit? The same words,
// and each number the same text or, where `want`'s has decimals, within one unit of its last
// printed digit: 0.6261 against 0.6262, or 6.0337e-06 against 6.0338e-06, a float rounding
// that crossed a rounding boundary of the text (another BLAS, another summation order).
// Integers must be equal; runs of spaces match any run (a column widens for a '-'). This is
// tools/compare.py's "last digit" rule (without its allowance for the tiny differences a
// "max |a - b|" line measures), for tests that check printed text against PyTorch's.
bool same_line_to_last_digit(const char *got, const char *want);
// lines_in_order with each line matched by same_line_to_last_digit.
int lines_in_order_to_last_digit(const char *text, const char *expected, const char **missing);
// The line at *cursor (without its newline) as an arena string, moving
// *cursor to the next line; NULL when *cursor is at the end of the text.
const char *next_line(const char **cursor);

// --- a lesson's main() in this process ---------------------------------------------
// Starting a program costs a millisecond on one machine and 15 on another; checking a
// lesson's flags and budget takes microseconds. So the tests that check them by the
// thousand call the lesson's main() in their own process (common/lesson/run.h), up to
// where its work would start, and keep a few runs of the real programs for what only a
// process shows: its exit status, its one line on stderr, the files it leaves, what a
// run holds against its prediction (test_in_process checks that a call does what the
// program does).
typedef int (*LessonMain)(int argc, char **argv);
typedef struct {
    const char *dir;     // "08-gqa"
    LessonMain main;     // its main()
} LessonEntry;
// Every lesson of lessons/, in order: tests/lesson_table.c, from the list make writes.
// A test that names these links every lesson into itself, each as one object whose
// names are all its own but its main (the Makefile); the other tests link none.
extern const LessonEntry LESSONS[];
extern const int N_LESSONS;
// The entry of lesson directory `dir` ("08-gqa"); fails the test if there is none.
const LessonEntry *lesson_entry(const char *dir);

// What a call of a lesson's main() did: as a program's run, and what only the call sees.
typedef struct {
    int status;           // the program's exit status: 0, 1 (fail()) or 2 (refused)
    const char *out;      // what it wrote on stdout and stderr (arena strings)
    const char *err;
    bool reached_work;    // it came to where its work starts (and stopped there)
    BudgetCheck budget;   // what check_budget weighed (budget.made: it ran)
    const char *parsed;   // every flag's value as read, and the flags given:
                          // "--batch 3 ... --heatmap 0; given: --batch"
} LessonCall;
// Call main(args) (NULL-terminated; argv[0] is "lesson") in this process, with its
// stdout and stderr caught, and end it where its work would start: when its budget
// admits it, once --dump and --dot are checked (what --dump made is removed again).
// Every way it ends comes back here: a refusal (2), --help (0), fail() (1).
LessonCall call_lesson(LessonMain main, const char *const *args);
// The same, but through to the end of its work: for a lesson whose work is tiny.
LessonCall call_lesson_to_the_end(LessonMain main, const char *const *args);
// The call as a program's run, for the checks written for those (assert_one_line_refusal).
RunResult call_as_run(LessonCall call);

// --- a lesson's budget, as its own test declares it (common/lesson/budget.h) ------------
// A command line the budget refuses, and the whole line it says.
typedef struct {
    const char *args[16];    // NULL-terminated
    const char *line;        // the line on stderr, without its newline
    const char *variable;    // "ATTN_KERNELS=scalar": set for this case, or NULL
} BudgetRefusal;
// Sizes where the tensors that grow with the flags are most of what a run holds (more
// than 8 MiB); "--dump" "" and "--dot" "" stand for a directory and a file of a sandbox.
typedef struct {
    const char *args[28];    // NULL-terminated
} SizedRun;
// A command line the budget must admit: a size the lesson's page names in its text.
typedef struct {
    const char *args[16];    // NULL-terminated
    bool vector_kernels;     // admitted where the CPU has AVX2 and FMA; refused by the
                             // budget elsewhere (a bench priced by its kernels' speed)
} AdmittedRun;
typedef struct {
    const char *lesson;                // "04-self-attention-v3"
    LessonMain main;                   // its main(), included into the test (lesson_main)
    const BudgetRefusal *refusals;
    int n_refusals;
    const SizedRun *sized;
    int n_sized;
    const AdmittedRun *admitted;       // (NULL: none)
    int n_admitted;
} LessonBudget;
// Add a test case "budget" to the suite (`budget` must outlive it: static):
// - each refusal, called in this process with --dot into a sandbox (but for a --bench,
//   which takes none): exit 2 before anything runs, nothing on stdout, exactly the line
//   on stderr, refused by the budget, and no --dot file made;
// - each sized run, as the program with ATTN_COST=show: it held (the arena's peak plus
//   what --dump kept) no more than it predicted (plus the 1 MiB of names and printed text
//   a prediction may leave out), at least two thirds of it (a prediction far too big
//   refuses runs that fit), more than 8 MiB, and warned of nothing. make test runs the
//   first of them (a second or less each), make test-long all;
// - each admitted run, called in this process (as the program, under ATTN_COST=check,
//   where vector_kernels: its price depends on the CPU's kernels): admitted.
void add_budget_tests(Suite *suite, const LessonBudget *budget);

// --- what every lesson test does ------------------------------------------------

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
    const char *const *loose;      // dumps computed through more roundings (more products
    float loose_atol, loose_rtol;  // summed): to loose_atol + loose_rtol*|x| (NULL: none)
    bool starts_with_reference;    // stdout must START with stdout.txt, verbatim
                                   // (otherwise its lines must appear in order)
} ReferenceRun;
// Run the lesson with the case's flags and --dump into a temporary
// directory; it must exit 0 with nothing on stderr. Compare every listed
// dump and the printed text with the reference, clean up, and return the
// run (for further checks).
RunResult check_against_reference(const ReferenceRun *run);

// --- the runs recorded from PyTorch: tests/data/lessonNN/cases.txt ----------------
// tests/reference/gen_lessonNN.py records each run in a directory of
// tests/data/lessonNN/ and lists the runs in cases.txt there, one a line:
//     seed7 seed=7 batch=2 seq=6 train=0 --seed 7 --batch 2 --seq 6
// its directory, its seed and sizes as name=value (a switch as 0 or 1),
// then the lesson's flags that make the same run. A test reads the list
// and keeps no copy of it:
//     tcase_add_loop_test(tc, test_matches_pytorch, 0, recorded_case_count(DATA));
//     ... in the test: const RecordedCase *c = recorded_case(DATA, _i);
enum { MAX_CASE_WORDS = 48 };
typedef struct {
    const char *dir;         // "seed7": its directory in the lesson's data directory
    const char *reference;   // "tests/data/lesson09/seed7": that directory
    const char *args[MAX_CASE_WORDS];   // the lesson's flags, NULL-terminated
    int n_values;
    const char *names[MAX_CASE_WORDS];    // "seed", "batch", ...
    const char *values[MAX_CASE_WORDS];   // "7", "2", ..., as written
} RecordedCase;

// How many runs `data` ("tests/data/lesson09") lists, for
// tcase_add_loop_test in main(), before any test runs: a list that is
// missing or empty ends the program with a message.
int recorded_case_count(const char *data);
// Run i (from 0) of the list, or the run whose directory is `dir` (arena
// strings). Fails the test if there is none.
const RecordedCase *recorded_case(const char *data, int i);
const RecordedCase *recorded_case_named(const char *data, const char *dir);
// The same for the runs that have `value` ("train=0": those without dropout),
// for a test that only they can take: it then has no iteration that checks
// nothing.
int recorded_case_count_where(const char *data, const char *value);
const RecordedCase *recorded_case_where(const char *data, const char *value, int i);
// Value `name` of the run: as a whole number, or as written. Fails the test
// if the run has no such value.
long case_int(const RecordedCase *c, const char *name);
const char *case_text(const RecordedCase *c, const char *name);

// <reference>/<name>.npy: load_reference(c->reference, "X").
Tensor *load_reference(const char *reference, const char *name);
// The Linear `name` PyTorch recorded in the directory `reference`:
// <reference>/<name>.weight.npy and <name>.bias.npy.
Linear recorded_linear(const char *reference, const char *name);
// A Linear around given tensors: weight (out, in), bias (out,) or NULL.
Linear linear_from(const Tensor *weight, const Tensor *bias);
// Copy numel values into a Linear's existing weight and bias (hand-set layers).
void set_linear(Linear *layer, const float *weight, const float *bias);

// check_against_reference for recorded run c: `shared` holds what every run
// of the lesson has in common (the lesson, the dumps to compare, the
// tolerances), the run adds its directory and its flags.
RunResult check_recorded_case(ReferenceRun shared, const RecordedCase *c);

// The tensors lessons compute go through other summation orders than
// PyTorch's (its addmm/bmm kernels against plain loops, its vectorised
// exp), so they agree with the recorded ones to a few float32 roundings,
// not bit for bit. For values of O(1): ROUNDING_ATOL covers the roundings
// near 0, ROUNDING_RTOL (~80 ulps) the rest.
#define ROUNDING_ATOL 1e-6f
#define ROUNDING_RTOL 1e-5f

// --- a lesson's command line, printed lines and graph ------------------------------

// A command line the lesson must refuse.
typedef struct {
    const char *args[10];  // NULL-terminated
    const char *named;     // text the one stderr line must contain (the flag)
} BadFlags;
// Each case, run with "--dump DIR" in front, must exit 2 with nothing on
// stdout, exactly one line on stderr starting "<program>: " and containing
// `named`, and must not create DIR. The lesson's main() is called in this process
// when the test has declared it (add_budget_tests), its program is run otherwise.
void check_bad_flags(const char *lesson, const char *program, const BadFlags *cases,
                     int n_cases);

// The --dot graph the lesson draws when run with `args` (NULL-terminated;
// NULL: none) and --dot into a temporary file: its text (arena string). The
// run must exit 0. *nodes gets the number of nodes (each on a line of its
// own with a label, edges being the lines with "->"): a diagram a learner
// takes in at a glance has at most about 40.
const char *lesson_graph(const char *lesson, const char *const *args, int *nodes);

// Run the lesson with `args` (NULL-terminated); it must exit 0 with nothing
// on stderr and print every line of `lines`, in order. Returns the run.
RunResult check_prints(const char *lesson, const char *const *args, const char *lines);

// A command line and lines the lesson must print for it (check_prints).
typedef struct {
    const char *args[12];   // NULL-terminated
    const char *lines;
} PrintsCase;
void check_prints_each(const char *lesson, const PrintsCase *cases, int n_cases);

// --- bad input and output paths (test_outputs, test_fuzz_cli, test_limits) ---------

// run_program, with two more controls: the program runs in directory `dir`
// (NULL: the current one; `program` may still be relative to the current
// one), and is stopped after `seconds` (0: never) by SIGALRM, which then
// makes the status RUN_TIMED_OUT.
RunResult run_program_with(const char *dir, int seconds, const char *program,
                           const char *const *args);
#define RUN_TIMED_OUT (128 + SIGALRM)
// Start `program` in directory `dir` (NULL: here) and return at once with its
// pid, its output thrown away, SIGINT and SIGTERM at their defaults: for a
// test that signals it (waitpid is the test's).
pid_t start_program(const char *dir, const char *program, const char *const *args);

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
