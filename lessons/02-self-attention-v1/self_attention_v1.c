// Lesson 2: self-attention-v1 - learned Q, K, V projections, and counting the work.
//
// WHAT THIS ADDS
//   Lesson 1 was handed its queries, keys and values. Here they are learned:
//   three nn.Linear layers turn each input vector x_t into q_t, k_t and v_t
//   (the Self Attention notebook's `SelfAttV1` cell), and the scores are divided by
//   sqrt(dim) before the softmax. Then we count the cost: the notebook's
//   profiler (thop) reports 0.000288 MFLOPs, but it only sees the three
//   Linear layers; the attention itself (Q @ K^T, softmax, weights @ V) is
//   invisible to it. We count it by hand.
//
// THE MATH (B = batch, T = seq as queries, S = seq as keys, C = dim)
//   Q = X Wq^T + bq,  K = X Wk^T + bk,  V = X Wv^T + bv         (B, T, C) each
//   attention_value  = Q @ K^T                                   (B, T, S)
//   attention_weight = softmax(attention_value / sqrt(C), dim=-1) (B, T, S)
//   output           = attention_weight @ V                      (B, T, C)
//
// THE PYTORCH IT MIRRORS (the notebook's cell; docs/02-self-attention-v1.md has it whole)
//   torch.manual_seed(seed)
//   X = torch.rand(batch, seq, dim)
//   net = SelfAttV1(dim)                   # query_proj, key_proj, value_proj
//   net(X)                                 # forward prints attention_weight
//   flops_v1, params_v1 = profile(net, inputs=(X,))    # thop
//   print(f"SelfAttV1 FLOPs: {flops_v1 / 1e6:.6f} MFLOPs")
//   print(f"SelfAttV1 Parameters: {params_v1 / 1e6:.6f} M")
//   print(X.T.shape)                       # a separate cell: the X.T aside
//
// RUN IT
//   make lesson-2                      (flags: --batch 3 --seq 2 --dim 4, --seed N,
//   make lesson-2 ARGS="--seed 7"       --dump DIR, --dot FILE, --heatmap, --help)
//
// WHAT TO LOOK FOR
//   - The weights print twice, as in the notebook: once from net(X) with
//     grad_fn=<SoftmaxBackward0>, once from the forward that thop's profile()
//     runs under torch.no_grad(), where no graph is recorded and so no grad_fn.
//   - With random weights and dim = 4 the scores are small, so every row of
//     attention_weight is close to uniform (0.48 / 0.52 for seq = 2).
//   - thop's 288 is exactly 3 layers x in_features (4) x output elements (24).
//     The full forward is 432 at the default sizes; try --seq 512 --dim 64 to
//     see the uncounted attention part overtake the Linear layers.
//   - X.T on a 3-D tensor reverses ALL dims: (3, 2, 4) -> (4, 2, 3), which is
//     not the batch of transposed matrices one usually wants.
//
// THE PARTS (each a function below, called from main in this order)
//   1. the notebook's cell: net(X), then thop's profile(), printed as the
//      notebook prints them (--heatmap adds the weights as a grid)
//   2. what thop counted, and what it left out (--batch, --seq, --dim)
//   3. the aside: X.T on a 3-D tensor
//
// Size letters (the repository's, docs/README.md): B = batch, T = seq as query
// positions, S = seq as key positions (S = T: self-attention), C = dim.
// Index letters: b batch, t query position, s key position.

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "attention.h"

// --- the module: SelfAttV1 ----------------------------------------------------------

// class SelfAttV1(nn.Module): three separate projections, no output_proj.
typedef struct {
    int hidden_dim;
    Linear query_proj;   // weight (C, C), bias (C,)
    Linear key_proj;     // weight (C, C), bias (C,)
    Linear value_proj;   // weight (C, C), bias (C,)
} SelfAttV1;

// The forward's local variables, kept for main() to print and the tests to
// check (the notebook's forward keeps them to itself).
typedef struct {
    const Tensor *Q, *K, *V;           // (B, T, C)
    const Tensor *attention_value;     // (B, T, S) Q @ K^T, before the scaling
    const Tensor *attention_weight;    // (B, T, S) the notebook's `attention_wight`
} SelfAttV1Steps;

// SelfAttV1(hidden_dim). nn.Linear draws its weight, then its bias, from
// the generator, so the order of these three lines is the order of
// PyTorch's __init__ and is what makes the weights equal PyTorch's.
static SelfAttV1 SelfAttV1_init(int hidden_dim) {
    SelfAttV1 self;
    self.hidden_dim = hidden_dim;
    // "Linear layers usually have a bias" (the notebook's comment).
    self.query_proj = linear_init("query_proj", hidden_dim, hidden_dim, true);
    self.key_proj = linear_init("key_proj", hidden_dim, hidden_dim, true);
    self.value_proj = linear_init("value_proj", hidden_dim, hidden_dim, true);
    return self;
}

