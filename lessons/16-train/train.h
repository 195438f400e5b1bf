// train.h - a training run's state, and the steps bench.c and the tests take with it
// (train.c).
#ifndef TRAIN16_H
#define TRAIN16_H

#include "adamw.h"
#include "model.h"

typedef struct {
    Settings s;
    Model model;
    Activations acts;        // the forward of a batch of B sequences
    Activations one;         // of one sequence: the example's maps, decoding
    Grads grads;
    BackwardScratch scratch;
    AdamW opt;
    Batch example;           // the fixed sequence the maps and decoding look at
    float *loss, *accuracy, *grad_norm;   // (steps,) each step's
    int map_steps[3];        // the maps are taken at the start, after map_steps[1], at the end
    float *maps;             // (3, layers, H, N, N) the example's attention weights then
} Run;

// The model and the example drawn (in PyTorch's order, after manual_seed), every buffer
// made, the checkpoint loaded if --load gave one.
Run run_init(const Settings *settings);
// One training step (step from 0) on a fresh batch, printing nothing.
void train_step(Run *run, int step);

// What a run of these sizes takes (lesson/budget.h): the multiply-adds of one step's matrix
// products, the work of `steps` steps, the bytes run_init makes.
double step_multiply_adds(const Settings *s);
Cost steps_cost(const Settings *s, double steps);
double run_bytes(const Settings *s);

#endif
