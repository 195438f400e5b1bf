// A planted mistake for tests/exercises.sh: r summed without the weights: sum of dp.
// expect: weighted by p

float softmax_backward_row(float *ds, const float *dp, const float *p, int n) {
    float r = 0.0f;
    for (int s = 0; s < n; s++) {
        r += dp[s];
    }
    for (int s = 0; s < n; s++) {
        ds[s] = (dp[s] - r) * p[s];
    }
    return r;
}
