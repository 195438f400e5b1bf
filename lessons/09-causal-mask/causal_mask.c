// Lesson 9: causal-mask - a query may only look at keys that came before it.
//
// WHAT THIS ADDS
//   Lesson 8 built grouped-query attention (GQA): 8 query heads share 2
//   key/value heads. Every query there could see every key, including keys
//   that come LATER in the sequence. A language model that predicts the next
//   token must not see the future, so each query position t is only allowed
//   the key positions s <= t. That rule is the causal mask. The GQA notebook builds
//   it with torch.triu, puts it into its `GQA` module, and then shows the
//   mask a single new query gets when earlier keys sit in a KV cache (the
//   subject of lesson 10). We print its two masks, generalise the second one
//   to a chunk of several new queries, run its GQA module, and compare its
//   mask convention with lesson 4's.
//
// THE MATH (T queries, S = T keys; cache_len cached keys come first in lesson 10)
//   mask[t, s]   = 1 if s > t else 0          = triu(ones(T, T), diagonal=1)
//   scores[t, s] = q_t . k_s / sqrt(D), set to -inf where mask[t, s] == 1
//   attn[t, :]   = softmax(scores[t, :])        exp(-inf) = 0: the future gets 0
//   out[t]       = sum_{s <= t} attn[t, s] * v_s
//   With cache_len keys already cached, q_len new queries sit at positions
//   cache_len .. cache_len + q_len - 1 and the mask is
//   triu(ones(q_len, cache_len + q_len), diagonal = 1 + cache_len).
//
// THE PYTORCH IT MIRRORS (the GQA notebook, cells In[10]-In[12]; GQA is its class)
//   print(torch.triu(torch.ones(4, 4), diagonal=1))
//   cache_len = 2
//   print(torch.triu(torch.ones(1, 1 + cache_len), diagonal=1 + cache_len))
//   print(torch.triu(torch.ones(2, cache_len + 2), diagonal=1 + cache_len))
//   torch.manual_seed(seed)
//   gqa = GQA(dim, heads, kv_heads).eval()
//   query = torch.randn(batch, seq, dim)
//   key = torch.randn(batch, seq, dim)
//   value = torch.randn(batch, seq, dim)
//   output = gqa(query, key, value)
//   print(output.shape)
//   (docs/09-causal-mask.md has the complete script, which prints every
//   number this lesson prints.)
//
// RUN IT
//   make lesson-9        flags: --batch 4 --seq 32 --dim 512 --heads 8 --kv-heads 2,
//                        --train (dropout on), --heatmap, --seed, --dump, --dot
//
// WHAT TO LOOK FOR
//   - Row t of the weights is exactly 0 after column t: the upper triangle.
//   - Row 0 of the weights is [1, 0, 0, ...]: the first token can only see
//     itself, so all its attention goes to itself.
//   - Changing the last token changes only the last output: 0 difference at
//     every earlier position. With --train too: both runs then restart the
//     generator, so their dropout drops the same weights.
//   - The notebook's mask has 1 where attention is FORBIDDEN (fill where
//     mask == 1); lesson 4's mask has 1 where it is ALLOWED (fill where
//     mask == 0). Same pattern, opposite meaning.
//   - A fully masked row gives NaN with -inf and a uniform row with -1e20;
//     a causal row is never fully masked, because its diagonal is visible.
//
// THE PARTS (each a function below, called from main in this order)
//   1. the notebook's masks (its In[12]), and the general mask with a cache
//   2. the notebook's GQA module, causal (its In[11]): the output, the weights
//      and a check that no position sees the future (--seq, --kv-heads, --train)
//   3. two conventions for the same mask: -inf where 1, or -1e20 where 0
//
// Size letters (the repository's, docs/README.md): B = batch_size,
// T = seq_len (query positions), S = key positions (here S = T: the module
// reshapes its keys with the queries' seq_len, so the code writes T for
// both), C = dim, H = num_heads, KV = num_groups (the key/value heads,
// --kv-heads), R = expand_ratio = H / KV (query heads per key/value head),
// D = head_dim = C / H.
// Index letters: b batch, h query head, t query position, s key position,
// c one of the C features; in the expand below, g a key/value head (a
// group) and r a query head inside it, so query head h = g*R + r reads
// key/value head g = h / R.
// Coming from lesson 8: its einsum letters are the notebook's "b g h n d",
// where h is the key/value head (g here) and g a query head's place inside
// its group (r here). The sizes are the same: KV groups of R query heads,
// and query head i reads key/value head i / R.

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "attention.h"

