// test_lesson16.c - lesson 16 (train): a tiny Llama trained step for step with PyTorch.
//
// Against PyTorch, bit for bit (tests/reference/gen_lesson16.py ran the page's script): the
// initial parameters, step 1's batch, logits and every gradient, the losses, accuracies and
// gradient norms of every step, the example's maps, the parameters after the last step
// (--save) and every printed line, for six runs (both tasks, 1 to 3 layers, groups of 1 to 5
// query heads, clipping off, at 1 and at 0.5, no warmup, a warmup one step short of the run
// and one longer than it, and the lesson's default run, whose losses, maps and answers the
// page quotes; its maps' image is the committed one).
// Without PyTorch: every piece of the backward against central differences in double;
// AdamW's first two steps, clipping and the schedule worked by hand; the vector kernels
// against their scalar twins; cached decoding against the full forward; a small model
// trained, saved and loaded again, answering 99% right both times; checkpoints
// that are missing, cut short or of another shape refused before anything runs; bad flags;
// the format of --bench's lines, and its timing of a shared product whole. --threads: runs
// on 1, 2 and 3 threads print and dump the same bits with every kernel set; the rows each
// thread takes (share_rows, and threads_gemm seen from inside its kernel) cover every row of
// a product once, in whole blocks.
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define main lesson_main
#include "../lessons/16-train/train.c"
#undef main
#include "../lessons/16-train/adamw.c"
#include "../lessons/16-train/layers.c"
#include "../lessons/16-train/model.c"
#include "../lessons/16-train/bench.c"
#include "../lessons/16-train/checkpoint.c"
#include "../lessons/16-train/show.c"
#include "../lessons/16-train/svg.c"
#include "../lessons/16-train/threads.c"
#include "../lessons/16-train/train_flags.c"
#include "lesson/files.h"
#include "line_width.h"

#define LESSON "16-train"
#define DATA DATA_DIR "/lesson16"

// --- against PyTorch's recordings --------------------------------------------------------

// Every .npy of `reference` against the one of the same name in `got`, bit for bit.
static int compare_npy_dir(const char *got, const char *reference) {
    DIR *d = opendir(reference);
    ck_assert_msg(d != NULL, "cannot read %s", reference);
    int compared = 0;
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".npy") != 0) {
            continue;
        }
        assert_bitwise_equal(load_npy(path_join("%s/%s", got, e->d_name)),
                             load_npy(path_join("%s/%s", reference, e->d_name)),
                             path_join("%s/%s", reference, e->d_name));
        compared += 1;
    }
    closedir(d);
    return compared;
}

// The lesson with the case's flags, in a fresh directory: --dump dump --save trained (and,
// for the default run, --svg maps.svg). Its printed text, every dump and every saved
// parameter must be PyTorch's exactly.
START_TEST(test_matches_pytorch) {
    const RecordedCase *c = recorded_case(DATA, _i);
    bool defaults = strcmp(c->dir, "defaults") == 0;
    const char *tmp = make_temp_dir();
    const char *argv[MAX_CASE_WORDS + 8];
    int n = 0;
    for (; c->args[n] != NULL; n++) {
        argv[n] = c->args[n];
    }
    const char *extra[] = {"--dump", "dump", "--save", "trained", "--svg", "maps.svg", NULL};
    for (int i = 0; extra[i] != NULL && (i < 4 || defaults); i++) {
        argv[n++] = extra[i];
    }
    argv[n] = NULL;
    char *cwd = getcwd(NULL, 0);   // the lesson runs in tmp: its path from the root
    const char *binary = path_join("%s/%s", cwd, lesson_binary(LESSON));
    free(cwd);
    RunResult r = run_program_with(tmp, 120, binary, argv);
    ck_assert_msg(r.status == 0 && r.err[0] == '\0', "%s: exit %d: %s", c->dir, r.status, r.err);
    const char *expected = read_text(path_join("%s/stdout.txt", c->reference));
    const char *missing = NULL;
    ck_assert_msg(strcmp(r.out, expected) == 0, "%s: the lesson does not print PyTorch's text: "
                  "%s", c->dir, lines_in_order(r.out, expected, &missing) ? "more lines"
                  : path_join("'%.200s' is missing", missing));
    int compared = compare_npy_dir(path_join("%s/dump", tmp), c->reference);
    int parameters = 3 + 9 * (int)case_int(c, "layers");   // each with its .grad, and 8 more
    ck_assert_int_eq(compared, defaults ? 5 : 2 * parameters + 8);
    if (!defaults) {
        int saved = compare_npy_dir(path_join("%s/trained", tmp),
                                    path_join("%s/trained", c->reference));
        ck_assert_int_eq(saved, parameters);
    } else {
        ck_assert_msg(strcmp(read_text(path_join("%s/maps.svg", tmp)),
                             read_text("docs/diagrams/16-train-recall-maps.svg")) == 0,
                      "docs/diagrams/16-train-recall-maps.svg is not what the lesson draws now: "
                      "make docs, and commit");
    }
    remove_tree(tmp);
}
END_TEST

// --- every backward piece against central differences, in double ---------------------------

static double uniform(void) {   // a number in [-1, 1) from PyTorch's generator
    return 2.0 * (random32() & 0xFFFFFF) / 16777216.0 - 1.0;
}

static void fill(float *x, int n) {
    for (int i = 0; i < n; i++) {
        x[i] = (float)uniform();
    }
}

// |got - numeric| within 1e-5 + 1e-4 |numeric|: a float backward against a double derivative
static void assert_derivative(float got, double numeric, const char *what, int i) {
    ck_assert_msg(fabs((double)got - numeric) <= 1e-5 + 1e-4 * fabs(numeric),
                  "%s[%d]: backward %.8g, central difference %.8g", what, i, (double)got, numeric);
}

// (f(x + h) - f(x - h)) / 2h with h = 1e-5 on x[i] (a double array).
static double central(double (*f)(const double *, const void *), double *x, int i,
                      const void *context) {
    double h = 1e-5, saved = x[i];
    x[i] = saved + h;
    double up = f(x, context);
    x[i] = saved - h;
    double down = f(x, context);
    x[i] = saved;
    return (up - down) / (2 * h);
}

// RMSNorm: L(x, w) = sum of d_out * w * x / sqrt(mean(x^2) + eps), x and w in one array.
typedef struct {
    int rows, C;
    const float *d_out;
} NormContext;

static double rms_norm_loss(const double *xw, const void *context) {
    const NormContext *n = context;
    const double *w = xw + n->rows * n->C;
    double loss = 0.0;
    for (int r = 0; r < n->rows; r++) {
        double sq = 0.0;
        for (int c = 0; c < n->C; c++) {
            sq += xw[r * n->C + c] * xw[r * n->C + c];
        }
        double rstd = 1.0 / sqrt(sq / n->C + 1e-6);
        for (int c = 0; c < n->C; c++) {
            loss += n->d_out[r * n->C + c] * w[c] * xw[r * n->C + c] * rstd;
        }
    }
    return loss;
}

START_TEST(test_rms_norm_backward) {
    enum { ROWS = 3, C = 8 };
    manual_seed(1);
    // row: the norm's scratch, C floats; the backward's, 2C
    float x[ROWS * C], w[C], d_out[ROWS * C], out[ROWS * C], rstd[ROWS], row[2 * C];
    fill(x, ROWS * C);
    fill(w, C);
    fill(d_out, ROWS * C);
    rms_norm_forward(out, rstd, x, w, ROWS, C, 1e-6f, row);
    float direct[ROWS * C], through[ROWS * C], d_w[C], products[ROWS * C];
    rms_norm_backward(direct, through, d_w, products, d_out, x, rstd, w, ROWS, C, row);
    double xw[ROWS * C + C];
    for (int i = 0; i < ROWS * C + C; i++) {
        xw[i] = i < ROWS * C ? x[i] : w[i - ROWS * C];
    }
    NormContext context = {ROWS, C, d_out};
    for (int i = 0; i < ROWS * C; i++) {
        assert_derivative(direct[i] + through[i], central(rms_norm_loss, xw, i, &context), "dx",
                          i);
    }
    for (int c = 0; c < C; c++) {
        assert_derivative(d_w[c], central(rms_norm_loss, xw, ROWS * C + c, &context), "dw", c);
    }
}
END_TEST

// RoPE on (rows, heads, D) at positions r % N: L = sum of g * rope(x).
typedef struct {
    int rows, N, heads, D;
    const float *g, *cos, *sin;
} RopeContext;

static double rope_loss(const double *x, const void *context) {
    const RopeContext *p = context;
    int half = p->D / 2;
    double loss = 0.0;
    for (int r = 0; r < p->rows; r++) {
        for (int h = 0; h < p->heads; h++) {
            const double *x_h = x + ((long)r * p->heads + h) * p->D;
            const float *g_h = p->g + ((long)r * p->heads + h) * p->D;
            for (int i = 0; i < half; i++) {
                double c = p->cos[(r % p->N) * half + i], s = p->sin[(r % p->N) * half + i];
                loss += g_h[i] * (x_h[i] * c - x_h[i + half] * s);
                loss += g_h[i + half] * (x_h[i + half] * c + x_h[i] * s);
            }
        }
    }
    return loss;
}

START_TEST(test_rope_backward) {
    enum { ROWS = 6, N = 3, HEADS = 2, D = 8, SIZE = ROWS * HEADS * D };
    manual_seed(2);
    float cos_t[N * D / 2], sin_t[N * D / 2], x[SIZE], g[SIZE];
    rope_table(cos_t, sin_t, N, D, 10000);
    fill(x, SIZE);
    fill(g, SIZE);
    float d[SIZE];
    memcpy(d, g, sizeof d);
    rope_backward(d, cos_t, sin_t, ROWS, N, HEADS, D);
    double xd[SIZE];
    for (int i = 0; i < SIZE; i++) {
        xd[i] = x[i];
    }
    RopeContext context = {ROWS, N, HEADS, D, g, cos_t, sin_t};
    for (int i = 0; i < SIZE; i++) {
        assert_derivative(d[i], central(rope_loss, xd, i, &context), "rope dx", i);
    }
    // and the forward turns each pair by its angle: position 0 leaves it alone
    float turned[SIZE];
    memcpy(turned, x, sizeof turned);
    rope_forward(turned, cos_t, sin_t, 0, ROWS, N, HEADS, D);
    ck_assert_float_eq(turned[0], x[0]);
    ck_assert_float_eq(turned[D / 2], x[D / 2]);
}
END_TEST

