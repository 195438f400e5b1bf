// Lesson 3: self-attention-v2 - one fused projection to Q, K, V, a split, and output_proj.
//
// WHAT THIS ADDS
//   Lesson 2 (SelfAttV1) had three Linear(dim, dim) layers for Q, K and V.
//   SelfAttV2 (the Self Attention notebook) stacks them into ONE Linear(dim, 3*dim) named
//   `proj`, runs one matrix multiply, and cuts its output in three with
//   torch.split. The cut copies nothing: Q, K and V are views into QKV.
//   It also adds `output_proj`, a Linear(dim, dim) after the attention,
//   which every real transformer block has.
//
// THE MATH (B = batch, T = seq as queries, S = seq as keys, C = dim)
//   QKV = X Wp^T + bp,  Wp = [Wq; Wk; Wv] (3C, C), bp = [bq; bk; bv]  (B, T, 3C)
//   Q, K, V = QKV[..., 0:C], QKV[..., C:2C], QKV[..., 2C:3C]        (B, T, C) each
//   att_weight = softmax(Q @ K^T / sqrt(C), dim=-1)                  (B, T, S)
//   output = att_weight @ V;   ret = output Wo^T + bo                (B, T, C)
//
// THE PYTORCH IT MIRRORS (the notebook's cell; docs/03-self-attention-v2.md has it whole)
//   torch.manual_seed(seed)
//   X = torch.rand(batch, seq, dim)
//   net = SelfAttV2(dim)                   # proj (3*dim), then output_proj
//   net(X).shape
//   flops_v2, params_v2 = profile(net, inputs=(X,))      # thop
//   print(f"SelfAttV2 FLOPs: {flops_v2 / 1e6:.6f} MFLOPs")   # the notebook
//   print(f"SelfAttV2 Parameters: {params_v2 / 1e6:.6f} M")  # says SelfAttV1
//
// RUN IT
//   make lesson-3                      (flags: --batch 3 --seq 2 --dim 4, --seed N,
//   make lesson-3 ARGS="--seed 7"       --dump DIR, --dot FILE, --heatmap, --help)
//
// WHAT TO LOOK FOR
//   - The profile lines say SelfAttV2: the notebook prints "SelfAttV1" here,
//     a label copied from the cell above; the numbers are V2's.
//   - 0.000384 = 0.000288 (proj: the same multiply-adds as V1's three
//     projections) + 0.000096 (output_proj). Fusing saves no arithmetic.
//   - Q, K and V have QKV's strides (3*dim*seq, 3*dim, 1) and start at
//     offsets 0, dim and 2*dim of QKV's storage: split made views.
//   - Cutting proj.weight into three (dim, dim) blocks and running them as
//     V1 does gives Q, K and V again, to the last bit.
//
// THE PARTS (each a function below, called from main in this order)
//   1. the notebook's cell: net(X), then thop's profile() and its two lines
//   2. what net(X) computed (--heatmap draws att_weight)
//   3. torch.split returns views of QKV (--dim moves them)
//   4. V1's three projections stacked are V2's proj (--dim sizes them)
//   5. what thop counted, and what it left out (--batch, --seq, --dim)
//
// Size letters (the repository's, docs/README.md): B = batch, T = seq as query
// positions, S = seq as key positions (S = T: self-attention), C = dim.
// Index letters: b batch, t query position, s key position.

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "attention.h"

// --- the module: SelfAttV2 ----------------------------------------------------------

// class SelfAttV2(nn.Module): fused projection, split, output_proj.
typedef struct {
    int dim;
    Linear proj;          // weight (3C, C), bias (3C,): query, key, value rows stacked
    Linear output_proj;   // weight (C, C), bias (C,)
} SelfAttV2;

// The forward's local variables, kept for main() to look at and the tests
// to check (the notebook's forward keeps them to itself).
typedef struct {
    const Tensor *QKV;          // (B, T, 3C)
    const Tensor *Q, *K, *V;    // (B, T, C), views into QKV
    const Tensor *att_weight;   // (B, T, S)
    const Tensor *output;       // (B, T, C), before output_proj
} SelfAttV2Steps;

