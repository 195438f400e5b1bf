// test_lesson19.c - lesson 19 (kv-cache-at-scale: DeepSeek-V2's latent attention, a paged
// cache, an int8 cache, the table and the bench).
//
// Reference values in tests/data/lesson19/<case>/ were recorded from PyTorch 1.13 by
// tests/reference/gen_lesson19.py, which runs the PyTorch script of docs/19-kv-cache-at-scale.md
// (tests/data/lesson19/cases.txt lists the runs). The lesson's files are included with its
// main() renamed, so the tests can build modules and caches of their own and call them.
#define _POSIX_C_SOURCE 200809L   // setenv
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family_gqa.h"
#include "harness.h"

#define main lesson_main
#include "../lessons/19-kv-cache-at-scale/kv_cache_at_scale.c"
#undef main
#include "../lessons/19-kv-cache-at-scale/at_scale_flags.c"
#include "../lessons/19-kv-cache-at-scale/bench.c"
#include "../lessons/19-kv-cache-at-scale/caches.c"
#include "../lessons/19-kv-cache-at-scale/mla.c"
#include "../lessons/19-kv-cache-at-scale/sizes.c"

#define LESSON_DIR "19-kv-cache-at-scale"
#define REF_DIR DATA_DIR "/lesson19"

// --- the recorded runs --------------------------------------------------------------------------

// Drawn: equal bit for bit.
static const char *const EXACT[] = {
    "hidden_states", "continuations", "mla.kv_a_proj_with_mqa.weight", "mla.kv_a_layernorm.weight",
    "mla.kv_b_proj.weight", "mla.o_proj.weight", "gqa.q_proj.weight", "gqa.k_proj.weight",
    "gqa.v_proj.weight", "gqa.o_proj.weight", NULL};
static const char *const EXACT_Q_LORA[] = {"mla.q_a_proj.weight", "mla.q_a_layernorm.weight",
                                           "mla.q_b_proj.weight", NULL};
// Computed through matrix products (PyTorch's BLAS, our loops) and cos/sin (Sleef's vector
// code, the C library's): a few float32 roundings apart.
static const char *const COMPUTED[] = {"q_pe", "k_pe", "compressed_kv", "attn_weights", "out",
                                       "out_absorbed", "decoded", "decoded_absorbed",
                                       "paged_out", NULL};

START_TEST(test_matches_pytorch) {
    const RecordedCase *c = recorded_case(REF_DIR, _i);
    const char *dir = make_temp_dir();
    const char *argv[MAX_CASE_WORDS + 2] = {"--dump", dir};
    for (int k = 0; c->args[k] != NULL; k++) {
        argv[k + 2] = c->args[k];
    }
    RunResult run = run_program(lesson_binary(LESSON_DIR), argv);
    ck_assert_msg(run.status == 0 && run.err[0] == '\0', "%s: exit %d: %s", c->dir, run.status,
                  run.err);
    for (int i = 0; EXACT[i] != NULL; i++) {
        assert_bitwise_equal(load_reference(dir, EXACT[i]), load_reference(c->reference, EXACT[i]),
                             path_join("%s %s", c->dir, EXACT[i]));
    }
    bool q_lora = case_int(c, "q_lora_rank") > 0;
    for (int i = 0; q_lora && EXACT_Q_LORA[i] != NULL; i++) {
        assert_bitwise_equal(load_reference(dir, EXACT_Q_LORA[i]),
                             load_reference(c->reference, EXACT_Q_LORA[i]),
                             path_join("%s %s", c->dir, EXACT_Q_LORA[i]));
    }
    if (!q_lora) {
        assert_bitwise_equal(load_reference(dir, "mla.q_proj.weight"),
                             load_reference(c->reference, "mla.q_proj.weight"),
                             path_join("%s mla.q_proj.weight", c->dir));
    }
    for (int i = 0; COMPUTED[i] != NULL; i++) {
        assert_close(load_reference(dir, COMPUTED[i]), load_reference(c->reference, COMPUTED[i]),
                     ROUNDING_ATOL, ROUNDING_RTOL, path_join("%s %s", c->dir, COMPUTED[i]));
    }
    // The int8 caches round each key and value to a byte: a float rounding of the key (the BLAS
    // against the loops) could move a number across a rounding boundary of its byte, by one
    // step of its scale. None does in these runs (the recorded rows agree as closely as the
    // float ones); the tolerance is the float one.
    assert_close(load_reference(dir, "int8_out"), load_reference(c->reference, "int8_out"),
                 ROUNDING_ATOL, ROUNDING_RTOL, path_join("%s int8_out", c->dir));
    const char *missing = NULL;
    ck_assert_msg(lines_in_order_to_last_digit(run.out, read_text(path_join("%s/stdout.txt",
                                                                             c->reference)),
                                                &missing),
                  "%s: PyTorch's line not printed (in order): '%s'", c->dir, missing);
    remove_dir(dir);
}
END_TEST

// --- MLA ----------------------------------------------------------------------------------------

static DeepseekV2Config small_config(int q_lora_rank, int kv_lora_rank) {
    return (DeepseekV2Config){32, 4, q_lora_rank, kv_lora_rank, 8, 4, 6, 10000};
}

static DeepseekV2Attention mla_for(uint64_t seed, const DeepseekV2Config *config) {
    manual_seed(seed);
    return DeepseekV2Attention_init(config);
}

