// Lesson 4: self-attention-v3 - a padding mask, dropout on the weights, output_proj.
//
// WHAT THIS ADDS (over lesson 3, SelfAttV2)
//   Real batches hold sentences of different lengths, padded to one length.
//   A padding mask says which key positions are padding, and
//   masked_fill(mask == 0, -1e20) before the softmax gives them a weight of
//   exactly 0, so no query reads from them. While training, dropout (p = 0.1)
//   then zeroes random attention weights and scales the rest by 1/0.9.
//   The fused projection and output_proj are lesson 3's.
//
// THE MATH (B batch, T = S = seq, C = dim)
//   Q, K, V    = split(X W_proj^T + b_proj, C)               (B, T, C) each
//   scores     = Q @ K^T / sqrt(C)                           (B, T, S)
//   scores[b, t, s] = -1e20 wherever mask[b, t, s] == 0      (padding keys)
//   att_weight = dropout(softmax(scores, dim=-1), p = 0.1)   (B, T, S)
//   ret        = (att_weight @ V) W_out^T + b_out            (B, T, C)
//
// THE PYTORCH IT MIRRORS (the Self Attention notebook's SelfAttV3 cell; the whole runnable
// script is in docs/04-self-attention-v3.md)
//   torch.manual_seed(seed)
//   X = torch.rand(batch, seq, dim)
//   b = ...                       # row i keeps its first max(1, seq-1-i) keys
//   print(b.shape)
//   mask = b.unsqueeze(dim=1).repeat(1, seq, 1)
//   print(mask, mask.shape)
//   net = SelfAttV3(dim)          # then net.eval(), or net.train() for --train
//   print(net(X, mask).shape)     # the forward prints att_weight itself
//
// RUN IT
//   make lesson-4                         (3 sentences of 4 tokens, dim 2, eval mode)
//   make lesson-4 ARGS="--train"          dropout on: see the weights it zeroes
//   flags: --batch --seq --dim --train --seed --dump DIR --dot FILE --heatmap --help
//
// WHAT TO LOOK FOR
//   - The last column of batch 0, the last two of batch 1 and the last three
//     of batch 2 are 0.0000 exactly: those keys are padding.
//   - Every row still sums to 1 over the keys that are left; batch 2 has one
//     real key, so each of its rows is [1, 0, 0, 0].
//   - Padded QUERY rows (batch 2, rows 1-3) still get weights and an output:
//     a padding mask hides keys (columns), not queries (rows).
//   - With --train, the surviving weights are the eval weights divided by
//     0.9 (0.3565 -> 0.3961 for seed 0) and some are 0: the rows no longer
//     sum to 1, but each weight keeps its expected value.
//   - A row whose keys are ALL masked: -1e20 gives uniform weights, -inf
//     gives NaN.
//   - The Attention 介绍 notes' ScaledDotProductAttetion is this class with
//     -inf as its fill: the same output to the bit on the cell's mask, NaN
//     for a sentence that is all padding (the last part of the output).
//
// THE PARTS (each a function below, called from main in this order)
//   1. the notebook's cell: b, the mask, net(X, mask) and the weights it
//      prints (--heatmap draws them)
//   2. what att_drop does to the weights (--train turns it on)
//   3. the mask hides keys (columns), not queries (rows) (--batch, --seq)
//   4. a row whose keys are all masked: why -1e20 and not -inf
//   5. the Attention 介绍 notes' ScaledDotProductAttetion: -inf as its fill
//
// Size letters: B = batch, T = seq as query positions (rows of att_weight),
// S = seq as key positions (columns), C = dim.
// Index letters: b batch row, t query position, s key position.

#include <math.h>
#include <stdio.h>

#include "attention.h"

// The value written over masked scores: the notebook's float("-1e20").
// Any number far below every real score works: exp(-1e20 - max) is exactly
// 0 in float32. Why not -INFINITY: see part4_fully_masked_row() below.
#define MASK_FILL -1e20f
#define ATT_DROPOUT 0.1   // "一般是 0.1 的 dropout" (config.attention_probs_dropout_prob)

// --- the module: SelfAttV3 -----------------------------------------------------------

typedef struct {
    int dim;
    Linear proj;          // Linear(dim, 3*dim): Q, K and V in one matmul (lesson 3)
    double att_drop;      // nn.Dropout(0.1): the probability of zeroing a weight
    // "不写这个应该也没人怪": nobody would blame you for leaving it out; it
    // really belongs to multi-head attention (lesson 6), where it mixes heads.
    Linear output_proj;   // Linear(dim, dim)
    bool training;        // nn.Module.training: dropout acts only when true
} SelfAttV3;

