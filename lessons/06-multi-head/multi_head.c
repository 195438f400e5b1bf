// Lesson 6: multi-head - one attention split into `heads` smaller ones.
//
// WHAT THIS ADDS
//   Lesson 5 (SelfAttV4) ran ONE attention over the whole hidden vector.
//   MultiHeadAttention (the Self Attention notebook's "MHSA" cell; the
//   Attention 介绍 notes and the iThome Day 7 post write the same module)
//   cuts each projected vector into `heads` slices of head_dim numbers and
//   runs an independent attention in every slice: each head gets its own
//   scores, its own softmax, its own weighted sum. The trick is all in the
//   shapes: view() to (batch, seq, heads, head_dim), transpose(1, 2) so the
//   head axis sits next to batch, and the batched matmul treats
//   (batch, heads) as one big batch. Afterwards transpose back,
//   contiguous(), view() to (batch, seq, hidden_dim), and o_proj mixes the
//   heads.
//
// THE MATH (per batch b and head h; D = head_dim = hidden_dim / heads)
//   q_state[b, h] = (X W_q^T + b_q)[b, :, h*D:(h+1)*D]       (T, D), same for k, v
//   attention_weight[b, h] = softmax(q_state k_state^T / sqrt(D)
//                                    masked to -1e20 where mask == 0)  (T, T)
//   output_mid[b, h] = attention_weight[b, h] @ v_state[b, h]          (T, D)
//   output = concat_h(output_mid[b, h]) W_o^T + b_o                    (T, C)
//
// THE PYTORCH IT MIRRORS (the notebook's "MHSA" cell; docs/06-multi-head.md has the
// complete script that prints the same numbers)
//   attention_mask = torch.randint(0, 2, (3, 8, 2, 2))
//   x = torch.rand(3, 2, 128)
//   net = MultiHeadAttention(128, 8)
//   net(x, attention_mask).shape
//
// RUN IT
//   make lesson-6                  flags: --batch 3 --seq 2 --dim 128 --heads 8
//   make lesson-6 ARGS="--seed 7 --heads 4 --train --heatmap"
//                                  (--train turns dropout on, --dump DIR, --dot FILE)
//
// WHAT TO LOOK FOR
//   - The notebook's four shape lines, then the cell's result torch.Size([3, 2, 128]).
//   - q_state has the strides (256, 16, 128, 1): transpose copied nothing,
//     it only swapped two strides, and q_state shares Q's memory.
//   - view() on the transposed output_mid fails with PyTorch's message;
//     contiguous() (or reshape, which copies by itself) fixes it.
//   - 8 heads of 16 cost exactly the multiply-adds of one head of 128.
//   - A row whose mask is all zeros gets uniform weights 0.5, 0.5, not NaN.
//   - The notebook's commented-out mask is a padding mask: expand() gives it
//     stride 0 along heads and queries, and padding keys get exactly 0.
//   - The iThome Day 7 post's MyMultiHeadAttention (view(B, L, -1, D),
//     `* scaling`) on these weights is this module without a mask.
//
// THE PARTS (each a function below, called from main in this order)
//   1. the notebook's cell: its four shape lines and net(x, attention_mask).shape
//      (--heatmap draws the weights)
//   2. the numbers of batch 0 (--seed)
//   3. what view and transpose do to memory (--heads)
//   4. why view() needs contiguous() first, and reshape() does not (--heads 1 lets view work)
//   5. head_dim, the scale, and what the heads cost (--heads, --dim)
//   6. a query whose mask row is all zeros (--seq)
//   7. the notebook's commented-out mask: padding, one row per sentence (--batch)
//   8. the iThome Day 7 post's MyMultiHeadAttention (--heads)
//
// Size letters: B batch, T sequence length (query positions; S = T key
// positions), C hidden_dim, H heads, D head_dim = C / H.
// Index letters: b batch, h head, t query position, s key position, d inside a head.

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "attention.h"

// --- the module: the Self Attention notebook's MultiHeadAttention ------------

typedef struct {
    int nums_head;        // H
    int head_dim;         // D = hidden_dim / nums_head
    int hidden_dim;       // C
    Linear q_proj;        // (C -> C): all H query projections side by side
    Linear k_proj;        // (C -> C)
    Linear v_proj;        // (C -> C)
    double att_dropout;   // nn.Dropout(0.1): its probability
    Linear o_proj;        // (C -> C): mixes the heads back together
    bool training;        // net.train() / net.eval(); PyTorch modules start in train mode
} MultiHeadAttention;

// What the forward computed, kept so main() and the tests can look inside
// (in PyTorch one would need hooks for this).
typedef struct {
    const Tensor *Q, *K, *V;                      // (B, T, C)
    const Tensor *q_state, *k_state, *v_state;    // (B, H, T, D)
    const Tensor *attention_weight;               // (B, H, T, S) after softmax, before dropout
    const Tensor *output_mid;                     // (B, H, T, D) before the transpose back
} MultiHeadAttentionSteps;

