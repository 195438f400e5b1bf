// Lesson 14: attention-backward - the gradients of attention by hand, then
// FlashAttention-2's backward on lesson 13's tiles.
//
// WHAT THIS ADDS
//   Every lesson so far runs attention forward. Training also runs it
//   backward: from the gradient of the loss with respect to the output, the
//   gradient with respect to every input and parameter, what loss.backward()
//   leaves in each .grad. This lesson writes that backward pass out.
//   Part 1 takes lesson 5's SelfAttV4 and walks back through it one step at a
//   time: 1. the output Linear, 2. `@ V`, 3. dropout (its own noise again),
//   4. softmax (whose gradient needs P, dP and ONE number per query, dO . O:
//   no S x S Jacobian), 5. the mask (a masked score gets no gradient), the
//   scale and Q K^T, 6. the three Linears. Every .grad equals
//   torch.autograd's to float rounding (at the defaults, every printed
//   digit), and central differences in double check the formulas without
//   PyTorch.
//   Part 2 does the same for lesson 13's attention (heads, GQA, causal), the
//   way FlashAttention-2 does it (Dao, 2023, Algorithm 2): the forward keeps
//   the output and lse = m + log(l), one number per query; the backward walks
//   the tiles again, key block by key block, RECOMPUTES each block of scores
//   and P = exp(S - lse) where it needs them, and adds into dQ, dK and dV.
//   Its blocks do not grow with the sequence (delta, one float per query of
//   one head, does). The standard backward (what autograd runs on the notes'
//   attention) keeps P, (B, H, N, N), and makes dP and dS as large; the
//   lesson runs it too, by plain loops, to check the tiled one against.
//   --threads W shares the tiled backward among W threads, by (batch row,
//   key/value head): the same bits for any W (the comment "the parallel
//   split", above FlashAttention_backward, says why).
//
// THE MATH (one head: S = Q K^T / sqrt(D), P = softmax(S), O = P V; dX is dLoss/dX)
//   dV = P^T dO                   dP = dO V^T
//   dS = P * (dP - rowsum(dO * O))     (softmax: rowsum(P * dP) = dO . O, one number per query)
//   dQ = dS K / sqrt(D)           dK = dS^T Q / sqrt(D)      (GQA: dK, dV summed over a group)
//   Linear y = x W^T + b:   dW = dy^T x,   db = dy summed over rows,   dx = dy W
//   dropout Pd = P * noise: dP = dPd * noise, the forward's noise (0 or 1 / (1 - p))
//
// THE PYTORCH IT MIRRORS (docs/14-attention-backward.md has the complete script)
//   torch.manual_seed(seed)
//   X = torch.rand(batch, seq, dim, requires_grad=True); net = SelfAttV4(dim)   # lesson 5
//   ret = net(X, mask); grad_out = torch.randn(batch, seq, dim); ret.backward(grad_out)
//   torch.manual_seed(seed)                                       # part 2: lesson 13's draws
//   query = torch.randn(batch, heads, seq, head_dim, requires_grad=True); key, value likewise
//   grad_attn_out = torch.randn(batch, heads, seq, head_dim)
//   attn_out = softmax(query @ key^T / sqrt(head_dim) [causal]) @ value   # head h reads h // R
//   attn_out.backward(grad_attn_out)
//
// RUN IT
//   make lesson-14                  part 1 at lesson 5's sizes, part 2 on 2 heads of 4
//   make lesson-14 ARGS="--train"   dropout on: its noise reused by the backward
//   make lesson-14 ARGS="--seq 10 --block-q 4 --block-k 3 --causal --kv-heads 1"
//   make lesson-14 ARGS=--bench     the tiled backward against the standard one's loops
//   make lesson-14 ARGS="--bench --threads 2"   ... on 2 threads and on one, the same rounds
//   flags: --batch --seq --dim --heads --kv-heads --head-dim --block-q --block-k --causal
//          --threads --train --bench --seed --dump DIR --dot FILE --heatmap --help
//
// WHAT TO LOOK FOR
//   - Part 1: the masked keys' rows of K.grad and V.grad are exactly 0, and
//     so is every masked entry of scores.grad; each row of scores.grad sums
//     to 0 (up to rounding); the two row terms print alike; the central
//     differences agree with the analytic gradients to float rounding.
//   - Part 2: the map of the tiles the backward visits (key blocks outside);
//     P of one tile recomputed from lse equals the standard forward's stored
//     P; the tiled gradients equal the standard backward's to float rounding
//     (3.87e-07 apart at the defaults); and the memory: the standard
//     backward's grows as N^2, the tiled one's blocks stay put.
//
// THE FILES (README.md in this folder): this one teaches, up to main() and
// its appendices after it; kernels.c (kernels.h) has the inner loops made
// fast for a CPU, bench.c (bench.h) has --bench. What lessons 13, 14 and 16
// share of that plumbing (which kernels this CPU runs, ATTN_KERNELS, the
// vector types, the clocks, the FMA peak) is in common/speed/.
//
// Size letters: B batch, T = S = seq (part 1: query and key positions),
//   C dim, H query heads, KV key/value heads, R = H / KV, N seq (part 2),
//   D head_dim, Bq and Bk the block sizes (--block-q, --block-k, at most N).
// Index letters: b batch, t query, s key, c a channel of C, h query head,
//   g = h / R its key/value head, d inside a head; qs and ks the first query
//   and key of a block, j a query inside its block, p a key inside its block.

#define _POSIX_C_SOURCE 200809L   // pthreads

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "bench.h"
#include "kernels.h"
#include "speed/choice.h"   // ATTN_KERNELS, checked with the flags (appendix F)

#define MASK_FILL -1e20f    // lesson 5's masked_fill value
#define ATT_DROPOUT 0.1     // lesson 5's nn.Dropout(0.1)
#define MAX_BLOCK 4096      // --block-q and --block-k go from 1 to this
#define MAX_THREADS 256     // --threads goes from 1 to this
#define TOLERANCE 1e-5f     // tiled against standard gradients: float rounding only
#define MAP_MAX_BLOCKS 16   // the tile map is drawn up to 16 x 16 blocks
#define CHECK_STEP 1e-4     // the central differences' step, in double

static int min_int(int a, int b) {
    return a < b ? a : b;
}

// For --dot: out = op(from, and `also`, the saved tensors it reads besides),
// one operation: the graph names it once, on the edge from `from`.
static void trace_step(const char *op, const Tensor *out, const Tensor *from, int n_also,
                       const Tensor *const *also) {
    const Tensor *inputs[8] = {from};
    if (n_also > 7) {
        fail("trace_step: %d saved tensors, at most 7", n_also);
    }
    for (int i = 0; i < n_also; i++) {
        inputs[1 + i] = also[i];
    }
    trace(op, out, 1 + n_also, inputs, 0, NULL);
}

// --- the module of part 1: lesson 5's SelfAttV4, its forward keeping what its backward needs ----

typedef struct {
    int dim;
    Linear query_proj, key_proj, value_proj;   // Linear(dim, dim) each
    double att_drop;                           // nn.Dropout(0.1)
    Linear output_proj;                        // Linear(dim, dim)
    bool training;
} SelfAttV4;

// What the backward reads from the forward (what autograd saves, and scores,
// which autograd does not save, kept to print and dump), by name.
typedef struct {
    const Tensor *Q, *K, *V;            // (B, T, C)
    const Tensor *scores;               // (B, T, S) Q K^T / sqrt(C), masked: softmax's input
    const Tensor *att_weight;           // (B, T, S) P, after softmax
    const Tensor *noise;                // (B, T, S) dropout's 0 or 1/(1-p); NULL in eval mode
    const Tensor *att_weight_dropped;   // (B, T, S) Pd = P * noise (P itself in eval mode)
    const Tensor *output;               // (B, T, C) before output_proj
} SelfAttV4Steps;

// Draws in PyTorch's __init__ order: query_proj, key_proj, value_proj, output_proj.
static SelfAttV4 SelfAttV4_init(int dim) {
    SelfAttV4 self;
    self.dim = dim;
    self.query_proj = linear_init("query_proj", dim, dim, true);
    self.key_proj = linear_init("key_proj", dim, dim, true);
    self.value_proj = linear_init("value_proj", dim, dim, true);
    self.att_drop = ATT_DROPOUT;
    self.output_proj = linear_init("output_proj", dim, dim, true);
    self.training = true;
    return self;
}

// Lesson 5's forward. X (B, T, C), attention_mask (B, T, S) of 1 (attend) and 0
// (masked); returns ret (B, T, C). Dropout is F.dropout's own three steps
// (noise = bernoulli(1 - p), noise /= 1 - p, P * noise: the same draws and
// bits) so that the backward can use the noise again.
static Tensor *SelfAttV4_forward(SelfAttV4Steps *steps, const SelfAttV4 *self, const Tensor *X,
                                 const Tensor *attention_mask) {
    int C = self->dim;
    const Tensor *Q = named("Q", linear(&self->query_proj, X));              // (B, T, C)
    const Tensor *K = named("K", linear(&self->key_proj, X));                // (B, S, C)
    const Tensor *V = named("V", linear(&self->value_proj, X));              // (B, S, C)
    const Tensor *scores =
        div_scalar(matmul(Q, transpose(K, -1, -2)), sqrtf((float)C));        // (B, T, S)
    scores = named("scores", masked_fill(scores, eq_scalar(attention_mask, 0), MASK_FILL));
    const Tensor *att_weight = named("att_weight", softmax(scores, -1));     // (B, T, S)
    const Tensor *noise = NULL, *att_weight_dropped = att_weight;            // (B, T, S)
    if (self->training && self->att_drop > 0.0) {
        Tensor *keep = bernoulli(att_weight->shape, 1.0 - self->att_drop);   // 1 or 0
        noise = named("noise", div_scalar(keep, (float)(1.0 - self->att_drop)));
        att_weight_dropped = named("att_weight_dropped", mul(att_weight, noise));
    }
    const Tensor *output = named("output", matmul(att_weight_dropped, V));   // (B, T, C)
    Tensor *ret = linear(&self->output_proj, output);                        // (B, T, C)
    named("ret", ret);
    if (steps != NULL) {
        *steps = (SelfAttV4Steps){Q, K, V, scores, att_weight, noise, att_weight_dropped, output};
    }
    return ret;
}

