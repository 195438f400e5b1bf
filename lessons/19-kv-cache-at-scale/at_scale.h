// at_scale.h - what lesson 19's files share: the flags, DeepSeek-V2's latent attention (mla.c),
// the grouped-query attention of lesson 15 with its three caches (caches.c: contiguous,
// paged, int8), the table of real models (sizes.c) and the bench (bench.c).
//
// Size letters: B batch, T a call's tokens, P the tokens cached before a call, L = P + T the
// keys a call attends to, N every token (--prompt + --new), C hidden_size (--dim), H query
// heads, KV key/value heads, R = H / KV, D head_dim = C / H (lesson 15's attention);
// MLA's: QR q_lora_rank, KR kv_lora_rank, DN qk_nope_head_dim, DR qk_rope_head_dim,
// DQ = DN + DR, DV v_head_dim. The paged cache's: BT tokens per block (--block), NB blocks,
// NS sequences (--seqs).
// Index letters: b batch row, h query head, g key/value head, t query position, s key
// position, d inside a head, c a channel of the latent, i a pair (RoPE).
#ifndef AT_SCALE_H
#define AT_SCALE_H

#include <stdbool.h>
#include <stdint.h>

#include "attention.h"

// --- the flags (at_scale_flags.c) ------------------------------------------------------------

typedef struct {
    int batch, prompt, new_tokens, seqs, block;       // B, P, new, NS, BT
    int dim, heads, kv_heads, rope_base;              // C, H, KV, rope_theta
    int q_lora_rank, kv_lora_rank;                    // QR (0: no compression), KR
    int qk_nope_head_dim, qk_rope_head_dim, v_head_dim;   // DN, DR, DV
    double outlier;                                   // part 5's outlier channel factor
    int context;                                      // part 7's and --bench's cached tokens
    bool bench;
} Flags;

// Parse argv into *lesson and the flags; exit 2 with one line if they do not fit together.
Flags read_flags(Lesson *lesson, int argc, char **argv);

// --- RMSNorm and RoPE (mla.c; lesson 15's) ---------------------------------------------------

typedef struct {
    const Tensor *weight;       // (width,), ones at the start: draws nothing
    double variance_epsilon;    // 1e-6
} RMSNorm;

RMSNorm rms_norm_init(const char *name, int width, double eps);
// weight * x / sqrt(mean(x^2) + eps) over the last dim, PyTorch's bits (sum_exact.h).
Tensor *rms_norm_forward(const RMSNorm *self, const Tensor *x);
// theta_i = base^(-2i/dim), i < dim/2, with the pow PyTorch uses (lesson 15).
const Tensor *rope_inv_freq(int dim, int base);
// cos and sin (T, dim/2) of position * theta_i, positions start .. start+T-1.
void rope_cos_sin(Tensor **cos, Tensor **sin, const Tensor *inv_freq, int start, int T);

// --- DeepSeek-V2's multi-head latent attention (mla.c) -----------------------------------------

// The fields of DeepseekV2Config the attention reads.
typedef struct {
    int hidden_size;          // C
    int num_attention_heads;  // H
    int q_lora_rank;          // QR; 0 for none (config null: q_proj, as DeepSeek-V2-Lite)
    int kv_lora_rank;         // KR
    int qk_nope_head_dim;     // DN
    int qk_rope_head_dim;     // DR
    int v_head_dim;           // DV
    int rope_theta;
} DeepseekV2Config;

typedef struct {
    DeepseekV2Config config;
    int q_head_dim;             // DQ = DN + DR
    Linear q_proj;              // C -> H*DQ, only when q_lora_rank is 0
    Linear q_a_proj;            // C -> QR: the query's compression
    RMSNorm q_a_layernorm;      // (QR,)
    Linear q_b_proj;            // QR -> H*DQ: its up-projection, W^UQ and W^QR
    Linear kv_a_proj_with_mqa;  // C -> KR + DR: W^DKV (the latent) and W^KR (the RoPE key)
    RMSNorm kv_a_layernorm;     // (KR,)
    Linear kv_b_proj;           // KR -> H*(DN + DV): W^UK and W^UV, head by head
    Linear o_proj;              // H*DV -> C
    const Tensor *inv_freq;     // (DR/2,)
    float softmax_scale;        // q_head_dim ** -0.5
} DeepseekV2Attention;

