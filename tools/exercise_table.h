// exercise_table.h - the write-it exercises tools/exercise.c checks: for each, the
// lesson, the function the reader writes (exercises/NN-name.c), the flag sets it is
// run with, the dumped tensors the function affects (in the order the lesson makes
// them; {NULL} for none; each run compares those it dumps, and each must be dumped by
// some run), whether the printed output is compared too (and which lines not), and the
// hints, each a test of the reader's tensor (or printed output, or a failed run's
// stderr) against the lesson's (tools/exercise.c has the common tests) and what to say
// when it holds: the first that holds is given.
//
// Adding an exercise for lesson NN (the Makefile finds the rest by number):
//   - the function made an ordinary (non-static) one in the lesson, if it is not;
//   - exercises/NN-name.c: a header comment (what to compute, the formula, the shapes,
//     the lesson's function it replaces, make exercise-NN), the signature, and a body
//     that compiles and computes nothing; tests/exercises/NN-start.c, a copy of it;
//   - an entry below, and tests/exercises/NN-<mistake>.c for each hint, a planted
//     mistake whose "// expect: " line quotes the hint;
//   - on the page, a "Write it yourself" exercise whose answer is the ```c block right
//     after a <summary> that names make exercise-NN (tests/exercises.sh compiles it
//     with the starting file's #include and typedef lines).
// make test-long then checks it: the answer passes, the starting file and each mistake
// get their message.

// --- tests that one exercise uses ---

// The number printed right after `label` in `text` (NAN if there is none).
static double printed_after(const char *text, const char *label) {
    const char *at = strstr(text, label);
    return at != NULL ? atof(at + strlen(label)) : NAN;
}

// Lesson 1: the weights are softmax(scores, dim=0), each column summing to 1.
static bool softmax_over_columns(const Seen *s) {
    Array scores;
    if (s->yours->ndim != 2 || !load(&scores, s->expected_dir, "scores")) {
        return false;
    }
    long n = scores.size[0], m = scores.size[1];
    bool same = same_shape(&scores, s->yours);
    for (long j = 0; same && j < m; j++) {
        double max = -INFINITY, sum = 0;
        for (long i = 0; i < n; i++) {
            max = fmax(max, scores.v[i * m + j]);
        }
        for (long i = 0; i < n; i++) {
            sum += exp(scores.v[i * m + j] - max);
        }
        for (long i = 0; same && i < n; i++) {
            same = close_to(s->yours->v[i * m + j], exp(scores.v[i * m + j] - max) / sum);
        }
    }
    free(scores.v);
    return same;
}

static bool weights_are_scores(const Seen *s) { return equals_dumped(s, "scores"); }

// The difference is in the printed output, every dumped tensor agreeing.
static bool only_printed(const Seen *s) { return s->yours->ndim == 0; }

// Lesson 9: yours == 1 - expected everywhere.
static bool inverted(const Seen *s) {
    for (long i = 0; i < s->expected->n; i++) {
        if (!close_to(s->yours->v[i], 1 - s->expected->v[i])) {
            return false;
        }
    }
    return s->expected->n > 0;
}

// Lesson 2: yours[b, t, s] = Q[b, t] . K[0, s], every batch row's keys from row 0.
static bool keys_of_batch_zero(const Seen *s) {
    Array q, k;
    if (!load(&q, s->expected_dir, "Q")) {
        return false;
    }
    if (!load(&k, s->expected_dir, "K")) {
        free(q.v);
        return false;
    }
    long B = q.size[0], T = q.size[1], C = q.size[2], S = k.size[1];
    bool same = B > 1 && s->yours->n == B * T * S;
    for (long b = 0; same && b < B; b++) {
        for (long t = 0; same && t < T; t++) {
            for (long j = 0; same && j < S; j++) {
                double sum = 0;
                for (long c = 0; c < C; c++) {
                    sum += q.v[(b * T + t) * C + c] * k.v[j * C + c];
                }
                same = close_to(s->yours->v[(b * T + t) * S + j], sum);
            }
        }
    }
    free(q.v);
    free(k.v);
    return same;
}

// Lesson 4: the weights are softmax(Q @ K^T / sqrt(C)) with no mask at all (mask
// NULL), or with -1e20 where mask[b, s, t] is 0 (the mask read transposed).
static bool softmax_of_scores(const Seen *s, const char *mask_name) {
    Array q, k, mask = {0, {0}, 0, NULL};
    if (!load(&q, s->expected_dir, "Q")) {
        return false;
    }
    if (!load(&k, s->expected_dir, "K")) {
        free(q.v);
        return false;
    }
    long B = q.size[0], T = q.size[1], C = q.size[2], S = k.size[1];
    bool same = s->yours->n == B * T * S && S <= 4096;
    if (mask_name != NULL) {
        same = same && T == S && load(&mask, s->expected_dir, mask_name) && mask.n == B * T * S;
    }
    double row[4096];
    for (long b = 0; same && b < B; b++) {
        for (long t = 0; same && t < T; t++) {
            double max = -INFINITY, sum = 0;
            for (long j = 0; j < S; j++) {
                double dot = 0;
                for (long c = 0; c < C; c++) {
                    dot += q.v[(b * T + t) * C + c] * k.v[(b * S + j) * C + c];
                }
                row[j] = dot / sqrt((double)C);
                if (mask.v != NULL && mask.v[(b * T + j) * S + t] == 0) {
                    row[j] = -1e20;
                }
                max = fmax(max, row[j]);
            }
            for (long j = 0; j < S; j++) {
                sum += exp(row[j] - max);
            }
            for (long j = 0; same && j < S; j++) {
                same = close_to(s->yours->v[(b * T + t) * S + j], exp(row[j] - max) / sum);
            }
        }
    }
    free(q.v);
    free(k.v);
    free(mask.v);
    return same;
}

static bool no_mask_applied(const Seen *s) { return softmax_of_scores(s, NULL); }
static bool masked_as_queries(const Seen *s) { return softmax_of_scores(s, "mask"); }

// Lesson 4: a weight above 0 where the lesson's is exactly 0 (a masked key).
static bool weight_on_masked(const Seen *s) {
    for (long i = 0; i < s->expected->n; i++) {
        if (s->expected->v[i] == 0 && s->yours->v[i] > 1e-6) {
            return true;
        }
    }
    return false;
}

// Lesson 4: weight 0 wherever the lesson's is above 0: the mask's meaning inverted.
static bool weight_only_on_masked(const Seen *s) {
    for (long i = 0; i < s->expected->n; i++) {
        if (s->expected->v[i] > 1e-6 && s->yours->v[i] != 0) {
            return false;
        }
    }
    return weight_on_masked(s);
}

// Lesson 6: yours, flat, holds the numbers of the dumped input Q in its order.
static bool flat_equals_input(const Seen *s) {
    Array q;
    if (!load(&q, s->expected_dir, "Q")) {
        return false;
    }
    bool same = q.n == s->yours->n;
    for (long i = 0; same && i < q.n; i++) {
        same = close_to(s->yours->v[i], q.v[i]);
    }
    free(q.v);
    return same;
}