// SelfAttV2(dim): proj draws first (weight, bias), then output_proj, as in
// PyTorch's __init__.
//
// Why one big matrix (the notebook's comment): for a small model that fits
// on one GPU, like the BERT-sized models of a few years ago, one large
// matrix multiply is faster than three small ones run one after another:
// X is read once instead of three times and one kernel is launched instead
// of three. Today's LLMs have tensors so large that they are cut across
// GPUs anyway (tensor parallelism splits each projection's columns between
// devices), so fusing them into one matrix no longer buys anything there.
static SelfAttV2 SelfAttV2_init(int dim) {
    SelfAttV2 self;
    self.dim = dim;
    self.proj = linear_init("proj", dim, dim * 3, true);
    self.output_proj = linear_init("output_proj", dim, dim, true);
    return self;
}

// SelfAttV2.forward(X): X (B, T, C) -> ret = output_proj(output) (B, T, C).
static Tensor *SelfAttV2_forward(SelfAttV2Steps *steps, const SelfAttV2 *self, const Tensor *X) {
    // X shape is: (batch, seq, dim)
    const Tensor *QKV = named("QKV", linear(&self->proj, X));                     // (B, T, 3C)
    // torch.split(QKV, self.dim, dim=-1): three windows onto QKV's storage,
    // each dim wide, starting at columns 0, dim and 2*dim. No copy.
    const Tensor *parts[3];                                                       // 3 x (B, T, C)
    split(parts, QKV, self->dim, 3);
    const Tensor *Q = named("Q", parts[0]);                                       // (B, T, C)
    const Tensor *K = named("K", parts[1]);                                       // (B, T, C)
    const Tensor *V = named("V", parts[2]);                                       // (B, T, C)

    // As in V1: scores scaled by 1/sqrt(dim) so their size does not grow
    // with dim, then a softmax over the keys (the last dim).
    float scale = (float)sqrt((double)self->dim);   // math.sqrt, rounded to float
    const Tensor *scores = matmul(Q, transpose(K, -1, -2));                       // (B, T, S)
    const Tensor *att_weight =
        named("att_weight", softmax(div_scalar(scores, scale), -1));              // (B, T, S)
    const Tensor *output = named("output", matmul(att_weight, V));                // (B, T, C)
    // output_proj mixes the attended values across channels. With one head
    // it is the W^O of "Attention Is All You Need"; with many heads
    // (lesson 6) it is what lets the heads' outputs combine.
    Tensor *ret = linear(&self->output_proj, output);                             // (B, T, C)
    named("ret", ret);

    if (steps != NULL) {
        *steps = (SelfAttV2Steps){QKV, Q, K, V, att_weight, output};
    }
    return ret;
}

// --- part 1: the notebook's cell: net(X), then thop's profile() -------------------------

typedef struct {
    long long flops;    // thop's "FLOPs": really multiply-adds (MACs)
    long long params;   // parameter count
} Profile;

// thop's count_linear: in_features multiply-adds for each element of the
// output, i.e. in_features * (rows * out_features) where `rows` vectors
// (batch * seq) went through the layer. The bias add is the last of each
// dot product's in_features adds, so it needs no count of its own.
static long long count_linear(const Linear *layer, long long rows) {
    return (long long)layer->in_features * (rows * layer->out_features);
}

static long long count_params(const Linear *layer) {
    long long n = numel(layer->weight);
    return layer->bias != NULL ? n + numel(layer->bias) : n;
}

// profile(net, inputs=(X,)): hooks count_linear onto both Linear layers,
// runs net(X) once more under torch.no_grad() (V2's forward prints nothing,
// so only thop's own [INFO] line appears), and sums.
static Profile thop_profile(const SelfAttV2 *net, const Tensor *X) {
    printf("[INFO] Register count_linear() for <class 'torch.nn.modules.linear.Linear'>.\n");
    bool was_paused = trace_pause(true);   // --dot and --dump show the first forward only
    SelfAttV2_forward(NULL, net, X);
    trace_pause(was_paused);

    long long rows = numel(X) / size(X, -1);   // batch * seq vectors through each layer
    Profile profile = {0, 0};
    profile.flops = count_linear(&net->proj, rows) + count_linear(&net->output_proj, rows);
    profile.params = count_params(&net->proj) + count_params(&net->output_proj);
    return profile;
}

