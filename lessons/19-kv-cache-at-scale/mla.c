// mla.c - DeepSeek-V2's multi-head latent attention (MLA), written twice: as its modeling
// code writes it (the naive form: every cached latent decompressed into keys and values), and
// absorbed, as DeepSeek's inference code decodes (the key up-projection folded into the query,
// the value up-projection applied after the weighted sum of latents).
//
// THE IDEA (DeepSeek-V2, arXiv 2405.04434, section 2.1)
//   Multi-head attention caches, per token and layer, H keys and H values. MLA caches one
//   vector c_KV of kv_lora_rank numbers, the joint compression of them all, and makes the
//   keys' and values' content parts back from it with one up-projection per head:
//       c_KV = kv_a_layernorm(W^DKV x)        (KR,)          cached
//       k^C_h = W^UK_h c_KV,  v_h = W^UV_h c_KV              (DN,), (DV,)
//   RoPE cannot go through c_KV (a turn between W^UQ and W^UK would depend on both positions,
//   and could not be folded into one matrix), so a small key of qk_rope_head_dim numbers,
//   shared by every head, carries the position:
//       k^R = RoPE(W^KR x)                    (DR,)          cached
//       k_h = [k^C_h, k^R],  q_h = [q^C_h, RoPE(q^R_h)]      (DQ,) = (DN + DR,)
//   The queries have a low-rank path too (q_lora_rank), which saves activations in training,
//   not cache. score = q_h . k_h * DQ^-0.5; the output is o_proj of every head's sum of v_h.
//
//   Absorbed: q_h . k^C_h = q^C_h . (W^UK_h c_KV) = (W^UK_h^T q^C_h) . c_KV, so the query
//   goes into the latent's space once (absorb_query) and every score is a dot product with a
//   cached c_KV; likewise sum_s w_s v_h,s = W^UV_h (sum_s w_s c_KV,s) (absorb_output).
//
// THE PYTORCH IT MIRRORS: DeepSeek-V2's modeling_deepseek.py (DeepseekV2RMSNorm,
// DeepseekV2RotaryEmbedding, apply_rotary_pos_emb, DeepseekV2Attention.forward), and the
// "absorb" branch of DeepSeek-V3's inference/model.py (MLA.forward). docs/19-kv-cache-at-scale.md
// has both as a script. Size letters: at_scale.h.
#include <math.h>
#include <string.h>

#include "at_scale.h"

// --- RMSNorm and RoPE ------------------------------------------------------------------------

RMSNorm rms_norm_init(const char *name, int width, double eps) {
    return (RMSNorm){named(name, ones(shape1(width))), eps};
}

// DeepseekV2RMSNorm.forward (lesson 15's LlamaRMSNorm): the squares summed in torch.sum's
// order, so that the result is PyTorch's to the bit.
Tensor *rms_norm_forward(const RMSNorm *self, const Tensor *x) {
    int width = size(x, -1), ndim = x->shape.ndim;
    if (x->stride[ndim - 1] != 1) {
        fail("rms_norm: the last dim of %s is not contiguous", size_x_str(x));
    }
    Tensor *out = zeros(x->shape);                                         // (..., width)
    float *squares = arena_alloc((size_t)width, sizeof(float));
    int index[MAX_DIMS] = {0};   // the row's index; its last entry stays 0
    for (long row = 0; row < numel(x) / width; row++) {
        const float *x_row = at_read(x, ndim, index);   // rows may lie apart (a split's part)
        float *out_row = &out->data[row * width];
        for (int c = 0; c < width; c++) {
            squares[c] = x_row[c] * x_row[c];                               // pow(2)
        }
        float variance = sum_exact(squares, width) / (float)width;          // mean(-1)
        float rsqrt = 1.0f / sqrtf(variance + (float)self->variance_epsilon);
        for (int c = 0; c < width; c++) {
            out_row[c] = *at1(self->weight, c) * (x_row[c] * rsqrt);
        }
        next_index(index, x->shape.size, ndim - 1);
    }
    trace("rms_norm", out, 2, (const Tensor *const[]){x, self->weight}, 1,
          (const double[]){self->variance_epsilon});
    return out;
}

// inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)): PyTorch's pow hands
// whole blocks of 16 to Sleef's powf, the rest to the C library's (lesson 15).
const Tensor *rope_inv_freq(int dim, int base) {
    int half = dim / 2, whole_blocks = half / 16 * 16;
    Tensor *inv_freq = zeros(shape1(half));                                   // (dim/2,)
    for (int i = 0; i < half; i++) {
        float exponent = (float)(2 * i) / (float)dim;
        float power = i < whole_blocks ? sleef_powf((float)base, exponent)
                                       : powf((float)base, exponent);
        inv_freq->data[i] = 1.0f / power;
    }
    return inv_freq;
}

void rope_cos_sin(Tensor **cos, Tensor **sin, const Tensor *inv_freq, int start, int T) {
    int half = size(inv_freq, 0);
    *cos = zeros(shape2(T, half));                                            // (T, dim/2)
    *sin = zeros(shape2(T, half));                                            // (T, dim/2)
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < half; i++) {
            float angle = (float)(start + t) * inv_freq->data[i];   // torch.outer(t, inv_freq)
            *at2(*cos, t, i) = cosf(angle);
            *at2(*sin, t, i) = sinf(angle);
        }
    }
}

// DeepSeek-V2's apply_rotary_pos_emb on x (B, heads, T, DR): pair i is the neighbours
// (2i, 2i + 1), as in RoPE's paper (Su et al., RoFormer) and Meta's code, but the code first
// de-interleaves them,
//     q = q.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
// and then turns rotate_half's pairs (i, i + DR/2): the turned pair lands at i and i + DR/2
// ("Different from paper, but it uses a different permutation in order to obtain the same
// calculation", the code says). Queries and keys move alike, so every dot product is the
// paper's; the cached k_pe is in this order.
static Tensor *rope_deepseek(const Tensor *x, const Tensor *cos, const Tensor *sin) {
    int B = size(x, 0), heads = size(x, 1), T = size(x, 2), DR = size(x, 3), half = DR / 2;
    Tensor *out = zeros(shape4(B, heads, T, DR));                          // (B, heads, T, DR)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < heads; h++) {
            for (int t = 0; t < T; t++) {
                for (int i = 0; i < half; i++) {
                    float a = *at4(x, b, h, t, 2 * i), e = *at4(x, b, h, t, 2 * i + 1);
                    float c = *at2(cos, t, i), s = *at2(sin, t, i);
                    *at4(out, b, h, t, i) = a * c - e * s;     // q * cos + rotate_half(q) * sin
                    *at4(out, b, h, t, i + half) = e * c + a * s;
                }
            }
        }
    }
    trace1("apply_rotary_pos_emb", out, x);
    return out;
}

// --- DeepseekV2Attention ---------------------------------------------------------------------

// The modules in the order DeepseekV2Attention.__init__ makes them, which is the order of
// the draws (attention_bias is false in DeepSeek-V2's config: no biases). The two norms use
// DeepseekV2RMSNorm's default eps, 1e-6: the modeling code does not pass rms_norm_eps to them.
DeepseekV2Attention DeepseekV2Attention_init(const DeepseekV2Config *config) {
    DeepseekV2Attention self = {.config = *config};
    int C = config->hidden_size, H = config->num_attention_heads, QR = config->q_lora_rank;
    int KR = config->kv_lora_rank, DN = config->qk_nope_head_dim;
    int DR = config->qk_rope_head_dim, DV = config->v_head_dim;
    self.q_head_dim = DN + DR;
    if (QR == 0) {
        self.q_proj = linear_init("mla.q_proj", C, H * self.q_head_dim, false);
    } else {
        self.q_a_proj = linear_init("mla.q_a_proj", C, QR, false);
        self.q_a_layernorm = rms_norm_init("mla.q_a_layernorm.weight", QR, 1e-6);
        self.q_b_proj = linear_init("mla.q_b_proj", QR, H * self.q_head_dim, false);
    }
    self.kv_a_proj_with_mqa = linear_init("mla.kv_a_proj_with_mqa", C, KR + DR, false);
    self.kv_a_layernorm = rms_norm_init("mla.kv_a_layernorm.weight", KR, 1e-6);
    self.kv_b_proj = linear_init("mla.kv_b_proj", KR, H * (DN + DV), false);
    self.o_proj = linear_init("mla.o_proj", H * DV, C, false);
    self.inv_freq = rope_inv_freq(DR, config->rope_theta);
    // self.softmax_scale = self.q_head_dim ** (-0.5), a Python float, which multiplies the
    // float32 scores as a float. (With rope_scaling, DeepSeek-V2's yarn, it is multiplied by
    // mscale^2 as well; the lesson's RoPE is the plain one, and so is its scale.)
    self.softmax_scale = (float)pow((double)self.q_head_dim, -0.5);
    return self;
}

