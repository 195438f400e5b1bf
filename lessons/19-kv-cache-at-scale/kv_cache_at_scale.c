// Lesson 19: kv-cache-at-scale - the cache is what limits serving; three answers to it:
// DeepSeek's latent attention (MLA), a paged cache (vLLM's), an int8 cache.
//
// WHAT THIS ADDS
//   Lesson 10 made decoding fast with a cache, lessons 8 and 15 made the cache smaller by
//   sharing key/value heads. At the sizes of real models the cache decides how many sequences
//   a machine can serve and how fast: each decoded token reads the whole cache once, and does
//   about one multiply-add per number read and query head that reads it. Three answers, each
//   in use today (vLLM pages its cache and can keep it in 8-bit floats; DeepSeek's models
//   cache a latent):
//     - MLA (DeepSeek-V2): cache one latent vector per token, kv_lora_rank numbers, and a
//       small RoPE key shared by the heads; make the keys and values back from the latent,
//       or never make them at all, by absorbing the up-projections (mla.c, parts 1-3).
//     - a paged cache (vLLM): blocks of BT tokens, a table per sequence, shared prompts,
//       copy on write (caches.c, part 4).
//     - an int8 cache: a byte per number and a float scale per row (caches.c, part 5).
//   Then what each saves at the sizes of Llama 2 and 3, Mistral and DeepSeek-V2 (part 6),
//   and what a decode step costs with each, measured (part 7; --bench measures longer).
//
// THE MATH (one decoded token, L cached tokens, per layer)
//   MHA/GQA: score_s = q . k_s / sqrt(D), out = sum_s softmax(score)_s v_s: 2 * KV * D numbers
//            read per cached token (KV = H: MHA, 1: MQA)
//   MLA:     score_s = (q_latent . c_s + q_pe . k_pe_s) * DQ^-0.5, q_latent = W_UK^T q_nope;
//            out = W_UV sum_s softmax(score)_s c_s: KR + DR numbers per cached token
//   paged:   key s lives at (table[s / BT], s % BT)
//   int8:    k ~ q * scale, q = round(k / scale) in [-127, 127], scale = max|k| / 127
//
// THE PYTORCH IT MIRRORS (docs/19-kv-cache-at-scale.md has the script)
//   torch.manual_seed(seed)
//   mla = DeepseekV2Attention(config)          # DeepSeek-V2's modeling_deepseek.py
//   hidden_states = torch.randn(batch, prompt + new, dim)
//   out = mla(hidden_states, causal_mask, position_ids)
//   gqa = LlamaAttention(config)                # lesson 15's
//   continuations = torch.randn(seqs, new, dim)
//
// RUN IT
//   make lesson-19 ARGS="--kv-lora-rank 16 --block 8"   (flags: --help, at_scale_flags.c)
//   make lesson-19 ARGS=--bench                          (part 7 timed longer)
//
// WHAT TO LOOK FOR
//   - The naive and the absorbed forms agree to float rounding (part 2), and decoding with
//     KR + DR numbers per token gives the rows of every token at once (part 3).
//   - Sequence 2 writes into the prompt's shared block only after the others copied it
//     (part 4); the paged rows are the contiguous cache's, bit for bit.
//   - With an outlier channel, int8 keys with a scale per token lose what a scale per
//     channel keeps (part 5).
//
// Size and index letters: at_scale.h.

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "at_scale.h"

// What main computed once, for the parts to read.
typedef struct {
    Flags f;
    int B, P, N, C, H, KV, D, NS, BT;      // as in the legend; P is --prompt
    DeepseekV2Config config;
    DeepseekV2Attention mla;
    const Tensor *hidden_states;          // (B, N, C)
    const Tensor *out;                    // (B, N, C): every token at once, the naive form
    MLASteps steps;                       // of that forward
    GQAttention gqa;                      // lesson 15's attention, for parts 4 and 5
    const Tensor *continuations;          // (NS, new, C): each sequence's own tokens
} Run;

static void part(int number, const char *what, const char *flags) {
    printf("\n-- part %d: %s (%s) --\n", number, what, flags);
}

// t[..., :count] of the first row of every leading dim: a view, to print.
static const Tensor *first(const Tensor *t, int count) {
    while (t->shape.ndim > 1) {
        t = select_index(t, 0, 0);
    }
    return narrow(t, 0, 0, size(t, 0) < count ? size(t, 0) : count);
}

// --- part 1: DeepSeek-V2's attention, every token at once (appendix B prints it) ------------

static void print_module(const Run *run);
static void print_forward(const Run *run);

// --- part 2: the same attention absorbed -------------------------------------------------------

// Multiply-adds of one layer to decode the token at position L-1 (L keys), naive and absorbed.
static double naive_step_macs(const DeepseekV2Config *c, double L) {
    double H = c->num_attention_heads, DQ = c->qk_nope_head_dim + c->qk_rope_head_dim;
    return L * c->kv_lora_rank * H * (c->qk_nope_head_dim + c->v_head_dim)   // decompress L
           + H * L * (DQ + c->v_head_dim);                                  // scores, sum of v
}

