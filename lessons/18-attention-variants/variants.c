// Lesson 18: attention's variants as experiments - positions and length, sliding windows,
// linear attention, each trained on lesson 16's recall task and measured in seconds.
//
// WHAT THIS ADDS
//   Lesson 16 trained one model, Llama's: RoPE, causal softmax attention over every key
//   before. Models in use differ in exactly those choices, and papers make claims about them
//   that a reader can only take on trust. Here each is a switch of lesson 16's model, its
//   forward and its backward exact against PyTorch's autograd:
//     --positions rope|alibi|sinusoidal|learned|none   where a token is (positions.c)
//     --window W      each query sees its last W keys: Mistral's sliding window (attend.c)
//     --attention softmax|linear   exp(q.k) or phi(q).phi(k), phi = elu + 1: linear
//                     attention, an RNN with a state of fixed size (attend.c)
//   and three experiments train small models with them and put the claims to the test:
//     length  train each position scheme at N tokens, ask at N, 2N and 4N ("train short,
//             test long", ALiBi's paper's title)
//     window  recall by the distance from the question back to its key, with windows
//     linear  softmax against linear attention as the pairs to remember grow
//   Every number is PyTorch's to the bit (PyTorch 1.13, reference BLAS, one thread, as the
//   page's script runs it): the same draws, batches and float operations in the same order.
//
// THE MATH (the variants; lesson 16 has the model and its training)
//   rope:    q_t, k_s turned by angles t theta_i, s theta_i: q_t . k_s depends on t - s
//   alibi:   score_ts = q_t . k_s / sqrt(D) + m_h (s - t),  m_h = 2^(-8h/H), h = 1..H
//   sinusoidal, learned: x_t = embed_tokens[id_t] + PE[t]   (a fixed table, or a trained one)
//   window:  query t sees keys t - W + 1 .. t (softmax's -inf before them, as after t)
//   linear:  y_t = phi(q_t)^T S_t / (phi(q_t)^T z_t + eps),  S_t = S_t-1 + phi(k_t) v_t^T,
//            z_t = z_t-1 + phi(k_t),  phi(x) = elu(x) + 1
//
// THE PYTORCH IT MIRRORS (docs/18-attention-variants.md has the whole script)
//   for each model an experiment trains:
//       torch.manual_seed(seed); model = TinyLlama(variant); opt = torch.optim.AdamW(...)
//       for step in range(1, steps + 1): lesson 16's step on make_batch(batch, n)
//       then its answers on 32 fresh batches, at each length it is asked at
//
// RUN IT
//   make lesson-18                                 part 1 and the three experiments
//   make lesson-18 ARGS="--experiment length"      one experiment (window, linear)
//   make lesson-18 ARGS="--experiment none --positions alibi --window 4"   one model, shown
//   flags: --experiment --positions --window --attention --layers --dim --heads --kv-heads
//          --hidden --keys --values --seq --batch --steps --warmup --lr --weight-decay --clip
//          --seed --dump DIR --dot FILE --heatmap --help
//
// WHAT TO LOOK FOR
//   - Part 1: the variants start from the same weights and batch; their first losses and
//     gradients differ only by what each does with positions and keys.
//   - Each table, and the rows of weights under it: where each model looks, and so why it
//     answers or fails.
//
// Size letters: B batch, N tokens a sequence (--seq), C hidden_size (--dim), H query heads,
// KV key/value heads, D head_dim, NV vocabulary (--keys + --values), W the window. Index
// letters: b batch row, t query position, s key position, h head.

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adamw.h"
#include "attend.h"
#include "attention.h"
#include "kernels.h"
#include "layers.h"
#include "model.h"
#include "positions.h"
#include "show.h"
#include "variants.h"

enum { EVAL_BATCHES = 32 };   // fresh batches each trained model answers

static void record_graph(const Run *run, const Batch *batch, const Lesson *lesson);

// --- the task: recall at any length ----------------------------------------------------------

// order = the indices 0 .. n-1 sorted by their keys, stably, as torch.sort(keys, stable=True)
// .indices: lesson 16's merge sort (runs of 1, 2, 4, ... merged pairwise, the left run's
// index first when two keys are equal); spare holds n floats.
static void sort_indices(float *order, const float *key, float *spare, int n) {
    float *from = order, *to = spare;
    for (int i = 0; i < n; i++) {
        order[i] = (float)i;
    }
    for (int width = 1; width < n; width *= 2) {
        for (int left = 0; left < n; left += 2 * width) {
            int mid = left + width < n ? left + width : n;
            int end = left + 2 * width < n ? left + 2 * width : n;
            int i = left, j = mid, k = left;
            while (i < mid && j < end) {
                to[k++] = key[(int)from[j]] < key[(int)from[i]] ? from[j++] : from[i++];
            }
            while (i < mid) {
                to[k++] = from[i++];
            }
            while (j < end) {
                to[k++] = from[j++];
            }
        }
        float *merged = to;
        to = from;
        from = merged;
    }
    if (from != order) {
        memcpy(order, from, (size_t)n * sizeof(float));
    }
}

