// Lesson 17: language - lesson 16's model trained on real text, step for step with PyTorch.
//
// WHAT THIS ADDS
//   Lesson 16 trained on puzzles a generator makes without end. Here the same model reads a
//   text and learns to write more of it, as nanoGPT's shakespeare_char does: the text is cut
//   into tokens (characters, or byte pairs learned from the text: tokenizer.c), the first
//   90% is for training and the last 10% for validation, and every step reads a batch of
//   random windows of the training tokens, each token's label the token after it. The loss
//   on validation windows the model never trains on says whether it learned the language
//   or the text by heart. Then it writes: from a prompt, one token at a time through the KV
//   cache, greedily or drawn from its distribution (temperature, top-k, top-p: sample.c).
//   And we look at what its heads learned to read (heads.c): the token just before, the
//   last space, and the token that followed the last time the current one appeared.
//   Every number is PyTorch's to the bit (PyTorch 1.13, one thread, the reference BLAS, as
//   docs/17-language.md runs it): the same tokens, the same windows, the same sampled text.
//   lessons/17-language/README.md says in which order to read the files.
//
// THE MATH
//   train, val = text[:int(0.9 n)], text[int(0.9 n):]          (n characters)
//   ix = torch.randint(len(train) - N, (B,))                     B random window starts
//   x[b] = train[ix[b] : ix[b] + N],  y[b] = train[ix[b] + 1 : ix[b] + N + 1]
//   loss = mean over all B*N positions of -log softmax(model(x))[y]   (lesson 16's step after)
//   sampling: p = softmax(logits / T), cut to the top k or the top p of the mass, and one
//   token drawn with probability p (torch.multinomial)
//
// THE PYTORCH IT MIRRORS (docs/17-language.md has the whole script)
//   torch.manual_seed(seed); model = TinyLlama(config)
//   repeated = train[torch.randint(len(train), (N // 2,))]
//   for step in range(1, steps + 1):
//       x, y = get_batch(train)
//       loss = F.cross_entropy(model(x).view(-1, NV), y.view(-1))
//       opt.zero_grad(); loss.backward(); clip_grad_norm_(model.parameters(), clip); opt.step()
//   then generate(prompt): softmax, top-k, top-p, torch.multinomial(probs, 1)
//
// RUN IT
//   make lesson-17                                 characters of the project's own pages
//   make lesson-17 ARGS="--tokenizer bpe"          byte pairs instead
//   make lesson-17 ARGS="--text FILE"              any UTF-8 text
//   make lesson-17 ARGS="--prompt 'The key' --temperature 0.5"
//   flags: --text --tokenizer --merges --layers --dim --heads --kv-heads --hidden --seq
//          --batch --steps --warmup --lr --weight-decay --clip --eval-every --eval-batches
//          --prompt --sentence --new --temperature --top-k --top-p --save --load --svg
//          --bench --seed --dump --dot --heatmap --help
//
// WHAT TO LOOK FOR
//   - The first loss is about ln(NV): random weights spread their guesses nearly evenly.
//   - The training and validation losses fall together, then part: the gap is what the
//     model knows of this text that does not carry over to the rest of it.
//   - The heads: some read the previous character, some the last space. The induction test
//     (a random string twice) asks whether a head finds the current token's earlier copy
//     and reads what followed it; in a minute on these pages none does, and the loss on
//     the second copy stays the first's (docs/17-language.md says why).
//   - The samples: words of the text at temperature 0.5, inventions at 1, greedy decoding
//     repeating itself.
//
// Size letters: B batch, N tokens a window (--seq), C hidden_size (--dim), H query heads,
// KV key/value heads, D head_dim, NV vocabulary (the tokenizer's). Index letters: b batch
// row, t query position, s key position, l layer, h head.

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adamw.h"
#include "attention.h"
#include "bench.h"
#include "checkpoint.h"
#include "heads.h"
#include "kernels.h"
#include "language.h"
#include "layers.h"
#include "model.h"
#include "sample.h"
#include "show.h"
#include "svg.h"
#include "tokenizer.h"

// --- the text, in tokens --------------------------------------------------------------------

