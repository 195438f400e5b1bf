// Lesson 10: kv-cache - generate token by token without recomputing the past.
//
// WHAT THIS ADDS
//   Lesson 9 ran causal GQA over a whole sequence at once. A language model
//   generates one token at a time, and each new token needs attention over
//   every token before it. Recomputing the keys and values of all earlier
//   tokens at every step repeats work: with the causal mask, the key and
//   value of token s never change once s is computed. So we keep them, the
//   KV cache, and at each step project only the NEW token, append its key
//   and value (the KV key/value heads of GQA, before any repeat to H heads:
//   that is why GQA makes the cache small) and attend over the whole cache.
//   The GQA notebook's GQA_W_KVcache tries this and has three bugs; this is the
//   class fixed. We check it against the full causal forward, print what
//   the cache costs in memory, then do what real decoders do instead of the
//   notebook's expand().reshape(), which copies the whole cache into every
//   query head at every step: query head h reads cache head h / R where it
//   lies. Same numbers, nothing copied. --bench measures what the cache
//   saves in time, and what the copy costs.
//
// THE MATH (P keys already cached, T new tokens, L = P + T keys after appending them)
//   k_new, v_new = x_new W_k, x_new W_v            (B, T, KV, D)  only the new tokens
//   K = [K_cache; k_new], V = [V_cache; v_new]     (B, L, KV, D)  the cache grows by T
//   scores = q_new K^T / sqrt(D)                   (B, H, T, L)   query head h uses key head h / R
//   mask   = triu(ones(T, L), diagonal = 1 + P)                   token t sees keys <= P + t
//   out    = softmax(masked scores) V              (B, H, T, D)   -> o_proj -> (B, T, C)
//   Decoding token by token gives exactly the rows of the full causal forward.
//   The notebook builds K for all H heads, (B, H, L, D), by copying: 2*B*H*L*D
//   floats (K and V) per step. Reading key head h / R in place copies none.
//
// THE PYTORCH IT MIRRORS (the notebook's last cell, In [None], GQA_W_KVcache with its bugs fixed)
//   torch.manual_seed(seed)
//   gqa = GQA_W_KVcache(dim, heads, kv_heads).eval()   # draws as GQA(...) does
//   x = torch.randn(batch, prompt + new, dim)
//   full_out = gqa(x, x, x)                            # no cache: causal mask (8, 8)
//   gqa.use_cache = True
//   outs = [gqa(x[:, :prompt], x[:, :prompt], x[:, :prompt])]   # prefill
//   for t in range(prompt, prompt + new):              # decode, one token a step
//       outs.append(gqa(x[:, t:t+1], x[:, t:t+1], x[:, t:t+1]))
//   cached_out = torch.cat(outs, dim=1)                # == full_out, to float rounding
//   (docs/10-kv-cache.md has the complete script.)
//
// RUN IT
//   make lesson-10       flags: --batch 1 --prompt 4 --new 4 --dim 512 --heads 8
//                        --kv-heads 2, --heatmap, --seed, --dump, --dot
//   make lesson-10 ARGS=--bench    time generation with and without the cache
//   make lesson-10 ARGS="--bench --dim 64"    the bench with the sizes given
//
// WHAT TO LOOK FOR
//   - k_cache grows by one position per step and has kv_heads (2), not
//     heads (8), key heads: (1, 5, 2, 64), (1, 6, 2, 64), ...
//   - Each step's output equals the full forward's row to about 1e-7.
//   - The notebook's cache, stored once and never updated, is right for the
//     first decoded token and wrong from the second on.
//   - A chunk of 2 new tokens needs the mask with its diagonal moved right
//     by P, the cached positions; the notebook's (2, 2) mask does not even fit.
//   - No copy: reading cache head h / R by index gives the copying forward's
//     numbers exactly, while the copy grows by 2*B*H*D floats every step
//     (and is no copy at all when kv_heads is 1 or equals heads).
//   - --bench: the measured speedup against the one the FLOP count predicts,
//     each time the best of several repetitions, with how much they varied.
//
// THE PARTS (each a function below, called from main in this order)
//   1. the notebook's cell: the full forward, then the prefill and one token
//      per call through the cache, checked row by row (--heatmap draws the weights)
//   2. the notebook's cache, stored once and never updated (--prompt, --new)
//   3. chunks of 2 new tokens: the mask moved right by the cache (--prompt)
//   4. what the cache costs in memory (--kv-heads, --heads, --dim)
//   5. no copy: query head h reads cache head h // R where it lies (--kv-heads)
//   appendix A, after main: --bench
//
// Size letters (docs/README.md has the table): B = batch, T = the new tokens
// of a call, P = positions already in the cache (the module's cache_len), L =
// P + T (the keys a call attends to), N = prompt + new (all the tokens), C =
// dim, H = query heads (num_heads), KV = key/value heads (--kv-heads, the
// notebook's num_groups), R = H / KV (query heads per key/value head, the
// notebook's expand_ratio), D = head_dim = C / H.
// Index letters: b batch, t a query's position (s a key's), h query head, g
// key/value head: query head h reads key/value head g = h / R; d one of a
// head's D numbers.

#define _POSIX_C_SOURCE 200809L   // clock_gettime(CLOCK_MONOTONIC), for --bench

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "attention.h"

// --- the module: GQA_W_KVcache, fixed -------------------------------------------------

// class GQA_W_KVcache(nn.Module), the GQA notebook's last cell, fixed. The notebook's
// k_cache/v_cache are tensors that torch.cat makes one step longer at every
// call; here they are storage for `capacity` positions, made once by
// GQA_W_KVcache_start_cache, of which the first cache_len are filled (as
// llama2.c's key_cache and Hugging Face's StaticCache are).
typedef struct {
    int num_heads;      // H
    int head_dim;       // D = C / H
    int num_groups;     // KV, the key/value heads
    Linear w_query;     // C -> C
    Linear w_key;       // C -> KV * D
    Linear w_value;     // C -> KV * D
    Linear o_proj;      // C -> C
    bool training;      // .eval() clears it
    bool use_cache;     // the notebook's switch: off for the full forward
    int capacity;       // positions the cache has room for
    int cache_len;      // P, the positions filled: the notebook's k_cache.shape[1]
    Tensor *k_cache;    // (B, capacity, KV, D): keys of positions 0 .. P-1
    Tensor *v_cache;    // (B, capacity, KV, D)
} GQA_W_KVcache;

// What the forward computed besides its output, kept for the lesson to
// print and the tests to check (the notebook keeps them local).
typedef struct {
    const Tensor *key;     // (B, H, L, D): every query head's keys, after expand().reshape()
    const Tensor *value;   // (B, H, L, D)
    const Tensor *attn;    // (B, H, T, L): the weights
} GQA_W_KVcacheSteps;

// GQA_W_KVcache(dim, num_heads, num_groups). The notebook's first line here
// is `super(GQA, self).__init__()` (BUG 1): it names the OTHER class, GQA,
// of which this object is not an instance, so Python stops with
//   TypeError: super(type, obj): obj must be an instance or subtype of type
// and the class cannot even be constructed. It must be
// super(GQA_W_KVcache, self), or just super(). The layers are created in
// the same order as GQA's, so the same seed gives the same weights.
static GQA_W_KVcache GQA_W_KVcache_init(int dim, int num_heads, int num_groups) {
    GQA_W_KVcache self;
    memset(&self, 0, sizeof self);
    self.num_heads = num_heads;
    self.head_dim = dim / num_heads;
    self.num_groups = num_groups;
    self.w_query = linear_init("w_query", dim, dim, true);
    self.w_key = linear_init("w_key", dim, num_groups * self.head_dim, true);
    self.w_value = linear_init("w_value", dim, num_groups * self.head_dim, true);
    self.o_proj = linear_init("o_proj", dim, dim, true);
    self.training = true;    // nn.Module starts in training mode
    self.use_cache = false;  // the notebook's default
    return self;
}

// `gqa.use_cache = True`, with the storage the notebook never allocates:
// room for `capacity` positions of `batch_size` sequences, all empty. (The
// notebook never empties its cache either: a second sequence would need
// k_cache and v_cache set back to None by hand.)
static void GQA_W_KVcache_start_cache(GQA_W_KVcache *self, int batch_size, int capacity) {
    Shape cache_shape = shape4(batch_size, capacity, self->num_groups, self->head_dim);
    self->use_cache = true;
    self->capacity = capacity;
    self->cache_len = 0;
    self->k_cache = zeros(cache_shape);                                      // (B, capacity, KV, D)
    self->v_cache = zeros(cache_shape);                                      // (B, capacity, KV, D)
    // Name the storage in the --dot diagram only: named() would also --dump
    // it, empty; the lesson dumps the filled caches at the end.
    labeled("k_cache", self->k_cache);
    labeled("v_cache", self->v_cache);
}

