#!/usr/bin/env python3
"""gen_lesson05.py - record PyTorch's numbers for lesson 5 (SelfAttV4).

Run once, from anywhere, with the PyTorch 1.13 the lessons are checked
against (CPU, no MKL, so dropout takes the generic bernoulli path of
../shared/reference/TORCH_RNG.md section 6):

    /usr/bin/python3 tests/reference/gen_lesson05.py

For every case below it writes tests/data/lesson05/<case>/:
  <name>.npy        every dump name of LESSONS.md item 5, as the lesson's
                    --dump writes them (float32 '<f4', the mask int64 '<i8')
  stdout.txt        exactly what the PyTorch cell prints
  att_weight_dropped.npy   (train cases) the weights after dropout
(V4 against V3 uses lesson 4's recorded V3 data: tests/test_lesson05.c.)
The class is seed 000's SelfAttV4; the only addition is the print of the
weights after dropout in train mode, which the lesson adds too.
"""
import contextlib
import io
import math
import os

import numpy as np
import torch
import torch.nn as nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "lesson05")

# case directory -> (seed, batch, seq, dim, train). Keep in step with
# CASES in tests/test_lesson05.c.
CASES = {
    "seed0": (0, 3, 4, 2, False),
    "seed0-train": (0, 3, 4, 2, True),
    "seed7": (7, 5, 3, 4, False),          # batch > seq: rows keep at least 1 key
    "seed7-train": (7, 5, 3, 4, True),
    "seed123": (123, 2, 6, 8, False),
}

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


def padding_rows(batch, seq):
    """b: batch row i keeps its first max(1, seq-1-i) keys (the notebook's b for 3x4)."""
    b = torch.zeros(batch, seq, dtype=torch.int64)
    for i in range(batch):
        b[i, :max(1, seq - 1 - i)] = 1
    return b


def save(directory, name, value):
    array = value.detach().numpy()
    array = array.astype("<i8" if array.dtype == np.int64 else "<f4")
    np.save(os.path.join(directory, name + ".npy"), array)


def run_case(name, seed, batch, seq, dim, train):
    directory = os.path.join(OUT, name)
    os.makedirs(directory, exist_ok=True)
    seen.clear()
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        torch.manual_seed(seed)
        X = torch.rand(batch, seq, dim)
        b = padding_rows(batch, seq)
        # print(b.shape)        (commented out in this cell)
        mask = b.unsqueeze(dim=1).repeat(1, seq, 1)
        net = SelfAttV4(dim)
        net.train(train)
        print(net(X, mask).shape)
    with open(os.path.join(directory, "stdout.txt"), "w") as f:
        f.write(text.getvalue())

    save(directory, "X", X)
    save(directory, "mask", mask)
    for key, value in net.state_dict().items():
        save(directory, key, value)
    for key, value in seen.items():
        save(directory, key, value)


def main():
    for name, (seed, batch, seq, dim, train) in CASES.items():
        run_case(name, seed, batch, seq, dim, train)
        print("wrote", os.path.join(OUT, name))


if __name__ == "__main__":
    main()
