"""Bad ONNX input, end to end: the CLI prints one line and exits 1, and the Python API
raises a StratoError carrying the same message."""

from __future__ import annotations

import subprocess
import sys

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
    node = helper.make_node("NonMaxSuppression", ["x", "x"], ["y"], name="nms")
    onnx.save(_model([node], {"x": [1, 4, 4]}, {"y": [1, 3]}), path)
    return ["'nms'", "NonMaxSuppression", "not supported"]


def dynamic_shape(path):
    node = helper.make_node("Relu", ["x"], ["y"])
    onnx.save(_model([node], {"x": ["batch", 4]}, {"y": ["batch", 4]}), path)
    return ["'x'", "dynamic dimension 'batch'"]


def malformed_file(path):
    path.write_bytes(b"\x08\x07 this is not a protobuf \xff\xfe")
    return [path.name]


CASES = [missing_initializer, unknown_op, dynamic_shape, malformed_file]


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
