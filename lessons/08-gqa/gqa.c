// Lesson 8: gqa - grouped-query attention, each einsum written out as loops.
//
// WHAT THIS ADDS
//   Lesson 6 gave every query head its own key head and value head. Here
//   several query heads SHARE one key/value head: with --heads 8 and
//   --kv-heads 2, query heads 0-3 read key/value head 0 and query heads 4-7
//   read key/value head 1. The scores and outputs are still one per query
//   head (eight of them); only the keys and values, which a decoder must keep
//   in its KV cache for every past token, shrink fourfold. kv_heads = heads is
//   lesson 6's multi-head attention, kv_heads = 1 is multi-query attention.
//   The GQA notebook writes GQA with einops; every einops step below is
//   a plain nested loop whose index letters are the einsum's letters.
//
// THE MATH (R = H / KV query heads per key/value head, i = h*R + g)
//   scores[b, g, h, n, s] = query[b, n, h*R + g, :] . key[b, s, h, :]
//   attention = softmax(scores / sqrt(D), over s)
//   out[b, n, h*R + g, :] = sum over s of attention[b, g, h, n, s] * value[b, s, h, :]
//   So query head i uses key/value head h = i / R (integer division), the same
//   pairing as repeat_interleave(R) of the keys and values (the Attention
//   介绍 notes).
//
// THE PYTORCH IT MIRRORS (the notebook's cells 7-11 with the group sum fixed; the
//   doc page docs/08-gqa.md has it complete and runnable)
//   query = torch.randn(batch, seq, heads, head_dim)
//   key = torch.randn(batch, seq, kv_heads, head_dim)
//   value = torch.randn(batch, seq, kv_heads, head_dim)
//   num_head_groups = query.shape[2] // key.shape[2];  print(num_head_groups)
//   query = rearrange(query, "b n h d -> b h n d")   (key, value: "b s h d -> b h s d")
//   query = rearrange(query, "b (h g) n d -> b g h n d", g=num_head_groups)
//   scores = einsum(query, key, "b g h n d, b h s d -> b g h n s")
//   attention = F.softmax(scores / scale, dim=-1)      (scale = head_dim ** 0.5)
//   out = einsum(attention, value, "b g h n s, b h s d -> b g h n d")
//   out = rearrange(out, "b g h n d -> b n (h g) d")
//
// RUN IT
//   make lesson-8      flags: --batch 1 --seq 256 --heads 8 --kv-heads 2 --head-dim 64
//   make lesson-8 ARGS="--seq 6 --kv-heads 1 --heatmap"
//                      (--dump DIR, --dot FILE)
//
// WHAT TO LOOK FOR
//   - The notebook's lines: 4, torch.Size([1, 4, 2, 256, 64]), then the
//     scores shape, which is (1, 4, 2, 256, 256) here: one score matrix per
//     query head, 4 x 2 = 8 of them.
//   - The table of which key/value head each query head reads: the einops
//     grouping "(h g)" and repeat_interleave agree, head i reads head i / R.
//   - The notebook's einsum "b g h n d, b h s d -> b h n s" sums the scores
//     over g and gives (1, 256, 2, 64): two heads where there should be eight.
//   - The loops equal the Attention 介绍 notes' repeat_interleave + matmul
//     version, and the
//     same loops with kv_heads = heads and kv_heads = 1 are MHA and MQA.
//   - The KV cache per token: 4096 bytes as MHA, 1024 as GQA, 512 as MQA.
//   - The notebook's first cell calls scaled_dot_product_attention on
//     (b, n, h, d) tensors: the shape it prints is right, the numbers are
//     not (heads attend to heads); with the heads in front it is GQA.
//
// THE PARTS (each a function below, called from main in this order)
//   1. the notebook's cells 7-11, the group sum fixed: its lines and out[0, 0, :, :4]
//      (--heatmap draws the weights)
//   2. which key/value head each query head reads (--heads, --kv-heads)
//   3. the notebook's einsum sums the scores over g (--kv-heads)
//   4. the Attention 介绍 notes' repeat_interleave, then multi-head attention
//   5. the two ends: kv_heads = heads is MHA, kv_heads = 1 is MQA
//   6. the KV cache per token per layer (--kv-heads, --head-dim)
//   7. the notebook's first cell: scaled_dot_product_attention on (b, n, h, d)
//
// Size letters (the repository's, docs/README.md): B batch, N query positions,
//   S key positions (N = S = --seq, the same tokens), H query heads (--heads),
//   KV key/value heads (--kv-heads), R = H / KV query heads per key/value head
//   (the notebook's num_head_groups), D head_dim.
// Index letters: the einsum's, as the notebook writes it ("b g h n d"), an
//   exception to the repository's letters: b batch, n query position, s key
//   position, h a key/value head (and so the group), g a query head INSIDE
//   its group (0..R-1; elsewhere g is a key/value head), d inside a head;
//   i = h*R + g is a query head's number from 0 to H-1.
// Lessons 9 and 10 follow the notebook's GQA module: its num_groups is our KV
//   (the number of groups), its expand_ratio our R. Same model, same letters.

#include <math.h>
#include <stdio.h>

#include "attention.h"

// --- grouped-query attention: the notebook's cells 8-11, the group sum fixed -

// What the notebook prints between its steps, kept so main() and the tests
// can look inside.
typedef struct {
    int num_head_groups;       // R
    const Tensor *query;       // (B, R, KV, N, D) the query heads split into groups
    const Tensor *key;         // (B, KV, S, D) heads in front (cell 8)
    const Tensor *value;       // (B, KV, S, D)
    const Tensor *scores;      // (B, R, KV, N, S)
    const Tensor *attention;   // (B, R, KV, N, S) softmax(scores / sqrt(D)) over s
} GroupedQueryAttentionSteps;

