// Lesson 10: kv-cache - generate token by token without recomputing the past.
//
// WHAT THIS ADDS
//   Lesson 9 ran causal GQA over a whole sequence at once. A language model
//   generates one token at a time, and each new token needs attention over
//   every token before it. Recomputing the keys and values of all earlier
//   tokens at every step repeats work: with the causal mask, the key and
//   value of token s never change once s is computed. So we keep them, the
//   KV cache, and at each step project only the NEW token, append its key
//   and value (the G key/value heads of GQA, before any repeat to H heads:
//   that is why GQA makes the cache small) and attend over the whole cache.
//   Seed 001's GQA_W_KVcache tries this and has three bugs; this is the
//   class fixed. We check it against the full causal forward, print what
//   the cache costs in memory, and (--bench) what it saves in time.
//
// THE MATH (L = cache_len + T keys after appending T new tokens)
//   k_new, v_new = x_new W_k, x_new W_v            (B, T, G, D)  only the new tokens
//   K = [K_cache; k_new], V = [V_cache; v_new]     (B, L, G, D)  the cache grows by T
//   scores = q_new K^T / sqrt(D)                   (B, H, T, L)  query head h uses key head h / R
//   mask   = triu(ones(T, L), diagonal = 1 + cache_len)          new token t sees keys <= cache_len + t
//   out    = softmax(masked scores) V              (B, H, T, D)  -> o_proj -> (B, T, C)
//   Decoding token by token gives exactly the rows of the full causal forward.
//
// THE PYTORCH IT MIRRORS (seed 001 In[13], GQA_W_KVcache with its bugs fixed)
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
//
// WHAT TO LOOK FOR
//   - k_cache grows by one position per step and has kv_heads (2), not
//     heads (8), key heads: (1, 5, 2, 64), (1, 6, 2, 64), ...
//   - Each step's output equals the full forward's row to about 1e-7.
//   - The notebook's cache, stored once and never updated, is right for the
//     first decoded token and wrong from the second on.
//   - A chunk of 2 new tokens needs the mask with its diagonal moved right
//     by cache_len; the notebook's (2, 2) mask does not even fit.
//   - --bench: the measured speedup against the one the FLOP count predicts;
//     their ratio is the ratio of the two runs' FLOP rates.
//
// Size letters: B = batch_size, T = seq_len (NEW tokens in this call), L =
// cache_len + T (keys attended to), N = prompt + new (all tokens), C = dim,
// H = num_heads, G = num_groups (key/value heads, --kv-heads), R = H / G,
// D = head_dim = C / H.
// Index letters: b batch, t position, g key/value head (a group), r query
// head inside a group: query head h = g*R + r reads key/value head h / R.
// Coming from lesson 8: seed 001's module names things differently from
// its einsum. Here G = num_groups counts the groups (= key/value heads,
// lesson 8's KV) and R is a group's size (lesson 8's G); lesson 8's letter
// h (key/value head) is g here. Same pairing: head i reads i / R.

#define _POSIX_C_SOURCE 200809L   // clock_gettime(CLOCK_MONOTONIC)

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "attention.h"

// --- the module and its cache -------------------------------------------------

// How a step's keys and values get into the cache.
typedef enum {
    // Write the T new rows into a cache allocated once for every position:
    // T rows moved per step.
    APPEND_IN_PLACE,
    // What the notebook's torch.cat([self.k_cache, key], dim=1) does: a new
    // tensor of cache_len + T rows, the cache_len old rows copied into it,
    // then the new ones: the whole cache moved at every step. (PyTorch
    // allocates a fresh tensor each time; we copy into a spare one of the
    // same capacity and swap, so the arena can be released per step. The
    // copying, which is the cost, is the same.)
    APPEND_BY_COPY,
} AppendMode;

