#!/usr/bin/env python3
"""gen_lesson05.py - record PyTorch's numbers for lesson 5 (SelfAttV4).

Run once, from anywhere, with the PyTorch 1.13 the lessons are checked
against (CPU, no MKL, so dropout takes the generic bernoulli path of
docs/pytorch-rng.md section 6):

    /usr/bin/python3 tests/reference/gen_lesson05.py

For every case below it writes tests/data/lesson05/<case>/:
  <name>.npy        every name the lesson's --dump writes, as it writes
                    them (float32 '<f4', the mask int64 '<i8')
  stdout.txt        exactly what the PyTorch cell prints
  att_weight_dropped.npy   (train cases) the weights after dropout
(V4 against V3 uses lesson 4's recorded V3 data: tests/test_lesson05.c.)
The class is the Self Attention notebook's SelfAttV4; the only addition is the print of the
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


class SelfAttV4(nn.Module):
    def __init__(self, dim) -> None:
        super().__init__()
        self.dim = dim
        self.query_proj = nn.Linear(dim, dim)
        self.key_proj = nn.Linear(dim, dim)
        self.value_proj = nn.Linear(dim, dim)
        self.att_drop = nn.Dropout(0.1)
        self.output_proj = nn.Linear(dim, dim)

    def forward(self, X, attention_mask=None):
        # attention_mask shape is: (batch, seq, seq)  (the notebook says (batch, seq))
        Q = self.query_proj(X)
        K = self.key_proj(X)
        V = self.value_proj(X)
        att_weight = Q @ K.transpose(-1, -2) / math.sqrt(self.dim)
        if attention_mask is not None:
            att_weight = att_weight.masked_fill(attention_mask == 0, float("-1e20"))
        att_weight = torch.softmax(att_weight, dim=-1)
        print(f"att_weight:\n {att_weight}")
        seen.update(Q=Q, K=K, V=V, att_weight=att_weight)

        att_weight = self.att_drop(att_weight)
        if self.training:
            print(f"att_weight after att_drop:\n {att_weight}")
            seen["att_weight_dropped"] = att_weight

        output = att_weight @ V
        ret = self.output_proj(output)
        seen.update(output=output, ret=ret)
        return ret


def record(directory, seed, batch, seq, dim, train):
    seen.clear()
    with stdout_txt(directory):
        torch.manual_seed(seed)
        X = torch.rand(batch, seq, dim)
        b = padding_rows(batch, seq)
        # print(b.shape)        (commented out in this cell)
        mask = b.unsqueeze(dim=1).repeat(1, seq, 1)
        net = SelfAttV4(dim)
        net.train(train)
        print(net(X, mask).shape)

    save(directory, "X", X)
    save(directory, "mask", mask)
    save_all(directory, net.state_dict())
    save_all(directory, seen)


def main():
    record_cases("lesson05", CASES, record,
                 listed_by_values(MASKED_NAMES, MASKED_DEFAULTS, CASES))


if __name__ == "__main__":
    main()
