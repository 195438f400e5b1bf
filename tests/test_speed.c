// test_speed.c - common/speed/: the rounds of a bench and the verdict on the
// machine, on timings given here (nothing is timed); the kernel sets a CPU
// runs and ATTN_KERNELS; the FMA chains of every set against the scalar one;
// and every lesson that reads ATTN_KERNELS refusing a bad value in one line.
#define _POSIX_C_SOURCE 200809L   // setenv
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "speed/blocks.h"
#include "speed/choice.h"
#include "speed/cpu.h"
#include "speed/peak.h"
#include "speed/timing.h"

// A Timing of the rounds given, in order (ms).
static Timing rounds(const double *ms, int n) {
    Timing t;
    memset(&t, 0, sizeof t);
    for (int i = 0; i < n; i++) {
        add_time(&t, ms[i]);
    }
    return t;
}

// |got - want| within float rounding of the divisions (both near 1).
static void assert_near(double got, double want, const char *what) {
    ck_assert_msg(fabs(got - want) < 1e-12, "%s: %.17g, not %.17g", what, got, want);
}

// --- the rounds --------------------------------------------------------------------

START_TEST(test_best_spread_and_median_by_hand) {
    Timing none;
    memset(&none, 0, sizeof none);
    ck_assert(spread(&none) == 0.0 && median_spread(&none) == 0.0);
    Timing t = rounds((const double[]){6.1, 5.2, 5.25, 5.2, 5.3}, 5);   // a cold first round
    ck_assert(t.runs == 5 && t.best == 5.2 && t.worst == 6.1);
    assert_near(spread(&t), 6.1 / 5.2 - 1, "spread");
    assert_near(median_spread(&t), 5.25 / 5.2 - 1, "median of 5");   // sorted: the 3rd
    // Of an even number of rounds, the faster of the middle two: one slow round of two,
    // or two of four, is not most of them.
    Timing two = rounds((const double[]){5.0, 9.0}, 2);
    assert_near(median_spread(&two), 0.0, "median of 2");
    Timing four = rounds((const double[]){9.0, 5.0, 8.0, 5.5}, 4);   // sorted 5, 5.5, 8, 9
    assert_near(median_spread(&four), 5.5 / 5.0 - 1, "median of 4");
    // Rounds past KEPT_ROUNDS count in the best and the worst, not in the median.
    double many[KEPT_ROUNDS + 3];
    for (int i = 0; i < KEPT_ROUNDS + 3; i++) {
        many[i] = i < KEPT_ROUNDS ? 5.0 : i == KEPT_ROUNDS ? 4.0 : 20.0;
    }
    Timing long_run = rounds(many, KEPT_ROUNDS + 3);
    ck_assert(long_run.runs == KEPT_ROUNDS + 3 && long_run.best == 4.0 && long_run.worst == 20.0);
    assert_near(median_spread(&long_run), 5.0 / 4.0 - 1, "median of the kept rounds");
}
END_TEST

// --- the verdict on the machine ------------------------------------------------------

// The verdict on `n` timings, the thread having run `share` of 10 s.
static Load load_of(const Timing *timings, int n, double share) {
    const Timing *list[8];
    for (int i = 0; i < n; i++) {
        list[i] = &timings[i];
    }
    Shares shares = {10.0, 10.0 * share};
    return machine_load(&shares, list, n);
}