// Lesson 6: what the lesson prints of q_state's memory says it is a copy.
static bool printed_a_copy(const Seen *s) {
    return strstr(s->printed, "q_state.data_ptr() == Q.data_ptr(): False") != NULL;
}

// Lesson 8: out (B, N, H, D) recomputed from the dumped query (B, N, H, D), key and
// value (B, S, KV, D), query head g*... of key/value head h being h * R + g (the
// notebook's "b (h g) n d"), with the scores made `how`: SCORES_RIGHT (q . k /
// sqrt(D)), SCORES_TWICE (q . k / D, the scale applied twice), SCORES_ZERO (all 0:
// uniform weights), SCORES_HEAD_0 (every query against key/value head 0's keys).
enum { SCORES_RIGHT, SCORES_TWICE, SCORES_ZERO, SCORES_HEAD_0 };

static bool gqa_out_is(const Seen *s, int how) {
    Array q, k, v;
    if (!load(&q, s->expected_dir, "query")) {
        return false;
    }
    if (!load(&k, s->expected_dir, "key")) {
        free(q.v);
        return false;
    }
    if (!load(&v, s->expected_dir, "value")) {
        free(q.v);
        free(k.v);
        return false;
    }
    long B = q.size[0], N = q.size[1], H = q.size[2], D = q.size[3];
    long S = k.size[1], KV = k.size[2], R = H / KV;
    bool same = strcmp(s->name, "out") == 0 && s->yours->n == B * N * H * D && S <= 4096;
    double weight[4096];
    for (long b = 0; same && b < B; b++) {
        for (long n = 0; same && n < N; n++) {
            for (long hq = 0; same && hq < H; hq++) {
                long h = hq / R, key_h = how == SCORES_HEAD_0 ? 0 : h;
                double max = -INFINITY, sum = 0;
                for (long j = 0; j < S; j++) {
                    double dot = 0;
                    for (long d = 0; d < D; d++) {
                        dot += q.v[((b * N + n) * H + hq) * D + d] *
                               k.v[((b * S + j) * KV + key_h) * D + d];
                    }
                    weight[j] = how == SCORES_ZERO    ? 0
                              : how == SCORES_TWICE ? dot / (double)D
                                                    : dot / sqrt((double)D);
                    max = fmax(max, weight[j]);
                }
                for (long j = 0; j < S; j++) {
                    weight[j] = exp(weight[j] - max);
                    sum += weight[j];
                }
                for (long d = 0; same && d < D; d++) {
                    double o = 0;
                    for (long j = 0; j < S; j++) {
                        o += weight[j] / sum * v.v[((b * S + j) * KV + h) * D + d];
                    }
                    same = close_to(s->yours->v[((b * N + n) * H + hq) * D + d], o);
                }
            }
        }
    }
    free(q.v);
    free(k.v);
    free(v.v);
    return same;
}

static bool gqa_scores_zero(const Seen *s) { return gqa_out_is(s, SCORES_ZERO); }
static bool gqa_scaled_twice(const Seen *s) { return gqa_out_is(s, SCORES_TWICE); }
static bool gqa_key_head_0(const Seen *s) { return gqa_out_is(s, SCORES_HEAD_0); }

// Lesson 10: the last position along dim 1 is all zeros in yours and not in the
// lesson's (a cache whose later positions were never written).
static bool last_position_unwritten(const Seen *s) {
    const Array *e = s->expected, *y = s->yours;
    if (e->ndim < 2 || e->size[1] < 2) {
        return false;
    }
    long inner = e->n / (e->size[0] * e->size[1]), P = e->size[1];
    bool yours_zero = true, lessons_zero = true;
    for (long b = 0; b < e->size[0]; b++) {
        for (long i = 0; i < inner; i++) {
            long at = (b * P + P - 1) * inner + i;
            yours_zero = yours_zero && y->v[at] == 0;
            lessons_zero = lessons_zero && e->v[at] == 0;
        }
    }
    return yours_zero && !lessons_zero;
}

// Lesson 13: out (B, H, N, D) is softmax(q . k * factor / sqrt(D)) @ v from the dumped
// query (B, H, N, D), key and value (B, KV, N, D), causal when the run's flags say so,
// query head i reading key/value head i / (H / KV).
static bool attention_with_factor(const Seen *s, double factor) {
    Array q, k, v;
    if (!load(&q, s->expected_dir, "query")) {
        return false;
    }
    if (!load(&k, s->expected_dir, "key")) {
        free(q.v);
        return false;
    }
    if (!load(&v, s->expected_dir, "value")) {
        free(q.v);
        free(k.v);
        return false;
    }
    long B = q.size[0], H = q.size[1], N = q.size[2], D = q.size[3], KV = k.size[1];
    bool causal = strstr(s->flags, "--causal") != NULL;
    bool same = s->yours->n == B * H * N * D && N <= 4096;
    double weight[4096];
    for (long b = 0; same && b < B; b++) {
        for (long h = 0; same && h < H; h++) {
            long kv = h / (H / KV);
            for (long n = 0; same && n < N; n++) {
                long keys = causal ? n + 1 : N;
                double max = -INFINITY, sum = 0;
                for (long j = 0; j < keys; j++) {
                    double dot = 0;
                    for (long d = 0; d < D; d++) {
                        dot += q.v[((b * H + h) * N + n) * D + d] *
                               k.v[((b * KV + kv) * N + j) * D + d];
                    }
                    weight[j] = dot * factor / sqrt((double)D);
                    max = fmax(max, weight[j]);
                }
                for (long j = 0; j < keys; j++) {
                    weight[j] = exp(weight[j] - max);
                    sum += weight[j];
                }
                for (long d = 0; same && d < D; d++) {
                    double o = 0;
                    for (long j = 0; j < keys; j++) {
                        o += weight[j] / sum * v.v[((b * KV + kv) * N + j) * D + d];
                    }
                    same = close_to(s->yours->v[((b * H + h) * N + n) * D + d], o);
                }
            }
        }
    }
    free(q.v);
    free(k.v);
    free(v.v);
    return same;
}

static bool softmax_in_base_e(const Seen *s) { return attention_with_factor(s, 1 / log(2.0)); }

// Lesson 16: a flag's number in the run's flags ("--lr 0.01"), or `otherwise`.
static double flag_number(const char *flags, const char *name, double otherwise) {
    const char *at = strstr(flags, name);
    return at != NULL ? atof(at + strlen(name)) : otherwise;
}

// Lesson 16: part 2 prints step 1 on one weight: w = lm_head.weight[0, 0], its gradient
// g, the learning rate, and w after opt.step(), w1 = w * (1 - lr * wd) - lr * g / (|g| +
// eps) (step 1's m / (sqrt(v) + eps) with both bias corrections). Is your w1 w itself
// (never moved), w - lr * g / (|g| + eps) (no decay) or w * (1 - lr * wd) + lr * g /
// (|g| + eps) (moved uphill)?
enum { ADAMW_UNMOVED, ADAMW_NO_DECAY, ADAMW_UPHILL };

