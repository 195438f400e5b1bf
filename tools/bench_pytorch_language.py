#!/usr/bin/env python3
"""bench_pytorch_language.py - lesson 17's training steps against PyTorch's, on one core.

    make build/cc/lessons/17-language
    python3 tools/bench_pytorch_language.py [--rounds 3] [--python "CMD"] [--cpu 0]
                                            [--no-openblas]

Times one training step (get_batch, the forward, the loss, loss.backward(),
clip_grad_norm_, AdamW's step) of the same model on the same text in the lesson
and in PyTorch, at the lesson's sizes and at its --bench's larger model (twice
the width, four layers, twice the window), each on one thread pinned to one
core, and prints tokens per second. Run it from the repository's root (the
text's path is relative to it).

PyTorch runs the model of docs/17-language.md itself: this script takes the
definitions from the page's PyTorch block (everything before its "the run"
line: the text, the tokenizer, the model, get_batch), so both time the same
model on the same windows. It runs

    1.13+OpenBLAS  Debian's python3-torch (1.13; this python, or /usr/bin/python3
                   if this one has no torch) on OpenBLAS, one thread: the
                   library is fetched once into a cache folder with apt-get
                   download (it is not installed, the system's BLAS is left
                   alone) and put first on LD_LIBRARY_PATH; OPENBLAS_CORETYPE
                   and OPENBLAS_L2_SIZE are unset, so OpenBLAS picks its own
                   kernel for this CPU (--no-openblas: the system's BLAS)
    --python CMD   another PyTorch too, such as a 2.x in a chroot:
                   --python "chroot /path/to/trixie /usr/bin/python3"
                   (the worker's code goes to it on stdin)

The machine may be shared, so everything is measured in one window, in rounds:
each round times each PyTorch (a fresh process: 3 steps to warm up, then the
best of 5 batches of steps) and then runs `lesson-17 --bench`; the table keeps
the best of every case over all rounds and prints the lesson's steps per second
against each PyTorch's. Not needed by any test: it prints a Markdown table for
docs/fast-on-a-cpu.md, lesson 17's section.
"""
import argparse
import base64
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LESSON = os.path.join(ROOT, "build", "cc", "lessons", "17-language")
PAGE = os.path.join(ROOT, "docs", "17-language.md")
MARKER = "<!-- make compare-17 runs the next block -->"

# After the page's definitions: argv = [flags of case 1, flags of case 2, ...] (each a
# string); one line per case.
TIMING = r'''
import sys, time
torch.set_num_threads(1)
blas = sorted({line.split()[-1] for line in open("/proc/self/maps")
               if "blas" in line.lower() or "dnnl" in line.lower()})
print(f"# torch {torch.__version__}, {torch.get_num_threads()} thread, libraries: "
      f"{' '.join(blas) or 'none found'}", flush=True)
for flags in CASES:
    args, _ = parser.parse_known_args(flags.split())
    N, B, C, H, KV = args.seq, args.batch, args.dim, args.heads, args.kv_heads
    D, R = C // H, H // KV
    F_ = args.hidden if args.hidden > 0 else (8 * C // 3 + 7) // 8 * 8
    torch.manual_seed(0)
    model = TinyLlama()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.99), eps=1e-8,
                            weight_decay=args.weight_decay)

    def step(i):
        x, y = get_batch()
        loss = F.cross_entropy(model(x).view(-1, NV), y.view(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for group in opt.param_groups:
            group["lr"] = lr_at(i + 1)   # the page's lr_at counts steps from 1
        opt.step()

    for i in range(3):
        step(i)
    per_batch = 20 if C * args.layers * N * B < 2e5 else 5 if C * args.layers * N * B < 2e7 else 2
    best = float("inf")
    for batch_of_steps in range(5):
        start = time.perf_counter()
        for i in range(per_batch):
            step(3 + batch_of_steps * per_batch + i)
        best = min(best, (time.perf_counter() - start) / per_batch)
    print(f"torch layers={args.layers} dim={C} seq={N} batch={B} ms_per_step={best * 1e3:.3f}",
          flush=True)
'''


def text_prologue():
    """Code that writes the lesson's text (the default corpus) to a temporary file where the
    worker runs and passes it as --text: a PyTorch in a chroot does not see this folder."""
    path = os.path.join(ROOT, "lessons", "17-language", "corpus.txt")
    encoded = base64.b64encode(open(path, "rb").read()).decode("ascii")
    return ("import base64, sys, tempfile\n"
            "_text = tempfile.NamedTemporaryFile(suffix='.txt', delete=False)\n"
            f"_text.write(base64.b64decode('{encoded}'))\n"
            "_text.close()\n"
            "sys.argv += ['--text', _text.name]\n")


def page_definitions():
    """The page's PyTorch block up to its "the run" line: the text, the tokenizer, the model,
    get_batch, lr_at."""
    lines = open(PAGE, encoding="utf-8").read().split("\n")
    start = lines.index(MARKER) + 2
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("# --- the run"))
    return "\n".join(lines[start:end]) + "\n"


