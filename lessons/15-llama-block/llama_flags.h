// llama_flags.h - lesson 15's flags, read and checked by llama_flags.c, so that the lesson
// file (llama_block.c) holds the layer and its demonstrations and nothing else.
#ifndef LLAMA_FLAGS_H
#define LLAMA_FLAGS_H

#include <stdbool.h>

#include "attention.h"

// The sizes a run uses, as the flags gave them (defaults: --help).
typedef struct {
    int batch;         // B
    int prompt;        // P: tokens prefilled in one call
    int new_tokens;    // tokens decoded one per call after the prompt (N = P + new_tokens)
    int dim;           // C, hidden_size
    int heads;         // H, num_attention_heads
    int kv_heads;      // KV, num_key_value_heads
    int hidden;        // F, intermediate_size: --hidden, or 8/3 of --dim up to a multiple of 8
    int rope_base;     // rope_theta
    bool interleaved;  // --rope-layout interleaved (Meta's pairs), else rotate_half
} LlamaFlags;

// Parse argv into *lesson and the sizes; exit 2 with one line if they do not fit together.
LlamaFlags read_llama_flags(Lesson *lesson, int argc, char **argv);

#endif
