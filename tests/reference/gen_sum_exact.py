#!/usr/bin/python3
"""gen_sum_exact.py - PyTorch 1.13's float32 sum of rows of every kind, for test_sum_exact.c.

Run from the project root with Debian's python3-torch:
    /usr/bin/python3 tests/reference/gen_sum_exact.py
Writes tests/data/sum_exact/:
  rows.npy      the rows one after the other, float32 ('<f4')
  lengths.txt   their lengths, one a line, in that order
  sums.npy      row.sum() for each row, as PyTorch computes it
The lengths reach every path of PyTorch's sum kernel (common/sum_exact.c):
fewer than 8 numbers (four running sums), 8 to 31 (whole vectors, no
group of four), a tail after the vectors, the first cascade level (16
groups of 4 vectors = 512 numbers) and the second (8192 numbers). The
numbers are squares (what RMSNorm sums) or signed values.
"""
import os

import numpy as np
import torch

OUT = "tests/data/sum_exact"
LENGTHS = (list(range(0, 41)) + [63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513,
                                  1000, 1024, 2047, 4097, 8192, 10000])


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(15)
    rows, sums = [], []
    for i, n in enumerate(LENGTHS):
        x = torch.randn(n, generator=g) * (torch.rand(1, generator=g) * 10)
        x = x * x if i % 2 == 0 else x            # squares, as RMSNorm's mean; or signed
        rows.append(x)
        sums.append(x.sum())
    np.save(os.path.join(OUT, "rows.npy"), torch.cat(rows).numpy().astype("<f4"))
    np.save(os.path.join(OUT, "sums.npy"), torch.stack(sums).numpy().astype("<f4"))
    with open(os.path.join(OUT, "lengths.txt"), "w") as f:
        f.write("".join(f"{n}\n" for n in LENGTHS))
    print("torch", torch.__version__, "wrote", len(LENGTHS), "rows to", OUT)


if __name__ == "__main__":
    main()