// __init__: the four Linear layers draw their weights in this order, as
// PyTorch registers them (att_dropout draws nothing at init).
static MultiHeadAttention MultiHeadAttention_init(int hidden_dim, int nums_head) {
    MultiHeadAttention self;
    self.nums_head = nums_head;
    // Each head sees head_dim of the hidden_dim numbers. The caller has
    // checked that nums_head divides hidden_dim (check_divides in main):
    // the notebook's `//` would silently drop the remainder and then fail
    // in view().
    self.head_dim = hidden_dim / nums_head;
    self.hidden_dim = hidden_dim;
    // One (C x C) Linear is H separate (C -> D) projections stacked: rows
    // h*D .. h*D+D-1 of q_proj.weight make head h's query. So the heads
    // cost no extra parameters.
    self.q_proj = linear_init("q_proj", hidden_dim, hidden_dim, true);
    self.k_proj = linear_init("k_proj", hidden_dim, hidden_dim, true);
    self.v_proj = linear_init("v_proj", hidden_dim, hidden_dim, true);
    // GPT-2 and BERT have this dropout; Llama does not.
    self.att_dropout = 0.1;
    self.o_proj = linear_init("o_proj", hidden_dim, hidden_dim, true);
    self.training = true;   // like a fresh nn.Module; main() calls "eval" unless --train
    return self;
}

// x (B, T, C) -> (B, H, T, D), D = C / H, as a view: x.view(B, T, H, D).transpose(1, 2),
// the same memory read with other strides, nothing copied. Not static: make
// exercise-6 links the reader's own in its place (exercises/06-multi-head.c).
const Tensor *split_heads(const Tensor *x, int heads) {
    Shape per_head = shape4(size(x, 0), size(x, 1), heads, size(x, 2) / heads);
    return transpose(view(x, per_head), 1, 2);                               // (B, H, T, D)
}

// forward(X, attention_mask): X (B, T, C), attention_mask (B, H, T, S) or
// NULL; returns output (B, T, C). `steps` may be NULL. The notebook's
// forward prints four shapes as it goes; this one keeps those tensors in
// `steps`, and main() prints them.
static Tensor *MultiHeadAttention_forward(MultiHeadAttentionSteps *steps,
                                          const MultiHeadAttention *self, const Tensor *X,
                                          const Tensor *attention_mask) {
    // X shape is (batch, seq, hidden_dim). The notebook's comment says the
    // mask is (batch, seq); the mask it passes is (batch, heads, seq, seq),
    // one (seq x seq) pattern per head, and that is what masked_fill needs
    // (or anything that broadcasts to it, e.g. a padding mask (batch, 1, 1, seq)).
    int batch_size = size(X, 0);
    int seq_len = size(X, 1);

    const Tensor *Q = named("Q", linear(&self->q_proj, X));                  // (B, T, C)
    const Tensor *K = named("K", linear(&self->k_proj, X));                  // (B, T, C)
    // The Attention 介绍 notes' copy of this class writes `V = self.k_proj(X)`: its values
    // are its keys and v_proj is never used. V comes from v_proj.
    const Tensor *V = named("V", linear(&self->v_proj, X));                  // (B, T, C)

    // (batch, seq, hidden_dim) -> (batch, seq, heads, head_dim): view only
    // re-reads the same memory with one more axis; element [b, t, h, d] is
    // Q[b, t, h*D + d]. Then transpose(1, 2) -> (batch, heads, seq, head_dim)
    // swaps two strides, again copying nothing, so that the matmuls below see
    // a batch of (B*H) independent (T x D) matrices.
    // (split_heads, below the class, does the two.)
    const Tensor *q_state = named("q_state", split_heads(Q, self->nums_head));    // (B, H, T, D)
    const Tensor *k_state = named("k_state", split_heads(K, self->nums_head));    // (B, H, T, D)
    const Tensor *v_state = named("v_state", split_heads(V, self->nums_head));    // (B, H, T, D)

    // Each score is a dot product of head_dim numbers, not hidden_dim: its
    // spread grows like sqrt(head_dim), so that is what we divide by (the
    // notebook's comment insists on it). Dividing by sqrt(hidden_dim) would
    // shrink every score sqrt(H) times too much and flatten the softmax.
    // attention_weight[b, h, t, s] = q_state[b, h, t, :] . k_state[b, h, s, :] / sqrt(D)
    const Tensor *attention_weight =
        div_scalar(matmul(q_state, transpose(k_state, -1, -2)),
                   (float)sqrt((double)self->head_dim));                     // (B, H, T, S)
    if (attention_mask != NULL) {
        // A huge negative score gets weight exp(-1e20 - max) = exactly 0.
        // -1e20 rather than -inf: a row whose mask is all zeros then holds
        // equal numbers and softmax makes it uniform, where -inf would give
        // 0/0 = NaN (main() shows such a row).
        attention_weight = masked_fill(attention_weight, eq_scalar(attention_mask, 0),
                                       -1e20f);                              // (B, H, T, S)
    }

    // The fourth dim (3, the key axis s): each query's weights sum to 1.
    // (The iThome Day 7 post's step-by-step copy writes `F.softmax(aattn_scores, ...)`
    // here: a typo for attn_scores, a NameError, so its code never ran.)
    attention_weight = named("attention_weight", softmax(attention_weight, 3));  // (B, H, T, S)

    // Dropout hits the weights, not the output: in training a query
    // randomly ignores some keys. Identity in eval mode.
    const Tensor *dropped = dropout(attention_weight, self->att_dropout,
                                    self->training);                         // (B, H, T, S)
    // output_mid[b, h, t, :] = sum_s dropped[b, h, t, s] * v_state[b, h, s, :]
    const Tensor *output_mid = named("output_mid", matmul(dropped, v_state));  // (B, H, T, D)
    if (steps != NULL) {
        *steps = (MultiHeadAttentionSteps){Q, K, V, q_state, k_state, v_state,
                                           attention_weight, output_mid};
    }

    // Back to (batch, seq, heads, head_dim), then glue the heads into one
    // vector of hidden_dim. transpose makes a non-contiguous view (the
    // heads of one position are T*D floats apart), and view() can only
    // re-read memory that is already in the order it wants, so
    // contiguous() copies into that order first. (reshape() would do the
    // copy by itself; main() shows both.)
    output_mid = contiguous(transpose(output_mid, 1, 2));                    // (B, T, H, D)
    Tensor *output = linear(&self->o_proj,
                            view(output_mid, shape3(batch_size, seq_len, -1)));  // (B, T, C)
    named("output", output);
    return output;
}

