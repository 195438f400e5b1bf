// Lesson 5: self-attention-v4 - the version to write in an interview.
//
// WHAT THIS ADDS (over lesson 4, SelfAttV3)
//   No new idea: the same attention, written the way an interviewer wants to
//   read it. Q, K and V get separate Linear layers again ("这样很清晰": this
//   is clear), with the padding mask, dropout on the weights and output_proj
//   of lesson 4. The new part is knowing why each line is there, and what to
//   say about it (the comments marked INTERVIEW, and the end of the output).
//
// THE MATH (B batch, T = S = seq, C = dim)
//   Q = X Wq^T + bq,  K = X Wk^T + bk,  V = X Wv^T + bv       (B, T, C) each
//   scores     = Q @ K^T / sqrt(C), -1e20 where mask == 0     (B, T, S)
//   att_weight = dropout(softmax(scores, dim=-1), p = 0.1)    (B, T, S)
//   ret        = (att_weight @ V) Wo^T + bo                   (B, T, C)
//
// THE PYTORCH IT MIRRORS (the Self Attention notebook's "面试写法" (interview version) cell;
// the whole runnable script is in docs/05-self-attention-v4.md)
//   torch.manual_seed(seed)
//   X = torch.rand(batch, seq, dim)
//   b = ...                       # row i keeps its first max(1, seq-1-i) keys
//   mask = b.unsqueeze(dim=1).repeat(1, seq, 1)
//   net = SelfAttV4(dim)          # then net.eval(), or net.train() for --train
//   print(net(X, mask).shape)     # the forward prints f"att_weight:\n {att_weight}"
//   (This cell comments out print(b.shape) and never prints the mask, so
//   neither does the lesson; lesson 4 shows both.)
//
// RUN IT
//   make lesson-5                         (3 sentences of 4 tokens, dim 2, eval mode)
//   make lesson-5 ARGS="--train"          dropout on
//   flags: --batch --seq --dim --train --seed --dump DIR --dot FILE --heatmap --help
//
// WHAT TO LOOK FOR
//   - "att_weight:" and then " tensor(" one space in: the notebook's f-string
//     puts a space after the newline, so the first line of the tensor is
//     shifted by one and the rest are not.
//   - The padded keys get weight 0.0000 exactly, as in lesson 4.
//   - At the end: the fused projection of lesson 4 built from this lesson's
//     three weight matrices gives the same Q, K and V, bit for bit.
//
// THE PARTS (each a function below, called from main in this order)
//   1. the notebook's cell: the mask, net(X, mask) and the weights it
//      prints (--heatmap draws them)
//   2. what to say about each choice, with this run's numbers (--dim, --train)
//
// Size letters: B = batch, T = seq as query positions (rows of att_weight),
// S = seq as key positions (columns), C = dim.
// Index letters: b batch row, t query position, s key position.

#include <math.h>
#include <stdio.h>

#include "attention.h"

// INTERVIEW (the mask value): a large negative number, not -inf. A row
// whose keys are all masked then gets uniform weights instead of NaN
// (lesson 4 shows both). In float16, -1e20 does not fit and masked_fill
// refuses it, which is why libraries use torch.finfo(dtype).min.
#define MASK_FILL -1e20f
// INTERVIEW (dropout): 0.1 is the usual value, written in configs as
// attention_probs_dropout_prob (hidden_dropout_prob, for the block's other
// dropouts, is usually 0.1 too).
#define ATT_DROPOUT 0.1

// --- the module: SelfAttV4 -----------------------------------------------------------

