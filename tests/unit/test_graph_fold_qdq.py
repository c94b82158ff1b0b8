"""graph-fold-qdq and the int8 path behind it: QDQ models quantized by onnxruntime's tool
run as integer convolutions / dense layers whose outputs equal onnxruntime's and ONNX's
reference bit for bit, on the VNNI path and on the fallback (a target without VNNI)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")

import strato
from strato.dialects import graph
from strato.frontends.onnx import import_model
from strato.testing.int8_reference import onnxruntime_is_exact
from strato.transforms.graph_fold_qdq import GraphFoldQdqPass


def _float_model(kind: str, channels: int, out: int, size: int, stride: int, group: int) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    if kind == "conv":
        w = rng.standard_normal((out, channels // group, 3, 3)).astype(np.float32) * 0.3
        b = rng.standard_normal(out).astype(np.float32) * 0.1
        nodes = [
            helper.make_node(
                "Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[stride, stride], group=group
            ),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
        ]
        x_shape = [1, channels, size, size]
        y_shape = None
    else:
        w = rng.standard_normal((out, channels)).astype(np.float32) * 0.3
        b = rng.standard_normal(out).astype(np.float32) * 0.1
        nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)]
        x_shape = [2, channels]
        y_shape = [2, out]
    inits = [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel()),
             helper.make_tensor("b", TensorProto.FLOAT, b.shape, b.ravel())]
    g = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        inits,
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model


def _quantized(model: onnx.ModelProto, shape, activation) -> onnx.ModelProto:
    """`model` quantized statically in the QDQ format, per-channel int8 weights and
    `activation` activations."""
    return _quantized_as(
        model, shape,
        quant_format=quantization.QuantFormat.QDQ, per_channel=True,
        activation_type=activation, weight_type=quantization.QuantType.QInt8,
    )  # fmt: skip


def _quantized_as(model: onnx.ModelProto, shape, **options) -> onnx.ModelProto:
    """`model` quantized by onnxruntime's `quantize_static` with `options`, calibrated
    on seeded inputs of `shape`."""
    rng = np.random.default_rng(1)
    samples = [rng.standard_normal(shape).astype(np.float32) for _ in range(4)]

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self._samples = iter(samples)

        def get_next(self):
            sample = next(self._samples, None)
            return None if sample is None else {"x": sample}

    with tempfile.TemporaryDirectory() as tmp:
        source, target = Path(tmp) / "f.onnx", Path(tmp) / "q.onnx"
        onnx.save(model, source)
        quantization.quantize_static(str(source), str(target), Reader(), **options)
        return onnx.load(target)


def _strato(model, x, target="llvm"):
    outputs = strato.compile(model, target=target, threads=1)(x)
    return np.asarray(outputs[0] if isinstance(outputs, list | tuple) else outputs)


def _onnxruntime(model, x):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def _reference(model, x):
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model).run(None, {"x": x})[0]


def _host_features() -> set[str]:
    from strato.targets.llvm.dot_i8 import machine_features
    from strato.targets.llvm.host import host_target

    return machine_features(host_target().features)


def _check(model, actual, x) -> None:
    """`actual` equals ONNX's reference, and onnxruntime's where it is exact
    (`strato.testing.int8_reference`)."""
    np.testing.assert_array_equal(actual, _reference(model, x))
    if onnxruntime_is_exact():
        np.testing.assert_array_equal(actual, _onnxruntime(model, x))


CASES = [
    # kind, channels, out, size, stride, group
    ("conv", 8, 32, 10, 1, 1),
    ("conv", 3, 16, 9, 2, 1),  # 3 channels: padded to 4; odd sizes
    ("conv", 6, 20, 8, 1, 1),  # 20 outputs: not a multiple of the lanes
    ("conv", 8, 16, 8, 1, 2),  # groups: the generic reduction
    ("gemm", 24, 10, 0, 0, 0),
]


@pytest.mark.parametrize("activation", ["QUInt8", "QInt8"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_qdq_models_match_onnxruntime_and_reference(case, activation):
    kind, channels, out, size, stride, group = case
    float_model = _float_model(kind, channels, out, size, stride, group)
    shape = [1, channels, size, size] if kind == "conv" else [2, channels]
    model = _quantized(float_model, shape, getattr(quantization.QuantType, activation))
    module = import_model(model)
    GraphFoldQdqPass().apply(None, module)
    folded = [op for op in module.walk() if isinstance(op, graph.QConvOp | graph.QDenseOp)]
    assert folded, "the QDQ group was not folded"
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    _check(model, _strato(model, x), x)


@pytest.mark.parametrize(
    "target",
    ["llvm -mattr=-avx512vnni,-avxvnni", "llvm -mcpu=skylake-avx512", "llvm -mcpu=haswell"],
)
def test_fallback_and_256_bit_paths_match(target):
    from strato.targets.llvm.host import host_target

    if "x86" not in host_target().triple:
        pytest.skip("x86 features")
    if "skylake-avx512" in target and "avx512f" not in _host_features():
        pytest.skip("the host cannot run AVX-512 code")
    float_model = _float_model("conv", 8, 32, 10, 1, 1)
    model = _quantized(float_model, [1, 8, 10, 10], quantization.QuantType.QUInt8)
    x = np.random.default_rng(3).standard_normal((1, 8, 10, 10)).astype(np.float32)
    _check(model, _strato(model, x, target), x)


def test_dot_i8_variant_follows_features():
    from strato.targets.llvm.dot_i8 import dot_i8_lanes, machine_features

    assert dot_i8_lanes(machine_features("+avx512f,+avx512vnni"), 16) == (16, True)
    assert dot_i8_lanes(machine_features("+avx2,+avxvnni"), 8) == (8, True)
    assert dot_i8_lanes(machine_features("+avx512f,+avx512vnni,-avx512vnni"), 16) == (16, False)
    assert dot_i8_lanes(machine_features("+avx2"), 8) == (8, False)
    assert dot_i8_lanes(machine_features(""), 4) == (4, False)


def test_unfoldable_groups_stay_float():
    """A per-tensor-quantized output used twice keeps the float composition."""
    float_model = _float_model("gemm", 8, 4, 0, 0, 0)
    model = _quantized(float_model, [2, 8], quantization.QuantType.QUInt8)
    module = import_model(model)
    # a second user of the product keeps the group from folding
    for op in list(module.walk()):
        if isinstance(op, graph.MatmulOp):
            op.result.name_hint = "product"
    GraphFoldQdqPass().apply(None, module)
    module.verify()


def test_qoperator_conv_imports_as_integer_ops():
    """QLinearConv (the QOperator format) becomes graph.qconv + graph.requantize."""
    float_model = _float_model("conv", 6, 16, 9, 2, 1)
    model = _quantized_as(
        float_model, (1, 6, 9, 9),
        quant_format=quantization.QuantFormat.QOperator, op_types_to_quantize=["Conv"],
    )  # fmt: skip
    assert "QLinearConv" in {node.op_type for node in model.graph.node}
    module = import_model(model)
    assert any(isinstance(op, graph.QConvOp) for op in module.walk())
    assert any(isinstance(op, graph.RequantizeOp) for op in module.walk())
    # the draw after the four calibration samples
    x = np.random.default_rng(1).standard_normal((5, 6, 9, 9)).astype(np.float32)[4:]
    _check(model, _strato(model, x), x)


def test_dynamic_matmul_integer_runs_as_qdense():
    """MatMulInteger behind DynamicQuantizeLinear: graph.qdense with the run-time zero
    point's correction, equal to ONNX's reference (and onnxruntime where it is exact)."""
    rng = np.random.default_rng(4)
    w = rng.standard_normal((24, 40)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
    g = helper.make_graph(
        nodes, "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 24])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 40])],
        [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel())],
    )
    float_model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    float_model.ir_version = 9
    with tempfile.TemporaryDirectory() as tmp:
        source, target = Path(tmp) / "f.onnx", Path(tmp) / "q.onnx"
        onnx.save(float_model, source)
        quantization.quantize_dynamic(str(source), str(target), weight_type=quantization.QuantType.QInt8)
        model = onnx.load(target)
    assert "MatMulInteger" in {node.op_type for node in model.graph.node}
    module = import_model(model)
    assert any(isinstance(op, graph.QDenseOp) for op in module.walk())
    x = rng.standard_normal((3, 24)).astype(np.float32)
    _check(model, _strato(model, x), x)


# -- property: folding keeps the interpreted results -----------------------------------


@st.composite
def qdq_conv_programs(draw) -> tuple[str, np.ndarray]:
    """A dequantize -> conv (bias) -> quantize group in graph IR with scales that are
    powers of two (so the f32 composition is exact too and both forms must agree bit
    for bit), and a random quantized input."""
    channels = draw(st.integers(1, 9))
    outputs = draw(st.integers(1, 20))
    size = draw(st.integers(3, 7))
    kernel = draw(st.sampled_from([1, 3]))
    stride = draw(st.sampled_from([1, 2]))
    pad = draw(st.sampled_from([0, 1]))
    signed = draw(st.booleans())
    x_type, low, high = ("i8", -128, 127) if signed else ("ui8", 0, 255)
    x_zero = draw(st.integers(low, high))
    x_shift = draw(st.integers(-6, -2))
    w_shifts = draw(st.lists(st.integers(-7, -3), min_size=outputs, max_size=outputs))
    y_shift = draw(st.integers(-3, 2))
    y_zero = draw(st.integers(low, high))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    weights = rng.integers(-128, 128, (outputs, channels, kernel, kernel))
    bias = rng.integers(-2000, 2000, outputs)
    out = (size + 2 * pad - kernel) // stride + 1
    w_scales = ", ".join(f"{2.0 ** s!r}" for s in w_shifts)
    b_scales = ", ".join(f"{2.0 ** (s + x_shift)!r}" for s in w_shifts)
    w_text = np.array2string(weights, separator=", ", threshold=10**9).replace("\n", "")
    b_text = np.array2string(bias, separator=", ").replace("\n", "")
    ir = f"""