// --- part 1: the notebook's cell ------------------------------------------------

// What part 1 made, for the parts after it.
typedef struct {
    const Tensor *attention_mask;     // (B, H, T, S) 0 or 1
    const Tensor *x;                  // (B, T, C)
    MultiHeadAttention net;
    MultiHeadAttentionSteps steps;    // of net(x, attention_mask)
    const Tensor *output;             // (B, T, C)
} Cell;

// The notebook's draws, in its order: mask, input, then the weights; then
// net(x, attention_mask). Its output: the four shapes its forward prints
// (the fourth, output_mid.shape, without a label), then the cell's value,
// net(x, attention_mask).shape. masked_fill and softmax keep the shape, so
// attention_weight prints as the notebook printed it, before them.
static Cell part1_the_notebooks_cell(int batch, int seq, int dim, int heads, bool train,
                                     bool heatmap) {
    Cell cell;
    cell.attention_mask =
        named("attention_mask", randint(0, 2, shape4(batch, heads, seq, seq)));  // (B, H, T, S)
    cell.x = named("x", rand_tensor(shape3(batch, seq, dim)));               // (B, T, C)
    cell.net = MultiHeadAttention_init(dim, heads);
    // The notebook never calls net.eval(), so its dropout was on; we run
    // in eval mode unless --train, as every lesson with dropout does.
    cell.net.training = train;
    cell.output = MultiHeadAttention_forward(&cell.steps, &cell.net, cell.x,
                                             cell.attention_mask);            // (B, T, C)
    // What follows prints and looks at what the forward made: keep it out
    // of the --dot diagram and the dumps.
    bool was_paused = trace_pause(true);
    const MultiHeadAttentionSteps *steps = &cell.steps;
    printf("Q: %s\n", size_str(steps->Q));
    printf("q_state: %s\n", size_str(steps->q_state));
    printf("attention_weight: %s\n", size_str(steps->attention_weight));
    printf("%s\n", size_str(steps->output_mid));
    printf("%s\n", size_str(cell.output));
    if (heatmap) {
        print_heatmap("attention_weight", steps->attention_weight);
    }
    trace_pause(was_paused);
    return cell;
}

// --- part 2: the numbers of batch 0 (--seed) ---------------------------------------

// t[i]: the i-th slice along dim 0, a view, as PyTorch's indexing gives it.
static const Tensor *select0(const Tensor *t, int i) {
    Shape rest = {t->shape.ndim - 1, {0}};
    for (int d = 1; d < t->shape.ndim; d++) {
        rest.size[d - 1] = t->shape.size[d];
    }
    return view(narrow(t, 0, i, 1), rest);
}

// t[b, h, t] of a (B, H, T, S) tensor: one row of S numbers.
static const Tensor *row_of(const Tensor *t, int b, int h, int q) {
    return select0(select0(select0(t, b), h), q);
}

static const char *python_bool(bool value) {
    return value ? "True" : "False";
}

// t.data_ptr() == u.data_ptr(): do the two start at the same float?
static bool same_data_ptr(const Tensor *t, const Tensor *u) {
    return t->data + t->offset == u->data + u->offset;
}

