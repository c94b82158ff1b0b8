"""GridSample as element-wise graph ops and gathers (`convert_sampling`): every mode,
padding mode and align_corners, 2-D and 3-D, on grids reaching past the border (the
reflection folds more than once), against onnx's reference evaluator through the graph
interpreter; one case compiled; the diagnostics."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import strato
from strato.diagnostics import ModelImportError
from strato.frontends.onnx import import_onnx
from strato.interpreters.graph import run_graph


def grid_sample_model(x_shape, grid_shape, opset=22, **attributes):
    out_shape = [x_shape[0], x_shape[1], *grid_shape[1:-1]]
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], **attributes)
    graph = helper.make_graph(
        [node],
        "grid_sample",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape),
            helper.make_tensor_value_info("grid", TensorProto.FLOAT, grid_shape),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def inputs_of(x_shape, grid_shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(np.float32)
    # past [-1, 1] on both sides, far enough that reflection folds several times
    grid = rng.uniform(-3.2, 3.2, grid_shape).astype(np.float32)
    return x, grid


def interpreted(model, x, grid):
    imported = import_onnx(model)
    feeds = {"x": x, "grid": grid}
    return run_graph(imported.module, [feeds[n] for n in imported.input_names])[0]


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_grid_sample_2d_matches_reference(mode, padding_mode, align_corners):
    x_shape, grid_shape = (2, 3, 4, 5), (2, 3, 4, 2)
    model = grid_sample_model(
        x_shape,
        grid_shape,
        mode=mode,
        padding_mode=padding_mode,
        align_corners=align_corners,
    )
    x, grid = inputs_of(x_shape, grid_shape)
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x, "grid": grid})
    np.testing.assert_allclose(
        interpreted(model, x, grid), expected, rtol=1e-4, atol=1e-5
    )


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("padding_mode", ["zeros", "reflection"])
def test_grid_sample_3d_matches_reference(mode, padding_mode):
    x_shape, grid_shape = (1, 2, 3, 4, 2), (1, 2, 3, 2, 3)
    model = grid_sample_model(x_shape, grid_shape, mode=mode, padding_mode=padding_mode)
    x, grid = inputs_of(x_shape, grid_shape, seed=1)
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x, "grid": grid})
    np.testing.assert_allclose(
        interpreted(model, x, grid), expected, rtol=1e-4, atol=1e-5
    )


def test_grid_sample_opset_16_mode_names_and_default():
    # onnx's reference knows opset 20's names only: opset 16's bilinear (the default)
    # and bicubic are checked against them
    x_shape, grid_shape = (1, 1, 3, 3), (1, 2, 2, 2)
    x, grid = inputs_of(x_shape, grid_shape, seed=2)
    pairs = [
        (grid_sample_model(x_shape, grid_shape, opset=16), "linear"),
        (grid_sample_model(x_shape, grid_shape, opset=16, mode="bicubic"), "cubic"),
    ]
    for model, mode in pairs:
        reference = grid_sample_model(x_shape, grid_shape, mode=mode)
        (expected,) = ReferenceEvaluator(reference).run(None, {"x": x, "grid": grid})
        np.testing.assert_allclose(
            interpreted(model, x, grid), expected, rtol=1e-4, atol=1e-5
        )


def test_grid_sample_compiled_matches_reference():
    x_shape, grid_shape = (1, 2, 5, 4), (1, 3, 3, 2)
    model = grid_sample_model(
        x_shape, grid_shape, mode="cubic", padding_mode="reflection"
    )
    x, grid = inputs_of(x_shape, grid_shape, seed=3)
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x, "grid": grid})
    (actual,) = strato.compile(model)(x, grid)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("attributes", "grid_shape", "message"),
    [
        ({"mode": "area"}, (1, 2, 2, 2), "mode 'area'"),
        ({"padding_mode": "wrap"}, (1, 2, 2, 2), "padding_mode 'wrap'"),
        ({}, (1, 2, 2, 3), "grid of shape"),
    ],
)
def test_grid_sample_diagnostics(attributes, grid_shape, message):
    model = grid_sample_model((1, 1, 3, 3), grid_shape, **attributes)
    with pytest.raises(ModelImportError, match=message):
        import_onnx(model)