// pairs(N) distinct keys (a random order of the key tokens, its first ones) each followed by
// a value, then questions(N) of those keys again, each followed by its value: the label at
// the question's key. Drawn as the page's make_batch draws: rand (B, keys), then the values,
// then which pairs are asked.
Batch make_batch(const Task *task, int B, int N) {
    int p = pairs(N), q = questions(N), K = task->keys;
    Batch batch = {zeros(shape2(B, N)), full(shape2(B, N), IGNORE_INDEX)};
    batch.input_ids->dtype = batch.labels->dtype = DTYPE_INT64;
    float *ids = batch.input_ids->data, *labels = batch.labels->data;
    size_t mark = arena_mark();
    const Tensor *draws = rand_tensor(shape2(B, K));                             // (B, keys)
    Tensor *order = zeros(shape2(B, K));                                         // (B, keys)
    float *spare = arena_alloc((size_t)K, sizeof(float));
    for (int b = 0; b < B; b++) {
        sort_indices(&order->data[(long)b * K], &draws->data[(long)b * K], spare, K);
    }
    const Tensor *values = randint(K, K + task->values, shape2(B, p));           // (B, p)
    const Tensor *asked = randint(0, p, shape2(B, q));                           // (B, q)
    for (int b = 0; b < B; b++) {
        float *ids_b = ids + (long)b * N, *labels_b = labels + (long)b * N;
        for (int i = 0; i < p; i++) {
            ids_b[2 * i] = order->data[(long)b * K + i];
            ids_b[2 * i + 1] = values->data[(long)b * p + i];
        }
        for (int i = 0; i < q; i++) {
            int pair = (int)asked->data[(long)b * q + i], t = 2 * p + 2 * i;
            ids_b[t] = ids_b[2 * pair];
            ids_b[t + 1] = ids_b[2 * pair + 1];
            labels_b[t] = ids_b[t + 1];
        }
    }
    arena_release(mark);
    return batch;
}

// --- one model: drawn, trained, scored ----------------------------------------------------------

Run run_init(const Settings *s, const Config *config, int N) {
    manual_seed(s->seed);
    Run run = {.s = s, .N = N};
    run.model = model_init(config);
    run.acts = activations_init(config, s->batch, N);
    run.grads = grads_init(&run.model);
    run.scratch = backward_scratch_init(config, s->batch, N);
    run.opt = adamw_init(&run.model, &run.grads, s->beta1, s->beta2, s->eps, s->weight_decay);
    run.loss = floats(s->steps);
    run.accuracy = floats(s->steps);
    run.grad_norm = floats(s->steps);
    return run;
}

// The token a row of logits gives the highest score (the first on a tie).
int argmax(const float *logits, int NV) {
    int best = 0;
    for (int i = 1; i < NV; i++) {
        best = logits[i] > logits[best] ? i : best;
    }
    return best;
}

// How many asked rows have the label as their argmax; adds the rows asked to *asked.
static long answers_right(long *asked, const float *logits, const Tensor *labels, int NV) {
    long right = 0;
    for (long r = 0; r < numel(labels); r++) {
        int label = (int)labels->data[r];
        if (label != IGNORE_INDEX) {
            right += argmax(logits + r * NV, NV) == label;
            *asked += 1;
        }
    }
    return right;
}

// The batch's forward, F.cross_entropy, loss.backward(): every .grad filled in.
float forward_backward(Run *run, const Batch *batch, float *accuracy) {
    const Config *c = &run->model.config;
    int asked;
    model_forward(&run->acts, &run->model, batch->input_ids->data, run->s->batch, run->N);
    float loss = cross_entropy_forward(run->acts.log_probs, &asked, run->acts.logits,
                                       batch->labels, c->vocab_size);
    long rows = 0;
    *accuracy = (float)answers_right(&rows, run->acts.logits, batch->labels, c->vocab_size) /
                (float)rows;
    model_backward(&run->grads, &run->scratch, &run->model, &run->acts, batch->input_ids,
                   batch->labels, asked);
    return loss;
}

// Lesson 16's step n (from 1): a fresh batch, its forward and backward, clip_grad_norm_, the
// learning rate of step n, AdamW.
float train_step(Run *run, int n, Batch *batch) {
    const Settings *s = run->s;
    *batch = make_batch(&s->task, s->batch, run->N);
    run->loss[n - 1] = forward_backward(run, batch, &run->accuracy[n - 1]);
    run->grad_norm[n - 1] = clip_grad_norm(&run->opt, s->clip > 0 ? (float)s->clip : INFINITY);
    adamw_step(&run->opt, learning_rate(n, s->steps, s->warmup, s->lr));
    return run->loss[n - 1];
}

void train(Run *run) {
    for (int n = 1; n <= run->s->steps; n++) {
        size_t mark = arena_mark();
        Batch batch;
        train_step(run, n, &batch);
        arena_release(mark);
    }
}

// EVAL_BATCHES fresh batches of N tokens, scored as training scores them (one forward of each
// whole, true sequence; the argmax at each question), and each question's distance back to
// the key it asks, for the window experiment's table.
Score score(const Settings *s, const Model *model, int N, const int *edges) {
    const Config *c = &model->config;
    Score sc = {0};
    memcpy(sc.edges, edges, sizeof sc.edges);
    size_t mark = arena_mark();
    Activations acts = activations_init(c, s->batch, N);
    for (int i = 0; i < EVAL_BATCHES; i++) {
        size_t batch_mark = arena_mark();
        Batch batch = make_batch(&s->task, s->batch, N);
        model_forward(&acts, model, batch.input_ids->data, s->batch, N);
        sc.right += answers_right(&sc.asked, acts.logits, batch.labels, c->vocab_size);
        for (int b = 0; b < s->batch; b++) {
            const float *ids = batch.input_ids->data + (long)b * N;
            for (int t = 2 * pairs(N); t < N; t += 2) {   // the questions
                long r = (long)b * N + t;
                int distance = t - (answer_position(ids, N, t) - 1), bin = 0;
                while (bin < 3 && distance > edges[bin]) {
                    bin += 1;
                }
                sc.right_by[bin] += argmax(acts.logits + r * c->vocab_size, c->vocab_size) ==
                                    (int)batch.labels->data[r];
                sc.asked_by[bin] += 1;
            }
        }
        arena_release(batch_mark);
    }
    arena_release(mark);
    return sc;
}

// --- what the parts print ------------------------------------------------------------------------

void part(int number, const char *what, const char *flags) {
    printf("\n-- part %d: %s (%s) --\n", number, what, flags);
}

static const char *const POSITION_NAMES[] = {"rope", "alibi", "sinusoidal", "learned", "none"};

// "softmax attention, positions rope, window 4"
const char *variant_name(const Config *c, int N) {
    char *text = arena_alloc(80, 1);
    int used = snprintf(text, 80, "%s attention, positions %s",
                        c->attention == SOFTMAX ? "softmax" : "linear",
                        POSITION_NAMES[c->positions]);
    if (c->window < N) {
        snprintf(text + used, 80 - (size_t)used, ", window %d", c->window);
    }
    return text;
}

