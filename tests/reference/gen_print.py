#!/usr/bin/python3
"""Record how PyTorch 1.13 prints tensors, for tests/test_print.c.

docs/pytorch-print.md states the rules (section numbers below refer to it).

Run from the project root:  /usr/bin/python3 tests/reference/gen_print.py

For every named case it writes
    tests/data/print/<case>.npy   the tensor (float32 '<f4', int64 '<i8', bool '|b1')
    tests/data/print/<case>.txt   str(tensor), exactly, with no newline added
and tests/data/print/manifest.txt, one line per case: "<case> <suffix> <order>",
where suffix is the grad_fn=... / requires_grad=True text passed to
tensor_str() and order is a permutation such as "10" (a transpose) for a
case that prints a view of the saved tensor; "-" means none.

The fuzz cases go into two files so hundreds of them stay small:
    fuzz_values.npy  every base tensor's elements, one after another, as float32
    fuzz.txt         per case a header line "# <dtype> <ndim> <shape...> <order...>"
                     then str(base.permute(order)) and a newline.
The generated files are committed: the C build and tests never need Python.
"""
import os
import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "print")
INF = float("inf")
NAN = float("nan")

cases = []  # (name, tensor to save, text, suffix or None)


def case(name, t, suffix=None, perm=None):
    """Record str(t), or str(t.permute(perm)) for a view (the .npy keeps t)."""
    shown = t if perm is None else t.permute(perm)
    cases.append((name, t.detach(), str(shown), suffix, perm))


def seeded(seed):
    torch.manual_seed(seed)


f32 = lambda values: torch.tensor(values, dtype=torch.float32)
i64 = lambda values: torch.tensor(values, dtype=torch.int64)

# --- section 11, the worked examples --------------------------------------
seeded(0)
case("rand_3x2x4_seed0", torch.rand(3, 2, 4))
case("arange_4d_int_mode", torch.arange(16.).reshape(2, 2, 2, 2))
case("summarized_2x600_div7_sci", torch.arange(1200.).reshape(2, 600) / 7)
case("summarized_int64_8x200", torch.arange(1600).reshape(8, 200))
case("causal_mask_inf", torch.triu(torch.full((3, 3), -INF), 1))
scores = f32([[0.5, 9, 9], [0.125, 0.75, 9], [1.5, 0.25, -2.0]])
causal = torch.triu(torch.ones(3, 3, dtype=torch.bool), 1)
case("scores_masked_inf", scores.masked_fill(causal, -INF))
case("scores_masked_1e20", scores.masked_fill(causal, -1e20))
case("softmax_tiny_sci", torch.softmax(f32([[2, 4, 4], [0, 12, 8]]), dim=-1))
case("nan_in_sci", f32([[1.0, NAN], [1e-5, -2.0]]))
case("one_nan", f32([1.0, NAN]))
case("one_minus_inf", f32([1.0, -INF]))
case("neg_zero_int_mode", f32([-0.0, 1.0]))
case("neg_zero_fixed", f32([0.0, 0.5, -0.0]))
case("neg_zero_fixed_2d", f32([[-0.0, 0.5], [0.25, 0.1]]))
case("int_ratio_sci", f32([1.0, 0.0, 1e5]))
case("int_1e8", f32([1e8]))
case("int_1_5e8_sci", f32([1.5e8]))
case("tie_to_even", f32([0.03125, 1.0]))
case("float32_1e4_is_sci", f32([1e-4, 1e-2]))
seeded(0)
case("int64_mask_2x3x4", torch.randint(0, 2, (2, 3, 4)))
seeded(0)
x = torch.randn(3, requires_grad=True)
y = x * 2
case("grad_fn_mul", y, suffix="grad_fn=<MulBackward0>")
seeded(0)
w = torch.rand(9, requires_grad=True)
case("requires_grad_wraps_rand9", w, suffix="requires_grad=True")