// A machine is busy when most rounds of some case ran more than 10% slow, or when the
// thread got less than 95% of its runs' time. One slow round (the first, on cold caches:
// 17% here, as lesson 13 saw it on an idle machine) is neither.
START_TEST(test_busy_from_given_timings) {
    const double cold_first[5] = {6.1, 5.2, 5.25, 5.2, 5.3};   // spread 17%, median 1%
    const double three_slow[5] = {5.2, 6.4, 6.3, 5.3, 6.5};    // median 21%
    const double naive_one_slow[3] = {240.9, 280.0, 241.0};
    const double naive_two_slow[3] = {240.9, 280.0, 290.0};
    Timing idle[2] = {rounds(cold_first, 5), rounds(naive_one_slow, 3)};
    Load load = load_of(idle, 2, 0.99);
    ck_assert(!load.busy);
    assert_near(load.worst, 6.1 / 5.2 - 1, "worst");   // the larger: 17% against 16%
    assert_near(load.median, 5.25 / 5.2 - 1, "median");
    assert_near(load.share, 0.99, "share");
    Timing tiled_slow[2] = {rounds(cold_first, 5), rounds(three_slow, 5)};
    load = load_of(tiled_slow, 2, 0.99);
    ck_assert(load.busy);
    assert_near(load.median, 6.3 / 5.2 - 1, "median, 3 of 5 slow");
    Timing naive_slow[2] = {rounds(cold_first, 5), rounds(naive_two_slow, 3)};
    ck_assert(load_of(naive_slow, 2, 0.99).busy);
    // A job with a steady share of the core slows every round alike: the rounds look
    // steady, the thread's share of the time does not.
    ck_assert(load_of(idle, 2, 0.90).busy);
    ck_assert(!load_of(idle, 2, BUSY_SHARE).busy);   // below 95%, not at it
    // Nothing timed on one thread (Shares empty): the share says nothing.
    Shares none = {0.0, 0.0};
    const Timing *first = &idle[0];
    load = machine_load(&none, &first, 1);
    ck_assert(load.share == 1.0 && !load.busy);
}
END_TEST

// What the remark of `load` prints.
static const char *load_text(const Load *load) {
    TextStream text;
    print_load(text_stream_open(&text), load);
    return text_stream_close(&text);
}

// Every line of `text` is at most 100 columns (the project's outputs fit a terminal).
static void assert_short_lines(const char *text) {
    for (const char *line = text; *line != '\0';) {
        size_t length = strcspn(line, "\n");
        ck_assert_msg(length <= 100, "a line of %zu columns: %.*s", length, (int)length, line);
        line += length + (line[length] == '\n');
    }
}

START_TEST(test_the_remark_says_why) {
    const double cold_first[5] = {6.1, 5.2, 5.25, 5.2, 5.3};
    const double three_slow[5] = {5.2, 6.4, 6.3, 5.3, 6.5};
    Timing idle[1] = {rounds(cold_first, 5)}, slow[1] = {rounds(three_slow, 5)};
    Load quiet = load_of(idle, 1, 0.99), shared = load_of(idle, 1, 0.80);
    Load most_slow = load_of(slow, 1, 0.99);
    const char *text = load_text(&quiet);
    ck_assert_msg(strncmp(text, "- the load: ", 12) == 0 &&
                  strstr(text, "the slowest run of a case was up to 17%\n") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "the median run up to 1%; this thread ran 99% of") != NULL &&
                  strstr(text, "At most half the runs of a case were more than 10% slow") != NULL &&
                  strstr(text, "busy") == NULL, "%s", text);
    assert_short_lines(text);
    text = load_text(&shared);
    ck_assert_msg(strstr(text, "this thread ran 80% of") != NULL &&
                  strstr(text, "Less than 95%: other programs had its core") != NULL &&
                  strstr(text, "So the machine was busy.") != NULL &&
                  strstr(text, "most runs of a case ran slow") == NULL, "%s", text);
    assert_short_lines(text);
    text = load_text(&most_slow);
    ck_assert_msg(strstr(text, "A median more than 10% slow: most runs of a case ran slow") !=
                  NULL && strstr(text, "So the machine was busy.") != NULL &&
                  strstr(text, "Less than 95%") == NULL, "%s", text);
    assert_short_lines(text);
}
END_TEST

// --- the kernel sets and ATTN_KERNELS ----------------------------------------------------

// ATTN_KERNELS set to `value` (NULL: unset); returns what it was (an arena copy, or NULL).
static const char *set_kernels_variable(const char *value) {
    const char *before = getenv("ATTN_KERNELS");
    const char *saved = before != NULL ? path_join("%s", before) : NULL;
    if (value != NULL) {
        setenv("ATTN_KERNELS", value, 1);
    } else {
        unsetenv("ATTN_KERNELS");
    }
    return saved;
}

