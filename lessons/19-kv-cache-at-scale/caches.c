// caches.c - lesson 15's grouped-query attention, and three caches it can read: contiguous
// (lesson 15's), paged (vLLM's), int8 (with per-token or per-channel scales).
//
// THE PAGED CACHE (Kwon et al., "Efficient Memory Management for Large Language Model
// Serving with PagedAttention", SOSP 2023; vLLM)
//   A contiguous cache must be reserved for the longest a sequence may grow, before anyone
//   knows how long it will grow. A paged cache cuts the memory into blocks of BT tokens
//   (vLLM's default: 16). A sequence owns a table of blocks, filled in order; a new block is
//   taken from the free list only when the last is full, so at most BT - 1 slots of a
//   sequence are ever empty. Blocks are counted: sequences that share a prompt share its
//   blocks (the count says how many tables hold each), and a sequence that writes into a
//   shared block first copies it (copy on write). Attention reads key s of a sequence at
//   block table[s / BT], slot s % BT: an index more, the same arithmetic.
//
// THE INT8 CACHE
//   Each key and value is stored as a signed byte q with a float scale shared by a row of
//   numbers: x ~ q * scale, scale = max|x| / 127 over the row, q = round(x / scale). Values
//   get a scale per token (and head); keys either the same, or a scale per channel over a
//   group of tokens, as KIVI (Liu et al., 2024) argues from the few channels of real keys
//   that are far larger than the rest. Attention multiplies back in its loop.
//
// Size letters: at_scale.h.
#include <math.h>
#include <string.h>

#include "at_scale.h"

// --- lesson 15's attention: the projections and RoPE -----------------------------------------

GQAttention GQAttention_init(int hidden_size, int heads, int kv_heads, int rope_theta) {
    int C = hidden_size, H = heads, KV = kv_heads, D = C / H;
    Linear q_proj = linear_init("gqa.q_proj", C, H * D, false);   // drawn in this order
    Linear k_proj = linear_init("gqa.k_proj", C, KV * D, false);
    Linear v_proj = linear_init("gqa.v_proj", C, KV * D, false);
    Linear o_proj = linear_init("gqa.o_proj", H * D, C, false);
    return (GQAttention){H, KV, D, q_proj, k_proj, v_proj, o_proj, rope_inv_freq(D, rope_theta)};
}

// transformers' apply_rotary_pos_emb on x (T, heads, D): pair i is (i, i + D/2).
static Tensor *rotate_half_rope(const Tensor *x, const Tensor *cos, const Tensor *sin) {
    int T = size(x, 0), heads = size(x, 1), D = size(x, 2), half = D / 2;
    Tensor *out = zeros(shape3(T, heads, D));                                 // (T, heads, D)
    for (int t = 0; t < T; t++) {
        for (int h = 0; h < heads; h++) {
            for (int i = 0; i < half; i++) {
                float a = *at3(x, t, h, i), e = *at3(x, t, h, i + half);
                float c = *at2(cos, t, i), s = *at2(sin, t, i);
                *at3(out, t, h, i) = a * c - e * s;
                *at3(out, t, h, i + half) = e * c + a * s;
            }
        }
    }
    return out;
}

void gqa_project(Tensor **query, Tensor **key, Tensor **value, const GQAttention *self,
                 const Tensor *x, int start) {
    int T = size(x, 0), H = self->H, KV = self->KV, D = self->D;
    Tensor *cos, *sin;
    rope_cos_sin(&cos, &sin, self->inv_freq, start, T);                       // (T, D/2)
    *query = rotate_half_rope(view(linear(&self->q_proj, x), shape3(T, H, D)), cos, sin);
    *key = rotate_half_rope(view(linear(&self->k_proj, x), shape3(T, KV, D)), cos, sin);
    *value = clone(view(linear(&self->v_proj, x), shape3(T, KV, D)));         // (T, KV, D)
}

// --- the contiguous cache and the paged cache ------------------------------------------------

ContiguousCache ContiguousCache_init(int capacity, int kv_heads, int head_dim) {
    return (ContiguousCache){zeros(shape3(capacity, kv_heads, head_dim)),
                             zeros(shape3(capacity, kv_heads, head_dim)), capacity, 0};
}

