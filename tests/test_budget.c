// test_budget.c - what a run may take (common/lesson/budget.h): every lesson
// predicts from its flags what it will hold and do, and a run over the
// budget is refused before anything runs, in one line that names the flags,
// the budget and how to raise it.
//
// 1. A refusal for each lesson, among them every command of issue 18's
//    table (they took gigabytes or minutes; now each is refused at once).
// 2. The predictions hold: each lesson run at a few sizes with ATTN_COST=show
//    held (the arena's peak plus what --dump kept) no more than it predicted,
//    and not much less (a prediction far too big refuses runs that fit).
// 3. The budget admits the lessons' own sizes and every size a page
//    suggests (`make lesson-N ARGS="..."` in README.md and docs/*.md),
//    checked with ATTN_COST=check, which stops after the check.
// 4. ATTN_MAX_MIB and ATTN_MAX_SECONDS raise the budget, and a bad value of
//    either is refused like a bad flag.
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

// --- 1. refusals -------------------------------------------------------------------------

typedef struct {
    const char *lesson;     // "04-self-attention-v3"
    const char *args[14];   // NULL-terminated
    const char *message;    // the whole line on stderr, without its newline
} Refusal;

static const Refusal REFUSALS[] = {
    // Issue 18's table, each command as the probe ran it. (Lesson 12's at
    // --seq 2048 now prints part 1 alone by default, and runs: see
    // test_the_tables_runs_that_fit; with every part it is refused.)
    {"12-bert-layer", {"--batch", "1", "--seq", "2048", "--dim", "1", "--heads", "1",
                       "--intermediate", "1", "--pad", "0", "--all", NULL},
     "lesson-12: --seq 2048 would hold about 1.9 GiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=2000"},
    {"12-bert-layer", {"--batch", "1", "--seq", "8192", "--dim", "1", "--heads", "1",
                       "--intermediate", "1", "--pad", "0", NULL},
     "lesson-12: --seq 8192 would hold about 1.5 GiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=1600"},
    {"04-self-attention-v3", {"--batch", "1", "--seq", "8192", "--dim", "1", NULL},
     "lesson-4: --seq 8192 would hold about 6.8 GiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=7000"},
    {"10-kv-cache", {"--batch", "1", "--prompt", "8191", "--new", "1", "--dim", "1", "--heads",
                     "1", "--kv-heads", "1", NULL},
     "lesson-10: --prompt 8191 would hold about 7.3 GiB at once, more than the 512 MiB "
     "allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=7500"},
    {"08-gqa", {"--head-dim", "32768", NULL},
     "lesson-8: --head-dim 32768 would hold about 7.9 GiB at once, more than the 512 MiB "
     "allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=8200"},
    {"07-cross-attention", {"--batch", "65536", NULL},
     "lesson-7: --batch 65536 would hold about 4.3 GiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=4400"},
    {"10-kv-cache", {"--batch", "16384", NULL},
     "lesson-10: --batch 16384 would hold about 8.5 GiB at once, more than the 512 MiB "
     "allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=8800"},
    // Issue 18's defect 2: this one was interrupted to show what it left behind.
    {"02-self-attention-v1", {"--batch", "1", "--seq", "8192", "--dim", "1", NULL},
     "lesson-2: --seq 8192 would hold about 1.5 GiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=1600"},
    // The others, by memory and by time.
    {"03-self-attention-v2", {"--batch", "64", "--seq", "128", "--dim", "2048", NULL},
     "lesson-3: --batch 64 --seq 128 --dim 2048 would hold about 1.0 GiB at once, more than the "
     "512 MiB allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=1100"},
    {"05-self-attention-v4", {"--seq=8192", "--batch=1", "--dim=1", NULL},
     "lesson-5: --seq 8192 would hold about 1.5 GiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=1600"},
    {"06-multi-head", {"--batch", "8", "--seq", "64", "--dim", "4096", NULL},
     "lesson-6: --batch 8 --seq 64 --dim 4096 would hold about 548 MiB at once, more than the "
     "512 MiB allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=550"},
    {"09-causal-mask", {"--batch", "8", "--seq", "64", "--dim", "4096", NULL},
     "lesson-9: --batch 8 --seq 64 --dim 4096 would take about 110 seconds (estimated from the "
     "sizes), more than the 60 seconds allowed; choose smaller sizes, or allow it with "
     "ATTN_MAX_SECONDS=110"},
    {"02-self-attention-v1", {"--batch", "8", "--seq", "128", "--dim", "4096", NULL},
     "lesson-2: --batch 8 --seq 128 --dim 4096 would take about 4 minutes (estimated from the "
     "sizes), more than the 60 seconds allowed; choose smaller sizes, or allow it with "
     "ATTN_MAX_SECONDS=270"},
    {"11-vit-block", {"--batch", "4", "--seq", "197", "--dim", "1536", "--heads", "12", NULL},
     "lesson-11: --batch 4 --seq 197 --dim 1536 --heads 12 would take about 3 minutes "
     "(estimated from the sizes), more than the 60 seconds allowed; choose smaller sizes, or "
     "allow it with ATTN_MAX_SECONDS=180"},
    // Lesson 16 prices its time by the kernels it runs (a refusal by time would name other
    // figures on a CPU without AVX-512): by memory, then. Its --dot copies step 1's
    // activations to draw them: 1.9 GiB without it.
    {"16-train", {"--batch", "8192", NULL},
     "lesson-16: --batch 8192 would hold about 3.1 GiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=3300"},
    {"16-train", {"--seq", "256", "--vocab", "256", "--batch", "128", NULL},
     "lesson-16: --seq 256 --vocab 256 --batch 128 would hold about 1.4 GiB at once, more than "
     "the 512 MiB allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=1500"},
    // A bench refuses what it could not finish: recomputing every step of
    // 1016 tokens, five times over, costs what a cache saves.
    {"10-kv-cache", {"--bench", "--new", "1000", NULL},
     "lesson-10: --new 1000 would take about 75 minutes (estimated from the sizes), more than "
     "the 60 seconds allowed; choose smaller sizes, or allow it with ATTN_MAX_SECONDS=4600"},
    // Lessons 14 and 15: part 2's naive path keeps P, dP and dS whole; a
    // Llama layer at a small model's width; the bench with (Bq, Bk) tiles of
    // 16 million floats (its time: test_bench_refuses_tiny_blocks).
    {"14-attention-backward", {"--batch", "1", "--seq", "4096", "--heads", "4", NULL},
     "lesson-14: --seq 4096 --heads 4 would hold about 1.8 GiB at once, more than the 512 MiB "
     "allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=1800"},
    {"14-attention-backward", {"--bench", "--block-q", "4096", "--block-k", "4096", NULL},
     "lesson-14: --block-q 4096 --block-k 4096 would hold about 520 MiB at once, more than the "
     "512 MiB allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=530"},
    {"15-llama-block", {"--batch", "8", "--prompt", "512", "--dim", "2048", "--heads", "16",
                        "--kv-heads", "4", NULL},
     "lesson-15: --batch 8 --prompt 512 --dim 2048 --heads 16 --kv-heads 4 would hold about "
     "2.2 GiB at once, more than the 512 MiB allowed; choose smaller sizes, or allow it with "
     "ATTN_MAX_MIB=2300"},
    // Lesson 13's tiled path holds no (N, N) scores (its naive path is
    // skipped beyond 256 MiB), so it is refused only where its inputs and
    // output pass the budget.
    {"13-flash-attention", {"--seq", "65536", NULL},
     "lesson-13: --seq 65536 would hold about 514 MiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=520"},
    // Only the flags raised above their defaults are named, not the ones lowered;
    // what a part costs counts only when it runs.
    {"12-bert-layer", {"--seq", "1024", "--dim", "8", "--heads", "2", "--intermediate", "8",
                       "--part", "9", NULL},
     "lesson-12: --seq 1024 --part 9 would hold about 1.6 GiB at once, more than the 512 MiB "
     "allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=1700"},
};
enum { N_REFUSALS = sizeof REFUSALS / sizeof REFUSALS[0] };

