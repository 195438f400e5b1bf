// Lesson 15: llama-block - the attention today's decoders run: RoPE, RMSNorm, SwiGLU and
// grouped-query attention with a cache, as one Llama decoder layer.
//
// WHAT THIS ADDS
//   Lessons 11 and 12 built ViT's and BERT's blocks: positions added to the tokens, or (12)
//   a learned table of distances. The decoders a learner reads about now (Llama, Mistral,
//   Qwen) do four things differently, all in the layer transformers calls LlamaDecoderLayer:
//     - RoPE: nothing is added; each pair of numbers of a query and a key is turned by the
//       angle position * theta_i, after the projections and before the cache, so q_m . k_n
//       depends on m - n only. Meta pairs (2i, 2i+1), Hugging Face (i, i + D/2).
//     - RMSNorm in place of LayerNorm: divide by the root mean square; no mean, no bias.
//     - grouped-query attention (lesson 8) read by index (lesson 10), causal, with a cache.
//     - the SwiGLU MLP: down(silu(gate(x)) * up(x)), three matrices, hidden ~ 8/3 of dim
//       (Llama 2 7B: 11008 of 4096; Llama 3 8B, 3.5 times: 14336).
//   No biases (Llama's and Mistral's projections have none; Qwen2's and Qwen2.5's q, k and v
//   have, Qwen3's not), no dropout.
//
// THE MATH (x is (B, T, C); P tokens cached before it)
//   RMSNorm(x) = x / sqrt(mean(x^2) + eps) * weight, eps 1e-6 (LlamaConfig's default; Llama 2
//                and Llama 3 set 1e-5)
//   theta_i    = base^(-2i/D), i < D/2;  RoPE(v, m): pair (a, e) of v ->
//                (a cos m theta_i - e sin m theta_i, e cos m theta_i + a sin m theta_i)
//   attn       = softmax over s <= P+t of RoPE(q_t, P+t) . RoPE(k_s, s) / sqrt(D), times v_s
//                (query head h reads key/value head h / R, R = H / KV)
//   h = x + o_proj(attn);  out = h + down_proj(silu(gate_proj(n)) * up_proj(n)), n = RMSNorm(h)
//
// THE PYTORCH IT MIRRORS (transformers v4.38's modeling_llama.py, its eager attention;
// docs/15-llama-block.md has the script)
//   torch.manual_seed(seed)
//   layer = LlamaDecoderLayer(config)           # q, k, v, o, gate, up, down: nn.Linear draws
//   hidden_states = torch.randn(batch, prompt + new, dim)
//   out, attn_weights = layer(hidden_states, causal_mask, position_ids)     # all at once
//   then the prompt in one call and each new token in its own, with a DynamicCache
//
// RUN IT
//   make lesson-15 ARGS="--rope-layout interleaved --kv-heads 1"   (flags: --help, llama_flags.c)
//
// WHAT TO LOOK FOR
//   - One query's score with one key stays put when both move by 1, 100, 1000 (part 3).
//   - Permuting the q and k rows gives the other layout's rotated queries, bit for bit (4).
//   - The slowest pair turns once in 19869 positions with base 10000 (part 5).
//   - Prefill plus a token per call is the full forward (7); two classic bugs are not (8).
//
// Size letters: B batch, N every token (--prompt + --new), T a call's tokens, P the keys cached
// before a call (attend's causal offset; Run's P, which generate and parts 7 and 8 read, is
// --prompt, the first call's tokens), L = P + T the keys a call attends to, C hidden_size
// (--dim), H query heads, KV key/value heads, R = H / KV, D head_dim = C / H, F intermediate_size.
// Index letters: b batch row, h query head, g key/value head, t query position, s key
// position, d inside a head, i a pair of a head (RoPE), c a channel.

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "attention.h"
#include "llama_flags.h"
#include "llama_print.h"
#include "exact/pow_exact.h"

// --- the configuration -----------------------------------------------------------------------

// Where the two numbers of pair i sit in a head of D numbers (part 4 shows both).
typedef enum { ROTATE_HALF, INTERLEAVED } RopeLayout;
static const char *const ROPE_LAYOUTS[] = {"rotate_half", "interleaved", NULL};

// The fields of transformers' LlamaConfig the layer reads (and the layout of RoPE's pairs).
typedef struct {
    int hidden_size;            // C
    int intermediate_size;      // F
    int num_attention_heads;    // H
    int num_key_value_heads;    // KV
    int rope_theta;             // the base of the angles: 10000 (Llama 2), 500000 (Llama 3)
    double rms_norm_eps;        // 1e-6, LlamaConfig's default (Llama 2, Llama 3: 1e-5)
    RopeLayout rope_layout;     // ROTATE_HALF: transformers' code; INTERLEAVED: Meta's
} LlamaConfig;

// --- LlamaRMSNorm ----------------------------------------------------------------------------

// LayerNorm (lesson 11) subtracts each row's mean, divides by its standard deviation,
// multiplies by a weight and adds a bias. RMSNorm keeps the division, by the root mean square,
// and the weight: no mean subtracted (a constant row becomes +-1 where LayerNorm makes it 0),
// no bias. A sublayer needs inputs of a steady scale; re-centering adds little to that.
typedef struct {
    const Tensor *weight;       // (C,), starts as ones: draws nothing
    double variance_epsilon;    // config.rms_norm_eps
} LlamaRMSNorm;

// `name`: the weight's state_dict name, "input_layernorm.weight"
static LlamaRMSNorm LlamaRMSNorm_init(const char *name, int hidden_size, double eps) {
    return (LlamaRMSNorm){named(name, ones(shape1(hidden_size))), eps};
}

// LlamaRMSNorm.forward, line by line, in float32 with PyTorch's roundings (the squares
// summed in torch.sum's order, sum_exact.h): bit for bit PyTorch's.
//   variance = hidden_states.pow(2).mean(-1, keepdim=True)
//   hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
//   return self.weight * hidden_states
static Tensor *LlamaRMSNorm_forward(const LlamaRMSNorm *self, const Tensor *hidden_states) {
    int C = size(hidden_states, -1);
    const Tensor *x = contiguous(hidden_states);
    Tensor *out = zeros(x->shape);                                         // (..., C)
    float *squares = arena_alloc((size_t)C, sizeof(float));
    for (long row = 0; row < numel(x) / C; row++) {   // every position of every batch row
        const float *x_row = &x->data[x->offset + row * C];                 // (C,)
        float *out_row = &out->data[row * C];                               // (C,)
        for (int c = 0; c < C; c++) {
            squares[c] = x_row[c] * x_row[c];                                // pow(2)
        }
        float variance = sum_exact(squares, C) / (float)C;                  // mean(-1)
        float rsqrt = 1.0f / sqrtf(variance + (float)self->variance_epsilon);
        for (int c = 0; c < C; c++) {
            out_row[c] = *at1(self->weight, c) * (x_row[c] * rsqrt);
        }
    }
    trace("rms_norm", out, 2, (const Tensor *const[]){hidden_states, self->weight}, 1,
          (const double[]){self->variance_epsilon});
    return out;
}

