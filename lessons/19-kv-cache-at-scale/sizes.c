// sizes.c - part 6: the cache a token takes in real models, from their published configs
// (config.json on the Hugging Face Hub; docs/19-kv-cache-at-scale.md names each), counted, in
// bfloat16 (2 bytes a number), as they are served.
//
// Per token and layer: MHA and GQA keep a key and a value per key/value head,
// 2 * num_key_value_heads * head_dim numbers; MLA keeps kv_lora_rank + qk_rope_head_dim.
// A sliding window keeps the last sliding_window tokens only, whatever the length. int8 keeps
// a byte a number and a float32 scale per token and key/value head, for keys and for values.
#include <stdio.h>

#include "at_scale.h"

typedef struct {
    const char *model, *attention;
    int layers;           // num_hidden_layers
    double numbers;       // cached per token and layer
    double bytes;         // per number: 2 (bfloat16), 1 (int8)
    double extra;         // bytes per token and layer besides: int8's scales
    int window;           // sliding_window, or 0
} ModelCache;

#define TOKENS 32768   // the length the last column is for

static const ModelCache MODELS[] = {
    {"Llama 2 7B", "MHA, 32 kv heads of 128", 32, 2 * 32 * 128, 2, 0, 0},
    {"Llama 3 8B", "GQA, 8 kv heads of 128", 32, 2 * 8 * 128, 2, 0, 0},
    {"Llama 3 8B as MQA", "MQA, 1 kv head of 128", 32, 2 * 1 * 128, 2, 0, 0},
    {"Llama 3 8B, int8 cache", "GQA 8, int8 + scales", 32, 2 * 8 * 128, 1, 2 * 8 * 4, 0},
    {"Llama 3 70B", "GQA, 8 kv heads of 128", 80, 2 * 8 * 128, 2, 0, 0},
    {"Mistral 7B v0.1", "GQA 8, window 4096", 32, 2 * 8 * 128, 2, 0, 4096},
    {"DeepSeek-V2", "MLA, 512 + 64", 60, 512 + 64, 2, 0, 0},
    {"DeepSeek-V2, decompressed", "128 heads of 192 + 128", 60, 128 * (192 + 128), 2, 0, 0},
};

void print_model_table(void) {
    printf("%-26s %-24s %6s %12s %11s %11s\n", "model", "attention", "layers", "bytes/token",
           "a token,", "32768");
    printf("%-26s %-24s %6s %12s %11s %11s\n", "", "", "", "and layer", "all layers", "tokens");
    for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++) {
        const ModelCache *m = &MODELS[i];
        double per_layer = m->numbers * m->bytes + m->extra, per_token = per_layer * m->layers;
        int kept = m->window > 0 && m->window < TOKENS ? m->window : TOKENS;
        printf("%-26s %-24s %6d %12.0f %7.1f KiB %7.2f GiB\n", m->model, m->attention, m->layers,
               per_layer, per_token / 1024.0, per_token * kept / 1073741824.0);
    }
    printf("Mistral's window keeps 4096 tokens at most; DeepSeek-V2 decompressed is what "
           "modeling_deepseek.py\n  caches (keys of 192, values of 128, every head), the "
           "latent what DeepSeek's inference code keeps\n");
}
