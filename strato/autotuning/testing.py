"""Small ONNX models the autotuning tests and benchmarks tune."""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "kernel", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def gemm_model(m: int, n: int | None = None, k: int | None = None) -> onnx.ModelProto:
    """Y[m, n] = A[m, k] @ B[k, n]."""
    n = m if n is None else n
    k = m if k is None else k
    a = helper.make_tensor_value_info("A", TensorProto.FLOAT, [m, k])
    b = helper.make_tensor_value_info("B", TensorProto.FLOAT, [k, n])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [m, n])
    return _model([helper.make_node("MatMul", ["A", "B"], ["Y"])], [a, b], [y])


def conv_model(size: int, cin: int, cout: int, kernel: int, stride: int) -> onnx.ModelProto:
    """A "same"-padded NCHW conv2d of one image with constant weights."""
    pad = kernel // 2
    out = (size + 2 * pad - kernel) // stride + 1
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, cin, size, size])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, cout, out, out])
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((cout, cin, kernel, kernel)).astype(np.float32)
    weight *= 1.0 / math.sqrt(cin * kernel * kernel)
    node = helper.make_node(
        "Conv", ["X", "W"], ["Y"], kernel_shape=[kernel, kernel],
        strides=[stride, stride], pads=[pad] * 4,
    )  # fmt: skip
    return _model([node], [x], [y], [numpy_helper.from_array(weight, "W")])