typedef struct {
    int dim;
    // INTERVIEW (separate or fused): three Linear(dim, dim) read clearly and
    // are what the interviewer expects; one Linear(dim, 3*dim) (lesson 4) is
    // the same math in one matmul, faster for small models. For large models
    // the weights are sharded across GPUs anyway, and fusing stops mattering.
    // INTERVIEW (bias): nn.Linear has a bias by default and BERT keeps it;
    // LLaMA-style models drop it (bias=False). Either is fine; say which.
    Linear query_proj;    // Linear(dim, dim)
    Linear key_proj;      // Linear(dim, dim)
    Linear value_proj;    // Linear(dim, dim)
    double att_drop;      // nn.Dropout(0.1): the probability of zeroing a weight
    // INTERVIEW (output_proj): "可以不写；具体和面试官沟通": you may leave it out,
    // ask the interviewer. It comes from multi-head attention (lesson 6),
    // where it mixes the heads; with one head it is one more Linear.
    Linear output_proj;   // Linear(dim, dim)
    bool training;        // nn.Module.training: dropout acts only when true
} SelfAttV4;

// The forward's local variables, kept for main() to print and the tests to
// check. The notebook calls the weights before and after dropout both
// `att_weight`; here they get a name each.
typedef struct {
    const Tensor *Q, *K, *V;            // (B, T, C)
    const Tensor *att_weight;           // (B, T, S) after softmax, before dropout
    const Tensor *att_weight_dropped;   // (B, T, S) after att_drop (att_weight itself in eval)
    const Tensor *output;               // (B, T, C) before output_proj
} SelfAttV4Steps;

// SelfAttV4(dim). The draws follow PyTorch's __init__ order: query_proj,
// key_proj, value_proj, output_proj, each weight then bias. Like every
// nn.Module it starts in training mode; main() sets eval unless --train.
static SelfAttV4 SelfAttV4_init(int dim) {
    SelfAttV4 self;
    self.dim = dim;
    self.query_proj = linear_init("query_proj", dim, dim, true);    // W (C, C), b (C)
    self.key_proj = linear_init("key_proj", dim, dim, true);        // W (C, C), b (C)
    self.value_proj = linear_init("value_proj", dim, dim, true);    // W (C, C), b (C)
    self.att_drop = ATT_DROPOUT;
    self.output_proj = linear_init("output_proj", dim, dim, true);  // W (C, C), b (C)
    self.training = true;
    return self;
}

// SelfAttV4.forward(X, attention_mask). X is (B, T, C); attention_mask is
// (B, T, S), 1 for a key that may be attended to and 0 for padding, or NULL.
// (The notebook's comment says (batch, seq); the code needs a mask that
// broadcasts to the (B, T, S) scores: see lesson 4.) Returns ret (B, T, C).
// The notebook's forward also prints att_weight; this one prints nothing,
// and main() prints steps->att_weight.
static Tensor *SelfAttV4_forward(SelfAttV4Steps *steps, const SelfAttV4 *self, const Tensor *X,
                                 const Tensor *attention_mask) {
    int C = self->dim;
    const Tensor *Q = named("Q", linear(&self->query_proj, X));              // (B, T, C)
    const Tensor *K = named("K", linear(&self->key_proj, X));                // (B, S, C)
    const Tensor *V = named("V", linear(&self->value_proj, X));              // (B, S, C)

    // INTERVIEW (scaling): divide by sqrt(dim). If q and k have entries of
    // variance 1, q . k sums C products and has variance C; dividing by
    // sqrt(C) brings it back to 1, so softmax does not saturate into a
    // one-hot whose gradients vanish. (With heads it is sqrt(head_dim).)
    const Tensor *att_weight =
        div_scalar(matmul(Q, transpose(K, -1, -2)), sqrtf((float)C));        // (B, T, S)
    if (attention_mask != NULL) {
        // "给 weight 填充一个极小的值": fill a very small value where the mask
        // is 0; after the softmax those weights are exactly 0. The mask hides
        // keys (columns); padded query rows still get weights and outputs.
        const Tensor *padding = eq_scalar(attention_mask, 0);                // (B, T, S)
        att_weight = masked_fill(att_weight, padding, MASK_FILL);            // (B, T, S)
    }
    att_weight = named("att_weight", softmax(att_weight, -1));               // (B, T, S)

    // INTERVIEW (where dropout goes): "dropout 是对 att_weight 的，不是对
    // att_weight @ V 的": on the attention weights, not on att_weight @ V.
    // It cuts random query-key links while training; the survivors are
    // divided by 0.9 so that eval mode (no dropout) needs no rescaling.
    const Tensor *att_weight_dropped =
        dropout(att_weight, self->att_drop, self->training);                 // (B, T, S)

    const Tensor *output = named("output", matmul(att_weight_dropped, V));   // (B, T, C)
    Tensor *ret = linear(&self->output_proj, output);                        // (B, T, C)
    named("ret", ret);

    if (steps != NULL) {
        *steps = (SelfAttV4Steps){Q, K, V, att_weight, att_weight_dropped, output};
    }
    return ret;
}

