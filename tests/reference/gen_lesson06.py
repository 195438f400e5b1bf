#!/usr/bin/env python3
"""gen_lesson06.py - record PyTorch's numbers for lesson 6 (multi-head).

Run once, from anywhere, with the PyTorch 1.13 the lessons are checked against
(CPU, no MKL, so train-mode dropout takes the generic path the C code repeats):

    /usr/bin/python3 tests/reference/gen_lesson06.py

For each case below it does exactly the lesson's draws after
torch.manual_seed(seed):

    attention_mask = torch.randint(0, 2, (batch, heads, seq, seq))
    x = torch.rand(batch, seq, dim)
    net = MultiHeadAttention(dim, heads)      # the Self Attention notebook's class
    net(x, attention_mask)                    # net.eval() unless the case trains

and writes into tests/data/lesson06/<case>/:

  <name>.npy   every name the lesson's --dump writes: attention_mask ('<i8'),
               x, q_proj.* k_proj.* v_proj.* o_proj.*, Q K V (batch, seq, dim),
               q_state k_state v_state output_mid (batch, heads, seq, head_dim),
               attention_weight (after softmax, before dropout), output
               (all '<f4', C order)
  stdout.txt   every line of the lesson that PyTorch can print: the notebook's
               shape lines and the cell's result, then the numbers, strides,
               view/reshape and fully-masked-row lines of the lesson's asides,
               the notebook's commented-out padding mask run in eval mode, and
               the iThome Day 7 post's MyMultiHeadAttention on net's weights.
  my_output.npy  what that class returns, (batch, seq, dim) (not a dump: the
               tests run the lesson's MyMultiHeadAttention_forward on it)

The build and the tests never run Python.
"""
import contextlib
import io
import math
import textwrap

import torch
import torch.nn as nn
import torch.nn.functional as F

from reference import listed_by_values, record_cases, save, save_all, say, stdout_txt

# case directory -> (seed, batch, seq, dim, heads, train); the lesson's defaults are seed0's
NAMES = ("seed", "batch", "seq", "dim", "heads", "train")
CASES = {
    "seed0": (0, 3, 2, 128, 8, False),                   # the notebook's sizes
    "seed7": (7, 3, 2, 128, 8, False),
    "seed1_train": (1, 3, 2, 128, 8, True),              # dropout on, as in the notebook
    "seed3_batch2_seq5_dim48_heads4": (3, 2, 5, 48, 4, False),
    "seed4_batch2_seq3_dim16_heads1": (4, 2, 3, 16, 1, False),   # view works without copy
}

DUMPS = {}      # name -> tensor, filled by the forward


class MultiHeadAttention(nn.Module):
    """The Self Attention notebook's class as written (the Attention 介绍 notes'
    copy has V = self.k_proj(X); here V comes from v_proj). The forward also
    keeps its tensors in DUMPS."""

    def __init__(self, hidden_dim, nums_head) -> None:
        super().__init__()
        self.nums_head = nums_head
        self.head_dim = hidden_dim // nums_head
        self.hidden_dim = hidden_dim
        self.q_proj = nn.Linear(hidden_dim, hidden_dim)
        self.k_proj = nn.Linear(hidden_dim, hidden_dim)
        self.v_proj = nn.Linear(hidden_dim, hidden_dim)
        self.att_dropout = nn.Dropout(0.1)
        self.o_proj = nn.Linear(hidden_dim, hidden_dim)

    def forward(self, X, attention_mask=None):
        batch_size, seq_len, hidden_dim = X.size()
        Q = self.q_proj(X)
        K = self.k_proj(X)
        V = self.v_proj(X)
        say(f"Q: {Q.shape}")
        q_state = Q.view(batch_size, seq_len, self.nums_head, self.head_dim).transpose(1, 2)
        say(f"q_state: {q_state.shape}")
        k_state = K.view(batch_size, seq_len, self.nums_head, self.head_dim).transpose(1, 2)
        v_state = V.view(batch_size, seq_len, self.nums_head, self.head_dim).transpose(1, 2)
        attention_weight = q_state @ k_state.transpose(-1, -2) / math.sqrt(self.head_dim)
        say(f"attention_weight:", attention_weight.shape)
        if attention_mask is not None:
            attention_weight = attention_weight.masked_fill(attention_mask == 0, float("-1e20"))
        attention_weight = torch.softmax(attention_weight, dim=3)
        DUMPS.update(Q=Q, K=K, V=V, q_state=q_state, k_state=k_state, v_state=v_state,
                     attention_weight=attention_weight)
        attention_weight = self.att_dropout(attention_weight)
        output_mid = attention_weight @ v_state
        say(output_mid.shape)
        DUMPS.update(output_mid=output_mid)
        output_mid = output_mid.transpose(1, 2).contiguous()
        output = output_mid.view(batch_size, seq_len, -1)
        output = self.o_proj(output)
        DUMPS.update(output=output)
        return output


