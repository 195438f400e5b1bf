// Lesson 11: vit-block - attention inside a Transformer block, as Vision
// Transformer builds it.
//
// WHAT THIS ADDS
//   Lessons 1-10 stop at the attention operation. Chen Ming's post (陈铭,
//   "Self-Attention自注意力机制源码学习", 2024) goes on to build it into
//   whole Transformer blocks; this lesson ports its first one, Vision
//   Transformer's `Block`, with its `Attention` and `Mlp`:
//     - the post's numpy multi-head cell first: the shapes alone, [3, 768]
//       cut into 8 heads of 96, with no projections and no scale;
//     - Attention: ONE Linear(C, 3C) makes q, k and v at once, and ONE
//       reshape + permute splits them AND the heads, as views;
//       `* scale` with scale = head_dim ** -0.5;
//     - Mlp: Linear(C, hidden), GELU, Linear(hidden, C) (the "feed-forward
//       network", 前馈网络);
//     - Block: LayerNorm before each sublayer (pre-norm), each sublayer's
//       output added to its input (the residual connection, 残差连接), and
//       DropPath (stochastic depth) on both branches.
//   The post uses GELU and DropPath without defining them; the lesson takes
//   nn.GELU() (the erf form) and timm's DropPath, and says so.
//
// THE MATH (per sample; C = dim, H heads, D = C / H, hidden = int(C * mlp_ratio))
//   LayerNorm(x) = (x - mean(x)) / sqrt(var(x) + 1e-5) * weight + bias, over a row's C numbers
//   attn(h)  = proj(concat_h softmax(q_h k_h^T * D^-0.5) v_h),  [q, k, v] = h W_qkv^T
//   mlp(h)   = fc2(GELU(fc1(h))),  GELU(z) = z * Phi(z) = z/2 * (1 + erf(z / sqrt 2))
//   x = x + drop_path(attn(norm1(x)))
//   x = x + drop_path(mlp(norm2(x)))
//   drop_path(b) = b * m / (1 - p), one m ~ Bernoulli(1 - p) per sample (train mode only)
//
// THE PYTORCH IT MIRRORS (the post's classes; docs/11-vit-block.md has the
// complete script that prints the same numbers)
//   torch.manual_seed(seed)
//   block = Block(dim, heads, mlp_ratio, qkv_bias, drop, attn_drop, drop_path)
//   x = torch.randn(batch, seq, dim)
//   block.train() if train else block.eval()
//   out = block(x)
//   Query, Key, Value = torch.rand(3, 768), torch.rand(3, 768), torch.rand(3, 768)
//   ... the post's numpy cell on them
//
// RUN IT
//   make lesson-11       flags: --batch 2 --seq 5 --dim 16 --heads 4 --mlp-ratio 4,
//                        --qkv-bias, --drop P --attn-drop P --drop-path P (default 0),
//                        --train, --heatmap, --seed, --dump, --dot
//   make lesson-11 ARGS="--train --drop 0.1 --attn-drop 0.1 --drop-path 0.5 --seed 3"
//
// WHAT TO LOOK FOR
//   - The numpy cell's five shapes, (8, 3, 3) ... (3, 768): the post's text
//     says 12 heads of 64, its code uses 8 of 96.
//   - qkv's strides before and after the permute: (240, 48, 16, 4, 1) becomes
//     (16, 240, 4, 48, 1); q, k, v start 0, 16 and 32 floats into the same
//     memory. Nothing is copied until (attn @ v).transpose(1, 2).reshape().
//   - `* scale` and lesson 6's `/ sqrt(head_dim)` give the same bits when
//     head_dim is a power of 4 (4, 16, 64), and differ in a last bit otherwise.
//   - Every row of norm1(x) has mean 0 and variance 1 before weight and bias.
//   - GELU against its tanh form: at most 4.7e-4 apart.
//   - Pre-norm leaves the residual stream's scale alone; post-norm (BERT,
//     lesson 12) renormalises it after every sublayer.
//   - The MLP costs more than attention until the sequence passes
//     (mlp_ratio - 2) * dim positions.
//   - DropPath drops a whole sample's branch; dropout drops single numbers.
//
// THE PARTS (each a function below, called from main in this order)
//   1. the post's numpy multi-head cell: [3, 768] in 8 heads of 96
//   2. the post's Block: its input and norm1 (the Block's flags)
//   3. attn: the fused qkv, one reshape and one permute, the scale (--qkv-bias, --heads)
//   4. the residuals, DropPath and the MLP's GELU (--drop-path, --train)
//   5. pre-norm (this block) against post-norm (BERT, lesson 12)
//   6. the parameters (--dim, --mlp-ratio, --qkv-bias)
//   7. the multiply-adds of the forward, counted as they ran (--seq)
//   8. DropPath against dropout (--seed)
//   appendix A, after main: parts 6 and 7, which count, and the floats part 3 counts
//
// Size letters (the repository's, docs/README.md): B batch, N positions of the
// sequence, queries and keys alike (the post's N; with queries and keys apart
// they are T and S), C dim, H heads, D head_dim = C / H, F the MLP's hidden
// size int(C * mlp_ratio).
// Index letters: b batch, h head, t query position, s key position, c one of
// the C channels.

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"

// --- the post's numpy multi-head cell ----------------------------------------------------

// The cell's own sizes, fixed in the post (the block's flags do not change them).
enum { VALUES_LENGTH = 3, NUM_ATTENTION_HEADS = 8, HIDDEN_SIZE = 768 };

// What the cell prints the shapes of, in its order.
typedef struct {
    const Tensor *scores;    // (8, 3, 3) Query @ Key^T, before soft_max
    const Tensor *weights;   // (8, 3, 3) after soft_max
    const Tensor *heads;     // (8, 3, 96) scores @ Value
    const Tensor *by_row;    // (3, 8, 96) transposed back
    const Tensor *out;       // (3, 768)
} NumpyCellSteps;

