// Lesson 16: train - a tiny Llama trained end to end in C, step for step with PyTorch.
//
// WHAT THIS ADDS
//   Every attention map so far came from random weights, so it showed nothing. Here the
//   decoder of lesson 15 (RMSNorm, RoPE, causal grouped-query attention, SwiGLU), stacked
//   into a model with a token embedding, a final norm and an output projection, learns a
//   task in a few hundred steps, and we watch its heads learn where to look:
//     recall:  "A3 C1 F6 B0 H2 D7 | C? D?" - after a key seen before, write its value.
//              One layer cannot (attention at the question finds the earlier key, but the
//              key's position holds nothing of the value after it); two can: a head of
//              layer 0 lets each value see its key (the token before it), a head of layer 1
//              finds the value whose key matches the question: an induction head.
//     reverse: "3 1 4 1 5 | 5 1 4 1 3" - write the tokens back in reverse order.
//   The training loop is PyTorch's, written out: the forward keeps what the backward needs;
//   loss.backward() is model.c and layers.c, every piece's gradient by hand (attention's as
//   lesson 14 derives it); clip_grad_norm_, the learning-rate schedule and AdamW are
//   adamw.c. Every number is PyTorch's to the bit (PyTorch 1.13 on the reference BLAS, one
//   thread, as docs/16-train.md runs it): the same draws, the same batches, the same float
//   operations in the same order, so the losses printed are PyTorch's, all of them.
//   lessons/16-train/README.md says in which order to read the files; kernels.c has the hot
//   loops made fast, and common/speed/ what lessons 13, 14 and 16 share of that plumbing
//   (which kernels this CPU runs, ATTN_KERNELS, the clock --bench reads).
//
// THE MATH (one step; lesson 15 has the layer's)
//   logits = lm_head(norm(layers(embed_tokens[input_ids])))                (B, N, NV)
//   loss   = mean over the asked positions of -log softmax(logits)[label]
//   g      = d loss / d parameter, by the chain rule, last operation first
//   g     *= min(1, max_norm / (|g| + 1e-6))                   clip_grad_norm_
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  w = w (1 - lr wd) - lr m^ / (sqrt(v^) + eps)
//   with m^ = m / (1 - b1^t), v^ = v / (1 - b2^t): AdamW with bias correction, at step t
//   with the learning rate lr of a linear warmup, then a cosine down to a tenth (adamw.h)
//
// THE PYTORCH IT MIRRORS (docs/16-train.md has the whole script: PyTorch 1.13 and NumPy)
//   torch.manual_seed(seed); model = TinyLlama(config); example = make_batch(1)
//   opt = torch.optim.AdamW(model.parameters(), lr, betas=(0.9, 0.99), weight_decay=wd)
//   for step in range(1, steps + 1):
//       input_ids, labels = make_batch(batch)
//       loss = F.cross_entropy(model(input_ids).view(-1, NV), labels.view(-1))
//       opt.zero_grad(); loss.backward(); clip_grad_norm_(model.parameters(), clip)
//       opt.param_groups[0]["lr"] = lr_at(step); opt.step()
//
// RUN IT
//   make lesson-16                          recall, trained in a few seconds on one core
//   make lesson-16 ARGS="--task reverse"    the other task
//   make lesson-16 ARGS="--layers 1"        one layer cannot learn recall: watch it fail
//   make lesson-16 ARGS="--bench"           ms per training step, at two sizes
//   make lesson-16 ARGS="--threads 2"       the products shared by 2 threads: the same bits
//   flags: --task --layers --dim --heads --kv-heads --hidden --vocab --seq --batch --steps
//          --lr --weight-decay --warmup --clip --threads --save DIR --load DIR --svg FILE
//          --bench --seed --dump DIR --dot FILE --heatmap --help
//
// WHAT TO LOOK FOR
//   - The first loss, 2.91, is above ln(16) = 2.77: random weights do not spread their
//     guesses evenly, they guess wrongly with some confidence.
//   - recall: the loss sits near 1.7 for a hundred steps (the model counts which value comes
//     up most, a third right), then falls off a cliff: the two heads have found each other.
//     The maps show when (part 4).
//   - The first AdamW step moves every weight by about lr, whatever its gradient (part 2).
//
// Size letters: B batch, N tokens a sequence (--seq), C hidden_size (--dim), H query heads,
// KV key/value heads, R = H / KV, D head_dim = C / H, F intermediate_size, NV vocabulary.
// Index letters: b batch row, t query position, s key position, h query head, g = h / R its
// key/value head, d inside a head, c a channel of C, r a row b*N + t of a (B*N, .) matrix.

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adamw.h"
#include "attention.h"
#include "bench.h"
#include "checkpoint.h"
#include "kernels.h"
#include "layers.h"
#include "model.h"
#include "show.h"
#include "svg.h"
#include "threads.h"
#include "train.h"

