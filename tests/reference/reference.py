"""reference.py - the plumbing every gen_lessonNN.py shares.

The gen scripts keep the notebooks' classes as they are; what is the same
in all of them lives here: where tests/data is, the case loop, capturing
what a cell prints into stdout.txt, and writing tensors as .npy files the
C harness reads (tests/harness.c: load_npy). And, for the scripts that record
by running a page's PyTorch block (page_block), the fingerprint of that block
beside the data (tests/data/lessonNN/page_block.txt), which tests/test_docs.c
checks against the page: a block changed without the data recorded again
fails make test.
"""
import contextlib
import glob
import io
import os
import re
import sys

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DATA = os.path.join(ROOT, "tests", "data")
sys.path.insert(0, os.path.join(ROOT, "tools"))
from compare import marked_block  # noqa: E402  (the block make compare-N runs, found as it finds it)

# The five runs of lessons 4 and 5 (the same draws for SelfAttV3 and
# SelfAttV4): case directory -> (seed, batch, seq, dim, train), the lessons'
# defaults first (MASKED_DEFAULTS).
MASKED_NAMES = ("seed", "batch", "seq", "dim", "train")
MASKED_DEFAULTS = {"seed": 0, "batch": 3, "seq": 4, "dim": 2, "train": False}
MASKED_CASES = {
    "seed0": (0, 3, 4, 2, False),
    "seed0-train": (0, 3, 4, 2, True),
    "seed7": (7, 5, 3, 4, False),          # batch > seq: rows keep at least 1 key
    "seed7-train": (7, 5, 3, 4, True),
    "seed123": (123, 2, 6, 8, False),
}


def save(directory, name, tensor):
    """<directory>/<name>.npy in C order: int64 as '<i8' (the masks), the rest '<f4'."""
    array = tensor.detach().numpy()
    array = array.astype("<i8" if array.dtype == np.int64 else "<f4")
    np.save(os.path.join(directory, name + ".npy"), np.ascontiguousarray(array))


def save_all(directory, tensors):
    """save() each name -> tensor of a dict (a state_dict, a forward's locals)."""
    for name, tensor in tensors.items():
        save(directory, name, tensor)


@contextlib.contextmanager
def stdout_txt(directory):
    """What the block prints goes to <directory>/stdout.txt instead of the screen."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        yield
    with open(os.path.join(directory, "stdout.txt"), "w") as f:
        f.write(text.getvalue())


def record_cases(lesson, cases, record, listed):
    """For each case name -> parameters: record(directory, *parameters) into a
    fresh-or-existing tests/data/<lesson>/<name>/; then write the list of the
    cases, `listed` (write_cases), and the fingerprint of the page block the
    cases ran, if they ran one (write_fingerprint). With --cases-only on the
    command line, only the list: the recorded data stays as it is."""
    if "--cases-only" not in sys.argv[1:]:
        for name, parameters in cases.items():
            directory = os.path.join(DATA, lesson, name)
            os.makedirs(directory, exist_ok=True)
            record(directory, *parameters)
            print("wrote", directory)
        write_fingerprint(lesson)
    write_cases(lesson, listed)


# --- tests/data/<lesson>/cases.txt: the list of recorded runs the C test reads ---------

def write_cases(lesson, listed):
    """tests/data/<lesson>/cases.txt, read by the C test (tests/harness.h:
    recorded_case): one line a case, `name -> (values, flags)` of `listed`:
    its directory, then each value as name=value (a switch as 0 or 1), then
    the lesson's flags that make the same run."""
    path = os.path.join(DATA, lesson, "cases.txt")
    script = os.path.basename(sys.argv[0])
    with open(path, "w") as f:
        f.write("# The runs tests/reference/%s recorded here, one a line: its directory,\n"
                "# its seed and sizes as name=value, then the lesson's flags that make the same\n"
                "# run. Written by that script (--cases-only writes this file alone); the C\n"
                "# test reads it (tests/harness.h: recorded_case).\n" % script)
        for name, (values, flags) in listed.items():
            words = [name] + ["%s=%s" % (key, int(value) if isinstance(value, bool) else value)
                              for key, value in values.items()] + flags
            assert all(" " not in word and word for word in words), words
            f.write(" ".join(words) + "\n")
    print("wrote", path)


def listed_by_values(names, defaults, cases):
    """`listed` for write_cases from cases given as tuples of values, in the
    order of `names`: each case's flags are --seed and every value that
    differs from the lesson's default (a switch alone, when true). `defaults`
    is a dict, or a tuple like the cases'."""
    if not isinstance(defaults, dict):
        defaults = dict(zip(names, defaults))
    listed = {}
    for case, parameters in cases.items():
        values = dict(zip(names, parameters))
        flags = []
        for key, value in values.items():
            if value == defaults[key]:
                continue
            flag = "--" + key.replace("_", "-")
            flags += [flag] if isinstance(value, bool) else [flag, str(value)]
        listed[case] = (values, flags)
    return listed


