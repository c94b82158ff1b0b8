"""Det by Leibniz's formula in graph ops (`convert_linear`): 1 x 1 to 4 x 4 matrices,
with and without batch axes, against numpy through the graph interpreter and compiled;
an import-time input folded; the diagnostics (too large, not square)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import strato
from strato.diagnostics import ModelImportError
from strato.frontends.onnx import import_onnx
from strato.interpreters.graph import run_graph


def det_model(shape, known=None):
    node = helper.make_node("Det", ["x"], ["y"])
    inputs = (
        []
        if known is not None
        else [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)]
    )
    initializers = [numpy_helper.from_array(known, "x")] if known is not None else []
    graph = helper.make_graph(
        [node],
        "det",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape[:-2])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    model.ir_version = 10
    return model


@pytest.mark.parametrize(
    "shape", [(1, 1), (2, 2), (3, 3), (4, 4), (3, 2, 2), (2, 2, 4, 4)]
)
def test_det_matches_numpy(shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    imported = import_onnx(det_model(shape))
    (actual,) = run_graph(imported.module, [x])
    np.testing.assert_allclose(actual, np.linalg.det(x), rtol=1e-4, atol=1e-5)


def test_det_compiled():
    x = np.random.default_rng(1).standard_normal((5, 3, 3)).astype(np.float32)
    (actual,) = strato.compile(det_model(x.shape))(x)
    np.testing.assert_allclose(actual, np.linalg.det(x), rtol=1e-4, atol=1e-5)


def test_det_of_a_known_matrix_is_folded():
    x = np.array([[2.0, 1.0], [1.0, 3.0]], np.float32)
    imported = import_onnx(det_model(x.shape, known=x))
    (actual,) = run_graph(imported.module, [])
    np.testing.assert_allclose(actual, 5.0, rtol=1e-6)


@pytest.mark.parametrize(
    ("shape", "message"), [((5, 5), "5 x 5 matrices"), ((2, 3), "square matrices")]
)
def test_det_diagnostics(shape, message):
    with pytest.raises(ModelImportError, match=message):
        import_onnx(det_model(shape))