// nanoGPT's prepare.py cuts the text, in characters, at 90%: the first part to train on,
// the last to check on. The tokenizer's vocabulary is the whole text's characters (as
// nanoGPT's), or byte pairs learned from the training part alone (the validation part must
// stay unseen). Both parts are then encoded.
Data data_init(const Lesson *lesson, Settings *s, const Text *text) {
    Data d = {0};
    const unsigned char *train_text = text->bytes, *val_text = text->bytes + text->split_bytes;
    long train_bytes = text->split_bytes, val_bytes = text->n_bytes - text->split_bytes;
    d.train = arena_alloc((size_t)train_bytes + 1, sizeof(int));
    d.val = arena_alloc((size_t)val_bytes + 1, sizeof(int));
    if (s->load_dir != NULL) {
        d.tok = checkpoint_tokenizer(lesson, s->load_dir);
    } else if (s->tokenizer == CHARS) {   // chars = sorted(set(text))
        int *code_points = arena_alloc((size_t)text->n_bytes + 1, sizeof(int));
        d.tok = chars_tokenizer(code_points, utf8_decode(code_points, text->bytes,
                                                         text->n_bytes));
    } else {   // byte pairs, learned on the training part; its tokens come out too
        d.tok = bpe_train(d.train, &d.n_train, train_text, train_bytes, s->merges);
    }
    int missing = 0;
    if (s->load_dir != NULL || s->tokenizer == CHARS) {
        d.n_train = encode(d.train, &missing, &d.tok, train_text, train_bytes);
    }
    d.n_val = d.n_train < 0 ? -1 : encode(d.val, &missing, &d.tok, val_text, val_bytes);
    if (d.n_train < 0 || d.n_val < 0) {   // only a loaded vocabulary of characters can miss
        unsigned char utf8[4];
        usage_error(lesson, "--load %s: its vocabulary has no '%.*s' (U+%04X), which the text "
                    "has", shown(s->load_dir), utf8_encode(utf8, missing), utf8, missing);
    }
    int N = s->config.seq;
    if (d.n_train < N + 1 || d.n_val < N + 1) {
        usage_error(lesson, "--text %s: the %s split holds %ld tokens, fewer than one window "
                    "of --seq %d + 1", shown(s->text_file), d.n_train < N + 1 ? "training"
                    : "validation", d.n_train < N + 1 ? d.n_train : d.n_val, N);
    }
    s->config.vocab_size = d.tok.vocab_size;
    return d;
}

// --- batches ----------------------------------------------------------------------------------

// nanoGPT's get_batch: ix = torch.randint(len(data) - N, (B,)), then x the N tokens from
// each ix and y the N after them, one place later. torch.randint with a range below 2^32
// takes one 32-bit word of the generator per start, start = word % range
// (docs/pytorch-rng.md, section 4).
static Batch get_batch(const Run *run, int B) {
    int N = run->s.config.seq;
    long range = run->data.n_train - N;
    Batch batch = {zeros(shape2(B, N)), zeros(shape2(B, N))};
    batch.input_ids->dtype = batch.labels->dtype = DTYPE_INT64;
    for (int b = 0; b < B; b++) {
        long ix = (long)(random32() % (uint32_t)range);
        for (int t = 0; t < N; t++) {
            batch.input_ids->data[b * N + t] = (float)run->data.train[ix + t];
            batch.labels->data[b * N + t] = (float)run->data.train[ix + t + 1];
        }
    }
    return batch;
}

// The fixed windows an evaluation reads: W = B * eval_batches of them, spread evenly from the
// first token of the split to its last, window j starting at j * (n - N - 1) // (W - 1). The
// same windows every time, so that two evaluations differ only by what the model learned.
static Batch eval_batch(const Run *run, const int *tokens, long n, int e) {
    int B = run->s.batch, N = run->s.config.seq, W = B * run->s.eval_batches;
    Batch batch = {zeros(shape2(B, N)), zeros(shape2(B, N))};
    batch.input_ids->dtype = batch.labels->dtype = DTYPE_INT64;
    for (int b = 0; b < B; b++) {
        long j = (long)e * B + b, start = W > 1 ? j * (n - N - 1) / (W - 1) : 0;
        for (int t = 0; t < N; t++) {
            batch.input_ids->data[b * N + t] = (float)tokens[start + t];
            batch.labels->data[b * N + t] = (float)tokens[start + t + 1];
        }
    }
    return batch;
}

