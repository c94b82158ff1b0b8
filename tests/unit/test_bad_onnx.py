"""Bad ONNX input, end to end: the CLI prints one line and exits 1, and the Python API
raises a StratoError carrying the same message."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import strato
from strato.diagnostics import StratoError


def _model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "bad",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs.items()],
        list(initializers),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def missing_initializer(path):
    node = helper.make_node("Gemm", ["x", "W"], ["y"], name="fc")
    onnx.save(_model([node], {"x": [2, 4]}, {"y": [2, 3]}), path)
    return ["'fc'", "Gemm", "'W'"]


def unknown_op(path):
    node = helper.make_node("Bernoulli", ["x"], ["y"], name="coin")
    onnx.save(_model([node], {"x": [1, 4, 4]}, {"y": [1, 4, 4]}), path)
    return ["'coin'", "Bernoulli", "not supported"]


def malformed_file(path):
    path.write_bytes(b"\x08\x07 this is not a protobuf \xff\xfe")
    return [path.name]


def _window_model(path, op_type, rank_out=4, weight=None, **attrs):
    from onnx import numpy_helper

    inputs = ["x"] if weight is None else ["x", "W"]
    initializers = [] if weight is None else [numpy_helper.from_array(weight, "W")]
    node = helper.make_node(op_type, inputs, ["y"], name="win", **attrs)
    out = [f"d{i}" for i in range(rank_out)]
    onnx.save(_model([node], {"x": [1, 1, 8, 8]}, {"y": out}, initializers), path)


_CONV_WEIGHT = np.ones((2, 1, 3, 3), np.float32)
_CONV_T_WEIGHT = np.ones((1, 2, 3, 3), np.float32)


def conv_zero_stride(path):
    _window_model(path, "Conv", weight=_CONV_WEIGHT, strides=[0, 1])
    return ["'win'", "Conv", "strides must be positive, got [0, 1]"]


def conv_negative_stride(path):
    _window_model(path, "Conv", weight=_CONV_WEIGHT, strides=[1, -2])
    return ["'win'", "Conv", "strides must be positive, got [1, -2]"]


def max_pool_zero_stride(path):
    _window_model(path, "MaxPool", kernel_shape=[2, 2], strides=[0, 0])
    return ["'win'", "MaxPool", "strides must be positive"]


def average_pool_zero_stride(path):
    _window_model(path, "AveragePool", kernel_shape=[2, 2], strides=[1, 0])
    return ["'win'", "AveragePool", "strides must be positive"]


def average_pool_negative_stride(path):
    _window_model(path, "AveragePool", kernel_shape=[2, 2], strides=[-1, 1])
    return ["'win'", "AveragePool", "strides must be positive"]


def conv_zero_dilation(path):
    _window_model(path, "Conv", weight=_CONV_WEIGHT, dilations=[0, 1])
    return ["'win'", "dilations must be positive"]


def conv_transpose_output_padding_not_below_stride(path):
    _window_model(path, "ConvTranspose", weight=_CONV_T_WEIGHT, strides=[2, 2], output_padding=[2, 0])
    return ["'win'", "ConvTranspose", "output_padding [2, 0] must be non-negative and smaller than the stride"]


def huge_pads(path):
    _window_model(path, "Conv", weight=_CONV_WEIGHT, dilations=[2**62, 1], pads=[2**63 - 2, 0, 0, 0])
    return ["more than a 64-bit address space holds"]


def huge_constant(path):
    from onnx import numpy_helper

    node = helper.make_node("ConstantOfShape", ["s"], ["y"], name="fill")
    shape = numpy_helper.from_array(np.array([2**20, 2**20, 2**10], np.int64), "s")
    onnx.save(_model([node], {}, {"y": ["a", "b", "c"]}, [shape]), path)
    return ["'fill'", "ConstantOfShape", "out of memory"]


def huge_input(path):
    node = helper.make_node("Relu", ["x"], ["y"])
    onnx.save(_model([node], {"x": [2**40, 2**30]}, {"y": [2**40, 2**30]}), path)
    return ["'x'", "more than a 64-bit address space holds"]


CASES = [
    missing_initializer,
    unknown_op,
    malformed_file,
    conv_zero_stride,
    conv_negative_stride,
    max_pool_zero_stride,
    average_pool_zero_stride,
    average_pool_negative_stride,
    conv_zero_dilation,
    conv_transpose_output_padding_not_below_stride,
    huge_pads,
    huge_constant,
    huge_input,
]


@pytest.mark.parametrize("make", CASES, ids=[c.__name__ for c in CASES])
def test_cli_and_api_report_the_same_one_line_diagnostic(make, tmp_path):
    path = tmp_path / f"{make.__name__}.onnx"
    fragments = make(path)

    with pytest.raises(StratoError) as raised:
        strato.compile(str(path))
    api_message = str(raised.value)
    assert "\n" not in api_message
    for fragment in fragments:
        assert fragment in api_message, api_message

    result = subprocess.run(
        [sys.executable, "-m", "strato.tools.strato_cli", "run", str(path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("strato: error: ")
    reason = api_message.split("error: ", 1)[-1]
    assert reason in lines[0], (reason, lines[0])


BAD_INPUT_SHAPES = [
    ({"x": ["2a", 4]}, "dimension '2a' is not an integer"),
    ({"x": [1.5, 4]}, "dimension 1.5 is not an integer"),
    ({"x": 4}, "a shape is a list of integers, got 4"),
    ({"x": "2x4"}, "a shape is a list of integers"),
    ({"x": [2**70, 4]}, "does not fit in memory"),
    ({"x": [-1, 4]}, "dimension -1 is negative"),
    ({"x": [True, 4]}, "is not an integer"),
    ([("x", [2, 4])], "must map input names to shapes"),
]


@pytest.mark.parametrize("shapes,fragment", BAD_INPUT_SHAPES, ids=[repr(s) for s, _ in BAD_INPUT_SHAPES])
def test_bad_input_shapes_are_located_diagnostics(shapes, fragment, tmp_path):
    path = tmp_path / "relu.onnx"
    node = helper.make_node("Relu", ["x"], ["y"])
    onnx.save(_model([node], {"x": ["n", 4]}, {"y": ["n", 4]}), path)
    with pytest.raises(StratoError) as raised:
        strato.compile(str(path), input_shapes=shapes)
    message = str(raised.value)
    assert "\n" not in message and fragment in message, message
    if isinstance(shapes, dict):
        assert "input_shapes['x']" in message
    # a good shape still works
    model = strato.compile(str(path), input_shapes={"x": (2, np.int64(4))})
    assert model.inputs[0].shape == (2, 4)


def test_huge_outputs_fail_cleanly_when_called(tmp_path):
    """A model whose output is within the address space but not this machine's memory
    compiles, and a call raises a MemoryError-derived StratoError (never a crash)."""
    from pathlib import Path

    from onnx import numpy_helper

    overcommit = Path("/proc/sys/vm/overcommit_memory")
    if overcommit.exists() and overcommit.read_text().strip() == "1":
        pytest.skip("with vm.overcommit_memory=1 a 64 TiB allocation succeeds lazily")
    node = helper.make_node("Pad", ["x", "pads"], ["y"], name="pad")
    pads = numpy_helper.from_array(np.array([0, 0, 0, 2**44], np.int64), "pads")
    model = strato.compile(_model([node], {"x": [1, 4]}, {"y": ["a", "b"]}, [pads]))
    with pytest.raises(StratoError) as raised:
        model(np.ones((1, 4), np.float32))
    assert isinstance(raised.value, MemoryError)
    assert "out of memory: cannot allocate the outputs" in str(raised.value)
