#!/usr/bin/python3
"""Record what PyTorch prints and computes for lesson 1 (the toy 3x3 example).

Run from the project root with Debian's python3-torch:
    /usr/bin/python3 tests/reference/gen_lesson01.py
Writes tests/data/lesson01/<name>.npy and stdout.txt. The build and the tests
only read these files; they never run Python.
"""
import os

import torch

from reference import DATA, save_all, stdout_txt

OUT = os.path.join(DATA, "lesson01")


def main():
    os.makedirs(OUT, exist_ok=True)
    with stdout_txt(OUT):
        Query = torch.tensor([[1., 0., 2.], [2., 2., 2.], [2., 1., 3.]])
        Key = torch.tensor([[0., 1., 1.], [4., 4., 0.], [2., 3., 1.]])
        Value = torch.tensor([[1., 2., 3.], [2., 8., 0.], [2., 6., 3.]])
        print(Query)
        print(Key)
        print(Value)
        scores = Query @ Key.T
        print(scores)
        weights = torch.softmax(scores, dim=-1)
        print(weights)
        out = weights @ Value
        print(out)
        # the 1/sqrt(d_k) scaling the post leaves out
        scaled_weights = torch.softmax(scores / (3 ** 0.5), dim=-1)
        print(scaled_weights)
        print(scaled_weights @ Value)
        # the max-subtracted softmax on tenfold scores
        big = scores * 10
        print(big)
        print(torch.softmax(big, dim=-1))
    save_all(OUT, dict(Query=Query, Key=Key, Value=Value, scores=scores, weights=weights,
                       out=out))


if __name__ == "__main__":
    main()