// What part 1 made, for the parts after it.
typedef struct {
    const Tensor *X;        // (B, T, C)
    SelfAttV2 net;
    SelfAttV2Steps steps;   // of net(X)
    const Tensor *ret;      // (B, T, C) net(X)
    Profile profile;
} Cell;

// The notebook's cell, in its order: X, SelfAttV2(dim), net(X), then
// profile() and its two lines, which come first in the output, so it diffs
// against the notebook's.
static Cell part1_the_notebooks_cell(int batch, int seq, int dim) {
    Cell cell;
    cell.X = named("X", rand_tensor(shape3(batch, seq, dim)));                    // (B, T, C)
    cell.net = SelfAttV2_init(dim);
    // The notebook writes `net(X).shape` mid-cell, where Jupyter shows
    // nothing (only a cell's last expression is displayed); part 2 prints
    // it after the notebook's lines, so those still come first.
    cell.ret = SelfAttV2_forward(&cell.steps, &cell.net, cell.X);                 // (B, T, C)
    cell.profile = thop_profile(&cell.net, cell.X);
    // The notebook prints these two lines as "SelfAttV1 FLOPs" and
    // "SelfAttV1 Parameters": the f-strings were copied from the V1 cell and
    // not renamed. The numbers are SelfAttV2's, so the label should be too.
    printf("SelfAttV2 FLOPs: %.6f MFLOPs\n", (double)cell.profile.flops / 1e6);
    printf("SelfAttV2 Parameters: %.6f M\n", (double)cell.profile.params / 1e6);
    return cell;
}

// --- part 2: what net(X) computed (--heatmap) ---------------------------------------------

// What net(X) computed, as print() shows tensors that autograd recorded.
// ret's grad_fn is ViewBackward0: PyTorch's Linear flattens a contiguous
// 3-D input to (B*T, C), does one addmm and views the result back.
static void part2_what_net_computed(const Cell *cell, bool heatmap) {
    const SelfAttV2Steps *steps = &cell->steps;
    const Tensor *ret = cell->ret;
    printf("\n-- part 2: what net(X) computed (--heatmap draws att_weight) --\n");
    printf("net(X).shape: %s\n", size_str(ret));
    printf("att_weight: %s\n", tensor_str(steps->att_weight, "grad_fn=<SoftmaxBackward0>"));
    printf("ret: %s\n", tensor_str(ret, "grad_fn=<ViewBackward0>"));
    if (heatmap) {
        printf("\n");
        print_heatmap("att_weight", steps->att_weight);
    }
}

// One line per tensor: t.shape, t.stride(), t.storage_offset(), t.is_contiguous().
static void show_view(const char *name, const Tensor *t) {
    printf("%s: %s stride %s storage_offset %d is_contiguous %s\n", name, size_str(t),
           stride_str(t), t->offset, is_contiguous(t) ? "True" : "False");
}

// --- part 3: torch.split returns views of QKV (--dim) -------------------------------------

// torch.split made views: same storage, QKV's strides, a moved start.
// Element Q[b, t, d] is QKV's storage at b*stride0 + t*stride1 + d; K's
// is the same plus dim, V's plus 2*dim. Q is not contiguous (its rows
// are 3*dim apart), which matters for view() in the multi-head lessons.
static void part3_split_views(const Cell *cell) {
    const SelfAttV2Steps *steps = &cell->steps;
    printf("\n-- part 3: torch.split returns views of QKV (--dim moves them) --\n");
    show_view("QKV", steps->QKV);
    show_view("Q", steps->Q);
    show_view("K", steps->K);
    show_view("V", steps->V);
    // Q.storage().data_ptr() == QKV.storage().data_ptr() in PyTorch.
    const float *storage = steps->QKV->data;
    bool shared = steps->Q->data == storage && steps->K->data == storage &&
                  steps->V->data == storage;
    printf("Q, K and V share QKV's storage: %s\n", shared ? "True" : "False");
}

