// variants.h - one model of a variant, trained and scored: what variants.c's parts and
// experiments share, and what the tests use.
#ifndef VARIANTS18_H
#define VARIANTS18_H

#include "adamw.h"
#include "model.h"

typedef struct Run {
    const Settings *s;
    Model model;
    int N;                   // the length it trains at
    Activations acts;        // the forward of a batch of B sequences of N tokens
    Grads grads;
    BackwardScratch scratch;
    AdamW opt;
    float *loss, *accuracy, *grad_norm;   // (steps,) each step's
} Run;

// torch.manual_seed(seed), the model of `config` drawn, every buffer made: the same weights
// and the same batches for every variant (the learned table draws nothing).
Run run_init(const Settings *settings, const Config *config, int N);
// Step n (from 1) on a fresh batch of N tokens: forward, loss, backward, clip_grad_norm_,
// AdamW. Leaves the batch's forward in run->acts and its gradients in run->grads.
float train_step(Run *run, int n, Batch *batch);
// Steps 1 .. steps.
void train(Run *run);

// How a trained model answers fresh batches of N tokens.
typedef struct {
    long right, asked;
    long right_by[4], asked_by[4];   // by the distance from the question back to its key,
    int edges[4];                    // in (edges[i-1], edges[i]], edges[-1] = 0
} Score;
Score score(const Settings *settings, const Model *model, int N, const int *edges);

// A batch of recall, drawn from PyTorch's generator as the page's make_batch draws it.
Batch make_batch(const Task *task, int B, int N);

// The batch's forward, F.cross_entropy, loss.backward(): every .grad filled in; returns the
// loss, *accuracy the share of the answers right.
float forward_backward(Run *run, const Batch *batch, float *accuracy);
// The token a row of NV logits gives the highest score (the first on a tie).
int argmax(const float *logits, int NV);

// "-- part 3: what ... (flags) --"; "softmax attention, positions rope, window 4".
void part(int number, const char *what, const char *flags);
const char *variant_name(const Config *config, int N);
// --experiment none's step 1 for --dump (its batch, logits, gradients) and --dot.
void record_step_one(const Run *run, const Batch *first, const Lesson *lesson);
// --experiment none (one_model.c).
void run_none(const Settings *settings, const Lesson *lesson);

#endif
