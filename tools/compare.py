#!/usr/bin/env python3
"""compare.py - lesson N against the PyTorch code on its page, number by number.

    make compare-N ARGS="--seed 7 --heads 4"
    python3 tools/compare.py LESSON_BINARY PAGE [flags...]
    python3 tools/compare.py --script PAGE FILE        (make script-N)

Runs the lesson binary and the page's marked block (the ```python block right
after the line `<!-- make compare-N runs the next block -->`) with the same
flags, lines up the two outputs and compares every number printed on the
lines they share. With --script it writes that block to FILE instead, and
says so: `make script-N` gives a reader the page's code as a file of its own.

Lining up: a line's *template* is its text with every number replaced by `#`
and runs of spaces collapsed (a column that widens for a minus sign does not
break the match). The lesson prints sections the page's code does not (its
own counts, checks and asides), so the page's lines are matched, in order, to
lesson lines with the same template (difflib finds the longest runs first);
lesson lines left over are counted, not compared. A page line that matches
no lesson line is a failure: the two programs printed something different.

Each number of a matched line is then
  identical      the same text;
  last digit     both have decimals and differ by at most one unit of the
                 last printed digit (0.4825 against 0.4826, or 6.0337e-06
                 against 6.0338e-06): float rounding that happened to cross a
                 rounding boundary of the printed text;
  near zero      printed in scientific notation, and within SCALE_SPACINGS (4)
                 spacings of float32 at the largest magnitude printed in the
                 same tensor (-6.4313e-05 against -6.4373e-05 in a tensor
                 whose largest number is 3.0768: 6e-08 apart, and 4 spacings
                 of float32 at 3.0768 are 9.5e-07). A number near 0 in a tensor of
                 larger ones is what is left when large terms cancel, and its
                 float rounding is the rounding of those terms, not of its
                 own few digits; PyTorch prints such a tensor in scientific
                 notation, each number to 5 digits of its own size, so the
                 "last digit" rule would ask it to agree to 1e-09. In a
                 tensor printed with fixed decimals every number shares one
                 last digit and this rule does not apply. A tensor is the
                 lines from an opening bracket to the one that closes it (a
                 line outside brackets is its own);
  different      anything else, printed with both values;
  rounding size  a number that measures float rounding inside one program
                 (on a line saying `max |a - b|`, `largest difference` or
                 `within`, both sides below 1e-4): each side adds its own
                 numbers in its own order, so these are listed, not compared.

It also says which BLAS library PyTorch multiplies with: the page's code
runs in the same Python, with the same environment, as this script. That
decides how often a last digit differs: Debian's python3-torch uses whatever
libblas.so.3 the system has (the reference BLAS by default, which adds the
terms of a dot product one after the other, as the lessons' matmul does; or
OpenBLAS, which adds them in blocks, in another order); the official wheels
have MKL built in.

`python3 -m doctest tools/compare.py` checks the rules on the examples in
classify's docstring.

Exit status: 0 when every compared number is identical, differs only in its
last printed digit or is near zero within its tensor's rounding, 1 otherwise (or when a program fails), 2 when
python3 cannot import torch or the page has no marked block.
"""
import ctypes
import difflib
import math
import os
import re
import subprocess
import sys
import tempfile

# A number as PyTorch and the lessons print it: 2, -0.1425, 2., 6.0337e-06,
# 1e+20, inf, -inf, nan. Not the digits inside a name (float32, q_1, lesson-2
# keeps its 2 as a number, which is harmless) and not "0..30" as a decimal.
NUMBER = re.compile(
    r"(?<![\w.])(?:[-+]?(?:\d+\.(?!\.)\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|-?inf|nan)(?!\w)")
ROUNDING_WORDS = ("max |", "largest difference", "within")
ROUNDING_LIMIT = 1e-4
SCALE_SPACINGS = 4   # "near zero": float32 spacings at the tensor's largest magnitude