// The numbers of batch element 0, to compare with the PyTorch in the doc.
static void part2_numbers(const Cell *cell) {
    const Tensor *attention_mask = cell->attention_mask, *output = cell->output;
    const MultiHeadAttentionSteps *steps = &cell->steps;
    printf("\n-- part 2: the numbers of batch 0, as docs/06-multi-head.md prints them (--seed) "
           "--\n");
    printf("attention_mask[0]:\n%s\n", tensor_str(select0(attention_mask, 0), NULL));
    printf("attention_weight[0]:\n%s\n",
           tensor_str(select0(steps->attention_weight, 0), "grad_fn=<SelectBackward0>"));
    int shown = size(output, 2) < 8 ? size(output, 2) : 8;
    printf("output[0, :, :8]:\n%s\n",
           tensor_str(narrow(select0(output, 0), 1, 0, shown), "grad_fn=<SliceBackward0>"));
}

// --- part 3: what view and transpose do to memory (--heads) -------------------------

// What view and transpose do: same floats, new strides.
static void part3_transpose_memory(const Cell *cell) {
    const MultiHeadAttention *net = &cell->net;
    const MultiHeadAttentionSteps *steps = &cell->steps;
    const Tensor *Q = steps->Q;                                              // (B, T, C)
    const Tensor *q_state = steps->q_state;                                  // (B, H, T, D)
    int B = size(Q, 0), T = size(Q, 1), H = net->nums_head, D = net->head_dim;
    const Tensor *split = view(Q, shape4(B, T, H, D));                       // (B, T, H, D)
    printf("\n-- part 3: what view and transpose do to memory (--heads changes the strides) --\n");
    printf("Q.stride(): %s\n", stride_str(Q));
    printf("Q.view(%d, %d, %d, %d).stride(): %s\n", B, T, H, D, stride_str(split));
    printf("q_state.stride(): %s\n", stride_str(q_state));
    printf("q_state.is_contiguous(): %s\n", python_bool(is_contiguous(q_state)));
    printf("q_state.data_ptr() == Q.data_ptr(): %s\n", python_bool(same_data_ptr(q_state, Q)));
    // A stride says how many floats one step along that axis jumps. After
    // the transpose, stepping along the sequence (dim 2) jumps a whole
    // position (C floats) while stepping along the heads (dim 1) jumps only
    // D: the order in memory is still Q's (b, t, h, d).
    printf("one step along q_state's seq axis jumps %d floats, along its head axis %d:\n"
           "the memory is still in Q's order (batch, seq, heads, head_dim); only the "
           "strides changed.\n", q_state->stride[2], q_state->stride[1]);
    if (H > 1) {
        printf("q_state[0, 1, 0, 0] = %.4f is the same float as Q[0, 0, %d] = %.4f\n",
               *at4(q_state, 0, 1, 0, 0), D, *at3(Q, 0, 0, D));
    }
}

// --- part 4: why view() needs contiguous() first, and reshape() does not (--heads) -----

// PyTorch's error text, after two spaces, on lines of at most 100 columns
// (broken between words, as Python's textwrap.fill breaks it).
static void print_wrapped(const char *text) {
    int column = 0;
    while (*text != '\0') {
        int word = (int)strcspn(text, " ");
        if (column > 0 && column + 1 + word > 100) {
            printf("\n");
            column = 0;
        }
        column += column == 0 ? printf("  %.*s", word, text) : printf(" %.*s", word, text);
        text += word;
        text += *text == ' ';
    }
    printf("\n");
}

// view() needs memory in the order it reads; reshape() copies when it must.
static void part4_view_and_reshape(const Cell *cell) {
    const Tensor *output_mid = cell->steps.output_mid;                       // (B, H, T, D)
    int B = size(output_mid, 0), H = size(output_mid, 1), T = size(output_mid, 2);
    const Tensor *swapped = transpose(output_mid, 1, 2);                     // (B, T, H, D)
    printf("\n-- part 4: why view() needs contiguous() first, and reshape() does not (--heads) "
           "--\n");
    printf("output_mid.stride(): %s\n", stride_str(output_mid));
    printf("output_mid.transpose(1, 2).stride(): %s\n", stride_str(swapped));
    printf("output_mid.transpose(1, 2).is_contiguous(): %s\n",
           python_bool(is_contiguous(swapped)));
    // view(B, T, -1) must merge the head axis and the head_dim axis into
    // one axis of stride 1. That is possible only if one step along the
    // heads jumps exactly D floats; after the transpose it jumps T*D. For
    // this (B, T, H, D) tensor that fails exactly when it is not
    // contiguous (H > 1 and T > 1), so is_contiguous() tells us what
    // PyTorch's view() would do. (The helper's view() would stop the
    // program with this message, as PyTorch raises it; the tests check it.)
    if (!is_contiguous(swapped)) {
        printf("output_mid.transpose(1, 2).view(%d, %d, -1) raises RuntimeError:\n", B, T);
        print_wrapped("view size is not compatible with input tensor's size and stride (at "
                      "least one dimension spans across two contiguous subspaces). Use "
                      ".reshape(...) instead.");
    } else {
        printf("output_mid.transpose(1, 2).view(%d, %d, -1) works: %s\n(the transpose only "
               "moved an axis of size 1, so the memory order did not change)\n", B, T,
               size_str(view(swapped, shape3(B, T, -1))));
    }
    const Tensor *copied = contiguous(swapped);                              // (B, T, H, D)
    const Tensor *merged = view(copied, shape3(B, T, -1));                   // (B, T, C)
    printf("output_mid.transpose(1, 2).contiguous().stride(): %s\n", stride_str(copied));
    printf("output_mid.transpose(1, 2).contiguous().view(%d, %d, -1).stride(): %s\n", B, T,
           stride_str(merged));
    const Tensor *reshaped = reshape(swapped, shape3(B, T, -1));             // (B, T, C)
    printf("output_mid.transpose(1, 2).reshape(%d, %d, -1).data_ptr() == "
           "output_mid.data_ptr(): %s\n", B, T, python_bool(same_data_ptr(reshaped, output_mid)));
    printf("torch.equal(output_mid.transpose(1, 2).reshape(%d, %d, -1),\n"
           "            output_mid.transpose(1, 2).contiguous().view(%d, %d, -1)): %s\n", B, T, B,
           T, python_bool(max_abs_diff(reshaped, merged) == 0.0f));
    // Without the transpose the memory is already in order: reshape is a view.
    const Tensor *in_order = reshape(output_mid, shape3(B, H, -1));          // (B, H, T*D)
    printf("output_mid.reshape(%d, %d, -1).data_ptr() == output_mid.data_ptr(): %s\n", B, H,
           python_bool(same_data_ptr(in_order, output_mid)));
    printf("reshape() is view() when the memory allows it and contiguous().view() when not.\n");
}