void contiguous_append(ContiguousCache *cache, const Tensor *key, const Tensor *value) {
    int T = size(key, 0), row = size(key, 1) * size(key, 2);
    if (cache->length + T > cache->capacity) {
        fail("ContiguousCache: %d + %d positions exceed its %d", cache->length, T,
             cache->capacity);
    }
    const Tensor *k = contiguous(key), *v = contiguous(value);
    memcpy(at3(cache->key, cache->length, 0, 0), &k->data[k->offset], (size_t)T * row * 4);
    memcpy(at3(cache->value, cache->length, 0, 0), &v->data[v->offset], (size_t)T * row * 4);
    cache->length += T;
}

BlockPool BlockPool_init(int num_blocks, int block_size, int kv_heads, int head_dim) {
    BlockPool pool = {block_size, num_blocks, kv_heads, head_dim,
                      zeros(shape4(num_blocks, block_size, kv_heads, head_dim)),
                      zeros(shape4(num_blocks, block_size, kv_heads, head_dim)),
                      arena_alloc((size_t)num_blocks, sizeof(int)),
                      arena_alloc((size_t)num_blocks, sizeof(int)), num_blocks, 0};
    for (int n = 0; n < num_blocks; n++) {   // block 0 on top: taken first
        pool.free_list[n] = num_blocks - 1 - n;
    }
    return pool;
}

BlockTable BlockTable_init(int max_blocks) {
    return (BlockTable){arena_alloc((size_t)max_blocks, sizeof(int)), 0, max_blocks, 0};
}

static int take_block(BlockPool *pool) {
    if (pool->n_free == 0) {   // vLLM would preempt a sequence here; the lesson sizes its pool
        fail("BlockPool: all %d blocks are taken", pool->num_blocks);
    }
    int block = pool->free_list[--pool->n_free];
    pool->ref_count[block] = 1;
    return block;
}

static void drop_block(BlockPool *pool, int block) {
    if (--pool->ref_count[block] == 0) {
        pool->free_list[pool->n_free++] = block;
    }
}

void paged_append(BlockPool *pool, BlockTable *table, const Tensor *key, const Tensor *value) {
    int BT = pool->block_size, row = pool->KV * pool->D;
    for (int t = 0; t < size(key, 0); t++) {
        int slot = table->length % BT;                  // where token `length` goes in its block
        if (slot == 0) {                                // the last block is full (or none yet)
            if (table->n_blocks == table->capacity) {
                fail("BlockTable: more than %d blocks", table->capacity);
            }
            table->blocks[table->n_blocks++] = take_block(pool);
        } else if (pool->ref_count[table->blocks[table->n_blocks - 1]] > 1) {
            // Copy on write: the last block is shared (a forked prompt's) and not full; this
            // sequence's token must not appear in the others' copies. A private block gets
            // the `slot` tokens written so far, and the shared one loses a holder.
            int shared = table->blocks[table->n_blocks - 1], mine = take_block(pool);
            memcpy(at4(pool->key, mine, 0, 0, 0), at4(pool->key, shared, 0, 0, 0),
                   (size_t)slot * row * sizeof(float));
            memcpy(at4(pool->value, mine, 0, 0, 0), at4(pool->value, shared, 0, 0, 0),
                   (size_t)slot * row * sizeof(float));
            drop_block(pool, shared);
            table->blocks[table->n_blocks - 1] = mine;
            pool->copies += 1;
        }
        int block = table->blocks[table->n_blocks - 1];
        memcpy(at4(pool->key, block, slot, 0, 0), at3(key, t, 0, 0), (size_t)row * sizeof(float));
        memcpy(at4(pool->value, block, slot, 0, 0), at3(value, t, 0, 0),
               (size_t)row * sizeof(float));
        table->length += 1;
    }
}

BlockTable paged_fork(BlockPool *pool, const BlockTable *parent, int max_blocks) {
    BlockTable child = BlockTable_init(max_blocks);
    for (int j = 0; j < parent->n_blocks; j++) {
        child.blocks[j] = parent->blocks[j];
        pool->ref_count[parent->blocks[j]] += 1;
    }
    child.n_blocks = parent->n_blocks;
    child.length = parent->length;
    return child;
}

void paged_free(BlockPool *pool, BlockTable *table) {
    for (int j = table->n_blocks - 1; j >= 0; j--) {   // the last block is reused first
        drop_block(pool, table->blocks[j]);
    }
    table->n_blocks = table->length = 0;
}

