// Lesson 14: attention-backward - the gradients of attention by hand, then
// FlashAttention-2's backward on lesson 13's tiles.
//
// WHAT THIS ADDS
//   Every lesson so far runs attention forward. Training also runs it
//   backward: from the gradient of the loss with respect to the output, the
//   gradient with respect to every input and parameter, what loss.backward()
//   leaves in each .grad. This lesson writes that backward pass out.
//   Part 1 takes lesson 5's SelfAttV4 and walks back through it one step at a
//   time: the output Linear, `@ V`, dropout (its own mask again), softmax
//   (whose gradient needs P, dP and ONE number per query, dO . O: no N x N
//   Jacobian), the mask (a masked score gets no gradient), the scale, Q K^T
//   and the three Linears. Every .grad equals torch.autograd's, and central
//   differences in double check the formulas without PyTorch.
//   Part 2 does the same for lesson 13's attention (heads, GQA, causal), the
//   way FlashAttention-2 does it (Dao, 2023, Algorithm 2): the forward keeps
//   the output and lse = m + log(l), one number per query; the backward walks
//   the tiles again, key block by key block, RECOMPUTES each block of scores
//   and P = exp(S - lse) where it needs them, and adds into dQ, dK and dV.
//   Its scratch does not grow with the sequence; the naive backward keeps P,
//   (B, H, N, N), and makes dP and dS as large.
//
// THE MATH (one head: S = Q K^T / sqrt(D), P = softmax(S), O = P V; dX is dLoss/dX)
//   dV = P^T dO                   dP = dO V^T
//   dS = P * (dP - rowsum(dO * O))     (softmax: rowsum(P * dP) = dO . O, one number per query)
//   dQ = dS K / sqrt(D)           dK = dS^T Q / sqrt(D)      (GQA: dK, dV summed over a group)
//   Linear y = x W^T + b:   dW = dy^T x,   db = dy summed over rows,   dx = dy W
//   dropout y = x * noise:  dx = dy * noise, the forward's noise (0 or 1 / (1 - p))
//
// THE PYTORCH IT MIRRORS (docs/14-attention-backward.md has the complete script)
//   torch.manual_seed(seed)
//   X = torch.rand(batch, seq, dim, requires_grad=True); net = SelfAttV4(dim)   # lesson 5
//   ret = net(X, mask); grad_out = torch.randn(batch, seq, dim); ret.backward(grad_out)
//   torch.manual_seed(seed)                                       # part 2: lesson 13's draws
//   query = torch.randn(batch, heads, seq, head_dim, requires_grad=True); key, value likewise
//   attn_out = softmax(query @ key^T / sqrt(head_dim) [causal]) @ value   # head h reads h // R
//   grad_attn_out = torch.randn(batch, heads, seq, head_dim); attn_out.backward(grad_attn_out)
//
// RUN IT
//   make lesson-14                  part 1 at lesson 5's sizes, part 2 on 2 heads of 4
//   make lesson-14 ARGS="--train"   dropout on: its mask reused by the backward
//   make lesson-14 ARGS="--seq 10 --block-q 4 --block-k 3 --causal --kv-heads 1"
//   make lesson-14 ARGS=--bench     the tiled backward against the naive one, one core
//   flags: --batch --seq --dim --heads --kv-heads --head-dim --block-q --block-k --causal
//          --train --bench --seed --dump DIR --dot FILE --heatmap --help
//
// WHAT TO LOOK FOR
//   - Part 1: the masked keys' rows of K.grad and V.grad are exactly 0, and
//     so is every masked entry of scores.grad; each row of scores.grad sums
//     to 0 (up to rounding); the two row terms print alike; the central
//     differences agree with the analytic gradients to float rounding.
//   - Part 2: the map of the tiles the backward visits (key blocks outside);
//     P of one tile recomputed from lse equals the naive path's stored P;
//     the tiled gradients equal the naive ones to about 1e-7; and the memory:
//     the naive backward's grows as N^2, the tiled one's scratch stays put.
//
// Size letters: B batch, T = S = seq (part 1: query and key positions),
//   C dim, H query heads, KV key/value heads, R = H / KV, N seq (part 2),
//   D head_dim, Bq and Bk the block sizes (--block-q, --block-k, at most N).
// Index letters: b batch, t query, s key, c a channel of C, h query head,
//   g = h / R its key/value head, d inside a head; qs and ks the first query
//   and key of a block, j a query inside its block, p a key inside its block.

#define _POSIX_C_SOURCE 200809L   // clock_gettime and getenv for --bench and the kernels

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attention.h"
#include "kernels.h"

#define MASK_FILL -1e20f    // lesson 5's masked_fill value
#define ATT_DROPOUT 0.1     // lesson 5's nn.Dropout(0.1)
#define MAX_BLOCK 4096      // --block-q and --block-k go from 1 to this
#define TOLERANCE 1e-5f     // tiled against naive gradients: float rounding only
#define MAP_MAX_BLOCKS 16   // the tile map is drawn up to 16 x 16 blocks
#define CHECK_STEP 1e-4     // the central differences' step, in double

// Kernels (kernels.h): everything the tiled paths spend their time in, as a
// scalar twin in plain C and AVX2 and AVX-512 versions that give the same
// bits, defined in appendix A after main(), chosen at run time.
static const Kernels *kernels_best(void);   // ATTN_KERNELS if set, else the fastest this CPU has
static float flash_expf(float x);           // the kernels' exp, scalar

static int min_int(int a, int b) {
    return a < b ? a : b;
}

// --- the module of part 1: lesson 5's SelfAttV4, its forward keeping what its backward needs ----

typedef struct {
    int dim;
    Linear query_proj, key_proj, value_proj;   // Linear(dim, dim) each
    double att_drop;                           // nn.Dropout(0.1)
    Linear output_proj;                        // Linear(dim, dim)
    bool training;
} SelfAttV4;

// What autograd saves in the forward for the backward: here, by name.
typedef struct {
    const Tensor *Q, *K, *V;            // (B, T, C)
    const Tensor *scores;               // (B, T, S) Q K^T / sqrt(C), masked: softmax's input
    const Tensor *att_weight;           // (B, T, S) P, after softmax
    const Tensor *noise;                // (B, T, S) dropout's 0 or 1/(1-p); NULL in eval mode
    const Tensor *att_weight_dropped;   // (B, T, S) P * noise (att_weight itself in eval mode)
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
    Tensor *output;               // (B, T, C) output.grad
    Tensor *V;                    // (B, S, C)
    Tensor *att_weight_dropped;   // (B, T, S) dW, the gradient of P * noise
    Tensor *att_weight;           // (B, T, S) dP (the same as dW in eval mode)
    Tensor *row_term;             // (B, T)    sum_s P dP, one per query (= output.grad . output)
    Tensor *scores;               // (B, T, S) dS
    Tensor *Q, *K;                // (B, T, C), (B, S, C)
    Tensor *X;                    // (B, T, C)
    Linear query_proj, key_proj, value_proj, output_proj;
} SelfAttV4Grads;

// y = x W^T + b over the rows r of x, (rows, in) -> (rows, out); backward:
//   dW[o, i] = sum_r dy[r, o] x[r, i]     db[o] = sum_r dy[r, o]
//   dx[r, i] += sum_o dy[r, o] W[o, i]
// dx is ADDED to (X feeds three Linears, and its gradient is the sum of theirs).
static Linear linear_backward(Tensor *dx, const Linear *layer, const Tensor *dy, const Tensor *x) {
    int in = layer->in_features, out = layer->out_features;
    long rows = numel(x) / in;
    const float *x_r = at2(view(contiguous(x), shape2((int)rows, in)), 0, 0);    // (rows, in)
    const float *dy_r = at2(view(contiguous(dy), shape2((int)rows, out)), 0, 0); // (rows, out)
    const float *W = at2(contiguous(layer->weight), 0, 0);                        // (out, in)
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
    trace2("dy^T @ x", dW, dy, x);
    trace1("sum of dy", db, dy);
    return (Linear){dW, db, in, out};
}