// Q @ K.transpose(-1, -2): every query against every key of the same batch row.
// K.transpose(-1, -2) swaps only the last two dims, (B, T, C) -> (B, C, T), as a
// view. (K.T would reverse all three dims: see part 3 below.) Not static: make
// exercise-2 links the reader's own in its place (exercises/02-self-attention-v1.c).
// attention_value[b, t, s] = q_{b,t} . k_{b,s}
Tensor *attention_scores(const Tensor *Q, const Tensor *K) {
    return matmul(Q, transpose(K, -1, -2));                                       // (B, T, S)
}

// SelfAttV1.forward(X): X (B, T, C) -> output (B, T, C). The notebook's
// forward also prints attention_weight; this one prints nothing, and
// main() prints steps->attention_weight where the notebook's line comes.
static Tensor *SelfAttV1_forward(SelfAttV1Steps *steps, const SelfAttV1 *self, const Tensor *X) {
    // X: (B, T, C). The notebook's comment says X's last dim "可以和 hidden_dim
    // 不同" (can differ from hidden_dim). It cannot: the projections are
    // Linear(hidden_dim, hidden_dim), so X's last dim must be hidden_dim
    // (docs/errata.md, entry 23). Here both are --dim.
    const Tensor *Q = named("Q", linear(&self->query_proj, X));                   // (B, T, C)
    const Tensor *K = named("K", linear(&self->key_proj, X));                     // (B, T, C)
    const Tensor *V = named("V", linear(&self->value_proj, X));                   // (B, T, C)

    // Every query against every key of the same batch row (attention_scores, below).
    const Tensor *attention_value =
        named("attention_value", attention_scores(Q, K));                         // (B, T, S)

    // Why divide by sqrt(hidden_dim): a dot product of C terms of variance ~1
    // has variance ~C, so its size grows like sqrt(C); dividing keeps the
    // scores near 1 whatever C is, and softmax out of its flat-gradient
    // corners. math.sqrt gives a double; PyTorch rounds it to float and
    // divides each float score by it, and so do we. (The notebook calls this
    // variable `attention_wight`: a typo.)
    float scale = (float)sqrt((double)self->hidden_dim);
    const Tensor *attention_weight = named(
        "attention_weight", softmax(div_scalar(attention_value, scale), -1));     // (B, T, S)

    // Each output row mixes the value rows of its batch row by its weights.
    Tensor *output = matmul(attention_weight, V);                                 // (B, T, C)
    named("output", output);

    if (steps != NULL) {
        *steps = (SelfAttV1Steps){Q, K, V, attention_value, attention_weight};
    }
    return output;
}

// --- part 1: the notebook's cell: net(X), then thop's profile() ---------------------

// The notebook's forward ends with print("attention_weight:", attention_wight).
// PyTorch adds grad_fn=<SoftmaxBackward0> when autograd recorded the
// softmax (torch.is_grad_enabled()), which it does unless inside
// `with torch.no_grad():`, as thop's profile() is.
static void print_attention_weight(const Tensor *attention_weight, bool grad_enabled) {
    printf("attention_weight: %s\n",
           tensor_str(attention_weight, grad_enabled ? "grad_fn=<SoftmaxBackward0>" : NULL));
}

// thop.profile returns two numbers: the sum of each module's counter.
typedef struct {
    long long flops;    // thop's "FLOPs": really multiply-adds (MACs)
    long long params;   // parameter count
} Profile;

// thop's count_linear (thop/vision/basic_hooks.py) adds, per call,
//     in_features * y.numel()
// i.e. in_features multiply-adds for every element of the output. `rows` is
// how many vectors the layer was applied to (batch * seq), so y.numel() is
// rows * out_features. The bias add needs no extra count: a dot product of
// n terms plus a bias is exactly n multiplies and n adds, n multiply-adds.
static long long count_linear(const Linear *layer, long long rows) {
    return (long long)layer->in_features * (rows * layer->out_features);
}

// Parameters of one Linear: weight (out, in) plus bias (out,).
static long long count_params(const Linear *layer) {
    long long n = numel(layer->weight);
    return layer->bias != NULL ? n + numel(layer->bias) : n;
}