// --- part 1: the notebook's cell: the padding mask (as in lesson 4), then net(X, mask) -----

// b: (batch, seq), 1 for a real token, 0 for padding. Batch row i keeps its
// first max(1, seq-1-i) tokens: for 3x4 that is the notebook's
//     [[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]]
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

// What part 1 made, for part 2.
typedef struct {
    const Tensor *X;   // (B, T, C)
    SelfAttV4 net;
} Cell;

// The notebook's cell: X, the mask, net(X, mask), whose forward prints
// att_weight, and the shape of its output.
static Cell part1_the_notebooks_cell(int batch, int seq, int dim, bool train, bool heatmap) {
    Cell cell;
    cell.X = named("X", rand_tensor(shape3(batch, seq, dim)));               // (B, T, C)
    const Tensor *b = padding_rows(batch, seq);                              // (B, S)
    // [B, S] -> [B, 1, S] -> [B, T, S]: the same key mask for every query row.
    const Tensor *b_rows = unsqueeze(b, 1);                                  // (B, 1, S)
    const Tensor *mask = named("mask", repeat(b_rows, (int[]){1, seq, 1}));  // (B, T, S)

    cell.net = SelfAttV4_init(dim);
    cell.net.training = train;   // the notebook never calls net.eval(): its dropout was on
    SelfAttV4Steps steps;
    const Tensor *ret = SelfAttV4_forward(&steps, &cell.net, cell.X, mask);  // (B, T, C)
    // The forward's print(f"att_weight:\n {att_weight}"): note the space
    // after the newline. In training, the lesson's own line after dropout.
    printf("att_weight:\n %s\n", tensor_str(steps.att_weight, "grad_fn=<SoftmaxBackward0>"));
    if (train) {
        printf("att_weight after att_drop:\n %s\n",
               tensor_str(steps.att_weight_dropped, "grad_fn=<MulBackward0>"));
    }
    printf("%s\n", size_str(ret));   // print(net(X, mask).shape)
    if (heatmap) {
        printf("\n");
        print_heatmap("att_weight (after softmax, before dropout)", steps.att_weight);
        if (train) {
            print_heatmap("att_weight after att_drop", steps.att_weight_dropped);
        }
    }
    return cell;
}

// --- part 2: what to say about each choice, with this run's numbers (--dim, --train) -------

// Stack the three weight matrices into lesson 4's fused Linear(dim, 3*dim)
// (rows 0..C-1 are query_proj's, C..2C-1 key_proj's, 2C..3C-1 value_proj's)
// and split its output: the same Q, K, V.
static void show_fused_equals_separate(const SelfAttV4 *net, const Tensor *X) {
    int C = net->dim;
    const Tensor *weights[3] = {net->query_proj.weight, net->key_proj.weight,
                                net->value_proj.weight};                     // 3 x (C, C)
    const Tensor *biases[3] = {net->query_proj.bias, net->key_proj.bias,
                               net->value_proj.bias};                        // 3 x (C,)
    Linear proj = {cat(weights, 3, 0), cat(biases, 3, 0), C, 3 * C};         // W (3C, C), b (3C)
    const Tensor *QKV = linear(&proj, X);                                    // (B, T, 3C)
    const Tensor *parts[3];                                                  // 3 x (B, T, C)
    split(parts, QKV, C, 3);
    float worst = 0.0f;
    worst = fmaxf(worst, max_abs_diff(parts[0], linear(&net->query_proj, X)));
    worst = fmaxf(worst, max_abs_diff(parts[1], linear(&net->key_proj, X)));
    worst = fmaxf(worst, max_abs_diff(parts[2], linear(&net->value_proj, X)));
    printf("separate or fused: cat(query_proj.weight, key_proj.weight, value_proj.weight) "
           "as one Linear(%d, %d)\n  gives the same Q, K, V (largest difference %g): the same "
           "math in one matmul instead of three.\n", C, 3 * C, (double)worst);
}

