"""Models quantized by onnxruntime's quantization tool, compiled by strato and compared
with onnxruntime running the same int8 models: a small CNN quantized statically (QDQ
format, per-channel weights, calibrated with seeded random data) and a MatMul model
quantized dynamically (DynamicQuantizeLinear and MatMulInteger)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import strato
from strato.diagnostics import ModelImportError
from strato.frontends.onnx import import_onnx
from strato.testing.int8_reference import onnx_reference, onnxruntime_is_exact
from strato.testing.optional import optional_module
from strato.zoo.onnx_graph import GraphBuilder, value_info

ort = optional_module("onnxruntime")
quantization = optional_module("onnxruntime.quantization")


def _small_cnn() -> onnx.ModelProto:
    g = GraphBuilder(seed=3)
    x = g.conv("input", "conv1", 3, 8, kernel=3, stride=1)
    x = g.node("Relu", [x], "relu1")
    x = g.conv(x, "conv2", 8, 16, kernel=3, stride=2)
    x = g.node("Relu", [x], "relu2")
    x = g.node("GlobalAveragePool", [x], "pool")
    x = g.node("Flatten", [x], "flatten", axis=1)
    g.gemm(x, "fc", 16, 10, gain=1.0, output="output")
    return g.finish(
        "small_cnn",
        [value_info("input", [1, 3, 12, 12])],
        [value_info("output", [1, 10])],
    )


def _matmul_model() -> onnx.ModelProto:
    rng = np.random.default_rng(5)
    weight = rng.standard_normal((32, 16)).astype(np.float32) * 0.2
    bias = rng.standard_normal(16).astype(np.float32) * 0.1
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["h"]),
            helper.make_node("Add", ["h", "b"], ["y"]),
        ],
        "matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _run_ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return session.run(None, feeds)


def _exact_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """onnxruntime's outputs where it computes u8 x s8 products exactly, else ONNX's
    reference evaluator's (`strato.testing.int8_reference`)."""
    if onnxruntime_is_exact():
        return _run_ort(model, feeds)
    return onnx_reference(model, feeds)


def _output_scale(model: onnx.ModelProto) -> float:
    """The scale of the DequantizeLinear that produces the graph's output."""
    output = model.graph.output[0].name
    initializers = {
        init.name: numpy_helper.to_array(init) for init in model.graph.initializer
    }
    for node in model.graph.node:
        if node.op_type == "DequantizeLinear" and output in node.output:
            return float(initializers[node.input[1]])
    raise AssertionError("the output is not dequantized")