// --- RoPE: LlamaRotaryEmbedding and the two ways to turn the pairs ---------------------------

// A head's D numbers are D/2 pairs; pair i turns by theta_i per position, fast for i = 0
// (1 radian), slow for the last (base^(-(D-2)/D)). Turn a query's pair (a, e) by m theta_i
// and a key's pair (c, f) by n theta_i: a turn keeps their lengths and adds to their angles,
// so their dot product is |(a, e)| |(c, f)| cos(the angle between them + (m - n) theta_i):
// the score sees the distance m - n and nothing else (part 3 prints it).
typedef struct {
    int dim;                  // D
    int base;                 // rope_theta
    const Tensor *inv_freq;   // (D/2,) theta_i: a buffer, not a parameter (no state_dict entry)
    RopeLayout layout;
} LlamaRotaryEmbedding;

// inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)), in float, with the pow
// PyTorch uses for each number: its AVX2 kernel hands whole blocks of 16 to Sleef's vector
// powf (common/exact/pow_exact.c) and the last D/2 mod 16 to the C library's powf. The two differ in a
// last bit for some exponents (head_dim 48: theta_10), so PyTorch's bits need both.
static LlamaRotaryEmbedding LlamaRotaryEmbedding_init(int dim, int base, RopeLayout layout) {
    int half = dim / 2, whole_blocks = half / 16 * 16;
    Tensor *inv_freq = zeros(shape1(half));                                   // (D/2,)
    for (int i = 0; i < half; i++) {
        float exponent = (float)(2 * i) / (float)dim;
        float power = i < whole_blocks ? sleef_powf((float)base, exponent)
                                       : powf((float)base, exponent);
        inv_freq->data[i] = 1.0f / power;
    }
    return (LlamaRotaryEmbedding){dim, base, inv_freq, layout};
}

// cos and sin (T, D/2) of the angles position * theta_i, positions start .. start+T-1: one
// float product each, then the C library's cosf and sinf (Meta's torch.polar, bit for bit;
// transformers' Sleef cosf differs in a last bit for about 1 angle in 20).
static void LlamaRotaryEmbedding_forward(Tensor **cos, Tensor **sin,
                                         const LlamaRotaryEmbedding *self, int start, int T) {
    int half = self->dim / 2;
    *cos = zeros(shape2(T, half));                                            // (T, D/2)
    *sin = zeros(shape2(T, half));                                            // (T, D/2)
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < half; i++) {
            float angle = (float)(start + t) * self->inv_freq->data[i];
            *at2(*cos, t, i) = cosf(angle);
            *at2(*sin, t, i) = sinf(angle);
        }
    }
    trace1("rotary_emb", *cos, self->inv_freq);
    trace1("rotary_emb", *sin, self->inv_freq);
}

// RoPE on x (B, heads, T, D), cos and sin (T, D/2): pair i of each head, numbers (a, e),
// turned by its angle: (a cos - e sin, e cos + a sin). The layouts differ in where the pair
// sits, nothing else:
//   rotate_half, transformers' apply_rotary_pos_emb: q * cos + rotate_half(q) * sin, with
//     rotate_half(q) = cat(-q[D/2:], q[:D/2]): pair i is (i, i + D/2);
//   interleaved, Meta's apply_rotary_emb: view_as_complex(q) * freqs_cis: pair i is
//     (2i, 2i + 1), the complex number a + ie, multiplied by cos + i sin.
// Not static: make exercise-15 links the reader's own in its place (exercises/
// 15-llama-block.c).
Tensor *rotate(const Tensor *x, const Tensor *cos, const Tensor *sin, RopeLayout layout) {
    int B = size(x, 0), heads = size(x, 1), T = size(x, 2), D = size(x, 3), half = D / 2;
    Tensor *out = zeros(shape4(B, heads, T, D));                              // (B, heads, T, D)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < heads; h++) {
            for (int t = 0; t < T; t++) {
                for (int i = 0; i < half; i++) {
                    int first = layout == ROTATE_HALF ? i : 2 * i;
                    int second = layout == ROTATE_HALF ? i + half : 2 * i + 1;
                    float a = *at4(x, b, h, t, first), e = *at4(x, b, h, t, second);
                    float c = *at2(cos, t, i), s = *at2(sin, t, i);
                    *at4(out, b, h, t, first) = a * c - e * s;    // q1 * cos + (-q2) * sin
                    *at4(out, b, h, t, second) = e * c + a * s;   // q2 * cos + q1 * sin
                }
            }
        }
    }
    trace(layout == ROTATE_HALF ? "apply_rotary_pos_emb" : "apply_rotary_emb", out, 3,
          (const Tensor *const[]){x, cos, sin}, 0, NULL);
    return out;
}

// --- the cache -------------------------------------------------------------------------------

// transformers' DynamicCache for one layer, as storage made once (lesson 10's): the keys,
// already turned to their positions, and the values, of `length` positions so far.
typedef struct {
    Tensor *key_cache;     // (B, KV, capacity, D)
    Tensor *value_cache;   // (B, KV, capacity, D)
    int capacity, length;
} KVCache;

static KVCache KVCache_init(int batch, int kv_heads, int capacity, int head_dim) {
    return (KVCache){zeros(shape4(batch, kv_heads, capacity, head_dim)),
                     zeros(shape4(batch, kv_heads, capacity, head_dim)), capacity, 0};
}

// past_key_value.update(key_states, value_states): append this call's T positions (B, KV,
// T, D) and return every cached one, *keys and *values (B, KV, L, D): views, nothing copied.
static void KVCache_update(const Tensor **keys, const Tensor **values, KVCache *self,
                           const Tensor *key_states, const Tensor *value_states) {
    int B = size(key_states, 0), KV = size(key_states, 1), T = size(key_states, 2);
    int D = size(key_states, 3);
    if (self->length + T > self->capacity) {
        fail("KVCache: %d + %d positions exceed its %d", self->length, T, self->capacity);
    }
    for (int b = 0; b < B; b++) {
        for (int g = 0; g < KV; g++) {
            for (int t = 0; t < T; t++) {
                memcpy(at4(self->key_cache, b, g, self->length + t, 0),
                       at4(key_states, b, g, t, 0), (size_t)D * sizeof(float));
                memcpy(at4(self->value_cache, b, g, self->length + t, 0),
                       at4(value_states, b, g, t, 0), (size_t)D * sizeof(float));
            }
        }
    }
    self->length += T;
    *keys = narrow(self->key_cache, 2, 0, self->length);                      // (B, KV, L, D)
    *values = narrow(self->value_cache, 2, 0, self->length);                  // (B, KV, L, D)
}

