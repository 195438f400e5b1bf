#!/usr/bin/env python3
"""gen_lesson16.py - record PyTorch's training for lesson 16 (train).

Run with the PyTorch 1.13 the lessons are checked against, on Debian's default
BLAS (the reference BLAS, libblas3), one thread:

    /usr/bin/python3 tests/reference/gen_lesson16.py

The PyTorch code is not repeated here: it is the block of docs/16-train.md that
`make compare-16` runs (the model, the tasks, the training loop, the lesson's
prints). For each case below this script runs that block with the case's flags,
`--dump <case directory>` and `--save <case directory>/trained`, so
tests/data/lesson16/<case>/ gets what the lesson's --dump writes:
  <name>.npy          the initial parameters, under their state_dict names
  input_ids, labels   step 1's batch (int64); logits, step 1's forward
  <name>.grad.npy     every parameter's gradient at step 1, before clipping
  losses, accuracies, grad_norms   one value a step
  example, attn_weights            the fixed example and its maps (3 moments)
  trained/<name>.npy  the parameters after the last step (what --save trained writes)
  stdout.txt          what the block printed, which the lesson prints too
and tests/data/lesson16/cases.txt, the list of the runs (tests/harness.h:
recorded_case), which tests/test_lesson16.c reads. Small sizes and a few steps
on purpose (the data is committed); every number must agree bit for bit. The
case "defaults" is the lesson's default run: only its stdout.txt, losses and
maps are kept (its tensors would take a megabyte).
With --cases-only it writes cases.txt alone.
"""
import glob
import os
import shutil
import sys

import torch

from reference import listed_by_flags, page_block, record_cases, stdout_txt

DEFAULTS = {"seed": 0, "task": "recall", "layers": 2, "dim": 64, "heads": 4, "kv_heads": 2,
            "hidden": 0, "vocab": 16, "seq": 16, "batch": 32, "steps": 300, "warmup": 20,
            "clip": 1.0, "lr": 0.003, "weight_decay": 0.01}

# case directory -> the lesson's flags. Together: both tasks, 1 to 3 layers, kv_heads 1 (R 2
# and R 5: a group of 5 summed), between, and heads; head_dim 4 and 8; widths and hidden
# sizes with vector tails (12, 20, 32, 56); batches of 2 to 5; clipping off, at 1 and at a
# fraction; warmup shorter than the run (by one step: the last step at a tenth of --lr),
# none, and longer than the run.
CASES = {
    "seed0_recall": ["--dim", "16", "--heads", "2", "--kv-heads", "1", "--seq", "8", "--batch",
                     "4", "--steps", "7", "--warmup", "6"],
    "seed1_reverse": ["--seed", "1", "--task", "reverse", "--dim", "16", "--heads", "4",
                      "--kv-heads", "2", "--vocab", "12", "--seq", "10", "--batch", "3",
                      "--steps", "5", "--warmup", "3", "--lr", "0.01", "--clip", "0.5"],
    "seed2_mha_three_layers": ["--seed", "2", "--layers", "3", "--dim", "12", "--heads", "3",
                               "--kv-heads", "3", "--batch", "2", "--steps", "4", "--clip", "0"],
    "seed3_group_of_five": ["--seed", "3", "--dim", "20", "--heads", "5", "--kv-heads", "1",
                            "--seq", "12", "--vocab", "10", "--batch", "5", "--steps", "3",
                            "--warmup", "0"],
    "seed4_one_layer_reverse": ["--seed", "4", "--task", "reverse", "--layers", "1", "--dim",
                                "8", "--heads", "1", "--kv-heads", "1", "--vocab", "5", "--seq",
                                "4", "--batch", "2", "--steps", "6", "--weight-decay", "0.1"],
    "defaults": [],
}
KEPT_FOR_DEFAULTS = ("stdout.txt", "losses.npy", "accuracies.npy", "grad_norms.npy",
                     "example.npy", "attn_weights.npy")


def record(directory, flags):
    block = page_block(16)
    for old in glob.glob(os.path.join(directory, "*")):
        shutil.rmtree(old) if os.path.isdir(old) else os.remove(old)
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    # run inside the directory, so that the line --save prints names "trained", as the test's
    # run of the lesson in a temporary directory does
    sys.argv = ["16-train"] + flags + ["--dump", ".", "--save", "trained"]
    os.chdir(directory)
    try:
        with stdout_txt("."):
            exec(block, {"__name__": "__main__"})
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
    if os.path.basename(directory) == "defaults":
        shutil.rmtree(os.path.join(directory, "trained"))
        for path in glob.glob(os.path.join(directory, "*")):
            if os.path.basename(path) not in KEPT_FOR_DEFAULTS:
                os.remove(path)


def main():
    torch.set_num_threads(1)
    record_cases("lesson16", {name: (flags,) for name, flags in CASES.items()}, record,
                 listed_by_flags(DEFAULTS, CASES))


if __name__ == "__main__":
    main()