LatentCache LatentCache_init(int batch, int capacity, int kv_lora_rank, int qk_rope_head_dim) {
    return (LatentCache){zeros(shape3(batch, capacity, kv_lora_rank)),
                         zeros(shape3(batch, capacity, qk_rope_head_dim)), capacity, 0};
}

// The call's T latents (B, T, KR) and RoPE keys (B, T, DR) appended; *latents (B, L, KR) and
// *pes (B, L, DR) get every cached one: views, nothing copied.
static void latent_update(const Tensor **latents, const Tensor **pes, LatentCache *self,
                          const Tensor *compressed_kv, const Tensor *k_pe) {
    int B = size(compressed_kv, 0), T = size(compressed_kv, 1);
    int KR = size(compressed_kv, 2), DR = size(k_pe, 2);
    if (self->length + T > self->capacity) {
        fail("LatentCache: %d + %d positions exceed its %d", self->length, T, self->capacity);
    }
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            memcpy(at3(self->compressed_kv, b, self->length + t, 0), at3(compressed_kv, b, t, 0),
                   (size_t)KR * sizeof(float));
            memcpy(at3(self->k_pe, b, self->length + t, 0), at3(k_pe, b, t, 0),
                   (size_t)DR * sizeof(float));
        }
    }
    self->length += T;
    *latents = narrow(self->compressed_kv, 1, 0, self->length);             // (B, L, KR)
    *pes = narrow(self->k_pe, 1, 0, self->length);                          // (B, L, DR)
}

// What both forms compute the same way: the queries, split and turned, and the call's
// latents and RoPE keys (the two things the cache keeps).
typedef struct {
    const Tensor *q_nope;          // (B, H, T, DN)
    const Tensor *q_pe;            // (B, H, T, DR) turned
    const Tensor *compressed_kv;   // (B, T, KR) kv_a_layernorm(c_KV)
    const Tensor *k_pe;            // (B, T, DR) turned
} Projected;

static Projected project(const DeepseekV2Attention *self, const Tensor *hidden_states,
                         int start_pos) {
    int B = size(hidden_states, 0), T = size(hidden_states, 1);
    int H = self->config.num_attention_heads, DQ = self->q_head_dim;
    int KR = self->config.kv_lora_rank, DN = self->config.qk_nope_head_dim;
    int DR = self->config.qk_rope_head_dim;
    // q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
    const Tensor *q = self->config.q_lora_rank == 0
        ? linear(&self->q_proj, hidden_states)                                 // (B, T, H*DQ)
        : linear(&self->q_b_proj, labeled("q_a_layernorm", rms_norm_forward(
              &self->q_a_layernorm, linear(&self->q_a_proj, hidden_states))));   // (B, T, H*DQ)
    q = transpose(view(q, shape4(B, T, H, DQ)), 1, 2);                         // (B, H, T, DQ)
    // q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
    const Tensor *q_nope = labeled("q_nope", narrow(q, 3, 0, DN));             // (B, H, T, DN)
    const Tensor *q_pe = labeled("q_pe", narrow(q, 3, DN, DR));                // (B, H, T, DR)
    // compressed_kv, k_pe = torch.split(self.kv_a_proj_with_mqa(hidden_states), [KR, DR])
    const Tensor *both = linear(&self->kv_a_proj_with_mqa, hidden_states);     // (B, T, KR+DR)
    const Tensor *compressed_kv = labeled("compressed_kv", narrow(both, 2, 0, KR));   // (B, T, KR)
    const Tensor *k_pe = labeled("k_pe", narrow(both, 2, KR, DR));             // (B, T, DR)
    // the latent is normed before anything reads it; the cache keeps it normed
    const Tensor *normed = labeled("kv_a_layernorm", rms_norm_forward(&self->kv_a_layernorm,
                                                                      compressed_kv));
    // cos, sin of this call's positions; RoPE on q_pe and on k_pe, (B, 1, T, DR): one head
    Tensor *cos, *sin;
    rope_cos_sin(&cos, &sin, self->inv_freq, start_pos, T);                    // (T, DR/2)
    const Tensor *q_turned = rope_deepseek(q_pe, cos, sin);                    // (B, H, T, DR)
    const Tensor *k_turned = rope_deepseek(unsqueeze(k_pe, 1), cos, sin);      // (B, 1, T, DR)
    return (Projected){q_nope, q_turned, normed, view(k_turned, shape3(B, T, DR))};
}

