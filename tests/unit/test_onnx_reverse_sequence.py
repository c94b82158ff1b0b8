"""ReverseSequence as graph.gather_elements along the time axis (`convert_layout`):
run-time and import-time lengths, both axis orders, extra trailing dimensions, against
onnx's reference evaluator through the graph interpreter and compiled; diagnostics."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import strato
from strato.diagnostics import ModelImportError
from strato.frontends.onnx import import_onnx
from strato.interpreters.graph import run_graph


def reverse_sequence_model(x_shape, batch, known_lens=None, **attributes):
    node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"], **attributes)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    initializers = []
    if known_lens is None:
        inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT64, [batch]))
    else:
        initializers.append(numpy_helper.from_array(known_lens, "lens"))
    graph = helper.make_graph(
        [node],
        "reverse_sequence",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, x_shape)],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


CASES = [
    # x shape, time_axis, batch_axis, lengths
    ((5, 3), 0, 1, [5, 1, 3]),
    ((3, 5), 1, 0, [2, 5, 4]),
    ((4, 2, 3), 0, 1, [3, 4]),
    ((2, 4, 3), 1, 0, [1, 4]),
]


@pytest.mark.parametrize(("x_shape", "time_axis", "batch_axis", "lens"), CASES)
@pytest.mark.parametrize("lens_known", [False, True])
def test_reverse_sequence_matches_reference(
    x_shape, time_axis, batch_axis, lens, lens_known
):
    x = np.arange(np.prod(x_shape), dtype=np.float32).reshape(x_shape)
    lens = np.array(lens, np.int64)
    model = reverse_sequence_model(
        x_shape,
        len(lens),
        lens if lens_known else None,
        time_axis=time_axis,
        batch_axis=batch_axis,
    )
    feeds = {"x": x} if lens_known else {"x": x, "lens": lens}
    (expected,) = ReferenceEvaluator(model).run(None, feeds)
    imported = import_onnx(model)
    (actual,) = run_graph(imported.module, [feeds[n] for n in imported.input_names])
    np.testing.assert_array_equal(actual, expected)


def test_reverse_sequence_compiled_with_run_time_lengths():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    lens = np.array([4, 2, 1], np.int64)
    model = reverse_sequence_model((4, 3), 3, time_axis=0, batch_axis=1)
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x, "lens": lens})
    (actual,) = strato.compile(model)(x, lens)
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize(
    ("x_shape", "batch", "attributes", "message"),
    [
        ((4, 3), 3, {"time_axis": 0, "batch_axis": 0}, "must be 0 and 1"),
        ((4, 3), 4, {"time_axis": 0, "batch_axis": 1}, "sequence_lens of shape"),
    ],
)
def test_reverse_sequence_diagnostics(x_shape, batch, attributes, message):
    model = reverse_sequence_model(x_shape, batch, **attributes)
    with pytest.raises(ModelImportError, match=message):
        import_onnx(model)