// Refused before anything ran: exit 2, nothing on stdout, exactly the line,
// and no --dot file made (--dot adds nothing to the cost but lesson 16's; --bench takes none).
START_TEST(test_refused_before_anything_runs) {
    const Refusal *refusal = &REFUSALS[_i];
    const char *sandbox = make_temp_dir();
    const char *argv[20];
    int n = 0;
    if (strcmp(refusal->args[0], "--bench") != 0) {
        argv[n++] = "--dot";
        argv[n++] = path_join("%s/graph.dot", sandbox);
    }
    for (int i = 0; refusal->args[i] != NULL; i++) {
        argv[n++] = refusal->args[i];
    }
    argv[n] = NULL;
    RunResult r = run_program_with(NULL, 60, lesson_binary(refusal->lesson), argv);
    assert_one_line_refusal(r, path_join("%.9s", refusal->message), refusal->lesson);
    ck_assert_str_eq(r.err, path_join("%s\n", refusal->message));
    ck_assert_int_eq(count_entries(sandbox), 0);
    remove_dir(sandbox);
}
END_TEST

// Lesson 1 has no sizes: it is refused only under a budget lowered below its
// few kilobytes, and then says so without naming a flag.
START_TEST(test_lesson_1_under_a_tiny_budget) {
    setenv("ATTN_MAX_MIB", "0.0001", 1);
    RunResult r = run_program(lesson_binary("01-toy-qkv"), (const char *[]){NULL});
    unsetenv("ATTN_MAX_MIB");
    assert_one_line_refusal(r, "lesson-1: ", "ATTN_MAX_MIB=0.0001");
    ck_assert_str_eq(r.err, "lesson-1: this run would hold about 1 KiB at once, more than the "
                     "105 bytes allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=1\n");
    setenv("ATTN_MAX_SECONDS", "0.000001", 1);
    r = run_program(lesson_binary("01-toy-qkv"), (const char *[]){NULL});
    unsetenv("ATTN_MAX_SECONDS");
    assert_one_line_refusal(r, "lesson-1: this run would take about ", "ATTN_MAX_SECONDS");
}
END_TEST