# --- more suffixes -----------------------------------------------------------
seeded(1)
w6 = torch.rand(6, requires_grad=True)
case("requires_grad_fits_rand6", w6, suffix="requires_grad=True")
seeded(1)
case("grad_fn_softmax_2d", torch.softmax(torch.randn(3, 4, requires_grad=True), -1),
     suffix="grad_fn=<SoftmaxBackward0>")
seeded(2)
case("grad_fn_wraps_3d", torch.randn(2, 2, 8, requires_grad=True) * 3,
     suffix="grad_fn=<MulBackward0>")
case("scalar_requires_grad", torch.tensor(1.5, requires_grad=True), suffix="requires_grad=True")
seeded(3)
case("summarized_grad_fn", torch.randn(40, 40, requires_grad=True) + 1,
     suffix="grad_fn=<AddBackward0>")

# The last line "tensor([0., 1., ..., 1.]" of 12 items is 55 columns: a 21-character
# suffix ends the line at column 79 and stays, a 22-character one would reach 80 and wraps.
x12 = (torch.arange(12.) % 2).requires_grad_()
case("suffix_boundary_stays", torch.mv(torch.eye(12), x12), suffix="grad_fn=<MvBackward0>")
case("suffix_boundary_wraps", x12 * 1, suffix="grad_fn=<MulBackward0>")

# --- 0-d -------------------------------------------------------------------------
case("scalar_fixed", torch.tensor(3.5))
case("scalar_int_mode", torch.tensor(2.0))
case("scalar_neg_zero", torch.tensor(-0.0))
case("scalar_sci", torch.tensor(1e-5))
case("scalar_nan", torch.tensor(NAN))
case("scalar_minus_inf", torch.tensor(-INF))
case("scalar_int64", torch.tensor(5))
case("scalar_int64_negative", torch.tensor(-123))
case("scalar_bool", torch.tensor(True))

# --- empty tensors (numpy can save every one of these shapes) --------------------
case("empty_1d", torch.zeros(0))
case("empty_0x3", torch.zeros(0, 3))
case("empty_2x0", torch.zeros(2, 0))
case("empty_0x2x3", torch.zeros(0, 2, 3))
case("empty_int64_1d", torch.zeros(0, dtype=torch.int64))
case("empty_int64_2x0", torch.zeros(2, 0, dtype=torch.int64))
case("empty_bool_3x0", torch.zeros(3, 0, dtype=torch.bool))
case("empty_requires_grad", torch.zeros(0, 3, requires_grad=True), suffix="requires_grad=True")

# --- bool ------------------------------------------------------------------------
case("bool_1d", torch.tensor([True, False]))
case("bool_causal", causal)
seeded(4)
case("bool_wraps", torch.rand(30) > 0.5)
seeded(4)
case("bool_summarized", torch.rand(40, 40) > 0.5)

# --- int64 -----------------------------------------------------------------------
case("int64_negatives", i64([-5, 100, 7]))
seeded(5)
case("int64_wide", torch.randint(-10000, 10000, (4, 7)))
seeded(5)
case("int64_wraps", torch.randint(-100, 100, (40,)))
case("int64_tril_4x4x4", torch.tril(torch.ones(4, 4, dtype=torch.int64)).expand(4, 4, 4).contiguous())

# --- float mode and width ---------------------------------------------------------
case("all_zero", torch.zeros(2, 3))
case("all_nan", f32([NAN, NAN]))
case("all_inf", f32([INF, -INF, NAN, 0.0]))
case("negative_nan_0_div_0", f32([0.0, 1.0]) / f32([0.0, 2.0]) * f32([1.0, 4.0]))
case("int_with_neg_1e20", f32([[0.0, -1e20], [3.0, 4.0]]))
case("fraction_with_neg_1e20", f32([[0.5, -1e20], [3.0, 4.0]]))
case("big_integers", f32([123456.0, -7.0, 99.0]))
case("int_mode_nan_wider", f32([1.0, 2.0, NAN, -INF]))
case("fixed_neg_zero_wider", f32([0.5, -0.0, 9.5]))
case("sci_neg_zero", f32([1e-6, -0.0, 1.0]))
seeded(6)
case("randn_times_100", torch.randn(3, 5) * 100)
seeded(6)
case("span_1e-6_to_1e3", torch.logspace(-6, 3, 10) * f32([1, -1] * 5))

