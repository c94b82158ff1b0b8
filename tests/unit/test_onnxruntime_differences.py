"""Where strato and onnxruntime differ, or could, and what strato does: each case is
decided and documented in the README ("Semantics where ONNX leaves room").

- NaN through ReduceMax/ReduceMin/MaxPool propagates (numpy, PyTorch); onnxruntime's
  result depends on where the NaN sits.
- ReduceMean over an empty axis is NaN (0 / 0, numpy); onnxruntime gives 0.
- Gemm with alpha = inf follows IEEE arithmetic (inf * 0 = NaN), as onnxruntime does.
- Gather indices outside [-n, n - 1] are clamped to the nearest row (TVM's `clip` mode),
  never read out of bounds; onnxruntime raises.
- Integer division by zero gives 0 and INT_MIN / -1 gives INT_MIN (test_compile.py);
  onnxruntime raises.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import strato
from strato.testing.optional import optional_module

ort = optional_module("onnxruntime")

F = TensorProto.FLOAT


def _model(node, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(
        [node],
        "difference",
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in outputs.items()],
        list(initializers),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model


def _axes(*axes: int) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(axes, np.int64), "axes")


def _onnxruntime(model: onnx.ModelProto, *arrays: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [value.name for value in model.graph.input]
    return session.run(None, dict(zip(names, arrays)))


@pytest.mark.parametrize("op_type", ["ReduceMax", "ReduceMin"])
def test_nan_propagates_through_reduce_max_and_min(op_type):
    x = np.array([[1, np.nan, 3], [np.nan, 2, -np.inf], [4, 5, 6]], np.float32)
    model = _model(
        helper.make_node(op_type, ["x", "axes"], ["y"], keepdims=0),
        {"x": (F, [3, 3])}, {"y": (F, [3])}, [_axes(1)],
    )
    (y,) = strato.compile(model)(x)
    reference = np.max(x, axis=1) if op_type == "ReduceMax" else np.min(x, axis=1)
    np.testing.assert_array_equal(y, reference)  # NaN where a row holds one
    assert np.isnan(y[:2]).all() and not np.isnan(y[2])
    # onnxruntime agrees on rows free of NaN only
    np.testing.assert_array_equal(_onnxruntime(model, x)[0][2], y[2])


@pytest.mark.parametrize("position", [0, 1, 3])
def test_nan_propagates_through_max_pool(position):
    x = np.arange(1, 5, dtype=np.float32)
    x[position] = np.nan
    x = x.reshape(1, 1, 2, 2)
    model = _model(
        helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2]),
        {"x": (F, [1, 1, 2, 2])}, {"y": (F, [1, 1, 1, 1])},
    )
    (y,) = strato.compile(model)(x)
    assert np.isnan(y).all()


def test_reduce_mean_over_an_empty_axis_is_nan():
    x = np.zeros((2, 0), np.float32)
    model = _model(
        helper.make_node("ReduceMean", ["x", "axes"], ["y"], keepdims=0),
        {"x": (F, [2, 0])}, {"y": (F, [2])}, [_axes(1)],
    )
    (y,) = strato.compile(model)(x)
    assert y.shape == (2,) and np.isnan(y).all()
    np.testing.assert_array_equal(_onnxruntime(model, x)[0], [0, 0])  # the documented difference
    # the empty sum is 0 in both
    total = _model(
        helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0),
        {"x": (F, [2, 0])}, {"y": (F, [2])}, [_axes(1)],
    )
    np.testing.assert_array_equal(strato.compile(total)(x)[0], [0, 0])


def test_gemm_with_infinite_alpha_follows_ieee_like_onnxruntime():
    a = np.array([[1, 0], [0, -1]], np.float32)
    b = np.eye(2, dtype=np.float32)
    model = _model(
        helper.make_node("Gemm", ["a", "b"], ["y"], alpha=float("inf")),
        {"a": (F, [2, 2]), "b": (F, [2, 2])}, {"y": (F, [2, 2])},
    )
    (y,) = strato.compile(model)(a, b)
    expected = np.array([[np.inf, np.nan], [np.nan, -np.inf]], np.float32)
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_array_equal(_onnxruntime(model, a, b)[0], expected)


def test_out_of_range_gather_indices_are_clamped():
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    indices = np.array([0, -1, 4, -5, 1000, -1000], np.int64)
    model = _model(
        helper.make_node("Gather", ["data", "indices"], ["y"], axis=0),
        {"data": (F, [4, 3]), "indices": (TensorProto.INT64, [6])}, {"y": (F, [6, 3])},
    )
    (y,) = strato.compile(model)(data, indices)
    # in range: negative indices count from the end; out of range: the nearest row
    np.testing.assert_array_equal(y, data[[0, 3, 3, 0, 3, 0]])
    with pytest.raises(Exception, match="out of data bounds"):
        _onnxruntime(model, data, indices)