static bool adamw_one_step_is(const Seen *s, int how) {
    const char *w1_label = ") = ";   // "... (sqrt(g^2) + 1e-8) = -0.194257, about w - ..."
    const char *line = strstr(s->printed, "(sqrt(g^2) + 1e-8)");
    double w = printed_after(s->expected_printed, "lm_head.weight[0, 0] = ");
    double g = printed_after(s->expected_printed, "whose gradient is g = ");
    double lr = printed_after(s->expected_printed, "opt.step() with lr ");
    double wd = flag_number(s->flags, "--weight-decay ", 0.01);
    if (line == NULL || isnan(w) || isnan(g) || isnan(lr)) {
        return false;
    }
    double yours = printed_after(line, w1_label);
    double step = lr * g / (fabs(g) + 1e-8);
    double expected = how == ADAMW_UNMOVED    ? w
                    : how == ADAMW_NO_DECAY ? w - step
                                            : w * (1 - lr * wd) + step;
    return fabs(yours - expected) <= 2e-6 + 1e-5 * fabs(expected);
}

static bool adamw_unmoved(const Seen *s) { return adamw_one_step_is(s, ADAMW_UNMOVED); }
static bool adamw_no_decay(const Seen *s) { return adamw_one_step_is(s, ADAMW_NO_DECAY); }
static bool adamw_uphill(const Seen *s) { return adamw_one_step_is(s, ADAMW_UPHILL); }

// Lesson 14: yours (scores.grad, (B, T, S)) against softmax's backward done `how`, from
// the dumped att_weight (P) and att_weight.grad (dP): SOFTMAX_BACK_NO_R, dP * P;
// SOFTMAX_BACK_DIAGONAL, dP * P * (1 - P); SOFTMAX_BACK_UNWEIGHTED, (dP - sum dP) * P;
// SOFTMAX_BACK_NEGATED, (r - dP) * P.
enum { SOFTMAX_BACK_NO_R, SOFTMAX_BACK_DIAGONAL, SOFTMAX_BACK_UNWEIGHTED, SOFTMAX_BACK_NEGATED };

static bool softmax_backward_is(const Seen *s, int how) {
    Array p, dp;
    if (strcmp(s->name, "scores.grad") != 0 || !load(&p, s->expected_dir, "att_weight")) {
        return false;
    }
    if (!load(&dp, s->expected_dir, "att_weight.grad")) {
        free(p.v);
        return false;
    }
    bool same = same_shape(&p, s->yours) && same_shape(&dp, s->yours) && p.ndim >= 1;
    long n = same ? p.size[p.ndim - 1] : 1;
    for (long row = 0; same && row < p.n; row += n) {
        double r = 0, sum = 0;
        for (long j = row; j < row + n; j++) {
            r += p.v[j] * dp.v[j];
            sum += dp.v[j];
        }
        for (long j = row; same && j < row + n; j++) {
            double x = how == SOFTMAX_BACK_NO_R       ? dp.v[j] * p.v[j]
                     : how == SOFTMAX_BACK_DIAGONAL   ? dp.v[j] * p.v[j] * (1 - p.v[j])
                     : how == SOFTMAX_BACK_UNWEIGHTED ? (dp.v[j] - sum) * p.v[j]
                                                      : (r - dp.v[j]) * p.v[j];
            same = close_to(s->yours->v[j], x);
        }
    }
    free(p.v);
    free(dp.v);
    return same;
}

static bool softmax_back_no_r(const Seen *s) { return softmax_backward_is(s, SOFTMAX_BACK_NO_R); }
static bool softmax_back_diagonal(const Seen *s) {
    return softmax_backward_is(s, SOFTMAX_BACK_DIAGONAL);
}
static bool softmax_back_unweighted(const Seen *s) {
    return softmax_backward_is(s, SOFTMAX_BACK_UNWEIGHTED);
}
static bool softmax_back_negated(const Seen *s) {
    return softmax_backward_is(s, SOFTMAX_BACK_NEGATED);
}

// Lesson 15: yours (query_states or key_states, (B, heads, T, D)) against RoPE done
// `how`, from the lesson's: its input x recovered by turning each pair back (the dumped
// cos and sin, (T, D/2); the layout the run's flags name), then ROPE_UNTURNED (x itself),
// ROPE_OTHER_LAYOUT (x turned with the other layout's pairs) or ROPE_BACKWARDS (x turned
// by minus the angle).
enum { ROPE_UNTURNED, ROPE_OTHER_LAYOUT, ROPE_BACKWARDS };

static bool rope_is(const Seen *s, int how) {
    const Array *e = s->expected;
    Array cos, sin;
    if (e->ndim != 4 || !load(&cos, s->expected_dir, "cos")) {
        return false;
    }
    if (!load(&sin, s->expected_dir, "sin")) {
        free(cos.v);
        return false;
    }
    long T = e->size[2], D = e->size[3], half = D / 2;
    bool interleaved = strstr(s->flags, "--rope-layout interleaved") != NULL;
    bool same = same_shape(e, s->yours) && cos.ndim == 2 && cos.size[0] == T &&
                cos.size[1] == half && same_shape(&cos, &sin) && D % 2 == 0;
    double *x = malloc((size_t)(D > 0 ? D : 1) * sizeof *x);
    for (long row = 0; same && row < e->n; row += D) {
        long t = (row / D) % T;
        for (long i = 0; i < half; i++) {   // x, turned back
            long first = interleaved ? 2 * i : i, second = interleaved ? 2 * i + 1 : i + half;
            double c = cos.v[t * half + i], n = sin.v[t * half + i];
            x[first] = e->v[row + first] * c + e->v[row + second] * n;
            x[second] = e->v[row + second] * c - e->v[row + first] * n;
        }
        for (long i = 0; same && i < half; i++) {
            bool other = how == ROPE_OTHER_LAYOUT ? !interleaved : interleaved;
            long first = other ? 2 * i : i, second = other ? 2 * i + 1 : i + half;
            double c = cos.v[t * half + i], n = how == ROPE_BACKWARDS ? -sin.v[t * half + i]
                                                                      : sin.v[t * half + i];
            double a = x[first], b = x[second];
            double want_first = how == ROPE_UNTURNED ? a : a * c - b * n;
            double want_second = how == ROPE_UNTURNED ? b : b * c + a * n;
            same = close_to(s->yours->v[row + first], want_first) &&
                   close_to(s->yours->v[row + second], want_second);
        }
    }
    free(x);
    free(cos.v);
    free(sin.v);
    return same;
}

// Lesson 15: part 4 runs the same weights in the other layout and prints how far out
// moves: 0 in yours (rotate ignores its layout) and not in the lesson's.
static bool rope_layout_ignored(const Seen *s) {
    const char *line = "max |out - out(interleaved)| = 0.0000";
    return strstr(s->printed, line) != NULL && strstr(s->expected_printed, line) == NULL;
}