// profile(net, inputs=(X,)): thop hooks a counter onto every nn.Linear, runs
// net(X) once more under torch.no_grad(), and sums the counters. That second
// forward is why the notebook prints the weights twice. Q @ K^T, the softmax
// and @ V are plain tensor operations, not modules, so no hook sees them.
static Profile thop_profile(const SelfAttV1 *net, const Tensor *X) {
    printf("[INFO] Register count_linear() for <class 'torch.nn.modules.linear.Linear'>.\n");
    bool was_paused = trace_pause(true);   // --dot and --dump show the first forward only
    SelfAttV1Steps steps;
    SelfAttV1_forward(&steps, net, X);
    trace_pause(was_paused);
    print_attention_weight(steps.attention_weight, false);   // with torch.no_grad()

    long long rows = numel(X) / size(X, -1);   // batch * seq vectors went through each layer
    const Linear *layers[] = {&net->query_proj, &net->key_proj, &net->value_proj};
    Profile profile = {0, 0};
    for (int i = 0; i < 3; i++) {
        profile.flops += count_linear(layers[i], rows);
        profile.params += count_params(layers[i]);
    }
    return profile;
}

// What part 1 made, for the parts after it.
typedef struct {
    const Tensor *X;        // (B, T, C)
    SelfAttV1 net;
    Profile profile;
} Cell;

// The notebook's cell, in its order: X first, then the three Linear inits,
// net(X), profile(net, inputs=(X,)) and its two lines. Its lines come
// first in the output, unannounced, so the output diffs against the
// notebook's.
static Cell part1_the_notebooks_cell(int batch, int seq, int dim, bool heatmap) {
    Cell cell;
    cell.X = named("X", rand_tensor(shape3(batch, seq, dim)));                    // (B, T, C)
    cell.net = SelfAttV1_init(dim);
    SelfAttV1Steps steps;
    SelfAttV1_forward(&steps, &cell.net, cell.X);   // net(X); its output (B, T, C) goes unused
    print_attention_weight(steps.attention_weight, true);   // what the notebook's forward prints
    cell.profile = thop_profile(&cell.net, cell.X);
    // f"{flops_v1 / 1e6:.6f}": C's %.6f rounds the same double the same way.
    printf("SelfAttV1 FLOPs: %.6f MFLOPs\n", (double)cell.profile.flops / 1e6);
    printf("SelfAttV1 Parameters: %.6f M\n", (double)cell.profile.params / 1e6);
    // After the notebook's lines, so they still diff cleanly against it.
    if (heatmap) {
        printf("\n");
        print_heatmap("attention_weight", steps.attention_weight);
    }
    return cell;
}

// --- part 2: what thop counted, and what it left out (--batch, --seq, --dim) ----------

// Units: one multiply-add for each term of a dot product (as thop counts),
// one operation for each elementwise step.
typedef struct {
    long long linear;       // 3 * batch*seq*dim*dim  (what thop reports)
    long long scores;       // Q @ K^T: batch*seq*seq*dim
    long long scale;        // / sqrt(dim): batch*seq*seq
    long long softmax;      // 3 * batch*seq*seq
    long long mix;          // attention_weight @ V: batch*seq*seq*dim
    long long total;
} FullCount;

// check_fits in main() keeps batch*seq*seq and batch*seq*dim within 2^26,
// and dim is at most 2^16, so every product here is below 2^44.
static FullCount full_count(long long batch, long long seq, long long dim) {
    FullCount c;
    c.linear = 3 * (batch * seq * dim * dim);
    // Each of the batch*seq*seq scores is a dot product of dim terms.
    c.scores = batch * seq * seq * dim;
    // One division per score.
    c.scale = batch * seq * seq;
    // Per weight: one exp, one add into its row's sum, one divide by the sum.
    // (The stable softmax also subtracts the row max, and finding the max
    // compares; we leave those two out, as most FLOP counters do. An exp
    // costs far more than a multiply anyway: softmax "FLOPs" are a
    // convention, not a measurement.)
    c.softmax = 3 * (batch * seq * seq);
    // Each of the batch*seq*dim outputs is a dot product of seq terms.
    c.mix = batch * seq * seq * dim;
    c.total = c.linear + c.scores + c.scale + c.softmax + c.mix;
    return c;
}

