#!/usr/bin/env python3
"""compare_runs_14.py - make compare-14 on many sizes and flags, and how often a digit differs.

    /usr/bin/python3 tools/compare_runs_14.py [--runs 40] [--draw-seed 14] [--list]

Draws `--runs` flag sets for lesson 14 with Python's random.Random(--draw-seed)
(the same list on every machine: --list prints it and stops), then runs

    make -s compare-14 ARGS="<flags>"

for each, from the repository's root (make builds the lesson first), and
counts, from compare's own report (tools/compare.py), the numbers the lesson
and the page's PyTorch script print otherwise: by compare's kind (last digit,
near zero, different) and by part (part 1, lesson 5's module, or part 2, the
tiled backward; a number is in part 2 when the lesson prints it after its
line "-- part 2"), and the lines of the page's output compare could not line
up with the lesson's (which fail the run). The numbers compare lists as
rounding size (the `max |...|` lines, which measure float rounding inside
each program) are not counted. It uses make's default compiler (build/cc).

Each flag set draws, uniformly: --seed 0 to 9999, --batch 1 to 3, --seq 1 to
12, --dim 1 to 8, --heads 1 to 6, --kv-heads a divisor of --heads, --head-dim
1 to 20, --block-q and --block-k 1 to 8, and --causal and --train each with
probability 1/2.

docs/14-attention-backward.md ("How close is close") quotes its summary.
Not run by make test: 40 runs take a few minutes. Exit status 0 when every
compare passed, 1 otherwise.
"""
import argparse
import os
import random
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LESSON = os.path.join("build", "cc", "lessons", "14-attention-backward")
ENTRY = re.compile(r"^  (last digit|near zero|different): lesson line (\d+) "
                   r"\(page output line \d+\): lesson (\S+), PyTorch ([^,\s]+)")
COUNTS = re.compile(r"^numbers: (\d+) compared: (\d+) identical")
UNMATCHED = re.compile(r"^  no lesson line like the page's output line")


def draw(rng):
    """One flag set, as a list of arguments."""
    heads = rng.randint(1, 6)
    kv_heads = rng.choice([k for k in range(1, heads + 1) if heads % k == 0])
    flags = ["--seed", rng.randint(0, 9999), "--batch", rng.randint(1, 3),
             "--seq", rng.randint(1, 12), "--dim", rng.randint(1, 8), "--heads", heads,
             "--kv-heads", kv_heads, "--head-dim", rng.randint(1, 20),
             "--block-q", rng.randint(1, 8), "--block-k", rng.randint(1, 8)]
    flags = [str(x) for x in flags]
    if rng.randint(0, 1):
        flags.append("--causal")
    if rng.randint(0, 1):
        flags.append("--train")
    return flags


def part2_line(flags):
    """The lesson's line number (from 1) of its "-- part 2" heading, with these flags."""
    out = subprocess.run([os.path.join(ROOT, LESSON)] + flags, capture_output=True, text=True,
                         check=True).stdout.split("\n")
    return next(i + 1 for i, line in enumerate(out) if line.startswith("-- part 2"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--draw-seed", type=int, default=14)
    parser.add_argument("--list", action="store_true", help="print the flag sets and stop")
    args = parser.parse_args()
    rng = random.Random(args.draw_seed)
    runs = [draw(rng) for _ in range(args.runs)]
    if args.list:
        for k, flags in enumerate(runs, 1):
            print(f"{k:3d}  {' '.join(flags)}")
        return 0
    failed, all_identical, compared = 0, 0, 0
    others = []      # (run, kind, part, lesson's number, PyTorch's, the lesson's line)
    unmatched = []   # (run, the page's line no lesson line is like)
    for k, flags in enumerate(runs, 1):
        result = subprocess.run(["make", "-s", "compare-14", "ARGS=" + " ".join(flags)],
                                cwd=ROOT, capture_output=True, text=True)
        report = result.stdout.split("\n")
        part2 = part2_line(flags)
        found, lost = [], []
        for i, line in enumerate(report):
            counts = COUNTS.match(line)
            if counts:
                compared += int(counts.group(1))
            entry = ENTRY.match(line)
            if entry:
                part = 2 if int(entry.group(2)) >= part2 else 1
                text = report[i + 1].strip() if i + 1 < len(report) else ""
                found.append((k, entry.group(1), part, entry.group(3), entry.group(4), text))
            if UNMATCHED.match(line):
                lost.append((k, line.strip()))
        if result.returncode != 0:
            failed += 1
            if not lost:   # failed otherwise: show all it said
                print(result.stdout + result.stderr)
        all_identical += not found and not lost
        others.extend(found)
        unmatched.extend(lost)
        verdict = "passed" if result.returncode == 0 else "FAILED"
        print(f"{k:3d}  {' '.join(flags)}: {verdict}, "
              + ("every number identical" if not found and not lost
                 else f"{len(found)} printed otherwise, {len(lost)} lines not lined up"))
        for _, kind, part, a, b, text in found:
            print(f"       part {part}, {kind}: lesson {a}, PyTorch {b}   ({text[:60]})")
        for _, line in lost:
            print(f"       {line}")
    print(f"\n{len(runs)} runs: make compare-14 passed in {len(runs) - failed}, failed in "
          f"{failed}; {compared} numbers compared in all")
    print(f"  {all_identical} runs printed every compared number identically; "
          f"{len(others)} numbers printed otherwise:")
    for kind in ("last digit", "near zero", "different"):
        print(f"  {kind:12s} {sum(1 for o in others if o[1] == kind):3d}")
    for part in (1, 2):
        print(f"  in part {part}    {sum(1 for o in others if o[2] == part):3d}")
    print(f"  not lined up {len(unmatched):3d}  (lines of the page's output like no lesson line: "
          f"each fails its run)")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