def template(line):
    """The line with its numbers taken out, spaces collapsed, and none kept after an
    opening bracket: a row that starts with -0.0000 in one program and 0.0000 in the
    other (PyTorch pads a number without its minus sign) reads the same.

    >>> template("tensor([[-0.0000,  1.5000],") == template("tensor([[ 0.0000,  1.5000],")
    True
    >>> template("[[ 0.1,  2.0]]")
    '[[#, #]]'
    """
    return re.sub(r"([\[(]) ", r"\1", " ".join(NUMBER.sub("#", line).split()))


def numbers(line):
    return NUMBER.findall(line)


def last_digit_unit(text):
    """One unit of the last printed digit of `text`, or None for an integer
    (an integer, or PyTorch's integer-valued `2.`, must be printed the same)."""
    m = re.fullmatch(r"[-+]?\d*(?:\.(\d*))?(?:[eE]([-+]?\d+))?", text)
    if m is None:
        return None
    decimals, exponent = m.group(1), m.group(2)
    if not decimals and exponent is None:
        return None
    places = len(decimals or "")
    return 10.0 ** ((int(exponent) if exponent else 0) - places)


def float32_spacing(x):
    """The distance between float32 numbers at |x|: 2^(e - 23) for |x| in [2^e, 2^(e+1))."""
    if not math.isfinite(x) or x == 0.0:
        return 0.0
    return 2.0 ** (math.floor(math.log2(abs(x))) - 23)


def tensor_scales(lines):
    """For each line, the largest finite magnitude printed in its tensor: the
    lines from an opening bracket to the one that closes it, or the line
    alone outside brackets."""
    scales, group, depth = [0.0] * len(lines), [], 0
    for i, line in enumerate(lines):
        group.append(i)
        depth = max(0, depth + line.count("[") - line.count("]"))
        if depth == 0:
            values = [abs(float(x)) for k in group for x in numbers(lines[k])]
            largest = max([v for v in values if math.isfinite(v)], default=0.0)
            for k in group:
                scales[k] = largest
            group = []
    for k in group:   # brackets never closed: each line its own
        scales[k] = max([abs(float(x)) for x in numbers(lines[k])
                         if math.isfinite(float(x))], default=0.0)
    return scales


def classify(lesson, page, line_template, scale=0.0):
    """identical, last digit, near zero, rounding size or different, and |a - b|.
    `scale`: the largest magnitude printed in the numbers' tensor.

    >>> classify("0.4825", "0.4826", "#")[0]
    'last digit'
    >>> classify("-6.4313e-05", "-6.4373e-05", "[#, #]", 3.0768)[0]
    'near zero'
    >>> classify("-6.4313e-05", "-6.4373e-05", "[#, #]", 6.4373e-05)[0]
    'different'
    >>> classify("-6.4313e-05", "-6.5313e-05", "[#, #]", 3.0768)[0]
    'different'
    >>> classify("0.0001", "0.0003", "[#, #]", 3.0768)[0]
    'different'
    """
    if lesson == page:
        return "identical", 0.0
    a, b = float(lesson), float(page)
    difference = abs(a - b) if math.isfinite(a) and math.isfinite(b) else math.inf
    if (any(word in line_template for word in ROUNDING_WORDS)
            and abs(a) < ROUNDING_LIMIT and abs(b) < ROUNDING_LIMIT):
        return "rounding size", difference
    units = [last_digit_unit(lesson), last_digit_unit(page)]
    if None not in units and difference <= max(units) * (1 + 1e-9):
        return "last digit", difference
    scientific = "e" in lesson.lower() or "e" in page.lower()
    if scientific and difference <= SCALE_SPACINGS * float32_spacing(scale):
        return "near zero", difference
    return "different", difference