// class GQA_W_KVcache(nn.Module), seed 001 In[13], fixed. The notebook's
// k_cache/v_cache are tensors that grow; here they are storage for
// `capacity` positions of which the first cache_len are filled.
typedef struct {
    int num_heads;      // H
    int head_dim;       // D = C / H
    int num_groups;     // G, the key/value heads
    Linear w_query;     // C -> C
    Linear w_key;       // C -> G * D
    Linear w_value;     // C -> G * D
    Linear o_proj;      // C -> C
    bool training;      // .eval() clears it
    bool use_cache;
    AppendMode append;
    int capacity;       // positions the cache has room for
    int cache_len;      // positions filled
    Tensor *k_cache;          // (B, capacity, G, D): keys of positions 0 .. cache_len-1
    Tensor *v_cache;          // (B, capacity, G, D)
    Tensor *k_spare;          // (B, capacity, G, D), APPEND_BY_COPY only: where the copy goes
    Tensor *v_spare;          // (B, capacity, G, D)
} GQA_W_KVcache;

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
// room for `capacity` positions of `batch_size` sequences, all empty.
static void GQA_W_KVcache_start_cache(GQA_W_KVcache *self, int batch_size, int capacity,
                                      AppendMode append) {
    Shape cache_shape = shape4(batch_size, capacity, self->num_groups, self->head_dim);
    self->use_cache = true;
    self->append = append;
    self->capacity = capacity;
    self->cache_len = 0;
    self->k_cache = zeros(cache_shape);                          // (B, capacity, G, D)
    self->v_cache = zeros(cache_shape);                          // (B, capacity, G, D)
    self->k_spare = append == APPEND_BY_COPY ? zeros(cache_shape) : NULL;  // (B, capacity, G, D)
    self->v_spare = append == APPEND_BY_COPY ? zeros(cache_shape) : NULL;  // (B, capacity, G, D)
    // Label the storage in the --dot diagram (named() would also --dump it,
    // empty; the lesson dumps the filled caches at the end).
    labeled("k_cache", self->k_cache);
    labeled("v_cache", self->v_cache);
}

// Rows [from, from + count) of positions, for every batch entry b, copied
// from src (starting at src_from) into dst. Both are contiguous (B, *, G, D),
// so one position of one sequence is G * D floats in a row.
static void copy_positions(Tensor *dst, int from, const Tensor *src, int src_from, int count) {
    int B = size(dst, 0), G = size(dst, 2), D = size(dst, 3);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < count; t++) {
            memcpy(at4(dst, b, from + t, 0, 0), at4(src, b, src_from + t, 0, 0),
                   (size_t)G * D * sizeof(float));
        }
    }
}

// Append the T new positions of `rows` (B, T, G, D) to `*cache`, which
// holds `cache_len` positions. With APPEND_BY_COPY the whole cache is first
// copied into `*spare`, then the two are swapped.
static void append_rows(Tensor **cache, Tensor **spare, AppendMode append, int cache_len,
                        const Tensor *rows) {
    if (append == APPEND_BY_COPY) {
        copy_positions(*spare, 0, *cache, 0, cache_len);   // the old rows, all of them
        Tensor *swap = *cache;
        *cache = *spare;
        *spare = swap;
    }
    copy_positions(*cache, cache_len, rows, 0, size(rows, 1));   // the new rows
    trace1(append == APPEND_BY_COPY ? "append (copy all)" : "append (in place)", *cache, rows);
}