static double absorbed_step_macs(const DeepseekV2Config *c, double L) {
    double H = c->num_attention_heads, KR = c->kv_lora_rank;
    return H * c->qk_nope_head_dim * KR + H * L * (KR + c->qk_rope_head_dim) + H * L * KR +
           H * KR * c->v_head_dim;
}

static const Tensor *part2_absorbed(const Run *run) {
    part(2, "absorbed: W_UK folded into the query, W_UV after the sum",
         "--kv-lora-rank changes it");
    const DeepseekV2Config *c = &run->config;
    int H = c->num_attention_heads, KR = c->kv_lora_rank, DN = c->qk_nope_head_dim;
    int DV = c->v_head_dim, N = run->N;
    printf("kv_b_proj.weight %s = %d heads of [W_UK (%d, %d); W_UV (%d, %d)]\n",
           shape_str(run->mla.kv_b_proj.weight->shape, SIZES_TUPLE), H, DN, KR, DV, KR);
    MLASteps steps;
    const Tensor *absorbed = DeepseekV2Attention_forward_absorbed(&steps, &run->mla,
                                                                  run->hidden_states, 0, NULL);
    printf("q_latent = W_UK^T q_nope, head by head: %s, the query in the latent's space\n",
           shape_str(steps.q_latent->shape, SIZES_TUPLE));
    printf("attn_weights = softmax((q_latent . compressed_kv + q_pe . k_pe) * %.4f): %s\n",
           (double)run->mla.softmax_scale, shape_str(steps.attn_weights->shape, SIZES_TUPLE));
    printf("out = o_proj(W_UV (attn_weights @ compressed_kv)): %s; no key or value is made\n",
           shape_str(absorbed->shape, SIZES_TUPLE));
    printf("max |absorbed - naive| = %.2g (out), %.2g (attn_weights)\n",
           (double)max_abs_diff(absorbed, run->out),
           (double)max_abs_diff(steps.attn_weights, run->steps.attn_weights));
    printf("multiply-adds to decode token %d against %d keys, one layer: naive %.0f (%.0f of "
           "them\n  decompressing %d latents), absorbed %.0f\n", N - 1, N,
           naive_step_macs(c, N), (double)N * KR * H * (DN + DV), N, absorbed_step_macs(c, N));
    return absorbed;
}

// --- part 3: decoding with the latent cache ----------------------------------------------------

// The prompt in one call, then a token per call, through `cache`, naive or absorbed; the rows
// go into out (B, N, C). Each call's tensors are freed once its rows are kept.
static void decode_mla(Tensor *out, const DeepseekV2Attention *mla, const Tensor *hidden_states,
                       int P, LatentCache *cache, bool absorbed) {
    int B = size(hidden_states, 0), N = size(hidden_states, 1), C = size(hidden_states, 2);
    for (int t = 0; t < N; t += t == 0 ? P : 1) {   // t: the first token of this call
        int T = t == 0 ? P : 1;
        size_t mark = arena_mark();
        const Tensor *tokens = narrow(hidden_states, 1, t, T);                   // (B, T, C)
        const Tensor *rows = absorbed
            ? DeepseekV2Attention_forward_absorbed(NULL, mla, tokens, t, cache)
            : DeepseekV2Attention_forward(NULL, mla, tokens, t, cache);          // (B, T, C)
        for (int b = 0; b < B; b++) {
            memcpy(at3(out, b, t, 0), at3(rows, b, 0, 0), (size_t)T * C * sizeof(float));
        }
        arena_release(mark);
    }
}

static void part3_decode(Tensor **naive_out, Tensor **absorbed_out, const Run *run) {
    part(3, "decoding with the latent cache", "--prompt and --new change it");
    const DeepseekV2Config *c = &run->config;
    int B = run->B, P = run->P, N = run->N, KR = c->kv_lora_rank, DR = c->qk_rope_head_dim;
    int H = c->num_attention_heads, DQ = run->mla.q_head_dim, DV = c->v_head_dim;
    LatentCache naive_cache = LatentCache_init(B, N, KR, DR);
    LatentCache absorbed_cache = LatentCache_init(B, N, KR, DR);
    Tensor *naive = zeros(run->hidden_states->shape), *absorbed = zeros(run->hidden_states->shape);
    decode_mla(naive, &run->mla, run->hidden_states, P, &naive_cache, false);
    decode_mla(absorbed, &run->mla, run->hidden_states, P, &absorbed_cache, true);
    if (N > P) {
        printf("prefill: tokens 0..%d in one call, then tokens %d..%d one per call; the cache "
               "keeps\n", P - 1, P, N - 1);
    } else {
        printf("prefill: tokens 0..%d in one call (no token decoded: --new 0); the cache keeps\n",
               P - 1);
    }
    printf("  kv_a_layernorm(compressed_kv) %s and k_pe %s, turned\n",
           shape_str(shape3(B, N, KR), SIZES_TUPLE), shape_str(shape3(B, N, DR), SIZES_TUPLE));
    printf("naive, every cached latent decompressed by kv_b_proj in every call:\n"
           "  max |out - out of all tokens at once| = %.3g\n",
           (double)max_abs_diff(naive, run->out));
    printf("absorbed, nothing decompressed: max |out - out of all tokens at once| = %.3g\n",
           (double)max_abs_diff(absorbed, run->out));
    printf("the cache per token and layer: %d + %d = %d floats; the keys and values it stands "
           "for,\n  %d heads * (%d + %d) = %d floats (modeling_deepseek.py's DynamicCache keeps "
           "those)\n", KR, DR, KR + DR, H, DQ, DV, H * (DQ + DV));
    printf("  as many as grouped-query attention keeps with %.2f key/value heads of %d\n",
           (double)(KR + DR) / (2.0 * DV), DV);
    *naive_out = naive;
    *absorbed_out = absorbed;
}