// The cell's masks: padding (batch row i keeps its first max(1, seq-1-i) keys,
// lessons 4 and 5) or causal (query t sees keys 0..t). (B, T, S), int64.
static const Tensor *cell_mask(int batch, int seq, bool causal) {
    Tensor *mask = zeros(shape3(batch, seq, seq));                           // (B, T, S)
    mask->dtype = DTYPE_INT64;
    for (int b = 0; b < batch; b++) {
        int kept = seq - 1 - b > 1 ? seq - 1 - b : 1;
        for (int t = 0; t < seq; t++) {
            for (int s = 0; s < seq; s++) {
                *at3(mask, b, t, s) = causal ? (float)(s <= t) : (float)(s < kept);
            }
        }
    }
    return mask;
}

// --- its backward, one step at a time, by loops -------------------------------------------------

// Every .grad of part 1. The Linears hold their parameters' gradients
// (grad.query_proj.weight is query_proj.weight.grad).
typedef struct {
    Tensor *output;               // (B, T, C) output.grad, dO
    Tensor *V;                    // (B, S, C)
    Tensor *att_weight_dropped;   // (B, T, S) dPd, the gradient of Pd = P * noise
    Tensor *att_weight;           // (B, T, S) dP (the same tensor as dPd in eval mode)
    Tensor *row_term;             // (B, T)    r = sum_s P dP, one per query (= dO . O)
    Tensor *scores;               // (B, T, S) dS
    Tensor *Q, *K;                // (B, T, C), (B, S, C)
    Tensor *X;                    // (B, T, C)
    Linear query_proj, key_proj, value_proj, output_proj;
} SelfAttV4Grads;

// y = x W^T + b over the rows r of x, (rows, in) -> (rows, out); backward:
//   dW[o, i] = sum_r dy[r, o] x[r, i]     db[o] = sum_r dy[r, o]
//   dx[r, i] += sum_o dy[r, o] W[o, i]
// dx is ADDED to (X feeds three Linears, and its gradient is the sum of theirs).
// dy_, x_ and W_ name dy, x and W in the --dot graph ("dQ", "X", "Wq").
static Linear linear_backward(Tensor *dx, const Linear *layer, const Tensor *dy, const Tensor *x,
                              const char *dy_, const char *x_, const char *W_) {
    int in = layer->in_features, out = layer->out_features;
    long rows = numel(x) / in;
    const Tensor *xc = contiguous(x), *dyc = contiguous(dy), *Wc = contiguous(layer->weight);
    const float *x_r = &xc->data[xc->offset];                                  // (rows, in)
    const float *dy_r = &dyc->data[dyc->offset];                               // (rows, out)
    const float *W = &Wc->data[Wc->offset];                                    // (out, in)
    Tensor *dW = zeros(shape2(out, in)), *db = zeros(shape1(out));
    for (int o = 0; o < out; o++) {
        for (long r = 0; r < rows; r++) {
            for (int i = 0; i < in; i++) {
                dW->data[o * in + i] += dy_r[r * out + o] * x_r[r * in + i];
            }
            db->data[o] += dy_r[r * out + o];
        }
    }
    for (long r = 0; r < rows; r++) {
        for (int i = 0; i < in; i++) {
            float sum = 0.0f;
            for (int o = 0; o < out; o++) {
                sum += dy_r[r * out + o] * W[o * in + i];
            }
            dx->data[r * in + i] += sum;
        }
    }
    char label[64];
    snprintf(label, sizeof label, "%s^T %s", dy_, x_);
    trace_step(label, dW, dy, 1, &x);
    snprintf(label, sizeof label, "sum of %s", dy_);
    trace1(label, db, dy);
    snprintf(label, sizeof label, "%s %s", dy_, W_);
    trace_step(label, dx, dy, 1, (const Tensor *const[]){layer->weight});
    return (Linear){dW, db, in, out};
}

// softmax's backward for one row of n: p the softmax's output, dp the gradient that
// reaches it; ds[s] = (dp[s] - r) * p[s] with r = sum over s' of p[s'] dp[s'] (added in
// the order PyTorch's kernel adds it). Returns r. Not static: make exercise-14 links the
// reader's own in its place (exercises/14-attention-backward.c).
float softmax_backward_row(float *ds, const float *dp, const float *p, int n) {
    float r = softmax_exact_backward_row(dp, p, n);
    for (int s = 0; s < n; s++) {   // a masked score has P = 0: its dS is exactly 0
        ds[s] = (dp[s] - r) * p[s];
    }
    return r;
}

// ret.backward(grad_out), step by step from ret back to X: the chain rule
// applied to each line of the forward, last line first.
static SelfAttV4Grads SelfAttV4_backward(const SelfAttV4 *self, const SelfAttV4Steps *f,
                                         const Tensor *X, const Tensor *grad_out) {
    int B = size(X, 0), T = size(X, 1), S = T, C = size(X, 2);
    SelfAttV4Grads g;
    // 1. ret = output_proj(output): a Linear.
    g.output = zeros(shape3(B, T, C));
    g.output_proj = linear_backward(g.output, &self->output_proj, grad_out, f->output,
                                    "grad_out", "O", "Wo");
    // 2. output = Pd @ V, Pd = att_weight_dropped (B, T, S):
    //    dV[b, s, c] = sum_t Pd[b, t, s] dO[b, t, c]    dPd[b, t, s] = sum_c dO[b, t, c] V[b, s, c]
    g.V = zeros(shape3(B, S, C));
    g.att_weight_dropped = zeros(shape3(B, T, S));
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            for (int s = 0; s < S; s++) {
                float pd = *at3(f->att_weight_dropped, b, t, s), dpd = 0.0f;
                for (int c = 0; c < C; c++) {
                    *at3(g.V, b, s, c) += pd * *at3(g.output, b, t, c);
                    dpd += *at3(g.output, b, t, c) * *at3(f->V, b, s, c);
                }
                *at3(g.att_weight_dropped, b, t, s) = dpd;
            }
        }
    }
    trace_step("Pd^T dO", g.V, g.output, 1, &f->att_weight_dropped);
    trace_step("dO V^T", g.att_weight_dropped, g.output, 1, &f->V);
    // 3. Pd = P * noise: dP = dPd * noise, the forward's noise again (eval: Pd is P, dP is dPd).
    g.att_weight = g.att_weight_dropped;
    if (f->noise != NULL) {
        g.att_weight = zeros(shape3(B, T, S));
        for (long i = 0; i < numel(g.att_weight); i++) {
            g.att_weight->data[i] = g.att_weight_dropped->data[i] * f->noise->data[i];
        }
        trace_step("* noise", g.att_weight, g.att_weight_dropped, 1, &f->noise);
    }
    // 4. P = softmax(scores): dS[t, s] = P[t, s] (dP[t, s] - r), r = sum_s' P[t, s'] dP[t, s'].
    //    r is one number per query, and equals dO . O (output.grad . output):
    //    sum_s P dP = sum_s P noise dPd = sum_s Pd_s (dO . v_s) = dO . (sum_s Pd_s v_s) = dO . O.
    //    Autograd adds it up from the row of P and dP, as here (in the order
    //    PyTorch's kernel adds, so that the digits are PyTorch's).
    g.row_term = zeros(shape2(B, T));
    g.scores = zeros(shape3(B, T, S));
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            const float *p = at3(f->att_weight, b, t, 0), *dp = at3(g.att_weight, b, t, 0);
            float *ds = at3(g.scores, b, t, 0);                    // (S) this query's row
            *at2(g.row_term, b, t) = softmax_backward_row(ds, dp, p, S);
        }
    }
    trace_step("P * (dP - r)", g.scores, g.att_weight, 1, &f->att_weight);
    // 5. scores = masked_fill(Q K^T / sqrt(C)): masked_fill passes no gradient to a
    //    masked score, the division divides it by sqrt(C), and Q K^T gives
    //    dQ[b, t, c] = sum_s dS'[b, t, s] K[b, s, c]    dK[b, s, c] = sum_t dS'[b, t, s] Q[b, t, c]
    //    with dS' = dS / sqrt(C).
    float root_C = sqrtf((float)C);
    g.Q = zeros(shape3(B, T, C));
    g.K = zeros(shape3(B, S, C));
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            for (int s = 0; s < S; s++) {
                float ds = *at3(g.scores, b, t, s) / root_C;
                for (int c = 0; c < C; c++) {
                    *at3(g.Q, b, t, c) += ds * *at3(f->K, b, s, c);
                    *at3(g.K, b, s, c) += ds * *at3(f->Q, b, t, c);
                }
            }
        }
    }
    trace_step("dS K / sqrt(C)", g.Q, g.scores, 1, &f->K);
    trace_step("dS^T Q / sqrt(C)", g.K, g.scores, 1, &f->Q);
    // 6. Q, K, V = three Linears of X: X.grad is the sum of the three dx.
    g.X = zeros(shape3(B, T, C));
    g.query_proj = linear_backward(g.X, &self->query_proj, g.Q, X, "dQ", "X", "Wq");
    g.key_proj = linear_backward(g.X, &self->key_proj, g.K, X, "dK", "X", "Wk");
    g.value_proj = linear_backward(g.X, &self->value_proj, g.V, X, "dV", "X", "Wv");
    return g;
}

// --- the module of part 2: lesson 13's tiled attention, forward (keeping lse), backward ---------

typedef struct {
    int num_heads;             // H
    int num_kv_heads;          // KV: query head h reads key/value head h / (H / KV)
    bool causal;               // query t sees keys 0 .. t only
    int block_q, block_k;      // Bq, Bk
    const Kernels *kernels;
    int threads;               // workers sharing the backward: the same bits however many
} FlashAttention;

typedef enum { TILE_FULL, TILE_DIAGONAL, TILE_SKIPPED } TileKind;

static FlashAttention FlashAttention_init(int num_heads, int num_kv_heads, bool causal,
                                          int block_q, int block_k) {
    return (FlashAttention){num_heads, num_kv_heads, causal, block_q, block_k, kernels_best(),
                            1};
}

// As lesson 13: a tile of queries qs .. qs+nq-1 and keys ks .. ks+nk-1 is
// skipped when every key comes after every query, full when none does, else
// diagonal.
static TileKind tile_kind(bool causal, int qs, int nq, int ks, int nk) {
    if (!causal || ks + nk - 1 <= qs) {
        return TILE_FULL;
    }
    return ks > qs + nq - 1 ? TILE_SKIPPED : TILE_DIAGONAL;
}