// --- the tasks ------------------------------------------------------------------------------

// order = the indices 0 .. n-1 sorted by their keys, stably (equal keys keep their index
// order), as torch.sort(keys, stable=True).indices: a merge sort, runs of 1, 2, 4, ...
// merged pairwise, the left run's index first when two keys are equal (that keeps it
// stable); spare holds n floats. n log n comparisons: an insertion sort's n^2 / 4 took
// about 0.2 s a row at --vocab 65536 (n = 32768): a 30-step run took 53 s instead of 6.
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
        float *merged = to;   // the merged runs are the next pass's input
        to = from;
        from = merged;
    }
    if (from != order) {
        memcpy(order, from, (size_t)n * sizeof(float));
    }
}

// torch.sort(torch.rand(B, n), dim=-1, stable=True).indices: a random order of 0 .. n-1 in
// each row.
static Tensor *random_orders(int B, int n) {
    const Tensor *keys = rand_tensor(shape2(B, n));                              // (B, n)
    Tensor *order = zeros(shape2(B, n));                                         // (B, n)
    float *spare = arena_alloc((size_t)n, sizeof(float));                        // (n)
    for (int b = 0; b < B; b++) {
        sort_indices(&order->data[(long)b * n], &keys->data[(long)b * n], spare, n);
    }
    return order;
}

// A batch of the task, drawn from PyTorch's generator as the page's make_batch draws it.
static Batch make_batch(const Config *config, int B) {
    int N = config->seq, NV = config->vocab_size;
    Batch batch = {zeros(shape2(B, N)), full(shape2(B, N), IGNORE_INDEX)};
    batch.input_ids->dtype = batch.labels->dtype = DTYPE_INT64;
    float *ids = batch.input_ids->data, *labels = batch.labels->data;
    if (config->task == REVERSE) {
        int n = N / 2;   // x = torch.randint(0, NV - 1, (B, n)); the separator is NV - 1
        const Tensor *x = randint(0, NV - 1, shape2(B, n));                      // (B, n)
        for (int b = 0; b < B; b++) {
            const float *x_b = &x->data[b * n];
            for (int t = 0; t <= N; t++) {   // token t of x, the separator, x reversed
                float token = t < n ? x_b[t] : t == n ? (float)(NV - 1) : x_b[2 * n - t];
                if (t < N) {
                    ids[b * N + t] = token;          // the model reads tokens 0 .. N-1
                }
                if (t > n) {
                    labels[b * N + t - 1] = token;   // and must write tokens n+1 .. N
                }
            }
        }
        return batch;
    }
    // recall: `pairs` distinct keys (tokens 0 .. NV/2 - 1) with values (NV/2 .. NV-1), then
    // `questions` keys asked again, each followed by its value: the label at the key. The draws
    // are let go once copied (their B * NV/2 keys weigh more than the batch at a large --vocab).
    int questions = N / 8 > 1 ? N / 8 : 1, pairs = N / 2 - questions, n_keys = NV / 2;
    size_t mark = arena_mark();
    const Tensor *keys = random_orders(B, n_keys);                               // (B, NV/2)
    const Tensor *values = randint(n_keys, NV, shape2(B, pairs));                // (B, pairs)
    const Tensor *asked = randint(0, pairs, shape2(B, questions));               // (B, q)
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < pairs; i++) {
            ids[b * N + 2 * i] = keys->data[b * n_keys + i];
            ids[b * N + 2 * i + 1] = values->data[b * pairs + i];
        }
        for (int i = 0; i < questions; i++) {
            int pair = (int)asked->data[b * questions + i], t = 2 * pairs + 2 * i;
            ids[b * N + t] = ids[b * N + 2 * pair];
            ids[b * N + t + 1] = ids[b * N + 2 * pair + 1];
            labels[b * N + t] = ids[b * N + t + 1];
        }
    }
    arena_release(mark);
    return batch;
}