def test_static_qdq_per_channel_cnn_matches_onnxruntime(tmp_path):
    float_model = _small_cnn()
    source, target = tmp_path / "cnn.onnx", tmp_path / "cnn_int8.onnx"
    onnx.save(float_model, source)
    rng = np.random.default_rng(11)
    samples = [rng.standard_normal((1, 3, 12, 12)).astype(np.float32) for _ in range(4)]

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self._samples = iter(samples)

        def get_next(self):
            sample = next(self._samples, None)
            return None if sample is None else {"input": sample}

    quantization.quantize_static(
        str(source),
        str(target),
        Reader(),
        quant_format=quantization.QuantFormat.QDQ,
        per_channel=True,
        activation_type=quantization.QuantType.QUInt8,
        weight_type=quantization.QuantType.QInt8,
    )
    model = onnx.load(target)
    op_types = {node.op_type for node in model.graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= op_types
    compiled = strato.compile(model)
    step = _output_scale(model)
    for sample in [*samples, rng.standard_normal((1, 3, 12, 12)).astype(np.float32)]:
        expected = _exact_run(model, {"input": sample})[0]
        actual = compiled(sample)
        actual = actual[0] if isinstance(actual, (list, tuple)) else actual
        # onnxruntime runs the QDQ groups in int8 arithmetic; strato dequantizes and
        # computes in f32, so a value near a rounding boundary may land one step over
        np.testing.assert_allclose(actual, expected, rtol=0, atol=2.5 * step)


def test_dynamic_matmul_matches_onnxruntime(tmp_path):
    source, target = tmp_path / "mm.onnx", tmp_path / "mm_int8.onnx"
    onnx.save(_matmul_model(), source)
    quantization.quantize_dynamic(
        str(source), str(target), weight_type=quantization.QuantType.QUInt8
    )
    model = onnx.load(target)
    op_types = {node.op_type for node in model.graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= op_types
    compiled = strato.compile(model)
    rng = np.random.default_rng(7)
    for _ in range(3):
        x = rng.standard_normal((4, 32)).astype(np.float32)
        expected = _run_ort(model, {"x": x})[0]
        actual = compiled(x)
        actual = actual[0] if isinstance(actual, (list, tuple)) else actual
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


def _integer_outputs_model() -> onnx.ModelProto:
    """DynamicQuantizeLinear, MatMulInteger and QLinearMatMul with every output graph
    output, for an exact comparison of the integers."""
    rng = np.random.default_rng(2)
    b = rng.integers(-128, 128, (32, 8), dtype=np.int8)
    b_zero = rng.integers(-3, 4, 8).astype(np.int8)
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "scale", "zero"]),
        helper.make_node("MatMulInteger", ["q", "b", "zero", "b_zero"], ["acc"]),
        helper.make_node(
            "QLinearMatMul",
            ["q", "scale", "zero", "b", "b_scale", "b_zero0", "y_scale", "y_zero"],
            ["y"],
        ),
    ]
    initializers = [
        numpy_helper.from_array(b, "b"),
        numpy_helper.from_array(b_zero, "b_zero"),
        numpy_helper.from_array(np.array(0.02, np.float32), "b_scale"),
        numpy_helper.from_array(np.array(0, np.int8), "b_zero0"),
        numpy_helper.from_array(np.array(0.3, np.float32), "y_scale"),
        numpy_helper.from_array(np.array(7, np.uint8), "y_zero"),
    ]
    outputs = [
        helper.make_tensor_value_info("q", TensorProto.UINT8, [6, 32]),
        helper.make_tensor_value_info("scale", TensorProto.FLOAT, []),
        helper.make_tensor_value_info("zero", TensorProto.UINT8, []),
        helper.make_tensor_value_info("acc", TensorProto.INT32, [6, 8]),
        helper.make_tensor_value_info("y", TensorProto.UINT8, [6, 8]),
    ]
    graph = helper.make_graph(
        nodes,
        "integers",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 32])],
        outputs,
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


