// llama_flags.c - lesson 15's flags (llama_flags.h says what they become).
#include <string.h>

#include "llama_flags.h"

LlamaFlags read_llama_flags(Lesson *lesson, int argc, char **argv) {
    static int batch = 1, prompt = 3, new_tokens = 3, dim = 64, heads = 4, kv_heads = 2;
    static int hidden = 0, rope_base = 10000;
    static const char *layout = "rotate_half";
    static const char *const layouts[] = {"rotate_half", "interleaved", NULL};
    static SizeFlag sizes[] = {
        {"--batch", &batch, "batch size"},
        {"--prompt", &prompt, "prompt tokens, prefilled in one call"},
        {"--dim", &dim, "hidden_size"},
        {"--heads", &heads, "num_attention_heads"},
        {"--kv-heads", &kv_heads, "num_key_value_heads; must divide --heads"},
    };
    static IntFlag ints[] = {
        {"--new", &new_tokens, "tokens decoded one per call after the prompt", 0, MAX_SIZE_FLAG},
        {"--hidden", &hidden, "intermediate_size; 0: 8/3 of --dim, up to a multiple of 8", 0,
         MAX_SIZE_FLAG},
        {"--rope-base", &rope_base, "rope_theta: 10000 (Llama 2), 500000 (Llama 3)", 2, 1000000000},
    };
    static ChoiceFlag choices[] = {
        {"--rope-layout", &layout, "rotate_half, pair i = (i, i+D/2); interleaved, (2i, 2i+1)",
         layouts},
    };
    *lesson = (Lesson){
        .program = "lesson-15",
        .summary = "llama-block: a Llama decoder layer: RoPE, RMSNorm, SwiGLU, GQA with a cache",
        .sizes = sizes, .n_sizes = 5, .ints = ints, .n_ints = 3, .choices = choices, .n_choices = 1,
    };
    parse_lesson_args(lesson, argc, argv);
    hidden = hidden > 0 ? hidden : (8 * dim / 3 + 7) / 8 * 8;
    check_divides(lesson, "--heads", heads, "--dim", dim);
    check_divides(lesson, "--kv-heads", kv_heads, "--heads", heads);
    if (dim / heads % 2 != 0) {
        usage_error(lesson, "--dim %d / --heads %d = head_dim %d is odd: RoPE turns pairs", dim,
                    heads, dim / heads);
    }
    int N = prompt + new_tokens;   // at most 2 * MAX_SIZE_FLAG: no overflow
    check_fits(lesson, "attn_weights (batch, heads, prompt+new, prompt+new)",
               shape4(batch, heads, N, N));
    check_fits(lesson, "the MLP's (batch, prompt+new, hidden)", shape3(batch, N, hidden));
    check_fits(lesson, "hidden_states (batch, prompt+new, dim)", shape3(batch, N, dim));
    check_fits(lesson, "mlp.gate_proj.weight (hidden, dim)", shape2(hidden, dim));
    check_fits(lesson, "self_attn.q_proj.weight (dim, dim)", shape2(dim, dim));
    return (LlamaFlags){batch, prompt, new_tokens, dim, heads, kv_heads, hidden, rope_base,
                        strcmp(layout, "interleaved") == 0};
}