func.func @main(%q: tensor<1x{channels}x{size}x{size}x{x_type}>) -> tensor<1x{outputs}x{out}x{out}x{x_type}> {{
  %xs = graph.constant dense<{2.0 ** x_shift!r}> : tensor<f32>
  %xz = graph.constant dense<{x_zero}> : tensor<{x_type}>
  %x = graph.dequantize %q, %xs, %xz axis 1 : (tensor<1x{channels}x{size}x{size}x{x_type}>, tensor<f32>, tensor<{x_type}>) -> tensor<1x{channels}x{size}x{size}xf32>
  %wq = graph.constant dense<{w_text}> : tensor<{outputs}x{channels}x{kernel}x{kernel}xi8>
  %ws = graph.constant dense<[{w_scales}]> : tensor<{outputs}xf32>
  %wz = graph.constant dense<0> : tensor<{outputs}xi8>
  %w = graph.dequantize %wq, %ws, %wz axis 0 : (tensor<{outputs}x{channels}x{kernel}x{kernel}xi8>, tensor<{outputs}xf32>, tensor<{outputs}xi8>) -> tensor<{outputs}x{channels}x{kernel}x{kernel}xf32>
  %bq = graph.constant dense<{b_text}> : tensor<{outputs}xi32>
  %bs = graph.constant dense<[{b_scales}]> : tensor<{outputs}xf32>
  %bz = graph.constant dense<0> : tensor<{outputs}xi32>
  %b = graph.dequantize %bq, %bs, %bz axis 0 : (tensor<{outputs}xi32>, tensor<{outputs}xf32>, tensor<{outputs}xi32>) -> tensor<{outputs}xf32>
  %y = graph.conv %x, %w, %b strides [{stride}, {stride}] padding [{pad}, {pad}, {pad}, {pad}] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x{channels}x{size}x{size}xf32>, tensor<{outputs}x{channels}x{kernel}x{kernel}xf32>, tensor<{outputs}xf32>) -> tensor<1x{outputs}x{out}x{out}xf32>
  %ys = graph.constant dense<{2.0 ** y_shift!r}> : tensor<f32>
  %yz = graph.constant dense<{y_zero}> : tensor<{x_type}>
  %r = graph.quantize %y, %ys, %yz axis 1 : (tensor<1x{outputs}x{out}x{out}xf32>, tensor<f32>, tensor<{x_type}>) -> tensor<1x{outputs}x{out}x{out}x{x_type}>
  func.return %r : tensor<1x{outputs}x{out}x{out}x{x_type}>
}}"""
    x = rng.integers(low, high + 1, (1, channels, size, size)).astype(np.int8 if signed else np.uint8)
    return ir, x


@settings(max_examples=25, deadline=None)
@given(program=qdq_conv_programs())
def test_fold_keeps_results(program):
    """Interpreted before and after graph-fold-qdq, a QDQ convolution gives the same
    integers (the scales are powers of two: the f32 composition is exact as well)."""
    from xdsl.parser import Parser

    from strato.context import make_context
    from strato.interpreters.graph import run_graph

    text, x = program
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    before = run_graph(module, [x])[0]
    GraphFoldQdqPass().apply(ctx, module)
    module.verify()
    assert any(isinstance(op, graph.QConvOp) for op in module.walk())
    after = run_graph(module, [x])[0]
    np.testing.assert_array_equal(after, before)


def test_tensorized_loops_interpret_to_the_compiled_results():
    """The scheduled loop program, cpu.dot_i8 included, interprets to what the compiled
    model computes."""
    from strato.interpreters.loop import run_loops
    from strato.targets.registry import get_target, run_stages

    float_model = _float_model("conv", 8, 16, 5, 1, 1)
    model = _quantized(float_model, [1, 8, 5, 5], quantization.QuantType.QUInt8)
    module = import_model(model)
    run_stages(get_target("llvm -threads=1").stages(), module)
    assert "cpu.dot_i8" in str(module)
    x = np.random.default_rng(5).standard_normal((1, 8, 5, 5)).astype(np.float32)
    (interpreted,) = run_loops(module, [x])
    np.testing.assert_array_equal(interpreted, _strato(model, x))