// --- part 5: head_dim, the scale, and what the heads cost (--heads, --dim) ------------

// head_dim, the scaling, and what the heads cost. The counts are products
// of the sizes, so they are worked out in 64 bits.
static void part5_head_cost(const Cell *cell) {
    const MultiHeadAttention *net = &cell->net;
    long long B = size(cell->x, 0), T = size(cell->x, 1), S = T, H = net->nums_head;
    long long D = net->head_dim, C = net->hidden_dim;
    printf("\n-- part 5: head_dim, the scale, and what the heads cost (--heads and --dim change "
           "it) --\n");
    printf("head_dim = hidden_dim / heads = %lld / %lld = %lld\n", C, H, D);
    printf("scores are divided by sqrt(head_dim) = %.4f, not sqrt(hidden_dim) = %.4f:\n"
           "  each is a dot product of %lld numbers\n", sqrt((double)D), sqrt((double)C), D);
    // Every head multiplies (T x D) by (D x S): H of them is T*S*H*D = T*S*C,
    // the same as one head of C. The heads split the work, not multiply it.
    printf("multiply-adds of q_state @ k_state^T: batch*heads*seq*seq*head_dim = "
           "%lld*%lld*%lld*%lld*%lld = %lld\n", B, H, T, S, D, B * H * T * S * D);
    printf("  the same for one head of %lld:      batch*1*seq*seq*hidden_dim = "
           "%lld*1*%lld*%lld*%lld = %lld\n", C, B, T, S, C, B * T * S * C);
    printf("multiply-adds of attention_weight @ v_state: %lld (one head: %lld)\n",
           B * H * T * S * D, B * T * S * C);
    printf("multiply-adds of q/k/v/o_proj: 4*batch*seq*hidden_dim*hidden_dim = %lld,\n"
           "  parameters 4*(hidden_dim*hidden_dim + hidden_dim) = %lld, whatever the heads\n",
           4 * B * T * C * C, 4 * (C * C + C));
    printf("what grows: softmax runs over batch*heads*seq = %lld rows instead of %lld,\n"
           "  and attention_weight holds %lld numbers instead of %lld\n", B * H * T, B * T,
           B * H * T * S, B * T * S);
}

// --- part 6: a query whose mask row is all zeros (--seq) ------------------------------

// The notebook's random mask often zeroes a whole row: show one.
static void part6_fully_masked_row(const Cell *cell) {
    const Tensor *attention_mask = cell->attention_mask;
    const MultiHeadAttentionSteps *steps = &cell->steps;
    int B = size(attention_mask, 0), H = size(attention_mask, 1);
    int T = size(attention_mask, 2), S = size(attention_mask, 3);
    printf("\n-- part 6: a query whose mask row is all zeros (--seq makes them rarer) --\n");
    int found_b = -1, found_h = -1, found_t = -1;
    long long count = 0;
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            for (int t = 0; t < T; t++) {
                bool all_zero = true;
                for (int s = 0; s < S; s++) {
                    all_zero = all_zero && *at4(attention_mask, b, h, t, s) == 0.0f;
                }
                if (all_zero && count == 0) {   // remember the first one
                    found_b = b;
                    found_h = h;
                    found_t = t;
                }
                if (all_zero) {
                    count += 1;
                }
            }
        }
    }
    // Each of the S entries is 0 with probability 1/2, so a row is all
    // zeros with probability 1/2^S: often for the notebook's S = 2.
    printf("%lld of the %lld rows of attention_mask are all zeros\n", count,
           (long long)numel(attention_mask) / S);
    if (count == 0) {
        printf("no row of attention_mask is all zeros with this seed\n");
        return;
    }
    int b = found_b, h = found_h, t = found_t;
    printf("attention_mask[%d, %d, %d]: %s\n", b, h, t,
           tensor_str(row_of(attention_mask, b, h, t), NULL));
    // Every score of the row was replaced by the same -1e20, so softmax
    // sees S equal numbers: exp(0) / S each. The query attends to all keys
    // equally, including the ones the mask meant to hide.
    printf("attention_weight[%d, %d, %d]: %s\n", b, h, t,
           tensor_str(row_of(steps->attention_weight, b, h, t), "grad_fn=<SelectBackward0>"));
    // With -inf the row would be exp(-inf - (-inf)) = exp(nan): NaN
    // everywhere, and the NaN would spread through output_mid and o_proj.
    const Tensor *inf_row = softmax(full(shape1(S), -INFINITY), -1);         // (S)
    printf("with float(\"-inf\") instead of -1e20 the row would be %s\n",
           tensor_str(inf_row, NULL));
}