// --- a run: everything training needs, made once ------------------------------------------

Run run_init(const Settings *s, const Data *data) {
    Run run = {.s = *s, .data = *data};
    const Config *c = &s->config;
    int N = c->seq, L = c->num_hidden_layers, H = c->num_attention_heads;
    run.model = model_init(c);            // the draws: the parameters first, then
    run.repeated = arena_alloc((size_t)N / 2 + 1, sizeof(int));
    for (int i = 0; i < N / 2; i++) {     // train[torch.randint(len(train), (N // 2,))]
        run.repeated[i] = data->train[random32() % (uint32_t)data->n_train];
    }
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
    int steps = s->steps > 1 ? s->steps : 1, evals = s->steps / s->eval_every + 2;
    run.loss = floats(steps);
    run.grad_norm = floats(steps);
    run.eval_step = arena_alloc((size_t)evals, sizeof(int));
    run.eval_train = floats(evals);
    run.eval_val = floats(evals);
    run.measures = arena_alloc((size_t)evals, sizeof(HeadMeasures));
    for (int e = 0; e < evals; e++) {
        run.measures[e] = (HeadMeasures){floats(L * H), floats(L * H), floats(L * H), 0, 0};
    }
    // the maps' sentence: its first N tokens, and no more than a line of maps holds (88
    // columns: 88 tokens, or 44 when a token's label is a wide character)
    int missing;
    run.sentence = arena_alloc(strlen(s->sentence) + 1, sizeof(int));
    long n = encode(run.sentence, &missing, &run.data.tok, (const unsigned char *)s->sentence,
                    (long)strlen(s->sentence));
    n = n < N ? n : N;
    long fit = 88 / map_cell(&run.data.tok, run.sentence, (int)n);
    run.n_sentence = (int)(n < fit ? n : fit);
    run.map_steps[1] = s->steps / 2;
    run.map_steps[2] = s->steps;
    run.maps = floats(3L * L * H * run.n_sentence * run.n_sentence);
    return run;
}

