"""Training-mode Dropout: the mask is drawn once, at compile time, from numpy's MT19937
seeded with the node's seed, and applied identically on every call."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import strato
from strato import onnx_backend as backend
from strato.diagnostics import ModelImportError
from strato.frontends.onnx.convert_layout import DROPOUT_DEFAULT_SEED


def dropout_model(
    shape, *, ratio=None, training=None, dtype=TensorProto.FLOAT, mask=False, **attributes
) -> onnx.ModelProto:
    """Dropout(x, r, t); r and t are initializers when given, graph inputs otherwise."""
    outputs = ["y", "z"] if mask else ["y"]
    node = helper.make_node("Dropout", ["x", "r", "t"], outputs, name="drop", **attributes)
    inputs = [helper.make_tensor_value_info("x", dtype, shape)]
    initializers = []
    for name, value, elem in (("r", ratio, TensorProto.FLOAT), ("t", training, TensorProto.BOOL)):
        if value is None:
            inputs.append(helper.make_tensor_value_info(name, elem, []))
        else:
            initializers.append(numpy_helper.from_array(np.asarray(value), name))
    graph_outputs = [helper.make_tensor_value_info("y", dtype, shape)]
    if mask:
        graph_outputs.append(helper.make_tensor_value_info("z", TensorProto.BOOL, shape))
    graph = helper.make_graph([node], "dropout", inputs, graph_outputs, initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def numpy_dropout(x: np.ndarray, ratio: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The rule ONNX's reference outputs follow."""
    mask = np.random.RandomState(seed).uniform(0, 1.0, x.shape) >= ratio
    return x * mask / x.dtype.type(1 - ratio), mask


@pytest.mark.parametrize("seed", [0, 7, 2**32 - 1])
def test_mask_is_numpy_mt19937_of_the_seed_and_the_same_on_every_call(seed: int):
    compiled = strato.compile(
        dropout_model([4, 5], ratio=np.float32(0.3), training=True, mask=True, seed=seed)
    )
    rng = np.random.default_rng(1)
    for _ in range(2):
        x = rng.standard_normal((4, 5)).astype(np.float32)
        y, z = compiled(x)
        expected_y, expected_z = numpy_dropout(x, np.float32(0.3), seed)
        np.testing.assert_array_equal(z, expected_z)
        np.testing.assert_allclose(y, expected_y, rtol=1e-6)
        assert 0 < z.sum() < z.size


def test_a_node_without_seed_uses_the_documented_default():
    x = np.arange(1, 13, dtype=np.float64).reshape(3, 4)
    model = dropout_model([3, 4], ratio=np.float32(0.5), training=True, dtype=TensorProto.DOUBLE)
    (y,) = strato.compile(model)(x)
    expected, _ = numpy_dropout(x, 0.5, DROPOUT_DEFAULT_SEED)
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_ratio_and_training_mode_as_graph_inputs_specialise_per_value():
    rep = backend.prepare(dropout_model([2, 8], mask=True, seed=3))
    x = np.ones((2, 8), np.float32)
    for ratio in (0.25, 0.75):
        y, z = rep.run([x, np.array(ratio, np.float32), np.array(True)])
        expected_y, expected_z = numpy_dropout(x, np.float32(ratio), 3)
        np.testing.assert_array_equal(z, expected_z)
        np.testing.assert_allclose(y, expected_y, rtol=1e-6)
    y, z = rep.run([x, np.array(0.75, np.float32), np.array(False)])
    np.testing.assert_array_equal(y, x)
    assert z.all()
    assert rep.variants == 3


@pytest.mark.parametrize(
    ("attributes", "ratio", "message"),
    [
        ({"seed": -1}, 0.5, r"attribute seed=-1 is not in \[0, 2\*\*32\)"),
        ({"seed": 2**32}, 0.5, r"attribute seed=4294967296 is not in \[0, 2\*\*32\)"),
        ({}, 1.0, r"ratio 1 is not in \[0, 1\)"),
    ],
)
def test_bad_dropouts_are_one_line_diagnostics(attributes, ratio, message):
    model = dropout_model([2], ratio=np.float32(ratio), training=True, **attributes)
    with pytest.raises(ModelImportError, match=r"node 'drop' \(Dropout\): " + message) as error:
        strato.compile(model)
    assert "\n" not in str(error.value)