// The forward is lesson 13's tiled loop (appendix B), which keeps, for each
// query, lse = m + log(l): its running max and sum at the end, the log of
// the softmax's denominator. That one number per query is all the
// backward needs of the softmax: P = exp(S - m) / l = exp(S - lse).
// query (B, H, N, D), key and value (B, KV, N, D); returns out (B, H, N, D)
// and *lse (B, H, N).
static Tensor *FlashAttention_forward(Tensor **lse, const FlashAttention *self,
                                      const Tensor *query, const Tensor *key,
                                      const Tensor *value);

// The gradients of part 2, query.grad (B, H, N, D), key.grad and value.grad (B, KV, N, D).
typedef struct {
    Tensor *query, *key, *value;
} QKVGrads;

// What the tiled backward did, for the lesson to print and the tests to check.
typedef struct {
    long tiles[3];          // tiles of each TileKind, over all batches and heads
    double flops;           // 2 * the multiply-adds of the five products, as done
    size_t scratch_bytes;   // the blocks of one worker: the same for any seq and workers
    size_t delta_bytes;     // delta of one head, in each worker: N floats
    int workers;            // the threads that shared the work, each with its blocks and delta
} BackwardSteps;

// The backward's scratch: a key block's K_j^T and V_j^T, a query block
// scaled, and one tile's two score blocks, whose size depends on Bq, Bk and
// D, not on N; and delta = rowsum(dO * O) of the head at hand, one float per
// query (the paper's D, which it computes before its loops and writes out,
// like lse; the CUDA code keeps it for every batch and head, (B, H, N)).
typedef struct {
    int ldk;       // Bk rounded up to 16: a row of k_t, v_t, p, ds
    float *k_t;    // (D, ldk)  K_j^T, for S = Q_i K_j^T
    float *v_t;    // (D, ldk)  V_j^T, for dP = dO_i V_j^T
    float *q_s;    // (Bq, D)   Q_i / sqrt(D), as the forward's query block
    float *p;      // (Bq, ldk) S_ij, then P_ij in place
    float *ds;     // (Bq, ldk) dP_ij, then dS_ij in place
    float *delta;  // (N)       delta = rowsum(dO * O) of one head
} BackwardScratch;

// One head's rows, where they lie: q, o, dO, dq of query head h, k, v, dk, dv
// of its key/value head g; (N, D) each, row-major; lse (N).
typedef struct {
    const float *q, *k, *v, *o, *dO, *lse;
    float *dq, *dk, *dv;
} HeadRows;

// One tile of Algorithm 2: queries qs .. qs+nq-1 against keys ks .. ks+nk-1.
static void backward_tile(const BackwardScratch *w, const Kernels *kern, const HeadRows *x, int D,
                          int qs, int nq, int ks, int nk, TileKind kind) {
    const float *q_i = x->q + (long)qs * D, *do_i = x->dO + (long)qs * D;        // (nq, D)
    const float *k_j = x->k + (long)ks * D;                                       // (nk, D)
    float *dq_i = x->dq + (long)qs * D, *dk_j = x->dk + (long)ks * D, *dv_j = x->dv + (long)ks * D;
    float scale = 1.0f / sqrtf((float)D);
    int ldk = w->ldk;
    int diagonal = kind == TILE_DIAGONAL ? qs - ks : nk;   // key p masked if p > j + diagonal
    // The two products that need only the inputs: S = (Q_i / sqrt(D)) K_j^T (nq, nk),
    // the forward's scores to the bit (the same products, summed in the same
    // order), and dP = dO_i V_j^T (nq, nk).
    kern->scale(w->q_s, q_i, (long)nq * D, scale);
    kern->matmul(w->p, ldk, w->q_s, D, 1, w->k_t, ldk, nq, nk, D, false);
    kern->matmul(w->ds, ldk, do_i, D, 1, w->v_t, ldk, nq, nk, D, false);
    // One pass over the tile: P = exp(S - lse_i), the forward's probabilities
    // (exp(S - m) / l = exp(S - m - log l)), 0 where masked; and dS = P * (dP -
    // delta_i) / sqrt(D), the 1/sqrt(D) being the scores' scale.
    kern->softmax_backward(w->p, w->ds, x->lse + qs, w->delta + qs, nq, nk, ldk, scale,
                           diagonal);
    // The three products that add into the gradients:
    // dV_j (nk, D) += P^T (nk, nq) @ dO_i (nq, D)
    kern->matmul(dv_j, D, w->p, 1, ldk, do_i, D, nk, D, nq, true);
    // dQ_i (nq, D) += dS (nq, nk) @ K_j (nk, D);  dK_j (nk, D) += dS^T (nk, nq) @ Q_i (nq, D)
    kern->matmul(dq_i, D, w->ds, ldk, 1, k_j, D, nq, D, nk, true);
    kern->matmul(dk_j, D, w->ds, 1, ldk, q_i, D, nk, D, nq, true);
}

// --- the parallel split: by batch row and key/value head ----------------------------------------

// The work is shared out so that no number can change: every sum is added
// up by one worker, in the order one thread adds it.
//   What is summed, and in what order (one thread, the loops below): dQ_i of
//   query head h adds one tile a key block, the key blocks in order; dK_j and
//   dV_j of key/value head g add the R query heads of its group, h = g*R,
//   g*R + 1, ..., and inside each head one tile a query block, in order.
//   So the unit of work is a (b, g) pair: batch row b, key/value head g, and
//   the R query heads that read it, in order. It writes its own rows of
//   query.grad (those of its R query heads) and of key.grad and value.grad
//   (those of head g), and no other unit writes them. Whichever worker takes
//   it, it does the same operations in the same order: the same bits for any
//   number of threads, and no two workers ever write the same memory.
//   Finer splits would change that. By key block (each worker its own dK_j,
//   dV_j rows), two workers would add into the same dQ_i rows; by query
//   block, into the same dK_j and dV_j rows. Either needs a lock or atomic
//   adds, and the order of the additions, so the last bits, would then
//   depend on which worker came first. FlashAttention-2's CUDA backward does
//   the first: a thread block per key block (and batch and head), dQ added in
//   float with atomicAdd (Dao-AILab/flash-attention, csrc/flash_attn/src/:
//   flash_bwd_launch_template.h and flash_bwd_kernel.h, read at v2.8.3; its
//   `deterministic` option, from v2.4.1, gives each thread block a dQ of its
//   own, summed afterwards: the same bits from run to run on one GPU, though
//   the number of copies is the GPU's count of SMs over B*H, so another GPU
//   adds in another order). On a CPU with a few cores there are enough (b, g)
//   units at the usual sizes (the bench's: 8); with fewer units than threads,
//   only as many threads start as there are units (--kv-heads 1 --batch 1:
//   one unit, one thread).

// One worker: the units it takes, its own scratch, and what it counted.
typedef struct {
    const FlashAttention *self;
    const Tensor *q, *k, *v, *o, *dO, *lse;   // contiguous; only read
    QKVGrads grads;                           // each unit writes only its own rows
    int first, step;                          // it takes units first, first + step, ...
    BackwardScratch w;                        // its blocks and delta
    long tiles[3];                            // what it did
    double flops;
} BackwardWorker;

// The backward's scratch, in ONE allocation whose size depends on Bq, Bk, D
// and N (delta) only, made before any thread starts.
static BackwardScratch BackwardScratch_start(int N, int D, int Bq, int Bk, size_t *blocks) {
    BackwardScratch w;
    w.ldk = (Bk + 15) / 16 * 16;
    *blocks = (2 * (size_t)D + 2 * (size_t)Bq) * (size_t)w.ldk + (size_t)Bq * D;   // floats
    w.k_t = arena_alloc(*blocks + (size_t)N, sizeof(float));
    w.v_t = w.k_t + (size_t)D * w.ldk;
    w.q_s = w.v_t + (size_t)D * w.ldk;
    w.p = w.q_s + (size_t)Bq * D;
    w.ds = w.p + (size_t)Bq * w.ldk;
    w.delta = w.ds + (size_t)Bq * w.ldk;
    return w;
}

// One query head h of batch row b: delta first, then every key block (outer)
// against every query block (inner). Its counts are added to the worker's at
// the end (the workers sit side by side in memory: a count written at every
// tile could keep moving a cache line between their cores).
static void backward_head(BackwardWorker *me, int b, int h) {
    const FlashAttention *self = me->self;
    BackwardScratch *w = &me->w;
    int N = size(me->q, 2), D = size(me->q, 3);
    int Bq = min_int(self->block_q, N), Bk = min_int(self->block_k, N);
    int g = h / (self->num_heads / self->num_kv_heads);   // the key/value head h reads
    HeadRows x = {at4(me->q, b, h, 0, 0), at4(me->k, b, g, 0, 0), at4(me->v, b, g, 0, 0),
                  at4(me->o, b, h, 0, 0), at4(me->dO, b, h, 0, 0), at3(me->lse, b, h, 0),
                  at4(me->grads.query, b, h, 0, 0), at4(me->grads.key, b, g, 0, 0),
                  at4(me->grads.value, b, g, 0, 0)};
    long tiles[3] = {0, 0, 0};
    double flops = 0.0;
    // delta = rowsum(dO * O), the softmax's row term: N numbers for this head
    self->kernels->row_dots(w->delta, x.dO, x.o, N, D);
    for (int ks = 0; ks < N; ks += Bk) {   // outer: a block of keys and values
        int nk = min_int(Bk, N - ks);
        for (int d = 0; d < D; d++) {      // K_j^T and V_j^T (D, nk): the one copy
            for (int p = 0; p < nk; p++) {
                w->k_t[(long)d * w->ldk + p] = x.k[(long)(ks + p) * D + d];
                w->v_t[(long)d * w->ldk + p] = x.v[(long)(ks + p) * D + d];
            }
        }
        for (int qs = 0; qs < N; qs += Bq) {   // inner: the query blocks
            int nq = min_int(Bq, N - qs);
            TileKind kind = tile_kind(self->causal, qs, nq, ks, nk);
            tiles[kind] += 1;
            if (kind != TILE_SKIPPED) {
                backward_tile(w, self->kernels, &x, D, qs, nq, ks, nk, kind);
                flops += 10.0 * nq * nk * D;
            }
        }
    }
    for (int kind = 0; kind < 3; kind++) {
        me->tiles[kind] += tiles[kind];
    }
    me->flops += flops;
}