// The post's cell, called there "VisionTransformer's Attention": split 768
// numbers into heads, transpose the heads to the front, attend per head,
// transpose back, merge. It has NO Linear projections (Query, Key and Value
// are the random inputs themselves), NO 1/sqrt(96) before the softmax, and no
// output projection: only the shapes of multi-head attention. The post's text
// says "12 heads, [3, 12, 64]" and its code sets num_attention_heads = 8.
static const Tensor *numpy_cell(NumpyCellSteps *steps, const Tensor *Query, const Tensor *Key,
                                const Tensor *Value) {
    int values_length = VALUES_LENGTH;
    int num_attention_heads = NUM_ATTENTION_HEADS;
    int hidden_size = HIDDEN_SIZE;
    int attention_head_size = hidden_size / num_attention_heads;   // 96
    Shape per_head = shape3(values_length, num_attention_heads, attention_head_size);
    const int heads_first[3] = {1, 0, 2};   // np.transpose(t, [1, 0, 2])

    Query = permute(reshape(Query, per_head), heads_first);                   // (8, 3, 96)
    Key = permute(reshape(Key, per_head), heads_first);                       // (8, 3, 96)
    Value = permute(reshape(Value, per_head), heads_first);                   // (8, 3, 96)

    const Tensor *scores = matmul(Query, permute(Key, (const int[]){0, 2, 1}));  // (8, 3, 3)
    // The post's soft_max is exp(z) / sum(exp(z)) without subtracting the
    // maximum (lesson 1 shows it overflowing for scores past 88); here the
    // scores are about 24, so the helper's softmax gives the same numbers.
    const Tensor *weights = softmax(scores, -1);                              // (8, 3, 3)
    const Tensor *heads = matmul(weights, Value);                             // (8, 3, 96)
    const Tensor *by_row = permute(heads, heads_first);                       // (3, 8, 96)
    const Tensor *out = reshape(by_row, shape2(values_length, hidden_size));  // (3, 768)
    if (steps != NULL) {
        *steps = (NumpyCellSteps){scores, weights, heads, by_row, out};
    }
    return out;
}

// --- the modules: Attention, Mlp, DropPath, Block --------------------------------------------

// class Attention(nn.Module) of the post.
typedef struct {
    int num_heads;      // H
    double scale;       // head_dim ** -0.5, a Python float
    Linear qkv;         // C -> 3C: the query, key and value projections side by side
    double attn_drop;   // nn.Dropout(attn_drop) on the weights
    Linear proj;        // C -> C: mixes the heads
    double proj_drop;   // nn.Dropout(proj_drop) on the output
    bool training;
} Attention;

typedef struct {
    const Tensor *fused;        // (B, N, 3C) self.qkv(x), before the reshape
    const Tensor *qkv;          // (3, B, H, N, D) after reshape and permute: views of fused
    const Tensor *q, *k, *v;    // (B, H, N, D) qkv[0], qkv[1], qkv[2]: views too
    const Tensor *attn_probs;   // (B, H, N, N) softmax, before attn_drop
} AttentionSteps;

static Attention Attention_init(int dim, int num_heads, bool qkv_bias, double attn_drop,
                                double proj_drop) {
    Attention self;
    self.num_heads = num_heads;
    // (dim // num_heads) ** -0.5 in Python is pow() in double; it becomes a
    // float when it multiplies the float scores.
    self.scale = pow((double)(dim / num_heads), -0.5);
    // ONE Linear for q, k and v: rows 0..C-1 of its weight make q, rows
    // C..2C-1 make k, rows 2C..3C-1 make v (lesson 3's fused projection).
    // ViT leaves its bias out by default (qkv_bias=False); BERT has them.
    self.qkv = linear_init("attn.qkv", dim, dim * 3, qkv_bias);
    self.attn_drop = attn_drop;
    self.proj = linear_init("attn.proj", dim, dim, true);
    self.proj_drop = proj_drop;
    self.training = true;
    return self;
}

// Attention.forward(x): x (B, N, C) -> (B, N, C). Returns what proj_drop
// returns, which in eval mode is its input itself: hence const.
static const Tensor *Attention_forward(AttentionSteps *steps, const Attention *self,
                                       const Tensor *x) {
    int B = size(x, 0), N = size(x, 1), C = size(x, 2);
    // qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads)
    //                  .permute(2, 0, 3, 1, 4)
    // One line does the work of lesson 6's three projections, three views
    // and three transposes. reshape() of the contiguous (B, N, 3C) output
    // only re-reads it: element [b, t, i, h, d] is fused[b, t, i*C + h*D + d]
    // (i = 0 for q, 1 for k, 2 for v). permute(2, 0, 3, 1, 4) then moves i
    // to the front and the heads before the positions, by reordering the
    // strides: still no copy.
    const Tensor *fused = labeled("self.qkv(x)", linear(&self->qkv, x));      // (B, N, 3C)
    const Tensor *qkv = reshape(fused, shape5(B, N, 3, self->num_heads,
                                              C / self->num_heads));          // (B, N, 3, H, D)
    qkv = labeled("qkv", permute(qkv, (const int[]){2, 0, 3, 1, 4}));         // (3, B, H, N, D)
    // q, k, v = qkv[0], qkv[1], qkv[2]: indexing the first dim is a view,
    // the same strides without the first, starting 0, C or 2C floats in.
    const Tensor *q = select_index(qkv, 0, 0);                                // (B, H, N, D)
    const Tensor *k = select_index(qkv, 0, 1);                                // (B, H, N, D)
    const Tensor *v = select_index(qkv, 0, 2);                                // (B, H, N, D)
    labeled("q", q);
    labeled("k", k);
    labeled("v", v);

    // attn = (q @ k.transpose(-2, -1)) * self.scale: a multiplication by
    // 1/sqrt(D) where lesson 6 divides by sqrt(D). Mathematically the same;
    // in floats the same bits exactly when D is a power of 4 (main() shows it).
    const Tensor *attn = mul_scalar(matmul(q, transpose(k, -2, -1)),
                                    (float)self->scale);                      // (B, H, N, N)
    attn = named("attn_probs", softmax(attn, -1));                            // (B, H, N, N)
    const Tensor *attn_probs = attn;
    attn = dropout(attn, self->attn_drop, self->training);                    // (B, H, N, N)

    // x = (attn @ v).transpose(1, 2).reshape(B, N, C): the heads of each
    // position side by side again. After the transpose the memory is not in
    // (B, N, H, D) order, so this reshape copies (lesson 6's contiguous().view();
    // with one head or one position nothing is out of order, and it does not).
    const Tensor *heads = matmul(attn, v);                                    // (B, H, N, D)
    x = reshape(transpose(heads, 1, 2), shape3(B, N, C));                     // (B, N, C)
    x = labeled("attn(x)", linear(&self->proj, x));                           // (B, N, C)
    x = dropout(x, self->proj_drop, self->training);                          // (B, N, C)
    if (steps != NULL) {
        *steps = (AttentionSteps){fused, qkv, q, k, v, attn_probs};
    }
    return x;
}