// The einops steps, each a loop, written out after the function that uses them.
static Tensor *rearrange_heads_first(const Tensor *x, const char *pattern);
static Tensor *rearrange_split_groups(const Tensor *query, int R);
Tensor *einsum_scores(const Tensor *query, const Tensor *key);   // make exercise-8 swaps it
static Tensor *einsum_mix_values(const Tensor *attention, const Tensor *value);
static Tensor *rearrange_merge_groups(const Tensor *out);

// query (B, N, H, D), key and value (B, S, KV, D); returns out (B, N, H, D).
// `steps` may be NULL. The notebook's names are kept, and like the notebook
// it reassigns query, key and value as they change shape. The notebook
// prints four things between the steps; this keeps them in `steps`, and
// main() prints them.
static Tensor *grouped_query_attention(GroupedQueryAttentionSteps *steps, const Tensor *query,
                                       const Tensor *key, const Tensor *value) {
    int num_head_groups = size(query, 2) / size(key, 2);                     // R, 4 by default
    // Cell 8: heads in front of positions, then split the query heads.
    query = rearrange_heads_first(query, "b n h d -> b h n d");              // (B, H, N, D)
    key = rearrange_heads_first(key, "b s h d -> b h s d");                  // (B, KV, S, D)
    value = rearrange_heads_first(value, "b s h d -> b h s d");              // (B, KV, S, D)
    query = rearrange_split_groups(query, num_head_groups);                  // (B, R, KV, N, D)
    // Cell 9, with g kept in the output: one score matrix per query head.
    // (The notebook's "-> b h n s" sums over g: see group_sum_attention.)
    const Tensor *scores = labeled("scores", einsum_scores(query, key));     // (B, R, KV, N, S)
    // Cell 11. Why divide by sqrt(head_dim): a dot product of D numbers of
    // variance 1 has variance D, so unscaled scores grow with D and push the
    // softmax towards one-hot, where its gradient vanishes. The notebook
    // takes query.size(-1) ** 0.5 in Python's double; PyTorch then divides
    // the float32 scores by that number rounded to float, as we do.
    float scale = (float)sqrt((double)size(query, -1));
    const Tensor *attention =
        labeled("attention", softmax(div_scalar(scores, scale), -1));        // (B, R, KV, N, S)
    const Tensor *out = einsum_mix_values(attention, value);                 // (B, R, KV, N, D)
    if (steps != NULL) {
        *steps = (GroupedQueryAttentionSteps){num_head_groups, query, key, value, scores,
                                              attention};
    }
    return rearrange_merge_groups(out);                                      // (B, N, H, D)
}

// --- the einops steps as loops ------------------------------------------------
//
// Every function below makes a fresh tensor and fills it element by
// element, so the reader sees exactly which input element lands where. The
// einops/einsum string each one computes is in the comment above its loop.
// In PyTorch the rearranges are views (permute/view) that copy nothing;
// here they copy, which changes no number. Each reports itself to the
// trace (trace.h) under its einops string, for the --dot diagram; in the
// einsums' strings a newline breaks the label in two (graph.c writes it as
// dot's "\n"), which keeps the labels narrow.

// "b n h d -> b h n d": move the head axis in front of the positions, so each
// head's (positions x head_dim) matrix is one block. The same loop does the
// notebook's "b s h d -> b h s d" for key and value (only the letter
// differs); `pattern` is the notebook's string, for the --dot graph.
// The notebook's first cell skips this step: it hands (b, n, h, d) tensors
// straight to scaled_dot_product_attention, which attends over dim -2 and
// treats the dims before it as batch, so there the 8 heads of ONE position
// attend to each other and positions never meet. The printed shape is
// (1, 256, 8, 64) either way, which is why nothing looked wrong
// (show_first_cell runs it).
static Tensor *rearrange_heads_first(const Tensor *x, const char *pattern) {
    int B = size(x, 0), N = size(x, 1), H = size(x, 2), D = size(x, 3);
    Tensor *out = zeros(shape4(B, H, N, D));                                 // (B, H, N, D)
    // b n h d -> b h n d
    for (int b = 0; b < B; b++) {
        for (int n = 0; n < N; n++) {
            for (int h = 0; h < H; h++) {
                for (int d = 0; d < D; d++) {
                    *at4(out, b, h, n, d) = *at4(x, b, n, h, d);
                }
            }
        }
    }
    trace1(pattern, out, x);
    return out;
}

// "b (h g) n d -> b g h n d": split the H query heads into KV groups of R.
// In einops a composed axis "(h g)" is counted in C order: the LAST letter
// moves fastest, exactly like the digits of a number. So query head number
// i = h*R + g, that is h = i / R and g = i % R: heads 0..R-1 form group
// h = 0, heads R..2R-1 group h = 1, and so on. The scores einsum below pairs
// group h with key/value head h, so query head i reads key/value head i / R.
// (Written "(g h)" instead, i = g*KV + h and head i would read i % KV: heads
// 0, KV, 2*KV, ... would share a key. An early version of the code the
// notebook copied had that grouping; it is a different model, not GQA as
// Llama, llama2.c and repeat_interleave pair them.)
// The notebook's comments name the letters wrongly: "g stands for the number
// of groups" - g runs over the R = 4 query heads INSIDE one group (R is the
// group's size; there are KV = 2 groups), and "h stands for the hidden dim"
// - h is the key/value head, which is also the group's number.
static Tensor *rearrange_split_groups(const Tensor *query, int R) {
    int B = size(query, 0), H = size(query, 1), N = size(query, 2), D = size(query, 3);
    int KV = H / R;
    Tensor *out = zeros(shape5(B, R, KV, N, D));                             // (B, R, KV, N, D)
    // b (h g) n d -> b g h n d
    for (int b = 0; b < B; b++) {
        for (int g = 0; g < R; g++) {
            for (int h = 0; h < KV; h++) {
                for (int n = 0; n < N; n++) {
                    for (int d = 0; d < D; d++) {
                        *at5(out, b, g, h, n, d) = *at4(query, b, h * R + g, n, d);
                    }
                }
            }
        }
    }
    char label[64];
    snprintf(label, sizeof label, "b (h g) n d -> b g h n d, g=%d", R);
    trace1(label, out, query);
    return out;
}