static void part2_interview_points(const Cell *cell) {
    const SelfAttV4 *net = &cell->net;
    const Tensor *X = cell->X;
    long long C = net->dim;   // up to 2^16, so C * C needs 64 bits
    printf("\n-- part 2: what to say about each choice (--dim and --train change the numbers) "
           "--\n");
    show_fused_equals_separate(net, X);
    printf("bias: 3 x (%lld*%lld + %lld) = %lld parameters for Q, K, V with biases, %lld "
           "without; + %lld for output_proj.\n", C, C, C, 3 * (C * C + C), 3 * C * C,
           C * C + C);
    printf("scaling: scores are divided by sqrt(dim) = %.4f so their variance does not grow "
           "with dim.\n", sqrt((double)C));
    printf("dropout: p = %.1f on att_weight (before @ V), %s.\n", net->att_drop,
           net->training ? "on now (--train)" : "off now (eval mode)");
    printf("mask value: -1e20, not -inf: a fully masked row gives uniform weights, not NaN.\n");
    printf("output_proj: optional for one head (ask the interviewer); it mixes heads "
           "in multi-head attention.\n");
}

// --- the lesson -----------------------------------------------------------------------

// --- the budget: what a run of these sizes holds and does (lesson/budget.h) ----------

// Counted from the code above: X, b, the mask (B, T, T) and the four
// layers; the forward's Q, K, V, output and ret (B, T, C) and five (B, T, T):
// the scores, the scaled scores, the padding, the filled scores, the weights
// (and in train mode the dropped weights); then the interview part's fused
// weight (3C, C), QKV (B, T, 3C) and three projections (B, T, C). --dump
// writes the int64 mask at 8 bytes.
static Cost v4_cost(double B, double T, double C, bool train) {
    double BTT = B * T * T, BTC = B * T * C;
    return (Cost){
        .bytes = 4 * (12 * BTC + (6 + train) * BTT + B * T + 7 * C * C + 7 * C),
        .dumped = 4 * (6 * BTC + BTT + 4 * C * C + 4 * C) + 8 * BTT,
        .multiply_adds = 10 * BTC * C + 2 * BTT * C,
        .exps = BTT,
        .elements = 12 * BTC + (6 + 2 * train) * BTT + 7 * C * C,
    };
}

int main(int argc, char **argv) {
    int batch = 3, seq = 4, dim = 2;   // the notebook: torch.rand(3, 4, 2), SelfAttV4(2)
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
        .program = "lesson-5",
        .summary = "self-attention-v4: the interview version, separate Q/K/V projections, "
                   "mask, dropout, output_proj (SelfAttV4 of the Self Attention notebook)",
        .sizes = sizes, .n_sizes = 3,
        .switches = switches, .n_switches = 1,
    };
    parse_lesson_args(&lesson, argc, argv);
    // The biggest tensors: att_weight and the mask (B, T, S), and the fused
    // QKV (B, T, 3C) and its (3C, C) weight that the interview part builds
    // at the end.
    check_fits(&lesson, "att_weight (batch, seq, seq)", shape3(batch, seq, seq));
    check_fits(&lesson, "the fused QKV (batch, seq, 3*dim)", shape3(batch, seq, 3 * dim));
    check_fits(&lesson, "the fused weight (3*dim, dim)", shape2(3 * dim, dim));
    check_budget(&lesson, v4_cost(batch, seq, dim, train));
    lesson_start(&lesson);

    Cell cell = part1_the_notebooks_cell(batch, seq, dim, train, lesson.heatmap);
    trace_pause(true);   // what follows is commentary, not the dataflow
    part2_interview_points(&cell);
    return lesson_finish(&lesson);
}