// class Mlp(nn.Module) of the post (timm's: "MLP as used in Vision
// Transformer, MLP-Mixer and related networks"). The same two-layer network
// is BERT's intermediate + output and the original Transformer's
// "position-wise feed-forward network": applied to every position on its
// own, it mixes the C numbers of a position, where attention mixed positions.
typedef struct {
    Linear fc1;      // C -> F, F = int(C * mlp_ratio): 4C in ViT and BERT
    double drop1;
    Linear fc2;      // F -> C
    double drop2;
    bool training;
} Mlp;

typedef struct {
    const Tensor *hidden;      // (B, N, F) fc1(x)
    const Tensor *activated;   // (B, N, F) GELU(fc1(x))
} MlpSteps;

static Mlp Mlp_init(int in_features, int hidden_features, double drop) {
    Mlp self;
    self.fc1 = linear_init("mlp.fc1", in_features, hidden_features, true);
    self.drop1 = drop;
    self.fc2 = linear_init("mlp.fc2", hidden_features, in_features, true);
    self.drop2 = drop;
    self.training = true;
    return self;
}

static const Tensor *Mlp_forward(MlpSteps *steps, const Mlp *self, const Tensor *x) {
    const Tensor *hidden = labeled("fc1", linear(&self->fc1, x));             // (B, N, F)
    // self.act: the post's act_layer=GELU, a name it never defines. timm's
    // Mlp, where this class comes from, uses nn.GELU: x * Phi(x), the erf
    // form. (The GitHub repository these classes come from line for line,
    // bubbliiiing/blip-pytorch, defines GELU as the tanh approximation;
    // main() prints both forms and how far apart they are.)
    const Tensor *activated = labeled("GELU", gelu(hidden));                  // (B, N, F)
    x = dropout(activated, self->drop1, self->training);                      // (B, N, F)
    x = labeled("mlp(x)", linear(&self->fc2, x));                             // (B, N, C)
    x = dropout(x, self->drop2, self->training);                              // (B, N, C)
    if (steps != NULL) {
        *steps = (MlpSteps){hidden, activated};
    }
    return x;
}

// DropPath (stochastic depth), also used by the post without a definition;
// this is timm's:
//     keep_prob = 1 - drop_prob
//     random_tensor = x.new_empty((x.shape[0], 1, 1)).bernoulli_(keep_prob)
//     random_tensor.div_(keep_prob)
//     return x * random_tensor
// ONE draw per sample: a sample's whole branch (attention or MLP) is kept,
// scaled by 1/(1 - p), or dropped, and then the residual connection passes
// the sample's x through unchanged: for that sample the block is shorter.
// Dropout draws one number per element instead.
typedef struct {
    double drop_prob;
    bool training;
} DropPath;

static const Tensor *DropPath_forward(const DropPath *self, const Tensor *x) {
    if (self->drop_prob == 0.0 || !self->training) {
        return x;   // nn.Identity() for drop_path = 0; DropPath in eval mode: no draws
    }
    double keep_prob = 1.0 - self->drop_prob;
    Shape per_sample = {x->shape.ndim, {size(x, 0), 1, 1, 1, 1}};                   // (B, 1, 1)
    Tensor *random_tensor = bernoulli(per_sample, keep_prob);                 // (B, 1, 1)
    labeled("drop_path mask", random_tensor);
    // div_ by a Python float: a float division by (float)keep_prob, as dropout's.
    const Tensor *scaled = div_scalar(random_tensor, (float)keep_prob);       // (B, 1, 1)
    return mul(x, scaled);                                                    // (B, N, C)
}

// class Block(nn.Module) of the post: two sublayers, each with a LayerNorm
// in front and a residual connection around it (pre-norm).
//
// LayerNorm (nn.LayerNorm(dim), layer_norm() in ops.h) works on each
// position's C numbers alone: subtract their mean, divide by the square root
// of their biased variance (the mean of the squared deviations, divided by
// C) plus eps = 1e-5, then multiply by `weight` and add `bias`, one of each
// per channel, learned (they start as 1 and 0). The sublayer then reads
// numbers of a steady scale however the stream has grown. BatchNorm would
// normalise each channel over the batch instead; LayerNorm needs no batch.
// Pre-norm (ViT, GPT-2): x + sublayer(norm(x)), the stream itself is never
// normalised. Post-norm (BERT, lesson 12): norm(x + sublayer(x)), every
// block's output is; main() runs both with the same weights.
typedef struct {
    LayerNorm norm1;       // nn.LayerNorm(dim): eps 1e-5, weight ones, bias zeros
    Attention attn;
    LayerNorm norm2;
    Mlp mlp;
    DropPath drop_path;    // nn.Identity() when drop_path is 0
} Block;

typedef struct {
    const Tensor *normed1;     // (B, N, C) norm1(x)
    AttentionSteps attn;
    const Tensor *residual;    // (B, N, C) x after the first residual connection
    const Tensor *normed2;     // (B, N, C) norm2(residual)
    MlpSteps mlp;
} BlockSteps;

// Block(dim, num_heads, mlp_ratio, qkv_bias, drop, attn_drop, drop_path):
// its parameters are drawn in this order, as PyTorch creates them (norm1 and
// norm2 draw nothing). `hidden` is int(dim * mlp_ratio), worked out by main().
static Block Block_init(int dim, int num_heads, int hidden, bool qkv_bias, double drop,
                        double attn_drop, double drop_path) {
    Block self;
    self.norm1 = layer_norm_init("norm1", dim, 1e-5);
    self.attn = Attention_init(dim, num_heads, qkv_bias, attn_drop, drop);
    self.norm2 = layer_norm_init("norm2", dim, 1e-5);
    self.mlp = Mlp_init(dim, hidden, drop);
    self.drop_path = (DropPath){drop_path, true};
    return self;
}

// block.train(training) / block.eval(): every submodule's flag.
static void Block_train(Block *self, bool training) {
    self->attn.training = training;
    self->mlp.training = training;
    self->drop_path.training = training;
}