# --- boundaries --------------------------------------------------------------------
case("amin_just_above_1e4_fixed", f32([1.0001e-4, 0.05]))
case("amin_1e4_float64_rounded", torch.tensor([1e-4], dtype=torch.float64).float() + 0)
case("ratio_exactly_1000_int", f32([1.0, 1000.0]))
case("ratio_1001_int_sci", f32([1.0, 1001.0]))
case("ratio_exactly_1000_fixed", f32([0.5, 500.0]))
case("ratio_above_1000_fixed_sci", f32([0.5, 500.25]))
case("ratio_only_double_sees", f32([9.2148, 0.0092148]))
case("int_just_above_1e8_sci", f32([100000008.0]))
case("ties_fixed", f32([0.03125, 0.09375, 0.15625, -0.21875]))
case("ties_sci", f32([1.5, 1.00005e-5, 2.00025]))
case("threshold_1000_full", torch.arange(1000.) / 4)
case("threshold_1001_summarized", torch.arange(1001.) / 4)
case("summarized_600x2", torch.arange(1200.).reshape(600, 2))

# --- summarization -------------------------------------------------------------------
seeded(7)
case("summarized_3d_7x8x20", torch.randn(7, 8, 20))
seeded(7)
case("summarized_4d_7x7x7x3", torch.rand(7, 7, 7, 3))
seeded(8)
hidden = torch.rand(2, 600)
hidden[0, 300] = 1e-7
hidden[1, 300] = -12345.0
case("summarized_hidden_outliers", hidden)
shown = hidden.clone()
shown[0, 0] = 1e-7
case("summarized_shown_outlier", shown)
seeded(8)
case("summarized_1d_2000", torch.randn(2000))

# --- 5-D -------------------------------------------------------------------------------
seeded(9)
case("rand_5d", torch.rand(2, 2, 2, 2, 3))
seeded(9)
case("int64_5d", torch.randint(0, 2, (2, 1, 2, 2, 2)))
seeded(9)
case("summarized_5d", torch.randn(2, 3, 4, 5, 10))
seeded(9)
case("summarized_5d_all_cut", torch.rand(7, 1, 1, 1, 150))

# --- 1-D lengths that wrap, for each width W (items per line 80-8 // (W+2)) ----------
for n in (24, 25, 49):
    case(f"wrap_w1_int64_len{n}", torch.arange(n) % 2)
for n in (18, 19):
    case(f"wrap_w2_int_len{n}", torch.arange(n) % 10 * 1.0)
for n in (9, 10, 19):
    case(f"wrap_w6_fixed_len{n}", torch.arange(n) / 7.0)
for n in (8, 9):
    case(f"wrap_w7_negative_len{n}", -torch.arange(n) / 7.0)
for n in (6, 7):
    case(f"wrap_w10_sci_len{n}", (torch.arange(n) + 1) * 1e-5)
for n in (5, 6):
    case(f"wrap_w11_sci_neg_len{n}", (torch.arange(n) + 1) * -1e-5)
for n in (13, 14):
    case(f"wrap_w5_bool_len{n}", torch.arange(n) % 3 == 0)
seeded(10)
case("wrap_rows_2d", torch.randn(2, 20))
seeded(10)
case("wrap_rows_3d", torch.rand(2, 2, 9))
seeded(10)
case("wrap_rows_4d", torch.randn(2, 1, 2, 8) * 1e-3)