def test_integer_outputs_are_exact():
    model = _integer_outputs_model()
    compiled = strato.compile(model)
    rng = np.random.default_rng(4)
    for _ in range(3):
        x = (rng.standard_normal((6, 32)) * 3).astype(np.float32)
        expected = _exact_run(model, {"x": x})
        actual = compiled(x)
        for got, want in zip(actual, expected):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_unsupported_scale_shape_is_a_diagnostic():
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "s"], ["y"], name="quant", axis=1)],
        "bad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [2, 3])],
        [numpy_helper.from_array(np.ones(4, np.float32), "s")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    with pytest.raises(
        ModelImportError, match="quant.*neither per tensor nor per axis"
    ):
        import_onnx(model)


@pytest.mark.parametrize(
    ("scale_shape", "attributes"),
    [((), {}), ((4,), {"axis": 1}), ((3, 2), {"axis": 1, "block_size": 2})],
    ids=["per_tensor", "per_axis", "blocked"],
)
def test_run_time_scales_match_the_reference(scale_shape, attributes):
    """Scales and zero points that are graph inputs (not initializers): per tensor, per
    axis and blocked (the scale gathered along the axis), int8 round trip."""
    from onnx.reference import ReferenceEvaluator

    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], **attributes),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], **attributes),
    ]
    graph = helper.make_graph(
        nodes,
        "round_trip",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4]),
            helper.make_tensor_value_info("s", TensorProto.FLOAT, list(scale_shape)),
            helper.make_tensor_value_info("z", TensorProto.INT8, list(scale_shape)),
        ],
        [
            helper.make_tensor_value_info("q", TensorProto.INT8, [3, 4]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    rng = np.random.default_rng(9)
    # halves land on .5 exactly: round half to even decides them
    x = (rng.integers(-300, 300, (3, 4)) / 2).astype(np.float32)
    scale = rng.choice([0.5, 1.0, 2.0], scale_shape).astype(np.float32)
    zero = rng.integers(-5, 5, scale_shape).astype(np.int8)
    expected = ReferenceEvaluator(model).run(None, {"x": x, "s": scale, "z": zero})
    actual = strato.compile(model)(x, scale, zero)
    for got, want in zip(actual, expected):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("op_type", "attributes", "reason"),
    [
        ("QuantizeLinear", {"output_dtype": 999}, "output_dtype=999 is not a tensor"),
        ("QuantizeLinear", {"output_dtype": TensorProto.INT32}, "quantizing to int32"),
        (
            "DequantizeLinear",
            {"output_dtype": TensorProto.INT8},
            "dequantizing to int8",
        ),
    ],
)
def test_unsupported_types_are_diagnostics(op_type, attributes, reason):
    x_type = TensorProto.FLOAT if op_type == "QuantizeLinear" else TensorProto.INT8
    graph = helper.make_graph(
        [helper.make_node(op_type, ["x", "s"], ["y"], name="q", **attributes)],
        "bad",
        [helper.make_tensor_value_info("x", x_type, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, [2, 3])],
        [numpy_helper.from_array(np.ones((), np.float32), "s")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    with pytest.raises(ModelImportError, match=f"node 'q' \\({op_type}\\): .*{reason}"):
        import_onnx(model)


@pytest.mark.parametrize("depth", [16, 2048], ids=["f32_sums", "f64_sums"])
def test_integer_products_with_known_weights_are_exact(depth):
    """MatMulInteger and ConvInteger with weights known at import time: small sums are
    computed in f32, sums that could pass 2**24 in f64; both exactly."""
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(depth)
    b = rng.integers(0, 256, (depth, 5), dtype=np.uint8)
    w = rng.integers(-128, 128, (3, depth, 1, 1), dtype=np.int8)
    nodes = [
        helper.make_node("MatMulInteger", ["a", "b", "a_zero", "b_zero"], ["mm"]),
        helper.make_node("ConvInteger", ["x", "w", "x_zero"], ["conv"]),
    ]
    graph = helper.make_graph(
        nodes,
        "products",
        [
            helper.make_tensor_value_info("a", TensorProto.UINT8, [4, depth]),
            helper.make_tensor_value_info("x", TensorProto.UINT8, [1, depth, 2, 2]),
        ],
        [
            helper.make_tensor_value_info("mm", TensorProto.INT32, [4, 5]),
            helper.make_tensor_value_info("conv", TensorProto.INT32, [1, 3, 2, 2]),
        ],
        [
            numpy_helper.from_array(b, "b"),
            numpy_helper.from_array(w, "w"),
            numpy_helper.from_array(np.array(3, np.uint8), "a_zero"),
            numpy_helper.from_array(np.array(200, np.uint8), "b_zero"),
            numpy_helper.from_array(np.array(250, np.uint8), "x_zero"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    a = rng.integers(0, 256, (4, depth), dtype=np.uint8)
    x = rng.integers(0, 256, (1, depth, 2, 2), dtype=np.uint8)
    expected = ReferenceEvaluator(model).run(None, {"a": a, "x": x})
    actual = strato.compile(model)(a, x)
    for got, want in zip(actual, expected):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