def asides(attention_mask, net, output, batch, seq, heads):
    """The lesson's asides, the lines PyTorch can print."""
    head_dim = net.head_dim
    say("attention_mask[0]:")
    say(attention_mask[0])
    say("attention_weight[0]:")
    say(DUMPS["attention_weight"][0])
    say("output[0, :, :8]:")
    say(output[0, :, :8])

    Q, q_state = DUMPS["Q"], DUMPS["q_state"]
    say("Q.stride():", Q.stride())
    say(f"Q.view({batch}, {seq}, {heads}, {head_dim}).stride():",
        Q.view(batch, seq, heads, head_dim).stride())
    say("q_state.stride():", q_state.stride())
    say("q_state.is_contiguous():", q_state.is_contiguous())
    say("q_state.data_ptr() == Q.data_ptr():", q_state.data_ptr() == Q.data_ptr())

    output_mid = DUMPS["output_mid"]
    swapped = output_mid.transpose(1, 2)
    say("output_mid.stride():", output_mid.stride())
    say("output_mid.transpose(1, 2).stride():", swapped.stride())
    say("output_mid.transpose(1, 2).is_contiguous():", swapped.is_contiguous())
    try:
        shape = swapped.view(batch, seq, -1).shape
        say(f"output_mid.transpose(1, 2).view({batch}, {seq}, -1) works: {shape}\n(the "
            "transpose only moved an axis of size 1, so the memory order did not change)")
    except RuntimeError as error:
        say(f"output_mid.transpose(1, 2).view({batch}, {seq}, -1) raises RuntimeError:")
        say(textwrap.fill(str(error), 100, initial_indent="  ", subsequent_indent="  "))
    say("output_mid.transpose(1, 2).contiguous().stride():", swapped.contiguous().stride())
    say(f"output_mid.transpose(1, 2).contiguous().view({batch}, {seq}, -1).stride():",
        swapped.contiguous().view(batch, seq, -1).stride())
    reshaped = swapped.reshape(batch, seq, -1)
    say(f"output_mid.transpose(1, 2).reshape({batch}, {seq}, -1).data_ptr() == "
        "output_mid.data_ptr():", reshaped.data_ptr() == output_mid.data_ptr())
    say(f"torch.equal(output_mid.transpose(1, 2).reshape({batch}, {seq}, -1),\n"
        f"            output_mid.transpose(1, 2).contiguous().view({batch}, {seq}, -1)):",
        torch.equal(reshaped, swapped.contiguous().view(batch, seq, -1)))
    say(f"output_mid.reshape({batch}, {heads}, -1).data_ptr() == output_mid.data_ptr():",
        output_mid.reshape(batch, heads, -1).data_ptr() == output_mid.data_ptr())

    all_zero = (attention_mask == 0).all(dim=-1)           # (batch, heads, seq)
    say(f"{int(all_zero.sum())} of the {all_zero.numel()} rows of attention_mask are all zeros")
    if not all_zero.any():
        say("no row of attention_mask is all zeros with this seed")
        return
    b, h, t = (int(i) for i in all_zero.nonzero()[0])     # the first in row-major order
    say(f"attention_mask[{b}, {h}, {t}]: {attention_mask[b, h, t]}")
    say(f"attention_weight[{b}, {h}, {t}]: {DUMPS['attention_weight'][b, h, t]}")
    row = torch.softmax(torch.full((seq,), float("-inf")), dim=-1)
    say(f'with float("-inf") instead of -1e20 the row would be {row}')


def commented_out_padding(batch, seq):
    """The cell's commented-out rows [[0, 1], [0, 0], [1, 0]], for any size:
    sentence b % 3 == 0 pads its first token, == 1 is all padding, == 2 pads
    its last token."""
    padding = torch.ones(batch, seq, dtype=torch.int64)
    for b in range(batch):
        if b % 3 == 0:
            padding[b, 0] = 0
        elif b % 3 == 1:
            padding[b] = 0
        else:
            padding[b, -1] = 0
    return padding


def padding_mask(net, x, batch, seq, heads):
    """The commented-out mask, run on net in eval mode."""
    padding = commented_out_padding(batch, seq)
    rows = padding.unsqueeze(1).unsqueeze(2)
    attention_mask = rows.expand(batch, heads, seq, seq)
    net.eval()
    with contextlib.redirect_stdout(io.StringIO()):   # the forward's own shape lines
        net(x, attention_mask)
    say("padding (1 = a real token, 0 = padding):")
    say(padding)
    say(f"padding.unsqueeze(1).unsqueeze(2): {rows.shape}, stride {rows.stride()}")
    say(f"attention_mask = padding.unsqueeze(1).unsqueeze(2).expand({batch}, {heads}, {seq}, "
        f"{seq}): stride {attention_mask.stride()}")
    say("net.eval(); attention_weight[:, 0], head 0:")
    say(DUMPS["attention_weight"][:, 0])