// GQA_W_KVcache.forward(query, key, value), line by line, fixed. The inputs
// are (B, T, C): the T NEW tokens only when the cache is on. Returns out
// (B, T, C); *attn_weights gets the weights (B, H, T, L).
static const Tensor *GQA_W_KVcache_forward(GQA_W_KVcache *self, const Tensor **attn_weights,
                                     const Tensor *query, const Tensor *key,
                                     const Tensor *value) {
    int batch_size = size(query, 0);
    int seq_len = size(query, 1);
    int H = self->num_heads, G = self->num_groups, D = self->head_dim;
    const int heads_first[4] = {0, 2, 1, 3};   // permute(0, 2, 1, 3)

    query = view(linear(query, &self->w_query), shape4(batch_size, seq_len, H, D));  // (B, T, H, D)
    query = permute(query, heads_first);                                           // (B, H, T, D)
    // Keys and values stay (B, T, G, D), positions before heads, while they
    // go into the cache: that is the layout the cache grows along (dim 1).
    // Only G heads are computed and stored, not H: R = H / G times less
    // memory than multi-head attention would cache.
    key = view(linear(key, &self->w_key), shape4(batch_size, seq_len, G, D));        // (B, T, G, D)
    value = view(linear(value, &self->w_value), shape4(batch_size, seq_len, G, D));  // (B, T, G, D)

    // The keys before this call's tokens: 0 without a cache.
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
        if (cache_len + seq_len > self->capacity) {
            fail("GQA_W_KVcache: %d cached + %d new positions exceed the cache's %d",
                 cache_len, seq_len, self->capacity);
        }
        append_rows(&self->k_cache, &self->k_spare, self->append, cache_len, key);
        append_rows(&self->v_cache, &self->v_spare, self->append, cache_len, value);
        self->cache_len = cache_len + seq_len;
        key = narrow(self->k_cache, 1, 0, self->cache_len);                       // (B, L, G, D)
        value = narrow(self->v_cache, 1, 0, self->cache_len);                     // (B, L, G, D)
    }
    int kv_len = cache_len + seq_len;   // L

    key = permute(key, heads_first);                                               // (B, G, L, D)
    value = permute(value, heads_first);                                           // (B, G, L, D)
    // As in lesson 9: query head h = g * R + r uses key/value head g. The
    // expand is free; the reshape copies the cache R times over, at every
    // step (see the bench). -1 there is L, which the notebook leaves to
    // PyTorch because it changes from call to call.
    int expand_ratio = H / G;   // R
    key = expand(unsqueeze(key, 2), shape5(-1, -1, expand_ratio, -1, -1));         // (B, G, R, L, D)
    key = reshape(key, shape4(batch_size, H, -1, D));                              // (B, H, L, D)
    value = expand(unsqueeze(value, 2), shape5(-1, -1, expand_ratio, -1, -1));     // (B, G, R, L, D)
    value = reshape(value, shape4(batch_size, H, -1, D));                          // (B, H, L, D)

    const Tensor *scores = matmul(query, transpose(key, -2, -1));                        // (B, H, T, L)
    scores = div_scalar(scores, sqrtf((float)D));                                  // (B, H, T, L)

    // BUG 3: the notebook builds torch.triu(torch.ones(seq_len, seq_len),
    // diagonal=1), a (T, T) mask, for scores that are (T, L) once a cache
    // is there. For one new token it skips the mask (`if seq_len > 1`),
    // which happens to be right; for a chunk of T > 1 new tokens after a
    // cache the mask cannot be broadcast and PyTorch stops. The mask of
    // lesson 9 fits every case: new token t sits at position cache_len + t
    // and sees the keys up to there, so the diagonal moves right by
    // cache_len. With T = 1 it is all zeros, so no `if` is needed.
    const Tensor *mask = triu(ones(shape2(seq_len, kv_len)), 1 + cache_len);             // (T, L)
    scores = masked_fill(scores, eq_scalar(mask, 1.0f), -INFINITY);                // (B, H, T, L)
    const Tensor *attn = softmax(scores, -1);                                            // (B, H, T, L)
    attn = dropout(attn, 0.1, self->training);                                     // (B, H, T, L)
    *attn_weights = attn;

    const Tensor *attn_out = matmul(attn, value);                                        // (B, H, T, D)
    attn_out = permute(attn_out, heads_first);                                     // (B, T, H, D)
    attn_out = reshape(attn_out, shape3(batch_size, seq_len, H * D));              // (B, T, C)
    return linear(attn_out, &self->o_proj);                                        // (B, T, C)
}

// gqa(x, x, x) on positions [from, from + count) of x (B, N, C): self-
// attention, so the same tokens give the queries, keys and values.
static const Tensor *step(GQA_W_KVcache *self, const Tensor **attn, const Tensor *x, int from, int count) {
    const Tensor *x_new = narrow(x, 1, from, count);                                     // (B, count, C)
    return GQA_W_KVcache_forward(self, attn, x_new, x_new, x_new);                 // (B, count, C)
}

