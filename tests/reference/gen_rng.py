#!/usr/bin/env python3
"""gen_rng.py - record PyTorch's CPU random numbers for tests/test_rng.c.

Run once, from anywhere, with the PyTorch 1.13 that the lessons are checked
against (CPU capability AVX2, no MKL):

    /usr/bin/python3 tests/reference/gen_rng.py

It writes small .npy files into tests/data/rng/, which are committed: the
build and the tests never run Python. Every file is recorded right after
torch.manual_seed(seed) unless its name says it is part of a sequence.

Formats (what tests/harness.c's load_npy reads):
  <f4  torch.rand / randn / uniform_ / normal_ outputs, bit for bit
  <i8  torch.randint outputs; and raw generator words split into 16-bit
       pieces, because load_npy stores every value in a float, and a float
       holds any integer below 2^24 exactly but not a whole 32-bit word
  |b1  dropout keep masks

docs/pytorch-rng.md explains the algorithms; the section numbers below refer
to it.
"""
import math
import os

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "rng")

# name used in file names -> the seed passed to torch.manual_seed
SEEDS = {"0": 0, "1": 1, "42": 42, "1234": 1234, "4294967301": 2**32 + 5, "minus1": -1}

RAW_WORDS = 1300         # a little over two twists of the 624-word state
RANDOM64_COUNT = 64
RAND_SHAPES = [(3, 2, 4), (3, 4, 2), (3, 2, 128), (3, 4, 128), (3, 6, 128)]
# numel < 16 (serial, cached Box-Muller) and numel >= 16 (normal_fill,
# including the tail rule when numel % 16 != 0)
RANDN_SHAPES = [(1,), (5,), (15,), (16,), (17,), (33,), (100,), (3, 2, 4)]
UNIFORM_RANGES = [(-1.0, 1.0), (0.0, 1.0), (-0.5, 0.5), (2.0, 5.0),
                  (-3.7, 11.2), (-0.02, 0.02)]
UNIFORM_SHAPES = [(7,), (8, 33)]
NORMAL_PARAMS = [(0.3, 2.5), (-1.0, 0.02), (0.0, 0.02)]
NORMAL_SHAPES = [(5,), (40,), (3, 4, 128)]
DROPOUT_PS = [0.1, 0.25, 0.5]
DROPOUT_N = 2000


def shape_name(shape):
    return "x".join(str(s) for s in shape)


def save(name, value):
    """Write one array as tests/data/rng/<name>.npy in the format load_npy reads."""
    if isinstance(value, torch.Tensor):
        value = value.detach().numpy()
    if value.dtype == np.float32:
        array = value.astype("<f4")
    elif value.dtype == np.bool_:
        array = value.astype("|b1")
    else:
        array = value.astype("<i8")
    np.save(os.path.join(OUT, name + ".npy"), np.ascontiguousarray(array))


def split_words(words, bits):
    """Each `bits`-wide unsigned word -> its 16-bit pieces, high piece first."""
    pieces = bits // 16
    words = np.asarray(words, dtype=np.uint64)
    columns = [(words >> np.uint64(16 * (pieces - 1 - k))) & np.uint64(0xFFFF)
               for k in range(pieces)]
    return np.stack(columns, axis=1).astype(np.int64)


def numpy_raw_words(seed, count):
    """The raw mt19937 stream: numpy's RandomState is the same engine (1)."""
    state = np.random.RandomState(seed % 2**32)
    # A uint32 draw over the full range returns the raw output unchanged.
    return state.randint(0, 2**32, size=count, dtype=np.uint32)


def record_seeding(tag, seed):
    """Section 1: raw words, random64, and a cross-check of torch against numpy."""
    words = numpy_raw_words(seed, RAW_WORDS)
    save(f"raw_seed{tag}", split_words(words, 32))

    # torch.rand takes one word per element (2): it must agree with numpy's words.
    torch.manual_seed(seed)
    rand = torch.rand(RAW_WORDS, dtype=torch.float32).numpy()
    from_numpy = ((words & 0xFFFFFF).astype(np.float64) * 2.0**-24).astype(np.float32)
    assert np.array_equal(rand, from_numpy), "torch's mt19937 differs from numpy's"

    # int64 random_() is random64() mod 2^63 (1, 4): two words, first one high.
    torch.manual_seed(seed)
    r64 = torch.empty(RANDOM64_COUNT, dtype=torch.int64).random_().numpy()
    joined = (words[0:2 * RANDOM64_COUNT:2].astype(np.uint64) << np.uint64(32)) | \
        words[1:2 * RANDOM64_COUNT:2].astype(np.uint64)
    assert np.array_equal(r64.astype(np.uint64), joined & np.uint64(2**63 - 1))
    save(f"random64_seed{tag}", split_words(r64.astype(np.uint64), 64))


def record_rand(tag, seed):
    for shape in RAND_SHAPES:
        torch.manual_seed(seed)
        save(f"rand_{shape_name(shape)}_seed{tag}", torch.rand(shape))


def record_randn(tag, seed):
    for shape in RANDN_SHAPES:
        torch.manual_seed(seed)
        save(f"randn_{shape_name(shape)}_seed{tag}", torch.randn(shape))


def record_randint(tag, seed):
    for shape in [(3, 8, 2, 2), (3, 8, 4, 6)]:
        torch.manual_seed(seed)
        save(f"randint_0_2_{shape_name(shape)}_seed{tag}", torch.randint(0, 2, shape))