// What MLA caches per token: the latent, normed, and the shared RoPE key, turned.
typedef struct {
    Tensor *compressed_kv;   // (B, capacity, KR)
    Tensor *k_pe;            // (B, capacity, DR)
    int capacity, length;
} LatentCache;

// What a forward computed besides its output, for the lesson to print.
typedef struct {
    const Tensor *q_nope, *q_pe;        // (B, H, T, DN), (B, H, T, DR) turned
    const Tensor *compressed_kv;        // (B, T, KR) kv_a_layernorm of the call's latents
    const Tensor *k_pe;                 // (B, T, DR) the call's RoPE keys, turned
    const Tensor *query_states;         // naive: (B, H, T, DQ)
    const Tensor *key_states;           // naive: (B, H, L, DQ), every cached latent decompressed
    const Tensor *value_states;         // naive: (B, H, L, DV)
    const Tensor *q_latent;             // absorbed: (B, H, T, KR)
    const Tensor *attn_weights;         // (B, H, T, L)
} MLASteps;

DeepseekV2Attention DeepseekV2Attention_init(const DeepseekV2Config *config);
LatentCache LatentCache_init(int batch, int capacity, int kv_lora_rank, int qk_rope_head_dim);
// The modeling code's forward: hidden_states (B, T, C) at positions start_pos ..; with a cache,
// the call's latents are appended and EVERY cached one is decompressed (the naive form).
Tensor *DeepseekV2Attention_forward(MLASteps *steps, const DeepseekV2Attention *self,
                                    const Tensor *hidden_states, int start_pos,
                                    LatentCache *cache);
// The same attention absorbed: W^UK folded into the query, W^UV applied after the weighted
// sum of latents; nothing decompressed. cache may be NULL (the call's own tokens only).
Tensor *DeepseekV2Attention_forward_absorbed(MLASteps *steps, const DeepseekV2Attention *self,
                                             const Tensor *hidden_states, int start_pos,
                                             LatentCache *cache);
// The two absorptions for one head (the exercise swaps the first):
//   q_latent (KR,) = W_UK^T q_nope,  W_UK (DN, KR) the head's key rows of kv_b_proj.weight
//   out (DV,)      = W_UV o_latent,  W_UV (DV, KR) the head's value rows
void absorb_query(float *q_latent, const float *q_nope, const float *w_uk, int qk_nope_head_dim,
                  int kv_lora_rank);
void absorb_output(float *out, const float *o_latent, const float *w_uv, int v_head_dim,
                   int kv_lora_rank);

// --- lesson 15's grouped-query attention and its caches (caches.c) ---------------------------

typedef struct {
    int H, KV, D;                         // query heads, key/value heads, head_dim
    Linear q_proj, k_proj, v_proj, o_proj;
    const Tensor *inv_freq;               // (D/2,)
} GQAttention;

GQAttention GQAttention_init(int hidden_size, int heads, int kv_heads, int rope_theta);
// One sequence's call: x (T, C) at positions start .. start+T-1 -> its queries (T, H, D),
// keys (T, KV, D) and values (T, KV, D), the queries and keys turned (rotate_half).
void gqa_project(Tensor **query, Tensor **key, Tensor **value, const GQAttention *self,
                 const Tensor *x, int start);

// Lesson 15's cache, one sequence: every position at its place.
typedef struct {
    Tensor *key, *value;    // (capacity, KV, D) each
    int capacity, length;
} ContiguousCache;