// Lesson 14's bench estimates its seconds from its kernels' speed, so the
// figure depends on the kernels: the scalar ones, which every machine has,
// make it the same everywhere. One-query blocks cost a tile's overhead once per
// query and key (issue 18 saw lesson 13's run past 25 s with no output).
START_TEST(test_bench_refuses_tiny_blocks) {
    const char *forced = getenv("ATTN_KERNELS");
    forced = forced != NULL ? path_join("%s", forced) : NULL;
    setenv("ATTN_KERNELS", "scalar", 1);
    const char *args[] = {"--bench", "--block-q", "1", "--block-k", "1", NULL};
    RunResult r = run_program(lesson_binary("14-attention-backward"), args);
    if (forced != NULL) {
        setenv("ATTN_KERNELS", forced, 1);
    } else {
        unsetenv("ATTN_KERNELS");
    }
    assert_one_line_refusal(r, "lesson-14: ", "ATTN_MAX_SECONDS=");
    ck_assert_str_eq(r.err, "lesson-14: --block-q 1 --block-k 1 would take about 13 minutes "
                     "(estimated from the sizes), more than the 60 seconds allowed; choose smaller "
                     "sizes, or allow it with ATTN_MAX_SECONDS=770\n");
}
END_TEST

// Lesson 12's command of the table prints part 1 alone now (the other parts
// with --part N or --all): it is admitted, and runs (in well under a second,
// holding about 65 MiB, where it took 16 s and 1.9 GB).
START_TEST(test_the_tables_runs_that_fit) {
    const char *args[] = {"--batch", "1", "--seq", "2048", "--dim", "1", "--heads", "1",
                          "--intermediate", "1", "--pad", "0", NULL};
    RunResult r = run_program_with(NULL, 60, lesson_binary("12-bert-layer"), args);
    ck_assert_msg(r.status == 0 && r.err[0] == '\0', "exit %d: %s", r.status, r.err);
}
END_TEST

// --- 2. the predictions hold ----------------------------------------------------------------

typedef struct {
    double predicted, held, seconds;
} Measured;