// A worker's share: units u = first, first + step, ... of the B * KV, unit u
// being batch row u / KV and key/value head u % KV. On one thread that is
// every unit in the order of the loops over b and h.
static void *backward_work(void *arg) {
    BackwardWorker *me = arg;
    int B = size(me->q, 0), KV = me->self->num_kv_heads, R = me->self->num_heads / KV;
    for (int u = me->first; u < B * KV; u += me->step) {
        int b = u / KV, g = u % KV;
        for (int h = g * R; h < (g + 1) * R; h++) {   // the group's query heads, in order
            backward_head(me, b, h);
        }
    }
    return NULL;
}

// FlashAttention-2's backward: for each head, delta = rowsum(dO * O) first; then
// for each block of keys, walk the query blocks. dK_j and dV_j gather in their
// rows of key.grad and value.grad (the R query heads of a key/value head add
// into the same rows), dQ_i adds into query.grad. out and lse are the tiled
// forward's, grad_out is dO (B, H, N, D). self->threads workers share it, by
// (b, g) units (above).
static QKVGrads FlashAttention_backward(BackwardSteps *steps, const FlashAttention *self,
                                        const Tensor *query, const Tensor *key,
                                        const Tensor *value, const Tensor *out,
                                        const Tensor *lse, const Tensor *grad_out) {
    int B = size(query, 0), H = size(query, 1), N = size(query, 2), D = size(query, 3);
    int KV = self->num_kv_heads;
    int Bq = min_int(self->block_q, N), Bk = min_int(self->block_k, N);
    const Tensor *q = contiguous(query), *k = contiguous(key), *v = contiguous(value);
    const Tensor *o = contiguous(out), *dO = contiguous(grad_out), *l = contiguous(lse);
    QKVGrads grads = {zeros(shape4(B, H, N, D)), zeros(shape4(B, KV, N, D)),
                      zeros(shape4(B, KV, N, D))};
    int threads = min_int(self->threads, B * KV);   // no more workers than units
    BackwardWorker *workers = arena_alloc((size_t)threads, sizeof(BackwardWorker));
    pthread_t *ids = arena_alloc((size_t)threads, sizeof(pthread_t));
    size_t blocks = 0;
    for (int t = 0; t < threads; t++) {   // worker t takes units t, t + threads, ...
        workers[t] = (BackwardWorker){self, q, k, v, o, dO, l, grads, t, threads,
                                      BackwardScratch_start(N, D, Bq, Bk, &blocks), {0, 0, 0},
                                      0.0};
    }
    // Worker 0 is this thread. If the system refuses a thread, no more are
    // started, and this thread takes the units of that worker and of every
    // later one, after its own.
    int started = 1;
    while (started < threads &&
           pthread_create(&ids[started], NULL, backward_work, &workers[started]) == 0) {
        started += 1;
    }
    backward_work(&workers[0]);
    for (int t = started; t < threads; t++) {
        backward_work(&workers[t]);
    }
    for (int t = 1; t < started; t++) {
        pthread_join(ids[t], NULL);
    }
    // The workers' counts, added in worker order: whole numbers (the FLOPs
    // too, sums of 10 * nq * nk * D far below 2^53), so exactly one thread's.
    BackwardSteps counts = {{0, 0, 0}, 0.0, blocks * sizeof(float), (size_t)N * sizeof(float),
                            threads};
    for (int t = 0; t < threads; t++) {
        for (int kind = 0; kind < 3; kind++) {
            counts.tiles[kind] += workers[t].tiles[kind];
        }
        counts.flops += workers[t].flops;
    }
    const Tensor *saved[5] = {query, key, lse, value, out};   // dV needs only the first 3
    trace_step("tiles: P^T dO", grads.value, grad_out, 3, saved);
    trace_step("tiles: dS K / sqrt(D)", grads.query, grad_out, 5, saved);
    trace_step("tiles: dS^T Q / sqrt(D)", grads.key, grad_out, 5, saved);
    if (steps != NULL) {
        *steps = counts;
    }
    return grads;
}

// --- part 2's standard path: P kept whole, as autograd keeps it ---------------------------------

// The standard forward, lesson 13's naive path (appendix C): the helper's
// matmul and softmax. Returns out (B, H, N, D) and *P, the weights as
// (B, H, N, N), which the standard backward needs whole. (Not static:
// bench.c runs it too.)
const Tensor *standard_attention(const Tensor **P, const Tensor *query, const Tensor *key,
                                 const Tensor *value, bool causal);

// The standard backward, as autograd runs it on the standard forward, by
// plain loops (appendix C): part 1's formulas on whole (N, N) matrices a
// head, dP and dS made whole, (B, H, N, N) each, as P is.
static QKVGrads standard_backward(const Tensor *P, const Tensor *query, const Tensor *key,
                                  const Tensor *value, const Tensor *grad_out);

// --- what both parts print with -----------------------------------------------------------------

typedef struct {
    int batch, seq, dim, heads, kv_heads, head_dim, block_q, block_k;
    bool causal, train;
    int threads;   // part 2's backward, and --bench's: --threads
} Sizes;

static void print_grad(const char *name, const Tensor *grad) {
    printf("%s\n%s\n", name, tensor_str(grad, NULL));
}

// Batch row 0 of a part 1 gradient (B, T, *): t[0].
static void print_row0(const char *name, const Tensor *grad) {
    const Tensor *row = narrow(grad, 0, 0, 1);                                // (1, T, *)
    printf("%s[0]\n%s\n", name, tensor_str(reshape(row, shape2(size(grad, 1), size(grad, 2))),
                                          NULL));
}

// The top-left corner of a part 2 gradient (B, H or KV, N, D): t[0, 0, :4, :4].
static void print_corner(const char *name, const Tensor *grad) {
    int rows = min_int(size(grad, 2), 4), cols = min_int(size(grad, 3), 4);
    const Tensor *c = narrow(narrow(narrow(narrow(grad, 0, 0, 1), 1, 0, 1), 2, 0, rows), 3, 0,
                             cols);                                           // (1, 1, 4, 4)
    printf("%s[0, 0, :%d, :%d]\n%s\n", name, rows, cols,
           tensor_str(reshape(c, shape2(rows, cols)), NULL));
}

// sum over the last dim of a (B, T, S) tensor: (B, T).
static Tensor *sum_last(const Tensor *t) {
    Tensor *sums = zeros(shape2(size(t, 0), size(t, 1)));
    for (int b = 0; b < size(t, 0); b++) {
        for (int i = 0; i < size(t, 1); i++) {
            for (int s = 0; s < size(t, 2); s++) {
                *at2(sums, b, i) += *at3(t, b, i, s);
            }
        }
    }
    return sums;
}

// --- part 1: lesson 5's module backward, every .grad by hand ------------------------------------

// Part 1's checks (appendix D): masked scores and masked keys get exactly 0,
// the rows of scores.grad sum to 0, and central differences agree with the formulas.
static void check_part1(const SelfAttV4 *net, const SelfAttV4Steps *f, const SelfAttV4Grads *g,
                        const Tensor *X, const Tensor *mask, const Tensor *grad_out);