// ret.backward(grad_out), step by step from ret back to X: the chain rule
// applied to each line of the forward, last line first.
static SelfAttV4Grads SelfAttV4_backward(const SelfAttV4 *self, const SelfAttV4Steps *f,
                                         const Tensor *X, const Tensor *grad_out) {
    int B = size(X, 0), T = size(X, 1), S = T, C = size(X, 2);
    SelfAttV4Grads g;
    // 1. ret = output_proj(output): a Linear.
    g.output = zeros(shape3(B, T, C));
    g.output_proj = linear_backward(g.output, &self->output_proj, grad_out, f->output);
    trace2("grad_out @ W", g.output, grad_out, self->output_proj.weight);
    // 2. output = W @ V, W = att_weight_dropped (B, T, S):
    //    dV[b, s, c] = sum_t W[b, t, s] dO[b, t, c]     dW[b, t, s] = sum_c dO[b, t, c] V[b, s, c]
    g.V = zeros(shape3(B, S, C));
    g.att_weight_dropped = zeros(shape3(B, T, S));
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            for (int s = 0; s < S; s++) {
                float w = *at3(f->att_weight_dropped, b, t, s), dw = 0.0f;
                for (int c = 0; c < C; c++) {
                    *at3(g.V, b, s, c) += w * *at3(g.output, b, t, c);
                    dw += *at3(g.output, b, t, c) * *at3(f->V, b, s, c);
                }
                *at3(g.att_weight_dropped, b, t, s) = dw;
            }
        }
    }
    trace2("W^T @ dO", g.V, f->att_weight_dropped, g.output);
    trace2("dO @ V^T", g.att_weight_dropped, g.output, f->V);
    // 3. W = P * noise: dP = dW * noise, the mask of the forward again (eval: dP = dW).
    g.att_weight = g.att_weight_dropped;
    if (f->noise != NULL) {
        g.att_weight = mul(g.att_weight_dropped, f->noise);
    }
    // 4. P = softmax(scores): dS[t, s] = P[t, s] (dP[t, s] - sum_s' P[t, s'] dP[t, s']).
    //    The sum is one number per query, and equals dO . O (output.grad . output):
    //    sum_s P dP = sum_s P noise dW = sum_s W_s (dO . v_s) = dO . (sum_s W_s v_s) = dO . O.
    //    Autograd adds it up from the row of P and dP, as here (in the order
    //    PyTorch's kernel adds, so that the digits are PyTorch's).
    g.row_term = zeros(shape2(B, T));
    g.scores = zeros(shape3(B, T, S));
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            const float *p = at3(f->att_weight, b, t, 0), *dp = at3(g.att_weight, b, t, 0);
            float row = softmax_exact_backward_row(dp, p, S);
            *at2(g.row_term, b, t) = row;
            for (int s = 0; s < S; s++) {   // a masked score has P = 0: its dS is exactly 0
                *at3(g.scores, b, t, s) = (dp[s] - row) * p[s];
            }
        }
    }
    trace2("softmax backward", g.scores, f->att_weight, g.att_weight);
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
    trace2("dS @ K / sqrt(C)", g.Q, g.scores, f->K);
    trace2("dS^T @ Q / sqrt(C)", g.K, g.scores, f->Q);
    // 6. Q, K, V = three Linears of X: X.grad is the sum of the three dx.
    g.X = zeros(shape3(B, T, C));
    g.query_proj = linear_backward(g.X, &self->query_proj, g.Q, X);
    g.key_proj = linear_backward(g.X, &self->key_proj, g.K, X);
    g.value_proj = linear_backward(g.X, &self->value_proj, g.V, X);
    const Tensor *sources[] = {g.Q, g.K, g.V, self->query_proj.weight, self->key_proj.weight,
                               self->value_proj.weight};
    trace("dQ Wq + dK Wk + dV Wv", g.X, 6, sources, 0, NULL);
    return g;
}

// --- the module of part 2: lesson 13's tiled attention, forward (keeping lse), backward ---------

typedef struct {
    int num_heads;             // H
    int num_kv_heads;          // KV: query head h reads key/value head h / (H / KV)
    bool causal;               // query t sees keys 0 .. t only
    int block_q, block_k;      // Bq, Bk
    const Kernels *kernels;
} FlashAttention;

typedef enum { TILE_FULL, TILE_DIAGONAL, TILE_SKIPPED } TileKind;

static FlashAttention FlashAttention_init(int num_heads, int num_kv_heads, bool causal,
                                          int block_q, int block_k) {
    return (FlashAttention){num_heads, num_kv_heads, causal, block_q, block_k, kernels_best()};
}

// Lesson 13's: a tile of queries qs .. qs+nq-1 and keys ks .. ks+nk-1 is skipped
// when every key comes after every query, full when none does, else diagonal.
static TileKind tile_kind(bool causal, int qs, int nq, int ks, int nk) {
    if (!causal || ks + nk - 1 <= qs) {
        return TILE_FULL;
    }
    return ks > qs + nq - 1 ? TILE_SKIPPED : TILE_DIAGONAL;
}

// The forward is lesson 13's tiled loop (appendix C), which now also keeps,
// for each query, lse = m + log(l): its running max and sum at the end, the
// log of the softmax's denominator. That one number per query is all the
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
    size_t scratch_bytes;   // the blocks it allocated: the same for any N
    size_t delta_bytes;     // D of one head: N floats
} BackwardSteps;

// The backward's scratch: one key block transposed and one tile's two score
// blocks, whose size depends on Bq, Bk and D, not on N; and delta = rowsum(dO *
// O) of the head at hand, one float per query (the paper's D, which it keeps
// for every head, (B, H, N), like lse).
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

// FlashAttention-2's backward: for each head, delta = rowsum(dO * O) first; then
// for each block of keys, walk the query blocks. dK_j and dV_j gather in their
// rows of key.grad and value.grad (the R query heads of a key/value head add
// into the same rows), dQ_i adds into query.grad. out and lse are the tiled
// forward's, grad_out is dO (B, H, N, D).
static QKVGrads FlashAttention_backward(BackwardSteps *steps, const FlashAttention *self,
                                        const Tensor *query, const Tensor *key,
                                        const Tensor *value, const Tensor *out,
                                        const Tensor *lse, const Tensor *grad_out) {
    int B = size(query, 0), H = size(query, 1), N = size(query, 2), D = size(query, 3);
    int KV = self->num_kv_heads, R = H / KV;
    int Bq = min_int(self->block_q, N), Bk = min_int(self->block_k, N);
    const Tensor *q = contiguous(query), *k = contiguous(key), *v = contiguous(value);
    const Tensor *o = contiguous(out), *dO = contiguous(grad_out), *l = contiguous(lse);
    QKVGrads grads = {zeros(shape4(B, H, N, D)), zeros(shape4(B, KV, N, D)),
                      zeros(shape4(B, KV, N, D))};
    BackwardScratch w;
    w.ldk = (Bk + 15) / 16 * 16;
    size_t blocks = (2 * (size_t)D + 2 * (size_t)Bq) * (size_t)w.ldk + (size_t)Bq * D;
    w.k_t = arena_alloc(blocks + (size_t)N, sizeof(float));
    w.v_t = w.k_t + (size_t)D * w.ldk;
    w.q_s = w.v_t + (size_t)D * w.ldk;
    w.p = w.q_s + (size_t)Bq * D;
    w.ds = w.p + (size_t)Bq * w.ldk;
    w.delta = w.ds + (size_t)Bq * w.ldk;
    BackwardSteps counts = {{0, 0, 0}, 0.0, blocks * sizeof(float), (size_t)N * sizeof(float)};
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            int g = h / R;   // the key/value head query head h reads
            HeadRows x = {at4(q, b, h, 0, 0), at4(k, b, g, 0, 0), at4(v, b, g, 0, 0),
                          at4(o, b, h, 0, 0), at4(dO, b, h, 0, 0), at3(l, b, h, 0),
                          at4(grads.query, b, h, 0, 0), at4(grads.key, b, g, 0, 0),
                          at4(grads.value, b, g, 0, 0)};
            // delta = rowsum(dO * O), the softmax's row term: N numbers for this head
            self->kernels->row_dots(w.delta, x.dO, x.o, N, D);
            for (int ks = 0; ks < N; ks += Bk) {   // outer: a block of keys and values
                int nk = min_int(Bk, N - ks);
                for (int d = 0; d < D; d++) {      // K_j^T and V_j^T (D, nk): the one copy
                    for (int p = 0; p < nk; p++) {
                        w.k_t[(long)d * w.ldk + p] = x.k[(long)(ks + p) * D + d];
                        w.v_t[(long)d * w.ldk + p] = x.v[(long)(ks + p) * D + d];
                    }
                }
                for (int qs = 0; qs < N; qs += Bq) {   // inner: the query blocks
                    int nq = min_int(Bq, N - qs);
                    TileKind kind = tile_kind(self->causal, qs, nq, ks, nk);
                    counts.tiles[kind] += 1;
                    if (kind != TILE_SKIPPED) {
                        backward_tile(&w, self->kernels, &x, D, qs, nq, ks, nk, kind);
                        counts.flops += 10.0 * nq * nk * D;
                    }
                }
            }
        }
    }
    const Tensor *inputs[6] = {query, key, value, out, lse, grad_out};
    trace("tiled backward", grads.query, 6, inputs, 0, NULL);
    trace("tiled backward", grads.key, 6, inputs, 0, NULL);
    trace("tiled backward", grads.value, 6, inputs, 0, NULL);
    if (steps != NULL) {
        *steps = counts;
    }
    return grads;
}

// --- part 2's naive path: P kept whole, as autograd keeps it ------------------------------------

// Lesson 13's naive forward (appendix C): the helper's matmul and softmax,
// the whole weights kept. Returns out (B, H, N, D) and *P (B, H, N, N).
static const Tensor *naive_attention(const Tensor **P, const Tensor *query, const Tensor *key,
                                     const Tensor *value, bool causal);

// What the naive backward keeps or makes besides the gradients: P (kept by
// the forward), dP and dS, (B, H, N, N) each.
static size_t naive_extra_bytes(int B, int H, int N);

// The backward as autograd runs it on the naive path (appendix C): part 1's
// formulas on whole (N, N) matrices per head, dP and dS made whole too.
static QKVGrads naive_backward(const Tensor *P, const Tensor *query, const Tensor *key,
                               const Tensor *value, const Tensor *grad_out);

// --- what both parts print with -----------------------------------------------------------------

typedef struct {
    int batch, seq, dim, heads, kv_heads, head_dim, block_q, block_k;
    bool causal, train;
} Sizes;

// Central differences (appendix D), (L(w + h) - L(w - h)) / 2h with L = sum(ret * grad_out)
// in double, beside the analytic gradient: the formulas checked without autograd.
static void print_central_differences(const SelfAttV4 *net, const SelfAttV4Steps *f,
                                      const SelfAttV4Grads *g, const Tensor *X,
                                      const Tensor *mask, const Tensor *grad_out);

static void print_grad(const char *name, const Tensor *grad) {
    printf("%s\n%s\n", name, tensor_str(grad, NULL));
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

    print_central_differences(net, f, g, X, mask, grad_out);   // appendix D
}

