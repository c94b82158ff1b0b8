"""Reductions over 16-bit floats accumulate in f32 and round once; every other f16 op
rounds its own result (numpy's semantics, which ONNX's reference outputs follow).

The inputs are multiples of 1/8 no larger than 8 in magnitude: each product is a
multiple of 1/64 below 64, so every partial sum of a few hundred of them is exact in
f32 whatever the order, while an f16 accumulator (11 significant bits) rounds. The
expected result is then the exact value rounded once to f16, and it is what numpy
computes; the tests also check that an f16 accumulator would have missed it.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
from onnx import helper
from xdsl.dialects import arith
from xdsl.dialects.builtin import BFloat16Type, TensorType, f16, f32

import strato
from strato.dialects import graph, te
from strato.strategies.builder import PrimitiveBuilder
from test_dtypes import every_level


def eighths(rng: np.random.Generator, shape: tuple[int, ...], dtype=np.float16) -> np.ndarray:
    return (rng.integers(-64, 65, size=shape) / 8).astype(dtype)


def model_of(nodes, inputs: dict[str, np.ndarray], outputs: list[str]) -> onnx.ModelProto:
    values = [
        helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
        for name, a in inputs.items()
    ]
    results = [
        helper.make_tensor_value_info(name, onnx.TensorProto.UNDEFINED, None) for name in outputs
    ]
    model = helper.make_model(
        helper.make_graph(nodes, "g", values, results), opset_imports=[helper.make_opsetid("", 21)]
    )
    model.ir_version = 10
    inferred = onnx.shape_inference.infer_shapes(model)
    for n, output in enumerate(inferred.graph.output):
        model.graph.output[n].CopyFrom(output)
    return model


def f16_accumulated_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b with an f16 accumulator rounded after every term (what is not wanted)."""
    total = np.zeros((a.shape[0], b.shape[1]), np.float16)
    for k in range(a.shape[1]):
        products = a[:, k : k + 1].astype(np.float32) * b[k : k + 1, :].astype(np.float32)
        total = (total.astype(np.float32) + products).astype(np.float16)
    return total


def test_f16_matmul_accumulates_in_f32_and_rounds_once():
    rng = np.random.default_rng(0)
    a, b = eighths(rng, (5, 96)), eighths(rng, (96, 7))
    nodes = [helper.make_node("MatMul", ["a", "b"], ["y"])]
    (y,) = strato.compile(model_of(nodes, {"a": a, "b": b}, ["y"]))(a, b)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, exact.astype(np.float16))
    np.testing.assert_array_equal(y, np.matmul(a, b))
    assert (f16_accumulated_matmul(a, b) != y).any()


def test_every_level_agrees_on_an_f16_matmul():
    rng = np.random.default_rng(4)
    a, b = eighths(rng, (3, 80)), eighths(rng, (80, 4))
    expected = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
    results = every_level(lambda x, y: graph.MatmulOp(x, y), [a, b])
    assert set(results) == {"graph", "te", "loops", "llvm"}
    for level, result in results.items():
        np.testing.assert_array_equal(result, expected, err_msg=level)


def test_f16_matmul_result_rounds_before_the_add_it_feeds():
    rng = np.random.default_rng(1)
    a, b = eighths(rng, (4, 64)), eighths(rng, (64, 6))
    c = (rng.integers(1, 8, size=(4, 6)) / 512).astype(np.float16)
    nodes = [
        helper.make_node("MatMul", ["a", "b"], ["m"]),
        helper.make_node("Add", ["m", "c"], ["y"]),
    ]
    (y,) = strato.compile(model_of(nodes, {"a": a, "b": b, "c": c}, ["y"]))(a, b, c)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    rounded_twice = (exact.astype(np.float16).astype(np.float32) + c).astype(np.float16)
    np.testing.assert_array_equal(y, rounded_twice)
    np.testing.assert_array_equal(y, np.matmul(a, b) + c)
    assert ((exact + c).astype(np.float16) != y).any()  # a kept-wide matmul would differ


def test_f16_conv_and_reduce_sum_accumulate_in_f32():
    rng = np.random.default_rng(2)
    x, w = eighths(rng, (1, 8, 6, 6)), eighths(rng, (3, 8, 3, 3))
    rows = np.abs(eighths(rng, (3, 300)))  # partial sums grow past 64, where f16 steps by 1/16
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]),
        helper.make_node("ReduceSum", ["rows", "axis"], ["total"], keepdims=0),
    ]
    model = model_of(nodes, {"x": x, "w": w, "rows": rows}, ["y", "total"])
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.array([1], np.int64), "axis"))
    y, total = strato.compile(model)(x, w, rows)

    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    exact_conv = np.einsum("nchwij,ocij->nohw", windows, w.astype(np.float64))
    np.testing.assert_array_equal(y, exact_conv.astype(np.float16))
    exact_sum = rows.astype(np.float64).sum(axis=1)
    np.testing.assert_array_equal(total, exact_sum.astype(np.float16))
    np.testing.assert_array_equal(total, rows.sum(axis=1))
    sequential = np.zeros(3, np.float16)
    for column in rows.T:
        sequential = sequential + column
    assert (sequential != total).any()


def test_bf16_sum_accumulates_in_f32():
    rng = np.random.default_rng(3)
    rows = np.abs(eighths(rng, (4, 200), ml_dtypes.bfloat16))
    nodes = [helper.make_node("ReduceSum", ["rows", "axis"], ["total"], keepdims=0)]
    model = model_of(nodes, {"rows": rows}, ["total"])
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.array([1], np.int64), "axis"))
    (total,) = strato.compile(model)(rows)
    exact = rows.astype(np.float64).sum(axis=1)
    np.testing.assert_array_equal(total, exact.astype(ml_dtypes.bfloat16))
    sequential = np.zeros(4, ml_dtypes.bfloat16)
    for column in rows.T:
        sequential = sequential + column
    assert (sequential != total).any()


def reduce_stages(element_type, kind=te.ReduceKind.SUM) -> list:
    pb = PrimitiveBuilder("p")
    a = pb.placeholder("a", TensorType(element_type, [4, 8]))
    result = pb.reduce(
        "dot",
        kind,
        [4],
        [8],
        lambda s, idx, k: s.mul(s.read(a, [idx[0], k[0]]), s.read(a, [idx[0], k[0]])),
        element_type,
    )
    pb.finish([result])
    return [op for op in pb.block.ops if isinstance(op, te.ReduceOp | te.ComputeOp)]


def test_an_f16_sum_becomes_an_f32_reduce_of_exact_products_and_a_rounding_stage():
    reduce, rounding = reduce_stages(f16)
    assert reduce.results[0].type == TensorType(f32, [4])
    body = list(reduce.body.block.ops)
    products = [op for op in body if isinstance(op, arith.MulfOp)]
    assert [op.result.type for op in products] == [f32]  # the f16 product is gone
    assert any(isinstance(op, arith.ExtFOp) for op in body)
    assert rounding.results[0].type == TensorType(f16, [4])
    assert any(isinstance(op, arith.TruncFOp) for op in rounding.body.block.ops)


def test_f32_and_max_reductions_keep_their_type():
    for element_type, kind in ((f32, te.ReduceKind.SUM), (f16, te.ReduceKind.MAX)):
        (reduce,) = reduce_stages(element_type, kind)
        assert reduce.results[0].type == TensorType(element_type, [4])
    reduce, rounding = reduce_stages(BFloat16Type())
    assert reduce.results[0].type == TensorType(f32, [4])
    assert rounding.results[0].type == TensorType(BFloat16Type(), [4])