def marked_block(page_path, lesson_number):
    """The text of the ```python block after the compare marker."""
    marker = f"<!-- make compare-{lesson_number} runs the next block -->"
    lines = open(page_path, encoding="utf-8").read().split("\n")
    starts = [i for i, line in enumerate(lines) if line == marker]
    if len(starts) != 1:
        return None, f"{page_path} has {len(starts)} lines '{marker}', not 1"
    opening = starts[0] + 1
    if opening >= len(lines) or lines[opening] != "```python":
        return None, f"{page_path}: the line after '{marker}' is not ```python"
    for end in range(opening + 1, len(lines)):
        if lines[end] == "```":
            return "\n".join(lines[opening + 1:end]) + "\n", None
    return None, f"{page_path}: the block after '{marker}' is not closed"


def compare(lesson_text, page_text):
    """Line up the two outputs and classify every number. Returns a dict."""
    lesson_lines = lesson_text.rstrip("\n").split("\n")
    page_lines = page_text.rstrip("\n").split("\n")
    matcher = difflib.SequenceMatcher(None, [template(x) for x in page_lines],
                                      [template(x) for x in lesson_lines], autojunk=False)
    pairs = []
    for block in matcher.get_matching_blocks():
        pairs.extend((block.a + k, block.b + k) for k in range(block.size))
    matched_page = {p for p, _ in pairs}
    page_scales, lesson_scales = tensor_scales(page_lines), tensor_scales(lesson_lines)
    report = {"page_lines": len(page_lines), "lesson_lines": len(lesson_lines),
              "matched": len(pairs),
              "unmatched_page": [(p + 1, page_lines[p]) for p in range(len(page_lines))
                                 if p not in matched_page and page_lines[p].strip()],
              "counts": {"identical": 0, "last digit": 0, "near zero": 0, "different": 0,
                         "rounding size": 0},
              "entries": [], "largest": 0.0}
    for p, q in pairs:
        line_template = template(page_lines[p])
        for a, b in zip(numbers(lesson_lines[q]), numbers(page_lines[p])):
            kind, difference = classify(a, b, line_template,
                                        max(page_scales[p], lesson_scales[q]))
            report["counts"][kind] += 1
            if kind != "identical":
                report["entries"].append((kind, q + 1, p + 1, a, b, difference, lesson_lines[q]))
            if kind != "rounding size":
                report["largest"] = max(report["largest"], difference)
    report["ok"] = report["counts"]["different"] == 0 and not report["unmatched_page"]
    return report


def print_report(report, out=sys.stdout):
    c = report["counts"]
    compared = c["identical"] + c["last digit"] + c["near zero"] + c["different"]
    print(f"lines: the page's code printed {report['page_lines']}, the lesson "
          f"{report['lesson_lines']}; {report['matched']} matched "
          f"({report['lesson_lines'] - report['matched']} lesson lines are sections "
          f"the page's code does not print)", file=out)
    print(f"numbers: {compared} compared: {c['identical']} identical, {c['last digit']} "
          f"differ in the last printed digit, {c['near zero']} near zero, "
          f"{c['different']} different", file=out)
    if c["rounding size"]:
        print(f"         {c['rounding size']} measure float rounding inside one program "
              f"(max |a - b| and the like, both below {ROUNDING_LIMIT:g}): not compared",
              file=out)
    for kind, q, p, a, b, difference, line in report["entries"]:
        print(f"  {kind}: lesson line {q} (page output line {p}): lesson {a}, PyTorch {b}"
              f"{'' if kind == 'rounding size' else f', |difference| {difference:.3g}'}",
              file=out)
        print(f"      {line.strip()[:100]}", file=out)
    for p, line in report["unmatched_page"]:
        print(f"  no lesson line like the page's output line {p}: {line.strip()[:100]}", file=out)
    print(f"largest absolute difference of a compared number: {report['largest']:.3g}",
          file=out)