// By hand: q_nope (2,) = [1, 2], W_UK (2, 3) = [[1, 0, -1], [2, 1, 0.5]] gives
// q_latent = [1 + 4, 0 + 2, -1 + 1] = [5, 2, 0]; W_UV (2, 3) = [[1, 1, 1], [0, 2, -1]] on
// o_latent [1, 2, 3] gives [6, 1].
START_TEST(test_absorb_by_hand) {
    const float q_nope[2] = {1, 2}, w_uk[6] = {1, 0, -1, 2, 1, 0.5f};
    float q_latent[3];
    absorb_query(q_latent, q_nope, w_uk, 2, 3);
    ck_assert(q_latent[0] == 5 && q_latent[1] == 2 && q_latent[2] == 0);
    const float o_latent[3] = {1, 2, 3}, w_uv[6] = {1, 1, 1, 0, 2, -1};
    float out[2];
    absorb_output(out, o_latent, w_uv, 2, 3);
    ck_assert(out[0] == 6 && out[1] == 1);
}
END_TEST

// The absorbed form computes the naive one's numbers in another order: the same outputs and
// weights to float rounding, with and without the query's compression, for latents narrower
// and wider than the heads' keys; and q_latent . c_KV is q_nope . k_nope, head by head.
START_TEST(test_absorbed_equals_naive) {
    const int q_lora[2] = {0, 12}, kv_lora[3] = {3, 16, 32};
    for (int a = 0; a < 2; a++) {
        for (int b = 0; b < 3; b++) {
            DeepseekV2Config config = small_config(q_lora[a], kv_lora[b]);
            DeepseekV2Attention mla = mla_for((uint64_t)(10 + 3 * a + b), &config);
            const Tensor *x = randn(shape3(2, 7, 32));                         // (B, N, C)
            MLASteps naive, absorbed;
            const Tensor *out = DeepseekV2Attention_forward(&naive, &mla, x, 0, NULL);
            const Tensor *out2 = DeepseekV2Attention_forward_absorbed(&absorbed, &mla, x, 0, NULL);
            const char *what = path_join("q_lora %d, kv_lora %d", q_lora[a], kv_lora[b]);
            assert_close(out2, out, 1e-6f, 1e-5f, path_join("%s: out", what));
            assert_close(absorbed.attn_weights, naive.attn_weights, 1e-7f, 1e-5f,
                         path_join("%s: attn_weights", what));
            check_causal_weights(naive.attn_weights, 0, what);
            ck_assert(max_abs_diff(out, out2) > 0.0f || kv_lora[b] == 3);   // another order
            // q_latent . c_KV (h 1, t 5, s 2) against q_nope . k_nope of the naive keys
            const Tensor *ql = select_index(select_index(select_index(absorbed.q_latent, 0, 0),
                                                         0, 1), 0, 5);          // (KR,)
            const Tensor *c = select_index(select_index(absorbed.compressed_kv, 0, 0), 0, 2);
            const Tensor *qn = select_index(select_index(select_index(naive.q_nope, 0, 0), 0, 1),
                                            0, 5);                              // (DN,)
            const Tensor *kn = narrow(select_index(select_index(select_index(naive.key_states,
                                                                             0, 0), 0, 1), 0, 2),
                                      0, 0, 8);                                 // (DN,)
            double by_latent = 0, by_keys = 0;
            for (int k = 0; k < kv_lora[b]; k++) {
                by_latent += (double)*at1(ql, k) * *at1(c, k);
            }
            for (int d = 0; d < 8; d++) {
                by_keys += (double)*at1(qn, d) * *at1(kn, d);
            }
            ck_assert_msg(fabs(by_latent - by_keys) < 1e-5 * (1 + fabs(by_keys)),
                          "%s: %.9g against %.9g", what, by_latent, by_keys);
        }
    }
}
END_TEST

// Decoding through the latent cache, the prompt in one call and a token per call: the naive
// form gives the full forward's rows bit for bit (each row by the same loops), the absorbed
// form its own full forward's; the cache holds the full forward's latents and RoPE keys.
START_TEST(test_latent_decode_equals_full_forward) {
    DeepseekV2Config config = small_config(12, 16);
    DeepseekV2Attention mla = mla_for(20, &config);
    const int N = 6;
    const Tensor *x = randn(shape3(2, N, 32));                                 // (B, N, C)
    MLASteps full;
    const Tensor *out = DeepseekV2Attention_forward(&full, &mla, x, 0, NULL);
    const Tensor *out_absorbed = DeepseekV2Attention_forward_absorbed(NULL, &mla, x, 0, NULL);
    for (int P = 1; P <= N; P++) {
        for (int form = 0; form < 2; form++) {
            LatentCache cache = LatentCache_init(2, N, 16, 4);
            Tensor *rows = zeros(x->shape);
            decode_mla(rows, &mla, x, P, &cache, form == 1);
            assert_bitwise_equal(rows, form == 0 ? out : out_absorbed,
                                 path_join("prompt %d, %s", P, form == 0 ? "naive" : "absorbed"));
            ck_assert_int_eq(cache.length, N);
            assert_bitwise_equal(cache.compressed_kv, full.compressed_kv, "the cached latents");
            assert_bitwise_equal(cache.k_pe, full.k_pe, "the cached k_pe");
        }
    }
}
END_TEST

