"""TfIdfVectorizer against ONNX's reference evaluator: random pools of n-grams (repeated
n-grams and sizes outside the counted range included), skip counts, modes, weights, 1-D
and batched int32/int64 inputs; and its diagnostics."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from strato import onnx_backend as backend
from strato.diagnostics import ModelImportError


def tfidf_model(shape: list[int], elem: int, **attributes) -> onnx.ModelProto:
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="tfidf", **attributes)
    graph = helper.make_graph(
        [node],
        "tfidf",
        [helper.make_tensor_value_info("x", elem, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def random_attributes(rng: np.random.Generator) -> dict:
    """A pool of 1- to 3-grams over a vocabulary of 4 ids (so that n-grams recur in the
    input and in the pool), with its counted range, skips, mode and maybe weights."""
    sizes = rng.integers(0, 5, size=3)  # n-grams of each size
    pool: list[int] = []
    counts = []
    for size, count in enumerate(sizes, start=1):
        counts.append(len(pool))
        pool.extend(int(t) for t in rng.integers(0, 4, size=size * count))
    total = int(sizes.sum())
    if total == 0:
        pool, counts, total = [1], [0], 1
    low = int(rng.integers(1, 3))
    high = int(rng.integers(low, 4))
    width = int(rng.integers(1, total + 1))
    attributes = {
        "mode": str(rng.choice(["TF", "IDF", "TFIDF"])),
        "min_gram_length": low,
        "max_gram_length": high,
        "max_skip_count": int(rng.integers(0, 3)),
        "ngram_counts": counts,
        "ngram_indexes": [int(i) for i in rng.integers(0, width, size=total)],
        "pool_int64s": pool,
    }
    if attributes["mode"] != "TF" or rng.random() < 0.5:  # the reference needs IDF's weights
        columns = max(attributes["ngram_indexes"]) + 1
        attributes["weights"] = rng.uniform(0.5, 2.0, size=columns).astype(np.float32).tolist()
    return attributes


@pytest.mark.parametrize("seed", range(8))
def test_random_pools_match_the_reference(seed: int):
    rng = np.random.default_rng(seed)
    attributes = random_attributes(rng)
    shape = [int(rng.integers(1, 9))] if seed % 2 else [2, int(rng.integers(1, 9))]
    elem, dtype = (TensorProto.INT32, np.int32) if seed % 3 == 0 else (TensorProto.INT64, np.int64)
    model = tfidf_model(shape, elem, **attributes)
    rep = backend.prepare(model)
    reference = ReferenceEvaluator(model)
    for _ in range(3):
        x = rng.integers(0, 4, size=shape).astype(dtype)
        (y,) = rep.run([x])
        (expected,) = reference.run(None, {"x": x})
        assert y.dtype == np.float32 and y.shape == expected.shape, attributes
        np.testing.assert_array_equal(y, expected, err_msg=str(attributes))


@pytest.mark.parametrize("mode", ["IDF", "TFIDF"])
def test_without_weights_idf_marks_and_tfidf_counts(mode: str):
    attributes = {
        "min_gram_length": 1, "max_gram_length": 2, "max_skip_count": 1, "ngram_counts": [0, 2],
        "ngram_indexes": [0, 1, 2], "pool_int64s": [1, 2, 1, 2],
    }
    x = np.array([[1, 2, 1, 1, 2], [2, 2, 2, 0, 0]], np.int64)
    (counts,) = ReferenceEvaluator(tfidf_model([2, 5], TensorProto.INT64, mode="TF", **attributes)).run(None, {"x": x})
    (y,) = backend.prepare(tfidf_model([2, 5], TensorProto.INT64, mode=mode, **attributes)).run([x])
    np.testing.assert_array_equal(y, (counts > 0).astype(np.float32) if mode == "IDF" else counts)


def test_a_row_shorter_than_every_ngram_counts_nothing():
    model = tfidf_model(
        [2, 1], TensorProto.INT64, mode="TF", min_gram_length=2, max_gram_length=2,
        max_skip_count=3, ngram_counts=[0, 0], ngram_indexes=[0, 1], pool_int64s=[1, 2, 2, 1],
    )
    (y,) = backend.prepare(model).run([np.array([[1], [2]], np.int64)])
    np.testing.assert_array_equal(y, np.zeros((2, 2), np.float32))


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ({"min_gram_length": 3, "max_gram_length": 2}, r"min_gram_length=3 and max_gram_length=2"),
        ({"ngram_counts": [0, 9]}, r"ngram_counts \[0, 9\] must rise within the pool's 4 items"),
        ({"ngram_indexes": [0]}, r"the pool holds 2 n-grams but ngram_indexes gives 1 columns"),
        ({"mode": "BM25"}, r"mode 'BM25' is not one of TF, IDF, TFIDF"),
        ({"weights": [1.0, 2.0, 3.0]}, r"weights has 3 entries for 2 output columns"),
    ],
)
def test_bad_attributes_are_one_line_diagnostics(attributes, message):
    base = {
        "mode": "TF", "min_gram_length": 2, "max_gram_length": 2, "max_skip_count": 0,
        "ngram_counts": [0, 0], "ngram_indexes": [0, 1], "pool_int64s": [1, 2, 2, 1],
    }
    model = tfidf_model([4], TensorProto.INT64, **{**base, **attributes})
    with pytest.raises(ModelImportError, match=r"node 'tfidf' \(TfIdfVectorizer\): " + message) as error:
        backend.prepare(model)
    assert "\n" not in str(error.value)
