#!/usr/bin/env python3
"""gen_lesson10.py - record PyTorch's numbers for lesson 10 (kv-cache).

Run with the PyTorch 1.13 the lessons are checked against:

    /usr/bin/python3 tests/reference/gen_lesson10.py

For each case below it does exactly the draws of lessons/10-kv-cache after
torch.manual_seed(seed) and writes tests/data/lesson10/<case>/:
  <name>.npy   every name the lesson's --dump writes, '<f4': the parameters,
               x, full_out, cached_out, k_cache and v_cache (the final caches,
               (batch, prompt + new, kv_heads, head_dim))
  stdout.txt   the lines this script prints, which the lesson must print in
               the same order, except the lines with "max |": those are
               differences of float rounding, which depend on the order in
               which each implementation adds (PyTorch's are about 1e-7, the
               lesson's often 0), so they are printed but not recorded.
GQA_W_KVcache is the GQA notebook's last cell with its three bugs fixed (see FIX below).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from reference import drop_rounding_lines, listed_by_values, record_cases, save_all, stdout_txt

# case directory -> (seed, batch, prompt, new, dim, heads, kv_heads); the lesson's
# defaults are seed0's
NAMES = ("seed", "batch", "prompt", "new", "dim", "heads", "kv_heads")
CASES = {
    "seed0": (0, 1, 4, 4, 512, 8, 2),        # the notebook's sizes
    "seed7": (7, 2, 3, 3, 32, 4, 2),         # batch 2
    "seed3_tiny": (3, 1, 2, 1, 4, 2, 1),     # x has 12 elements (< 16: the other randn path); MQA
    "seed5_mha": (5, 2, 1, 4, 16, 4, 4),     # prompt of 1 token; kv_heads = heads
}


class GQA_W_KVcache(nn.Module):
    def __init__(self, dim, num_heads, num_groups=None):
        super().__init__()        # FIX 1: the notebook's super(GQA, self) raises TypeError
        assert dim % num_heads == 0, "dim must be divisible by num_heads"
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.num_groups = num_groups if num_groups else num_heads
        assert self.num_heads % self.num_groups == 0, "num_heads must be divisible by num_groups"
        self.w_query = nn.Linear(dim, dim)
        self.w_key = nn.Linear(dim, self.num_groups * self.head_dim)
        self.w_value = nn.Linear(dim, self.num_groups * self.head_dim)
        self.o_proj = nn.Linear(dim, dim)
        self.k_cache = None
        self.v_cache = None
        self.use_cache = False

    def forward(self, query, key, value):
        batch_size, seq_len, _ = query.shape
        query = self.w_query(query).view(batch_size, seq_len, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        key = self.w_key(key).view(batch_size, seq_len, self.num_groups, self.head_dim)
        value = self.w_value(value).view(batch_size, seq_len, self.num_groups, self.head_dim)
        cache_len = 0
        if self.use_cache:
            if self.k_cache is not None:
                cache_len = self.k_cache.shape[1]
                key = torch.cat([self.k_cache, key], dim=1)
                value = torch.cat([self.v_cache, value], dim=1)
            self.k_cache = key    # FIX 2: store the grown cache at EVERY call
            self.v_cache = value
        key = key.permute(0, 2, 1, 3)
        value = value.permute(0, 2, 1, 3)
        expand_ratio = self.num_heads // self.num_groups
        key = key.unsqueeze(2).expand(-1, -1, expand_ratio, -1, -1).reshape(batch_size, self.num_heads, -1, self.head_dim)
        value = value.unsqueeze(2).expand(-1, -1, expand_ratio, -1, -1).reshape(batch_size, self.num_heads, -1, self.head_dim)
        scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(self.head_dim)
        # FIX 3: (seq_len, cache_len + seq_len), diagonal moved right by cache_len
        mask = torch.triu(torch.ones(seq_len, cache_len + seq_len), diagonal=1 + cache_len).to(query.device)
        scores = scores.masked_fill(mask == 1, float('-inf'))
        attn = F.softmax(scores, dim=-1)
        attn = F.dropout(attn, p=0.1, training=self.training)
        attn_out = torch.matmul(attn, value)
        attn_out = attn_out.permute(0, 2, 1, 3).reshape(batch_size, seq_len, self.num_heads * self.head_dim)
        return self.o_proj(attn_out)


def step(gqa, x, start, count):
    x_new = x[:, start:start + count]
    return gqa(x_new, x_new, x_new)


def cache_bytes(batch, positions, kv_heads, head_dim):
    return 2.0 * batch * positions * kv_heads * head_dim * 4


def lesson(seed, batch, prompt, new, dim, heads, kv_heads):
    torch.manual_seed(seed)
    N = prompt + new
    print(f"gqa = GQA_W_KVcache({dim}, {heads}, {kv_heads}).eval()   "
          "(the GQA notebook's class, its 3 bugs fixed)")
    gqa = GQA_W_KVcache(dim, heads, kv_heads).eval()
    x = torch.randn(batch, N, dim)
    print("x:", x.shape)
    full_out = step(gqa, x, 0, N)
    print("full_out = gqa(x, x, x), no cache:", full_out.shape)
    print()

    gqa.use_cache = True
    print("gqa.use_cache = True")
    print(f"-- prefill: the {prompt} prompt tokens in one call --")
    outs = [step(gqa, x, 0, prompt)]
    print("out:", outs[0].shape)
    print("k_cache:", gqa.k_cache.shape)
    print(f"  max |out - full_out[:, 0:{prompt}]| = {(outs[0] - full_out[:, :prompt]).abs().max().item():.3g}")
    prompt_k, prompt_v = gqa.k_cache, gqa.v_cache
    print("-- decode: one token per call --")
    for t in range(prompt, N):
        outs.append(step(gqa, x, t, 1))
        print(f"token {t}: out: {outs[-1].shape}, k_cache and v_cache: {gqa.k_cache.shape}")
        print(f"  max |out - full_out[:, {t}]| = {(outs[-1][:, 0] - full_out[:, t]).abs().max().item():.3g}")
    cached_out = torch.cat(outs, dim=1)
    print("cached_out = torch.cat(outs, dim=1):", cached_out.shape)
    print(f"max |cached_out - full_out| = {(cached_out - full_out).abs().max().item():.3g}   (0 or float rounding)")
    print("cached_out[0, :8, :4]:")
    print(cached_out[0, :8, :4])
    print("full_out[0, :8, :4]:")
    print(full_out[0, :8, :4])
    print()
    tensors = dict(gqa.state_dict())
    tensors.update(x=x, full_out=full_out, cached_out=cached_out, k_cache=gqa.k_cache, v_cache=gqa.v_cache)

    # The notebook's cache: the prompt's keys and values, never updated.
    print("-- part 2: the notebook's cache, stored once and never updated (--prompt and --new change it) --")
    for t in range(prompt, N):
        gqa.k_cache, gqa.v_cache = prompt_k, prompt_v
        out = step(gqa, x, t, 1)
        print(f"token {t} sees keys 0..{prompt - 1} and {t}: max |out - full_out[:, {t}]| = "
              f"{(out[:, 0] - full_out[:, t]).abs().max().item():.4f}")
    print()

    print("-- part 3: chunks of 2 new tokens need the mask moved right by the cache (--prompt changes it) --")
    gqa.k_cache = gqa.v_cache = None
    worst = (step(gqa, x, 0, prompt) - full_out[:, :prompt]).abs().max().item()
    for t in range(prompt, N, 2):
        count = min(2, N - t)
        cache_len = gqa.k_cache.shape[1]
        out = step(gqa, x, t, count)
        worst = max(worst, (out - full_out[:, t:t + count]).abs().max().item())
        if t == prompt:
            print(f"tokens {t}..{t + count - 1} after cache_len = {cache_len}: mask = "
                  f"torch.triu(torch.ones({count}, {cache_len + count}), diagonal={1 + cache_len})")
            print(torch.triu(torch.ones(count, cache_len + count), diagonal=1 + cache_len))
            if count > 1:
                print(f"the notebook's mask torch.triu(torch.ones({count}, {count}), diagonal=1) against "
                      f"scores ({batch}, {heads}, {count}, {cache_len + count}):")
                try:
                    torch.zeros(batch, heads, count, cache_len + count).masked_fill(
                        torch.triu(torch.ones(count, count), diagonal=1) == 1, float('-inf'))
                except RuntimeError as error:
                    print(f"RuntimeError:\n  {error}")
    print(f"  max |chunked - full_out| = {worst:.3g}")
    print()

    head_dim = dim // heads
    print("-- part 4: what the cache costs per layer (--kv-heads, --heads and --dim change it) --")
    print("2 (K and V) * batch * positions * kv_heads * head_dim * 4 bytes:")
    for name, kv in (("MHA", heads), ("GQA", kv_heads), ("MQA", 1)):
        print("%s (kv_heads = %d): %6.0f bytes a token, %9.0f for these %d tokens, "
              "%6.2f MiB at 4096 tokens" % (name, kv, cache_bytes(1, 1, kv, head_dim),
                                            cache_bytes(batch, N, kv, head_dim), N,
                                            cache_bytes(batch, 4096, kv, head_dim) / (1024.0 * 1024.0)))
    print("(the cache also grows with the number of layers: a 32-layer model needs 32 of them)")
    print()
    return tensors




def record(directory, seed, batch, prompt, new, dim, heads, kv_heads):
    with stdout_txt(directory), torch.no_grad():
        tensors = lesson(seed, batch, prompt, new, dim, heads, kv_heads)
    drop_rounding_lines(directory)
    save_all(directory, tensors)


def main():
    record_cases("lesson10", CASES, record, listed_by_values(NAMES, CASES["seed0"], CASES))


if __name__ == "__main__":
    main()
