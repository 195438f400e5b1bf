// at_scale_flags.c - lesson 19's flags, read and checked before any work (at_scale.h).
#include <string.h>

#include "at_scale.h"
#include "speed/choice.h"

#define MAX_CONTEXT 262144   // part 7's and --bench's cached tokens (the budget decides)

Flags read_flags(Lesson *lesson, int argc, char **argv) {
    static int batch = 1, prompt = 20, new_tokens = 16, seqs = 3, block = 16;
    static int dim = 64, heads = 4, kv_heads = 2, rope_base = 10000;
    static int q_lora_rank = 48, kv_lora_rank = 32, nope = 16, rope = 8, v_head_dim = 16;
    static int context = 4096;
    static double outlier = 10.0;
    static bool bench;
    static SizeFlag sizes[] = {
        {"--batch", &batch, "batch size of part 1's latent attention"},
        {"--prompt", &prompt, "prompt tokens, prefilled in one call"},
        {"--seqs", &seqs, "sequences sharing the prompt in the paged cache (part 4)"},
        {"--block", &block, "tokens per block of the paged cache; the int8 keys' group"},
        {"--dim", &dim, "hidden_size"},
        {"--heads", &heads, "num_attention_heads"},
        {"--kv-heads", &kv_heads, "num_key_value_heads of lesson 15's attention; divides --heads"},
        {"--kv-lora-rank", &kv_lora_rank, "kv_lora_rank: the cached latent's width"},
        {"--qk-nope-head-dim", &nope, "qk_nope_head_dim: a head's key without RoPE"},
        {"--qk-rope-head-dim", &rope, "qk_rope_head_dim: the RoPE key shared by the heads"},
        {"--v-head-dim", &v_head_dim, "v_head_dim"},
    };
    static IntFlag ints[] = {
        {"--new", &new_tokens, "tokens decoded one per call after the prompt", 0, MAX_SIZE_FLAG},
        {"--q-lora-rank", &q_lora_rank, "q_lora_rank; 0: no compression (q_proj)", 0,
         MAX_SIZE_FLAG},
        {"--rope-base", &rope_base, "rope_theta", 2, 1000000000},
        {"--context", &context, "tokens cached in part 7's and --bench's decode step", 1, MAX_CONTEXT},
    };
    static FloatFlag floats[] = {
        {"--outlier", &outlier, "part 5: one key channel per head made this many times larger",
         1.0, 1000.0},
    };
    static SwitchFlag switches[] = {
        {"--bench", &bench, "time a decode step per cache kind (no lesson)"},
    };
    *lesson = (Lesson){
        .program = "lesson-19",
        .summary = "kv-cache-at-scale: DeepSeek's latent attention, a paged cache, an int8 cache",
        .sizes = sizes, .n_sizes = 11, .ints = ints, .n_ints = 4, .floats = floats,
        .n_floats = 1, .switches = switches, .n_switches = 1,
    };
    parse_lesson_args(lesson, argc, argv);
    check_kernels_variable(lesson);   // ATTN_KERNELS, read by part 7 and --bench (speed/choice.h)
    if (bench) {
        // The bench times sizes of its own (a Llama 3 8B layer's heads, DeepSeek-V2's latent);
        // --context is the one size it takes.
        for (int i = 0; i < lesson->n_given; i++) {
            const char *flag = lesson->given[i];
            bool common = strcmp(flag, "--seed") == 0 || strcmp(flag, "--dump") == 0 ||
                          strcmp(flag, "--dot") == 0 || strcmp(flag, "--heatmap") == 0;
            if (strcmp(flag, "--bench") != 0 && strcmp(flag, "--context") != 0 && !common) {
                usage_error(lesson, "%s: --bench times sizes of its own; only --context changes "
                            "them", flag);
            }
        }
    } else {
        check_divides(lesson, "--heads", heads, "--dim", dim);
        check_divides(lesson, "--kv-heads", kv_heads, "--heads", heads);
        if (dim / heads % 2 != 0) {
            usage_error(lesson, "--dim %d / --heads %d = head_dim %d is odd: RoPE turns pairs",
                        dim, heads, dim / heads);
        }
        if (rope % 2 != 0) {
            usage_error(lesson, "--qk-rope-head-dim %d is odd: RoPE turns pairs", rope);
        }
        if (kv_lora_rank > dim) {
            usage_error(lesson, "--kv-lora-rank %d is larger than --dim %d: the latent compresses "
                        "the hidden state, it cannot be wider", kv_lora_rank, dim);
        }
        if (q_lora_rank > dim) {
            usage_error(lesson, "--q-lora-rank %d is larger than --dim %d: the query's compression "
                        "cannot be wider than the hidden state", q_lora_rank, dim);
        }
        int N = prompt + new_tokens;   // at most 2 * MAX_SIZE_FLAG: no overflow
        int DQ = nope + rope;
        check_fits(lesson, "attn_weights (batch, heads, prompt+new, prompt+new)",
                   shape4(batch, heads, N, N));
        check_fits(lesson, "key_states (batch, heads, prompt+new, qk_nope+qk_rope)",
                   shape4(batch, heads, N, DQ));
        check_fits(lesson, "value_states (batch, heads, prompt+new, v_head_dim)",
                   shape4(batch, heads, N, v_head_dim));
        check_fits(lesson, "hidden_states (batch, prompt+new, dim)", shape3(batch, N, dim));
        check_fits(lesson, "the latent cache (batch, prompt+new, kv_lora_rank)",
                   shape3(batch, N, kv_lora_rank));
        check_fits(lesson, "q_b_proj.weight (heads * q_head_dim, q_lora_rank or dim)",
                   shape3(heads, DQ, q_lora_rank > 0 ? q_lora_rank : dim));
        check_fits(lesson, "kv_b_proj.weight (heads * (qk_nope + v_head_dim), kv_lora_rank)",
                   shape3(heads, nope + v_head_dim, kv_lora_rank));
        check_fits(lesson, "o_proj.weight (dim, heads * v_head_dim)", shape3(dim, heads,
                                                                            v_head_dim));
        check_fits(lesson, "q_proj.weight (dim, dim)", shape2(dim, dim));
        check_fits(lesson, "the paged pool (seqs, prompt+new up to whole blocks, kv-heads * "
                   "head_dim)", shape3(seqs, (N + block - 1) / block * block,
                                       kv_heads * (dim / heads)));
        check_fits(lesson, "the decoded rows (seqs, prompt+new, dim)", shape3(seqs, N, dim));
    }
    return (Flags){batch, prompt, new_tokens, seqs, block, dim, heads, kv_heads, rope_base,
                   q_lora_rank, kv_lora_rank, nope, rope, v_head_dim, outlier, context, bench};
}
