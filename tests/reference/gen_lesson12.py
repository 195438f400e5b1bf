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
  stdout.txt   what the block printed, which the lesson must print in the
               same order, except the lines with "max |": those are
               differences of float rounding, which depend on the order in
               which each implementation adds (PyTorch's are about 1e-7, the
               lesson's often 0), so they are printed here but not recorded.
"""
import sys

from reference import drop_rounding_lines, listed_by_flags, page_block, record_cases, stdout_txt

# The lesson's defaults: a case's flags change them.
DEFAULTS = {"seed": 0, "batch": 2, "seq": 5, "dim": 16, "heads": 4, "intermediate": 64,
            "position": "absolute", "max_positions": 16, "pad": 1, "head_mask": -1, "past": 0,
            "encoder_seq": 0, "encoder_width": 16, "chunk": 0, "train": False}

# case directory -> the lesson's flags
CASES = {
    "seed0": [],
    "seed1_relative_key_past3": ["--seed", "1", "--position", "relative_key", "--past", "3", "--seq", "2"],
    "seed2_relative_key_query_past4_seq1": ["--seed", "2", "--position", "relative_key_query", "--past", "4",
                                            "--seq", "1", "--pad", "2"],
    "seed3_cross_relative_key": ["--seed", "3", "--encoder-seq", "6", "--encoder-width", "12",
                                 "--position", "relative_key", "--head-mask", "1"],
    "seed4_cross_same_length": ["--seed", "4", "--encoder-seq", "5", "--position", "relative_key_query",
                                "--batch", "3", "--pad", "0"],
    "seed5_chunk2_past2": ["--seed", "5", "--chunk", "2", "--seq", "4", "--past", "2", "--batch", "1",
                           "--head-mask", "3", "--intermediate", "32"],
    "seed6_train": ["--seed", "6", "--train", "--past", "2", "--seq", "3", "--position", "relative_key",
                    "--encoder-seq", "3", "--chunk", "1", "--pad", "2"],
    "seed7_pad_all": ["--seed", "7", "--pad", "5", "--heads", "2", "--dim", "8"],
    "seed9_train_absolute": ["--seed", "9", "--train", "--batch", "1", "--dim", "32", "--heads", "8",
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


def main():
    record_cases("lesson12", {name: (flags,) for name, flags in CASES.items()}, record,
                 listed_by_flags(DEFAULTS, CASES))


if __name__ == "__main__":
    main()
