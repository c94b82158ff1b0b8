"""Einsum and Resize compiled by strato next to onnxruntime, in one process, one thread.

    python benchmarks/einsum_resize.py

Attention's two contractions as Einsum (graph.einsum, whose matrix-product stage the
GEMM template schedules) and, for comparison, the same product written as
Transpose + MatMul (graph.matmul); then Resize of an image in the common modes. Each row
gives the best mean time per call of strato and of onnxruntime, and their ratio.
"""

from __future__ import annotations

import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import strato

RNG = np.random.default_rng(0)


def _model(nodes, inputs: dict[str, tuple], output: tuple, initializers=()):
    graph = helper.make_graph(
        nodes,
        "bench",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output)],
        list(initializers),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def einsum_model(equation: str, lhs: tuple, rhs: tuple, out: tuple):
    node = helper.make_node("Einsum", ["a", "b"], ["y"], equation=equation)
    return _model([node], {"a": lhs, "b": rhs}, out)


def transposed_matmul_model(lhs: tuple, rhs: tuple, out: tuple):
    nodes = [
        helper.make_node("Transpose", ["b"], ["bt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["a", "bt"], ["y"]),
    ]
    return _model(nodes, {"a": lhs, "b": rhs}, out)


def resize_model(shape: tuple, scales: list[float], out: tuple, **attrs):
    scales_init = numpy_helper.from_array(np.asarray(scales, dtype=np.float32), "scales")
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], **attrs)
    return _model([node], {"x": shape}, out, [scales_init])


def per_call_ms(call, rounds: int = 5, min_seconds: float = 0.2) -> float:
    call()
    best = float("inf")
    for _ in range(rounds):
        calls, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < min_seconds or calls < 3:
            call()
            calls += 1
        best = min(best, elapsed / calls * 1e3)
    return best


def cases():
    b, h, q, k, d = 1, 8, 128, 128, 64
    yield "einsum bhqd,bhkd->bhqk", einsum_model(
        "bhqd,bhkd->bhqk", (b, h, q, d), (b, h, k, d), (b, h, q, k)
    )
    yield "transpose+matmul (same)", transposed_matmul_model((b, h, q, d), (b, h, k, d), (b, h, q, k))
    yield "einsum bhqk,bhkd->bhqd", einsum_model(
        "bhqk,bhkd->bhqd", (b, h, q, k), (b, h, k, d), (b, h, q, d)
    )
    image = (1, 16, 64, 64)
    up = (1, 16, 128, 128)
    yield "resize nearest x2", resize_model(image, [1, 1, 2, 2], up, mode="nearest")
    yield "resize linear x2", resize_model(image, [1, 1, 2, 2], up, mode="linear")
    yield "resize cubic x2", resize_model(image, [1, 1, 2, 2], up, mode="cubic")


def main() -> None:
    print(f"{'case':28s} {'strato ms':>10s} {'ort ms':>10s} {'ratio':>7s}")
    for name, model in cases():
        compiled = strato.compile(model, cache=False, threads=1)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        feeds = {
            i.name: RNG.standard_normal(
                [d.dim_value for d in i.type.tensor_type.shape.dim]
            ).astype(np.float32)
            for i in model.graph.input
        }
        args = list(feeds.values())
        np.testing.assert_allclose(
            compiled(*args)[0], session.run(None, feeds)[0], rtol=1e-4, atol=1e-4
        )
        ours = per_call_ms(lambda: compiled(*args))
        theirs = per_call_ms(lambda: session.run(None, feeds))
        print(f"{name:28s} {ours:10.3f} {theirs:10.3f} {ours / theirs:6.2f}x")


if __name__ == "__main__":
    main()
