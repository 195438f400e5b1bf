#!/usr/bin/python3
"""gen_softmax.py - PyTorch 1.13's softmax on rows the tests choose, for test_ops.c.

Run from the project root with Debian's python3-torch:
    /usr/bin/python3 tests/reference/gen_softmax.py
Writes tests/data/softmax/<case>_in.npy and <case>_out.npy. test_ops.c runs
the helper's softmax on each input and requires PyTorch's output bit for bit
(common/exact/softmax_exact.c reproduces the kernel PyTorch runs on an x86-64 CPU
with AVX2, whatever the machine the test runs on).
"""
import os

import numpy as np
import torch

OUT = "tests/data/softmax"


def rows(generator, n, count, scale):
    return torch.randn(count, n, generator=generator) * scale


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(2024)
    cases = {}
    # Every length from 1 to 20 (below, at and past the 8-lane width), some
    # longer ones, at several scales; scores of attention look like these.
    for n in list(range(1, 21)) + [31, 64, 100, 257]:
        for scale in (0.01, 1.0, 30.0):
            cases[f"len{n}_scale{scale:g}"] = (rows(g, n, 16, scale), -1)
    # Masks: -inf (the GQA and causal lessons) and -1e20 (SelfAttV3/V4).
    masked = rows(g, 12, 32, 3.0)
    causal = torch.triu(torch.ones(12, 12, dtype=torch.bool), diagonal=1)
    cases["causal_inf"] = (masked[:12].masked_fill(causal, float("-inf")), -1)
    cases["padding_1e20"] = (masked.masked_fill(torch.rand(32, 12, generator=g) < 0.3, -1e20), -1)
    cases["all_1e20"] = (torch.full((2, 9), -1e20), -1)
    # A 4-D (B, H, T, S) tensor, and a softmax along a dim that is not the last.
    cases["bhts"] = (torch.randn(2, 3, 5, 11, generator=g), -1)
    cases["dim1"] = (torch.randn(3, 7, 19, generator=g), 1)
    for name, (x, dim) in cases.items():
        y = torch.softmax(x, dim=dim)
        np.save(os.path.join(OUT, f"{name}_in.npy"), x.numpy().astype("<f4"))
        np.save(os.path.join(OUT, f"{name}_out.npy"), y.numpy().astype("<f4"))
        with open(os.path.join(OUT, f"{name}_dim.txt"), "w") as f:
            f.write(f"{dim}\n")
    print("torch", torch.__version__, "wrote", len(cases), "cases to", OUT)


if __name__ == "__main__":
    main()