static void print_setup(const Settings *s) {
    const Config *c = &s->config;
    const Task *task = &s->task;
    int NV = c->vocab_size;
    printf("lesson 18: attention's variants on lesson 16's model, trained on recall and "
           "measured\n");
    printf("the model: %d layer%s, hidden_size %d, %d heads of %d (%d key/value heads), "
           "intermediate_size %d,\n  each trained %d steps on batches of %d: AdamW, lr %g "
           "(warmup %d, cosine to %g), clip %g\n", c->num_hidden_layers,
           c->num_hidden_layers > 1 ? "s" : "", c->hidden_size,
           c->num_attention_heads, c->head_dim, c->num_key_value_heads, c->intermediate_size,
           s->steps, s->batch, s->lr, s->warmup, s->lr * 0.1, s->clip);
    printf("the task: recall; keys %s..%s are tokens 0..%d, values %s..%s are %d..%d;\n  n "
           "tokens hold n/2 - n/8 pairs (a key, its value), then n/8 questions (a key again, "
           "its value)\n", token_text(task, 0), token_text(task, task->keys - 1), task->keys - 1,
           token_text(task, task->keys), token_text(task, NV - 1), task->keys, NV - 1);
}

// "loss at steps 1-3: 3.491620 3.412345 3.301234; at step 400: 0.012345"
static const char *losses_line(const Run *run) {
    int steps = run->s->steps;
    char *text = arena_alloc(160, 1);
    int used = snprintf(text, 160, "loss at steps 1-%d:", steps < 3 ? steps : 3);
    for (int i = 0; i < 3 && i < steps; i++) {
        used += snprintf(text + used, 160 - (size_t)used, " %.6f", (double)run->loss[i]);
    }
    snprintf(text + used, 160 - (size_t)used, "; at step %d: %.6f", steps,
             (double)run->loss[steps - 1]);
    return text;
}

static void print_percent(long right, long asked, int width) {
    if (asked == 0) {
        printf("%*s", width, "-");
    } else {
        printf("%*.2f", width, 100.0 * (double)right / (double)asked);
    }
}

// --- part 1: each variant, one step ----------------------------------------------------------

enum { VARIANTS = 8 };

// The variants part 1 runs: each position scheme, a window, linear attention with and
// without RoPE.
static Config variant_config(const Settings *s, int i) {
    Config c = s->config;
    const Positions positions[VARIANTS] = {ROPE, ALIBI, SINUSOIDAL, LEARNED, NOPE, ROPE,
                                           ROPE, NOPE};
    c.positions = positions[i];
    c.window = i == 5 ? 4 : NO_WINDOW;
    c.attention = i >= 6 ? LINEAR : SOFTMAX;
    c.longest = s->seq;
    return c;
}

// ALiBi's slopes of H heads (the first 8 of them), and the rule that made them.
static void print_slopes(const char *what, int H) {
    float *slopes = floats(H);
    alibi_slopes(slopes, H);
    int closest = 1;
    while (closest * 2 <= H) {
        closest *= 2;
    }
    printf("%s %d heads", what, H);
    if (closest == H) {
        printf(", 2^(-8h/%d), h = 1..%d:", H, H);
    } else {
        printf(", %d's then every other of %d's:", closest, 2 * closest);
    }
    for (int h = 0; h < H && h < 8; h++) {
        printf(" %g", (double)slopes[h]);
    }
    printf("%s\n", H > 8 ? " ..." : "");
}

// Each variant from the same weights and the same batch: its loss, and what loss.backward()
// leaves (before any clipping): every .grad's norm together, and layer 0's q, k and v
// projections' (the gradients that came back through the variant's attention).
static void part1_variants(const Settings *s, float *losses, float *norms, const Lesson *lesson) {
    part(1, "each variant's forward and backward: one step on one batch", "--seed changes it");
    printf("torch.manual_seed(%llu); the model (the same weights for every variant); "
           "make_batch(%d, %d):\n", (unsigned long long)s->seed, s->batch, s->seq);
    printf("%-44s %9s %9s   |grad| of layer 0's q, k, v_proj\n", "variant", "loss", "|grad|");
    for (int i = 0; i < VARIANTS; i++) {
        size_t mark = arena_mark();
        Config c = variant_config(s, i);
        Run run = run_init(s, &c, s->seq);
        Batch batch = make_batch(&s->task, s->batch, s->seq);
        float accuracy;
        losses[i] = forward_backward(&run, &batch, &accuracy);
        float each[MAX_PARAMS];
        for (int p = 0; p < run.opt.n_params; p++) {
            each[p] = norm_of(run.opt.params[p].grad, run.opt.params[p].numel);
        }
        norms[4 * i] = norm_of(each, run.opt.n_params);   // what clip_grad_norm_ measures
        for (int p = 1; p <= 3; p++) {                     // layers.0's q, k, v_proj
            norms[4 * i + p] = each[p];
        }
        if (i == 0) {
            record_graph(&run, &batch, lesson);   // --dot: the flags' model, the first variant
        }
        printf("%-44s %9.6f %9.6f   %.6f %.6f %.6f\n", variant_name(&c, s->seq),
               (double)losses[i], (double)norms[4 * i], (double)norms[4 * i + 1],
               (double)norms[4 * i + 2], (double)norms[4 * i + 3]);
        arena_release(mark);
    }
    int H = s->config.num_attention_heads;
    print_slopes("ALiBi's slopes for", H);
    if ((H & (H - 1)) == 0) {   // a power of two: show the rule for the others too
        print_slopes("  and for", 6);
    }
}

// --- the experiments: which models each trains ---------------------------------------------------

enum { MAX_TRIALS = 6 };

typedef struct {
    const char *label;   // its row in the table
    Config config;
    int N;               // the length it trains at
} Trial;