// "b g h n d, b h s d -> b g h n s": every query against every key of ITS
// key/value head h. Letters on both sides (b, h) are matched, d is summed,
// and g, n, s are kept: one (N x S) score matrix per query head.
//
// Speed: at5()/at4() check every index against the shape, which is right for
// teaching but costs a few nanoseconds a call, and this loop does
// B*H*N*S*D = 33.5 million multiply-adds at the default sizes. So each loop
// level seeks a pointer to the start of its row once ("query_n", "key_s")
// and the inner d loop steps along the row by the tensor's last stride.
// Not static: make exercise-8 links the reader's own in its place
// (exercises/08-gqa.c).
Tensor *einsum_scores(const Tensor *query, const Tensor *key) {
    int B = size(query, 0), R = size(query, 1), KV = size(query, 2);
    int N = size(query, 3), D = size(query, 4), S = size(key, 2);
    Tensor *scores = zeros(shape5(B, R, KV, N, S));                          // (B, R, KV, N, S)
    int query_d = query->stride[4], key_d = key->stride[3];   // one step along d
    // b g h n d, b h s d -> b g h n s
    for (int b = 0; b < B; b++) {
        for (int g = 0; g < R; g++) {
            for (int h = 0; h < KV; h++) {
                for (int n = 0; n < N; n++) {
                    const float *query_n = at5(query, b, g, h, n, 0);        // (D) one query
                    for (int s = 0; s < S; s++) {
                        const float *key_s = at4(key, b, h, s, 0);           // (D) one key
                        float sum = 0.0f;
                        for (int d = 0; d < D; d++) {
                            sum += query_n[d * query_d] * key_s[d * key_d];
                        }
                        *at5(scores, b, g, h, n, s) = sum;
                    }
                }
            }
        }
    }
    trace2("einsum\nb g h n d, b h s d\n-> b g h n s", scores, query, key);
    return scores;
}

// "b g h n s, b h s d -> b g h n d": each query head mixes the values of its
// key/value head h with its own weights; s is summed.
static Tensor *einsum_mix_values(const Tensor *attention, const Tensor *value) {
    int B = size(attention, 0), R = size(attention, 1), KV = size(attention, 2);
    int N = size(attention, 3), S = size(attention, 4), D = size(value, 3);
    Tensor *out = zeros(shape5(B, R, KV, N, D));                             // (B, R, KV, N, D)
    int attention_s = attention->stride[4], value_s = value->stride[2];  // one step along s
    // b g h n s, b h s d -> b g h n d
    for (int b = 0; b < B; b++) {
        for (int g = 0; g < R; g++) {
            for (int h = 0; h < KV; h++) {
                for (int n = 0; n < N; n++) {
                    const float *attention_n = at5(attention, b, g, h, n, 0);  // (S) weights
                    for (int d = 0; d < D; d++) {
                        const float *value_d = at4(value, b, h, 0, d);       // (S) column d
                        float sum = 0.0f;
                        for (int s = 0; s < S; s++) {
                            sum += attention_n[s * attention_s] * value_d[s * value_s];
                        }
                        *at5(out, b, g, h, n, d) = sum;
                    }
                }
            }
        }
    }
    trace2("einsum\nb g h n s, b h s d\n-> b g h n d", out, attention, value);
    return out;
}

// "b g h n d -> b n (h g) d": undo the split. Query head i = h*R + g goes
// back to slot i, so out[:, :, i] is the output of query head i, in the same
// order as the query heads came in.
static Tensor *rearrange_merge_groups(const Tensor *out) {
    int B = size(out, 0), R = size(out, 1), KV = size(out, 2);
    int N = size(out, 3), D = size(out, 4);
    Tensor *merged = zeros(shape4(B, N, KV * R, D));                         // (B, N, H, D)
    // b g h n d -> b n (h g) d
    for (int b = 0; b < B; b++) {
        for (int n = 0; n < N; n++) {
            for (int h = 0; h < KV; h++) {
                for (int g = 0; g < R; g++) {
                    for (int d = 0; d < D; d++) {
                        *at4(merged, b, n, h * R + g, d) = *at5(out, b, g, h, n, d);
                    }
                }
            }
        }
    }
    trace1("b g h n d -> b n (h g) d", merged, out);
    return merged;
}

// --- the notebook's einsum as written: the group sum, a forward to compare with -------

