// gelu_exact.h - GELU's arithmetic on floats, rounded where PyTorch 1.13's
// CPU code rounds, so that a lesson's GELU gives PyTorch's bits. gelu() in
// ops.h calls it.
#ifndef GELU_EXACT_H
#define GELU_EXACT_H

// nn.GELU() (the erf form) on n contiguous floats, in place, as PyTorch
// computes F.gelu on a contiguous float32 tensor of n elements.
void gelu_exact(float *data, long n);

// exp(x) as oneDNN's vector code computes it (what gelu_exact uses).
float onednn_expf(float x);

#endif