// Causal attention of query_states (B, H, T, DQ) at positions P .. P+T-1 over key_states
// (B, H, L, DQ) and value_states (B, H, L, DV), P = L - T. attn_output (B, T, H*DV).
static Tensor *mla_attend(Tensor **attn_weights, const Tensor *query_states,
                          const Tensor *key_states, const Tensor *value_states, float scale) {
    int B = size(query_states, 0), H = size(query_states, 1), T = size(query_states, 2);
    int DQ = size(query_states, 3), L = size(key_states, 2), DV = size(value_states, 3);
    int P = L - T;
    *attn_weights = zeros(shape4(B, H, T, L));                                // (B, H, T, L)
    Tensor *attn_output = zeros(shape3(B, T, H * DV));                        // (B, T, H*DV)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            for (int t = 0; t < T; t++) {
                const float *q_t = at4(query_states, b, h, t, 0);       // (DQ,)
                float *weights_t = at4(*attn_weights, b, h, t, 0);      // (L,)
                float *out_t = at3(attn_output, b, t, h * DV);          // (DV,) head h's part
                int visible = P + t + 1;                                // keys 0 .. P + t
                for (int s = 0; s < visible; s++) {
                    const float *k_s = at4(key_states, b, h, s, 0);     // (DQ,)
                    float dot = 0.0f;
                    for (int d = 0; d < DQ; d++) {
                        dot += q_t[d] * k_s[d];
                    }
                    weights_t[s] = dot * scale;   // matmul(q, k^T) * self.softmax_scale
                }
                softmax_exact_lastdim(weights_t, 1, visible);
                for (int s = 0; s < visible; s++) {
                    const float *v_s = at4(value_states, b, h, s, 0);   // (DV,)
                    for (int d = 0; d < DV; d++) {
                        out_t[d] += weights_t[s] * v_s[d];
                    }
                }
            }
        }
    }
    trace2("softmax(q k^T * softmax_scale), causal", *attn_weights, query_states, key_states);
    trace2("attn_weights @ value_states", attn_output, *attn_weights, value_states);
    return attn_output;
}

