// train_flags.c - lesson 16's flags, read and checked before any work.
#include <string.h>

#include "checkpoint.h"
#include "lesson/outputs.h"
#include "kernels.h"
#include "model.h"
#include "speed/choice.h"
#include "svg.h"
#include "threads.h"

static const char *const TASKS[] = {"recall", "reverse", NULL};

Settings read_flags(Lesson *lesson, int argc, char **argv) {
    static int layers = 2, dim = 64, heads = 4, kv_heads = 2, vocab = 16, seq = 16, batch = 32;
    static int hidden = 0, steps = 300, warmup = 20, threads = 1;
    static double lr = 0.003, weight_decay = 0.01, clip = 1.0;
    static const char *task = "recall";
    static const char *save_dir, *load_dir, *svg_file;
    static bool bench;
    static SizeFlag sizes[] = {
        {"--dim", &dim, "hidden_size"},
        {"--heads", &heads, "num_attention_heads; must divide --dim"},
        {"--kv-heads", &kv_heads, "num_key_value_heads; must divide --heads"},
        {"--vocab", &vocab, "vocab_size"},
        {"--seq", &seq, "tokens per training sequence"},
        {"--batch", &batch, "sequences per step"},
    };
    static IntFlag ints[] = {
        {"--layers", &layers, "decoder layers (num_hidden_layers)", 1, MAX_LAYERS},
        {"--hidden", &hidden, "intermediate_size; 0: 8/3 of --dim, up to a multiple of 8", 0,
         MAX_SIZE_FLAG},
        {"--steps", &steps, "optimizer steps (0 with --load: evaluate only)", 0, 100000},
        {"--warmup", &warmup, "steps of linear learning-rate warmup", 0, 100000},
        {"--threads", &threads, "threads sharing the matrix products (the same bits)", 1,
         MAX_THREADS},
    };
    static ProbabilityFlag probabilities[] = {
        {"--lr", &lr, "AdamW's peak learning rate"},
        {"--weight-decay", &weight_decay, "AdamW's decoupled weight decay"},
    };
    static FloatFlag float_flags[] = {
        {"--clip", &clip, "clip_grad_norm_'s max_norm; 0: no clipping", 0.0, 1000.0},
    };
    static ChoiceFlag choices[] = {
        {"--task", &task, "what the model learns: recall or reverse", TASKS},
    };
    static SwitchFlag switches[] = {
        {"--bench", &bench, "time training steps at two sizes (no lesson)"},
    };
    static PathFlag paths[] = {
        {"--save", &save_dir, "DIR", "write the trained state_dict as DIR/<name>.npy"},
        {"--load", &load_dir, "DIR", "start from the state_dict in DIR (PyTorch's or --save's)"},
        {"--svg", &svg_file, "FILE", "draw the attention maps into FILE (an SVG image)"},
    };
    *lesson = (Lesson){
        .program = "lesson-16",
        .summary = "train: a tiny Llama trained end to end, step for step with PyTorch",
        .sizes = sizes, .n_sizes = 6, .ints = ints, .n_ints = 5,
        .probabilities = probabilities, .n_probabilities = 2, .floats = float_flags,
        .n_floats = 1, .choices = choices, .n_choices = 1,
        .switches = switches, .n_switches = 1, .paths = paths, .n_paths = 3,
    };
    parse_lesson_args(lesson, argc, argv);
    check_kernels_variable(lesson);   // ATTN_KERNELS (common/speed/choice.h)
    hidden = hidden > 0 ? hidden : (8 * dim / 3 + 7) / 8 * 8;
    check_divides(lesson, "--heads", heads, "--dim", dim);
    check_divides(lesson, "--kv-heads", kv_heads, "--heads", heads);
    if (dim / heads % 2 != 0) {
        usage_error(lesson, "--dim %d / --heads %d = head_dim %d is odd: RoPE turns pairs", dim,
                    heads, dim / heads);
    }
    Task kind = strcmp(task, "reverse") == 0 ? REVERSE : RECALL;
    if (seq % 2 != 0) {
        usage_error(lesson, "--seq %d is odd: %s", seq, kind == REVERSE
                    ? "reverse reads seq/2 tokens and writes them back"
                    : "recall's sequences are pairs of tokens");
    }
    if (kind == REVERSE && vocab < 2) {
        usage_error(lesson, "--vocab %d: reverse needs a token and the separator", vocab);
    }
    int questions = seq / 8 > 1 ? seq / 8 : 1, pairs = seq / 2 - questions;
    if (kind == RECALL && (pairs < 1 || 2 * pairs > vocab)) {
        usage_error(lesson, "--seq %d: recall asks %d of %d pairs with distinct keys; %s", seq,
                    questions, pairs, pairs < 1 ? "--seq must be at least 4"
                    : "--vocab must be at least twice the pairs");
    }
    if (!bench) {   // --bench makes its own sizes; train.c's check_budget weighs the rest
        check_fits(lesson, "the attention weights (batch, heads, seq, seq)",
                   shape4(batch, heads, seq, seq));
        check_fits(lesson, "the MLP's (batch, seq, hidden)", shape3(batch, seq, hidden));
        check_fits(lesson, "mlp.gate_proj.weight (hidden, dim)", shape2(hidden, dim));
        check_fits(lesson, "logits (batch, seq, vocab)", shape3(batch, seq, vocab));
        check_fits(lesson, "embed_tokens.weight (vocab, dim)", shape2(vocab, dim));
    }
    Settings s = {
        .config = {kind, vocab, dim, hidden, layers, heads, kv_heads, dim / heads, seq, 10000,
                   1e-6f},
        .batch = batch, .steps = steps, .warmup = warmup, .lr = lr, .weight_decay = weight_decay,
        .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .clip = clip,
        .save_dir = save_dir, .load_dir = load_dir, .svg_file = svg_file,
        .threads = threads, .bench = bench, .heatmap = lesson->heatmap,
    };
    checkpoint_check(lesson, &s);   // --load read and checked; --save and --load declared
    if (svg_file != NULL) {         // checked with the run's other outputs (lesson_start)
        declare_output("--svg", svg_file, OUTPUT_FILE);
    }
    return s;
}