// RoPE's table takes PyTorch's theta_i to the bit, whatever the head_dim: lesson 15's recorded
// inv_freq (PyTorch 1.13's) at head_dim 48 (base 10000) and 96 (base 500000), where the C
// library's powf alone gets a last bit of some theta_i wrong. A last bit of theta_i shows in
// the angle of a far position, t * theta_i: the last one of a long table is checked.
START_TEST(test_rope_table_thetas_are_pytorchs) {
    enum { N = 8192 };
    const struct { const char *run; int D, base; } cases[] = {
        {"seed7_head_dim48", 48, 10000}, {"seed8_head_dim96", 96, 500000}};
    for (int c = 0; c < 2; c++) {
        const Tensor *inv_freq =
            load_npy(path_join("tests/data/lesson15/%s/inv_freq.npy", cases[c].run));
        int D = cases[c].D, t = N - 1;
        float *cos_t = arena_alloc((size_t)N * D / 2, sizeof(float));
        float *sin_t = arena_alloc((size_t)N * D / 2, sizeof(float));
        rope_table(cos_t, sin_t, N, D, cases[c].base);
        for (int i = 0; i < D / 2; i++) {
            float want = (float)sin((double)((float)t * inv_freq->data[i]));
            ck_assert_msg(sin_t[t * (D / 2) + i] == want, "head_dim %d: sin(%d theta_%d) is "
                          "%.9g, PyTorch's theta gives %.9g", D, t, i, sin_t[t * (D / 2) + i],
                          want);
        }
    }
}
END_TEST

// silu: L = sum of dy * z / (1 + exp(-z)), for every kernel set this CPU has.
static double silu_loss(const double *z, const void *context) {
    const float *dy = context;
    double loss = 0.0;
    for (int i = 0; i < 37; i++) {
        loss += dy[i] * z[i] / (1.0 + exp(-z[i]));
    }
    return loss;
}

START_TEST(test_silu_backward) {
    enum { SIZE = 37 };   // two whole blocks of 16 (Sleef's exp) and 5 left (the C library's)
    manual_seed(3);
    float z[SIZE], dy[SIZE], dz[SIZE];
    fill(z, SIZE);
    fill(dy, SIZE);
    for (int i = 0; i < SIZE; i++) {
        z[i] *= 6.0f;
    }
    double zd[SIZE];
    for (int i = 0; i < SIZE; i++) {
        zd[i] = z[i];
    }
    const char *names[3] = {"scalar", "avx2", "avx512"};
    for (int k = 0; k < 3; k++) {
        const Kernels *set = kernels_named(names[k]);
        if (set == NULL) {
            note_skipped("no %s kernels on this CPU: not checked", names[k]);
            continue;
        }
        set->silu_backward(dz, dy, z, SIZE);
        for (int i = 0; i < SIZE; i++) {
            assert_derivative(dz[i], central(silu_loss, zd, i, dy), names[k], i);
        }
    }
}
END_TEST

// SwiGLU's middle: L = sum of d_prod * silu(gate) * up, gate and up in one array.
static double swiglu_loss(const double *gate_up, const void *context) {
    const float *d_prod = context;
    double loss = 0.0;
    for (int i = 0; i < 21; i++) {
        double gate = gate_up[i], up = gate_up[21 + i];
        loss += d_prod[i] * gate / (1.0 + exp(-gate)) * up;
    }
    return loss;
}

START_TEST(test_swiglu_backward) {
    enum { SIZE = 21 };   // a whole block of 16 (Sleef's exp) and 5 left (the C library's)
    manual_seed(11);
    float gate[SIZE], up[SIZE], d_prod[SIZE], act[SIZE], prod[SIZE], d_gate[SIZE], d_up[SIZE];
    fill(gate, SIZE);
    fill(up, SIZE);
    fill(d_prod, SIZE);
    for (int i = 0; i < SIZE; i++) {
        gate[i] *= 5.0f;
    }
    swiglu_forward(act, prod, gate, up, SIZE);
    swiglu_backward(d_gate, d_up, d_prod, gate, up, act, SIZE);
    double gate_up[2 * SIZE];
    for (int i = 0; i < SIZE; i++) {
        gate_up[i] = gate[i];
        gate_up[SIZE + i] = up[i];
        ck_assert_float_eq(prod[i], act[i] * up[i]);
    }
    for (int i = 0; i < 2 * SIZE; i++) {
        float got = i < SIZE ? d_gate[i] : d_up[i - SIZE];
        assert_derivative(got, central(swiglu_loss, gate_up, i, d_prod), "d_gate d_up", i);
    }
}
END_TEST

// Attention (B 1, N 5, H 2 query heads on KV 1 key/value head, D 4), causal: L = sum d_y * y,
// q, k, v in one array.
enum { AN = 5, AH = 2, AKV = 1, AD = 4 };
typedef struct {
    const float *d_y;
} AttentionContext;

static double attention_loss(const double *qkv, const void *context) {
    const AttentionContext *a = context;
    const double *q = qkv, *k = qkv + AN * AH * AD, *v = k + AN * AKV * AD;
    double loss = 0.0;
    for (int h = 0; h < AH; h++) {
        int g = h / (AH / AKV);
        for (int t = 0; t < AN; t++) {
            double scores[AN], max = -INFINITY, sum = 0.0;
            for (int s = 0; s <= t; s++) {
                scores[s] = 0.0;
                for (int d = 0; d < AD; d++) {
                    scores[s] += q[(t * AH + h) * AD + d] * k[(s * AKV + g) * AD + d];
                }
                scores[s] /= sqrt((double)AD);
                max = fmax(max, scores[s]);
            }
            for (int s = 0; s <= t; s++) {
                scores[s] = exp(scores[s] - max);
                sum += scores[s];
            }
            for (int d = 0; d < AD; d++) {
                double y = 0.0;
                for (int s = 0; s <= t; s++) {
                    y += scores[s] / sum * v[(s * AKV + g) * AD + d];
                }
                loss += a->d_y[(t * AH + h) * AD + d] * y;
            }
        }
    }
    return loss;
}

START_TEST(test_attention_backward) {
    Config c = {RECALL, 16, AH * AD, 8, 1, AH, AKV, AD, AN, 10000, 1e-6f};
    manual_seed(4);
    LayerActivations a = {0};
    a.q = floats(AN * AH * AD);
    a.k = floats(AN * AKV * AD);
    a.v = floats(AN * AKV * AD);
    a.att = floats(AH * AN * AN);
    a.y = floats(AN * AH * AD);
    fill(a.q, AN * AH * AD);
    fill(a.k, AN * AKV * AD);
    fill(a.v, AN * AKV * AD);
    float scratch[AN * AD];
    attention_forward(&a, &c, 1, 0, AN, scratch);
    BackwardScratch w = backward_scratch_init(&c, 1);
    fill(w.d_y, AN * AH * AD);
    attention_backward(&w, &a, &c, 1);
    enum { NQ = AN * AH * AD, NK = AN * AKV * AD };
    double qkv[NQ + 2 * NK];
    for (int i = 0; i < NQ + 2 * NK; i++) {
        qkv[i] = i < NQ ? a.q[i] : i < NQ + NK ? a.k[i - NQ] : a.v[i - NQ - NK];
    }
    AttentionContext context = {w.d_y};
    for (int i = 0; i < NQ + 2 * NK; i++) {
        float got = i < NQ ? w.d_q[i] : i < NQ + NK ? w.d_k[i - NQ] : w.d_v[i - NQ - NK];
        assert_derivative(got, central(attention_loss, qkv, i, &context), "dq dk dv", i);
    }
    // the first key is seen by every query; the last one only by itself
    ck_assert_float_eq(a.att[0], 1.0f);
}
END_TEST

// Cross-entropy at the asked rows: L = mean of -log softmax(logits)[label].
typedef struct {
    const Tensor *labels;
    int NV;
} LossContext;

static double cross_entropy_loss(const double *logits, const void *context) {
    const LossContext *l = context;
    double loss = 0.0;
    int asked = 0;
    for (long r = 0; r < numel(l->labels); r++) {
        int label = (int)l->labels->data[r];
        if (label == IGNORE_INDEX) {
            continue;
        }
        double max = -INFINITY, sum = 0.0;
        for (int i = 0; i < l->NV; i++) {
            max = fmax(max, logits[r * l->NV + i]);
        }
        for (int i = 0; i < l->NV; i++) {
            sum += exp(logits[r * l->NV + i] - max);
        }
        loss -= logits[r * l->NV + label] - max - log(sum);
        asked += 1;
    }
    return loss / asked;
}

START_TEST(test_cross_entropy_backward) {
    enum { ROWS = 6, NV = 10 };
    manual_seed(5);
    float logits[ROWS * NV], log_probs[ROWS * NV], d_logits[ROWS * NV];
    fill(logits, ROWS * NV);
    Tensor *labels = tensor_from(shape2(2, 3), (const float[]){3, -100, 7, -100, 0, 9});
    int asked;
    float loss = cross_entropy_forward(log_probs, &asked, logits, labels, NV);
    ck_assert_int_eq(asked, 4);
    cross_entropy_backward(d_logits, log_probs, labels, ROWS, NV, asked);
    double x[ROWS * NV];
    for (int i = 0; i < ROWS * NV; i++) {
        x[i] = logits[i];
    }
    LossContext context = {labels, NV};
    ck_assert_msg(fabs(loss - cross_entropy_loss(x, &context)) < 1e-6, "loss %g", (double)loss);
    for (int i = 0; i < ROWS * NV; i++) {
        assert_derivative(d_logits[i], central(cross_entropy_loss, x, i, &context), "d_logits",
                          i);
    }
    for (int i = NV; i < 2 * NV; i++) {   // a row that asks nothing gets exactly 0
        ck_assert_float_eq(d_logits[i], 0.0f);
    }
}
END_TEST

// nn.Linear: L = sum of dy * (x @ W^T), x and W in one array.
typedef struct {
    int rows, in, out;
    const float *dy;
} LinearContext;

