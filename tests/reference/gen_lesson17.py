#!/usr/bin/env python3
"""gen_lesson17.py - record PyTorch's (and plain Python's) side of lesson 17 (language).

Run with the PyTorch 1.13 the lessons are checked against, on Debian's default BLAS (the
reference BLAS, libblas3), one thread:

    /usr/bin/python3 tests/reference/gen_lesson17.py

1. Runs. The PyTorch code is not repeated here: it is the block of docs/17-language.md that
   `make compare-17` runs (the tokenizers, the model, training, the heads' measures,
   sampling, the lesson's prints). For each case below this script runs that block with the
   case's flags, `--dump <case directory>` and `--save <case directory>/trained`, so
   tests/data/lesson17/<case>/ gets what the lesson's --dump writes:
     <name>.npy          the initial parameters, under their state_dict names
     input_ids, labels   step 1's batch (int64); logits, step 1's forward
     <name>.grad.npy     every parameter's gradient at step 1, before clipping
     losses, grad_norms  one value a step
     eval_train, eval_val, head_measures   every evaluation's losses and the heads' measures
     attn_weights        the sentence's maps (3 moments)
     trained/            the parameters after the last step and tokenizer.txt (--save)
     stdout.txt          what the block printed, the sampled text included
   and tests/data/lesson17/cases.txt, the list of the runs (tests/harness.h: recorded_case).
   Small sizes and few steps on purpose (the data is committed); every number must agree bit
   for bit, every sampled token be the same.
2. Pieces, in plain Python and PyTorch, each a file of tests/data/lesson17/:
     bpe_merges.txt      byte pair merges learned from a few texts (minbpe's loop, written
                         again here, independently of the page's)
     utf8_replace.txt    random bytes and what bytes.decode("utf-8", errors="replace") and
                         errors="backslashreplace" make of them
     multinomial.txt     torch.multinomial(probs, 1) drawn 40 times after manual_seed, for
                         a few distributions (zeros and ties among them), and
                         torch.empty(n).exponential_() after manual_seed
With --cases-only it writes cases.txt alone.
"""
import os
import random
import shutil
import sys
import tempfile
from collections import Counter

import torch

from reference import DATA, ROOT, listed_by_flags, page_block, record_cases, stdout_txt

DEFAULTS = {"seed": 0, "text": "lessons/17-language/corpus.txt", "tokenizer": "chars",
            "merges": 512, "layers": 2, "dim": 64, "heads": 4, "kv_heads": 2, "hidden": 0,
            "seq": 128, "batch": 16, "steps": 800, "warmup": 50, "lr": 0.003,
            "weight_decay": 0.01, "clip": 1.0, "eval_every": 100, "eval_batches": 2,
            "prompt": "Attention ", "sentence": "the keys of the heads",
            "new": 240, "temperature": 0.8, "top_k": 0, "top_p": 0.95}
SMALL_TEXT = "tests/data/lesson17/text.txt"

# case directory -> the lesson's flags. Together: both tokenizers (byte pairs on the small
# mixed English and Chinese text, merges cut short by a pair that no longer comes twice, and
# on the project's pages), 1 to 3 layers, kv_heads 1 (a group of 2) and groups of 1 and 3,
# clipping off and at a fraction, no warmup and a warmup longer than the run, several
# evaluations, greedy and sampled text with top-k and top-p, samples longer than the context
# (the cache starts again from its newest half), and a prompt longer than the context.
CASES = {
    "seed0_chars": ["--dim", "16", "--heads", "2", "--kv-heads", "1", "--seq", "16", "--batch",
                    "4", "--steps", "6", "--eval-every", "3", "--warmup", "2", "--new", "40",
                    "--sentence", "the_keys", "--top-k", "5", "--top-p", "0.9"],
    "seed1_bpe_small_text": ["--seed", "1", "--text", SMALL_TEXT, "--tokenizer", "bpe",
                             "--merges", "300", "--dim", "16", "--heads", "4", "--kv-heads",
                             "2", "--seq", "20", "--batch", "3", "--steps", "5",
                             "--eval-every", "2", "--warmup", "0", "--lr", "0.01", "--clip",
                             "0.5", "--new", "30", "--temperature", "1.2", "--prompt",
                             "注意力", "--sentence", "训练the_model"],
    "seed2_three_layers_greedy": ["--seed", "2", "--layers", "3", "--dim", "12", "--heads",
                                  "3", "--kv-heads", "3", "--seq", "8", "--batch", "2",
                                  "--steps", "4", "--eval-every", "1", "--clip", "0",
                                  "--temperature", "0", "--new", "20", "--prompt",
                                  "The_attention_of_a_head", "--sentence", "a_head"],
    "seed3_bpe_pages": ["--seed", "3", "--tokenizer", "bpe", "--merges", "24", "--dim", "24",
                        "--heads", "3", "--kv-heads", "1", "--layers", "1", "--seq", "12",
                        "--batch", "2", "--steps", "3", "--eval-every", "2", "--eval-batches",
                        "3", "--new", "25", "--top-k", "40", "--top-p", "0.5", "--sentence",
                        "heads"],
}