// --- the module: the notebook's GQA, causal -----------------------------------------

// class GQA(nn.Module) of the GQA notebook, In[10]. The notebook calls the number of
// key/value heads `num_groups`: KV groups of R = H / KV query heads, each group
// sharing one key head and one value head.
typedef struct {
    int num_heads;    // H
    int head_dim;     // D = C / H
    int num_groups;   // KV, the key/value heads
    Linear w_query;   // C -> C        (H heads of D)
    Linear w_key;     // C -> KV * D   (only KV heads: that is the saving)
    Linear w_value;   // C -> KV * D
    Linear o_proj;    // C -> C
    bool training;    // module.train() / module.eval(): dropout on or off
} GQA;

// What the forward computed besides its output, kept for the lesson to
// print and the tests to check (the notebook keeps it local).
typedef struct {
    const Tensor *attn;   // (B, H, T, T): the weights, after dropout (eval: none)
} GQASteps;

// GQA(dim, num_heads, num_groups). The notebook asserts that num_heads
// divides dim and num_groups divides num_heads; main() checks both on the
// command line before we get here. The four Linear layers are created in
// this order, which is the order PyTorch draws their initial weights in.
static GQA GQA_init(int dim, int num_heads, int num_groups) {
    GQA self;
    self.num_heads = num_heads;
    self.head_dim = dim / num_heads;
    self.num_groups = num_groups;
    self.w_query = linear_init("w_query", dim, dim, true);
    self.w_key = linear_init("w_key", dim, num_groups * self.head_dim, true);
    self.w_value = linear_init("w_value", dim, num_groups * self.head_dim, true);
    self.o_proj = linear_init("o_proj", dim, dim, true);
    self.training = true;   // nn.Module starts in training mode; .eval() clears it
    return self;
}

// GQA.forward(query, key, value), line by line. query, key, value are
// (B, T, C); returns out (B, T, C). `steps` (may be NULL) gets the weights.
// The notebook reuses the names query/key/value for the projected tensors;
// so do we.
Tensor *causal_mask(int q_len, int cache_len);   // part 1 below; make exercise-9 swaps it
static Tensor *GQA_forward(GQASteps *steps, const GQA *self, const Tensor *query,
                           const Tensor *key, const Tensor *value) {
    int batch_size = size(query, 0);
    int seq_len = size(query, 1);
    int H = self->num_heads, KV = self->num_groups, D = self->head_dim;
    const int heads_first[4] = {0, 2, 1, 3};   // permute(0, 2, 1, 3)
    Shape query_heads = shape4(batch_size, seq_len, H, D);
    Shape kv_heads = shape4(batch_size, seq_len, KV, D);

    // Project, split the last dim into heads, and move heads before
    // positions so that each head is one (T, D) matrix.
    query = view(linear(&self->w_query, query), query_heads);                 // (B, T, H, D)
    query = permute(query, heads_first);                                      // (B, H, T, D)
    key = view(linear(&self->w_key, key), kv_heads);                          // (B, T, KV, D)
    key = permute(key, heads_first);                                          // (B, KV, T, D)
    value = view(linear(&self->w_value, value), kv_heads);                    // (B, T, KV, D)
    value = permute(value, heads_first);                                      // (B, KV, T, D)

    // Give every query head its key/value head. unsqueeze(2) makes room for
    // the R heads of a group; expand repeats the group's key R times there
    // without copying (stride 0); reshape then merges (KV, R) into H, which
    // must copy when 1 < KV < H, because an expanded view cannot be flattened
    // in place (with KV = 1 or R = 1 it is a view, as in PyTorch).
    // Merging (KV, R) row-major puts query head i = g * R + r on key head
    // g = i / R: heads 0..R-1 share key head 0, the next R key head 1.
    // (That is repeat_interleave of the Attention 介绍 notes, not repeat, and lesson 8's
    // einops "(h g)" grouping, whose h is this g and whose g is this r.)
    int expand_ratio = H / KV;   // R
    Shape every_head = shape4(batch_size, H, seq_len, D);
    key = unsqueeze(key, 2);                                                  // (B, KV, 1, T, D)
    key = expand(key, shape5(-1, -1, expand_ratio, -1, -1));                  // (B, KV, R, T, D)
    key = reshape(key, every_head);                                           // (B, H, T, D)
    value = unsqueeze(value, 2);                                              // (B, KV, 1, T, D)
    value = expand(value, shape5(-1, -1, expand_ratio, -1, -1));              // (B, KV, R, T, D)
    value = reshape(value, every_head);                                       // (B, H, T, D)

    // Dividing by sqrt(D) keeps the dot products of D-long vectors near
    // unit size, so softmax does not saturate into a one-hot row.
    const Tensor *scores = matmul(query, transpose(key, -2, -1));             // (B, H, T, T)
    scores = div_scalar(scores, sqrtf((float)D));                             // (B, H, T, T)

    // The causal mask: 1 above the diagonal = key s is in the future of
    // query t. Filling those scores with -inf makes exp() give exactly 0,
    // so no weight at all goes to the future. The (T, T) mask broadcasts
    // over batch and heads. Every row keeps at least its diagonal, so no
    // row is all -inf (which would give 0/0 = NaN).
    // causal_mask(seq_len, 0) is the notebook's triu(ones(seq_len, seq_len), diagonal=1).
    const Tensor *mask = causal_mask(seq_len, 0);                             // (T, T)
    named("mask", mask);
    scores = masked_fill(scores, eq_scalar(mask, 1.0f), -INFINITY);           // (B, H, T, T)
    const Tensor *attn = softmax(scores, -1);                                 // (B, H, T, T)
    // Dropout on the weights, only in training: it randomly silences some
    // of the links between positions. .eval() turns it off.
    attn = dropout(attn, 0.1, self->training);                                // (B, H, T, T)
    if (steps != NULL) {
        steps->attn = attn;
    }

    const Tensor *attn_out = matmul(attn, value);                             // (B, H, T, D)
    // Back to one row per position with the heads side by side; the permuted
    // view is not contiguous, so reshape copies it.
    attn_out = permute(attn_out, heads_first);                                // (B, T, H, D)
    attn_out = reshape(attn_out, shape3(batch_size, seq_len, H * D));         // (B, T, C)
    return linear(&self->o_proj, attn_out);                                   // (B, T, C)
}