// --- LlamaAttention --------------------------------------------------------------------------

typedef struct {
    int num_heads;              // H
    int head_dim;               // D = C / H
    int num_key_value_heads;    // KV
    int num_key_value_groups;   // R = H / KV
    Linear q_proj;              // C -> H*D, no bias (Llama's projections have none)
    Linear k_proj;              // C -> KV*D
    Linear v_proj;              // C -> KV*D
    Linear o_proj;              // H*D -> C
    LlamaRotaryEmbedding rotary_emb;
} LlamaAttention;

// What the forward computed besides its output, for the lesson to print.
typedef struct {
    const Tensor *cos, *sin;        // (T, D/2) the angles of this call's positions
    const Tensor *query_states;     // (B, H, T, D) after RoPE
    const Tensor *key_states;       // (B, KV, T, D) after RoPE: what goes into the cache
    const Tensor *value_states;     // (B, KV, T, D)
    const Tensor *scores;           // (B, H, T, L) q . k / sqrt(D), -inf where masked
    const Tensor *attn_weights;     // (B, H, T, L) softmax over the keys up to each query
} LlamaAttentionSteps;

// The projections are drawn one statement each, in the order nn.Linear(..., bias=False)
// registers them (inside one initializer C leaves the order of the calls open).
static LlamaAttention LlamaAttention_init(const LlamaConfig *config) {
    int C = config->hidden_size, H = config->num_attention_heads;
    int KV = config->num_key_value_heads, D = C / H;
    Linear q_proj = linear_init("self_attn.q_proj", C, H * D, false);
    Linear k_proj = linear_init("self_attn.k_proj", C, KV * D, false);
    Linear v_proj = linear_init("self_attn.v_proj", C, KV * D, false);
    Linear o_proj = linear_init("self_attn.o_proj", H * D, C, false);
    return (LlamaAttention){H, D, KV, H / KV, q_proj, k_proj, v_proj, o_proj,
                            LlamaRotaryEmbedding_init(D, config->rope_theta, config->rope_layout)};
}

// Causal attention, query head h reading key/value head g = h / R where it lies (lesson 10;
// transformers' repeat_kv copies every cached key R times). Query t sits at position P + t
// and sees keys 0 .. P + t: the mask is the loop's bound, the weights after it stay 0.
// query (B, H, T, D), keys and values (B, KV, L, D); returns attn_output (B, T, H*D), the
// heads side by side; *scores and *attn_weights get (B, H, T, L).
static Tensor *attend(Tensor **scores, Tensor **attn_weights, const Tensor *query,
                      const Tensor *keys, const Tensor *values, int P) {
    int B = size(query, 0), H = size(query, 1), T = size(query, 2), D = size(query, 3);
    int L = size(keys, 2), R = H / size(keys, 1);
    float scale = (float)sqrt((double)D);   // math.sqrt(head_dim), a float when it divides
    *scores = full(shape4(B, H, T, L), -INFINITY);                            // (B, H, T, L)
    *attn_weights = zeros(shape4(B, H, T, L));                                // (B, H, T, L)
    Tensor *attn_output = zeros(shape3(B, T, H * D));                         // (B, T, H*D)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            int g = h / R;                          // the key/value head query head h reads
            for (int t = 0; t < T; t++) {
                const float *q_t = at4(query, b, h, t, 0);          // (D,)
                float *weights_t = at4(*attn_weights, b, h, t, 0);  // (L,)
                float *out_t = at3(attn_output, b, t, h * D);       // (D,) head h's part
                int visible = P + t + 1;                            // keys 0 .. P + t
                for (int s = 0; s < visible; s++) {
                    const float *k_s = at4(keys, b, g, s, 0);       // (D,)
                    float dot = 0.0f;
                    for (int d = 0; d < D; d++) {
                        dot += q_t[d] * k_s[d];
                    }
                    weights_t[s] = dot / scale;
                    *at4(*scores, b, h, t, s) = weights_t[s];
                }
                softmax_exact_lastdim(weights_t, 1, visible);       // PyTorch's softmax's bits
                for (int s = 0; s < visible; s++) {
                    const float *v_s = at4(values, b, g, s, 0);     // (D,)
                    for (int d = 0; d < D; d++) {
                        out_t[d] += weights_t[s] * v_s[d];
                    }
                }
            }
        }
    }
    trace2("softmax(q k^T / sqrt(D)) by index, causal", *attn_weights, query, keys);
    trace2("attn_weights @ v by index", attn_output, *attn_weights, values);
    return attn_output;
}

// LlamaAttention.forward, line by line: hidden_states (B, T, C) turned to positions start_pos
// .. start_pos + T - 1 (position_ids; right when start_pos is the cache's length, part 8);
// `cache`: NULL (every token at once) or past_key_value.
static Tensor *LlamaAttention_forward(LlamaAttentionSteps *steps, const LlamaAttention *self,
                                      const Tensor *hidden_states, int start_pos, KVCache *cache) {
    int B = size(hidden_states, 0), T = size(hidden_states, 1);
    int H = self->num_heads, KV = self->num_key_value_heads, D = self->head_dim;
    int past = cache != NULL ? cache->length : 0;   // P: the causal mask's offset
    const Tensor *query_states = linear(&self->q_proj, hidden_states);        // (B, T, H*D)
    const Tensor *key_states = linear(&self->k_proj, hidden_states);          // (B, T, KV*D)
    const Tensor *value_states = linear(&self->v_proj, hidden_states);        // (B, T, KV*D)
    query_states = transpose(view(query_states, shape4(B, T, H, D)), 1, 2);   // (B, H, T, D)
    key_states = transpose(view(key_states, shape4(B, T, KV, D)), 1, 2);      // (B, KV, T, D)
    value_states = transpose(view(value_states, shape4(B, T, KV, D)), 1, 2);  // (B, KV, T, D)

    // cos, sin = self.rotary_emb(value_states, position_ids); RoPE after the projections,
    // on the queries and keys only, and BEFORE the cache: a key is turned once, to its own
    // position, and kept turned.
    Tensor *cos, *sin;
    LlamaRotaryEmbedding_forward(&cos, &sin, &self->rotary_emb, start_pos, T);   // (T, D/2)
    query_states = rotate(query_states, cos, sin, self->rotary_emb.layout);  // (B, H, T, D)
    key_states = rotate(key_states, cos, sin, self->rotary_emb.layout);      // (B, KV, T, D)

    const Tensor *keys = key_states, *values = value_states;                 // (B, KV, L, D)
    if (cache != NULL) {
        KVCache_update(&keys, &values, cache, key_states, value_states);
    }
    Tensor *scores, *attn_weights;
    Tensor *attn_output = attend(&scores, &attn_weights, query_states, keys, values,
                                 past);                                       // (B, T, H*D)
    if (steps != NULL) {
        *steps = (LlamaAttentionSteps){cos, sin, query_states, key_states, value_states, scores,
                                       attn_weights};
    }
    Tensor *out = linear(&self->o_proj, attn_output);                         // (B, T, C)
    labeled("o_proj", out);
    return out;
}

