"""Operators imported through their ONNX function body (LogSoftmax, RMSNormalization,
RotaryEmbedding, Attention, the window functions, the losses): the body's graph ops
against onnx's reference evaluator through the graph interpreter, one case compiled,
attribute references with and without the node's attribute, optional outputs, and the
diagnostic when a body uses an operator strato does not import."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import strato
from strato.diagnostics import ModelImportError
from strato.frontends.onnx import import_onnx
from strato.frontends.onnx.convert_function import FUNCTION_OPS
from strato.frontends.onnx.op_table import ONNX_CONVERTERS
from strato.interpreters.graph import run_graph


def model_of(
    node: onnx.NodeProto,
    inputs: dict[str, np.ndarray],
    outputs: dict[str, tuple[int, ...]],
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 23,
    output_type: int = TensorProto.FLOAT,
) -> onnx.ModelProto:
    graph_inputs = [
        helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(array.dtype), array.shape
        )
        for name, array in inputs.items()
    ]
    graph = helper.make_graph(
        [node],
        "function_op",
        graph_inputs,
        [helper.make_tensor_value_info(n, output_type, s) for n, s in outputs.items()],
        [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def reference(
    model: onnx.ModelProto, inputs: dict[str, np.ndarray]
) -> list[np.ndarray]:
    return ReferenceEvaluator(model).run(None, inputs)


def interpreted(
    model: onnx.ModelProto, inputs: dict[str, np.ndarray]
) -> list[np.ndarray]:
    imported = import_onnx(model)
    return run_graph(imported.module, [inputs[name] for name in imported.input_names])


def normal(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_function_ops_are_in_the_op_table():
    for op_type in FUNCTION_OPS:
        assert op_type in ONNX_CONVERTERS
        assert onnx.defs.get_schema(op_type).has_function or (
            onnx.defs.get_schema(op_type).has_context_dependent_function
        )


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_log_softmax_matches_reference(axis):
    attributes = {} if axis is None else {"axis": axis}
    node = helper.make_node("LogSoftmax", ["x"], ["y"], **attributes)
    x = normal(3, 4, 5) * 10
    model = model_of(node, {"x": x}, {"y": x.shape}, opset=18)
    (actual,) = interpreted(model, {"x": x})
    (expected,) = reference(model, {"x": x})
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


def test_log_softmax_of_large_values_is_stable_when_compiled():
    node = helper.make_node("LogSoftmax", ["x"], ["y"], axis=1)
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, 0.0, 1000.0]], np.float32)
    model = model_of(node, {"x": x}, {"y": x.shape}, opset=18)
    (actual,) = strato.compile(model)(x)
    # onnx's reference takes the log of the softmax, -inf where the softmax underflows
    wide = x.astype(np.float64)
    shifted = wide - wide.max(axis=1, keepdims=True)
    expected = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


def test_rms_normalization_matches_reference():
    node = helper.make_node(
        "RMSNormalization", ["x", "scale"], ["y"], axis=-1, epsilon=1e-3
    )
    x, scale = normal(2, 3, 8), normal(8, seed=1)
    model = model_of(node, {"x": x, "scale": scale}, {"y": x.shape})
    (actual,) = interpreted(model, {"x": x, "scale": scale})
    (expected,) = reference(model, {"x": x, "scale": scale})
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


def test_rotary_embedding_matches_reference():
    x = normal(1, 2, 3, 8)
    cos, sin = normal(1, 3, 4, seed=1), normal(1, 3, 4, seed=2)
    node = helper.make_node(
        "RotaryEmbedding", ["x", "cos", "sin"], ["y"], interleaved=1
    )
    inputs = {"x": x, "cos": cos, "sin": sin}
    model = model_of(node, inputs, {"y": x.shape})
    (actual,) = interpreted(model, inputs)
    (expected,) = reference(model, inputs)
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


def test_attention_with_an_unrequested_optional_output():
    q, k, v = normal(1, 2, 3, 4), normal(1, 2, 5, 4, seed=1), normal(1, 2, 5, 4, seed=2)
    node = helper.make_node("Attention", ["q", "k", "v"], ["y", "", ""], is_causal=1)
    inputs = {"q": q, "k": k, "v": v}
    model = model_of(node, inputs, {"y": (1, 2, 3, 4)})
    (actual,) = interpreted(model, inputs)
    (expected,) = reference(model, inputs)
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op_type", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [None, 0])
def test_window_functions_take_the_attribute_or_its_default(op_type, periodic):
    attributes = {} if periodic is None else {"periodic": periodic}
    node = helper.make_node(op_type, ["size"], ["y"], **attributes)
    size = np.array(10, np.int64)
    model = model_of(node, {}, {"y": (10,)}, {"size": size}, opset=17)
    (actual,) = interpreted(model, {})
    (expected,) = reference(model, {})
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


def test_softmax_cross_entropy_loss_matches_reference():
    scores = normal(3, 5, 2)
    labels = np.array([[0, 4], [2, -1], [1, 3]], np.int64)
    node = helper.make_node(
        "SoftmaxCrossEntropyLoss", ["scores", "labels"], ["loss"], ignore_index=-1
    )
    model = model_of(
        node, {"scores": scores}, {"loss": ()}, {"labels": labels}, opset=13
    )
    (actual,) = interpreted(model, {"scores": scores})
    (expected,) = reference(model, {"scores": scores})
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


def test_a_body_with_an_unimported_operator_is_a_diagnostic(monkeypatch):
    monkeypatch.delitem(ONNX_CONVERTERS, "ReduceMax")
    node = helper.make_node("LogSoftmax", ["x"], ["y"])
    x = normal(2, 3)
    model = model_of(node, {"x": x}, {"y": x.shape}, opset=18)
    with pytest.raises(
        ModelImportError, match=r"\(LogSoftmax\): its function body uses ReduceMax"
    ):
        import_onnx(model)


@pytest.mark.parametrize("align_corners", [0, 1])
@pytest.mark.parametrize("size", [[2, 3, 4, 5], [1, 2, 3, 4, 2]])
def test_affine_grid_takes_the_branches_its_attribute_and_rank_select(
    align_corners, size
):
    spatial = len(size) - 2
    theta = normal(size[0], spatial, spatial + 1)
    node = helper.make_node(
        "AffineGrid", ["theta", "size"], ["grid"], align_corners=align_corners
    )
    grid_shape = (size[0], *size[2:], spatial)
    model = model_of(
        node,
        {"theta": theta},
        {"grid": grid_shape},
        {"size": np.array(size, np.int64)},
        opset=20,
    )
    (actual,) = interpreted(model, {"theta": theta})
    (expected,) = reference(model, {"theta": theta})
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


def test_swish_reduce_log_sum_and_mean_variance_normalization():
    x = np.abs(normal(2, 3, 4)) + 0.1
    cases = [
        (helper.make_node("Swish", ["x"], ["y"], alpha=0.5), x.shape, 24),
        (
            helper.make_node("MeanVarianceNormalization", ["x"], ["y"], axes=[0, 2]),
            x.shape,
            13,
        ),
    ]
    for node, shape, opset in cases:
        model = model_of(node, {"x": x}, {"y": shape}, opset=opset)
        (actual,) = interpreted(model, {"x": x})
        (expected,) = reference(model, {"x": x})
        np.testing.assert_allclose(
            actual, expected, rtol=1e-5, atol=1e-6, err_msg=node.op_type
        )
    node = helper.make_node("ReduceLogSum", ["x", "axes"], ["y"], keepdims=0)
    model = model_of(
        node, {"x": x}, {"y": (2, 4)}, {"axes": np.array([1], np.int64)}, opset=18
    )
    (actual,) = interpreted(model, {"x": x})
    (expected,) = reference(model, {"x": x})
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)
