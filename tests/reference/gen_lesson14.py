#!/usr/bin/env python3
"""gen_lesson14.py - record PyTorch's numbers for tests/test_lesson14.c.

Run once, from anywhere, with the PyTorch 1.13 the lessons are checked
against:

    /usr/bin/python3 tests/reference/gen_lesson14.py

Lesson 14's page, docs/14-attention-backward.md, holds the PyTorch script
that prints what the lesson prints (the block `make compare-14` runs). This
runs that very block, with each case's flags, and writes
tests/data/lesson14/<case>/:

    part 1, lesson 5's module and autograd's gradients:
      X.npy mask.npy <state_dict names>.npy grad_out.npy   the draws (bit for bit)
      [noise.npy]                                            dropout's, with --train
      Q K V scores att_weight [att_weight_dropped] output ret          the forward
      X.grad <parameter>.grad output.grad V.grad [att_weight_dropped.grad]
      att_weight.grad scores.grad Q.grad K.grad                     autograd's .grad
    part 2, lesson 13's attention:
      query.npy key.npy value.npy grad_attn_out.npy            the draws
      attn_out.npy lse.npy                                     the forward and its logsumexp
      query.grad.npy key.grad.npy value.grad.npy               autograd's .grad
    stdout.txt   the lines the block prints that hold no decimal number and no
                 "max |...|" of rounding (the lesson prints them identically;
                 the rest is float rounding, checked through the .npy files)
"""
import contextlib
import io
import re
import sys

import torch

from reference import listed_by_flags, page_block, record_cases, save, save_all, stdout_txt

DEFAULTS = {"seed": 0, "batch": 3, "seq": 4, "dim": 2, "heads": 2, "kv_heads": 2, "head_dim": 4,
            "block_q": 2, "block_k": 2, "causal": False, "train": False}


# case directory -> (seed, the lesson's flags); tests/data/lesson14/cases.txt
# lists them for the C test. Small on purpose (the data is committed); together
# they cover: the padding mask and the causal one; dropout in train mode;
# kv_heads 1, between and heads; seq 1; a seq that is a multiple of neither
# block; blocks of 1; a head_dim that is not a multiple of 16.
CASES = {
    "seed0": (0, []),
    "seed1_causal": (1, ["--causal", "--seq", "6", "--block-q", "4", "--block-k", "3"]),
    "seed2_train": (2, ["--train", "--batch", "2", "--seq", "5", "--dim", "4"]),
    "seed3_mqa": (3, ["--causal", "--seq", "9", "--heads", "4", "--kv-heads", "1", "--head-dim",
                      "8", "--block-q", "4", "--block-k", "5"]),
    "seed4_gqa": (4, ["--batch", "2", "--seq", "7", "--heads", "6", "--kv-heads", "2",
                      "--head-dim", "20", "--block-q", "3", "--block-k", "4"]),
    "seed5_seq1": (5, ["--seq", "1", "--causal"]),
    "seed6_blocks1": (6, ["--train", "--causal", "--seq", "5", "--block-q", "1", "--block-k",
                          "1"]),
    "seed7_mha": (7, ["--batch", "1", "--seq", "33", "--dim", "8", "--heads", "4", "--kv-heads",
                      "4", "--head-dim", "32", "--block-q", "16", "--block-k", "16"]),
}


def record(directory, seed, flags):
    sys.argv = ["compare-14", "--seed", str(seed)] + flags
    printed = io.StringIO()
    names = {"__name__": "__main__"}
    with contextlib.redirect_stdout(printed):
        exec(page_block(14), names)
    net, s = names["net"], names["s"]
    save_all(directory, {name: names[name] for name in ("X", "mask", "grad_out")})
    save_all(directory, net.state_dict())
    save(directory, "ret", names["ret"])
    for name in ("Q", "K", "V", "scores", "att_weight", "output"):
        save(directory, name, s[name])
        save(directory, name + ".grad", s[name].grad)
    if s["noise"] is not None:
        save(directory, "noise", s["noise"])
        save(directory, "att_weight_dropped", s["att_weight_dropped"])
        save(directory, "att_weight_dropped.grad", s["att_weight_dropped"].grad)
    save(directory, "X.grad", names["X"].grad)
    for name, parameter in net.named_parameters():
        save(directory, name + ".grad", parameter.grad)
    for name in ("query", "key", "value"):
        save(directory, name, names[name])
        save(directory, name + ".grad", names[name].grad)
    save_all(directory, {name: names[name] for name in ("grad_attn_out", "attn_out", "lse")})
    lines = [line for line in printed.getvalue().split("\n")
             if not re.search(r"\d\.\d", line) and "max |" not in line]
    with stdout_txt(directory):
        print("\n".join(lines), end="")
    print("seed %d %s: tiled (PyTorch's loop) against autograd %s" % (
        seed, " ".join(flags),
        [line for line in printed.getvalue().split("\n") if "max |tiled - standard|" in line]))


def main():
    torch.set_num_threads(1)
    # The C test runs seed 0 without flags: the lesson's defaults.
    flags = {name: (["--seed", str(seed)] if seed != 0 else []) + case_flags
             for name, (seed, case_flags) in CASES.items()}
    record_cases("lesson14", CASES, record, listed_by_flags(DEFAULTS, flags))


if __name__ == "__main__":
    main()
