// rng.h - PyTorch's CPU random number generator, bit for bit.
//
// After manual_seed(s), the functions below return exactly the numbers
// torch.rand / torch.randn / torch.randint / nn.Linear / dropout return
// after torch.manual_seed(s), provided they are called in the same order.
// docs/pytorch-rng.md explains the algorithms (rng.c's comments give its
// section numbers). Like PyTorch there is one default generator for the
// whole program.
#ifndef RNG_H
#define RNG_H

#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"

// torch.manual_seed(seed). A negative seed is passed as 2^64 + seed (its
// two's complement), as Python does; only seed mod 2^32 reaches mt19937.
void manual_seed(uint64_t seed);

uint32_t random32(void);   // the next 32-bit mt19937 output
uint64_t random64(void);   // (first << 32) | second

// torch.rand(shape): uniform on [0, 1 - 2^-24], one draw per element.
Tensor *rand_tensor(Shape shape);
// torch.randn(shape): standard normal (the numel < 16 Box-Muller path with
// its cached value, or the numel >= 16 AVX2 normal_fill path).
Tensor *randn(Shape shape);
// torch.randint(low, high, shape): int64 values in [low, high).
Tensor *randint(long low, long high, Shape shape);

// In-place fills of a contiguous tensor, row-major, as PyTorch draws them.
void uniform_(Tensor *t, double from, double to);
void normal_(Tensor *t, double mean, double std);

// One Bernoulli(keep_prob) draw as dropout makes it (section 6).
bool bernoulli_draw(double keep_prob);

#endif
