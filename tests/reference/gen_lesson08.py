#!/usr/bin/env python3
"""gen_lesson08.py - record PyTorch's numbers for tests/test_lesson08.c.

Run once, from anywhere, with the PyTorch 1.13 the lessons are checked
against:

    /usr/bin/python3 tests/reference/gen_lesson08.py

For each case below it does exactly lesson 8's draws after
torch.manual_seed(seed) and writes tests/data/lesson08/<case>/:

    query.npy key.npy value.npy   the torch.randn inputs (bit for bit)
    out.npy                        true GQA, (batch, seq, heads, head_dim)
    out_group_sum.npy              the notebook's einsum, summed over g,
                                   (batch, seq, kv_heads, head_dim)
    sdpa_bnhd.npy                  the notebook's first cell as written:
                                   scaled_dot_product_attention on the
                                   (b, n, h, d) tensors (key and value
                                   repeated to every query head)
    stdout.txt                     the lines the PyTorch cell prints that
                                   the lesson prints identically

The GQA notebook writes its steps with einops, which Debian does not package,
so each step is the torch.einsum / permute / view it stands for, with the
einops line above it (docs/08-gqa.md's code does the same). In einops a
composed axis "(h g)" is enumerated in C order (g fastest), so
"b (h g) n d -> b g h n d" is view(b, h, g, n, d) followed by
permute(0, 2, 1, 3, 4).
"""
import math

import torch
import torch.nn.functional as F

from reference import listed_by_values, record_cases, save_all, stdout_txt

# case directory -> (seed, batch, seq, heads, kv_heads, head_dim). Seed 0 is
# the notebook's; the others are small on purpose (the data is committed):
# seed 3 has randn draws of fewer than 16 numbers (the Box-Muller path),
# seed 1 a batch of 2 and sizes that are not multiples of 16 (normal_fill's
# tail), seed 7 the notebook's heads at a short length.
NAMES = ("seed", "batch", "seq", "heads", "kv_heads", "head_dim")
CASES = {
    "seed0": (0, 1, 256, 8, 2, 64),
    "seed7": (7, 1, 16, 8, 2, 8),
    "seed1": (1, 2, 5, 6, 3, 4),
    "seed3": (3, 1, 2, 2, 1, 3),
}