// The forward's local variables, kept for main() to print and the tests to
// check. The notebook calls the scores, the masked scores, the weights and
// the dropped weights all `att_weight`; here the ones the lesson looks at
// get names of their own. (HuggingFace models hand back their weights the
// same way when asked: output_attentions=True.)
typedef struct {
    const Tensor *QKV;                  // (B, T, 3C)
    const Tensor *Q, *K, *V;            // (B, T, C), views into QKV
    const Tensor *scores;               // (B, T, S) Q @ K^T / sqrt(C), before the mask
    const Tensor *att_weight;           // (B, T, S) after softmax, before dropout
    const Tensor *att_weight_dropped;   // (B, T, S) after att_drop (att_weight itself in eval)
    const Tensor *output;               // (B, T, C) before output_proj
} SelfAttV3Steps;

// SelfAttV3(dim). The draws follow PyTorch's __init__ order: proj.weight,
// proj.bias, output_proj.weight, output_proj.bias. nn.Dropout has no
// parameters and draws nothing here. Like every nn.Module it starts in
// training mode; main() switches it to eval unless --train is given.
static SelfAttV3 SelfAttV3_init(int dim) {
    SelfAttV3 self;
    self.dim = dim;
    self.proj = linear_init("proj", dim, 3 * dim, true);            // W (3C, C), b (3C)
    self.att_drop = ATT_DROPOUT;
    self.output_proj = linear_init("output_proj", dim, dim, true);  // W (C, C), b (C)
    self.training = true;
    return self;
}

// scores.masked_fill(attention_mask == 0, -1e20): the padding keys' scores
// overwritten, everything else kept. Not static: make exercise-4 links the
// reader's own in its place (exercises/04-self-attention-v3.c).
Tensor *fill_padding(const Tensor *scores, const Tensor *attention_mask) {
    const Tensor *padding = eq_scalar(attention_mask, 0);                    // (B, T, S)
    return masked_fill(scores, padding, MASK_FILL);                          // (B, T, S)
}

// SelfAttV3.forward(X, attention_mask). X is (B, T, C); attention_mask is
// (B, T, S), 1 for a key that may be attended to and 0 for padding, or NULL
// for no mask. Returns ret (B, T, C). The notebook's forward also prints
// att_weight; this one prints nothing, and main() prints steps->att_weight.
static Tensor *SelfAttV3_forward(SelfAttV3Steps *steps, const SelfAttV3 *self, const Tensor *X,
                                 const Tensor *attention_mask) {
    // The notebook's comment says "attention_mask shape is: (batch, seq)".
    // It is not: masked_fill needs a mask that broadcasts to the scores,
    // (B, T, S); the cell passes the (B, T, S) repeat of b. A (B, S) mask
    // would line up with the LAST two dims (T, S): an error when B != T,
    // and, worse, a silently wrong mask when B == T. (B, 1, S), from
    // b.unsqueeze(1) without the repeat, broadcasts correctly.
    int C = self->dim;

    const Tensor *QKV = named("QKV", linear(&self->proj, X));                // (B, T, 3C)
    // Q, K, V = torch.split(QKV, self.dim, dim=-1): three views, no copy.
    const Tensor *parts[3];                                                  // 3 x (B, T, C)
    split(parts, QKV, C, 3);
    const Tensor *Q = named("Q", parts[0]);                                  // (B, T, C)
    const Tensor *K = named("K", parts[1]);                                  // (B, S, C)
    const Tensor *V = named("V", parts[2]);                                  // (B, S, C)

    // scores[b, t, s] = q_t . k_s / sqrt(C). Dividing by sqrt(C) keeps the
    // scores' spread independent of C, so softmax does not saturate.
    const Tensor *scores =
        div_scalar(matmul(Q, transpose(K, -1, -2)), sqrtf((float)C));        // (B, T, S)
    const Tensor *att_weight = scores;                                       // (B, T, S)
    if (attention_mask != NULL) {
        // "给 weight 填充一个极小的值": fill a very small value where the mask
        // is 0. After the softmax those weights are exactly 0: exp(-1e20 - max)
        // underflows to 0.0f. Only the columns (keys) of padding are masked;
        // a padding QUERY row still gets weights over the real keys.
        att_weight = fill_padding(att_weight, attention_mask);               // (B, T, S)
    }
    att_weight = named("att_weight", softmax(att_weight, -1));               // (B, T, S)

    // "注意：dropout 是对 att_weight 的，不是对 att_weight @ V 的": dropout
    // acts on the attention weights, not on att_weight @ V. Zeroing a weight
    // cuts one query-key link for this step, so the model cannot lean on any
    // single token; dropping output numbers would be a different thing
    // (hidden_dropout_prob, applied later in a Transformer block).
    // Survivors are divided by 0.9 so each weight keeps its expected value:
    // 0.9 * (w / 0.9) + 0.1 * 0 = w, and eval mode needs no rescaling.
    const Tensor *att_weight_dropped =
        dropout(att_weight, self->att_drop, self->training);                 // (B, T, S)

    // output[b, t] = sum_s att_weight[b, t, s] * v_s: each query's mix of values.
    const Tensor *output = named("output", matmul(att_weight_dropped, V));   // (B, T, C)
    Tensor *ret = linear(&self->output_proj, output);                        // (B, T, C)
    named("ret", ret);

    if (steps != NULL) {
        *steps = (SelfAttV3Steps){QKV, Q, K, V, scores, att_weight, att_weight_dropped, output};
    }
    return ret;
}