// Block.forward(x): x (B, N, C) -> (B, N, C). The post reuses the name x
// for the residual stream; here it is x, then residual, then the output.
static Tensor *Block_forward(BlockSteps *steps, const Block *self, const Tensor *x) {
    BlockSteps kept;
    // x = x + self.drop_path(self.attn(self.norm1(x)))
    // Pre-norm: the sublayer sees a normalised copy; the sum keeps x itself.
    kept.normed1 = labeled("norm1(x)", layer_norm_forward(&self->norm1, x));  // (B, N, C)
    const Tensor *attn_out = Attention_forward(&kept.attn, &self->attn, kept.normed1);
    const Tensor *attn_path = DropPath_forward(&self->drop_path, attn_out);   // (B, N, C)
    kept.residual = labeled("x + attn", add(x, attn_path));                   // (B, N, C)
    // x = x + self.drop_path(self.mlp(self.norm2(x)))
    const Tensor *normed2 = layer_norm_forward(&self->norm2, kept.residual);  // (B, N, C)
    kept.normed2 = labeled("norm2(x)", normed2);
    const Tensor *mlp_out = Mlp_forward(&kept.mlp, &self->mlp, kept.normed2);
    const Tensor *mlp_path = DropPath_forward(&self->drop_path, mlp_out);     // (B, N, C)
    Tensor *out = add(kept.residual, mlp_path);                               // (B, N, C)
    if (steps != NULL) {
        *steps = kept;
    }
    return out;
}

// --- part 1: the post's numpy multi-head cell --------------------------------------------------

typedef struct {
    int batch, seq, dim, heads;
    double mlp_ratio;
    int hidden;
    bool qkv_bias, train;
    double drop, attn_drop, drop_path;
} Sizes;

static const char *python_bool(bool value) {
    return value ? "True" : "False";
}

// Appendix A: the multiply-adds of every linear and matmul that ran between
// start_counting() and stop_counting(), in their order; and a sort's order.
enum { MAX_COUNTED = 16 };
static long long counted_macs[MAX_COUNTED];
static void start_counting(void);
static void stop_counting(void);
static int compare_long_long(const void *a, const void *b);

// What part 1 made, for the parts after it.
typedef struct {
    Block block;
    const Tensor *x;                // (B, N, C)
    BlockSteps steps;               // of block(x)
    const Tensor *out;              // (B, N, C)
    NumpyCellSteps numpy;           // the numpy cell's
} Cell;

// The cell's five print(np.shape(...)) lines, and what the missing scale does.
static void print_numpy_cell(const NumpyCellSteps *cell) {
    printf("-- the post's numpy multi-head cell: [3, 768] in 8 heads of 96 --\n");
    const Tensor *shown[5] = {cell->scores, cell->weights, cell->heads, cell->by_row, cell->out};
    for (int i = 0; i < 5; i++) {
        printf("%s\n", shape_str(shown[i]->shape, SIZES_TUPLE));
    }
    // Without the scale, a score is a sum of 96 products of numbers in [0, 1):
    // about 24, spread by a few units, and softmax turns a spread of a few
    // units into one dominant key. Dividing by sqrt(96) shrinks the spread.
    const Tensor *scaled = softmax(div_scalar(cell->scores, sqrtf(96.0f)), -1);   // (8, 3, 3)
    double largest = 0.0, largest_scaled = 0.0;
    int rows = NUM_ATTENTION_HEADS * VALUES_LENGTH;
    for (int h = 0; h < NUM_ATTENTION_HEADS; h++) {
        for (int t = 0; t < VALUES_LENGTH; t++) {
            float top = 0.0f, top_scaled = 0.0f;
            for (int s = 0; s < VALUES_LENGTH; s++) {
                top = fmaxf(top, *at3(cell->weights, h, t, s));
                top_scaled = fmaxf(top_scaled, *at3(scaled, h, t, s));
            }
            largest += top / (double)rows;
            largest_scaled += top_scaled / (double)rows;
        }
    }
    printf("each query's largest weight, averaged: %.4f as the cell computes it, %.4f with "
           "scores / sqrt(96)\n", largest, largest_scaled);
    printf("(the post's text cuts 768 into 12 heads of 64; its code sets 8 heads of 96. The "
           "cell has no\n Linear projections and no 1/sqrt(d), yet the post calls it "
           "VisionTransformer's Attention:\n it shows the shapes of multi-head attention, the "
           "Attention class below is the module.)\n");
}

// The draws, in PyTorch's order: the block's parameters, x, the dropout
// and drop-path masks of the forward (train mode), then the numpy cell's.
// The post's order of printing: the numpy cell, then the block (part 2).
static Cell part1_the_posts_cells(const Sizes *s) {
    Cell cell;
    cell.block = Block_init(s->dim, s->heads, s->hidden, s->qkv_bias, s->drop, s->attn_drop,
                            s->drop_path);
    cell.x = named("x", randn(shape3(s->batch, s->seq, s->dim)));            // (B, N, C)
    Block_train(&cell.block, s->train);
    start_counting();   // part 7 prints what the forward's products cost
    cell.out = named("out", Block_forward(&cell.steps, &cell.block, cell.x));   // (B, N, C)
    stop_counting();

    // The numpy cell on torch.rand(3, 768) draws. It is not part of the
    // block: its steps stay out of the --dot diagram, its result is dumped.
    bool was_paused = trace_pause(true);
    const Tensor *Query = rand_tensor(shape2(VALUES_LENGTH, HIDDEN_SIZE));    // (3, 768)
    const Tensor *Key = rand_tensor(shape2(VALUES_LENGTH, HIDDEN_SIZE));      // (3, 768)
    const Tensor *Value = rand_tensor(shape2(VALUES_LENGTH, HIDDEN_SIZE));    // (3, 768)
    const Tensor *np_out = numpy_cell(&cell.numpy, Query, Key, Value);        // (3, 768)
    trace_pause(was_paused);
    named("np_out", np_out);
    was_paused = trace_pause(true);   // printing looks at what was computed: not drawn
    print_numpy_cell(&cell.numpy);
    trace_pause(was_paused);
    return cell;
}

// --- part 2: the post's Block: its input and norm1 ---------------------------------------------

// The block's line, as Python prints Block(...)'s arguments.
static void print_block_header(const Sizes *s, const Tensor *x) {
    printf("\n-- part 2: the post's Block, step by step (its flags are the Block's arguments) "
           "--\n");
    printf("-- Block(%d, %d, mlp_ratio=%g, qkv_bias=%s, drop=%g, attn_drop=%g, drop_path=%g), "
           "%s mode --\n", s->dim, s->heads, s->mlp_ratio, python_bool(s->qkv_bias), s->drop,
           s->attn_drop, s->drop_path, s->train ? "train" : "eval");
    printf("x: %s\n", size_str(x));
}