// --- part 4: a paged cache ----------------------------------------------------------------------

// How many tokens sequence i decodes after the prompt: the first all --new, the others fewer,
// so that they end at different times (new * (NS - i) / NS).
static int tokens_of(const Run *run, int i) {
    return run->f.new_tokens * (run->NS - i) / run->NS;
}

// "seq 2 ends: 25 tokens in blocks [0, 1]" (a long table: its first 6 blocks and its last 2).
static void print_table(const char *who, const BlockTable *table) {
    printf("%s: %d tokens in blocks [", who, table->length);
    for (int j = 0; j < table->n_blocks; j++) {
        if (table->n_blocks > 8 && j == 6) {
            printf(", ...");
            j = table->n_blocks - 3;
            continue;
        }
        printf("%s%d", j > 0 ? ", " : "", table->blocks[j]);
    }
    printf("]\n");
}

// One call of lesson 15's attention for sequence `table`: x (T, C) at positions start ..,
// keys and values into the paged cache, attention through the table; returns (T, C).
static Tensor *paged_call(BlockPool *pool, BlockTable *table, const GQAttention *gqa,
                          const Tensor *x, int start) {
    Tensor *query, *key, *value;
    gqa_project(&query, &key, &value, gqa, x, start);
    paged_append(pool, table, key, value);
    return linear(&gqa->o_proj, attend_paged(NULL, query, pool, table));      // (T, C)
}

// The same with lesson 15's contiguous cache.
static Tensor *contiguous_call(ContiguousCache *cache, const GQAttention *gqa, const Tensor *x,
                               int start) {
    Tensor *query, *key, *value;
    gqa_project(&query, &key, &value, gqa, x, start);
    contiguous_append(cache, key, value);
    return linear(&gqa->o_proj, attend_contiguous(NULL, query, cache));       // (T, C)
}

// What one token's append did to its table, said when it is worth saying: a block taken from
// the free list, a copy on write, or a write in place into a block that was shared.
static void say_append(int i, int position, int last_before, int refs_before, int slot,
                       const BlockTable *table) {
    int now = table->blocks[table->n_blocks - 1];
    if (slot == 0) {
        printf("seq %d, token %d: its last block is full: block %d from the free list\n", i,
               position, now);
    } else if (now != last_before) {
        printf("seq %d, token %d: block %d is held by %d tables and not full: copied to block %d"
               " (copy on write)\n", i, position, last_before, refs_before, now);
    } else {
        printf("seq %d, token %d: block %d is held by this table alone: written in place\n", i,
               position, now);
    }
}