// "b g h n d, b h s d -> b h n s", the notebook's cell 9. The output has no
// g, and einsum sums over every letter that is missing from the output: so
// it sums over d (the dot product, wanted) AND over g (not wanted):
//     scores[b, h, n, s] = sum over g of (query_g . key_s)
//                        = (sum over g of query_g) . key_s
// The R query heads of a group are added into ONE query before they meet
// the keys. What is left is multi-head attention with KV heads whose
// queries are those sums: R - 1 of every R query heads are gone. The
// notebook took these einsums from fkodom/grouped-query-attention-pytorch,
// where this was a known bug, fixed upstream (commit a80f538, May 2024)
// the way einsum_scores above does it: keep g in the output.
static Tensor *einsum_scores_group_sum(const Tensor *query, const Tensor *key) {
    int B = size(query, 0), R = size(query, 1), KV = size(query, 2);
    int N = size(query, 3), D = size(query, 4), S = size(key, 2);
    Tensor *scores = zeros(shape4(B, KV, N, S));                             // (B, KV, N, S)
    // b g h n d, b h s d -> b h n s
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < KV; h++) {
            for (int n = 0; n < N; n++) {
                for (int s = 0; s < S; s++) {
                    const float *key_s = at4(key, b, h, s, 0);               // (D) one key
                    float sum = 0.0f;
                    for (int g = 0; g < R; g++) {   // the sum the notebook did not mean
                        const float *query_n = at5(query, b, g, h, n, 0);    // (D)
                        for (int d = 0; d < D; d++) {
                            sum += query_n[d * query->stride[4]] * key_s[d * key->stride[3]];
                        }
                    }
                    *at4(scores, b, h, n, s) = sum;
                }
            }
        }
    }
    trace2("einsum\nb g h n d, b h s d\n-> b h n s (sums g)", scores, query, key);
    return scores;
}

// "b h n s, b h s d -> b h n d", the notebook's cell 11: ordinary attention
// output, one per key/value head.
static Tensor *einsum_mix_values_per_kv_head(const Tensor *attention, const Tensor *value) {
    int B = size(attention, 0), KV = size(attention, 1), N = size(attention, 2);
    int S = size(attention, 3), D = size(value, 3);
    Tensor *out = zeros(shape4(B, KV, N, D));                                // (B, KV, N, D)
    // b h n s, b h s d -> b h n d
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < KV; h++) {
            for (int n = 0; n < N; n++) {
                const float *attention_n = at4(attention, b, h, n, 0);       // (S) weights
                for (int d = 0; d < D; d++) {
                    const float *value_d = at4(value, b, h, 0, d);           // (S) column d
                    float sum = 0.0f;
                    for (int s = 0; s < S; s++) {
                        sum += attention_n[s * attention->stride[3]] *
                               value_d[s * value->stride[2]];
                    }
                    *at4(out, b, h, n, d) = sum;
                }
            }
        }
    }
    trace2("einsum\nb h n s, b h s d\n-> b h n d", out, attention, value);
    return out;
}

// "b h n d -> b n h d", the notebook's last rearrange.
static Tensor *rearrange_heads_back(const Tensor *x) {
    int B = size(x, 0), H = size(x, 1), N = size(x, 2), D = size(x, 3);
    Tensor *out = zeros(shape4(B, N, H, D));                                 // (B, N, H, D)
    // b h n d -> b n h d
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            for (int n = 0; n < N; n++) {
                for (int d = 0; d < D; d++) {
                    *at4(out, b, n, h, d) = *at4(x, b, h, n, d);
                }
            }
        }
    }
    trace1("b h n d -> b n h d", out, x);
    return out;
}

// What the notebook prints between its steps (cells 9 and 11 as written).
typedef struct {
    const Tensor *scores;   // (B, KV, N, S): summed over g
} GroupSumSteps;

// What the notebook computes (cells 9 and 11 as written, after cell 8,
// which grouped_query_attention runs and keeps in its steps): the scores
// summed over g. query (B, R, KV, N, D) is cell 8's grouped query heads,
// key and value (B, KV, S, D) cell 8's keys and values, heads in front.
// Returns (B, N, KV, D): one output per KEY/VALUE head, where GQA has one
// per query head. `steps` may be NULL.
static Tensor *group_sum_attention(GroupSumSteps *steps, const Tensor *query, const Tensor *key,
                                   const Tensor *value) {
    const Tensor *scores =
        labeled("scores summed over g", einsum_scores_group_sum(query, key));  // (B, KV, N, S)
    float scale = (float)sqrt((double)size(query, -1));
    const Tensor *attention = softmax(div_scalar(scores, scale), -1);        // (B, KV, N, S)
    const Tensor *out = einsum_mix_values_per_kv_head(attention, value);     // (B, KV, N, D)
    if (steps != NULL) {
        steps->scores = scores;
    }
    return rearrange_heads_back(out);                                        // (B, N, KV, D)
}

// --- the Attention 介绍 notes' forward: repeat_interleave, then multi-head attention --

// The middle of GroupQueryAttention.forward in the Attention 介绍 notes,
// without its projections: q (B, N, H, D), k and v (B, S, KV, D) -> output
// (B, N, H, D). repeat_interleave(R, dim=1) copies key/value head h into
// slots h*R .. h*R + R-1, so slot i holds head i / R: the same pairing as
// the einops "(h g)" grouping. After that it is lesson 6's attention.
static const Tensor *repeat_interleave_attention(const Tensor *q_in, const Tensor *k_in,
                                                 const Tensor *v_in) {
    int nums_head = size(q_in, 2), nums_key_value_head = size(k_in, 2);
    int head_dim = size(q_in, 3);
    const Tensor *q = transpose(q_in, 1, 2);                                 // (B, H, N, D)
    const Tensor *k = transpose(k_in, 1, 2);                                 // (B, KV, S, D)
    const Tensor *v = transpose(v_in, 1, 2);                                 // (B, KV, S, D)
    int R = nums_head / nums_key_value_head;
    k = repeat_interleave(k, R, 1);                                          // (B, H, S, D)
    v = repeat_interleave(v, R, 1);                                          // (B, H, S, D)
    const Tensor *attention_score =
        div_scalar(matmul(q, transpose(k, 2, 3)), (float)sqrt((double)head_dim));  // (B, H, N, S)
    const Tensor *attention_weight = softmax(attention_score, -1);           // (B, H, N, S)
    const Tensor *output = matmul(attention_weight, v);                      // (B, H, N, D)
    return contiguous(transpose(output, 1, 2));                              // (B, N, H, D)
}