// DeepseekV2Attention.forward, line by line. Without a cache it is the modeling code's forward
// over the call's tokens; with one, the call's latents go into it and every cached latent is
// decompressed again by kv_b_proj: the keys and values MLA does not keep are made anew for
// every call (the modeling code keeps them instead, in a DynamicCache of H*(DQ + DV) numbers
// per token: the multi-head cache MLA exists to avoid).
Tensor *DeepseekV2Attention_forward(MLASteps *steps, const DeepseekV2Attention *self,
                                    const Tensor *hidden_states, int start_pos,
                                    LatentCache *cache) {
    int B = size(hidden_states, 0), T = size(hidden_states, 1);
    int H = self->config.num_attention_heads, DN = self->config.qk_nope_head_dim;
    int DR = self->config.qk_rope_head_dim, DV = self->config.v_head_dim;
    Projected p = project(self, hidden_states, start_pos);
    const Tensor *latents = p.compressed_kv, *pes = p.k_pe;          // (B, L, KR), (B, L, DR)
    if (cache != NULL) {
        latent_update(&latents, &pes, cache, p.compressed_kv, p.k_pe);
    }
    int L = size(latents, 1);
    // kv = self.kv_b_proj(compressed_kv).view(bsz, L, H, DN + DV).transpose(1, 2)
    const Tensor *kv = transpose(view(linear(&self->kv_b_proj, latents),
                                      shape4(B, L, H, DN + DV)), 1, 2);       // (B, H, L, DN+DV)
    const Tensor *k_nope = narrow(kv, 3, 0, DN);                               // (B, H, L, DN)
    const Tensor *value_states = labeled("value_states", narrow(kv, 3, DN, DV));   // (B, H, L, DV)
    // query_states = [q_nope, q_pe]; key_states = [k_nope, k_pe], k_pe the same for every head
    const Tensor *query_states = labeled("query_states", cat((const Tensor *const[]){
        p.q_nope, p.q_pe}, 2, 3));                                             // (B, H, T, DQ)
    Tensor *key_states = zeros(shape4(B, H, L, DN + DR));                      // (B, H, L, DQ)
    for (int b = 0; b < B; b++) {      // key_states[:, :, :, :DN] = k_nope; [..., DN:] = k_pe
        for (int h = 0; h < H; h++) {
            for (int s = 0; s < L; s++) {
                for (int d = 0; d < DN; d++) {
                    *at4(key_states, b, h, s, d) = *at4(k_nope, b, h, s, d);
                }
                for (int d = 0; d < DR; d++) {   // the same RoPE key in every head
                    *at4(key_states, b, h, s, DN + d) = *at3(pes, b, s, d);
                }
            }
        }
    }
    trace2("[k_nope, k_pe in every head]", key_states, k_nope, pes);
    labeled("key_states", key_states);
    Tensor *attn_weights;
    Tensor *attn_output = mla_attend(&attn_weights, query_states, key_states, value_states,
                                     self->softmax_scale);                     // (B, T, H*DV)
    if (steps != NULL) {
        *steps = (MLASteps){.q_nope = p.q_nope, .q_pe = p.q_pe, .compressed_kv = p.compressed_kv,
                            .k_pe = p.k_pe, .query_states = query_states,
                            .key_states = key_states, .value_states = value_states,
                            .attn_weights = attn_weights};
    }
    (void)T;
    return linear(&self->o_proj, attn_output);                                 // (B, T, C)
}

// --- the absorbed form -----------------------------------------------------------------------

// q_latent[c] = sum_i q_nope[i] * W_UK[i][c]: the query moved into the latent's space, so
// that q_nope . k_nope = q_nope . (W_UK c_KV) = q_latent . c_KV for every cached c_KV.
// W_UK (DN, KR) is the head's first DN rows of kv_b_proj.weight (rows h*(DN+DV) on).
void absorb_query(float *q_latent, const float *q_nope, const float *w_uk, int qk_nope_head_dim,
                  int kv_lora_rank) {
    for (int c = 0; c < kv_lora_rank; c++) {
        float sum = 0.0f;
        for (int i = 0; i < qk_nope_head_dim; i++) {
            sum += q_nope[i] * w_uk[(long)i * kv_lora_rank + c];
        }
        q_latent[c] = sum;
    }
}

// out[j] = sum_c W_UV[j][c] * o_latent[c]: the weighted sum of latents brought out to the
// head's DV values, once per query instead of once per cached token. W_UV (DV, KR) is the
// head's last DV rows of kv_b_proj.weight.
void absorb_output(float *out, const float *o_latent, const float *w_uv, int v_head_dim,
                   int kv_lora_rank) {
    for (int j = 0; j < v_head_dim; j++) {
        float sum = 0.0f;
        for (int c = 0; c < kv_lora_rank; c++) {
            sum += w_uv[(long)j * kv_lora_rank + c] * o_latent[c];
        }
        out[j] = sum;
    }
}