// max |a - b| between a (B, T, C) and positions [from, from + T) of b.
// A check, not dataflow: kept out of the --dot diagram.
static float diff_at(const Tensor *a, const Tensor *b, int from) {
    bool was_paused = trace_pause(true);
    float diff = max_abs_diff(a, narrow(b, 1, from, size(a, 1)));
    trace_pause(was_paused);
    return diff;
}

// torch.Size of the filled part of a cache (B, cache_len, G, D), for printing.
static const char *cache_size_str(const Tensor *cache, int cache_len) {
    bool was_paused = trace_pause(true);
    const char *text = size_str(narrow(cache, 1, 0, cache_len));
    trace_pause(was_paused);
    return text;
}

// --- the walk-through ---------------------------------------------------------------

typedef struct {
    int batch, prompt, new_tokens, dim, heads, kv_heads;
    bool heatmap;
} Sizes;

// The bytes a one-layer float32 cache of `kv_heads` key/value heads takes.
static double cache_bytes(int batch, int positions, int kv_heads, int head_dim) {
    return 2.0 * batch * positions * kv_heads * head_dim * (double)sizeof(float);  // K and V
}

static void print_cache_memory(const Sizes *n) {
    int D = n->dim / n->heads, N = n->prompt + n->new_tokens;
    printf("-- what the cache costs: 2 (K and V) * batch * positions * kv_heads * head_dim * "
           "4 bytes, per layer --\n");
    const char *names[3] = {"MHA", "GQA", "MQA"};
    int kv_heads[3] = {n->heads, n->kv_heads, 1};   // every head, this model's, one
    for (int i = 0; i < 3; i++) {
        printf("%s (kv_heads = %d): %6.0f bytes per token, %9.0f bytes for these %d tokens, "
               "%6.2f MiB at 4096 tokens\n", names[i], kv_heads[i],
               cache_bytes(1, 1, kv_heads[i], D), cache_bytes(n->batch, N, kv_heads[i], D), N,
               cache_bytes(n->batch, 4096, kv_heads[i], D) / (1024.0 * 1024.0));
    }
    printf("(the cache also grows with the number of layers: a 32-layer model needs 32 of "
           "them)\n\n");
}