// Run the lesson with ATTN_COST=show and read its two cost lines.
static Measured measure(const char *lesson, const char *const *args) {
    setenv("ATTN_COST", "show", 1);
    RunResult r = run_program_with(NULL, 120, lesson_binary(lesson), args);
    unsetenv("ATTN_COST");
    ck_assert_msg(r.status == 0, "%s: exit %d: %s", lesson, r.status, r.err);
    Measured m = {-1, -1, -1};
    const char *predicted = strstr(r.err, "cost: predicted bytes=");
    const char *held = strstr(r.err, "cost: held bytes=");
    ck_assert_msg(predicted != NULL && held != NULL, "%s: no cost lines in: %s", lesson, r.err);
    sscanf(predicted, "cost: predicted bytes=%lf seconds=%lf", &m.predicted, &m.seconds);
    sscanf(held, "cost: held bytes=%lf", &m.held);
    ck_assert_msg(strstr(r.err, "warning") == NULL, "%s: %s", lesson, r.err);
    return m;
}

typedef struct {
    const char *lesson;
    const char *args[26];
} Sized;

// Sizes where the tensors that grow with the flags are most of what a run
// holds (more than 8 MiB; kept small, as each takes a part of a second or
// more), each flag of each lesson raised in one of them, and the switches
// that add tensors on.
static const Sized SIZED[] = {
    {"02-self-attention-v1", {"--batch", "2", "--seq", "512", "--dim", "48", NULL}},
    {"02-self-attention-v1", {"--batch", "8", "--seq", "256", "--dim", "16", "--dump", "", NULL}},
    {"03-self-attention-v2", {"--batch", "2", "--seq", "512", "--dim", "48", NULL}},
    {"03-self-attention-v2", {"--batch", "8", "--seq", "256", "--dim", "16", "--dump", "", NULL}},
    {"04-self-attention-v3", {"--batch", "2", "--seq", "384", "--dim", "48", "--train", NULL}},
    {"04-self-attention-v3", {"--batch", "4", "--seq", "256", "--dim", "16", "--dump", "", NULL}},
    {"05-self-attention-v4", {"--batch", "2", "--seq", "512", "--dim", "48", "--train", NULL}},
    {"05-self-attention-v4", {"--batch", "8", "--seq", "256", "--dim", "16", "--dump", "", NULL}},
    {"06-multi-head", {"--batch", "2", "--seq", "256", "--dim", "64", "--heads", "4", "--train",
                       NULL}},
    {"06-multi-head", {"--batch", "16", "--seq", "16", "--dim", "256", "--dump", "", NULL}},
    {"07-cross-attention", {"--batch", "2", "--seq-q", "200", "--seq-k", "300", "--dim", "32",
                            "--heads", "4", "--train", NULL}},
    {"07-cross-attention", {"--batch", "32", "--seq-q", "8", "--seq-k", "24", "--dim", "256",
                            "--dump", "", NULL}},
    {"08-gqa", {"--seq", "320", "--head-dim", "16", NULL}},
    {"08-gqa", {"--batch", "2", "--seq", "64", "--heads", "16", "--kv-heads", "4", "--head-dim",
                "128", "--dump", "", NULL}},
    {"09-causal-mask", {"--batch", "2", "--seq", "256", "--dim", "64", "--heads", "8",
                        "--kv-heads", "2", "--train", NULL}},
    {"09-causal-mask", {"--batch", "4", "--seq", "128", "--dim", "64", "--dump", "", NULL}},
    {"10-kv-cache", {"--prompt", "300", "--new", "20", "--dim", "64", NULL}},
    {"10-kv-cache", {"--batch", "6", "--prompt", "20", "--new", "40", "--dim", "256", "--dump",
                     "", NULL}},
    {"10-kv-cache", {"--bench", "--batch", "3", "--prompt", "4", "--new", "4", "--dim", "96",
                     "--heads", "2", "--kv-heads", "2", NULL}},
    {"11-vit-block", {"--batch", "2", "--seq", "256", "--dim", "32", "--heads", "8", "--train",
                      "--drop", "0.1", "--attn-drop", "0.1", "--drop-path", "0.1", NULL}},
    {"11-vit-block", {"--batch", "8", "--seq", "64", "--dim", "128", "--mlp-ratio", "2.5",
                      "--dump", "", NULL}},
    {"12-bert-layer", {"--batch", "1", "--seq", "192", "--dim", "16", "--heads", "2",
                       "--intermediate", "16", "--all", NULL}},
    {"12-bert-layer", {"--seq", "40", "--past", "8", "--position", "relative_key_query",
                       "--max-positions", "64", "--encoder-seq", "40", "--dim", "64",
                       "--chunk", "8", "--head-mask", "1", "--train", "--all", "--dump", "",
                       NULL}},
    {"12-bert-layer", {"--batch", "2", "--seq", "32", "--dim", "128", "--heads", "8",
                       "--intermediate", "256", "--encoder-seq", "64", "--encoder-width", "32",
                       "--position", "relative_key", "--max-positions", "32", "--all", NULL}},
    {"12-bert-layer", {"--batch", "2", "--seq", "512", "--dim", "32", "--heads", "4",
                       "--intermediate", "64", NULL}},
    {"12-bert-layer", {"--batch", "1", "--seq", "160", "--dim", "16", "--heads", "2",
                       "--intermediate", "16", "--part", "9", NULL}},
    {"14-attention-backward", {"--batch", "2", "--seq", "192", "--dim", "32", "--heads", "4",
                               "--head-dim", "32", "--causal", "--train", NULL}},
    {"14-attention-backward", {"--seq", "96", "--dim", "64", "--heads", "4", "--kv-heads",
                               "1", "--head-dim", "128", "--dump", "", NULL}},
    {"14-attention-backward", {"--batch", "1", "--seq", "8", "--dim", "640", NULL}},
    {"15-llama-block", {"--batch", "2", "--prompt", "256", "--new", "16", "--dim", "64",
                        "--heads", "4", "--kv-heads", "2", "--hidden", "256", NULL}},
    {"15-llama-block", {"--batch", "2", "--prompt", "64", "--new", "8", "--dim", "256",
                        "--heads", "8", "--kv-heads", "1", "--rope-layout", "interleaved",
                        "--dump", "", NULL}},
    {"13-flash-attention", {"--seq", "512", "--causal", "--threads", "2", NULL}},
    {"13-flash-attention", {"--batch", "2", "--seq", "256", "--heads", "4", "--kv-heads", "2",
                            "--head-dim", "128", "--block-q", "32", "--block-k", "128",
                            "--dump", "", NULL}},
    // The tiled path alone (the naive one would make 384 MiB).
    {"13-flash-attention", {"--batch", "4", "--seq", "2048", "--heads", "2", "--causal", NULL}},
    {"16-train", {"--batch", "64", "--layers", "3", "--steps", "2", NULL}},
    {"16-train", {"--dim", "96", "--heads", "6", "--kv-heads", "3", "--hidden", "128", "--steps",
                  "2", "--dump", "", NULL}},
    {"16-train", {"--task", "reverse", "--seq", "24", "--vocab", "24", "--steps", "2", "--dot",
                  "", NULL}},
};
enum { N_SIZED = sizeof SIZED / sizeof SIZED[0] };

