"""Compress as graph.gather of the positions its import-time condition selects
(`convert_layout`): with and without axis, negative axis, a short condition, an empty
selection, against onnx's reference evaluator through the graph interpreter and
compiled; the diagnostics (a run-time condition, one too long)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import strato
from strato.diagnostics import ModelImportError
from strato.frontends.onnx import import_onnx
from strato.interpreters.graph import run_graph


def compress_model(x_shape, condition, known=True, **attributes):
    node = helper.make_node("Compress", ["x", "condition"], ["y"], **attributes)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    initializers = []
    if known:
        initializers.append(numpy_helper.from_array(condition, "condition"))
    else:
        inputs.append(
            helper.make_tensor_value_info(
                "condition", TensorProto.BOOL, condition.shape
            )
        )
    graph = helper.make_graph(
        [node],
        "compress",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize(
    ("condition", "attributes"),
    [
        ([False, True, True], {"axis": 0}),
        ([True, False], {"axis": 1}),
        ([True, False], {"axis": -1}),
        ([False, True, False, False, True], {}),
        ([True], {"axis": 0}),
        ([False, False, False], {"axis": 0}),
    ],
)
def test_compress_matches_reference(condition, attributes):
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    model = compress_model(x.shape, np.array(condition), **attributes)
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    imported = import_onnx(model)
    (actual,) = run_graph(imported.module, [x])
    np.testing.assert_array_equal(actual, expected)


def test_compress_compiled():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    model = compress_model(x.shape, np.array([True, False, True, True]), axis=2)
    (actual,) = strato.compile(model)(x)
    np.testing.assert_array_equal(actual, x[:, :, [0, 2, 3]])


def test_compress_diagnostics():
    run_time = compress_model((3, 2), np.array([True, False]), known=False, axis=1)
    with pytest.raises(ModelImportError, match="known at import time"):
        import_onnx(run_time)
    too_long = compress_model((3, 2), np.array([True, False, True]), axis=1)
    with pytest.raises(ModelImportError, match="longer than axis 1"):
        import_onnx(too_long)