// Positions [from, from + count) of dst, for every batch entry b, copied
// from src (starting at src_from). Both are (B, *, KV, D) with each position
// of each sequence KV * D floats in a row (a contiguous tensor, or a view of
// one that narrows positions only).
static void copy_positions(Tensor *dst, int from, const Tensor *src, int src_from, int count) {
    int B = size(dst, 0), KV = size(dst, 2), D = size(dst, 3);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < count; t++) {
            memcpy(at4(dst, b, from + t, 0, 0), at4(src, b, src_from + t, 0, 0),
                   (size_t)KV * D * sizeof(float));
        }
    }
}

// Write the T positions of `rows` (B, T, KV, D) into `cache` after the
// cache_len it holds: T positions moved, whatever the length of the cache.
// Not static: make exercise-10 links the reader's own in its place
// (exercises/10-kv-cache.c).
void append_in_place(Tensor *cache, int cache_len, const Tensor *rows) {
    copy_positions(cache, cache_len, rows, 0, size(rows, 1));
    trace1("append (in place)", cache, rows);
}

// The new tokens' keys and values (B, T, KV, D) into the module's cache.
static void append_to_cache(GQA_W_KVcache *self, const Tensor *key, const Tensor *value) {
    int seq_len = size(key, 1);
    if (self->cache_len + seq_len > self->capacity) {
        fail("GQA_W_KVcache: %d cached + %d new positions exceed the cache's %d",
             self->cache_len, seq_len, self->capacity);
    }
    append_in_place(self->k_cache, self->cache_len, key);
    append_in_place(self->v_cache, self->cache_len, value);
    self->cache_len += seq_len;
}

// GQA_W_KVcache.forward(query, key, value), line by line, fixed. The inputs
// are (B, T, C): the T NEW tokens only when the cache is on. Returns out
// (B, T, C); `steps` (may be NULL) gets the expanded keys and values and
// the weights. `self` is not const: with the cache on, the forward appends
// this call's keys and values to the module's cache, as the notebook's
// forward writes self.k_cache.
static Tensor *GQA_W_KVcache_forward(GQA_W_KVcacheSteps *steps, GQA_W_KVcache *self,
                                     const Tensor *query, const Tensor *key,
                                     const Tensor *value) {
    int batch_size = size(query, 0);
    int seq_len = size(query, 1);
    int H = self->num_heads, KV = self->num_groups, D = self->head_dim;
    const int heads_first[4] = {0, 2, 1, 3};   // permute(0, 2, 1, 3)
    Shape query_heads = shape4(batch_size, seq_len, H, D);
    Shape kv_heads = shape4(batch_size, seq_len, KV, D);

    query = view(linear(&self->w_query, query), query_heads);                 // (B, T, H, D)
    query = permute(query, heads_first);                                      // (B, H, T, D)
    // Keys and values stay (B, T, KV, D), positions before heads, while they
    // go into the cache: that is the layout the cache grows along (dim 1).
    // Only KV heads are computed and stored, not H: R = H / KV times less
    // memory than multi-head attention would cache.
    key = view(linear(&self->w_key, key), kv_heads);                          // (B, T, KV, D)
    value = view(linear(&self->w_value, value), kv_heads);                    // (B, T, KV, D)

    // P, the keys before this call's tokens: 0 without a cache.
    int cache_len = 0;
    if (self->use_cache) {
        // The notebook:
        //     if self.k_cache is None:
        //         self.k_cache = key; self.v_cache = value
        //     else:
        //         key = torch.cat([self.k_cache, key], dim=1)
        //         value = torch.cat([self.v_cache, value], dim=1)
        // BUG 2: the cache is stored on the first call only. The else branch
        // never writes the longer key back to self.k_cache, so every later
        // step sees the prompt and itself, and loses the tokens in between.
        // Fixed: every call appends to the cache, then attends over all of it.
        cache_len = self->cache_len;
        append_to_cache(self, key, value);
        key = narrow(self->k_cache, 1, 0, self->cache_len);                   // (B, L, KV, D)
        value = narrow(self->v_cache, 1, 0, self->cache_len);                 // (B, L, KV, D)
    }
    int kv_len = cache_len + seq_len;   // L

    key = permute(key, heads_first);                                          // (B, KV, L, D)
    value = permute(value, heads_first);                                      // (B, KV, L, D)
    // As in lesson 9: query head h = g * R + r uses key/value head g. The
    // expand is free; the reshape copies the cache R times over, at every
    // step, unless KV = 1 or R = 1 (then it is a view). -1 there is L, which
    // the notebook leaves to PyTorch because it changes from call to call.
    int expand_ratio = H / KV;   // R
    Shape every_head = shape4(batch_size, H, -1, D);
    Shape groups_expanded = shape5(-1, -1, expand_ratio, -1, -1);
    key = expand(unsqueeze(key, 2), groups_expanded);                         // (B, KV, R, L, D)
    key = reshape(key, every_head);                                           // (B, H, L, D)
    value = expand(unsqueeze(value, 2), groups_expanded);                     // (B, KV, R, L, D)
    value = reshape(value, every_head);                                       // (B, H, L, D)

    const Tensor *scores = matmul(query, transpose(key, -2, -1));             // (B, H, T, L)
    scores = div_scalar(scores, sqrtf((float)D));                             // (B, H, T, L)

    // BUG 3: the notebook builds torch.triu(torch.ones(seq_len, seq_len),
    // diagonal=1), a (T, T) mask, for scores that are (T, L) once a cache
    // is there. For one new token it skips the mask (`if seq_len > 1`),
    // which happens to be right; for a chunk of T > 1 new tokens after a
    // cache the mask cannot be broadcast and PyTorch stops. The mask of
    // lesson 9 fits every case: new token t sits at position P + t and sees
    // the keys up to there, so the diagonal moves right by P. With T = 1 it
    // is all zeros, so no `if` is needed.
    const Tensor *mask = triu(ones(shape2(seq_len, kv_len)), 1 + cache_len);  // (T, L)
    scores = masked_fill(scores, eq_scalar(mask, 1.0f), -INFINITY);           // (B, H, T, L)
    const Tensor *attn = softmax(scores, -1);                                 // (B, H, T, L)
    attn = dropout(attn, 0.1, self->training);                                // (B, H, T, L)
    if (steps != NULL) {
        *steps = (GQA_W_KVcacheSteps){key, value, attn};
    }

    const Tensor *attn_out = matmul(attn, value);                             // (B, H, T, D)
    attn_out = permute(attn_out, heads_first);                                // (B, T, H, D)
    attn_out = reshape(attn_out, shape3(batch_size, seq_len, H * D));         // (B, T, C)
    return linear(&self->o_proj, attn_out);                                   // (B, T, C)
}

// --- the same forward without the copy: query head h reads cache head h / R ---------

