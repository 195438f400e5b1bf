#!/usr/bin/env python3
"""gen_lesson09.py - record PyTorch's numbers for lesson 9 (causal-mask).

Run with the PyTorch 1.13 the lessons are checked against:

    /usr/bin/python3 tests/reference/gen_lesson09.py

For each case below it does exactly the draws of lessons/09-causal-mask
after torch.manual_seed(seed) and writes tests/data/lesson09/<case>/:
  <name>.npy   every name the lesson's --dump writes ('<f4'; the mask is the
               float tensor torch.triu(torch.ones(...)) makes, so '<f4' too)
  attn.npy     the attention weights (B, H, T, T), for the causal checks
               (after dropout in the --train case)
  stdout.txt   the lines this script prints, which the lesson must print in
               the same order (tests/test_lesson09.c, lines_in_order)
The GQA class is the GQA notebook's In[10], unchanged except that it keeps its
attention weights in self.attn so they can be printed.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from reference import listed_by_values, record_cases, save_all, stdout_txt

# case directory -> (seed, batch, seq, dim, heads, kv_heads, train); the lesson's
# defaults are seed0's
NAMES = ("seed", "batch", "seq", "dim", "heads", "kv_heads", "train")
CASES = {
    "seed0": (0, 4, 32, 512, 8, 2, False),        # the notebook's sizes
    "seed7": (7, 2, 6, 32, 4, 2, False),          # small: randn of 384 elements
    "seed3_tiny": (3, 1, 3, 4, 2, 1, False),      # randn of 12 elements (< 16: the other path)
    "seed5_mha": (5, 2, 5, 16, 4, 4, False),      # kv_heads = heads: plain multi-head
    "seed7_train": (7, 2, 6, 32, 4, 2, True),     # --train: dropout, the causality check reseeds
}


class GQA(nn.Module):
    def __init__(self, dim, num_heads, num_groups=None):
        super(GQA, self).__init__()
        assert dim % num_heads == 0, "dim must be divisible by num_heads"
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.num_groups = num_groups if num_groups else num_heads

        assert self.num_heads % self.num_groups == 0, "num_heads must be divisible by num_groups"
        self.w_query = nn.Linear(dim, dim)
        self.w_key = nn.Linear(dim, self.num_groups * self.head_dim)
        self.w_value = nn.Linear(dim, self.num_groups * self.head_dim)
        self.o_proj = nn.Linear(dim, dim)

    def forward(self, query, key, value):
        batch_size, seq_len, _ = query.shape
        query = self.w_query(query).view(batch_size, seq_len, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        key = self.w_key(key).view(batch_size, seq_len, self.num_groups, self.head_dim).permute(0, 2, 1, 3)
        value = self.w_value(value).view(batch_size, seq_len, self.num_groups, self.head_dim).permute(0, 2, 1, 3)
        expand_ratio = self.num_heads // self.num_groups
        key = key.unsqueeze(2).expand(-1, -1, expand_ratio, -1, -1).reshape(batch_size, self.num_heads, seq_len, self.head_dim)
        value = value.unsqueeze(2).expand(-1, -1, expand_ratio, -1, -1).reshape(batch_size, self.num_heads, seq_len, self.head_dim)
        scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(self.head_dim)
        mask = torch.triu(torch.ones(seq_len, seq_len), diagonal=1).to(query.device)
        self.mask = mask
        scores = scores.masked_fill(mask == 1, float('-inf'))
        attn = F.softmax(scores, dim=-1)
        attn = F.dropout(attn, p=0.1, training=self.training)
        self.attn = attn                          # kept for printing (not in the notebook)
        attn_out = torch.matmul(attn, value)
        attn_out = attn_out.permute(0, 2, 1, 3).reshape(batch_size, seq_len, self.num_heads * self.head_dim)
        return self.o_proj(attn_out)


def show_masks():
    mask = torch.triu(torch.ones(4, 4), diagonal=1)
    print("mask = torch.triu(torch.ones(4, 4), diagonal=1)")
    print(mask)
    cache_len = 2
    mask_w_cache = torch.triu(torch.ones(1, 1 + cache_len), diagonal=1 + cache_len)
    print("mask_w_cache = torch.triu(torch.ones(1, 1 + cache_len), diagonal=1 + cache_len)")
    print(mask_w_cache)
    print()
    q_len = 2
    print("-- the general mask: q_len new queries after cache_len cached keys --")
    print("mask = torch.triu(torch.ones(q_len, cache_len + q_len), diagonal=1 + cache_len)")
    print("q_len = 2, cache_len = 2:")
    print(torch.triu(torch.ones(q_len, cache_len + q_len), diagonal=1 + cache_len))
    print("cache_len = 0 gives the (4, 4) mask above, q_len = 1 the one-row mask:")
    print(torch.triu(torch.ones(4, 0 + 4), diagonal=1 + 0))
    print(torch.triu(torch.ones(1, 2 + 1), diagonal=1 + 2))
    print()


def run_gqa(seed, batch, seq, dim, heads, kv_heads, train):
    print("-- part 2: the notebook's GQA module, causal (--seq, --kv-heads and --train change it) --")
    gqa = GQA(dim, heads, kv_heads).train(train)       # .eval() unless --train
    query = torch.randn(batch, seq, dim)
    key = torch.randn(batch, seq, dim)
    value = torch.randn(batch, seq, dim)
    output = gqa(query, key, value)
    print(output.shape)
    attn = gqa.attn
    print("attention weights, attn[0, 0, :4, :4]:")
    print(attn[0, 0, :4, :4])
    print("output[0, :4, :4]:")
    print(output[0, :4, :4])

    query2, key2, value2 = query.clone(), key.clone(), value.clone()
    query2[:, -1] += 1
    key2[:, -1] += 1
    value2[:, -1] += 1
    before, name = output, "output"
    if train:   # the same dropout masks for both runs: restart the generator
        torch.manual_seed(seed)
        before, name = gqa(query, key, value), "output1"
        torch.manual_seed(seed)
    output2 = gqa(query2, key2, value2)
    print("add 1 to the last token of query, key and value, run again:")
    if train:
        print("  (train mode: each call draws new dropout masks, so both runs start from")
        print(f"  torch.manual_seed({seed}) and draw the same ones: output1 = gqa(query, key, value),")
        print("  output2 = gqa(query2, key2, value2); with other masks every position would differ)")
    if seq > 1:
        earlier = (output2[:, :-1] - before[:, :-1]).abs().max().item()
        print(f"  max |output2 - {name}| at positions 0..{seq - 2}: {earlier:g}")
    print(f"  max |output2 - {name}| at position {seq - 1}: "
          f"{(output2[:, -1] - before[:, -1]).abs().max().item():.4f}")
    print()
    tensors = dict(gqa.state_dict())
    tensors.update(query=query, key=key, value=value, mask=gqa.mask, output=output, attn=attn)
    return tensors


def compare_conventions():
    scores = torch.tensor([[1., 2., 3.], [4., 5., 6.], [7., 8., 9.]])
    print("-- part 3: two conventions for the same mask (fixed 3 x 3 scores) --")
    print("scores = torch.tensor([[1., 2., 3.], [4., 5., 6.], [7., 8., 9.]])")
    mask = torch.triu(torch.ones(3, 3), diagonal=1)
    print("this lesson: torch.triu(torch.ones(3, 3), diagonal=1), 1 = forbidden")
    print("scores.masked_fill(mask == 1, float('-inf')).softmax(-1)")
    print(scores.masked_fill(mask == 1, float('-inf')).softmax(-1))
    keep = torch.tril(torch.ones(3, 3))
    print("lesson 4: keep = torch.tril(torch.ones(3, 3)), 1 = allowed")
    print(keep)
    print("scores.masked_fill(keep == 0, -1e20).softmax(-1)")
    print(scores.masked_fill(keep == 0, -1e20).softmax(-1))
    row = scores[:1]
    print("a row with every key masked: row = scores[:1]")
    print("with -1e20:", row.masked_fill(torch.ones(1, 3) == 1, -1e20).softmax(-1))
    print("with -inf: ", row.masked_fill(torch.ones(1, 3) == 1, float('-inf')).softmax(-1))
    print("a causal row always keeps its diagonal, so it never gets there")
    print()


def lesson(seed, batch, seq, dim, heads, kv_heads, train):
    """Everything the lesson prints that PyTorch can print; returns the tensors."""
    torch.manual_seed(seed)
    with torch.no_grad():   # inference: no autograd, so no grad_fn in the prints
        show_masks()
        tensors = run_gqa(seed, batch, seq, dim, heads, kv_heads, train)
        compare_conventions()
    return tensors


def record(directory, seed, batch, seq, dim, heads, kv_heads, train):
    with stdout_txt(directory):
        tensors = lesson(seed, batch, seq, dim, heads, kv_heads, train)
    save_all(directory, tensors)


def main():
    record_cases("lesson09", CASES, record, listed_by_values(NAMES, CASES["seed0"], CASES))


if __name__ == "__main__":
    main()