// The mean and the biased variance (divided by C) of row r of t seen as
// (rows, C), C its last dim; in double, as a check beside the float kernel.
static void row_moments(double *mean, double *var, const Tensor *t, int r) {
    int C = size(t, -1);
    const Tensor *rows = reshape(t, shape2((int)(numel(t) / C), C));         // (rows, C)
    *mean = 0.0;
    *var = 0.0;
    for (int c = 0; c < C; c++) {
        *mean += *at2(rows, r, c) / C;
    }
    for (int c = 0; c < C; c++) {
        *var += (*at2(rows, r, c) - *mean) * (*at2(rows, r, c) - *mean) / C;
    }
}

// Every row: mean 0 (to 1e-6) and biased variance 1 (to 1e-3).
static bool all_rows_normalised(const Tensor *t) {
    long rows = numel(t) / size(t, -1);
    for (int r = 0; r < rows; r++) {
        double mean, var;
        row_moments(&mean, &var, t, r);
        if (!(fabs(mean) < 1e-6 && fabs(var - 1.0) < 1e-3)) {
            return false;
        }
    }
    return true;
}

// norm1 on the first row, by hand and by the module.
static void show_layer_norm(const Block *block, const BlockSteps *steps, const Tensor *x) {
    int C = size(x, 2);
    const Tensor *row = select_index(select_index(x, 0, 0), 0, 0);           // (C)
    double mean, var;
    row_moments(&mean, &var, x, 0);
    printf("x[0, 0]: %s\n", tensor_str(row, NULL));
    printf("its mean %.4f and biased variance %.4f (divided by %d)\n", mean, var, C);
    const Tensor *normed = select_index(select_index(steps->normed1, 0, 0), 0, 0);   // (C)
    printf("norm1(x)[0, 0]: %s\n", tensor_str(normed, NULL));
    printf("(its first: (%.4f - %.4f) / sqrt(%.4f + %g) = %.4f, then * weight (1) + bias (0))\n",
           *at1(row, 0), mean, var, block->norm1.eps,
           (*at1(row, 0) - mean) / sqrt(var + block->norm1.eps));
    // Before weight and bias: the same layer_norm with weight 1, bias 0.
    const Tensor *normalised = layer_norm(x, ones(shape1(C)), zeros(shape1(C)), 1e-5);
    if (C > 1) {
        printf("every row of norm1(x) before weight and bias: mean 0, variance 1: %s\n",
               python_bool(all_rows_normalised(normalised)));
    } else {
        // x * rstd + (-rstd * mean), fused: what is left is the rounding of
        // rstd * mean, a few millionths for a row whose variance is 0.
        float largest = 0.0f;
        for (long i = 0; i < numel(normalised); i++) {
            largest = fmaxf(largest, fabsf(normalised->data[i]));
        }
        printf("a row of one number is its own mean: norm1(x) is 0 but for rounding, at most "
               "%.1e\n", (double)largest);
    }
}

static void part2_the_block(const Cell *cell, const Sizes *s) {
    print_block_header(s, cell->x);
    show_layer_norm(&cell->block, &cell->steps, cell->x);
}

// --- part 3: attn: qkv, one reshape and one permute, the scale (--qkv-bias, --heads) ---------

// The fused projection, and what reshape, permute and qkv[i] do to memory.
static void show_qkv_views(const Sizes *s, const AttentionSteps *a) {
    int B = s->batch, N = s->seq, C = s->dim, H = s->heads, D = s->dim / s->heads;
    printf("\n-- part 3: attn: qkv = Linear(%d, %d, bias=%s), then one reshape and one permute "
           "--\n", C, 3 * C, python_bool(s->qkv_bias));
    printf("self.qkv(x): %s stride %s\n", size_str(a->fused), stride_str(a->fused));
    const Tensor *split = reshape(a->fused, shape5(B, N, 3, H, D));           // (B, N, 3, H, D)
    printf(".reshape(%d, %d, 3, %d, %d): stride %s\n", B, N, H, D, stride_str(split));
    printf(".permute(2, 0, 3, 1, 4): %s stride %s contiguous %s\n", size_str(a->qkv),
           stride_str(a->qkv), python_bool(is_contiguous(a->qkv)));
    printf("q = qkv[0]: %s stride %s storage_offset %d\n", size_str(a->q), stride_str(a->q),
           a->q->offset);
    printf("k = qkv[1]: storage_offset %d | v = qkv[2]: storage_offset %d\n", a->k->offset,
           a->v->offset);
    // A view shares the storage (the same data pointer); only size, stride
    // and offset are its own.
    bool views = a->q->data == a->fused->data && a->k->data == a->fused->data &&
                 a->v->data == a->fused->data;
    printf("q, k and v share one storage, nothing copied: %s\n", python_bool(views));
    printf("(one step along q's head axis moves %d float%s, along its position axis %d: the "
           "Linear's layout)\n", a->q->stride[1], a->q->stride[1] == 1 ? "" : "s", a->q->stride[2]);
}

// Appendix A: of the floats in [1, 2), how many x * scale and x / sqrt(D) round apart.
static long differing_floats(double scale, int head_dim);

static void show_scale(const Sizes *s, const Attention *attn) {
    int D = s->dim / s->heads;
    printf("scale = head_dim ** -0.5 = %d ** -0.5 = %.9g; lesson 6 divides by math.sqrt(%d) = "
           "%.9g\n", D, attn->scale, D, sqrt((double)D));
    printf("of the 8388608 floats in [1, 2), x * scale and x / math.sqrt(%d) differ in %ld\n", D,
           differing_floats(attn->scale, D));
    // When D is a power of 4, sqrt(D) is a power of 2 and both are exact
    // scalings. Otherwise 1/sqrt(D) is rounded before the multiply, and the
    // two land on different floats for some x (for every such D up to 1024;
    // tests/test_lesson11.c checks it), by one or two units in the last place.
    printf("(none differ exactly when head_dim is a power of 4, as 4, 16 and 64 are: then "
           "1/sqrt(head_dim)\n is a power of 2 and both scalings are exact; otherwise some "
           "differ in the last bit or two)\n");
}

static void show_attn_probs(const Lesson *lesson, const AttentionSteps *a) {
    printf("attn_probs[0, 0]:\n%s\n",
           tensor_str(select_index(select_index(a->attn_probs, 0, 0), 0, 0), NULL));
    if (lesson->heatmap) {
        print_heatmap("attn_probs", a->attn_probs);
    }
}

static void part3_attention(const Cell *cell, const Sizes *s, const Lesson *lesson) {
    show_qkv_views(s, &cell->steps.attn);
    show_scale(s, &cell->block.attn);
    show_attn_probs(lesson, &cell->steps.attn);
}