// Each position scheme, trained at N, made for 4N (the learned table has 4N rows, of which
// training reaches N).
static int length_trials(Trial *trials, const Settings *s) {
    for (int i = 0; i < 5; i++) {
        trials[i] = (Trial){POSITION_NAMES[i], s->config, s->seq};
        trials[i].config.positions = (Positions)i;
        trials[i].config.longest = 4 * s->seq;
    }
    return 5;
}

// At 2N tokens: --layers layers with every key, the same with a window of N/2, one layer.
static int window_trials(Trial *trials, const Settings *s) {
    int n = 2 * s->seq, L = s->config.num_hidden_layers;
    for (int i = 0; i < 3; i++) {
        trials[i] = (Trial){NULL, s->config, n};
        trials[i].config.longest = n;
        trials[i].config.num_hidden_layers = i == 2 ? 1 : L;
        trials[i].config.window = i == 1 ? s->seq / 2 : NO_WINDOW;
    }
    trials[0].label = L > 1 ? "2 layers, all keys" : "1 layer, all keys";
    trials[1].label = L > 1 ? "2 layers, W = " : "1 layer, W = ";
    trials[2].label = "1 layer, all keys";
    if (L != 2) {   // say how many
        for (int i = 0; i < 2; i++) {
            char *label = arena_alloc(40, 1);
            snprintf(label, 40, "%d layer%s, %s", L, L > 1 ? "s" : "",
                     i == 0 ? "all keys" : "W = ");
            trials[i].label = label;
        }
    }
    char *label = arena_alloc(40, 1);
    snprintf(label, 40, "%s%d", trials[1].label, s->seq / 2);
    trials[1].label = label;
    return L > 1 ? 3 : 2;
}

// Softmax attention, then linear attention above a first softmax layer (a hybrid: the
// lookup is linear attention's; the first layer sees every key, so its cache still grows,
// where Based and RecurrentGemma keep their softmax attention in a window), each at N, 2N
// and 4N.
static int linear_trials(Trial *trials, const Settings *s) {
    for (int i = 0; i < 6; i++) {
        int n = s->seq << (i % 3);
        trials[i] = (Trial){i < 3 ? "softmax" : "linear", s->config, n};
        trials[i].config.attention = i < 3 ? SOFTMAX : LINEAR;
        trials[i].config.softmax_layers = s->config.num_hidden_layers > 1 ? 1 : 0;
        trials[i].config.longest = n;
    }
    return 6;
}

// Train a trial, keep every loss in losses (steps,).
static Run train_trial(const Settings *s, const Trial *trial, float *losses) {
    Run run = run_init(s, &trial->config, trial->N);
    train(&run);
    memcpy(losses, run.loss, (size_t)s->steps * sizeof(float));
    return run;
}

// The last question of one sequence `ids` of n tokens: each head's weights in the last layer
// of `model`, as shades, into rows[h] (n + 1 chars each). Linear attention's weights are its
// parallel form's.
static void question_rows(char **rows, const Model *model, const float *ids, int n) {
    const Config *c = &model->config;
    int H = c->num_attention_heads, L = c->num_hidden_layers, t = n - 2;
    size_t mark = arena_mark();
    Activations acts = activations_init(c, 1, n);
    model_forward(&acts, model, ids, 1, n);
    float *att = acts.layers[L - 1].att;
    if (layer_attention(c, L - 1) == LINEAR) {
        att = floats((long)H * n * n);
        linear_weights(att, &acts.layers[L - 1], c, 0, n);
    }
    for (int h = 0; h < H; h++) {
        memcpy(rows[h], shades(att + ((long)h * n + t) * n, t + 1), (size_t)t + 2);
    }
    arena_release(mark);
}

// Room for the rows of H heads of n keys, and a fresh sequence of n tokens drawn (the one
// the rows look at) whose answer's position goes to *answer.
static char **row_buffers(int H, int n) {
    char **rows = arena_alloc((size_t)H, sizeof(char *));
    for (int h = 0; h < H; h++) {
        rows[h] = arena_alloc((size_t)n + 1, 1);
    }
    return rows;
}

static void print_rows(const char *label, char **rows, int H, int answer) {
    for (int h = 0; h < H; h++) {
        printf("%-21s head %d |%s|\n", h == 0 ? label : "", h, rows[h]);
    }
    printf("%*s^\n", 30 + answer, "");
}

static void print_rows_key(int n) {
    printf("behind them: one fresh sequence of %d tokens, its last question's weights in the "
           "last layer,\n  head by head (^ marks the value that answers it; shades %s for "
           "ninths of (0, 1])\n", n, SHADES_SPACED);
}

// --- part 2: train short, test long ------------------------------------------------------------

static void experiment_length(const Settings *s, float *losses, float *accuracy) {
    part(2, "train short, test long: each position scheme", "--experiment length runs it alone");
    Trial trials[MAX_TRIALS];
    int count = length_trials(trials, s), N = s->seq, H = s->config.num_attention_heads;
    int lengths[3] = {N, 2 * N, 4 * N}, edges[4] = {N, N, N, N}, answers[MAX_TRIALS];
    printf("each trained at %d tokens (%d pairs), then asked at %d, %d and %d tokens (%d, %d and "
           "%d pairs)\n", N, pairs(N), N, 2 * N, 4 * N, pairs(N), pairs(2 * N), pairs(4 * N));
    Score table[MAX_TRIALS][3];
    char **rows[MAX_TRIALS];
    for (int i = 0; i < count; i++) {
        rows[i] = row_buffers(H, 4 * N);
        size_t mark = arena_mark();
        Run run = train_trial(s, &trials[i], losses + (long)i * s->steps);
        printf("  %-11s %s\n", trials[i].label, losses_line(&run));
        for (int j = 0; j < 3; j++) {
            table[i][j] = score(s, &run.model, lengths[j], edges);
            accuracy[3 * i + j] = (float)table[i][j].right / (float)table[i][j].asked;
        }
        Batch example = make_batch(&s->task, 1, 4 * N);
        question_rows(rows[i], &run.model, example.input_ids->data, 4 * N);
        answers[i] = answer_position(example.input_ids->data, 4 * N, 4 * N - 2);
        arena_release(mark);
    }
    printf("answers right, in %%, on %d fresh batches of %d at each length:\n", EVAL_BATCHES,
           s->batch);
    printf("%-13s", "positions");
    for (int j = 0; j < 3; j++) {
        printf("%5d tokens", lengths[j]);
    }
    printf("\n");
    for (int i = 0; i < count; i++) {
        printf("%-13s", trials[i].label);
        for (int j = 0; j < 3; j++) {
            print_percent(table[i][j].right, table[i][j].asked, 12);
        }
        printf("\n");
    }
    print_rows_key(4 * N);
    for (int i = 0; i < count; i++) {
        print_rows(trials[i].label, rows[i], H, answers[i]);
    }
}

