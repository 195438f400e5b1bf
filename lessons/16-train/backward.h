// backward.h - the gradient of the loss with respect to every parameter (backward.c).
#ifndef BACKWARD16_H
#define BACKWARD16_H

#include "model.h"

// The backward's own buffers, made once: gradients of activations, and scratch.
typedef struct {
    float *d_logits;               // (B, N, NV)
    float *d_x;                    // (B, N, C) the gradient of the residual stream
    float *d_x2;                   // (B, N, C) ... in the middle of a layer
    float *d_h;                    // (B, N, C) of a norm's output
    float *direct, *through_mean;  // (B, N, C) a norm's two paths back to its input
    float *d_y;                    // (B, N, H, D)
    float *d_q;                    // (B, N, H, D)
    float *d_k, *d_v;              // (B, N, KV, D)
    float *group_dk, *group_dv;    // (R, N, D) the dK and dV of one group's query heads
    float *group_sum;              // (N, D) their sum
    float *d_scores;               // (N, N) one head's
    float *d_att;                  // (N, N)
    float *d_prod, *d_gate, *d_up; // (B, N, F)
    float *products;               // (B, N, max(C, F)) a product before it is summed
    float *scratch;                // a head transposed, a row of C
} BackwardScratch;

Grads grads_init(const Model *model);
BackwardScratch backward_scratch_init(const Config *config, int B);
// loss.backward() for a batch whose forward left `acts`; `asked` rows have a label.
void model_backward(Grads *grads, BackwardScratch *w, const Model *model,
                    const Activations *acts, const Tensor *input_ids, const Tensor *labels,
                    int asked);

#endif