// --- part 1: the notebook's masks, and the general one -----------------------------------

// torch.triu(torch.ones(q_len, cache_len + q_len), diagonal=1 + cache_len):
// 1 marks a key the query may NOT see. Query row t is the token at absolute
// position cache_len + t; key column s is at absolute position s. The query
// sees s <= cache_len + t, i.e. s - t <= cache_len, and triu keeps (sets to
// 1) exactly the s - t >= cache_len + 1. So the diagonal slides right by
// cache_len: the mask is aligned to the BOTTOM RIGHT of the score matrix,
// where the newest query meets the newest key. (Not static: make exercise-9
// links the reader's own in its place, exercises/09-causal-mask.c.)
Tensor *causal_mask(int q_len, int cache_len) {
    Tensor *all = ones(shape2(q_len, cache_len + q_len));   // (q_len, cache_len + q_len)
    return triu(all, 1 + cache_len);                        // (q_len, cache_len + q_len)
}

static void part1_the_masks(void) {
    // In[12]: the plain causal mask for 4 tokens. Row t has 1s (forbidden)
    // after column t.
    int seq_len = 4;
    const Tensor *mask = triu(ones(shape2(seq_len, seq_len)), 1);             // (4, 4)
    printf("mask = torch.triu(torch.ones(4, 4), diagonal=1)\n%s\n", tensor_str(mask, NULL));

    // In[12]: ONE new query after cache_len = 2 cached keys. It is the
    // newest token, so it may see all 3 keys: the mask is all zeros.
    int cache_len = 2;
    const Tensor *row_of_ones = ones(shape2(1, 1 + cache_len));               // (1, 3)
    const Tensor *mask_w_cache = triu(row_of_ones, 1 + cache_len);            // (1, 3)
    printf("mask_w_cache = torch.triu(torch.ones(1, 1 + cache_len), diagonal=1 + cache_len)\n"
           "%s\n\n", tensor_str(mask_w_cache, NULL));

    // The general case: q_len = 2 new queries after the same 2 cached keys.
    // Query 0 (absolute position 2) may see keys 0..2 but not key 3 (the
    // other new token); query 1 (position 3) sees all 4.
    int q_len = 2;
    const Tensor *mask_chunk = causal_mask(q_len, cache_len);                 // (2, 4)
    printf("-- the general mask: q_len new queries after cache_len cached keys --\n");
    printf("mask = torch.triu(torch.ones(q_len, cache_len + q_len), diagonal=1 + cache_len)\n");
    printf("q_len = 2, cache_len = 2:\n%s\n", tensor_str(mask_chunk, NULL));
    // (Two statements, not two calls inside one printf: C leaves the order in
    // which arguments are evaluated open, and the --dot graph records the
    // operations in the order they run.)
    const Tensor *no_cache = causal_mask(4, 0);                               // (4, 4)
    const Tensor *one_query = causal_mask(1, 2);                              // (1, 3)
    printf("cache_len = 0 gives the (4, 4) mask above, q_len = 1 the one-row mask:\n%s\n%s\n\n",
           tensor_str(no_cache, NULL), tensor_str(one_query, NULL));
}

