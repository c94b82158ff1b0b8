"""CausalConvWithState (opset 27) through its ONNX function body: the output and the
carried state, with and without bias, past state and the fused SiLU, against onnx's
reference evaluator through the graph interpreter; one case compiled."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import strato
from strato.frontends.onnx import import_onnx
from strato.interpreters.graph import run_graph

BATCH, CHANNELS, LENGTH, KERNEL = 2, 3, 5, 4


def causal_conv_model(with_bias: bool, with_past: bool, **attributes):
    names = ["x", "w", "b" if with_bias else "", "past" if with_past else ""]
    while names[-1] == "":
        names.pop()
    shapes = {
        "x": [BATCH, CHANNELS, LENGTH],
        "w": [CHANNELS, 1, KERNEL],
        "b": [CHANNELS],
        "past": [BATCH, CHANNELS, KERNEL - 1],
    }
    node = helper.make_node("CausalConvWithState", names, ["y", "state"], **attributes)
    graph = helper.make_graph(
        [node],
        "causal_conv",
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, shapes[n])
            for n in names
            if n
        ],
        [
            helper.make_tensor_value_info(
                "y", TensorProto.FLOAT, [BATCH, CHANNELS, LENGTH]
            ),
            helper.make_tensor_value_info(
                "state", TensorProto.FLOAT, [BATCH, CHANNELS, KERNEL - 1]
            ),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 27)])
    model.ir_version = 11
    return model


def feeds_of(model):
    rng = np.random.default_rng(0)
    shapes = {
        i.name: [d.dim_value for d in i.type.tensor_type.shape.dim]
        for i in model.graph.input
    }
    return {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}


@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("with_past", [False, True])
@pytest.mark.parametrize("activation", [None, "silu"])
def test_causal_conv_with_state_matches_reference(with_bias, with_past, activation):
    attributes = {"activation": activation} if activation else {}
    model = causal_conv_model(with_bias, with_past, **attributes)
    feeds = feeds_of(model)
    expected = ReferenceEvaluator(model).run(None, feeds)
    imported = import_onnx(model)
    actual = run_graph(imported.module, [feeds[n] for n in imported.input_names])
    for got, want in zip(actual, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_causal_conv_with_state_compiled():
    model = causal_conv_model(True, True, activation="silu")
    feeds = feeds_of(model)
    expected = ReferenceEvaluator(model).run(None, feeds)
    actual = strato.compile(model)(*feeds.values())
    for got, want in zip(actual, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