// --- part 1: the notebook's cells, the group sum fixed ---------------------------

// What the notebook prints between the steps of grouped_query_attention.
static void print_notebook_lines(const GroupedQueryAttentionSteps *steps, const Tensor *out) {
    printf("num_head_groups = query.shape[2] // key.shape[2]\n%d\n", steps->num_head_groups);
    printf("query = rearrange(query, \"b (h g) n d -> b g h n d\", g=num_head_groups)\n"
           "%s\n", size_str(steps->query));
    printf("scores = einsum(query, key, \"b g h n d, b h s d -> b g h n s\")\n%s\n",
           size_str(steps->scores));
    printf("out = rearrange(out, \"b g h n d -> b n (h g) d\")\n%s\n", size_str(out));
}

// The first row of the first batch, first 4 numbers of each head:
// PyTorch's out[0, 0, :, :4].
static const char *first_token_str(const Tensor *out) {
    int heads = size(out, 2), width = size(out, 3) < 4 ? size(out, 3) : 4;
    const Tensor *row = narrow(narrow(narrow(out, 0, 0, 1), 1, 0, 1), 3, 0, width);  // (1, 1, H, 4)
    return tensor_str(reshape(row, shape2(heads, width)), NULL);             // (H, 4)
}

// Lesson 6's multi-head attention core, no mask, by library ops: every
// query head against the key head with the same number. For multi-query
// attention the key and value have ONE head, (B, 1, S, D), and matmul's
// broadcasting hands that one head to all H query heads.
static const Tensor *multi_head_attention(const Tensor *q_in, const Tensor *k_in,
                                          const Tensor *v_in) {
    const Tensor *q_state = transpose(q_in, 1, 2);                           // (B, H, N, D)
    const Tensor *k_state = transpose(k_in, 1, 2);                           // (B, H or 1, S, D)
    const Tensor *v_state = transpose(v_in, 1, 2);                           // (B, H or 1, S, D)
    const Tensor *attention_weight =
        div_scalar(matmul(q_state, transpose(k_state, -1, -2)),
                   (float)sqrt((double)size(q_in, 3)));                      // (B, H, N, S)
    attention_weight = softmax(attention_weight, -1);                        // (B, H, N, S)
    const Tensor *output_mid = matmul(attention_weight, v_state);            // (B, H, N, D)
    return contiguous(transpose(output_mid, 1, 2));                          // (B, N, H, D)
}

// What part 1 made, for the parts after it.
typedef struct {
    const Tensor *query;           // (B, N, H, D)
    const Tensor *key, *value;     // (B, S, KV, D)
    GroupedQueryAttentionSteps steps;
    const Tensor *out;             // (B, N, H, D) GQA
    GroupSumSteps summed;
    const Tensor *out_group_sum;   // (B, N, KV, D) the notebook's einsum as written
    const Tensor *output;          // (B, N, H, D) the notes' repeat_interleave
} Cell;

// The notebook's cell 7 (the three draws, in this order) and its cells
// 8-11: GQA with the group sum fixed; then the two other ways the lesson
// holds it against: the notebook's einsum as written, and the notes'
// repeat_interleave. These three are the --dot diagram. Cell 8 runs once,
// in grouped_query_attention; cells 9 and 11 then run fixed there and as
// written in group_sum_attention, from the same grouped heads.
static Cell part1_the_notebooks_cells(int batch, int seq, int heads, int kv_heads, int head_dim,
                                      bool heatmap) {
    Cell cell;
    Shape query_shape = shape4(batch, seq, heads, head_dim);
    Shape kv_shape = shape4(batch, seq, kv_heads, head_dim);
    cell.query = named("query", randn(query_shape));                         // (B, N, H, D)
    cell.key = named("key", randn(kv_shape));                                // (B, S, KV, D)
    cell.value = named("value", randn(kv_shape));                            // (B, S, KV, D)
    cell.out = named("out", grouped_query_attention(&cell.steps, cell.query, cell.key,
                                                    cell.value));            // (B, N, H, D)
    cell.out_group_sum = named("out_group_sum",
        group_sum_attention(&cell.summed, cell.steps.query, cell.steps.key,
                            cell.steps.value));                              // (B, N, KV, D)
    // The notes' way is drawn as one step: its inside is lesson 6's.
    bool was_paused = trace_pause(true);
    cell.output = repeat_interleave_attention(cell.query, cell.key, cell.value);   // (B, N, H, D)
    trace_pause(was_paused);
    trace("repeat_interleave K, V\nthen multi-head attention", cell.output, 3,
          (const Tensor *const[]){cell.query, cell.key, cell.value}, 0, NULL);
    labeled("output (repeat_interleave)", cell.output);

    // The rest prints them; it adds nothing to the diagram.
    was_paused = trace_pause(true);
    printf("-- grouped-query attention, the notebook's einops steps as loops --\n");
    print_notebook_lines(&cell.steps, cell.out);
    if (heatmap) {
        // One grid per key/value head h: batch 0, the first query head (g = 0)
        // of each group, as attention[:1, :1] keeps them (the indices stay
        // the tensor's own). All B*R*KV grids would run to hundreds of lines.
        const Tensor *first_heads = narrow(narrow(cell.steps.attention, 0, 0, 1), 1, 0, 1);
        printf("(batch 0, query head g = 0 of each group h: attention[:1, :1])\n");
        print_heatmap("attention (b, g, h)", first_heads);                   // (1, 1, KV, N, S)
    }
    printf("out[0, 0, :, :4]\n%s\n\n", first_token_str(cell.out));
    trace_pause(was_paused);
    return cell;
}

