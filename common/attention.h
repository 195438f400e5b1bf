// attention.h - everything a lesson includes: the tiny tensor helper.
//
//   arena.h   who owns memory (one arena, freed at the end)
//   error.h   how a wrong shape is reported
//   tensor.h  the tensor, its views, contiguous/view/reshape, sizes as text
//   ops.h     matmul, softmax, masked_fill, split, cat, dropout, ...
//   softmax_exact.h  softmax's arithmetic on rows of floats, as PyTorch rounds it
//   layer_norm_exact.h, gelu_exact.h  the same for LayerNorm and GELU
//   sum_exact.h  torch.sum's order of additions on a row (RMSNorm's mean, lesson 15)
//   nn.h      nn.Linear
//   rng.h     PyTorch's random numbers, bit for bit
//   print.h   PyTorch's print() text
//   trace.h   the hook every operation reports to, and named()
//   heatmap.h attention weights drawn as shaded grids (--heatmap)
//   lesson.h  the shape of a lesson, and the command line every lesson shares
// (graph.h, npy.h and files.h are what --dot and --dump use behind lesson.h.)
#ifndef ATTENTION_H
#define ATTENTION_H

#include "arena.h"
#include "error.h"
#include "gelu_exact.h"
#include "heatmap.h"
#include "layer_norm_exact.h"
#include "lesson.h"
#include "nn.h"
#include "ops.h"
#include "print.h"
#include "rng.h"
#include "softmax_exact.h"
#include "sum_exact.h"
#include "tensor.h"
#include "trace.h"

#endif