static bool rope_unturned(const Seen *s) { return rope_is(s, ROPE_UNTURNED); }
static bool rope_other_layout(const Seen *s) { return rope_is(s, ROPE_OTHER_LAYOUT); }
static bool rope_backwards(const Seen *s) { return rope_is(s, ROPE_BACKWARDS); }

// Lesson 3: yours (K or V) holds the lesson's Q: every part cut from column 0.
static bool equals_lessons_q(const Seen *s) {
    return strcmp(s->name, "Q") != 0 && equals_dumped(s, "Q");
}

// Lesson 3: part 3 prints whether Q, K and V share QKV's storage: not in yours.
static bool printed_not_shared(const Seen *s) {
    return strstr(s->printed, "share QKV's storage: False") != NULL;
}

// Lesson 5: yours (Q, (B, T, C)) is X W^T from the dumped X and query_proj's weight
// (out, in): the bias left out. (X W, the weight untransposed, stops the lesson: its
// part 2 calls linear with out = 3 * in.)
static bool linear_no_bias(const Seen *s) {
    Array x, w;
    if (strcmp(s->name, "Q") != 0 || !load(&x, s->expected_dir, "X")) {
        return false;
    }
    if (!load(&w, s->expected_dir, "query_proj.weight")) {
        free(x.v);
        return false;
    }
    long in = x.size[x.ndim - 1], out = w.size[0], rows = x.n / in;
    bool same = w.ndim == 2 && w.size[1] == in && s->yours->n == rows * out;
    for (long r = 0; same && r < rows; r++) {
        for (long o = 0; same && o < out; o++) {
            double y = 0;
            for (long i = 0; i < in; i++) {
                y += x.v[r * in + i] * w.v[o * in + i];
            }
            same = close_to(s->yours->v[r * out + o], y);
        }
    }
    free(x.v);
    free(w.v);
    return same;
}

// Lesson 7: yours (output_mid, (B, H, T, D)) is the sum over the first `T` keys only,
// from the dumped attention_weight (B, H, T, S) and v_state (B, H, S, D), with T < S
// (a run without dropout: the weights the mix used are the dumped ones).
static bool mixed_first_keys_only(const Seen *s) {
    Array w, v;
    if (strcmp(s->name, "output_mid") != 0 || !load(&w, s->expected_dir, "attention_weight")) {
        return false;
    }
    if (!load(&v, s->expected_dir, "v_state")) {
        free(w.v);
        return false;
    }
    long BH = w.size[0] * w.size[1], T = w.size[2], S = w.size[3], D = v.size[3];
    bool same = T < S && s->yours->n == BH * T * D && strstr(s->flags, "--train") == NULL;
    for (long m = 0; same && m < BH; m++) {
        for (long t = 0; same && t < T; t++) {
            for (long d = 0; same && d < D; d++) {
                double sum = 0;
                for (long j = 0; j < T; j++) {
                    sum += w.v[(m * T + t) * S + j] * v.v[(m * S + j) * D + d];
                }
                same = close_to(s->yours->v[(m * T + t) * D + d], sum);
            }
        }
    }
    free(w.v);
    free(v.v);
    return same;
}

// Lesson 11: part 2 prints norm1(x)[0, 0] (weight 1 and bias 0 at init): is the first
// number of yours LayerNorm's of the dumped x[0, 0, :] done `how`: LAYER_NORM_UNBIASED
// (the variance divided by C - 1), LAYER_NORM_NO_SQRT (divided by var + eps itself),
// LAYER_NORM_NO_MEAN (x / sqrt(var + eps))? Four printed decimals: within 1.5e-4.
enum { LAYER_NORM_UNBIASED, LAYER_NORM_NO_SQRT, LAYER_NORM_NO_MEAN };

static bool layer_norm_first_is(const Seen *s, int how) {
    double yours = printed_after(s->printed, "norm1(x)[0, 0]: tensor([");
    Array x;
    if (isnan(yours) || !load(&x, s->expected_dir, "x")) {
        return false;
    }
    long C = x.size[x.ndim - 1];
    double mean = 0, var = 0;
    for (long c = 0; c < C; c++) {
        mean += x.v[c] / C;
    }
    for (long c = 0; c < C; c++) {
        var += (x.v[c] - mean) * (x.v[c] - mean);
    }
    double want = how == LAYER_NORM_UNBIASED ? (x.v[0] - mean) / sqrt(var / (C - 1) + 1e-5)
                : how == LAYER_NORM_NO_SQRT  ? (x.v[0] - mean) / (var / C + 1e-5)
                                             : x.v[0] / sqrt(var / C + 1e-5);
    free(x.v);
    return C > 1 && fabs(yours - want) <= 1.5e-4;
}

static bool layer_norm_unbiased(const Seen *s) {
    return layer_norm_first_is(s, LAYER_NORM_UNBIASED);
}
static bool layer_norm_no_sqrt(const Seen *s) { return layer_norm_first_is(s, LAYER_NORM_NO_SQRT); }
static bool layer_norm_no_mean(const Seen *s) { return layer_norm_first_is(s, LAYER_NORM_NO_MEAN); }

// Lesson 12: part 1 prints the distance matrix after "(queries at P..L-1, keys at
// 0..L-1):". Is yours distance[t, s] = d(P + t, s) for the mistake `how`:
// DISTANCE_ZERO (all 0), DISTANCE_NO_OFFSET (t - s), DISTANCE_NEGATED (s - (P + t)),
// DISTANCE_ONE_OFF ((P + t) - s + 1 or - 1)?
enum { DISTANCE_ZERO, DISTANCE_NO_OFFSET, DISTANCE_NEGATED, DISTANCE_ONE_OFF };

static bool printed_distance_is(const Seen *s, int how) {
    const char *at = strstr(s->printed, "(queries at ");
    if (at == NULL) {
        return false;
    }
    int P = atoi(at + strlen("(queries at "));
    const char *keys = strstr(at, "keys at 0..");
    const char *numbers = keys != NULL ? strstr(keys, "tensor(") : NULL;
    if (numbers == NULL) {
        return false;
    }
    int L = atoi(keys + strlen("keys at 0..")) + 1, T = L - P;
    const char *end = strstr(numbers, "])");
    bool plus = true, minus = true, same = true;   // DISTANCE_ONE_OFF: either way
    const char *p = numbers + strlen("tensor(");
    for (int i = 0; same && i < T * L; i++) {
        while (*p != '\0' && p < end && *p != '-' && (*p < '0' || *p > '9')) {
            p++;
        }
        if (end == NULL || p >= end) {
            return false;
        }
        char *after;
        long yours = strtol(p, &after, 10);
        p = after;
        int t = i / L, k = i % L;
        long right = (P + t) - k;
        if (how == DISTANCE_ONE_OFF) {
            plus = plus && yours == right + 1;
            minus = minus && yours == right - 1;
            same = plus || minus;
        } else {
            same = yours == (how == DISTANCE_ZERO ? 0 : how == DISTANCE_NO_OFFSET ? t - k : -right);
        }
    }
    return same && P > 0;
}