// Part 1: lesson 5's module at the cell's sizes, every gradient by hand.
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
    printf("ret = net(X, mask); grad_out = torch.randn(%d, %d, %d); ret.backward(grad_out)\n",
           B, T, C);
    print_grad("grad_out", grad_out);
    if (heatmap) {
        print_heatmap("att_weight", f.att_weight);
    }
    SelfAttV4Grads g = SelfAttV4_backward(&net, &f, X, grad_out);
    const char *W = n->train ? "att_weight_dropped" : "att_weight";
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

    printf("\n1. ret = output_proj(output), a Linear: weight.grad = grad_out^T @ output, "
           "bias.grad = grad_out\n   summed over batch and seq, output.grad = grad_out @ "
           "output_proj.weight\n");
    print_grad("output_proj.weight.grad", g.output_proj.weight);
    print_grad("output_proj.bias.grad", g.output_proj.bias);
    print_grad("output.grad", g.output);
    printf("\n2. output = %s @ V: V.grad = %s^T @ output.grad,\n   %s.grad = "
           "output.grad @ V^T\n", W, W, W);
    print_grad("V.grad", g.V);
    if (n->train) {
        print_grad("att_weight_dropped.grad", g.att_weight_dropped);
        printf("\n   dropout, att_weight_dropped = att_weight * noise: att_weight.grad =\n   "
               "att_weight_dropped.grad * noise, the forward's noise (0 or 1/0.9): a dropped "
               "weight\n   passes no gradient back\n");
    }
    print_grad("att_weight.grad", g.att_weight);
    printf("\n3. att_weight = softmax(scores): scores.grad = att_weight * (att_weight.grad - "
           "row term), the row\n   term one number per query: (att_weight * att_weight.grad)"
           ".sum(-1), which is also\n   (output.grad * output).sum(-1), C numbers a query "
           "instead of S\n");
    print_grad("(att_weight * att_weight.grad).sum(-1)", g.row_term);
    print_grad("(output.grad * output).sum(-1)", sum_last(mul(g.output, f.output)));
    print_grad("scores.grad", g.scores);
    printf("\n4. scores = (Q @ K^T / sqrt(%d)).masked_fill(mask == 0, -1e20): a masked score "
           "passes no gradient;\n   Q.grad = scores.grad @ K / sqrt(%d), K.grad = scores.grad^T "
           "@ Q / sqrt(%d)\n", C, C, C);
    print_grad("Q.grad", g.Q);
    print_grad("K.grad", g.K);
    printf("\n5. Q, K, V = query_proj(X), key_proj(X), value_proj(X): three Linears as in 1, "
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
    // key_proj.bias adds q_t . b_k to every score of row t, and softmax ignores
    // a shift of its row: the gradient is 0, and what is printed is rounding.
    printf("key_proj.bias.grad is 0 up to rounding, max |key_proj.bias.grad| = %.1e: it adds "
           "q_t . b_k to\n  every score of row t, and softmax ignores a shift of its row\n",
           max_abs_diff(g.key_proj.bias, zeros(shape1(C))));
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
// (appendix C): S = (Q_i / sqrt(D)) K_j^T, then exp(S - lse). (nq, nk).
static Tensor *first_tile_P(const FlashAttention *flash, const Tensor *query, const Tensor *key,
                            const Tensor *lse);

// What the two backwards cost, FLOPs and extra memory (appendix B, beside the bench).
static void print_costs(const Sizes *n, const BackwardSteps *steps, const Tensor *lse);

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
    const Tensor *grad_attn_out = named("grad_attn_out", randn(shape4(B, H, N, D)));

    FlashAttention flash = FlashAttention_init(H, KV, n->causal, n->block_q, n->block_k);
    Tensor *lse;
    const Tensor *attn_out =
        named("attn_out", FlashAttention_forward(&lse, &flash, query, key, value));
    named("lse", lse);                                                        // (B, H, N)
    BackwardSteps steps;
    QKVGrads grads = FlashAttention_backward(&steps, &flash, query, key, value, attn_out, lse,
                                             grad_attn_out);
    named("query.grad", grads.query);
    named("key.grad", grads.key);
    named("value.grad", grads.value);

    bool was_paused = trace_pause(true);   // the rest prints and checks: not dataflow
    printf("the forward (lesson 13's tiles) keeps attn_out and lse = m + log(l), one number per "
           "query;\nlse[0, 0], what torch.logsumexp(scores, -1) gives:\n%s\n",
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
    bool naive_fits = (double)B * H * N * N <= (double)MAX_ELEMENTS;
    const Tensor *P = NULL;
    QKVGrads naive = {NULL, NULL, NULL};
    if (naive_fits) {
        naive_attention(&P, query, key, value, n->causal);
        naive = naive_backward(P, query, key, value, grad_attn_out);
        printf("the naive path's P[0, 0, :%d, :%d], kept whole by its forward:\n%s\n", nq, nk,
               tensor_str(reshape(narrow(narrow(narrow(narrow(P, 0, 0, 1), 1, 0, 1), 2, 0, nq),
                                         3, 0, nk), shape2(nq, nk)), NULL));
    }
    print_grad("query.grad", grads.query);
    print_grad("key.grad", grads.key);
    print_grad("value.grad", grads.value);
    if (naive_fits) {
        float diff = fmaxf(fmaxf(max_abs_diff(grads.query, naive.query),
                                 max_abs_diff(grads.key, naive.key)),
                           max_abs_diff(grads.value, naive.value));
        printf("against the naive backward (P kept, dS from rowsum(P * dP)): max |tiled - naive| "
               "= %.3g\n  (%s 1e-5: float rounding only)\n", diff,
               diff <= TOLERANCE ? "within" : "NOT within");
        if (heatmap) {
            int shown = N < 16 ? N : 16;
            const Tensor *w = narrow(narrow(narrow(narrow(P, 0, 0, 1), 1, 0, 1), 2, 0, shown), 3,
                                     0, shown);
            print_heatmap("P, batch 0, head 0 (the naive path's; the tiled one never stores it)",
                          reshape(w, shape2(shown, shown)));
        }
    } else {
        printf("the naive path is skipped: its P (%d, %d, %d, %d) would pass the helper's limit "
               "of %ld elements\n", B, H, N, N, MAX_ELEMENTS);
    }
    print_costs(n, &steps, lse);   // FLOPs and extra memory of the two backwards
    printf("the speed: make lesson-14 ARGS=--bench\n");
    trace_pause(was_paused);
}

// --- the lesson ---------------------------------------------------------------------------------

static void check_kernels_variable(const Lesson *lesson);
// --bench: check its flags, time, print (appendix B).
static void bench(const Lesson *lesson, const Sizes *n);
// The flags (appendix F): parsed into *lesson, then checked together.
static Sizes read_flags(Lesson *lesson, bool *run_bench, int argc, char **argv);
static void check_sizes(const Lesson *lesson, Sizes *n);
// What a run of these flags costs (appendix E), checked before any work.
static Cost attention_backward_cost(const Sizes *n);

int main(int argc, char **argv) {
    Lesson lesson;
    bool run_bench = false;
    Sizes n = read_flags(&lesson, &run_bench, argc, argv);   // appendix F
    check_kernels_variable(&lesson);
    if (run_bench) {
        bench(&lesson, &n);   // its own sizes, its own budget
        return lesson_finish(&lesson);
    }
    check_sizes(&lesson, &n);
    check_budget(&lesson, attention_backward_cost(&n));
    lesson_start(&lesson);
    part1_by_hand(&n, lesson.heatmap);
    part2_flash_backward(&n, lesson.seed, lesson.heatmap);
    return lesson_finish(&lesson);
}

// === appendix A: the kernels, the one place in this lesson that leaves portable C ===============
//
// Every function of Kernels exists three times with the same contract and
// the same results, bit for bit:
//   - the scalar twin: plain C11 with fmaf(), the specification;
//   - AVX2 + FMA: 8 floats per register;
//   - AVX-512: 16 floats per register (the backward's kernels; the forward's
//     two use the AVX2 ones, which any AVX-512 CPU runs).
// Each vector lane does the float operations of one iteration of the
// scalar loop, in the same order (the project builds with -ffp-contract=off,
// so every fused multiply-add is written out: fmaf, _mm256_fmadd_ps,
// _mm512_fmadd_ps). The vector code is compiled for its instruction set by
// a target attribute on each function, so the Makefile's flags stay the
// project's, and kernels_best() uses it only where the CPU has it (and the
// compiler is GCC or Clang on x86-64). ATTN_KERNELS=scalar, avx2 or avx512
// chooses one (make valgrind forces scalar: valgrind 3.19 has no AVX-512).

// --- exp (lesson 13's): exp(x) = 2^n e^r, n = round(x / ln 2), |r| <= ln(2)/2,
// e^r by seven Taylor terms; within 1 ulp of expf; 0 below FLT_MIN, for -inf and NaN.
#define EXP_LO (-87.33654f)         // ln(FLT_MIN)
#define EXP_HI 88.37f               // 2^n stays finite below this
#define LOG2E 0x1.715476p+0f        // 1 / ln 2
#define LN2_HI 0x1.62e430p-1f       // ln 2 rounded to float ...
#define LN2_LO (-0x1.05c610p-29f)   // ... and what that rounding lost
#define ROUND_MAGIC 0x1.8p23f       // 1.5 * 2^23: x / ln 2 + this rounds to an integer
#define C2 (1.0f / 2)
#define C3 (1.0f / 6)
#define C4 (1.0f / 24)
#define C5 (1.0f / 120)
#define C6 (1.0f / 720)
#define C7 (1.0f / 5040)

static uint32_t float_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float bits_float(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static float flash_expf(float x) {
    x = EXP_HI < x ? EXP_HI : x;   // written this way round, a NaN stays NaN
    float t = fmaf(x, LOG2E, ROUND_MAGIC);
    float n = t - ROUND_MAGIC;
    float r = fmaf(n, -LN2_HI, x);
    r = fmaf(n, -LN2_LO, r);
    float poly = C7;
    poly = fmaf(poly, r, C6);
    poly = fmaf(poly, r, C5);
    poly = fmaf(poly, r, C4);
    poly = fmaf(poly, r, C3);
    poly = fmaf(poly, r, C2);
    poly = fmaf(poly, r, 1.0f);
    poly = fmaf(poly, r, 1.0f);
    uint32_t n_int = float_bits(t) - float_bits(ROUND_MAGIC);   // n, in the low bits
    float y = poly * bits_float((n_int + 127u) << 23);          // times 2^n
    return x >= EXP_LO ? y : 0.0f;
}

// max as the x86 max instruction has it: the second argument unless the first is larger.
static float max_float(float a, float b) {
    return a > b ? a : b;
}

// --- the scalar twins ---

static void matmul_scalar(float *c, int ldc, const float *a, int a_row, int a_col,
                          const float *b, int ldb, int m, int n, int k, bool accumulate) {
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
            float acc = accumulate ? c[(long)i * ldc + j] : 0.0f;
            for (int p = 0; p < k; p++) {
                acc = fmaf(a[(long)i * a_row + (long)p * a_col], b[(long)p * ldb + j], acc);
            }
            c[(long)i * ldc + j] = acc;
        }
    }
}