static void walk_through(const Sizes *n) {
    int B = n->batch, P = n->prompt, N = n->prompt + n->new_tokens, C = n->dim;
    printf("gqa = GQA_W_KVcache(%d, %d, %d).eval()   (seed 001's class, its 3 bugs fixed)\n",
           C, n->heads, n->kv_heads);
    GQA_W_KVcache gqa = GQA_W_KVcache_init(C, n->heads, n->kv_heads);
    gqa.training = false;   // .eval(): generation never uses dropout
    const Tensor *x = named("x", randn(shape3(B, N, C)));                                // (B, N, C)
    printf("x: %s\n", size_str(x));

    // The reference: the whole sequence at once, no cache, causal mask (N, N).
    const Tensor *full_attn;                                                             // (B, H, N, N)
    const Tensor *full_out = named("full_out", step(&gqa, &full_attn, x, 0, N));         // (B, N, C)
    printf("full_out = gqa(x, x, x), no cache: %s\n\n", size_str(full_out));
    if (n->heatmap) {
        print_heatmap("full_attn", narrow(full_attn, 0, 0, 1));
    }

    // Prefill: the prompt in one call, with the ordinary causal mask; it
    // fills the cache with the prompt's keys and values.
    GQA_W_KVcache_start_cache(&gqa, B, N, APPEND_IN_PLACE);
    printf("gqa.use_cache = True\n");
    printf("-- prefill: the %d prompt tokens in one call --\n", P);
    const Tensor *attn;                                                                  // (B, H, T, L)
    const Tensor **outs = arena_alloc((size_t)(n->new_tokens + 1), sizeof *outs);
    outs[0] = step(&gqa, &attn, x, 0, P);                                          // (B, P, C)
    printf("out: %s\n", size_str(outs[0]));
    printf("k_cache: %s\n", cache_size_str(gqa.k_cache, gqa.cache_len));
    printf("  max |out - full_out[:, 0:%d]| = %.3g\n", P, (double)diff_at(outs[0], full_out, 0));

    // Decode: one token per call. Only its query, key and value are
    // projected; its key and value are appended; it attends to the cache.
    printf("-- decode: one token per call --\n");
    for (int i = 1; i <= n->new_tokens; i++) {
        int t = P + i - 1;   // the position of this step's token
        outs[i] = step(&gqa, &attn, x, t, 1);                                      // (B, 1, C)
        printf("token %d: out: %s, k_cache: %s, v_cache: %s\n", t, size_str(outs[i]),
               cache_size_str(gqa.k_cache, gqa.cache_len),
               cache_size_str(gqa.v_cache, gqa.cache_len));
        printf("  max |out - full_out[:, %d]| = %.3g\n", t, (double)diff_at(outs[i], full_out, t));
        if (i == 1) {
            trace_pause(true);   // the --dot diagram: full forward, prefill and one step
        }
    }
    const Tensor *cached_out = cat(outs, n->new_tokens + 1, 1);                    // (B, N, C)
    const Tensor *k_cache = clone(gqa.k_cache);                                    // (B, N, G, D)
    const Tensor *v_cache = clone(gqa.v_cache);                                    // (B, N, G, D)
    // The diagram stopped after one step; the dumps want the whole run's results.
    bool was_paused = trace_pause(false);
    named("cached_out", cached_out);
    named("k_cache", k_cache);
    named("v_cache", v_cache);
    trace_pause(was_paused);
    printf("cached_out = torch.cat(outs, dim=1): %s\n", size_str(cached_out));
    // Our loops add the same products in the same order whether a row is
    // computed alone or with the others, so the difference is usually 0;
    // PyTorch's blocked matrix kernels sum in another order and differ by
    // float rounding (about 1e-7).
    printf("max |cached_out - full_out| = %.3g   (0 or float rounding)\n",
           (double)max_abs_diff(cached_out, full_out));
    // [:8] as in Python: fewer rows or columns when there are fewer.
    int rows = N < 8 ? N : 8, cols = C < 4 ? C : 4;
    const Tensor *corner = narrow(narrow(narrow(cached_out, 0, 0, 1), 1, 0, rows), 2, 0, cols);  // (1, 8, 4)
    printf("cached_out[0, :8, :4]:\n%s\n", tensor_str(reshape(corner, shape2(rows, cols)), NULL));
    corner = narrow(narrow(narrow(full_out, 0, 0, 1), 1, 0, rows), 2, 0, cols);    // (1, 8, 4)
    printf("full_out[0, :8, :4]:\n%s\n\n", tensor_str(reshape(corner, shape2(rows, cols)), NULL));

    // BUG 2, shown: the notebook's cache keeps the prompt only, as if we
    // reset cache_len to the prompt before every step. The first decoded
    // token is still right (nothing is missing yet); each later one misses
    // the tokens between the prompt and itself.
    printf("-- the notebook's cache: stored on the first call, never updated --\n");
    for (int i = 1; i <= n->new_tokens; i++) {
        int t = P + i - 1;
        gqa.cache_len = P;   // what the notebook's self.k_cache still holds
        const Tensor *out = step(&gqa, &attn, x, t, 1);                                  // (B, 1, C)
        printf("token %d sees keys 0..%d and %d: max |out - full_out[:, %d]| = %.4f\n", t,
               P - 1, t, t, (double)diff_at(out, full_out, t));
    }
    printf("\n");

    // BUG 3, shown: the new tokens two at a time after the prompt. The mask
    // must be (2, cache_len + 2) with its diagonal moved right by cache_len.
    printf("-- chunks of 2 new tokens: the mask needs the cache offset --\n");
    gqa.cache_len = 0;
    const Tensor *first_out = step(&gqa, &attn, x, 0, P);                                // (B, P, C)
    float worst = max_abs_diff(first_out, narrow(full_out, 1, 0, P));
    for (int t = P; t < N; t += 2) {
        int count = N - t < 2 ? N - t : 2;
        int cache_len = gqa.cache_len;
        const Tensor *out = step(&gqa, &attn, x, t, count);                              // (B, count, C)
        float diff = diff_at(out, full_out, t);
        worst = diff > worst ? diff : worst;
        if (t == P) {
            printf("tokens %d..%d after cache_len = %d: mask = torch.triu(torch.ones(%d, %d), "
                   "diagonal=%d)\n%s\n", t, t + count - 1, cache_len, count, cache_len + count,
                   1 + cache_len,
                   tensor_str(triu(ones(shape2(count, cache_len + count)), 1 + cache_len), NULL));
            if (count > 1) {
                printf("the notebook's mask torch.triu(torch.ones(%d, %d), diagonal=1) against "
                       "scores (%d, %d, %d, %d):\n", count, count, B, n->heads, count,
                       cache_len + count);
                printf("RuntimeError: The size of tensor a (%d) must match the size of tensor "
                       "b (%d) at non-singleton dimension 3\n", count, cache_len + count);
            }
            if (n->heatmap) {
                print_heatmap("chunk_attn", narrow(attn, 0, 0, 1));
            }
        }
    }
    printf("  max |chunked - full_out| = %.3g\n\n", (double)worst);
    print_cache_memory(n);
}

