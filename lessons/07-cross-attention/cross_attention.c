// Lesson 7: cross-attention - queries from one sequence, keys and values
// from another.
//
// WHAT THIS ADDS
//   Lesson 6's MultiHeadAttention made Q, K and V from the same X: every
//   token of a sequence looked at the tokens of that same sequence.
//   CrossAttention (the Self Attention notebook) takes the queries from one sequence
//   (seq_q = 4 tokens) and the keys and values from another (seq_k = 6),
//   e.g. a text decoder looking at image features: that is BLIP's decoder
//   in Chen Ming's post, where the prompt "a picture of" asks and the Vision
//   Transformer's features answer. Nothing in the arithmetic changes; only
//   the two lengths may now differ: the weights are (seq_q x seq_k) per
//   head, and the output has one vector per QUERY.
//
// THE MATH (per batch b and head h; D = head_dim = hidden_dim / heads)
//   q_state[b, h] = (Q W_q^T + b_q)[b, :, h*D:(h+1)*D]     (T, D)  from the query sequence
//   k_state[b, h] = (K W_k^T + b_k)[b, :, h*D:(h+1)*D]     (S, D)  from the other sequence
//   v_state[b, h] = (V W_v^T + b_v)[b, :, h*D:(h+1)*D]     (S, D)
//   attention_weight[b, h] = softmax(q_state k_state^T / sqrt(D), masked)   (T, S)
//   output = concat_h(attention_weight[b, h] @ v_state[b, h]) W_o^T + b_o   (T, C)
//
// THE PYTORCH IT MIRRORS (the notebook's "Cross Attention" cell; docs/07-cross-attention.md
// has the complete script that prints the same numbers)
//   Q = torch.rand(3, 4, 128); K = torch.rand(3, 6, 128); V = torch.rand(3, 6, 128)
//   attention_mask = torch.randint(0, 2, (3, 8, 4, 6))
//   cross_attention = CrossAttention(hidden_dim=128, nums_head=8)
//   output = cross_attention(Q, K, V, attention_mask)
//
// RUN IT
//   make lesson-7             flags: --batch 3 --seq-q 4 --seq-k 6 --dim 128 --heads 8
//   make lesson-7 ARGS="--seq-q 6 --seq-k 2 --heatmap"
//                             (--train turns dropout on, --dump DIR, --dot FILE)
//
// WHAT TO LOOK FOR
//   - The notebook's sixteen shape lines, in its order.
//   - attention_weight is (3, 8, 4, 6): 4 queries, each spreading its
//     weight over 6 keys; output_mid and output have the query's length 4.
//   - BLIP's shape: 3 text queries against the same 6 "image features".
//   - The post's numpy version prints the same shapes per batch element.
//   - CrossAttention(Q, Q, Q) is exactly lesson 6's self-attention.
//
// THE PARTS (each a function below, called from main in this order)
//   1. the notebook's cell: its inputs' shapes and the eleven lines its
//      forward prints (--heatmap draws the weights)
//   2. the numbers of batch 0, head 0 (--seed)
//   3. the output has the query's length (--seq-q, --seq-k)
//   4. BLIP's decoder: 3 text queries, the image features as keys and values (--seq-k)
//   5. the post's numpy version on batch 0 (--heads)
//   6. the same tensor as query, key and value: self-attention (--seq-q)
//
// Size letters: B batch, T query length (seq_q), S key/value length (seq_k),
// C hidden_dim, H heads, D head_dim = C / H.
// Index letters: b batch, h head, t query position, s key position, d inside a head.

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "attention.h"

// --- the module: the Self Attention notebook's CrossAttention -----------------

typedef struct {
    int nums_head;        // H
    int head_dim;         // D = hidden_dim / nums_head
    int hidden_dim;       // C
    Linear q_proj;        // (C -> C): projects the query sequence
    Linear k_proj;        // (C -> C): projects the key sequence
    Linear v_proj;        // (C -> C): projects the value sequence
    double att_dropout;   // nn.Dropout(0.1): its probability
    Linear o_proj;        // (C -> C)
    bool training;        // net.train() / net.eval()
} CrossAttention;