// --- part 4: the residuals, DropPath and the MLP's GELU (--drop-path, --train) ----------------

// Samples b for which after[b] == before[b] in every element: the branch
// added to them was dropped (x + 0 is x). Printed as a Python list.
static void print_dropped_samples(const char *branch, const Tensor *before, const Tensor *after) {
    printf("samples whose %s branch was dropped: [", branch);
    int shown = 0;
    for (int b = 0; b < size(before, 0); b++) {
        if (max_abs_diff(select_index(before, 0, b), select_index(after, 0, b)) == 0.0f) {
            printf("%s%d", shown > 0 ? ", " : "", b);
            shown += 1;
        }
    }
    printf("]\n");
}

static void show_residuals(const Sizes *s, const BlockSteps *steps, const Tensor *x,
                           const Tensor *out) {
    printf("\n-- part 4: x = x + drop_path(attn(norm1(x))), then x = x + drop_path(mlp(norm2(x))) "
           "--\n");
    if (s->drop_path == 0.0) {
        printf("drop_path: nn.Identity() (drop_path = 0)\n");
    } else if (!s->train) {
        printf("drop_path: DropPath(%g) in eval mode returns its input\n", s->drop_path);
    } else {
        printf("drop_path: DropPath(%g) keeps a sample's branch with probability %g, scaled by "
               "%.9g\n", s->drop_path, 1.0 - s->drop_path, 1.0f / (float)(1.0 - s->drop_path));
        print_dropped_samples("attention", x, steps->residual);
        print_dropped_samples("mlp", steps->residual, out);
    }
    printf("mlp: fc1 to %s, GELU, fc2 back to %s\n", size_str(steps->mlp.hidden), size_str(out));
}

// GELU at a few points in both forms, and their largest gap on a grid.
static void show_gelu(void) {
    const Tensor *points = tensor_from(shape1(5), (const float[]){-3, -1, 0, 1, 3});
    printf("nn.GELU() at -3, -1, 0, 1, 3: %s\n", tensor_str(gelu(points), NULL));
    printf("nn.GELU(approximate='tanh'):   %s\n", tensor_str(gelu_tanh(points), NULL));
    Tensor *grid = zeros(shape1(12001));                                     // -6, -5.999, ..., 6
    for (int i = 0; i <= 12000; i++) {
        grid->data[i] = (float)(i - 6000) / 1000.0f;
    }
    const Tensor *erf_form = gelu(grid), *tanh_form = gelu_tanh(grid);
    int worst = 0;
    float worst_gap = -1.0f;
    for (int i = 0; i <= 12000; i++) {
        float gap = fabsf(erf_form->data[i] - tanh_form->data[i]);
        if (gap > worst_gap) {   // the first largest, as torch.argmax
            worst_gap = gap;
            worst = i;
        }
    }
    printf("largest |difference| on [-6, 6] in steps of 0.001: %.2e at x = %.3f\n",
           (double)worst_gap, (double)grid->data[worst]);
}

static void show_out(const Tensor *out) {
    printf("out: %s\n", size_str(out));
    printf("out[0, 0]: %s\n", tensor_str(select_index(select_index(out, 0, 0), 0, 0), NULL));
}

static void part4_residuals(const Cell *cell, const Sizes *s) {
    show_residuals(s, &cell->steps, cell->x, cell->out);
    show_gelu();
    show_out(cell->out);
}

// --- part 5: pre-norm (this block) against post-norm (BERT, lesson 12) ----------------------

static void print_row_variances(const char *name, const Tensor *t) {
    long rows = numel(t) / size(t, -1);
    double lowest = INFINITY, highest = -INFINITY;
    for (int r = 0; r < rows; r++) {
        double mean, var;
        row_moments(&mean, &var, t, r);
        lowest = fmin(lowest, var);
        highest = fmax(highest, var);
    }
    printf("%s: row variances from %.4f to %.4f\n", name, lowest, highest);
}

// The same weights in BERT's order (lesson 12): each sublayer on x itself,
// then LayerNorm AFTER the residual sum.
//     pre-norm (ViT):   x = x + attn(norm1(x));  x = x + mlp(norm2(x))
//     post-norm (BERT): x = norm1(x + attn(x));  x = norm2(x + mlp(x))
static void part5_pre_and_post_norm(const Block *block, const Tensor *x) {
    printf("\n-- part 5: pre-norm (this block) against post-norm (BERT, lesson 12): same weights, "
           "eval mode --\n");
    Block eval = *block;
    Block_train(&eval, false);
    const Tensor *pre = Block_forward(NULL, &eval, x);                        // (B, N, C)
    const Tensor *h = layer_norm_forward(
        &eval.norm1, add(x, Attention_forward(NULL, &eval.attn, x)));        // (B, N, C)
    const Tensor *post = layer_norm_forward(
        &eval.norm2, add(h, Mlp_forward(NULL, &eval.mlp, h)));               // (B, N, C)
    print_row_variances("x", x);
    print_row_variances("pre-norm out", pre);
    print_row_variances("post-norm out", post);
    // Pre-norm adds the branches to x and never normalises the sum: the
    // stream keeps its scale and grows block by block, and the path from
    // input to output is the identity plus the branches (what lets very deep
    // stacks train without warm-up). A pre-norm ViT therefore ends with one
    // more LayerNorm after the last block. Post-norm puts every block's output
    // back to mean 0 and variance 1 (times its weight, plus its bias).
}

// --- parts 6 and 7: what the block costs, its parameters and multiply-adds -------------------

// They count, so they are in appendix A, after main (part 7 counts each
// product as it runs, with a trace hook).
static void part6_parameters(const Sizes *s, const Block *block);
static void part7_macs(const Sizes *s);

// --- part 8: DropPath against dropout (--seed) -----------------------------------------------

// drop_path and F.dropout on the same ones, from the same generator state:
// the first 4 draws decide 4 whole samples for drop_path, and the first 4
// single numbers for dropout.
static void part8_drop_path_against_dropout(uint64_t seed) {
    const Tensor *ones_x = ones(shape3(4, 3, 2));                           // (4, 3, 2)
    DropPath half = {0.5, true};
    printf("\n-- part 8: DropPath against dropout, p = 0.5, on torch.ones(4, 3, 2), training "
           "(--seed) --\n");
    manual_seed(seed);
    printf("drop_path(...).flatten(1): a sample is all kept (2.) or all dropped\n");
    printf("%s\n", tensor_str(reshape(DropPath_forward(&half, ones_x), shape2(4, 6)), NULL));
    manual_seed(seed);
    printf("F.dropout(...).flatten(1): every element on its own\n");
    printf("%s\n", tensor_str(reshape(dropout(ones_x, 0.5, true), shape2(4, 6)), NULL));
}