// The forward above without expand().reshape(). Up to the cache it is the
// same; then, instead of copying the L cached positions of each key/value
// head into its R query heads, query head h reads key/value head g = h / R
// where the cache holds it: llama2.c's `kv_mul = n_heads / n_kv_heads`, and
// its key head `h / kv_mul`. The causal mask becomes the loop bound: new
// token t reads keys 0 .. P + t, so the weights of later keys are never
// computed and stay 0 (exp(-inf) in the forward above). Eval mode only: a
// decoder runs no dropout. Returns out (B, T, C); `steps` (may be NULL) gets
// the weights, and NULL for key and value: no per-head copy exists.
static Tensor *GQA_W_KVcache_forward_by_index(GQA_W_KVcacheSteps *steps, GQA_W_KVcache *self,
                                              const Tensor *query, const Tensor *key,
                                              const Tensor *value) {
    int batch_size = size(query, 0);
    int seq_len = size(query, 1);
    int H = self->num_heads, KV = self->num_groups, D = self->head_dim;
    if (self->training) {
        fail("GQA_W_KVcache_forward_by_index: eval mode only (it has no dropout)");
    }
    Shape query_heads = shape4(batch_size, seq_len, H, D);
    Shape kv_heads = shape4(batch_size, seq_len, KV, D);
    query = view(linear(&self->w_query, query), query_heads);                 // (B, T, H, D)
    key = view(linear(&self->w_key, key), kv_heads);                          // (B, T, KV, D)
    value = view(linear(&self->w_value, value), kv_heads);                    // (B, T, KV, D)
    int cache_len = 0;
    if (self->use_cache) {   // as in the forward above: append, then read all of it
        cache_len = self->cache_len;
        append_to_cache(self, key, value);
        key = narrow(self->k_cache, 1, 0, self->cache_len);                   // (B, L, KV, D)
        value = narrow(self->v_cache, 1, 0, self->cache_len);                 // (B, L, KV, D)
    }
    int kv_len = cache_len + seq_len;   // L
    int kv_mul = H / KV;                // R: query heads per key/value head
    float scale = sqrtf((float)D);

    Tensor *attn = zeros(shape4(batch_size, H, seq_len, kv_len));             // (B, H, T, L)
    Tensor *attn_out = zeros(shape3(batch_size, seq_len, H * D));             // (B, T, C)
    for (int b = 0; b < batch_size; b++) {
        for (int h = 0; h < H; h++) {
            int g = h / kv_mul;   // the key/value head that query head h reads
            for (int t = 0; t < seq_len; t++) {
                const float *q_t = at4(query, b, t, h, 0);     // (D,) token t's query, head h
                float *attn_t = at4(attn, b, h, t, 0);         // (L,) its scores, then weights
                float *out_t = at3(attn_out, b, t, h * D);     // (D,) head h's part of row t
                int visible = cache_len + t + 1;             // keys 0 .. P + t

                // Pass 1: scores[s] = q_t . k_s / sqrt(D), k_s read in the cache.
                for (int s = 0; s < visible; s++) {
                    const float *k_s = at4(key, b, s, g, 0);     // (D,) key s of head g
                    float dot = 0.0f;
                    for (int d = 0; d < D; d++) {
                        dot += q_t[d] * k_s[d];
                    }
                    attn_t[s] = dot / scale;
                }
                // Pass 2: softmax over the visible keys, in place, with the
                // helper's row softmax (as llama2.c calls its softmax(att, n)):
                // the arithmetic of the softmax() the copying forward calls,
                // so the weights come out the same to the bit.
                softmax_exact_lastdim(attn_t, 1, visible);
                // Pass 3: out_t = sum over s of weight[s] * v_s.
                for (int s = 0; s < visible; s++) {
                    const float *v_s = at4(value, b, s, g, 0);   // (D,) value s of head g
                    for (int d = 0; d < D; d++) {
                        out_t[d] += attn_t[s] * v_s[d];
                    }
                }
            }
        }
    }
    if (steps != NULL) {
        *steps = (GQA_W_KVcacheSteps){NULL, NULL, attn};
    }
    return linear(&self->o_proj, attn_out);                                   // (B, T, C)
}

// gqa(x, x, x) on positions [from, from + count) of x (B, N, C): self-
// attention, so the same tokens give the queries, keys and values. By the
// notebook's forward, or by the one that reads by index.
static Tensor *step(GQA_W_KVcacheSteps *steps, GQA_W_KVcache *self, const Tensor *x, int from,
                    int count) {
    const Tensor *x_new = narrow(x, 1, from, count);                          // (B, count, C)
    return GQA_W_KVcache_forward(steps, self, x_new, x_new, x_new);           // (B, count, C)
}

static Tensor *step_by_index(GQA_W_KVcacheSteps *steps, GQA_W_KVcache *self, const Tensor *x,
                             int from, int count) {
    const Tensor *x_new = narrow(x, 1, from, count);                          // (B, count, C)
    return GQA_W_KVcache_forward_by_index(steps, self, x_new, x_new, x_new);  // (B, count, C)
}

// --- part 1: the notebook's cell: the full forward, then the cache ------------------------

typedef struct {
    int batch, prompt, new_tokens, dim, heads, kv_heads;
} Sizes;

// What part 1 made, for the parts after it.
typedef struct {
    GQA_W_KVcache gqa;          // eval mode; its cache filled by the decode
    const Tensor *x;            // (B, N, C)
    const Tensor *full_out;     // (B, N, C) no cache
    const Tensor *cached_out;   // (B, N, C) the prefill's output, then each step's
    int prompt;                 // tokens prefilled in one call
} Cell;

// max |a - b| between a (B, T, C) and positions [from, from + T) of b.
// A check, not dataflow: kept out of the --dot diagram.
static float diff_at(const Tensor *a, const Tensor *b, int from) {
    bool was_paused = trace_pause(true);
    float diff = max_abs_diff(a, narrow(b, 1, from, size(a, 1)));
    trace_pause(was_paused);
    return diff;
}

// torch.Size of the filled part of a cache: (B, P, KV, D).
static const char *cache_size_str(const Tensor *cache, int cache_len) {
    int sizes[4] = {size(cache, 0), cache_len, size(cache, 2), size(cache, 3)};
    return sizes_str(sizes, 4, SIZES_TORCH);
}

// The reference: the whole sequence at once, no cache, causal mask (N, N).
// The --dot diagram draws it as one step: its inside is lesson 9's module.
static const Tensor *full_forward(GQA_W_KVcache *gqa, const Tensor *x, bool heatmap) {
    GQA_W_KVcacheSteps full;
    bool was_paused = trace_pause(true);
    const Tensor *full_out = step(&full, gqa, x, 0, size(x, 1));              // (B, N, C)
    trace_pause(was_paused);
    char label[64];
    snprintf(label, sizeof label, "gqa(x, x, x): no cache,\ncausal mask (%d, %d)", size(x, 1),
             size(x, 1));
    trace1(label, full_out, x);
    named("full_out", full_out);
    printf("full_out = gqa(x, x, x), no cache: %s\n\n", size_str(full_out));
    if (heatmap) {
        print_heatmap("full_attn", narrow(full.attn, 0, 0, 1));
    }
    return full_out;
}

// One decode step's lines: the output and the caches (k_cache and v_cache
// always have the same size), and the output against the full forward's row t.
static void print_decode_step(const GQA_W_KVcache *gqa, const Tensor *out,
                              const Tensor *full_out, int t) {
    printf("token %d: out: %s, k_cache and v_cache: %s\n", t, size_str(out),
           cache_size_str(gqa->k_cache, gqa->cache_len));
    printf("  max |out - full_out[:, %d]| = %.3g\n", t, (double)diff_at(out, full_out, t));
}

// Prefill the prompt in one call, then decode one token per call; each
// output against the full forward's rows. Returns the outputs joined,
// cached_out (B, N, C), and dumps it with the caches.
// The --dot diagram draws the cache's storage and the FIRST decode step:
// the prefill is the full forward's work on fewer tokens, and every later
// step repeats the first one on a longer cache.
static const Tensor *decode_with_cache(GQA_W_KVcache *gqa, const Tensor *x,
                                       const Tensor *full_out, int prompt) {
    int B = size(x, 0), N = size(x, 1), C = size(x, 2);
    // Prefill: the prompt in one call, with the ordinary causal mask; it
    // fills the cache with the prompt's keys and values.
    GQA_W_KVcache_start_cache(gqa, B, N);
    bool was_paused = trace_pause(true);
    printf("gqa.use_cache = True\n");
    printf("-- prefill: the %d prompt tokens in one call --\n", prompt);
    const Tensor **outs = arena_alloc((size_t)(N - prompt + 1), sizeof *outs);
    outs[0] = step(NULL, gqa, x, 0, prompt);                                  // (B, P, C)
    printf("out: %s\n", size_str(outs[0]));
    printf("k_cache: %s\n", cache_size_str(gqa->k_cache, gqa->cache_len));
    printf("  max |out - full_out[:, 0:%d]| = %.3g\n", prompt,
           (double)diff_at(outs[0], full_out, 0));

    // Decode: one token per call. Only its query, key and value are
    // projected; its key and value are appended; it attends to the cache.
    printf("-- decode: one token per call --\n");
    trace_pause(was_paused);   // the diagram's step: drawn, and all it made is kept
    outs[1] = step(NULL, gqa, x, prompt, 1);                                  // (B, 1, C)
    trace_pause(true);
    print_decode_step(gqa, outs[1], full_out, prompt);
    for (int t = prompt + 1; t < N; t++) {   // t: the position of this step's token
        // The step's output is kept; all else it made is freed once it is
        // checked, so memory does not grow with the number of steps.
        Tensor *kept = zeros(shape3(B, 1, C));                                // (B, 1, C)
        size_t mark = arena_mark();
        const Tensor *out = step(NULL, gqa, x, t, 1);                         // (B, 1, C)
        print_decode_step(gqa, out, full_out, t);
        for (int b = 0; b < B; b++) {
            memcpy(at3(kept, b, 0, 0), at3(out, b, 0, 0), (size_t)C * sizeof(float));
        }
        arena_release(mark);
        outs[t - prompt + 1] = kept;
    }
    const Tensor *cached_out = cat(outs, N - prompt + 1, 1);                  // (B, N, C)
    // The dumps are the whole run's results. The caches are the storage
    // the diagram drew, now full; cached_out joins the step drawn with the
    // prefill's output and the later steps', which it did not draw.
    trace_pause(was_paused);
    trace1("torch.cat([prefill's out, this out, ...], 1)", cached_out, outs[1]);
    named("cached_out", cached_out);
    named("k_cache", gqa->k_cache);                                           // (B, N, KV, D)
    named("v_cache", gqa->v_cache);                                           // (B, N, KV, D)

    printf("cached_out = torch.cat(outs, dim=1): %s\n", size_str(cached_out));
    // Our loops add the same products in the same order whether a row is
    // computed alone or with the others, so the difference is usually 0;
    // PyTorch's blocked matrix kernels sum in another order and differ by
    // float rounding (about 1e-7).
    printf("max |cached_out - full_out| = %.3g   (0 or float rounding)\n",
           (double)max_abs_diff(cached_out, full_out));
    return cached_out;
}

