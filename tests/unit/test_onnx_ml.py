"""Operators of the ai.onnx.ml domain (Binarizer, ArrayFeatureExtractor, LabelEncoder)
against ONNX's reference evaluator, and their diagnostics."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from strato import onnx_backend as backend
from strato.diagnostics import ModelImportError

ML = "ai.onnx.ml"


def ml_model(op_type: str, inputs: dict, output: int, shape=None, **attributes) -> onnx.ModelProto:
    node = helper.make_node(op_type, list(inputs), ["y"], name="node", domain=ML, **attributes)
    graph = helper.make_graph(
        [node],
        "ml",
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info("y", output, shape)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(ML, 4)])


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    (expected,) = ReferenceEvaluator(model).run(None, feeds)
    (actual,) = backend.prepare(model).run(list(feeds.values()))
    assert actual.shape == expected.shape
    assert actual.dtype == expected.dtype or (actual.dtype == object and expected.dtype.kind == "U")
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_binarizer(dtype):
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    x = np.arange(-6, 6).reshape(3, 4).astype(dtype)
    check(ml_model("Binarizer", {"x": (elem, [3, 4])}, elem, threshold=1.0), {"x": x})


@pytest.mark.parametrize("shape", [[5], [2, 5], [2, 3, 5]])
def test_array_feature_extractor(shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    model = ml_model(
        "ArrayFeatureExtractor", {"x": (TensorProto.FLOAT, shape), "i": (TensorProto.INT64, [3])},
        TensorProto.FLOAT, shape=[*shape[:-1], 3] if len(shape) > 1 else [1, 3],
    )
    check(model, {"x": x, "i": np.array([4, 0, 4], np.int64)})


@pytest.mark.parametrize(
    ("keys", "values", "defaults"),
    [
        ({"keys_int64s": [3, 1, 7, 3]}, {"values_floats": [0.5, 1.5, 2.5, 9.0]}, {"default_float": -2.0}),
        ({"keys_floats": [0.5, 2.0]}, {"values_int64s": [10, 20]}, {}),
    ],
)
def test_label_encoder_on_numbers(keys, values, defaults):
    key_type = TensorProto.INT64 if "keys_int64s" in keys else TensorProto.FLOAT
    out_type = TensorProto.FLOAT if "values_floats" in values else TensorProto.INT64
    model = ml_model("LabelEncoder", {"x": (key_type, [2, 4])}, out_type, **keys, **values, **defaults)
    x = np.array([[3, 1, 7, 5], [0, 3, 2, 1]], np.int64) if key_type == TensorProto.INT64 else (
        np.array([[0.5, 2.0, 1.0, 0.5], [2.0, 2.0, 3.0, -1.0]], np.float32)
    )
    check(model, {"x": x})


def test_label_encoder_from_numbers_to_strings():
    model = ml_model(
        "LabelEncoder", {"x": (TensorProto.INT64, [3])}, TensorProto.STRING,
        keys_int64s=[1, 2], values_strings=["one", "two"],
    )
    (y,) = backend.prepare(model).run([np.array([2, 1, 5], np.int64)])
    assert y.tolist() == ["two", "one", "_Unused"]


def test_an_unsupported_ml_operator_lists_the_supported_ones():
    model = ml_model("Scaler", {"x": (TensorProto.FLOAT, [3])}, TensorProto.FLOAT, scale=[2.0])
    with pytest.raises(ModelImportError, match=r"ai.onnx.ml.Scaler is not supported; of the 'ai.onnx.ml' domain strato imports ArrayFeatureExtractor, Binarizer, LabelEncoder"):
        backend.prepare(model)
