// test_lesson18.c - lesson 18 (attention's variants): each variant's forward and backward,
// decoding with a rolling buffer and with linear attention's state, the experiments' tables.
//
// Against PyTorch, bit for bit (tests/reference/gen_lesson18.py ran the page's script): for
// one model of each variant (--experiment none: RoPE, ALiBi with 6 heads and with a window,
// the sinusoidal and the learned tables, no positions, windows that wrap the rolling buffer,
// linear attention with groups of 1 and 2, head_dims 4 and 8, sizes whose phi meets the C
// library's exp on a tail, 3 layers) the initial parameters, step 1's batch, logits and every
// gradient, each step's loss and gradient norm, the maps and every printed line; and the
// experiments at small sizes: every loss of every model they train, their tables, and every
// printed line.
// Against PyTorch's autograd in float64: the page's softmax_attention (with ALiBi's bias and
// a window, and without) and linear_attention on the same inputs, within rounding.
// Without PyTorch: each variant's backward against central differences in double (softmax
// attention with a window and ALiBi's bias, linear attention's running sums, the learned
// table); ALiBi's slopes by hand for head counts that are powers of two and that are not;
// the rolling buffer against a full cache with the window applied (the same bits); linear
// attention's RNN against its parallel form (within rounding), and its decoding against the
// training forward (the same bits); bad flags; what a run holds against its prediction.
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define main lesson_main
#include "../lessons/18-attention-variants/variants.c"
#undef main
#include "../lessons/18-attention-variants/adamw.c"
#include "../lessons/18-attention-variants/attend.c"
#include "../lessons/18-attention-variants/flags.c"
#include "../lessons/18-attention-variants/layers.c"
#include "../lessons/18-attention-variants/model.c"
#include "../lessons/18-attention-variants/one_model.c"
#include "../lessons/18-attention-variants/positions.c"
#include "../lessons/18-attention-variants/show.c"

#define LESSON "18-attention-variants"
#define DATA DATA_DIR "/lesson18"

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

// The lesson with the case's flags and --dump: its printed text and every dump must be
// PyTorch's exactly, and it must dump as many tensors as PyTorch did.
START_TEST(test_matches_pytorch) {
    const RecordedCase *c = recorded_case(DATA, _i);
    const char *tmp = make_temp_dir();
    const char *argv[MAX_CASE_WORDS + 4];
    int n = 0;
    for (; c->args[n] != NULL; n++) {
        argv[n] = c->args[n];
    }
    argv[n++] = "--dump";
    argv[n++] = tmp;
    argv[n] = NULL;
    RunResult r = run_program(lesson_binary(LESSON), argv);
    ck_assert_msg(r.status == 0 && r.err[0] == '\0', "%s: exit %d: %s", c->dir, r.status, r.err);
    const char *expected = read_text(path_join("%s/stdout.txt", c->reference));
    const char *missing = NULL;
    ck_assert_msg(strcmp(r.out, expected) == 0, "%s: the lesson does not print PyTorch's text: "
                  "%s", c->dir, lines_in_order(r.out, expected, &missing) ? "more lines"
                  : path_join("'%.200s' is missing", missing));
    int compared = compare_npy_dir(tmp, c->reference);
    ck_assert_int_eq(compared, count_entries(tmp));
    ck_assert_int_ge(compared, 2);
    remove_tree(tmp);
}
END_TEST

// --- central differences, in double ------------------------------------------------------

static double uniform(void) {   // a number in [-1, 1) from PyTorch's generator
    return 2.0 * (random32() & 0xFFFFFF) / 16777216.0 - 1.0;
}

