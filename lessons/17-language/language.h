// language.h - what the lesson's files share beyond the model: the flags' settings, the text
// and its tokens, a batch, and a training run's state, with the steps bench.c and the tests
// take with it (language.c, language_flags.c).
#ifndef LANGUAGE17_H
#define LANGUAGE17_H

#include "adamw.h"
#include "model.h"
#include "tokenizer.h"

#define DEFAULT_TEXT "lessons/17-language/corpus.txt"

// What the flags set (language_flags.c reads and checks them).
typedef struct {
    Config config;                 // the model; vocab_size is the tokenizer's
    int batch, steps, warmup;      // B; optimizer steps; steps of linear warmup
    double lr, weight_decay;       // AdamW's
    double beta1, beta2, eps;      // 0.9, 0.99, 1e-8
    double clip;                   // clip_grad_norm_'s max_norm; 0: no clipping
    int eval_every;                // the losses on both splits every this many steps
    int eval_batches;              // ... over this many fixed batches of each
    const char *text_file;         // --text FILE, or the lesson's corpus
    TokenizerKind tokenizer;       // --tokenizer chars or bpe
    int merges;                    // --merges: byte pair merges to learn at most
    const char *prompt;            // where sampling starts
    const char *sentence;          // what the maps show
    int new_tokens;                // tokens each sample writes
    double temperature;            // 0: greedy
    int top_k;                     // 0: every token
    double top_p;                  // 1: every token
    const char *save_dir;          // --save DIR: the trained state_dict and tokenizer, or NULL
    const char *load_dir;          // --load DIR: start from them, or NULL
    const char *svg_file;          // --svg FILE: the losses and the maps as an image, or NULL
    bool bench;
    bool heatmap;                  // --heatmap: the sentence's maps as lesson/heatmap.h draws them
} Settings;

// The text, read and checked: the flags' file, well-formed UTF-8, not empty.
typedef struct {
    unsigned char *bytes;          // the whole file
    long n_bytes;
    long n_chars;                  // its characters (code points)
    long split_chars;              // int(0.9 * n_chars): where validation starts
    long split_bytes;              // ... in bytes
} Text;

// Read the flags and the text, and check both, before any work: exit 2 with one line on
// anything wrong. s->config.vocab_size is the vocabulary's size, or for byte pairs the
// most it can be (256 + merges), until the tokenizer is made.
Settings read_flags(Lesson *lesson, Text *text, int argc, char **argv);

// The text cut in two and turned into tokens.
typedef struct {
    Tokenizer tok;
    int *train;   long n_train;   // (n_train) the training split's tokens
    int *val;     long n_val;     // (n_val) the validation split's
} Data;

// The tokenizer (made, or --load's), both splits encoded; exit 2 if a split holds fewer than
// seq + 1 tokens. Sets s->config.vocab_size.
Data data_init(const Lesson *lesson, Settings *s, const Text *text);

// A batch of windows: the model reads input_ids and must write labels, the same tokens
// one place later.
typedef struct {
    Tensor *input_ids;   // (B, N) int64
    Tensor *labels;      // (B, N) int64
} Batch;

// What the heads do, measured at one evaluation (heads.c says how).
typedef struct {
    float *previous;     // (L, H) the share of attention on the token just before
    float *boundary;     // (L, H) ... on the last space or line break before the query
    float *induction;    // (L, H) ... on the token after the query's earlier copy
    float first, second; // the loss on the first and the second copy of a repeated string
} HeadMeasures;

typedef struct {
    Settings s;
    Data data;
    Model model;
    Activations acts;        // the forward of a batch of B sequences
    Activations one;         // of one sequence: the sentence, the repeated string, sampling
    Grads grads;
    BackwardScratch scratch;
    AdamW opt;
    int *repeated;           // (N/2) the random tokens, drawn once, that the induction test repeats
    int *sentence;           // (n_sentence) the sentence the maps show
    int n_sentence;
    float *loss, *grad_norm; // (steps,) each step's
    int n_evals;             // evaluations so far
    int *eval_step;          // (evals) the step each was taken after
    float *eval_train, *eval_val;     // (evals) the losses on the fixed windows of each split
    HeadMeasures *measures;  // (evals)
    int map_steps[3];        // the sentence's maps: at the start, halfway, at the end
    float *maps;             // (3, L, H, n_sentence, n_sentence)
} Run;

// The model and the repeated string drawn (in PyTorch's order, after manual_seed), every
// buffer made, the checkpoint loaded if --load gave one.
Run run_init(const Settings *settings, const Data *data);
// One training step (step from 0) on a fresh batch, printing nothing.
void train_step(Run *run, int step);

// What a run of these sizes takes (lesson/budget.h): the multiply-adds of one step's matrix
// products, the work of `steps` steps, the bytes run_init makes.
double step_multiply_adds(const Settings *s);
Cost steps_cost(const Settings *s, double steps);
double run_bytes(const Settings *s, double n_tokens);

#endif