static double linear_loss(const double *xw, const void *context) {
    const LinearContext *l = context;
    const double *W = xw + l->rows * l->in;
    double loss = 0.0;
    for (int r = 0; r < l->rows; r++) {
        for (int o = 0; o < l->out; o++) {
            double y = 0.0;
            for (int i = 0; i < l->in; i++) {
                y += xw[r * l->in + i] * W[o * l->in + i];
            }
            loss += l->dy[r * l->out + o] * y;
        }
    }
    return loss;
}

START_TEST(test_linear_and_embedding_backward) {
    enum { ROWS = 3, IN = 5, OUT = 4 };
    manual_seed(6);
    Linear layer = linear_init("layer", IN, OUT, false);
    float x[ROWS * IN], dy[ROWS * OUT], dx[ROWS * IN], dW[OUT * IN];
    fill(x, ROWS * IN);
    fill(dy, ROWS * OUT);
    linear_backward(dx, dW, &layer, dy, x, ROWS);
    double xw[ROWS * IN + OUT * IN];
    for (int i = 0; i < ROWS * IN + OUT * IN; i++) {
        xw[i] = i < ROWS * IN ? x[i] : layer.weight->data[i - ROWS * IN];
    }
    LinearContext context = {ROWS, IN, OUT, dy};
    for (int i = 0; i < ROWS * IN + OUT * IN; i++) {
        float got = i < ROWS * IN ? dx[i] : dW[i - ROWS * IN];
        assert_derivative(got, central(linear_loss, xw, i, &context), "dx dW", i);
    }
    // The embedding's backward by hand: tokens 1, 3, 1 take rows 1, 3, 1 of the table, so row
    // 1 of its gradient is the sum of the first and last rows' gradients, row 3 the second's.
    Config c = {REVERSE, 4, 8, 24, 1, 2, 1, 4, 3, 10000, 1e-6f};
    manual_seed(0);
    Model model = model_init(&c);
    Activations acts = activations_init(&c, 1);
    const float ids[3] = {1, 3, 1};
    model_forward(&acts, &model, ids, 1, 0, 3);
    Grads grads = grads_init(&model);
    BackwardScratch w = backward_scratch_init(&c, 1);
    Tensor *labels = tensor_from(shape2(1, 3), (const float[]){2, 0, -100});
    Tensor *input_ids = tensor_from(shape2(1, 3), ids);
    int asked;
    cross_entropy_forward(acts.log_probs, &asked, acts.logits, labels, c.vocab_size);
    model_backward(&grads, &w, &model, &acts, input_ids, labels, asked);
    for (int i = 0; i < 8; i++) {
        ck_assert_float_eq(grads.embed_tokens[1 * 8 + i], w.d_x[0 * 8 + i] + w.d_x[2 * 8 + i]);
        ck_assert_float_eq(grads.embed_tokens[3 * 8 + i], w.d_x[1 * 8 + i]);
        ck_assert_float_eq(grads.embed_tokens[0 * 8 + i], 0.0f);
    }
}
END_TEST

// --- AdamW, clipping and the schedule, by hand -----------------------------------------------

START_TEST(test_adamw_by_hand) {
    Config c = {RECALL, 8, 8, 24, 1, 2, 1, 4, 4, 10000, 1e-6f};
    manual_seed(7);
    Model model = model_init(&c);
    Grads grads = grads_init(&model);
    double lr = 0.01, wd = 0.1;
    AdamW opt = adamw_init(&model, &grads, 0.9, 0.99, 1e-8, wd);
    Param *p = &opt.params[opt.n_params - 1];   // lm_head.weight
    double w0[64], g1[64], g2[64];
    for (int i = 0; i < p->numel; i++) {
        w0[i] = p->value[i];
        g1[i] = p->grad[i] = (float)(uniform() * 0.1);
    }
    adamw_step(&opt, lr);
    // step 1: m / (1 - 0.9) = g and v / (1 - 0.99) = g^2, so w - lr * g / (|g| + eps)
    for (int i = 0; i < p->numel; i++) {
        double want = w0[i] * (1 - lr * wd) - lr * g1[i] / (fabs(g1[i]) + 1e-8);
        ck_assert_msg(fabs(p->value[i] - want) <= 2e-7 * fabs(want) + 1e-9,
                      "step 1 [%d]: %.9g, by hand %.9g", i, (double)p->value[i], want);
        ck_assert_msg(fabs(p->exp_avg[i] - 0.1 * g1[i]) <= 1e-7 * fabs(g1[i]), "m [%d]", i);
    }
    double w1[64];
    for (int i = 0; i < p->numel; i++) {
        w1[i] = p->value[i];
        g2[i] = p->grad[i] = (float)(uniform() * 0.1);
    }
    adamw_step(&opt, lr / 2);
    // step 2: the moments average the two gradients, the corrections 1 - 0.81 and 1 - 0.9801
    for (int i = 0; i < p->numel; i++) {
        double m = 0.9 * 0.1 * g1[i] + 0.1 * g2[i];
        double v = 0.99 * 0.01 * g1[i] * g1[i] + 0.01 * g2[i] * g2[i];
        double want = w1[i] * (1 - lr / 2 * wd) -
                      lr / 2 * (m / 0.19) / (sqrt(v / (1 - 0.99 * 0.99)) + 1e-8);
        ck_assert_msg(fabs(p->value[i] - want) <= 1e-6 * fabs(want) + 1e-8,
                      "step 2 [%d]: %.9g, by hand %.9g", i, (double)p->value[i], want);
    }
    ck_assert_int_eq(opt.step, 2);
}
END_TEST

START_TEST(test_clip_and_schedule) {
    Config c = {RECALL, 8, 8, 24, 1, 2, 1, 4, 4, 10000, 1e-6f};
    manual_seed(8);
    Model model = model_init(&c);
    Grads grads = grads_init(&model);
    AdamW opt = adamw_init(&model, &grads, 0.9, 0.99, 1e-8, 0.0);
    double squares = 0.0;
    for (int i = 0; i < opt.n_params; i++) {
        for (long j = 0; j < opt.params[i].numel; j++) {
            opt.params[i].grad[j] = (float)uniform();
            squares += (double)opt.params[i].grad[j] * opt.params[i].grad[j];
        }
    }
    float first = opt.params[0].grad[0];
    float norm = clip_grad_norm(&opt, 2.0f);
    ck_assert_msg(fabs(norm - sqrt(squares)) <= 1e-6 * sqrt(squares), "norm %g, by hand %g",
                  (double)norm, sqrt(squares));
    ck_assert_msg(norm > 2.0f, "the case is meant to clip");
    ck_assert_float_eq_tol(opt.params[0].grad[0], first * 2.0f / (norm + 1e-6f), 1e-6);
    float after = clip_grad_norm(&opt, 1e6f);   // below the limit: nothing changes
    ck_assert_float_eq_tol(after, 2.0f, 1e-5);
    // the schedule, step n from 1: n/warmup of lr up to lr at step `warmup`, then a cosine
    // down to lr / 10 at the last step, halfway between at the middle of the cosine
    ck_assert_double_eq(learning_rate(1, 100, 10, 0.5), 0.5 * 1 / 10);
    ck_assert_double_eq(learning_rate(10, 100, 10, 0.5), 0.5);
    ck_assert_double_lt(learning_rate(11, 100, 10, 0.5), 0.5);
    ck_assert_double_eq_tol(learning_rate(55, 100, 10, 0.5), 0.5 * 0.55, 1e-12);
    ck_assert_double_eq_tol(learning_rate(100, 100, 10, 0.5), 0.05, 1e-12);
    // the last step at a tenth however short the cosine: --steps 7 --warmup 6 takes step 6 at
    // the peak and step 7 at a tenth; without warmup step 1 is already past the peak
    ck_assert_double_eq_tol(learning_rate(6, 7, 6, 0.003), 0.003, 1e-15);
    ck_assert_double_eq_tol(learning_rate(7, 7, 6, 0.003), 0.0003, 1e-15);
    ck_assert_double_lt(learning_rate(1, 300, 0, 0.003), 0.003);
    ck_assert_double_eq_tol(learning_rate(300, 300, 0, 0.003), 0.0003, 1e-15);
    // a warmup longer than the run never reaches the peak
    ck_assert_double_eq_tol(learning_rate(4, 4, 20, 0.003), 0.0006, 1e-15);
}
END_TEST

// --- the vector kernels against their scalar twins -----------------------------------------

// A kernel set's result against its scalar twin's: `count` floats, the same bits; the
// failure names the set, the kernel and the length (or what else varies).
static void assert_twins(const float *got, const float *want, long count, const char *set,
                         const char *kernel, int n) {
    char what[96];
    snprintf(what, sizeof what, "%s %s %d", set, kernel, n);
    assert_same_floats(got, want, count, what);
}

// Long sums. The vector sum against sum_exact, on rows long enough for its cascade. Sums
// longer than the AVX-512 gemm's chunks (K_CHUNK, 256 terms: the weights' gradients sum
// over every row of a batch) are taken in pieces through c: still the twin's bits, for rows
// in blocks of 12, 8 and 4 and the rows and columns past them, a transposed or not.
START_TEST(test_long_sums_match_their_scalar_twin) {
    const Kernels *scalar = kernels_named("scalar");
    const char *names[2] = {"avx2", "avx512"};
    enum { K = 600, M = 29, N = 41 };
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);
    float *want = malloc(sizeof(float) * M * N), *got = malloc(sizeof(float) * M * N);
    manual_seed(10);
    fill(a, M * K);
    for (int i = 0; i < K * N; i++) {   // of both signs, so that the sums cancel
        b[i] = (float)uniform() - 0.5f;
    }
    for (int k = 0; k < 2; k++) {
        const Kernels *set = kernels_named(names[k]);
        if (set == NULL) {
            note_skipped("no %s kernels on this CPU: not compared", names[k]);
        }
        // the sum in PyTorch's order: short rows, rows past 512 floats (the cascade's second
        // level) and up to all of b (its third), against sum_exact
        for (int n = 1; set != NULL && n <= K * N; n = n < 300 ? n + 1 : n * 3 + 1) {
            float sum_want = scalar->sum(b, n), sum_got = set->sum(b, n);
            assert_twins(&sum_got, &sum_want, 1, names[k], "sum", n);
        }
        const int ks[] = {255, 256, 257, 512, 600}, ms[] = {20, 29};
        for (int ki = 0; set != NULL && ki < 5; ki++) {
            for (int mi = 0; mi < 2; mi++) {
                for (int variant = 0; variant < 4; variant++) {   // a transposed, accumulate
                    int m = ms[mi], kk = ks[ki];
                    bool transposed = variant & 1, accumulate = variant & 2;
                    int a_row = transposed ? 1 : kk, a_col = transposed ? m : 1;
                    fill(want, M * N);
                    memcpy(got, want, sizeof(float) * M * N);
                    scalar->gemm(want, N, a, a_row, a_col, b, N, m, N, kk, accumulate);
                    set->gemm(got, N, a, a_row, a_col, b, N, m, N, kk, accumulate);
                    ck_assert_msg(memcmp(want, got, sizeof(float) * M * N) == 0,
                                  "%s gemm %dx%dx%d variant %d", names[k], m, N, kk, variant);
                }
            }
        }
    }
    free(a);
    free(b);
    free(want);
    free(got);
}
END_TEST