// DeepSeek-V2's RoPE: pair i is (2i, 2i + 1) of the input and lands at (i, i + DR/2); position
// 0 only reorders; every position keeps each pair's length; and q . k depends on the distance.
START_TEST(test_rope_deepseek) {
    const Tensor *inv_freq = rope_inv_freq(8, 10000);
    manual_seed(30);
    const Tensor *x = randn(shape4(1, 1, 1, 8)), *y = randn(shape4(1, 1, 1, 8));
    Tensor *cos, *sin;
    rope_cos_sin(&cos, &sin, inv_freq, 0, 1);
    const Tensor *at0 = rope_deepseek(x, cos, sin);
    for (int i = 0; i < 4; i++) {
        ck_assert(*at4(at0, 0, 0, 0, i) == *at4(x, 0, 0, 0, 2 * i));
        ck_assert(*at4(at0, 0, 0, 0, i + 4) == *at4(x, 0, 0, 0, 2 * i + 1));
    }
    float scores[3];
    const int m[3] = {5, 105, 1005};
    for (int k = 0; k < 3; k++) {
        Tensor *cq, *sq, *ck, *sk;
        rope_cos_sin(&cq, &sq, inv_freq, m[k], 1);
        rope_cos_sin(&ck, &sk, inv_freq, m[k] - 3, 1);
        const Tensor *q = rope_deepseek(x, cq, sq), *key = rope_deepseek(y, ck, sk);
        double dot = 0;
        for (int d = 0; d < 8; d++) {
            dot += (double)*at4(q, 0, 0, 0, d) * *at4(key, 0, 0, 0, d);
        }
        scores[k] = (float)dot;
        for (int i = 0; i < 4; i++) {
            double before = hypot(*at4(x, 0, 0, 0, 2 * i), *at4(x, 0, 0, 0, 2 * i + 1));
            double after = hypot(*at4(q, 0, 0, 0, i), *at4(q, 0, 0, 0, i + 4));
            ck_assert(fabs(before - after) < 1e-6 * (1 + before));
        }
    }
    ck_assert_msg(fabsf(scores[1] - scores[0]) < 1e-5f && fabsf(scores[2] - scores[0]) < 2e-5f,
                  "%.7f %.7f %.7f", (double)scores[0], (double)scores[1], (double)scores[2]);
}
END_TEST

// The softmax scale is q_head_dim ** -0.5 as a float: 24 ** -0.5 for the defaults.
START_TEST(test_softmax_scale) {
    DeepseekV2Config config = small_config(12, 16);
    DeepseekV2Attention mla = mla_for(21, &config);
    ck_assert(mla.softmax_scale == (float)(1.0 / sqrt(12.0)));
    ck_assert(mla.q_head_dim == 12);
}
END_TEST

// RMSNorm of a split's part (rows apart in memory) equals RMSNorm of its contiguous copy, bit
// for bit, and a row [3, 4] by hand: [3, 4] / sqrt(12.5 + 1e-6).
START_TEST(test_rms_norm_of_a_part) {
    RMSNorm norm = rms_norm_init("norm.weight", 5, 1e-6);
    manual_seed(22);
    const Tensor *both = randn(shape3(2, 3, 8));
    const Tensor *part_of = narrow(both, 2, 0, 5);                            // (2, 3, 5)
    assert_bitwise_equal(rms_norm_forward(&norm, part_of),
                         rms_norm_forward(&norm, contiguous(part_of)), "a part and its copy");
    RMSNorm two = rms_norm_init("two.weight", 2, 1e-6);
    const Tensor *y = rms_norm_forward(&two, tensor_from(shape1(2), (const float[]){3, 4}));
    double r = 1.0 / sqrt(12.5 + 1e-6);
    ck_assert(fabs(y->data[0] - 3 * r) < 1e-6 && fabs(y->data[1] - 4 * r) < 1e-6);
}
END_TEST

// --- the paged cache ----------------------------------------------------------------------------

// Each sequence's keys and values as a contiguous cache would hold them, to compare with.
typedef struct {
    ContiguousCache reference;
    BlockTable table;
    bool live;
} Sequence;

// The pool's bookkeeping is consistent: every block is held by as many tables as its count
// says, the free list holds exactly the blocks no table holds, once each; each table has
// just the blocks its tokens need; and every live sequence reads back, through its table, the
// keys and values it appended.
static void check_invariants(const BlockPool *pool, const Sequence *seqs, int n, int step) {
    int *held = arena_alloc((size_t)pool->num_blocks, sizeof(int));
    int *free_seen = arena_alloc((size_t)pool->num_blocks, sizeof(int));
    for (int i = 0; i < n; i++) {
        const BlockTable *t = &seqs[i].table;
        if (!seqs[i].live) {
            continue;
        }
        ck_assert_msg(t->n_blocks == (t->length + pool->block_size - 1) / pool->block_size,
                      "step %d: seq %d has %d blocks for %d tokens", step, i, t->n_blocks,
                      t->length);
        for (int j = 0; j < t->n_blocks; j++) {
            held[t->blocks[j]] += 1;
        }
        int KV = pool->KV, D = pool->D;
        for (int s = 0; s < t->length; s++) {
            int block = t->blocks[s / pool->block_size], slot = s % pool->block_size;
            ck_assert_msg(memcmp(at4(pool->key, block, slot, 0, 0),
                                 at3(seqs[i].reference.key, s, 0, 0),
                                 (size_t)KV * D * sizeof(float)) == 0 &&
                          memcmp(at4(pool->value, block, slot, 0, 0),
                                 at3(seqs[i].reference.value, s, 0, 0),
                                 (size_t)KV * D * sizeof(float)) == 0,
                          "step %d: seq %d reads another token at %d", step, i, s);
        }
    }
    for (int f = 0; f < pool->n_free; f++) {
        int block = pool->free_list[f];
        ck_assert_msg(free_seen[block] == 0, "step %d: block %d is twice on the free list", step,
                      block);
        free_seen[block] = 1;
    }
    for (int b = 0; b < pool->num_blocks; b++) {
        ck_assert_msg(held[b] == pool->ref_count[b], "step %d: block %d held by %d tables, "
                      "counted %d", step, b, held[b], pool->ref_count[b]);
        ck_assert_msg(free_seen[b] == (held[b] == 0), "step %d: block %d: held %d, %s the free "
                      "list", step, b, held[b], free_seen[b] ? "on" : "not on");
    }
}