static void column_max_scalar(float *m, const float *s, int rows, int cols, int lds) {
    for (int j = 0; j < cols; j++) {
        for (int p = 0; p < rows; p++) {
            m[j] = max_float(m[j], s[(long)p * lds + j]);
        }
    }
}

static void exp_columns_scalar(float *s, float *sums, const float *m, int rows, int cols,
                               int lds) {
    for (int j = 0; j < cols; j++) {
        float sum = 0.0f;
        for (int p = 0; p < rows; p++) {
            float e = flash_expf(s[(long)p * lds + j] - m[j]);
            s[(long)p * lds + j] = e;
            sum += e;
        }
        sums[j] = sum;
    }
}

static void softmax_backward_scalar(float *s, float *ds, const float *lse, const float *delta,
                                    int rows, int cols, int lds, float scale, int diagonal) {
    for (int j = 0; j < rows; j++) {
        for (int p = 0; p < cols; p++) {
            float P = p > j + diagonal ? 0.0f : flash_expf(s[(long)j * lds + p] - lse[j]);
            float g = P * (ds[(long)j * lds + p] - delta[j]);
            s[(long)j * lds + p] = P;
            ds[(long)j * lds + p] = g * scale;
        }
    }
}

static void row_dots_scalar(float *delta, const float *x, const float *y, int rows, int D) {
    for (int j = 0; j < rows; j++) {
        float acc = 0.0f;
        for (int d = 0; d < D; d++) {
            acc = fmaf(x[(long)j * D + d], y[(long)j * D + d], acc);
        }
        delta[j] = acc;
    }
}

static void scale_scalar(float *y, const float *x, long count, float s) {
    for (long i = 0; i < count; i++) {
        y[i] = x[i] * s;
    }
}

// One core's peak: 12 independent running sums, a fused multiply-add a step each.
static float fma_chains_scalar(long steps) {
    float acc[12];
    for (int c = 0; c < 12; c++) {
        acc[c] = (float)c;
    }
    for (long i = 0; i < steps; i++) {
        for (int c = 0; c < 12; c++) {
            acc[c] = fmaf(acc[c], 0.999999f, 1e-3f);
        }
    }
    float total = 0.0f;
    for (int c = 0; c < 12; c++) {
        total += acc[c];
    }
    return total;
}

static const Kernels SCALAR_KERNELS = {"scalar", matmul_scalar, column_max_scalar,
                                       exp_columns_scalar, softmax_backward_scalar,
                                       row_dots_scalar, scale_scalar};

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_VECTOR_KERNELS 1
#include <immintrin.h>

// --- AVX2 + FMA: 8 floats per register ---

#define AVX2 __attribute__((target("avx2,fma")))

// flash_expf on 8 lanes, line for line.
AVX2 static inline __m256 exp8(__m256 x) {
    x = _mm256_min_ps(_mm256_set1_ps(EXP_HI), x);
    __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(LOG2E), _mm256_set1_ps(ROUND_MAGIC));
    __m256 n = _mm256_sub_ps(t, _mm256_set1_ps(ROUND_MAGIC));
    __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-LN2_HI), x);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(-LN2_LO), r);
    __m256 poly = _mm256_set1_ps(C7);
    poly = _mm256_fmadd_ps(poly, r, _mm256_set1_ps(C6));
    poly = _mm256_fmadd_ps(poly, r, _mm256_set1_ps(C5));
    poly = _mm256_fmadd_ps(poly, r, _mm256_set1_ps(C4));
    poly = _mm256_fmadd_ps(poly, r, _mm256_set1_ps(C3));
    poly = _mm256_fmadd_ps(poly, r, _mm256_set1_ps(C2));
    poly = _mm256_fmadd_ps(poly, r, _mm256_set1_ps(1.0f));
    poly = _mm256_fmadd_ps(poly, r, _mm256_set1_ps(1.0f));
    __m256i n_int = _mm256_sub_epi32(_mm256_castps_si256(t),
                                     _mm256_set1_epi32((int)float_bits(ROUND_MAGIC)));
    __m256i two_n = _mm256_slli_epi32(_mm256_add_epi32(n_int, _mm256_set1_epi32(127)), 23);
    __m256 y = _mm256_mul_ps(poly, _mm256_castsi256_ps(two_n));
    return _mm256_and_ps(y, _mm256_cmp_ps(x, _mm256_set1_ps(EXP_LO), _CMP_GE_OQ));
}

// Lanes 0 .. count-1 of 8 on (all bits set), the rest off: for maskload/maskstore.
AVX2 static inline __m256i lanes8(int count) {
    __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), index);
}

// The register tile: MR2 x 16 of C in 12 registers (each row as two vectors of
// 8) while p runs: per step two loads of B, one broadcast of A per row, 12
// FMAs, 12 independent chains. A tile of fewer than MR2 rows repeats row mr-1
// (memory that exists; not stored); of fewer than 16 columns, masked loads
// and stores (slow ones: full tiles take plain loads and stores).
enum { MR2 = 6, NR2 = 16 };

AVX2 static void tile_avx2(float *c, int ldc, const float *a, int a_row, int a_col,
                           const float *b, int ldb, int mr, int nr, int kc, bool accumulate) {
    __m256i m0 = lanes8(nr), m1 = lanes8(nr - 8);
    const float *a_rows[MR2];
    __m256 c0[MR2], c1[MR2];
#pragma GCC unroll 8
    for (int i = 0; i < MR2; i++) {
        int row = i < mr ? i : mr - 1;
        a_rows[i] = a + (long)row * a_row;
        c0[i] = _mm256_setzero_ps();
        c1[i] = _mm256_setzero_ps();
        if (accumulate && nr == NR2) {
            c0[i] = _mm256_loadu_ps(c + (long)row * ldc);
            c1[i] = _mm256_loadu_ps(c + (long)row * ldc + 8);
        } else if (accumulate) {
            c0[i] = _mm256_maskload_ps(c + (long)row * ldc, m0);
            c1[i] = _mm256_maskload_ps(c + (long)row * ldc + 8, m1);
        }
    }
    if (nr == NR2) {
        for (int p = 0; p < kc; p++) {
            __m256 b0 = _mm256_loadu_ps(b + (long)p * ldb);
            __m256 b1 = _mm256_loadu_ps(b + (long)p * ldb + 8);
#pragma GCC unroll 8
            for (int i = 0; i < MR2; i++) {
                __m256 a_ip = _mm256_set1_ps(a_rows[i][(long)p * a_col]);
                c0[i] = _mm256_fmadd_ps(a_ip, b0, c0[i]);
                c1[i] = _mm256_fmadd_ps(a_ip, b1, c1[i]);
            }
        }
    } else {
        for (int p = 0; p < kc; p++) {
            __m256 b0 = _mm256_maskload_ps(b + (long)p * ldb, m0);
            __m256 b1 = _mm256_maskload_ps(b + (long)p * ldb + 8, m1);
#pragma GCC unroll 8
            for (int i = 0; i < MR2; i++) {
                __m256 a_ip = _mm256_set1_ps(a_rows[i][(long)p * a_col]);
                c0[i] = _mm256_fmadd_ps(a_ip, b0, c0[i]);
                c1[i] = _mm256_fmadd_ps(a_ip, b1, c1[i]);
            }
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR2; i++) {
        if (i < mr && nr == NR2) {
            _mm256_storeu_ps(c + (long)i * ldc, c0[i]);
            _mm256_storeu_ps(c + (long)i * ldc + 8, c1[i]);
        } else if (i < mr) {
            _mm256_maskstore_ps(c + (long)i * ldc, m0, c0[i]);
            _mm256_maskstore_ps(c + (long)i * ldc + 8, m1, c1[i]);
        }
    }
}

AVX2 static void matmul_avx2(float *c, int ldc, const float *a, int a_row, int a_col,
                             const float *b, int ldb, int m, int n, int k, bool accumulate) {
    for (int i0 = 0; i0 < m; i0 += MR2) {
        for (int j0 = 0; j0 < n; j0 += NR2) {
            tile_avx2(c + (long)i0 * ldc + j0, ldc, a + (long)i0 * a_row, a_row, a_col, b + j0,
                      ldb, min_int(MR2, m - i0), min_int(NR2, n - j0), k, accumulate);
        }
    }
}

AVX2 static void column_max_avx2(float *m, const float *s, int rows, int cols, int lds) {
    for (int j = 0; j < cols; j += 8) {   // 8 columns, one per lane
        __m256 m8 = _mm256_loadu_ps(m + j);
        for (int p = 0; p < rows; p++) {
            m8 = _mm256_max_ps(m8, _mm256_loadu_ps(s + (long)p * lds + j));
        }
        _mm256_storeu_ps(m + j, m8);
    }
}

AVX2 static void exp_columns_avx2(float *s, float *sums, const float *m, int rows, int cols,
                                  int lds) {
    for (int j = 0; j < cols; j += 8) {
        __m256 m8 = _mm256_loadu_ps(m + j), sum = _mm256_setzero_ps();
        for (int p = 0; p < rows; p++) {
            __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(s + (long)p * lds + j), m8));
            _mm256_storeu_ps(s + (long)p * lds + j, e);
            sum = _mm256_add_ps(sum, e);
        }
        _mm256_storeu_ps(sums + j, sum);
    }
}

