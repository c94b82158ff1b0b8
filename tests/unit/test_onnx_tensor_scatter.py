"""TensorScatter (a KV-cache update) as graph.where over graph.gather_elements
(`convert_layout`): linear and circular modes, run-time, import-time and absent write
indices, the sequence axis at several places, against onnx's reference evaluator
through the graph interpreter and compiled; diagnostics."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import strato
from strato.diagnostics import ModelImportError
from strato.frontends.onnx import import_onnx
from strato.interpreters.graph import run_graph


def tensor_scatter_model(past_shape, update_shape, indices="input", **attributes):
    """indices: "input" (a graph input), an array (an initializer) or None (absent)."""
    inputs = [
        helper.make_tensor_value_info("past", TensorProto.FLOAT, past_shape),
        helper.make_tensor_value_info("update", TensorProto.FLOAT, update_shape),
    ]
    initializers = []
    names = ["past", "update"]
    if isinstance(indices, str):
        inputs.append(
            helper.make_tensor_value_info("idx", TensorProto.INT64, [past_shape[0]])
        )
        names.append("idx")
    elif indices is not None:
        initializers.append(numpy_helper.from_array(indices, "idx"))
        names.append("idx")
    node = helper.make_node("TensorScatter", names, ["y"], **attributes)
    graph = helper.make_graph(
        [node],
        "tensor_scatter",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, past_shape)],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)])
    model.ir_version = 10
    return model


def run_both(model, feeds):
    (expected,) = ReferenceEvaluator(model).run(None, feeds)
    imported = import_onnx(model)
    (actual,) = run_graph(imported.module, [feeds[n] for n in imported.input_names])
    return actual, expected


CASES = [
    # past shape, update shape, axis, write indices
    ((2, 3, 6, 4), (2, 3, 2, 4), -2, [1, 4]),
    ((2, 6, 3), (2, 3, 3), 1, [0, 3]),
    ((3, 2, 5), (3, 2, 1), 2, [4, 0, 2]),
]


@pytest.mark.parametrize(("past_shape", "update_shape", "axis", "indices"), CASES)
@pytest.mark.parametrize("known", [False, True])
def test_linear_tensor_scatter_matches_reference(
    past_shape, update_shape, axis, indices, known
):
    rng = np.random.default_rng(0)
    past = rng.standard_normal(past_shape).astype(np.float32)
    update = rng.standard_normal(update_shape).astype(np.float32)
    indices = np.array(indices, np.int64)
    feeds = {"past": past, "update": update}
    if not known:
        feeds["idx"] = indices
    model = tensor_scatter_model(
        past_shape, update_shape, indices if known else "input", axis=axis
    )
    actual, expected = run_both(model, feeds)
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("known", [False, True])
def test_circular_tensor_scatter_wraps_around(known):
    past = np.zeros((2, 5, 2), np.float32)
    update = np.arange(12, dtype=np.float32).reshape(2, 3, 2) + 1
    indices = np.array([3, 4], np.int64)
    model = tensor_scatter_model(
        past.shape, update.shape, indices if known else "input", axis=1, mode="circular"
    )
    feeds = {"past": past, "update": update}
    if not known:
        feeds["idx"] = indices
    actual, expected = run_both(model, feeds)
    np.testing.assert_array_equal(actual, expected)


def test_tensor_scatter_without_indices_writes_from_the_start():
    past = np.zeros((2, 4, 3), np.float32)
    update = np.ones((2, 2, 3), np.float32)
    model = tensor_scatter_model(past.shape, update.shape, None, axis=1)
    actual, expected = run_both(model, {"past": past, "update": update})
    np.testing.assert_array_equal(actual, expected)


def test_tensor_scatter_compiled():
    rng = np.random.default_rng(1)
    past = rng.standard_normal((2, 2, 5, 3)).astype(np.float32)
    update = rng.standard_normal((2, 2, 2, 3)).astype(np.float32)
    indices = np.array([4, 1], np.int64)
    model = tensor_scatter_model(past.shape, update.shape, mode="circular")
    (expected,) = ReferenceEvaluator(model).run(
        None, {"past": past, "update": update, "idx": indices}
    )
    (actual,) = strato.compile(model)(past, update, indices)
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize(
    ("update_shape", "attributes", "message"),
    [
        ((2, 5, 3), {"axis": 1}, "update of shape"),
        ((2, 2, 3), {"axis": 1, "mode": "ring"}, "mode 'ring'"),
        ((2, 4, 3), {"axis": 0}, "batch axis"),
    ],
)
def test_tensor_scatter_diagnostics(update_shape, attributes, message):
    model = tensor_scatter_model((2, 4, 3), update_shape, **attributes)
    with pytest.raises(ModelImportError, match=message):
        import_onnx(model)