// --- part 3: sliding windows -------------------------------------------------------------------

enum { WINDOW_ROWS = 6 };

static void experiment_window(const Settings *s, float *losses, float *accuracy) {
    part(3, "sliding windows: recall against the distance to the key", "--experiment window");
    Trial trials[MAX_TRIALS];
    int count = window_trials(trials, s), N = s->seq, n = 2 * N;
    int H = s->config.num_attention_heads, answers[WINDOW_ROWS], rows_made = 0;
    int edges[4] = {N / 4, N / 2, N, n}, asked_with[3] = {N, N / 2, N / 4};
    printf("trained and asked at %d tokens (%d pairs, %d questions); W: each query sees its last "
           "W keys;\n  \"asked with W\": the model trained with every key, a window put on it "
           "afterwards\n", n, pairs(n), questions(n));
    Score table[WINDOW_ROWS];
    const char *labels[WINDOW_ROWS];
    char **rows[WINDOW_ROWS];
    for (int r = 0; r < WINDOW_ROWS; r++) {
        rows[r] = row_buffers(H, n);
    }
    for (int i = 0; i < count; i++) {
        size_t mark = arena_mark();
        Run run = train_trial(s, &trials[i], losses + (long)i * s->steps);
        printf("  %-18s %s\n", trials[i].label, losses_line(&run));
        Model asked[4] = {run.model, run.model, run.model, run.model};
        int windows = i == 0 ? 4 : 1;   // the first model is asked again with three windows
        for (int j = 1; j < windows; j++) {
            asked[j].config.window = asked_with[j - 1];
        }
        for (int j = 0; j < windows; j++) {
            table[rows_made + j] = score(s, &asked[j], n, edges);
        }
        Batch example = make_batch(&s->task, 1, n);
        for (int j = 0; j < windows; j++) {
            question_rows(rows[rows_made + j], &asked[j], example.input_ids->data, n);
            answers[rows_made + j] = answer_position(example.input_ids->data, n, n - 2);
        }
        arena_release(mark);
        for (int j = 0; j < windows; j++) {   // the labels outlive the run
            char *label = arena_alloc(40, 1);
            if (j == 0) {
                snprintf(label, 40, "%s", trials[i].label);
            } else {
                snprintf(label, 40, "  asked with W = %d", asked_with[j - 1]);
            }
            labels[rows_made + j] = label;
        }
        rows_made += windows;
    }
    for (int r = 0; r < rows_made; r++) {
        for (int j = 0; j < 4; j++) {
            accuracy[4 * r + j] = table[r].asked_by[j] == 0 ? -1.0f :
                                  (float)table[r].right_by[j] / (float)table[r].asked_by[j];
        }
    }
    printf("answers right, in %%, by the distance from the question back to its key:\n");
    printf("%-20s", "");
    for (int j = 0; j < 4; j++) {
        char range[24];
        snprintf(range, sizeof range, "%d-%d", j == 0 ? 1 : edges[j - 1] + 1, edges[j]);
        printf("%10s", range);
    }
    printf("\n");
    for (int r = 0; r < rows_made; r++) {
        printf("%-20s", labels[r]);
        for (int j = 0; j < 4; j++) {
            print_percent(table[r].right_by[j], table[r].asked_by[j], 10);
        }
        printf("\n");
    }
    print_rows_key(n);
    for (int r = 0; r < rows_made; r++) {
        print_rows(labels[r], rows[r], H, answers[r]);
    }
}

// --- part 4: linear attention as the pairs grow -------------------------------------------------

static void experiment_linear(const Settings *s, float *losses, float *accuracy) {
    part(4, "linear attention against softmax as the pairs grow", "--experiment linear");
    Trial trials[MAX_TRIALS];
    int count = linear_trials(trials, s), N = s->seq, H = s->config.num_attention_heads;
    int KV = s->config.num_key_value_heads, D = s->config.head_dim, answers[MAX_TRIALS];
    int edges[4] = {4 * N, 4 * N, 4 * N, 4 * N};
    printf("each trained and asked at %d, %d and %d tokens (%d, %d and %d pairs), positions rope;"
           "\n  linear: %s\n", N, 2 * N, 4 * N, pairs(N), pairs(2 * N), pairs(4 * N),
           s->config.num_hidden_layers > 1 ? "layer 0 softmax attention, the layers above it "
           "linear attention" : "linear attention in its one layer");
    Score table[MAX_TRIALS];
    char **rows[MAX_TRIALS];
    for (int i = 0; i < count; i++) {
        rows[i] = row_buffers(H, trials[i].N);
        size_t mark = arena_mark();
        Run run = train_trial(s, &trials[i], losses + (long)i * s->steps);
        printf("  %-8s %3d tokens  %s\n", trials[i].label, trials[i].N, losses_line(&run));
        table[i] = score(s, &run.model, trials[i].N, edges);
        accuracy[i] = (float)table[i].right / (float)table[i].asked;
        Batch example = make_batch(&s->task, 1, trials[i].N);
        question_rows(rows[i], &run.model, example.input_ids->data, trials[i].N);
        answers[i] = answer_position(example.input_ids->data, trials[i].N, trials[i].N - 2);
        arena_release(mark);
    }
    printf("answers right, in %%:\n%-10s", "");
    for (int j = 0; j < 3; j++) {
        char label[24];
        snprintf(label, sizeof label, "%d pairs", pairs(trials[j].N));
        printf("%12s", label);
    }
    printf("\n");
    for (int i = 0; i < count; i += 3) {
        printf("%-10s", trials[i].label);
        for (int j = 0; j < 3; j++) {
            print_percent(table[i + j].right, table[i + j].asked, 12);
        }
        printf("\n");
    }
    printf("what decoding keeps a layer: softmax's cache, 2 x %d x %d = %d floats a token (%d at "
           "%d tokens);\n  linear's state, %d x (%d x %d + %d) = %d floats at any length\n", KV,
           D, 2 * KV * D, 2 * KV * D * 4 * N, 4 * N, KV, D, D, D, KV * (D * D + D));
    print_rows_key(4 * N);
    for (int i = 2; i < count; i += 3) {
        print_rows(trials[i].label, rows[i], H, answers[i]);
    }
}

