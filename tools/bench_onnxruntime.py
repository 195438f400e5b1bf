#!/usr/bin/env python3
"""bench_onnxruntime.py - ONNX Runtime's MultiHeadAttention on lesson 13's sizes, timed.

    python3 tools/bench_onnxruntime.py ORT_NODE [--threads T] [--seqs 512,2048] [--calls 7]

ONNX Runtime's fused attention for the CPU, timed as its com.microsoft
MultiHeadAttention operator (one of the fused attention operators its
transformer optimizer can put into an exported model; by default it fuses
to the Attention operator, and to MultiHeadAttention when asked:
use_multi_head_attention in onnxruntime/python/tools/transformers/
fusion_options.py). This writes a model of that one node for each size
(query, key, value (1, N, 8 * 64), num_heads 8, unidirectional=1 for the
causal mask) with the `onnx` Python package (Debian: python3-onnx), into a
temporary folder, and times it with onnxruntime-node, whose CPU library
ships in the npm package:

    npm install --ignore-scripts onnxruntime-node     (its install script, as
                                                       the repository's
                                                       js/node/script/install.js
                                                       reads, downloads CUDA
                                                       libraries on Linux x64)

ORT_NODE is that package's folder (node_modules/onnxruntime-node). The
timing is tools/bench_onnxruntime.js, run by node with intraOpNumThreads T;
each figure is the best of `calls` runs after one warm-up. One line per
case, for tools/bench_peers.py:

    onnxruntime 1.30.0 seq=2048 causal=0 threads=1 mha_ms=94.0

The lesson's tests do not need it: it measures, for the tables of docs/fast-on-a-cpu.md.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HEADS, HEAD_DIM = 8, 64


def write_model(path, n, causal):
    import onnx
    from onnx import TensorProto, helper
    width = HEADS * HEAD_DIM
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, n, width])
              for name in ("query", "key", "value")]
    output = helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, n, width])
    attributes = {"num_heads": HEADS}
    if causal:
        attributes["unidirectional"] = 1
    node = helper.make_node("MultiHeadAttention", ["query", "key", "value"], ["out"],
                            domain="com.microsoft", **attributes)
    graph = helper.make_graph([node], "attention", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    onnx.save(model, path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ort_node", help="the onnxruntime-node package folder")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seqs", default="512,1024,2048,4096,8192")
    parser.add_argument("--calls", type=int, default=7)
    args = parser.parse_args()
    timer = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_onnxruntime.js")
    with tempfile.TemporaryDirectory() as folder:
        for n in (int(s) for s in args.seqs.split(",")):
            for causal in (0, 1):
                model = os.path.join(folder, f"mha_{n}_{causal}.onnx")
                write_model(model, n, causal)
                run = subprocess.run(["node", timer, os.path.abspath(args.ort_node), model, str(n),
                                      str(causal), str(args.threads), str(args.calls)],
                                     capture_output=True, text=True)
                if run.returncode != 0:
                    print(f"onnxruntime ? seq={n} causal={causal} threads={args.threads} "
                          f"mha_ms=- (failed: {run.stderr.strip().splitlines()[-1:]})", flush=True)
                    continue
                print(run.stdout.strip(), flush=True)


if __name__ == "__main__":
    sys.exit(main())
