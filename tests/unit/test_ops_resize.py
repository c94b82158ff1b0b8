"""Resize: ONNX import against onnxruntime through the graph interpreter and the LLVM
JIT (nearest with each nearest_mode, linear and cubic, each coordinate transformation,
scales or sizes, axes, downscaling), the gathers it becomes, diagnostics, and ONNX's
own node tests."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

# helpers shared with the layout tests (pytest puts this directory on sys.path)
from test_ops_layout import check, check_node_tests, floats, graph_model, ops_of, reference

import strato
from strato.diagnostics import ModelImportError
from strato.dialects import graph
from strato.frontends.onnx import import_onnx
from strato.dialects.graph.resize import Interpolation, axis_taps
from strato.interpreters.graph import run_graph

X = floats(1, 2, 3, 4)
FLOAT = {"y": TensorProto.FLOAT}


def resize_model(x: np.ndarray, *, scales=None, sizes=None, opset: int = 19, **attributes):
    constants = {}
    inputs = ["x", ""]
    if scales is not None:
        constants["scales"] = np.array(scales, np.float32)
        inputs.append("scales")
    else:
        inputs.append("")
    if sizes is not None:
        constants["sizes"] = np.array(sizes, np.int64)
        inputs.append("sizes")
    node = helper.make_node("Resize", inputs, ["y"], name="node", **attributes)
    return graph_model([node], {"x": x}, FLOAT, constants, opset=opset)


@pytest.mark.parametrize(
    "coordinates, nearest_mode",
    [
        ("asymmetric", "floor"),
        ("half_pixel", "round_prefer_floor"),
        ("pytorch_half_pixel", "round_prefer_ceil"),

        ("half_pixel_symmetric", "ceil"),
        ("asymmetric", "round_prefer_ceil"),
    ],
)
@pytest.mark.parametrize("scales", [[1, 1, 2, 2], [1, 1, 0.5, 1.5], [1, 1, 3, 0.75]])
def test_nearest(coordinates: str, nearest_mode: str, scales: list[float]):
    """align_corners is with the linear modes, on whole output lengths."""
    model = resize_model(
        X,
        scales=scales,
        mode="nearest",
        coordinate_transformation_mode=coordinates,
        nearest_mode=nearest_mode,
    )
    check(model, [X])


# align_corners divides by the unrounded output length (ONNX's reference) where
# onnxruntime divides by the rounded one: scales that give whole lengths agree on both
WHOLE_LENGTHS = [[1, 1, 2, 2], [1, 1, 1, 0.5], [1, 1, 2, 1.5]]


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize(
    "coordinates, scales",
    [
        (coordinates, scales)
        for coordinates in ("half_pixel", "pytorch_half_pixel", "asymmetric", "half_pixel_symmetric")
        for scales in ([1, 1, 2, 2], [1, 1, 0.6, 1.7])
    ]
    + [("align_corners", scales) for scales in WHOLE_LENGTHS],
)
def test_linear_and_cubic(mode: str, coordinates: str, scales: list[float]):
    model = resize_model(X, scales=scales, mode=mode, coordinate_transformation_mode=coordinates)
    check(model, [X], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "attributes",
    [
        {"mode": "linear", "antialias": 1},
        {"mode": "cubic", "antialias": 1, "cubic_coeff_a": -0.5},
        {"mode": "cubic", "exclude_outside": 1},
    ],
)
def test_downscaling_with_antialias_and_exclude_outside(attributes):
    x = floats(1, 1, 8, 7)
    model = resize_model(x, scales=[1, 1, 0.5, 0.6], **attributes)
    check(model, [x], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("policy", ["stretch", "not_larger", "not_smaller"])
def test_sizes_with_axes_and_aspect_policy(policy: str):
    model = resize_model(
        X, sizes=[5, 7], mode="linear", axes=[2, 3], keep_aspect_ratio_policy=policy
    )
    check(model, [X], rtol=1e-5, atol=1e-6)


def test_opset_11_sizes_after_an_empty_scales():
    """torch's TorchScript export of F.interpolate(size=...): scales is an empty tensor."""
    node = helper.make_node("Resize", ["x", "roi", "scales", "sizes"], ["y"], mode="nearest")
    constants = {
        "roi": np.zeros(0, np.float32),
        "scales": np.zeros(0, np.float32),
        "sizes": np.array([1, 2, 6, 8], np.int64),
    }
    check(graph_model([node], {"x": X}, FLOAT, constants, opset=11), [X])


def test_tf_crop_and_resize_extrapolates():
    node = helper.make_node(
        "Resize",
        ["x", "roi", "", "sizes"],
        ["y"],
        mode="linear",
        coordinate_transformation_mode="tf_crop_and_resize",
        extrapolation_value=10.0,
    )
    constants = {
        "roi": np.array([0, 0, 0.4, -0.2, 1, 1, 1.2, 0.7], np.float32),
        "sizes": np.array([1, 2, 3, 5], np.int64),
    }
    model = graph_model([node], {"x": X}, FLOAT, constants, opset=13)
    # onnxruntime's bilinear kernel maps this roi differently from the ONNX specification
    # and its reference implementation, which is the oracle here
    expected = ReferenceEvaluator(model).run(None, {"x": X})[0]
    assert np.any(expected == 10.0) and np.any(expected != 10.0)
    np.testing.assert_allclose(run_graph(import_onnx(model).module, [X])[0], expected, rtol=1e-5)
    np.testing.assert_allclose(strato.compile(model)(X)[0], expected, rtol=1e-5)