static bool distance_zero(const Seen *s) { return printed_distance_is(s, DISTANCE_ZERO); }
static bool distance_no_offset(const Seen *s) {
    return printed_distance_is(s, DISTANCE_NO_OFFSET);
}
static bool distance_negated(const Seen *s) { return printed_distance_is(s, DISTANCE_NEGATED); }
static bool distance_one_off(const Seen *s) { return printed_distance_is(s, DISTANCE_ONE_OFF); }

// Lesson 17: part 4 prints "...; top-p P keeps N" (after "keeps all M tokens" or "keeps K"
// for top-k): the N of a printed text, or NAN.
static double top_p_kept(const char *text) {
    const char *at = strstr(text, "; top-p ");
    const char *keeps = at != NULL ? strstr(at, " keeps ") : NULL;
    return keeps != NULL ? atof(keeps + strlen(" keeps ")) : NAN;
}

// Lesson 17: yours keeps every token (the starting file), or one token fewer than the
// lesson's.
static bool top_p_keeps_all(const Seen *s) {
    const char *all = strstr(s->expected_printed, "keeps all ");
    return all != NULL && top_p_kept(s->printed) == atof(all + strlen("keeps all ")) &&
           top_p_kept(s->expected_printed) != top_p_kept(s->printed);
}

static bool top_p_one_fewer(const Seen *s) {
    return top_p_kept(s->printed) == top_p_kept(s->expected_printed) - 1;
}


// Lesson 18: part 1 (every experiment) prints "ALiBi's slopes for 4 heads, 2^(-8h/4), h =
// 1..4: 0.25 0.0625 ..." and, for a power of two, "  and for 6 heads, 4's then every other
// of 8's: ...": the slopes of the line that starts with `label` (up to `max`), their count
// returned (0 when there is no such line).
static int printed_slopes(const char *text, const char *label, double *slopes, int max) {
    const char *at = strstr(text, label);
    const char *colon = at != NULL ? strchr(at, ':') : NULL;
    int n = 0;
    if (colon == NULL || colon > at + strcspn(at, "\n")) {
        return 0;
    }
    for (const char *p = colon + 1; n < max && *p == ' ';) {
        char *end;
        slopes[n] = strtod(p, &end);
        if (end == p) {
            break;
        }
        n++;
        p = end;
    }
    return n;
}

// Lesson 18: yours and the lesson's slopes for the run's H (the first line), in `yours` and
// `lessons`: their count when both are there and as many, else 0.
static int both_slopes(const Seen *s, double *yours, double *lessons) {
    int a = printed_slopes(s->printed, "ALiBi's slopes for", yours, 8);
    int b = printed_slopes(s->expected_printed, "ALiBi's slopes for", lessons, 8);
    return a == b ? a : 0;
}

// ... all 0 (the starting file's).
static bool slopes_zero(const Seen *s) {
    double yours[8], lessons[8];
    int n = both_slopes(s, yours, lessons);
    for (int h = 0; h < n; h++) {
        if (yours[h] != 0) {
            return false;
        }
    }
    return n > 0;
}

// ... 1, then the lesson's shifted by one: 2^(-8h/H) with h from 0.
static bool slopes_from_one(const Seen *s) {
    double yours[8], lessons[8];
    int n = both_slopes(s, yours, lessons);
    bool same = n > 1 && yours[0] == 1;
    for (int h = 1; same && h < n; h++) {
        same = close_to(yours[h], lessons[h - 1]);
    }
    return same;
}

// ... not a geometric sequence (for a power of two H, where the lesson's is one).
static bool slopes_not_geometric(const Seen *s) {
    double yours[8], lessons[8];
    int n = both_slopes(s, yours, lessons);
    if (n < 3 || (n & (n - 1)) != 0 || yours[0] == 0) {
        return false;
    }
    for (int h = 2; h < n; h++) {
        if (!close_to(yours[h] / yours[h - 1], yours[1] / yours[0])) {
            return true;
        }
    }
    return false;
}

// ... right for the run's H, a power of two, and not for 6 heads (the second line).
static bool slopes_wrong_for_six(const Seen *s) {
    double yours[8], lessons[8], yours6[8], lessons6[8];
    int n = both_slopes(s, yours, lessons);
    int six = printed_slopes(s->printed, "  and for 6 heads", yours6, 8);
    if (n == 0 || six != 6 || printed_slopes(s->expected_printed, "  and for 6 heads",
                                              lessons6, 8) != 6) {
        return false;
    }
    bool same = true;
    for (int h = 0; same && h < n; h++) {
        same = close_to(yours[h], lessons[h]);
    }
    for (int h = 0; same && h < 6; h++) {
        if (!close_to(yours6[h], lessons6[h])) {
            return true;
        }
    }
    return false;
}

// Lesson 18: part 4 with linear attention prints, token by token, "... the state holds 544
// floats; in layer 0, z[0][0] = 1.2626": yours's z[0][0] (up to `max`), their count.
static int printed_z(const char *text, double *z, int max) {
    const char *label = "in layer 0, z[0][0] = ";
    int n = 0;
    for (const char *at = text; n < max && (at = strstr(at, label)) != NULL; at++) {
        z[n++] = atof(at + strlen(label));
    }
    return n;
}

// ... all 0: z never written.
static bool z_stays_zero(const Seen *s) {
    double z[64];
    int n = printed_z(s->printed, z, 64);
    for (int t = 0; t < n; t++) {
        if (z[t] != 0) {
            return false;
        }
    }
    return n > 0;
}

// ... not growing, token after token (phi(k) = elu(k) + 1 > 0: a running sum grows).
static bool z_not_growing(const Seen *s) {
    double z[64];
    int n = printed_z(s->printed, z, 64);
    for (int t = 1; t < n; t++) {
        if (z[t] <= z[t - 1]) {
            return true;
        }
    }
    return false;
}

static bool linear_run(const Seen *s) { return strstr(s->flags, "--attention linear") != NULL; }

// Lesson 19: the run with a single latent channel (kv_lora_rank 1), where q_latent is one
// dot product and W_UK read either way round gives the same numbers.
static bool one_latent_channel(const Seen *s) {
    return strstr(s->flags, "--kv-lora-rank 1 ") != NULL;
}

// --- the exercises ---