AVX2 static void softmax_backward_avx2(float *s, float *ds, const float *lse, const float *delta,
                                       int rows, int cols, int lds, float scale, int diagonal) {
    __m256 scale8 = _mm256_set1_ps(scale);
    __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int j = 0; j < rows; j++) {
        float *s_j = s + (long)j * lds, *ds_j = ds + (long)j * lds;
        __m256 lse8 = _mm256_set1_ps(lse[j]), delta8 = _mm256_set1_ps(delta[j]);
        int p = 0;
        for (; p + 8 <= cols; p += 8) {
            __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(s_j + p), lse8));
            __m256i seen = _mm256_cmpgt_epi32(_mm256_set1_epi32(j + diagonal - p + 1), index);
            __m256 P = _mm256_and_ps(e, _mm256_castsi256_ps(seen));
            __m256 g = _mm256_mul_ps(P, _mm256_sub_ps(_mm256_loadu_ps(ds_j + p), delta8));
            _mm256_storeu_ps(s_j + p, P);
            _mm256_storeu_ps(ds_j + p, _mm256_mul_ps(g, scale8));
        }
        softmax_backward_scalar(s_j + p, ds_j + p, lse + j, delta + j, 1, cols - p, lds, scale,
                                j + diagonal - p);
    }
}

// The scalar twin's chains with the FMA instruction, 8 rows at a time so that
// 8 independent chains keep the FMA units busy (N rows a head: no need for more).
AVX2 static void row_dots_avx2(float *delta, const float *x, const float *y, int rows, int D) {
    int j = 0;
    for (; j + 8 <= rows; j += 8) {
        float acc[8] = {0.0f};
        for (int d = 0; d < D; d++) {
#pragma GCC unroll 8
            for (int r = 0; r < 8; r++) {
                acc[r] = fmaf(x[(long)(j + r) * D + d], y[(long)(j + r) * D + d], acc[r]);
            }
        }
        memcpy(delta + j, acc, sizeof acc);
    }
    for (; j < rows; j++) {
        float acc = 0.0f;
        for (int d = 0; d < D; d++) {
            acc = fmaf(x[(long)j * D + d], y[(long)j * D + d], acc);
        }
        delta[j] = acc;
    }
}

AVX2 static void scale_avx2(float *y, const float *x, long count, float s) {
    long i = 0;
    for (; i + 8 <= count; i += 8) {
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_set1_ps(s)));
    }
    scale_scalar(y + i, x + i, count - i, s);
}

AVX2 __attribute__((noinline)) static float fma_chains_avx2(long steps) {
    __m256 acc[12], a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-3f);
#pragma GCC unroll 12
    for (int c = 0; c < 12; c++) {
        acc[c] = _mm256_set1_ps((float)c);
    }
    for (long i = 0; i < steps; i++) {
#pragma GCC unroll 12
        for (int c = 0; c < 12; c++) {
            acc[c] = _mm256_fmadd_ps(acc[c], a, b);
        }
    }
    __m256 total = acc[0];
    for (int c = 1; c < 12; c++) {
        total = _mm256_add_ps(total, acc[c]);
    }
    return _mm256_cvtss_f32(total);
}

static const Kernels AVX2_KERNELS = {"avx2", matmul_avx2, column_max_avx2, exp_columns_avx2,
                                     softmax_backward_avx2, row_dots_avx2, scale_avx2};

// --- AVX-512: 16 floats per register ---

#define AVX512 __attribute__((target("avx512f")))

AVX512 static inline __m512 exp16(__m512 x) {
    x = _mm512_min_ps(_mm512_set1_ps(EXP_HI), x);
    __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(LOG2E), _mm512_set1_ps(ROUND_MAGIC));
    __m512 n = _mm512_sub_ps(t, _mm512_set1_ps(ROUND_MAGIC));
    __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-LN2_HI), x);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(-LN2_LO), r);
    __m512 poly = _mm512_set1_ps(C7);
    poly = _mm512_fmadd_ps(poly, r, _mm512_set1_ps(C6));
    poly = _mm512_fmadd_ps(poly, r, _mm512_set1_ps(C5));
    poly = _mm512_fmadd_ps(poly, r, _mm512_set1_ps(C4));
    poly = _mm512_fmadd_ps(poly, r, _mm512_set1_ps(C3));
    poly = _mm512_fmadd_ps(poly, r, _mm512_set1_ps(C2));
    poly = _mm512_fmadd_ps(poly, r, _mm512_set1_ps(1.0f));
    poly = _mm512_fmadd_ps(poly, r, _mm512_set1_ps(1.0f));
    // poly * 2^n in one instruction (scalef: exact, as the product by 2^n is,
    // for the n >= -126 that x >= EXP_LO leaves)
    __m512 y = _mm512_scalef_ps(poly, n);
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(EXP_LO), _CMP_GE_OQ), y);
}

// Lanes 0 .. count-1 of 16 (count may be below 0 or above 16).
static inline __mmask16 lanes16(int count) {
    return count >= 16 ? (__mmask16)0xFFFF : count <= 0 ? 0 : (__mmask16)((1u << count) - 1);
}

// The register tile: MR3 x 32 of C in 16 registers, per step two loads of B,
// one broadcast of A per row and 16 FMAs. Full tiles take plain loads;
// tiles of fewer than 32 columns, masked ones (the masks cost about a tenth).
enum { MR3 = 8, NR3 = 32 };

AVX512 static void tile_avx512(float *c, int ldc, const float *a, int a_row, int a_col,
                               const float *b, int ldb, int mr, int nr, int kc, bool accumulate) {
    __mmask16 m0 = lanes16(nr), m1 = lanes16(nr - 16);
    const float *a_rows[MR3];
    __m512 c0[MR3], c1[MR3];
#pragma GCC unroll 8
    for (int i = 0; i < MR3; i++) {
        int row = i < mr ? i : mr - 1;
        a_rows[i] = a + (long)row * a_row;
        c0[i] = _mm512_setzero_ps();
        c1[i] = _mm512_setzero_ps();
        if (accumulate) {
            c0[i] = _mm512_maskz_loadu_ps(m0, c + (long)row * ldc);
            c1[i] = _mm512_maskz_loadu_ps(m1, c + (long)row * ldc + 16);
        }
    }
    if (nr == NR3) {
        for (int p = 0; p < kc; p++) {
            __m512 b0 = _mm512_loadu_ps(b + (long)p * ldb);
            __m512 b1 = _mm512_loadu_ps(b + (long)p * ldb + 16);
#pragma GCC unroll 8
            for (int i = 0; i < MR3; i++) {
                __m512 a_ip = _mm512_set1_ps(a_rows[i][(long)p * a_col]);
                c0[i] = _mm512_fmadd_ps(a_ip, b0, c0[i]);
                c1[i] = _mm512_fmadd_ps(a_ip, b1, c1[i]);
            }
        }
    } else {
        for (int p = 0; p < kc; p++) {
            __m512 b0 = _mm512_maskz_loadu_ps(m0, b + (long)p * ldb);
            __m512 b1 = _mm512_maskz_loadu_ps(m1, b + (long)p * ldb + 16);
#pragma GCC unroll 8
            for (int i = 0; i < MR3; i++) {
                __m512 a_ip = _mm512_set1_ps(a_rows[i][(long)p * a_col]);
                c0[i] = _mm512_fmadd_ps(a_ip, b0, c0[i]);
                c1[i] = _mm512_fmadd_ps(a_ip, b1, c1[i]);
            }
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR3; i++) {
        if (i < mr) {
            _mm512_mask_storeu_ps(c + (long)i * ldc, m0, c0[i]);
            _mm512_mask_storeu_ps(c + (long)i * ldc + 16, m1, c1[i]);
        }
    }
}

AVX512 static void matmul_avx512(float *c, int ldc, const float *a, int a_row, int a_col,
                                 const float *b, int ldb, int m, int n, int k, bool accumulate) {
    for (int i0 = 0; i0 < m; i0 += MR3) {
        for (int j0 = 0; j0 < n; j0 += NR3) {
            tile_avx512(c + (long)i0 * ldc + j0, ldc, a + (long)i0 * a_row, a_row, a_col,
                        b + j0, ldb, min_int(MR3, m - i0), min_int(NR3, n - j0), k, accumulate);
        }
    }
}

AVX512 static void softmax_backward_avx512(float *s, float *ds, const float *lse,
                                           const float *delta, int rows, int cols, int lds,
                                           float scale, int diagonal) {
    __m512 scale16 = _mm512_set1_ps(scale);
    for (int j = 0; j < rows; j++) {
        float *s_j = s + (long)j * lds, *ds_j = ds + (long)j * lds;
        __m512 lse16 = _mm512_set1_ps(lse[j]), delta16 = _mm512_set1_ps(delta[j]);
        for (int p = 0; p < cols; p += 16) {
            __mmask16 inside = lanes16(cols - p), seen = lanes16(j + diagonal - p + 1);
            __m512 x = _mm512_sub_ps(_mm512_maskz_loadu_ps(inside, s_j + p), lse16);
            __m512 P = _mm512_maskz_mov_ps(seen, exp16(x));
            __m512 g = _mm512_mul_ps(P, _mm512_sub_ps(_mm512_maskz_loadu_ps(inside, ds_j + p),
                                                      delta16));
            _mm512_mask_storeu_ps(s_j + p, inside, P);
            _mm512_mask_storeu_ps(ds_j + p, inside, _mm512_mul_ps(g, scale16));
        }
    }
}

AVX512 __attribute__((noinline)) static float fma_chains_avx512(long steps) {
    __m512 acc[12], a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-3f);
#pragma GCC unroll 12
    for (int c = 0; c < 12; c++) {
        acc[c] = _mm512_set1_ps((float)c);
    }
    for (long i = 0; i < steps; i++) {
#pragma GCC unroll 12
        for (int c = 0; c < 12; c++) {
            acc[c] = _mm512_fmadd_ps(acc[c], a, b);
        }
    }
    __m512 total = acc[0];
    for (int c = 1; c < 12; c++) {
        total = _mm512_add_ps(total, acc[c]);
    }
    return _mm512_cvtss_f32(total);
}

