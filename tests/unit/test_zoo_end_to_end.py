"""Every zoo model, built small, compiled by `strato.compile` (LLVM machine code) and
compared with onnxruntime on seeded random inputs.

The models keep their structure (every layer, every operator) at test-sized widths and
resolutions so that a compile and a run take seconds. A model that strato cannot compile
yet fails here with the compiler's reason; it is not skipped.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto

import strato
from strato import zoo
from strato.testing.optional import optional_module

ort = optional_module("onnxruntime")

BATCH = 2
"""More than one row, so that batch handling (strides, broadcasting) is exercised."""

SMALL_OPTIONS: dict[str, dict[str, Any]] = {
    "mlp": {"sizes": (64, 48, 32, 10)},
    "resnet18": {"image_size": 32, "width": 8, "num_classes": 10},
    "mobilenet_v2": {"width_mult": 0.25, "image_size": 32, "num_classes": 10},
    "dqn": {"image_size": 36, "hidden": 64},
    "dcgan": {"nz": 16, "ngf": 8},
    "transformer": {"seq_len": 16, "hidden": 32, "heads": 2, "ffn": 64},
    "lstm": {"vocab": 100, "hidden": 32, "seq_len": 8},
}
"""Builder options that shrink each zoo model to a test size."""

RTOL = 1e-3

ATOL_SCALE = 1e-5
"""The absolute tolerance, as a fraction of the output's largest magnitude. strato and
onnxruntime sum float32 products in different orders (tiling, vectorization), so each
output differs by rounding of about sqrt(K) * 2^-24 times the magnitude of the K terms
summed, compounded over the layers; that is far below 1e-5 of the outputs' scale, which
the zoo keeps O(1). Outputs that cancel to nearly zero have no meaningful relative error,
so they are held to this absolute floor instead of to RTOL."""


def random_feeds(model: onnx.ModelProto, seed: int) -> list[np.ndarray]:
    """Standard normal float32 inputs; token ids (int64) uniform over the vocabulary."""
    rng = np.random.default_rng(seed)
    initializers = {tensor.name: tensor for tensor in model.graph.initializer}
    feeds = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        shape = tuple(dim.dim_value for dim in tensor_type.shape.dim)
        if tensor_type.elem_type == TensorProto.INT64:
            vocab = initializers["encoder.weight"].dims[0]
            feeds.append(rng.integers(0, vocab, shape, dtype=np.int64))
        else:
            feeds.append(rng.standard_normal(shape, dtype=np.float32))
    return feeds


def run_onnxruntime(model: onnx.ModelProto, feeds: list[np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    names = [value.name for value in session.get_inputs()]
    return session.run(None, dict(zip(names, feeds, strict=True)))


def test_every_zoo_model_is_covered():
    assert set(SMALL_OPTIONS) == set(zoo.zoo_names())


@pytest.mark.parametrize("name", sorted(SMALL_OPTIONS))
def test_zoo_model_matches_onnxruntime(name: str):
    model = zoo.build_model(name, batch=BATCH, seed=0, **SMALL_OPTIONS[name])
    compiled = strato.compile(model)
    for seed in (1, 2):
        feeds = random_feeds(model, seed)
        actual = compiled(*feeds)
        expected = run_onnxruntime(model, feeds)
        assert len(actual) == len(expected)
        for out, ref in zip(actual, expected):
            assert out.shape == ref.shape and out.dtype == ref.dtype
            atol = ATOL_SCALE * float(np.abs(ref).max())
            np.testing.assert_allclose(out, ref, rtol=RTOL, atol=atol, err_msg=name)