static Tensor *part4_paged(const Run *run) {
    part(4, "a paged cache: blocks, a table per sequence, sharing",
         "--block and --seqs change it");
    int NS = run->NS, P = run->P, BT = run->BT, KV = run->KV, D = run->D, C = run->C;
    int longest = P + run->f.new_tokens, per_seq = (longest + BT - 1) / BT;
    printf("lesson 15's attention: %d heads, %d key/value heads of %d: %d floats a token "
           "(keys and values)\n", run->H, KV, D, 2 * KV * D);
    BlockPool pool = BlockPool_init(NS * per_seq, BT, KV, D);
    printf("the pool: %d blocks of %d tokens, enough for %d sequences of %d with nothing shared\n",
           pool.num_blocks, BT, NS, longest);
    Tensor *paged_out = zeros(shape3(NS, longest, C));                         // (NS, P+new, C)
    BlockTable *tables = arena_alloc((size_t)NS, sizeof(BlockTable));
    tables[0] = BlockTable_init(per_seq);
    const Tensor *prompt = narrow(select_index(run->hidden_states, 0, 0), 0, 0, P);   // (P, C)
    const Tensor *prefill = paged_call(&pool, &tables[0], &run->gqa, prompt, 0);      // (P, C)
    print_table("prefill, seq 0", &tables[0]);
    for (int i = 1; i < NS; i++) {
        tables[i] = paged_fork(&pool, &tables[0], per_seq);
    }
    for (int i = 0; i < NS; i++) {
        memcpy(at3(paged_out, i, 0, 0), prefill->data, (size_t)P * C * sizeof(float));
    }
    if (NS > 1) {
        printf("fork: seqs 1..%d share seq 0's blocks; each block is held by %d tables\n", NS - 1,
               NS);
    } else {
        printf("one sequence (--seqs 1): nothing to share\n");
    }
    int in_use = pool.num_blocks - pool.n_free, most = in_use;
    for (int k = 0; k < run->f.new_tokens; k++) {   // a step: each live sequence, one token
        for (int i = 0; i < NS; i++) {
            if (k >= tokens_of(run, i)) {
                continue;
            }
            size_t mark = arena_mark();
            BlockTable *table = &tables[i];
            int position = P + k, slot = table->length % BT;
            int last = table->blocks[table->n_blocks - 1], refs = pool.ref_count[last];
            const Tensor *x = narrow(select_index(run->continuations, 0, i), 0, k, 1);   // (1, C)
            const Tensor *row = paged_call(&pool, table, &run->gqa, x, position);       // (1, C)
            memcpy(at3(paged_out, i, position, 0), row->data, (size_t)C * sizeof(float));
            if (k == 0 || slot == 0) {
                say_append(i, position, last, refs, slot, table);
            }
            in_use = pool.num_blocks - pool.n_free;
            most = in_use > most ? in_use : most;
            if (k == tokens_of(run, i) - 1 && i > 0) {   // seq i's last token: it ends
                char who[32];
                snprintf(who, sizeof who, "seq %d ends", i);
                print_table(who, table);
                paged_free(&pool, table);
                printf("  its blocks given back: %d of %d free\n", pool.n_free, pool.num_blocks);
            }
            arena_release(mark);
        }
    }
    print_table("seq 0 at the end", &tables[0]);
    printf("copies on write: %d\n", pool.copies);
    // The same sequences, each through lesson 15's contiguous cache, sized for the longest.
    float largest = 0.0f;
    for (int i = 0; i < NS; i++) {
        size_t mark = arena_mark();
        ContiguousCache cache = ContiguousCache_init(longest, KV, D);
        const Tensor *rows = contiguous_call(&cache, &run->gqa, prompt, 0);    // (P, C)
        largest = fmaxf(largest, max_abs_diff(rows, narrow(select_index(paged_out, 0, i), 0, 0,
                                                                P)));
        for (int k = 0; k < tokens_of(run, i); k++) {
            const Tensor *x = narrow(select_index(run->continuations, 0, i), 0, k, 1);
            const Tensor *row = contiguous_call(&cache, &run->gqa, x, P + k);
            largest = fmaxf(largest, max_abs_diff(row, narrow(select_index(paged_out, 0, i), 0,
                                                              P + k, 1)));
        }
        arena_release(mark);
    }
    for (int i = 0; i < NS; i++) {
        int last = P + tokens_of(run, i) - 1;
        printf("seq %d (%d tokens), out[%d, :6]:\n%s\n", i, last + 1, last, tensor_str(first(
            narrow(select_index(paged_out, 0, i), 0, last, 1), 6), NULL));
    }
    printf("each sequence through lesson 15's contiguous cache: max |paged - contiguous| = %.3g\n",
           (double)largest);
    long token_bytes = 2L * KV * D * (long)sizeof(float), held = 0;
    for (int i = 0; i < NS; i++) {
        held += P + tokens_of(run, i);
    }
    printf("memory: at most %d blocks in use: %d token slots, %ld bytes, for %ld tokens (the "
           "prompt's %d\n  held once); %d contiguous caches sized for the longest, %d tokens: %d "
           "slots, %ld bytes\n", most, most * BT, (long)most * BT * token_bytes, held, P, NS,
           longest, NS * longest, (long)NS * longest * token_bytes);
    printf("the paged cache needs %.0f%% of the contiguous caches' memory\n",
           100.0 * most * BT / ((double)NS * longest));
    return paged_out;
}

// --- part 5: an int8 cache ----------------------------------------------------------------------

// Sequence 0 decoded with `gqa` through a float cache, or an int8 one (`cache` not NULL): its
// rows into out (N0, C), the last token's weights into last_weights (H, 1, N0).
static void decode_seq0(Tensor *out, Tensor *last_weights, const Run *run,
                        const GQAttention *gqa, Int8Cache *cache) {
    int P = run->P, N0 = P + tokens_of(run, 0), C = run->C;
    ContiguousCache floats = ContiguousCache_init(N0, gqa->KV, gqa->D);
    const Tensor *prompt = narrow(select_index(run->hidden_states, 0, 0), 0, 0, P);
    for (int t = 0; t < N0; t += t == 0 ? P : 1) {
        int T = t == 0 ? P : 1;
        size_t mark = arena_mark();
        const Tensor *x = t == 0 ? prompt : narrow(select_index(run->continuations, 0, 0), 0,
                                                   t - P, 1);                  // (T, C)
        Tensor *query, *key, *value;
        gqa_project(&query, &key, &value, gqa, x, t);
        Tensor *weights = zeros(shape3(gqa->H, T, t + T));                    // (H, T, L)
        const Tensor *attn;
        if (cache == NULL) {
            contiguous_append(&floats, key, value);
            attn = attend_contiguous(weights, query, &floats);
        } else {
            int8_append(cache, key, value);
            attn = attend_int8(weights, query, cache);
        }
        memcpy(at2(out, t, 0), linear(&gqa->o_proj, attn)->data, (size_t)T * C * sizeof(float));
        if (t + T == N0) {
            for (int h = 0; h < gqa->H; h++) {
                memcpy(at3(last_weights, h, 0, 0), at3(weights, h, T - 1, 0),
                       (size_t)N0 * sizeof(float));
            }
        }
        arena_release(mark);
    }
}