// How many asked rows have the label as their largest logit (the first, on a tie); adds the
// rows asked to *asked and the sequences (rows of labels) answered without a mistake to
// *perfect.
static long answers_right(long *asked, long *perfect, const float *logits, const Tensor *labels,
                          int NV) {
    int B = size(labels, 0), N = size(labels, 1);
    long right = 0;
    for (int b = 0; b < B; b++) {
        int wrong = 0;
        for (long r = (long)b * N; r < (long)(b + 1) * N; r++) {
            int label = (int)labels->data[r], best = 0;
            if (label == IGNORE_INDEX) {
                continue;
            }
            for (int i = 1; i < NV; i++) {
                best = logits[r * NV + i] > logits[r * NV + best] ? i : best;
            }
            right += best == label;
            wrong += best != label;
            *asked += 1;
        }
        *perfect += wrong == 0;
    }
    return right;
}

// --- a run: everything training needs, made once ------------------------------------------

Run run_init(const Settings *s) {
    Run run = {.s = *s};
    const Config *c = &s->config;
    run.model = model_init(c);                        // the draws: the parameters first,
    run.example = make_batch(c, 1);                   // then the example
    run.acts = activations_init(c, s->batch);
    run.one = activations_init(c, 1);
    run.grads = grads_init(&run.model);
    run.scratch = backward_scratch_init(c, s->batch);
    run.opt = adamw_init(&run.model, &run.grads, s->beta1, s->beta2, s->eps, s->weight_decay);
    if (s->load_dir != NULL) {   // the loaded parameters are what the run uses: --dump's
        checkpoint_load(&run.opt, c, s->load_dir);
        for (int i = 0; i < run.opt.n_params; i++) {   // (named again: the later one wins)
            size_t mark = arena_mark();                 // (--dump copies what it is named)
            named(run.opt.params[i].name, tensor_from(run.opt.params[i].shape,
                                                      run.opt.params[i].value));
            arena_release(mark);
        }
    }
    int steps = s->steps > 1 ? s->steps : 1;
    run.loss = floats(steps);
    run.accuracy = floats(steps);
    run.grad_norm = floats(steps);
    run.map_steps[1] = s->steps / 2;
    run.map_steps[2] = s->steps;
    run.maps = floats(3L * c->num_hidden_layers * c->num_attention_heads * c->seq * c->seq);
    return run;
}

// A batch's forward, loss and backward: every parameter's gradient (.grad) filled in.
static float forward_backward(Run *run, const Batch *batch, float *right) {
    const Config *c = &run->s.config;
    int asked;
    model_forward(&run->acts, &run->model, batch->input_ids->data, run->s.batch, 0, c->seq);
    float loss = cross_entropy_forward(run->acts.log_probs, &asked, run->acts.logits,
                                       batch->labels, c->vocab_size);
    long asked_rows = 0, perfect = 0;
    // Two statements: in one, reading asked_rows would be unsequenced with the call that
    // sets it (C11 6.5.2.2: the operands of / are evaluated in no fixed order).
    long right_rows = answers_right(&asked_rows, &perfect, run->acts.logits, batch->labels,
                                    c->vocab_size);
    *right = (float)right_rows / (float)asked_rows;
    model_backward(&run->grads, &run->scratch, &run->model, &run->acts, batch->input_ids,
                   batch->labels, asked);
    return loss;
}

// clip_grad_norm_, step n's learning rate (n from 1), opt.step(). Returns the norm before
// clipping.
static float optimizer_step(Run *run, int n) {
    const Settings *s = &run->s;
    float norm = clip_grad_norm(&run->opt, s->clip > 0 ? (float)s->clip : INFINITY);
    adamw_step(&run->opt, learning_rate(n, s->steps, s->warmup, s->lr));
    return norm;
}

// One step on a fresh batch, without a word: what --bench times. `step` counts from 0 (the
// index of its loss), so it is step step + 1 of part 3.
void train_step(Run *run, int step) {
    size_t mark = arena_mark();
    Batch batch = make_batch(&run->s.config, run->s.batch);
    run->loss[step] = forward_backward(run, &batch, &run->accuracy[step]);
    run->grad_norm[step] = optimizer_step(run, step + 1);
    arena_release(mark);
}

// The example's attention weights, every layer and head, into map `which` (0, 1, 2).
static void take_maps(Run *run, int which) {
    const Config *c = &run->s.config;
    int N = c->seq, H = c->num_attention_heads;
    model_forward(&run->one, &run->model, run->example.input_ids->data, 1, 0, N);
    for (int l = 0; l < c->num_hidden_layers; l++) {
        memcpy(run->maps + ((long)which * c->num_hidden_layers + l) * H * N * N,
               run->one.layers[l].att, (size_t)H * N * N * sizeof(float));
    }
}

static void part(int number, const char *what, const char *flags) {
    printf("\n-- part %d: %s (%s) --\n", number, what, flags);
}

