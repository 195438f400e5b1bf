// adamw.h - torch.optim.AdamW, clip_grad_norm_ and the learning-rate schedule (adamw.c).
#ifndef ADAMW17_H
#define ADAMW17_H

#include "model.h"

#define MAX_PARAMS (3 + 9 * MAX_LAYERS)

// One parameter as the optimizer sees it: its value, its gradient, its two moments.
typedef struct {
    const char *name;       // its state_dict name
    Shape shape;
    float *value, *grad;    // numel floats each
    float *exp_avg;         // m: the running mean of the gradient
    float *exp_avg_sq;      // v: the running mean of its square
    long numel;
} Param;

typedef struct {
    Param params[MAX_PARAMS];   // in model.parameters() order
    int n_params;
    double beta1, beta2, eps, weight_decay;
    long step;                  // steps taken (PyTorch's state['step'])
} AdamW;

// The parameters in the order model.parameters() lists them, each with its gradient.
AdamW adamw_init(const Model *model, const Grads *grads, double beta1, double beta2,
                 double eps, double weight_decay);
// torch.norm(x, 2) of n floats, added as PyTorch adds them (kernels.c, norm_scalar).
float norm_of(const float *x, long n);
// "<name>.grad": the name --dump gives a parameter's gradient (an arena string).
const char *grad_name(const char *name);
// torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm): returns the norm before.
float clip_grad_norm(AdamW *opt, float max_norm);
// The learning rate of step n (from 1, as part 3 numbers the steps): a linear warmup to lr
// at step `warmup`, then a cosine down to a tenth of lr at step `steps`:
//   lr * n / warmup                                                      n <= warmup
//   lr * (0.1 + 0.9 * (1 + cos(pi * (n - warmup) / (steps - warmup))) / 2)    n > warmup
double learning_rate(int n, int steps, int warmup, double lr);
// optimizer.step() with this learning rate.
void adamw_step(AdamW *opt, double lr);

#endif
