#!/usr/bin/env python3
"""bench_peers.py - lesson 13 against what readers run instead, in one window: the tables
of docs/fast-on-a-cpu.md, section "Against what readers run today".

    make build/cc/lessons/13-flash-attention
    python3 tools/bench_peers.py [--rounds 3] [--threads 1,2] [--calls 3]
        [--torch "LABEL=COMMAND"]... [--torch-one-thread "LABEL=COMMAND"]...
        [--ort-node DIR] [--onnx-python PYTHON]

In each round, interleaved, everything on lesson 13's --bench sizes (batch 1,
8 heads, head_dim 64, seq 512 to 8192, causal and not):

  lesson 13   `lesson-13 --bench --threads T` for the largest T of --threads,
              which times T threads and one, interleaved (its own rounds);
  PyTorch     tools/bench_pytorch.py, fed on stdin to each COMMAND (a Python
              with torch: "python3 -", "chroot DIR /usr/bin/python3 -", a
              wrapper that sets LD_LIBRARY_PATH for another BLAS), for each T:
              scaled_dot_product_attention where it exists, and the notes'
              manual attention (--torch-one-thread: on one thread only);
  ONNX Rt     tools/bench_onnxruntime.py with the onnxruntime-node package in
              DIR, for each T (its model written by --onnx-python, which
              must import onnx).

Each peer figure is the best of --calls calls in each round. Every program
runs pinned to T cores with taskset (-c 0 for one thread):
PyTorch's SDPA uses a free second core even after set_num_threads(1). On T
cores PyTorch runs twice, with set_num_threads(T) and (1), and the better of
each figure is kept: on the machine of docs/fast-on-a-cpu.md its SDPA was
faster with 1 thread left free to use both cores than with 2. The table keeps each figure's best over the rounds, and prints, per thread
count, each peer's ms and how many times the lesson's time it takes (above
1: the lesson is faster). Run it on an otherwise idle machine: a job on
another core slows memory-bound code more than the rest.
"""
import argparse
import math
import os
import re
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LESSON = os.path.join(HERE, "..", "build", "cc", "lessons", "13-flash-attention")


def pinned(threads):
    return ["taskset", "-c", "0" if threads == 1 else f"0-{threads - 1}"]