def openblas_env():
    """Debian's libopenblas0-pthread, unpacked once into a cache folder (not installed)."""
    cache = os.environ.get("PEERS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "attention-peers")
    folder = os.path.join(cache, "openblas")
    lib = os.path.join(folder, "root", "usr", "lib", "x86_64-linux-gnu", "openblas-pthread")
    if not os.path.exists(os.path.join(lib, "libblas.so.3")):
        os.makedirs(folder, exist_ok=True)
        subprocess.run(["apt-get", "download", "libopenblas0-pthread"], cwd=folder, check=True,
                       capture_output=True)
        deb = next(f for f in os.listdir(folder) if f.endswith(".deb"))
        subprocess.run(["dpkg", "-x", deb, "root"], cwd=folder, check=True)
    env = one_thread_env()
    env["LD_LIBRARY_PATH"] = lib
    return env


def one_thread_env():
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    env["OPENBLAS_NUM_THREADS"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    return env


def run(command, stdin=None, env=None, cwd=None):
    result = subprocess.run(command, input=stdin, env=env, capture_output=True, text=True,
                            cwd=cwd)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr}")
    return result.stdout


def python_with_torch():
    """The first of this python and Debian's /usr/bin/python3 that can import torch."""
    for python in (sys.executable, "/usr/bin/python3"):
        if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 0:
            return python
    sys.exit("no python here imports torch: install python3-torch (Debian's PyTorch 1.13)")


def fields(line):
    return dict(pair.split("=", 1) for pair in line.split()[1:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--python", default=None, help="another python with torch (a 2.x)")
    parser.add_argument("--cpu", default="0", help="taskset -c this ('' for no pinning)")
    parser.add_argument("--no-openblas", action="store_true")
    args = parser.parse_args()
    if not os.access(LESSON, os.X_OK):
        sys.exit(f"{LESSON} is missing: make build/cc/lessons/17-language first")
    pin = ["taskset", "-c", args.cpu] if args.cpu else []
    lines = [line for line in run(pin + [LESSON, "--bench"], cwd=ROOT).splitlines()
             if line.startswith("bench ")]
    cases = []   # (label, flags for the page's script)
    for line in lines:
        f = fields(line)
        heads = 4 * int(f["dim"]) // 64
        flags = (f"--tokenizer {f['tokenizer']} --layers {f['layers']} --dim {f['dim']} "
                 f"--seq {f['seq']} --batch {f['batch']} --heads {heads} --kv-heads {heads // 2}")
        cases.append((f"layers={f['layers']} dim={f['dim']} seq={f['seq']} batch={f['batch']}",
                      flags))
    worker = (text_prologue() + page_definitions() +
              f"CASES = {[flags for _, flags in cases]!r}\n" + TIMING)
    env = openblas_env() if not args.no_openblas else one_thread_env()
    pythons = [("1.13+OpenBLAS" if not args.no_openblas else "1.13", [python_with_torch()], env)]
    if args.python:
        pythons.append(("other", shlex.split(args.python), one_thread_env()))
    best = {}        # (who, case) -> ms
    notes = []
    for round_ in range(args.rounds):
        for who, command, env in pythons:
            out = run(pin + command + ["-", "--steps", "1000"], stdin=worker, env=env, cwd=ROOT)
            for line in out.splitlines():
                if line.startswith("# "):
                    if round_ == 0:
                        notes.append(f"{who}: {line[2:]}")
                    version = re.search(r"torch (\S+),", line)
                    if who == "other" and version:
                        pythons[-1] = (f"{version.group(1)}", command, env)
                        who = version.group(1)
                    continue
                f = fields(line)
                case = f"layers={f['layers']} dim={f['dim']} seq={f['seq']} batch={f['batch']}"
                key = (who, case)
                best[key] = min(best.get(key, float("inf")), float(f["ms_per_step"]))
        for line in run(pin + [LESSON, "--bench"], cwd=ROOT).splitlines():
            if line.startswith("bench "):
                f = fields(line)
                case = f"layers={f['layers']} dim={f['dim']} seq={f['seq']} batch={f['batch']}"
                key = ("lesson", case)
                best[key] = min(best.get(key, float("inf")), float(f["ms_per_step"]))
        print(f"round {round_ + 1} of {args.rounds} done", file=sys.stderr)
    names = [who for who, _, _ in pythons]
    print(f"training steps on one core{' (taskset -c ' + args.cpu + ')' if args.cpu else ''}, "
          f"best of {args.rounds} rounds: ms per step, and the lesson's tokens per second")
    for note in notes:
        print(f"- {note}")
    print()
    print("| model | lesson 17 ms | lesson tokens/s | " +
          " | ".join(f"PyTorch {n} ms" for n in names) + " | " +
          " | ".join(f"lesson's tokens/s against {n}'s" for n in names) + " |")
    print("|---" * (3 + 2 * len(names)) + "|")
    for case, _ in cases:
        mine = best[("lesson", case)]
        theirs = [best[(n, case)] for n in names]
        f = fields("x " + case)
        tokens = int(f["seq"]) * int(f["batch"]) / (mine * 1e-3)
        print(f"| {case} | {mine:.2f} | {tokens:.0f} | " + " | ".join(f"{t:.2f}" for t in theirs) +
              " | " + " | ".join(f"{t / mine:.2f}x" for t in theirs) + " |")


if __name__ == "__main__":
    main()
