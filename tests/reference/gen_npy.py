#!/usr/bin/python3
"""gen_npy.py - .npy files written by numpy itself, for tests/test_npy.c.

Run from the project root with Debian's numpy:
    /usr/bin/python3 tests/reference/gen_npy.py
Writes tests/data/npy/<name>.npy with np.save (format version 1.0, header
padded so the data starts at a multiple of 64). test_npy.c builds the same
arrays in C, writes them with npy_write and compares the files byte for byte.
"""
import os

import numpy as np

OUT = "tests/data/npy"


def main():
    os.makedirs(OUT, exist_ok=True)
    arrays = {
        # (i - 12) / 4: quarters, exact in float32
        "float_3x2x4": ((np.arange(24) - 12) / 4).astype(np.float32).reshape(3, 2, 4),
        # the causal mask of the notebooks, as int64
        "mask_int64_4x4": np.tril(np.ones((4, 4), dtype=np.int64)),
        "vector_5": np.array([0.5, -2.5, 1e-8, 30000.0, -0.0], dtype=np.float32),
        "scalar": np.array(3.5, dtype=np.float32),
        # arange(6).reshape(2, 3).T in C order: what a transposed view must write
        "transposed_3x2": np.ascontiguousarray(np.arange(6, dtype=np.float32).reshape(2, 3).T),
    }
    for name, array in arrays.items():
        np.save(os.path.join(OUT, name + ".npy"), array)
    print("numpy", np.__version__, "wrote", len(arrays), "files to", OUT)


if __name__ == "__main__":
    main()