def record(directory, flags):
    """The page's block in a fresh directory that sees the repository's lessons/ and tests/
    (the default text's path, and the small text's, are relative to the root), with --dump
    dump --save trained as the test runs the lesson; then its files moved to `directory`."""
    block = page_block(17)
    shutil.rmtree(directory)
    os.makedirs(directory)
    work = tempfile.mkdtemp()
    for name in ("lessons", "tests"):
        os.symlink(os.path.join(ROOT, name), os.path.join(work, name))
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    sys.argv = ["17-language"] + flags + ["--dump", "dump", "--save", "trained"]
    os.chdir(work)
    try:
        with stdout_txt(directory):
            exec(block, {"__name__": "__main__"})
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
    for name in os.listdir(os.path.join(work, "dump")):
        shutil.move(os.path.join(work, "dump", name), os.path.join(directory, name))
    shutil.move(os.path.join(work, "trained"), os.path.join(directory, "trained"))
    shutil.rmtree(work)


# --- the pieces --------------------------------------------------------------------------------

def minbpe(ids, merges):
    """Karpathy's minbpe BasicTokenizer.train, written again: counts in a dict that keeps
    its pairs in the order they first come, max() takes the first largest; and the stop
    when no pair comes twice that the lesson adds."""
    learned = []
    for m in range(merges):
        stats = Counter(zip(ids, ids[1:]))
        if not stats:
            break
        pair = max(stats, key=stats.get)
        if stats[pair] < 2:
            break
        learned.append((pair[0], pair[1], stats[pair]))
        out, i = [], 0
        while i < len(ids):
            if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                out.append(256 + m)
                i += 2
            else:
                out.append(ids[i])
                i += 1
        ids = out
    return learned, ids


def record_pieces():
    root = os.path.join(DATA, "lesson17")
    texts = [("aaabdaaabac", 10), ("abcdcdab", 10),
             (open(os.path.join(root, "text.txt"), encoding="utf-8").read(), 200),
             ("训练训练模型的注意力, attention 注意力", 20)]
    with open(os.path.join(root, "bpe_merges.txt"), "w") as f:
        f.write("# texts (as hex UTF-8), the merges asked for, then the merges minbpe learned\n"
                "# ('a b count' each) and the tokens the text became\n")
        for text, merges in texts:
            learned, ids = minbpe(list(text.encode("utf-8")), merges)
            f.write("text %s %d\n" % (text.encode("utf-8").hex(), merges))
            f.write("merges %d %s\n" % (len(learned), " ".join("%d %d %d" % m for m in learned)))
            f.write("ids %d %s\n" % (len(ids), " ".join(map(str, ids))))
    rng = random.Random(17)
    with open(os.path.join(root, "utf8_replace.txt"), "w") as f:
        f.write("# bytes (hex), then what decode(errors='replace') and decode(errors="
                "'backslashreplace') make of them (hex of their UTF-8)\n")
        pieces = [b"\xe8\xae\xad", b"\xe8\xae", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                  b"\xc0\x80", b"\xf0\x9f\x98", b"\x80", b"\xff", b"a", b"\xc3\xa9",
                  b"\xf0\x9f\x98\x80", b"\xe0\x80\xaf", b"\xe0\xa0\x80"]
        for _ in range(300):
            raw = b"".join(rng.choice(pieces) if rng.random() < 0.7 else bytes([rng.randrange(256)])
                           for _ in range(rng.randrange(1, 12)))
            f.write("%s %s %s\n" % (raw.hex() or "-",
                                    raw.decode("utf-8", errors="replace").encode("utf-8").hex(),
                                    raw.decode("utf-8", errors="backslashreplace")
                                    .encode("utf-8").hex()))
    with open(os.path.join(root, "multinomial.txt"), "w") as f:
        f.write("# seed, n, the probabilities (as float32 hex bits), then 40 tokens drawn one "
                "after the other\n# with torch.multinomial(probs, 1); 'exp' lines: seed, n and "
                "torch.empty(n).exponential_()'s bits\n")
        torch.manual_seed(123)
        distributions = [torch.softmax(torch.randn(50), 0), torch.tensor([0.5, 0.25, 0.25, 0.0]),
                         torch.tensor([1.0, 1.0, 1.0]), torch.tensor([0.0, 0.0, 3.0, 0.0, 1.0]),
                         torch.softmax(torch.randn(420) * 3, 0)]
        for seed, probs in zip([0, 1, 7, 42, 2**32 + 5], distributions):
            torch.manual_seed(seed)
            drawn = [int(torch.multinomial(probs, 1)) for _ in range(40)]
            bits = probs.numpy().view("<u4")
            f.write("draw %d %d %s %s\n" % (seed, len(probs), " ".join("%08x" % b for b in bits),
                                           " ".join(map(str, drawn))))
        for seed, n in [(0, 6), (5, 33)]:
            torch.manual_seed(seed)
            bits = torch.empty(n).exponential_().numpy().view("<u4")
            f.write("exp %d %d %s\n" % (seed, n, " ".join("%08x" % b for b in bits)))
    print("wrote the pieces in", root)


def write_small_text():
    """tests/data/lesson17/text.txt: the first 1500 characters of the lesson's corpus (the
    glossary's opening: English and Chinese), a text small enough for byte pairs to run out
    of pairs that come twice."""
    corpus = open(os.path.join(ROOT, "lessons", "17-language", "corpus.txt"), encoding="utf-8")
    with open(os.path.join(ROOT, SMALL_TEXT), "w", encoding="utf-8") as f:
        f.write(corpus.read()[:1500])


def main():
    torch.set_num_threads(1)
    if "--cases-only" not in sys.argv[1:]:
        write_small_text()
        record_pieces()
    listed = listed_by_flags(DEFAULTS, CASES)
    for values, _ in listed.values():   # cases.txt's words hold no spaces: texts stay flags
        for key in ("text", "prompt", "sentence"):
            del values[key]
    record_cases("lesson17", {name: (flags,) for name, flags in CASES.items()}, record, listed)


if __name__ == "__main__":
    main()