// A batch's forward, loss and backward: every parameter's gradient (.grad) filled in. Every
// position asks: its label is the next token.
static float forward_backward(Run *run, const Batch *batch) {
    const Config *c = &run->s.config;
    int asked;
    model_forward(&run->acts, &run->model, batch->input_ids->data, run->s.batch, 0, c->seq);
    float loss = cross_entropy_forward(run->acts.log_probs, &asked, run->acts.logits,
                                       batch->labels, c->vocab_size);
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
// index of its loss), so it is step step + 1 of part 2.
void train_step(Run *run, int step) {
    size_t mark = arena_mark();
    Batch batch = get_batch(run, run->s.batch);
    run->loss[step] = forward_backward(run, &batch);
    run->grad_norm[step] = optimizer_step(run, step + 1);
    arena_release(mark);
}

// --- evaluation: the loss on fixed windows of each split --------------------------------------

// The mean loss over the split's fixed windows, batch by batch (nanoGPT's estimate_loss,
// on windows that do not change). Forward only: nothing is learned from them. With
// `measures`, what the heads do on the first batch (heads.c).
static double split_loss(Run *run, const int *tokens, long n, HeadMeasures *measures) {
    const Config *c = &run->s.config;
    double sum = 0.0;
    for (int e = 0; e < run->s.eval_batches; e++) {
        size_t mark = arena_mark();
        Batch batch = eval_batch(run, tokens, n, e);
        int asked;
        model_forward(&run->acts, &run->model, batch.input_ids->data, run->s.batch, 0, c->seq);
        sum += cross_entropy_forward(run->acts.log_probs, &asked, run->acts.logits,
                                     batch.labels, c->vocab_size);
        if (measures != NULL && e == 0) {
            measure_windows(measures, &run->acts, batch.input_ids->data, &run->data.tok, c,
                            run->s.batch);
        }
        arena_release(mark);
    }
    return sum / run->s.eval_batches;
}

// After `step` steps: both splits' losses, and the heads measured.
static void evaluate(Run *run, int step) {
    int e = run->n_evals++;
    HeadMeasures *m = &run->measures[e];
    run->eval_step[e] = step;
    run->eval_train[e] = (float)split_loss(run, run->data.train, run->data.n_train, NULL);
    run->eval_val[e] = (float)split_loss(run, run->data.val, run->data.n_val, m);
    measure_induction(m, &run->one, &run->model, run->repeated);
    printf("eval after step %d: train %.4f  val %.4f  gap %+.4f  repeated string %.3f -> %.3f\n",
           step, (double)run->eval_train[e], (double)run->eval_val[e],
           (double)(run->eval_val[e] - run->eval_train[e]), (double)m->first,
           (double)m->second);
}

// The sentence's attention weights, every layer and head, into map `which` (0, 1, 2).
static void take_maps(Run *run, int which) {
    const Config *c = &run->s.config;
    int n = run->n_sentence, N = c->seq, L = c->num_hidden_layers, H = c->num_attention_heads;
    size_t mark = arena_mark();
    float *ids = floats(n);
    for (int t = 0; t < n; t++) {
        ids[t] = (float)run->sentence[t];
    }
    model_forward(&run->one, &run->model, ids, 1, 0, n);
    for (int l = 0; l < L; l++) {   // a forward of n tokens leaves head h's (n, n) at h*N*N
        for (int h = 0; h < H; h++) {
            memcpy(run->maps + (((long)which * L + l) * H + h) * n * n,
                   run->one.layers[l].att + (long)h * N * N, (size_t)n * n * sizeof(float));
        }
    }
    arena_release(mark);
}

static void part(int number, const char *what, const char *flags) {
    printf("\n-- part %d: %s (%s) --\n", number, what, flags);
}

// --- part 1: the text, its tokens, the model, the first batch ---------------------------------

static float part1_text(Run *run, const Text *text, Batch *first) {
    const Settings *s = &run->s;
    const Data *d = &run->data;
    print_text_and_tokens(s, text, d);
    print_model(&s->config, &run->opt, s);
    *first = get_batch(run, s->batch);
    int N = s->config.seq;
    printf("x, y = get_batch(train): %d windows of %d tokens, y one token after x; window 0:\n",
           s->batch, N);
    print_window("x[0]", &d->tok, first->input_ids->data, N);
    print_window("y[0]", &d->tok, first->labels->data, N);
    float loss = forward_backward(run, first);
    printf("loss = F.cross_entropy(model(x).view(-1, %d), y.view(-1)) = %.6f\n"
           "  guessing evenly among the %d tokens would give ln(%d) = %.4f\n",
           s->config.vocab_size, (double)loss, s->config.vocab_size, s->config.vocab_size,
           log((double)s->config.vocab_size));
    return loss;
}

// --- part 2: training, and the validation loss -------------------------------------------------

static void print_step(const Run *run, int step) {   // step from 1
    const Settings *s = &run->s;
    printf("step %4d: loss %.6f  grad_norm %.4f  lr %.6f\n", step, (double)run->loss[step - 1],
           (double)run->grad_norm[step - 1], learning_rate(step, s->steps, s->warmup, s->lr));
}

static void part2_training(Run *run, float first_loss) {
    const Settings *s = &run->s;
    part(2, "training, and the loss on text it never trains on", "--steps, --lr change it");
    printf("eval: the mean loss on %d fixed windows of each split (train, val) and val - train;\n"
           "  the repeated string: the loss on its first copy -> on its second\n",
           s->batch * s->eval_batches);
    evaluate(run, 0);
    run->loss[0] = first_loss;
    for (int step = 1; step <= s->steps; step++) {
        if (step == 1) {   // part 1 made step 1's batch and gradients
            run->grad_norm[0] = optimizer_step(run, 1);
        } else {
            train_step(run, step - 1);
        }
        if (step <= 20 || step % s->eval_every == 0 || step == s->steps) {
            print_step(run, step);
        }
        if (step % s->eval_every == 0 || step == s->steps) {
            evaluate(run, step);
        }
        if (step == run->map_steps[1]) {
            take_maps(run, 1);
        }
    }
    print_loss_chart(run->loss, s->steps, run->eval_step, run->eval_val, run->n_evals);
}

// --- part 3: what the heads learned ----------------------------------------------------------

static void part3_heads(Run *run) {
    const Config *c = &run->s.config;
    int L = c->num_hidden_layers, H = c->num_attention_heads, n = run->n_sentence;
    take_maps(run, 2);
    part(3, "what the heads learned", "--sentence changes the maps");
    if (run->n_evals > 0) {
        print_measures(run->measures, run->eval_step, run->n_evals, L, H);
    }
    const float *last = run->maps + 2L * L * H * n * n;   // the maps after training
    print_sentence_maps(&run->data.tok, run->sentence, n, last, L, H);
    if (run->s.heatmap) {
        print_heatmap("attn_weights", tensor_from(shape4(L, H, n, n), last));
    }
}

// --- part 4: writing: the next token's distribution, and samples --------------------------------

static void part4_sampling(Run *run) {
    const Settings *s = &run->s;
    part(4, "writing", "--prompt, --temperature, --top-k, --top-p change it");
    int missing;
    int *prompt = arena_alloc(strlen(s->prompt) + 1, sizeof(int));
    long n = encode(prompt, &missing, &run->data.tok, (const unsigned char *)s->prompt,
                    (long)strlen(s->prompt));
    Sampler flags = {s->temperature, s->top_k, s->top_p};
    print_distribution(&run->one, &run->model, &run->data.tok, prompt, n, &flags);
    const Sampler ladder[3] = {{0.0, 0, 1.0}, {0.5, 0, 1.0}, {1.0, 0, 1.0}};
    for (int i = 0; i < 4; i++) {
        const Sampler *sampler = i < 3 ? &ladder[i] : &flags;
        print_sample(&run->one, &run->model, &run->data.tok, prompt, n, s->new_tokens, sampler);
    }
    if (s->save_dir != NULL) {
        printf("\nthe state_dict, %d tensors, and the tokenizer go to %s/\n", run->opt.n_params,
               s->save_dir);
    }
}

// --- the lesson ------------------------------------------------------------------------------

static void record_step_one(const Run *run, const Batch *first, bool dot, bool dump);
static void finish_outputs(const Run *run, bool dump);   // appendix A, after main
static Cost language_cost(const Settings *s, const Text *text, const Lesson *lesson);   // B

int main(int argc, char **argv) {
    Lesson lesson;
    Text text;
    Settings s = read_flags(&lesson, &text, argc, argv);   // exit 2 on bad flags or text
    kernels_choose();
    check_budget(&lesson, s.bench ? bench_cost(&s) : language_cost(&s, &text, &lesson));
    Data data = data_init(&lesson, &s, &text);   // the tokenizer: exit 2 if a split is short
    if (s.bench) {
        return bench_training(&lesson, &s, &data);
    }
    lesson_start(&lesson);
    trace_pause(lesson.dump_dir == NULL);   // the drawn parameters: --dump's, not --dot's
    Run run = run_init(&s, &data);          // the parameters and the repeated string drawn
    trace_pause(false);
    take_maps(&run, 0);
    if (run.map_steps[1] == 0) {
        take_maps(&run, 1);
    }
    Batch first;
    float loss = part1_text(&run, &text, &first);
    record_step_one(&run, &first, lesson.dot_file != NULL, lesson.dump_dir != NULL);
    if (s.steps > 0) {                      // --load with --steps 0: no training
        part2_training(&run, loss);
    }
    part3_heads(&run);
    part4_sampling(&run);
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

// At the end: the run's losses, evaluations, measures and maps for --dump, the state_dict
// and the tokenizer for --save, the losses and maps as an image for --svg.
static void finish_outputs(const Run *run, bool dump) {
    const Settings *s = &run->s;
    const Config *c = &s->config;
    int L = c->num_hidden_layers, H = c->num_attention_heads, n = run->n_sentence;
    if (dump && s->steps > 0) {
        named("losses", tensor_from(shape1(s->steps), run->loss));
        named("grad_norms", tensor_from(shape1(s->steps), run->grad_norm));
    }
    if (dump && run->n_evals > 0) {
        int E = run->n_evals;
        named("eval_train", tensor_from(shape1(E), run->eval_train));
        named("eval_val", tensor_from(shape1(E), run->eval_val));
        Tensor *measures = zeros(shape4(E, 3, L, H));                            // (E, 3, L, H)
        for (int e = 0; e < E; e++) {
            const float *m[3] = {run->measures[e].previous, run->measures[e].boundary,
                                 run->measures[e].induction};
            for (int k = 0; k < 3; k++) {
                memcpy(measures->data + ((long)e * 3 + k) * L * H, m[k],
                       (size_t)L * H * sizeof(float));
            }
        }
        named("head_measures", measures);
    }
    if (dump) {
        named("attn_weights", tensor_from(shape5(3, L, H, n, n), run->maps));
    }
    if (s->save_dir != NULL) {   // kept: lesson_finish writes them with --dump's and --dot's
        checkpoint_save(&run->opt, &run->data.tok, c, s->save_dir);
    }
    if (s->svg_file != NULL) {
        svg_language(s->svg_file, run, run->maps, run->map_steps);
    }
}

// === appendix B: what a run takes (lesson/budget.h) ==========================================

// The multiply-adds of one training step's matrix products: every Linear's forward, dx and dW
// (3 products of rows x in x out), attention's 2 forward and 4 backward products of D a
// (query, key) pair per head, over the pairs they compute (causal_pairs: N (N + 32) / 2 for N
// a multiple of 32, 62.5% of N x N at 128 and 56% at 256, the products skipping most of what
// the mask makes 0).
double step_multiply_adds(const Settings *s) {
    const Config *c = &s->config;
    double C = c->hidden_size, D = c->head_dim, F = c->intermediate_size, N = c->seq;
    double H = c->num_attention_heads, KV = c->num_key_value_heads, L = c->num_hidden_layers;
    double rows = (double)s->batch * N;
    double linear = L * (2 * C * H * D + 2 * C * KV * D + 3 * C * F) + C * c->vocab_size;
    return 3 * rows * linear + 6 * L * s->batch * H * causal_pairs(c->seq) * D;
}

// What `steps` training steps take: their matrix products' multiply-adds at the price of the
// kernels chosen (Kernels.ns_per_multiply_add), which covers most of a step; and the
// cross-entropy's log_softmax over the vocabulary, forward and backward, an exp and a few
// operations an element each way, in the same kernels: counted as 20 multiply-adds an element.
Cost steps_cost(const Settings *s, double steps) {
    const Config *c = &s->config;
    double B = s->batch, N = c->seq, NV = c->vocab_size;
    double work = step_multiply_adds(s) + 20 * B * N * NV;
    return (Cost){.kernel_seconds = steps * work * kernels->ns_per_multiply_add * 1e-9};
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
// activations of a batch and of one sequence; the backward's scratch; the maps and the logs;
// and the text's tokens (n_tokens of them, an int each).
double run_bytes(const Settings *s, double n_tokens) {
    const Config *c = &s->config;
    double C = c->hidden_size, F = c->intermediate_size, N = c->seq, NV = c->vocab_size;
    double D = c->head_dim, HD = c->num_attention_heads * D;
    double KVD = c->num_key_value_heads * D, B = s->batch, L = c->num_hidden_layers;
    double H = c->num_attention_heads, wide = C > F ? C : F;
    double scratch = wide * (wide > NV ? wide : NV) + N * D;   // each Activations' own, RoPE
    double activations = (B * N + N) * activation_row(c) + 2 * scratch;
    double backward = B * N * (NV + 5 * C + 2 * HD + 2 * KVD + 3 * F + wide) + 2 * N * N +
                      (N > C ? N : C) * D + C + 3 * N * HD;
    double evals = (double)s->steps / s->eval_every + 2;
    double logs = 2 * (s->steps + 1) + evals * (3 + 3 * L * H);
    double maps = 3 * L * H * N * N;
    return 4 * (4 * parameter_count(c) + activations + backward + maps + logs + 4 * B * N +
                n_tokens + N);
}

// A lesson run: reading and tokenizing the text (byte pairs: every merge counts every pair of
// the training text, and a (V, V) table of counts); its training steps, step 1's again; the
// evaluations (forwards of both splits' windows, a third of a step a batch); the samples
// (a forward of one token each, and NV exponentials drawn); what --dump and --dot copy.
// Part 4 holds, beside the run's tensors, the prompt's tokens and its line as printed
// (show.c's decoded() and inline_text(): its bytes; room for 3 a byte replaced, though none
// is, the prompt being UTF-8 (language_flags.c); 4 a byte shown; 3 a byte of those inline:
// at most 20 a byte of the prompt), the next token's
// distribution (sample.c's print_distribution: p (4, NV), cut, kept, and three sorts of NV
// with their merge buffers), and then one sample at a time (print_sample lets each go):
// its tokens, the prompt's and the new ones, a window of N and the probabilities (NV).
static Cost language_cost(const Settings *s, const Text *text, const Lesson *lesson) {
    const Config *c = &s->config;
    double P = parameter_count(c), B = s->batch, N = c->seq, NV = c->vocab_size;
    double L = c->num_hidden_layers, H = c->num_attention_heads;
    double evals = (double)s->steps / s->eval_every + 2, bytes = (double)text->n_bytes;
    double forwards = evals * 2 * s->eval_batches / 3.0, samples = 3.0 * s->new_tokens;
    Cost cost = steps_cost(s, s->steps + 1 + forwards + samples / (B * N) + 3);
    cost.exps += samples * NV;
    cost.elements = 8 * bytes;   // the text read, checked, decoded, encoded
    // AdamW's update and clip_grad_norm_'s passes over every parameter and its gradient, a
    // step: most of a step where the model is tiny (6 ns a parameter at --dim 8 --seq 4 on
    // the machine of budget.h), counted as one element a parameter
    cost.elements += s->steps * P;
    // and the cross-entropy's rows beyond its kernels' products: each position's NV logits
    // read, shifted, exponentiated and summed forward, and again backward (at --dim 8 --seq
    // 16 most of a step: 0.84 ms measured against 0.45 predicted without it), counted as
    // three-eighths of an element each (3 ns)
    cost.elements += 0.375 * (s->steps + 1) * B * N * NV;
    // and attention's scores beyond their products: each masked, exponentiated and summed
    // forward, and its softmax's gradient backward (at --seq 42 --dim 8, 2 of a step's 3.3
    // ms measured), counted as five-eighths of an element each (5 ns)
    cost.elements += 0.625 * (s->steps + 1 + forwards) * B * H * N * N * L;
    // the text, its code points (for the vocabulary of characters) and set()'s flags, a bit
    // for each of Unicode's 0x110000 code points (tokenizer.c), its tokens
    cost.bytes = run_bytes(s, 0) + 10 * bytes + 0x110000 / 8;
    if (s->tokenizer == BPE && s->load_dir == NULL) {
        double V = 256.0 + s->merges;
        cost.elements += 2.0 * s->merges * (double)text->split_bytes;
        cost.bytes += 4 * (V * V + 2 * bytes);
    }
    cost.bytes += 4 * ((s->save_dir != NULL) + (s->load_dir != NULL)) * P;
    double prompt = (double)strlen(s->prompt), sentence = (double)strlen(s->sentence);
    cost.bytes += 4 * (prompt + 1) + 20 * prompt + 4 * (N + 13 * NV) +   // the prompt, part 4
                  4 * (prompt + s->new_tokens + N + NV) +                  // a sample
                  4 * (sentence + 1);                                      // the sentence's ids
    if (lesson->dump_dir != NULL) {   // step 1's logits and .grads, the logs and maps: copies
        double logs = 2 * (s->steps + 1) + evals * (2 + 3 * L * H), maps = 3 * L * H * N * N;
        cost.bytes += 4 * (P + B * N * NV + logs + maps);
        cost.dumped = 4 * (2 * P + B * N * (NV + 4) + logs + maps);
    }
    if (lesson->dot_file != NULL) {   // step 1's activations as tensors to draw
        cost.bytes += 4 * (P + B * N * activation_row(c));
    }
    return cost;
}