// What the forward computed, kept so main() and the tests can look inside.
typedef struct {
    const Tensor *Q;                    // (B, T, C) after q_proj
    const Tensor *K, *V;                // (B, S, C) after k_proj, v_proj
    const Tensor *q_state;              // (B, H, T, D)
    const Tensor *k_state, *v_state;    // (B, H, S, D)
    const Tensor *attention_weight;     // (B, H, T, S) after softmax, before dropout
    const Tensor *output_mid;           // (B, H, T, D) before the transpose back
} CrossAttentionSteps;

// __init__: the four Linear layers draw in this order (dropout draws nothing).
static CrossAttention CrossAttention_init(int hidden_dim, int nums_head) {
    CrossAttention self;
    self.nums_head = nums_head;
    self.head_dim = hidden_dim / nums_head;   // main() checked that it divides
    self.hidden_dim = hidden_dim;
    // The query and the key/value sequences both have hidden_dim features
    // here. In BLIP (Chen Ming's post) the image features are encoder_width wide, so
    // its key and value Linears are (encoder_width -> hidden): the two
    // sequences only have to meet in the projected space.
    self.q_proj = linear_init("q_proj", hidden_dim, hidden_dim, true);
    self.k_proj = linear_init("k_proj", hidden_dim, hidden_dim, true);
    self.v_proj = linear_init("v_proj", hidden_dim, hidden_dim, true);
    self.att_dropout = 0.1;
    self.o_proj = linear_init("o_proj", hidden_dim, hidden_dim, true);
    self.training = true;   // like a fresh nn.Module; main() sets it from --train
    return self;
}

// weights @ v_state, (B, H, T, S) @ (B, H, S, D) -> (B, H, T, D): each query's mix of
// the other sequence's values. Not static: make exercise-7 links the reader's own in its
// place (exercises/07-cross-attention.c).
Tensor *mix_values(const Tensor *weights, const Tensor *v_state) {
    return matmul(weights, v_state);                                         // (B, H, T, D)
}