// --- part 7: the notebook's commented-out mask: padding (--batch) --------------------

// Above `attention_mask = torch.randint(0, 2, (3, 8, 2, 2))` the cell has a
// mask commented out:
//     attention_mask = (torch.tensor([[0, 1], [0, 0], [1, 0]])
//                       .unsqueeze(1).unsqueeze(2).expand(3, 8, 2, 2))
// one row per sentence, 1 for a real token and 0 for padding: a PADDING
// mask, the same for every head and every query, where the random mask has
// a pattern of its own for each. For other sizes the rows repeat the three:
// sentence b with b % 3 == 0 pads its first token (padding on the left),
// b % 3 == 1 is all padding, b % 3 == 2 pads its last token (on the right).
static Tensor *commented_out_padding(int batch, int seq) {
    Tensor *padding = ones(shape2(batch, seq));                              // (B, S)
    padding->dtype = DTYPE_INT64;   // torch.tensor([[0, 1], ...]) is int64
    for (int b = 0; b < batch; b++) {
        for (int s = 0; s < seq; s++) {
            bool pad = b % 3 == 1 || (b % 3 == 0 && s == 0) || (b % 3 == 2 && s == seq - 1);
            *at2(padding, b, s) = pad ? 0.0f : 1.0f;
        }
    }
    return padding;
}

// The commented-out mask, run: unsqueeze twice to (B, 1, 1, S), expand to
// (B, H, T, S) without copying (stride 0 along heads and queries), then
// net in eval mode (so that dropout does not hide the pattern).
static void part7_padding_mask(const Cell *cell) {
    const MultiHeadAttention *net = &cell->net;
    const Tensor *x = cell->x;
    int B = size(x, 0), T = size(x, 1), S = T, H = net->nums_head;
    const Tensor *padding = commented_out_padding(B, S);                     // (B, S)
    const Tensor *rows = unsqueeze(unsqueeze(padding, 1), 2);                // (B, 1, 1, S)
    const Tensor *attention_mask = expand(rows, shape4(B, H, T, S));         // (B, H, T, S)
    MultiHeadAttention net_eval = *net;
    net_eval.training = false;
    MultiHeadAttentionSteps steps;
    MultiHeadAttention_forward(&steps, &net_eval, x, attention_mask);
    const Tensor *head_0 = narrow(steps.attention_weight, 1, 0, 1);          // (B, 1, T, S)
    const Tensor *weights = view(contiguous(head_0), shape3(B, T, S));       // (B, T, S)

    printf("\n-- part 7: the notebook's commented-out mask: padding, one row per sentence "
           "(--batch) --\n");
    printf("padding (1 = a real token, 0 = padding):\n%s\n", tensor_str(padding, NULL));
    printf("padding.unsqueeze(1).unsqueeze(2): %s, stride %s\n", size_str(rows),
           stride_str(rows));
    printf("attention_mask = padding.unsqueeze(1).unsqueeze(2).expand(%d, %d, %d, %d): "
           "stride %s\n", B, H, T, S, stride_str(attention_mask));
    if (H > 1 || T > 1) {
        printf("(stride 0: every head and every query reads its sentence's one row, nothing "
               "copied)\n");
    }
    printf("net.eval(); attention_weight[:, 0], head 0:\n%s\n",
           tensor_str(weights, "grad_fn=<SelectBackward0>"));
    printf("padding keys get exactly 0 wherever their sentence has a real token; in a sentence\n"
           "that is all padding every key gets -1e20: uniform weights, 1/%d each, not nan\n", S);
}

// --- part 8: the iThome Day 7 post's MyMultiHeadAttention (--heads) ------------------

// The post's step-3 class: the same module under other names (linear_q for
// q_proj, ..., linear_o for o_proj), written in its own style:
// view(B, L, -1, head_dim) lets PyTorch work out the number of heads, and
// the scale is a product, `* self.scaling` with scaling = head_dim ** -0.5,
// where the notebook divides by math.sqrt(head_dim). It takes no mask and
// has no dropout. Here it gets net's four Linear layers (in PyTorch:
// my.linear_q.load_state_dict(net.q_proj.state_dict()), and so on).
typedef struct {
    Linear linear_q, linear_k, linear_v;   // (D -> D) each: D is the post's hidden_size
    Linear linear_o;                       // (D -> D)
    int head_dim;                          // hidden_size // n_head
    float scaling;                         // head_dim ** -0.5
} MyMultiHeadAttention;

