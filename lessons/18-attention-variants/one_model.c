// one_model.c - --experiment none: the one model --positions, --window and --attention
// describe, trained and shown as lesson 16 shows its model: its first step's gradients, the
// loss as it falls, what each head learned, decoding one token at a time with what it keeps
// (a cache, a rolling buffer of the window's slots, or linear attention's state), and its
// answers on fresh sequences.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "adamw.h"
#include "attend.h"
#include "kernels.h"
#include "layers.h"
#include "model.h"
#include "show.h"
#include "variants.h"

static void print_step(const Run *run, int step) {   // step from 1
    const Settings *s = run->s;
    printf("step %3d: loss %.6f  accuracy %.4f  grad_norm %.4f  lr %.6f\n", step,
           (double)run->loss[step - 1], (double)run->accuracy[step - 1],
           (double)run->grad_norm[step - 1], learning_rate(step, s->steps, s->warmup, s->lr));
}

// Decode the example one token at a time, the true tokens fed in (as training reads them):
// what the cache holds, the answers at the questions, and how far the logits are from one
// forward of the whole sequence.
static void part4_decoding(Run *run, const Batch *example) {
    const Config *c = &run->model.config;
    int N = run->N, NV = c->vocab_size, KV = c->num_key_value_heads, D = c->head_dim;
    const float *ids = example->input_ids->data, *labels = example->labels->data;
    int slots = c->window < N ? c->window : N;
    part(4, "decoding, one token at a time: what it keeps", "--window and --attention change it");
    DecodeState st = decode_init(c, slots);
    Activations full = activations_init(c, 1, N);
    model_forward(&full, &run->model, ids, 1, N);
    float largest = 0.0f;
    if (c->attention == SOFTMAX) {
        printf("each layer keeps %d slots of keys and values (2 x %d x %d floats each); position "
               "t goes\n  into slot t %% %d%s\n", slots, KV, D, slots,
               slots < N ? ", over the key the window has just let go: a rolling buffer"
                         : ": every key stays, lesson 16's cache");
    } else {
        printf("each layer keeps its state, S (%d x %d x %d) and z (%d x %d): %d floats after "
               "every token\n", KV, D, D, KV, D, KV * (D * D + D));
    }
    for (int t = 0; t < N; t++) {
        decode_token(&st, &run->model, (int)ids[t], t);
        for (int i = 0; i < NV; i++) {
            largest = fmaxf(largest, fabsf(st.logits[i] - full.logits[(long)t * NV + i]));
        }
        if (c->attention == SOFTMAX && slots < N) {
            printf("  after %s (position %2d) the slots hold positions", token_text(&run->s->task,
                   (int)ids[t]), t);
            for (int i = 0; i < slots; i++) {
                printf(" %2d", st.layers[0].position[i]);
            }
            printf("\n");
        }
        if (c->attention == LINEAR) {   // its sums grow, its size does not
            printf("  after %s (position %2d) the state holds %d floats; in layer 0, "
                   "z[0][0] = %.4f\n", token_text(&run->s->task, (int)ids[t]), t, KV * (D * D + D),
                   (double)st.layers[0].z[0]);
        }
        if ((int)labels[t] != IGNORE_INDEX) {
            int best = argmax(st.logits, NV);
            printf("  at the question %s (position %d) it answers %s (%s)\n",
                   token_text(&run->s->task, (int)ids[t]), t, token_text(&run->s->task, best),
                   best == (int)labels[t] ? "right" : "wrong");
        }
    }
    printf("its logits against one forward of the whole sequence: max |difference| %.3g\n",
           (double)largest);
}