// forward(Q, K, V, attention_mask): Q (B, T, C) the queries' sequence, K and
// V (B, S, C) the other sequence, attention_mask (B, H, T, S) or NULL;
// returns output (B, T, C). `steps` may be NULL. The notebook's forward
// prints eleven shapes as it goes; this one keeps those tensors in `steps`,
// and main() prints them.
static Tensor *CrossAttention_forward(CrossAttentionSteps *steps, const CrossAttention *self,
                                      const Tensor *Q, const Tensor *K, const Tensor *V,
                                      const Tensor *attention_mask) {
    // The notebook's comment says the mask is (batch, seq_len_q, seq_len_k);
    // the mask it passes, and the one masked_fill needs, is
    // (batch, heads, seq_len_q, seq_len_k) (or anything that broadcasts to it).
    int batch_size = size(Q, 0);
    int seq_len_q = size(Q, 1);
    int seq_len_k = size(K, 1);

    // The notebook reuses the names: Q, K, V are now the projections.
    Q = linear(&self->q_proj, Q);                                            // (B, T, C)
    K = linear(&self->k_proj, K);                                            // (B, S, C)
    V = linear(&self->v_proj, V);                                            // (B, S, C)

    // Split into heads exactly as in lesson 6, each with its own length:
    // view to (batch, len, heads, head_dim), transpose(1, 2) to
    // (batch, heads, len, head_dim). No copies, only new strides.
    Shape q_heads = shape4(batch_size, seq_len_q, self->nums_head, self->head_dim);
    Shape kv_heads = shape4(batch_size, seq_len_k, self->nums_head, self->head_dim);
    const Tensor *q_state = named("q_state", transpose(view(Q, q_heads), 1, 2));   // (B, H, T, D)
    const Tensor *k_state = named("k_state", transpose(view(K, kv_heads), 1, 2));  // (B, H, S, D)
    const Tensor *v_state = named("v_state", transpose(view(V, kv_heads), 1, 2));  // (B, H, S, D)

    // (T x D) @ (D x S) per (batch, head): every query of the first
    // sequence against every key of the second. The matrices need only
    // agree on D; T and S are free. Scaled by sqrt(head_dim), as in lesson 6.
    // attention_weight[b, h, t, s] = q_state[b, h, t, :] . k_state[b, h, s, :] / sqrt(D)
    const Tensor *attention_weight =
        div_scalar(matmul(q_state, transpose(k_state, -1, -2)),
                   (float)sqrt((double)self->head_dim));                     // (B, H, T, S)
    if (attention_mask != NULL) {
        // mask == 0 hides key s from query t: its weight becomes exactly 0
        // (a row of zeros in the mask gives uniform weights, see lesson 6).
        attention_weight = masked_fill(attention_weight, eq_scalar(attention_mask, 0),
                                       -1e20f);                              // (B, H, T, S)
    }

    // Over the last dim, the keys: each query's weights over the OTHER
    // sequence sum to 1.
    attention_weight = named("attention_weight", softmax(attention_weight, -1));  // (B, H, T, S)

    // Dropout on the weights (identity in eval mode).
    const Tensor *dropped = dropout(attention_weight, self->att_dropout,
                                    self->training);                         // (B, H, T, S)

    // (T x S) @ (S x D): the sum runs over the keys, so S disappears and
    // each of the T queries gets one mix of the other sequence's values.
    // output_mid[b, h, t, :] = sum_s dropped[b, h, t, s] * v_state[b, h, s, :]
    const Tensor *output_mid = named("output_mid", mix_values(dropped, v_state));  // (B, H, T, D)
    if (steps != NULL) {
        *steps = (CrossAttentionSteps){Q, K, V, q_state, k_state, v_state, attention_weight,
                                       output_mid};
    }

    // Back to (batch, seq_len_q, hidden_dim): transpose, then contiguous()
    // because view() cannot merge the head axes of a transposed tensor.
    output_mid = contiguous(transpose(output_mid, 1, 2));                    // (B, T, H, D)
    Tensor *output = linear(&self->o_proj,
                            view(output_mid, shape3(batch_size, seq_len_q, -1)));  // (B, T, C)
    named("output", output);
    return output;
}

// --- part 1: the notebook's cell ------------------------------------------------

// The eleven lines the notebook's forward prints. masked_fill and softmax
// keep the shape, so the three attention_weight lines show one shape.
static void print_forward_shapes(const CrossAttentionSteps *steps, const Tensor *output) {
    printf("Q after projection: %s\n", size_str(steps->Q));
    printf("K after projection: %s\n", size_str(steps->K));
    printf("V after projection: %s\n", size_str(steps->V));
    printf("q_state: %s\n", size_str(steps->q_state));
    printf("k_state: %s\n", size_str(steps->k_state));
    printf("v_state: %s\n", size_str(steps->v_state));
    printf("attention_weight before mask: %s\n", size_str(steps->attention_weight));
    printf("attention_weight after mask: %s\n", size_str(steps->attention_weight));
    printf("attention_weight after softmax: %s\n", size_str(steps->attention_weight));
    printf("output_mid: %s\n", size_str(steps->output_mid));
    printf("output: %s\n", size_str(output));
}

// t[i]: the i-th slice along dim 0, a view, as PyTorch's indexing gives it.
static const Tensor *slice0(const Tensor *t, int i) {
    Shape rest = {t->shape.ndim - 1, {0}};
    for (int d = 1; d < t->shape.ndim; d++) {
        rest.size[d - 1] = t->shape.size[d];
    }
    return view(narrow(t, 0, i, 1), rest);
}

