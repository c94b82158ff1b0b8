"""Patterns that torch's ONNX exporters write, each as the smallest hand-built model that
shows it, compiled by `strato.compile` and compared with onnxruntime.

Each case stands for a bug found by compiling real exported models
(`benchmarks/torch_corpus.py`); the docstring names the model that showed it.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import strato
from strato.testing.optional import optional_module

ort = optional_module("onnxruntime")

RTOL = 1e-5
ATOL = 1e-6


def make_model(
    nodes: list[onnx.NodeProto],
    inputs: dict[str, tuple[int, list[int]]],
    outputs: dict[str, tuple[int, list[int]]],
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 18,
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "exported_pattern",
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in outputs.items()],
        [numpy_helper.from_array(v, n) for n, v in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model, full_check=True)
    return model


def assert_matches_onnxruntime(model: onnx.ModelProto, feeds: list[np.ndarray]) -> None:
    compiled = strato.compile(model)
    ours = compiled(*feeds)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [value.name for value in session.get_inputs()]
    theirs = session.run(None, dict(zip(names, feeds)))
    assert len(ours) == len(theirs)
    for got, want in zip(ours, theirs):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_split_result_read_outside_before_its_fused_group_ends():
    """GPT-2 (TorchScript export): the fused q/k/v projection is split in three; one third
    continues in the split's fused group while the others feed ops placed earlier in the
    program than the group's last op. The fused op must come before those readers."""
    nodes = [
        helper.make_node("Split", ["x"], ["a", "b"], axis=1, num_outputs=2),
        helper.make_node("Relu", ["a"], ["ra"]),
        helper.make_node("Neg", ["b"], ["nb"]),
        helper.make_node("Exp", ["ra"], ["ea"]),
    ]
    f32 = TensorProto.FLOAT
    model = make_model(nodes, {"x": (f32, [2, 4])}, {"nb": (f32, [2, 2]), "ea": (f32, [2, 2])})
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    assert_matches_onnxruntime(model, [x])