// --- the budget: what a run of these sizes holds and does (lesson/budget.h) ----------

// Counted from the code above (F = hidden): x and the block's parameters;
// three blocks' worth of forwards (the block, then the pre/post-norm part's
// block and its post-norm attention and MLP), each making about eleven
// (B, N, C), two (B, N, F) and three (B, H, N, N), and in train mode the
// dropout and drop-path copies; a view's header (64 bytes, 16 floats) for
// each row the variance checks read, four times over; the numpy cell, the
// GELU grid and the 2^23 floats show_scale tries are the same at any size.
static Cost vit_block_cost(double B, double N, double C, double H, double F, bool train) {
    double BNC = B * N * C, BNF = B * N * F, BHNN = B * H * N * N;
    double parameters = 4 * C * C + 2 * C * F + F + 9 * C;
    double floats = parameters + 35 * BNC + 6 * BNF + 9 * BHNN + 4 * 16 * B * N + 70000 +
                    train * (4 * BNC + BNF + BHNN + 2 * B);
    return (Cost){
        .bytes = 4 * floats,
        .dumped = 4 * (parameters + 2 * BNC + BHNN + 3 * 768),
        .multiply_adds = 3 * (4 * BNC * C + 2 * BHNN * (C / H) + 2 * BNC * F),
        .exps = 3 * BHNN + 3 * BNF + BNC,
        .elements = floats + (1 << 23),
    };
}

// The flags (appendix B), parsed into *lesson and checked together.
static Sizes read_flags(Lesson *lesson, int argc, char **argv);

int main(int argc, char **argv) {
    Lesson lesson;
    Sizes s = read_flags(&lesson, argc, argv);   // appendix B: the flags, parsed and checked
    check_budget(&lesson, vit_block_cost(s.batch, s.seq, s.dim, s.heads, s.hidden, s.train));
    lesson_start(&lesson);

    Cell cell = part1_the_posts_cells(&s);
    trace_pause(true);   // the parts look at what was computed: not drawn, not dumped
    part2_the_block(&cell, &s);
    part3_attention(&cell, &s, &lesson);
    part4_residuals(&cell, &s);
    part5_pre_and_post_norm(&cell.block, cell.x);
    part6_parameters(&s, &cell.block);
    part7_macs(&s);
    part8_drop_path_against_dropout(lesson.seed);
    return lesson_finish(&lesson);
}

// === appendix A: what the block costs (parts 6 and 7), and the floats a scale rounds apart ====

// Part 6: the parameters, each with its shape, and their counts as formulas.
// One parameter's line: "attn.qkv.weight: (48, 16) 768", as Python prints it.
static void print_parameter(const char *name, const Tensor *p) {
    printf("%s: %s %ld\n", name, shape_str(p->shape, SIZES_TUPLE), numel(p));
}

static void print_linear_parameters(const char *name, const Linear *layer) {
    char text[64];
    snprintf(text, sizeof text, "%s.weight", name);
    print_parameter(text, layer->weight);
    if (layer->bias != NULL) {
        snprintf(text, sizeof text, "%s.bias", name);
        print_parameter(text, layer->bias);
    }
}

// Parameters of the attention sublayer: qkv 3C*C (+ 3C with its bias),
// proj C*C + C; of the MLP: fc1 C*F + F, fc2 F*C + C; of the norms 4C.
static long long attention_parameters(long long C, bool qkv_bias) {
    return 4 * C * C + C + (qkv_bias ? 3 * C : 0);
}

static long long mlp_parameters(long long C, long long F) {
    return 2 * C * F + F + C;
}

// The parameter counts, by formula, next to the parameters themselves.
static void part6_parameters(const Sizes *s, const Block *block) {
    long long C = s->dim, F = s->hidden;
    long long attn = attention_parameters(C, s->qkv_bias), mlp = mlp_parameters(C, F);
    printf("\n-- part 6: parameters: %lld (--dim, --mlp-ratio and --qkv-bias change them) --\n",
           attn + mlp + 4 * C);
    print_parameter("norm1.weight", block->norm1.weight);
    print_parameter("norm1.bias", block->norm1.bias);
    print_linear_parameters("attn.qkv", &block->attn.qkv);
    print_linear_parameters("attn.proj", &block->attn.proj);
    print_parameter("norm2.weight", block->norm2.weight);
    print_parameter("norm2.bias", block->norm2.bias);
    print_linear_parameters("mlp.fc1", &block->mlp.fc1);
    print_linear_parameters("mlp.fc2", &block->mlp.fc2);
    printf("attn %lld = 4*C*C + C%s, mlp %lld = 2*C*hidden + hidden + C, norms %lld = 4*C\n", attn,
           s->qkv_bias ? " + 3*C" : "", mlp, 4 * C);
}


static int n_counted = 0;
static TraceHook passed_on = NULL;

