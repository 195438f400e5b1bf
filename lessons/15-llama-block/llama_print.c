// llama_print.c - what lesson 15 prints and measures with (llama_print.h).
#include <math.h>
#include <stdio.h>

#include "llama_print.h"

void part(int number, const char *what, const char *flags) {
    printf("\n-- part %d: %s (%s) --\n", number, what, flags);
}

const Tensor *first(const Tensor *t, int count) {
    while (t->shape.ndim > 1) {
        t = select_index(t, 0, 0);
    }
    return narrow(t, 0, 0, size(t, 0) < count ? size(t, 0) : count);
}

float score(const Tensor *a, const Tensor *b) {
    float dot = 0.0f;
    for (int d = 0; d < size(a, 0); d++) {
        dot += *at1(a, d) * *at1(b, d);
    }
    return dot / (float)sqrt((double)size(a, 0));
}

void print_relative_costs(int N, int H, int KV, int D) {
    int MP = 512;   // BERT's max_position_embeddings
    // Lesson 12 learns a row of D numbers per distance, and has none past its table.
    printf("lesson 12's relative_key, max_position_embeddings %d (BERT's): distance_embedding "
           "(%d, %d),\n  %d learned numbers per layer; each score adds q . table[m - n + %d]: "
           "%ld multiply-adds\n  for these %d tokens; |m - n| >= %d has no row (PyTorch: "
           "IndexError)\n", MP, 2 * MP - 1, D, (2 * MP - 1) * D, MP - 1, (long)H * N * N * D, N,
           MP);
    printf("RoPE: 0 learned numbers (%d angles from the base); turning q and k: %ld multiplies;\n"
           "  any position turns (m = %d above); what a model learned at the lengths it was "
           "trained on\n  is another matter (part 5)\n", D / 2, 2L * (H + KV) * N * D, N + 999);
}

void print_periods(const int *bases, const Tensor *const *inv_freq, int n_bases, int half) {
    const double two_pi = 6.283185307179586;   // 2 * math.pi
    printf("positions per turn of pair i, 2 * pi / theta_i:\npair i");
    for (int b = 0; b < n_bases; b++) {
        char title[32];
        snprintf(title, sizeof title, "base %d", bases[b]);
        printf("%14s", title);
    }
    for (int k = 0; k < (half > 8 ? 8 : half); k++) {
        int i = half > 8 ? (int)lround(k * (half - 1) / 7.0) : k;   // 8 pairs, first to last
        printf("\n%6d", i);
        for (int b = 0; b < n_bases; b++) {
            printf("%14.1f", two_pi / (double)inv_freq[b]->data[i]);
        }
    }
    printf("\n");
}

void print_block_costs(int n, int c, int h, int kv, int d, int f) {
    long long N = n, C = c, H = h, KV = kv, D = d, F = f;
    const char *names[3] = {"ViT block (lesson 11)", "BERT layer (lesson 12)",
                            "Llama layer (here)"};
    // attention, MLP, norms: ViT's qkv (no bias) and proj, fc1 and fc2 to 4C, two LayerNorms;
    // BERT's query, key, value and dense with biases, its feed-forward to 4C, two LayerNorms.
    long long params[3][3] = {{4 * C * C + C, 8 * C * C + 5 * C, 4 * C},
                              {4 * C * C + 4 * C, 8 * C * C + 5 * C, 4 * C},
                              {2 * C * H * D + 2 * C * KV * D, 3 * C * F, 2 * C}};
    long long encoder_macs = 4 * N * C * C + 2 * N * N * C + 8 * N * C * C;   // ViT's, BERT's
    long long macs[3] = {encoder_macs, encoder_macs,
                         N * C * (2 * H + 2 * KV) * D + N * (N + 1) * H * D + 3 * N * C * F};
    char title[32];
    snprintf(title, sizeof title, "MACs, %lld tokens", N);
    printf("%-24s%10s%10s%8s%10s%16s\n", "", "attention", "MLP", "norms", "total", title);
    for (int i = 0; i < 3; i++) {
        printf("%-24s%10lld%10lld%8lld%10lld%16lld\n", names[i], params[i][0], params[i][1],
               params[i][2], params[i][0] + params[i][1] + params[i][2], macs[i]);
    }
    printf("MACs: attention 4*N*C*C + 2*N*N*C (11, 12), N*C*(2*H + 2*KV)*D + N*(N+1)*H*D (here: "
           "causal,\n  only the scores at or before each token); MLP 8*N*C*C (4*dim hidden), "
           "3*N*C*hidden (here)\n");
}
