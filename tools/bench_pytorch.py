#!/usr/bin/env python3
"""bench_pytorch.py - lesson 13's tiled kernel against PyTorch, on one core.

    make build/cc/lessons/13-flash-attention
    /usr/bin/python3 tools/bench_pytorch.py [rounds]       (default 3 rounds)

PyTorch computes attention the way a learner writes it,

    torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d) [masked_fill(causal, -inf)], dim=-1) @ v

on batch 1, 8 heads, head_dim 64 (the lesson's --bench sizes), with one
thread: torch.set_num_threads(1) and OPENBLAS_NUM_THREADS=1. The causal mask
is built once, outside the timing. The machine may be shared, so the two are
measured in one window, interleaved: each round times PyTorch (a fresh
process, best of 7 calls per case), then runs `lesson-13 --bench`; the table
keeps the best time of every case over all rounds, and the highest FMA peak
the lesson measured. The last column is PyTorch's peak extra memory: the
growth of the process's maximum resident size over one call, in a fresh
process per case.

Not needed by any test: it prints a Markdown table for
docs/13-flash-attention.md.
"""
import math
import os
import re
import resource
import subprocess
import sys
import time

HEADS, HEAD_DIM = 8, 64
SEQS = [512, 1024, 2048, 4096]
LESSON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "cc",
                      "lessons", "13-flash-attention")


def one_thread_env():
    """The environment for PyTorch: one OpenBLAS thread, and none of the
    OpenBLAS overrides a shell may carry (they change which kernels it picks)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    env["OPENBLAS_NUM_THREADS"] = "1"
    return env


def attention(q, k, v, mask):
    import torch
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def best_ms(f, calls):
    f()                                     # the first call allocates and warms up
    best = math.inf
    for _ in range(calls):
        start = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def libraries_loaded(torch, words):
    """The loaded libraries whose paths hold one of `words` (/proc/self/maps);
    where there is no /proc (another system, or a container without it), what
    torch says it was built with instead."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            return sorted({line.split()[-1] for line in maps
                           if any(word in line.lower() for word in words)})
    except OSError:
        built = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
        return [f"(no /proc/self/maps to read; torch built with "
                f"BLAS_INFO={built.group(1) if built else 'unknown'})"]


def torch_worker():
    """Time PyTorch at every size; print one 'torch seq=... causal=... ms=...' line each."""
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    ms = best_ms(lambda: a @ b, 5)
    blas = libraries_loaded(torch, ("blas",))
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} thread, BLAS loaded: "
          f"{' '.join(blas) or 'none found'}; a 1024^3 matmul runs at "
          f"{2 * 1024 ** 3 / ms / 1e6:.0f} GFLOP/s")
    for n in SEQS:
        q, k, v = (torch.randn(1, HEADS, n, HEAD_DIM) for _ in range(3))
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        for causal in (0, 1):
            ms = best_ms(lambda: attention(q, k, v, mask if causal else None), 7)
            print(f"torch seq={n} causal={causal} ms={ms:.1f}", flush=True)


def torch_memory_worker(n, causal):
    """PyTorch's peak extra memory for one call, in MiB."""
    import torch
    torch.set_num_threads(1)
    q, k, v = (torch.randn(1, HEADS, n, HEAD_DIM) for _ in range(3))
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1) if causal else None
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = attention(q, k, v, mask)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    del out
    print(f"{(after - before) / 1024:.0f}")


def run(command, env=None):
    return subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    me = os.path.abspath(__file__)
    torch_ms, tiled_ms, peak, notes = {}, {}, 0.0, []
    for r in range(rounds):
        text = run([sys.executable, me, "--torch-worker"], one_thread_env())
        if r == 0:
            notes = [line for line in text.splitlines() if line.startswith("#")]
        for m in re.finditer(r"torch seq=(\d+) causal=(\d) ms=([\d.]+)", text):
            key = (int(m.group(1)), int(m.group(2)))
            torch_ms[key] = min(torch_ms.get(key, math.inf), float(m.group(3)))
        text = run([LESSON, "--bench"])
        for m in re.finditer(r"bench seq=(\d+) causal=(\d) naive_ms=\S+ tiled_ms=([\d.]+)", text):
            key = (int(m.group(1)), int(m.group(2)))
            tiled_ms[key] = min(tiled_ms.get(key, math.inf), float(m.group(3)))
        m = re.search(r"FMA peak of this core, measured: .*?, ([\d.]+) GFLOP/s", text)
        peak = max(peak, float(m.group(1)))
        print(f"round {r + 1} of {rounds} done", file=sys.stderr)
    print("\n".join(notes))
    print(f"# best of {rounds} interleaved rounds; the lesson's FMA peak: {peak:.1f} GFLOP/s")
    print("| seq | causal | PyTorch ms | tiled ms | tiled faster by | tiled GFLOP/s "
          "| % of peak | PyTorch extra MiB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in SEQS:
        for causal in (0, 1):
            t, f = torch_ms[(n, causal)], tiled_ms[(n, causal)]
            flops = 2 * HEADS * n * (n + 1) * HEAD_DIM if causal else 4 * HEADS * n * n * HEAD_DIM
            gflops = flops / f / 1e6
            memory = run([sys.executable, me, "--torch-memory", str(n), str(causal)],
                         one_thread_env()).strip()
            print(f"| {n} | {causal} | {t:.1f} | {f:.1f} | {t / f:.2f}x | {gflops:.1f} "
                  f"| {100 * gflops / peak:.0f}% | {memory} |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--torch-worker"]:
        torch_worker()
    elif sys.argv[1:2] == ["--torch-memory"]:
        torch_memory_worker(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