// The two attentions: lesson 15's loops, query t at position P + t seeing keys 0 .. P + t,
// query head h reading key/value head g = h / R. They differ in one line, where key s is.
Tensor *attend_contiguous(Tensor *weights, const Tensor *query, const ContiguousCache *cache) {
    int T = size(query, 0), H = size(query, 1), D = size(query, 2);
    int L = cache->length, P = L - T, R = H / size(cache->key, 1);
    float scale = sqrtf((float)D);                      // math.sqrt(head_dim), as lesson 15
    Tensor *attn_output = zeros(shape2(T, H * D));                           // (T, H*D)
    float *w = arena_alloc((size_t)L, sizeof(float));                        // (L,)
    for (int h = 0; h < H; h++) {
        int g = h / R;
        for (int t = 0; t < T; t++) {
            const float *q_t = at3(query, t, h, 0);                         // (D,)
            float *out_t = at2(attn_output, t, h * D);                      // (D,)
            int visible = P + t + 1;
            for (int s = 0; s < visible; s++) {
                const float *k_s = at3(cache->key, s, g, 0);                // (D,) at its place
                float dot = 0.0f;
                for (int d = 0; d < D; d++) {
                    dot += q_t[d] * k_s[d];
                }
                w[s] = dot / scale;
            }
            softmax_exact_lastdim(w, 1, visible);
            for (int s = 0; s < visible; s++) {
                const float *v_s = at3(cache->value, s, g, 0);
                for (int d = 0; d < D; d++) {
                    out_t[d] += w[s] * v_s[d];
                }
            }
            if (weights != NULL) {
                memcpy(at3(weights, h, t, 0), w, (size_t)visible * sizeof(float));
            }
        }
    }
    return attn_output;
}

Tensor *attend_paged(Tensor *weights, const Tensor *query, const BlockPool *pool,
                     const BlockTable *table) {
    int T = size(query, 0), H = size(query, 1), D = size(query, 2), BT = pool->block_size;
    int L = table->length, P = L - T, R = H / pool->KV;
    float scale = sqrtf((float)D);
    Tensor *attn_output = zeros(shape2(T, H * D));                           // (T, H*D)
    float *w = arena_alloc((size_t)L, sizeof(float));                        // (L,)
    for (int h = 0; h < H; h++) {
        int g = h / R;
        for (int t = 0; t < T; t++) {
            const float *q_t = at3(query, t, h, 0);
            float *out_t = at2(attn_output, t, h * D);
            int visible = P + t + 1;
            for (int s = 0; s < visible; s++) {
                int block = table->blocks[s / BT], slot = s % BT;          // through the table
                const float *k_s = at4(pool->key, block, slot, g, 0);       // (D,)
                float dot = 0.0f;
                for (int d = 0; d < D; d++) {
                    dot += q_t[d] * k_s[d];
                }
                w[s] = dot / scale;
            }
            softmax_exact_lastdim(w, 1, visible);
            for (int s = 0; s < visible; s++) {
                const float *v_s = at4(pool->value, table->blocks[s / BT], s % BT, g, 0);
                for (int d = 0; d < D; d++) {
                    out_t[d] += w[s] * v_s[d];
                }
            }
            if (weights != NULL) {
                memcpy(at3(weights, h, t, 0), w, (size_t)visible * sizeof(float));
            }
        }
    }
    return attn_output;
}

// --- the int8 cache --------------------------------------------------------------------------

// torch.round(x / scale).clamp(-127, 127) with scale = x.abs().amax() / 127: rintf rounds
// half to even, as torch.round does. n numbers `stride` apart.
float quantize_row(int8_t *q, const float *x, int n, int stride) {
    float largest = 0.0f;
    for (int j = 0; j < n; j++) {
        largest = fmaxf(largest, fabsf(x[(long)j * stride]));
    }
    float scale = largest / 127.0f;
    for (int j = 0; j < n; j++) {
        float r = scale > 0.0f ? rintf(x[(long)j * stride] / scale) : 0.0f;
        q[(long)j * stride] = (int8_t)fminf(fmaxf(r, -127.0f), 127.0f);
    }
    return scale;
}

Int8Cache Int8Cache_init(int capacity, int kv_heads, int head_dim, KeyScales key_scales,
                         int group) {
    int KV = kv_heads, D = head_dim;
    size_t elements = (size_t)capacity * KV * D;
    size_t key_scales_count = key_scales == PER_TOKEN ? (size_t)capacity * KV
                                                      : ((size_t)capacity / group + 1) * KV * D;
    return (Int8Cache){key_scales, group, capacity, 0, KV, D,
                       arena_alloc(elements, 1), arena_alloc(elements, 1),
                       arena_alloc(key_scales_count, sizeof(float)),
                       arena_alloc((size_t)capacity * KV, sizeof(float)),
                       key_scales == PER_CHANNEL
                           ? arena_alloc((size_t)group * KV * D, sizeof(float)) : NULL};
}