// --- part 1: the notebook's cell: the padding mask, then net(X, mask) -------------------

// b: (batch, seq), 1 for a real token, 0 for padding. Batch row i keeps its
// first max(1, seq-1-i) tokens: for 3x4 that is the notebook's
//     [[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]]
// and every row keeps at least one real token, however large batch is.
static const Tensor *padding_rows(int batch, int seq) {
    Tensor *b = zeros(shape2(batch, seq));                                   // (B, S)
    b->dtype = DTYPE_INT64;   // torch.tensor([[1, 1, 1, 0], ...]) is int64
    for (int i = 0; i < batch; i++) {
        int kept = seq - 1 - i > 1 ? seq - 1 - i : 1;
        for (int s = 0; s < kept; s++) {
            *at2(b, i, s) = 1.0f;
        }
    }
    return b;
}

// What part 1 made, for the parts after it.
typedef struct {
    const Tensor *X;        // (B, T, C)
    const Tensor *b;        // (B, S) 1 for a real token, 0 for padding
    const Tensor *mask;     // (B, T, S)
    SelfAttV3 net;
    SelfAttV3Steps steps;   // of net(X, mask)
    const Tensor *ret;      // (B, T, C)
} Cell;

// The notebook's cell, in its order: X, b and its shape, the mask, then
// net(X, mask), whose forward prints att_weight, and the shape of its output.
static Cell part1_the_notebooks_cell(int batch, int seq, int dim, bool train, bool heatmap) {
    Cell cell;
    cell.X = named("X", rand_tensor(shape3(batch, seq, dim)));               // (B, T, C)
    cell.b = padding_rows(batch, seq);                                       // (B, S)
    printf("%s\n", size_str(cell.b));
    // [B, S] -> [B, 1, S] -> [B, T, S]: the same key mask for every query
    // row t ("在第 1 维重复 seq 次": repeat seq times along dim 1).
    const Tensor *b_rows = unsqueeze(cell.b, 1);                             // (B, 1, S)
    cell.mask = named("mask", repeat(b_rows, (int[]){1, seq, 1}));           // (B, T, S)
    printf("%s %s\n", tensor_str(cell.mask, NULL), size_str(cell.mask));

    cell.net = SelfAttV3_init(dim);
    // The notebook never calls net.eval(), so its dropout was on when it ran;
    // its printed weights come before dropout and are not affected.
    cell.net.training = train;
    cell.ret = SelfAttV3_forward(&cell.steps, &cell.net, cell.X, cell.mask);  // (B, T, C)
    // The forward's print(att_weight), and in training the lesson's own
    // line with the weights after dropout.
    printf("%s\n", tensor_str(cell.steps.att_weight, "grad_fn=<SoftmaxBackward0>"));
    if (train) {
        printf("att_weight after att_drop: %s\n",
               tensor_str(cell.steps.att_weight_dropped, "grad_fn=<MulBackward0>"));
    }
    printf("%s\n", size_str(cell.ret));   // print(net(X, mask).shape)
    if (heatmap) {
        printf("\n");
        print_heatmap("att_weight (after softmax, before dropout)", cell.steps.att_weight);
        if (train) {
            print_heatmap("att_weight after att_drop", cell.steps.att_weight_dropped);
        }
    }
    return cell;
}