// What a run held is at most its prediction (plus the 1 MiB of names and
// printed text a prediction may leave out), and at least two thirds of it.
START_TEST(test_predictions_hold) {
    const Sized *sized = &SIZED[_i];
    const char *sandbox = make_temp_dir();
    const char *argv[28];
    int n = 0;
    for (int i = 0; sized->args[i] != NULL; i++) {
        // "--dump" "" is the placeholder for a directory of the sandbox's ("--dot" "": a file).
        bool dump_dir = i > 0 && strcmp(sized->args[i - 1], "--dump") == 0;
        bool dot_file = i > 0 && strcmp(sized->args[i - 1], "--dot") == 0;
        argv[n++] = dump_dir ? path_join("%s/out", sandbox)
                    : dot_file ? path_join("%s/graph.dot", sandbox) : sized->args[i];
    }
    argv[n] = NULL;
    Measured m = measure(sized->lesson, argv);
    const double mib = 1024.0 * 1024.0;
    ck_assert_msg(m.held <= m.predicted + mib, "%s (case %d): held %.0f bytes, predicted %.0f",
                  sized->lesson, _i, m.held, m.predicted);
    ck_assert_msg(m.predicted <= 1.5 * m.held, "%s (case %d): predicted %.0f bytes, held only "
                  "%.0f", sized->lesson, _i, m.predicted, m.held);
    ck_assert_msg(m.held > 8 * mib, "%s (case %d): held only %.0f bytes: choose larger sizes",
                  sized->lesson, _i, m.held);
    remove_tree(sandbox);
}
END_TEST