def test_a_resize_is_one_graph_resize_with_every_axis_scale():
    model = resize_model(X, scales=[2, 2], axes=[2, 3], mode="cubic", cubic_coeff_a=-0.5)
    function = import_onnx(model).function
    (op,) = [op for op in function.body.block.ops if isinstance(op, graph.ResizeOp)]
    assert op.axis_scales == [1.0, 1.0, 2.0, 2.0]
    assert op.interpolation.cubic_a == -0.5 and op.roi is None


@pytest.mark.parametrize("dtype", [np.uint8, np.int32])
def test_nearest_moves_integers_exactly(dtype):
    x = np.arange(24).reshape(1, 2, 3, 4).astype(dtype)
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")
    output = {"y": helper.np_dtype_to_tensor_dtype(np.dtype(dtype))}
    scales = {"scales": np.array([1, 1, 1.5, 0.5], np.float32)}
    check(graph_model([node], {"x": x}, output, scales), [x])


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32])
@pytest.mark.parametrize(
    "mode, coordinates, scales",
    [
        ("linear", "half_pixel", [1, 1, 2, 2]),
        ("linear", "align_corners", [1, 1, 1.5, 2.5]),
        ("cubic", "asymmetric", [1, 1, 2, 0.75]),  # cubic overshoots: saturated
    ],
)
def test_interpolating_integers_rounds_like_the_reference(dtype, mode, coordinates, scales):
    """Interpolated in float64, rounded half to even and saturated, as ONNX's reference
    does; onnxruntime truncates toward zero, so its 8-bit results are at most one off."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(3)
    x = rng.integers(max(info.min, -1000), min(info.max, 1000), (1, 2, 5, 6), endpoint=True).astype(dtype)
    node = helper.make_node(
        "Resize", ["x", "", "scales"], ["y"], mode=mode, coordinate_transformation_mode=coordinates
    )
    output = {"y": helper.np_dtype_to_tensor_dtype(np.dtype(dtype))}
    model = graph_model([node], {"x": x}, output, {"scales": np.array(scales, np.float32)})
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    imported = import_onnx(model)
    (interpreted,) = run_graph(imported.module, [x], imported.function_name)
    (compiled,) = strato.compile(model)(x)
    for actual in (interpreted, compiled):
        assert actual.dtype == dtype and actual.shape == expected.shape
        np.testing.assert_array_equal(actual, expected)
    if coordinates == "half_pixel" and info.bits == 8:
        (truncated,) = reference(model, [x])  # onnxruntime
        assert np.abs(compiled.astype(np.int64) - truncated).max() <= 1


def test_a_resize_fuses_with_the_op_before_it():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Resize", ["r", "", "scales"], ["y"], mode="cubic"),
    ]
    model = graph_model(nodes, {"x": X}, FLOAT, {"scales": np.array([1, 1, 2, 1.5], np.float32)})
    check(model, [X], rtol=1e-5, atol=1e-6)
    assert ops_of(model) == ["graph.relu", "graph.resize"]


def test_identity_scales_are_no_op():
    assert ops_of(resize_model(X, scales=[1, 1, 1, 1], mode="linear")) == []


def test_taps_of_a_two_times_linear_upscale():
    how = Interpolation("linear", "half_pixel", "round_prefer_floor", -0.75, False, False, 0.0)
    taps = axis_taps(how, 2, 4, 2.0, (0.0, 1.0))
    # sources -0.25, 0.25, 0.75, 1.25: edges repeat the border element
    assert taps.positions.tolist() == [[0, 0, 0, 1], [0, 1, 1, 1]]
    np.testing.assert_allclose(taps.weights, [[0.25, 0.75, 0.25, 0.75], [0.75, 0.25, 0.75, 0.25]])


def _resize_with_runtime_scales():
    node = helper.make_node("Resize", ["x", "", "s"], ["y"], name="node", mode="nearest")
    return graph_model([node], {"x": X, "s": np.ones(4, np.float32)}, FLOAT)


@pytest.mark.parametrize(
    "model, message",
    [
        (resize_model(X, scales=[1, 1, 2], mode="nearest"), r"scales \[1.0, 1.0, 2.0\] must hold one value for each of 4 axes"),
        (resize_model(X, scales=[1, 1, 2, 2], mode="area"), r"mode 'area' is not one of nearest, linear, cubic"),
        (_resize_with_runtime_scales(), r"scales \(input 's'\) must be known at import time"),
    ],
)
def test_diagnostics_name_the_node(model, message: str):
    with pytest.raises(ModelImportError, match=r"node 'node' \(Resize\): " + message):
        import_onnx(model)


@pytest.mark.parametrize("mode", ["graph", "llvm"])
def test_onnx_node_tests(mode: str):
    check_node_tests(r"^test_resize_", mode, {})


def test_a_resize_is_injective_and_joins_the_elementwise_ops_around_it():
    from test_graph_fuse_ops import fuse, groups

    assert graph.ResizeOp.PATTERN_KIND == graph.PatternKind.INJECTIVE
    module = fuse(
        """
func.func @main(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x8x8xf32> {
  %r = graph.relu %x : tensor<1x2x4x4xf32>
  %y = graph.resize %r "linear" "half_pixel" scales [1.0, 1.0, 2.0, 2.0] : (tensor<1x2x4x4xf32>) -> tensor<1x2x8x8xf32>
  %t = graph.tanh %y : tensor<1x2x8x8xf32>
  func.return %t : tensor<1x2x8x8xf32>
}"""
    )
    assert groups(module) == ["relu_resize_tanh"]