static void print_step(const Run *run, int step) {   // step from 1
    const Settings *s = &run->s;
    printf("step %3d: loss %.6f  accuracy %.4f  grad_norm %.4f  lr %.6f\n", step,
           (double)run->loss[step - 1], (double)run->accuracy[step - 1],
           (double)run->grad_norm[step - 1], learning_rate(step, s->steps, s->warmup, s->lr));
}

// --- part 1: the task, the model, the first batch and its loss -----------------------------

static float part1_setup(Run *run, Batch *first, float *right) {
    const Settings *s = &run->s;
    const Config *c = &s->config;
    print_setup(c, s, &run->opt, sequence_text(c, run->example.input_ids->data));
    if (s->load_dir != NULL) {
        printf("model.load_state_dict(): every parameter replaced by %s/<name>.npy\n",
               s->load_dir);
    }
    *first = make_batch(c, s->batch);
    printf("input_ids, labels = make_batch(%d): input_ids[0] = %s\n", s->batch,
           sequence_text(c, first->input_ids->data));
    float loss = forward_backward(run, first, right);
    printf("loss = F.cross_entropy(model(input_ids).view(-1, %d), labels.view(-1)) = %.6f\n"
           "  guessing evenly among the %d tokens would give ln(%d) = %.4f\n", c->vocab_size,
           (double)loss, c->vocab_size, c->vocab_size, log((double)c->vocab_size));
    return loss;
}

// --- part 2: step 1 by hand: the gradients, clipping, AdamW's first update ------------------

static void part2_step_one(Run *run) {
    part(2, "step 1 by hand: the gradients, clipping, AdamW's update", "--clip and --lr change it");
    AdamW *opt = &run->opt;
    printf("loss.backward() (model.c, layers.c) leaves in every parameter's .grad, by its norm:\n");
    for (int i = 0; i < opt->n_params; i++) {
        const Param *p = &opt->params[i];
        printf("  %-44s %-10s %.6f\n", p->name, shape_str(p->shape, SIZES_TUPLE),
               (double)norm_of(p->grad, p->numel));
    }
    Param *lm_head = &opt->params[opt->n_params - 1];
    float w = lm_head->value[0];
    float norm = optimizer_step(run, 1);                 // clip_grad_norm_, then opt.step()
    run->grad_norm[0] = norm;
    const Settings *s = &run->s;
    double clip = s->clip > 0 ? s->clip : INFINITY, g = lm_head->grad[0];
    if (s->clip == 0) {
        printf("clip_grad_norm_(model.parameters(), inf): --clip 0, no clipping; their norm "
               "together is %.4f\n", (double)norm);
    } else if (norm > clip) {
        printf("clip_grad_norm_(model.parameters(), %g): their norm together is %.4f > %g,\n"
               "  so every .grad is multiplied by %g / (%.4f + 1e-6) = %.4f\n", clip,
               (double)norm, clip, clip, (double)norm, clip / (norm + 1e-6));
    } else {
        printf("clip_grad_norm_(model.parameters(), %g): their norm together is %.4f <= %g: "
               "left alone\n", clip, (double)norm, clip);
    }
    double lr = learning_rate(1, s->steps, s->warmup, s->lr);
    printf("opt.step() with lr %g ", lr);
    if (s->warmup > 0) {
        printf("(warmup: %g * 1/%d)", s->lr, s->warmup);
    } else {
        printf("(no warmup: the cosine at step 1)");
    }
    printf(" on w = lm_head.weight[0, 0] = %.6f,\n  whose gradient is g = %.6g%s:\n", (double)w,
           g, norm > clip ? " after clipping" : "");
    printf("  m = 0.9 * 0 + 0.1 * g = %.6g      v = 0.99 * 0 + 0.01 * g^2 = %.6g\n"
           "  m / (1 - 0.9^1) = g, v / (1 - 0.99^1) = g^2: in step 1 the bias correction undoes "
           "the averaging\n"
           "  w * (1 - lr * %g) - lr * g / (sqrt(g^2) + 1e-8) = %.6f, about w - lr * sign(g):\n"
           "  the first step moves every weight by about lr, whatever the size of its gradient\n",
           (double)lm_head->exp_avg[0], (double)lm_head->exp_avg_sq[0], s->weight_decay,
           (double)lm_head->value[0]);
    // Without the corrections a step would divide m by 1 and sqrt(v) by 1, not by 1 - 0.9^t
    // and sqrt(1 - 0.99^t): (1 - 0.9^t) / sqrt(1 - 0.99^t) times the step (eps aside).
    double larger[3];
    const int at[3] = {1, 2, 10};
    for (int i = 0; i < 3; i++) {
        larger[i] = (1.0 - pow(s->beta1, at[i])) / sqrt(1.0 - pow(s->beta2, at[i]));
    }
    printf("  without the bias correction, step t would be (1 - 0.9^t) / sqrt(1 - 0.99^t) times "
           "as large:\n    %.2f at t = 1, %.2f at t = 2, %.2f at t = 10: v's correction, under "
           "a square root, outweighs m's\n", larger[0], larger[1], larger[2]);
}

