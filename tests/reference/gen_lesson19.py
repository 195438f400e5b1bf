#!/usr/bin/env python3
"""gen_lesson19.py - record PyTorch's numbers for lesson 19 (kv-cache-at-scale).

Run with the PyTorch 1.13 the lessons are checked against:

    /usr/bin/python3 tests/reference/gen_lesson19.py

The PyTorch code is not repeated here: it is the block of docs/19-kv-cache-at-scale.md that
`make compare-19` runs (DeepSeek-V2's attention as modeling_deepseek.py writes it, with a
latent cache; DeepSeek-V3's absorbed forward; lesson 15's attention with a contiguous and an
int8 cache; the table of real models; the lesson's prints). For each case below this script
runs that block with the case's flags and `--dump <case directory>`, so
tests/data/lesson19/<case>/ gets:
  <name>.npy   every dump name of the lesson: the parameters under their state_dict names
               (mla.*, gqa.*), hidden_states, continuations, q_pe, k_pe, compressed_kv,
               attn_weights, out, out_absorbed, decoded, decoded_absorbed, paged_out,
               int8_out ('<f4')
  stdout.txt   what the block printed, which the lesson prints in the same order, except the
               lines that measure float rounding inside one program ("max |" with every value
               below 1e-4): each side adds in its own order, so those are printed here only.
and tests/data/lesson19/cases.txt, the list of the runs (tests/harness.h: recorded_case),
which tests/test_lesson19.c reads. With --cases-only it writes cases.txt alone.

The data here were recorded with Debian's reference BLAS (libblas3, the system's default),
one thread.
"""
import os
import re
import sys

import torch

from reference import listed_by_flags, page_block, record_cases, stdout_txt

# The lesson's defaults: a case's flags change them.
DEFAULTS = {"seed": 0, "batch": 1, "prompt": 20, "new": 16, "seqs": 3, "block": 16, "dim": 64,
            "heads": 4, "kv_heads": 2, "q_lora_rank": 48, "kv_lora_rank": 32,
            "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16, "rope_base": 10000,
            "outlier": 10.0}

# case directory -> the lesson's flags. Small sizes on purpose (the data is committed);
# together: the defaults; no query compression (q_lora_rank 0, DeepSeek-V2-Lite's); batch 2;
# a prompt that fills its blocks exactly (no copy on write) and blocks of 4; one sequence;
# no decoded token; a latent as wide as the hidden state; RoPE keys of 16 and 2; base 500000;
# no outlier; MQA and MHA for the paged and int8 caches.
CASES = {
    "seed0": [],
    "seed1_no_q_lora": ["--seed", "1", "--q-lora-rank", "0", "--batch", "2", "--prompt", "6",
                        "--new", "5", "--kv-heads", "1"],
    "seed2_blocks_of_4": ["--seed", "2", "--prompt", "8", "--new", "9", "--block", "4",
                          "--seqs", "4", "--kv-heads", "4", "--outlier", "1"],
    "seed3_one_seq": ["--seed", "3", "--seqs", "1", "--prompt", "5", "--new", "7", "--block", "3",
                      "--dim", "32", "--heads", "2", "--kv-heads", "1", "--kv-lora-rank", "32",
                      "--q-lora-rank", "16", "--qk-rope-head-dim", "16", "--v-head-dim", "8"],
    "seed4_prompt_only": ["--seed", "4", "--new", "0", "--prompt", "7", "--qk-rope-head-dim", "2",
                          "--qk-nope-head-dim", "6", "--v-head-dim", "12", "--rope-base",
                          "500000"],
    "seed5_wide": ["--seed", "5", "--dim", "96", "--heads", "6", "--kv-heads", "3", "--prompt",
                   "11", "--new", "6", "--block", "8", "--kv-lora-rank", "24", "--outlier",
                   "30"],
}


def record(directory, flags):
    block = page_block(19)
    saved_argv = sys.argv
    sys.argv = ["19-kv-cache-at-scale"] + flags + ["--dump", directory]
    try:
        with stdout_txt(directory):
            exec(block, {"__name__": "__main__"})
    finally:
        sys.argv = saved_argv
    path = os.path.join(directory, "stdout.txt")
    with open(path) as f:
        lines = f.read().splitlines(keepends=True)
    print("".join(line for line in lines if measures_rounding(line)), end="")
    with open(path, "w") as f:
        f.write("".join(line for line in lines if not measures_rounding(line)))


def measures_rounding(line):
    """A "max |a - b| = x" line whose every x is below 1e-4 (an int8 cache's error is kept)."""
    values = [abs(float(v)) for v in re.findall(r"\| = ([-+0-9.e]+)", line)]
    values += [abs(float(v)) for v in re.findall(r"\| = [-+0-9.e]+ \(\w+\), ([-+0-9.e]+)", line)]
    return values != [] and max(values) < 1e-4


def main():
    torch.set_num_threads(1)
    record_cases("lesson19", {name: (flags,) for name, flags in CASES.items()}, record,
                 listed_by_flags(DEFAULTS, CASES))


if __name__ == "__main__":
    main()