// --- the lesson ------------------------------------------------------------------------------

static Cost lesson_cost(const Settings *s, const Lesson *lesson);   // appendix B

int main(int argc, char **argv) {
    Lesson lesson;
    Settings s = read_flags(&lesson, argc, argv);   // exit 2 on a bad flag
    kernels_choose();
    check_budget(&lesson, lesson_cost(&s, &lesson));
    lesson_start(&lesson);
    trace_pause(true);                              // the runs' draws: no one's dumps
    print_setup(&s);
    if (s.experiment == NONE) {
        run_none(&s, &lesson);
        return lesson_finish(&lesson);
    }
    int steps = s.steps, N = s.seq;
    float *variant_losses = floats(VARIANTS), *variant_norms = floats(4 * VARIANTS);
    float *length_losses = floats(5L * steps), *length_accuracy = floats(15);
    float *window_losses = floats(3L * steps), *window_accuracy = floats(4 * WINDOW_ROWS);
    float *linear_losses = floats(6L * steps), *linear_accuracy = floats(6);
    Trial trials[MAX_TRIALS];
    int windows = window_trials(trials, &s);
    if (s.experiment == ALL) {
        part1_variants(&s, variant_losses, variant_norms, &lesson);
    }
    if (s.experiment == ALL || s.experiment == LENGTH) {
        experiment_length(&s, length_losses, length_accuracy);
    }
    if (s.experiment == ALL || s.experiment == WINDOW) {
        experiment_window(&s, window_losses, window_accuracy);
    }
    if (s.experiment == ALL || s.experiment == LINEAR_EXPERIMENT) {
        experiment_linear(&s, linear_losses, linear_accuracy);
    }
    if (lesson.dot_file != NULL && s.experiment != ALL) {   // part 1 drew it otherwise
        Config c = s.config;
        Run run = run_init(&s, &c, N);
        Batch batch = make_batch(&s.task, s.batch, N);
        float accuracy;
        forward_backward(&run, &batch, &accuracy);
        record_graph(&run, &batch, &lesson);
    }
    trace_pause(lesson.dump_dir == NULL);   // --dump: what the tables came from
    if (s.experiment == ALL) {
        named("variant_losses", tensor_from(shape1(VARIANTS), variant_losses));
        named("variant_grad_norms", tensor_from(shape2(VARIANTS, 4), variant_norms));
    }
    if (s.experiment == ALL || s.experiment == LENGTH) {
        named("length_losses", tensor_from(shape2(5, steps), length_losses));
        named("length_accuracy", tensor_from(shape2(5, 3), length_accuracy));
    }
    if (s.experiment == ALL || s.experiment == WINDOW) {
        named("window_losses", tensor_from(shape2(windows, steps), window_losses));
        named("window_accuracy", tensor_from(shape2(windows + 3, 4), window_accuracy));
    }
    if (s.experiment == ALL || s.experiment == LINEAR_EXPERIMENT) {
        named("linear_losses", tensor_from(shape2(6, steps), linear_losses));
        named("linear_accuracy", tensor_from(shape2(2, 3), linear_accuracy));
    }
    return lesson_finish(&lesson);
}

// === appendix A: the tensors --dot draws and --dump writes =====================================

// A copy of an activation, reported to --dot as computed by `op` from the inputs.
static const Tensor *traced(const char *label, const float *data, Shape shape, int n_inputs,
                            const Tensor *const *inputs, const char *op) {
    Tensor *t = tensor_from(shape, data);
    trace(op, t, n_inputs, inputs, 0, NULL);
    return labeled(label, t);
}

// --experiment none's step 1 for --dump: its batch, logits and every gradient (before
// clip_grad_norm_); and the graph for --dot.
void record_step_one(const Run *run, const Batch *first, const Lesson *lesson) {
    const Config *c = &run->model.config;
    const AdamW *opt = &run->opt;
    if (lesson->dump_dir != NULL) {
        trace_pause(false);
        named("input_ids", first->input_ids);
        named("labels", first->labels);
        named("logits", tensor_from(shape3(run->s->batch, run->N, c->vocab_size),
                                    run->acts.logits));
        for (int i = 0; i < opt->n_params; i++) {
            named(grad_name(opt->params[i].name),
                  tensor_from(opt->params[i].shape, opt->params[i].grad));
        }
        trace_pause(true);
    }
    record_graph(run, first, lesson);
}