// --- part 3: training ------------------------------------------------------------------------

static void part3_training(Run *run, float first_loss, float first_right) {
    const Settings *s = &run->s;
    part(3, "training: the loss and accuracy as they fall", "--steps, --lr and --task change it");
    run->loss[0] = first_loss;
    run->accuracy[0] = first_right;
    for (int step = 1; step <= s->steps; step++) {   // step 1's update is part 2's
        if (step > 1) {
            train_step(run, step - 1);
        }
        if (step <= 20 || step % 50 == 0 || step == s->steps) {
            print_step(run, step);
        }
        if (step == run->map_steps[1]) {
            take_maps(run, 1);
        }
    }
    print_chart(run->loss, run->accuracy, s->steps);
}

// --- part 4: what each head learned ----------------------------------------------------------

static void part4_maps(Run *run) {
    const Config *c = &run->s.config;
    int N = c->seq, H = c->num_attention_heads, L = c->num_hidden_layers;
    take_maps(run, 2);
    part(4, "what each head learned: its attention on the example", "--task changes it");
    const float *ids = run->example.input_ids->data, *labels = run->example.labels->data;
    printf("the example: %s\n  row: the query's token, column: the key's; darker: more weight\n"
           "  shades: blank for 0 (a future key), then %s for each ninth of (0, 1]\n",
           sequence_text(c, ids), SHADES_SPACED);
    const char *when[3] = {"at the start", "after step", "after step"};
    for (int m = 0; m < 3; m++) {
        printf("%s%s", m > 0 ? "\n" : "", when[m]);
        printf(m > 0 ? " %d:\n" : ":\n", run->map_steps[m]);
        for (int l = 0; l < L; l++) {
            const float *att = run->maps + ((long)m * L + l) * H * N * N;
            print_maps(c, ids, att, l);
            printf("        ");
            for (int h = 0; h < H; h++) {
                HeadFocus f = head_focus(c, ids, labels, att + (long)h * N * N);
                printf("%s%.2f %.2f", h == 0 ? "" : "      ", (double)f.previous, (double)f.answer);
            }
            printf("   (previous token, answer)\n");
        }
    }
    print_focus_key(c);
    if (run->s.heatmap) {
        const float *last = run->maps + 2L * L * H * N * N;      // the maps at the end
        print_heatmap("attn_weights", tensor_from(shape4(L, H, N, N), last));
    }
}

// --- part 5: greedy decoding with the KV cache ----------------------------------------------

// Answer a sequence the way generation does: the tokens up to the first question in one call,
// then each call feeds what the model wrote (and the next question's tokens) and reads the
// argmax of the last logits. Earlier tokens are not run again: their keys and values wait in
// the layers' k and v, the KV cache (lesson 10). ids (N) gets the model's answers; returns
// how many it got right.
static int decode(Run *run, float *ids, const float *labels, bool print) {
    const Config *c = &run->s.config;
    int N = c->seq, NV = c->vocab_size, right = 0, t = 0;
    while (t < N) {
        int asked = t;
        while (asked < N && (int)labels[asked] == IGNORE_INDEX) {
            asked += 1;
        }
        if (asked == N) {
            break;
        }
        model_forward(&run->one, &run->model, ids, 1, t, asked - t + 1);   // the new tokens
        const float *logits = run->one.logits + (long)asked * NV;
        int best = 0;
        for (int i = 1; i < NV; i++) {
            best = logits[i] > logits[best] ? i : best;
        }
        right += best == (int)labels[asked];
        if (print) {
            printf("  a call with tokens %d..%d: the last logits' argmax is %s (%s)\n", t, asked,
                   token_text(c, best), best == (int)labels[asked] ? "right" : "wrong");
        }
        if (asked + 1 < N) {
            ids[asked + 1] = (float)best;   // what the model wrote is its next input
        }
        t = asked + 1;
    }
    return right;
}

