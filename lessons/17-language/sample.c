// sample.c - writing text: the next token from the logits (greedy, temperature, top-k,
// top-p, and PyTorch's torch.multinomial), and generation through the KV cache.
//
// The model gives, after each prefix, logits over the vocabulary; softmax turns them into
// the probability of each next token. Writing is choosing one and feeding it back:
//   greedy          the most likely token, every time: the same text every run, and often
//                   the same phrase over and over
//   temperature T   softmax(logits / T): T < 1 sharpens the distribution toward the likely
//                   tokens, T > 1 flattens it toward the unlikely ones
//   top-k           only the k most likely tokens may be drawn (nanoGPT's generate)
//   top-p           only the smallest set of most likely tokens holding p of the mass
//                   (nucleus sampling: Holtzman et al., "The Curious Case of Neural Text
//                   Degeneration", 2020): as many tokens as the model is unsure among
// and then one token drawn with its probability, by torch.multinomial's method, so that the
// page's PyTorch draws the same tokens.
#include "sample.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "show.h"

// --- choosing the next token ----------------------------------------------------------------

// The index of the largest of n values, the first on a tie (torch.argmax).
static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++) {
        best = x[i] > x[best] ? i : best;
    }
    return best;
}

// The order of n values from the largest down, equal values in the order of their index:
// torch.sort(x, descending=True, stable=True).indices. A merge sort of the indices (runs of
// 1, 2, 4, ... merged pairwise, the left run first on a tie, which keeps it stable).
static void order_descending(int *order, const float *x, int n) {
    int *from = order, *to = arena_alloc((size_t)n, sizeof(int));
    for (int i = 0; i < n; i++) {
        order[i] = i;
    }
    for (int width = 1; width < n; width *= 2) {
        for (int left = 0; left < n; left += 2 * width) {
            int mid = left + width < n ? left + width : n;
            int end = left + 2 * width < n ? left + 2 * width : n;
            int i = left, j = mid, k = left;
            while (i < mid && j < end) {
                to[k++] = x[from[j]] > x[from[i]] ? from[j++] : from[i++];
            }
            while (i < mid) {
                to[k++] = from[i++];
            }
            while (j < end) {
                to[k++] = from[j++];
            }
        }
        int *merged = to;   // the merged runs are the next pass's input
        to = from;
        from = merged;
    }
    if (from != order) {
        memcpy(order, from, (size_t)n * sizeof(int));
    }
}

// nanoGPT's top-k: v, _ = torch.topk(logits, k); logits[logits < v[-1]] = -inf. Every
// logit below the k-th largest is cut (ties with it stay).
static void top_k_cut(float *logits, int n, int k) {
    int *order = arena_alloc((size_t)n, sizeof(int));
    order_descending(order, logits, n);
    float kth = logits[order[k - 1]];
    for (int i = 0; i < n; i++) {
        logits[i] = logits[i] < kth ? -INFINITY : logits[i];
    }
}

// The page's PyTorch writes it as
//     sorted_probs, order = torch.sort(probs, descending=True, stable=True)
//     before = torch.cumsum(sorted_probs, 0) - sorted_probs      # the mass above each
//     sorted_probs[before >= top_p] = 0
// torch.cumsum on floats adds in double and rounds each running total to a float; the
// comparison is made in float, with p rounded to a float.
void top_p(float *kept, const float *probs, int n, float p) {
    int *order = arena_alloc((size_t)n, sizeof(int));
    order_descending(order, probs, n);
    double cumulative = 0.0;
    for (int r = 0; r < n; r++) {
        int i = order[r];
        cumulative += probs[i];
        float before = (float)cumulative - probs[i];
        kept[i] = before >= p ? 0.0f : probs[i];
    }
}