START_TEST(test_kernels_match_their_scalar_twins) {
    const Kernels *scalar = kernels_named("scalar");
    const char *names[2] = {"avx2", "avx512"};
    manual_seed(9);
    float a[40 * 40], b[40 * 48], want[40 * 48], got[40 * 48];
    fill(a, 40 * 40);
    fill(b, 40 * 48);
    for (int k = 0; k < 2; k++) {
        const Kernels *set = kernels_named(names[k]);
        if (set == NULL) {
            note_skipped("no %s kernels on this CPU: not compared", names[k]);
            continue;
        }
        const int ms[] = {1, 3, 4, 5, 9, 12, 16, 17, 27, 40};   // blocks of 4 and 12 rows, rests
        for (int mi = 0; mi < 10; mi++) {
            int m = ms[mi];
            for (int n = 1; n <= 41; n += 5) {
                for (int kk = 1; kk <= 17; kk += 8) {
                    for (int variant = 0; variant < 4; variant++) {   // a transposed, accumulate
                        bool transposed = variant & 1, accumulate = variant & 2;
                        int a_row = transposed ? 1 : kk, a_col = transposed ? m : 1;
                        fill(want, m * 48);
                        memcpy(got, want, sizeof(float) * (size_t)m * 48);
                        scalar->gemm(want, 48, a, a_row, a_col, b, 48, m, n, kk, accumulate);
                        set->gemm(got, 48, a, a_row, a_col, b, 48, m, n, kk, accumulate);
                        ck_assert_msg(memcmp(want, got, sizeof(float) * (size_t)m * 48) == 0,
                                      "%s gemm %dx%dx%d variant %d", names[k], m, n, kk, variant);
                    }
                }
            }
        }
        for (int n = 1; n <= 33; n++) {
            memcpy(want, a, sizeof(float) * 3 * (size_t)n);
            memcpy(got, a, sizeof(float) * 3 * (size_t)n);
            want[n] = got[n] = -INFINITY;   // a masked score
            scalar->softmax_rows(want, 3, n);
            set->softmax_rows(got, 3, n);
            ck_assert_msg(memcmp(want, got, sizeof(float) * 3 * (size_t)n) == 0, "%s softmax %d",
                          names[k], n);
        }
        for (int n = 1; n <= 100; n += 3) {
            const char *name = names[k];
            scalar->silu(want, a, n);
            set->silu(got, a, n);
            assert_twins(got, want, n, name, "silu", n);
            scalar->silu_backward(want, b, a, n);
            set->silu_backward(got, b, a, n);
            assert_twins(got, want, n, name, "silu'", n);
            float norm_want = scalar->norm(a, n), norm_got = set->norm(a, n);
            assert_twins(&norm_got, &norm_want, 1, name, "norm", n);
            scalar->add(want, a, b, n);
            set->add(got, a, b, n);
            assert_twins(got, want, n, name, "add", n);
            scalar->mul(want, a, b, n);
            set->mul(got, a, b, n);
            assert_twins(got, want, n, name, "mul", n);
            scalar->scale(want, a, b[n], n);
            set->scale(got, a, b[n], n);
            assert_twins(got, want, n, name, "scale", n);
            float row_want = scalar->softmax_backward_row(a, b, n);
            float row_got = set->softmax_backward_row(a, b, n);
            assert_twins(&row_got, &row_want, 1, name, "softmax' row", n);
            for (int seen = -1; seen <= n + 1; seen += n / 3 + 1) {   // none, some, all
                scalar->softmax_backward_scaled(want, a, b, a[n], 4.0f, seen, n);
                set->softmax_backward_scaled(got, a, b, a[n], 4.0f, seen, n);
                assert_twins(got, want, n, name, "softmax' scaled, seen of n", seen);
            }
            memcpy(want, a, sizeof(float) * 3 * (size_t)n);   // 3 queries, n keys
            memcpy(got, a, sizeof(float) * 3 * (size_t)n);
            scalar->causal_scale(want, 3, n, n / 2, 4.0f);
            set->causal_scale(got, 3, n, n / 2, 4.0f);
            assert_twins(got, want, 3L * n, name, "causal scale", n);
        }
        AdamWStep step = {0.9997f, 0.9f, 0.1f, 0.99f, 0.01f, 0.141067f, 1e-8f, -0.0173f};
        for (int n = 1; n <= 100; n += 3) {   // value, exp_avg, exp_avg_sq: a, b, b squared
            float state[2][3][100] = {{{0}}};
            for (int copy = 0; copy < 2; copy++) {
                for (int j = 0; j < n; j++) {
                    state[copy][0][j] = a[j];
                    state[copy][1][j] = b[j];
                    state[copy][2][j] = b[j] * b[j];
                }
            }
            const float *grad = a + 200;
            scalar->adamw(state[0][0], state[0][1], state[0][2], grad, n, &step);
            set->adamw(state[1][0], state[1][1], state[1][2], grad, n, &step);
            ck_assert_msg(memcmp(state[0], state[1], sizeof state[0]) == 0, "%s adamw %d",
                          names[k], n);
        }
    }
}
END_TEST

// --- --threads: the products shared by rows, the same bits ---------------------------------

// share_rows for many sizes, blocks and thread counts (more threads than blocks too): the
// shares, taken in order, cover rows 0 .. m-1 once each; every share but an empty one
// starts on a block;
// two shares' blocks differ by one at most; an empty share comes after every full one.
START_TEST(test_share_rows_covers_every_row_once) {
    const int blocks[] = {1, 4, 12}, counts[] = {1, 2, 3, 5, 7, 64};
    for (int bi = 0; bi < 3; bi++) {
        for (int ci = 0; ci < 6; ci++) {
            for (int m = 0; m <= 300; m += m < 40 ? 1 : 37) {
                int block = blocks[bi], shares = counts[ci], next = 0, fewest = m, most = 0;
                bool emptied = false;
                for (int share = 0; share < shares; share++) {
                    int first, end;
                    share_rows(&first, &end, m, block, share, shares);
                    ck_assert_msg(first == next && end >= first && end <= m,
                                  "m %d block %d, share %d of %d: rows %d .. %d after %d", m,
                                  block, share, shares, first, end, next);
                    ck_assert_msg(first % block == 0 || first == end, "m %d block %d, share "
                                  "%d of %d starts at %d", m, block, share, shares, first);
                    ck_assert_msg(!(emptied && end > first), "m %d block %d: share %d of %d "
                                  "has rows after an empty one", m, block, share, shares);
                    emptied = emptied || end == first;
                    int its_blocks = (end - first + block - 1) / block;
                    fewest = its_blocks < fewest ? its_blocks : fewest;
                    most = its_blocks > most ? its_blocks : most;
                    next = end;
                }
                ck_assert_msg(next == m, "m %d block %d, %d shares: rows end at %d", m, block,
                              shares, next);
                ck_assert_msg(most - fewest <= 1, "m %d block %d, %d shares: %d to %d blocks",
                              m, block, shares, fewest, most);
            }
        }
    }
}
END_TEST

// threads_gemm seen from inside: a kernel set that is the scalar one but for its gemm, which
// also notes which thread took which rows of c.
typedef struct {
    pthread_t thread;
    long first;   // the share's first row of c
    int rows;
} ShareTaken;

static pthread_mutex_t taken_lock = PTHREAD_MUTEX_INITIALIZER;
static ShareTaken taken_shares[MAX_THREADS];
static int n_taken;
static const float *taken_c;   // the product's c, rows ldc apart
static int taken_ldc;

static void gemm_noting(float *c, int ldc, const float *a, int a_row, int a_col, const float *b,
                        int ldb, int m, int n, int k, bool accumulate) {
    pthread_mutex_lock(&taken_lock);
    if (n_taken < MAX_THREADS) {
        taken_shares[n_taken++] = (ShareTaken){pthread_self(), (c - taken_c) / taken_ldc, m};
    }
    pthread_mutex_unlock(&taken_lock);
    kernels_named("scalar")->gemm(c, ldc, a, a_row, a_col, b, ldb, m, n, k, accumulate);
}