# --- views: the .npy is the contiguous base, the text is of its permutation -----------------
seeded(11)
base = torch.randn(3, 5)
case("view_transpose_3x5", base, perm=(1, 0))
seeded(11)
base = torch.rand(2, 3, 4)
case("view_permute_2x3x4", base, perm=(2, 0, 1))


def save(name, t, text):
    if t.dtype == torch.float32:
        array = t.numpy().astype("<f4")
    elif t.dtype == torch.int64:
        array = t.numpy().astype("<i8")
    else:
        array = t.numpy().astype("|b1")
    np.save(os.path.join(OUT, name + ".npy"), array.copy(order="C"))  # ascontiguousarray would make 0-d 1-d
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
        f.write(text)


# --- fuzz ---------------------------------------------------------------------------------------
def fuzz_case(rng):
    ndim = int(rng.integers(0, 6))
    shape = [int(rng.integers(1, 5 if ndim <= 3 else 4)) for _ in range(ndim)]
    if ndim > 0 and rng.random() < 0.08:
        # sometimes past the threshold (1001..2500 elements), to fuzz "..."
        others = int(np.prod(shape[:-1]))
        shape[-1] = -(-int(rng.integers(1001, 2500)) // others)
    if ndim > 0 and rng.random() < 0.03:
        shape[int(rng.integers(0, ndim))] = 0
    n = int(np.prod(shape))
    kind = rng.choice(["float", "float", "float", "int64", "bool"])
    if kind == "int64":
        top = 10 ** int(rng.integers(0, 7))
        values = rng.integers(-top if rng.random() < 0.5 else 0, top + 1, n).astype(np.float32)
        dtype = torch.int64
    elif kind == "bool":
        values = (rng.random(n) < 0.5).astype(np.float32)
        dtype = torch.bool
    else:
        dtype = torch.float32
        style = rng.integers(0, 4)
        scale = 10.0 ** rng.uniform(-8, 9)
        if style == 0:
            values = rng.random(n)
        elif style == 1:
            values = rng.standard_normal(n) * scale
        elif style == 2:
            values = np.round(rng.standard_normal(n) * 10 ** rng.integers(0, 5))
        else:
            values = rng.random(n) * scale
        values = values.astype(np.float32)
        for special in (NAN, INF, -INF, -0.0, -1e20, 1e-7, 0.0):
            if n > 0 and rng.random() < 0.15:
                values[rng.integers(0, n, int(rng.integers(1, 3)))] = special
    perm = list(range(ndim))
    if ndim >= 2 and rng.random() < 0.3:
        perm = [int(p) for p in rng.permutation(ndim)]
    base = torch.from_numpy(values.reshape(shape)).to(dtype)
    return values, dtype, shape, perm, str(base.permute(perm))


DTYPE_NAMES = {torch.float32: "float32", torch.int64: "int64", torch.bool: "bool"}


def write_fuzz(count):
    rng = np.random.default_rng(1234)
    all_values, lines = [], []
    for _ in range(count):
        values, dtype, shape, perm, text = fuzz_case(rng)
        all_values.append(values)
        header = ["#", DTYPE_NAMES[dtype], str(len(shape))] + [str(s) for s in shape + perm]
        lines.append(" ".join(header) + "\n" + text + "\n")
    np.save(os.path.join(OUT, "fuzz_values.npy"), np.concatenate(all_values).astype("<f4"))
    with open(os.path.join(OUT, "fuzz.txt"), "w") as f:
        f.write("".join(lines))


def main():
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "manifest.txt"), "w") as manifest:
        for name, t, text, suffix, perm in cases:
            save(name, t, text)
            order = "-" if perm is None else "".join(str(d) for d in perm)
            manifest.write(f"{name} {suffix or '-'} {order}\n")
    write_fuzz(400)
    print(f"{len(cases)} cases and 400 fuzz tensors written to {os.path.normpath(OUT)}")


main()
