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


def random_forest(rng: np.random.Generator, features: int, trees: int, targets: int) -> dict:
    """Trees of random depth over random features, every comparison mode (a MEMBER
    node with its set), some nodes sending missing values the true way."""
    attrs = {k: [] for k in (
        "nodes_featureids", "nodes_splits", "nodes_modes", "nodes_truenodeids", "nodes_falsenodeids",
        "nodes_trueleafs", "nodes_falseleafs", "nodes_missing_value_tracks_true",
        "leaf_targetids", "leaf_weights", "tree_roots", "membership_values",
    )}  # fmt: skip

    def grow(depth: int) -> tuple[int, int]:  # (id, is_leaf)
        if depth == 0 or rng.random() < 0.25:
            attrs["leaf_targetids"].append(int(rng.integers(0, targets)))
            attrs["leaf_weights"].append(float(rng.normal()))
            return len(attrs["leaf_weights"]) - 1, 1
        index = len(attrs["nodes_featureids"])
        mode = int(rng.integers(0, 7))
        attrs["nodes_featureids"].append(int(rng.integers(0, features)))
        attrs["nodes_splits"].append(float(rng.integers(-2, 3)) / 2)
        attrs["nodes_modes"].append(mode)
        attrs["nodes_missing_value_tracks_true"].append(int(rng.random() < 0.5))
        if mode == 6:
            # no 0.0: ONNX's reference ends a set at a falsy member, not only at NaN
            attrs["membership_values"].extend([float(rng.choice([-1, -0.5, 0.5, 1])) for _ in range(2)] + [np.nan])
        for key in ("nodes_truenodeids", "nodes_falsenodeids", "nodes_trueleafs", "nodes_falseleafs"):
            attrs[key].append(0)
        for side in ("true", "false"):
            child, leaf = grow(depth - 1)
            attrs[f"nodes_{side}nodeids"][index] = child
            attrs[f"nodes_{side}leafs"][index] = leaf
        return index, 0

    for _ in range(trees):
        while True:
            start = len(attrs["nodes_featureids"])
            _, leaf = grow(4)
            if not leaf:
                attrs["tree_roots"].append(start)
                break
    return attrs


@pytest.mark.parametrize("aggregate", [0, 1, 2, 3])
def test_tree_ensembles_match_the_reference(aggregate: int):
    rng = np.random.default_rng(aggregate)
    attrs = random_forest(rng, features=3, trees=4, targets=2)
    tensors = {
        "nodes_splits": helper.make_tensor("s", TensorProto.DOUBLE, [len(attrs["nodes_splits"])], attrs.pop("nodes_splits")),
        "nodes_modes": helper.make_tensor("m", TensorProto.UINT8, [len(attrs["nodes_modes"])], attrs.pop("nodes_modes")),
        "leaf_weights": helper.make_tensor("w", TensorProto.DOUBLE, [len(attrs["leaf_weights"])], attrs.pop("leaf_weights")),
    }
    members = attrs.pop("membership_values")
    if members:
        tensors["membership_values"] = helper.make_tensor("v", TensorProto.DOUBLE, [len(members)], members)
    node = helper.make_node(
        "TreeEnsemble", ["x"], ["y"], domain=ML, n_targets=2, aggregate_function=aggregate,
        post_transform=0, **attrs, **tensors,
    )
    graph = helper.make_graph(
        [node], "forest", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [8, 3])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [8, 2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(ML, 5), helper.make_opsetid("", 21)])
    x = (rng.integers(-3, 4, (8, 3)) / 2).astype(np.float64)
    x[rng.random((8, 3)) < 0.15] = np.nan
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    (actual,) = backend.prepare(model).run([x])
    np.testing.assert_allclose(actual, expected, rtol=1e-12)