// Random appends (1 to 5 tokens), forks and frees on 12 sequences sharing a pool, checked
// after every step; no block lost or held twice; then every block back on the free list.
START_TEST(test_block_table_invariants) {
    const int block_sizes[3] = {1, 3, 4};
    for (int k = 0; k < 3; k++) {
        int BT = block_sizes[k], KV = 2, D = 3, n = 12, longest = 64;
        int per_seq = (longest + BT - 1) / BT;
        BlockPool pool = BlockPool_init(n * per_seq, BT, KV, D);
        Sequence seqs[12];
        for (int i = 0; i < n; i++) {
            seqs[i] = (Sequence){ContiguousCache_init(longest, KV, D), BlockTable_init(per_seq),
                                 false};
        }
        seqs[0].live = true;
        manual_seed(40 + (uint64_t)k);
        int appended = 0, forks = 0, frees = 0;
        for (int step = 0; step < 600; step++) {
            int i = (int)(random32() % (uint32_t)n), what = (int)(random32() % 10);
            while (!seqs[i].live) {   // a live one (sequence 0 never ends)
                i = (i + 1) % n;
            }
            Sequence *s = &seqs[i];
            if (what < 6) {
                int T = 1 + (int)(random32() % 5);
                if (s->table.length + T > longest) {
                    continue;
                }
                const Tensor *key = randn(shape3(T, KV, D)), *value = randn(shape3(T, KV, D));
                paged_append(&pool, &s->table, key, value);
                contiguous_append(&s->reference, key, value);
                appended += T;
            } else if (what < 8) {
                int j = 0;
                while (j < n && seqs[j].live) {
                    j++;
                }
                if (j == n) {
                    continue;
                }
                seqs[j].table = paged_fork(&pool, &s->table, per_seq);
                seqs[j].reference = ContiguousCache_init(longest, KV, D);
                contiguous_append(&seqs[j].reference, narrow(s->reference.key, 0, 0,
                                                             s->reference.length),
                                  narrow(s->reference.value, 0, 0, s->reference.length));
                seqs[j].live = true;
                forks += 1;
            } else if (i > 0) {
                paged_free(&pool, &s->table);
                s->live = false;
                frees += 1;
            }
            check_invariants(&pool, seqs, n, step);
        }
        ck_assert_msg(appended > 100 && forks > 5 && frees > 5, "%d tokens appended, %d forks, "
                      "%d frees", appended, forks, frees);
        ck_assert_msg(BT == 1 || pool.copies > 0, "block size %d: no copy on write", BT);
        for (int i = 0; i < n; i++) {
            if (seqs[i].live) {
                paged_free(&pool, &seqs[i].table);
                seqs[i].live = false;
            }
        }
        check_invariants(&pool, seqs, n, 600);
        ck_assert_int_eq(pool.n_free, pool.num_blocks);
    }
}
END_TEST

// By hand, blocks of 4: a prompt of 6 takes blocks 0 and 1 (2 of 4 used); a fork shares both
// (counts 2); the fork's next token copies block 1 to block 2 (its 2 tokens, then the new
// one), the parent's block 1 unchanged; the parent's next token goes into block 1 in place
// (its count is 1 again). Freeing the fork returns block 2 first (the last block is reused
// first), then block 0 stays held by the parent.
START_TEST(test_copy_on_write_by_hand) {
    BlockPool pool = BlockPool_init(4, 4, 1, 2);
    BlockTable parent = BlockTable_init(3);
    paged_append(&pool, &parent, arange(shape3(6, 1, 2)), arange(shape3(6, 1, 2)));
    ck_assert(parent.n_blocks == 2 && parent.blocks[0] == 0 && parent.blocks[1] == 1);
    BlockTable child = paged_fork(&pool, &parent, 3);
    ck_assert(pool.ref_count[0] == 2 && pool.ref_count[1] == 2 && child.length == 6);
    paged_append(&pool, &child, full(shape3(1, 1, 2), 100), full(shape3(1, 1, 2), 100));
    ck_assert(child.blocks[1] == 2 && pool.ref_count[1] == 1 && pool.ref_count[2] == 1);
    ck_assert_int_eq(pool.copies, 1);
    ck_assert(*at4(pool.key, 2, 0, 0, 0) == 8 && *at4(pool.key, 2, 1, 0, 1) == 11);   // copied
    ck_assert(*at4(pool.key, 2, 2, 0, 0) == 100 && *at4(pool.key, 1, 2, 0, 0) == 0);
    paged_append(&pool, &parent, full(shape3(1, 1, 2), -1), full(shape3(1, 1, 2), -1));
    ck_assert(parent.blocks[1] == 1 && *at4(pool.key, 1, 2, 0, 0) == -1 && pool.copies == 1);
    paged_free(&pool, &child);
    ck_assert(pool.ref_count[2] == 0 && pool.ref_count[0] == 1 && pool.n_free == 2);
    ck_assert_int_eq(pool.free_list[pool.n_free - 1], 2);
    BlockTable next = BlockTable_init(3);
    paged_append(&pool, &next, zeros(shape3(1, 1, 2)), zeros(shape3(1, 1, 2)));
    ck_assert_int_eq(next.blocks[0], 2);
}
END_TEST

// Sequences sharing a prompt, decoded through the paged cache, give the contiguous cache's
// rows bit for bit, for blocks of 1, 5, 16 and 64 tokens, 3 sequences; and the lesson's
// part 4 prints 0 for it.
START_TEST(test_paged_equals_contiguous) {
    const int blocks[4] = {1, 5, 16, 64}, S = 3, P = 7, NEW = 6, N = P + NEW;
    manual_seed(50);
    GQAttention gqa = GQAttention_init(32, 4, 2, 10000);
    const Tensor *prompt = randn(shape2(P, 32)), *tokens = randn(shape3(S, NEW, 32));
    for (int k = 0; k < 4; k++) {
        int per_seq = (N + blocks[k] - 1) / blocks[k];
        BlockPool pool = BlockPool_init(S * per_seq, blocks[k], 2, 8);
        BlockTable tables[3] = {BlockTable_init(per_seq)};
        const Tensor *prefill = paged_call(&pool, &tables[0], &gqa, prompt, 0);
        for (int i = 1; i < S; i++) {
            tables[i] = paged_fork(&pool, &tables[0], per_seq);
        }
        for (int i = 0; i < S; i++) {
            ContiguousCache cache = ContiguousCache_init(N, 2, 8);
            assert_bitwise_equal(contiguous_call(&cache, &gqa, prompt, 0), prefill, "prefill");
            for (int t = 0; t < NEW - i; t++) {
                const Tensor *x = narrow(select_index(tokens, 0, i), 0, t, 1);
                assert_bitwise_equal(paged_call(&pool, &tables[i], &gqa, x, P + t),
                                     contiguous_call(&cache, &gqa, x, P + t),
                                     path_join("blocks of %d, seq %d, token %d", blocks[k], i,
                                               P + t));
            }
        }
    }
    RunResult r = run_program(lesson_binary(LESSON_DIR), (const char *const[]){"--block", "3",
                                                                              "--seqs", "5",
                                                                              NULL});
    ck_assert_int_eq(r.status, 0);
    ck_assert(strstr(r.out, "max |paged - contiguous| = 0\n") != NULL);
    ck_assert(strstr(r.out, "(copy on write)") != NULL);
}
END_TEST

