#!/usr/bin/python3
"""gen_block_ops.py - PyTorch 1.13's LayerNorm and GELU on inputs the tests
choose, for test_block_ops.c.

Run from the project root with Debian's python3-torch:
    /usr/bin/python3 tests/reference/gen_block_ops.py
Writes tests/data/block_ops/:
  layer_norm_<case>_{x,weight,bias,y}.npy and layer_norm_<case>_eps.txt:
      y = F.layer_norm(x, (n,), weight, bias, eps) on rows of n numbers
  gelu_<case>_{x,y}.npy: y = F.gelu(x) (the erf form, nn.GELU())
test_block_ops.c runs the helper's layer_norm and gelu on each input and
requires PyTorch's output bit for bit (common/exact/layer_norm_exact.c and
common/exact/gelu_exact.c do PyTorch's arithmetic).
"""
import os

import numpy as np
import torch
import torch.nn.functional as F

OUT = "tests/data/block_ops"


def save(name, tensor):
    np.save(os.path.join(OUT, name + ".npy"), tensor.numpy().astype("<f4"))


def layer_norm_cases(g):
    cases = {}
    # Row lengths below, at and past the 8-lane width and the 128-number
    # chunk, and long rows that merge many chunks; rows far from mean 0.
    for n in list(range(1, 21)) + [31, 64, 100, 127, 128, 129, 300, 768, 1000, 2500]:
        rows = max(2, min(24, 2000 // n))
        x = torch.randn(rows, n, generator=g) * (torch.rand(rows, 1, generator=g) * 4) \
            + torch.randn(rows, 1, generator=g) * 10
        cases[f"len{n}"] = (x, torch.randn(n, generator=g), torch.randn(n, generator=g), 1e-5)
    # The block's own shapes: (batch, seq, dim), weight ones and bias zeros
    # as nn.LayerNorm starts; BERT's eps 1e-12; a constant row (variance 0).
    cases["vit_2x5x16"] = (torch.randn(2, 5, 16, generator=g), torch.ones(16), torch.zeros(16),
                           1e-5)
    cases["bert_eps"] = (torch.randn(6, 16, generator=g), torch.randn(16, generator=g),
                         torch.randn(16, generator=g), 1e-12)
    cases["constant"] = (torch.full((3, 24), 2.5), torch.randn(24, generator=g),
                         torch.randn(24, generator=g), 1e-5)
    return cases


def gelu_cases(g):
    cases = {}
    # Sizes around oneDNN's vector width and a single element (which PyTorch
    # sends to its own kernel instead), values from far negative (exp(-z^2)
    # underflows past |x| = 13.2) to far positive, and small ones.
    for n in (1, 2, 5, 15, 16, 17, 100, 1000):
        x = torch.randn(n, generator=g) * 4
        x[: n // 4] *= 0.01
        cases[f"n{n}"] = x
    cases["points"] = torch.tensor([-3.0, -1.0, 0.0, 1.0, 3.0, -0.0, -13.0, -13.3, -14.0, 13.3,
                                    20.0, -20.0, 1e-6, -1e-6, 1e-30, 0.5, -0.5, 2.687])
    cases["grid"] = torch.arange(-6000, 6001, dtype=torch.float32) / 1000
    return cases


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(2025)
    ln = layer_norm_cases(g)
    for name, (x, w, b, eps) in ln.items():
        y = F.layer_norm(x, (x.shape[-1],), w, b, eps)
        for part, t in (("x", x), ("weight", w), ("bias", b), ("y", y)):
            save(f"layer_norm_{name}_{part}", t)
        with open(os.path.join(OUT, f"layer_norm_{name}_eps.txt"), "w") as f:
            f.write(f"{eps!r}\n")
    gelu = gelu_cases(g)
    for name, x in gelu.items():
        save(f"gelu_{name}_x", x)
        save(f"gelu_{name}_y", F.gelu(x))
    print("torch", torch.__version__, "wrote", len(ln), "layer_norm and", len(gelu),
          "gelu cases to", OUT)


if __name__ == "__main__":
    main()
