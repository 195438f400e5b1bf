#!/usr/bin/env python3
"""gen_lesson03.py - record PyTorch's numbers for lesson 3 (self-attention-v2).

Run once, from anywhere, with the PyTorch 1.13 the lessons are checked against:

    /usr/bin/python3 tests/reference/gen_lesson03.py

For each case below it does exactly the lesson's draws after
torch.manual_seed(seed) (X = torch.rand(batch, seq, dim), then
SelfAttV2(dim): proj, then output_proj) and writes into
tests/data/lesson03/<case>/:

  <name>.npy   every name the lesson's --dump writes ('<f4', C order):
               X proj.weight proj.bias output_proj.weight output_proj.bias
               QKV Q K V att_weight output ret
  stdout.txt   the lines PyTorch prints for what the lesson prints that
               PyTorch can print: thop's [INFO] line, the two profile
               lines WITH THE CORRECTED LABEL SelfAttV2 (the notebook's cell
               says SelfAttV1, a copy-paste slip), then net(X).shape (the
               notebook evaluates it without displaying it), att_weight and
               ret as print() shows them, and each split part's shape,
               stride(), storage_offset() and is_contiguous().

Debian does not package thop, so profile() is emulated (reference.py) with the rule thop's
count_linear uses (in_features * output numel per Linear call). The build and
the tests never run Python.
"""
import math

import torch
import torch.nn as nn

from reference import listed_by_values, profile, record_cases, save, save_all, say, stdout_txt

# case directory -> (seed, batch, seq, dim); the lesson's defaults are seed0's
NAMES = ("seed", "batch", "seq", "dim")
CASES = {
    "seed0": (0, 3, 2, 4),                       # the notebook's sizes
    "seed7": (7, 3, 2, 4),
    "seed1_batch2_seq5_dim8": (1, 2, 5, 8),
}

INSIDE = {}     # the forward's locals, filled by the forward


class SelfAttV2(nn.Module):
    """The Self Attention notebook's class; its bug is in the cell's labels, not here."""

    def __init__(self, dim) -> None:
        super().__init__()
        self.dim = dim
        self.proj = nn.Linear(dim, dim * 3)
        self.output_proj = nn.Linear(dim, dim)

    def forward(self, X):
        QKV = self.proj(X)
        Q, K, V = torch.split(QKV, self.dim, dim=-1)
        att_weight = torch.softmax(Q @ K.transpose(-1, -2) / math.sqrt(self.dim), dim=-1)
        output = att_weight @ V
        ret = self.output_proj(output)
        INSIDE.update(QKV=QKV, Q=Q, K=K, V=V, att_weight=att_weight, output=output, ret=ret)
        return ret


def show_view(name, t):
    say(f"{name}: {t.shape} stride {t.stride()} storage_offset {t.storage_offset()} "
        f"is_contiguous {t.is_contiguous()}")


def record(directory, seed, batch, seq, dim):
    INSIDE.clear()
    with stdout_txt(directory):
        torch.manual_seed(seed)
        X = torch.rand(batch, seq, dim)
        net = SelfAttV2(dim)
        ret = net(X)                     # the notebook's net(X).shape, not displayed
        inside = dict(INSIDE)            # from the first (grad) forward
        flops_v2, params_v2 = profile(net, inputs=(X,))
        say(f"SelfAttV2 FLOPs: {flops_v2 / 1e6:.6f} MFLOPs")
        say(f"SelfAttV2 Parameters: {params_v2 / 1e6:.6f} M")

        say("net(X).shape:", ret.shape)
        say("att_weight:", inside["att_weight"])
        say("ret:", inside["ret"])
        for name in ("QKV", "Q", "K", "V"):
            show_view(name, inside[name])
        shared = all(inside[n].storage().data_ptr() == inside["QKV"].storage().data_ptr()
                     for n in ("Q", "K", "V"))
        say(f"Q, K and V share QKV's storage: {shared}")

    save(directory, "X", X)
    save_all(directory, net.state_dict())
    save_all(directory, inside)


def main():
    record_cases("lesson03", CASES, record, listed_by_values(NAMES, CASES["seed0"], CASES))


if __name__ == "__main__":
    main()
