// A planted mistake for tests/exercises.sh: the row term left out: ds = dp * p.
// expect: the row term r is missing

float softmax_backward_row(float *ds, const float *dp, const float *p, int n) {
    for (int s = 0; s < n; s++) {
        ds[s] = dp[s] * p[s];
    }
    return 0.0f;
}
