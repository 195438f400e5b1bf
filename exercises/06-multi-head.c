// Exercise 6: write the split into heads, as a view.
//
// WHAT TO WRITE
//   split_heads(x, heads): x is (B, T, C) (batch, sequence, hidden_dim); return
//   it as (B, H, T, D), H = heads, D = C / H, so that head h of position t is
//   x[b, t, h*D : (h+1)*D]:
//       out[b, h, t, d] = x[b, t, h * D + d]
//   as a VIEW: the same memory read with other strides, nothing copied
//   (PyTorch's x.view(B, T, H, D).transpose(1, 2)). view(t, shape) and
//   transpose(t, dim0, dim1) make views (common/core/tensor.h); the lesson
//   prints q_state's strides and whether it shares Q's memory, so a copy shows.
//   Lesson 6's own is split_heads in lessons/06-multi-head/multi_head.c.
//
// CHECK IT
//   make exercise-6   runs lesson 6 with yours in place of its own at three flag
//                     sets and compares q_state, k_state, v_state, the weights,
//                     the outputs and every printed number (the strides too).
//   The answer is on the page, docs/06-multi-head.md, under Exercises.
#include "attention.h"

const Tensor *split_heads(const Tensor *x, int heads) {
    int B = size(x, 0), T = size(x, 1), C = size(x, 2), D = C / heads;
    (void)B;
    (void)T;
    (void)D;
    // Your code here.
    return x;
}