// torch.multinomial(probs, 1), PyTorch 1.13's CPU path (aten/src/ATen/native/Distributions.cpp,
// multinomial_out): not a walk along the cumulative sum, but the exponential race: draw for
// every token i an independent q_i ~ Exp(1) and take the argmax of probs_i / q_i. Token i
// wins with probability probs_i / sum(probs) (the smallest of the q_i / probs_i, exponentials
// of rates probs_i, is token i's that often), so the probabilities need not sum to 1.
// q = torch.empty_like(probs).exponential_(1) draws them one after the other, each from a
// 53-bit uniform u of one random64() (two words): q = -1.0 / 1 * log(1 - u), in double, then
// rounded to a float (DistributionTemplates.h's exponential_kernel, TransformationHelper.h);
// then q = probs / q in float, and argmax. Every token takes its draw, even those cut to 0.
int multinomial(const float *probs, int n) {
    int best = 0;
    float best_value = 0.0f;
    for (int i = 0; i < n; i++) {
        double u = (double)(random64() & ((1ULL << 53) - 1)) * 0x1p-53;   // [0, 1)
        float q = (float)(-1.0 * log(1.0 - u));
        float value = probs[i] / q;
        if (i == 0 || value > best_value) {
            best = i;
            best_value = value;
        }
    }
    return best;
}

// nanoGPT's generate (model.py, which sample.py calls), one step: logits / T, top-k,
// softmax, then (as Hugging Face's generate adds) top-p, then torch.multinomial.
static int choose(float *probs, const float *logits, int NV, const Sampler *s) {
    if (s->temperature == 0.0) {
        memcpy(probs, logits, (size_t)NV * sizeof(float));
        return argmax(logits, NV);
    }
    float temperature = (float)s->temperature;
    for (int i = 0; i < NV; i++) {
        probs[i] = logits[i] / temperature;
    }
    if (s->top_k > 0 && s->top_k < NV) {
        top_k_cut(probs, NV, s->top_k);
    }
    kernels->softmax_rows(probs, 1, NV);
    if (s->top_p < 1.0) {
        float *all = floats(NV);
        memcpy(all, probs, (size_t)NV * sizeof(float));
        top_p(probs, all, NV, (float)s->top_p);
    }
    return multinomial(probs, NV);
}

int next_token(float *probs, const float *logits, int NV, const Sampler *s) {
    size_t mark = arena_mark();   // the sorts' orders, let go at the end
    int token = choose(probs, logits, NV, s);
    arena_release(mark);
    return token;
}

// --- generation through the KV cache ---------------------------------------------------------

// The model's logits after the last of T tokens `window` holds, run as one call from
// position 0 (a fresh cache: the earlier positions are overwritten).
static const float *prefill(Activations *one, const Model *model, const float *window, int T) {
    model_forward(one, model, window, 1, 0, T);
    return one->logits + (long)(T - 1) * model->config.vocab_size;
}

// The cache holds the keys and values of at most N tokens (the positions RoPE was trained
// on): the last N of the prompt to start, then one more a token. When it is full the
// newest N/2 tokens are run again as a fresh start and generation goes on from there, each
// token still seeing at most N before it. (llama.cpp's context shift does the same job
// without running them again: it drops the older half from the cache and moves the newer
// half's positions down.)
void generate(int *out, Activations *one, const Model *model, const int *prompt, long n,
              int n_new, const Sampler *sampler) {
    int N = model->config.seq, NV = model->config.vocab_size;
    float *window = floats(N), *probs = floats(NV);   // the cached tokens, as the model reads
    memcpy(out, prompt, (size_t)n * sizeof(int));
    int used = n < N ? (int)n : N;                      // window = ids[-N:]
    for (int t = 0; t < used; t++) {
        window[t] = (float)out[n - used + t];
    }
    const float *logits = prefill(one, model, window, used);
    for (int i = 0; i < n_new; i++) {
        int next = next_token(probs, logits, NV, sampler);
        out[n++] = next;
        if (i + 1 == n_new) {
            break;
        }
        if (used == N) {   // full: the last N/2 tokens, from position 0 again
            used = N / 2;
            for (int t = 0; t < used; t++) {
                window[t] = (float)out[n - used + t];
            }
            logits = prefill(one, model, window, used);
        } else {           // the new token alone at the next position; the rest is cached
            window[used] = (float)next;
            model_forward(one, model, window, 1, used, 1);
            logits = one->logits + (long)used * NV;
            used += 1;
        }
    }
}

// --- part 4's prints ---------------------------------------------------------------------------

enum { SHOWN = 10, BAR = 40 };

// Probabilities renormalised to sum to 1 (p / p.sum(), torch.sum's order), for printing.
static void renormalised(float *out, const float *p, int n) {
    float total = kernels->sum(p, n);
    for (int i = 0; i < n; i++) {
        out[i] = p[i] / total;
    }
}

