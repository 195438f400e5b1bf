#!/usr/bin/env python3
"""gen_lesson18.py - record PyTorch's runs of lesson 18 (attention's variants).

Run with the PyTorch 1.13 the lessons are checked against, on Debian's default
BLAS (the reference BLAS, libblas3), one thread:

    /usr/bin/python3 tests/reference/gen_lesson18.py

The PyTorch code is not repeated here: it is the block of
docs/18-attention-variants.md that `make compare-18` runs (the model with its
variants, the task, the training loop, the experiments, the lesson's prints).
For each case below this script runs that block with the case's flags and
`--dump <case directory>`, so tests/data/lesson18/<case>/ gets what the
lesson's --dump writes, and stdout.txt what the block printed:
  --experiment none (one model of each variant): the initial parameters under
    their state_dict names; step 1's input_ids, labels, logits and every
    <name>.grad (before clipping); losses and grad_norms, one a step; the
    example the maps look at and its attn_weights (layers, heads, N, N);
  the experiments: variant_losses and variant_grad_norms (part 1, the
    loss and the |grad| norms of each variant's first step), and each
    experiment's <name>_losses (every step of every model it trains) and
    <name>_accuracy (its table, as fractions).
and tests/data/lesson18/cases.txt, the list of the runs (tests/harness.h:
recorded_case), which tests/test_lesson18.c reads. Small sizes and few steps
on purpose (the data is committed); every number must agree bit for bit.

And tests/data/lesson18/autograd_double/: the block's own attention functions
(softmax_attention with ALiBi's bias and a window, linear_attention) run in
float64 under autograd on float32 inputs, L = sum of g * y: their q, k, v, g
and the y, dq, dk, dv autograd gives, rounded to float32 and laid out as the
lesson lays them out ((B, N, heads, D)), for the lesson's float32 backward to
meet within rounding.
With --cases-only it writes cases.txt alone.
"""
import glob
import os
import shutil
import sys

import torch

from reference import DATA, listed_by_flags, page_block, record_cases, save, stdout_txt

DEFAULTS = {"seed": 0, "experiment": "all", "positions": "rope", "window": 65536,
            "attention": "softmax", "layers": 2, "dim": 64, "heads": 4, "kv_heads": 2,
            "hidden": 64, "keys": 12, "values": 10, "seq": 8, "batch": 16, "steps": 1200,
            "warmup": 20, "clip": 1.0, "lr": 0.003, "weight_decay": 0.01}

SMALL = ["--dim", "16", "--heads", "2", "--kv-heads", "1", "--hidden", "24", "--batch", "4"]

# case directory -> the lesson's flags. Each variant alone (--experiment none): RoPE, ALiBi
# with 6 heads (the slopes' rule for a head count that is not a power of two) and with a
# window, the sinusoidal and the learned tables, no positions, windows of 3 and 2 (the rolling
# buffer wraps), linear attention with groups of 2 and of 1, with head_dims 8 and 4 and
# sizes whose phi meets the C library's exp on a tail, over 3 layers; then the experiments at
# small sizes: all of them, and the window experiment at 16 tokens.
CASES = {
    "none_rope": ["--experiment", "none"] + SMALL + ["--steps", "5", "--keys", "6",
                                                     "--values", "5"],
    "none_alibi_six_heads": ["--experiment", "none", "--positions", "alibi", "--dim", "24",
                             "--heads", "6", "--kv-heads", "3", "--hidden", "16", "--seq", "10",
                             "--keys", "8", "--values", "4", "--batch", "3", "--steps", "4",
                             "--seed", "1"],
    "none_sinusoidal": ["--experiment", "none", "--positions", "sinusoidal", "--dim", "20",
                        "--heads", "2", "--kv-heads", "2", "--hidden", "8", "--batch", "5",
                        "--steps", "4", "--seed", "2"],
    "none_learned": ["--experiment", "none", "--positions", "learned"] + SMALL +
                    ["--steps", "6", "--warmup", "2", "--seed", "3"],
    "none_nope": ["--experiment", "none", "--positions", "none"] + SMALL +
                 ["--steps", "4", "--clip", "0", "--seed", "4"],
    "none_window": ["--experiment", "none", "--window", "3", "--seq", "12", "--keys", "6"] +
                   SMALL + ["--steps", "4", "--seed", "5"],
    "none_window_alibi": ["--experiment", "none", "--window", "2", "--positions", "alibi"] +
                         SMALL + ["--steps", "3", "--seed", "6"],
    "none_linear": ["--experiment", "none", "--attention", "linear", "--dim", "32", "--heads",
                    "4", "--kv-heads", "2", "--hidden", "16", "--batch", "4", "--steps", "5",
                    "--seed", "7"],
    "none_linear_tails": ["--experiment", "none", "--attention", "linear", "--positions",
                          "none", "--dim", "12", "--heads", "3", "--kv-heads", "3", "--hidden",
                          "8", "--seq", "6", "--keys", "4", "--values", "3", "--batch", "3",
                          "--steps", "4", "--seed", "8"],
    "none_linear_learned_three_layers": ["--experiment", "none", "--attention", "linear",
                                         "--positions", "learned", "--layers", "3", "--dim",
                                         "16", "--heads", "4", "--kv-heads", "1", "--hidden",
                                         "16", "--batch", "2", "--steps", "3", "--seed", "9"],
    "all_small": ["--steps", "6"] + SMALL + ["--values", "5"],
    "window_at_16": ["--experiment", "window", "--seq", "16", "--dim", "16", "--heads", "4",
                     "--kv-heads", "2", "--hidden", "16", "--batch", "3", "--steps", "5",
                     "--seed", "10"],
    "linear_one_layer": ["--experiment", "linear", "--layers", "1", "--steps", "4"] + SMALL +
                        ["--seed", "11"],
}


