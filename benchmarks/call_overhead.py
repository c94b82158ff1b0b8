"""Calling overhead of a compiled model next to onnxruntime's `run`, in one process.

    python benchmarks/call_overhead.py

A model that does almost nothing (Relu of 4 floats, then of 4096) is called many times;
the best mean per call over several rounds is each side's overhead: argument checks,
output allocation and the call into machine code for strato (`CompiledModel.__call__`),
the feed dictionary, checks and output allocation for onnxruntime. Both run on one thread.
"""

from __future__ import annotations

import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

import strato


def relu_model(size: int):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [size])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def per_call_us(call, calls: int = 20000, rounds: int = 5) -> float:
    for _ in range(1000):
        call()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def main() -> None:
    print(f"{'model':12s} {'strato us':>10s} {'ort us':>10s} {'ratio':>7s}")
    for size in (4, 4096):
        model = relu_model(size)
        compiled = strato.compile(model, cache=False, threads=1)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        x = np.random.default_rng(0).standard_normal(size).astype(np.float32)
        np.testing.assert_array_equal(compiled(x)[0], session.run(None, {"x": x})[0])
        ours = per_call_us(lambda: compiled(x))
        theirs = per_call_us(lambda: session.run(None, {"x": x}))
        print(f"relu[{size}]".ljust(12) + f" {ours:10.2f} {theirs:10.2f} {ours / theirs:6.2f}x")


if __name__ == "__main__":
    main()