void print_distribution(Activations *one, const Model *model, const Tokenizer *tok,
                        const int *prompt, long n, const Sampler *flags) {
    int N = model->config.seq, NV = model->config.vocab_size, used = n < N ? (int)n : N;
    float *window = floats(N);
    for (int t = 0; t < used; t++) {
        window[t] = (float)prompt[n - used + t];
    }
    const float *logits = prefill(one, model, window, used);
    // p (4, NV): at T = 1; at the flags' T (1 if greedy); then top-k; then top-p, renormalised
    float *p = floats(4L * NV), *cut = floats(NV), *kept = floats(NV);
    float temperature = flags->temperature > 0 ? (float)flags->temperature : 1.0f;
    for (int i = 0; i < NV; i++) {
        p[i] = logits[i];
        p[NV + i] = logits[i] / temperature;
        cut[i] = p[NV + i];
    }
    kernels->softmax_rows(p, 2, NV);
    if (flags->top_k > 0 && flags->top_k < NV) {
        top_k_cut(cut, NV, flags->top_k);
    }
    kernels->softmax_rows(cut, 1, NV);
    memcpy(p + 2L * NV, cut, (size_t)NV * sizeof(float));
    memcpy(kept, cut, (size_t)NV * sizeof(float));
    if (flags->top_p < 1.0) {
        top_p(kept, cut, NV, (float)flags->top_p);
    }
    renormalised(p + 3L * NV, kept, NV);
    int kept_k = 0, kept_p = 0;
    for (int i = 0; i < NV; i++) {
        kept_k += p[2L * NV + i] > 0;
        kept_p += p[3L * NV + i] > 0;
    }
    int *order = arena_alloc((size_t)NV, sizeof(int));
    order_descending(order, p, NV);
    printf("the prompt, %ld token%s: \"%s\"\n", n, n == 1 ? "" : "s", inline_text(tok, prompt, n));
    printf("the next token's probabilities, softmax(logits / T), the %d most likely at T = 1 "
           "first:\n", SHOWN < NV ? SHOWN : NV);
    char t_label[32];
    snprintf(t_label, sizeof t_label, "T = %g", (double)temperature);
    printf("  %-10s %-8s %-*s %9s %9s %9s\n", "token", "T = 1", BAR, "", t_label, "top-k",
           "top-p");
    float rest[4] = {0};
    for (int r = 0; r < NV; r++) {
        int i = order[r];
        if (r >= SHOWN) {   // the rest, added in this order
            for (int k = 0; k < 4; k++) {
                rest[k] += p[(long)k * NV + i];
            }
            continue;
        }
        char bar[BAR + 1];
        int length = (int)((double)p[i] * BAR + 0.5);
        memset(bar, '#', (size_t)length);
        bar[length] = '\0';
        printf("  %s %-8.4f %-*s %9.4f %9.4f %9.4f\n", padded(quoted(tok, i), 10), (double)p[i],
               BAR, bar, (double)p[NV + i], (double)p[2L * NV + i], (double)p[3L * NV + i]);
    }
    if (NV > SHOWN) {
        printf("  %-10s %-8.4f %-*s %9.4f %9.4f %9.4f\n", "the rest", (double)rest[0], BAR, "",
               (double)rest[1], (double)rest[2], (double)rest[3]);
    }
    printf("  T = %g %s; top-k %d %s %d tokens; top-p %g keeps %d\n", (double)temperature,
           temperature < 1 ? "sharpens it" : temperature > 1 ? "flattens it" : "leaves it",
           flags->top_k, flags->top_k > 0 ? "keeps" : "(none) keeps all", kept_k, flags->top_p,
           kept_p);
}

void print_sample(Activations *one, const Model *model, const Tokenizer *tok, const int *prompt,
                  long n, int n_new, const Sampler *s) {
    size_t mark = arena_mark();   // the sample's tokens, let go once it is printed
    int *out = arena_alloc((size_t)(n + n_new), sizeof(int));
    generate(out, one, model, prompt, n, n_new, s);
    if (s->temperature == 0) {
        printf("\ngreedy (temperature 0), %d tokens:\n", n_new);
    } else {
        printf("\ntemperature %g, top-k %d, top-p %g, %d tokens:\n", s->temperature, s->top_k,
               s->top_p, n_new);
    }
    print_wrapped(tok, out, n + n_new);
    arena_release(mark);
}