// --- part 2: the notebook's GQA module, and what its example does not print --------------

// t[0] in PyTorch: the first entry along dim 0, one dim fewer. A narrow()
// keeps the dim (size 1), so reshape drops it (a view, nothing copied).
static const Tensor *first(const Tensor *t) {
    Shape rest = {t->shape.ndim - 1, {0}};
    for (int d = 1; d < t->shape.ndim; d++) {
        rest.size[d - 1] = t->shape.size[d];
    }
    return reshape(narrow(t, 0, 0, 1), rest);
}

// The weights and the output, their top-left corners: the weights are a
// lower triangle. (As in Python, [:4] takes fewer when there are fewer.)
static void show_weights(const Tensor *attn, const Tensor *output, bool heatmap) {
    int T = size(attn, 2), C = size(output, 2);
    int rows = T < 4 ? T : 4, cols = C < 4 ? C : 4;
    const Tensor *attn_rows = narrow(attn, 2, 0, rows);                       // (B, H, 4, T)
    const Tensor *attn_corner = first(first(narrow(attn_rows, 3, 0, rows)));  // (4, 4)
    printf("attention weights, attn[0, 0, :4, :4]:\n%s\n", tensor_str(attn_corner, NULL));
    const Tensor *output_rows = narrow(first(output), 0, 0, rows);            // (4, C)
    const Tensor *output_corner = narrow(output_rows, 1, 0, cols);            // (4, 4)
    printf("output[0, :4, :4]:\n%s\n", tensor_str(output_corner, NULL));
    if (heatmap) {
        print_heatmap("attn", narrow(attn, 0, 0, 1));   // batch 0, every head
    }
}

// The largest |a - b| over positions [from, to) of two (B, T, C) tensors.
static float diff_of_positions(const Tensor *a, const Tensor *b, int from, int to) {
    return max_abs_diff(narrow(a, 1, from, to - from), narrow(b, 1, from, to - from));
}

// Causality, checked: change the last token of query, key and value and
// run again. Outputs 0 .. T-2 never looked at position T-1 (their weight
// on it was exactly 0), so they must not move at all.
// In train mode every call draws new dropout masks, and two runs with
// different masks differ at every position for that reason alone (by 0.76
// at the notebook's sizes): the check would say nothing about the mask. So
// there both runs start from torch.manual_seed(seed) and draw the same
// masks; then only the changed token differs between them.
static void check_causality(const GQA *gqa, uint64_t seed, const Tensor *query,
                            const Tensor *key, const Tensor *value, const Tensor *output) {
    int B = size(query, 0), T = size(query, 1), C = size(query, 2);
    Tensor *query2 = clone(query);                                            // (B, T, C)
    Tensor *key2 = clone(key);                                                // (B, T, C)
    Tensor *value2 = clone(value);                                            // (B, T, C)
    for (int b = 0; b < B; b++) {
        for (int c = 0; c < C; c++) {
            *at3(query2, b, T - 1, c) += 1.0f;
            *at3(key2, b, T - 1, c) += 1.0f;
            *at3(value2, b, T - 1, c) += 1.0f;
        }
    }
    const char *before = "output";   // what output2 is held against
    if (gqa->training) {
        manual_seed(seed);
        output = GQA_forward(NULL, gqa, query, key, value);                   // (B, T, C)
        manual_seed(seed);
        before = "output1";
    }
    const Tensor *output2 = GQA_forward(NULL, gqa, query2, key2, value2);     // (B, T, C)
    printf("add 1 to the last token of query, key and value, run again:\n");
    if (gqa->training) {
        printf("  (train mode: each call draws new dropout masks, so both runs start from\n"
               "  torch.manual_seed(%" PRIu64 ") and draw the same ones: output1 = gqa(query, key, "
               "value),\n  output2 = gqa(query2, key2, value2); with other masks every "
               "position would differ)\n", seed);
    }
    if (T > 1) {
        printf("  max |output2 - %s| at positions 0..%d: %g\n", before, T - 2,
               (double)diff_of_positions(output2, output, 0, T - 1));
    }
    printf("  max |output2 - %s| at position %d: %.4f\n\n", before, T - 1,
           (double)diff_of_positions(output2, output, T - 1, T));
}