def listed_by_flags(defaults, cases):
    """`listed` for write_cases from cases given as the lesson's flags: each
    case's values are the defaults with its flags applied."""
    listed = {}
    for case, flags in cases.items():
        values = dict(defaults)
        i = 0
        while i < len(flags):
            key = flags[i][2:].replace("-", "_")
            if isinstance(defaults[key], bool):
                values[key] = True
                i += 1
            else:
                values[key] = type(defaults[key])(flags[i + 1])
                i += 2
        listed[case] = (values, list(flags))
    return listed


# --- the page blocks the data are recorded from -------------------------------------------

BLOCKS_RUN = {}   # lesson number -> (its page, relative to ROOT; the block's fingerprint)


def block_fingerprint(code):
    """FNV-1a, 64 bits, of the block's text (UTF-8), as 16 hex digits: the
    hash tests/test_docs.c computes of the page's block (tests/harness.h:
    fnv1a). Not a safeguard against anyone; a check that the data were
    recorded from the block the page has now."""
    hash = 0xcbf29ce484222325
    for byte in code.encode("utf-8"):
        hash = ((hash ^ byte) * 0x100000001b3) % 2 ** 64
    return "%016x" % hash


def page_block(lesson):
    """The Python block of docs/NN-*.md that `make compare-NN` runs, compiled:
    the code right after the line '<!-- make compare-N runs the next block -->'
    (tools/compare.py finds it). Lessons 11-16 record their data by running
    it, so the tests compare against exactly the code a learner reads on the
    page; its fingerprint is noted for write_fingerprint."""
    (page,) = glob.glob(os.path.join(ROOT, "docs", "%02d-*.md" % lesson))
    code, problem = marked_block(page, lesson)
    if problem:
        sys.exit(problem)
    BLOCKS_RUN[lesson] = (os.path.relpath(page, ROOT), block_fingerprint(code))
    return compile(code, page, "exec")


def write_fingerprint(lesson):
    """tests/data/<lesson>/page_block.txt: the page and the fingerprint of the
    block this run of the script recorded the data from (page_block), if it
    ran one; tests/test_docs.c compares it with the page's block now."""
    number = int(re.sub(r"\D", "", lesson))
    if number not in BLOCKS_RUN:
        return
    page, fingerprint = BLOCKS_RUN[number]
    path = os.path.join(DATA, lesson, "page_block.txt")
    with open(path, "w") as f:
        f.write("# The data here were recorded by tests/reference/%s from the block of\n"
                "# %s that make compare-%d runs; its FNV-1a hash (64 bits) then.\n"
                "# tests/test_docs.c checks that the page's block still has it.\n"
                % (os.path.basename(sys.argv[0]), page, number))
        f.write("%s %s\n" % (page, fingerprint))
    print("wrote", path)


def drop_rounding_lines(directory):
    """Take the "max |" lines out of stdout.txt and print them here instead:
    they measure float rounding inside one program, which the lesson's own
    loops and PyTorch's kernels do differently."""
    path = os.path.join(directory, "stdout.txt")
    with open(path) as f:
        lines = f.read().splitlines(keepends=True)
    print("".join(line for line in lines if "max |" in line), end="")
    with open(path, "w") as f:
        f.write("".join(line for line in lines if "max |" not in line))


def say(*args):
    """print(), under the name the recorded classes call it by."""
    print(*args)


def profile(model, inputs):
    """thop.profile, reduced to what it does for a model of nn.Linear layers
    (Debian does not package thop, and the scripts need only torch):
    in_features * output numel per Linear call, parameters summed over every
    Linear, one no_grad forward. Pages 2 and 3 fall back on the same rule."""
    import torch
    import torch.nn as nn
    say("[INFO] Register count_linear() for <class 'torch.nn.modules.linear.Linear'>.")
    counts = {"ops": 0}

    def count_linear(m, x, y):          # thop/vision/basic_hooks.py
        counts["ops"] += m.in_features * y.numel()

    hooks = [m.register_forward_hook(count_linear) for m in model.modules()
             if isinstance(m, nn.Linear)]
    with torch.no_grad():
        model(*inputs)
    for h in hooks:
        h.remove()
    params = sum(p.numel() for m in model.modules() if isinstance(m, nn.Linear)
                 for p in m.parameters())
    return float(counts["ops"]), float(params)


def padding_rows(batch, seq):
    """b: batch row i keeps its first max(1, seq-1-i) keys (the notebook's b for 3x4)."""
    import torch
    b = torch.zeros(batch, seq, dtype=torch.int64)
    for i in range(batch):
        b[i, :max(1, seq - 1 - i)] = 1
    return b