// --- part 2: which key/value head each query head reads (--heads, --kv-heads) -------

// Which key/value head each query head reads, worked out by running the
// lesson's own index code on head NUMBERS instead of data.
static void part2_head_pairing(int heads, int kv_heads) {
    int R = heads / kv_heads;
    printf("-- part 2: which key/value head each query head reads (--heads and --kv-heads change "
           "it) --\n");
    // einops: put i into query head slot i, split with "b (h g) n d -> b g h n d"
    // and see at which h it lands.
    Tensor *head_numbers = zeros(shape4(1, heads, 1, 1));                    // (1, H, 1, 1)
    for (int i = 0; i < heads; i++) {
        *at4(head_numbers, 0, i, 0, 0) = (float)i;
    }
    const Tensor *grouped = rearrange_split_groups(head_numbers, R);         // (1, R, KV, 1, 1)
    // repeat_interleave: put h into key/value slot h, repeat R times along
    // the head axis and read which h lands in slot i.
    Tensor *kv_numbers = zeros(shape4(1, kv_heads, 1, 1));                   // (1, KV, 1, 1)
    for (int h = 0; h < kv_heads; h++) {
        *at4(kv_numbers, 0, h, 0, 0) = (float)h;
    }
    const Tensor *repeated = repeat_interleave(kv_numbers, R, 1);            // (1, H, 1, 1)

    int shown = heads < 64 ? heads : 64;   // the table shows at most 64 heads
    int kv_of_einops[64];
    for (int g = 0; g < R; g++) {
        for (int h = 0; h < kv_heads; h++) {
            int i = (int)*at5(grouped, 0, g, h, 0, 0);
            if (i < shown) {
                kv_of_einops[i] = h;
            }
        }
    }
    printf("query head i:                      ");
    for (int i = 0; i < shown; i++) {
        printf(" %d", i);
    }
    printf("\nreads kv head, einops \"(h g)\":     ");
    for (int i = 0; i < shown; i++) {
        printf(" %d", kv_of_einops[i]);
    }
    printf("\nreads kv head, repeat_interleave:  ");
    for (int i = 0; i < shown; i++) {
        printf(" %d", (int)*at4(repeated, 0, i, 0, 0));
    }
    printf("\n(\"(g h)\" instead would read i %% KV: ");
    for (int i = 0; i < shown; i++) {
        printf(" %d", i % kv_heads);
    }
    printf(")\n%s", shown < heads ? "(first 64 heads shown)\n" : "");
    printf("Both read key/value head i / R = i / %d: (h g) counts i = h*R + g, g fastest,\n"
           "and repeat_interleave copies head h into slots h*R .. h*R + %d.\n", R, R - 1);
}

// --- part 3: the notebook's einsum sums the scores over g (--kv-heads) ----------------

// The notebook's lines for its version, its numbers, and what it is: the
// group sum is attention with each group's queries ADDED into one query,
// shown by doing exactly that with ordinary multi-head attention.
static void part3_group_sum(const GroupSumSteps *steps, const Tensor *query, const Tensor *key,
                            const Tensor *value, const Tensor *out, const Tensor *out_group_sum) {
    int B = size(query, 0), N = size(query, 1), H = size(query, 2), D = size(query, 3);
    int KV = size(key, 2), R = H / KV;
    printf("\n-- part 3: the notebook's einsum sums the scores over g (--kv-heads) --\n");
    printf("scores = einsum(query, key, \"b g h n d, b h s d -> b h n s\")\n%s\n",
           size_str(steps->scores));
    printf("out = rearrange(out, \"b h n d -> b n h d\")\n%s\n", size_str(out_group_sum));
    printf("out_group_sum[0, 0, :, :4]\n%s\n", first_token_str(out_group_sum));
    printf("true GQA out: %s, one output per query head (%d)\n", size_str(out), H);
    long long features = (long long)H * D, features_left = (long long)KV * D;
    printf("notebook's:   %s, one per key/value head (%d): an o_proj after it,\n"
           "              nn.Linear(%lld, %lld) as in the notebook's GQA module, needs %lld\n"
           "              features per token and would get %lld.\n",
           size_str(out_group_sum), KV, features, features, features, features_left);

    Tensor *summed_query = zeros(shape4(B, N, KV, D));                       // (B, N, KV, D)
    for (int b = 0; b < B; b++) {
        for (int n = 0; n < N; n++) {
            for (int h = 0; h < KV; h++) {
                for (int g = 0; g < R; g++) {
                    for (int d = 0; d < D; d++) {
                        *at4(summed_query, b, n, h, d) += *at4(query, b, n, h * R + g, d);
                    }
                }
            }
        }
    }
    const Tensor *summed_attention =
        multi_head_attention(summed_query, key, value);                      // (B, N, KV, D)
    printf("max |out_group_sum - attention(sum of each group's %d queries, key, value)| = "
           "%.3g\n", R, max_abs_diff(out_group_sum, summed_attention));
    // Where the einsum came from: fkodom/grouped-query-attention-pytorch
    // (scaled_dot_product_gqa) had exactly these strings and this bug; its
    // commit a80f538 (May 2024) kept g, as grouped_query_attention does.
    printf("A known bug of the code the notebook copied "
           "(fkodom/grouped-query-attention-pytorch),\n"
           "fixed there in May 2024 by keeping g: \"-> b g h n s\", then \"b n (h g) d\".\n");
}

