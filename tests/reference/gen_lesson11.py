#!/usr/bin/env python3
"""gen_lesson11.py - record PyTorch's numbers for lesson 11 (vit-block).

Run with the PyTorch 1.13 the lessons are checked against:

    /usr/bin/python3 tests/reference/gen_lesson11.py

It runs the PyTorch code of docs/11-vit-block.md (the block marked for
`make compare-11`), so what the tests compare against is exactly the code a
learner reads. For each case below it calls that code's run() with the
lesson's flags (after torch.manual_seed(seed): Block(...), x =
torch.randn(batch, seq, dim), block.train()/eval(), out = block(x), then the
numpy cell on torch.rand(3, 768) three times) and writes
tests/data/lesson11/<case>/:
  <name>.npy   every dump name of the lesson: x, the block's state_dict
               (norm1.*, attn.qkv.weight [attn.qkv.bias], attn.proj.*,
               norm2.*, mlp.fc1.*, mlp.fc2.*), attn_probs (batch, heads, seq,
               seq), out (batch, seq, dim), np_out (3, 768); '<f4'
  stdout.txt   what the code printed: the lesson prints the same lines in
               the same order (and its remarks between them).
The build and the tests never run Python.
"""

from reference import listed_by_flags, page_block, record_cases, save_all, stdout_txt


# The lesson's defaults: a case's flags change them.
DEFAULTS = {"seed": 0, "batch": 2, "seq": 5, "dim": 16, "heads": 4, "mlp_ratio": 4.0,
            "qkv_bias": False, "drop": 0.0, "attn_drop": 0.0, "drop_path": 0.0, "train": False}

# case directory -> the lesson's flags. The Linear layers are PyTorch's BLAS
# (OpenBLAS) against the lesson's plain loops: a float rounding apart, which
# changes a printed 4th decimal when a value sits on a digit's boundary
# (about 1 run in 20). Seed 3 at the qkv_bias case's sizes is such a run
# (out[0, 0, 11] is -1.22274983 in PyTorch, -1.22275007 in the lesson:
# -1.2227 against -1.2228), so that case uses seed 4; the others are the
# first seeds tried. seed6_mlp_ratio2.5 (a float ratio: hidden = int(16 * 2.5)
# = 40) was recorded later, alone, with Debian's reference BLAS (the default
# libblas.so.3) rather than OpenBLAS: the tolerances cover either.
CASES = {
    "seed0": [],                                                  # the defaults
    "seed4_qkv_bias": ["--seed", "4", "--batch", "3", "--seq", "7", "--dim", "24", "--heads",
                       "4", "--mlp-ratio", "2", "--qkv-bias"],    # head_dim 6: * scale != / sqrt
    "seed5_train": ["--seed", "5", "--batch", "4", "--seq", "6", "--dim", "32", "--heads", "8",
                    "--mlp-ratio", "3", "--train", "--drop", "0.1", "--attn-drop", "0.2",
                    "--drop-path", "0.25"],                       # every probability non-zero
    "seed2_tiny": ["--seed", "2", "--batch", "1", "--seq", "1", "--dim", "1", "--heads", "1",
                   "--mlp-ratio", "1"],                           # one-element GELU, LayerNorm
    "seed6_mlp_ratio2.5": ["--seed", "6", "--mlp-ratio", "2.5"],  # Block(16, 4, mlp_ratio=2.5)
}




def record(directory, *args):
    page = {"__name__": "lesson11_page"}        # not "__main__": define, do not run
    exec(page_block(11), page)
    with stdout_txt(directory):
        tensors = page["run"](page["parse_args"](list(args)))
    save_all(directory, tensors)


def main():
    record_cases("lesson11", CASES, record, listed_by_flags(DEFAULTS, CASES))


if __name__ == "__main__":
    main()
