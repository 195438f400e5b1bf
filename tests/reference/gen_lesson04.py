#!/usr/bin/env python3
"""gen_lesson04.py - record PyTorch's numbers for lesson 4 (SelfAttV3).

Run once, from anywhere, with the PyTorch 1.13 the lessons are checked
against (CPU, no MKL, so dropout takes the generic bernoulli path of
docs/pytorch-rng.md section 6):

    /usr/bin/python3 tests/reference/gen_lesson04.py

For every case below it writes tests/data/lesson04/<case>/:
  <name>.npy        every name the lesson's --dump writes, as it writes
                    them (float32 '<f4', the mask int64 '<i8')
  stdout.txt        exactly what the PyTorch cell prints
  att_weight_dropped.npy   (train cases) the weights after dropout
  v2_ret.npy        (eval cases) SelfAttV2 (lesson 3) with the SAME proj and
                    output_proj weights and no mask: what V3 must equal
                    when the mask is all ones
The class is the Self Attention notebook's SelfAttV3; the only addition is the print of the
weights after dropout in train mode, which the lesson adds too.
"""
import math

import torch
import torch.nn as nn

from reference import (MASKED_CASES, MASKED_DEFAULTS, MASKED_NAMES, listed_by_values,
                       padding_rows, record_cases, save, save_all, stdout_txt)

# case directory -> (seed, batch, seq, dim, train): the five runs lessons 4
# and 5 share (tests/harness.c keeps the same list).
CASES = MASKED_CASES

seen = {}   # name -> tensor, filled by the forward for the dump


class SelfAttV3(nn.Module):
    def __init__(self, dim) -> None:
        super().__init__()
        self.dim = dim
        self.proj = nn.Linear(dim, dim * 3)
        self.att_drop = nn.Dropout(0.1)
        self.output_proj = nn.Linear(dim, dim)

    def forward(self, X, attention_mask=None):
        # attention_mask shape is: (batch, seq, seq)  (the notebook says (batch, seq))
        QKV = self.proj(X)  # (batch, seq, dim * 3)
        Q, K, V = torch.split(QKV, self.dim, dim=-1)
        att_weight = Q @ K.transpose(-1, -2) / math.sqrt(self.dim)
        if attention_mask is not None:
            att_weight = att_weight.masked_fill(attention_mask == 0, float("-1e20"))
        att_weight = torch.softmax(att_weight, dim=-1)
        print(att_weight)
        seen.update(QKV=QKV, Q=Q, K=K, V=V, att_weight=att_weight)

        att_weight = self.att_drop(att_weight)
        if self.training:
            print("att_weight after att_drop:", att_weight)
            seen["att_weight_dropped"] = att_weight

        output = att_weight @ V
        ret = self.output_proj(output)
        seen.update(output=output, ret=ret)
        return ret


def v2_forward(net, X):
    """SelfAttV2 (lesson 3) with V3's proj and output_proj, no mask, no dropout."""
    QKV = net.proj(X)
    Q, K, V = torch.split(QKV, net.dim, dim=-1)
    att_weight = torch.softmax(Q @ K.transpose(-1, -2) / math.sqrt(net.dim), dim=-1)
    return net.output_proj(att_weight @ V)


def record(directory, seed, batch, seq, dim, train):
    seen.clear()
    with stdout_txt(directory):
        torch.manual_seed(seed)
        X = torch.rand(batch, seq, dim)
        b = padding_rows(batch, seq)
        print(b.shape)
        mask = b.unsqueeze(dim=1).repeat(1, seq, 1)
        print(mask, mask.shape)
        net = SelfAttV3(dim)
        net.train(train)
        print(net(X, mask).shape)

    save(directory, "X", X)
    save(directory, "mask", mask)
    save_all(directory, net.state_dict())
    save_all(directory, seen)
    if not train:
        with torch.no_grad():
            save(directory, "v2_ret", v2_forward(net, X))


def main():
    record_cases("lesson04", CASES, record,
                 listed_by_values(MASKED_NAMES, MASKED_DEFAULTS, CASES))


if __name__ == "__main__":
    main()