def grouped_query_attention(query, key, value, lines):
    """The GQA notebook's cells 7-11, the group sum fixed. (b, n, H, d) -> (b, n, H, d)."""
    num_head_groups = query.shape[2] // key.shape[2]
    lines.append("num_head_groups = query.shape[2] // key.shape[2]")
    lines.append(str(num_head_groups))
    # query = rearrange(query, "b n h d -> b h n d"), key/value "b s h d -> b h s d"
    query = query.permute(0, 2, 1, 3)
    key = key.permute(0, 2, 1, 3)
    value = value.permute(0, 2, 1, 3)
    # query = rearrange(query, "b (h g) n d -> b g h n d", g=num_head_groups)
    b, heads, n, d = query.shape
    query = query.reshape(b, heads // num_head_groups, num_head_groups, n, d)
    query = query.permute(0, 2, 1, 3, 4)
    lines.append('query = rearrange(query, "b (h g) n d -> b g h n d", g=num_head_groups)')
    lines.append(str(query.shape))
    # scores = einsum(query, key, "b g h n d, b h s d -> b g h n s")
    scores = torch.einsum("bghnd,bhsd->bghns", query, key)
    lines.append('scores = einsum(query, key, "b g h n d, b h s d -> b g h n s")')
    lines.append(str(scores.shape))
    scale = query.size(-1) ** 0.5
    attention = torch.softmax(scores / scale, dim=-1)
    # out = einsum(attention, value, "b g h n s, b h s d -> b g h n d")
    out = torch.einsum("bghns,bhsd->bghnd", attention, value)
    # out = rearrange(out, "b g h n d -> b n (h g) d")
    out = out.permute(0, 3, 2, 1, 4).reshape(b, n, heads, d)
    lines.append('out = rearrange(out, "b g h n d -> b n (h g) d")')
    lines.append(str(out.shape))
    return out


def group_sum_attention(query, key, value, lines):
    """The notebook's cells 9 and 11 as written: scores summed over g."""
    num_head_groups = query.shape[2] // key.shape[2]
    query = query.permute(0, 2, 1, 3)
    key = key.permute(0, 2, 1, 3)
    value = value.permute(0, 2, 1, 3)
    b, heads, n, d = query.shape
    query = query.reshape(b, heads // num_head_groups, num_head_groups, n, d)
    query = query.permute(0, 2, 1, 3, 4)
    # scores = einsum(query, key, "b g h n d, b h s d -> b h n s"): g is summed
    scores = torch.einsum("bghnd,bhsd->bhns", query, key)
    lines.append('scores = einsum(query, key, "b g h n d, b h s d -> b h n s")')
    lines.append(str(scores.shape))
    scale = query.size(-1) ** 0.5
    attention = torch.softmax(scores / scale, dim=-1)
    # out = einsum(attention, value, "b h n s, b h s d -> b h n d")
    out = torch.einsum("bhns,bhsd->bhnd", attention, value)
    # out = rearrange(out, "b h n d -> b n h d")
    out = out.permute(0, 2, 1, 3)
    lines.append('out = rearrange(out, "b h n d -> b n h d")')
    lines.append(str(out.shape))
    return out


def repeat_interleave_attention(q, k, v):
    """The middle of GroupQueryAttention.forward in the Attention 介绍 notes, no projections."""
    nums_head, nums_key_value_head, head_dim = q.shape[2], k.shape[2], q.shape[3]
    q = q.transpose(1, 2)
    k = k.transpose(1, 2)
    v = v.transpose(1, 2)
    k = k.repeat_interleave(nums_head // nums_key_value_head, dim=1)
    v = v.repeat_interleave(nums_head // nums_key_value_head, dim=1)
    attention_score = (q @ k.transpose(2, 3)) / math.sqrt(head_dim)
    attention_weight = torch.softmax(attention_score, dim=-1)
    output = attention_weight @ v
    return output.transpose(1, 2).contiguous()


def record(directory, seed, batch, seq, heads, kv_heads, head_dim):
    torch.manual_seed(seed)
    query = torch.randn(batch, seq, heads, head_dim)
    key = torch.randn(batch, seq, kv_heads, head_dim)
    value = torch.randn(batch, seq, kv_heads, head_dim)

    lines = ["-- grouped-query attention, the notebook's einops steps as loops --"]
    out = grouped_query_attention(query, key, value, lines)
    lines.append("out[0, 0, :, :4]")
    lines.extend(str(out[0, 0, :, :4]).split("\n"))
    lines.append("-- part 3: the notebook's einsum sums the scores over g (--kv-heads) --")
    out_group_sum = group_sum_attention(query, key, value, lines)
    lines.append("out_group_sum[0, 0, :, :4]")
    lines.extend(str(out_group_sum[0, 0, :, :4]).split("\n"))
    output = repeat_interleave_attention(query, key, value)
    lines.append("output: %s" % str(output.shape))
    for name, n in (("MHA", heads), ("GQA", kv_heads), ("MQA", 1)):
        lines.append("%s (kv_heads = %d): 2 * %d * %d * 4 = %d bytes"
                     % (name, n, n, head_dim, 2 * n * head_dim * 4))

    # The notebook's first cell: scaled_dot_product_attention on (b, n, h, d)
    # tensors (public from PyTorch 2.0; 1.13 has F._scaled_dot_product_attention,
    # which returns the weights too), with key and value repeated to every
    # query head, against the call with the heads in front.
    groups = heads // kv_heads
    key_h = key.repeat_interleave(groups, dim=2)
    value_h = value.repeat_interleave(groups, dim=2)
    wrong, weights_wrong = F._scaled_dot_product_attention(query, key_h, value_h,
                                                           need_attn_weights=True)
    q, k, v = (t.transpose(1, 2) for t in (query, key_h, value_h))
    right, weights = F._scaled_dot_product_attention(q, k, v, need_attn_weights=True)
    right = right.transpose(1, 2)
    lines.append(str(key_h.shape))
    lines.append("the notebook's call: scaled_dot_product_attention(query, key, value)")
    lines.append(str(wrong.shape))
    lines.append("weights %s: at each position, heads attend to heads" % str(weights_wrong.shape))
    lines.append("heads in front: q, k, v = (t.transpose(1, 2) for t in (query, key, value))")
    lines.append("scaled_dot_product_attention(q, k, v).transpose(1, 2)")
    lines.append(str(right.shape))
    lines.append("weights %s: in each head, positions attend to positions" % str(weights.shape))

    save_all(directory, dict(query=query, key=key, value=value, out=out,
                             out_group_sum=out_group_sum, sdpa_bnhd=wrong))
    with stdout_txt(directory):          # the lines collected above
        print("\n".join(lines))
    print("seed %d %s: max |out - repeat_interleave| = %.3g" % (
        seed, (batch, seq, heads, kv_heads, head_dim), (out - output).abs().max().item()))


def main():
    torch.set_num_threads(1)
    record_cases("lesson08", CASES, record, listed_by_values(NAMES, CASES["seed0"], CASES))


if __name__ == "__main__":
    main()