// --- LlamaMLP: SwiGLU ------------------------------------------------------------------------

// silu(z) = z * sigmoid(z) = z / (1 + exp(-z)), as PyTorch 1.13's AVX2 kernel computes it (the
// one it runs on x86-64 unless ATEN_CPU_CAPABILITY=avx512): whole blocks of 16 numbers, two
// vectors of 8, with its vector code's exp (Sleef's, sleef_expf), the last n % 16 with the C
// library's expf. (Its AVX-512 kernel takes blocks of 32.) One exp for all would change a
// last bit in about 1 output in 25.
static Tensor *silu(const Tensor *x) {
    Tensor *y = clone(x);
    long n = numel(y), whole_blocks = n / 16 * 16;
    for (long element = 0; element < n; element++) {
        float z = y->data[element];
        y->data[element] = z / (1.0f + (element < whole_blocks ? sleef_expf(-z) : expf(-z)));
    }
    trace1("silu", y, x);
    return y;
}

// A ViT or BERT MLP is fc2(gelu(fc1(x))): two matrices. SwiGLU ("GLU" with the Swish/SiLU
// gate) has three: gate_proj and up_proj both read x; silu of the gate scales up_proj's
// output unit by unit; down_proj brings the product back to C.
typedef struct {
    Linear gate_proj;   // C -> F
    Linear up_proj;     // C -> F
    Linear down_proj;   // F -> C
} LlamaMLP;

typedef struct {
    const Tensor *gate, *activated, *up, *product;   // (B, T, F) each
} LlamaMLPSteps;

static LlamaMLP LlamaMLP_init(const LlamaConfig *config) {
    int C = config->hidden_size, F = config->intermediate_size;
    Linear gate_proj = linear_init("mlp.gate_proj", C, F, false);   // drawn in this order
    Linear up_proj = linear_init("mlp.up_proj", C, F, false);
    return (LlamaMLP){gate_proj, up_proj, linear_init("mlp.down_proj", F, C, false)};
}

// down_proj(act_fn(gate_proj(x)) * up_proj(x))
static Tensor *LlamaMLP_forward(LlamaMLPSteps *steps, const LlamaMLP *self, const Tensor *x) {
    const Tensor *gate = labeled("gate_proj(x)", linear(&self->gate_proj, x));   // (B, T, F)
    const Tensor *activated = labeled("act_fn(gate)", silu(gate));             // (B, T, F)
    const Tensor *up = labeled("up_proj(x)", linear(&self->up_proj, x));       // (B, T, F)
    const Tensor *product = mul(activated, up);                                // (B, T, F)
    if (steps != NULL) {
        *steps = (LlamaMLPSteps){gate, activated, up, product};
    }
    return linear(&self->down_proj, product);                                  // (B, T, C)
}

// --- LlamaDecoderLayer -----------------------------------------------------------------------

// Pre-norm, as lesson 11's ViT block: each sublayer reads a normalised copy of the stream
// and its output is added to the stream, which itself is never normalised.
typedef struct {
    LlamaAttention self_attn;
    LlamaMLP mlp;
    LlamaRMSNorm input_layernorm;
    LlamaRMSNorm post_attention_layernorm;
} LlamaDecoderLayer;

typedef struct {
    const Tensor *normed;     // (B, T, C) input_layernorm(hidden_states)
    LlamaAttentionSteps attn;
    const Tensor *mlp_in;     // (B, T, C) post_attention_layernorm(hidden_states)
    LlamaMLPSteps mlp;
} LlamaDecoderLayerSteps;

// The modules in the order transformers registers them, which is the order of the draws.
static LlamaDecoderLayer LlamaDecoderLayer_init(const LlamaConfig *config) {
    LlamaDecoderLayer self;
    self.self_attn = LlamaAttention_init(config);
    self.mlp = LlamaMLP_init(config);
    self.input_layernorm = LlamaRMSNorm_init("input_layernorm.weight", config->hidden_size,
                                             config->rms_norm_eps);
    self.post_attention_layernorm = LlamaRMSNorm_init("post_attention_layernorm.weight",
                                                      config->hidden_size, config->rms_norm_eps);
    return self;
}

// LlamaDecoderLayer.forward: hidden_states (B, T, C) at positions start_pos .. start_pos+T-1.
static Tensor *LlamaDecoderLayer_forward(LlamaDecoderLayerSteps *steps,
                                         const LlamaDecoderLayer *self,
                                         const Tensor *hidden_states, int start_pos,
                                         KVCache *cache) {
    LlamaDecoderLayerSteps kept;
    const Tensor *residual = hidden_states;                                   // (B, T, C)
    kept.normed = labeled("input_layernorm", LlamaRMSNorm_forward(&self->input_layernorm,
                                                                  hidden_states));
    const Tensor *attn_out = LlamaAttention_forward(&kept.attn, &self->self_attn, kept.normed,
                                                    start_pos, cache);        // (B, T, C)
    hidden_states = labeled("hidden_states + attn", add(residual, attn_out));  // (B, T, C)
    residual = hidden_states;
    kept.mlp_in = labeled("post_attention_layernorm",
                          LlamaRMSNorm_forward(&self->post_attention_layernorm, hidden_states));
    const Tensor *mlp_out = LlamaMLP_forward(&kept.mlp, &self->mlp, kept.mlp_in);   // (B, T, C)
    if (steps != NULL) {
        *steps = kept;
    }
    return add(residual, mlp_out);                                            // (B, T, C)
}

// --- part 1: the layer, every token at once --------------------------------------------------

// What main computed once, for the parts to read.
typedef struct {
    int B, N, P, C, H, KV, D, R, F;   // the sizes, as in the legend; P is --prompt
    LlamaConfig config;
    LlamaDecoderLayer layer;
    const Tensor *hidden_states;      // (B, N, C)
    const Tensor *out;                // (B, N, C): every token at once, no cache
    LlamaDecoderLayerSteps steps;     // of that forward
    KVCache cache;                    // filled by part 7
} Run;

// Part 1 prints what main computed as PyTorch would (appendix B, after main): the config and
// the parameters in the order they are drawn; then the forward's shapes, in its order, and two
// of its tensors, attn_weights[0, 0] and out[0, :, :6].
static void print_layer(const Run *run);
static void print_forward(const Run *run);

// --- part 2: RMSNorm against LayerNorm -------------------------------------------------------