void run_none(const Settings *s, const Lesson *lesson) {
    Config c = s->config;
    int N = s->seq, L = c.num_hidden_layers, H = c.num_attention_heads;
    part(1, "one model and its first step", "--positions, --window and --attention choose it");
    trace_pause(lesson->dump_dir == NULL);   // the drawn parameters: --dump's
    Run run = run_init(s, &c, N);
    trace_pause(true);
    long count = 0;
    for (int i = 0; i < run.opt.n_params; i++) {
        count += run.opt.params[i].numel;
    }
    printf("model = TinyLlama(%s): %ld parameters\n", variant_name(&c, N), count);
    Batch first = make_batch(&s->task, s->batch, N);
    run.loss[0] = forward_backward(&run, &first, &run.accuracy[0]);
    printf("input_ids, labels = make_batch(%d, %d): input_ids[0] = %s\n", s->batch, N,
           sequence_text(&s->task, first.input_ids->data, N));
    printf("loss = %.6f; loss.backward() leaves in every parameter's .grad, by its norm:\n",
           (double)run.loss[0]);
    for (int i = 0; i < run.opt.n_params; i++) {
        const Param *p = &run.opt.params[i];
        printf("  %-44s %-10s %.6f\n", p->name, shape_str(p->shape, SIZES_TUPLE),
               (double)norm_of(p->grad, p->numel));
    }
    record_step_one(&run, &first, lesson);
    run.grad_norm[0] = clip_grad_norm(&run.opt, s->clip > 0 ? (float)s->clip : INFINITY);
    adamw_step(&run.opt, learning_rate(1, s->steps, s->warmup, s->lr));
    part(2, "training: the loss and accuracy as they fall", "--steps and --lr change it");
    for (int step = 1; step <= s->steps; step++) {
        if (step > 1) {
            size_t mark = arena_mark();
            Batch batch;
            train_step(&run, step, &batch);
            arena_release(mark);
        }
        if (step <= 10 || step % 50 == 0 || step == s->steps) {
            print_step(&run, step);
        }
    }
    print_chart(run.loss, run.accuracy, s->steps);
    part(3, "what each head learned: its attention on one fresh sequence", "--seed changes it");
    Batch example = make_batch(&s->task, 1, N);
    Activations acts = activations_init(&c, 1, N);
    model_forward(&acts, &run.model, example.input_ids->data, 1, N);
    float *maps = floats((long)L * H * N * N);
    printf("the example: %s\n  row: the query's token, column: the key's; shades: blank for 0 "
           "(a key not seen), then\n  %s for each ninth of (0, 1]%s\n",
           sequence_text(&s->task, example.input_ids->data, N), SHADES_SPACED,
           c.attention == LINEAR ? "; linear attention's: its parallel form's weights" : "");
    for (int l = 0; l < L; l++) {
        float *att = maps + (long)l * H * N * N;
        if (c.attention == SOFTMAX) {
            memcpy(att, acts.layers[l].att, (size_t)H * N * N * sizeof(float));
        } else {
            linear_weights(att, &acts.layers[l], &c, 0, N);
        }
        print_maps(&s->task, example.input_ids->data, att, H, N, l);
        printf("        ");
        for (int h = 0; h < H; h++) {
            HeadFocus f = head_focus(example.input_ids->data, example.labels->data,
                                     att + (long)h * N * N, N);
            printf("%s%.2f %.2f", h == 0 ? "" : "      ", (double)f.previous, (double)f.answer);
        }
        printf("   (previous token, answer)\n");
    }
    if (s->heatmap) {
        print_heatmap("attn_weights", tensor_from(shape4(L, H, N, N), maps));
    }
    part4_decoding(&run, &example);
    part(5, "the trained model on fresh sequences", "--steps changes it");
    int edges[4] = {N, N, N, N};
    Score sc = score(s, &run.model, N, edges);
    printf("answers right: %ld of %ld (%.2f%%)\n", sc.right, sc.asked,
           100.0 * (double)sc.right / (double)sc.asked);
    if (lesson->dump_dir != NULL) {
        trace_pause(false);
        named("losses", tensor_from(shape1(s->steps), run.loss));
        named("grad_norms", tensor_from(shape1(s->steps), run.grad_norm));
        named("example", example.input_ids);
        named("attn_weights", tensor_from(shape4(L, H, N, N), maps));
        trace_pause(true);
    }
}