static void part5_decoding(Run *run) {
    const Config *c = &run->s.config;
    part(5, "greedy decoding with a KV cache", "--task changes it");
    float ids[2 * MAX_SIZE_FLAG];
    memcpy(ids, run->example.input_ids->data, (size_t)c->seq * sizeof(float));
    printf("the example, %s: each call runs only its new tokens\n",
           sequence_text(c, run->example.input_ids->data));
    decode(run, ids, run->example.labels->data, true);
    printf("  written: %s\n", sequence_text(c, ids));
    printf("4 fresh sequences, make_batch(4):\n");
    Batch fresh = make_batch(c, 4);
    for (int b = 0; b < 4; b++) {
        const float *given = fresh.input_ids->data + (long)b * c->seq;
        memcpy(ids, given, (size_t)c->seq * sizeof(float));
        int right = decode(run, ids, fresh.labels->data + (long)b * c->seq, false);
        printf("  %s  ->  %s  (%d right)\n", sequence_text(c, given), sequence_text(c, ids),
               right);
    }
}

// --- part 6: the trained model on fresh sequences, and the checkpoint ----------------------

// 32 fresh batches, scored as training scores them: one forward of each whole, true
// sequence, and at each position that asks, the argmax of its logits against the label (the
// true earlier answers given; part 5's decoding feeds the model's own instead).
static void part6_evaluation(Run *run) {
    const Settings *s = &run->s;
    const Config *c = &s->config;
    part(6, "the trained model on fresh sequences", "--steps changes it");
    long right = 0, asked = 0, perfect = 0, sequences = 32L * s->batch;
    for (int i = 0; i < 32; i++) {   // make_batch(batch) 32 times, after training
        size_t mark = arena_mark();
        Batch batch = make_batch(c, s->batch);
        model_forward(&run->acts, &run->model, batch.input_ids->data, s->batch, 0, c->seq);
        right += answers_right(&asked, &perfect, run->acts.logits, batch.labels, c->vocab_size);
        arena_release(mark);
    }
    printf("answers right: %ld of %ld (%.2f%%); sequences with every answer right: %ld of %ld "
           "(%.2f%%)\n", right, asked, 100.0 * right / asked, perfect, sequences,
           100.0 * perfect / sequences);
    if (s->save_dir != NULL) {
        printf("the state_dict, %d tensors, goes to %s/<name>.npy\n", run->opt.n_params,
               s->save_dir);
    }
}

// --- the lesson ------------------------------------------------------------------------------

static void record_step_one(const Run *run, const Batch *first, bool dot, bool dump);
static void finish_outputs(const Run *run, bool dump);   // appendix A, after main
static Cost train_cost(const Settings *s, const Lesson *lesson);   // appendix B

int main(int argc, char **argv) {
    Lesson lesson;
    Settings s = read_flags(&lesson, argc, argv);   // exit 2 on a bad flag or checkpoint
    kernels_choose();
    check_budget(&lesson, s.bench ? bench_cost(&s) : train_cost(&s, &lesson));
    if (s.bench) {
        return bench_training(&lesson, &s);
    }
    lesson_start(&lesson);
    threads_start(s.threads);               // --threads: the products' workers (threads.c)
    trace_pause(lesson.dump_dir == NULL);   // the drawn parameters: --dump's, not --dot's
    Run run = run_init(&s);                 // the parameters and the example drawn
    trace_pause(false);
    take_maps(&run, 0);
    if (run.map_steps[1] == 0) {
        take_maps(&run, 1);
    }
    Batch first;
    float right, loss = part1_setup(&run, &first, &right);
    record_step_one(&run, &first, lesson.dot_file != NULL, lesson.dump_dir != NULL);
    if (s.steps > 0) {                      // --load with --steps 0: no training
        part2_step_one(&run);
        part3_training(&run, loss, right);
    }
    part4_maps(&run);
    part5_decoding(&run);
    part6_evaluation(&run);
    threads_stop();
    finish_outputs(&run, lesson.dump_dir != NULL);   // --save, --svg, the run's dumps
    return lesson_finish(&lesson);
}

// === appendix A: the tensors --dot draws and --dump writes ===================================

// A copy of an activation, reported to --dot as computed by `op` from the inputs.
static const Tensor *traced(const char *label, const float *data, Shape shape, int n_inputs,
                            const Tensor *const *inputs, const char *op) {
    Tensor *t = tensor_from(shape, data);
    trace(op, t, n_inputs, inputs, 0, NULL);
    return labeled(label, t);
}