// What part 1 made, for the parts after it.
typedef struct {
    const Tensor *Q, *K, *V;          // (B, T, C), (B, S, C), (B, S, C)
    const Tensor *attention_mask;     // (B, H, T, S) 0 or 1
    CrossAttention cross_attention;   // in eval mode after part 1
    CrossAttentionSteps steps;        // of cross_attention(Q, K, V, attention_mask)
    const Tensor *output;             // (B, T, C)
} Cell;

// The notebook's draws, in its order: the three inputs, the mask, the
// weights. Queries come from one sequence (a text, say), keys and values
// from another (another text, or image features). Then the forward and the
// lines it prints.
static Cell part1_the_notebooks_cell(int batch, int seq_q, int seq_k, int dim, int heads,
                                     bool train, bool heatmap) {
    Cell cell;
    cell.Q = named("Q", rand_tensor(shape3(batch, seq_q, dim)));             // (B, T, C)
    cell.K = named("K", rand_tensor(shape3(batch, seq_k, dim)));             // (B, S, C)
    cell.V = named("V", rand_tensor(shape3(batch, seq_k, dim)));             // (B, S, C)
    cell.attention_mask =
        named("attention_mask", randint(0, 2, shape4(batch, heads, seq_q, seq_k)));  // (B, H, T, S)
    printf("Q shape: %s\n", size_str(cell.Q));
    printf("K shape: %s\n", size_str(cell.K));
    printf("V shape: %s\n", size_str(cell.V));
    printf("attention_mask shape: %s\n", size_str(cell.attention_mask));

    cell.cross_attention = CrossAttention_init(dim, heads);
    // The notebook never calls .eval(), so its dropout was on; we run in
    // eval mode unless --train, as every lesson with dropout does.
    cell.cross_attention.training = train;
    cell.output = CrossAttention_forward(&cell.steps, &cell.cross_attention, cell.Q, cell.K,
                                         cell.V, cell.attention_mask);       // (B, T, C)
    // The rest prints what the forward made: kept out of the diagram and
    // the dumps (which hold the notebook's run).
    bool was_paused = trace_pause(true);
    print_forward_shapes(&cell.steps, cell.output);
    printf("Output shape: %s\n", size_str(cell.output));
    if (heatmap) {
        print_heatmap("attention_weight", cell.steps.attention_weight);
    }
    trace_pause(was_paused);
    // The parts run the module again, in eval mode, so that they draw no
    // random numbers.
    cell.cross_attention.training = false;
    return cell;
}

// --- part 2: the numbers of batch 0, head 0 (--seed) ------------------------------

// The numbers of batch 0, head 0, to compare with the PyTorch in the doc.
static void part2_numbers(const Cell *cell) {
    const CrossAttentionSteps *steps = &cell->steps;
    const Tensor *attention_mask = cell->attention_mask, *output = cell->output;
    printf("\n-- part 2: the numbers of batch 0, head 0, as docs/07 prints them (--seed changes "
           "them) --\n");
    const Tensor *weights = slice0(slice0(steps->attention_weight, 0), 0);   // (T, S)
    printf("attention_mask[0, 0]:\n%s\n",
           tensor_str(slice0(slice0(attention_mask, 0), 0), NULL));
    printf("attention_weight[0, 0]:\n%s\n", tensor_str(weights, "grad_fn=<SelectBackward0>"));
    int shown = size(output, 2) < 8 ? size(output, 2) : 8;
    printf("output[0, :, :8]:\n%s\n",
           tensor_str(narrow(slice0(output, 0), 1, 0, shown), "grad_fn=<SliceBackward0>"));
}

// --- part 3: the output has the query's length (--seq-q, --seq-k) ------------------