static const Kernels AVX512_KERNELS = {"avx512", matmul_avx512, column_max_avx2,
                                       exp_columns_avx2, softmax_backward_avx512,
                                       row_dots_avx2, scale_avx2};
#endif   // x86-64 with GCC or Clang

// --- choosing: what this CPU runs, and ATTN_KERNELS ---

// The kernel set called `name` ("scalar", "avx2", "avx512") if this CPU and
// compiler can run it, else NULL.
static const Kernels *kernels_named(const char *name) {
    if (strcmp(name, "scalar") == 0) {
        return &SCALAR_KERNELS;
    }
#ifdef HAVE_VECTOR_KERNELS
    __builtin_cpu_init();
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (strcmp(name, "avx2") == 0 && avx2) {
        return &AVX2_KERNELS;
    }
    if (strcmp(name, "avx512") == 0 && avx2 && __builtin_cpu_supports("avx512f")) {
        return &AVX512_KERNELS;
    }
#endif
    return NULL;
}

static const Kernels *kernels_best(void) {
    const char *forced = getenv("ATTN_KERNELS");
    if (forced != NULL && forced[0] != '\0' && kernels_named(forced) != NULL) {
        return kernels_named(forced);
    }
    const Kernels *avx512 = kernels_named("avx512"), *avx2 = kernels_named("avx2");
    return avx512 != NULL ? avx512 : avx2 != NULL ? avx2 : &SCALAR_KERNELS;
}

// ATTN_KERNELS, if set, must name a kernel set this CPU can run.
static void check_kernels_variable(const Lesson *lesson) {
    const char *forced = getenv("ATTN_KERNELS");
    if (forced == NULL || forced[0] == '\0') {
        return;
    }
    if (strcmp(forced, "scalar") != 0 && strcmp(forced, "avx2") != 0 &&
        strcmp(forced, "avx512") != 0) {
        usage_error(lesson, "ATTN_KERNELS expects scalar, avx2 or avx512, got '%.40s'", forced);
    }
    if (kernels_named(forced) == NULL) {
        usage_error(lesson, "ATTN_KERNELS=%s: this CPU (or compiler) has no %s; use scalar%s",
                    forced, forced, kernels_named("avx2") != NULL ? " or avx2" : "");
    }
}

// === appendix B: the bench, the tiled backward against the naive one on one core ================

// Part 2's last lines: the FLOPs the tiled backward counted and what the
// naive one would do, and the extra memory of each.
static void print_costs(const Sizes *n, const BackwardSteps *steps, const Tensor *lse) {
    int B = n->batch, H = n->heads, N = n->seq, D = n->head_dim;
    double BHND = (double)B * H * N * N * D;
    printf("FLOPs: the tiled backward did %.0f (five products, 2*Bq*Bk*D each, per visited tile; "
           "10*B*H*N*N*D\n  = %.0f without the mask): 2.5 times the forward's 4*B*H*N*N*D = %.0f, "
           "S and P recomputed;\n  the naive backward keeps P and does 4 products, "
           "8*B*H*N*N*D = %.0f\n", steps->flops, 10 * BHND, 4 * BHND, 8 * BHND);
    printf("extra memory: naive, P (kept by its forward), dP and dS, (B, H, N, N) each: %.2f KiB;"
           "\n  tiled, lse (B, H, N), kept by the forward, and delta (N) of one head: %.2f KiB; its "
           "blocks,\n  K_j^T and V_j^T (D, Bk), two (Bq, Bk) and Q_i / sqrt(D) (Bq, D): %.2f KiB, "
           "whatever N is\n",
           naive_extra_bytes(B, H, N) / 1024.0,
           ((double)numel(lse) * sizeof(float) + steps->delta_bytes) / 1024.0,
           steps->scratch_bytes / 1024.0);
}

#define BENCH_HEADS 8
#define BENCH_HEAD_DIM 64
#define BENCH_BLOCK 64         // Bq = Bk unless --block-q or --block-k says otherwise
#define BENCH_REPEATS 3        // each case runs at least this many times, the paths taking turns,
#define BENCH_MAX_REPEATS 10   // ... and again while the tiled path has had less than
#define BENCH_MIN_SECONDS 1.0  //     a second, up to 10 times;
#define BENCH_SLOW_MS 1000.0   // the naive path 3 times at most, twice if a run takes longer
#define BENCH_MAX_SEQ 16384    // --bench --seq beyond this would take minutes a run
#define BENCH_SPREAD_NOTE 0.2  // a spread above 20%: say the machine is busy

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double mib(double bytes) {
    return bytes / (1024.0 * 1024.0);
}

// One core's FMA peak in GFLOP/s with the kernels' own registers, best of 5.
static double fma_peak(const Kernels *kernels) {
    long steps = 20000000;
    double best = 1e30, flops = 0.0;
    volatile float sink = 0.0f;   // keeps the loops from being optimised away
    for (int run = 0; run < 5; run++) {
        double start = now_seconds();
#ifdef HAVE_VECTOR_KERNELS
        if (kernels == &AVX512_KERNELS) {
            sink = sink + fma_chains_avx512(steps / 2);
            flops = 32.0 * (steps / 2) * 12;
        } else if (kernels == &AVX2_KERNELS) {
            sink = sink + fma_chains_avx2(steps);
            flops = 16.0 * steps * 12;
        }
#endif
        if (kernels == &SCALAR_KERNELS) {
            sink = sink + fma_chains_scalar(steps / 16);
            flops = 2.0 * (steps / 16) * 12;
        }
        double seconds = now_seconds() - start;
        best = seconds < best ? seconds : best;
    }
    return flops / best * 1e-9;
}

typedef struct {
    double best, worst;   // ms
    int runs;
} Timing;

static void add_run(Timing *t, double ms) {
    t->best = t->runs == 0 || ms < t->best ? ms : t->best;
    t->worst = t->runs == 0 || ms > t->worst ? ms : t->worst;
    t->runs += 1;
}

static double spread(const Timing *t) {
    return t->worst / t->best - 1.0;
}

typedef struct {
    int seq;
    bool causal;
    Timing naive, tiled;      // naive.runs == 0: not run (its P would not fit)
    double flops;             // the tiled backward's
    size_t naive_extra, tiled_extra;
    float diff;               // max |tiled - naive| over the three gradients
} BenchCase;

// The naive path's P (1, H, N, N), as autograd keeps it: lesson 13's naive
// forward run one head at a time, its scores and their copies freed after
// each head, so that the bench holds what it reports (P, dP and dS).
static const Tensor *naive_P(const Tensor *query, const Tensor *key, const Tensor *value,
                             bool causal) {
    int H = size(query, 1), N = size(query, 2);
    Tensor *P = zeros(shape4(1, H, N, N));                                     // (1, H, N, N)
    for (int h = 0; h < H; h++) {
        size_t mark = arena_mark();
        const Tensor *P_h;                                                     // (1, 1, N, N)
        naive_attention(&P_h, narrow(query, 1, h, 1), narrow(key, 1, h, 1),
                        narrow(value, 1, h, 1), causal);
        memcpy(at4(P, 0, h, 0, 0), at4(P_h, 0, 0, 0, 0), (size_t)N * N * sizeof(float));
        arena_release(mark);
    }
    return P;
}

static void bench_case(BenchCase *c, int N, bool causal, int block_q, int block_k,
                       uint64_t seed) {
    size_t mark = arena_mark();
    manual_seed(seed);
    Shape shape = shape4(1, BENCH_HEADS, N, BENCH_HEAD_DIM);
    const Tensor *query = randn(shape), *key = randn(shape), *value = randn(shape);
    const Tensor *grad_out = randn(shape);
    FlashAttention flash = FlashAttention_init(BENCH_HEADS, BENCH_HEADS, causal, block_q, block_k);
    Tensor *lse;
    const Tensor *out = FlashAttention_forward(&lse, &flash, query, key, value);
    bool naive_fits = (double)BENCH_HEADS * N * N <= (double)MAX_ELEMENTS;
    const Tensor *P = naive_fits ? naive_P(query, key, value, causal) : NULL;
    *c = (BenchCase){N, causal, {0, 0, 0}, {0, 0, 0}, 0.0, naive_extra_bytes(1, BENCH_HEADS, N),
                     0, NAN};
    Tensor *tiled_grads[3];   // the first run's, kept; later runs' are freed
    double spent = 0.0;       // seconds the tiled path has run
    for (int r = 0; r < BENCH_REPEATS || (spent < BENCH_MIN_SECONDS && r < BENCH_MAX_REPEATS);
         r++) {
        size_t run_mark = arena_mark();
        BackwardSteps steps;
        double start = now_seconds();
        QKVGrads g = FlashAttention_backward(&steps, &flash, query, key, value, out, lse, grad_out);
        double seconds = now_seconds() - start;
        add_run(&c->tiled, seconds * 1e3);
        spent += seconds;
        c->flops = steps.flops;
        c->tiled_extra =
            steps.scratch_bytes + steps.delta_bytes + (size_t)numel(lse) * sizeof(float);
        if (r == 0) {
            tiled_grads[0] = g.query, tiled_grads[1] = g.key, tiled_grads[2] = g.value;
        } else {
            arena_release(run_mark);
        }
        if (naive_fits && r < BENCH_REPEATS && (r < 2 || c->naive.best < BENCH_SLOW_MS)) {
            run_mark = arena_mark();   // every run's gradients, dP and dS freed once compared
            start = now_seconds();
            QKVGrads n = naive_backward(P, query, key, value, grad_out);
            add_run(&c->naive, (now_seconds() - start) * 1e3);
            if (r == 0) {
                c->diff = fmaxf(fmaxf(max_abs_diff(tiled_grads[0], n.query),
                                      max_abs_diff(tiled_grads[1], n.key)),
                                max_abs_diff(tiled_grads[2], n.value));
            }
            arena_release(run_mark);
        }
    }
    arena_release(mark);
}