// In[11], the notebook's example usage: gqa = GQA(embed_dim, num_heads,
// num_groups).eval(); the weights are drawn first, then the three inputs.
// Then what it does not print: the weights, the output, and causality
// checked. The diagram is the module's dataflow: the parts after the
// forward are not drawn.
static void part2_the_module(int batch, int seq, int dim, int heads, int kv_heads, bool train,
                             uint64_t seed, bool heatmap) {
    printf("-- part 2: the notebook's GQA module, causal (--seq, --kv-heads and --train change it) "
           "--\n");
    GQA gqa = GQA_init(dim, heads, kv_heads);
    gqa.training = train;   // .eval() unless --train
    const Tensor *query = named("query", randn(shape3(batch, seq, dim)));     // (B, T, C)
    const Tensor *key = named("key", randn(shape3(batch, seq, dim)));         // (B, T, C)
    const Tensor *value = named("value", randn(shape3(batch, seq, dim)));     // (B, T, C)
    GQASteps steps;
    const Tensor *output = GQA_forward(&steps, &gqa, query, key, value);      // (B, T, C)
    named("output", output);
    printf("%s\n", size_str(output));   // print(output.shape)
    bool was_paused = trace_pause(true);
    show_weights(steps.attn, output, heatmap);
    check_causality(&gqa, seed, query, key, value, output);
    trace_pause(was_paused);
}

// --- part 3: two conventions for a mask -------------------------------------------------

// The same causal pattern on fixed 3x3 scores, written both ways, and what
// happens to a row that is masked entirely.
static void part3_conventions(void) {
    const float score_values[] = {1, 2, 3,  4, 5, 6,  7, 8, 9};
    const Tensor *scores = tensor_from(shape2(3, 3), score_values);           // (3, 3)
    printf("-- part 3: two conventions for the same mask (fixed 3 x 3 scores) --\n");
    printf("scores = torch.tensor([[1., 2., 3.], [4., 5., 6.], [7., 8., 9.]])\n");

    // Here (the GQA notebook): 1 = forbidden, fill where mask == 1, with -inf.
    const Tensor *mask = triu(ones(shape2(3, 3)), 1);                         // (3, 3)
    const Tensor *forbidden = eq_scalar(mask, 1.0f);                          // (3, 3)
    const Tensor *filled_inf = masked_fill(scores, forbidden, -INFINITY);     // (3, 3)
    const Tensor *w_inf = softmax(filled_inf, -1);                            // (3, 3)
    printf("this lesson: torch.triu(torch.ones(3, 3), diagonal=1), 1 = forbidden\n");
    printf("scores.masked_fill(mask == 1, float('-inf')).softmax(-1)\n%s\n",
           tensor_str(w_inf, NULL));

    // Lesson 4 (SelfAttV3 of the Self Attention notebook): 1 = allowed, fill where mask == 0,
    // with -1e20. The causal "allowed" mask is the lower triangle, tril.
    // exp(-1e20 - max) underflows to exactly 0, so the weights are the same.
    const Tensor *keep = add(ones(shape2(3, 3)), mul_scalar(mask, -1.0f));    // (3, 3)
    const Tensor *not_kept = eq_scalar(keep, 0.0f);                           // (3, 3)
    const Tensor *filled_big = masked_fill(scores, not_kept, -1e20f);         // (3, 3)
    const Tensor *w_big = softmax(filled_big, -1);                            // (3, 3)
    printf("lesson 4: keep = torch.tril(torch.ones(3, 3)), 1 = allowed\n%s\n",
           tensor_str(keep, NULL));
    printf("scores.masked_fill(keep == 0, -1e20).softmax(-1)\n%s\n", tensor_str(w_big, NULL));

    // A row with every key masked: a padding mask can do that (lesson 4's
    // last batch row would, if it kept no key). -1e20 leaves finite scores,
    // all equal, so the row becomes uniform: it attends to padding, quietly.
    // -inf leaves exp(-inf - (-inf)) = exp(nan): the row is NaN, and NaN
    // spreads through everything after it. A causal row never gets there:
    // query t always sees key t (s - t = 0 < 1, or < 1 + cache_len).
    const Tensor *row = narrow(scores, 0, 0, 1);                              // (1, 3)
    const Tensor *all_masked = eq_scalar(zeros(shape2(1, 3)), 0.0f);          // (1, 3)
    const Tensor *row_big = softmax(masked_fill(row, all_masked, -1e20f), -1);   // (1, 3)
    const Tensor *row_inf = softmax(masked_fill(row, all_masked, -INFINITY), -1);   // (1, 3)
    printf("a row with every key masked: row = scores[:1]\n");
    printf("with -1e20: %s\n", tensor_str(row_big, NULL));
    printf("with -inf:  %s\n", tensor_str(row_inf, NULL));
    printf("a causal row always keeps its diagonal, so it never gets there\n\n");
}

