// attention.h - everything a lesson includes: the tiny tensor helper.
//
//   arena.h   who owns memory (one arena, freed at the end)
//   error.h   how a wrong shape is reported
//   tensor.h  the tensor, its views, contiguous/view/reshape
//   ops.h     matmul, softmax, masked_fill, split, cat, dropout, ...
//   nn.h      nn.Linear
//   rng.h     PyTorch's random numbers, bit for bit
//   print.h   PyTorch's print() text
//   npy.h     .npy files for --dump
//   graph.h   the dataflow graph for --dot
//   heatmap.h attention weights drawn as shaded grids (--heatmap)
//   lesson.h  the command line every lesson shares
#ifndef ATTENTION_H
#define ATTENTION_H

#include "arena.h"
#include "error.h"
#include "graph.h"
#include "heatmap.h"
#include "lesson.h"
#include "nn.h"
#include "npy.h"
#include "ops.h"
#include "print.h"
#include "rng.h"
#include "tensor.h"

#endif