// Part 1: lesson 5's module at the cell's sizes, every gradient by hand. The
// (B, T, *) gradients print batch row 0; the page discusses those, and the
// whole scores.grad and X.grad.
static void part1_by_hand(const Sizes *n, bool heatmap) {
    int B = n->batch, T = n->seq, C = n->dim;
    if ((double)B * T * T > (double)MAX_ELEMENTS) {
        printf("-- part 1 is skipped: att_weight (%d, %d, %d) would pass the helper's limit of "
               "%ld elements --\n", B, T, T, MAX_ELEMENTS);
        return;
    }
    printf("-- part 1: lesson 5's module backward, every .grad by hand (--batch --seq --dim "
           "--causal --train) --\n");
    printf("X = torch.rand(%d, %d, %d, requires_grad=True); net = SelfAttV4(%d), %s mode\n",
           B, T, C, C, n->train ? "train" : "eval");
    const Tensor *X = named("X", rand_tensor(shape3(B, T, C)));              // (B, T, C)
    const Tensor *mask = named("mask", cell_mask(B, T, n->causal));          // (B, T, S)
    printf("mask: %s\n", n->causal ? "causal, query t sees keys 0..t"
                                   : "padding, batch row b keeps its first max(1, seq-1-b) keys");
    SelfAttV4 net = SelfAttV4_init(C);
    net.training = n->train;
    SelfAttV4Steps f;
    const Tensor *ret = SelfAttV4_forward(&f, &net, X, mask);                // (B, T, C)
    printf("att_weight:\n%s\n", tensor_str(f.att_weight, "grad_fn=<SoftmaxBackward0>"));
    const Tensor *grad_out = named("grad_out", randn(ret->shape));        // (B, T, C)
    trace1("randn_like", grad_out, ret);   // --dot: drawn in ret's shape, below the forward
    printf("ret = net(X, mask); grad_out = torch.randn(%d, %d, %d); ret.backward(grad_out)\n",
           B, T, C);
    if (heatmap) {
        print_heatmap("att_weight", f.att_weight);
    }
    SelfAttV4Grads g = SelfAttV4_backward(&net, &f, X, grad_out);
    struct { const char *name; const Tensor *grad; } grads[] = {
        {"output_proj.weight.grad", g.output_proj.weight}, {"output_proj.bias.grad",
        g.output_proj.bias}, {"output.grad", g.output}, {"V.grad", g.V}, {"att_weight.grad",
        g.att_weight}, {"scores.grad", g.scores}, {"Q.grad", g.Q}, {"K.grad", g.K},
        {"query_proj.weight.grad", g.query_proj.weight}, {"query_proj.bias.grad",
        g.query_proj.bias}, {"key_proj.weight.grad", g.key_proj.weight}, {"key_proj.bias.grad",
        g.key_proj.bias}, {"value_proj.weight.grad", g.value_proj.weight},
        {"value_proj.bias.grad", g.value_proj.bias}, {"X.grad", g.X},
        {n->train ? "att_weight_dropped.grad" : NULL, g.att_weight_dropped},
    };
    for (size_t i = 0; i < sizeof grads / sizeof grads[0] && grads[i].name != NULL; i++) {
        named(grads[i].name, grads[i].grad);   // for --dump, as <name>.npy
    }
    bool was_paused = trace_pause(true);   // what follows prints and checks: not dataflow

    const char *Pd = n->train ? "att_weight_dropped" : "att_weight";   // what multiplies V
    printf("\n1. ret = output_proj(output), a Linear: output_proj.weight.grad = grad_out^T @ "
           "output,\n   output_proj.bias.grad = grad_out summed over batch and seq,\n   "
           "output.grad = grad_out @ output_proj.weight\n");
    print_grad("output_proj.weight.grad", g.output_proj.weight);
    print_grad("output_proj.bias.grad", g.output_proj.bias);
    print_row0("output.grad", g.output);
    printf("\n2. output = %s @ V: V.grad = %s^T @ output.grad,\n   %s.grad = "
           "output.grad @ V^T\n", Pd, Pd, Pd);
    print_row0("V.grad", g.V);
    print_row0(n->train ? "att_weight_dropped.grad" : "att_weight.grad", g.att_weight_dropped);
    if (n->train) {
        printf("\n3. att_weight_dropped = att_weight * noise, dropout: att_weight.grad =\n   "
               "att_weight_dropped.grad * noise, the forward's noise (0 or 1/0.9): a dropped "
               "weight\n   passes no gradient back\n");
        print_row0("att_weight.grad", g.att_weight);
    } else {
        printf("\n3. dropout: off in eval mode (att_weight is used as it is): nothing to undo\n");
    }
    printf("\n4. att_weight = softmax(scores): scores.grad = att_weight * (att_weight.grad - "
           "r), the row\n   term r one number per query: (att_weight * att_weight.grad).sum(-1), "
           "which is also\n   (output.grad * output).sum(-1), C numbers a query instead of S\n");
    print_grad("(att_weight * att_weight.grad).sum(-1)", g.row_term);
    print_grad("(output.grad * output).sum(-1)", sum_last(mul(g.output, f.output)));
    print_grad("scores.grad", g.scores);
    printf("\n5. scores = (Q @ K^T / sqrt(%d)).masked_fill(mask == 0, -1e20): a masked score "
           "passes no gradient;\n   Q.grad = scores.grad @ K / sqrt(%d), K.grad = scores.grad^T "
           "@ Q / sqrt(%d)\n", C, C, C);
    print_row0("Q.grad", g.Q);
    print_row0("K.grad", g.K);
    printf("\n6. Q, K, V = query_proj(X), key_proj(X), value_proj(X): three Linears as in 1, "
           "and X.grad\n   is the sum of their three input gradients\n");
    const Linear *layers[3] = {&g.query_proj, &g.key_proj, &g.value_proj};
    const char *names[3][2] = {{"query_proj.weight.grad", "query_proj.bias.grad"},
                               {"key_proj.weight.grad", "key_proj.bias.grad"},
                               {"value_proj.weight.grad", "value_proj.bias.grad"}};
    for (int i = 0; i < 3; i++) {
        print_grad(names[i][0], layers[i]->weight);
        if (i != 1) {
            print_grad(names[i][1], layers[i]->bias);
        }
    }
    // key_proj.bias adds q_t . b_k / sqrt(C) to every score of row t (k_s = W_k x_s + b_k),
    // and softmax ignores a shift of its row: the gradient is 0, and what is printed is
    // rounding.
    printf("key_proj.bias.grad is 0 up to rounding, max |key_proj.bias.grad| = %.1e: it adds\n"
           "  q_t . b_k / sqrt(%d) to every score of row t, and softmax ignores a shift of its "
           "row\n", max_abs_diff(g.key_proj.bias, zeros(shape1(C))), C);
    print_grad("X.grad", g.X);
    check_part1(&net, &f, &g, X, mask, grad_out);
    trace_pause(was_paused);
}

// --- part 2: FlashAttention-2's backward on lesson 13's tiles -----------------------------------

// The tiles of one head in the order the backward visits them: a column per
// key block (the outer loop), a row per query block (the inner loop).
static void show_tile_visits(const Sizes *n, const BackwardSteps *steps) {
    int N = n->seq, Bq = min_int(n->block_q, N), Bk = min_int(n->block_k, N);
    int q_blocks = (N + Bq - 1) / Bq, k_blocks = (N + Bk - 1) / Bk;
    printf("the backward's loops: for each key block j (outer), for each query block i (inner):"
           "\nthe tiles of one head, a row per query block, a column per key block, numbered in "
           "the order\nthey are visited (\\ on the diagonal: masked in part; . skipped):\n");
    if (q_blocks <= MAP_MAX_BLOCKS && k_blocks <= MAP_MAX_BLOCKS) {
        int order[MAP_MAX_BLOCKS][MAP_MAX_BLOCKS], visited = 0;
        for (int kb = 0; kb < k_blocks; kb++) {
            for (int qb = 0; qb < q_blocks; qb++) {
                int qs = qb * Bq, ks = kb * Bk;
                TileKind kind =
                    tile_kind(n->causal, qs, min_int(Bq, N - qs), ks, min_int(Bk, N - ks));
                order[qb][kb] = kind == TILE_SKIPPED ? 0 : ++visited;
            }
        }
        for (int qb = 0; qb < q_blocks; qb++) {
            int qs = qb * Bq, nq = min_int(Bq, N - qs);
            printf("  queries %4d..%-4d", qs, qs + nq - 1);
            for (int kb = 0; kb < k_blocks; kb++) {
                char cell[16] = ".";
                TileKind kind = tile_kind(n->causal, qs, nq, kb * Bk, min_int(Bk, N - kb * Bk));
                if (kind != TILE_SKIPPED) {
                    snprintf(cell, sizeof cell, kind == TILE_DIAGONAL ? "%d\\" : "%d",
                             order[qb][kb]);
                }
                printf(" %4s", cell);
            }
            printf("\n");
        }
    } else {
        printf("(%d x %d tiles a head: the map is drawn up to %d x %d)\n", q_blocks, k_blocks,
               MAP_MAX_BLOCKS, MAP_MAX_BLOCKS);
    }
    long heads = (long)n->batch * n->heads;
    printf("per head: %ld tiles visited (%ld of them masked), %ld skipped\n",
           (steps->tiles[TILE_FULL] + steps->tiles[TILE_DIAGONAL]) / heads,
           steps->tiles[TILE_DIAGONAL] / heads, steps->tiles[TILE_SKIPPED] / heads);
}

// P of the first tile of batch 0, head 0, made as the backward makes it
// (appendix B): S = (Q_i / sqrt(D)) K_j^T, then exp(S - lse). (nq, nk).
static Tensor *first_tile_P(const FlashAttention *flash, const Tensor *query, const Tensor *key,
                            const Tensor *lse);

// What the two backwards cost: the FLOPs each does, and the memory each
// holds besides the inputs, outputs and gradients.
static void print_costs(const Sizes *n, const BackwardSteps *steps, const Tensor *lse) {
    int B = n->batch, H = n->heads, N = n->seq, D = n->head_dim;
    double BHNND = (double)B * H * N * N * D;
    printf("FLOPs: the tiled backward did %.0f, five products on each visited tile, 2*nq*nk*D "
           "each,\n  where the forward does two (Q K^T and P V): S and P are recomputed. Without "
           "the mask\n  10*B*H*N*N*D = %.0f, 2.5 times the forward's 4*B*H*N*N*D = %.0f; the "
           "standard backward\n  keeps P and does 4 products, 8*B*H*N*N*D = %.0f\n",
           steps->flops, 10 * BHNND, 4 * BHNND, 8 * BHNND);
    printf("extra memory:\n  standard: P (kept by its forward), dP and dS, (B, H, N, N) each: "
           "%.2f KiB\n  tiled: lse (B, H, N), kept by the forward, and delta (N) of one head: "
           "%.2f KiB;\n    its blocks, K_j^T and V_j^T (D, Bk), two (Bq, Bk) and Q_i / sqrt(D) "
           "(Bq, D): %.2f KiB,\n    whatever N is\n"
           "    (with --threads, each thread has its own delta and blocks)\n",
           standard_extra_bytes(B, H, N) / 1024.0,
           ((double)numel(lse) * sizeof(float) + steps->delta_bytes) / 1024.0,
           steps->scratch_bytes / 1024.0);
}

