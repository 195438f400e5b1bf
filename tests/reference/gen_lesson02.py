#!/usr/bin/env python3
"""gen_lesson02.py - record PyTorch's numbers for lesson 2 (self-attention-v1).

Run once, from anywhere, with the PyTorch 1.13 the lessons are checked against:

    /usr/bin/python3 tests/reference/gen_lesson02.py

For each case below it does exactly the lesson's draws after
torch.manual_seed(seed) (X = torch.rand(batch, seq, dim), then
SelfAttV1(dim)) and writes into tests/data/lesson02/<case>/:

  <name>.npy   every name the lesson's --dump writes ('<f4', C order):
               X query_proj.weight query_proj.bias key_proj.weight
               key_proj.bias value_proj.weight value_proj.bias Q K V
               attention_value attention_weight output
  stdout.txt   the lines PyTorch prints for the notebook's cell: the
               weights from net(X) (with grad_fn), thop's [INFO] line, the
               weights again from profile()'s no_grad forward, the two
               profile lines, and the X.T aside's shape.

Debian does not package thop, so profile() is emulated (reference.py) with the same
rule thop's count_linear uses (in_features * output numel per Linear call,
summed over every Linear; parameters summed per leaf module), and the same
no_grad forward. The build and the tests never run Python.
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
    "seed3_batch2_seq40_dim16": (3, 2, 40, 16),  # weights print summarised (> 1000)
}

DUMPS = {}      # name -> tensor, filled by the forward


class SelfAttV1(nn.Module):
    """The Self Attention notebook's class; it has no bug to fix."""

    def __init__(self, hidden_dim):
        super(SelfAttV1, self).__init__()
        self.hidden_dim = hidden_dim
        self.query_proj = nn.Linear(hidden_dim, hidden_dim)
        self.key_proj = nn.Linear(hidden_dim, hidden_dim)
        self.value_proj = nn.Linear(hidden_dim, hidden_dim)

    def forward(self, X):
        Q = self.query_proj(X)
        K = self.key_proj(X)
        V = self.value_proj(X)
        attention_value = Q @ K.transpose(-1, -2)
        attention_wight = torch.softmax(attention_value / math.sqrt(self.hidden_dim), dim=-1)
        say("attention_weight:", attention_wight)
        output = attention_wight @ V
        DUMPS.update(Q=Q, K=K, V=V, attention_value=attention_value,
                     attention_weight=attention_wight, output=output)
        return output


def record(directory, seed, batch, seq, dim):
    DUMPS.clear()
    with stdout_txt(directory):
        torch.manual_seed(seed)
        X = torch.rand(batch, seq, dim)
        net = SelfAttV1(dim)
        net(X)
        tensors = dict(DUMPS)            # from the first (grad) forward
        flops_v1, params_v1 = profile(net, inputs=(X,))
        say(f"SelfAttV1 FLOPs: {flops_v1 / 1e6:.6f} MFLOPs")
        say(f"SelfAttV1 Parameters: {params_v1 / 1e6:.6f} M")
        # The aside; the notebook draws a new X here, the lesson reuses its own:
        # only the shape is printed, and nothing is drawn after it.
        say(X.permute(2, 1, 0).shape)    # == X.T.shape, without the warning

    save(directory, "X", X)
    save_all(directory, net.state_dict())
    save_all(directory, tensors)


def main():
    record_cases("lesson02", CASES, record, listed_by_values(NAMES, CASES["seed0"], CASES))


if __name__ == "__main__":
    main()