static void part2_rms_norm(const Run *run) {
    part(2, "RMSNorm against lesson 11's LayerNorm", "--dim changes it");
    int C = run->C;
    const Tensor *x = contiguous(first(run->hidden_states, C));               // (C,)
    // x.mean() and x.pow(2).mean().sqrt(): torch's sums, divided by C
    float mean = sum_exact(&x->data[x->offset], C) / (float)C;
    float rms = sqrtf(sum_exact(mul(x, x)->data, C) / (float)C);
    printf("x = hidden_states[0, 0]: mean %.4f, root mean square %.4f over its %d numbers\n",
           (double)mean, (double)rms, C);
    const Tensor *by_rms = LlamaRMSNorm_forward(&run->layer.input_layernorm, x);     // (C,)
    const Tensor *by_ln = layer_norm(x, ones(shape1(C)), zeros(shape1(C)), 1e-5);     // (C,)
    printf("input_layernorm(x)[:6]:    %s\n", tensor_str(first(by_rms, 6), NULL));
    printf("F.layer_norm(x, (C,))[:6]: %s\n", tensor_str(first(by_ln, 6), NULL));
    printf("max |input_layernorm(x) - F.layer_norm(x)| = %.4f: the mean it does not subtract\n",
           (double)max_abs_diff(by_rms, by_ln));
    const Tensor *constant = full(shape1(C), 0.5f);                           // (C,)
    printf("a constant row, torch.full((C,), 0.5): RMSNorm %s\n", tensor_str(
               first(LlamaRMSNorm_forward(&run->layer.input_layernorm, constant), 4), NULL));
    printf("  (0.5 / sqrt(0.25 + 1e-06): its sign, times weight), LayerNorm %s\n", tensor_str(
               first(layer_norm(constant, ones(shape1(C)), zeros(shape1(C)), 1e-5), 4), NULL));
}

// --- part 3: RoPE's property, against lesson 12's learned table ------------------------------

// A vector (D,) turned to `position` in the run's layout.
static const Tensor *rope_vector(const LlamaRotaryEmbedding *rotary, const Tensor *vector,
                                 int position) {
    int D = size(vector, 0);
    Tensor *cos, *sin;
    LlamaRotaryEmbedding_forward(&cos, &sin, rotary, position, 1);          // (1, D/2)
    const Tensor *x = view(contiguous(vector), shape4(1, 1, 1, D));          // (1, 1, 1, D)
    return view(rotate(x, cos, sin, rotary->layout), shape1(D));             // (D,)
}

static void part3_relative(const Run *run) {
    part(3, "RoPE: the scores see only the distance m - n", "--rope-base changes it");
    const LlamaAttention *attn = &run->layer.self_attn;
    const LlamaRotaryEmbedding *rotary = &attn->rotary_emb;
    int N = run->N, D = run->D;
    printf("theta_i = 1 / %d ** (2i / %d), the inv_freq buffer:\n%s\n", rotary->base, D,
           tensor_str(rotary->inv_freq, NULL));
    const Tensor *queries = linear(&attn->q_proj, run->steps.normed);        // (B, N, H*D)
    const Tensor *keys = linear(&attn->k_proj, run->steps.normed);           // (B, N, KV*D)
    const Tensor *q = narrow(select_index(select_index(queries, 0, 0), 0, N - 1), 0, 0, D);
    const Tensor *k = first(keys, D);                                        // (D,)
    printf("q: token %d's query (head 0), k: token 0's key (key/value head 0), before RoPE;\n"
           "q . k / sqrt(%d) with q turned to position m, k to position n:\n", N - 1, D);
    const int placed[5][2] = {{N - 1, 0}, {N, 1}, {N + 99, 100}, {N + 999, 1000}, {0, N - 1}};
    float scores[5], largest = 0.0f;
    for (int i = 0; i < 5; i++) {
        int m = placed[i][0], n = placed[i][1];
        scores[i] = score(rope_vector(rotary, q, m), rope_vector(rotary, k, n));
        largest = i >= 1 && i <= 3 ? fmaxf(largest, fabsf(scores[i] - scores[0])) : largest;
        printf("  m = %d, n = %d (m - n = %d): %.4f\n", m, n, m - n, (double)scores[i]);
    }
    printf("  without RoPE (any m, n): %.4f\n", (double)score(q, k));
    printf("largest difference of the shifted scores from m = %d, n = 0: %.2g (m * theta_i "
           "rounded to float)\n", N - 1, (double)largest);
    // What that costs against lesson 12's learned table of distances (llama_print.c counts).
    print_relative_costs(N, run->H, run->KV, D);
}

// --- part 4: the two layouts -----------------------------------------------------------------

// Row d of a head in the other layout is row rows[d] of this one: Meta's row 2i + p is
// Hugging Face's row p * D/2 + i (convert_llama_weights_to_hf.py's permute takes Meta's
// weights to Hugging Face's).
static const int *other_rows(int D, RopeLayout layout) {
    int *rows = arena_alloc((size_t)D, sizeof(int)), half = D / 2;
    for (int d = 0; d < D; d++) {
        rows[d] = layout == ROTATE_HALF ? d % 2 * half + d / 2 : 2 * (d % half) + d / half;
    }
    return rows;
}

// The weight (heads * D, C) with the rows of every head reordered: row h*D + d <- h*D + rows[d]
static Linear permuted(const Linear *layer, const int *rows, int D) {
    Tensor *weight = zeros(layer->weight->shape);
    for (int row = 0; row < size(weight, 0); row++) {
        memcpy(at2(weight, row, 0), at2(layer->weight, row / D * D + rows[row % D], 0),
               (size_t)size(weight, 1) * sizeof(float));
    }
    return (Linear){weight, NULL, layer->in_features, layer->out_features};
}