// Products on a pool of 3 threads (and of 1), rows in blocks of 12 and of 4, a transposed
// or not, accumulated or not: c is the one-thread kernel's to the bit; the shares cover
// every row once, each starting on a block, taken by as many threads as there are blocks
// (3 at most), one of them this one; a product below MIN_SHARED_WORK stays here whole.
START_TEST(test_threads_gemm_shares_rows_and_keeps_the_bits) {
    enum { M = 100, N = 33, K = 64 };
    static float a[M * K], b[K * N], want[M * N], got[M * N];
    manual_seed(11);
    fill(a, M * K);
    fill(b, K * N);
    const Kernels *chosen = kernels;
    Kernels noting = *kernels_named("scalar");
    noting.gemm = gemm_noting;
    kernels = &noting;
    const int pools[] = {3, 1}, row_blocks[] = {12, 4}, ms[] = {1, 11, 12, 13, 31, 32, 40, 100};
    for (int pi = 0; pi < 2; pi++) {
        ck_assert_int_eq(threads_start(pools[pi]), pools[pi]);
        for (int bi = 0; bi < 2; bi++) {
            noting.row_block = row_blocks[bi];
            for (int mi = 0; mi < 8; mi++) {
                for (int variant = 0; variant < 4; variant++) {   // a transposed, accumulate
                    int m = ms[mi], block = row_blocks[bi];
                    bool transposed = variant & 1, accumulate = variant & 2;
                    int a_row = transposed ? 1 : K, a_col = transposed ? m : 1;
                    fill(want, M * N);
                    memcpy(got, want, sizeof want);
                    kernels_named("scalar")->gemm(want, N, a, a_row, a_col, b, N, m, N, K,
                                                  accumulate);
                    n_taken = 0;
                    taken_c = got;
                    taken_ldc = N;
                    threads_gemm(got, N, a, a_row, a_col, b, N, m, N, K, accumulate);
                    char what[96];
                    snprintf(what, sizeof what, "%d threads, blocks of %d, m %d, variant %d",
                             pools[pi], block, m, variant);
                    assert_same_floats(got, want, M * N, what);
                    bool shared = (double)m * N * K >= MIN_SHARED_WORK;
                    int blocks = (m + block - 1) / block;
                    int expected = !shared ? 1 : blocks < pools[pi] ? blocks : pools[pi];
                    ck_assert_msg(n_taken == expected, "%s: %d shares, expected %d", what,
                                  n_taken, expected);
                    int covered[M] = {0}, here = 0;
                    for (int i = 0; i < n_taken; i++) {
                        const ShareTaken *t = &taken_shares[i];
                        ck_assert_msg(t->first % block == 0, "%s: a share starts at row %ld",
                                      what, t->first);
                        for (long r = t->first; r < t->first + t->rows; r++) {
                            covered[r] += 1;
                        }
                        for (int j = 0; j < i; j++) {
                            ck_assert_msg(!pthread_equal(t->thread, taken_shares[j].thread),
                                          "%s: one thread took two shares", what);
                        }
                        here += pthread_equal(t->thread, pthread_self()) != 0;
                    }
                    ck_assert_msg(here == 1, "%s: this thread took %d shares", what, here);
                    for (int r = 0; r < m; r++) {
                        ck_assert_msg(covered[r] == 1, "%s: row %d taken %d times", what, r,
                                      covered[r]);
                    }
                }
            }
        }
        threads_stop();
    }
    kernels = chosen;
}
END_TEST

// The scalar gemm, slowed by 50 ms on a worker thread (any but `caller`).
static pthread_t caller;

static void gemm_slow_on_workers(float *c, int ldc, const float *a, int a_row, int a_col,
                                 const float *b, int ldb, int m, int n, int k, bool accumulate) {
    if (!pthread_equal(pthread_self(), caller)) {
        nanosleep(&(struct timespec){0, 50000000}, NULL);
    }
    kernels_named("scalar")->gemm(c, ldc, a, a_row, a_col, b, ldb, m, n, k, accumulate);
}

// --bench's timed_gemm (bench.c) is threads_gemm with a clock around it: the same bits, and
// a product shared among threads is timed whole, on this thread, the workers' shares and
// the wait for them included: a worker's share 50 ms slower makes the time at least that.
START_TEST(test_bench_times_a_shared_product_whole) {
    enum { M = 48, N = 40, K = 64 };   // 122,880 multiply-adds: shared (MIN_SHARED_WORK)
    static float a[M * K], b[K * N], want[M * N], got[M * N];
    manual_seed(12);
    fill(a, M * K);
    fill(b, K * N);
    const Kernels *chosen = kernels;
    Kernels slowed = *kernels_named("scalar");
    slowed.gemm = gemm_slow_on_workers;
    slowed.row_block = 12;
    kernels = &slowed;
    caller = pthread_self();
    ck_assert_int_eq(threads_start(2), 2);
    kernels_named("scalar")->gemm(want, N, a, K, 1, b, N, M, N, K, false);
    product_seconds = 0.0;
    timed_gemm(got, N, a, K, 1, b, N, M, N, K, false);
    double shared = product_seconds;
    threads_stop();
    kernels = chosen;
    assert_same_floats(got, want, M * N, "timed_gemm on 2 threads");
    ck_assert_msg(shared >= 0.05, "a product with a 50 ms share timed at %.3f s", shared);
}
END_TEST

// A short run on 1, 2 and 3 threads (and at the most, 64) with each kernel set this CPU has
// (their blocks: 1, 4 and 12 rows), at sizes where the products are shared and a share can
// be empty (lm_head's weight gradient: 16 rows, 2 blocks of 12, for 3 threads): the same
// printed text, byte for byte, and the same bits in every --dump file.
START_TEST(test_threads_print_and_dump_the_same_bits) {
    const char *names[3] = {"scalar", "avx2", "avx512"}, *threads[4] = {"1", "2", "3", "64"};
    const char *tmp = make_temp_dir();
    char *cwd = getcwd(NULL, 0);   // the lesson runs in tmp: its path from the root
    const char *binary = path_join("%s/%s", cwd, lesson_binary(LESSON));
    free(cwd);
    const char *forced = getenv("ATTN_KERNELS");   // make valgrind's, put back at the end
    forced = forced != NULL ? path_join("%s", forced) : NULL;
    for (int k = 0; k < 3; k++) {
        if (kernels_named(names[k]) == NULL) {
            note_skipped("no %s kernels on this CPU: their threads not compared", names[k]);
            continue;
        }
        setenv("ATTN_KERNELS", names[k], 1);
        const char *one_out = NULL, *one_dump = NULL;
        for (int t = 0; t < (k == 2 ? 4 : 3); t++) {
            const char *dump = path_join("%s-%s", names[k], threads[t]);
            const char *argv[] = {"--dim", "32", "--heads", "2", "--kv-heads", "1", "--seq",
                                  "16", "--batch", "16", "--hidden", "40", "--steps", "3",
                                  "--threads", threads[t], "--dump", dump, NULL};
            RunResult r = run_program_with(tmp, 60, binary, argv);
            ck_assert_msg(r.status == 0 && r.err[0] == '\0', "%s, --threads %s: exit %d: %s",
                          names[k], threads[t], r.status, r.err);
            if (t == 0) {
                one_out = r.out;
                one_dump = path_join("%s/%s", tmp, dump);
                continue;
            }
            ck_assert_msg(strcmp(r.out, one_out) == 0, "%s: --threads %s prints other lines "
                          "than --threads 1", names[k], threads[t]);
            int compared = compare_npy_dir(path_join("%s/%s", tmp, dump), one_dump);
            ck_assert_int_eq(compared, 50);   // 20 parameters and their .grad, and 10 more
        }
    }
    if (forced != NULL) {
        setenv("ATTN_KERNELS", forced, 1);
    } else {
        unsetenv("ATTN_KERNELS");
    }
    remove_tree(tmp);
}
END_TEST

// --- decoding with the cache, checkpoints, bad input -----------------------------------------

// The recall task's random orders: sort_indices (a merge sort) gives what
// torch.sort(keys, stable=True).indices gives, here an insertion sort, the
// simplest stable sort, on keys with many ties and at lengths that are not
// powers of two.
START_TEST(test_sort_indices_is_a_stable_sort) {
    for (int n = 1; n <= 70; n += 3) {
        float key[70], order[70], spare[70], expected[70];
        for (int i = 0; i < n; i++) {
            key[i] = (float)((i * 37 + 11) % 7);   // seven values: ties everywhere
        }
        for (int i = 0; i < n; i++) {
            int j = i;
            for (; j > 0 && key[(int)expected[j - 1]] > key[i]; j--) {
                expected[j] = expected[j - 1];
            }
            expected[j] = (float)i;
        }
        sort_indices(order, key, spare, n);
        for (int i = 0; i < n; i++) {
            ck_assert_msg(order[i] == expected[i], "n %d: order[%d] = %g, expected %g", n, i,
                          (double)order[i], (double)expected[i]);
        }
    }
}
END_TEST

// The logits of a sequence run a few tokens per call (the cache) are those of one run over
// every token, to float rounding (a softmax over the keys so far adds them differently).
START_TEST(test_cached_decoding_matches_the_full_forward) {
    Config c = {RECALL, 16, 16, 48, 2, 2, 1, 8, 16, 10000, 1e-6f};
    manual_seed(10);
    Model model = model_init(&c);
    Batch example = make_batch(&c, 1);
    Activations full = activations_init(&c, 1), cached = activations_init(&c, 1);
    model_forward(&full, &model, example.input_ids->data, 1, 0, 16);
    int calls[4][2] = {{0, 5}, {5, 1}, {6, 7}, {13, 3}};   // (start, tokens)
    for (int i = 0; i < 4; i++) {
        model_forward(&cached, &model, example.input_ids->data, 1, calls[i][0], calls[i][1]);
    }
    for (int i = 0; i < 16 * 16; i++) {
        ck_assert_msg(fabsf(full.logits[i] - cached.logits[i]) <= 1e-5f, "logits[%d]: %g, %g", i,
                      (double)full.logits[i], (double)cached.logits[i]);
    }
}
END_TEST

// The answers-right count of part 6: "answers right: 1022 of 1024 (99.80%); ..."
static double part6_accuracy(const char *out) {
    const char *line = strstr(out, "answers right: ");
    ck_assert_msg(line != NULL, "no part 6 in:\n%s", out);
    long right, asked;
    ck_assert_int_eq(sscanf(line, "answers right: %ld of %ld", &right, &asked), 2);
    return (double)right / (double)asked;
}