static int compare_long_long(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

// The multiply-adds of every linear and matmul that runs while counting, in
// their order: docs/flops.md's CountMACs for PyTorch, here a trace hook (the
// --dot and --dump hook, if any, still sees every event).

static void count_macs(const TraceEvent *event) {
    long long macs = -1;
    if (strcmp(event->op, "linear") == 0) {           // rows x in x out
        const Tensor *input = event->inputs[0], *weight = event->inputs[1];
        macs = numel(input) / size(input, -1) * (long long)numel(weight);
    } else if (strcmp(event->op, "matmul") == 0) {    // each output: a dot product of k
        macs = numel(event->out) * (long long)size(event->inputs[0], -1);
    }
    if (macs >= 0 && n_counted < MAX_COUNTED) {
        counted_macs[n_counted++] = macs;
    }
    if (passed_on != NULL) {
        passed_on(event);
    }
}

static void start_counting(void) {
    n_counted = 0;
    passed_on = trace_set_hook(count_macs);
}

static void stop_counting(void) {
    trace_set_hook(passed_on);
    passed_on = NULL;
}

// x * fl(1/sqrt(D)) against x / fl(sqrt(D)) for every float x in [1, 2):
// each is one correctly rounded operation, so the count is the same on any
// IEEE machine, and [1, 2) stands for every binade (scaling x by a power
// of two scales both results alike, barring underflow and overflow).
static long differing_floats(double scale, int head_dim) {
    float by_mul = (float)scale, by_div = (float)sqrt((double)head_dim);
    long differ = 0;
    for (uint32_t bits = 0x3F800000u; bits < 0x40000000u; bits++) {
        float x;
        memcpy(&x, &bits, sizeof x);
        differ += x * by_mul != x / by_div;
    }
    return differ;
}

// Part 7: what the forward's six products cost, counted above as they ran.
// Multiply-adds of one sample's attention sublayer and MLP for n positions:
// qkv 3nC^2, q @ k^T and attn @ v n^2 C each (H heads of n^2 D), proj nC^2;
// fc1 and fc2 nCF each.
static long long attention_macs(long long n, long long C) {
    return 4 * n * C * C + 2 * n * n * C;
}

static long long mlp_macs(long long n, long long C, long long F) {
    return 2 * n * C * F;
}

// What the forward's six products cost: counted (in order qkv, q @ k^T,
// attn @ v, proj, fc1, fc2), then as formulas of the sizes.
static void part7_macs(const Sizes *s) {
    long long B = s->batch, N = s->seq, C = s->dim, F = s->hidden;
    const long long *m = counted_macs;
    long long attention = m[0] + m[1] + m[2] + m[3], mlp = m[4] + m[5];
    printf("\n-- part 7: multiply-adds of this forward (batch %lld, seq %lld), counted as they ran "
           "(--seq) --\n", B, N);
    printf("attn.qkv %lld, q @ k^T %lld, attn @ v %lld, attn.proj %lld, mlp.fc1 %lld, mlp.fc2 "
           "%lld\n", m[0], m[1], m[2], m[3], m[4], m[5]);
    printf("attention %lld = B*(4*N*C*C + 2*N*N*C), MLP %lld = B*2*N*C*hidden: attention's "
           "share %.1f%%\n", attention, mlp, 100.0 * (double)attention / (double)(attention + mlp));
    printf("per sample as the sequence grows (C = %lld, hidden = %lld):\n", C, F);
    printf("%8s %14s %14s %8s\n", "N", "attention", "MLP", "share");
    long long lengths[6] = {N, C, 2 * C, 4 * C, 8 * C, 16 * C};
    qsort(lengths, 6, sizeof lengths[0], compare_long_long);
    for (int i = 0; i < 6; i++) {
        if (i > 0 && lengths[i] == lengths[i - 1]) {
            continue;   // Python's sorted set: each length once
        }
        long long n = lengths[i], att = attention_macs(n, C), ml = mlp_macs(n, C, F);
        double share = 100.0 * (double)att / (double)(att + ml);
        printf("%8lld %14lld %14lld %7.1f%%\n", n, att, ml, share);
    }
    // 4nC^2 + 2n^2 C > 2nCF exactly when n > F - 2C; the n^2 part alone
    // passes the MLP at n = F.
    if (F > 2 * C) {
        printf("(the attention sublayer passes the MLP once N > hidden - 2*C = %lld;\n its N*N "
               "part alone passes it at N = hidden = %lld)\n", F - 2 * C, F);
    } else {
        printf("(with hidden <= 2*C the attention sublayer costs more than the MLP at every N)\n");
    }
}

// === appendix B: the flags ======================================================================

static Sizes read_flags(Lesson *lesson, int argc, char **argv) {
    static int batch = 2, seq = 5, dim = 16, heads = 4;
    static double mlp_ratio = 4.0, drop = 0.0, attn_drop = 0.0, drop_path = 0.0;   // the post's defaults
    static bool qkv_bias = false, train = false;
    static SizeFlag sizes[] = {
        {"--batch", &batch, "batch size"},
        {"--seq", &seq, "sequence length (patches; the post's N)"},
        {"--dim", &dim, "embedding dimension (the post's C)"},
        {"--heads", &heads, "number of heads (num_heads); must divide --dim"},
    };
    // A float, as the post's Block(dim, num_heads, mlp_ratio=4., ...): ViT
    // and BERT use 4, ViT-g 48/11, EVA 4*2/3; no model uses more than 64.
    static FloatFlag floats[] = {
        {"--mlp-ratio", &mlp_ratio, "MLP hidden size = int(dim * mlp-ratio)", 0.0, 64.0},
    };
    static ProbabilityFlag probabilities[] = {
        {"--drop", &drop, "dropout after attn.proj and in the MLP (proj_drop, drop1, drop2)"},
        {"--attn-drop", &attn_drop, "dropout on the attention weights"},
        {"--drop-path", &drop_path, "stochastic depth: drop a sample's whole branch"},
    };
    static SwitchFlag switches[] = {
        {"--qkv-bias", &qkv_bias, "give the qkv Linear a bias (the post's default: no)"},
        {"--train", &train, "train mode: dropout and drop path on"},
    };
    *lesson = (Lesson){
        .program = "lesson-11",
        .summary = "vit-block: Chen Ming's ViT Block (Attention, Mlp, LayerNorm, DropPath) and "
                   "numpy multi-head",
        .sizes = sizes,
        .n_sizes = 4,
        .floats = floats,
        .n_floats = 1,
        .probabilities = probabilities,
        .n_probabilities = 3,
        .switches = switches,
        .n_switches = 2,
    };
    parse_lesson_args(lesson, argc, argv);
    check_divides(lesson, "--heads", heads, "--dim", dim);
    // int(dim * mlp_ratio) as Python works it out: the product in double,
    // truncated toward 0. At most 65536 * 64 = 2^22: no overflow.
    int hidden = (int)((double)dim * mlp_ratio);
    if (hidden < 1) {
        usage_error(lesson, "--mlp-ratio %g makes the MLP's hidden size int(%d * %g) = 0; "
                    "choose a larger ratio", mlp_ratio, dim, mlp_ratio);
    }
    // The largest tensor of each kind the run builds.
    check_fits(lesson, "attn_probs (batch, heads, seq, seq)", shape4(batch, heads, seq, seq));
    check_fits(lesson, "qkv (batch, seq, 3*dim)", shape3(batch, seq, 3 * dim));
    check_fits(lesson, "the MLP's hidden layer (batch, seq, dim*mlp-ratio)",
               shape3(batch, seq, hidden));
    check_fits(lesson, "mlp.fc1.weight (dim*mlp-ratio, dim)", shape2(hidden, dim));
    check_fits(lesson, "attn.qkv.weight (3*dim, dim)", shape2(3 * dim, dim));
    return (Sizes){batch, seq, dim, heads, mlp_ratio, hidden, qkv_bias, train, drop, attn_drop,
                   drop_path};
}