class MyMultiHeadAttention(nn.Module):
    """The iThome Day 7 post's step 3, its typo aattn_scores fixed; `use_reshape`
    picks the post's commented-out reshape line."""

    def __init__(self, hidden_size, n_head):
        super().__init__()
        self.linear_q = nn.Linear(hidden_size, hidden_size)
        self.linear_k = nn.Linear(hidden_size, hidden_size)
        self.linear_v = nn.Linear(hidden_size, hidden_size)
        self.linear_o = nn.Linear(hidden_size, hidden_size)
        self.head_dim = hidden_size // n_head
        self.scaling = self.head_dim ** -0.5
        self.use_reshape = False

    def forward(self, x: torch.Tensor):
        B, L, D = x.shape
        query = self.linear_q(x)
        key = self.linear_k(x)
        value = self.linear_v(x)
        query = query.view(B, L, -1, self.head_dim).transpose(1, 2)
        key = key.view(B, L, -1, self.head_dim).transpose(1, 2)
        value = value.view(B, L, -1, self.head_dim).transpose(1, 2)
        attn_scores = torch.matmul(query, key.transpose(2, 3)) * self.scaling
        attn_weights = F.softmax(attn_scores, dim=-1)
        attn_output = torch.matmul(attn_weights, value)
        if self.use_reshape:
            attn_output = attn_output.transpose(1, 2).reshape(B, L, -1)
        else:
            attn_output = attn_output.transpose(1, 2).contiguous().view(B, L, -1)
        attn_output = self.linear_o(attn_output)
        return attn_output


def post_class(net, x, batch, seq, dim, heads):
    """The post's class on net's weights, against net without a mask (eval)."""
    my = MyMultiHeadAttention(dim, heads)
    for mine, nets in (("linear_q", "q_proj"), ("linear_k", "k_proj"), ("linear_v", "v_proj"),
                       ("linear_o", "o_proj")):
        getattr(my, mine).load_state_dict(getattr(net, nets).state_dict())
    net.eval()
    viewed = my(x)
    my.use_reshape = True
    reshaped = my(x)
    with contextlib.redirect_stdout(io.StringIO()):   # the forward's own shape lines
        output = net(x)
    head_dim = my.head_dim
    say(f"my = MyMultiHeadAttention({dim}, {heads}), with net's q/k/v/o_proj as its "
        "linear_q/k/v/o")
    say(f"query.view({batch}, {seq}, -1, {head_dim}).transpose(1, 2): "
        f"{my.linear_q(x).view(batch, seq, -1, head_dim).transpose(1, 2).shape}")
    say(f"scaling = head_dim ** -0.5 = {my.scaling:.4f}: the scores * {my.scaling:.4f}, "
        f"where net divides them by {math.sqrt(head_dim):.4f}")
    say(f"torch.equal(my(x) with .contiguous().view({batch}, {seq}, -1), my(x) with "
        f".reshape({batch}, {seq}, -1)): {torch.equal(viewed, reshaped)}")
    if head_dim in (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536):
        say(f"torch.equal(my(x), net.eval()(x)): {torch.equal(viewed, output)}\n  (no mask; "
            f"{my.scaling:.4f} is a power of 2, so * scaling and / sqrt(head_dim) round alike)")
    else:
        say(f"torch.allclose(my(x), net.eval()(x), atol=1e-6): {torch.allclose(viewed, output, atol=1e-6)}\n  (no "
            f"mask; {my.scaling:.4f} is not a power of 2, so * scaling and / sqrt(head_dim) "
            "may round\n  the last bit apart)")
    return viewed


def record(directory, seed, batch, seq, dim, heads, train):
    DUMPS.clear()
    with stdout_txt(directory):
        torch.manual_seed(seed)
        attention_mask = torch.randint(0, 2, (batch, heads, seq, seq))
        x = torch.rand(batch, seq, dim)
        net = MultiHeadAttention(dim, heads)
        net.train(train)
        output = net(x, attention_mask)
        say(output.shape)
        asides(attention_mask, net, output, batch, seq, heads)
        dumps = dict(DUMPS)   # the demonstrations run the module again (eval, other masks)
        padding_mask(net, x, batch, seq, heads)
        my_output = post_class(net, x, batch, seq, dim, heads)

    save(directory, "my_output", my_output)   # not a dump: the tests run the post's class
    save(directory, "attention_mask", attention_mask)
    save(directory, "x", x)
    save_all(directory, net.state_dict())
    save_all(directory, dumps)


def main():
    record_cases("lesson06", CASES, record, listed_by_values(NAMES, CASES["seed0"], CASES))


if __name__ == "__main__":
    main()