// --- the int8 cache -----------------------------------------------------------------------------

// The round trip: each number comes back within half a step of its scale; the largest in
// magnitude exactly (+-127 steps); a row of zeros as zeros; every byte within [-127, 127].
START_TEST(test_int8_round_trip) {
    manual_seed(60);
    for (int k = 0; k < 50; k++) {
        int n = 1 + k % 17;
        Tensor *x = randn(shape1(n));
        for (int j = 0; j < n; j++) {
            x->data[j] *= (float)pow(10.0, k % 7 - 3);
        }
        int8_t q[17];
        float scale = quantize_row(q, x->data, n, 1), largest = 0;
        int at = 0;
        for (int j = 0; j < n; j++) {
            ck_assert(q[j] >= -127 && q[j] <= 127);
            ck_assert_msg(fabsf(x->data[j] - q[j] * scale) <= scale * 0.5f * (1 + 1e-5f),
                          "row %d, %d: %g against %d * %g", k, j, (double)x->data[j], q[j],
                          (double)scale);
            if (fabsf(x->data[j]) > largest) {
                largest = fabsf(x->data[j]);
                at = j;
            }
        }
        ck_assert(abs(q[at]) == 127 && scale == largest / 127.0f);
    }
    float zero[4] = {0};
    int8_t q[4] = {1, 1, 1, 1};
    ck_assert(quantize_row(q, zero, 4, 1) == 0.0f && q[0] == 0 && q[3] == 0);
    // Strided: a column of a (3, 4) matrix, as the per-channel scales take it.
    const float m[12] = {1, 0, 0, 0, -2, 0, 0, 0, 0.5f, 0, 0, 0};
    int8_t qm[12] = {0};
    ck_assert(quantize_row(qm, m, 3, 4) == 2.0f / 127.0f);
    ck_assert(qm[0] == 64 && qm[4] == -127 && qm[8] == 32);   // 63.5 -> 64, 31.75 -> 32
}
END_TEST

// The per-channel keys: after each append, the tokens of full groups read back within half a
// step of their channel's scale over their group, the group still filling exactly; the values
// within half a step of their token's scale.
START_TEST(test_int8_per_channel_groups) {
    int KV = 2, D = 4, G = 5, L = 13;
    Int8Cache cache = Int8Cache_init(L, KV, D, PER_CHANNEL, G);
    manual_seed(61);
    const Tensor *keys = randn(shape3(L, KV, D)), *values = randn(shape3(L, KV, D));
    float k[4], v[4];
    for (int t = 0; t < L; t++) {
        int8_append(&cache, narrow(keys, 0, t, 1), narrow(values, 0, t, 1));
        for (int s = 0; s <= t; s++) {
            for (int g = 0; g < KV; g++) {
                int8_read(k, v, &cache, s, g);
                bool full = s < (t + 1) / G * G;
                for (int d = 0; d < D; d++) {
                    float largest = 0;   // the channel over the group
                    for (int r = s / G * G; r < s / G * G + G && r < L; r++) {
                        largest = fmaxf(largest, fabsf(*at3(keys, r, g, d)));
                    }
                    float want = *at3(keys, s, g, d), step = largest / 127.0f;
                    ck_assert_msg(full ? fabsf(k[d] - want) <= step * 0.5f * (1 + 1e-5f)
                                       : k[d] == want, "t %d, s %d, g %d, d %d: %g against %g",
                                  t, s, g, d, (double)k[d], (double)want);
                }
            }
        }
    }
}
END_TEST

// With an outlier channel in the keys, a scale per token loses more than a scale per channel
// (KIVI's argument), in the outputs and in the weights; without one the two are alike; and
// every int8 cache's output stays within a few percent of the float cache's.
START_TEST(test_int8_per_channel_beats_per_token_with_an_outlier) {
    Flags f = {1, 20, 16, 1, 16, 64, 4, 2, 10000, 48, 32, 16, 8, 16, 30.0, 64, false};
    Run run = run_of(f);
    manual_seed(62);
    run.hidden_states = randn(shape3(1, run.N, run.C));
    run.gqa = GQAttention_init(run.C, run.H, run.KV, 10000);
    run.continuations = randn(shape3(1, 16, run.C));
    const double factors[2] = {1.0, 30.0};
    for (int i = 0; i < 2; i++) {
        GQAttention gqa = with_outlier(&run.gqa, factors[i]);
        int N0 = run.N;
        Tensor *base = zeros(shape2(N0, run.C)), *w_base = zeros(shape3(run.H, 1, N0));
        decode_seq0(base, w_base, &run, &gqa, NULL);
        float out_err[2], w_err[2];
        for (int k = 0; k < 2; k++) {
            Int8Cache cache = Int8Cache_init(N0, run.KV, run.D, k == 0 ? PER_TOKEN : PER_CHANNEL,
                                             16);
            Tensor *out = zeros(shape2(N0, run.C)), *w = zeros(shape3(run.H, 1, N0));
            decode_seq0(out, w, &run, &gqa, &cache);
            out_err[k] = max_abs_diff(out, base);
            w_err[k] = max_abs_diff(w, w_base);
            ck_assert(out_err[k] > 0 && out_err[k] < 0.05f);
        }
        if (factors[i] > 1) {
            ck_assert_msg(out_err[1] < out_err[0] / 2 && w_err[1] < w_err[0] / 2,
                          "outlier %g: per channel %g %g, per token %g %g", factors[i],
                          (double)out_err[1], (double)w_err[1], (double)out_err[0],
                          (double)w_err[0]);
        } else {
            ck_assert_msg(out_err[1] < 3 * out_err[0] && out_err[0] < 3 * out_err[1],
                          "no outlier: per channel %g, per token %g", (double)out_err[1],
                          (double)out_err[0]);
        }
    }
}
END_TEST