// out[0, :8, :4] as a (rows, cols) matrix. ([:8] as in Python: fewer rows
// or columns when there are fewer.)
static const Tensor *corner(const Tensor *out) {
    int rows = size(out, 1) < 8 ? size(out, 1) : 8, cols = size(out, 2) < 4 ? size(out, 2) : 4;
    const Tensor *first_rows = narrow(narrow(out, 0, 0, 1), 1, 0, rows);      // (1, 8, C)
    return reshape(narrow(first_rows, 2, 0, cols), shape2(rows, cols));       // (8, 4)
}

// The notebook's cell: the module, its input, the full forward, then the
// same tokens through the cache, and the first corner of both outputs.
static Cell part1_the_notebooks_cell(const Sizes *n, bool heatmap) {
    Cell cell;
    cell.prompt = n->prompt;
    printf("gqa = GQA_W_KVcache(%d, %d, %d).eval()   (the GQA notebook's class, its 3 bugs "
           "fixed)\n", n->dim, n->heads, n->kv_heads);
    cell.gqa = GQA_W_KVcache_init(n->dim, n->heads, n->kv_heads);
    cell.gqa.training = false;   // .eval(): generation never uses dropout
    int N = n->prompt + n->new_tokens;
    cell.x = named("x", randn(shape3(n->batch, N, n->dim)));                  // (B, N, C)
    printf("x: %s\n", size_str(cell.x));
    cell.full_out = full_forward(&cell.gqa, cell.x, heatmap);                 // (B, N, C)
    cell.cached_out = decode_with_cache(&cell.gqa, cell.x, cell.full_out, n->prompt);
    bool was_paused = trace_pause(true);   // slices for printing: not the dataflow
    printf("cached_out[0, :8, :4]:\n%s\n", tensor_str(corner(cell.cached_out), NULL));
    printf("full_out[0, :8, :4]:\n%s\n\n", tensor_str(corner(cell.full_out), NULL));
    trace_pause(was_paused);
    return cell;
}

// --- part 2: the notebook's cache, stored once and never updated (--prompt, --new) -----------

// BUG 2, shown: the notebook's cache keeps the prompt only, as if we reset
// cache_len to the prompt before every step. The first decoded token is
// still right (nothing is missing yet); each later one misses the tokens
// between the prompt and itself.
static void part2_the_notebooks_frozen_cache(Cell *cell) {
    GQA_W_KVcache *gqa = &cell->gqa;
    int prompt = cell->prompt;
    printf("-- part 2: the notebook's cache, stored once and never updated (--prompt and --new "
           "change it) --\n");
    for (int t = prompt; t < size(cell->x, 1); t++) {
        size_t mark = arena_mark();   // nothing of a step outlives its check
        gqa->cache_len = prompt;      // what the notebook's self.k_cache still holds
        const Tensor *out = step(NULL, gqa, cell->x, t, 1);                   // (B, 1, C)
        printf("token %d sees keys 0..%d and %d: max |out - full_out[:, %d]| = %.4f\n", t,
               prompt - 1, t, t, (double)diff_at(out, cell->full_out, t));
        arena_release(mark);
    }
    printf("\n");
}

// --- part 3: chunks of 2 new tokens: the mask moved right by the cache (--prompt) ------------

// The mask of `count` new tokens at position t after cache_len (P) cached
// ones, and what the notebook's square mask does against their scores.
static void show_chunk_mask(int t, int count, int cache_len, int batch, int heads) {
    const Tensor *chunk_ones = ones(shape2(count, cache_len + count));        // (T, L)
    const Tensor *mask = triu(chunk_ones, 1 + cache_len);                     // (T, L)
    printf("tokens %d..%d after cache_len = %d: mask = torch.triu(torch.ones(%d, %d), "
           "diagonal=%d)\n%s\n", t, t + count - 1, cache_len, count, cache_len + count,
           1 + cache_len, tensor_str(mask, NULL));
    if (count > 1) {
        printf("the notebook's mask torch.triu(torch.ones(%d, %d), diagonal=1) against "
               "scores (%d, %d, %d, %d):\n", count, count, batch, heads, count,
               cache_len + count);
        printf("RuntimeError:\n  The size of tensor a (%d) must match the size of tensor "
               "b (%d) at non-singleton dimension 3\n", count, cache_len + count);
    }
}

// BUG 3, shown: the new tokens two at a time after the prompt. The mask
// must be (2, P + 2) with its diagonal moved right by P.
static void part3_chunks_of_two(Cell *cell, bool heatmap) {
    GQA_W_KVcache *gqa = &cell->gqa;
    const Tensor *x = cell->x, *full_out = cell->full_out;
    int B = size(x, 0), N = size(x, 1), prompt = cell->prompt;
    printf("-- part 3: chunks of 2 new tokens need the mask moved right by the cache (--prompt "
           "changes it) --\n");
    gqa->cache_len = 0;
    const Tensor *first_out = step(NULL, gqa, x, 0, prompt);                  // (B, P, C)
    float worst = max_abs_diff(first_out, narrow(full_out, 1, 0, prompt));
    for (int t = prompt; t < N; t += 2) {
        size_t mark = arena_mark();   // nothing of a step outlives its check
        int count = N - t < 2 ? N - t : 2;
        int cache_len = gqa->cache_len;
        GQA_W_KVcacheSteps chunk;
        const Tensor *out = step(&chunk, gqa, x, t, count);                   // (B, count, C)
        float diff = diff_at(out, full_out, t);
        worst = diff > worst ? diff : worst;
        if (t == prompt) {
            show_chunk_mask(t, count, cache_len, B, gqa->num_heads);
            if (heatmap) {
                print_heatmap("chunk_attn", narrow(chunk.attn, 0, 0, 1));
            }
        }
        arena_release(mark);
    }
    printf("  max |chunked - full_out| = %.3g\n\n", (double)worst);
}

// --- part 4: what the cache costs in memory (--kv-heads, --heads, --dim) ---------------------

// The bytes a one-layer float32 cache of `kv_heads` key/value heads takes,
// K and V. A double from the first product on: at 4096 positions the
// largest sizes pass 2^31, and a double holds them exactly (below 2^53).
static double cache_bytes(int batch, int positions, int kv_heads, int head_dim) {
    return 2.0 * batch * positions * kv_heads * head_dim * (double)sizeof(float);
}

static void part4_what_the_cache_costs(const Sizes *n) {
    int D = n->dim / n->heads, N = n->prompt + n->new_tokens;
    printf("-- part 4: what the cache costs per layer (--kv-heads, --heads and --dim change it) "
           "--\n");
    printf("2 (K and V) * batch * positions * kv_heads * head_dim * 4 bytes:\n");
    const char *names[3] = {"MHA", "GQA", "MQA"};
    int kv_heads[3] = {n->heads, n->kv_heads, 1};   // every head, this model's, one
    for (int i = 0; i < 3; i++) {
        printf("%s (kv_heads = %d): %6.0f bytes a token, %9.0f for these %d tokens, "
               "%6.2f MiB at 4096 tokens\n", names[i], kv_heads[i],
               cache_bytes(1, 1, kv_heads[i], D), cache_bytes(n->batch, N, kv_heads[i], D), N,
               cache_bytes(n->batch, 4096, kv_heads[i], D) / (1024.0 * 1024.0));
    }
    printf("(the cache also grows with the number of layers: a 32-layer model needs 32 of "
           "them)\n\n");
}

// --- part 5: no copy: query head h reads cache head h // R in place (--kv-heads) ------------

// The floats the forward's expand().reshape() copied in one call, K and V.
// reshape() copies only when it cannot view (tensor.h); a copy has storage
// of its own, a view shares the cache's.
static int64_t floats_copied(const GQA_W_KVcacheSteps *steps, const GQA_W_KVcache *self) {
    int64_t copied = 0;
    if (steps->key->data != self->k_cache->data) {
        copied += numel(steps->key);
    }
    if (steps->value->data != self->v_cache->data) {
        copied += numel(steps->value);
    }
    return copied;
}