// A small model (width 16, 8 tokens, 8 symbols, 200 steps), trained in a fraction of a
// second, saved, loaded again with no training: at least 99% of its answers right both times,
// and the same answers decoded.
START_TEST(test_a_saved_model_loads_and_answers) {
    const char *tmp = make_temp_dir(), *ck = path_join("%s/ck", tmp);
    const char *small[] = {"--dim", "16", "--heads", "2", "--kv-heads", "1", "--seq", "8",
                           "--vocab", "8", "--steps", "200", "--lr", "0.01"};
    const char *train[20], *load[20];
    int n = 0;
    for (; n < 14; n++) {
        train[n] = load[n] = small[n];
    }
    train[n] = "--save";
    train[n + 1] = ck;
    train[n + 2] = NULL;
    load[10] = "--steps";
    load[11] = "0";
    load[n] = "--load";
    load[n + 1] = ck;
    load[n + 2] = NULL;
    RunResult trained = run_program(lesson_binary(LESSON), train);
    ck_assert_msg(trained.status == 0, "exit %d: %s", trained.status, trained.err);
    ck_assert_int_eq(count_entries(ck), 21);
    RunResult loaded = run_program(lesson_binary(LESSON), load);
    ck_assert_msg(loaded.status == 0, "exit %d: %s", loaded.status, loaded.err);
    ck_assert_msg(part6_accuracy(trained.out) >= 0.99, "trained: %s", strstr(trained.out,
                                                                              "answers"));
    ck_assert_msg(part6_accuracy(loaded.out) >= 0.99, "loaded: %s", strstr(loaded.out, "answers"));
    ck_assert_msg(strstr(loaded.out, "every parameter replaced by") != NULL, "no load line");
    const char *written = strstr(trained.out, "  written: "), *again = strstr(loaded.out,
                                                                              "  written: ");
    ck_assert(written != NULL && again != NULL);
    ck_assert_msg(strncmp(written, again, (size_t)(strchr(written, '\n') - written)) == 0,
                  "the loaded model decodes the example otherwise");
    remove_tree(tmp);
}
END_TEST

static unsigned char *read_bytes(const char *path, size_t *length) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot read %s", path);
    unsigned char *bytes = arena_alloc(1 << 16, 1);
    *length = fread(bytes, 1, 1 << 16, f);
    fclose(f);
    return bytes;
}

static void write_file(const char *path, const void *bytes, size_t length) {
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    ck_assert_int_eq(fwrite(bytes, 1, length, f), length);
    fclose(f);
}

// A refused --load: exit 2, one line naming the checkpoint's problem, nothing written (not
// --save's directory, not --dump's).
static void assert_load_refused(const char *ck, const char *named, const char *tmp) {
    const char *save = path_join("%s/saved", tmp), *dump = path_join("%s/dumped", tmp);
    const char *argv[] = {"--dim", "8", "--heads", "2", "--kv-heads", "1", "--seq", "4",
                          "--load", ck, "--save", save, "--dump", dump, NULL};
    RunResult r = run_program(lesson_binary(LESSON), argv);
    assert_one_line_refusal(r, "lesson-16: ", named);
    ck_assert_msg(strstr(r.err, named) != NULL, "'%s' not in: %s", named, r.err);
    ck_assert_msg(access(save, F_OK) != 0 && access(dump, F_OK) != 0, "%s: something written",
                  named);
}

START_TEST(test_bad_checkpoints_are_refused) {
    const char *tmp = make_temp_dir(), *ck = path_join("%s/ck", tmp);
    assert_load_refused(ck, "is not a directory", tmp);
    const char *save[] = {"--dim", "8", "--heads", "2", "--kv-heads", "1", "--seq", "4",
                          "--steps", "1", "--save", ck, NULL};
    ck_assert_int_eq(run_program(lesson_binary(LESSON), save).status, 0);
    const char *norm = path_join("%s/norm.weight.npy", ck);
    size_t length;
    unsigned char *good = read_bytes(norm, &length);   // its header, then the 8 floats of (8,)
    remove(norm);
    assert_load_refused(ck, "norm.weight.npy is missing", tmp);
    write_file(norm, good, length - 4);
    assert_load_refused(ck, "norm.weight.npy is cut short", tmp);
    write_file(norm, "not a numpy file", 16);
    assert_load_refused(ck, "norm.weight.npy is not a .npy file", tmp);
    // a checkpoint of another model: --dim 16 against --dim 8
    const char *other = path_join("%s/other", tmp);
    const char *wider[] = {"--dim", "16", "--heads", "2", "--kv-heads", "1", "--seq", "4",
                           "--steps", "1", "--save", other, NULL};
    ck_assert_int_eq(run_program(lesson_binary(LESSON), wider).status, 0);
    assert_load_refused(other, "has shape (16, 16), this model's is (16, 8)", tmp);
    remove_tree(tmp);
}
END_TEST

START_TEST(test_save_leaves_nothing_half_written) {
    const char *tmp = make_temp_dir(), *ck = path_join("%s/ck", tmp);
    mkdir(ck, 0777);
    mkdir(path_join("%s/norm.weight.npy", ck), 0777);   // a name --save cannot take
    const char *argv[] = {"--dim", "8", "--heads", "2", "--kv-heads", "1", "--seq", "4",
                          "--steps", "1", "--save", ck, NULL};
    RunResult r = run_program(lesson_binary(LESSON), argv);
    ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
    ck_assert_int_eq(count_entries(ck), 1);   // only the directory that was in the way
    remove_tree(tmp);
}
END_TEST

// --- printing the widest tokens -----------------------------------------------------------

// --vocab 65536: keys k0..k32767 and values v0..v32767, six characters each, where the
// example's text had room for five (N*6+8 bytes for N tokens and their gaps): the run
// aborted ("munmap_chunk(): invalid pointer") or, under ASan, stopped at a heap overflow.
START_TEST(test_widest_tokens_are_printed_whole) {
    Config c = {RECALL, 65536, 8, 24, 1, 2, 1, 4, 24, 10000, 1e-6f};
    float ids[24];
    const char *want = "";
    int questions = 24 / 8, pairs = 24 / 2 - questions;
    for (int t = 0; t < 24; t++) {
        ids[t] = t % 2 == 0 ? 32767.0f : 65535.0f;   // k32767 v32767 ..., the widest
        const char *gap = t == 0 ? "" : t == 2 * pairs ? " | " : t % 2 == 0 ? " " : "";
        want = path_join("%s%s%s", want, gap, t % 2 == 0 ? "k32767" : "v32767");
    }
    ck_assert_str_eq(sequence_text(&c, ids), want);
    ck_assert_str_eq(token_text(&c, 32767), "k32767");
    ck_assert_str_eq(token_text(&c, 65535), "v32767");
    Config r = {REVERSE, 65536, 8, 24, 1, 2, 1, 4, 24, 10000, 1e-6f};
    ck_assert_str_eq(token_text(&r, 65534), "65534");
    // The whole run, as the probe ran it.
    RunResult run = run_program(lesson_binary(LESSON), (const char *const[]){
        "--vocab", "65536", "--seq", "24", "--steps", "1", "--batch", "1", "--layers", "1",
        "--dim", "8", "--heads", "2", "--kv-heads", "1", NULL});
    ck_assert_msg(run.status == 0, "exit %d: %s", run.status, run.err);
    ck_assert_msg(strstr(run.out, "keys k0..k32767 are tokens 0..32767") != NULL, "%s", run.out);
}
END_TEST

// A weight of Inf (or more than 1) is the darkest shade, NaN none, in the text maps and
// the SVG: a float past an int's range is never converted to int (undefined behaviour:
// an Inf used to index the shades at INT_MIN, and to be left out of the image).
START_TEST(test_shades_of_weights_that_are_not_numbers) {
    ck_assert_int_eq(shade(INFINITY), '@');
    ck_assert_int_eq(shade(1e30f), '@');
    ck_assert_int_eq(shade(NAN), ' ');
    ck_assert_int_eq(shade(-INFINITY), ' ');
    ck_assert_int_eq(shade(0.5f), '+');   // the fifth ninth
    Config c = {RECALL, 8, 8, 24, 1, 1, 1, 8, 4, 10000, 1e-6f};
    float ids[4] = {0, 4, 1, 5};
    float maps[3 * 16];
    for (int i = 0; i < 3 * 16; i++) {
        maps[i] = i % 4 == 0 ? INFINITY : i % 4 == 1 ? NAN : i % 4 == 2 ? 1e30f : 0.0f;
    }
    int steps[3] = {0, 1, 2};
    size_t length;
    const char *text = svg_text(&length, &c, ids, maps, steps);
    // Each map's 8 cells of Inf and 1e30 drawn black (one path of the darkest shade a map),
    // its NaNs and zeros left white.
    int black_paths = 0, cells = 0;
    for (const char *at = text; (at = strstr(at, "\" fill-opacity=\"1.0000\"/>")) != NULL; at++) {
        black_paths += 1;
    }
    for (const char *at = text; (at = strstr(at, "h6v6h-6z")) != NULL; at++) {
        cells += 1;
    }
    ck_assert_int_eq(black_paths, 3);
    ck_assert_int_eq(cells, 3 * 8);
}
END_TEST

// --- two outputs on one path, bad output paths: refused before any work -------------------

// A small run's flags, then `extra`, called in this process up to where its work starts.
static LessonCall call_small(const char *const *extra) {
    const char *argv[40] = {"--dim", "8", "--heads", "2", "--kv-heads", "1", "--seq", "4",
                            "--steps", "1"};
    int n = 10;
    for (int i = 0; extra[i] != NULL; i++) {
        ck_assert(n < 39);
        argv[n++] = extra[i];
    }
    argv[n] = NULL;
    return call_lesson(lesson_main, argv);
}

// Refused with exit 2 and exactly `line` (after "lesson-16: "), before its work, and
// nothing made in `sandbox` but what was there (`entries` of them).
static void assert_paths_refused(const char *sandbox, int entries, const char *const *extra,
                                 const char *line) {
    LessonCall call = call_small(extra);
    ck_assert_msg(call.status == 2 && !call.reached_work, "%s: exit %d, reached work %d: %s",
                  line, call.status, call.reached_work, call.err);
    ck_assert_str_eq(call.err, path_join("lesson-16: %s\n", line));
    ck_assert_msg(count_entries(sandbox) == entries, "%s: something was made in %s", line,
                  sandbox);
}

// A checkpoint of the small model in <sandbox>/<name>, written by the program.
static const char *small_checkpoint(const char *sandbox, const char *name) {
    const char *ck = path_join("%s/%s", sandbox, name);
    RunResult r = run_program(lesson_binary(LESSON), (const char *const[]){
        "--dim", "8", "--heads", "2", "--kv-heads", "1", "--seq", "4", "--steps", "1",
        "--save", ck, NULL});
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    return ck;
}