// A copy of the run's attention whose keys have one channel per key/value head `factor`
// times larger: rows g * D + D/2 - 1 of k_proj (RoPE's slowest pair, so the channel keeps it).
static GQAttention with_outlier(const GQAttention *gqa, double factor) {
    GQAttention copy = *gqa;
    Tensor *k_weight = clone(gqa->k_proj.weight);                             // (KV*D, C)
    for (int g = 0; g < gqa->KV; g++) {
        int row = g * gqa->D + gqa->D / 2 - 1;
        for (int c = 0; c < size(k_weight, 1); c++) {
            *at2(k_weight, row, c) *= (float)factor;
        }
    }
    copy.k_proj.weight = k_weight;
    return copy;
}

// Returns the three decodings' rows, (3, N0, C): the float cache's, per-token int8, KIVI's.
static Tensor *part5_int8(const Run *run) {
    part(5, "an int8 cache: a byte a number, a float scale per row", "--outlier changes it");
    int P = run->P, N0 = P + tokens_of(run, 0), C = run->C, H = run->H, KV = run->KV;
    int D = run->D, G = run->BT;
    GQAttention gqa = with_outlier(&run->gqa, run->f.outlier);
    if (run->f.outlier == 1.0) {
        printf("seq 0 of part 4, %d tokens, decoded again; no key channel made larger "
               "(--outlier 1)\n", N0);
    } else {
        printf("seq 0 of part 4, %d tokens, decoded again; k_proj's channel %d of each key/value "
               "head\n  times %g: one key channel far larger than the rest, as KIVI found in "
               "real models\n", N0, D / 2 - 1, run->f.outlier);
    }
    Tensor *outs = zeros(shape3(3, N0, C));                                   // (3, N0, C)
    Tensor *out_float = zeros(shape2(N0, C)), *w_float = zeros(shape3(H, 1, N0));
    decode_seq0(out_float, w_float, run, &gqa, NULL);
    const char *kinds[2] = {"keys and values, a scale per token:",
                            "keys a scale per channel (KIVI), values per token:"};
    float largest_out = 0.0f;
    for (long j = 0; j < numel(out_float); j++) {
        largest_out = fmaxf(largest_out, fabsf(out_float->data[j]));
    }
    printf("float cache: %d floats a token = %d bytes; max |out| = %.4f\n", 2 * KV * D,
           2 * KV * D * 4, (double)largest_out);
    for (int k = 0; k < 2; k++) {
        Int8Cache cache = Int8Cache_init(N0, KV, D, k == 0 ? PER_TOKEN : PER_CHANNEL, G);
        Tensor *out = zeros(shape2(N0, C)), *w = zeros(shape3(H, 1, N0));
        decode_seq0(out, w, run, &gqa, &cache);
        printf("int8, %s\n  max |out - float out| = %.2g, max |attn_weights - float's| = %.2g "
               "(the last token's)\n", kinds[k], (double)max_abs_diff(out, out_float),
               (double)max_abs_diff(w, w_float));
        memcpy(at3(outs, k + 1, 0, 0), out->data, (size_t)N0 * C * sizeof(float));
    }
    double token_scales = 2.0 * KV * 4, channel_scales = KV * 4 + KV * D * 4.0 / G;
    printf("bytes a token: %d numbers as bytes, and scales: %.1f (per-token keys), %.1f "
           "(per-channel\n  keys over groups of %d, the group still filling in float); float32: %d, bfloat16: "
           "%d\n", 2 * KV * D, 2 * KV * D + token_scales, 2 * KV * D + channel_scales, G,
           8 * KV * D, 4 * KV * D);
    memcpy(at3(outs, 0, 0, 0), out_float->data, (size_t)N0 * C * sizeof(float));
    return outs;
}

// --- part 6: bytes per token at real sizes (sizes.c) -------------------------------------------

static void part6_models(void) {
    part(6, "the cache of real models, per token, in bfloat16", "no flag changes it");
    print_model_table();
}

// --- part 7: what a decode step costs (bench.c) ------------------------------------------------

static void part7_timed(int context) {
    part(7, "a decode step reads the whole cache", "--context sizes it, --bench times it longer");
    print_bench_plan(context);
    print_part7_times(context);
}