// --- the table and the bench --------------------------------------------------------------------

// The published configs' arithmetic, by hand: Llama 3 8B keeps 2 * 8 * 128 * 2 bytes a token
// and layer, 128 KiB a token over 32 layers, 16 GiB at 128k tokens (the figure);
// DeepSeek-V2's latent 576 numbers against 128 * 320 decompressed.
START_TEST(test_model_table) {
    RunResult r = run_program(lesson_binary(LESSON_DIR), (const char *const[]){NULL});
    ck_assert_int_eq(r.status, 0);
    const char *text = r.out;
    ck_assert(strstr(text, "Llama 3 8B                 GQA, 8 kv heads of 128       32         4096"
                           "   128.0 KiB    4.00 GiB") != NULL);
    ck_assert(strstr(text, "DeepSeek-V2                MLA, 512 + 64                60"
                           "         1152") != NULL);
    ck_assert(strstr(text, "Llama 2 7B                 MHA, 32 kv heads of 128      32        16384"
                           "   512.0 KiB   16.00 GiB") != NULL);
    ck_assert(strstr(text, "Mistral 7B v0.1            GQA 8, window 4096           32         4096"
                           "   128.0 KiB    0.50 GiB") != NULL);
    ck_assert(128.0 * 1024 * 131072 == 16.0 * 1073741824);   // 128 KiB a token, 128k: 16 GiB
}
END_TEST

// The bench's kernels compute attention: against plain double loops at 37 cached tokens, each
// kind, with the scalar kernels and, where this CPU has them, the AVX2 ones.
static void reference_step(double *out, const float *query, const BenchCache *c, const Kind *k,
                           int L, int read) {
    int first_token = L - read, heads = HEADS, width = LATENT + ROPE_DIM;
    int D = k->storage == LATENT_KV ? LATENT : HEAD_DIM;
    double *w = calloc((size_t)read, sizeof(double));
    for (int h = 0; h < heads; h++) {
        int g = k->storage == LATENT_KV ? 0 : h / (HEADS / k->kv_heads);
        double largest = -INFINITY, sum = 0;
        for (int s = 0; s < read; s++) {
            int t = first_token + s;
            double dot = 0;
            if (k->storage == LATENT_KV) {
                for (int d = 0; d < width; d++) {   // the absorbed query, then q_pe
                    dot += (double)query[h * width + d] * c->latent[(long)t * width + d];
                }
                dot /= sqrt(HEAD_DIM + ROPE_DIM);
            } else {
                long at = ((long)t * k->kv_heads + g) * HEAD_DIM;
                for (int d = 0; d < HEAD_DIM; d++) {
                    double scale = k->storage == INT8_KV ? c->key_scale[t * k->kv_heads + g] : 1;
                    double key = k->storage == FLOAT_KV ? c->key[at + d] : c->key_q[at + d] * scale;
                    dot += (double)query[h * HEAD_DIM + d] * key;
                }
                dot /= sqrt(HEAD_DIM);
            }
            w[s] = dot;
            largest = fmax(largest, dot);
        }
        for (int s = 0; s < read; s++) {
            w[s] = exp(w[s] - largest);
            sum += w[s];
        }
        for (int d = 0; d < D; d++) {
            double acc = 0;
            for (int s = 0; s < read; s++) {
                int t = first_token + s;
                double v;
                if (k->storage == LATENT_KV) {
                    v = c->latent[(long)t * width + d];
                } else {
                    long at = ((long)t * k->kv_heads + g) * HEAD_DIM + d;
                    double scale = k->storage == INT8_KV ? c->value_scale[t * k->kv_heads + g] : 1;
                    v = k->storage == FLOAT_KV ? c->value[at] : c->value_q[at] * scale;
                }
                acc += w[s] / sum * v;
            }
            out[h * D + d] = acc;
        }
    }
    free(w);
}

START_TEST(test_bench_kernels) {
    const int L = 137;   // two blocks of 64 and 9 more
    float *query = arena_alloc((size_t)HEADS * (LATENT + ROPE_DIM), sizeof(float));
    uint64_t state = 3;
    for (int j = 0; j < HEADS * (LATENT + ROPE_DIM); j++) {
        query[j] = filler(&state) * 0.1f;
    }
    float *out = arena_alloc((size_t)HEADS * LATENT, sizeof(float));
    float *scores = arena_alloc((size_t)HEADS * L, sizeof(float));
    double *want = arena_alloc((size_t)HEADS * LATENT, sizeof(double));
    int sets = 1;
#ifdef HAVE_VECTOR_KERNELS
    sets = cpu_runs("avx2") ? 2 : 1;
#endif
    if (sets == 1) {
        note_skipped("no AVX2 kernels here: the scalar ones alone are checked");
    }
    for (int i = 0; i < KINDS; i++) {
        const Kind *k = &KINDS_TIMED[i];
        BenchCache c = make_cache(k, L);
        int read = tokens_read(k, L), D = k->storage == LATENT_KV ? LATENT : HEAD_DIM;
        reference_step(want, query, &c, k, L, read);
        for (int set = 0; set < sets; set++) {
            decode_step(out, scores, query, &c, k, L, read, set == 1);
            for (int j = 0; j < HEADS * D; j++) {
                ck_assert_msg(fabs(out[j] - want[j]) < 1e-5 + 1e-4 * fabs(want[j]),
                              "%s, %s kernels, [%d]: %.9g against %.9g", k->tag,
                              set == 1 ? "avx2" : "scalar", j, (double)out[j], want[j]);
            }
        }
    }
}
END_TEST

