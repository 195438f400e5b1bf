// language_flags.c - lesson 17's flags and its text, read and checked before any work.
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoint.h"
#include "kernels.h"
#include "language.h"
#include "lesson/outputs.h"
#include "speed/choice.h"
#include "svg.h"

#define DEFAULT_PROMPT "Attention "
#define DEFAULT_SENTENCE "the keys of the heads"

static const char *const TOKENIZERS[] = {"chars", "bpe", NULL};

// --prompt and --sentence take text, not a file: say so when their value is missing (the
// shared parser's words for a missing value name a file).
static void check_text_flags(const Lesson *lesson, int argc, char **argv) {
    const char *const names[2] = {"--prompt", "--sentence"};
    for (int i = 1; i < argc; i++) {
        for (int k = 0; k < 2; k++) {
            size_t length = strlen(names[k]);
            if (strncmp(argv[i], names[k], length) != 0) {
                continue;
            }
            const char *rest = argv[i] + length;   // "" (the value is the next word), or "=..."
            if (rest[0] == '=' && rest[1] == '\0') {
                usage_error(lesson, "%s expects a text after the '='", names[k]);
            }
            if (rest[0] == '\0' && (i + 1 >= argc || argv[i + 1][0] == '\0' ||
                                    strncmp(argv[i + 1], "--", 2) == 0)) {
                usage_error(lesson, "%s expects a text after it", names[k]);
            }
            i += rest[0] == '\0';   // its value is not a flag
        }
    }
}

// The whole file `path` into text->bytes, checked: a regular file, readable, not empty,
// well-formed UTF-8 (one line and exit 2 otherwise); then split at 90% of its characters.
static void read_text_file(const Lesson *lesson, Text *text, const char *path) {
    struct stat info;
    if (stat(path, &info) != 0) {
        usage_error(lesson, "--text %s: %s", shown(path), strerror(errno));
    }
    if (!S_ISREG(info.st_mode)) {
        usage_error(lesson, "--text %s: not a regular file", shown(path));
    }
    if (info.st_size == 0) {
        usage_error(lesson, "--text %s: the file is empty", shown(path));
    }
    if (info.st_size > (1L << 30)) {
        usage_error(lesson, "--text %s: %lld bytes, more than the 1 GiB this lesson reads",
                    shown(path), (long long)info.st_size);
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        usage_error(lesson, "--text %s: %s", shown(path), strerror(errno));
    }
    text->n_bytes = (long)info.st_size;
    text->bytes = arena_alloc((size_t)text->n_bytes + 1, 1);
    long got = (long)fread(text->bytes, 1, (size_t)text->n_bytes, f);
    fclose(f);
    if (got != text->n_bytes) {
        usage_error(lesson, "--text %s: could read only %ld of its %ld bytes", shown(path), got,
                    text->n_bytes);
    }
    long at;
    const char *problem = utf8_problem(&at, text->bytes, text->n_bytes);
    if (problem != NULL) {
        usage_error(lesson, "--text %s: not UTF-8: byte %ld (0x%02x) %s", shown(path), at,
                    text->bytes[at], problem);
    }
    long chars = 0;
    for (long i = 0; i < text->n_bytes; i++) {
        chars += (text->bytes[i] & 0xC0) != 0x80;   // every byte but continuation bytes
    }
    text->n_chars = chars;
    text->split_chars = (long)((double)chars * 0.9);   // int(n * 0.9), as Python computes it
    long seen = 0, i = 0;
    for (; i < text->n_bytes && seen < text->split_chars; i++) {
        seen += (text->bytes[i] & 0xC0) != 0x80;
    }
    while (i < text->n_bytes && (text->bytes[i] & 0xC0) == 0x80) {
        i += 1;   // to the end of the last character of the training part
    }
    text->split_bytes = i;
}

// A text flag's value must be UTF-8, and with characters for tokens, of the text's characters.
static void check_text_value(const Lesson *lesson, const char *flag, const char *value,
                             const Tokenizer *chars) {
    long at, n = (long)strlen(value);
    if (utf8_problem(&at, (const unsigned char *)value, n) != NULL) {
        usage_error(lesson, "%s: byte %ld of '%s' is not UTF-8", flag, at, shown(value));
    }
    int *ids = arena_alloc((size_t)n + 1, sizeof(int)), missing;
    if (chars != NULL && encode(ids, &missing, chars, (const unsigned char *)value, n) < 0) {
        unsigned char utf8[4];
        usage_error(lesson, "%s: '%.*s' (U+%04X) is not one of the text's characters", flag,
                    utf8_encode(utf8, missing), utf8, missing);
    }
}