// --- 3. what the budget admits ----------------------------------------------------------------

// ATTN_COST=check: exit 0 when the run would be allowed (after printing the
// prediction on stderr), or the refusal.
static RunResult check_only(const char *lesson, const char *const *args) {
    setenv("ATTN_COST", "check", 1);
    RunResult r = run_program(lesson_binary(lesson), args);
    unsetenv("ATTN_COST");
    return r;
}

// The words of an ARGS="..." (no quotes inside), NULL-terminated.
static const char *const *words_of(const char *text) {
    const char **words = arena_alloc(32, sizeof *words);
    int n = 0;
    const char *c = text;
    while (*c != '\0') {
        while (*c == ' ') {
            c++;
        }
        size_t length = strcspn(c, " ");
        if (length > 0) {
            ck_assert(n < 31);
            words[n++] = path_join("%.*s", (int)length, c);
        }
        c += length;
    }
    words[n] = NULL;
    return words;
}

// Does lesson 14 pick vector kernels here (AVX2 and FMA, or AVX-512)? Its
// --bench estimates its seconds from the kernels' speed: with the scalar
// ones (a CPU without AVX2, or ATTN_KERNELS=scalar, as make valgrind sets)
// its default run would take about 7 minutes, and the budget refuses it.
static bool vector_kernels_here(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

// Every `make lesson-N ARGS="..."` (or ARGS=word) in the README and the
// pages: the budget admits it.
static int check_commands_in(const char *path, const char **dirs, int n_dirs) {
    const char *text = read_text(path);
    int checked = 0;
    for (const char *at = strstr(text, "make lesson-"); at != NULL;
         at = strstr(at + 1, "make lesson-")) {
        int number = atoi(at + strlen("make lesson-"));
        const char *line_end = strchr(at, '\n');
        const char *args = strstr(at, " ARGS=");
        const char *words = "";
        if (args != NULL && (line_end == NULL || args < line_end)) {
            args += strlen(" ARGS=");
            size_t length = args[0] == '"' ? strcspn(args + 1, "\"") : strcspn(args, " `\n");
            char *copy = arena_alloc(length + 1, 1);
            memcpy(copy, args[0] == '"' ? args + 1 : args, length);
            for (char *c = copy; *c != '\0'; c++) {
                *c = *c == '\n' ? ' ' : *c;   // a command wrapped across two lines of prose
            }
            words = copy;
        }
        if (number < 1 || number > n_dirs || strchr(words, '$') != NULL ||
            strstr(words, "--help") != NULL || strstr(words, " N") != NULL ||
            strstr(words, " S") != NULL ||
            (strstr(words, "--bench") != NULL && !vector_kernels_here())) {
            continue;   // placeholders (--seed S), other lessons' numbers, a scalar bench
        }
        const char *dir = dirs[number - 1];
        // Admitted, or refused for another reason the page shows (--kv-heads 3).
        RunResult r = check_only(dir, words_of(words));
        ck_assert_msg(r.status == 0 || (r.status == 2 && strstr(r.err, "ATTN_MAX") == NULL),
                      "%s: make lesson-%d ARGS=\"%s\": exit %d: %s", path, number, words,
                      r.status, r.err);
        checked += 1;
    }
    return checked;
}

START_TEST(test_pages_sizes_are_admitted) {
    // The kernels this CPU picks, whatever the caller forced (make valgrind:
    // scalar), since that is what a reader's run meets.
    const char *forced = getenv("ATTN_KERNELS");
    forced = forced != NULL ? path_join("%s", forced) : NULL;
    unsetenv("ATTN_KERNELS");
    const char *dirs[32];
    int n_dirs = find_lesson_dirs(dirs, 32);
    int checked = check_commands_in("README.md", dirs, n_dirs);
    DIR *docs = opendir("docs");
    ck_assert(docs != NULL);
    struct dirent *entry;
    while ((entry = readdir(docs)) != NULL) {
        size_t length = strlen(entry->d_name);
        if (length > 3 && strcmp(entry->d_name + length - 3, ".md") == 0) {
            checked += check_commands_in(path_join("docs/%s", entry->d_name), dirs, n_dirs);
        }
    }
    closedir(docs);
    ck_assert_msg(checked >= 20, "only %d commands found in the pages", checked);
    // The sizes the pages name in their text (ViT-B, the bench), and each
    // lesson's defaults.
    const char *vit_b[] = {"--dim", "768", "--heads", "12", "--seq", "197", NULL};
    ck_assert_int_eq(check_only("11-vit-block", vit_b).status, 0);
    const char *bench[] = {"--bench", NULL};
    ck_assert_int_eq(check_only("10-kv-cache", bench).status, 0);
    ck_assert_int_eq(check_only("14-attention-backward", bench).status,
                     vector_kernels_here() ? 0 : 2);
    ck_assert_int_eq(check_only("13-flash-attention", bench).status, 0);
    const char *threads[] = {"--bench", "--threads", "2", NULL};
    ck_assert_int_eq(check_only("13-flash-attention", threads).status, 0);
    ck_assert_int_eq(check_only("16-train", bench).status, vector_kernels_here() ? 0 : 2);
    for (int l = 0; l < n_dirs; l++) {
        RunResult r = check_only(dirs[l], (const char *[]){NULL});
        ck_assert_msg(r.status == 0 && strstr(r.err, "cost: predicted") != NULL,
                      "%s: exit %d: %s", dirs[l], r.status, r.err);
    }
    if (forced != NULL) {
        setenv("ATTN_KERNELS", forced, 1);
    }
}
END_TEST

// --- 4. raising the budget ---------------------------------------------------------------------

START_TEST(test_raising_the_budget) {
    const char *big[] = {"--batch", "1", "--seq", "8192", "--dim", "1", NULL};
    ck_assert_int_eq(check_only("04-self-attention-v3", big).status, 2);
    setenv("ATTN_MAX_MIB", "7000", 1);   // what the refusal suggests
    RunResult r = check_only("04-self-attention-v3", big);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    setenv("ATTN_MAX_MIB", "6999.5", 1);
    ck_assert_int_eq(check_only("04-self-attention-v3", big).status, 0);
    unsetenv("ATTN_MAX_MIB");
    const char *slow[] = {"--batch", "8", "--seq", "64", "--dim", "4096", NULL};
    ck_assert_int_eq(check_only("09-causal-mask", slow).status, 2);
    setenv("ATTN_MAX_SECONDS", "110", 1);
    r = check_only("09-causal-mask", slow);
    unsetenv("ATTN_MAX_SECONDS");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    // A bad value is refused like a bad flag, naming the variable.
    const char *bad[] = {"", "0", "-5", "abc", "1e3", "12 ", "nan", "1.2.3"};
    for (int i = 0; i < 8; i++) {
        setenv("ATTN_MAX_MIB", bad[i], 1);
        r = run_program(lesson_binary("02-self-attention-v1"), (const char *[]){NULL});
        unsetenv("ATTN_MAX_MIB");
        assert_one_line_refusal(r, "lesson-2: ATTN_MAX_MIB expects a number above 0 (such as "
                                "2048), got '", bad[i]);
    }
}
END_TEST

static Suite *budget_suite(void) {
    Suite *suite = suite_create("budget");
    TCase *refused = new_tcase("refused");
    tcase_add_loop_test(refused, test_refused_before_anything_runs, 0, N_REFUSALS);
    tcase_add_test(refused, test_lesson_1_under_a_tiny_budget);
    tcase_add_test(refused, test_the_tables_runs_that_fit);
    tcase_add_test(refused, test_bench_refuses_tiny_blocks);
    tcase_add_test(refused, test_raising_the_budget);
    suite_add_tcase(suite, refused);
    TCase *predicted = new_tcase("predicted");
    tcase_add_loop_test(predicted, test_predictions_hold, 0, N_SIZED);
    tcase_add_test(predicted, test_pages_sizes_are_admitted);
    suite_add_tcase(suite, predicted);
    return suite;
}

int main(void) { return run_suite(budget_suite()); }