// What the (T x S) shape of the weights means.
static void part3_lengths(const Cell *cell) {
    const CrossAttentionSteps *steps = &cell->steps;
    int T = size(steps->attention_weight, 2), S = size(steps->attention_weight, 3);
    int D = size(steps->v_state, 3);
    double worst = 0.0;   // how far any row of the weights is from summing to 1
    const Tensor *all = steps->attention_weight;                             // (B, H, T, S)
    for (int b = 0; b < size(all, 0); b++) {
        for (int h = 0; h < size(all, 1); h++) {
            for (int t = 0; t < T; t++) {
                double sum = 0.0;
                for (int s = 0; s < S; s++) {
                    sum += *at4(all, b, h, t, s);
                }
                worst = fmax(worst, fabs(sum - 1.0));
            }
        }
    }
    printf("\n-- part 3: the output has the query's length (--seq-q and --seq-k change it) --\n");
    printf("attention_weight[b, h] is %d x %d: each of the %d queries spreads its weight over "
           "the %d keys\n  (every row sums to 1, within %.1e)\n", T, S, T, S, worst);
    printf("output_mid[b, h] = attention_weight[b, h] @ v_state[b, h]: (%d x %d) @ (%d x %d) "
           "= %d x %d;\n  the key length %d is summed away\n", T, S, S, D, T, D, S);
}

// --- part 4: BLIP's decoder: text queries, image features as keys and values (--seq-k) ---

// BLIP's decoder (Chen Ming's post): the prompt "a picture of" (3 tokens) queries
// the image features of the Vision Transformer. All image features are
// valid, so there is no mask. The output has 3 vectors, whatever the number
// of image features. (A decoder layer does not swap its self-attention for
// this: BLIP's BertLayer runs its own causal self-attention first, then
// this cross-attention.)
static void part4_blip_decoder(const Cell *cell) {
    const CrossAttention *net = &cell->cross_attention;
    const Tensor *Q = cell->Q, *K = cell->K, *V = cell->V;
    int text_len = size(Q, 1) < 3 ? size(Q, 1) : 3;   // 3, or T if the queries are fewer
    printf("\n-- part 4: BLIP's decoder (Chen Ming's post): %d text queries, %d image features "
           "(--seq-k) --\n", text_len, size(K, 1));
    printf("output = cross_attention(Q[:, :%d], K, V)\n", text_len);
    const Tensor *text = narrow(Q, 1, 0, text_len);                          // (B, 3, C)
    CrossAttentionSteps steps;
    const Tensor *output = CrossAttention_forward(&steps, net, text, K, V, NULL);  // (B, 3, C)
    print_forward_shapes(&steps, output);
}

// --- part 5: the post's numpy version on batch 0 (--heads) ------------------------

// The numpy multi-head of Chen Ming's post, run on batch element 0 of our inputs: the
// same reshape/transpose, but no projections, no batch axis, no mask and no
// 1/sqrt(d) scale. It prints the same shapes, one batch element at a time,
// as numpy prints np.shape(a): a Python tuple.
static void part5_post_numpy(const Cell *cell) {
    const CrossAttention *net = &cell->cross_attention;
    const Tensor *Q = cell->Q, *K = cell->K, *V = cell->V;
    int H = net->nums_head, D = net->head_dim;
    const Tensor *Query = slice0(Q, 0);                                      // (T, C)
    const Tensor *Key = slice0(K, 0);                                        // (S, C)
    const Tensor *Value = slice0(V, 0);                                      // (S, C)
    int values_length_q = size(Query, 0), values_length_kv = size(Key, 0);
    printf("\n-- part 5: the post's numpy version on batch 0, no projections, scale or mask "
           "(--heads) --\n");
    // np.reshape to (len, heads, head_size), np.transpose(., [1, 0, 2]).
    Query = transpose(reshape(Query, shape3(values_length_q, H, D)), 0, 1);  // (H, T, D)
    Key = transpose(reshape(Key, shape3(values_length_kv, H, D)), 0, 1);     // (H, S, D)
    Value = transpose(reshape(Value, shape3(values_length_kv, H, D)), 0, 1); // (H, S, D)
    const Tensor *scores = matmul(Query, transpose(Key, 1, 2));              // (H, T, S)
    printf("%s\n", shape_str(scores->shape, SIZES_TUPLE));
    scores = softmax(scores, -1);                                            // (H, T, S)
    printf("%s\n", shape_str(scores->shape, SIZES_TUPLE));
    const Tensor *out = matmul(scores, Value);                               // (H, T, D)
    printf("%s\n", shape_str(out->shape, SIZES_TUPLE));
    out = transpose(out, 0, 1);                                              // (T, H, D)
    printf("%s\n", shape_str(out->shape, SIZES_TUPLE));
    out = reshape(out, shape2(values_length_q, net->hidden_dim));            // (T, C)
    printf("%s\n", shape_str(out->shape, SIZES_TUPLE));
}

