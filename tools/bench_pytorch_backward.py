#!/usr/bin/env python3
"""bench_pytorch_backward.py - lesson 14's tiled backward against PyTorch's, on one core.

    make build/cc/lessons/14-attention-backward
    python3 tools/bench_pytorch_backward.py [--rounds 3] [--seqs 512,1024,2048,4096]
                                            [--python "CMD"] [--cpu 0]

The sibling of tools/bench_pytorch.py, for the backward. PyTorch runs the
backward the two ways a reader meets it, on batch 1, 8 heads, head_dim 64
(the lesson's --bench sizes), one thread:

    sdpa     torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=...)
             (PyTorch 2.x; on a CPU it is the flash-attention kernel, which keeps the
             logsumexp and recomputes the weights in its backward, as lesson 14 does)
    manual   softmax(q @ k.transpose(-2, -1) / sqrt(d) [masked_fill(causal, -inf)]) @ v,
             whose autograd keeps the (N, N) weights

and times `out.backward(grad)` alone: the forward runs first, outside the
timing, as the lesson's bench gives its backward the forward's out and lse.
The machine may be shared, so PyTorch and the lesson are measured in one
window, interleaved: each round times PyTorch (a fresh process, best of 5
backward calls per case), then runs `lesson-14 --bench --seq N` for each N;
the table keeps the best time of every case over all rounds, and the highest
FMA peak the lesson measured. With --cpu C (default 0) both run under
`taskset -c C`: one thread means one core (PyTorch 2.6's SDPA uses a second
core when it is free to, even after torch.set_num_threads(1)).

--python "CMD" runs PyTorch with another interpreter: the PyTorch 2.x of a
chroot, say, --python "chroot /path/to/trixie /usr/bin/python3". The worker's
code goes to it on stdin, so nothing needs copying into the chroot. Without
it, this script's own python runs PyTorch (Debian's torch 1.13 has no SDPA:
then only the manual backward is timed).

Not needed by any test: it prints a Markdown table for docs/fast-on-a-cpu.md,
lesson 14's section "Against PyTorch".
"""
import argparse
import math
import os
import re
import shlex
import subprocess
import sys

HEADS, HEAD_DIM = 8, 64
LESSON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "cc",
                      "lessons", "14-attention-backward")

# What runs in the PyTorch process: argv = [seqs, calls]; one line per case.
WORKER = r'''
import math, re, sys, time
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
torch.manual_seed(0)
seqs, calls = [int(n) for n in sys.argv[1].split(",")], int(sys.argv[2])
try:   # the BLAS and oneDNN libraries loaded; without /proc, how torch was built
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        blas = sorted({line.split()[-1] for line in maps
                       if "blas" in line.lower() or "dnnl" in line.lower()})
except OSError:
    built = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
    blas = [f"(no /proc/self/maps to read; torch built with "
            f"BLAS_INFO={built.group(1) if built else 'unknown'})"]
print(f"# torch {torch.__version__}, {torch.get_num_threads()} thread, CPU capability "
      f"{torch.backends.cpu.get_cpu_capability() if hasattr(torch.backends, 'cpu') else '?'}, "
      f"libraries loaded: {' '.join(blas) or 'none found'}", flush=True)


def manual(q, k, v, causal, mask):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(mask, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


for n in seqs:
    q, k, v = (torch.randn(1, 8, n, 64, requires_grad=True) for _ in range(3))
    g = torch.randn(1, 8, n, 64)
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    ways = {"manual": lambda causal: manual(q, k, v, causal, mask)}
    if hasattr(F, "scaled_dot_product_attention"):
        ways["sdpa"] = lambda causal: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    for causal in (0, 1):
        for name, forward in ways.items():
            if name == "manual" and n > 4096:
                continue                       # its (N, N) weights: gigabytes
            best = math.inf
            for call in range(calls + 1):      # the first call warms up
                out = forward(bool(causal))
                start = time.perf_counter()
                out.backward(g)
                seconds = time.perf_counter() - start
                q.grad = k.grad = v.grad = None
                if call > 0:
                    best = min(best, seconds)
            print(f"torch {name} seq={n} causal={causal} ms={best * 1e3:.1f}", flush=True)
'''