static void part4_layouts(const Run *run) {
    part(4, "two layouts of RoPE's pairs, equal after permuting rows", "--rope-layout changes it");
    int D = run->D, half = D / 2;
    RopeLayout layout = run->config.rope_layout, other = layout == ROTATE_HALF ? INTERLEAVED
                                                                               : ROTATE_HALF;
    printf("rotate_half (Hugging Face): pair i is (i, i + %d): (0, %d) (1, %d) ... (%d, %d)\n"
           "interleaved (Meta, complex numbers): pair i is (2i, 2i + 1): (0, 1) (2, 3) ... "
           "(%d, %d)\n", half, half, half + 1, half - 1, D - 1, D - 2, D - 1);
    LlamaDecoderLayer twin = run->layer;
    twin.self_attn.rotary_emb.layout = other;
    size_t mark = arena_mark();   // each forward here is freed once measured
    float diff = max_abs_diff(run->out, LlamaDecoderLayer_forward(NULL, &twin, run->hidden_states,
                                                                  0, NULL));
    arena_release(mark);
    printf("this run: %s. The same weights in %s: max |out - out(%s)| = %.4f\n",
           ROPE_LAYOUTS[layout], ROPE_LAYOUTS[other], ROPE_LAYOUTS[other], (double)diff);
    const int *rows = other_rows(D, layout);
    printf("q_proj and k_proj rows permuted in every head, row d of a head <- row rows[d]:\n"
           "  rows = [");
    for (int d = 0; d < D && d < 8; d++) {
        printf("%s%d", d > 0 ? ", " : "", rows[d]);
    }
    printf("%s (convert_llama_weights_to_hf.py's permute%s)\n", D > 8 ? ", ...]" : "]",
           layout == ROTATE_HALF ? ", inverted" : "");
    mark = arena_mark();
    twin.self_attn.q_proj = permuted(&run->layer.self_attn.q_proj, rows, D);
    twin.self_attn.k_proj = permuted(&run->layer.self_attn.k_proj, rows, D);
    LlamaDecoderLayerSteps steps;
    const Tensor *twin_out = LlamaDecoderLayer_forward(&steps, &twin, run->hidden_states, 0, NULL);
    const Tensor *mine = run->steps.attn.query_states, *theirs = steps.attn.query_states;
    Tensor *back = zeros(mine->shape);                                     // (B, H, N, D)
    for (long head = 0; head < numel(mine) / D; head++) {   // back[..., rows[d]] = theirs[..., d]
        for (int d = 0; d < D; d++) {
            back->data[head * D + rows[d]] = theirs->data[head * D + d];
        }
    }
    printf("with them, %s: the rotated query_states, permuted back: max |difference| = %.3g\n"
           "  attn_weights: max |difference| = %.3g, out: max |difference| = %.3g\n",
           ROPE_LAYOUTS[other], (double)max_abs_diff(back, mine),
           (double)max_abs_diff(steps.attn.attn_weights, run->steps.attn.attn_weights),
           (double)max_abs_diff(twin_out, run->out));
    arena_release(mark);
}

// --- part 5: the base ------------------------------------------------------------------------

static void part5_base(const Run *run) {
    part(5, "the base: how slowly the last pairs turn", "--rope-base changes it; Llama 3: 500000");
    // Llama 2's base, Llama 3's, and the run's if it is another: a base changes no weight,
    // only inv_freq.
    int bases[3] = {10000, 500000, run->config.rope_theta}, half = run->D / 2;
    int n_bases = bases[2] == 10000 || bases[2] == 500000 ? 2 : 3;
    const Tensor *inv_freq[3];
    for (int b = 0; b < n_bases; b++) {
        inv_freq[b] = LlamaRotaryEmbedding_init(run->D, bases[b], ROTATE_HALF).inv_freq;
    }
    print_periods(bases, inv_freq, n_bases, half);   // llama_print.c
    const double two_pi = 6.283185307179586;   // 2 * math.pi
    double slow = two_pi / (double)run->layer.self_attn.rotary_emb.inv_freq->data[half - 1];
    printf("base %d: the slowest pair turns once in %.0f positions; a larger base\n  stretches "
           "every slow pair, so that far distances stay apart (Llama 3: 500000, 8192 tokens)\n",
           run->config.rope_theta, slow);
}

// --- part 6: SwiGLU --------------------------------------------------------------------------

static void part6_swiglu(const Run *run) {
    part(6, "the SwiGLU MLP: down_proj(silu(gate_proj(x)) * up_proj(x))", "--hidden changes it");
    int C = run->C, F = run->F;
    const Tensor *points = tensor_from(shape1(5), (const float[]){-3, -1, 0, 1, 3});
    printf("silu(z) = z * sigmoid(z) = z / (1 + exp(-z)) at -3, -1, 0, 1, 3:\n%s\n",
           tensor_str(silu(points), NULL));
    const LlamaMLPSteps *m = &run->steps.mlp;
    printf("x = post_attention_layernorm(hidden_states): %s\n", size_str(run->steps.mlp_in));
    printf("gate_proj(x)[0, 0, :6]:       %s\n", tensor_str(first(m->gate, 6), NULL));
    printf("silu(gate_proj(x))[0, 0, :6]: %s\n", tensor_str(first(m->activated, 6), NULL));
    printf("up_proj(x)[0, 0, :6]:         %s\n", tensor_str(first(m->up, 6), NULL));
    printf("their product[0, 0, :6]:      %s\n", tensor_str(first(m->product, 6), NULL));
    printf("down_proj: %s -> %s\n", size_str(m->product), size_str(run->out));
    // Three C x F matrices against lesson 11's two of C x 4C: the same for F = 8C/3.
    printf("3 matrices of %d x %d: %ld parameters; lesson 11's GELU MLP, 2 of %d x %d: %ld\n"
           "  8/3 * %d = %.1f keeps the two equal; rounded up to a multiple of 8: %d (Llama 2 "
           "7B, 13B: 256)\n", C, F, 3L * C * F, C, 4 * C, 8L * C * C, C, 8.0 * C / 3.0,
           (8 * C / 3 + 7) / 8 * 8);
}

// --- part 7: decoding with the cache ---------------------------------------------------------

// The generation loop: the prompt in one call, then a token per call, through `cache`, each
// call's tokens turned to their positions (to 0 with `restart_at_0`: part 8's bug). The rows
// go into out (B, N, C), the last call's scores (head 0, batch row 0) into last_scores (N,)
// unless NULL; each call's tensors are freed once kept, so a long run holds one call's.
static void generate(Tensor *out, Tensor *last_scores, const LlamaDecoderLayer *layer,
                     const Tensor *hidden_states, int P, KVCache *cache, bool restart_at_0) {
    int B = size(hidden_states, 0), N = size(hidden_states, 1), C = size(hidden_states, 2);
    for (int t = 0; t < N; t += t == 0 ? P : 1) {   // t: the first token of this call
        int T = t == 0 ? P : 1;
        size_t mark = arena_mark();
        LlamaDecoderLayerSteps steps;
        const Tensor *tokens = narrow(hidden_states, 1, t, T);                  // (B, T, C)
        const Tensor *rows = LlamaDecoderLayer_forward(&steps, layer, tokens, restart_at_0 ? 0 : t,
                                                       cache);                // (B, T, C)
        for (int b = 0; b < B; b++) {
            memcpy(at3(out, b, t, 0), at3(rows, b, 0, 0), (size_t)T * C * sizeof(float));
        }
        if (last_scores != NULL) {   // the call's last query against its t + T keys
            memcpy(last_scores->data, at4(steps.attn.scores, 0, 0, T - 1, 0),
                   (size_t)(t + T) * sizeof(float));
        }
        arena_release(mark);
    }
}

