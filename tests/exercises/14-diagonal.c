// A planted mistake for tests/exercises.sh: the Jacobian's diagonal alone: ds = dp * p * (1 - p).
// expect: only the Jacobian's diagonal

float softmax_backward_row(float *ds, const float *dp, const float *p, int n) {
    float r = 0.0f;
    for (int s = 0; s < n; s++) {
        r += p[s] * dp[s];
        ds[s] = dp[s] * p[s] * (1.0f - p[s]);
    }
    return r;
}