// Part 2: lesson 13's attention, forward keeping lse, backward by tiles.
static void part2_flash_backward(const Sizes *n, uint64_t seed, bool heatmap) {
    int B = n->batch, H = n->heads, KV = n->kv_heads, N = n->seq, D = n->head_dim;
    printf("\n-- part 2: FlashAttention-2's tiled backward (--heads --kv-heads --block-q --block-k "
           "--causal) --\n");
    manual_seed(seed);
    printf("torch.manual_seed(seed) again: lesson 13's draws, then the upstream gradient\n");
    printf("query = torch.randn(%d, %d, %d, %d, requires_grad=True)\n", B, H, N, D);
    printf("key = torch.randn(%d, %d, %d, %d, requires_grad=True)\n", B, KV, N, D);
    printf("value = torch.randn(%d, %d, %d, %d, requires_grad=True)\n", B, KV, N, D);
    printf("grad_attn_out = torch.randn(%d, %d, %d, %d)\n", B, H, N, D);
    const Tensor *query = named("query", randn(shape4(B, H, N, D)));         // (B, H, N, D)
    const Tensor *key = named("key", randn(shape4(B, KV, N, D)));            // (B, KV, N, D)
    const Tensor *value = named("value", randn(shape4(B, KV, N, D)));        // (B, KV, N, D)

    FlashAttention flash = FlashAttention_init(H, KV, n->causal, n->block_q, n->block_k);
    flash.threads = n->threads;   // the backward's workers (the forward runs on one thread)
    Tensor *lse;
    const Tensor *attn_out =
        named("attn_out", FlashAttention_forward(&lse, &flash, query, key, value));
    named("lse", lse);                                                        // (B, H, N)
    // The fourth draw (the forward draws nothing, so after it, the same numbers), in
    // attn_out's shape: the --dot graph draws it below the forward.
    const Tensor *grad_attn_out = named("grad_attn_out", randn(attn_out->shape));
    trace1("randn_like", grad_attn_out, attn_out);                           // (B, H, N, D)
    BackwardSteps steps;
    QKVGrads grads = FlashAttention_backward(&steps, &flash, query, key, value, attn_out, lse,
                                             grad_attn_out);
    named("query.grad", grads.query);
    named("key.grad", grads.key);
    named("value.grad", grads.value);

    bool was_paused = trace_pause(true);   // the rest prints and checks: not dataflow
    printf("the tiled forward (lesson 13's loop) keeps attn_out and lse = m + log(l), one number "
           "per query;\nlse[0, 0], what torch.logsumexp(scores, -1) gives:\n%s\n",
           tensor_str(reshape(narrow(narrow(lse, 0, 0, 1), 1, 0, 1), shape1(N)), NULL));
    show_tile_visits(n, &steps);
    printf("first, per head, delta = (dO * O).sum(-1); then each visited tile: S = Q_i K_j^T and\n"
           "  P = exp(S / sqrt(%d) - lse_i), recomputed; dV_j += P^T dO_i; dP = dO_i V_j^T;\n"
           "  dS = P * (dP - delta_i); dQ_i += dS K_j / sqrt(%d); dK_j += dS^T Q_i / sqrt(%d)\n",
           D, D, D);
    const Tensor *P_tile = first_tile_P(&flash, query, key, lse);            // (nq, nk)
    int nq = size(P_tile, 0), nk = size(P_tile, 1);
    printf("P of the first tile (batch 0, head 0, queries 0..%d, keys 0..%d), recomputed from "
           "lse:\n%s\n", nq - 1, nk - 1, tensor_str(P_tile, NULL));
    bool standard_fits = (double)B * H * N * N <= (double)MAX_ELEMENTS;
    const Tensor *P = NULL;
    QKVGrads standard = {NULL, NULL, NULL};
    if (standard_fits) {
        standard_attention(&P, query, key, value, n->causal);
        standard = standard_backward(P, query, key, value, grad_attn_out);
        printf("the standard forward's P[0, 0, :%d, :%d] (lesson 13's naive path), kept whole:\n"
               "%s\n", nq, nk,
               tensor_str(reshape(narrow(narrow(narrow(narrow(P, 0, 0, 1), 1, 0, 1), 2, 0, nq),
                                         3, 0, nk), shape2(nq, nk)), NULL));
    }
    print_corner("query.grad", grads.query);
    print_corner("key.grad", grads.key);
    print_corner("value.grad", grads.value);
    if (standard_fits) {
        float diff = fmaxf(fmaxf(max_abs_diff(grads.query, standard.query),
                                 max_abs_diff(grads.key, standard.key)),
                           max_abs_diff(grads.value, standard.value));
        printf("against the standard backward (P kept, dS from rowsum(P * dP)), the lesson's "
               "loops:\n  max |tiled - standard| = %.3g (%s 1e-5: float rounding only)\n", diff,
               diff <= TOLERANCE ? "within" : "NOT within");
        if (heatmap) {
            int shown = N < 16 ? N : 16;
            const Tensor *w = narrow(narrow(narrow(narrow(P, 0, 0, 1), 1, 0, 1), 2, 0, shown), 3,
                                     0, shown);
            print_heatmap("P, batch 0, head 0 (the standard forward's; the tiled one never "
                          "stores it)", reshape(w, shape2(shown, shown)));
        }
    } else {
        printf("the standard path is skipped: its P (%d, %d, %d, %d) would pass the helper's "
               "limit of %ld elements\n", B, H, N, N, MAX_ELEMENTS);
    }
    print_costs(n, &steps, lse);
    printf("the speed: make lesson-14 ARGS=--bench\n");
    trace_pause(was_paused);
}

// --- the lesson ---------------------------------------------------------------------------------

// The flags (appendix F): parsed into *lesson, then checked together.
static Sizes read_flags(Lesson *lesson, bool *run_bench, int argc, char **argv);
// What a run of these flags costs (appendix E), checked before any work.
static Cost attention_backward_cost(const Sizes *n);

int main(int argc, char **argv) {
    Lesson lesson;
    bool run_bench = false;
    Sizes n = read_flags(&lesson, &run_bench, argc, argv);   // appendix F
    if (run_bench) {
        bench(&lesson, n.seq, n.block_q, n.block_k, n.threads);   // bench.c: its own sizes
        return lesson_finish(&lesson);
    }
    check_budget(&lesson, attention_backward_cost(&n));
    lesson_start(&lesson);
    part1_by_hand(&n, lesson.heatmap);
    part2_flash_backward(&n, lesson.seed, lesson.heatmap);
    return lesson_finish(&lesson);
}

// === appendix A: what --bench (bench.c) calls ===================================================

static FlashAttention bench_flash(const BenchRun *run, int heads) {
    FlashAttention flash = FlashAttention_init(heads, heads, run->causal, run->block_q,
                                               run->block_k);
    flash.kernels = run->kernels;
    flash.threads = run->threads;   // the backward's; the forward runs on one thread
    return flash;
}

const Tensor *bench_tiled_forward(Tensor **lse, const BenchRun *run, const Tensor *query,
                                  const Tensor *key, const Tensor *value) {
    FlashAttention flash = bench_flash(run, size(query, 1));
    return FlashAttention_forward(lse, &flash, query, key, value);
}

void bench_tiled_backward(Tensor **grads, TiledCounts *counts, const BenchRun *run,
                          const Tensor *query, const Tensor *key, const Tensor *value,
                          const Tensor *out, const Tensor *lse, const Tensor *grad_out) {
    FlashAttention flash = bench_flash(run, size(query, 1));
    BackwardSteps steps;
    QKVGrads g = FlashAttention_backward(&steps, &flash, query, key, value, out, lse, grad_out);
    grads[0] = g.query, grads[1] = g.key, grads[2] = g.value;
    *counts = (TiledCounts){steps.flops, steps.scratch_bytes, steps.delta_bytes, steps.workers};
}

void bench_loops_backward(Tensor **grads, const Tensor *P, const Tensor *query,
                          const Tensor *key, const Tensor *value, const Tensor *grad_out) {
    QKVGrads g = standard_backward(P, query, key, value, grad_out);
    grads[0] = g.query, grads[1] = g.key, grads[2] = g.value;
}

// === appendix B: the forward, lesson 13's tiled loop keeping lse ================================

// The forward's scratch: scores kept transposed, a column per query.
typedef struct {
    int N, D, Bq, Bk, ldS;   // ldS: Bq rounded up to 16
    bool causal;
    const Kernels *kernels;
    float *q_t;              // (D, ldS)  the query block, transposed, times 1/sqrt(D)
    float *s_t;              // (Bk, ldS) its scores against a key block, then exp(score - m)
    float *m, *l, *m_new, *block_sum;   // (ldS) each: running max and sum per query
} Tiling;

// One block of queries against every key block it sees, as lesson 13's
// tiled loop does it (the same blocks, running max and sum, rescaling by
// exp(m - m_new)), with this lesson's kernels: in base e, where lesson 13's
// own work in base 2 and fuse more. It also writes lse[j] = m + log(l): all
// the backward needs of the softmax, one number per query.
static void attend_query_block(const Tiling *w, const float *q, const float *k, const float *v,
                               float *out, float *lse, int qs, int nq) {
    int D = w->D, ldS = w->ldS;
    float scale = 1.0f / sqrtf((float)D), *o = out + (long)qs * D;   // (nq, D) the accumulator
    for (int d = 0; d < D; d++) {
        for (int j = 0; j < ldS; j++) {
            w->q_t[(long)d * ldS + j] = j < nq ? q[(long)(qs + j) * D + d] * scale : 0.0f;
        }
    }
    for (int j = 0; j < ldS; j++) {
        w->m[j] = -INFINITY;
        w->l[j] = 0.0f;
    }
    memset(o, 0, (size_t)nq * D * sizeof(float));
    for (int ks = 0; ks < w->N; ks += w->Bk) {
        int nk = min_int(w->Bk, w->N - ks);
        TileKind kind = tile_kind(w->causal, qs, nq, ks, nk);
        if (kind == TILE_SKIPPED) {
            continue;
        }
        int visible = kind == TILE_DIAGONAL ? min_int(nk, qs + nq - ks) : nk;
        // s_t (visible, ldS) = k_block (visible, D) @ q_t (D, ldS), masked on the diagonal
        w->kernels->matmul(w->s_t, ldS, k + (long)ks * D, D, 1, w->q_t, ldS, visible, ldS, D,
                           false);
        for (int p = 0; kind == TILE_DIAGONAL && p < visible; p++) {
            for (int j = 0; j < nq; j++) {
                if (ks + p > qs + j) {
                    w->s_t[(long)p * ldS + j] = -INFINITY;
                }
            }
        }
        memcpy(w->m_new, w->m, (size_t)ldS * sizeof(float));
        w->kernels->column_max(w->m_new, w->s_t, visible, ldS, ldS);
        w->kernels->exp_columns(w->s_t, w->block_sum, w->m_new, visible, ldS, ldS);
        for (int j = 0; j < nq; j++) {   // rescale what was summed before by exp(m - m_new)
            float alpha = flash_expf(w->m[j] - w->m_new[j]);
            w->l[j] = w->l[j] * alpha + w->block_sum[j];
            w->m[j] = w->m_new[j];
            for (int d = 0; alpha != 1.0f && d < D; d++) {
                o[(long)j * D + d] *= alpha;
            }
        }
        // o (nq, D) += P (nq, visible) @ v_block (visible, D), P[j][p] = s_t[p][j]
        w->kernels->matmul(o, D, w->s_t, 1, ldS, v + (long)ks * D, D, nq, D, visible, true);
    }
    for (int j = 0; j < nq; j++) {
        for (int d = 0; d < D; d++) {
            o[(long)j * D + d] /= w->l[j];
        }
        lse[qs + j] = w->m[j] + logf(w->l[j]);   // softmax's log-sum-exp of the row
    }
}