def record(directory, flags):
    block = page_block(18)
    for old in glob.glob(os.path.join(directory, "*")):
        shutil.rmtree(old) if os.path.isdir(old) else os.remove(old)
    saved_argv = sys.argv
    sys.argv = ["18-attention-variants"] + flags + ["--dump", directory]
    try:
        with stdout_txt(directory):
            exec(block, {"__name__": "__main__"})
    finally:
        sys.argv = saved_argv


# The block's functions in float64 (autograd_double/): B sequences of N tokens, H heads of D
# over KV key/value heads.
DOUBLE_SIZES = ["--dim", "16", "--heads", "4", "--kv-heads", "2", "--seq", "7"]


def record_autograd_double():
    directory = os.path.join(DATA, "lesson18", "autograd_double")
    os.makedirs(directory, exist_ok=True)
    saved_argv = sys.argv
    sys.argv = ["18-attention-variants"] + DOUBLE_SIZES
    try:
        block = {"__name__": "lesson18_functions"}   # its functions, not its run
        exec(page_block(18), block)
    finally:
        sys.argv = saved_argv
    H, KV, D, n = block["H"], block["KV"], block["D"], block["N"]
    slopes = torch.tensor(block["alibi_slopes"](H), dtype=torch.float64)
    distance = (torch.arange(n)[None, :] - torch.arange(n)[:, None]).double()
    pieces = {
        "softmax_alibi_window3": lambda q, k, v: block["softmax_attention"](
            q, k, v, slopes[:, None, None] * distance, 3)[0],
        "softmax_all_keys": lambda q, k, v: block["softmax_attention"](q, k, v, None, 65536)[0],
        "linear": lambda q, k, v: block["linear_attention"](q, k, v),
    }
    torch.manual_seed(18)
    for name, attend in pieces.items():
        q, g = torch.randn(2, H, n, D), torch.randn(2, H, n, D)
        k, v = torch.randn(2, KV, n, D), torch.randn(2, KV, n, D)
        leaves = [x.double().requires_grad_() for x in (q, k, v)]
        with torch.enable_grad():   # (the block turns it off for its runs)
            y = attend(*leaves)
            (g.double() * y).sum().backward()
        for tensor, what in zip([q, k, v, g, y] + [x.grad for x in leaves],
                                ["q", "k", "v", "g", "y", "dq", "dk", "dv"]):
            save(directory, f"{name}.{what}", tensor.detach().float().transpose(1, 2))
    print("wrote", directory)


def main():
    torch.set_num_threads(1)
    record_cases("lesson18", {name: (flags,) for name, flags in CASES.items()}, record,
                 listed_by_flags(DEFAULTS, CASES))
    if "--cases-only" not in sys.argv[1:]:
        record_autograd_double()


if __name__ == "__main__":
    main()