// --- part 4: the notes' way: repeat the keys and values, then multi-head attention ------

static void part4_repeat_interleave(const Tensor *out, const Tensor *output) {
    printf("\n-- part 4: the Attention 介绍 notes' repeat_interleave, then multi-head attention "
           "(--kv-heads) --\n");
    printf("output: %s\nmax |out - output| = %.3g\n", size_str(output),
           max_abs_diff(out, output));
}

// --- part 5: the two ends of the family: MHA and MQA (--heads) -----------------------

// kv_heads = heads is MHA, kv_heads = 1 is MQA: the same loops at both ends.
// `output` is the notes' result above.
static void part5_two_ends(const Tensor *query, const Tensor *key, const Tensor *value,
                           const Tensor *out, const Tensor *output) {
    int H = size(query, 2), R = H / size(key, 2);
    printf("\n-- part 5: the two ends: kv_heads = heads is MHA, kv_heads = 1 is MQA (--heads) "
           "--\n");
    // MHA: give every query head its own copy of its key/value head. The
    // same loops then run with R = 1 and must reproduce `out` exactly, and
    // agree with lesson 6's attention.
    const Tensor *key_mha = repeat_interleave(key, R, 2);                    // (B, S, H, D)
    const Tensor *value_mha = repeat_interleave(value, R, 2);                // (B, S, H, D)
    const Tensor *out_mha =
        grouped_query_attention(NULL, query, key_mha, value_mha);            // (B, N, H, D)
    // Lesson 6's attention on these copied heads is exactly what the notes
    // computed (`output`), so that is what the loops are held against.
    printf("kv_heads = %d, R = 1: max |loops - out| = %.3g, max |loops - multi-head "
           "attention| = %.3g\n", H, max_abs_diff(out_mha, out),
           max_abs_diff(out_mha, output));
    // MQA: only key/value head 0, shared by all H query heads.
    const Tensor *key_mqa = narrow(key, 2, 0, 1);                            // (B, S, 1, D)
    const Tensor *value_mqa = narrow(value, 2, 0, 1);                        // (B, S, 1, D)
    const Tensor *out_mqa =
        grouped_query_attention(NULL, query, key_mqa, value_mqa);            // (B, N, H, D)
    const Tensor *mqa = multi_head_attention(query, key_mqa, value_mqa);     // (B, N, H, D)
    printf("kv_heads = 1, R = %d: max |loops - multi-query attention (one K/V head, "
           "broadcast)| = %.3g\n", H, max_abs_diff(out_mqa, mqa));
}

// --- part 6: what GQA saves: the KV cache (--kv-heads, --head-dim) -------------------

// KV-cache bytes per token per layer: one key and one value vector (the 2)
// per key/value head, head_dim floats of 4 bytes each.
static void print_kv_cache_bytes(const char *name, int kv_heads, int head_dim) {
    printf("%s (kv_heads = %d): 2 * %d * %d * 4 = %lld bytes\n", name, kv_heads, kv_heads,
           head_dim, 2LL * kv_heads * head_dim * 4);
}

static void part6_kv_cache_bytes(int heads, int kv_heads, int head_dim) {
    printf("\n-- part 6: the KV cache per token per layer (--kv-heads and --head-dim change it) "
           "--\n");
    printf("2 (K and V) * kv_heads * head_dim * 4 bytes:\n");
    print_kv_cache_bytes("MHA", heads, head_dim);
    print_kv_cache_bytes("GQA", kv_heads, head_dim);
    print_kv_cache_bytes("MQA", 1, head_dim);
    printf("GQA keeps all %d query heads and caches 1/%d of MHA's bytes.\n", heads,
           heads / kv_heads);
}

// --- part 7: the notebook's first cell: the heads in the wrong place (--seq) -----------

// F.scaled_dot_product_attention(q, k, v), no mask, no dropout, as PyTorch
// 1.13 computes it: softmax((q * (1 / sqrt(E))) @ k^T) @ v over the LAST TWO
// dims, every dim before them a batch dim. (It scales q before the matmul,
// where the notebook's cells divide the scores after; with E = 64 the two
// are the same floats. PyTorch 2.0 made the function public; 1.13 has it
// as F._scaled_dot_product_attention, which also returns the weights.)
// q (..., L, E), k and v (..., S, E); returns (..., L, E), and the weights
// (..., L, S) in *weights.
static const Tensor *scaled_dot_product_attention(const Tensor **weights, const Tensor *q,
                                                  const Tensor *k, const Tensor *v) {
    float scale = (float)(1.0 / sqrt((double)size(q, -1)));
    const Tensor *attn = matmul(mul_scalar(q, scale), transpose(k, -2, -1));  // (..., L, S)
    attn = softmax(attn, -1);                                                // (..., L, S)
    *weights = attn;
    return matmul(attn, v);                                                  // (..., L, E)
}