// --- part 6: the same tensor as query, key and value: self-attention (--seq-q) --------

// Lesson 6's MultiHeadAttention.forward(X), no mask, written out with this
// module's four Linear layers: the same steps with ONE input.
static const Tensor *multi_head_self_attention(const CrossAttention *net, const Tensor *X) {
    int batch_size = size(X, 0);
    int seq_len = size(X, 1);
    Shape per_head = shape4(batch_size, seq_len, net->nums_head, net->head_dim);
    const Tensor *Q = linear(&net->q_proj, X);                               // (B, T, C)
    const Tensor *K = linear(&net->k_proj, X);                               // (B, T, C)
    const Tensor *V = linear(&net->v_proj, X);                               // (B, T, C)
    const Tensor *q_state = transpose(view(Q, per_head), 1, 2);              // (B, H, T, D)
    const Tensor *k_state = transpose(view(K, per_head), 1, 2);              // (B, H, T, D)
    const Tensor *v_state = transpose(view(V, per_head), 1, 2);              // (B, H, T, D)
    const Tensor *attention_weight =
        div_scalar(matmul(q_state, transpose(k_state, -1, -2)),
                   (float)sqrt((double)net->head_dim));                      // (B, H, T, T)
    attention_weight = softmax(attention_weight, 3);                         // (B, H, T, T)
    attention_weight = dropout(attention_weight, net->att_dropout, net->training);  // (B, H, T, T)
    const Tensor *output_mid = matmul(attention_weight, v_state);            // (B, H, T, D)
    output_mid = contiguous(transpose(output_mid, 1, 2));                    // (B, T, H, D)
    return linear(&net->o_proj, view(output_mid, shape3(batch_size, seq_len, -1)));  // (B, T, C)
}

// Self-attention is the special case where the "other" sequence is the
// sequence itself: K = V = Q input. Then seq_k = seq_q, the weights are
// square, and every line of the forward is lesson 6's.
static void part6_self_attention(const Cell *cell) {
    const CrossAttention *net = &cell->cross_attention;
    const Tensor *Q = cell->Q;
    printf("\n-- part 6: the same tensor as query, key and value: self-attention (--seq-q) --\n");
    printf("output = cross_attention(Q, Q, Q)\n");
    CrossAttentionSteps steps;
    const Tensor *self_output = CrossAttention_forward(&steps, net, Q, Q, Q, NULL);  // (B, T, C)
    print_forward_shapes(&steps, self_output);
    const Tensor *mha_output = multi_head_self_attention(net, Q);            // (B, T, C)
    printf("torch.equal(cross_attention(Q, Q, Q), MultiHeadAttention(Q) with the same "
           "weights): %s\n", max_abs_diff(self_output, mha_output) == 0.0f ? "True" : "False");
}

// --- the budget: what a run of these sizes holds and does (lesson/budget.h) ----------