static double bench_flops(int N, bool causal) {   // 10*B*H*N*N*D, causal 5*B*H*N*(N+1)*D
    double HND = (double)BENCH_HEADS * N * BENCH_HEAD_DIM;
    return causal ? 5.0 * HND * (N + 1.0) : 10.0 * HND * N;
}

static void refuse_with_bench(const Lesson *lesson);
static Cost bench_cost(const int *seqs, int n_seqs, int block_q, int block_k,
                       const Kernels *kernels);

static void bench(const Lesson *lesson, const Sizes *n) {
    if (flag_given(lesson, "--seq") && n->seq > BENCH_MAX_SEQ) {
        usage_error(lesson, "--bench --seq %d: the tiled backward alone would take minutes a "
                    "run; --bench takes --seq up to %d", n->seq, BENCH_MAX_SEQ);
    }
    refuse_with_bench(lesson);
    int seq = flag_given(lesson, "--seq") ? n->seq : 0, block_q = n->block_q, block_k = n->block_k;
    if (!flag_given(lesson, "--block-q") && !flag_given(lesson, "--block-k")) {
        block_q = block_k = BENCH_BLOCK;
    }
    const int default_seqs[] = {512, 1024, 2048, 4096, 8192};
    int n_seqs = seq > 0 ? 1 : 5;
    const int *seqs = seq > 0 ? &seq : default_seqs;
    const Kernels *kernels = kernels_best();
    check_budget(lesson, bench_cost(seqs, n_seqs, block_q, block_k, kernels));
    printf("-- bench: the backward, batch 1, %d heads, head_dim %d, blocks of %d queries x %d "
           "keys, one thread --\n", BENCH_HEADS, BENCH_HEAD_DIM, block_q, block_k);
    printf("kernels: %s (picked at run time; ATTN_KERNELS=scalar, avx2 or avx512 chooses: the "
           "same bits)\n", kernels->name);
    double peak = fma_peak(kernels);
    BenchCase cases[10];
    for (int i = 0; i < n_seqs; i++) {
        for (int causal = 0; causal < 2; causal++) {
            bench_case(&cases[2 * i + causal], seqs[i], causal, block_q, block_k, lesson->seed);
        }
    }
    double peak_after = fma_peak(kernels);   // the machine may be shared: keep the higher
    peak = peak_after > peak ? peak_after : peak;
    printf("FMA peak of this core, measured: 12 independent chains of FMAs, %.1f GFLOP/s\n", peak);
    printf("each time is the best of its runs, the naive and the tiled backward taking turns: the "
           "tiled one\n%d to %d runs (a second's worth), the naive one %d (2 when one takes over a "
           "second);\nspread = slowest / best - 1; GFLOP/s count 10*B*H*N*N*D (causal "
           "5*B*H*N*(N+1)*D),\nthe tiled backward's five products\n", BENCH_REPEATS,
           BENCH_MAX_REPEATS, BENCH_REPEATS);
    printf("  seq causal naive ms spread tiled ms spread speedup GFLOP/s  %%peak naive MiB "
           "tiled MiB max|diff|\n");
    bool noisy = false;
    for (int i = 0; i < 2 * n_seqs; i++) {
        const BenchCase *c = &cases[i];
        double gflops = bench_flops(c->seq, c->causal) / (c->tiled.best * 1e6);
        noisy |= spread(&c->tiled) > BENCH_SPREAD_NOTE ||
                 (c->naive.runs > 0 && spread(&c->naive) > BENCH_SPREAD_NOTE);
        printf("%5d %6d", c->seq, c->causal);
        if (c->naive.runs > 0) {
            printf(" %8.1f %5.0f%%", c->naive.best, 100.0 * spread(&c->naive));
        } else {
            printf(" %8s %6s", "-", "");
        }
        printf(" %8.1f %5.0f%%", c->tiled.best, 100.0 * spread(&c->tiled));
        if (c->naive.runs > 0) {
            printf(" %6.1fx", c->naive.best / c->tiled.best);
        } else {
            printf(" %7s", "-");
        }
        printf(" %7.1f %5.1f%%", gflops, 100.0 * gflops / peak);
        if (c->naive.runs > 0) {
            printf(" %9.1f %9.2f %9.1e\n", mib(c->naive_extra), mib(c->tiled_extra), c->diff);
        } else {
            printf(" %9s %9.2f %9s\n", "-", mib(c->tiled_extra), "-");
        }
    }
    printf("what the numbers say:\n");
    const BenchCase *last = &cases[2 * n_seqs - 2];   // seq 2048 if it ran, else the largest
    for (int i = 0; i < n_seqs; i++) {
        last = cases[2 * i].seq == 2048 ? &cases[2 * i] : last;
    }
    printf("- tiled: %.0f%% of the measured peak at seq %d: its five products are FMAs; the "
           "exp, delta,\n  the copies of K_j and V_j and the edges of the tiles are not. Its blocks "
           "stay %.1f KiB at any seq;\n  with lse and delta (4 bytes a query) it needs %.2f MiB "
           "here.\n",
           100.0 * bench_flops(last->seq, false) / (last->tiled.best * 1e6) / peak, last->seq,
           (last->tiled_extra - 4.0 * (BENCH_HEADS + 1) * last->seq) / 1024.0,
           mib(last->tiled_extra));
    for (int i = 0; i < n_seqs; i++) {
        const BenchCase *full = &cases[2 * i], *causal = &cases[2 * i + 1];
        if (full->naive.runs > 0 && (i + 1 == n_seqs || cases[2 * i + 2].naive.runs == 0)) {
            printf("- naive, seq %d: it keeps P and makes dP and dS, (B, H, N, N) each: %.0f "
                   "MiB, 4x more each time\n  seq doubles; it does 4 of the 5 products (P is "
                   "kept, not recomputed), one multiply-add at a time.\n", full->seq,
                   mib(full->naive_extra));
        }
        if (i + 1 == n_seqs) {
            printf("- causal, seq %d: the tiled backward skips the tiles above the diagonal "
                   "and took %.2f of the time\n  it took without the mask (about 0.5 expected, "
                   "a little more for the diagonal tiles).\n", full->seq,
                   causal->tiled.best / full->tiled.best);
        }
    }
    if (noisy) {
        printf("- some runs of a case differed by more than %.0f%%: the machine is busy, and "
               "ratios between cases\n  are less certain than the best times.\n",
               100.0 * BENCH_SPREAD_NOTE);
    }
    for (int i = 0; i < 2 * n_seqs; i++) {
        const BenchCase *c = &cases[i];
        double gflops = bench_flops(c->seq, c->causal) / (c->tiled.best * 1e6);
        if (c->naive.runs > 0) {
            printf("bench seq=%d causal=%d naive_ms=%.1f tiled_ms=%.1f tiled_gflops=%.1f "
                   "naive_extra_mib=%.1f tiled_extra_mib=%.1f\n", c->seq, c->causal,
                   c->naive.best, c->tiled.best, gflops, mib(c->naive_extra), mib(c->tiled_extra));
        } else {
            printf("bench seq=%d causal=%d naive_ms=- tiled_ms=%.1f tiled_gflops=%.1f "
                   "naive_extra_mib=- tiled_extra_mib=%.1f\n", c->seq, c->causal, c->tiled.best,
                   gflops, mib(c->tiled_extra));
        }
    }
}

// --bench times its own sizes (--seq picks one of them): the other shape flags
// and the files would be ignored, so they are refused.
static void refuse_with_bench(const Lesson *lesson) {
    const char *ignored[] = {"--batch", "--dim", "--heads", "--kv-heads", "--head-dim",
                             "--causal", "--train", "--dump", "--dot", "--heatmap"};
    for (size_t f = 0; f < sizeof ignored / sizeof ignored[0]; f++) {
        if (flag_given(lesson, ignored[f])) {   // --batch 1, or --batch=1
            usage_error(lesson, "--bench times its own sizes (batch 1, 8 heads, head_dim 64, seq "
                        "512 to 8192 or --seq N, causal and not); drop %s", ignored[f]);
        }
    }
}

// === appendix C: the forward, lesson 13's tiled loop keeping lse, and its naive path ============

// The forward's scratch (lesson 13's): scores kept transposed, a column per query.
typedef struct {
    int N, D, Bq, Bk, ldS;   // ldS: Bq rounded up to 16
    bool causal;
    const Kernels *kernels;
    float *q_t;              // (D, ldS)  the query block, transposed, times 1/sqrt(D)
    float *s_t;              // (Bk, ldS) its scores against a key block, then exp(score - m)
    float *m, *l, *m_new, *block_sum;   // (ldS) each: running max and sum per query
} Tiling;

// Lesson 13's attend_query_block, which now also writes lse[j] = m + log(l):
// all the backward needs of the softmax, one number per query.
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

