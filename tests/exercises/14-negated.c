// A planted mistake for tests/exercises.sh: the sign flipped: (r - dp) * p.
// expect: the sign

float softmax_backward_row(float *ds, const float *dp, const float *p, int n) {
    float r = 0.0f;
    for (int s = 0; s < n; s++) {
        r += p[s] * dp[s];
    }
    for (int s = 0; s < n; s++) {
        ds[s] = (r - dp[s]) * p[s];
    }
    return r;
}