// Generation with the run's cache; each call's output against the rows of every token at
// once. Returns cached_out (B, N, C).
static const Tensor *part7_decode(Run *run) {
    part(7, "decoding: the prompt at once, then a token per call", "--prompt and --new change it");
    int P = run->P, N = run->N, B = run->B, KV = run->KV, D = run->D, H = run->H;
    run->cache = KVCache_init(B, KV, N, D);
    Tensor *cached_out = zeros(run->hidden_states->shape);                   // (B, N, C)
    generate(cached_out, NULL, &run->layer, run->hidden_states, P, &run->cache, false);
    printf("prefill: tokens 0..%d at positions 0..%d, keys turned, then cached: (%d, %d, %d, %d)"
           "\n  max |out - out[:, :%d] of all tokens at once| = %.3g\n", P - 1, P - 1, B, KV, P, D,
           P, (double)max_abs_diff(narrow(cached_out, 1, 0, P), narrow(run->out, 1, 0, P)));
    for (int t = P; t < N; t++) {
        printf("token %d: key turned to %d, then cached: (%d, %d, %d, %d); max |out - out[:, %d]| "
               "= %.3g\n", t, t, B, KV, t + 1, D, t,
               (double)max_abs_diff(narrow(cached_out, 1, t, 1), narrow(run->out, 1, t, 1)));
    }
    printf("cached_out = torch.cat(outs, dim=1): %s; max |cached_out - out| = %.3g\n",
           size_str(cached_out), (double)max_abs_diff(cached_out, run->out));
    printf("the cache per token: 2 (K and V) * %d kv_heads * %d = %d floats; %d with %d (MHA), %d "
           "with 1 (MQA)\n", KV, D, 2 * KV * D, 2 * H * D, H, 2 * D);
    return cached_out;
}

// --- part 8: two bugs ------------------------------------------------------------------------

static void part8_bugs(const Run *run) {
    part(8, "two classic RoPE bugs with a cache, and the scores they give", "--prompt changes it");
    int P = run->P, N = run->N, D = run->D;
    if (N == P) {
        printf("(no token is decoded: give --new 1 or more)\n");
        return;
    }
    const LlamaRotaryEmbedding *rotary = &run->layer.self_attn.rotary_emb;
    printf("the last token's scores q . k / sqrt(%d), head 0, against keys 0..%d:\n"
           "right: query at %d, key s at s (the row of all tokens at once):\n%s\n", D, N - 1,
           N - 1, tensor_str(first(narrow(run->steps.attn.scores, 2, N - 1, 1), N), NULL));
    // Bug 1: the cache holds keys turned to their positions, and code that turns every key
    // it reads turns them again: key s is seen at 2s.
    const Tensor *q = first(narrow(run->steps.attn.query_states, 2, N - 1, 1), D);   // (D,)
    Tensor *again = zeros(shape1(N));                                         // (N,)
    for (int s = 0; s < N; s++) {
        const Tensor *k_s = first(narrow(run->cache.key_cache, 2, s, 1), D);       // (D,)
        again->data[s] = score(q, rope_vector(rotary, k_s, s));
    }
    printf("keys turned again each time the cache is read (key s at 2s):\n%s\n",
           tensor_str(again, NULL));
    // Bug 2: position_ids restarted at 0 in every call (the cache's length forgotten): each
    // new token's query and key are turned to 0, and its key is cached there.
    KVCache cache = KVCache_init(run->B, run->KV, N, D);
    Tensor *restarted = zeros(run->hidden_states->shape), *scores = zeros(shape1(N));
    generate(restarted, scores, &run->layer, run->hidden_states, P, &cache, true);
    printf("position_ids restarted at 0 in every call (query at 0, tokens %d..%d's keys at 0):\n"
           "%s\n", P, N - 1, tensor_str(scores, NULL));
    printf("tokens %d..%d with position_ids restarted: max |out - out of all tokens at once| = "
           "%.4f\n", P, N - 1,
           (double)max_abs_diff(narrow(restarted, 1, P, N - P), narrow(run->out, 1, P, N - P)));
}

// --- part 9: parameters and multiply-adds ----------------------------------------------------

// Parameters and multiply-adds of lessons 11's, 12's and this block at the same width,
// counted in llama_print.c; docs/15-llama-block.md derives each formula.
static void part9_counts(const Run *run) {
    part(9, "what the three blocks cost", "--dim, --hidden and --kv-heads change it");
    print_block_costs(run->N, run->C, run->H, run->KV, run->D, run->F);
}

// --- the lesson ------------------------------------------------------------------------------

static Run run_of(LlamaFlags flags);   // appendix A, after main
static Cost llama_block_cost(const Run *run);
static void name_steps(const Run *run);

int main(int argc, char **argv) {
    Lesson lesson;
    Run run = run_of(read_llama_flags(&lesson, argc, argv));
    check_budget(&lesson, llama_block_cost(&run));   // what these sizes hold and do, or exit 2
    lesson_start(&lesson);
    run.layer = LlamaDecoderLayer_init(&run.config);          // the draws, in PyTorch's order
    run.hidden_states = named("hidden_states", randn(shape3(run.B, run.N, run.C)));   // (B, N, C)
    run.out = named("out", LlamaDecoderLayer_forward(&run.steps, &run.layer, run.hidden_states,
                                                     0, NULL));               // (B, N, C)
    name_steps(&run);
    trace_pause(true);   // what follows looks at what was computed: out of the diagram
    print_layer(&run);
    print_forward(&run);
    if (lesson.heatmap) {
        print_heatmap("attn_weights", run.steps.attn.attn_weights);
    }
    part2_rms_norm(&run);
    part3_relative(&run);
    part4_layouts(&run);
    part5_base(&run);
    part6_swiglu(&run);
    const Tensor *cached_out = part7_decode(&run);
    part8_bugs(&run);
    part9_counts(&run);
    trace_pause(false);   // part 7's result in the diagram, as one step
    trace1("prefill, then a token per call (part 7)", cached_out, run.hidden_states);
    named("cached_out", cached_out);
    return lesson_finish(&lesson);
}

// === appendix A: the run from the flags, and the forward's tensors --dump writes =============

// The flags (llama_flags.c reads and checks them) as the run's sizes and the layer's config.
static Run run_of(LlamaFlags f) {
    LlamaConfig config = {f.dim, f.hidden, f.heads, f.kv_heads, f.rope_base, 1e-6,
                          f.interleaved ? INTERLEAVED : ROTATE_HALF};
    return (Run){.B = f.batch, .N = f.prompt + f.new_tokens, .P = f.prompt, .C = f.dim,
                 .H = f.heads, .KV = f.kv_heads, .D = f.dim / f.heads, .R = f.heads / f.kv_heads,
                 .F = f.hidden, .config = config};
}

// The forward's tensors --dump writes besides the parameters, hidden_states, out, cached_out.
static void name_steps(const Run *run) {
    const LlamaAttentionSteps *a = &run->steps.attn;
    named("inv_freq", run->layer.self_attn.rotary_emb.inv_freq);
    named("cos", a->cos);
    named("sin", a->sin);
    named("normed", run->steps.normed);
    named("query_states", a->query_states);
    named("key_states", a->key_states);
    named("value_states", a->value_states);
    named("attn_weights", a->attn_weights);
}