// query (B, H, N, D), key and value (B, KV, N, D), row-major; returns out
// (B, H, N, D) and *lse (B, H, N).
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
    const Tensor *inputs[3] = {query, key, value};
    trace("tiled forward (keeps lse)", out, 3, inputs, 0, NULL);
    trace("tiled forward (keeps lse)", *lse, 3, inputs, 0, NULL);
    return out;
}

// Lesson 13's naive path: the helper's matmul and softmax, (B, KV, R, N, N)
// weights (R query heads beside each key/value head, broadcast, no copy).
// Returns out_naive (B, H, N, D) and *P, the weights as (B, H, N, N).
static const Tensor *naive_attention(const Tensor **P, const Tensor *query, const Tensor *key,
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

// P, dP and dS, (B, H, N, N) each.
static size_t naive_extra_bytes(int B, int H, int N) {
    return 3 * (size_t)B * H * N * N * sizeof(float);
}

// The backward as autograd runs it on the naive path, by loops on whole
// (N, N) matrices: dV = P^T dO (summed over a group), dP = dO V^T, dS = P (dP -
// rowsum(P dP)) (autograd's softmax backward: the row term from the whole row
// of P and dP), dQ = dS K / sqrt(D), dK = dS^T Q / sqrt(D).
static QKVGrads naive_backward(const Tensor *P, const Tensor *query, const Tensor *key,
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

// P of the first tile of batch 0, head 0, made as the backward makes it:
// S = (Q_i / sqrt(D)) K_j^T, then exp(S - lse). (nq, nk).
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

// === appendix D: part 1's module in double, for the central differences =========================

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

// === appendix E: what a run costs, for the budget (lesson/budget.h) ===============================

// Part 1 at (B, T, C): counted from what it held (ATTN_COST=show) at many
// sizes: about 8 (B, T, T) tensors (the mask, scores, att_weight and their
// gradients; 4 more with --train: the noise, the dropped weights and theirs),
// 29 (B, T, C) and 24 (C, C) (parameters, gradients, their transposes, and
// the central differences' copies in double). Its work: the forward and
// backward, 4 and 8 BTC*C and 2 and 4 BTT*C multiply-adds, and ten losses in
// double for the central differences, a forward each. Part 2 at (B, H, N, D):
// 6 (B, H, N, D) and 6 (B, KV, N, D) tensors (inputs, outputs, gradients,
// copies), lse (B, H, N), the tiles' scratch (Bq + Bk rows of D, about 16
// times over, and 5 (Bq, Bk): S, P, dP, dS and the forward's); the naive path, when its P fits, 5 (B, H, N, N) (scores, scaled,
// P, dP, dS), one more and three (N, N) for the causal mask. Its work: the
// tiled forward (2 products) and backward (5), the naive one (2 and 4),
// each BHNN*D multiply-adds, P's exp three times.
static Cost attention_backward_cost(const Sizes *n) {
    double B = n->batch, T = n->seq, C = n->dim, H = n->heads, KV = n->kv_heads, N = n->seq;
    double D = n->head_dim, BTT = B * T * T, BTC = B * T * C, BHNN = B * H * N * N;
    bool part1 = BTT <= (double)MAX_ELEMENTS, naive = BHNN <= (double)MAX_ELEMENTS;
    double Bq = fmin(n->block_q, N), Bk = fmin(n->block_k, N);
    double floats = part1 * ((8 + 4 * n->train) * BTT + 29 * BTC + 24 * C * C) +
                    6 * B * H * N * D + 6 * B * KV * N * D + B * H * N + 16 * (Bq + Bk) * D +
                    5 * Bq * Bk +
                    naive * ((5 + n->causal) * BHNN + 3 * n->causal * N * N);
    return (Cost){
        .bytes = 4 * floats,
        .dumped = 4 * (part1 * (2 * BTT + 10 * BTC + 8 * C * C) + 5 * B * H * N * D +
                       4 * B * KV * N * D + B * H * N),
        .multiply_adds = part1 * (52 * BTC * C + 26 * BTT * C) + (7 + 6 * naive) * BHNN * D,
        .exps = part1 * ((11 + n->train) * BTT + BTC + 4 * C * C) + (2 + naive) * BHNN +
                2 * B * H * N * D + 2 * B * KV * N * D,
        .elements = floats,
    };
}

// --bench's budget. Memory: the largest case's inputs, outputs, the
// tiled path's two sets of gradients (the first run's, kept, and a later
// run's) and its (Bq, Bk) tiles, and where the naive path runs, its P (H, N, N), a naive run's dP
// and dS, and one head's scores while P is made. Time: the bench's loops are
// not the lessons' plain loops the budget's rates describe (budget.h), so it
// estimates its own seconds from the rates measured here (one core of an
// AMD EPYC, Zen 4, under load, gcc -O2; the slower end, as budget.h's):
// the naive backward's inner loops over d (vectorised by the compiler) at
// 0.5 ns a multiply-add; the tiled kernels at 2 ns a multiply-add divided by
// the floats a register holds (1, 8, 16), and 100 ns a visited tile plus
// 2 ns an element of it for what is not a product (the exp, the copies).
// Each case runs the tiled backward at least BENCH_REPEATS times and then
// while it has run less than a second, the naive one BENCH_REPEATS times
// (twice when slow). The seconds go to check_budget as the elements that
// take as long (NS_PER_ELEMENT each).
static Cost bench_cost(const int *seqs, int n_seqs, int block_q, int block_k,
                       const Kernels *kernels) {
    double H = BENCH_HEADS, D = BENCH_HEAD_DIM, bytes = 0, seconds = 0.2;   // 0.2: fma_peak
    double lanes = kernels == &SCALAR_KERNELS ? 1 : kernels == &AVX2_KERNELS ? 8 : 16;
    for (int i = 0; i < n_seqs; i++) {
        double N = seqs[i], HNN = H * N * N;
        bool naive = HNN <= (double)MAX_ELEMENTS;
        double tiles = H * ceil(N / fmin(block_q, N)) * ceil(N / fmin(block_k, N));
        double tiled_run = 5 * HNN * D * 0.4e-9 / lanes + tiles * 100e-9 + HNN * 0.5e-9;
        double naive_run = 4 * HNN * D * 0.4e-9;
        double held = 11 * H * N * D + H * N + 5 * fmin(block_q, N) * fmin(block_k, N) +
                      naive * (HNN + fmax(7 * N * N + 2 * N * D, 2 * HNN + 3 * H * N * D));
        bytes = fmax(bytes, 4 * held);
        for (int causal = 0; causal < 2; causal++) {   // the causal case: about half the tiles
            double share = causal ? 0.5 : 1.0;
            seconds += fmax(BENCH_REPEATS * share * tiled_run,
                            fmin(BENCH_MAX_REPEATS, 1 + BENCH_MIN_SECONDS / (share * tiled_run)) *
                            share * tiled_run) +
                       naive * (2 * HNN * D * 0.4e-9 + HNN * 20e-9 +
                                (naive_run > BENCH_SLOW_MS * 1e-3 ? 2 : BENCH_REPEATS) * naive_run);
        }
    }
    return (Cost){.bytes = bytes, .elements = seconds * 1e9 / NS_PER_ELEMENT};
}

// === appendix F: the flags ========================================================================

static Sizes read_flags(Lesson *lesson, bool *run_bench, int argc, char **argv) {
    static Sizes n = {.batch = 3, .seq = 4, .dim = 2, .heads = 2, .kv_heads = 2, .head_dim = 4,
                      .block_q = 2, .block_k = 2};
    static bool bench_switch = false;
    static SizeFlag sizes[] = {
        {"--batch", &n.batch, "batch size"},
        {"--seq", &n.seq, "sequence length (part 2 and --bench: N)"},
        {"--dim", &n.dim, "part 1: hidden dimension"},
        {"--heads", &n.heads, "part 2: query heads"},
        {"--kv-heads", &n.kv_heads, "part 2: key/value heads, dividing --heads; if not given, "
                                    "--heads"},
        {"--head-dim", &n.head_dim, "part 2: numbers per head"},
    };
    static IntFlag ints[] = {
        {"--block-q", &n.block_q, "part 2: queries per block, Bq (--bench: 64 if not given)", 1,
         MAX_BLOCK},
        {"--block-k", &n.block_k, "part 2: keys per block, Bk (--bench: 64 if not given)", 1,
         MAX_BLOCK},
    };
    static SwitchFlag switches[] = {
        {"--causal", &n.causal, "the causal mask (part 1: instead of padding)"},
        {"--train", &n.train, "part 1: training mode, dropout on"},
        {"--bench", &bench_switch, "time the tiled backward against the naive one on one core"},
    };
    *lesson = (Lesson){
        .program = "lesson-14",
        .summary = "attention-backward: the gradients of attention by hand, then "
                   "FlashAttention-2's tiled backward",
        .sizes = sizes, .n_sizes = 6, .ints = ints, .n_ints = 2,
        .switches = switches, .n_switches = 3,
    };
    parse_lesson_args(lesson, argc, argv);
    *run_bench = bench_switch;
    return n;
}

// --kv-heads defaults to --heads; the sizes must fit together and the helper's limits.
static void check_sizes(const Lesson *lesson, Sizes *n) {
    if (!flag_given(lesson, "--kv-heads")) {
        n->kv_heads = n->heads;
    }
    check_divides(lesson, "--kv-heads", n->kv_heads, "--heads", n->heads);
    check_fits(lesson, "X (batch, seq, dim)", shape3(n->batch, n->seq, n->dim));
    check_fits(lesson, "query_proj.weight (dim, dim)", shape2(n->dim, n->dim));
    check_fits(lesson, "query (batch, heads, seq, head_dim)",
               shape4(n->batch, n->heads, n->seq, n->head_dim));
}
