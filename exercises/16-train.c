// Exercise 16: write one AdamW step.
//
// WHAT TO WRITE
//   adamw_step(opt, lr): torch.optim.AdamW's optimizer.step() for every
//   parameter p = &opt->params[i], i < opt->n_params, each of p->numel floats:
//   its weights p->value, gradient p->grad and two moments p->exp_avg (m) and
//   p->exp_avg_sq (v), both 0 before the first step. First count the step,
//   opt->step += 1 (t, 1 on the first step), then for every weight w with
//   gradient g:
//       w = w * (1 - lr * weight_decay)               the decoupled decay
//       m = beta1 * m + (1 - beta1) * g               the running mean of g
//       v = beta2 * v + (1 - beta2) * g * g           ... and of g squared
//       w = w - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
//   beta1, beta2, eps and weight_decay are opt->beta1, ... (doubles). The two
//   1 - beta^t undo the pull toward 0 of averages that start at 0.
//   Lesson 16's own is adamw_step in lessons/16-train/adamw.c (its kernels
//   round as PyTorch's do; plain float arithmetic is close enough here).
//
// CHECK IT
//   make exercise-16   trains lesson 16's model with yours in place of its own
//                      at four flag sets (1 step, 6, 7 and 30 steps) and
//                      compares the trained weights, the losses and every
//                      printed number.
//   The answer is on the page, docs/16-train.md, under Exercises.
#include <math.h>

#include "lessons/16-train/adamw.h"

void adamw_step(AdamW *opt, double lr) {
    (void)opt;
    (void)lr;
    // Your code here.
}