// The generation again, twice side by side: one copy of the module runs
// the notebook's forward, the other reads by index; the same weights, a
// cache each. At every call: what the reshape copied, and the two outputs'
// difference.
static void part5_no_copy(const Cell *cell) {
    const Tensor *x = cell->x;
    int B = size(x, 0), N = size(x, 1);
    int H = cell->gqa.num_heads, D = cell->gqa.head_dim, R = H / cell->gqa.num_groups;
    GQA_W_KVcache copying = cell->gqa, by_index = cell->gqa;
    GQA_W_KVcache_start_cache(&copying, B, N);
    GQA_W_KVcache_start_cache(&by_index, B, N);
    printf("-- part 5: no copy: query head h reads cache head h // R in place (--kv-heads changes "
           "it) --\n");
    printf("the notebook: key.unsqueeze(2).expand(-1, -1, %d, -1, -1).reshape(%d, %d, -1, "
           "%d), value too\n", R, B, H, D);
    printf("by index:     query head h reads k_cache[:, :L, h // %d] and v_cache[:, :L, h // %d]\n",
           R, R);
    int64_t copied_in_all = 0;
    for (int t = 0; t < N; t = t == 0 ? cell->prompt : t + 1) {
        size_t mark = arena_mark();              // nothing of a call outlives its check
        int count = t == 0 ? cell->prompt : 1;   // the prefill, then one token per call
        GQA_W_KVcacheSteps steps;
        const Tensor *out = step(&steps, &copying, x, t, count);              // (B, count, C)
        const Tensor *by_index_out = step_by_index(NULL, &by_index, x, t, count);   // (B, count, C)
        int64_t copied = floats_copied(&steps, &copying);
        copied_in_all += copied;
        if (t == 0) {
            printf("prefill, ");
        } else {
            printf("token %d, ", t);
        }
        printf("L = %d: the reshape copied %lld floats, by index none; "
               "max |by index - copy| = %.3g\n", copying.cache_len, (long long)copied,
               (double)max_abs_diff(by_index_out, out));
        arena_release(mark);
    }
    if (copied_in_all == 0) {
        printf("the reshape copied nothing: with kv_heads = 1 or kv_heads = heads, (B, KV, R, L, "
               "D) expanded\nis a view of the cache as (B, H, L, D) (PyTorch views it too); only "
               "1 < kv_heads < heads copies\n\n");
        return;
    }
    // 2 (K and V) * B * H * L * D floats at every call: in 64 bits, since
    // at L = 4096 the largest sizes pass 2^31.
    int64_t per_position = 2 * (int64_t)B * H * D;
    printf("the copy grows with the cache: 2 (K and V) * batch * heads * L * head_dim = %lld * L "
           "floats\nper call, %lld floats in all here, %.2f MiB per call and layer at L = 4096; by "
           "index reads\nthe cache as it is\n\n", (long long)per_position,
           (long long)copied_in_all,
           (double)per_position * 4096.0 * sizeof(float) / (1024.0 * 1024.0));
}

// --- the lesson -------------------------------------------------------------------------

// Appendix A, after main: --bench.
static void use_bench_sizes(const Lesson *lesson, Sizes *n);
static void bench(const Sizes *n);
static Cost kv_cache_bench_cost(const Sizes *n);   // appendix A

// Sizes that do not fit end the run (exit 2) before any work. The largest
// tensors of each kind: the full forward's weights (B, H, N, N) (its
// scores, and the (N, N) mask broadcast to them; a cached call's (B, H, T,
// L) is smaller), the activations (B, N, C) (x, every projection, the
// expanded keys (B, KV, R, L, D) and their copy (B, H, L, D), which are as
// many), and the parameters (C, C). The caches (B, N, KV, D) are smaller.
static void check_sizes(const Lesson *lesson, const Sizes *n) {
    check_divides(lesson, "--heads", n->heads, "--dim", n->dim);
    check_divides(lesson, "--kv-heads", n->kv_heads, "--heads", n->heads);
    int N = n->prompt + n->new_tokens;   // at most 2 * MAX_SIZE_FLAG: no overflow
    check_fits(lesson, "full_attn (batch, heads, prompt+new, prompt+new)",
               shape4(n->batch, n->heads, N, N));
    check_fits(lesson, "x (batch, prompt+new, dim)", shape3(n->batch, N, n->dim));
    check_fits(lesson, "w_query.weight (dim, dim)", shape2(n->dim, n->dim));
}

// --- the budget: what a run of these sizes holds and does (lesson/budget.h) ----------

// One forward of T new tokens against L keys (the cache's and theirs): the
// floats it makes (the tokens copied out of x for each projection when
// batch > 1, Q, K, V, the keys and values copied to every head, four
// (B, H, T, L), the (T, L) mask, the output and its copies), and its
// multiply-adds; and the same for the forward that reads the cache by index.
static double forward_floats(const Sizes *n, double T, double L) {
    double B = n->batch, C = n->dim, kv_width = n->kv_heads * (double)(n->dim / n->heads);
    return 7 * B * T * C + 2 * B * T * kv_width + 2 * B * L * C + 4 * B * n->heads * T * L +
           3 * T * L;
}

static double by_index_floats(const Sizes *n, double T, double L) {
    double B = n->batch, C = n->dim, kv_width = n->kv_heads * (double)(n->dim / n->heads);
    return 6 * B * T * C + 2 * B * T * kv_width + B * n->heads * T * L;
}

static double forward_multiply_adds(const Sizes *n, double T, double L) {
    double B = n->batch, C = n->dim, kv_width = n->kv_heads * (double)(n->dim / n->heads);
    return B * T * (2 * C * C + 2 * C * kv_width) + 2 * B * T * L * C;
}

// Counted from the code above (N = prompt + new): what stays (x, the
// layers, the caches, the full forward, the prefills the parts keep, the
// outputs they collect) and the largest of what one decoding step makes and
// drops; the multiply-adds of every forward the parts run (each new token's
// step reads at most N keys).
static Cost kv_cache_cost(const Sizes *n) {
    double B = n->batch, C = n->dim, H = n->heads, P = n->prompt, T = n->new_tokens;
    double N = P + T, kv_width = n->kv_heads * (C / H);
    double layers = 2 * C * C + 2 * C * kv_width + 2 * C + 2 * kv_width;
    double kept = layers + 2 * B * N * C + (T - 1) * B * C + 6 * B * N * kv_width +
                  forward_floats(n, N, N) + 2 * forward_floats(n, P, P) +
                  forward_floats(n, 1, P + 1);
    double step = fmax(forward_floats(n, P, P) + by_index_floats(n, P, P),
                       forward_floats(n, 2, N) + by_index_floats(n, 1, N));
    double steps = forward_floats(n, 1, N) + by_index_floats(n, 1, N);
    return (Cost){
        .bytes = 4 * (kept + step),
        .dumped = 4 * (layers + 2 * B * N * C + 2 * B * N * kv_width),
        .multiply_adds = forward_multiply_adds(n, N, N) + 4 * forward_multiply_adds(n, P, P) +
                         5 * T * forward_multiply_adds(n, 1, N),
        .exps = B * H * (N * N + 4 * P * P + 5 * T * N) + B * N * C,
        .elements = kept + step + 5 * T * steps,
    };
}

int main(int argc, char **argv) {
    Sizes n = {.batch = 1, .prompt = 4, .new_tokens = 4, .dim = 512, .heads = 8, .kv_heads = 2};
    bool run_bench = false;
    SizeFlag sizes[] = {
        {"--batch", &n.batch, "batch size"},
        {"--prompt", &n.prompt, "prompt tokens, prefilled in one call"},
        {"--new", &n.new_tokens, "tokens decoded one per call after the prompt"},
        {"--dim", &n.dim, "hidden dimension (embed_dim)"},
        {"--heads", &n.heads, "query heads (num_heads)"},
        {"--kv-heads", &n.kv_heads, "key/value heads (the notebook's num_groups)"},
    };
    SwitchFlag switches[] = {
        {"--bench", &run_bench, "time the cache (the bench's own sizes for flags not given)"},
    };
    Lesson lesson = {
        .program = "lesson-10",
        .summary = "kv-cache: the GQA notebook's GQA_W_KVcache, fixed, against the full "
                   "causal forward",
        .sizes = sizes, .n_sizes = 6, .switches = switches, .n_switches = 1,
    };
    parse_lesson_args(&lesson, argc, argv);
    if (run_bench) {
        use_bench_sizes(&lesson, &n);   // its own sizes for the flags not given
    }
    check_sizes(&lesson, &n);
    check_budget(&lesson, run_bench ? kv_cache_bench_cost(&n) : kv_cache_cost(&n));
    lesson_start(&lesson);
    if (run_bench) {
        bench(&n);   // --bench refuses --dot and --dump, so nothing traces it
        return lesson_finish(&lesson);
    }

    Cell cell = part1_the_notebooks_cell(&n, lesson.heatmap);
    trace_pause(true);   // the demonstrations are not the module's dataflow: not drawn
    part2_the_notebooks_frozen_cache(&cell);
    part3_chunks_of_two(&cell, lesson.heatmap);
    part4_what_the_cache_costs(&n);
    part5_no_copy(&cell);
    return lesson_finish(&lesson);
}