static MyMultiHeadAttention MyMultiHeadAttention_from(const MultiHeadAttention *net) {
    MyMultiHeadAttention self = {net->q_proj, net->k_proj, net->v_proj, net->o_proj,
                                 net->head_dim, 0.0f};
    // Python's float (a double), rounded to float when it multiplies the
    // float32 scores, as PyTorch does.
    self.scaling = (float)pow((double)self.head_dim, -0.5);
    return self;
}

// forward(x): x (B, L, D); returns attn_output (B, L, D). The post's step 6
// offers two lines, "可以自行選用其中一個" (pick either one):
//     attn_output = attn_output.transpose(1, 2).contiguous().view(B, L, -1)
//     # attn_output = attn_output.transpose(1, 2).reshape(B, L, -1)
// `use_reshape` picks the second.
static Tensor *MyMultiHeadAttention_forward(const MyMultiHeadAttention *self, const Tensor *x,
                                            bool use_reshape) {
    int B = size(x, 0), L = size(x, 1);
    const Tensor *query = linear(&self->linear_q, x);                        // (B, L, D)
    const Tensor *key = linear(&self->linear_k, x);                          // (B, L, D)
    const Tensor *value = linear(&self->linear_v, x);                        // (B, L, D)

    // (B, L, D) -> (B, L, n_head, head_dim) -> (B, n_head, L, head_dim);
    // -1 is worked out as D / head_dim = n_head.
    Shape split = shape4(B, L, -1, self->head_dim);
    query = transpose(view(query, split), 1, 2);                             // (B, H, L, hd)
    key = transpose(view(key, split), 1, 2);                                 // (B, H, L, hd)
    value = transpose(view(value, split), 1, 2);                             // (B, H, L, hd)

    // (B, n_head, L, head_dim) dot (B, n_head, head_dim, L) = (B, n_head, L, L)
    const Tensor *attn_scores =
        mul_scalar(matmul(query, transpose(key, 2, 3)), self->scaling);      // (B, H, L, L)
    // The post writes F.softmax(aattn_scores, dim = -1): a NameError, so its
    // code never ran. attn_scores is meant.
    const Tensor *attn_weights = softmax(attn_scores, -1);                   // (B, H, L, L)

    // (B, n_head, L, L) dot (B, n_head, L, head_dim) = (B, n_head, L, head_dim)
    const Tensor *attn_output = matmul(attn_weights, value);                 // (B, H, L, hd)
    // (B, n_head, L, head_dim) -> (B, L, n_head, head_dim) -> (B, L, D)
    if (use_reshape) {
        attn_output = reshape(transpose(attn_output, 1, 2), shape3(B, L, -1));     // (B, L, D)
    } else {
        attn_output = view(contiguous(transpose(attn_output, 1, 2)), shape3(B, L, -1));
    }
    return linear(&self->linear_o, attn_output);                             // (B, L, D)
}

// torch.allclose(a, b, atol=1e-6): |a - b| <= 1e-6 + 1e-5 * |b| everywhere. (The
// default atol, 1e-8, is below the rounding of an output near 0 that was
// summed from numbers near 1: both here and in PyTorch it can say False for
// two results one rounding apart.)
static bool allclose(const Tensor *a, const Tensor *b) {
    int index[MAX_DIMS] = {0};
    for (long i = 0; i < numel(a); i++) {
        float x = *at(a, index), y = *at(b, index);
        if (!(fabsf(x - y) <= 1e-6f + 1e-5f * fabsf(y))) {
            return false;
        }
        next_index(index, a->shape.size, a->shape.ndim);
    }
    return true;
}

