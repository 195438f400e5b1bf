// Exercise 14: write softmax's backward for one row.
//
// WHAT TO WRITE
//   softmax_backward_row(ds, dp, p, n): p is one row of n softmax outputs (one
//   query's weights, P[t, :]), dp the gradient that reaches them (dL/dP[t, :]).
//   Write into ds the gradient of the row's scores, dL/dscores[t, :]:
//       r     = sum over s of p[s] * dp[s]      one number per row
//       ds[s] = (dp[s] - r) * p[s]
//   and return r (the lesson keeps it: it equals dO . O). The page's part 1,
//   section 4, derives it from the Jacobian P_s (delta_su - P_u), which is
//   never built. A masked score has p = 0, so its ds is exactly 0.
//   Lesson 14's own is softmax_backward_row in lessons/14-attention-backward/
//   attention_backward.c (it adds r in PyTorch's order; a plain loop is close
//   enough here).
//
// CHECK IT
//   make exercise-14   runs lesson 14 with yours in place of its own at four
//                      flag sets and compares scores.grad, Q.grad, K.grad,
//                      X.grad and every printed number.
//   The answer is on the page, docs/14-attention-backward.md, under Exercises.

float softmax_backward_row(float *ds, const float *dp, const float *p, int n) {
    (void)ds;
    (void)dp;
    (void)p;
    (void)n;
    // Your code here.
    return 0.0f;
}
