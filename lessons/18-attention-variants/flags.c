// flags.c - lesson 18's flags, read and checked before any work.
#include <string.h>

#include "kernels.h"
#include "model.h"
#include "speed/choice.h"

static const char *const EXPERIMENTS[] = {"all", "length", "window", "linear", "none", NULL};
static const char *const POSITIONS[] = {"rope", "alibi", "sinusoidal", "learned", "none", NULL};
static const char *const ATTENTIONS[] = {"softmax", "linear", NULL};

static int index_of(const char *const *list, const char *word) {
    int i = 0;
    while (strcmp(list[i], word) != 0) {
        i += 1;
    }
    return i;
}

// The longest sequence a run trains or asks at: the experiments go up to 4 N (the window
// experiment to 2 N), --experiment none stays at N.
static int longest_of(Experiment experiment, int N) {
    return experiment == NONE ? N : experiment == WINDOW ? 2 * N : 4 * N;
}

Settings read_flags(Lesson *lesson, int argc, char **argv) {
    static int layers = 2, dim = 64, heads = 4, kv_heads = 2, keys = 12, values = 10, seq = 8;
    static int batch = 16, hidden = 64, steps = 1200, warmup = 20, window = NO_WINDOW;
    static double lr = 0.003, weight_decay = 0.01, clip = 1.0;
    static const char *experiment = "all", *positions = "rope", *attention = "softmax";
    static SizeFlag sizes[] = {
        {"--dim", &dim, "hidden_size"},
        {"--heads", &heads, "num_attention_heads; must divide --dim"},
        {"--kv-heads", &kv_heads, "num_key_value_heads; must divide --heads"},
        {"--keys", &keys, "key tokens (letters); one a pair of the longest sequence"},
        {"--values", &values, "value tokens (digits)"},
        {"--seq", &seq, "tokens per training sequence; the experiments test up to 4x it"},
        {"--batch", &batch, "sequences per step"},
    };
    static IntFlag ints[] = {
        {"--layers", &layers, "decoder layers (num_hidden_layers)", 1, MAX_LAYERS},
        {"--hidden", &hidden, "intermediate_size; 0: 8/3 of --dim, up to a multiple of 8", 0,
         MAX_SIZE_FLAG},
        {"--steps", &steps, "optimizer steps of each model trained", 1, 100000},
        {"--warmup", &warmup, "steps of linear learning-rate warmup", 0, 100000},
        {"--window", &window, "each query sees its last N keys, itself included", 1,
         NO_WINDOW},
    };
    static ProbabilityFlag probabilities[] = {
        {"--lr", &lr, "AdamW's peak learning rate"},
        {"--weight-decay", &weight_decay, "AdamW's decoupled weight decay"},
    };
    static FloatFlag float_flags[] = {
        {"--clip", &clip, "clip_grad_norm_'s max_norm; 0: no clipping", 0.0, 1000.0},
    };
    static ChoiceFlag choices[] = {
        {"--experiment", &experiment, "all, length, window, linear; none: train one model only",
         EXPERIMENTS},
        {"--positions", &positions, "rope, alibi, sinusoidal, learned or none", POSITIONS},
        {"--attention", &attention, "softmax or linear (elu + 1, as an RNN)", ATTENTIONS},
    };
    *lesson = (Lesson){
        .program = "lesson-18",
        .summary = "attention's variants (positions, windows, linear attention) as experiments",
        .sizes = sizes, .n_sizes = 7, .ints = ints, .n_ints = 5,
        .probabilities = probabilities, .n_probabilities = 2, .floats = float_flags,
        .n_floats = 1, .choices = choices, .n_choices = 3,
    };
    parse_lesson_args(lesson, argc, argv);
    check_kernels_variable(lesson);   // ATTN_KERNELS (common/speed/choice.h)
    hidden = hidden > 0 ? hidden : (8 * dim / 3 + 7) / 8 * 8;
    Experiment kind = (Experiment)index_of(EXPERIMENTS, experiment);
    Positions where = (Positions)index_of(POSITIONS, positions);
    AttentionKind how = (AttentionKind)index_of(ATTENTIONS, attention);
    check_divides(lesson, "--heads", heads, "--dim", dim);
    check_divides(lesson, "--kv-heads", kv_heads, "--heads", heads);
    // The experiments train models of their own variants: a variant given with one of them
    // would be ignored, so it is refused (its default, given, changes nothing and is taken).
    const char *varied[] = {"--positions", "--window", "--attention"};
    bool differs[] = {where != ROPE, window != NO_WINDOW, how != SOFTMAX};
    for (int i = 0; i < 3; i++) {
        if (kind != NONE && differs[i]) {
            usage_error(lesson, "%s: --experiment %s trains its own variants; --experiment none "
                        "trains the one model %s describes", varied[i], experiment, varied[i]);
        }
    }
    if (how == LINEAR && where == ALIBI) {
        usage_error(lesson, "--positions alibi adds to softmax's scores; --attention linear has "
                    "no scores to add to");
    }
    if (how == LINEAR && window != NO_WINDOW) {
        usage_error(lesson, "--window %d: linear attention's state sums every key before; a "
                    "window would have to take the old ones out again", window);
    }
    if ((kind != NONE || where == ROPE) && dim / heads % 2 != 0) {
        usage_error(lesson, "--dim %d / --heads %d = head_dim %d is odd: RoPE turns pairs", dim,
                    heads, dim / heads);
    }
    if (seq % 2 != 0 || seq < 4) {
        usage_error(lesson, "--seq %d: recall's sequences are pairs of tokens, at least 4",
                    seq);
    }
    int longest = longest_of(kind, seq);
    if (keys < pairs(longest)) {
        usage_error(lesson, "--keys %d: a sequence of %d tokens%s holds %d pairs, each with a key "
                    "of its own", keys, longest, kind == NONE ? "" : " (this run's longest)",
                    pairs(longest));
    }
    check_fits(lesson, "the attention weights (batch, heads, seq, seq) at the longest length",
               shape4(batch, heads, longest, longest));
    check_fits(lesson, "the MLP's (batch, seq, hidden) at the longest length",
               shape3(batch, longest, hidden));
    check_fits(lesson, "mlp.gate_proj.weight (hidden, dim)", shape2(hidden, dim));
    check_fits(lesson, "logits (batch, seq, keys + values)", shape3(batch, longest,
                                                                     keys + values));
    check_fits(lesson, "embed_tokens.weight (keys + values, dim)", shape2(keys + values, dim));
    Settings s = {
        .config = {.vocab_size = keys + values, .hidden_size = dim, .intermediate_size = hidden,
                   .num_hidden_layers = layers, .num_attention_heads = heads,
                   .num_key_value_heads = kv_heads, .head_dim = dim / heads, .longest = seq,
                   .rope_theta = 10000, .rms_norm_eps = 1e-6f, .positions = where,
                   .window = window, .attention = how, .softmax_layers = 0},
        .task = {keys, values},
        .experiment = kind, .seed = lesson->seed, .seq = seq, .batch = batch, .steps = steps,
        .warmup = warmup,
        .lr = lr, .weight_decay = weight_decay, .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8,
        .clip = clip, .heatmap = lesson->heatmap,
    };
    return s;
}