// The post's class on net's weights and x, against net without a mask.
// * scaling and / sqrt(head_dim) are the same float operation only when
// head_dim ** -0.5 is exact, a power of 2 (head_dim 1, 4, 16, 64, ...);
// otherwise they may round the last bit apart, and the outputs agree to
// rounding rather than to the bit.
static void part8_post_class(const Cell *cell) {
    const MultiHeadAttention *net = &cell->net;
    const Tensor *x = cell->x;
    int B = size(x, 0), L = size(x, 1), D = net->head_dim;
    MyMultiHeadAttention my = MyMultiHeadAttention_from(net);
    MultiHeadAttention net_eval = *net;
    net_eval.training = false;
    const Tensor *viewed = MyMultiHeadAttention_forward(&my, x, false);      // (B, L, D)
    const Tensor *reshaped = MyMultiHeadAttention_forward(&my, x, true);     // (B, L, D)
    const Tensor *output = MultiHeadAttention_forward(NULL, &net_eval, x, NULL);   // (B, L, D)
    Shape split = shape4(B, L, -1, D);
    const Tensor *query = transpose(view(linear(&my.linear_q, x), split), 1, 2);

    printf("\n-- part 8: the iThome Day 7 post's MyMultiHeadAttention, its step 3 (--heads "
           "changes it) --\n");
    printf("(the post's F.softmax(aattn_scores, ...) is a NameError: read as attn_scores)\n");
    printf("my = MyMultiHeadAttention(%d, %d), with net's q/k/v/o_proj as its "
           "linear_q/k/v/o\n", net->hidden_dim, net->nums_head);
    printf("query.view(%d, %d, -1, %d).transpose(1, 2): %s\n", B, L, D, size_str(query));
    printf("scaling = head_dim ** -0.5 = %.4f: the scores * %.4f, where net divides them by "
           "%.4f\n", (double)my.scaling, (double)my.scaling, sqrt((double)D));
    printf("torch.equal(my(x) with .contiguous().view(%d, %d, -1), my(x) with "
           ".reshape(%d, %d, -1)): %s\n", B, L, B, L,
           python_bool(max_abs_diff(viewed, reshaped) == 0.0f));
    bool exact = false;   // head_dim a power of 4: 1, 4, 16, 64, ...
    for (long power = 1; power <= D; power *= 4) {
        exact = exact || power == D;
    }
    if (exact) {
        printf("torch.equal(my(x), net.eval()(x)): %s\n  (no mask; %.4f is a power of 2, so "
               "* scaling and / sqrt(head_dim) round alike)\n",
               python_bool(max_abs_diff(viewed, output) == 0.0f), (double)my.scaling);
    } else {
        printf("torch.allclose(my(x), net.eval()(x), atol=1e-6): %s\n  (no mask; %.4f is not a "
               "power of 2, so * scaling and / sqrt(head_dim) may round\n  the last bit apart)\n",
               python_bool(allclose(viewed, output)), (double)my.scaling);
    }
}

// --- the budget: what a run of these sizes holds and does (lesson/budget.h) ----------

// Counted from the code above: the mask (B, H, T, T), x and the four
// layers; five forwards (the notebook's, the padding part's, the post's
// class twice, one more for the comparison), each making (B, T, C) tensors
// (Q, K, V, output_mid, its copy, the output) and three to five (B, H, T, T)
// (scores, scaled, mask test, filled, weights; the dropped weights in train
// mode); the copies the view/reshape part makes. --dump writes the int64
// mask at 8 bytes.
static Cost multi_head_cost(double B, double T, double C, double H, bool train) {
    double BHTT = B * H * T * T, BTC = B * T * C;
    return (Cost){
        .bytes = 4 * (34 * BTC + (20 + train) * BHTT + B * T * T + B * T + 4 * C * C + 4 * C),
        .dumped = 4 * (9 * BTC + BHTT + 4 * C * C + 4 * C) + 8 * BHTT,
        .multiply_adds = 21 * BTC * C + 10 * BHTT * (C / H),
        .exps = 5 * BHTT,
        .elements = 34 * BTC + (21 + 2 * train) * BHTT + 4 * C * C,
    };
}

int main(int argc, char **argv) {
    int batch = 3, seq = 2, dim = 128, heads = 8;   // the notebook's sizes
    bool train = false;
    SizeFlag sizes[] = {
        {"--batch", &batch, "batch size"},
        {"--seq", &seq, "sequence length"},
        {"--dim", &dim, "hidden dimension (hidden_dim)"},
        {"--heads", &heads, "number of heads (nums_head); must divide --dim"},
    };
    SwitchFlag switches[] = {
        {"--train", &train, "train mode: dropout 0.1 on the attention weights"},
    };
    Lesson lesson = {
        .program = "lesson-6",
        .summary = "multi-head: MultiHeadAttention of the Self Attention notebook, "
                   "view/transpose into heads",
        .sizes = sizes,
        .n_sizes = 4,
        .switches = switches,
        .n_switches = 1,
    };
    parse_lesson_args(&lesson, argc, argv);
    check_divides(&lesson, "--heads", heads, "--dim", dim);
    // The largest tensor of each kind the run builds; every other one
    // (Q, output_mid, the copies in the asides) is one of these sizes.
    check_fits(&lesson, "attention_weight (batch, heads, seq, seq)",
               shape4(batch, heads, seq, seq));
    check_fits(&lesson, "x (batch, seq, dim)", shape3(batch, seq, dim));
    check_fits(&lesson, "q_proj.weight (dim, dim)", shape2(dim, dim));
    check_budget(&lesson, multi_head_cost(batch, seq, dim, heads, train));
    lesson_start(&lesson);

    Cell cell = part1_the_notebooks_cell(batch, seq, dim, heads, train, lesson.heatmap);
    trace_pause(true);   // the parts look at what the forward made: not the dataflow
    part2_numbers(&cell);
    part3_transpose_memory(&cell);
    part4_view_and_reshape(&cell);
    part5_head_cost(&cell);
    part6_fully_masked_row(&cell);
    part7_padding_mask(&cell);
    part8_post_class(&cell);
    return lesson_finish(&lesson);
}
