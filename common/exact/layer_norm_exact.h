// layer_norm_exact.h - LayerNorm's arithmetic on rows of floats, rounded
// where PyTorch 1.13's CPU kernel rounds, so that a lesson's LayerNorm gives
// PyTorch's bits. layer_norm() in ops.h calls it.
#ifndef LAYER_NORM_EXACT_H
#define LAYER_NORM_EXACT_H

// The mean and the biased variance (sum of squared deviations / n) of
// x[0..n-1], n >= 1, as PyTorch's RowwiseMoments computes them.
void layer_norm_exact_moments(float *mean, float *var, const float *x, long n);

// One row: y = (x - mean) / sqrt(var + eps) * weight + bias, written as
// PyTorch's kernel writes it. y may not overlap x.
void layer_norm_exact_row(float *y, const float *x, const float *weight, const float *bias, long n,
                          float eps);

#endif