// DeepSeek-V3's MLA.forward with attn_impl = "absorb", on DeepSeek-V2's weights:
//   q_nope = einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :qk_nope_head_dim])
//   scores = (einsum("bshc,btc->bsht", q_nope, kv_cache) +
//             einsum("bshr,btr->bsht", q_pe, pe_cache)) * softmax_scale
//   x = einsum("bsht,btc->bshc", scores.softmax(-1), kv_cache)
//   x = einsum("bshc,hdc->bshd", x, wkv_b[:, -v_head_dim:])
// The cache holds KR + DR numbers per token, and nothing is decompressed.
Tensor *DeepseekV2Attention_forward_absorbed(MLASteps *steps, const DeepseekV2Attention *self,
                                             const Tensor *hidden_states, int start_pos,
                                             LatentCache *cache) {
    int B = size(hidden_states, 0), T = size(hidden_states, 1);
    int H = self->config.num_attention_heads, KR = self->config.kv_lora_rank;
    int DN = self->config.qk_nope_head_dim, DR = self->config.qk_rope_head_dim;
    int DV = self->config.v_head_dim;
    Projected p = project(self, hidden_states, start_pos);
    const Tensor *latents = p.compressed_kv, *pes = p.k_pe;          // (B, L, KR), (B, L, DR)
    if (cache != NULL) {
        latent_update(&latents, &pes, cache, p.compressed_kv, p.k_pe);
    }
    latents = contiguous(latents);
    pes = contiguous(pes);
    int L = size(latents, 1), P = L - T;
    const Tensor *w = contiguous(self->kv_b_proj.weight);                     // (H*(DN+DV), KR)
    const Tensor *q_nope = contiguous(p.q_nope), *q_pe = contiguous(p.q_pe);
    Tensor *q_latent = zeros(shape4(B, H, T, KR));                            // (B, H, T, KR)
    Tensor *attn_weights = zeros(shape4(B, H, T, L));                         // (B, H, T, L)
    Tensor *attn_output = zeros(shape3(B, T, H * DV));                        // (B, T, H*DV)
    float *o_latent = arena_alloc((size_t)KR, sizeof(float));                 // (KR,)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            const float *w_uk = &w->data[w->offset + (long)h * (DN + DV) * KR];      // (DN, KR)
            const float *w_uv = &w->data[w->offset + ((long)h * (DN + DV) + DN) * KR];   // (DV, KR)
            for (int t = 0; t < T; t++) {
                float *ql_t = at4(q_latent, b, h, t, 0);                // (KR,)
                absorb_query(ql_t, at4(q_nope, b, h, t, 0), w_uk, DN, KR);
                const float *qr_t = at4(q_pe, b, h, t, 0);              // (DR,)
                float *weights_t = at4(attn_weights, b, h, t, 0);       // (L,)
                int visible = P + t + 1;
                for (int s = 0; s < visible; s++) {
                    const float *c_s = at3(latents, b, s, 0);           // (KR,) the cached latent
                    const float *r_s = at3(pes, b, s, 0);               // (DR,) the cached k_pe
                    float content = 0.0f, position = 0.0f;
                    for (int c = 0; c < KR; c++) {
                        content += ql_t[c] * c_s[c];
                    }
                    for (int d = 0; d < DR; d++) {
                        position += qr_t[d] * r_s[d];
                    }
                    weights_t[s] = (content + position) * self->softmax_scale;
                }
                softmax_exact_lastdim(weights_t, 1, visible);
                memset(o_latent, 0, (size_t)KR * sizeof(float));
                for (int s = 0; s < visible; s++) {                     // sum_s w_s c_KV,s
                    const float *c_s = at3(latents, b, s, 0);
                    for (int c = 0; c < KR; c++) {
                        o_latent[c] += weights_t[s] * c_s[c];
                    }
                }
                absorb_output(at3(attn_output, b, t, h * DV), o_latent, w_uv, DV, KR);
            }
        }
    }
    trace2("W_UK^T q_nope (absorbed)", q_latent, p.q_nope, self->kv_b_proj.weight);
    trace2("softmax((q_latent . c_KV + q_pe . k_pe) * softmax_scale)", attn_weights, q_latent,
           latents);
    trace2("W_UV (attn_weights @ c_KV)", attn_output, attn_weights, self->kv_b_proj.weight);
    if (steps != NULL) {
        *steps = (MLASteps){.q_nope = p.q_nope, .q_pe = p.q_pe, .compressed_kv = p.compressed_kv,
                            .k_pe = p.k_pe, .q_latent = q_latent, .attn_weights = attn_weights};
    }
    return linear(&self->o_proj, attn_output);                                 // (B, T, C)
}