def record_cache_rule(tag, seed):
    """Section 5a: the cached second Box-Muller value."""
    # randn(5) then randn(1) equals randn(6): the 6th value is the cache.
    torch.manual_seed(seed)
    six = torch.randn(6)
    torch.manual_seed(seed)
    five_then_one = torch.cat([torch.randn(5), torch.randn(1)])
    assert torch.equal(six, five_then_one)
    save(f"cache_randn6_seed{tag}", six)

    # The cache survives rand, randint and the numel >= 16 path.
    torch.manual_seed(seed)
    save(f"cache_survives_a_seed{tag}", torch.randn(5))
    save(f"cache_survives_b_seed{tag}", torch.rand(3))
    save(f"cache_survives_c_seed{tag}", torch.randint(0, 10, (4,)))
    save(f"cache_survives_d_seed{tag}", torch.randn(20))
    save(f"cache_survives_e_seed{tag}", torch.randn(1))

    # manual_seed clears it: randn(5), reseed, randn(1) is a fresh randn(1).
    torch.manual_seed(seed)
    torch.randn(5)
    torch.manual_seed(seed)
    cleared = torch.randn(1)
    torch.manual_seed(seed)
    assert torch.equal(cleared, torch.randn(1))


def record_sequence(tag, seed):
    """One seed, then several kinds of draws in a row, as a lesson makes them."""
    torch.manual_seed(seed)
    save(f"seq_a_rand_seed{tag}", torch.rand(3, 2, 4))
    save(f"seq_b_randn_seed{tag}", torch.randn(3, 2, 4))
    save(f"seq_c_randint_seed{tag}", torch.randint(0, 2, (3, 8, 2, 2)))
    save(f"seq_d_randn_seed{tag}", torch.randn(5))
    save(f"seq_e_randint_seed{tag}", torch.randint(-5, 7, (50,)))
    # range >= 2^32: one random64 (two words) per element (4)
    save(f"seq_f_randint_seed{tag}", torch.randint(0, 2**33, (10,)))
    save(f"seq_g_randn_seed{tag}", torch.randn(1))
    save(f"seq_h_rand_seed{tag}", torch.rand(4))


def record_uniform(tag, seed):
    """Section 3: uniform_(a, b) on a fresh tensor, each after a fresh seed."""
    for index, (low, high) in enumerate(UNIFORM_RANGES):
        for shape in UNIFORM_SHAPES:
            torch.manual_seed(seed)
            t = torch.empty(shape).uniform_(low, high)
            save(f"uniform_r{index}_{shape_name(shape)}_seed{tag}", t)


def record_normal(tag, seed):
    """Section 5: normal_(mean, std) through both paths."""
    for index, (mean, std) in enumerate(NORMAL_PARAMS):
        for shape in NORMAL_SHAPES:
            torch.manual_seed(seed)
            t = torch.empty(shape).normal_(mean, std)
            save(f"normal_p{index}_{shape_name(shape)}_seed{tag}", t)


def linear_params(prefix, tag, module):
    save(f"{prefix}_weight_seed{tag}", module.weight)
    if module.bias is not None:
        save(f"{prefix}_bias_seed{tag}", module.bias)


def record_linear():
    """Section 3: nn.Linear's default init (weight, then bias)."""
    torch.manual_seed(0)
    save("linear_seq_x_seed0", torch.rand(3, 2, 4))
    for k in range(3):
        linear_params(f"linear_seq_{k}_4x4", "0", torch.nn.Linear(4, 4))

    torch.manual_seed(0)
    linear_params("linear_128x128", "0", torch.nn.Linear(128, 128))

    torch.manual_seed(1)
    linear_params("linear_512x128", "1", torch.nn.Linear(512, 128))

    torch.manual_seed(42)
    linear_params("linear_nobias_128x64", "42", torch.nn.Linear(128, 64, bias=False))
    save("linear_nobias_after_seed42", torch.rand(4))


def record_dropout():
    """Section 6: the keep mask of F.dropout on ones, then a rand afterwards."""
    for index, p in enumerate(DROPOUT_PS):
        torch.manual_seed(0)
        out = torch.nn.functional.dropout(torch.ones(DROPOUT_N), p, training=True)
        save(f"dropout_p{index}_mask_seed0", out != 0)
        save(f"dropout_p{index}_after_seed0", torch.rand(4))


def record_large_randn():
    """The lessons' large randn draws (5b), stored once each."""
    torch.manual_seed(0)
    save("randn_1x256x8x64_seed0", torch.randn(1, 256, 8, 64))
    torch.manual_seed(1234)
    save("randn_4x32x512_seed1234", torch.randn(4, 32, 512))


def main():
    assert torch.__version__.startswith("1.13"), torch.__version__
    assert "CPU capability usage: AVX2" in torch.__config__.show(), \
        "record on an AVX2 machine: the C code implements the AVX2 kernels"
    assert not torch.backends.mkl.is_available(), "MKL changes dropout (6)"
    os.makedirs(OUT, exist_ok=True)
    for tag, seed in SEEDS.items():
        record_seeding(tag, seed)
        record_rand(tag, seed)
        record_randn(tag, seed)
        record_randint(tag, seed)
        record_cache_rule(tag, seed)
    for tag in ["0", "42"]:
        record_sequence(tag, SEEDS[tag])
    for tag in ["0", "1"]:
        record_uniform(tag, SEEDS[tag])
    record_normal("0", 0)
    record_linear()
    record_dropout()
    record_large_randn()
    # Section 3: the bounds as nn.Linear computes them, to print next to C's.
    a = math.sqrt(5.0)
    gain = math.sqrt(2.0 / (1 + a * a))
    print("wb(4) =", repr(math.sqrt(3.0) * (gain / math.sqrt(4))), " bb(4) =", 1 / math.sqrt(4))
    print("wrote", len(os.listdir(OUT)), "files to", os.path.normpath(OUT))


if __name__ == "__main__":
    main()