def blas_in_use(torch):
    """The BLAS library this process's torch multiplies with: (name, where).

    Taken from the libraries the process has loaded (/proc/self/maps, where
    there is one) and from how torch was built (torch.__config__.show()'s
    BLAS_INFO): Debian's build says "generic", meaning the system's
    libblas.so.3; the official wheels say "mkl", built into torch."""
    built = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
    built = built.group(1) if built else "unknown"
    if built == "mkl":
        return "MKL", "built into torch (BLAS_INFO=mkl)"
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            loaded = sorted({line.split()[-1] for line in maps if "/" in line})
    except OSError:
        return "a BLAS not known", (f"no /proc/self/maps to read; torch was built with "
                                    f"BLAS_INFO={built}" + (", the system's libblas.so.3"
                                                            if built == "generic" else ""))

    def loaded_named(word):
        return [path for path in loaded if word in os.path.basename(path)]

    for path in loaded_named("libopenblas"):
        try:
            library = ctypes.CDLL(path)           # already loaded: the same library
            library.openblas_get_config.restype = ctypes.c_char_p
            library.openblas_get_corename.restype = ctypes.c_char_p
            version = " ".join(library.openblas_get_config().decode().split()[:2])
            return f"{version} (kernel {library.openblas_get_corename().decode()})", path
        except (OSError, AttributeError):
            return "OpenBLAS", path
    for word, name in (("libmkl", "MKL"), ("libblis", "BLIS"), ("libatlas", "ATLAS")):
        if loaded_named(word):
            return name, loaded_named(word)[0]
    for path in loaded_named("libblas.so"):
        return ("the reference BLAS" if "/blas/" in path else "a libblas.so.3"), path
    return "no BLAS library found", f"among the loaded libraries (BLAS_INFO={built})"


def run(command, what):
    """The program's stdout; it stops compare if the program fails."""
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        print(f"compare: {what} exited with status {result.returncode}", file=sys.stderr)
        sys.exit(2 if result.returncode == 2 and what.startswith("lesson") else 1)
    for line in result.stderr.splitlines():     # e.g. "thop is not installed: ..."
        print(f"({what} says: {line})")
    return result.stdout


def write_script(page, path):
    """The page's marked block into `path`: make script-N."""
    lesson_number = int(os.path.basename(page)[:2])
    code, problem = marked_block(page, lesson_number)
    if problem:
        print(f"compare: {problem}", file=sys.stderr)
        return 2
    with open(path, "w", encoding="utf-8") as f:
        f.write(code)
    print(f"wrote {path}: the PyTorch code of {page} (what make compare-{lesson_number} runs)")
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == "--script":
        return write_script(argv[2], argv[3])
    if len(argv) < 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    binary, page, flags = argv[1], argv[2], argv[3:]
    lesson_number = int(os.path.basename(page)[:2])
    try:
        import torch
    except ImportError as error:
        print(f"make compare-{lesson_number} needs PyTorch: {sys.executable} cannot import "
              f"torch ({error}). On Debian: apt-get install python3-torch; another Python: "
              f"make compare-{lesson_number} PYTHON=/path/to/python3. Nothing compared.",
              file=sys.stderr)
        return 2
    code, problem = marked_block(page, lesson_number)
    if problem:
        print(f"compare: {problem}", file=sys.stderr)
        return 2
    lesson_text = run([binary] + flags, f"lesson {lesson_number} ({binary})")
    with tempfile.TemporaryDirectory() as directory:
        script = os.path.join(directory, f"page{lesson_number:02d}.py")
        with open(script, "w", encoding="utf-8") as f:
            f.write(code)
        page_text = run([sys.executable, script] + flags, f"the PyTorch code of {page}")
    print(f"compare: {' '.join([binary] + flags)}")
    print(f"against: the PyTorch code of {page}, same flags")
    blas, where = blas_in_use(torch)
    print(f"PyTorch {torch.__version__} ({sys.executable}) multiplies with {blas}:")
    print(f"  {where}")
    report = compare(lesson_text, page_text)
    print_report(report)
    print("OK: every compared number is identical, or differs in its last printed digit or "
          "near zero"
          if report["ok"] else "DIFFERENT: see above")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