def one_thread_env():
    """One OpenBLAS/OpenMP thread, and none of the OpenBLAS overrides a shell may carry."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    env["OPENBLAS_NUM_THREADS"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    return env


def run(command, stdin=None, env=None):
    return subprocess.run(command, input=stdin, env=env, capture_output=True, text=True,
                          check=True).stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seqs", default="512,1024,2048,4096")
    parser.add_argument("--python", default=sys.executable,
                        help="the command that runs a python with torch")
    parser.add_argument("--cpu", default="0", help="taskset -c this ('' for no pinning)")
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()
    seqs = [int(n) for n in args.seqs.split(",")]
    pin = ["taskset", "-c", args.cpu] if args.cpu else []
    torch_ms, tiled_ms, loops_ms, peak, notes = {}, {}, {}, 0.0, []
    for r in range(args.rounds):
        text = run(pin + shlex.split(args.python) + ["-", args.seqs, str(args.calls)],
                   stdin=WORKER, env=one_thread_env())
        if r == 0:
            notes = [line for line in text.splitlines() if line.startswith("#")]
        for m in re.finditer(r"torch (\w+) seq=(\d+) causal=(\d) ms=([\d.]+)", text):
            key = (m.group(1), int(m.group(2)), int(m.group(3)))
            torch_ms[key] = min(torch_ms.get(key, math.inf), float(m.group(4)))
        for n in seqs:
            text = run(pin + [LESSON, "--bench", "--seq", str(n)])
            # bench seq=N causal=C loops_ms=X tiled_ms=Y ...: loops_ms is "-" where the
            # lesson's loops did not run (their P would not fit)
            for m in re.finditer(r"bench seq=(\d+) causal=(\d) loops_ms=(\S+) tiled_ms=([\d.]+)",
                                 text):
                key = (int(m.group(1)), int(m.group(2)))
                tiled_ms[key] = min(tiled_ms.get(key, math.inf), float(m.group(4)))
                if m.group(3) != "-":
                    loops_ms[key] = min(loops_ms.get(key, math.inf), float(m.group(3)))
            if not any(key[0] == n for key in tiled_ms):
                sys.exit(f"lesson-14 --bench --seq {n} printed no 'bench seq={n} ...' "
                         f"line:\n{text}")
            # absent with the scalar twins (ATTN_KERNELS=scalar), which measure no peak
            m = re.search(r"FMA peak of this core, measured: .*?, ([\d.]+) GFLOP/s", text)
            peak = max(peak, float(m.group(1))) if m else peak
            kernels = re.search(r"kernels: (\S+)", text).group(1)
        print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)
    print("\n".join(notes))
    print(f"# best of {args.rounds} interleaved rounds{', taskset -c ' + args.cpu if pin else ''}; "
          f"lesson kernels {kernels}, its FMA peak "
          f"{f'{peak:.1f} GFLOP/s' if peak else 'not measured (scalar twins)'}")
    print("| seq | causal | PyTorch SDPA ms | PyTorch manual ms | lesson loops ms "
          "| lesson tiled ms | tiled faster than SDPA by | tiled GFLOP/s | % of peak |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in seqs:
        for causal in (0, 1):
            t = tiled_ms[(n, causal)]
            sdpa = torch_ms.get(("sdpa", n, causal))
            manual = torch_ms.get(("manual", n, causal))
            loops = loops_ms.get((n, causal))
            flops = (5 * HEADS * n * (n + 1) * HEAD_DIM if causal
                     else 10 * HEADS * n * n * HEAD_DIM)
            gflops = flops / t / 1e6

            def cell(x, fmt="{:.1f}"):
                return "-" if x is None else fmt.format(x)

            print(f"| {n} | {causal} | {cell(sdpa)} | {cell(manual)} | {cell(loops)} | {t:.1f} "
                  f"| {cell(sdpa and sdpa / t, '{:.2f}x')} | {gflops:.1f} "
                  f"| {cell(100 * gflops / peak if peak else None, '{:.0f}%')} |")


if __name__ == "__main__":
    main()