// --- --bench: what the cache saves, measured --------------------------------------

// The bench's model and generation: larger than the walk-through, small
// enough that the whole bench runs in a few seconds on one core.
enum { BENCH_DIM = 256, BENCH_HEADS = 8, BENCH_KV_HEADS = 2, BENCH_PROMPT = 16,
       BENCH_NEW = 200, BENCH_APPENDS = 2048 };

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// Generate positions P .. N-1 of x (B, N, C): with the cache (prefill, then
// one token per call) or, when `append` is negative, by running the full
// causal forward over all t + 1 tokens for every position t and keeping its
// last row. Each position's output row goes into out (B, N - P, C). Every
// tensor a call makes is freed right after it (arena_mark/arena_release).
// Returns the seconds it took.
static double generate(Tensor *out, GQA_W_KVcache *gqa, const Tensor *x, int P, int append) {
    int B = size(x, 0), N = size(x, 1), C = size(x, 2);
    const Tensor *attn;                                                                  // (B, H, T, L)
    double start = now_seconds();
    if (append >= 0) {
        size_t mark = arena_mark();
        gqa->cache_len = 0;
        step(gqa, &attn, x, 0, P);                                                 // (B, P, C)
        arena_release(mark);
    }
    for (int t = P; t < N; t++) {
        size_t mark = arena_mark();
        const Tensor *y = append >= 0 ? step(gqa, &attn, x, t, 1)                        // (B, 1, C)
                                : step(gqa, &attn, x, 0, t + 1);                   // (B, t + 1, C)
        for (int b = 0; b < B; b++) {
            memcpy(at3(out, b, t - P, 0), at3(y, b, size(y, 1) - 1, 0), (size_t)C * sizeof(float));
        }
        arena_release(mark);
    }
    return now_seconds() - start;
}

// Appending one position at a time to a cache of `positions`, G * D floats
// per position for K and as many for V, by each method; seconds.
static double time_appends(AppendMode append, int positions, int G, int D) {
    size_t mark = arena_mark();
    Shape cache_shape = shape4(1, positions, G, D);
    Tensor *k_cache = zeros(cache_shape), *k_spare = zeros(cache_shape);           // (1, positions, G, D)
    Tensor *v_cache = zeros(cache_shape), *v_spare = zeros(cache_shape);           // (1, positions, G, D)
    const Tensor *row = full(shape4(1, 1, G, D), 1.0f);                                  // (1, 1, G, D)
    double start = now_seconds();
    for (int len = 0; len < positions; len++) {
        append_rows(&k_cache, &k_spare, append, len, row);
        append_rows(&v_cache, &v_spare, append, len, row);
    }
    double seconds = now_seconds() - start;
    arena_release(mark);
    return seconds;
}