// The budget's prediction (lesson/budget.h). What a run holds at most is part 1's forward,
// kept, while part 4 runs the layer again; with them the parameters, the two caches (parts 7
// and 8, (B, KV, N, D) keys and values each) and their outputs. The counts per size are fitted
// to what runs hold (ATTN_COST=show prints both; tests/test_budget.c checks two sizes): a
// forward of N tokens keeps scores and attn_weights (B, H, N, N), about 12 (B, N, C) and 4
// (B, N, F) tensors and 5 (B, KV, N, D); cos and sin (N, D/2); the weights, k_proj's and
// v_proj's (KV*D, C) among them (left out, --heads 1 --kv-heads 1 --dim 3338 held 597 MiB
// where 512 were predicted). Its work: about five forwards
// (part 1, part 4's two, parts 7 and 8 a token at a time), each B*N*(2C*C + 2C*KV*D + 3C*F)
// multiply-adds in the projections and B*H*N*N*D in scores and weights (causal: half of 2
// products).
static Cost llama_block_cost(const Run *run) {
    double B = run->B, N = run->N, C = run->C, H = run->H, KV = run->KV, D = run->D;
    double F = run->F, BHNN = B * H * N * N;
    double parameters = 2 * C * C + 2 * C * KV * D + 3 * C * F + 2 * C;
    double floats = 4 * BHNN + 24 * B * N * C + 8 * B * N * F + 10 * B * KV * N * D + 6 * N * D +
                    4 * C * C + 2 * C * KV * D + 3 * F * C;
    double forward_macs = B * N * (2 * C * C + 2 * C * KV * D + 3 * C * F) + BHNN * D;
    return (Cost){
        .bytes = 4 * floats,
        .dumped = 4 * (parameters + 2 * BHNN + 4 * B * N * C + B * N * C + 2 * B * KV * N * D +
                       N * D + D / 2),
        .multiply_adds = 5 * forward_macs,
        .exps = 5 * BHNN / 2 + B * N * C + parameters,
        .elements = 2 * floats,
    };
}

// === appendix B: part 1's printout, the layer and its forward as PyTorch names them ==========

static void print_layer(const Run *run) {
    printf("config: hidden_size %d, num_attention_heads %d, num_key_value_heads %d (head_dim %d),\n"
           "  intermediate_size %d, rope_theta %d, rms_norm_eps 1e-06, RoPE layout %s\n", run->C,
           run->H, run->KV, run->D, run->F, run->config.rope_theta,
           ROPE_LAYOUTS[run->config.rope_layout]);
    const LlamaAttention *a = &run->layer.self_attn;
    const LlamaMLP *m = &run->layer.mlp;
    const struct { const char *name; const Tensor *weight; } p[9] = {
        {"self_attn.q_proj", a->q_proj.weight}, {"self_attn.k_proj", a->k_proj.weight},
        {"self_attn.v_proj", a->v_proj.weight}, {"self_attn.o_proj", a->o_proj.weight},
        {"mlp.gate_proj", m->gate_proj.weight}, {"mlp.up_proj", m->up_proj.weight},
        {"mlp.down_proj", m->down_proj.weight},
        {"input_layernorm", run->layer.input_layernorm.weight},
        {"post_attention_layernorm", run->layer.post_attention_layernorm.weight}};
    long total = (2L * run->H + 2L * run->KV) * run->D * run->C + 3L * run->C * run->F + 2 * run->C;
    printf("layer = LlamaDecoderLayer(config): %ld parameters, drawn in this order:\n", total);
    for (int i = 0; i < 9; i++) {
        printf("  %s.weight: %s\n", p[i].name, shape_str(p[i].weight->shape, SIZES_TUPLE));
    }
    printf("hidden_states = torch.randn%s\n", shape_str(run->hidden_states->shape, SIZES_TUPLE));
}

static void print_forward(const Run *run) {
    int B = run->B, N = run->N, D = run->D, heads[3] = {run->H, run->KV, run->KV};
    printf("\n-- out, attn_weights = layer(hidden_states, causal_mask, position_ids): %d token%s, "
           "no cache --\n", N, N == 1 ? "" : "s");
    printf("x = input_layernorm(hidden_states): %s\n", size_str(run->steps.normed));
    const char *names[3] = {"query_states = q", "key_states = k", "value_states = v"};
    for (int i = 0; i < 3; i++) {
        printf("%s_proj(x).view(%d, %d, %d, %d).transpose(1, 2): %s\n", names[i], B, N, heads[i],
               D, shape_str(shape4(B, heads[i], N, D), SIZES_TORCH));
    }
    printf("position_ids = torch.arange(%d)[None]: each token's position, 0 .. %d\n", N, N - 1);
    // transformers' cos and sin hold each angle twice, [angles, angles], with a batch dim of
    // position_ids' one row; Meta's freqs_cis holds them once, as cos + i sin. The lesson
    // keeps them once, as cos and sin (T, D/2): what the diagram draws.
    const char *kept = shape_str(run->steps.attn.cos->shape, SIZES_TUPLE);
    if (run->config.rope_layout == ROTATE_HALF) {
        printf("cos, sin = rotary_emb(value_states, position_ids): %s each\n"
               "  (each angle twice, cat((freqs, freqs), dim=-1); the lesson keeps cos[0, :, :%d], "
               "%s)\n"
               "query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, "
               "sin)\n", shape_str(shape3(1, N, D), SIZES_TORCH), D / 2, kept);
    } else {
        printf("freqs_cis = precompute_freqs_cis(%d, position_ids[0], %d): %s complex\n"
               "  (cos + i sin of each angle; the lesson keeps cos and sin, %s each)\n"
               "query_states, key_states = apply_rotary_emb(query_states, key_states, freqs_cis)\n"
               "  (Meta's code turns them before the transpose)\n", D, run->config.rope_theta,
               shape_str(shape2(N, D / 2), SIZES_TORCH), kept);
    }
    const Tensor *attn_weights = run->steps.attn.attn_weights;               // (B, H, N, N)
    printf("attn_weights = softmax(q @ k^T / sqrt(%d) + causal_mask): %s\n  query head h reads "
           "key/value head h // %d where it lies (Hugging Face's repeat_kv copies)\n", D,
           size_str(attn_weights), run->R);
    const Tensor *head_0 = select_index(select_index(attn_weights, 0, 0), 0, 0);   // (N, N)
    printf("attn_weights[0, 0]:\n%s\n", tensor_str(head_0, NULL));
    printf("hidden_states = hidden_states + o_proj(attn_output): %s\n"
           "out = hidden_states + mlp(post_attention_layernorm(hidden_states)): %s\n",
           size_str(run->out), size_str(run->out));
    const Tensor *rows = select_index(run->out, 0, 0);                        // (N, C)
    printf("out[0, :, :6]:\n%s\n", tensor_str(narrow(rows, 1, 0, run->C < 6 ? run->C : 6), NULL));
}