static const Exercise EXERCISES[] = {
    {1, "softmax_exact_lastdim", {""}, {"weights", "out"}, "",
     {{weights_are_scores, "your weights are the scores as they were: softmax_exact_lastdim "
                           "must overwrite each row in place (the starting file's empty body "
                           "leaves them alone)", ON_VALUES},
      {softmax_over_columns, "your weights sum to 1 down each column: the softmax went over "
                             "dim 0; a row is data[r * n + 0 .. n - 1]", ON_VALUES},
      {rows_do_not_sum_to_one, "a row of your weights does not sum to 1: divide each exp by "
                               "the sum of its row's exps", ON_VALUES},
      {prints_more_nan, "nan where the lesson has numbers: exp(160) overflows float32; "
                        "subtract the row's largest number before exp()", ON_VALUES}}},
    {9, "causal_mask",
     {"", "--seed 7 --batch 2 --seq 6 --dim 32 --heads 4",
      "--seed 3 --batch 1 --seq 3 --dim 4 --heads 2 --kv-heads 1"},
     {"mask", "output"}, "",
     {{all_zero, "your mask is all zeros, so every query sees every key (the starting file's "
                 "mask): put a 1 where key s is in query t's future, s > cache_len + t", ON_VALUES},
      {inverted, "1 and 0 swapped: here 1 marks a key the query may NOT see (the lesson fills "
                 "the scores where the mask is 1 with -inf)", ON_VALUES},
      {transposed, "your 1s are below the diagonal: row t is the query, column s the key, and "
                   "the keys to hide are those after it, s > cache_len + t", ON_VALUES},
      {shifted_left, "your mask hides the diagonal too: a query may see its own position; hide "
                     "only s > cache_len + t", ON_VALUES},
      {shifted_right, "your mask lets each query see one key past its own position; hide every "
                      "s > cache_len + t", ON_VALUES},
      {only_printed, "the mask without a cache is right, one after cached keys is not: query t "
                     "is at absolute position cache_len + t, and there are cache_len + q_len "
                     "keys", ON_VALUES}}},
    {2, "attention_scores",
     {"", "--seed 1 --batch 2 --seq 5 --dim 8", "--seed 3 --batch 2 --seq 40 --dim 16"},
     {"attention_value", "attention_weight", "output"}, "",
     {{all_zero, "your attention_value is all zeros (the starting file's): fill "
                 "attention_value[b, t, s] with the dot product of Q[b, t, :] and K[b, s, :]",
       ON_VALUES},
      {transposed, "your scores are swapped: row t must hold query t against every key s, "
                   "Q[b, t, :] . K[b, s, :], not K[b, t, :] . Q[b, s, :]", ON_VALUES},
      {scaled_down, "your scores are a constant factor smaller: attention_value is the dot "
                    "product before the scaling; the lesson divides by sqrt(dim) after", ON_VALUES},
      {keys_of_batch_zero, "every batch row got batch row 0's keys: a query meets the keys "
                           "of its same batch row, K[b, s, :]", ON_VALUES}}},
    {4, "fill_padding",
     {"", "--seed 7 --batch 5 --seq 3 --dim 4", "--seed 123 --batch 2 --seq 6 --dim 8",
      "--seed 7 --batch 5 --seq 3 --dim 4 --train"},
     {"att_weight", "output", "ret"}, "",
     {{no_mask_applied, "your weights are the unmasked softmax: the scores come back as they "
                        "were (the starting file's clone); fill where attention_mask is 0",
       ON_VALUES},
      {weight_only_on_masked, "only the padding keys get weight: fill where attention_mask is "
                              "0 (padding), keep the scores where it is 1", ON_VALUES},
      {masked_as_queries, "the padding masks the keys, not the queries: read "
                          "attention_mask[b, t, s] for score [b, t, s], whose key is s", ON_VALUES},
      {weight_on_masked, "a padding key still gets weight: a score of 0 is not small enough "
                         "(exp(0 - max) is not 0); fill with -1e20", ON_VALUES},
      {prints_more_nan, "NaN where the lesson has numbers: in a sentence that is all padding "
                        "every score of a row is filled, and with -inf, -inf - (-inf) is NaN; "
                        "fill with -1e20 (part 4 shows why)", ON_VALUES}}},
    {6, "split_heads",
     {"", "--seed 3 --batch 2 --seq 5 --dim 48 --heads 4", "--seed 1 --train"},
     {"q_state", "k_state", "v_state", "attention_weight", "output_mid", "output"}, "",
     {{always, "the lesson stopped on a shape: split_heads must return (B, H, T, D); view x "
               "as (B, T, H, D), then transpose dims 1 and 2 (the starting file returns x as it "
               "is)", ON_FAILURE},
      {flat_equals_input, "your heads hold x's numbers in x's order: view(B, H, T, D) "
                          "directly cuts each head out of the wrong places; view as (B, T, H, "
                          "D), then transpose(1, 2)", ON_VALUES},
      {printed_a_copy, "your split copies: a view shares x's memory (same data_ptr, other "
                       "strides); view() and transpose() copy nothing, contiguous() and "
                       "clone() do", ON_VALUES}}},
    {8, "einsum_scores",
     {"--seed 1 --batch 2 --seq 5 --heads 6 --kv-heads 3 --head-dim 4",
      "--seed 3 --seq 2 --heads 2 --kv-heads 1 --head-dim 3", ""},
     {"out"}, "",
     {{gqa_scores_zero, "every query weighs every key alike: your scores are all 0 (the "
                        "starting file's zeros); fill scores[b, g, h, n, s] with query . key",
       ON_VALUES},
      {gqa_scaled_twice, "your scores are scaled twice: einsum_scores returns the plain dot "
                         "products, and the lesson divides by sqrt(head_dim) after", ON_VALUES},
      {gqa_key_head_0, "every query met key/value head 0's keys: query head (g, h) meets the "
                       "keys of its own key/value head, key[b, h, s, :]", ON_VALUES},
      {always, "an index out of range: key has KV heads, and query head (g, h) meets the keys "
               "of key/value head h, key[b, h, s, :] (g runs over the group, up to R)",
       ON_FAILURE}}},
    {10, "append_in_place",
     {"--seed 7 --batch 2 --prompt 3 --new 3 --dim 32 --heads 4",
      "--seed 3 --prompt 2 --new 1 --dim 4 --heads 2 --kv-heads 1",
      "--seed 5 --batch 2 --prompt 1 --dim 16 --heads 4 --kv-heads 4", ""},
     {"k_cache", "v_cache", "cached_out"}, "",
     {{all_zero, "your cache stays all zeros: nothing was written (the starting file's empty "
                 "body); copy rows[b, t, h, d] to cache[b, cache_len + t, h, d]", ON_VALUES},
      {last_position_unwritten, "the cache's last positions were never written: each call "
                                "writes after what the cache holds, at cache_len + t, not at "
                                "t", ON_VALUES},
      {always, "an index out of range: row t goes to position cache_len + t, the first free "
               "one, and the cache has room for exactly prompt + new positions", ON_FAILURE}}},
    {13, "online_softmax_scalar",
     {"--kernels scalar --seed 2 --seq 50 --heads 6 --kv-heads 2 --head-dim 24 --block-q 16 "
      "--block-k 7",
      "--kernels scalar --seed 4 --seq 7 --heads 3 --kv-heads 3 --head-dim 4 --causal "
      "--block-q 1 --block-k 1",
      "--kernels scalar --seed 6 --seq 100 --heads 8 --kv-heads 4 --head-dim 64 --causal",
      "--kernels scalar"},
     {"out"}, "",
     {{nan_where_number, "NaN in out: subtract the new running max, m_new = max(m, "
                         "block_max), not the old m, which is -inf before the first block: "
                         "s_t = exp2(s_t - m_new), alpha = exp2(m - m_new)", ON_VALUES},
      {softmax_in_base_e, "out is a softmax of scores log2(e) times too large: the scores are "
                          "in base 2 (the queries were scaled by log2(e)), so take exp2, not "
                          "exp", ON_VALUES},
      {always, "each block must rescale what came before: alpha[j] = exp2(m[j] - m_new) for "
               "every column j, and m[j] = m_new after, so the next block's alpha is right",
       ON_VALUES}}},
    {16, "adamw_step",
     {"--steps 1 --warmup 1 --lr 0.01 --weight-decay 0.5 --clip 0 --dim 16 --heads 2 "
      "--kv-heads 1 --batch 4 --layers 1",
      "--steps 6 --warmup 2 --lr 0.01 --dim 16 --heads 2 --kv-heads 1 --batch 4 --layers 1",
      "--dim 16 --heads 2 --kv-heads 1 --seq 8 --batch 4 --steps 7 --warmup 6",
      "--steps 30 --seed 3"},
     {"losses", "accuracies", "grad_norms"}, "",
     {{adamw_unmoved, "the weights never moved: adamw_step must write each parameter's new "
                      "value into p->value (the starting file's body does nothing)", ON_VALUES},
      {adamw_uphill, "the weights moved uphill: subtract the update, w -= lr / (1 - beta1^t) * "
                     "m / (sqrt(v) / sqrt(1 - beta2^t) + eps)", ON_VALUES},
      {adamw_no_decay, "the weight decay is missing: AdamW first shrinks every weight, w *= 1 - "
                       "lr * weight_decay (decoupled: not added to the gradient)", ON_VALUES},
      {always, "right after one step, wrong after more: check that opt->step counts the steps "
               "(t = 1 on the first) and both bias corrections, 1 - beta1^t for m and "
               "sqrt(1 - beta2^t) for sqrt(v), and that m and v keep their running values in "
               "p->exp_avg and p->exp_avg_sq", ON_VALUES}}},
    {14, "softmax_backward_row",
     {"", "--seed 1 --causal --seq 6 --block-q 4 --block-k 3",
      "--seed 2 --train --batch 2 --seq 5 --dim 4",
      "--seed 3 --causal --seq 9 --heads 4 --kv-heads 1 --head-dim 8 --block-q 4 --block-k 5"},
     {"scores.grad", "Q.grad", "K.grad", "X.grad"}, "max |",
     {{all_zero, "your scores.grad is all zeros: write ds[s] = (dp[s] - r) * p[s] (the "
                 "starting file's empty body writes nothing)", ON_VALUES},
      {softmax_back_no_r, "the row term r is missing: moving one score moves every weight of "
                          "the row, so ds[s] = (dp[s] - r) * p[s] with r = sum of p * dp",
       ON_VALUES},
      {softmax_back_diagonal, "only the Jacobian's diagonal, P_s (1 - P_s): the off-diagonal "
                              "-P_s P_u terms give the - r in ds = (dp - r) * p", ON_VALUES},
      {softmax_back_unweighted, "r must be weighted by p: r = sum over s of p[s] * dp[s], not "
                                "the sum of dp", ON_VALUES},
      {softmax_back_negated, "the sign is flipped: ds[s] = (dp[s] - r) * p[s]", ON_VALUES}}},
    {15, "rotate",
     {"", "--seed 1 --rope-layout interleaved --kv-heads 1 --batch 2 --prompt 2 --new 4 --dim 32",
      "--seed 2 --kv-heads 4 --rope-base 500000 --dim 32 --prompt 4 --new 2",
      "--seed 4 --prompt 2 --new 8 --dim 48 --heads 6 --kv-heads 3 --rope-layout interleaved "
      "--hidden 96"},
     {"query_states", "key_states", "attn_weights", "out", "cached_out"}, "",
     {{rope_unturned, "the queries come back unturned (the starting file's clone): turn each "
                      "pair (a, e) by its angle, (a cos - e sin, e cos + a sin)", ON_VALUES},
      {rope_other_layout, "these are the pairs of the other layout: rotate_half pairs i with i "
                          "+ D/2, interleaved pairs 2i with 2i + 1", ON_VALUES},
      {rope_layout_ignored, "your rotate gives the same in both layouts: its pairs must follow "
                            "the layout, (i, i + D/2) for rotate_half and (2i, 2i + 1) for "
                            "interleaved", ON_VALUES},
      {rope_backwards, "each pair turned the wrong way, by minus its angle: a' = a cos - e sin, "
                       "e' = e cos + a sin", ON_VALUES}}},
    {3, "split",
     {"", "--seed 7", "--seed 1 --batch 2 --seq 5 --dim 8"},
     {"Q", "K", "V", "att_weight", "output", "ret"}, "",
     {{always, "the lesson stopped on a shape: each part must be (B, T, dim): narrow the last "
               "dim, part i being columns i * split_size to (i + 1) * split_size - 1 (the "
               "starting file hands back the whole of t)", ON_FAILURE},
      {equals_lessons_q, "your K (or V) is Q: every part starts at column 0; part i starts at "
                         "column i * split_size", ON_VALUES},
      {printed_not_shared, "your parts are copies: a view reads QKV's own storage (part 3 "
                           "prints whether they share it); narrow() copies nothing, "
                           "contiguous() does", ON_VALUES}}},
    {5, "linear",
     {"", "--train", "--seed 7 --batch 5 --seq 3 --dim 4", "--seed 123 --batch 2 --seq 6 --dim 8"},
     {"Q", "K", "V", "att_weight", "output", "ret"}, "",
     {{all_zero, "your Q is all zeros (the starting file's): y[b, t, o] = bias[o] + sum over i "
                 "of x[b, t, i] * weight[o, i]", ON_VALUES},
      {linear_no_bias, "the bias is missing: y = x W^T + b, bias[o] added to output o (when "
                       "self->bias is not NULL)", ON_VALUES},
      {always, "an index out of range: the weight is (out, in), so output o reads row o, "
               "weight[o, i], and x's last dim is in (the lesson's part 2 calls it with out = "
               "3 * in)", ON_FAILURE}}},
    {7, "mix_values",
     {"", "--seed 3 --batch 2 --seq-q 6 --seq-k 2 --dim 48 --heads 4", "--seed 1 --train",
      "--seed 5 --batch 1 --seq-q 2 --seq-k 9 --dim 12 --heads 3"},
     {"output_mid", "output"}, "",
     {{all_zero, "your output_mid is all zeros (the starting file's): out[b, h, t, :] is the "
                 "sum over the S keys of weights[b, h, t, s] * v_state[b, h, s, :]", ON_VALUES},
      {mixed_first_keys_only, "the sum stops after T keys: it runs over the S keys of the other "
                              "sequence, s < size(weights, 3), however many queries there are",
       ON_VALUES},
      {always, "an index out of range: weights is (B, H, T, S) and v_state (B, H, S, D), so "
               "read weights[b, h, t, s], query t's weight for key s", ON_FAILURE}}},
    {11, "layer_norm",
     {"", "--seed 4 --batch 3 --seq 7 --dim 24 --heads 4 --mlp-ratio 2 --qkv-bias",
      "--seed 5 --batch 4 --seq 6 --dim 32 --heads 8 --mlp-ratio 3 --train --drop 0.1 "
      "--attn-drop 0.2 --drop-path 0.25",
      "--seed 6 --mlp-ratio 2.5"},
     {"attn_probs", "out"}, "",
     {{layer_norm_unbiased, "the variance is divided by C, not C - 1: LayerNorm takes the biased "
                            "variance of the row", ON_VALUES},
      {layer_norm_no_sqrt, "divide by the standard deviation, sqrt(var + eps), not by the "
                           "variance itself", ON_VALUES},
      {layer_norm_no_mean, "subtract the row's mean first: y = (x - mean) / sqrt(var + eps) * "
                           "weight + bias", ON_VALUES},
      {always, "each row of C numbers must come out with mean 0 and variance 1 before weight "
               "and bias: (x - mean) / sqrt(var + eps), then * weight[c] + bias[c] (the "
               "starting file returns x as it is)", ON_VALUES}}},
    {12, "relative_distance",
     {"--seed 1 --all --position relative_key --past 3 --seq 2",
      "--seed 2 --all --position relative_key_query --past 4 --seq 1 --pad 2",
      "--seed 3 --all --encoder-seq 6 --encoder-width 12 --position relative_key --head-mask 1",
      "--seed 6 --all --train --past 2 --seq 3 --position relative_key --encoder-seq 3 "
      "--chunk 1 --pad 2"},
     {"attention_probs", "attention_output", "layer_output"}, "",
     {{distance_zero, "every distance is 0 (the starting file's zeros): distance[t, s] = (P + "
                      "t) - s, query t at position P + t, key s at position s", ON_VALUES},
      {distance_no_offset, "right without a cache only: query t sits at position P + t, after "
                           "the P = L - T cached tokens, so distance[t, s] = (P + t) - s",
       ON_VALUES},
      {distance_negated, "the sign is flipped: distance is the query's position minus the "
                         "key's, (P + t) - s", ON_VALUES},
      {distance_one_off, "one position off: query t is at P + t (t from 0), key s at s",
       ON_VALUES}}},
    {17, "top_p",
     {"--steps 5 --seq 32 --batch 4 --new 40 --eval-every 5 --top-p 0.5",
      "--steps 5 --seq 32 --batch 4 --new 40 --eval-every 5 --top-p 0.9 --top-k 50 "
      "--temperature 1.5",
      "--steps 5 --seq 32 --batch 4 --new 40 --eval-every 5 --top-p 0.05"},
     {NULL}, "",
     {{top_p_keeps_all, "top-p keeps every token (the starting file copies them all): going "
                        "down from the most likely, a token stays while the mass of those "
                        "above it is below p", ON_VALUES},
      {top_p_one_fewer, "one token too few: the token that carries the mass past p stays; "
                        "compare p with the mass ABOVE each token, not with the mass "
                        "including it", ON_VALUES},
      {always, "take the tokens most likely first (equal ones by id), keep each while the "
               "mass above it is below p, and set the others to 0", ON_VALUES}}},
    {18, "alibi_slopes and linear_state_update",
     {"--experiment none --attention linear --steps 5",
      "--steps 2",
      "--experiment none --positions alibi --steps 5",
      "--experiment none --positions alibi --heads 6 --kv-heads 3 --dim 48 --steps 3 --seed 1"},
     {"losses", "grad_norms", "attn_weights", "logits", "variant_losses", "variant_grad_norms",
      "length_losses", "window_losses", "linear_losses"}, "",
     {{z_stays_zero, "linear attention's z stays 0 (printed token by token in part 4): "
                     "z[d] += k_phi[d], the sum of every key so far, which y divides by",
       ON_VALUES},
      {z_not_growing, "linear attention's state forgets: each token ADDS to S and z, "
                      "S[d][e] += k_phi[d] * v[e], z[d] += k_phi[d], on top of every earlier "
                      "one (part 4 prints z[0][0], which must grow)", ON_VALUES},
      {linear_run, "linear attention differs: S[d][e] += k_phi[d] * v[e] (row d from the "
                   "key, column e from the value, S + d * D is row d), z[d] += k_phi[d]",
       ON_VALUES},
      {slopes_zero, "ALiBi's slopes are all 0 (the starting file's; part 1 prints them): "
                    "for H a power of two, slope h is 2^(-8h/H), h = 1..H", ON_VALUES},
      {slopes_from_one, "your first slope is 1: h counts from 1, so the first slope is "
                        "2^(-8/H) (1/4 for 4 heads) and the last 2^-8", ON_VALUES},
      {slopes_not_geometric, "your slopes are not a geometric sequence: each is the one "
                             "before times 2^(-8/H), the first 2^(-8/H) too", ON_VALUES},
      {slopes_wrong_for_six, "right for a power of two, not for 6 heads: take the 4 slopes "
                             "of 4 heads, then every other of 8's (1/2 and 1/8), not "
                             "2^(-8h/6)", ON_VALUES},
      {always, "ALiBi's slopes (part 1 prints them): for H a power of two 2^(-8h/H), h = "
               "1..H; otherwise P's (the largest power of two below H), then every other "
               "of 2P's", ON_VALUES}}},
    {19, "absorb_query",
     {"--kv-lora-rank 1 --new 4", "",
      "--seed 5 --dim 96 --heads 6 --kv-heads 3 --prompt 11 --new 6 --block 8 --kv-lora-rank 24 "
      "--outlier 30",
      "--seed 4 --new 0 --prompt 7 --qk-rope-head-dim 2 --qk-nope-head-dim 6 --v-head-dim 12 "
      "--rope-base 500000"},
     {"out_absorbed", "decoded_absorbed"}, "",
     {{one_latent_channel, "wrong even with one latent channel (kv_lora_rank 1, where "
                           "q_latent[0] is the dot product of q_nope and w_uk): q_latent[c] is "
                           "a sum over all qk_nope_head_dim terms q_nope[i] * w_uk[i * "
                           "kv_lora_rank + c]", ON_VALUES},
      {always, "right with one latent channel, wrong with more: W_UK used untransposed? w_uk "
               "is W_UK (qk_nope_head_dim, kv_lora_rank), row-major: q_latent[c] = sum over i "
               "of q_nope[i] * w_uk[i * kv_lora_rank + c], down column c; w_uk[c * "
               "qk_nope_head_dim + i] reads it as if stored by columns (at the defaults, part "
               "2's differences then go to 0.31 and 0.36)", ON_VALUES},
      {always, "an index out of range: w_uk holds qk_nope_head_dim rows of kv_lora_rank, row "
               "i at w_uk + i * kv_lora_rank; q_latent has kv_lora_rank numbers, q_nope "
               "qk_nope_head_dim", ON_FAILURE}}},
};