// === appendix A: --bench: what the cache saves, and what the copy costs, measured ===========
//
// Timers and repetitions, not the lesson's idea. Every time below is the
// best of BENCH_REPEATS repetitions, run interleaved (each way once, then
// each way again), so that a busy moment of a shared machine falls on every
// way alike and the best of each is its least disturbed run. Beside each
// time the bench prints how much its repetitions varied, and it compares a
// measured ratio with the expected one only when that variation is small
// enough to tell them apart.

// The bench's model and generation by default: larger than the walk-through
// (a 4-token prompt and 4 new tokens measure nothing), small enough that the
// whole bench, every repetition of it, runs in about ten seconds on one
// core. A size flag given on the command line replaces its default
// (use_bench_sizes); the appends and the long cache keep their lengths.
enum { BENCH_BATCH = 1, BENCH_DIM = 256, BENCH_HEADS = 8, BENCH_KV_HEADS = 2, BENCH_PROMPT = 16,
       BENCH_NEW = 100, BENCH_APPENDS = 2048, BENCH_LONG_CACHE = 2048, BENCH_LONG_STEPS = 20,
       BENCH_REPEATS = 5 };
// A ratio of two times whose repetitions varied by more than this (together)
// is too uncertain to compare with the ratio expected.
#define BENCH_NOISY 0.25