// The sizes come from X: (batch, seq, dim).
static void part2_what_thop_counted(const Cell *cell) {
    const Profile *profile = &cell->profile;
    const SelfAttV1 *net = &cell->net;
    int batch = size(cell->X, 0), seq = size(cell->X, 1), dim = size(cell->X, 2);
    long long rows = (long long)batch * seq;
    FullCount c = full_count(batch, seq, dim);
    printf("\n-- part 2: what thop counted, and what it left out (--batch, --seq and --dim change "
           "it) --\n");
    printf("thop adds in_features x (elements of the output) for every nn.Linear call:\n");
    const Linear *layers[] = {&net->query_proj, &net->key_proj, &net->value_proj};
    const char *names[] = {"query_proj", "key_proj", "value_proj"};
    for (int i = 0; i < 3; i++) {
        printf("  %-11s %d x (%d*%d*%d) = %lld\n", names[i], layers[i]->in_features, batch, seq,
               layers[i]->out_features, count_linear(layers[i], rows));
    }
    printf("  FLOPs = 3 * batch*seq*dim*dim = %lld (really multiply-adds)\n", profile->flops);
    printf("  Parameters = 3 * (dim*dim + dim) = 3 * (%lld + %d) = %lld\n", (long long)dim * dim,
           dim, profile->params);

    printf("\n-- what it left out: the attention itself --\n");
    printf("  Q @ K^T               batch*seq*seq*dim = %lld multiply-adds\n", c.scores);
    printf("  / sqrt(dim)           batch*seq*seq     = %lld divisions\n", c.scale);
    printf("  softmax               3*batch*seq*seq   = %lld (exp, add to row sum, divide)\n",
           c.softmax);
    printf("  attention_weight @ V  batch*seq*seq*dim = %lld multiply-adds\n", c.mix);
    printf("counted by thop:    %lld = %.6f M\n", c.linear, c.linear / 1e6);
    printf("the whole forward:  %lld = %.6f M (%.1f%% of it not counted by thop)\n", c.total,
           c.total / 1e6, 100.0 * (double)(c.total - c.linear) / (double)c.total);
}

// --- part 3: the aside: X.T ------------------------------------------------------------

// The notebook's aside (its own cell, `X = torch.rand(3, 2, 4);
// print(X.T.shape)`): .T on a 3-D tensor reverses all its dims, it does
// not transpose each matrix of the batch. It is X.permute(2, 1, 0). Newer
// PyTorch warns that .T on other than 2 dims is deprecated (1.13 already
// does; the notebook silenced warnings): use .mT or .transpose(-1, -2)
// for a batch of matrices. The notebook draws a fresh X for this; only
// its shape matters, so we reuse ours and draw nothing.
static void part3_the_aside_X_T(const Tensor *X) {
    printf("\n-- part 3: the aside: X.T on a 3-D tensor reverses all three dims (--batch, --seq, "
           "--dim) --\n");
    printf("%s\n", size_str(permute(X, (int[]){2, 1, 0})));                       // (C, T, B)
}

// --- the budget: what a run of these sizes holds and does (lesson/budget.h) ----------

// Counted from the code above: X and the three layers, then two forwards
// (net(X) and thop's), each making Q, K, V and the output (B, T, C) and
// three (B, T, T): the scores, the scaled scores, the weights.
static Cost v1_cost(double B, double T, double C) {
    return (Cost){
        .bytes = 4 * (B * T * C + 3 * (C * C + C) + 2 * (4 * B * T * C + 3 * B * T * T)),
        .dumped = 4 * (5 * B * T * C + 3 * (C * C + C) + 2 * B * T * T),
        .multiply_adds = 2 * (3 * B * T * C * C + 2 * B * T * T * C),
        .exps = 2 * B * T * T,
        .elements = B * T * C + 3 * C * C + 2 * (4 * B * T * C + 2 * B * T * T),
    };
}

// --- the lesson ---------------------------------------------------------------------

int main(int argc, char **argv) {
    int batch = 3, seq = 2, dim = 4;   // the notebook's torch.rand(3, 2, 4), SelfAttV1(4)
    SizeFlag sizes[] = {
        {"--batch", &batch, "batch size"},
        {"--seq", &seq, "sequence length"},
        {"--dim", &dim, "hidden dimension (hidden_dim)"},
    };
    Lesson lesson = {
        .program = "lesson-2",
        .summary = "self-attention-v1: SelfAttV1 of the Self Attention notebook, Q/K/V "
                   "projections, "
                   "thop's FLOP count and the full one",
        .sizes = sizes,
        .n_sizes = 3,
    };
    parse_lesson_args(&lesson, argc, argv);
    // The biggest tensors: the weights (B, T, S), X and Q/K/V (B, T, C), a
    // projection weight (C, C).
    check_fits(&lesson, "attention_weight (batch, seq, seq)", shape3(batch, seq, seq));
    check_fits(&lesson, "X (batch, seq, dim)", shape3(batch, seq, dim));
    check_fits(&lesson, "query_proj.weight (dim, dim)", shape2(dim, dim));
    check_budget(&lesson, v1_cost(batch, seq, dim));
    lesson_start(&lesson);

    Cell cell = part1_the_notebooks_cell(batch, seq, dim, lesson.heatmap);
    part2_what_thop_counted(&cell);
    part3_the_aside_X_T(cell.X);
    return lesson_finish(&lesson);
}