START_TEST(test_sets_this_cpu_runs) {
    ck_assert(cpu_runs("scalar"));
    ck_assert(!cpu_runs("sse9") && !cpu_runs("") && !cpu_runs("AVX2"));
    ck_assert(!cpu_runs("avx512") || cpu_runs("avx2"));   // AVX-512's kernels use AVX2's too
    const char *fastest = fastest_kernels();
    ck_assert(cpu_runs(fastest));
    for (int i = 0; strcmp(KERNEL_SETS[i], fastest) != 0; i++) {   // none faster runs here
        ck_assert_msg(!cpu_runs(KERNEL_SETS[i]), "%s runs here, faster than %s",
                      KERNEL_SETS[i], fastest);
    }
}
END_TEST

// --- the blocks each core wants (speed/blocks.h) ------------------------------------

static Core core_of(const char *vendor, unsigned family, unsigned model, unsigned l2_kib) {
    Core core;
    memset(&core, 0, sizeof core);
    snprintf(core.vendor, sizeof core.vendor, "%s", vendor);
    core.family = family;
    core.model = model;
    core.l2_kib = l2_kib;
    return core;
}

// Every row of the table, and the fallback: a core given by CPUID's vendor, family, model
// and L2, and the kernels' lanes, gives the documented blocks (docs/fast-on-a-cpu.md),
// and lesson 13's AVX-512 variant: the sums apart on the Intel row alone.
START_TEST(test_blocks_for_each_core) {
    static const struct {
        const char *vendor;
        unsigned family, model, l2_kib;
        int lanes, forward_q, forward_k, backward_q, backward_k;
        const char *row;
    } cases[] = {
        {"AuthenticAMD", 25, 17, 1024, 16, 64, 1024, 64, 64, "AMD Zen 4"},   // EPYC 9004
        {"AuthenticAMD", 25, 17, 1024, 8, 64, 512, 64, 64, "AMD Zen 4"},     // ATTN_KERNELS=avx2
        {"AuthenticAMD", 25, 33, 512, 8, 64, 512, 64, 64, "AMD Zen 4"},      // Zen 3: AVX2 only
        {"AuthenticAMD", 25, 17, 1024, 1, 64, 512, 64, 64, "AMD Zen 4"},     // the twins
        {"AuthenticAMD", 26, 2, 1024, 16, 64, 1024, 64, 64, "AMD Zen 5"},
        {"GenuineIntel", 6, 143, 2048, 16, 64, 512, 64, 64, "Intel Xeon, 2 MiB L2"},  // SPR
        {"GenuineIntel", 6, 167, 2048, 16, 64, 512, 64, 64, "Intel Xeon, 2 MiB L2"},  // the VM
        {"GenuineIntel", 6, 167, 2048, 8, 64, 512, 64, 64, "any other core"},   // AVX2's
        {"GenuineIntel", 6, 85, 1024, 16, 64, 1024, 64, 64, "any other core"},  // Skylake-SP
        {"GenuineIntel", 6, 143, 2048, 1, 64, 512, 64, 64, "any other core"},   // the twins
        {"HygonGenuine", 24, 1, 512, 8, 64, 512, 64, 64, "any other core"},
        {"", 0, 0, 0, 1, 64, 512, 64, 64, "any other core"},   // not x86-64
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Core core = core_of(cases[i].vendor, cases[i].family, cases[i].model, cases[i].l2_kib);
        BenchBlocks b = bench_blocks(&core, cases[i].lanes);
        ck_assert_msg(b.forward_q == cases[i].forward_q && b.forward_k == cases[i].forward_k &&
                      b.backward_q == cases[i].backward_q &&
                      b.backward_k == cases[i].backward_k &&
                      strncmp(b.core, cases[i].row, strlen(cases[i].row)) == 0 &&
                      b.sums_apart == (strncmp(cases[i].row, "Intel", 5) == 0) &&
                      strlen(b.why) > 40,
                      "case %zu (%s %u/%u, %d lanes): %d x %d, %d x %d, %s", i, cases[i].vendor,
                      cases[i].family, cases[i].model, cases[i].lanes, b.forward_q, b.forward_k,
                      b.backward_q, b.backward_k, b.core);
    }
    // Zen 4's reason names the registers the run takes: the twins are not said to have 8 floats.
    Core zen4 = core_of("AuthenticAMD", 25, 17, 1024);
    ck_assert_ptr_nonnull(strstr(bench_blocks(&zen4, 16).why, "two 256-bit halves"));
    ck_assert_ptr_nonnull(strstr(bench_blocks(&zen4, 8).why, "8-float registers"));
    ck_assert_ptr_nonnull(strstr(bench_blocks(&zen4, 1).why, "scalar twins"));
    // This machine's own row is one of them.
    BenchBlocks here = bench_blocks_here(16);
    ck_assert(here.forward_q > 0 && here.forward_k > 0 && here.core != NULL);
}
END_TEST

