#!/usr/bin/env python3
"""bench_pytorch.py - what a reader runs instead of lesson 13, in PyTorch, timed.

    python3 tools/bench_pytorch.py [--threads T] [--seqs 512,2048] [--calls 7]
    chroot DIR /usr/bin/python3 - --threads 2 < tools/bench_pytorch.py    (any other PyTorch)

On lesson 13's --bench sizes (batch 1, 8 heads, head_dim 64, causal and
not) it times, with torch.set_num_threads(T):

  sdpa    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=...),
          where this PyTorch has it (2.0 and later; since 2.1 it runs calls like
          these on the CPU in a fused flash-attention kernel: pytorch/pytorch#103826,
          merged in August 2023, and 2.1's release names SDPA kernels among its
          new CPU features);
  manual  the notes' way: softmax(q @ k^T / sqrt(d) [masked_fill(causal, -inf)]) @ v,
          the mask built once, outside the timing; skipped above seq 4096, where
          its (1, 8, N, N) scores take 2 GiB and more.

Each figure is the best of `calls` calls after one warm-up, under
torch.no_grad(). One line per case, for tools/bench_peers.py:

    torch 2.6.0 seq=2048 causal=0 threads=1 sdpa_ms=61.2 manual_ms=231.4 blas=openblas

(`-` where a path was not run). `blas` is the BLAS library the process has
loaded, from /proc/self/maps where there is one: Debian's python3-torch
uses whatever libblas.so.3 is installed, the reference BLAS by default.

The lesson's tests do not need it: it measures, for the tables of docs/fast-on-a-cpu.md.
"""
import argparse
import math
import time


def best_ms(f, calls):
    f()                                     # the first call allocates and warms up
    best = math.inf
    for _ in range(calls):
        start = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def blas_loaded():
    try:
        with open("/proc/self/maps") as maps:
            names = {line.split("/")[-1].strip() for line in maps if "blas" in line.lower()}
    except OSError:
        return "unknown"
    return ",".join(sorted(names)) or "none"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seqs", default="512,1024,2048,4096,8192")
    parser.add_argument("--calls", type=int, default=7)
    args = parser.parse_args()

    import torch
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    version = torch.__version__.split("+")[0]
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    heads, head_dim = 8, 64
    with torch.no_grad():
        for n in (int(s) for s in args.seqs.split(",")):
            q, k, v = (torch.randn(1, heads, n, head_dim) for _ in range(3))
            mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1) if n <= 4096 else None
            for causal in (0, 1):
                def manual():
                    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
                    if causal:
                        scores = scores.masked_fill(mask, float("-inf"))
                    return torch.softmax(scores, dim=-1) @ v
                sdpa_ms = (best_ms(lambda: sdpa(q, k, v, is_causal=bool(causal)), args.calls)
                           if sdpa is not None else None)
                manual_ms = best_ms(manual, args.calls) if n <= 4096 else None
                text = lambda ms: "-" if ms is None else f"{ms:.1f}"
                print(f"torch {version} seq={n} causal={causal} threads={args.threads} "
                      f"sdpa_ms={text(sdpa_ms)} manual_ms={text(manual_ms)} blas={blas_loaded()}",
                      flush=True)


if __name__ == "__main__":
    main()