// Each pair of --save, --dump, --dot, --svg and --load that the probe found accepted on
// one path: the later run overwrote the earlier output, or --dump the checkpoint --load
// read. Now refused, however the path is spelled ("..", "//", a symbolic link).
START_TEST(test_two_outputs_on_one_path_are_refused) {
    const char *s = make_temp_dir();
    const char *ck = small_checkpoint(s, "ck");
    const char *D = path_join("%s/D", s), *F = path_join("%s/F", s);
    assert_paths_refused(s, 1, (const char *const[]){"--save", D, "--dump", D, NULL},
                         path_join("--dump and --save both name '%s'", D));
    const char *D_again = path_join("%s/x/../D", s);   // x/ does not exist: --dump makes it
    assert_paths_refused(s, 1, (const char *const[]){"--save", D, "--dump", D_again, NULL},
                         path_join("--dump and --save both name '%s'", D_again));
    assert_paths_refused(s, 1, (const char *const[]){"--load", ck, "--dump", ck, NULL},
                         path_join("--dump and --load both name '%s'", ck));
    const char *into = path_join("%s/embed_tokens.weight.npy", D);
    assert_paths_refused(s, 1, (const char *const[]){"--save", D, "--dot", into, NULL},
                         path_join("--dot '%s' is a .npy name in --save's directory, where "
                                   "--save writes its <name>.npy files; give the graph "
                                   "another name", into));
    const char *x_npy = path_join("%s/x.npy", D);
    assert_paths_refused(s, 1, (const char *const[]){"--save", D, "--svg", x_npy, NULL},
                         path_join("--svg '%s' is a .npy name in --save's directory, where "
                                   "--save writes its <name>.npy files; give it another name",
                                   x_npy));
    const char *logits = path_join("%s/logits.npy", D);
    assert_paths_refused(s, 1, (const char *const[]){"--svg", logits, "--dump", D, NULL},
                         path_join("--svg '%s' is a .npy name in --dump's directory, where "
                                   "--dump writes its <name>.npy files; give it another name",
                                   logits));
    const char *in_ck = path_join("%s/norm.weight.npy", ck);
    assert_paths_refused(s, 1, (const char *const[]){"--load", ck, "--svg", in_ck, NULL},
                         path_join("--svg '%s' is a .npy name in --load's directory, where "
                                   "--load reads its <name>.npy files; give it another name",
                                   in_ck));
    assert_paths_refused(s, 1, (const char *const[]){"--svg", F, "--dot", F, NULL},
                         path_join("--dot and --svg both name '%s'", F));
    const char *F_twice = path_join("%s//F", s);
    assert_paths_refused(s, 1, (const char *const[]){"--svg", F, "--dot", F_twice, NULL},
                         path_join("--dot and --svg both name '%s'", F_twice));
    // Through a symbolic link to the sandbox: the same file.
    const char *link = path_join("%s/link", s);
    ck_assert_int_eq(symlink(s, link), 0);
    const char *F_linked = path_join("%s/F", link);
    assert_paths_refused(s, 2, (const char *const[]){"--svg", F, "--dot", F_linked, NULL},
                         path_join("--dot and --svg both name '%s'", F_linked));
    // --save over --load's checkpoint writes what --load read: allowed (training on).
    LessonCall on = call_small((const char *const[]){"--load", ck, "--save", ck, NULL});
    ck_assert_msg(on.status == 0 && on.reached_work, "exit %d: %s", on.status, on.err);
    remove_tree(s);
}
END_TEST

// --svg's path checked before any work, as --dot's: the probe's were refused only after
// training, with exit 1, and --svg onto a symbolic link replaced the link.
START_TEST(test_bad_svg_paths_are_refused_up_front) {
    const char *s = make_temp_dir();
    const char *newdir = path_join("%s/newdir/", s);
    assert_paths_refused(s, 0, (const char *const[]){"--svg", newdir, NULL},
                         path_join("--svg: '%s' ends in '/'; give a file name", newdir));
    char name[301];
    memset(name, 'a', 300);
    name[300] = '\0';
    const char *long_name = path_join("%s/%s", s, name);
    assert_paths_refused(s, 0, (const char *const[]){"--svg", long_name, NULL},
                         "--svg: a name in the path is 300 characters long, more than the 244 "
                         "allowed");
    const char *none = path_join("%s/none/x.svg", s);
    assert_paths_refused(s, 0, (const char *const[]){"--svg", none, NULL},
                         path_join("--svg cannot write '%s': no directory '%s/none'", none, s));
    const char *F = path_join("%s/F", s), *link = path_join("%s/link.svg", s);
    ck_assert(save_file(F, "mine", 4));
    ck_assert_int_eq(symlink(F, link), 0);
    assert_paths_refused(s, 2, (const char *const[]){"--svg", link, NULL},
                         path_join("--svg: '%s' is a symbolic link; give a regular file or a "
                                   "new name", link));
    const char *dir = path_join("%s/dir.svg", s);
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    assert_paths_refused(s, 3, (const char *const[]){"--svg", dir, NULL},
                         path_join("--svg: '%s' is a directory; give a regular file or a new "
                                   "name", dir));
    // --save onto a file that is not a directory.
    assert_paths_refused(s, 3, (const char *const[]){"--save", F, NULL},
                         path_join("--save: '%s' is not a directory", F));
    remove_tree(s);
}
END_TEST

// --- --load: what it reads, refused in one line before any work ---------------------------

// A version 1.0 .npy with header `dict` (padded with spaces to `header_length` bytes, the
// last a newline) and `n` floats.
static void write_npy(const char *path, const char *dict, size_t header_length,
                      const float *values, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    unsigned char magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                               (unsigned char)(header_length & 0xff),
                               (unsigned char)(header_length >> 8)};
    fwrite(magic, 1, 10, f);
    fputs(dict, f);
    for (size_t i = strlen(dict); i + 1 < header_length; i++) {
        fputc(' ', f);
    }
    fputc('\n', f);
    ck_assert_int_eq(fwrite(values, sizeof(float), n, f), n);
    fclose(f);
}

static void assert_load_problem(const char *ck, const char *line) {
    LessonCall call = call_small((const char *const[]){"--load", ck, NULL});
    ck_assert_msg(call.status == 2 && !call.reached_work, "%s: exit %d: %s", line, call.status,
                  call.err);
    ck_assert_str_eq(call.err, path_join("lesson-16: --load %s: %s\n", ck, line));
}

START_TEST(test_load_reads_only_what_numpy_would) {
    const char *s = make_temp_dir();
    const char *ck = small_checkpoint(s, "ck");
    const char *norm = path_join("%s/norm.weight.npy", ck);
    float ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    // A header longer than 4095 bytes is valid (numpy writes up to 65535 in version 1.0):
    // it was "cut short in its header".
    write_npy(norm, "{'descr': '<f4', 'fortran_order': False, 'shape': (8,), }", 5000, ones, 8);
    LessonCall call = call_small((const char *const[]){"--load", ck, NULL});
    ck_assert_msg(call.status == 0 && call.reached_work, "exit %d: %s", call.status, call.err);
    // A shape past an int: (4294967312, 8) was read as (16, 8), which it wraps to.
    const char *embed = path_join("%s/embed_tokens.weight.npy", ck);
    float table[16 * 8] = {0};
    write_npy(embed, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967312, 8), }", 118,
              table, 16 * 8);
    assert_load_problem(ck, "embed_tokens.weight.npy has shape (4294967312, 8), this model's "
                            "is (16, 8)");
    write_npy(embed, "{'descr': '<f4', 'fortran_order': False, 'shape': (16, 8), }", 118, table,
              16 * 8);
    // NaN and Inf: they loaded without a word and trained to "loss nan".
    ones[3] = NAN;
    write_npy(norm, "{'descr': '<f4', 'fortran_order': False, 'shape': (8,), }", 118, ones, 8);
    assert_load_problem(ck, "norm.weight.npy holds NaN at flat index 3; a checkpoint's weights "
                            "must be finite: save one from a run whose loss stayed finite");
    ones[3] = 1;
    ones[7] = -INFINITY;
    write_npy(norm, "{'descr': '<f4', 'fortran_order': False, 'shape': (8,), }", 118, ones, 8);
    assert_load_problem(ck, "norm.weight.npy holds Inf at flat index 7; a checkpoint's weights "
                            "must be finite: save one from a run whose loss stayed finite");
    // A directory where a .npy should be: it said "is not a .npy file (version 1.0)".
    ck_assert_int_eq(unlink(norm), 0);
    ck_assert_int_eq(mkdir(norm, 0777), 0);
    assert_load_problem(ck, "norm.weight.npy is a directory, not a .npy file");
    // A FIFO: opened before it was checked, the run waited for a writer for ever.
    ck_assert_int_eq(rmdir(norm), 0);
    ck_assert_int_eq(mkfifo(norm, 0666), 0);
    assert_load_problem(ck, "norm.weight.npy is not a regular file");
    remove_tree(s);
}
END_TEST

// With --load, --dump writes the parameters the run used, the loaded ones: it wrote the
// drawn ones.
START_TEST(test_dump_under_load_writes_the_loaded_parameters) {
    const char *s = make_temp_dir();
    const char *ck = small_checkpoint(s, "ck"), *d = path_join("%s/d", s);
    RunResult r = run_program(lesson_binary(LESSON), (const char *const[]){
        "--dim", "8", "--heads", "2", "--kv-heads", "1", "--seq", "4", "--steps", "0",
        "--load", ck, "--dump", d, NULL});
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    const char *names[3] = {"embed_tokens.weight", "layers.0.self_attn.q_proj.weight",
                            "norm.weight"};
    for (int i = 0; i < 3; i++) {
        size_t saved_length, dumped_length;
        const unsigned char *saved = read_bytes(path_join("%s/%s.npy", ck, names[i]),
                                                &saved_length);
        const unsigned char *dumped = read_bytes(path_join("%s/%s.npy", d, names[i]),
                                                 &dumped_length);
        ck_assert_msg(saved_length == dumped_length &&
                      memcmp(saved, dumped, saved_length) == 0, "--dump's %s is not the one "
                      "--load read", names[i]);
    }
    remove_tree(s);
}
END_TEST