// --- the lesson ---------------------------------------------------------------------------------

static Run run_of(Flags flags);   // appendix A, after main
static const Tensor *labeled_step(const char *what, const Tensor *out, const Tensor *from);
static Cost at_scale_cost(const Run *run);
static void name_steps(const Run *run);

int main(int argc, char **argv) {
    Lesson lesson;
    Flags flags = read_flags(&lesson, argc, argv);
    if (flags.bench) {
        check_budget(&lesson, bench_cost(flags.context));
        lesson_start(&lesson);
        run_bench(flags.context);
        return lesson_finish(&lesson);
    }
    Run run = run_of(flags);
    Cost cost = at_scale_cost(&run), timed = part7_cost(flags.context);
    cost.bytes += timed.bytes;   // part 7's caches come on top of what the run holds by then
    cost.elements += timed.elements;
    cost.kernel_seconds += timed.kernel_seconds;
    check_budget(&lesson, cost);   // what these sizes hold and do, or exit 2
    lesson_start(&lesson);
    run.mla = DeepseekV2Attention_init(&run.config);            // the draws, in PyTorch's order
    run.hidden_states = named("hidden_states", randn(shape3(run.B, run.N, run.C)));   // (B, N, C)
    run.out = named("out", DeepseekV2Attention_forward(&run.steps, &run.mla, run.hidden_states,
                                                       0, NULL));             // (B, N, C)
    run.gqa = GQAttention_init(run.C, run.H, run.KV, flags.rope_base);
    run.continuations = named("continuations", randn(shape3(run.NS, flags.new_tokens, run.C)));
    name_steps(&run);
    trace_pause(true);   // what follows looks at what was computed: out of the diagram
    print_module(&run);
    print_forward(&run);
    if (lesson.heatmap) {
        print_heatmap("attn_weights", run.steps.attn_weights);
    }
    const Tensor *absorbed = part2_absorbed(&run);
    Tensor *decoded, *decoded_absorbed;
    part3_decode(&decoded, &decoded_absorbed, &run);
    const Tensor *paged_out = part4_paged(&run);
    const Tensor *int8_out = part5_int8(&run);
    part6_models();
    part7_timed(flags.context);
    trace_pause(false);   // the parts' results in the diagram, each as one step
    named("out_absorbed", labeled_step("the absorbed form (part 2)", absorbed, run.hidden_states));
    named("decoded", labeled_step("latent cache, naive (part 3)", decoded, run.hidden_states));
    named("decoded_absorbed", labeled_step("latent cache, absorbed (part 3)", decoded_absorbed,
                                           run.hidden_states));
    named("paged_out", labeled_step("paged cache (part 4)", paged_out, run.continuations));
    named("int8_out", labeled_step("float, int8 caches (part 5)", int8_out, run.continuations));
    return lesson_finish(&lesson);
}

// === appendix A: the run from the flags, the tensors --dump writes, the budget ================

static Run run_of(Flags f) {
    DeepseekV2Config config = {f.dim, f.heads, f.q_lora_rank, f.kv_lora_rank,
                               f.qk_nope_head_dim, f.qk_rope_head_dim, f.v_head_dim, f.rope_base};
    return (Run){.f = f, .B = f.batch, .P = f.prompt, .N = f.prompt + f.new_tokens, .C = f.dim,
                 .H = f.heads, .KV = f.kv_heads, .D = f.dim / f.heads, .NS = f.seqs,
                 .BT = f.block, .config = config};
}

// A part's result drawn as one step from what it was computed from.
static const Tensor *labeled_step(const char *what, const Tensor *out, const Tensor *from) {
    trace1(what, out, from);
    return out;
}

static void name_steps(const Run *run) {
    named("q_pe", run->steps.q_pe);
    named("k_pe", run->steps.k_pe);
    named("compressed_kv", run->steps.compressed_kv);
    named("attn_weights", run->steps.attn_weights);
}

// The budget's prediction (lesson/budget.h), counted from what the code makes. Held at once:
// the parameters and inputs; part 1's forward and part 2's absorbed one, kept; the outputs and
// caches of parts 3 to 5 and the paged pool; and the largest call of a decode loop (each call's
// tensors are freed once its rows are kept). Work: the forwards; part 3's naive decoding
// decompresses L latents for the call at L, about N^2 / 2 * KR * H * (DN + DV) multiply-adds in
// all; parts 4 and 5 decode NS + NS + 3 sequences of lesson 15's attention.
typedef struct {
    double B, N, C, H, KV, D, NS, QR, KR, DN, DR, DV, DQ;
} Sizes;

// Floats one MLA call of T tokens over L keys makes: the projections, then the naive form's
// keys and values or the absorbed form's latent query.
static double projected_floats(const Sizes *z, double T) {
    return z->B * T * (2 * z->QR + z->H * z->DQ + 2 * z->KR + 3 * z->DR) +
           z->B * z->H * T * (z->DR + z->DN) + T * z->DR;
}