// Step 1 as a graph for --dot (one box per tensor, one arrow per operation: the forward, the
// loss, its backward, the update), and its batch, logits and gradients for --dump.
static void record_step_one(const Run *run, const Batch *first, bool dot, bool dump) {
    const Config *c = &run->s.config;
    const Activations *a = &run->acts;
    const AdamW *opt = &run->opt;
    if (dump) {
        named("input_ids", first->input_ids);
        named("labels", first->labels);
        named("logits", tensor_from(shape3(run->s.batch, c->seq, c->vocab_size), a->logits));
        for (int i = 0; i < opt->n_params; i++) {   // before clip_grad_norm_
            named(grad_name(opt->params[i].name),
                  tensor_from(opt->params[i].shape, opt->params[i].grad));
        }
    }
    if (!dot) {
        return;
    }
    bool was_paused = trace_pause(!dot);
    int B = run->s.batch, N = c->seq, C = c->hidden_size, F = c->intermediate_size;
    int H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim;
    const Tensor *x = traced("x", a->layers[0].x, shape3(B, N, C), 1,
                             (const Tensor *const[]){labeled("input_ids", first->input_ids)},
                             "embed_tokens");
    for (int l = 0; l < c->num_hidden_layers; l++) {
        const LayerActivations *la = &a->layers[l];
        const Tensor *h1 = traced("h1", la->h1, shape3(B, N, C), 1, &x, "input_layernorm");
        const Tensor *q = traced("q", la->q, shape4(B, N, H, D), 1, &h1, "q_proj, RoPE");
        const Tensor *k = traced("k", la->k, shape4(B, N, KV, D), 1, &h1, "k_proj, RoPE");
        const Tensor *v = traced("v", la->v, shape4(B, N, KV, D), 1, &h1, "v_proj");
        const Tensor *att = traced("att", la->att, shape4(B, H, N, N), 2,
                                   (const Tensor *const[]){q, k}, "causal softmax(q k^T)");
        const Tensor *y = traced("y", la->y, shape4(B, N, H, D), 2,
                                 (const Tensor *const[]){att, v}, "att @ v");
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
                                (const Tensor *const[]){logits, labeled("labels", first->labels)},
                                "cross_entropy");
    long total = 0;
    for (int i = 0; i < opt->n_params; i++) {
        total += opt->params[i].numel;
    }
    Tensor *all = zeros(shape1((int)total));
    const Tensor *grads = traced("every .grad", all->data, all->shape, 1, &loss,
                                 "loss.backward() (model.c)");
    traced("every parameter", all->data, all->shape, 1, &grads, "clip_grad_norm_, AdamW");
    trace_pause(was_paused);
}

// At the end: the run's losses, accuracies, norms and maps for --dump, the state_dict for
// --save, the maps as an image for --svg.
static void finish_outputs(const Run *run, bool dump) {
    const Settings *s = &run->s;
    const Config *c = &s->config;
    if (dump && s->steps > 0) {
        named("losses", tensor_from(shape1(s->steps), run->loss));
        named("accuracies", tensor_from(shape1(s->steps), run->accuracy));
        named("grad_norms", tensor_from(shape1(s->steps), run->grad_norm));
    }
    if (dump) {
        named("example", run->example.input_ids);
        named("attn_weights", tensor_from(shape5(3, c->num_hidden_layers,
                                                 c->num_attention_heads, c->seq, c->seq),
                                          run->maps));
    }
    if (s->save_dir != NULL) {   // kept: lesson_finish writes them with --dump's and --dot's
        checkpoint_save(&run->opt, c, s->save_dir);
    }
    if (s->svg_file != NULL) {
        svg_maps(s->svg_file, c, run->example.input_ids->data, run->maps, run->map_steps);
    }
}

// === appendix B: what a run takes (lesson/budget.h) ==========================================

// The multiply-adds of one training step's matrix products: every Linear's forward, dx and dW
// (3 products of rows x in x out), attention's 2 forward and 4 backward products of N x N x D
// per head (counted whole, though half of them lie above the causal diagonal).
double step_multiply_adds(const Settings *s) {
    const Config *c = &s->config;
    double C = c->hidden_size, D = c->head_dim, F = c->intermediate_size, N = c->seq;
    double H = c->num_attention_heads, KV = c->num_key_value_heads, L = c->num_hidden_layers;
    double rows = (double)s->batch * N;
    double linear = L * (2 * C * H * D + 2 * C * KV * D + 3 * C * F) + C * c->vocab_size;
    return 3 * rows * linear + 6 * L * s->batch * H * N * N * D;
}

