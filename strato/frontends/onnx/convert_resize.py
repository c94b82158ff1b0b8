"""Converter for ONNX Resize (nearest, linear and cubic interpolation): graph.resize.

Every attribute carries over to graph.resize's properties: `mode`,
`coordinate_transformation_mode` (half_pixel, half_pixel_symmetric, pytorch_half_pixel,
align_corners, asymmetric, tf_crop_and_resize with its `extrapolation_value`),
`nearest_mode`, `cubic_coeff_a`, `exclude_outside` and `antialias`. What depends on
the inputs is resolved at import time, so the scales, sizes and roi must be known then:
`sizes`, `axes` and `keep_aspect_ratio_policy` become the output shape and a scale for
every axis (1 where the axis is not resized), and the roi a start and an end for every
axis (kept for tf_crop_and_resize only, the one mode that reads it).

    Resize(x: [1, 3, 4, 4], "", scales=[1, 1, 2, 2], mode="linear")
        -> graph.resize %x "linear" "half_pixel" scales [1.0, 1.0, 2.0, 2.0]
               : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>

Linear and cubic resizing of an integer tensor (a quantized model's uint8 or int8
activations) interpolates in float64, then rounds half to even and saturates, as ONNX's
reference does (onnxruntime truncates, so its results can be one lower).

A Resize of a known tensor is folded with graph.resize's reference semantics, one
with an empty output becomes a constant, and one that changes no axis is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import AnyFloat

from strato.dialects import graph
from strato.dialects.graph.base import element_type
from strato.dialects.graph.resize import (
    COORDINATE_MODES,
    NEAREST_MODES,
    RESIZE_MODES,
    Interpolation,
    resize_reference,
    resized_axes,
)
from strato.dialects.tensor_types import numpy_dtype
from strato.frontends.onnx.conversion import ImportedValue, NodeContext, shape_of
from strato.frontends.onnx.convert_layout import normalize_axes
from strato.frontends.onnx.expansion import Expansion

IMPORT_TIME_INPUTS: dict[str, tuple[int, ...]] = {"Resize": (1, 2, 3), "Upsample": (1,)}
"""The inputs of each operator that must be known at import time (by position)."""


def _interpolation(ctx: NodeContext) -> Interpolation:
    mode = ctx.attr("mode", "nearest")
    if mode not in RESIZE_MODES:
        raise ctx.error(f"mode '{mode}' is not one of {', '.join(RESIZE_MODES)}")
    default_coordinates = "half_pixel" if ctx.opset() >= 11 else "asymmetric"
    coordinates = ctx.attr("coordinate_transformation_mode", default_coordinates)
    if coordinates not in COORDINATE_MODES:
        raise ctx.error(
            f"coordinate_transformation_mode '{coordinates}' is not one of "
            f"{', '.join(COORDINATE_MODES)}"
        )
    nearest_mode = ctx.attr("nearest_mode", "round_prefer_floor")
    if nearest_mode not in NEAREST_MODES:
        raise ctx.error(f"nearest_mode '{nearest_mode}' is not one of {', '.join(NEAREST_MODES)}")
    antialias = ctx.flag_attr("antialias")
    if antialias and mode == "nearest":
        raise ctx.error("antialias applies to linear and cubic modes only")
    return Interpolation(
        mode=mode,
        coordinates=coordinates,
        nearest_mode=nearest_mode,
        cubic_a=ctx.float_attr("cubic_coeff_a", -0.75),
        exclude_outside=ctx.flag_attr("exclude_outside"),
        antialias=antialias,
        extrapolation_value=ctx.float_attr("extrapolation_value", 0.0),
    )


def _known_floats(ctx: NodeContext, index: int, what: str) -> np.ndarray | None:
    """Optional input `index` as an array (None when absent or empty), which must be
    known at import time."""
    if not ctx.has_input(index):
        return None
    array = ctx.known(index)
    if array is None:
        raise ctx.error(
            f"{what} (input '{ctx.input_name(index)}') must be known at import time (an "
            "initializer or a Constant): strato compiles static shapes"
        )
    return array.reshape(-1) if array.size else None


def _output_geometry(
    ctx: NodeContext, shape: tuple[int, ...]
) -> tuple[list[int], list[float], list[tuple[float, float]]]:
    """The output shape, the scale of every axis and its roi (start, end)."""
    rank = len(shape)
    axes = (
        normalize_axes(ctx, [int(a) for a in ctx.attr("axes")], rank)
        if ctx.has_attr("axes")
        else list(range(rank))
    )
    if ctx.opset() < 11:
        roi, scales, sizes = None, _known_floats(ctx, 1, "scales"), None
    else:
        roi = _known_floats(ctx, 1, "roi")
        scales = _known_floats(ctx, 2, "scales")
        sizes = _known_floats(ctx, 3, "sizes") if ctx.has_input(3) else None
    if (scales is None) == (sizes is None):
        raise ctx.error("exactly one of scales and sizes must be given")
    given = scales if scales is not None else sizes
    assert given is not None
    if len(given) != len(axes):
        what = "scales" if scales is not None else "sizes"
        raise ctx.error(f"{what} {given.tolist()} must hold one value for each of {len(axes)} axes")
    axis_scales = [1.0] * rank
    out_shape = list(shape)
    if scales is not None:
        if np.any(scales <= 0):
            raise ctx.error(f"scales {scales.tolist()} must be positive")
        for axis, scale in zip(axes, scales):
            axis_scales[axis] = float(scale)
            out_shape[axis] = int(float(scale) * shape[axis])
    else:
        assert sizes is not None
        if sizes.dtype.kind not in "iu" or np.any(sizes < 0):
            raise ctx.error(f"sizes {sizes.tolist()} must be non-negative integers")
        for axis, size in zip(axes, sizes):
            out_shape[axis] = int(size)
            axis_scales[axis] = int(size) / shape[axis] if shape[axis] else 1.0
        policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
        if policy not in ("stretch", "not_larger", "not_smaller"):
            raise ctx.error(
                f"keep_aspect_ratio_policy '{policy}' is not one of stretch, not_larger, "
                "not_smaller"
            )
        if policy != "stretch":
            chosen = [axis_scales[a] for a in axes]
            scale = min(chosen) if policy == "not_larger" else max(chosen)
            for axis in axes:
                axis_scales[axis] = scale
                out_shape[axis] = int(scale * shape[axis] + 0.5)
    rois = [(0.0, 1.0)] * rank
    if roi is not None:
        if len(roi) != 2 * len(axes):
            raise ctx.error(
                f"roi {roi.tolist()} must hold a start and an end for each of {len(axes)} axes"
            )
        for n, axis in enumerate(axes):
            rois[axis] = (float(roi[n]), float(roi[n + len(axes)]))
    return out_shape, axis_scales, rois


def convert_resize(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Resize (opset 10 on) -> graph.resize (see the module docstring)."""
    return _resized(ctx, _interpolation(ctx))


