"""Operators of old opsets: Shrink-9, whose ONNX function body came with opset 18 (the
importer takes that body for the unchanged operator), and Upsample-9 (Resize under its
old name, nearest rounded down), against onnx's reference evaluator through the graph
interpreter, and Upsample compiled."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import strato
from strato.diagnostics import ModelImportError
from strato.frontends.onnx import import_onnx
from strato.interpreters.graph import run_graph


def model_of(node, inputs, output_shape, opset, initializers=()):
    graph = helper.make_graph(
        [node],
        "legacy",
        [
            helper.make_tensor_value_info(name, TensorProto.FLOAT, array.shape)
            for name, array in inputs.items()
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)],
        [numpy_helper.from_array(a, n) for n, a in initializers],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def interpreted(model, inputs):
    imported = import_onnx(model)
    return run_graph(imported.module, [inputs[n] for n in imported.input_names])[0]


@pytest.mark.parametrize("opset", [9, 18])
@pytest.mark.parametrize("bias", [0.0, 1.5])
def test_shrink_matches_reference_at_every_opset(opset, bias):
    x = np.linspace(-3, 3, 13, dtype=np.float32)
    node = helper.make_node("Shrink", ["x"], ["y"], lambd=1.0, bias=bias)
    model = model_of(node, {"x": x}, [13], opset)
    expected = ReferenceEvaluator(model).run(None, {"x": x})[0]
    np.testing.assert_allclose(interpreted(model, {"x": x}), expected, rtol=1e-6)


def test_upsample_repeats_by_integer_scales():
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    scales = np.array([1, 1, 2, 3], np.float32)
    node = helper.make_node("Upsample", ["x", "scales"], ["y"], mode="nearest")
    model = model_of(node, {"x": x}, [1, 1, 4, 9], 9, [("scales", scales)])
    expected = x.repeat(2, axis=2).repeat(3, axis=3)
    np.testing.assert_array_equal(interpreted(model, {"x": x}), expected)
    (compiled,) = strato.compile(model)(x)
    np.testing.assert_array_equal(compiled, expected)


def test_upsample_of_an_unknown_mode_is_a_diagnostic():
    x = np.zeros((1, 1, 2, 2), np.float32)
    node = helper.make_node("Upsample", ["x", "scales"], ["y"], mode="cubic")
    scales = np.array([1, 1, 2, 2], np.float32)
    model = model_of(node, {"x": x}, [1, 1, 4, 4], 9, [("scales", scales)])
    with pytest.raises(ModelImportError, match="mode 'cubic'"):
        import_onnx(model)