// One training step as a graph (one box per tensor, one arrow per operation), each variant's
// operations named where they act: the forward, the loss, its backward, the update.
static void record_graph(const Run *run, const Batch *batch, const Lesson *lesson) {
    if (lesson->dot_file == NULL) {
        return;
    }
    bool was_paused = trace_pause(false);
    const Config *c = &run->model.config;
    const Activations *a = &run->acts;
    const AdamW *opt = &run->opt;
    int B = run->s->batch, N = run->N, C = c->hidden_size, F = c->intermediate_size;
    int H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim;
    const char *embed = c->positions == SINUSOIDAL ? "embed_tokens + sinusoidal table"
                        : c->positions == LEARNED ? "embed_tokens + embed_positions"
                                                  : "embed_tokens";
    const Tensor *x = traced("x", a->layers[0].x, shape3(B, N, C), 1,
                             (const Tensor *const[]){labeled("input_ids", batch->input_ids)},
                             embed);
    const char *qk = c->positions == ROPE ? ", RoPE" : "";
    char attend[96];
    snprintf(attend, sizeof attend, "%s%s%s", c->attention == LINEAR
             ? "phi = elu + 1; running sums S, z" : "softmax(q k^T / sqrt(D)",
             c->attention == LINEAR ? "" : c->positions == ALIBI ? " + ALiBi" : "",
             c->attention == LINEAR ? "" : c->window < N ? "), window" : "), causal");
    for (int l = 0; l < c->num_hidden_layers; l++) {
        const LayerActivations *la = &a->layers[l];
        char op_q[48], op_k[48];
        snprintf(op_q, sizeof op_q, "q_proj%s", qk);
        snprintf(op_k, sizeof op_k, "k_proj%s", qk);
        const Tensor *h1 = traced("h1", la->h1, shape3(B, N, C), 1, &x, "input_layernorm");
        const Tensor *q = traced("q", la->q, shape4(B, N, H, D), 1, &h1, op_q);
        const Tensor *k = traced("k", la->k, shape4(B, N, KV, D), 1, &h1, op_k);
        const Tensor *v = traced("v", la->v, shape4(B, N, KV, D), 1, &h1, "v_proj");
        const Tensor *y = traced("y", la->y, shape4(B, N, H, D), 3,
                                 (const Tensor *const[]){q, k, v}, attend);
        const Tensor *x2 = traced("x2", la->x2, shape3(B, N, C), 2,
                                  (const Tensor *const[]){x, y}, "x + o_proj(y)");
        const Tensor *h2 = traced("h2", la->h2, shape3(B, N, C), 1, &x2,
                                  "post_attention_layernorm");
        const Tensor *prod = traced("prod", la->prod, shape3(B, N, F), 1, &h2,
                                    "silu(gate_proj) * up_proj");
        const float *next = l + 1 < c->num_hidden_layers ? a->layers[l + 1].x : a->x_final;
        x = traced("x", next, shape3(B, N, C), 2, (const Tensor *const[]){x2, prod},
                   "x2 + down_proj(prod)");
    }
    const Tensor *h = traced("h", a->h_final, shape3(B, N, C), 1, &x, "norm");
    const Tensor *logits = traced("logits", a->logits, shape3(B, N, c->vocab_size), 1, &h,
                                  "lm_head");
    const Tensor *loss = traced("loss", &run->loss[0], (Shape){0, {0}}, 2,
                                (const Tensor *const[]){logits, labeled("labels", batch->labels)},
                                "cross_entropy");
    long total = 0;
    for (int i = 0; i < opt->n_params; i++) {
        total += opt->params[i].numel;
    }
    Tensor *all = zeros(shape1((int)total));
    const Tensor *grads = traced("every .grad", all->data, all->shape, 1, &loss,
                                 "loss.backward() (model.c, attend.c)");
    traced("every parameter", all->data, all->shape, 1, &grads, "clip_grad_norm_, AdamW");
    trace_pause(was_paused);
}

// === appendix B: what a run takes (lesson/budget.h) ===========================================

// The floats a model's parameters hold.
static double parameter_count(const Config *c) {
    double C = c->hidden_size, F = c->intermediate_size, NV = c->vocab_size;
    double HD = c->num_attention_heads * c->head_dim, KVD = c->num_key_value_heads * c->head_dim;
    double learned = c->positions == LEARNED ? (double)c->longest * C : 0.0;
    return 2 * NV * C + C + learned +
           c->num_hidden_layers * (2 * C * HD + 2 * C * KVD + 3 * C * F + 2 * C);
}

// The floats an Activations of B sequences of N tokens holds, per row of (B*N, .).
static double activation_row(const Config *c, int N) {
    double C = c->hidden_size, F = c->intermediate_size, NV = c->vocab_size;
    double H = c->num_attention_heads, HD = H * c->head_dim;
    double KVD = c->num_key_value_heads * c->head_dim, row = 2 * C + 1 + 2 * NV;
    for (int l = 0; l < c->num_hidden_layers; l++) {
        double attention = layer_attention(c, l) == SOFTMAX ? H * N : 2 * HD + KVD + H;
        row += 4 * C + 2 + 2 * HD + 2 * KVD + attention + 4 * F;
    }
    return row;
}

// The multiply-adds of one training step's matrix products (every Linear's forward, dx and
// dW; softmax attention's 2 forward and 4 backward products of N x N x D per head, counted
// whole), which run in the kernels; and linear attention's, in plain loops (a state update
// and a read each position and head, D^2 each, then the backward's twice as many and the
// state's update again).
static double kernel_multiply_adds(const Config *c, int B, int N) {
    double C = c->hidden_size, D = c->head_dim, F = c->intermediate_size, L = c->num_hidden_layers;
    double H = c->num_attention_heads, KV = c->num_key_value_heads, rows = (double)B * N;
    double linear = L * (2 * C * H * D + 2 * C * KV * D + 3 * C * F) + C * c->vocab_size;
    double attention = 0.0;
    for (int l = 0; l < c->num_hidden_layers; l++) {
        attention += layer_attention(c, l) == SOFTMAX ? 6.0 * B * H * (double)N * N * D : 0.0;
    }
    return 3 * rows * linear + attention;
}

static double loop_multiply_adds(const Config *c, int B, int N) {
    double D = c->head_dim, loops = 0.0;
    for (int l = 0; l < c->num_hidden_layers; l++) {
        loops += layer_attention(c, l) == LINEAR ? 6.0 * B * c->num_attention_heads * N * D * D
                                                 : 0.0;
    }
    return loops;
}

