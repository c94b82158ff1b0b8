"""Models with data-dependent-shape operators: compiled parts with NonZero, Unique and
NonMaxSuppression on the host between them, against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import strato
from strato.diagnostics import StratoError
from strato.staged import StagedModel

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def model_of(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "staged",
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs.items()],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in dict(initializers).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], parts: int) -> StagedModel:
    compiled = strato.compile(model, cache=False)
    assert isinstance(compiled, StagedModel)
    assert sum(not hasattr(step, "node") for step in compiled.steps) == parts
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    actual = compiled(*feeds.values())
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        assert a.shape == e.shape and a.dtype == e.dtype
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
    return compiled


def test_nonzero_between_two_compiled_parts():
    nodes = [
        helper.make_node("Sub", ["x", "t"], ["d"]),
        helper.make_node("Relu", ["d"], ["r"]),
        helper.make_node("NonZero", ["r"], ["nz"]),
        helper.make_node("Transpose", ["nz"], ["pos"], perm=[1, 0]),
        helper.make_node("GatherND", ["x", "pos"], ["picked"]),
        helper.make_node("Mul", ["picked", "two"], ["y"]),
    ]
    model = model_of(
        nodes, {"x": (F, [3, 4])}, {"y": F, "nz": I64},
        {"t": np.float32(0.5), "two": np.float32(2.0)},
    )
    rng = np.random.default_rng(0)
    for _ in range(3):  # a different count of positions each call
        check(model, {"x": rng.random((3, 4)).astype(np.float32)}, parts=2)


def test_detection_head_with_nms():
    """Scores by a sigmoid, NonMaxSuppression on the host, the kept boxes gathered and
    scaled by compiled code."""
    nodes = [
        helper.make_node("Sigmoid", ["logits"], ["scores"]),
        helper.make_node("NonMaxSuppression", ["boxes", "scores", "limit", "iou", "floor"], ["sel"]),
        helper.make_node("Gather", ["sel", "col"], ["which"], axis=1),
        helper.make_node("Squeeze", ["boxes", "zero"], ["flat"]),
        helper.make_node("Gather", ["flat", "which"], ["kept"], axis=0),
        helper.make_node("Mul", ["kept", "scale"], ["out"]),
    ]
    model = model_of(
        nodes,
        {"boxes": (F, [1, 12, 4]), "logits": (F, [1, 2, 12])},
        {"out": F, "sel": I64},
        {
            "limit": np.array([4], np.int64), "iou": np.array([0.3], np.float32),
            "floor": np.array([0.4], np.float32), "col": np.array(2, np.int64),
            "zero": np.array([0], np.int64), "scale": np.float32(10.0),
        },
    )
    rng = np.random.default_rng(1)
    for _ in range(3):
        corner = rng.random((1, 12, 2)).astype(np.float32)
        boxes = np.concatenate([corner, corner + rng.random((1, 12, 2)).astype(np.float32)], axis=-1)
        check(model, {"boxes": boxes, "logits": rng.standard_normal((1, 2, 12)).astype(np.float32)}, parts=2)


def test_unique_feeding_compiled_code_with_a_dynamic_input():
    nodes = [
        helper.make_node("Unique", ["x"], ["u", "first", "inverse", "counts"], sorted=1),
        helper.make_node("Cast", ["counts"], ["c"], to=F),
        helper.make_node("Mul", ["u", "c"], ["y"]),
    ]
    model = model_of(nodes, {"x": (F, ["n"])}, {"y": F, "inverse": I64})
    rng = np.random.default_rng(2)
    for n in (5, 9):
        check(model, {"x": rng.integers(0, 4, n).astype(np.float32)}, parts=1)


def test_a_host_operator_inside_a_subgraph_is_refused():
    branch = helper.make_graph(
        [helper.make_node("NonZero", ["x"], ["nz"], name="inner")],
        "branch", [], [helper.make_tensor_value_info("nz", I64, None)],
    )
    nodes = [
        helper.make_node("NonZero", ["x"], ["a"]),
        helper.make_node("If", ["c"], ["b"], name="choose", then_branch=branch, else_branch=branch),
    ]
    model = model_of(nodes, {"x": (F, [4]), "c": (TensorProto.BOOL, [])}, {"a": I64, "b": I64})
    with pytest.raises(StratoError, match=r"node 'inner' \(NonZero\) in a subgraph of node 'choose'"):
        strato.compile(model, cache=False)


def test_other_unsupported_operators_keep_their_diagnostic():
    nodes = [
        helper.make_node("NonZero", ["x"], ["a"]),
        helper.make_node("ImageDecoder", ["bytes"], ["img"], name="decode"),
    ]
    model = model_of(nodes, {"x": (F, [4]), "bytes": (TensorProto.UINT8, [10])}, {"a": I64, "img": TensorProto.UINT8})
    with pytest.raises(StratoError, match=r"ImageDecoder"):
        strato.compile(model, cache=False)


def test_a_text_pipeline_normalizes_on_the_host_and_counts_in_compiled_code():
    """StringNormalizer (host) -> TfIdfVectorizer on its strings (compiled, as ids) ->
    MatMul, against ONNX's reference."""
    from onnx.reference import ReferenceEvaluator

    weights = np.random.default_rng(3).standard_normal((4, 2)).astype(np.float32)
    nodes = [
        helper.make_node(
            "StringNormalizer", ["text"], ["words"], case_change_action="LOWER",
            is_case_sensitive=0, stopwords=["the", "a"],
        ),
        helper.make_node(
            "TfIdfVectorizer", ["words"], ["counts"], mode="TF", min_gram_length=1,
            max_gram_length=2, max_skip_count=0, ngram_counts=[0, 2],
            ngram_indexes=[0, 1, 2, 3], pool_strings=["cat", "dog", "cat", "dog", "dog", "cat"],
        ),
        helper.make_node("MatMul", ["counts", "w"], ["y"]),
    ]
    model = model_of(
        nodes, {"text": (TensorProto.STRING, [1, 7])}, {"y": F, "words": TensorProto.STRING},
        {"w": weights},
    )
    compiled = strato.compile(model, cache=False)
    assert isinstance(compiled, StagedModel)
    reference = ReferenceEvaluator(model)
    for text in (["The", "cat", "DOG", "a", "dog", "Cat", "dog"], ["a", "the", "x", "cat", "cat", "dog", "A"]):
        feed = np.array([text], dtype=object)
        y, words = compiled(feed)
        expected_y, expected_words = reference.run(None, {"text": feed})
        assert words.tolist() == expected_words.tolist()
        np.testing.assert_allclose(y, expected_y, rtol=1e-6)


def test_a_dynamic_batch_beside_host_operators_stages_and_specializes_each_part():
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("NonZero", ["r"], ["nz"]),
            helper.make_node("Range", ["s", "l", "d"], ["y"]),
        ],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3]),
            *(helper.make_tensor_value_info(n, TensorProto.INT64, []) for n in "sld"),
        ],
        [
            helper.make_tensor_value_info("nz", TensorProto.INT64, None),
            helper.make_tensor_value_info("y", TensorProto.INT64, None),
        ],
    )
    model = strato.compile(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert isinstance(model, StagedModel) and model.host_ops == ["NonZero", "Range"]
    for batch in (2, 5):
        x = np.random.default_rng(batch).standard_normal((batch, 3)).astype(np.float32)
        nonzero, steps = model(x, np.array(1), np.array(9), np.array(3))
        np.testing.assert_array_equal(nonzero, np.array(np.nonzero(np.maximum(x, 0))))
        np.testing.assert_array_equal(steps, np.arange(1, 9, 3))