// --- part 2: what att_drop does to the weights (--train) ----------------------------------

// Train mode: what att_drop did to the weights.
static void part2_dropout(const Cell *cell) {
    printf("\n-- part 2: what att_drop does to the weights (--train turns it on) --\n");
    if (!cell->net.training) {
        printf("eval mode: att_drop(att_weight) is att_weight itself; --train shows what it "
               "zeroes\n");
        return;
    }
    const SelfAttV3Steps *steps = &cell->steps;
    const Tensor *before = steps->att_weight;            // (B, T, S)
    const Tensor *after = steps->att_weight_dropped;     // (B, T, S)
    long kept = 0, dropped = 0;
    float example_before = 0.0f, example_after = 0.0f;
    int index[MAX_DIMS] = {0};
    for (long i = 0; i < numel(before); i++) {
        float w = *at(before, index), w_dropped = *at(after, index);
        if (w != 0.0f && w_dropped == 0.0f) {
            dropped++;
        } else if (w != 0.0f) {
            if (kept == 0) {
                example_before = w;
                example_after = w_dropped;
            }
            kept++;
        }
        next_index(index, before->shape.size, before->shape.ndim);
    }
    printf("of the %ld unmasked weights it zeroed %ld and divided the other %ld by 0.9",
           kept + dropped, dropped, kept);
    if (kept > 0) {
        printf(" (%.4f -> %.4f)", example_before, example_after);
    }
    printf(",\nso rows no longer sum to 1 but each weight keeps its expected value: "
           "0.9 * w/0.9 + 0.1 * 0 = w.\n");
}

// --- part 3: the mask hides keys (columns), not queries (rows) (--batch, --seq) -------------

// A padding mask hides keys, not queries: the last batch row has the most
// padding, yet every one of its query positions gets an output row.
static void part3_padded_queries(const Cell *cell) {
    const Tensor *b = cell->b, *ret = cell->ret;
    int B = size(ret, 0), T = size(ret, 1), C = size(ret, 2);
    int last = B - 1, kept = 0;
    for (int s = 0; s < size(b, 1); s++) {
        kept += *at2(b, last, s) != 0.0f;
    }
    printf("\n-- part 3: the mask hides keys (columns), not queries (rows) (--batch and --seq "
           "change it) --\n");
    if (kept == T) {
        printf("(batch row %d has no padding with these sizes)\n", last);
        return;
    }
    printf("batch row %d has %d real token(s) and %d padding; its padded query rows %d..%d "
           "still get outputs:\n", last, kept, T - kept, kept, T - 1);
    const Tensor *ret_last = narrow(ret, 0, last, 1);                        // (1, T, C)
    const Tensor *ret_row = view(contiguous(ret_last), shape2(T, C));        // (T, C)
    printf("ret[%d]:\n%s\n", last, tensor_str(ret_row, "grad_fn=<SelectBackward0>"));
    printf("a model must ignore those rows itself (the loss or the pooling skips padding).\n");
}

// --- part 4: a row whose keys are all masked: why -1e20 and not -inf ----------------------

// softmax(scores.masked_fill(mask == 0, fill), dim=-1): the forward's two
// lines with the fill value as a parameter, so -1e20 and -inf can be tried
// side by side.
static Tensor *masked_softmax(const Tensor *scores, const Tensor *mask, float fill) {
    return softmax(masked_fill(scores, eq_scalar(mask, 0), fill), -1);  // shape of scores
}