// --bench at a small context runs and prints a line per kind; other flags are refused.
START_TEST(test_bench_runs) {
    RunResult r = run_program(lesson_binary(LESSON_DIR),
                              (const char *const[]){"--bench", "--context", "64", NULL});
    ck_assert_msg(r.status == 0 && r.err[0] == '\0', "exit %d: %s", r.status, r.err);
    const char *tags[KINDS] = {"mha", "gqa", "mqa", "window", "int8", "mla"};
    for (int i = 0; i < KINDS; i++) {
        ck_assert_msg(strstr(r.out, path_join("bench kind=%s context=64 ", tags[i])) != NULL,
                      "no bench line for %s", tags[i]);
    }
    ck_assert(strstr(r.out, "- the load: ") != NULL);
}
END_TEST

// Part 7 of a run times each kind (here at a small context) and prints a line for each, after
// the plan's table; with ATTN_NO_TIMING set (as every other test runs) one line says they are
// left out, and the rest of the output is the same.
START_TEST(test_part7_timed_unless_asked_not_to) {
    const char *const args[] = {"--context", "64", NULL};
    RunResult untimed = run_program(lesson_binary(LESSON_DIR), args);
    unsetenv("ATTN_NO_TIMING");
    RunResult timed = run_program(lesson_binary(LESSON_DIR), args);
    setenv("ATTN_NO_TIMING", "1", 1);
    ck_assert_msg(timed.status == 0 && timed.err[0] == '\0', "exit %d: %s", timed.status,
                  timed.err);
    ck_assert_int_eq(untimed.status, 0);
    const char *left_out = strstr(untimed.out, "timed here: left out, as ATTN_NO_TIMING asks");
    const char *times = strstr(timed.out, "timed here, one thread, ");
    ck_assert_msg(left_out != NULL && times != NULL, "no line 'timed here' in a run");
    ck_assert_msg(left_out - untimed.out == times - timed.out &&
                  strncmp(untimed.out, timed.out, (size_t)(times - timed.out)) == 0,
                  "the runs differ before part 7's times");
    const char *names[KINDS] = {"MHA, 32 key/value heads", "GQA, 8 key/value heads",
                                "MQA, 1 key/value head", "GQA 8, a window of 1/4",
                                "GQA 8, int8, scales per token", "MLA, latent 512 + rope 64"};
    const char *at = strstr(times, "best ms");
    ck_assert_ptr_nonnull(at);
    for (int i = 0; i < KINDS; i++) {
        at = strstr(at, names[i]);
        ck_assert_msg(at != NULL, "no timed line for %s", names[i]);
        double bytes, mib, ms, tokens_per_s, gb_per_s;
        ck_assert_int_eq(sscanf(at + strlen(names[i]), "%lf %lf %lf %lf %lf", &bytes, &mib, &ms,
                                &tokens_per_s, &gb_per_s), 5);
        // tokens/s is 1000 / ms, GB/s the bytes read (64 tokens, the window 16) per second,
        // to the digits printed (ms has 3 decimals, GB/s 2)
        double read = bytes * (i == 3 ? 16 : 64);
        double ms_rounding = 1e3 * 0.0005 / (ms * (ms - 0.0005));   // 1e3 / ms, ms +- 0.0005
        ck_assert_msg(ms > 0.0005 && fabs(tokens_per_s - 1e3 / ms) <= ms_rounding + 0.05 &&
                      fabs(gb_per_s - read * tokens_per_s / 1e9) <= 0.005 + 0.001 * gb_per_s,
                      "%s: %g ms, %g tokens/s, %g GB/s of %g bytes disagree", names[i], ms,
                      tokens_per_s, gb_per_s, read);
        ck_assert(mib >= 0);
    }
}
END_TEST

// --- flags, the budget and the diagram ----------------------------------------------------------

START_TEST(test_bad_flags) {
    static const BadFlags cases[] = {
        {{"--block", "0", NULL}, "--block"},
        {{"--kv-lora-rank", "128", NULL}, "--kv-lora-rank 128 is larger than --dim 64"},
        {{"--q-lora-rank", "65", NULL}, "--q-lora-rank 65 is larger than --dim 64"},
        {{"--qk-rope-head-dim", "7", NULL}, "--qk-rope-head-dim 7 is odd"},
        {{"--heads", "3", NULL}, "--heads 3 does not divide --dim 64"},
        {{"--kv-heads", "3", NULL}, "--kv-heads 3 does not divide --heads 4"},
        {{"--dim", "12", "--heads", "4", NULL}, "head_dim 3 is odd"},
        {{"--seqs", "0", NULL}, "--seqs"},
        {{"--new", "-1", NULL}, "--new"},
        {{"--outlier", "0.5", NULL}, "--outlier"},
        {{"--context", "0", NULL}, "--context"},
        {{"--bench", "--dim", "8", NULL}, "--dim: --bench times sizes of its own"},
        {{"--q-lora-rank", "-1", NULL}, "--q-lora-rank"},
        {{"--prompt", "60000", "--heads", "32", "--dim", "64", NULL}, "attn_weights"},
    };
    check_bad_flags(LESSON_DIR, "lesson-19", cases, sizeof cases / sizeof cases[0]);
}
END_TEST

