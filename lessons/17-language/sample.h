// sample.h - writing: the next token chosen from the model's logits, and text generated
// through the KV cache (sample.c).
#ifndef SAMPLE17_H
#define SAMPLE17_H

#include "model.h"
#include "tokenizer.h"

// How the next token is chosen: temperature 0 is greedy (the most likely token); otherwise
// the logits are divided by the temperature, cut to the top_k largest (0: no cut), turned
// into probabilities, cut to the smallest set of most likely tokens that holds top_p of the
// mass (1: no cut), and one token is drawn.
typedef struct {
    double temperature;
    int top_k;
    double top_p;
} Sampler;

// Top-p (nucleus) sampling's cut: kept gets probs (n, summing to 1) with every token
// outside the nucleus set to 0. The nucleus is the smallest set of the most likely tokens
// whose probabilities add up to at least p: going down the tokens from the most likely
// (equal ones in the order of their ids), a token is kept while the mass of those above it
// is still below p. The exercise of docs/17-language.md asks for this function.
void top_p(float *kept, const float *probs, int n, float p);

// torch.multinomial(probs, 1): one token drawn from probs (n, not necessarily summing to 1)
// with PyTorch's generator, as PyTorch 1.13 draws it.
int multinomial(const float *probs, int n);

// The next token after `logits` (NV) as the sampler says; probs (NV) is left holding the
// distribution it was drawn from (not renormalised after the cuts).
int next_token(float *probs, const float *logits, int NV, const Sampler *sampler);

// Generation from a prompt (n tokens): n_new tokens appended, each from the logits of the
// last, through the KV cache of `one`. out (n + n_new) gets the prompt and the new tokens.
void generate(int *out, Activations *one, const Model *model, const int *prompt, long n,
              int n_new, const Sampler *sampler);

// Part 4's prints: the next token's probabilities after the prompt, at temperature 1 and
// through the flags' temperature, top-k and top-p; and one sample of n_new tokens.
void print_distribution(Activations *one, const Model *model, const Tokenizer *tok,
                        const int *prompt, long n, const Sampler *flags);
void print_sample(Activations *one, const Model *model, const Tokenizer *tok, const int *prompt,
                  long n, int n_new, const Sampler *sampler);

#endif