START_TEST(test_kernels_variable) {
    const char *saved = set_kernels_variable(NULL);
    ck_assert_str_eq(kernels_wanted(), fastest_kernels());
    ck_assert_ptr_null(kernels_variable_problem());
    set_kernels_variable("");   // empty: no choice
    ck_assert_str_eq(kernels_wanted(), fastest_kernels());
    ck_assert_ptr_null(kernels_variable_problem());
    set_kernels_variable("scalar");
    ck_assert_str_eq(kernels_wanted(), "scalar");
    ck_assert_ptr_null(kernels_variable_problem());
    // An escape sequence and a newline are spelled out: one line, nothing for the terminal.
    set_kernels_variable("sse\033[1m\nx");
    ck_assert_str_eq(kernels_wanted(), fastest_kernels());
    ck_assert_str_eq(kernels_variable_problem(),
                     "ATTN_KERNELS expects scalar, avx2 or avx512, got 'sse\\x1b[1m\\nx'");
    int refused = 0;
    for (int i = 0; KERNEL_SETS[i] != NULL; i++) {
        set_kernels_variable(KERNEL_SETS[i]);
        const char *problem = kernels_variable_problem();
        if (cpu_runs(KERNEL_SETS[i])) {
            ck_assert_ptr_null(problem);
            ck_assert_str_eq(kernels_wanted(), KERNEL_SETS[i]);
        } else {
            const char *start = path_join("ATTN_KERNELS=%s: this CPU (or compiler) cannot run "
                                          "the %s kernels", KERNEL_SETS[i], KERNEL_SETS[i]);
            ck_assert_msg(problem != NULL && strncmp(problem, start, strlen(start)) == 0 &&
                          strchr(problem, '\n') == NULL, "%s", problem);
            ck_assert_str_eq(kernels_wanted(), fastest_kernels());
            refused += 1;
        }
    }
    if (refused == 0) {
        note_skipped("this CPU runs every kernel set: the refusal of one it cannot run is "
                     "not checked (make valgrind checks it: valgrind has no AVX-512)");
    }
    set_kernels_variable(saved);
}
END_TEST

// Every set gives the scalar chains' bits (each lane does what the scalar chain does).
START_TEST(test_fma_chains_are_twins) {
    ck_assert(fma_chains("scalar", 0, false) == 66.0f);   // 0 + 1 + ... + 11: no step
    float one_step = fma_chains("scalar", 1, true);      // chain 0: 0 * 0.999999 + 0.001
    ck_assert_msg(one_step > 66.0f && one_step < 66.01f, "%.9g", one_step);
    for (int i = 0; KERNEL_SETS[i] != NULL; i++) {
        if (!cpu_runs(KERNEL_SETS[i])) {
            note_skipped("no %s kernels on this CPU: its chains not compared", KERNEL_SETS[i]);
            continue;
        }
        for (int one_chain = 0; one_chain < 2; one_chain++) {
            float want = fma_chains("scalar", 1000, one_chain);
            float got = fma_chains(KERNEL_SETS[i], 1000, one_chain);
            ck_assert_msg(memcmp(&got, &want, sizeof got) == 0, "%s, one chain %d: %.9g, not "
                          "%.9g", KERNEL_SETS[i], one_chain, got, want);
        }
    }
    double peak = fma_peak("scalar", true, 1);
    ck_assert_msg(isfinite(peak) && peak > 0.0, "%g", peak);
}
END_TEST

