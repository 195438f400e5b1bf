#!/usr/bin/env python3
"""gen_lesson15.py - record PyTorch's numbers for lesson 15 (llama-block).

Run with the PyTorch 1.13 the lessons are checked against:

    /usr/bin/python3 tests/reference/gen_lesson15.py

The PyTorch code is not repeated here: it is the block of docs/15-llama-block.md
that `make compare-15` runs (Hugging Face's Llama decoder layer written out,
Meta's interleaved RoPE beside it, and the lesson's prints). For each case
below this script runs that block with the case's flags and `--dump <case
directory>`, so tests/data/lesson15/<case>/ gets:
  <name>.npy   every dump name of the lesson: the nine parameters under their
               state_dict names, hidden_states, inv_freq, cos, sin, normed,
               query_states, key_states, value_states, attn_weights, out,
               cached_out ('<f4')
  stdout.txt   what the block printed, which the lesson prints in the same
               order, except the lines that measure float rounding inside one
               program ("max |" ... below 1e-4, "largest difference"): each
               side adds in its own order, so those are printed here only.
and tests/data/lesson15/cases.txt, the list of the runs (tests/harness.h:
recorded_case), which tests/test_lesson15.c reads. Then silu/x.npy and y.npy:
F.silu on 1005 numbers, which the lesson's silu must give bit for bit.
With --cases-only it writes cases.txt alone.

The data here was recorded with Debian's reference BLAS (libblas3, the
system's default), one thread.
"""
import os
import re
import sys

import torch

from reference import DATA, listed_by_flags, page_block, record_cases, save, stdout_txt

# The lesson's defaults: a case's flags change them.
DEFAULTS = {"seed": 0, "batch": 1, "prompt": 3, "new": 3, "dim": 64, "heads": 4, "kv_heads": 2,
            "hidden": 0, "rope_base": 10000, "rope_layout": "rotate_half"}

# case directory -> the lesson's flags. Small sizes on purpose (the data is
# committed); together: both layouts, kv_heads 1, between and heads, bases
# 10000, 500000 and 1000000, one token (no decode step), a short prompt and
# many decode steps, head_dim 4 (PyTorch's complex multiply on its scalar
# path), 16 and 32 (its vector path), batch 2 and 3; head_dim 48 (base 10000)
# and 96 (base 500000), where Sleef's powf on inv_freq's whole blocks of 16
# rounds a theta_i otherwise than the C library's powf.
CASES = {
    "seed0": [],
    "seed1_interleaved_mqa": ["--seed", "1", "--rope-layout", "interleaved", "--kv-heads", "1",
                              "--batch", "2", "--prompt", "2", "--new", "4", "--dim", "32"],
    "seed2_mha_base500000": ["--seed", "2", "--kv-heads", "4", "--rope-base", "500000", "--dim",
                             "32", "--prompt", "4", "--new", "2"],
    "seed3_one_token": ["--seed", "3", "--prompt", "1", "--new", "0", "--dim", "16", "--heads",
                        "2", "--kv-heads", "1"],
    "seed4_decode_long": ["--seed", "4", "--prompt", "2", "--new", "8", "--dim", "48", "--heads",
                          "6", "--kv-heads", "3", "--rope-layout", "interleaved", "--hidden", "96"],
    "seed5_head_dim32": ["--seed", "5", "--dim", "64", "--heads", "2", "--kv-heads", "1",
                         "--rope-layout", "interleaved", "--rope-base", "1000000", "--batch", "3"],
    "seed6_head_dim4": ["--seed", "6", "--dim", "8", "--heads", "2", "--kv-heads", "2",
                        "--rope-layout", "interleaved", "--prompt", "2", "--new", "2"],
    "seed7_head_dim48": ["--seed", "7", "--dim", "96", "--heads", "2", "--kv-heads", "1",
                         "--hidden", "16", "--rope-layout", "interleaved", "--prompt", "2",
                         "--new", "2"],
    "seed8_head_dim96": ["--seed", "8", "--dim", "96", "--heads", "1", "--kv-heads", "1",
                         "--hidden", "16", "--rope-base", "500000", "--prompt", "2", "--new", "2"],
}

def record(directory, flags):
    block = page_block(15)
    saved_argv = sys.argv
    sys.argv = ["15-llama-block"] + flags + ["--dump", directory]
    try:
        with stdout_txt(directory):
            exec(block, {"__name__": "__main__"})
    finally:
        sys.argv = saved_argv
    path = os.path.join(directory, "stdout.txt")
    with open(path) as f:
        lines = f.read().splitlines(keepends=True)
    dropped = [line for line in lines if measures_rounding(line)]
    print("".join(dropped), end="")
    with open(path, "w") as f:
        f.write("".join(line for line in lines if not measures_rounding(line)))


def measures_rounding(line):
    """A "largest difference" line, or a "max |a - b| = x" line whose every x is below 1e-4
    (a real difference, such as another layout's output, is kept)."""
    values = [abs(float(v)) for v in re.findall(r"\| = ([-+0-9.e]+)", line)]
    return "largest difference" in line or (values != [] and max(values) < 1e-4)


def main():
    torch.set_num_threads(1)
    record_cases("lesson15", {name: (flags,) for name, flags in CASES.items()}, record,
                 listed_by_flags(DEFAULTS, CASES))
    if "--cases-only" in sys.argv[1:]:
        return
    silu = os.path.join(DATA, "lesson15", "silu")
    os.makedirs(silu, exist_ok=True)
    x = torch.cat([torch.tensor([-3.0, -1.0, 0.0, 1.0, 3.0]),
                   torch.arange(-500, 500, dtype=torch.float32) / 25])
    save(silu, "x", x)
    save(silu, "y", torch.nn.functional.silu(x))
    print("wrote", silu)


if __name__ == "__main__":
    main()