// --bench's sizes: the flags given, and the bench's defaults for the rest.
// A learner who types --bench --dim 64 expects a bench at dim 64, not a
// silent one at 256; and one who types --bench alone, a bench worth
// timing, not the walk-through's 4 + 4 tokens. The bench builds its own
// model: its parameters would overwrite the lesson's dumps under the same
// names, and it draws no graph, so --dump and --dot are refused; so are
// sizes its long cache, copied to every head, cannot hold.
static void use_bench_sizes(const Lesson *lesson, Sizes *n) {
    if (lesson->dump_dir != NULL || lesson->dot_file != NULL) {
        usage_error(lesson, "--bench runs its own larger model; drop --dump and --dot");
    }
    n->batch = flag_given(lesson, "--batch") ? n->batch : BENCH_BATCH;
    n->prompt = flag_given(lesson, "--prompt") ? n->prompt : BENCH_PROMPT;
    n->new_tokens = flag_given(lesson, "--new") ? n->new_tokens : BENCH_NEW;
    n->dim = flag_given(lesson, "--dim") ? n->dim : BENCH_DIM;
    n->heads = flag_given(lesson, "--heads") ? n->heads : BENCH_HEADS;
    n->kv_heads = flag_given(lesson, "--kv-heads") ? n->kv_heads : BENCH_KV_HEADS;
    check_fits(lesson, "the bench's long cache for every head (batch, heads, 2048, head_dim)",
               shape4(n->batch, n->heads, BENCH_LONG_CACHE, n->dim / n->heads));
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// The repetitions of one measurement, seconds each, kept in order from the
// fastest: best is the first, the median the middle one.
typedef struct {
    double seconds[BENCH_REPEATS];
    int count;
    double best, median;
} Timing;

static Timing no_repetitions(void) { return (Timing){.count = 0}; }

static void add_repetition(Timing *timing, double seconds) {
    int i = timing->count++;
    for (; i > 0 && timing->seconds[i - 1] > seconds; i--) {   // insertion, keeping the order
        timing->seconds[i] = timing->seconds[i - 1];
    }
    timing->seconds[i] = seconds;
    timing->best = timing->seconds[0];
    timing->median = timing->seconds[timing->count / 2];
}

// How much slower the median repetition was than the best: 0.05 is 5%. On
// an idle machine a few percent; the median, not the slowest, so that one
// interruption (another program, the first touch of fresh memory) does not
// make a quiet run look noisy.
static double spread(Timing timing) {
    return timing.best > 0.0 ? timing.median / timing.best - 1.0 : 0.0;
}

// How far the ratio a.best / b.best could be off, as a fraction, if each
// best were as slow as its median repetition: (1 + spread a)(1 + spread b) - 1.
static double ratio_spread(Timing a, Timing b) {
    return (1.0 + spread(a)) * (1.0 + spread(b)) - 1.0;
}

// How generate() makes the output of each new position.
typedef enum {
    RECOMPUTE,        // no cache: the full causal forward over tokens 0 .. t, its last row
    CACHE_IN_PLACE,   // the module as it is: each new position written into the cache
    CACHE_BY_COPY,    // the cache grown as the notebook's torch.cat grows it: every cached
                      // position copied to new storage at every step, then the new one
    CACHE_BY_INDEX,   // in place, and the forward that reads key/value head h / R by index
} Generation;

// The copying of torch.cat([self.k_cache, key], dim=1), which makes a new
// tensor and copies the cache_len cached positions into it before the new
// ones. Here they are copied into `*spare`, which becomes the cache (the
// old storage becomes the next spare), and the module's in-place append
// then adds the new positions after them: cat's copying, without a new
// allocation at every step.
static void copy_like_cat(Tensor **cache, Tensor **spare, int cache_len) {
    copy_positions(*spare, 0, *cache, 0, cache_len);
    Tensor *swap = *cache;
    *cache = *spare;
    *spare = swap;
}

// Generate positions prompt .. N-1 of x (B, N, C) the way `how` says, each
// position's output row into out (B, N - prompt, C). With a cache: a
// prefill of the prompt, then one token per call. Every tensor a step makes
// is freed right after it (arena_mark/arena_release). Returns the seconds
// it took.
static double generate(Tensor *out, GQA_W_KVcache *gqa, const Tensor *x, int prompt,
                       Generation how) {
    int B = size(x, 0), N = size(x, 1), C = size(x, 2);
    gqa->use_cache = false;
    Tensor *k_spare = NULL, *v_spare = NULL;   // (B, N, KV, D) for CACHE_BY_COPY: where it copies
    if (how != RECOMPUTE) {
        GQA_W_KVcache_start_cache(gqa, B, N);
    }
    if (how == CACHE_BY_COPY) {
        k_spare = zeros(gqa->k_cache->shape);                                 // (B, N, KV, D)
        v_spare = zeros(gqa->v_cache->shape);                                 // (B, N, KV, D)
    }
    double start = now_seconds();
    if (how != RECOMPUTE) {
        size_t mark = arena_mark();
        if (how == CACHE_BY_INDEX) {
            step_by_index(NULL, gqa, x, 0, prompt);                           // (B, P, C)
        } else {
            step(NULL, gqa, x, 0, prompt);                                    // (B, P, C)
        }
        arena_release(mark);
    }
    for (int t = prompt; t < N; t++) {
        size_t mark = arena_mark();
        const Tensor *y;                                                      // (B, T, C)
        if (how == RECOMPUTE) {
            y = step(NULL, gqa, x, 0, t + 1);                                 // (B, t + 1, C)
        } else if (how == CACHE_BY_INDEX) {
            y = step_by_index(NULL, gqa, x, t, 1);                            // (B, 1, C)
        } else {
            if (how == CACHE_BY_COPY) {
                copy_like_cat(&gqa->k_cache, &k_spare, gqa->cache_len);
                copy_like_cat(&gqa->v_cache, &v_spare, gqa->cache_len);
            }
            y = step(NULL, gqa, x, t, 1);                                     // (B, 1, C)
        }
        for (int b = 0; b < B; b++) {
            memcpy(at3(out, b, t - prompt, 0), at3(y, b, size(y, 1) - 1, 0),
                   (size_t)C * sizeof(float));
        }
        arena_release(mark);
    }
    return now_seconds() - start;
}

// Appending one position at a time to a cache of A = `positions`, KV * D
// floats per position for K and as many for V, CACHE_IN_PLACE or
// CACHE_BY_COPY; seconds.
static double time_appends(Generation how, int positions, int KV, int D) {
    size_t mark = arena_mark();
    Shape cache_shape = shape4(1, positions, KV, D);
    Tensor *k_cache = zeros(cache_shape), *k_spare = zeros(cache_shape);      // (1, A, KV, D)
    Tensor *v_cache = zeros(cache_shape), *v_spare = zeros(cache_shape);      // (1, A, KV, D)
    const Tensor *row = full(shape4(1, 1, KV, D), 1.0f);                      // (1, 1, KV, D)
    double start = now_seconds();
    for (int len = 0; len < positions; len++) {
        if (how == CACHE_BY_COPY) {
            copy_like_cat(&k_cache, &k_spare, len);
            copy_like_cat(&v_cache, &v_spare, len);
        }
        append_in_place(k_cache, len, row);
        append_in_place(v_cache, len, row);
    }
    double seconds = now_seconds() - start;
    arena_release(mark);
    return seconds;
}

// One decode step against a long cache, `steps` times, by the forward that
// copies (CACHE_IN_PLACE) or the one that reads by index (CACHE_BY_INDEX):
// the cache is cut back to `cached` positions before each step, so every
// step attends over cached + 1. Seconds per step; *out gets the last
// step's output (B, 1, C).
static double time_long_step(Tensor *out, GQA_W_KVcache *gqa, const Tensor *x, int cached,
                             int steps, Generation how) {
    double start = now_seconds();
    for (int i = 0; i < steps; i++) {
        size_t mark = arena_mark();
        gqa->cache_len = cached;
        const Tensor *y = how == CACHE_BY_INDEX ? step_by_index(NULL, gqa, x, 0, 1)
                                                : step(NULL, gqa, x, 0, 1);   // (B, 1, C)
        memcpy(out->data, y->data, (size_t)numel(y) * sizeof(float));
        arena_release(mark);
    }
    return (now_seconds() - start) / steps;
}

// The copy alone: the forward's expand().reshape() of the first
// `positions` positions of the cache, K and V, `steps` times; seconds per
// step.
static double time_copy_alone(const GQA_W_KVcache *gqa, int positions, int steps) {
    int B = size(gqa->k_cache, 0), H = gqa->num_heads, D = gqa->head_dim;
    const int heads_first[4] = {0, 2, 1, 3};
    Shape groups_expanded = shape5(-1, -1, H / gqa->num_groups, -1, -1);
    double start = now_seconds();
    for (int i = 0; i < steps; i++) {
        size_t mark = arena_mark();
        const Tensor *caches[2] = {gqa->k_cache, gqa->v_cache};
        for (int c = 0; c < 2; c++) {
            const Tensor *cached = narrow(caches[c], 1, 0, positions);        // (B, L, KV, D)
            cached = permute(cached, heads_first);                            // (B, KV, L, D)
            cached = expand(unsqueeze(cached, 2), groups_expanded);           // (B, KV, R, L, D)
            reshape(cached, shape4(B, H, -1, D));                             // (B, H, L, D)
        }
        arena_release(mark);
    }
    return (now_seconds() - start) / steps;
}

// "recompute everything each step:      1.234 s  (+4%)": the best repetition
// and how much slower the median repetition was.
static void print_seconds(const char *what, Timing timing) {
    printf("%-33s %8.3f s  (+%.0f%%)\n", what, timing.best, 100.0 * spread(timing));
}

// The four generations, BENCH_REPEATS times each, interleaved: the outputs
// into outs[way] (B, N - P, C) and the times into times[way].
static void generate_four_ways(Tensor *outs[4], Timing times[4], GQA_W_KVcache *gqa,
                               const Tensor *x, int prompt) {
    int B = size(x, 0), N = size(x, 1), C = size(x, 2);
    for (int w = 0; w < 4; w++) {
        outs[w] = zeros(shape3(B, N - prompt, C));                            // (B, N - P, C)
        times[w] = no_repetitions();
    }
    // One after the other in this process, so their ratios compare like with
    // like (same machine, same moment, same code); each way once per round.
    for (int r = 0; r < BENCH_REPEATS; r++) {
        for (Generation way = RECOMPUTE; way <= CACHE_BY_INDEX; way++) {
            add_repetition(&times[way], generate(outs[way], gqa, x, prompt, way));
        }
    }
}

// The cache's speedup, measured and as the FLOP count predicts it.
static void print_speedup(const Sizes *n, const Timing times[4]) {
    int B = n->batch, C = n->dim, H = n->heads, KV = n->kv_heads, D = C / H;
    int P = n->prompt, N = n->prompt + n->new_tokens;
    Timing full = times[RECOMPUTE], cached = times[CACHE_IN_PLACE];
    // The FLOP model: a multiply-add is 2 FLOPs. Per token the four
    // projections cost Pt = 2C*C (query) + 2 * 2C*KV*D (key, value) + 2C*C
    // (o_proj). T queries against L keys cost 4*H*D*T*L (scores, then
    // weights @ V). Recomputing position t runs L = t + 1 tokens: L*Pt +
    // 4HD*L^2. The cache runs 1 token against L keys: Pt + 4HD*L, after a
    // prefill of P*Pt + 4HD*P^2. Each sequence of a batch costs as much.
    double Pt = 4.0 * C * C + 4.0 * C * KV * D;
    double attention = 4.0 * H * D;
    double flops_full = 0.0, flops_cache = P * Pt + attention * P * P;
    for (int t = P; t < N; t++) {
        double L = t + 1;
        flops_full += L * Pt + attention * L * L;
        flops_cache += Pt + attention * L;
    }
    flops_full *= B;
    flops_cache *= B;
    double measured = full.best / cached.best, predicted = flops_full / flops_cache;
    printf("measured speedup of the cache: %.1fx (best against best; the medians give %.1fx)\n",
           measured, full.median / cached.median);
    printf("FLOP model: Pt = 4*C*C + 4*C*KV*D = %.0f per token, attention 4*H*D*T*L", Pt);
    if (B > 1) {
        printf("; both sums times batch = %d", B);
    }
    printf("\n");
    printf("  recompute: sum over t of (t+1)*Pt + 4*H*D*(t+1)^2            = %.3g FLOPs\n",
           flops_full);
    printf("  cache:     P*Pt + 4*H*D*P^2 + sum over t of Pt + 4*H*D*(t+1) = %.3g FLOPs\n",
           flops_cache);
    printf("predicted speedup: %.1fx   (measured rates: %.2f GFLOP/s recomputing, %.2f GFLOP/s "
           "cached)\n", predicted, flops_full / full.best * 1e-9, flops_cache / cached.best * 1e-9);

    // measured / predicted = (t_full / t_cache) / (F_full / F_cache)
    //                      = (F_cache / t_cache) / (F_full / t_full):
    // the gap between the two speedups is exactly the ratio of the two runs'
    // FLOP rates. The model assumes one rate for both and counts nothing
    // but arithmetic; what each run does besides is said below. A
    // conclusion is drawn only when the gap is larger than the repetitions'
    // spread could make it.
    double rate_ratio = measured / predicted, noise = ratio_spread(full, cached);
    printf("measured / predicted = %.2f = cached GFLOP/s / recomputing GFLOP/s: the model\n"
           "assumes one rate for both runs and counts arithmetic only. Not counted:\n"
           "- cached: every step copies the whole cache to all %d heads (the notebook's\n"
           "  expand().reshape(), %d floats per position), builds a mask, about 40 tensors;\n"
           "- recomputing: softmax, exp and the mask over heads*L*L scores, every step.\n",
           rate_ratio, H, 2 * H * D);
    if (noise > BENCH_NOISY) {
        printf("The two times' repetitions varied by %.0f%% together here: too much to tell the\n"
               "two rates apart. Run the bench again on an otherwise idle machine.\n",
               100.0 * noise);
    } else if (rate_ratio * (1.0 + noise) < 0.8) {
        printf("Here the cached run is slower per FLOP, by more than the repetitions varied:\n"
               "its copies and per-step overhead weigh more than what recomputing leaves out.\n");
    } else if (rate_ratio / (1.0 + noise) > 1.25) {
        printf("Here the recomputing run is slower per FLOP, by more than the repetitions\n"
               "varied: its softmax and mask over L*L scores weigh more than the cached run's\n"
               "copies.\n");
    } else {
        printf("Here the two rates agree to within 25%% and the repetitions' spread: both runs\n"
               "spend most of their time in the same projections and matmuls, so the FLOP\n"
               "count predicts the speedup.\n");
    }
}

// Appending alone, on a longer cache, where the quadratic shows: the time
// ratio against the ratio of the bytes each way moves.
static void bench_appends(const Sizes *n) {
    int KV = n->kv_heads, D = n->dim / n->heads, R = n->heads / n->kv_heads;
    int A = BENCH_APPENDS;
    double bytes_copy = 0.0;
    for (int len = 0; len < A; len++) {
        bytes_copy += cache_bytes(1, len + 1, KV, D);   // all old positions + the new one
    }
    double bytes_place = cache_bytes(1, A, KV, D);
    Timing copy = no_repetitions(), place = no_repetitions();
    for (int r = 0; r < BENCH_REPEATS; r++) {
        add_repetition(&copy, time_appends(CACHE_BY_COPY, A, KV, D));
        add_repetition(&place, time_appends(CACHE_IN_PLACE, A, KV, D));
    }
    printf("appending %d positions (K and V, %d x %d floats each):\n", A, KV, D);
    printf("  by copy (torch.cat): %8.4f s (+%.0f%%), %8.1f MB moved (grows as T^2)\n",
           copy.best, 100.0 * spread(copy), bytes_copy * 1e-6);
    printf("  in place:            %8.4f s (+%.0f%%), %8.1f MB moved (grows as T)\n", place.best,
           100.0 * spread(place), bytes_place * 1e-6);
    printf("  time ratio %.0fx, for %.0fx the bytes: appending is moving memory, and the copy's\n"
           "  T^2 bytes are what grows with the context\n",
           copy.best / (place.best > 0.0 ? place.best : 1e-9), bytes_copy / bytes_place);
    printf("why copy and in place decode alike: appending by copy moves %d floats per cached\n"
           "position per step, the reshape %d times more, and the projections outweigh both.\n",
           2 * KV * D, R);
}

// The copy expand().reshape() makes, against reading by index: over the
// generation of the four ways (a prefill, then L = P+1 .. N), and on one
// step against a long cache, filled with random numbers (the time does not
// depend on them).
static void bench_no_copy(GQA_W_KVcache *gqa, const Sizes *n, Tensor *const outs[4],
                          const Timing times[4]) {
    int B = n->batch, C = n->dim, H = n->heads, KV = n->kv_heads, D = C / H, R = H / KV;
    int P = n->prompt, N = n->prompt + n->new_tokens;
    double copied_in_all = 2.0 * B * H * D * P;
    for (int t = P; t < N; t++) {
        copied_in_all += 2.0 * B * H * D * (t + 1);
    }
    int cached = BENCH_LONG_CACHE - 1;
    GQA_W_KVcache_start_cache(gqa, B, BENCH_LONG_CACHE);
    copy_positions(gqa->k_cache, 0, randn(shape4(B, cached, KV, D)), 0, cached);
    copy_positions(gqa->v_cache, 0, randn(shape4(B, cached, KV, D)), 0, cached);
    const Tensor *x_long = randn(shape3(B, 1, C));                            // (B, 1, C)
    Tensor *long_copy = zeros(shape3(B, 1, C));                               // (B, 1, C)
    Tensor *long_index = zeros(shape3(B, 1, C));                              // (B, 1, C)
    int S = BENCH_LONG_STEPS;
    Timing copying = no_repetitions(), by_index = no_repetitions(), alone = no_repetitions();
    for (int r = 0; r < BENCH_REPEATS; r++) {
        add_repetition(&copying, time_long_step(long_copy, gqa, x_long, cached, S,
                                                CACHE_IN_PLACE));
        add_repetition(&by_index, time_long_step(long_index, gqa, x_long, cached, S,
                                                 CACHE_BY_INDEX));
        add_repetition(&alone, time_copy_alone(gqa, BENCH_LONG_CACHE, S));
    }
    double long_floats = 2.0 * B * H * BENCH_LONG_CACHE * D;
    Timing in_place = times[CACHE_IN_PLACE], indexed = times[CACHE_BY_INDEX];
    printf("no copy: query head h reads cache head h // %d in place, instead of the notebook's\n"
           "expand().reshape() copying the cache into all %d heads (2*B*H*L*D floats a step):\n",
           R, H);
    printf("  generating the %d tokens above, cache appended in place:\n", N - P);
    printf("    expand().reshape():  %7.3f s (+%.0f%%), %.0f floats (%.1f MB) copied in all\n",
           in_place.best, 100.0 * spread(in_place), copied_in_all,
           copied_in_all * sizeof(float) * 1e-6);
    printf("    by index:            %7.3f s (+%.0f%%), none copied; "
           "max |by index - copy| = %.3g\n", indexed.best, 100.0 * spread(indexed),
           (double)max_abs_diff(outs[CACHE_BY_INDEX], outs[CACHE_IN_PLACE]));
    printf("  one step against %d cached positions (best of %d rounds of %d steps):\n",
           BENCH_LONG_CACHE, BENCH_REPEATS, S);
    printf("    expand().reshape():  %7.3f ms (+%.0f%%), %.0f floats (%.1f MB) copied per step,\n"
           "                         the copy alone %.3f ms (+%.0f%%)\n", copying.best * 1e3,
           100.0 * spread(copying), long_floats, long_floats * sizeof(float) * 1e-6,
           alone.best * 1e3, 100.0 * spread(alone));
    printf("    by index:            %7.3f ms (+%.0f%%), none copied; "
           "max |by index - copy| = %.3g\n", by_index.best * 1e3, 100.0 * spread(by_index),
           (double)max_abs_diff(long_index, long_copy));
    double saved = copying.best - by_index.best, noise = ratio_spread(copying, by_index);
    if (noise > BENCH_NOISY) {
        printf("  the two times' repetitions varied by %.0f%% together: too much to say how the\n"
               "  gap splits; run the bench again on an otherwise idle machine\n\n",
               100.0 * noise);
    } else if (saved > 0.0) {
        printf("  by index saves %.3f ms a step, of which the copy alone is %.0f%%; the rest:\n"
               "  by index the causal mask is a loop bound, where the forward builds ones,\n"
               "  triu, == and masked_fill over heads*L scores at every step\n\n",
               saved * 1e3, 100.0 * alone.best / saved);
    } else {
        printf("  by index is not faster here: at these sizes the arithmetic outweighs the "
               "copy\n\n");
    }
}

static void bench(const Sizes *n) {
    int B = n->batch, C = n->dim, H = n->heads, KV = n->kv_heads;
    int P = n->prompt, N = n->prompt + n->new_tokens;
    printf("-- bench: batch %d, dim %d, heads %d, kv_heads %d (head_dim %d), prompt %d, "
           "then %d new tokens --\n", B, C, H, KV, C / H, P, N - P);
    printf("each time is the best of %d repetitions, run interleaved; (+N%%) is how much slower\n"
           "the median repetition was: how much this machine's noise moved the times\n",
           BENCH_REPEATS);
    GQA_W_KVcache gqa = GQA_W_KVcache_init(C, H, KV);
    gqa.training = false;
    const Tensor *x = randn(shape3(B, N, C));                                 // (B, N, C)
    Tensor *outs[4];
    Timing times[4];
    generate_four_ways(outs, times, &gqa, x, P);
    print_seconds("recompute everything each step:", times[RECOMPUTE]);
    print_seconds("KV cache, append in place:", times[CACHE_IN_PLACE]);
    print_seconds("KV cache, append by copy (cat):", times[CACHE_BY_COPY]);
    printf("same outputs: max |cached - recomputed| = %.3g, max |copy - in place| = %.3g\n",
           (double)max_abs_diff(outs[CACHE_IN_PLACE], outs[RECOMPUTE]),
           (double)max_abs_diff(outs[CACHE_BY_COPY], outs[CACHE_IN_PLACE]));
    print_speedup(n, times);
    bench_appends(n);
    bench_no_copy(&gqa, n, outs, times);
}

// --bench's budget (lesson/budget.h): what stays (x, the layers, the four
// outputs, the caches every repetition of each way of decoding starts, the
// long cache and its random fill) and the largest step it drops; the work of
// BENCH_REPEATS repetitions of the four ways of decoding (recomputing
// everything for each new token costs a forward of t + 1 tokens at each step
// t), of the appends, and of the long cache's steps.
static Cost kv_cache_bench_cost(const Sizes *n) {
    double B = n->batch, C = n->dim, H = n->heads, P = n->prompt, T = n->new_tokens;
    double N = P + T, kv_width = n->kv_heads * (C / H);
    double appends = BENCH_APPENDS, LONG = BENCH_LONG_CACHE;
    double repeats = BENCH_REPEATS, steps = BENCH_LONG_STEPS;
    double layers = 2 * C * C + 2 * C * kv_width + 2 * C + 2 * kv_width;
    double kept = layers + B * N * C + 4 * B * T * C + 8 * repeats * B * N * kv_width +
                  4 * B * LONG * kv_width;
    double recompute_macs = 0, recompute_floats = 0, recompute_exps = 0;
    for (double t = P; t < N; t++) {   // at most 2^17 steps
        recompute_macs += forward_multiply_adds(n, t + 1, t + 1);
        recompute_floats += forward_floats(n, t + 1, t + 1);
        recompute_exps += B * H * (t + 1) * (t + 1);
    }
    double cached_macs = forward_multiply_adds(n, P, P) + T * forward_multiply_adds(n, 1, N);
    double long_macs = 2 * steps * forward_multiply_adds(n, 1, LONG);
    return (Cost){
        .bytes = 4 * (kept + fmax(forward_floats(n, N, N),
                                  fmax(forward_floats(n, 1, LONG), 4 * appends * kv_width))),
        .multiply_adds = repeats * (recompute_macs + 3 * cached_macs + long_macs),
        .exps = repeats * (recompute_exps + 3 * B * H * (P * P + T * N)) + 2 * B * LONG * kv_width,
        // The appends by copy move appends^2 * kv_width floats in all, with
        // memcpy: a float of it costs about a thirtieth of an element written
        // in a loop.
        .elements = repeats * (recompute_floats + 3 * T * forward_floats(n, 1, N) +
                               appends * appends * kv_width / 32 +
                               3 * steps * forward_floats(n, 1, LONG)),
    };
}