// Why -1e20 and not -inf: a query whose keys are ALL masked (an all-padding
// sequence, or a causal mask combined with left padding).
//   fill -1e20: every score becomes -1e20, max = -1e20, exp(0) = 1 for all:
//               uniform weights 1/S. Harmless: the row is padding anyway.
//   fill -inf:  max = -inf, and -inf - (-inf) = NaN: the whole row is NaN,
//               and NaN spreads through @ V, output_proj and the loss.
// BERT (in Chen Ming's post) adds a mask instead: scores + (1 - mask) * -10000. With
// every key masked that shifts the whole row by -10000, and softmax does not
// change when a row is shifted, so the row gets (nearly) its UNMASKED weights.
static void part4_fully_masked_row(const Cell *cell) {
    const SelfAttV3Steps *steps = &cell->steps;
    int S = size(steps->scores, 2);
    // scores[0, 0]: batch 0, query 0, as a 1-D row
    const Tensor *first = narrow(narrow(steps->scores, 0, 0, 1), 1, 0, 1);   // (1, 1, S)
    const Tensor *row = view(contiguous(first), shape1(S));                  // (S)
    Tensor *no_keys = zeros(shape1(S));                                      // (S) all padding
    no_keys->dtype = DTYPE_INT64;
    const Tensor *additive = full(shape1(S), -10000.0f);                     // (S) (1 - 0) * -10000

    printf("\n-- part 4: a row whose keys are all masked: why -1e20 and not -inf (--seed changes "
           "it) --\n");
    printf("scores of batch 0, query 0: %s\n", tensor_str(row, NULL));
    printf("mask every key, fill -1e20 (the notebook): %s\n",
           tensor_str(masked_softmax(row, no_keys, MASK_FILL), NULL));
    printf("mask every key, fill -inf:                 %s\n",
           tensor_str(masked_softmax(row, no_keys, -INFINITY), NULL));
    printf("BERT's additive mask, scores - 10000:      %s\n",
           tensor_str(softmax(add(row, additive), -1), NULL));
    printf("no mask at all, for comparison:            %s\n", tensor_str(softmax(row, -1), NULL));
}

// --- part 5: the Attention 介绍 notes' ScaledDotProductAttetion: -inf as its fill ---------

// The notes' ScaledDotProductAttetion (sic) is SelfAttV3 line for line (the
// same proj, att_drop and output_proj, so the same state_dict), except one
// line: it fills masked scores with float('-inf') instead of -1e20. Here it
// runs on net's parameters, as sdpa.load_state_dict(net.state_dict()) would
// give it.
typedef SelfAttV3 ScaledDotProductAttetion;

// forward(X, attention_mask): X (B, T, C), attention_mask (B, T, S) or NULL;
// returns ret (B, T, C).
static Tensor *ScaledDotProductAttetion_forward(const ScaledDotProductAttetion *self,
                                                const Tensor *X,
                                                const Tensor *attention_mask) {
    const Tensor *QKV = linear(&self->proj, X);                              // (B, T, 3C)
    const Tensor *parts[3];                                                  // 3 x (B, T, C)
    split(parts, QKV, self->dim, 3);
    const Tensor *Q = parts[0], *K = parts[1], *V = parts[2];                // (B, T, C) each
    const Tensor *att_weight = div_scalar(matmul(Q, transpose(K, -1, -2)),
                                          sqrtf((float)self->dim));          // (B, T, S)
    if (attention_mask != NULL) {
        // The one line that differs from SelfAttV3: -inf, not -1e20.
        att_weight = masked_fill(att_weight, eq_scalar(attention_mask, 0), -INFINITY);
    }
    att_weight = softmax(att_weight, -1);                                    // (B, T, S)
    att_weight = dropout(att_weight, self->att_drop, self->training);        // (B, T, S)
    const Tensor *output = matmul(att_weight, V);                            // (B, T, C)
    return linear(&self->output_proj, output);                               // (B, T, C)
}