static Tensor *FlashAttention_forward(Tensor **lse, const FlashAttention *self,
                                      const Tensor *query, const Tensor *key,
                                      const Tensor *value) {
    int B = size(query, 0), H = size(query, 1), N = size(query, 2), D = size(query, 3);
    int R = H / self->num_kv_heads;
    const Tensor *q = contiguous(query), *k = contiguous(key), *v = contiguous(value);
    Tensor *out = zeros(shape4(B, H, N, D));                                  // (B, H, N, D)
    *lse = zeros(shape3(B, H, N));                                            // (B, H, N)
    Tiling w = {N, D, min_int(self->block_q, N), min_int(self->block_k, N), 0, self->causal,
                self->kernels, NULL, NULL, NULL, NULL, NULL, NULL};
    w.ldS = (w.Bq + 15) / 16 * 16;
    w.q_t = arena_alloc(((size_t)D + (size_t)w.Bk + 4) * (size_t)w.ldS, sizeof(float));
    w.s_t = w.q_t + (size_t)D * w.ldS;
    w.m = w.s_t + (size_t)w.Bk * w.ldS;
    w.l = w.m + w.ldS;
    w.m_new = w.l + w.ldS;
    w.block_sum = w.m_new + w.ldS;
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            for (int qs = 0; qs < N; qs += w.Bq) {
                attend_query_block(&w, at4(q, b, h, 0, 0), at4(k, b, h / R, 0, 0),
                                   at4(v, b, h / R, 0, 0), at4(out, b, h, 0, 0),
                                   at3(*lse, b, h, 0), qs, min_int(w.Bq, N - qs));
            }
        }
    }
    trace_step("tiled forward", out, query, 2, (const Tensor *const[]){key, value});
    trace_step("m + log(l)", *lse, query, 1, &key);
    return out;
}

static Tensor *first_tile_P(const FlashAttention *flash, const Tensor *query, const Tensor *key,
                            const Tensor *lse) {
    int N = size(query, 2), D = size(query, 3);
    int nq = min_int(flash->block_q, N), nk = min_int(flash->block_k, N);
    Tensor *P = zeros(shape2(nq, nk)), *unused = zeros(shape2(nq, nk));      // (nq, nk)
    const Tensor *no_delta = zeros(shape1(nq));                              // dS is not shown
    Tensor *q_s = zeros(shape2(nq, D)), *k_t = zeros(shape2(D, nk));         // (nq, D), (D, nk)
    for (int d = 0; d < D; d++) {
        for (int j = 0; j < nq; j++) {
            *at2(q_s, j, d) = *at4(query, 0, 0, j, d) * (1.0f / sqrtf((float)D));
        }
        for (int p = 0; p < nk; p++) {
            *at2(k_t, d, p) = *at4(key, 0, 0, p, d);
        }
    }
    flash->kernels->matmul(P->data, nk, q_s->data, D, 1, k_t->data, nk, nq, nk, D, false);
    TileKind kind = tile_kind(flash->causal, 0, nq, 0, nk);
    flash->kernels->softmax_backward(P->data, unused->data, at3(lse, 0, 0, 0), no_delta->data,
                                     nq, nk, nk, 1.0f, kind == TILE_DIAGONAL ? 0 : nk);
    return P;
}

// === appendix C: the standard path, lesson 13's naive forward and autograd's backward ===========

// The standard forward, lesson 13's naive path: the helper's matmul and
// softmax, (B, KV, R, N, N) weights (R query heads beside each key/value
// head, broadcast, no copy). Returns out (B, H, N, D) and *P, the weights as
// (B, H, N, N), which the standard backward needs whole.
const Tensor *standard_attention(const Tensor **P, const Tensor *query, const Tensor *key,
                                 const Tensor *value, bool causal) {
    int B = size(query, 0), H = size(query, 1), N = size(query, 2), D = size(query, 3);
    int KV = size(key, 1), R = H / KV;
    const Tensor *q = view(contiguous(query), shape5(B, KV, R, N, D));        // (B, KV, R, N, D)
    const Tensor *k = unsqueeze(key, 2), *v = unsqueeze(value, 2);            // (B, KV, 1, N, D)
    Tensor *scores = div_scalar(matmul(q, transpose(k, -2, -1)), (float)sqrt((double)D));
    if (causal) {                                                             // (B, KV, R, N, N)
        scores = masked_fill(scores, eq_scalar(triu(ones(shape2(N, N)), 1), 1.0f), -INFINITY);
    }
    const Tensor *weights = softmax(scores, -1);                              // (B, KV, R, N, N)
    *P = view(weights, shape4(B, H, N, N));                                   // (B, H, N, N)
    return view(matmul(weights, v), shape4(B, H, N, D));                      // (B, H, N, D)
}

// The standard backward, as autograd runs it on the standard forward, in plain
// loops on whole (N, N) matrices a head: dV = P^T dO (summed over a group),
// dP = dO V^T, dS = P (dP - rowsum(P dP)) (autograd's softmax backward: the
// row term from the whole row of P and dP), dQ = dS K / sqrt(D), dK = dS^T Q
// / sqrt(D). dP and dS are made whole, (B, H, N, N) each, as P is.
static QKVGrads standard_backward(const Tensor *P, const Tensor *query, const Tensor *key,
                                  const Tensor *value, const Tensor *grad_out) {
    int B = size(query, 0), H = size(query, 1), N = size(query, 2), D = size(query, 3);
    int KV = size(key, 1), R = H / KV;
    float scale = 1.0f / sqrtf((float)D);
    const Tensor *q = contiguous(query), *k = contiguous(key), *v = contiguous(value);
    const Tensor *dO = contiguous(grad_out), *Pc = contiguous(P);
    QKVGrads g = {zeros(shape4(B, H, N, D)), zeros(shape4(B, KV, N, D)),
                  zeros(shape4(B, KV, N, D))};
    Tensor *dP = zeros(shape4(B, H, N, N)), *dS = zeros(shape4(B, H, N, N));  // (B, H, N, N) each
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            const float *q_h = at4(q, b, h, 0, 0), *k_g = at4(k, b, h / R, 0, 0);   // (N, D)
            const float *v_g = at4(v, b, h / R, 0, 0), *do_h = at4(dO, b, h, 0, 0);
            const float *p_h = at4(Pc, b, h, 0, 0);                                  // (N, N)
            float *dp_h = at4(dP, b, h, 0, 0), *ds_h = at4(dS, b, h, 0, 0);
            float *dq_h = at4(g.query, b, h, 0, 0), *dk_g = at4(g.key, b, h / R, 0, 0);
            float *dv_g = at4(g.value, b, h / R, 0, 0);
            for (int t = 0; t < N; t++) {
                float row = 0.0f;
                for (int s = 0; s < N; s++) {
                    float pts = p_h[(long)t * N + s], dp = 0.0f;
                    for (int d = 0; d < D; d++) {
                        dv_g[(long)s * D + d] += pts * do_h[(long)t * D + d];   // dV += P^T dO
                        dp += do_h[(long)t * D + d] * v_g[(long)s * D + d];     // dP = dO V^T
                    }
                    dp_h[(long)t * N + s] = dp;
                    row += pts * dp;
                }
                for (int s = 0; s < N; s++) {
                    float ds = p_h[(long)t * N + s] * (dp_h[(long)t * N + s] - row) * scale;
                    ds_h[(long)t * N + s] = ds;
                    for (int d = 0; d < D; d++) {
                        dq_h[(long)t * D + d] += ds * k_g[(long)s * D + d];     // dQ = dS K
                        dk_g[(long)s * D + d] += ds * q_h[(long)t * D + d];     // dK = dS^T Q
                    }
                }
            }
        }
    }
    return g;
}

// What the standard backward keeps or makes besides the gradients: P (kept
// by its forward), dP and dS, (B, H, N, N) each.
size_t standard_extra_bytes(int B, int H, int N) {
    return 3 * (size_t)B * H * N * N * sizeof(float);
}

// === appendix D: part 1's checks, and its module in double for the central differences ==========

// sum(ret * grad_out) computed in double from the float inputs and
// parameters, with one number moved by h: element `index` (row-major) of
// `moved`. The same mask and dropout noise as the forward.
static double loss_in_double(const SelfAttV4 *net, const Tensor *X, const Tensor *mask,
                             const Tensor *noise, const Tensor *grad_out, const Tensor *moved,
                             long index, double h) {
    int B = size(X, 0), T = size(X, 1), C = size(X, 2);
    const Tensor *held[9] = {X, net->query_proj.weight, net->query_proj.bias,
                             net->key_proj.weight, net->key_proj.bias, net->value_proj.weight,
                             net->value_proj.bias, net->output_proj.weight, net->output_proj.bias};
    double *v[9];   // each tensor as doubles, `moved` moved
    for (int i = 0; i < 9; i++) {
        long n = numel(held[i]);
        v[i] = arena_alloc((size_t)n, sizeof(double));
        const Tensor *t = contiguous(held[i]);   // one copy at most, not one an element
        for (long e = 0; e < n; e++) {
            v[i][e] = t->data[t->offset + e] + (held[i] == moved && e == index ? h : 0.0);
        }
    }
    double *qkv[3], *row = arena_alloc((size_t)T, sizeof(double));
    double *o = arena_alloc((size_t)C, sizeof(double)), loss = 0.0;
    for (int p = 0; p < 3; p++) {   // Q, K, V (B, T, C) = X W^T + b
        qkv[p] = arena_alloc((size_t)B * T * C, sizeof(double));
        for (long r = 0; r < (long)B * T; r++) {
            for (int c = 0; c < C; c++) {
                double sum = v[2 + 2 * p][c];
                for (int i = 0; i < C; i++) {
                    sum += v[0][r * C + i] * v[1 + 2 * p][c * C + i];
                }
                qkv[p][r * C + c] = sum;
            }
        }
    }
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {   // one query: its scores, softmax, output, ret
            double max = -INFINITY, sum = 0.0;
            for (int s = 0; s < T; s++) {
                double x = 0.0;
                for (int c = 0; c < C; c++) {
                    x += qkv[0][((long)b * T + t) * C + c] * qkv[1][((long)b * T + s) * C + c];
                }
                row[s] = *at3(mask, b, t, s) == 0.0f ? (double)MASK_FILL : x / sqrt((double)C);
                max = row[s] > max ? row[s] : max;
            }
            for (int s = 0; s < T; s++) {
                row[s] = exp(row[s] - max);
                sum += row[s];
            }
            for (int c = 0; c < C; c++) {
                o[c] = 0.0;
                for (int s = 0; s < T; s++) {
                    double w = row[s] / sum * (noise != NULL ? *at3(noise, b, t, s) : 1.0f);
                    o[c] += w * qkv[2][((long)b * T + s) * C + c];
                }
            }
            for (int c = 0; c < C; c++) {
                double ret = v[8][c];
                for (int i = 0; i < C; i++) {
                    ret += o[i] * v[7][c * C + i];
                }
                loss += ret * *at3(grad_out, b, t, c);
            }
        }
    }
    return loss;
}