// What `steps` training steps of a model at N tokens take, and `forwards` forwards of B
// sequences of `asked_at` tokens (a forward about a third of a step): the kernels' products
// at their price (Kernels.ns_per_multiply_add), linear attention's loops at
// LOOP_NS_PER_MULTIPLY_ADD, log_softmax's exps for every row and each batch's draws of B
// keys (with their merge sort) at the budget's prices.
#define LOOP_NS_PER_MULTIPLY_ADD 1.0
static Cost training_cost(const Config *c, const Settings *s, int N, double steps,
                          int asked_at, double forwards) {
    double B = s->batch, NV = c->vocab_size, K = s->task.keys;
    double mads = steps * kernel_multiply_adds(c, s->batch, N) +
                  forwards / 3 * kernel_multiply_adds(c, s->batch, asked_at);
    double loops = steps * loop_multiply_adds(c, s->batch, N) +
                   forwards / 3 * loop_multiply_adds(c, s->batch, asked_at);
    return (Cost){
        .kernel_seconds = (mads * kernels->ns_per_multiply_add +
                           loops * LOOP_NS_PER_MULTIPLY_ADD) * 1e-9,
        .exps = steps * (B * N * NV + B * K) + forwards * B * asked_at * NV,
        // and, a step, AdamW's and clip_grad_norm_'s passes over the parameters, which do
        // not grow with the batch (0.3 of an element, 2.4 ns, each: at --dim 16 --batch 1
        // --seq 4 most of a step, whose estimate fell 1.8 times short without them)
        .elements = (steps + forwards) * B * K * log2(K > 2 ? K : 2) +
                    0.3 * steps * parameter_count(c),
    };
}

static void add_cost(Cost *total, Cost more) {
    total->kernel_seconds += more.kernel_seconds;
    total->exps += more.exps;
    total->elements += more.elements;
    total->multiply_adds += more.multiply_adds;
    total->bytes = total->bytes > more.bytes ? total->bytes : more.bytes;
}

// The bytes one trained model holds at once: its parameters, gradients and AdamW's two
// averages; the activations and the backward's buffers of a batch at N tokens; one forward's
// activations at `asked_at` tokens (score's); the tables; and a tenth more for what is not
// counted one by one (the example's forward and maps, decoding's cache, names and text).
static double model_bytes(const Config *c, const Settings *s, int N, int asked_at) {
    double C = c->hidden_size, F = c->intermediate_size, NV = c->vocab_size;
    double D = c->head_dim, HD = c->num_attention_heads * D, P = c->longest;
    double KVD = c->num_key_value_heads * D, B = s->batch;
    double wide = C > F ? C : F, scratch = wide * (wide > NV ? wide : NV) + N * D;
    double activations = B * N * activation_row(c, N) + B * asked_at *
                         activation_row(c, asked_at) + 2 * scratch;
    double backward = B * N * (NV + 5 * C + 2 * HD + 2 * KVD + 3 * F + wide + HD) +
                      2.0 * N * N + (N > C ? N : C) * D + C + 3 * N * HD;
    double tables = P * D + P * C * 2 + c->num_attention_heads;
    double batches = 4 * B * N + 4 * B * asked_at + 2 * B * s->task.keys + 3 * s->steps;
    return 1.1 * 4 * (4 * parameter_count(c) + activations + backward + tables + batches);
}

// Every model the run trains, its steps and the forwards that score it.
static Cost lesson_cost(const Settings *s, const Lesson *lesson) {
    Cost total = {0};
    int N = s->seq;
    Trial trials[MAX_TRIALS];
    if (s->experiment == NONE) {
        Config c = s->config;
        add_cost(&total, training_cost(&c, s, N, s->steps + 1, N, EVAL_BATCHES + 2));
        total.bytes = model_bytes(&c, s, N, N);
    }
    if (s->experiment == ALL) {
        for (int i = 0; i < VARIANTS; i++) {
            Config c = variant_config(s, i);
            add_cost(&total, training_cost(&c, s, N, 1, N, 0));
            total.bytes = fmax(total.bytes, model_bytes(&c, s, N, N));
        }
    }
    if (s->experiment == ALL || s->experiment == LENGTH) {   // asked at N, 2N, 4N: 7/4 of 4N
        for (int i = 0; i < length_trials(trials, s); i++) {
            add_cost(&total, training_cost(&trials[i].config, s, N, s->steps, 4 * N,
                                           EVAL_BATCHES * 1.75 + 1));
            total.bytes = fmax(total.bytes, model_bytes(&trials[i].config, s, N, 4 * N));
        }
    }
    if (s->experiment == ALL || s->experiment == WINDOW) {
        int count = window_trials(trials, s);
        for (int i = 0; i < count; i++) {   // the first is asked with 4 windows
            add_cost(&total, training_cost(&trials[i].config, s, 2 * N, s->steps, 2 * N,
                                           (EVAL_BATCHES + 1) * (i == 0 ? 4 : 1)));
            total.bytes = fmax(total.bytes, model_bytes(&trials[i].config, s, 2 * N, 2 * N));
        }
    }
    if (s->experiment == ALL || s->experiment == LINEAR_EXPERIMENT) {
        for (int i = 0; i < linear_trials(trials, s); i++) {
            int n = trials[i].N;
            add_cost(&total, training_cost(&trials[i].config, s, n, s->steps, n,
                                           EVAL_BATCHES + 1));
            total.bytes = fmax(total.bytes, model_bytes(&trials[i].config, s, n, n));
        }
    }
    if (lesson->dump_dir != NULL) {   // the runs' losses and tables; none's step 1 and maps
        Config c = s->config;
        double P = parameter_count(&c), B = s->batch;
        total.dumped = 4 * (17.0 * s->steps + 64 + (s->experiment == NONE
                       ? 2 * P + B * N * (c.vocab_size + 2) + 2 * s->steps +
                         c.num_hidden_layers * c.num_attention_heads * (double)N * N + N : 0));
        total.bytes += total.dumped;
    }
    if (lesson->dot_file != NULL) {   // step 1's activations as tensors to draw
        Config c = s->config;
        total.bytes += 4 * (parameter_count(&c) + (double)s->batch * N * activation_row(&c, N));
    }
    return total;
}