// --- part 4: V1's three projections stacked are V2's proj (--dim) --------------------------

// Rows [start, start+length) of a Linear's weight and bias, as a Linear of
// its own: weight[start:start+length] and bias[start:start+length] in
// PyTorch, views onto the fused layer's numbers (nothing copied).
static Linear rows_of(const Linear *layer, int start, int length) {
    Linear part = {narrow(layer->weight, 0, start, length),     // (C, C)
                   narrow(layer->bias, 0, start, length),       // (C,)
                   layer->in_features, length};
    return part;
}

// V1 is V2 with proj cut in three. Rows 0..dim-1 of proj.weight are
// query_proj.weight, the next dim rows key_proj.weight, the last dim
// value_proj.weight (the same for the bias). Running them V1's way, as
// three separate Linear layers, gives Q, K and V again. (Here to the
// last bit, because each output element is the same dot product in the
// same order. A BLAS is free to block a (3C, C) and a (C, C) product
// differently, which could change the last bit; the PyTorch 1.13 of the
// tests gives equal bits too.)
static void part4_v1_inside_v2(const Cell *cell) {
    const SelfAttV2 *net = &cell->net;
    const SelfAttV2Steps *steps = &cell->steps;
    const Tensor *X = cell->X;
    printf("\n-- part 4: V1's three projections stacked are V2's proj (--dim sizes them) --\n");
    int C = net->dim;
    Linear query_proj = rows_of(&net->proj, 0, C);
    Linear key_proj = rows_of(&net->proj, C, C);
    Linear value_proj = rows_of(&net->proj, 2 * C, C);
    const Tensor *weights[] = {query_proj.weight, key_proj.weight,
                               value_proj.weight};                                // 3 x (C, C)
    const Tensor *biases[] = {query_proj.bias, key_proj.bias, value_proj.bias};   // 3 x (C,)
    const Tensor *stacked_weight = cat(weights, 3, 0);                            // (3C, C)
    const Tensor *stacked_bias = cat(biases, 3, 0);                               // (3C,)
    printf("stacked weights %s, max |stacked - proj.weight| = %g\n",
           size_str(stacked_weight), max_abs_diff(stacked_weight, net->proj.weight));
    printf("stacked biases  %s, max |stacked - proj.bias|   = %g\n", size_str(stacked_bias),
           max_abs_diff(stacked_bias, net->proj.bias));
    // Each query_proj(X), key_proj(X), value_proj(X) below is (B, T, C), like Q.
    printf("max |query_proj(X) - Q| = %g\n", max_abs_diff(linear(&query_proj, X), steps->Q));
    printf("max |key_proj(X) - K|   = %g\n", max_abs_diff(linear(&key_proj, X), steps->K));
    printf("max |value_proj(X) - V| = %g\n", max_abs_diff(linear(&value_proj, X), steps->V));
}

// --- part 5: what thop counted, and what it left out (--batch, --seq, --dim) ----------------

// The part thop cannot see, counted as in lesson 2: Q @ K^T and
// att_weight @ V are batch*seq*seq*dim multiply-adds each, the scaling one
// division per score, the softmax 3 operations per weight (exp, add to the
// row sum, divide; the max-subtraction left out, as most counters do).
// check_fits in main() keeps batch*seq*seq within 2^26 and dim is at most
// 2^16, so no product here reaches 2^43.
static long long attention_count(long long batch, long long seq, long long dim) {
    long long scores = batch * seq * seq * dim;
    long long scale = batch * seq * seq;
    long long softmax_ops = 3 * (batch * seq * seq);
    long long mix = batch * seq * seq * dim;
    return scores + scale + softmax_ops + mix;
}

