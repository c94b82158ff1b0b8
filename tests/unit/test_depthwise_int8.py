"""The integer depthwise convolution (graph.qconv with groups = channels, scheduled by
the depthwise_conv2d_int8 template): its loop program interpreted, the same program
compiled and the graph's own evaluation agree bit for bit over strides, paddings,
dilations, row widths the lanes do not divide, uint8 and int8 inputs and per-channel or
per-tensor requantization; QDQ depthwise layers quantized by onnxruntime's tool fold into
it and equal onnxruntime's output."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.parser import Parser

from strato.context import make_context
from strato.interpreters.graph import run_graph
from strato.interpreters.loop import run_loops
from strato.targets.registry import get_target, run_stages
from strato.testing.equivalence import run_compiled_loops


def _text(array: np.ndarray) -> str:
    return np.array2string(array, separator=", ", threshold=10**9).replace("\n", "")


def _program(
    channels: int,
    size: tuple[int, int],
    kernel: int,
    stride: int,
    pads: tuple[int, int, int, int],
    dilation: int,
    signed: bool,
    per_channel: bool,
    seed: int,
) -> tuple[str, np.ndarray]:
    """graph.qconv (depthwise) -> graph.requantize in graph IR, and an input."""
    rng = np.random.default_rng(seed)
    x_type, low, high = ("i8", -128, 127) if signed else ("ui8", 0, 255)
    height, width = size
    span = dilation * (kernel - 1) + 1
    out_h = (height + pads[0] + pads[2] - span) // stride + 1
    out_w = (width + pads[1] + pads[3] - span) // stride + 1
    weights = rng.integers(-128, 128, (channels, 1, kernel, kernel))
    bias = rng.integers(-3000, 3000, channels)
    pad_value = int(rng.integers(low, high + 1))
    if per_channel:
        multiplier = rng.uniform(2e-4, 4e-3, channels).astype(np.float32)
        m_type, m_text = f"tensor<{channels}xf32>", f"dense<{_text(multiplier)}>"
    else:
        m_type, m_text = "tensor<f32>", f"dense<{float(rng.uniform(2e-4, 4e-3))!r}>"
    y_zero = int(rng.integers(low, high + 1))
    x_shape = f"1x{channels}x{height}x{width}"
    acc = f"tensor<1x{channels}x{out_h}x{out_w}xi32>"
    ir = f"""
