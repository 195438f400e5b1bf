#!/usr/bin/python3
"""gen_exact_training.py - PyTorch 1.13's kernels that training meets, for test_exact_training.c.

Run from the project root with Debian's python3-torch:
    /usr/bin/python3 tests/reference/gen_exact_training.py
Writes tests/data/exact_training/, float32 ('<f4') arrays and the sizes beside them:
  log_x, log_y          torch.log of 4096 numbers from 1e-30 to 1e30 (Sleef's logf)
  ls_x, ls_g, ls_y, ls_dx, ls_sizes.txt   log_softmax(x) over rows of n (each line of
                        ls_sizes.txt: rows n), and x's gradient for the upstream g
  sm_x, sm_g, sm_dx, sm_sizes.txt         softmax's backward, the same way
  col_x, col_sums, col_sizes.txt          x.sum(0) of contiguous (rows, cols) matrices
  perm_x, perm_sums, perm_sizes.txt       x.permute(0, 2, 1).sum(0) of contiguous
                        (rows, a, b) tensors: the sum down a dim whose kept dims are not
                        contiguous (each line: rows a b; the sums are (b, a))
The sizes reach every path of those kernels: rows shorter than 8, whole vectors and tails,
32-column blocks and the columns after them, 4-column blocks, more rows than one level of
torch.sum's cascade holds.
"""
import os

import numpy as np
import torch

OUT = "tests/data/exact_training"


def save(name, t):
    np.save(os.path.join(OUT, name + ".npy"), t.detach().reshape(-1).numpy().astype("<f4"))


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(16)
    x = torch.exp(torch.rand(4096, generator=g) * 138 - 69)
    save("log_x", x)
    save("log_y", torch.log(x))
    xs, gs, ys, dxs = [], [], [], []
    sizes = [(3, 1), (5, 5), (4, 8), (6, 13), (7, 16), (2, 33), (128, 16), (40, 24)]
    for rows, n in sizes:
        x = (torch.randn(rows, n, generator=g) * 4).requires_grad_()
        up = torch.randn(rows, n, generator=g)
        y = torch.log_softmax(x, -1)
        y.backward(up)
        xs, gs, ys, dxs = xs + [x.detach()], gs + [up], ys + [y.detach()], dxs + [x.grad]
    for name, ts in (("ls_x", xs), ("ls_g", gs), ("ls_y", ys), ("ls_dx", dxs)):
        save(name, torch.cat([t.reshape(-1) for t in ts]))
    with open(os.path.join(OUT, "ls_sizes.txt"), "w") as f:
        f.write("".join(f"{rows} {n}\n" for rows, n in sizes))
    xs, gs, dxs = [], [], []
    for rows, n in sizes:
        x = (torch.randn(rows, n, generator=g) * 4).requires_grad_()
        up = torch.randn(rows, n, generator=g)
        torch.softmax(x, -1).backward(up)
        xs, gs, dxs = xs + [x.detach()], gs + [up], dxs + [x.grad]
    for name, ts in (("sm_x", xs), ("sm_g", gs), ("sm_dx", dxs)):
        save(name, torch.cat([t.reshape(-1) for t in ts]))
    with open(os.path.join(OUT, "sm_sizes.txt"), "w") as f:
        f.write("".join(f"{rows} {n}\n" for rows, n in sizes))
    xs, sums = [], []
    shapes = [(5, 3), (37, 5), (2, 8), (9, 40), (300, 64), (300, 33), (3, 88), (17, 7)]
    for rows, cols in shapes:
        x = torch.randn(rows, cols, generator=g)
        xs, sums = xs + [x], sums + [x.sum(0)]
    save("col_x", torch.cat([t.reshape(-1) for t in xs]))
    save("col_sums", torch.cat(sums))
    with open(os.path.join(OUT, "col_sizes.txt"), "w") as f:
        f.write("".join(f"{rows} {cols}\n" for rows, cols in shapes))
    xs, sums = [], []
    shapes = [(5, 12, 4), (6, 7, 8), (3, 5, 6), (9, 4, 10), (2, 16, 16), (20, 3, 5)]
    for rows, a, b in shapes:
        x = torch.randn(rows, a, b, generator=g)
        xs, sums = xs + [x], sums + [x.permute(0, 2, 1).sum(0)]
    save("perm_x", torch.cat([t.reshape(-1) for t in xs]))
    save("perm_sums", torch.cat([t.reshape(-1) for t in sums]))
    with open(os.path.join(OUT, "perm_sizes.txt"), "w") as f:
        f.write("".join(f"{rows} {a} {b}\n" for rows, a, b in shapes))
    print("torch", torch.__version__, "wrote", OUT)


if __name__ == "__main__":
    main()