// The counts. proj does exactly the multiply-adds of V1's three
// projections; output_proj is the only new work.
static void part5_what_thop_counted(const Cell *cell) {
    const Profile *profile = &cell->profile;
    const SelfAttV2 *net = &cell->net;
    int batch = size(cell->X, 0), seq = size(cell->X, 1), dim = size(cell->X, 2);
    long long rows = (long long)batch * seq;
    long long attention = attention_count(batch, seq, dim);
    printf("\n-- part 5: what thop counted, and what it left out (--batch, --seq and --dim change "
           "it) --\n");
    printf("  proj         %d x (%d*%d*%d) = %lld  (= V1's three projections)\n", dim, batch,
           seq, 3 * dim, count_linear(&net->proj, rows));
    printf("  output_proj  %d x (%d*%d*%d) = %lld\n", dim, batch, seq, dim,
           count_linear(&net->output_proj, rows));
    printf("  Parameters = (dim*3*dim + 3*dim) + (dim*dim + dim) = %lld + %lld = %lld\n",
           count_params(&net->proj), count_params(&net->output_proj), profile->params);
    printf("  not seen by thop: Q @ K^T, / sqrt(dim), softmax, att_weight @ V = %lld\n",
           attention);
    printf("counted by thop:    %lld = %.6f M\n", profile->flops, (double)profile->flops / 1e6);
    printf("the whole forward:  %lld = %.6f M\n", profile->flops + attention,
           (double)(profile->flops + attention) / 1e6);
}

// --- the budget: what a run of these sizes holds and does (lesson/budget.h) ----------

// Counted from the code above: X and the two layers; two forwards (net(X)
// and thop's), each making QKV (B, T, 3C), output and ret (B, T, C) and
// three (B, T, T): the scores, the scaled scores, att_weight; then V1's
// check: the stacked weights (3C, C) and three projections (B, T, C).
static Cost v2_cost(double B, double T, double C) {
    return (Cost){
        .bytes = 4 * (14 * B * T * C + 6 * B * T * T + 7 * C * C + 7 * C),
        .dumped = 4 * (9 * B * T * C + B * T * T + 4 * C * C + 4 * C),
        .multiply_adds = 11 * B * T * C * C + 4 * B * T * T * C,
        .exps = 2 * B * T * T,
        .elements = 14 * B * T * C + 4 * B * T * T + 10 * C * C,
    };
}

// --- the lesson ---------------------------------------------------------------------

int main(int argc, char **argv) {
    int batch = 3, seq = 2, dim = 4;   // the notebook's torch.rand(3, 2, 4), SelfAttV2(4)
    SizeFlag sizes[] = {
        {"--batch", &batch, "batch size"},
        {"--seq", &seq, "sequence length"},
        {"--dim", &dim, "hidden dimension"},
    };
    Lesson lesson = {
        .program = "lesson-3",
        .summary = "self-attention-v2: SelfAttV2 of the Self Attention notebook, one fused "
                   "Q/K/V projection, "
                   "split, output_proj",
        .sizes = sizes,
        .n_sizes = 3,
    };
    parse_lesson_args(&lesson, argc, argv);
    // The biggest tensors: QKV (B, T, 3C), att_weight (B, T, S), proj.weight (3C, C).
    check_fits(&lesson, "QKV (batch, seq, 3*dim)", shape3(batch, seq, 3 * dim));
    check_fits(&lesson, "att_weight (batch, seq, seq)", shape3(batch, seq, seq));
    check_fits(&lesson, "proj.weight (3*dim, dim)", shape2(3 * dim, dim));
    check_budget(&lesson, v2_cost(batch, seq, dim));
    lesson_start(&lesson);

    Cell cell = part1_the_notebooks_cell(batch, seq, dim);
    part2_what_net_computed(&cell, lesson.heatmap);
    part3_split_views(&cell);
    bool was_paused = trace_pause(true);   // a check, not part of the dataflow
    part4_v1_inside_v2(&cell);
    trace_pause(was_paused);
    part5_what_thop_counted(&cell);
    return lesson_finish(&lesson);
}