// Counted from the code above (T = seq_q, S = seq_k, T3 the BLIP part's 3
// text tokens or fewer): Q (B, T, C), K and V (B, S, C), the mask
// (B, H, T, S), the four layers; the forward's projections and its five
// (B, H, T, S) (scores, scaled, mask test, filled, weights; the dropped
// weights in train mode); the BLIP part's forward on T3 queries, the post's
// numpy cell on batch row 0, and two self-attention forwards on Q with
// three (B, H, T, T) each. --dump writes the int64 mask at 8 bytes.
static Cost cross_attention_cost(double B, double T, double S, double C, double H, bool train) {
    double T3 = T < 3 ? T : 3, D = C / H;
    double BTC = B * T * C, BSC = B * S * C, BHTS = B * H * T * S, BHTT = B * H * T * T;
    return (Cost){
        .bytes = 4 * (17 * BTC + 6 * BSC + (6 + train) * BHTS + 6 * BHTT + 5 * B * T3 * C +
                      3 * B * H * T3 * S + 2 * H * T * S + 2 * T * C + 4 * C * C + 4 * C),
        .dumped = 4 * (4 * BTC + 4 * BSC + BHTS + 4 * C * C + 4 * C) + 8 * BHTS,
        .multiply_adds = 10 * BTC * C + 4 * BSC * C + 2 * BHTS * D + 4 * BHTT * D +
                         2 * B * T3 * C * C + 2 * B * H * T3 * S * D + 2 * H * T * S * D,
        .exps = BHTS + B * H * T3 * S + H * T * S + 2 * BHTT,
        .elements = 17 * BTC + 6 * BSC + (6 + 2 * train) * BHTS + 6 * BHTT + 4 * C * C,
    };
}

int main(int argc, char **argv) {
    int batch = 3, seq_q = 4, seq_k = 6, dim = 128, heads = 8;   // the notebook's sizes
    bool train = false;
    SizeFlag sizes[] = {
        {"--batch", &batch, "batch size"},
        {"--seq-q", &seq_q, "query sequence length (seq_len_q)"},
        {"--seq-k", &seq_k, "key/value sequence length (seq_len_k)"},
        {"--dim", &dim, "hidden dimension (hidden_dim)"},
        {"--heads", &heads, "number of heads (nums_head); must divide --dim"},
    };
    SwitchFlag switches[] = {
        {"--train", &train, "train mode: dropout 0.1 on the attention weights"},
    };
    Lesson lesson = {
        .program = "lesson-7",
        .summary = "cross-attention: CrossAttention of the Self Attention notebook, queries "
                   "from one sequence, "
                   "keys and values from another",
        .sizes = sizes,
        .n_sizes = 5,
        .switches = switches,
        .n_switches = 1,
    };
    parse_lesson_args(&lesson, argc, argv);
    check_divides(&lesson, "--heads", heads, "--dim", dim);
    // The largest tensor of each kind the run builds; every other one is
    // one of these sizes or smaller.
    check_fits(&lesson, "attention_weight (batch, heads, seq_q, seq_k)",
               shape4(batch, heads, seq_q, seq_k));
    // The aside runs the module as self-attention on Q: (B, H, T, T) weights.
    check_fits(&lesson, "the self-attention weights (batch, heads, seq_q, seq_q)",
               shape4(batch, heads, seq_q, seq_q));
    check_fits(&lesson, "Q (batch, seq_q, dim)", shape3(batch, seq_q, dim));
    check_fits(&lesson, "K (batch, seq_k, dim)", shape3(batch, seq_k, dim));
    check_fits(&lesson, "q_proj.weight (dim, dim)", shape2(dim, dim));
    check_budget(&lesson, cross_attention_cost(batch, seq_q, seq_k, dim, heads, train));
    lesson_start(&lesson);

    Cell cell = part1_the_notebooks_cell(batch, seq_q, seq_k, dim, heads, train, lesson.heatmap);
    trace_pause(true);   // the parts run the module again: not the notebook's dataflow
    part2_numbers(&cell);
    part3_lengths(&cell);
    part4_blip_decoder(&cell);
    part5_post_numpy(&cell);
    part6_self_attention(&cell);
    return lesson_finish(&lesson);
}