// --- the lesson -------------------------------------------------------------------------

// --- the budget: what a run of these sizes holds and does (lesson/budget.h) ----------

// Counted from the code above (kv_width = kv_heads * head_dim, the width of w_key
// and w_value): the four layers, query, key and value (B, T, C) and their
// changed copies; two forwards (three in train mode: the causality check
// runs the first again), each projecting, copying the expanded keys and
// values to every head, and making four (B, H, T, T) (scores, scaled,
// filled, weights; the dropped weights in train mode) and the (T, T) mask.
static Cost causal_mask_cost(double B, double T, double C, double H, double KV, bool train) {
    double kv_width = KV * (C / H), BTC = B * T * C, BHTT = B * H * T * T, forwards = 2 + train;
    double forward = 6 * BTC + 2 * B * T * kv_width + (4 + train) * BHTT + 3 * T * T;
    double layers = 2 * C * C + 2 * C * kv_width + 2 * C + 2 * kv_width;
    return (Cost){
        .bytes = 4 * (layers + 6 * BTC + forwards * forward),
        .dumped = 4 * (layers + 4 * BTC + T * T),
        .multiply_adds = forwards * (2 * BTC * C + 2 * BTC * kv_width + 2 * BHTT * (C / H)),
        .exps = forwards * BHTT + 3 * BTC,
        .elements = layers + 3 * BTC + forwards * forward,
    };
}

int main(int argc, char **argv) {
    int batch = 4, seq = 32, dim = 512, heads = 8, kv_heads = 2;   // the notebook's sizes
    bool train = false;
    SizeFlag sizes[] = {
        {"--batch", &batch, "batch size"},
        {"--seq", &seq, "sequence length"},
        {"--dim", &dim, "hidden dimension (embed_dim)"},
        {"--heads", &heads, "query heads (num_heads)"},
        {"--kv-heads", &kv_heads, "key/value heads (the notebook's num_groups)"},
    };
    SwitchFlag switches[] = {{"--train", &train, "training mode: dropout 0.1 on the weights"}};
    Lesson lesson = {
        .program = "lesson-9",
        .summary = "causal-mask: the causal mask, with and without a cache, in the GQA "
                   "notebook's GQA",
        .sizes = sizes, .n_sizes = 5, .switches = switches, .n_switches = 1,
    };
    parse_lesson_args(&lesson, argc, argv);
    check_divides(&lesson, "--heads", heads, "--dim", dim);
    check_divides(&lesson, "--kv-heads", kv_heads, "--heads", heads);
    // The largest tensors of each kind: the weights (B, H, T, T) (the scores,
    // the mask's broadcast), the activations (B, T, C) (every projection,
    // and the expanded keys (B, KV, R, T, D), which are as many), and the
    // parameters (C, C). Every other tensor is one of these or smaller.
    check_fits(&lesson, "attn (batch, heads, seq, seq)", shape4(batch, heads, seq, seq));
    check_fits(&lesson, "query (batch, seq, dim)", shape3(batch, seq, dim));
    check_fits(&lesson, "w_query.weight (dim, dim)", shape2(dim, dim));
    check_budget(&lesson, causal_mask_cost(batch, seq, dim, heads, kv_heads, train));
    lesson_start(&lesson);

    // The masks are printed to be read; the --dot diagram is the module's
    // dataflow, which builds its own mask.
    bool was_paused = trace_pause(true);
    part1_the_masks();
    trace_pause(was_paused);

    part2_the_module(batch, seq, dim, heads, kv_heads, train, lesson.seed, lesson.heatmap);
    trace_pause(true);
    part3_conventions();
    return lesson_finish(&lesson);
}