// What `steps` training steps take: their matrix products' multiply-adds at the price of the
// kernels chosen (Kernels.ns_per_multiply_add), which covers most of a step: the exps of silu
// and attention's softmax, RMSNorm, the sums and AdamW grow with the same sizes and run in
// the same kernels, far below the budget's prices for plain loops. Two things grow with the
// vocabulary instead, in plain loops, and are counted at the budget's prices: log_softmax's
// exps (counted for every row's logits, though only the rows that ask take them), and
// (recall) each batch's draws of B * NV/2 keys and their merge sort. The price is one
// thread's whatever --threads says (threads.c): the safe side, as more threads need not run
// faster (not on a machine whose cores are busy, or fewer than the threads).
Cost steps_cost(const Settings *s, double steps) {
    const Config *c = &s->config;
    double B = s->batch, N = c->seq, NV = c->vocab_size;
    double keys = c->task == REVERSE ? 0 : B * NV / 2;
    return (Cost){
        .kernel_seconds = steps * step_multiply_adds(s) * kernels->ns_per_multiply_add * 1e-9,
        .exps = steps * (B * N * NV + keys),
        .elements = steps * keys * log2(NV > 4 ? NV / 2 : 2),
    };
}

// The floats of a state_dict: every parameter of the model.
static double parameter_count(const Config *c) {
    double C = c->hidden_size, F = c->intermediate_size, NV = c->vocab_size;
    double HD = c->num_attention_heads * c->head_dim, KVD = c->num_key_value_heads * c->head_dim;
    return 2 * NV * C + C + c->num_hidden_layers * (2 * C * HD + 2 * C * KVD + 3 * C * F + 2 * C);
}

// The floats an Activations of B sequences holds (activations_init), per row of (B*N, .).
static double activation_row(const Config *c) {
    double C = c->hidden_size, F = c->intermediate_size, NV = c->vocab_size;
    double HD = c->num_attention_heads * c->head_dim, KVD = c->num_key_value_heads * c->head_dim;
    return c->num_hidden_layers * (4 * C + 2 + 2 * HD + 2 * KVD + c->num_attention_heads *
                                   (double)c->seq + 4 * F) + 2 * C + 1 + 2 * NV;
}

// The bytes run_init makes: the parameters, their gradients and AdamW's two averages; the
// activations of a batch and of one sequence; the backward's scratch; the three maps.
double run_bytes(const Settings *s) {
    const Config *c = &s->config;
    double C = c->hidden_size, F = c->intermediate_size, N = c->seq, NV = c->vocab_size;
    double D = c->head_dim, HD = c->num_attention_heads * D;
    double KVD = c->num_key_value_heads * D, B = s->batch, L = c->num_hidden_layers;
    double wide = C > F ? C : F;
    double scratch = wide * (wide > NV ? wide : NV) + N * D;   // each Activations' own, RoPE
    double activations = (B * N + N) * activation_row(c) + 2 * scratch;
    double backward = B * N * (NV + 5 * C + 2 * HD + 2 * KVD + 3 * F + wide) + 2 * N * N +
                      (N > C ? N : C) * D + C + 3 * N * HD;
    double maps = 3 * L * c->num_attention_heads * N * N;
    double batches = 4 * B * N + 3 * (s->steps + 1);   // one batch's ids and labels; the logs
    if (c->task != REVERSE) {   // recall draws its keys' orders: (B, NV/2) twice, and a row
        batches += (B > 4 ? B : 4) * NV + NV / 2;   // (part 5 draws 4 sequences)
    }
    return 4 * (4 * parameter_count(c) + activations + backward + maps + batches);
}

// A lesson run: its training steps, step 1's again for the parts, the example's maps, 32
// batches of evaluation (forwards, a third of a step each); what --dump and --dot copy.
static Cost train_cost(const Settings *s, const Lesson *lesson) {
    const Config *c = &s->config;
    double P = parameter_count(c), B = s->batch, N = c->seq;
    double logs = 3 * (s->steps + 1), maps = 3 * c->num_hidden_layers * c->num_attention_heads *
                                             N * N;
    Cost cost = steps_cost(s, s->steps + 1 + 32 / 3.0);
    cost.bytes = run_bytes(s) + 4 * ((s->save_dir != NULL) + (s->load_dir != NULL)) * P;
    if (lesson->dump_dir != NULL) {   // step 1's logits and .grads, the logs and maps: copies
        cost.bytes += 4 * (P + B * N * c->vocab_size + logs + maps);
        cost.dumped = 4 * (2 * P + B * N * (c->vocab_size + 2) + logs + maps + N);
    }
    if (lesson->dot_file != NULL) {   // step 1's activations as tensors to draw
        cost.bytes += 4 * (P + B * N * activation_row(c));
    }
    return cost;
}