// Part 1's table of central differences, at five entries that exist at any sizes.
static void print_central_differences(const SelfAttV4 *net, const SelfAttV4Steps *f,
                                      const SelfAttV4Grads *g, const Tensor *X,
                                      const Tensor *mask, const Tensor *grad_out) {
    int C = size(X, 2);
    struct { const char *name; const Tensor *value, *grad; int index[3]; } entries[] = {
        {"X", X, g->X, {0, 0, 0}},
        {"query_proj.weight", net->query_proj.weight, g->query_proj.weight, {0, C - 1}},
        {"key_proj.weight", net->key_proj.weight, g->key_proj.weight, {C - 1, 0}},
        {"value_proj.bias", net->value_proj.bias, g->value_proj.bias, {C - 1}},
        {"output_proj.weight", net->output_proj.weight, g->output_proj.weight, {C - 1, C - 1}},
    };
    printf("central differences in double: (L(w + h) - L(w - h)) / 2h, L = (ret * grad_out).sum(), "
           "h = %g\n", CHECK_STEP);
    double largest = 0.0;
    for (int e = 0; e < 5; e++) {
        const Tensor *w = entries[e].value;
        const int *i = entries[e].index;
        long flat = w->shape.ndim == 1   ? i[0]
                    : w->shape.ndim == 2 ? (long)i[0] * size(w, 1) + i[1]
                                   : ((long)i[0] * size(w, 1) + i[1]) * C + i[2];
        size_t mark = arena_mark();   // each loss's doubles freed once it is summed
        double up = loss_in_double(net, X, mask, f->noise, grad_out, w, flat, CHECK_STEP);
        double down = loss_in_double(net, X, mask, f->noise, grad_out, w, flat, -CHECK_STEP);
        arena_release(mark);
        double central = (up - down) / (2.0 * CHECK_STEP);
        const Tensor *grad = contiguous(entries[e].grad);
        double analytic = grad->data[grad->offset + flat];
        char where[64];
        int used = snprintf(where, sizeof where, "%s[", entries[e].name);
        for (int d = 0; d < w->shape.ndim; d++) {
            used += snprintf(where + used, sizeof where - (size_t)used, d ? ", %d" : "%d", i[d]);
        }
        snprintf(where + used, sizeof where - (size_t)used, "]");
        printf("  %-24s autograd %12.6g   central %12.6g\n", where, analytic, central);
        largest = fmax(largest, fabs(analytic - central));
    }
    printf("max |autograd - central| = %.1e (float rounding of the analytic gradients)\n", largest);
}

// Part 1's checks: masked scores and masked keys get exactly 0, the rows of
// scores.grad sum to 0, and central differences agree with the formulas.
static void check_part1(const SelfAttV4 *net, const SelfAttV4Steps *f, const SelfAttV4Grads *g,
                        const Tensor *X, const Tensor *mask, const Tensor *grad_out) {
    int B = size(X, 0), T = size(X, 1), C = size(X, 2);
    bool masked_zero = true, keys_zero = true;
    int unseen = 0;
    for (int b = 0; b < B; b++) {
        for (int s = 0; s < T; s++) {
            int seen_by = 0;
            for (int t = 0; t < T; t++) {
                seen_by += *at3(mask, b, t, s) != 0.0f;
                masked_zero &= *at3(mask, b, t, s) != 0.0f || *at3(g->scores, b, t, s) == 0.0f;
            }
            for (int c = 0; seen_by == 0 && c < C; c++) {
                keys_zero &= *at3(g->K, b, s, c) == 0.0f && *at3(g->V, b, s, c) == 0.0f;
            }
            unseen += seen_by == 0;
        }
    }
    printf("\nchecks:\nscores.grad is exactly 0 at every masked score: %s\n",
           masked_zero ? "True" : "False");
    printf("%d keys no query attends to; their rows of K.grad and V.grad are exactly 0: %s\n",
           unseen, keys_zero ? "True" : "False");
    float worst = 0.0f;
    const Tensor *row_sums = sum_last(g->scores);                            // (B, T)
    for (long i = 0; i < numel(row_sums); i++) {
        worst = fmaxf(worst, fabsf(row_sums->data[i]));
    }
    printf("each row of scores.grad sums to 0 (softmax ignores a shift of its row):\n"
           "  max |scores.grad.sum(-1)| = %.1e\n", worst);

    print_central_differences(net, f, g, X, mask, grad_out);
}

// === appendix E: what a run costs, for the budget (lesson/budget.h) =============================

// Part 1 at (B, T, C): counted from what it held (ATTN_COST=show) at many
// sizes: about 8 (B, T, T) tensors (the mask, scores, att_weight and their
// gradients; 4 more with --train: the noise, the dropped weights and theirs),
// 29 (B, T, C) and 24 (C, C) (parameters, gradients, their transposes, and
// the central differences' copies in double). Its work: the forward and
// backward, 4 and 8 BTC*C and 2 and 4 BTT*C multiply-adds, and ten losses in
// double for the central differences, a forward each. Part 2 at (B, H, N, D):
// 6 (B, H, N, D) and 6 (B, KV, N, D) tensors (inputs, outputs, gradients,
// copies), lse (B, H, N), the tiles' scratch (the forward's D + Bk + 4 rows
// of Bq rounded up to 16, the backward's 2D + 2Bq rows of Bk rounded up to 16,
// Bq rows of D and N for each of its workers, min(--threads, B * KV), part 2's
// first tile shown: Bq + Bk rows of D, 2 (Bq, Bk)), and 5 (Bq, Bk): S, P, dP,
// dS and the forward's; the standard path, when its P fits, 5 (B, H, N, N)
// (scores, scaled, P, dP, dS), one more and three (N, N) for the causal mask.
// Its work: the tiled forward (2 products) and backward (5), the standard one
// (2 and 4), each BHNN*D multiply-adds, P's exp three times (the backward's
// processor time is the same on any number of threads).
static Cost attention_backward_cost(const Sizes *n) {
    double B = n->batch, T = n->seq, C = n->dim, H = n->heads, KV = n->kv_heads, N = n->seq;
    double D = n->head_dim, BTT = B * T * T, BTC = B * T * C, BHNN = B * H * N * N;
    bool part1 = BTT <= (double)MAX_ELEMENTS, standard = BHNN <= (double)MAX_ELEMENTS;
    double Bq = fmin(n->block_q, N), Bk = fmin(n->block_k, N);
    double ldS = 16 * ceil(Bq / 16), ldk = 16 * ceil(Bk / 16);   // rows rounded up to 16
    double workers = fmin(n->threads, B * KV);   // each with its blocks and delta
    double scratch = (D + Bk + 4) * ldS + workers * ((2 * D + 2 * Bq) * ldk + Bq * D + N) +
                     (Bq + Bk) * D + 2 * Bq * Bk;
    double floats = part1 * ((8 + 4 * n->train) * BTT + 29 * BTC + 24 * C * C) +
                    6 * B * H * N * D + 6 * B * KV * N * D + B * H * N + scratch +
                    5 * Bq * Bk + standard * ((5 + n->causal) * BHNN + 3 * n->causal * N * N);
    return (Cost){
        .bytes = 4 * floats,
        .dumped = 4 * (part1 * (2 * BTT + 10 * BTC + 8 * C * C) + 5 * B * H * N * D +
                       4 * B * KV * N * D + B * H * N),
        .multiply_adds = part1 * (52 * BTC * C + 26 * BTT * C) + (7 + 6 * standard) * BHNN * D,
        .exps = part1 * ((11 + n->train) * BTT + BTC + 4 * C * C) + (2 + standard) * BHNN +
                2 * B * H * N * D + 2 * B * KV * N * D,
        .elements = floats,
    };
}

// === appendix F: the flags ======================================================================

// The flags, then what they must satisfy together: --kv-heads 0 means as many
// as --heads (as lesson 13's), and it must divide --heads; the tensors must
// fit the helper's limits (not checked with --bench, which has its own sizes).
static Sizes read_flags(Lesson *lesson, bool *run_bench, int argc, char **argv) {
    static Sizes n = {.batch = 3, .seq = 4, .dim = 2, .heads = 2, .kv_heads = 0, .head_dim = 4,
                      .block_q = 2, .block_k = 2, .threads = 1};
    static bool bench_switch = false;
    static SizeFlag sizes[] = {
        {"--batch", &n.batch, "batch size"},
        {"--seq", &n.seq, "sequence length (part 2 and --bench: N)"},
        {"--dim", &n.dim, "part 1: hidden dimension"},
        {"--heads", &n.heads, "part 2: query heads"},
        {"--head-dim", &n.head_dim, "part 2: numbers per head"},
    };
    static IntFlag ints[] = {
        {"--kv-heads", &n.kv_heads, "part 2: key/value heads, dividing --heads; 0: as many", 0,
         65536},
        {"--block-q", &n.block_q, "part 2: queries per block, Bq (--bench: chosen for the core)", 1,
         MAX_BLOCK},
        {"--block-k", &n.block_k, "part 2: keys per block, Bk (--bench: chosen for the core)", 1,
         MAX_BLOCK},
        {"--threads", &n.threads, "part 2: threads sharing the tiled backward (--bench: against "
                                  "one)", 1, MAX_THREADS},
    };
    static SwitchFlag switches[] = {
        {"--causal", &n.causal, "the causal mask (part 1: instead of padding)"},
        {"--train", &n.train, "part 1: training mode, dropout on"},
        {"--bench", &bench_switch, "time the tiled backward against the standard one's loops "
                                   "(with --threads N: on N threads and on one)"},
    };
    *lesson = (Lesson){
        .program = "lesson-14",
        .summary = "attention-backward: the gradients of attention by hand, then "
                   "FlashAttention-2's tiled backward",
        .sizes = sizes, .n_sizes = 5, .ints = ints, .n_ints = 4,
        .switches = switches, .n_switches = 3,
    };
    parse_lesson_args(lesson, argc, argv);
    check_kernels_variable(lesson);
    *run_bench = bench_switch;
    if (!bench_switch) {
        n.kv_heads = n.kv_heads == 0 ? n.heads : n.kv_heads;
        check_divides(lesson, "--kv-heads", n.kv_heads, "--heads", n.heads);
        check_fits(lesson, "X (batch, seq, dim)", shape3(n.batch, n.seq, n.dim));
        check_fits(lesson, "query_proj.weight (dim, dim)", shape2(n.dim, n.dim));
        check_fits(lesson, "query (batch, heads, seq, head_dim)",
                   shape4(n.batch, n.heads, n.seq, n.head_dim));
    }
    return n;
}
