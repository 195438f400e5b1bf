// adamw.c - the optimizer's side of a step: the parameters in state_dict order with their
// gradients and moments, clip_grad_norm_, the learning-rate schedule, torch.optim.AdamW.
#include "adamw.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"

static Param param(const char *name, const Tensor *value, float *grad) {
    long n = numel(value);
    return (Param){name, value->shape, value->data, grad, arena_alloc((size_t)n, sizeof(float)),
                   arena_alloc((size_t)n, sizeof(float)), n};
}

static const char *layer_name(int l, const char *what) {
    char *name = arena_alloc(80, 1);
    snprintf(name, 80, "layers.%d.%s.weight", l, what);
    return name;
}

AdamW adamw_init(const Model *model, const Grads *grads, double beta1, double beta2,
                 double eps, double weight_decay) {
    AdamW opt = {.beta1 = beta1, .beta2 = beta2, .eps = eps, .weight_decay = weight_decay};
    Param *p = opt.params;
    *p++ = param("embed_tokens.weight", model->embed_tokens, grads->embed_tokens);
    for (int l = 0; l < model->config.num_hidden_layers; l++) {
        const DecoderLayer *layer = &model->layers[l];
        const LayerGrads *g = &grads->layers[l];
        *p++ = param(layer_name(l, "self_attn.q_proj"), layer->q_proj.weight, g->q_proj);
        *p++ = param(layer_name(l, "self_attn.k_proj"), layer->k_proj.weight, g->k_proj);
        *p++ = param(layer_name(l, "self_attn.v_proj"), layer->v_proj.weight, g->v_proj);
        *p++ = param(layer_name(l, "self_attn.o_proj"), layer->o_proj.weight, g->o_proj);
        *p++ = param(layer_name(l, "mlp.gate_proj"), layer->gate_proj.weight, g->gate_proj);
        *p++ = param(layer_name(l, "mlp.up_proj"), layer->up_proj.weight, g->up_proj);
        *p++ = param(layer_name(l, "mlp.down_proj"), layer->down_proj.weight, g->down_proj);
        *p++ = param(layer_name(l, "input_layernorm"), layer->input_layernorm,
                     g->input_layernorm);
        *p++ = param(layer_name(l, "post_attention_layernorm"), layer->post_attention_layernorm,
                     g->post_attention_layernorm);
    }
    *p++ = param("norm.weight", model->norm, grads->norm);
    *p++ = param("lm_head.weight", model->lm_head.weight, grads->lm_head);
    if (model->embed_positions != NULL) {   // --positions learned: registered last
        *p++ = param("embed_positions.weight", model->embed_positions, grads->embed_positions);
    }
    opt.n_params = (int)(p - opt.params);
    return opt;
}

float norm_of(const float *x, long n) {
    return kernels->norm(x, n);   // kernels.c: norm_scalar says in which order it adds
}

const char *grad_name(const char *name) {
    char *text = arena_alloc(strlen(name) + 6, 1);
    sprintf(text, "%s.grad", name);
    return text;
}

float clip_grad_norm(AdamW *opt, float max_norm) {
    float norms[MAX_PARAMS] = {0};
    for (int i = 0; i < opt->n_params; i++) {
        norms[i] = norm_of(opt->params[i].grad, opt->params[i].numel);
    }
    float total = norm_of(norms, opt->n_params);
    // max_norm / (total + 1e-6): a Python float over a tensor, which PyTorch computes as the
    // tensor's reciprocal times the float, in float32
    float coef = (1.0f / (total + 1e-6f)) * max_norm;
    coef = coef < 1.0f ? coef : 1.0f;                   // clamp(max=1.0)
    for (int i = 0; i < opt->n_params; i++) {
        for (long j = 0; j < opt->params[i].numel; j++) {
            opt->params[i].grad[j] = opt->params[i].grad[j] * coef;
        }
    }
    return total;
}

// Step n's learning rate: n/warmup of lr up to step `warmup`, then half a cosine from lr
// there down to a tenth of lr at the last step (n = steps). n > warmup only when
// steps > warmup, so neither division is by 0.
double learning_rate(int n, int steps, int warmup, double lr) {
    if (n <= warmup) {
        return lr * n / warmup;
    }
    double progress = (double)(n - warmup) / (steps - warmup);   // (0, 1]
    return lr * (0.1 + 0.9 * 0.5 * (1.0 + cos(3.141592653589793 * progress)));
}

// torch.optim.AdamW's step (1.13, _single_tensor_adamw), for every weight w with gradient g:
//   w = w * (1 - lr * weight_decay)
//   m = m * beta1 + (1 - beta1) * g         (exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1))
//   v = v * beta2 + (1 - beta2) * g * g     (exp_avg_sq.mul_(beta2).addcmul_(grad, grad, ...))
//   w = w - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// The two 1 - beta^t undo the pull toward 0 of averages that start at 0; without them the
// step would be (1 - beta1^t) / sqrt(1 - beta2^t) times as large (part 2 prints it).
// The scalars are worked out in double, as Python does, then rounded to float as PyTorch
// passes them to its kernels; the compiler fused two of the multiply-adds, so the kernels
// (kernels.c) fuse the same two.
void adamw_step(AdamW *opt, double lr) {
    opt->step += 1;
    double bias_correction1 = 1.0 - pow(opt->beta1, (double)opt->step);
    double bias_correction2 = 1.0 - pow(opt->beta2, (double)opt->step);
    AdamWStep k = {
        .decay = (float)(1.0 - lr * opt->weight_decay),
        .beta1 = (float)opt->beta1,
        .one_minus_beta1 = (float)(1.0 - opt->beta1),
        .beta2 = (float)opt->beta2,
        .one_minus_beta2 = (float)(1.0 - opt->beta2),
        .correction2 = (float)sqrt(bias_correction2),
        .eps = (float)opt->eps,
        .minus_step_size = (float)(-(lr / bias_correction1)),
    };
    for (int i = 0; i < opt->n_params; i++) {
        Param *p = &opt->params[i];
        kernels->adamw(p->value, p->exp_avg, p->exp_avg_sq, p->grad, p->numel, &k);
    }
}