static void bench(void) {
    trace_pause(true);   // thousands of operations: not a diagram
    int B = 1, C = BENCH_DIM, H = BENCH_HEADS, G = BENCH_KV_HEADS, D = C / H;
    int P = BENCH_PROMPT, N = BENCH_PROMPT + BENCH_NEW;
    printf("-- bench: batch %d, dim %d, heads %d, kv_heads %d (head_dim %d), prompt %d, "
           "then %d new tokens --\n", B, C, H, G, D, P, N - P);
    GQA_W_KVcache gqa = GQA_W_KVcache_init(C, H, G);
    gqa.training = false;
    const Tensor *x = randn(shape3(B, N, C));                                            // (B, N, C)
    Tensor *recomputed = zeros(shape3(B, N - P, C));                               // (B, N - P, C)
    Tensor *in_place = zeros(shape3(B, N - P, C));                                 // (B, N - P, C)
    Tensor *by_copy = zeros(shape3(B, N - P, C));                                  // (B, N - P, C)

    // The three runs, one after the other in this process, so their ratio
    // compares like with like (same machine, same moment, same code).
    gqa.use_cache = false;
    double t_full = generate(recomputed, &gqa, x, P, -1);
    GQA_W_KVcache_start_cache(&gqa, B, N, APPEND_IN_PLACE);
    double t_cache = generate(in_place, &gqa, x, P, APPEND_IN_PLACE);
    GQA_W_KVcache_start_cache(&gqa, B, N, APPEND_BY_COPY);
    double t_copy = generate(by_copy, &gqa, x, P, APPEND_BY_COPY);

    printf("recompute everything each step:  %7.3f s\n", t_full);
    printf("KV cache, append in place:       %7.3f s\n", t_cache);
    printf("KV cache, append by copy (cat):  %7.3f s\n", t_copy);
    printf("same outputs: max |cached - recomputed| = %.3g, max |copy - in place| = %.3g\n",
           (double)max_abs_diff(in_place, recomputed), (double)max_abs_diff(by_copy, in_place));

    // The FLOP model: a multiply-add is 2 FLOPs. Per token the four
    // projections cost Pt = 2C*C (query) + 2 * 2C*G*D (key, value) + 2C*C
    // (o_proj). T queries against L keys cost 4*H*D*T*L (scores, then
    // weights @ V). Recomputing position t runs L = t + 1 tokens: L*Pt +
    // 4HD*L^2. The cache runs 1 token against L keys: Pt + 4HD*L, after a
    // prefill of P*Pt + 4HD*P^2.
    double Pt = 4.0 * C * C + 4.0 * C * G * D;
    double attention = 4.0 * H * D;
    double flops_full = 0.0, flops_cache = P * Pt + attention * P * P;
    for (int t = P; t < N; t++) {
        double L = t + 1;
        flops_full += L * Pt + attention * L * L;
        flops_cache += Pt + attention * L;
    }
    printf("measured speedup of the cache: %.1fx\n", t_full / t_cache);
    printf("FLOP model: Pt = 4*C*C + 4*C*G*D = %.0f per token, attention 4*H*D*T*L\n", Pt);
    printf("  recompute: sum over t of (t+1)*Pt + 4*H*D*(t+1)^2            = %.3g FLOPs\n",
           flops_full);
    printf("  cache:     P*Pt + 4*H*D*P^2 + sum over t of Pt + 4*H*D*(t+1) = %.3g FLOPs\n",
           flops_cache);
    printf("predicted speedup: %.1fx   (measured rates: %.2f GFLOP/s recomputing, %.2f GFLOP/s "
           "cached)\n", flops_full / flops_cache, flops_full / t_full * 1e-9,
           flops_cache / t_cache * 1e-9);

    // measured / predicted = (t_full / t_cache) / (F_full / F_cache)
    //                      = (F_cache / t_cache) / (F_full / t_full):
    // the gap between the two speedups is exactly the ratio of the two runs'
    // FLOP rates. The model assumes one rate for both and counts nothing
    // but arithmetic; what each run does besides is said below.
    double rate_ratio = (t_full / t_cache) / (flops_full / flops_cache);
    printf("measured / predicted = %.2f = cached GFLOP/s / recomputing GFLOP/s: the model\n"
           "assumes one rate for both runs and counts arithmetic only. Not counted:\n"
           "- cached: every step copies the whole cache to all %d heads (the notebook's\n"
           "  expand().reshape(), %d floats per position), builds a mask, about 40 tensors;\n"
           "- recomputing: softmax, exp and the mask over heads*L*L scores, every step.\n",
           rate_ratio, H, 2 * H * D);
    if (rate_ratio < 0.8) {
        printf("Here the cached run is slower per FLOP: its copies and per-step overhead\n"
               "weigh more than what recomputing leaves out.\n");
    } else if (rate_ratio > 1.25) {
        printf("Here the recomputing run is slower per FLOP: its softmax and mask over L*L\n"
               "scores weigh more than the cached run's copies.\n");
    } else {
        printf("Here the two rates are close: both runs spend most of their time in the same\n"
               "projections and matmuls, so the FLOP count predicts the speedup to within the\n"
               "noise of a shared machine.\n");
    }

    // Appending alone, on a longer cache, where the quadratic shows.
    int A = BENCH_APPENDS;
    double bytes_copy = 0.0;
    for (int len = 0; len < A; len++) {
        bytes_copy += cache_bytes(1, len + 1, G, D);   // all old positions + the new one
    }
    double a_copy = time_appends(APPEND_BY_COPY, A, G, D);
    double a_place = time_appends(APPEND_IN_PLACE, A, G, D);
    printf("appending %d positions (K and V, %d x %d floats each):\n", A, G, D);
    printf("  by copy (torch.cat): %8.4f s, %8.1f MB moved (grows as T^2)\n", a_copy,
           bytes_copy * 1e-6);
    printf("  in place:            %8.4f s, %8.1f MB moved (grows as T)\n", a_place,
           cache_bytes(1, A, G, D) * 1e-6);
    printf("  ratio: %.0fx\n", a_copy / (a_place > 0.0 ? a_place : 1e-9));
    printf("why copy and in place decode alike: appending by copy moves %d floats per cached\n"
           "position per step, the reshape %d times more, and the projections outweigh both;\n"
           "the appends alone show the T^2 that grows with the context.\n\n",
           2 * G * D, H / G);
}

