#!/usr/bin/env python3
"""gen_lesson13.py - record PyTorch's numbers for tests/test_lesson13.c.

Run once, from anywhere, with the PyTorch 1.13 the lessons are checked
against:

    /usr/bin/python3 tests/reference/gen_lesson13.py

Lesson 13's page, docs/13-flash-attention.md, holds the PyTorch script that
prints what the lesson prints (the block `make compare-13` runs). This runs
that very block, with each case's flags, and writes
tests/data/lesson13/<case>/:

    query.npy key.npy value.npy   the torch.randn inputs (bit for bit)
    out.npy                        the page's tiled loop in PyTorch, (batch, heads, seq, head_dim)
    out_naive.npy                  torch.softmax(q @ k^T / sqrt(d) [causal mask]) @ v
    lse.npy                        the tiled loop's m + log(l) of every query, (batch, heads, seq)
    stdout.txt                     the lines the block prints that hold no decimal
                                   number and no "max |...|" of rounding (the lesson
                                   prints them identically; the rest is float rounding,
                                   checked through the .npy files)
"""
import contextlib
import io
import re
import sys

import torch

from reference import listed_by_flags, page_block, record_cases, save_all, stdout_txt


# The lesson's defaults: a case's flags change them.
DEFAULTS = {"seed": 0, "batch": 1, "seq": 256, "heads": 8, "kv_heads": 8, "head_dim": 64,
            "causal": False, "block_q": 64, "block_k": 64}

# case directory -> (seed, the lesson's flags). Seed 0 is the lesson's defaults; the others are
# small on purpose (the data is committed) and cover: causal and not;
# kv_heads 1, between, and heads; seq 1; a seq that is a multiple of neither
# block; blocks larger than seq; blocks of 1; a head_dim that is not a
# multiple of 16 (the kernel's last columns); randn of fewer than 16 numbers
# (its other path).
CASES = {
    "seed0": (0, []),
    "seed1_causal_mqa": (1, ["--batch", "2", "--seq", "37", "--heads", "4", "--kv-heads", "1",
                             "--head-dim", "16", "--causal", "--block-q", "8", "--block-k", "5"]),
    "seed2_gqa": (2, ["--seq", "50", "--heads", "6", "--kv-heads", "2", "--head-dim", "24",
                      "--block-q", "16", "--block-k", "7"]),
    "seed3_seq1": (3, ["--seq", "1", "--heads", "2", "--kv-heads", "2", "--head-dim", "5",
                       "--causal"]),
    "seed4_blocks1": (4, ["--seq", "7", "--heads", "3", "--kv-heads", "3", "--head-dim", "4",
                          "--causal", "--block-q", "1", "--block-k", "1"]),
    "seed5_big_blocks": (5, ["--seq", "20", "--heads", "4", "--kv-heads", "2", "--head-dim",
                             "32", "--block-q", "4096", "--block-k", "4096"]),
    "seed6_causal": (6, ["--seq", "100", "--heads", "8", "--kv-heads", "4", "--head-dim", "64",
                         "--causal"]),
}




def record(directory, seed, flags):
    own_argv, sys.argv = sys.argv, ["compare-13", "--seed", str(seed)] + flags
    printed = io.StringIO()
    names = {"__name__": "__main__"}
    with contextlib.redirect_stdout(printed):
        exec(page_block(13), names)
    sys.argv = own_argv   # cases.txt names this script from it
    save_all(directory, {name: names[name] for name in
                         ("query", "key", "value", "out", "out_naive", "lse")})
    lines = [line for line in printed.getvalue().split("\n")
             if not re.search(r"\d\.\d", line) and "max |" not in line]
    with stdout_txt(directory):
        print("\n".join(lines), end="")
    diff = (names["out"] - names["out_naive"]).abs().max().item()
    print("seed %d %s: max |out - out_naive| = %.3g" % (seed, " ".join(flags), diff))


def main():
    torch.set_num_threads(1)
    # The C test runs seed 0 without flags: the lesson's defaults.
    flags = {name: (["--seed", str(seed)] if seed != 0 else []) + case_flags
             for name, (seed, case_flags) in CASES.items()}
    record_cases("lesson13", CASES, record, listed_by_flags(DEFAULTS, flags))


if __name__ == "__main__":
    main()