// The paged cache: one pool of blocks for every sequence, a table per sequence.
typedef struct {
    int block_size;         // BT tokens per block
    int num_blocks;         // NB
    int KV, D;
    Tensor *key, *value;    // (NB, BT, KV, D) each: the pool
    int *ref_count;         // (NB,) how many tables hold each block; 0: free
    int *free_list;         // (NB,) the free blocks, a stack: free_list[n_free - 1] is next
    int n_free;
    int copies;             // copies on write so far
} BlockPool;

typedef struct {
    int *blocks;            // logical block j of the sequence is physical block blocks[j]
    int n_blocks, capacity;
    int length;             // tokens written
} BlockTable;

ContiguousCache ContiguousCache_init(int capacity, int kv_heads, int head_dim);
void contiguous_append(ContiguousCache *cache, const Tensor *key, const Tensor *value);
BlockPool BlockPool_init(int num_blocks, int block_size, int kv_heads, int head_dim);
BlockTable BlockTable_init(int max_blocks);
// Append T tokens' keys and values (T, KV, D) at the table's end: a new block from the free
// list when the last is full, a private copy of the last when it is shared (copy on write).
void paged_append(BlockPool *pool, BlockTable *table, const Tensor *key, const Tensor *value);
// A new table sharing every block of `parent` (each block's count goes up by one).
BlockTable paged_fork(BlockPool *pool, const BlockTable *parent, int max_blocks);
// The table's blocks given back (a block returns to the free list when its count reaches 0).
void paged_free(BlockPool *pool, BlockTable *table);

// Causal attention of the call's queries (T, H, D), at positions P .. P+T-1, over the L = P+T
// cached keys and values: attn_output (T, H*D); weights (H, T, L) when not NULL.
Tensor *attend_contiguous(Tensor *weights, const Tensor *query, const ContiguousCache *cache);
Tensor *attend_paged(Tensor *weights, const Tensor *query, const BlockPool *pool,
                     const BlockTable *table);

// The int8 cache: keys and values as int8 with float scales, one sequence.
typedef enum { PER_TOKEN, PER_CHANNEL } KeyScales;
typedef struct {
    KeyScales key_scales;   // PER_TOKEN: a scale per (token, head); PER_CHANNEL: per (group,
                            // head, channel) over `group` tokens (KIVI), the last group in float
    int group;              // tokens per group of the per-channel scales (--block)
    int capacity, length, KV, D;
    int8_t *key_q, *value_q;   // (capacity, KV, D) each
    float *key_scale;          // PER_TOKEN (capacity, KV); PER_CHANNEL (capacity/group+1, KV, D)
    float *value_scale;        // (capacity, KV)
    float *key_recent;         // PER_CHANNEL: (group, KV, D) the keys of the group not yet full
} Int8Cache;

// Symmetric int8 of n floats with one scale: q = round(x / scale), scale = max|x| / 127
// (0 when every x is 0, and then q = 0). Returns the scale.
float quantize_row(int8_t *q, const float *x, int n, int stride);
Int8Cache Int8Cache_init(int capacity, int kv_heads, int head_dim, KeyScales key_scales,
                         int group);
void int8_append(Int8Cache *cache, const Tensor *key, const Tensor *value);
// The key and value of position s, head g, dequantized into k (D,) and v (D,).
void int8_read(float *k, float *v, const Int8Cache *cache, int s, int g);
Tensor *attend_int8(Tensor *weights, const Tensor *query, const Int8Cache *cache);

// --- the table of real models (sizes.c) and the bench (bench.c) --------------------------------

// Part 6: bytes per token of real configurations' caches.
void print_model_table(void);
// Part 7: the caches timed, their sizes; then their decode steps timed for a few rounds,
// unless the environment has ATTN_NO_TIMING (timing_wanted false: the tests set it, so that
// a run prints the same every time), at the cost part7_cost gives.
void print_bench_plan(int context);
bool timing_wanted(void);
Cost part7_cost(int context);
void print_part7_times(int context);
// --bench: the decode step timed per cache kind, more rounds, with the machine's load.
Cost bench_cost(int context);
int run_bench(int context);

#endif