def run(command, stdin=None):
    with open(stdin) if stdin else open(os.devnull) as given:
        done = subprocess.run(command, stdin=given, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bench_peers: {' '.join(command)} failed:\n{done.stderr}")
    return done.stdout


CASE = re.compile(r"seq=(\d+) causal=(\d) threads=(\d+)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--torch", action="append", default=[], metavar="LABEL=COMMAND")
    parser.add_argument("--torch-one-thread", action="append", default=[],
                        metavar="LABEL=COMMAND")
    parser.add_argument("--ort-node", metavar="DIR")
    parser.add_argument("--onnx-python", default="python3")
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    best, notes, peak_share = {}, {}, []

    def keep(peer, line, ms_text):
        m = CASE.search(line)
        if m and ms_text not in (None, "-"):
            key = (peer, int(m.group(1)), int(m.group(2)), int(m.group(3)))
            best[key] = min(best.get(key, math.inf), float(ms_text))

    for r in range(args.rounds):
        most = max(threads)
        text = run(pinned(most) + [LESSON, "--bench", "--threads", str(most)])
        notes["lesson"] = [line for line in text.splitlines()
                           if line.startswith(("CPU:", "FMA peak", "  avx", "  scalar"))]
        share = re.search(r"- tiled: (\d+)% of the core's peak", text)
        if share:                                   # seq 2048, not causal, one thread
            peak_share.append(int(share.group(1)))
        for line in text.splitlines():
            m = re.match(r"\s+(\d+)\s+([01])\s+([\d.]+)\s+\d+%\s+([\d.]+)\s+\d+%\s+[\d.]+x$", line)
            if m:                                   # the one-thread against T-threads table
                n, causal = m.group(1), m.group(2)
                keep("lesson 13", f"seq={n} causal={causal} threads=1", m.group(3))
                keep("lesson 13", f"seq={n} causal={causal} threads={most}", m.group(4))
            elif line.startswith("bench "):
                keep("lesson 13", line, re.search(r"tiled_ms=([\d.]+)", line).group(1))
        specs = [(s, threads) for s in args.torch] + [(s, [1]) for s in args.torch_one_thread]
        for spec, counts in specs:
            label, command = spec.split("=", 1)
            for t in counts:
                # On T cores PyTorch also gets set_num_threads(1): its SDPA then
                # still uses the other cores, and was faster so than with T
                # threads on this machine. The better of the two is kept.
                for asked in sorted({t, 1}):
                    text = run(pinned(t) + shlex.split(command) +
                               ["--threads", str(asked), "--calls", str(args.calls)],
                               stdin=os.path.join(HERE, "bench_pytorch.py"))
                    for line in text.splitlines():
                        line = re.sub(r"threads=\d+", f"threads={t}", line)   # T cores
                        version = line.split()[1] if line.startswith("torch ") else "?"
                        notes[label] = f"{label}: torch {version}, " + line.split()[-1]
                        keep(f"{label} SDPA", line, re.search(r"sdpa_ms=(\S+)", line).group(1))
                        keep(f"{label} manual", line,
                             re.search(r"manual_ms=(\S+)", line).group(1))
        if args.ort_node:
            for t in threads:
                text = run(pinned(t) + shlex.split(args.onnx_python) +
                           [os.path.join(HERE, "bench_onnxruntime.py"), args.ort_node,
                            "--threads", str(t), "--calls", str(args.calls)])
                for line in text.splitlines():
                    notes["ort"] = f"ONNX Runtime {line.split()[1]} (onnxruntime-node)"
                    keep("ONNX Runtime MHA", line, re.search(r"mha_ms=(\S+)", line).group(1))
        print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)

    print("\n".join(notes.pop("lesson", [])))
    for note in notes.values():
        print(note)
    peers = sorted({p for p, *_ in best if p != "lesson 13"},
                   key=lambda p: (not p.endswith("SDPA"), not p.startswith("ONNX"), p))
    if peak_share:
        print(f"lesson 13 at seq 2048, not causal, one thread: {max(peak_share)}% of the FMA peak "
              f"measured in the same rounds (rounds: {', '.join(f'{p}%' for p in peak_share)})")
    print(f"best of {args.rounds} interleaved rounds, ms; in brackets: the peer's time over the "
          "lesson's (above 1: the lesson is faster)")
    for t in threads:
        print(f"\n{t} thread{'s' if t > 1 else ''}:\n")
        print("| seq | causal | lesson 13 | " + " | ".join(peers) + " |")
        print("|---:|---:|---:|" + "---:|" * len(peers))
        for n, causal in sorted({(n, c) for (_, n, c, tt) in best if tt == t}):
            mine = best.get(("lesson 13", n, causal, t))
            cells = []
            for p in peers:
                ms = best.get((p, n, causal, t))
                cells.append("-" if ms is None else
                             f"{ms:.1f} ({ms / mine:.2f}x)" if mine else f"{ms:.1f}")
            print(f"| {n} | {causal} | {'-' if mine is None else f'{mine:.1f}'} | "
                  + " | ".join(cells) + " |")

    # Issue 19's goal, as ratios of this run's figures.
    def ratio(n, causal, t):   # the fastest peer's time over the lesson's, on t threads
        mine = best.get(("lesson 13", n, causal, t))
        theirs = [best[(p, n, causal, t)] for p in peers if (p, n, causal, t) in best]
        return min(theirs) / mine if mine and theirs else None

    def said(value, goal, text):
        mark = "-" if value is None else "met" if value >= goal else "MISSED"
        shown = "-" if value is None else f"{value:.2f}"
        print(f"- {text}: {shown} (goal {goal:g}): {mark}")

    print("\nthe goal (B=1, 8 heads of 64):")
    said(ratio(2048, 0, 1), 1.15, "seq 2048, one thread, not causal: fastest peer / lesson")
    said(ratio(2048, 1, 1), 1.5, "seq 2048, one thread, causal: fastest peer / lesson")
    cases = [r for (n, c) in sorted({(n, c) for (_, n, c, t) in best if t == 1})
             for r in [ratio(n, c, 1)] if r is not None]
    said(min(cases) if cases else None, 1.0, "every seq, one thread: the closest peer / lesson")
    if 2 in threads:
        one, two = best.get(("lesson 13", 2048, 0, 1)), best.get(("lesson 13", 2048, 0, 2))
        said(one / two if one and two else None, 1.8, "seq 2048: two threads over one")
        pairs = [r for (n, c) in sorted({(n, c) for (_, n, c, t) in best if t == 2})
                 for r in [ratio(n, c, 2)] if r is not None]
        said(min(pairs) if pairs else None, 1.0, "two threads: the closest peer / lesson")
    if peak_share:
        said(max(peak_share) / 100, 0.85, "seq 2048, one thread: share of the FMA peak")


if __name__ == "__main__":
    main()