static double mla_call_floats(const Sizes *z, double T, double L, bool absorbed) {
    double attention = z->B * z->H * T * L + z->B * T * (z->H * z->DV + z->C);
    return projected_floats(z, T) + attention +
           (absorbed ? z->B * z->H * T * z->KR + z->KR
                     : z->B * L * z->H * (z->DN + z->DV) + z->B * z->H * (T + L) * z->DQ);
}

// Floats one call of lesson 15's attention makes for T tokens of one sequence over L keys.
static double gqa_call_floats(const Sizes *z, double T, double L) {
    return T * (2 * z->H + 4 * z->KV) * z->D + T * z->H * z->D + L + T * z->C + T * z->D;
}

static Cost at_scale_cost(const Run *run) {
    const DeepseekV2Config *c = &run->config;
    Sizes z = {run->B, run->N, run->C, run->H, run->KV, run->D, run->NS, c->q_lora_rank,
               c->kv_lora_rank, c->qk_nope_head_dim, c->qk_rope_head_dim, c->v_head_dim,
               c->qk_nope_head_dim + c->qk_rope_head_dim};
    double B = z.B, N = z.N, C = z.C, H = z.H, KV = z.KV, D = z.D, NS = z.NS, P = run->P;
    double KR = z.KR, DR = z.DR, DV = z.DV, DN = z.DN, DQ = z.DQ, QR = z.QR;
    double new_tokens = N - P, BT = run->BT, slots = NS * ceil(N / BT) * BT;
    double query_params = QR > 0 ? C * QR + QR + QR * H * DQ : C * H * DQ;
    double mla_params = query_params + C * (KR + DR) + KR + KR * H * (DN + DV) + H * DV * C;
    double gqa_params = 2 * C * H * D + 2 * C * KV * D;
    double inputs = B * N * C + NS * new_tokens * C;
    double part1_2 = mla_call_floats(&z, N, N, false) + mla_call_floats(&z, N, N, true);
    double part3 = 2 * B * N * C + 2 * B * N * (KR + DR) +
                   fmax(mla_call_floats(&z, P, P, false), mla_call_floats(&z, 1, N, false));
    double part4 = 2 * slots * KV * D + NS * N * C + gqa_call_floats(&z, P, P) +
                   fmax(gqa_call_floats(&z, 1, N),
                        2 * N * KV * D + gqa_call_floats(&z, P, P) +
                        new_tokens * gqa_call_floats(&z, 1, N));
    double part5 = 10 * N * C + 3 * H * N + KV * D * C + 6 * N * KV * D + 2 * N * KV * D / 4 +
                   N * KV * (3 + D / BT) + BT * KV * D + gqa_call_floats(&z, P, P) + H * P * P;
    double floats = mla_params + gqa_params + inputs + part1_2 + part3 + part4 + part5;
    double BHNN = B * H * N * N;
    double mla_macs = B * N * (query_params + C * (KR + DR) + KR * H * (DN + DV) + H * DV * C) +
                      BHNN * (DQ + DV) / 2;
    double absorbed_macs = B * N * H * (DN * KR + KR * DV) + BHNN * (2 * KR + DR) / 2;
    double naive_decode = B * N * N / 2 * KR * H * (DN + DV);
    double gqa_macs = N * (2 * C * H * D + 2 * C * KV * D) + H * N * N * D;
    return (Cost){
        .bytes = 4 * floats,
        .dumped = 4 * (mla_params + gqa_params + inputs + BHNN + B * N * (H * DR + DR + KR) +
                       5 * B * N * C + NS * N * C + 3 * N * C),
        .multiply_adds = 2 * mla_macs + 2 * absorbed_macs + naive_decode + (2 * NS + 3) * gqa_macs,
        .exps = 2 * BHNN + (2 * NS + 3) * H * N * N / 2 + inputs + mla_params + gqa_params,
        .elements = 4 * floats + 2 * B * N * N * KR,
    };
}

// === appendix B: part 1's printout, the module and its forward as PyTorch names them ==========