func.func @main(%q: tensor<{x_shape}x{x_type}>) -> tensor<1x{channels}x{out_h}x{out_w}x{x_type}> {{
  %w = graph.constant dense<{_text(weights)}> : tensor<{channels}x1x{kernel}x{kernel}xi8>
  %b = graph.constant dense<{_text(bias)}> : tensor<{channels}xi32>
  %m = graph.constant {m_text} : {m_type}
  %z = graph.constant dense<{y_zero}> : tensor<{x_type}>
  %a = graph.qconv %q, %w, %b strides [{stride}, {stride}] padding [{", ".join(map(str, pads))}] dilations [{dilation}, {dilation}] groups {channels} pad_value {pad_value} layout "NCHW" : (tensor<{x_shape}x{x_type}>, tensor<{channels}x1x{kernel}x{kernel}xi8>, tensor<{channels}xi32>) -> {acc}
  %r = graph.requantize %a, %m, %z axis 1 : ({acc}, {m_type}, tensor<{x_type}>) -> tensor<1x{channels}x{out_h}x{out_w}x{x_type}>
  func.return %r : tensor<1x{channels}x{out_h}x{out_w}x{x_type}>
}}"""
    x = rng.integers(low, high + 1, (1, channels, height, width))
    return ir, x.astype(np.int8 if signed else np.uint8)


def _as(array: np.ndarray, like: np.ndarray) -> np.ndarray:
    """`array`'s bytes as `like`'s type: loop programs hold 8-bit integers signless."""
    return np.asarray(array).view(like.dtype)


CASES = [
    # channels, (height, width), kernel, stride, pads, dilation, signed, per_channel
    (8, (6, 16), 3, 1, (1, 1, 1, 1), 1, False, True),  # a row of whole vectors
    (5, (5, 7), 3, 1, (1, 1, 1, 1), 1, True, False),  # 7 columns: one short tile
    (6, (9, 9), 3, 2, (1, 1, 1, 1), 1, False, False),  # stride 2: the pad in phases
    (4, (8, 12), 3, 2, (0, 1, 1, 0), 1, True, True),  # asymmetric padding
    (3, (7, 10), 3, 1, (2, 2, 2, 2), 2, False, True),  # dilation 2
    (4, (6, 9), 5, 2, (2, 2, 2, 2), 1, True, True),  # 5x5 taps
    (5, (8, 8), 3, 2, (0, 0, 1, 1), 1, False, True),  # stride 2, an odd padded row
    (2, (4, 40), 3, 1, (1, 1, 1, 1), 1, False, False),  # 40 columns: half vectors
    (3, (5, 5), 1, 1, (0, 0, 0, 0), 1, True, True),  # 1x1 taps (no reduction loop)
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)).replace(" ", ""))
def test_interpreted_and_compiled_loops_equal_the_graph(case):
    text, x = _program(*case, seed=sum(map(hash, map(str, case))) % 1000)
    module = Parser(make_context(), text).parse_module()
    (expected,) = run_graph(module, [x])
    run_stages(get_target("llvm -threads=1").stages()[1:], module)
    assert "depthwise_conv2d_int8" in str(module), "the template did not schedule the qconv"
    (interpreted,) = run_loops(module, [x])
    (compiled,) = run_compiled_loops(module, [x])
    np.testing.assert_array_equal(_as(interpreted, expected), expected)
    np.testing.assert_array_equal(_as(compiled, expected), expected)


def test_grouped_convolutions_keep_the_generic_schedule():
    """Four input channels per group: a reduction over channels, not this template."""
    text, x = _program(8, (5, 6), 3, 1, (1, 1, 1, 1), 1, False, True, seed=3)
    text = text.replace("groups 8", "groups 2").replace("8x1x3x3", "8x4x3x3")
    weights = np.random.default_rng(4).integers(-128, 128, (8, 4, 3, 3))
    start = text.index("%w = graph.constant dense<") + len("%w = graph.constant dense<")
    end = text.index("> : tensor<8x4x3x3xi8>")
    text = text[:start] + _text(weights) + text[end:]
    module = Parser(make_context(), text).parse_module()
    (expected,) = run_graph(module, [x])
    run_stages(get_target("llvm -threads=1").stages()[1:], module)
    assert "depthwise_conv2d_int8" not in str(module)
    (compiled,) = run_compiled_loops(module, [x])
    np.testing.assert_array_equal(_as(compiled, expected), expected)


# -- QDQ depthwise layers from onnxruntime's quantization tool ---------------------------


def _depthwise_model(channels: int, size: int, stride: int):
    from onnx import TensorProto, helper

    rng = np.random.default_rng(7)
    w = rng.standard_normal((channels, 1, 3, 3)).astype(np.float32) * 0.3
    b = rng.standard_normal(channels).astype(np.float32) * 0.1
    nodes = [
        helper.make_node(
            "Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[stride, stride], group=channels
        ),
        helper.make_node("Clip", ["c", "lo", "hi"], ["y"]),
    ]
    inits = [
        helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel()),
        helper.make_tensor("b", TensorProto.FLOAT, b.shape, b.ravel()),
        helper.make_tensor("lo", TensorProto.FLOAT, [], [0.0]),
        helper.make_tensor("hi", TensorProto.FLOAT, [], [6.0]),
    ]
    g = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model


@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("activation", ["QUInt8", "QInt8"])
@pytest.mark.parametrize("shape", [(24, 14, 1), (16, 17, 2), (32, 56, 1)], ids=str)
def test_qdq_depthwise_layers_equal_onnxruntime(shape, activation, per_channel):
    pytest.importorskip("onnxruntime")
    quantization = pytest.importorskip("onnxruntime.quantization")
    from test_graph_fold_qdq import _onnxruntime, _quantized_as, _reference

    import strato

    channels, size, stride = shape
    model = _quantized_as(
        _depthwise_model(channels, size, stride), [1, channels, size, size],
        quant_format=quantization.QuantFormat.QDQ, per_channel=per_channel,
        activation_type=getattr(quantization.QuantType, activation),
        weight_type=quantization.QuantType.QInt8,
    )  # fmt: skip
    stages: dict[str, str] = {}
    compiled = strato.compile(
        model, threads=1, cache=False, after_stage=lambda name, module: stages.__setitem__(name, str(module))
    )
    assert "depthwise_conv2d_int8" in stages["schedule-default"]
    x = np.random.default_rng(2).standard_normal((1, channels, size, size)).astype(np.float32)
    outputs = compiled(x)
    actual = np.asarray(outputs[0] if isinstance(outputs, list | tuple) else outputs)
    np.testing.assert_array_equal(actual, _onnxruntime(model, x))
    # ONNX's reference computes the convolution in f32, whose rounding can move a value
    # across a quantization step: one step at most from it
    np.testing.assert_allclose(actual, _reference(model, x), rtol=0, atol=_output_step(model) * 1.001)


def _output_step(model) -> float:
    from onnx import numpy_helper

    last = next(node for node in reversed(model.graph.node) if node.op_type == "DequantizeLinear")
    scale = next(init for init in model.graph.initializer if init.name == last.input[1])
    return float(numpy_helper.to_array(scale))