void int8_append(Int8Cache *cache, const Tensor *key, const Tensor *value) {
    int KV = cache->KV, D = cache->D, G = cache->group;
    if (cache->length + size(key, 0) > cache->capacity) {
        fail("Int8Cache: %d + %d positions exceed its %d", cache->length, size(key, 0),
             cache->capacity);
    }
    for (int t = 0; t < size(key, 0); t++) {
        int s = cache->length;
        for (int g = 0; g < KV; g++) {   // values: a scale per token and head, always
            long at = ((long)s * KV + g) * D;
            cache->value_scale[(long)s * KV + g] = quantize_row(&cache->value_q[at],
                                                                at3(value, t, g, 0), D, 1);
            if (cache->key_scales == PER_TOKEN) {
                cache->key_scale[(long)s * KV + g] = quantize_row(&cache->key_q[at],
                                                                  at3(key, t, g, 0), D, 1);
            }
        }
        if (cache->key_scales == PER_CHANNEL) {
            // The key waits in float with the rest of its group; when the group is full, each
            // channel (head g, number d) gets one scale over the group's G tokens.
            memcpy(&cache->key_recent[(long)(s % G) * KV * D], at3(key, t, 0, 0),
                   (size_t)KV * D * sizeof(float));
            if (s % G == G - 1) {
                int first = s - (G - 1), group = s / G;
                for (int c = 0; c < KV * D; c++) {   // column c of the (G, KV*D) group
                    cache->key_scale[(long)group * KV * D + c] = quantize_row(
                        &cache->key_q[(long)first * KV * D + c], &cache->key_recent[c], G,
                        KV * D);
                }
            }
        }
        cache->length += 1;
    }
}

void int8_read(float *k, float *v, const Int8Cache *cache, int s, int g) {
    int KV = cache->KV, D = cache->D, G = cache->group;
    long at = ((long)s * KV + g) * D;
    float value_scale = cache->value_scale[(long)s * KV + g];
    for (int d = 0; d < D; d++) {
        v[d] = (float)cache->value_q[at + d] * value_scale;
    }
    if (cache->key_scales == PER_TOKEN) {
        float key_scale = cache->key_scale[(long)s * KV + g];
        for (int d = 0; d < D; d++) {
            k[d] = (float)cache->key_q[at + d] * key_scale;
        }
    } else if (s < cache->length / G * G) {   // in a full group: quantized per channel
        const float *scales = &cache->key_scale[((long)(s / G) * KV + g) * D];
        for (int d = 0; d < D; d++) {
            k[d] = (float)cache->key_q[at + d] * scales[d];
        }
    } else {                                   // in the group still filling: float
        memcpy(k, &cache->key_recent[((long)(s % G) * KV + g) * D], (size_t)D * sizeof(float));
    }
}

// attend_contiguous's loops, each key and value multiplied back from its bytes as it is read.
Tensor *attend_int8(Tensor *weights, const Tensor *query, const Int8Cache *cache) {
    int T = size(query, 0), H = size(query, 1), D = size(query, 2);
    int L = cache->length, P = L - T, R = H / cache->KV;
    float scale = sqrtf((float)D);
    Tensor *attn_output = zeros(shape2(T, H * D));                           // (T, H*D)
    float *w = arena_alloc((size_t)L, sizeof(float));                        // (L,)
    float *k_s = arena_alloc((size_t)D, sizeof(float));                     // (D,) dequantized
    float *v_s = arena_alloc((size_t)D, sizeof(float));                     // (D,)
    for (int h = 0; h < H; h++) {
        int g = h / R;
        for (int t = 0; t < T; t++) {
            const float *q_t = at3(query, t, h, 0);
            float *out_t = at2(attn_output, t, h * D);
            int visible = P + t + 1;
            for (int s = 0; s < visible; s++) {
                int8_read(k_s, v_s, cache, s, g);                           // dequantized
                float dot = 0.0f;
                for (int d = 0; d < D; d++) {
                    dot += q_t[d] * k_s[d];
                }
                w[s] = dot / scale;
            }
            softmax_exact_lastdim(w, 1, visible);
            for (int s = 0; s < visible; s++) {
                int8_read(k_s, v_s, cache, s, g);
                for (int d = 0; d < D; d++) {
                    out_t[d] += w[s] * v_s[d];
                }
            }
            if (weights != NULL) {
                memcpy(at3(weights, h, t, 0), w, (size_t)visible * sizeof(float));
            }
        }
    }
    return attn_output;
}