// The unfused chains: one step is a multiply rounded, then an add rounded (this file is
// built with -ffp-contract=off, so the expression below is not fused either), and every set
// gives the scalar chains' bits.
START_TEST(test_mul_add_chains_are_twins) {
    float want_one = 0.0f;
    for (int c = 0; c < 12; c++) {
        float product = (float)c * 0.999999f;
        want_one += product + 1e-3f;
    }
    float one = mul_add_chains("scalar", 1);
    ck_assert_msg(memcmp(&one, &want_one, sizeof one) == 0, "%.9g, not %.9g", one, want_one);
    float want = mul_add_chains("scalar", 1000);
    for (int i = 0; KERNEL_SETS[i] != NULL; i++) {
        if (!cpu_runs(KERNEL_SETS[i])) {
            note_skipped("no %s kernels on this CPU: its chains not compared", KERNEL_SETS[i]);
            continue;
        }
        float got = mul_add_chains(KERNEL_SETS[i], 1000);
        ck_assert_msg(memcmp(&got, &want, sizeof got) == 0, "%s: %.9g, not %.9g",
                      KERNEL_SETS[i], got, want);
    }
    double peak = mul_add_peak("scalar", 1);
    ck_assert_msg(isfinite(peak) && peak > 0.0, "%g", peak);
}
END_TEST

// --- the lessons ---------------------------------------------------------------------

// Does a .c or .h file of lessons/`dir` include speed/choice.h (read ATTN_KERNELS)?
static bool reads_kernels_variable(const char *dir) {
    DIR *folder = opendir(path_join("lessons/%s", dir));
    ck_assert(folder != NULL);
    bool reads = false;
    struct dirent *entry;
    while (!reads && (entry = readdir(folder)) != NULL) {
        size_t n = strlen(entry->d_name);
        if (n > 2 && entry->d_name[n - 2] == '.' && strchr("ch", entry->d_name[n - 1])) {
            const char *text = read_text(path_join("lessons/%s/%s", dir, entry->d_name));
            reads = strstr(text, "#include \"speed/choice.h\"") != NULL;
        }
    }
    closedir(folder);
    return reads;
}

// Each lesson that reads ATTN_KERNELS refuses a value that is not a set's name before any
// work: exit 2, nothing on stdout, one line on stderr that names the value escaped.
START_TEST(test_lessons_refuse_a_bad_kernels_variable) {
    const char *dirs[64];
    int n_dirs = find_lesson_dirs(dirs, 64), readers = 0;
    const char *saved = set_kernels_variable("sse\033[1m\nx");
    for (int i = 0; i < n_dirs; i++) {
        if (!reads_kernels_variable(dirs[i])) {
            continue;
        }
        readers += 1;
        RunResult run = run_program(lesson_binary(dirs[i]), (const char *const[]){NULL});
        const char *what = path_join("%s with a bad ATTN_KERNELS", dirs[i]);
        assert_one_line_refusal(run, path_join("lesson-%d: ", atoi(dirs[i])), what);
        ck_assert_msg(strstr(run.err, "ATTN_KERNELS expects scalar, avx2 or avx512, got "
                                      "'sse\\x1b[1m\\nx'\n") != NULL, "%s: %s", what, run.err);
        ck_assert_msg(strchr(run.err, '\033') == NULL, "%s: an escape reached stderr", what);
    }
    set_kernels_variable(saved);
    ck_assert_msg(readers >= 1, "no lesson includes speed/choice.h");
}
END_TEST

static Suite *speed_suite(void) {
    Suite *suite = suite_create("speed");
    TCase *timing = new_tcase("timing");
    tcase_add_test(timing, test_best_spread_and_median_by_hand);
    tcase_add_test(timing, test_busy_from_given_timings);
    tcase_add_test(timing, test_the_remark_says_why);
    suite_add_tcase(suite, timing);
    TCase *kernels = new_tcase("kernels");
    tcase_add_test(kernels, test_sets_this_cpu_runs);
    tcase_add_test(kernels, test_blocks_for_each_core);
    tcase_add_test(kernels, test_kernels_variable);
    tcase_add_test(kernels, test_fma_chains_are_twins);
    tcase_add_test(kernels, test_mul_add_chains_are_twins);
    tcase_add_test(kernels, test_lessons_refuse_a_bad_kernels_variable);
    suite_add_tcase(suite, kernels);
    return suite;
}

int main(void) { return run_suite(speed_suite()); }
