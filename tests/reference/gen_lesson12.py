#!/usr/bin/env python3
"""gen_lesson12.py - record PyTorch's numbers for lesson 12 (bert-layer).

Run with the PyTorch 1.13 the lessons are checked against (CPU, no MKL, so
train-mode dropout takes the generic path the C code repeats):

    /usr/bin/python3 tests/reference/gen_lesson12.py

The PyTorch code is not repeated here: it is the block of
docs/12-bert-layer.md that `make compare-12` runs (the post's classes, fixed,
with transformers' BertIntermediate and apply_chunking_to_forward, and the
lesson's prints). For each case below this script runs that block with the
case's flags and `--dump <case directory>`, so tests/data/lesson12/<case>/
gets:
  <name>.npy   every dump name of the lesson: the parameters under their
               state_dict names, prefix hidden_states encoder_hidden_states
               attention_mask attention_probs cross_attention_probs
               present_key present_value attention_output layer_output
               (those that exist for the case), '<f4'
  stdout.txt   what the block printed with --all (every part), which the
               lesson must print in the same order, except the lines with
               "max |": those are differences of float rounding, which
               depend on the order in
               which each implementation adds (PyTorch's are about 1e-7, the
               lesson's often 0), so they are printed here but not recorded.
And tests/data/lesson12/posts_errors.txt: what PyTorch raises, or that it
runs, when the post's own relative positions (the block's
PostsBertSelfAttention) meet a cache or image features of other lengths.

Which BLAS: the committed .npy files were recorded with PyTorch on OpenBLAS
(OPENBLAS_CORETYPE=Haswell); the stdout.txt files and posts_errors.txt were
last written with Debian's default reference BLAS. A run with either gives
the same text, and .npy values that differ by float rounding only (inside
the tests' tolerances), so a new case need not regenerate the others.
"""
import contextlib
import io
import os
import sys

from reference import DATA, drop_rounding_lines, listed_by_flags, page_block, record_cases, stdout_txt

# The lesson's defaults: a case's flags change them.
DEFAULTS = {"seed": 0, "batch": 2, "seq": 5, "dim": 16, "heads": 4, "intermediate": 64,
            "position": "absolute", "max_positions": 16, "pad": 1, "head_mask": -1, "past": 0,
            "encoder_seq": 0, "encoder_width": 16, "chunk": 0, "train": False, "part": 0,
            "all": False}

# case directory -> the lesson's flags. Each runs with --all, so that its
# stdout.txt holds every part.
CASES = {
    "seed0": ["--all"],
    "seed1_relative_key_past3": ["--seed", "1", "--all", "--position", "relative_key", "--past", "3", "--seq", "2"],
    "seed2_relative_key_query_past4_seq1": ["--seed", "2", "--all", "--position", "relative_key_query", "--past", "4",
                                            "--seq", "1", "--pad", "2"],
    "seed3_cross_relative_key": ["--seed", "3", "--all", "--encoder-seq", "6", "--encoder-width", "12",
                                 "--position", "relative_key", "--head-mask", "1"],
    "seed4_cross_same_length": ["--seed", "4", "--all", "--encoder-seq", "5", "--position", "relative_key_query",
                                "--batch", "3", "--pad", "0"],
    "seed5_chunk2_past2": ["--seed", "5", "--all", "--chunk", "2", "--seq", "4", "--past", "2", "--batch", "1",
                           "--head-mask", "3", "--intermediate", "32"],
    "seed6_train": ["--seed", "6", "--all", "--train", "--past", "2", "--seq", "3", "--position", "relative_key",
                    "--encoder-seq", "3", "--chunk", "1", "--pad", "2"],
    "seed7_pad_all": ["--seed", "7", "--all", "--pad", "5", "--heads", "2", "--dim", "8"],
    "seed9_train_absolute": ["--seed", "9", "--all", "--train", "--batch", "1", "--dim", "32", "--heads", "8",
                             "--intermediate", "128", "--chunk", "5"],
}


def record(directory, flags):
    block = page_block(12)
    saved_argv = sys.argv
    sys.argv = ["12-bert-layer"] + flags + ["--dump", directory]
    try:
        with stdout_txt(directory):
            exec(block, {"__name__": "__main__"})
    finally:
        sys.argv = saved_argv
    drop_rounding_lines(directory)


# The post's relative positions at sizes where PyTorch stops and where it
# runs: (where, T, L): T queries against L keys, L = past + T in
# self-attention, L = M image features in cross-attention. Batch 2, 4 heads.
POSTS_SIZES = [("self", 2, 5), ("self", 1, 5), ("self", 5, 6), ("self", 4, 4), ("self", 3, 6),
               ("cross", 5, 6), ("cross", 5, 5), ("cross", 3, 1), ("cross", 1, 7), ("cross", 2, 4),
               ("cross", 4, 2)]


def record_posts_errors():
    """tests/data/lesson12/posts_errors.txt: what PyTorch does with the post's
    relative positions (PostsBertSelfAttention of the page's block, the
    post's forward as the post writes it) at POSTS_SIZES, one line each:
    `<position> <where> <T> <L> <batch*heads>` and a tab, then PyTorch's
    error text, or `runs`. The lesson's posts_positions_error() prints the
    same texts; test_lesson12 checks it against this file."""
    saved_argv = sys.argv
    sys.argv = ["12-bert-layer", "--part", "2"]
    namespace = {"__name__": "__main__"}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(page_block(12), namespace)
    finally:
        sys.argv = saved_argv
    torch, BertConfig = namespace["torch"], namespace["BertConfig"]
    B, H, C, E = 2, 4, 16, 12
    lines = []
    for position in ("relative_key", "relative_key_query"):
        config = BertConfig(hidden_size=C, num_attention_heads=H, position_embedding_type=position,
                            max_position_embeddings=16, attention_probs_dropout_prob=0.1,
                            encoder_width=E)
        for where, T, L in POSTS_SIZES:
            torch.manual_seed(0)
            attention = namespace["PostsBertSelfAttention"](config, where == "cross").eval()
            hidden_states = torch.randn(B, T, C)
            try:
                if where == "cross":
                    attention(hidden_states, None, None, torch.randn(B, L, E), None)
                else:
                    past = (torch.randn(B, H, L - T, C // H), torch.randn(B, H, L - T, C // H))
                    attention(hidden_states, None, None, None, None, past)
                text = "runs"
            except RuntimeError as error:
                text = str(error)
            lines.append(f"{position} {where} {T} {L} {B * H}\t{text}\n")
    path = os.path.join(DATA, "lesson12", "posts_errors.txt")
    with open(path, "w") as f:
        f.write("# What PyTorch 1.13 does with the post's relative positions (tests/reference/"
                "gen_lesson12.py):\n# position, self- or cross-attention, T queries, L keys, "
                "batch*heads, a tab, its error or 'runs'.\n")
        f.write("".join(lines))
    print("wrote", path)


def main():
    record_cases("lesson12", {name: (flags,) for name, flags in CASES.items()}, record,
                 listed_by_flags(DEFAULTS, CASES))
    record_posts_errors()


if __name__ == "__main__":
    main()