static void fill(float *x, long n) {
    for (long i = 0; i < n; i++) {
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

// One sequence of AN tokens, AH query heads sharing AKV key/value heads of AD.
enum { AN = 7, AH = 4, AKV = 2, AD = 4, AR = AH / AKV };
enum { NQ = AN * AH * AD, NK = AN * AKV * AD };

typedef struct {
    const float *g;         // (AN, AH, AD) the loss's weights: L = sum of g * y
    const double *slopes;   // (AH,) ALiBi's, or NULL
    int window;
} AttentionContext;

// Softmax attention in double: q, k, v one after the other in qkv, L = sum of g * y.
static double softmax_attention_loss(const double *qkv, const void *context) {
    const AttentionContext *a = context;
    const double *q = qkv, *k = qkv + NQ, *v = qkv + NQ + NK;
    double loss = 0.0;
    for (int h = 0; h < AH; h++) {
        int g = h / AR;
        for (int t = 0; t < AN; t++) {
            double p[AN], max = -INFINITY, sum = 0.0;
            int first = t - a->window + 1 > 0 ? t - a->window + 1 : 0;
            for (int s = first; s <= t; s++) {
                double dot = 0.0;
                for (int d = 0; d < AD; d++) {
                    dot += q[(t * AH + h) * AD + d] * k[(s * AKV + g) * AD + d];
                }
                p[s] = dot / sqrt((double)AD) + (a->slopes ? a->slopes[h] * (s - t) : 0.0);
                max = fmax(max, p[s]);
            }
            for (int s = first; s <= t; s++) {
                p[s] = exp(p[s] - max);
                sum += p[s];
            }
            for (int d = 0; d < AD; d++) {
                double y = 0.0;
                for (int s = first; s <= t; s++) {
                    y += p[s] / sum * v[(s * AKV + g) * AD + d];
                }
                loss += a->g[(t * AH + h) * AD + d] * y;
            }
        }
    }
    return loss;
}

// One config for the pieces below: AH heads of AD over AKV, AN tokens, one layer.
static Config piece_config(Positions positions, int window, AttentionKind attention) {
    return (Config){.vocab_size = 8, .hidden_size = AH * AD, .intermediate_size = 8,
                    .num_hidden_layers = 1, .num_attention_heads = AH,
                    .num_key_value_heads = AKV, .head_dim = AD, .longest = AN,
                    .rope_theta = 10000, .rms_norm_eps = 1e-6f, .positions = positions,
                    .window = window, .attention = attention};
}

static LayerActivations random_qkv(const Config *c) {
    LayerActivations a = {0};
    a.q = floats(NQ);
    a.k = floats(NK);
    a.v = floats(NK);
    a.y = floats(NQ);
    if (c->attention == SOFTMAX) {
        a.att = floats(AH * AN * AN);
    } else {
        a.q_phi = floats(NQ);
        a.k_phi = floats(NK);
        a.norm = floats(AN * AH);
        a.numerator = floats(NQ);
    }
    fill(a.q, NQ);
    fill(a.k, NK);
    fill(a.v, NK);
    return a;
}

// The backward of softmax attention with a window and ALiBi's bias, each gradient against
// the central difference of the double forward.
static void check_softmax_backward(Positions positions, int window) {
    Config c = piece_config(positions, window, SOFTMAX);
    Model model = {.config = c, .slopes = floats(AH)};
    alibi_slopes(model.slopes, AH);
    LayerActivations a = random_qkv(&c);
    float k_t[AN * AD];
    attention_forward(&a, &model, 1, AN, k_t);
    BackwardScratch w = backward_scratch_init(&c, 1, AN);
    fill(w.d_y, NQ);
    float g[NQ];
    memcpy(g, w.d_y, sizeof g);
    attention_backward(&w, &a, &c, 1, AN);
    double qkv[NQ + 2 * NK];
    for (int i = 0; i < NQ + 2 * NK; i++) {
        qkv[i] = i < NQ ? a.q[i] : i < NQ + NK ? a.k[i - NQ] : a.v[i - NQ - NK];
    }
    double slopes[AH];
    for (int h = 0; h < AH; h++) {
        slopes[h] = model.slopes[h];
    }
    AttentionContext context = {g, positions == ALIBI ? slopes : NULL, window};
    for (int i = 0; i < NQ + 2 * NK; i++) {
        float got = i < NQ ? w.d_q[i] : i < NQ + NK ? w.d_k[i - NQ] : w.d_v[i - NQ - NK];
        assert_derivative(got, central(softmax_attention_loss, qkv, i, &context), "dq dk dv", i);
    }
    for (int h = 0; h < AH; h++) {   // a key the window left out has weight 0 exactly
        for (int t = 0; t < AN; t++) {
            for (int s = 0; s < AN; s++) {
                bool seen = s <= t && s > t - window;
                ck_assert(seen || a.att[(h * AN + t) * AN + s] == 0.0f);
            }
        }
    }
}

START_TEST(test_softmax_backward_with_window_and_alibi) {
    manual_seed(1);
    check_softmax_backward(ALIBI, NO_WINDOW);
    check_softmax_backward(ROPE, 3);   // (RoPE acts on q and k before: here, plain attention)
    check_softmax_backward(ALIBI, 2);
    check_softmax_backward(ALIBI, 1);  // each query sees itself only
}
END_TEST

// Linear attention in double: phi(x) = elu(x) + 1, the running sums, L = sum of g * y.
static double phi_of(double x) {
    return x > 0 ? x + 1.0 : exp(x);
}

static double linear_attention_loss(const double *qkv, const void *context) {
    const AttentionContext *a = context;
    const double *q = qkv, *k = qkv + NQ, *v = qkv + NQ + NK;
    double loss = 0.0;
    for (int h = 0; h < AH; h++) {
        int g = h / AR;
        double S[AD][AD] = {{0}}, z[AD] = {0};
        for (int t = 0; t < AN; t++) {
            double qf[AD], den = 0.0;
            for (int d = 0; d < AD; d++) {
                double kf = phi_of(k[(t * AKV + g) * AD + d]);
                for (int e = 0; e < AD; e++) {
                    S[d][e] += kf * v[(t * AKV + g) * AD + e];
                }
                z[d] += kf;
                qf[d] = phi_of(q[(t * AH + h) * AD + d]);
                den += qf[d] * z[d];
            }
            for (int e = 0; e < AD; e++) {
                double num = 0.0;
                for (int d = 0; d < AD; d++) {
                    num += qf[d] * S[d][e];
                }
                loss += a->g[(t * AH + h) * AD + e] * num / (den + 1e-6);
            }
        }
    }
    return loss;
}

START_TEST(test_linear_attention_backward) {
    manual_seed(2);
    Config c = piece_config(NOPE, NO_WINDOW, LINEAR);
    LayerActivations a = random_qkv(&c);
    float state[AD * AD + AD];
    linear_attention_forward(&a, &c, 1, AN, state);
    BackwardScratch w = backward_scratch_init(&c, 1, AN);
    fill(w.d_y, NQ);
    float g[NQ];
    memcpy(g, w.d_y, sizeof g);
    linear_attention_backward(&w, &a, &c, 1, AN);
    double qkv[NQ + 2 * NK];
    for (int i = 0; i < NQ + 2 * NK; i++) {
        qkv[i] = i < NQ ? a.q[i] : i < NQ + NK ? a.k[i - NQ] : a.v[i - NQ - NK];
    }
    AttentionContext context = {g, NULL, NO_WINDOW};
    for (int i = 0; i < NQ + 2 * NK; i++) {
        float got = i < NQ ? w.d_q[i] : i < NQ + NK ? w.d_k[i - NQ] : w.d_v[i - NQ - NK];
        assert_derivative(got, central(linear_attention_loss, qkv, i, &context), "dq dk dv", i);
    }
}
END_TEST

// The learned table: its row t gets the sum over the batch of d_x at position t, the rows
// past the sequence nothing.
START_TEST(test_learned_positions_backward) {
    enum { B = 3, N = 4, P = 7, C = 5 };
    manual_seed(3);
    float d_x[B * N * C], d_table[P * C];
    fill(d_x, B * N * C);
    for (int i = 0; i < P * C; i++) {
        d_table[i] = 99.0f;   // overwritten, every row
    }
    learned_positions_backward(d_table, d_x, B, N, P, C);
    for (int t = 0; t < P; t++) {
        for (int c = 0; c < C; c++) {
            double want = 0.0;
            for (int b = 0; t < N && b < B; b++) {
                want += d_x[(b * N + t) * C + c];
            }
            ck_assert_msg(fabs(d_table[t * C + c] - want) <= 1e-6, "row %d: %g, want %g", t,
                          (double)d_table[t * C + c], want);
        }
    }
}
END_TEST

// --- against autograd in double ------------------------------------------------------------

// The page's own softmax_attention and linear_attention, run by PyTorch in float64 under
// autograd on float32 inputs (gen_lesson18.py, autograd_double/): the lesson's float32
// forward and backward on the same inputs must meet them within rounding.
static const char *const DOUBLE_PIECES[] = {"softmax_alibi_window3", "softmax_all_keys", "linear"};

START_TEST(test_against_autograd_in_double) {
    const char *name = DOUBLE_PIECES[_i], *dir = DATA "/autograd_double";
    const Tensor *q = load_npy(path_join("%s/%s.q.npy", dir, name));   // (B, N, H, D)
    const Tensor *k = load_npy(path_join("%s/%s.k.npy", dir, name));   // (B, N, KV, D)
    int B = size(q, 0), N = size(q, 1), H = size(q, 2), D = size(q, 3), KV = size(k, 2);
    bool linear = strcmp(name, "linear") == 0;
    Config c = {.vocab_size = 8, .hidden_size = H * D, .intermediate_size = 8,
                .num_hidden_layers = 1, .num_attention_heads = H, .num_key_value_heads = KV,
                .head_dim = D, .longest = N, .rope_theta = 10000, .rms_norm_eps = 1e-6f,
                .positions = strcmp(name, "softmax_alibi_window3") == 0 ? ALIBI : NOPE,
                .window = strcmp(name, "softmax_alibi_window3") == 0 ? 3 : NO_WINDOW,
                .attention = linear ? LINEAR : SOFTMAX};
    Model model = {.config = c, .slopes = floats(H)};
    alibi_slopes(model.slopes, H);
    LayerActivations a = {0};
    a.q = load_npy(path_join("%s/%s.q.npy", dir, name))->data;
    a.k = load_npy(path_join("%s/%s.k.npy", dir, name))->data;
    a.v = load_npy(path_join("%s/%s.v.npy", dir, name))->data;
    a.y = floats((long)B * N * H * D);
    if (linear) {
        a.q_phi = floats((long)B * N * H * D);
        a.k_phi = floats((long)B * N * KV * D);
        a.norm = floats((long)B * N * H);
        a.numerator = floats((long)B * N * H * D);
        linear_attention_forward(&a, &c, B, N, floats((long)D * D + D));
    } else {
        a.att = floats((long)B * H * N * N);
        attention_forward(&a, &model, B, N, floats((long)N * D));
    }
    assert_close(tensor_from(q->shape, a.y), load_npy(path_join("%s/%s.y.npy", dir, name)),
                 1e-6f, 1e-5f, path_join("%s: y", name));
    BackwardScratch w = backward_scratch_init(&c, B, N);
    memcpy(w.d_y, load_npy(path_join("%s/%s.g.npy", dir, name))->data,
           (size_t)B * N * H * D * sizeof(float));
    if (linear) {
        linear_attention_backward(&w, &a, &c, B, N);
    } else {
        attention_backward(&w, &a, &c, B, N);
    }
    const float *got[3] = {w.d_q, w.d_k, w.d_v};
    const char *what[3] = {"dq", "dk", "dv"};
    for (int i = 0; i < 3; i++) {
        const Tensor *want = load_npy(path_join("%s/%s.%s.npy", dir, name, what[i]));
        assert_close(tensor_from(want->shape, got[i]), want, 1e-5f, 1e-4f,
                     path_join("%s: %s", name, what[i]));
    }
}
END_TEST

// --- ALiBi's slopes, by hand ---------------------------------------------------------------

START_TEST(test_alibi_slopes_by_hand) {
    float slopes[16];
    // powers of two: 2^(-8h/H), h = 1 .. H; exact in a float
    alibi_slopes(slopes, 1);
    ck_assert_float_eq(slopes[0], 1.0f / 256);
    alibi_slopes(slopes, 4);
    const float four[4] = {1.0f / 4, 1.0f / 16, 1.0f / 64, 1.0f / 256};
    assert_same_floats(slopes, four, 4, "4 heads");
    alibi_slopes(slopes, 8);   // the paper's example: 1/2, 1/4, ..., 1/256
    for (int h = 0; h < 8; h++) {
        ck_assert_float_eq(slopes[h], ldexpf(1.0f, -(h + 1)));
    }
    // not powers of two: the largest power of two's, then every other of the next one's
    alibi_slopes(slopes, 3);
    const float three[3] = {1.0f / 16, 1.0f / 256, 1.0f / 4};
    assert_same_floats(slopes, three, 3, "3 heads");
    alibi_slopes(slopes, 6);
    const float six[6] = {1.0f / 4, 1.0f / 16, 1.0f / 64, 1.0f / 256, 1.0f / 2, 1.0f / 8};
    assert_same_floats(slopes, six, 6, "6 heads");
    alibi_slopes(slopes, 12);   // 8's, then 16's 1st, 3rd, 5th, 7th: 2^-0.5, 2^-1.5, ...
    for (int h = 0; h < 8; h++) {
        ck_assert_float_eq(slopes[h], ldexpf(1.0f, -(h + 1)));
    }
    for (int h = 8; h < 12; h++) {
        ck_assert_float_eq(slopes[h], (float)pow(2.0, -0.5 - (h - 8)));
    }
    // ALiBi's bias: 0 on the query's own key, -slope per step back, -inf stays -inf
    float row[4] = {0.0f, 1.0f, -INFINITY, 2.0f};
    alibi_bias(row, 0.25f, 5, 2, 4);   // keys 2 .. 5 of query 5
    const float biased[4] = {-0.75f, 0.5f, -INFINITY, 2.0f};
    assert_same_floats(row, biased, 4, "alibi_bias");
}
END_TEST

// --- decoding -----------------------------------------------------------------------------

static Config small_model(Positions positions, int window, AttentionKind attention, int N) {
    return (Config){.vocab_size = 16, .hidden_size = 64, .intermediate_size = 32,
                    .num_hidden_layers = 2, .num_attention_heads = 4,
                    .num_key_value_heads = 2, .head_dim = 16, .longest = N,
                    .rope_theta = 10000, .rms_norm_eps = 1e-6f, .positions = positions,
                    .window = window, .attention = attention};
}

// A window of 3 decoded from a rolling buffer of 3 slots and from a cache of every key:
// the same keys in the same order, so the same bits at every position; and each slot holds
// the latest position of its residue. Against one forward of the whole sequence: rounding.
START_TEST(test_rolling_buffer_matches_a_full_cache) {
    enum { N = 11, W = 3 };
    const Positions kinds[3] = {ROPE, ALIBI, LEARNED};
    for (int k = 0; k < 3; k++) {
        Config c = small_model(kinds[k], W, SOFTMAX, N);
        manual_seed(20 + (uint64_t)k);
        Model model = model_init(&c);
        float ids[N];
        for (int t = 0; t < N; t++) {
            ids[t] = (float)((7 * t + 3 * k) % 16);
        }
        DecodeState rolling = decode_init(&c, W), full = decode_init(&c, N);
        Activations acts = activations_init(&c, 1, N);
        model_forward(&acts, &model, ids, 1, N);
        for (int t = 0; t < N; t++) {
            decode_token(&rolling, &model, (int)ids[t], t);
            decode_token(&full, &model, (int)ids[t], t);
            assert_same_floats(rolling.logits, full.logits, 16,
                               path_join("positions %d, token %d", (int)kinds[k], t));
            for (int i = 0; i < 16; i++) {
                ck_assert_msg(fabsf(rolling.logits[i] - acts.logits[t * 16 + i]) <= 1e-5f,
                              "token %d: %g against the forward's %g", t,
                              (double)rolling.logits[i], (double)acts.logits[t * 16 + i]);
            }
            for (int slot = 0; slot < W; slot++) {
                int latest = t - ((t - slot) % W + W) % W;
                ck_assert_int_eq(rolling.layers[1].position[slot], latest >= 0 ? latest : -1);
            }
        }
    }
}
END_TEST

// Linear attention's running sum and its parallel form (softmax's shape, phi(q).phi(k) in
// place of exp(q.k)) give the same outputs, to rounding.
START_TEST(test_linear_rnn_matches_its_parallel_form) {
    manual_seed(5);
    Config c = piece_config(ROPE, NO_WINDOW, LINEAR);
    LayerActivations a = random_qkv(&c);
    float state[AD * AD + AD], att[AH * AN * AN];
    linear_attention_forward(&a, &c, 1, AN, state);
    linear_weights(att, &a, &c, 0, AN);
    for (int h = 0; h < AH; h++) {
        for (int t = 0; t < AN; t++) {
            float sum = 0.0f;
            for (int s = 0; s < AN; s++) {
                float weight = att[(h * AN + t) * AN + s];
                ck_assert(s <= t || weight == 0.0f);
                sum += weight;
            }
            ck_assert_msg(fabsf(sum - 1.0f) <= 1e-5f, "row %d of head %d sums to %g", t, h,
                          (double)sum);
            for (int d = 0; d < AD; d++) {
                float y = 0.0f;
                for (int s = 0; s <= t; s++) {
                    y += att[(h * AN + t) * AN + s] * a.v[(s * AKV + h / AR) * AD + d];
                }
                float rnn = a.y[(t * AH + h) * AD + d];
                ck_assert_msg(fabsf(y - rnn) <= 1e-5f + 1e-5f * fabsf(rnn),
                              "y[%d][%d][%d]: running sum %g, parallel form %g", t, h, d,
                              (double)rnn, (double)y);
            }
        }
    }
}
END_TEST

// Decoding with linear attention takes each token's step in the same order as the training
// forward does at that position: the same logits, bit for bit (sizes whose vector blocks
// fall the same way one token at a time as for the whole sequence: D, C and F multiples of
// 16); and its state is the same size after every token.
START_TEST(test_linear_decoding_is_the_training_forward) {
    enum { N = 9 };
    Config c = small_model(ROPE, NO_WINDOW, LINEAR, N);
    manual_seed(6);
    Model model = model_init(&c);
    float ids[N] = {3, 12, 5, 9, 1, 14, 3, 12, 7};
    Activations acts = activations_init(&c, 1, N);
    model_forward(&acts, &model, ids, 1, N);
    DecodeState st = decode_init(&c, N);
    for (int t = 0; t < N; t++) {
        decode_token(&st, &model, (int)ids[t], t);
        assert_same_floats(st.logits, acts.logits + t * 16, 16, path_join("token %d", t));
    }
    ck_assert_ptr_null(st.layers[0].k);   // no keys kept: the state only
}
END_TEST

// --- bad flags and the budget -------------------------------------------------------------

static const BadFlags BAD[] = {
    {{"--window", "0", NULL}, "--window expects a whole number from 1 to 65536"},
    {{"--window", "4", NULL}, "--window: --experiment all trains its own variants"},
    {{"--experiment", "length", "--positions", "alibi", NULL},
     "--positions: --experiment length trains its own variants"},
    {{"--experiment", "window", "--attention", "linear", NULL},
     "--attention: --experiment window trains its own variants"},
    {{"--experiment", "none", "--attention", "linear", "--positions", "alibi", NULL},
     "--positions alibi adds to softmax's scores"},
    {{"--experiment", "none", "--attention", "linear", "--window", "4", NULL},
     "--window 4: linear attention's state sums every key"},
    {{"--experiment", "none", "--positions", "learned", "--seq", "34", NULL},
     "--keys 12: a sequence of 34 tokens holds 13 pairs"},
    {{"--seq", "10", NULL}, "--keys 12: a sequence of 40 tokens (this run's longest) holds 15"},
    {{"--dim", "12", "--heads", "4", NULL}, "head_dim 3 is odd"},
    {{"--seq", "7", NULL}, "--seq 7: recall's sequences are pairs of tokens"},
    {{"--seq", "2", NULL}, "--seq 2: recall's sequences are pairs of tokens, at least 4"},
    {{"--experiment", "everything", NULL}, "--experiment"},
    {{"--positions", "xpos", NULL}, "--positions"},
    {{"--attention", "sparse", NULL}, "--attention"},
    {{"--heads", "3", NULL}, "--heads 3 does not divide --dim 64"},
    {{"--steps", "0", NULL}, "--steps"},
    {{"--steps", "100000", NULL}, "ATTN_MAX_SECONDS="},
    {{"--experiment", "none", "--seq", "256", "--keys", "96", "--batch", "4096", NULL},
     "the attention weights (batch, heads, seq, seq) at the longest length (4096, 4, 256, 256)"},
};

START_TEST(test_bad_flags) {
    check_bad_flags(LESSON, "lesson-18", BAD, (int)(sizeof BAD / sizeof BAD[0]));
}
END_TEST

// --- what a run may take (common/lesson/budget.h; harness.h: add_budget_tests) -----------

// Refused by the budget before anything runs, in one line that names the flags, the budget
// and how to raise it (called with --dot, whose copies of step 1's activations are priced
// too). By memory: a refusal by time names other figures on a CPU without AVX-512 (the
// lesson prices its products by its kernels' speed).
static const BudgetRefusal REFUSED[] = {
    {{"--experiment", "none", "--seq", "128", "--keys", "48", "--batch", "512", NULL},
     "lesson-18: --seq 128 --keys 48 --batch 512 would hold about 2.3 GiB at once, more than "
     "the 512 MiB allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=2400", NULL},
    {{"--seq", "64", "--keys", "96", "--batch", "256", NULL},
     "lesson-18: --seq 64 --keys 96 --batch 256 would hold about 2.4 GiB at once, more than "
     "the 512 MiB allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=2500", NULL},
};

// Sizes where the tensors that grow with the flags are most of what a run holds, one for
// each experiment and for both kinds of attention of --experiment none: what a run holds
// is its prediction (make test runs the first, half a second; make test-long all of them).
static const SizedRun SIZED[] = {
    {{"--experiment", "none", "--seq", "32", "--keys", "12", "--batch", "64", "--steps", "2",
      NULL}},
    {{"--experiment", "none", "--attention", "linear", "--seq", "64", "--keys", "24",
      "--batch", "32", "--steps", "2", "--dump", "", NULL}},
    {{"--experiment", "length", "--seq", "16", "--keys", "24", "--batch", "48", "--steps", "2",
      NULL}},
    {{"--experiment", "window", "--seq", "32", "--keys", "24", "--batch", "32", "--steps", "2",
      "--dot", "", NULL}},
    {{"--experiment", "linear", "--batch", "64", "--steps", "2", "--dim", "96", "--heads", "6",
      "--kv-heads", "3", NULL}},
};

static const LessonBudget BUDGET = {
    LESSON, lesson_main, REFUSED, sizeof REFUSED / sizeof REFUSED[0], SIZED,
    sizeof SIZED / sizeof SIZED[0], NULL, 0,
};

// The printed pieces hold whatever they print: the widest tokens (an int's digits and sign
// after "k" or "v") in a sequence's text, and shades of weights past 1, Inf and NaN (a float
// past an int's range converted to int is undefined behaviour: -fsanitize=float-cast-overflow).
START_TEST(test_printed_pieces_fit_what_they_print) {
    Task task = {.keys = 100000, .values = 100000};
    ck_assert_str_eq(token_text(&task, -2147483647 - 1), "k-2147483648");
    ck_assert_str_eq(token_text(&task, 2147483647), "v2147383647");
    enum { N = 24 };
    float ids[N];
    for (int t = 0; t < N; t++) {
        ids[t] = t % 2 == 0 ? -2147483648.0f : 199999.0f;   // keys then values, the widest
    }
    const char *text = sequence_text(&task, ids, N);
    size_t expected = 0;
    for (int t = 0; t < N; t++) {
        expected += strlen(token_text(&task, (int)ids[t]));
    }
    int p = pairs(N);
    expected += (size_t)(N / 2 - 1) + (size_t)(2 * p < N ? 2 : 0);   // the gaps: " ", " | "
    ck_assert_uint_eq(strlen(text), expected);
    ck_assert(strstr(text, "k-2147483648v99999") == text);
    ck_assert_int_eq(shade(INFINITY), '@');
    ck_assert_int_eq(shade(3e38f), '@');
    ck_assert_int_eq(shade(1.0f), '@');
    ck_assert_int_eq(shade(NAN), ' ');
    ck_assert_int_eq(shade(0.5f), '+');
}
END_TEST

static Suite *lesson18_suite(void) {
    Suite *suite = suite_create("lesson18");
    TCase *recorded = new_tcase("pytorch");
    tcase_set_timeout(recorded, 120);
    tcase_add_loop_test(recorded, test_matches_pytorch, 0, recorded_case_count(DATA));
    suite_add_tcase(suite, recorded);
    TCase *pieces = new_tcase("pieces");
    tcase_add_test(pieces, test_softmax_backward_with_window_and_alibi);
    tcase_add_test(pieces, test_linear_attention_backward);
    tcase_add_test(pieces, test_learned_positions_backward);
    tcase_add_loop_test(pieces, test_against_autograd_in_double, 0,
                        (int)(sizeof DOUBLE_PIECES / sizeof DOUBLE_PIECES[0]));
    tcase_add_test(pieces, test_alibi_slopes_by_hand);
    tcase_add_test(pieces, test_printed_pieces_fit_what_they_print);
    tcase_add_test(pieces, test_rolling_buffer_matches_a_full_cache);
    tcase_add_test(pieces, test_linear_rnn_matches_its_parallel_form);
    tcase_add_test(pieces, test_linear_decoding_is_the_training_forward);
    suite_add_tcase(suite, pieces);
    TCase *runs = new_tcase("runs");
    tcase_set_timeout(runs, 60);
    tcase_add_test(runs, test_bad_flags);
    suite_add_tcase(suite, runs);
    add_budget_tests(suite, &BUDGET);
    return suite;
}

int main(void) { return run_suite(lesson18_suite()); }