static void print_module(const Run *run) {
    const DeepseekV2Config *c = &run->config;
    const DeepseekV2Attention *m = &run->mla;
    printf("config: hidden_size %d, num_attention_heads %d, q_lora_rank %d, kv_lora_rank %d,\n"
           "  qk_nope_head_dim %d, qk_rope_head_dim %d (q_head_dim %d), v_head_dim %d, "
           "rope_theta %d\n", c->hidden_size, c->num_attention_heads, c->q_lora_rank,
           c->kv_lora_rank, c->qk_nope_head_dim, c->qk_rope_head_dim, m->q_head_dim,
           c->v_head_dim, c->rope_theta);
    const struct { const char *name; const Tensor *weight; } all[7] = {
        {"q_a_proj.weight", m->q_a_proj.weight}, {"q_a_layernorm.weight", m->q_a_layernorm.weight},
        {"q_b_proj.weight", m->q_b_proj.weight},
        {"kv_a_proj_with_mqa.weight", m->kv_a_proj_with_mqa.weight},
        {"kv_a_layernorm.weight", m->kv_a_layernorm.weight},
        {"kv_b_proj.weight", m->kv_b_proj.weight}, {"o_proj.weight", m->o_proj.weight}};
    const struct { const char *name; const Tensor *weight; } no_q_lora[5] = {
        {"q_proj.weight", m->q_proj.weight},
        {"kv_a_proj_with_mqa.weight", m->kv_a_proj_with_mqa.weight},
        {"kv_a_layernorm.weight", m->kv_a_layernorm.weight},
        {"kv_b_proj.weight", m->kv_b_proj.weight}, {"o_proj.weight", m->o_proj.weight}};
    int n = c->q_lora_rank > 0 ? 7 : 5;
    long total = 0;
    for (int i = 0; i < n; i++) {
        total += numel(c->q_lora_rank > 0 ? all[i].weight : no_q_lora[i].weight);
    }
    printf("mla = DeepseekV2Attention(config): %ld parameters, drawn in this order:\n", total);
    for (int i = 0; i < n; i++) {
        const char *name = c->q_lora_rank > 0 ? all[i].name : no_q_lora[i].name;
        const Tensor *w = c->q_lora_rank > 0 ? all[i].weight : no_q_lora[i].weight;
        printf("  %s: %s\n", name, shape_str(w->shape, SIZES_TUPLE));
    }
    printf("hidden_states = torch.randn%s\n", shape_str(run->hidden_states->shape, SIZES_TUPLE));
}

static void print_forward(const Run *run) {
    const DeepseekV2Config *c = &run->config;
    const MLASteps *s = &run->steps;
    int B = run->B, N = run->N, H = c->num_attention_heads, DQ = run->mla.q_head_dim;
    int KR = c->kv_lora_rank, DN = c->qk_nope_head_dim, DR = c->qk_rope_head_dim;
    int DV = c->v_head_dim;
    printf("\n-- out = mla(hidden_states, causal_mask, position_ids): %d token%s, no cache --\n", N,
           N == 1 ? "" : "s");
    printf("q = %s.view(%d, %d, %d, %d).transpose(1, 2): %s\n",
           c->q_lora_rank > 0 ? "q_b_proj(q_a_layernorm(q_a_proj(x)))" : "q_proj(x)", B, N, H, DQ,
           shape_str(shape4(B, H, N, DQ), SIZES_TUPLE));
    printf("q_nope, q_pe = torch.split(q, [%d, %d], dim=-1): %s, %s\n", DN, DR,
           shape_str(s->q_nope->shape, SIZES_TUPLE), shape_str(shape4(B, H, N, DR), SIZES_TUPLE));
    printf("compressed_kv, k_pe = torch.split(kv_a_proj_with_mqa(x), [%d, %d], dim=-1):\n"
           "  %s, %s; k_pe.view(%d, 1, %d, %d): one RoPE key for every head\n", KR, DR,
           shape_str(s->compressed_kv->shape, SIZES_TUPLE), shape_str(s->k_pe->shape, SIZES_TUPLE),
           B, N, DR);
    printf("kv = kv_b_proj(kv_a_layernorm(compressed_kv)).view(%d, %d, %d, %d).transpose(1, 2):\n"
           "  %s\n", B, N, H, DN + DV, shape_str(shape4(B, H, N, DN + DV), SIZES_TUPLE));
    printf("k_nope, value_states = torch.split(kv, [%d, %d], dim=-1): %s, %s\n", DN, DV,
           shape_str(shape4(B, H, N, DN), SIZES_TUPLE),
           shape_str(s->value_states->shape, SIZES_TUPLE));
    printf("q_pe, k_pe = apply_rotary_pos_emb(q_pe, k_pe, cos, sin, position_ids):\n  %s, %s\n",
           shape_str(s->q_pe->shape, SIZES_TUPLE), shape_str(shape4(B, 1, N, DR), SIZES_TUPLE));
    printf("query_states = [q_nope, q_pe], key_states = [k_nope, k_pe in every head]: %s each\n",
           shape_str(s->query_states->shape, SIZES_TUPLE));
    printf("attn_weights = softmax(query_states @ key_states^T * %.4f + causal_mask): %s\n",
           (double)run->mla.softmax_scale, shape_str(s->attn_weights->shape, SIZES_TUPLE));
    printf("attn_weights[0, 0, %d], the last token's:\n%s\n", N - 1,
           tensor_str(first(narrow(s->attn_weights, 2, N - 1, 1), N), NULL));
    printf("out = o_proj(attn_weights @ value_states): %s\n",
           shape_str(run->out->shape, SIZES_TUPLE));
    int rows = N < 3 ? N : 3, C = run->C;
    const Tensor *last = narrow(select_index(run->out, 0, 0), 0, N - rows, rows);   // (rows, C)
    printf("out[0, %d:, :6]:\n%s\n", N - rows, tensor_str(narrow(last, 1, 0, C < 6 ? C : 6),
                                                          NULL));
}