Settings read_flags(Lesson *lesson, Text *text, int argc, char **argv) {
    static int layers = 2, dim = 64, heads = 4, kv_heads = 2, seq = 128, batch = 16;
    static int hidden = 0, steps = 800, warmup = 50, merges = 512, eval_every = 100;
    static int eval_batches = 2, new_tokens = 240, top_k = 0;
    static double lr = 0.003, weight_decay = 0.01, clip = 1.0, temperature = 0.8, top_p = 0.95;
    static const char *tokenizer = "chars";
    static const char *text_file, *save_dir, *load_dir, *svg_file, *prompt, *sentence;
    static bool bench;
    static SizeFlag sizes[] = {
        {"--dim", &dim, "hidden_size"},
        {"--heads", &heads, "num_attention_heads; must divide --dim"},
        {"--kv-heads", &kv_heads, "num_key_value_heads; must divide --heads"},
        {"--seq", &seq, "tokens a training window (the context)"},
        {"--batch", &batch, "windows a step"},
        {"--new", &new_tokens, "tokens each sample writes"},
    };
    static IntFlag ints[] = {
        {"--layers", &layers, "decoder layers (num_hidden_layers)", 1, MAX_LAYERS},
        {"--hidden", &hidden, "intermediate_size; 0: 8/3 of --dim, up to a multiple of 8", 0,
         MAX_SIZE_FLAG},
        {"--steps", &steps, "optimizer steps (0 with --load: no training)", 0, 100000},
        {"--warmup", &warmup, "steps of linear learning-rate warmup", 0, 100000},
        {"--merges", &merges, "byte pair merges to learn at most (--tokenizer bpe)", 0,
         MAX_MERGES},
        {"--eval-every", &eval_every, "steps between the losses on both splits", 1, 100000},
        {"--eval-batches", &eval_batches, "fixed batches of each split an evaluation reads", 1,
         1000},
        {"--top-k", &top_k, "sample among the k most likely tokens; 0: all", 0, MAX_VOCAB},
    };
    static ProbabilityFlag probabilities[] = {
        {"--lr", &lr, "AdamW's peak learning rate"},
        {"--weight-decay", &weight_decay, "AdamW's decoupled weight decay"},
    };
    static FloatFlag float_flags[] = {
        {"--clip", &clip, "clip_grad_norm_'s max_norm; 0: no clipping", 0.0, 1000.0},
        {"--temperature", &temperature, "the sample's temperature; 0: greedy", 0.0, 100.0},
        {"--top-p", &top_p, "sample among the most likely tokens holding this much; 1: all",
         0.0, 1.0},
    };
    static ChoiceFlag choices[] = {
        {"--tokenizer", &tokenizer, "tokens: chars (characters) or bpe (byte pairs)",
         TOKENIZERS},
    };
    static SwitchFlag switches[] = {
        {"--bench", &bench, "time training steps at two sizes (no lesson)"},
    };
    static PathFlag paths[] = {
        {"--text", &text_file, "FILE", "the UTF-8 text to learn; default: the project's pages"},
        {"--prompt", &prompt, "TEXT", "where the samples start; default: 'Attention '"},
        {"--sentence", &sentence, "TEXT", "what the maps show; default: 'the keys of the heads'"},
        {"--save", &save_dir, "DIR", "write the trained state_dict and tokenizer into DIR"},
        {"--load", &load_dir, "DIR", "start from DIR's state_dict and tokenizer (--save's)"},
        {"--svg", &svg_file, "FILE", "draw the losses and the maps into FILE (an SVG image)"},
    };
    *lesson = (Lesson){
        .program = "lesson-17",
        .summary = "language: lesson 16's model trained on text, and what its heads read",
        .sizes = sizes, .n_sizes = 6, .ints = ints, .n_ints = 8,
        .probabilities = probabilities, .n_probabilities = 2, .floats = float_flags,
        .n_floats = 3, .choices = choices, .n_choices = 1,
        .switches = switches, .n_switches = 1, .paths = paths, .n_paths = 6,
    };
    // Checked before the parser, which restores the flags' defaults: until it has, the
    // flags may hold an earlier call's values (a test calls main() again and again), so the
    // refusal names only the program.
    const Lesson unparsed = {.program = lesson->program, .summary = lesson->summary};
    check_text_flags(&unparsed, argc, argv);
    parse_lesson_args(lesson, argc, argv);
    check_kernels_variable(lesson);   // ATTN_KERNELS (common/speed/choice.h)
    text_file = text_file != NULL ? text_file : DEFAULT_TEXT;
    prompt = prompt != NULL ? prompt : DEFAULT_PROMPT;
    sentence = sentence != NULL ? sentence : DEFAULT_SENTENCE;
    hidden = hidden > 0 ? hidden : (8 * dim / 3 + 7) / 8 * 8;
    check_divides(lesson, "--heads", heads, "--dim", dim);
    check_divides(lesson, "--kv-heads", kv_heads, "--heads", heads);
    if (dim / heads % 2 != 0) {
        usage_error(lesson, "--dim %d / --heads %d = head_dim %d is odd: RoPE turns pairs", dim,
                    heads, dim / heads);
    }
    if (seq < 4) {
        usage_error(lesson, "--seq %d: the induction test repeats seq/2 tokens, at least 2",
                    seq);
    }
    if (top_p == 0.0) {
        usage_error(lesson, "--top-p 0 would keep no token: give it above 0 (1: all)");
    }
    bool chars = strcmp(tokenizer, "chars") == 0;
    if (load_dir != NULL && (flag_given(lesson, "--tokenizer") || flag_given(lesson, "--merges"))) {
        usage_error(lesson, "--%s: --load %s brings its own tokenizer",
                    flag_given(lesson, "--tokenizer") ? "tokenizer" : "merges", shown(load_dir));
    }
    check_fits(lesson, "the attention weights (batch, heads, seq, seq)",
               shape4(batch, heads, seq, seq));
    check_fits(lesson, "the MLP's (batch, seq, hidden)", shape3(batch, seq, hidden));
    check_fits(lesson, "mlp.gate_proj.weight (hidden, dim)", shape2(hidden, dim));
    read_text_file(lesson, text, text_file);
    size_t mark = arena_mark();   // what the checks below make is let go at the end
    Tokenizer vocabulary = {0};
    int vocab = 256 + merges;   // byte pairs: at most
    if (chars && load_dir == NULL) {
        int *code_points = arena_alloc((size_t)text->n_chars + 1, sizeof(int));
        vocabulary = chars_tokenizer(code_points,
                                     utf8_decode(code_points, text->bytes, text->n_bytes));
        vocab = vocabulary.vocab_size;
        if (vocab > MAX_VOCAB) {
            usage_error(lesson, "--text %s: %d distinct characters, more than the %d a "
                        "vocabulary may have (try --tokenizer bpe)", shown(text_file), vocab,
                        MAX_VOCAB);
        }
    }
    check_fits(lesson, "logits (batch, seq, vocabulary)", shape3(batch, seq, vocab));
    check_fits(lesson, "embed_tokens.weight (vocabulary, dim)", shape2(vocab, dim));
    Settings s = {
        .config = {vocab, dim, hidden, layers, heads, kv_heads, dim / heads, seq, 10000, 1e-6f},
        .batch = batch, .steps = steps, .warmup = warmup, .lr = lr, .weight_decay = weight_decay,
        .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .clip = clip, .eval_every = eval_every,
        .eval_batches = eval_batches, .text_file = text_file,
        .tokenizer = chars ? CHARS : BPE, .merges = merges, .prompt = prompt,
        .sentence = sentence, .new_tokens = new_tokens, .temperature = temperature,
        .top_k = top_k, .top_p = top_p, .save_dir = save_dir, .load_dir = load_dir,
        .svg_file = svg_file, .bench = bench, .heatmap = lesson->heatmap,
    };
    checkpoint_check(lesson, &s);   // --load: the vocabulary is its tokenizer's
    Tokenizer loaded;
    if (load_dir != NULL) {
        loaded = checkpoint_tokenizer(lesson, load_dir);
        s.tokenizer = loaded.kind;
    }
    const Tokenizer *chars_vocabulary = load_dir != NULL ? (loaded.kind == CHARS ? &loaded : NULL)
                                        : chars ? &vocabulary : NULL;
    check_text_value(lesson, "--prompt", prompt, chars_vocabulary);
    check_text_value(lesson, "--sentence", sentence, chars_vocabulary);
    if (svg_file != NULL) {   // checked with the run's other outputs (lesson_start)
        declare_output("--svg", svg_file, OUTPUT_FILE);
    }
    arena_release(mark);
    return s;
}