def _resized(ctx: NodeContext, how: Interpolation) -> list[ImportedValue]:
    known = ctx.known(0)
    x: ImportedValue = known if known is not None else ctx.operand(0)
    shape = shape_of(x)
    out_shape, scales, rois = _output_geometry(ctx, shape)
    dtype = x.dtype if isinstance(x, np.ndarray) else numpy_dtype(x.type)
    is_float = (
        x.dtype.kind == "f" or x.dtype.name == "bfloat16"
        if isinstance(x, np.ndarray)
        else isinstance(element_type(x), AnyFloat)
    )
    if how.mode != "nearest" and not is_float:
        if dtype.kind not in "iu":
            raise ctx.error(f"{how.mode} resizing of {dtype} tensors is not supported")
        return [_integer_resized(ctx, x, out_shape, how, scales, rois)]
    for axis, (in_size, out_size) in enumerate(zip(shape, out_shape)):
        if in_size == 0 and out_size:
            raise ctx.error(f"cannot resize the empty axis {axis} to {out_size}")
    if isinstance(x, np.ndarray) or 0 in out_shape:
        array = x if isinstance(x, np.ndarray) else np.zeros(shape, dtype=dtype)
        return [resize_reference(array, out_shape, how, scales, rois)]
    if tuple(out_shape) == tuple(shape) and not resized_axes(shape, out_shape, how, scales, rois):
        return [x]
    roi = [start for start, _ in rois] + [end for _, end in rois]
    op = graph.ResizeOp(x, out_shape, how, scales, roi)
    return [ctx.emit(op).results[0]]


def _integer_resized(
    ctx: NodeContext,
    x: ImportedValue,
    out_shape: Sequence[int],
    how: Interpolation,
    scales: Sequence[float],
    rois: Sequence[tuple[float, float]],
) -> ImportedValue:
    """Linear or cubic resizing of an integer tensor as ONNX's reference computes it:
    interpolated in float64, rounded half to even and saturated into the type.
    (onnxruntime truncates instead, so its results can be one lower.)"""
    dtype = x.dtype if isinstance(x, np.ndarray) else numpy_dtype(x.type)
    info = np.iinfo(dtype)
    if isinstance(x, np.ndarray) or 0 in out_shape:
        wide = np.zeros(shape_of(x), np.float64) if not isinstance(x, np.ndarray) else x
        wide = resize_reference(wide.astype(np.float64), out_shape, how, scales, rois)
        return np.clip(np.round(wide), info.min, info.max).astype(dtype)
    body = Expansion(ctx)
    wide = ctx.lookup(body.cast(ctx.input_name(0), np.float64))
    roi = [start for start, _ in rois] + [end for _, end in rois]
    resized = body.bound(ctx.emit(graph.ResizeOp(wide, out_shape, how, scales, roi)).results[0])
    rounded = body.node("Round", [resized])
    low, high = body.constant(np.float64(info.min)), body.constant(np.float64(info.max))
    return body.result(body.cast(body.node("Clip", [rounded, low, high]), dtype))


def convert_upsample(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Upsample (opset 9, deprecated since 10) -> graph.resize: Resize-9 under its
    old name, its scales (input 1) known at import time, the asymmetric coordinates
    with the nearest neighbour rounded down (`floor`), which repeats each element
    `scale` times for the integer scales ONNX's reference accepts.

        Upsample(x: [1, 1, 2, 2], scales=[1, 1, 2, 3], mode="nearest") -> [1, 1, 4, 6]
    """
    if ctx.opset() < 9:
        raise ctx.error(
            "Upsample before opset 9 (scales as an attribute) is not supported"
        )
    mode = ctx.attr("mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise ctx.error(f"mode '{mode}' is not one of nearest, linear")
    how = Interpolation(
        mode=mode,
        coordinates="asymmetric",
        nearest_mode="floor",
        cubic_a=-0.75,
        exclude_outside=False,
        antialias=False,
        extrapolation_value=0.0,
    )
    return _resized(ctx, how)


__all__: Sequence[str] = ["IMPORT_TIME_INPUTS", "convert_resize", "convert_upsample"]