// The notebook's first cell hands its (b, n, h, d) tensors to
// scaled_dot_product_attention as they are: it attends over dim -2, which
// there is the HEADS, so at each position the heads attend to each other
// and no position ever sees another. The printed shape is right either way.
// Here it runs on this lesson's query, and on key and value with each
// key/value head repeated for its R query heads (the cell has a key head
// per query head), against the call with the heads in front, which is GQA.
static void part7_first_cell(const Tensor *query, const Tensor *key, const Tensor *value,
                             const Tensor *out) {
    int H = size(query, 2), R = H / size(key, 2);
    const Tensor *key_h = repeat_interleave(key, R, 2);                      // (B, S, H, D)
    const Tensor *value_h = repeat_interleave(value, R, 2);                  // (B, S, H, D)
    const Tensor *weights_wrong, *weights;
    const Tensor *wrong =
        scaled_dot_product_attention(&weights_wrong, query, key_h, value_h);  // (B, N, H, D)
    const Tensor *right = transpose(scaled_dot_product_attention(&weights,
        transpose(query, 1, 2), transpose(key_h, 1, 2), transpose(value_h, 1, 2)), 1, 2);
    printf("\n-- part 7: the notebook's first cell: scaled_dot_product_attention on (b, n, h, d) "
           "(--seq) --\n");
    printf("(in PyTorch 1.13: F._scaled_dot_product_attention; public from 2.0)\n");
    printf("key, value: each head repeated for its %d query heads, repeat_interleave(%d, dim=2)"
           "\n%s\n", R, R, size_str(key_h));
    printf("the notebook's call: scaled_dot_product_attention(query, key, value)\n%s\n",
           size_str(wrong));
    printf("weights %s: at each position, heads attend to heads\n",
           size_str(weights_wrong));
    printf("heads in front: q, k, v = (t.transpose(1, 2) for t in (query, key, value))\n");
    printf("scaled_dot_product_attention(q, k, v).transpose(1, 2)\n%s\n", size_str(right));
    printf("weights %s: in each head, positions attend to positions\n",
           size_str(weights));
    printf("max |heads in front - out| = %.3g   (GQA: attention, each key/value head "
           "repeated)\n", (double)max_abs_diff(right, out));
    printf("max |the notebook's call - out| = %.3g   (the same shape, other numbers)\n",
           (double)max_abs_diff(wrong, out));
}

// --- the budget: what a run of these sizes holds and does (lesson/budget.h) ----------

// Counted from the code above, in units of the query (B, N, H, D), a key
// (B, S, KV, D), the scores (B, H, N, S) and the group-summed scores
// (B, KV, N, S): the einops steps copy the query four times, the checks
// after them (repeat_interleave, MHA, MQA, the first cell) make their own
// copies of the query and keys and three score tensors each, and the first
// cell's wrong layout makes (B, N, H, H) weights.
static Cost gqa_cost(double B, double N, double H, double KV, double D) {
    double query = B * N * H * D, key = B * N * KV * D;
    double scores = B * H * N * N, group_scores = B * KV * N * N;
    return (Cost){
        .bytes = 4 * (29 * query + 2 * query / H + 9 * key + 17 * scores + 6 * group_scores +
                      2 * B * N * H * H),
        .dumped = 4 * (2 * query + 3 * key),
        .multiply_adds = 13 * scores * D + 3 * group_scores * D + 2 * B * N * H * H * D,
        .exps = 6 * scores + 2 * group_scores + B * N * H * H + query + 2 * key,
        .elements = 29 * query + 9 * key + 11 * scores + 4 * group_scores,
    };
}

int main(int argc, char **argv) {
    int batch = 1, seq = 256, heads = 8, kv_heads = 2, head_dim = 64;   // the notebook's sizes
    SizeFlag sizes[] = {
        {"--batch", &batch, "batch size"},
        {"--seq", &seq, "sequence length (queries and keys)"},
        {"--heads", &heads, "query heads"},
        {"--kv-heads", &kv_heads, "key/value heads (must divide --heads)"},
        {"--head-dim", &head_dim, "numbers per head"},
    };
    Lesson lesson = {
        .program = "lesson-8",
        .summary = "gqa: grouped-query attention, the GQA notebook's einops steps as loops",
        .sizes = sizes,
        .n_sizes = 5,
    };
    parse_lesson_args(&lesson, argc, argv);
    check_divides(&lesson, "--kv-heads", kv_heads, "--heads", heads);
    // The largest tensor of each kind the run builds: every other one (key,
    // out, the group sum's, the repeated keys of the notes and of MHA) is one
    // of these sizes or smaller.
    check_fits(&lesson, "scores (batch, heads, seq, seq)", shape4(batch, heads, seq, seq));
    check_fits(&lesson, "query (batch, seq, heads, head_dim)",
               shape4(batch, seq, heads, head_dim));
    check_fits(&lesson, "the first cell's weights (batch, seq, heads, heads)",
               shape4(batch, seq, heads, heads));
    check_budget(&lesson, gqa_cost(batch, seq, heads, kv_heads, head_dim));
    lesson_start(&lesson);

    Cell c = part1_the_notebooks_cells(batch, seq, heads, kv_heads, head_dim, lesson.heatmap);
    trace_pause(true);   // the parts check the claims made about them: not drawn
    part2_head_pairing(heads, kv_heads);
    part3_group_sum(&c.summed, c.query, c.key, c.value, c.out, c.out_group_sum);
    part4_repeat_interleave(c.out, c.output);
    part5_two_ends(c.query, c.key, c.value, c.out, c.output);
    part6_kv_cache_bytes(heads, kv_heads, head_dim);
    part7_first_cell(c.query, c.key, c.value, c.out);
    return lesson_finish(&lesson);
}