static const BadFlags BAD[] = {
    {{"--layers", "9", NULL}, "--layers expects a whole number from 1 to 8"},
    {{"--layers", "0", NULL}, "--layers expects a whole number from 1 to 8"},
    {{"--heads", "3", NULL}, "--heads 3 does not divide --dim 64"},
    {{"--kv-heads", "3", NULL}, "--kv-heads 3 does not divide --heads 4"},
    {{"--dim", "12", "--heads", "4", NULL}, "head_dim 3 is odd"},
    {{"--seq", "15", NULL}, "--seq 15 is odd"},
    {{"--seq", "40", NULL}, "--vocab must be at least twice the pairs"},
    {{"--seq", "2", NULL}, "--seq must be at least 4"},
    {{"--task", "reverse", "--vocab", "1", NULL}, "--vocab 1"},
    {{"--task", "sort", NULL}, "--task"},
    {{"--lr", "1.5", NULL}, "--lr"},
    {{"--clip", "-1", NULL}, "--clip"},
    {{"--clip", "1/2", NULL}, "--clip"},
    {{"--steps", "100001", NULL}, "--steps"},
    {{"--dim", "512", "--steps", "100000", NULL}, "ATTN_MAX_SECONDS="},
    {{"--layers", "8", "--batch", "1000", NULL}, "ATTN_MAX_MIB="},
    {{"--svg", "/nonexistent-dir/maps.svg", NULL}, "--svg"},
    {{"--load", "/nonexistent-dir", NULL}, "--load"},
    {{"--threads", "0", NULL}, "--threads expects a whole number from 1 to 64"},
    {{"--threads", "65", NULL}, "--threads expects a whole number from 1 to 64"},
    {{"--threads", "-2", NULL}, "--threads"},
    {{"--threads", "two", NULL}, "--threads"},
    {{"--threads", "2.5", "--bench", NULL}, "--threads"},
};

// The count of `needle` in `haystack`.
static int occurrences(const char *haystack, const char *needle) {
    int n = 0;
    for (const char *at = strstr(haystack, needle); at != NULL; at = strstr(at + 1, needle)) {
        n += 1;
    }
    return n;
}

// --bench on a tiny model (it times nothing a test could check): its two cases, the larger
// one twice the width and the sequence with 4 layers, each ending in one line of the format
// tools/bench_pytorch_train.py reads, with the products' time and the core's two peaks; with
// --threads 2, a line on one thread and one on 2 for each, every other line within 100
// columns; the products timed apart under every timed line, and the peaks said once.
START_TEST(test_bench_lines) {
    for (int threads = 1; threads <= 2; threads++) {
        const char *args[] = {"--bench", "--layers", "1", "--dim", "16", "--heads", "2",
                              "--kv-heads", "1", "--seq", "8", "--batch", "2", "--threads",
                              threads == 1 ? "1" : "2", NULL};
        RunResult r = run_program(lesson_binary(LESSON), args);
        ck_assert_msg(r.status == 0, "--bench exited %d: %s", r.status, r.err);
        assert_lines_fit(threads == 1 ? "--bench" : "--bench --threads 2", r);
        const char *cases[2] = {"bench task=recall layers=1 dim=16 seq=8 batch=2 ",
                                "bench task=recall layers=4 dim=32 seq=16 batch=2 "};
        const char *counts[3] = {"", "threads=1 ", "threads=2 "};
        const char *cursor = r.out;
        int found = 0, lines = 2 * threads;   // for each case, each thread count
        for (const char *line = next_line(&cursor); line != NULL; line = next_line(&cursor)) {
            if (strncmp(line, "bench ", 6) != 0) {
                continue;
            }
            ck_assert_int_lt(found, lines);
            const char *want = path_join("%s%sms_per_step=", cases[found / threads],
                                         counts[threads == 1 ? 0 : 1 + found % 2]);
            ck_assert_msg(strncmp(line, want, strlen(want)) == 0, "%s", line);
            double ms = 0, tokens = 0, products = 0, fma = 0, mul_add = 0;
            ck_assert_msg(sscanf(line + strlen(want), "%lf tokens_per_s=%lf products_ms=%lf "
                                 "fma_peak=%lf mul_add_peak=%lf", &ms, &tokens, &products,
                                 &fma, &mul_add) == 5 && ms > 0 && tokens > 0 && fma > 0 &&
                          mul_add > 0, "%s", line);
            // the products are part of the step: their best round is no longer than its best
            ck_assert_msg(products > 0 && products <= ms * 1.001, "%s", line);
            found += 1;
        }
        ck_assert_int_eq(found, lines);
        ck_assert_msg(occurrences(r.out, "\n          the products alone (their best round): ")
                      == lines && occurrences(r.out, "% of the FMA peak, ") == lines &&
                      occurrences(r.out, "% of the multiply-then-add peak\n") == lines &&
                      occurrences(r.out, "\n  FMA ") == 1, "%s", r.out);
        if (threads == 1) {
            ck_assert_msg(strstr(r.out, "\nthis core's peaks with ") != NULL, "%s", r.out);
        } else {
            ck_assert_msg(strstr(r.out, "training steps on one thread and on 2 ") != NULL &&
                          strstr(r.out, "\n     2 threads: best ") != NULL &&
                          strstr(r.out, "\none core's peaks with ") != NULL, "%s", r.out);
        }
    }
}
END_TEST

START_TEST(test_bad_flags) {
    check_bad_flags(LESSON, "lesson-16", BAD, (int)(sizeof BAD / sizeof BAD[0]));
}
END_TEST

// --- what a run may take (common/lesson/budget.h; harness.h: add_budget_tests) -----------

// Refused by the budget before anything runs, in one line that names the flags, the budget
// and how to raise it.
static const BudgetRefusal REFUSED[] = {
    // It prices its time by the kernels it runs (a refusal by time would name other
    // figures on a CPU without AVX-512): by memory, then. Its --dot copies step 1's
    // activations to draw them: 1.9 GiB without it.
    {{"--batch", "8192", NULL},
     "lesson-16: --batch 8192 would hold about 3.1 GiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=3300", NULL},
    {{"--seq", "256", "--vocab", "256", "--batch", "128", NULL},
     "lesson-16: --seq 256 --vocab 256 --batch 128 would hold about 1.4 GiB at once, more than "
     "the 512 MiB allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=1500", NULL},
};

// Sizes where the tensors that grow with the flags are most of what a run holds, each
// flag raised in one of them, and the switches that add tensors on: what a run holds is
// its prediction (make test runs the first, make test-long all).
static const SizedRun SIZED[] = {
    {{"--batch", "64", "--layers", "3", "--steps", "2", NULL}},
    {{"--dim", "96", "--heads", "6", "--kv-heads", "3", "--hidden", "128", "--steps", "2",
      "--dump", "", NULL}},
    {{"--task", "reverse", "--seq", "24", "--vocab", "24", "--steps", "2", "--dot", "", NULL}},
};

// The budget admits the bench where it has its vector kernels.
static const AdmittedRun ADMITTED[] = {
    {{"--bench", NULL}, true},
};

static const LessonBudget BUDGET = {
    "16-train", lesson_main, REFUSED, sizeof REFUSED / sizeof REFUSED[0], SIZED,
    sizeof SIZED / sizeof SIZED[0], ADMITTED, sizeof ADMITTED / sizeof ADMITTED[0],
};

static Suite *lesson16_suite(void) {
    Suite *suite = suite_create("lesson16");
    TCase *recorded = new_tcase("pytorch");
    tcase_set_timeout(recorded, 120);
    tcase_add_loop_test(recorded, test_matches_pytorch, 0, recorded_case_count(DATA));
    suite_add_tcase(suite, recorded);
    TCase *pieces = new_tcase("backward");
    tcase_add_test(pieces, test_rms_norm_backward);
    tcase_add_test(pieces, test_rope_backward);
    tcase_add_test(pieces, test_rope_table_thetas_are_pytorchs);
    tcase_add_test(pieces, test_silu_backward);
    tcase_add_test(pieces, test_swiglu_backward);
    tcase_add_test(pieces, test_attention_backward);
    tcase_add_test(pieces, test_cross_entropy_backward);
    tcase_add_test(pieces, test_linear_and_embedding_backward);
    tcase_add_test(pieces, test_adamw_by_hand);
    tcase_add_test(pieces, test_clip_and_schedule);
    tcase_add_test(pieces, test_kernels_match_their_scalar_twins);
    tcase_add_test(pieces, test_long_sums_match_their_scalar_twin);
    tcase_add_test(pieces, test_sort_indices_is_a_stable_sort);
    tcase_add_test(pieces, test_cached_decoding_matches_the_full_forward);
    tcase_add_test(pieces, test_share_rows_covers_every_row_once);
    tcase_add_test(pieces, test_threads_gemm_shares_rows_and_keeps_the_bits);
    tcase_add_test(pieces, test_bench_times_a_shared_product_whole);
    suite_add_tcase(suite, pieces);
    TCase *runs = new_tcase("runs");
    tcase_set_timeout(runs, 60);
    tcase_add_test(runs, test_a_saved_model_loads_and_answers);
    tcase_add_test(runs, test_bad_checkpoints_are_refused);
    tcase_add_test(runs, test_save_leaves_nothing_half_written);
    tcase_add_test(runs, test_bench_lines);
    tcase_add_test(runs, test_threads_print_and_dump_the_same_bits);
    tcase_add_test(runs, test_bad_flags);
    suite_add_tcase(suite, runs);
    TCase *outputs = new_tcase("outputs");
    tcase_set_timeout(outputs, 60);
    tcase_add_test(outputs, test_widest_tokens_are_printed_whole);
    tcase_add_test(outputs, test_shades_of_weights_that_are_not_numbers);
    tcase_add_test(outputs, test_two_outputs_on_one_path_are_refused);
    tcase_add_test(outputs, test_bad_svg_paths_are_refused_up_front);
    tcase_add_test(outputs, test_load_reads_only_what_numpy_would);
    tcase_add_test(outputs, test_dump_under_load_writes_the_loaded_parameters);
    suite_add_tcase(suite, outputs);
    add_budget_tests(suite, &BUDGET);
    return suite;
}

int main(void) { return run_suite(lesson16_suite()); }