// --- the lesson ---------------------------------------------------------------------

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
        {"--bench", &run_bench, "time generation with and without the cache (own sizes)"},
    };
    Lesson lesson = {
        .program = "lesson-10",
        .summary = "kv-cache: seed 001's GQA_W_KVcache, fixed, against the full causal forward",
        .sizes = sizes, .n_sizes = 6, .switches = switches, .n_switches = 1,
    };
    parse_lesson_args(&lesson, argc, argv);
    // The bench builds its own, larger model: its parameters would overwrite
    // the lesson's dumps under the same names, and it draws no graph.
    if (run_bench && (lesson.dump_dir != NULL || lesson.dot_file != NULL)) {
        usage_error(&lesson, "--bench runs its own larger model; drop --dump and --dot");
    }
    check_divides(&lesson, "--heads", n.heads, "--dim", n.dim);
    check_divides(&lesson, "--kv-heads", n.kv_heads, "--heads", n.heads);
    int N = n.prompt + n.new_tokens;   // at most 2 * MAX_SIZE_FLAG: no overflow
    check_fits(&lesson, "full_attn (batch, heads, prompt+new, prompt+new)",
               shape4(n.batch, n.heads, N, N));
    check_fits(&lesson, "x (batch, prompt+new, dim)", shape3(n.batch, N, n.dim));
    check_fits(&lesson, "w_query.weight (dim, dim)", shape2(n.dim, n.dim));
    n.heatmap = lesson.heatmap;
    lesson_start(&lesson);

    if (run_bench) {
        bench();
    } else {
        walk_through(&n);
    }
    return lesson_finish(&lesson);
}