// --- what a run may take (common/lesson/budget.h; harness.h: add_budget_tests) -----------

// Refused by the budget before anything runs, in one line that names the flags that made it
// big: a prompt's scores and caches, and the bench's cached context.
static const BudgetRefusal REFUSED[] = {
    {{"--prompt", "3000", NULL},
     "lesson-19: --prompt 3000 would hold about 611 MiB at once, more than the 512 MiB "
     "allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=620", NULL},
    {{"--bench", "--context", "200000", NULL},
     "lesson-19: --context 200000 would hold about 10.2 GiB at once, more than the 512 MiB "
     "allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=11000", NULL},
};

// Sizes where the tensors that grow with the flags are most of what a run holds: what it
// holds is its prediction (make test runs the first, make test-long all).
static const SizedRun SIZED[] = {
    {{"--prompt", "300", "--new", "20", "--heads", "8", NULL}},
    {{"--batch", "4", "--prompt", "100", "--new", "10", "--dim", "256", "--heads", "8",
      "--kv-lora-rank", "128", "--q-lora-rank", "128", "--dump", "", NULL}},
    {{"--seqs", "48", "--prompt", "200", "--new", "60", "--block", "4", NULL}},
    {{"--prompt", "30", "--new", "330", "--seqs", "2", "--outlier", "3", NULL}},
};

// The page's runs: the defaults and the bench.
static const AdmittedRun ADMITTED[] = {
    {{NULL}, false},
    {{"--bench", NULL}, false},
};

static const LessonBudget BUDGET = {
    LESSON_DIR, lesson_main, REFUSED, sizeof REFUSED / sizeof REFUSED[0], SIZED,
    sizeof SIZED / sizeof SIZED[0], ADMITTED, sizeof ADMITTED / sizeof ADMITTED[0],
};

START_TEST(test_help_and_graph) {
    RunResult r = run_program(lesson_binary(LESSON_DIR), (const char *const[]){"--help", NULL});
    ck_assert_int_eq(r.status, 0);
    const char *flags[] = {"--kv-lora-rank", "--q-lora-rank", "--qk-rope-head-dim", "--block",
                           "--seqs", "--outlier", "--context", "--bench"};
    for (int i = 0; i < 8; i++) {
        ck_assert_msg(strstr(r.out, flags[i]) != NULL, "--help does not list %s", flags[i]);
    }
    int nodes;
    const char *graph = lesson_graph(LESSON_DIR, NULL, &nodes);
    ck_assert_msg(nodes <= 45, "%d nodes", nodes);
    ck_assert(strstr(graph, "apply_rotary_pos_emb") != NULL &&
              strstr(graph, "kv_a_layernorm") != NULL && strstr(graph, "paged cache") != NULL);
}
END_TEST

// Every line of every run fits 100 columns.
START_TEST(test_lines_fit_100_columns) {
    const char *const runs[4][20] = {
        {NULL},
        {"--dim", "128", "--heads", "16", "--kv-lora-rank", "128", "--q-lora-rank", "0",
         "--prompt", "100", "--new", "30", "--seqs", "9", "--block", "1", NULL},
        {"--new", "0", "--seqs", "1", "--prompt", "1", NULL},
        {"--bench", "--context", "32", NULL},
    };
    for (int i = 0; i < 4; i++) {
        RunResult r = run_program(lesson_binary(LESSON_DIR), runs[i]);
        ck_assert_int_eq(r.status, 0);
        const char *cursor = r.out;
        for (const char *line = next_line(&cursor); line != NULL; line = next_line(&cursor)) {
            ck_assert_msg(strlen(line) <= 100 || strncmp(line, "bench ", 6) == 0,
                          "run %d: %zu columns: %s", i, strlen(line), line);   // bench lines: whole
        }
    }
}
END_TEST

static Suite *lesson19_suite(void) {
    Suite *suite = suite_create("lesson19");
    TCase *pytorch = new_tcase("pytorch");
    tcase_add_loop_test(pytorch, test_matches_pytorch, 0, recorded_case_count(REF_DIR));
    suite_add_tcase(suite, pytorch);
    TCase *mla = new_tcase("mla");
    tcase_add_test(mla, test_absorb_by_hand);
    tcase_add_test(mla, test_absorbed_equals_naive);
    tcase_add_test(mla, test_latent_decode_equals_full_forward);
    tcase_add_test(mla, test_rope_deepseek);
    tcase_add_test(mla, test_softmax_scale);
    tcase_add_test(mla, test_rms_norm_of_a_part);
    suite_add_tcase(suite, mla);
    TCase *paged = new_tcase("paged");
    tcase_add_test(paged, test_block_table_invariants);
    tcase_add_test(paged, test_copy_on_write_by_hand);
    tcase_add_test(paged, test_paged_equals_contiguous);
    suite_add_tcase(suite, paged);
    TCase *int8 = new_tcase("int8");
    tcase_add_test(int8, test_int8_round_trip);
    tcase_add_test(int8, test_int8_per_channel_groups);
    tcase_add_test(int8, test_int8_per_channel_beats_per_token_with_an_outlier);
    suite_add_tcase(suite, int8);
    TCase *table = new_tcase("table and bench");
    tcase_add_test(table, test_model_table);
    tcase_add_test(table, test_bench_kernels);
    tcase_add_test(table, test_bench_runs);
    tcase_add_test(table, test_part7_timed_unless_asked_not_to);
    suite_add_tcase(suite, table);
    TCase *flags = new_tcase("flags");
    tcase_add_test(flags, test_bad_flags);
    tcase_add_test(flags, test_help_and_graph);
    tcase_add_test(flags, test_lines_fit_100_columns);
    suite_add_tcase(suite, flags);
    add_budget_tests(suite, &BUDGET);
    return suite;
}

int main(void) { return run_suite(lesson19_suite()); }