// The notes' class against the notebook's, in eval mode on net's weights:
// on the cell's mask, where every sentence keeps a real token, -inf and
// -1e20 both give masked keys a weight of exactly 0, so the two agree to
// the bit. With a sentence that is all padding they part: SelfAttV3 gives
// its queries uniform weights and finite outputs, the notes' class NaN.
static void part5_notes_class(const Cell *cell) {
    const SelfAttV3 *net = &cell->net;
    const Tensor *X = cell->X, *mask = cell->mask;
    SelfAttV3 net_eval = *net;
    net_eval.training = false;
    const ScaledDotProductAttetion *sdpa = &net_eval;   // the same weights
    printf("\n-- part 5: the Attention 介绍 notes' ScaledDotProductAttetion, -inf as its fill "
           "(--batch) --\n");
    printf("sdpa = ScaledDotProductAttetion(%d); sdpa.load_state_dict(net.state_dict()); "
           "both .eval()\n", net->dim);
    const Tensor *ret = SelfAttV3_forward(NULL, &net_eval, X, mask);         // (B, T, C)
    const Tensor *sdpa_ret = ScaledDotProductAttetion_forward(sdpa, X, mask);  // (B, T, C)
    printf("torch.equal(sdpa(X, mask), net(X, mask)): %s   (every sentence keeps a real "
           "token,\nso -inf and -1e20 both give the masked keys a weight of exactly 0)\n",
           max_abs_diff(sdpa_ret, ret) == 0.0f ? "True" : "False");

    // Sentence 0 all padding: its row of the mask all 0.
    Tensor *padded = clone(mask);                                            // (B, T, S)
    int T = size(mask, 1), S = size(mask, 2), C = size(X, 2);
    for (int t = 0; t < T; t++) {
        for (int s = 0; s < S; s++) {
            *at3(padded, 0, t, s) = 0.0f;
        }
    }
    printf("with sentence 0 all padding (mask[0] = 0):\n");
    const Tensor *ret_0 = view(narrow(SelfAttV3_forward(NULL, &net_eval, X, padded), 0, 0, 1),
                               shape2(T, C));                                // (T, C)
    const Tensor *sdpa_0 = view(narrow(ScaledDotProductAttetion_forward(sdpa, X, padded), 0, 0,
                                       1), shape2(T, C));                    // (T, C)
    printf("net(X, mask)[0]:\n%s\n", tensor_str(ret_0, "grad_fn=<SelectBackward0>"));
    printf("sdpa(X, mask)[0]:\n%s\n", tensor_str(sdpa_0, "grad_fn=<SelectBackward0>"));
    printf("-1e20 leaves S equal scores: uniform weights, the mean of the values (padding,\n"
           "but finite); -inf leaves -inf - (-inf) = nan, and the nan reaches every output.\n");
}

// --- the lesson -----------------------------------------------------------------------

// --- the budget: what a run of these sizes holds and does (lesson/budget.h) ----------

// Counted from the code above: X, b, the mask (B, T, T) and the two layers;
// five forwards (net's, then in the notes' part net's and sdpa's, twice),
// each making QKV (B, T, 3C), output and ret (B, T, C) and five (B, T, T):
// the scores, the scaled scores, the padding, the filled scores, the
// weights (and in train mode, the first forward, the dropped weights);
// the notes' part's padded mask. --dump writes the int64 mask at 8 bytes.
static Cost v3_cost(double B, double T, double C, bool train) {
    double BTT = B * T * T, BTC = B * T * C;
    return (Cost){
        .bytes = 4 * (26 * BTC + (27 + train) * BTT + B * T + 4 * C * C + 4 * C),
        .dumped = 4 * (9 * BTC + BTT + 4 * C * C + 4 * C) + 8 * BTT,
        .multiply_adds = 5 * (4 * BTC * C + 2 * BTT * C),
        .exps = 5 * BTT,
        .elements = 26 * BTC + (27 + 2 * train) * BTT + 4 * C * C,
    };
}

int main(int argc, char **argv) {
    int batch = 3, seq = 4, dim = 2;   // the notebook: torch.rand(3, 4, 2), SelfAttV3(2)
    bool train = false;
    SizeFlag sizes[] = {
        {"--batch", &batch, "batch size"},
        {"--seq", &seq, "sequence length"},
        {"--dim", &dim, "hidden dimension"},
    };
    SwitchFlag switches[] = {
        {"--train", &train, "training mode: dropout on (default: eval mode)"},
    };
    Lesson lesson = {
        .program = "lesson-4",
        .summary = "self-attention-v3: padding mask, dropout on the weights, output_proj "
                   "(SelfAttV3 of the Self Attention notebook)",
        .sizes = sizes, .n_sizes = 3,
        .switches = switches, .n_switches = 1,
    };
    parse_lesson_args(&lesson, argc, argv);
    // The biggest tensors: att_weight and the mask (B, T, S), QKV (B, T, 3C),
    // proj.weight (3C, C).
    check_fits(&lesson, "att_weight (batch, seq, seq)", shape3(batch, seq, seq));
    check_fits(&lesson, "QKV (batch, seq, 3*dim)", shape3(batch, seq, 3 * dim));
    check_fits(&lesson, "proj.weight (3*dim, dim)", shape2(3 * dim, dim));
    check_budget(&lesson, v3_cost(batch, seq, dim, train));
    lesson_start(&lesson);

    Cell cell = part1_the_notebooks_cell(batch, seq, dim, train, lesson.heatmap);
    trace_pause(true);   // what follows is commentary, not the dataflow
    part2_dropout(&cell);
    part3_padded_queries(&cell);
    part4_fully_masked_row(&cell);
    part5_notes_class(&cell);
    return lesson_finish(&lesson);
}
