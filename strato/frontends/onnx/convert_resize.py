"""Converter for ONNX Resize (nearest, linear and cubic interpolation).

Resizing is separable: each resized axis is interpolated on its own, and an output
position along an axis reads a few input positions ("taps") with fixed weights. With
static shapes, the positions and the weights are known at import time, so Resize becomes
graph ops over constants, one axis at a time:

    nearest:  y = graph.gather %x, %positions axis d
    linear:   y = gather(x, p0, d) * w0 + gather(x, p1, d) * w1   (cubic: four taps)

where a weight tensor has the shape [out_d, 1, ..] so it broadcasts over the later
axes. Nearest resizing is thus exact data movement, and the gathers and their weighting
fuse into one kernel with whatever follows. Every `coordinate_transformation_mode`
(half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric,
tf_crop_and_resize with its extrapolation value), `nearest_mode`, `cubic_coeff_a`,
`exclude_outside`, `antialias`, `axes` and `keep_aspect_ratio_policy` only change the
positions and weights. The scales or sizes (and the roi) must be known at import time.

    Resize(x: [1, 3, 4, 4], scales=[1, 1, 2, 2], mode="nearest")
        -> graph.gather %x, %rows axis 2 : ... -> tensor<1x3x8x4xf32>
           graph.gather %g, %cols axis 3 : ... -> tensor<1x3x8x8xf32>
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import AnyFloat
from xdsl.ir import SSAValue

from strato.dialects import graph
from strato.dialects.graph.base import element_type
from strato.dialects.tensor_types import numpy_dtype
from strato.frontends.onnx.conversion import ImportedValue, NodeContext, shape_of
from strato.frontends.onnx.convert_layout import normalize_axes

IMPORT_TIME_INPUTS: dict[str, tuple[int, ...]] = {"Resize": (1, 2, 3)}
"""The inputs of each operator that must be known at import time (by position)."""

_MODES = ("nearest", "linear", "cubic")
_COORDINATE_MODES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_crop_and_resize",
)
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@dataclass(frozen=True)
class Interpolation:
    """How every resized axis is interpolated (the node's attributes)."""

    mode: str
    coordinates: str
    nearest_mode: str
    cubic_a: float
    exclude_outside: bool
    antialias: bool
    extrapolation_value: float


@dataclass
class Taps:
    """The interpolation of one axis: output position o reads input positions
    `positions[t, o]` (clamped into the axis) with weights `weights[t, o]`; where
    `extrapolated[o]` is set the output is the extrapolation value instead."""

    positions: np.ndarray
    weights: np.ndarray
    extrapolated: np.ndarray | None

    def is_identity(self, size: int) -> bool:
        return (
            self.positions.shape == (1, size)
            and bool(np.all(self.positions[0] == np.arange(size)))
            and bool(np.all(self.weights == 1))
            and self.extrapolated is None
        )


def source_coordinates(
    how: Interpolation,
    in_size: int,
    out_size: int,
    scale: float,
    roi: tuple[float, float],
) -> tuple[np.ndarray, np.ndarray | None]:
    """The input coordinate of each output position along one axis, and for
    tf_crop_and_resize which ones fall outside the input. align_corners and
    tf_crop_and_resize divide by the output length before it is rounded down, as ONNX's
    reference does (its node tests check it; onnxruntime uses the rounded length);
    pytorch_half_pixel maps a length-1 output to 0, as the specification and PyTorch do."""
    x = np.arange(out_size, dtype=np.float64)
    width = scale * in_size  # the output length before rounding down
    mode = how.coordinates
    outside = None
    if mode == "align_corners":
        source = np.zeros_like(x) if width == 1 else x * (in_size - 1) / (width - 1)
    elif mode == "asymmetric":
        source = x / scale
    elif mode == "tf_crop_and_resize":
        start, end = roi
        if width == 1:
            source = np.full_like(x, (end - start) * (in_size - 1) / 2)
        else:
            source = x * (end - start) * (in_size - 1) / (width - 1)
        source = source + start * (in_size - 1)
        outside = (source < 0) | (source > in_size - 1)
    elif mode == "pytorch_half_pixel":
        source = np.zeros_like(x) if out_size == 1 else (x + 0.5) / scale - 0.5
    elif mode == "half_pixel":
        source = (x + 0.5) / scale - 0.5
    else:  # half_pixel_symmetric: the centre of the input maps to the centre of the output
        adjustment = out_size / width
        offset = in_size / 2 * (1 - adjustment)
        source = offset + (x + 0.5) / scale - 0.5
    return source, outside


def _cubic_weights(distance: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel of parameter `a` at |distance|."""
    d = np.abs(distance)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def axis_taps(
    how: Interpolation, in_size: int, out_size: int, scale: float, roi: tuple[float, float]
) -> Taps:
    """The taps of one axis. An output position with source coordinate c has its left
    neighbour `left` (floor(c), or c - 1 when c is whole, so the fraction r is in
    (0, 1]) and reads positions left + i for the kernel's offsets i, each weighted by
    the kernel at (i - r) (scaled by the scale when antialiasing a downscale)."""
    source, outside = source_coordinates(how, in_size, out_size, scale, roi)
    whole = source == np.floor(source)
    left = (np.floor(source) - whole).astype(np.int64)
    fraction = np.where(whole, 1.0, source - np.floor(source))
    if how.mode == "nearest":
        if how.nearest_mode == "round_prefer_floor":
            right = fraction > 0.5
        elif how.nearest_mode == "round_prefer_ceil":
            right = fraction >= 0.5
        elif how.nearest_mode == "floor":
            right = whole
        else:
            right = np.ones_like(whole)
        right = right | whole
        positions = (left + right)[None, :]
        weights = np.ones_like(positions, dtype=np.float64)
    else:
        stretch = min(scale, 1.0) if how.antialias else 1.0
        reach = 1 if how.mode == "linear" else 2
        first = int(math.floor(-reach / stretch) + 1)
        offsets = np.arange(first, 1 - first + 1)
        distance = (offsets[:, None] - fraction[None, :]) * stretch
        if how.mode == "linear":
            weights = np.clip(1 - np.abs(distance), 0, 1)
        else:
            weights = _cubic_weights(distance, how.cubic_a)
        if how.antialias:
            weights = weights / weights.sum(axis=0, keepdims=True)
        positions = left[None, :] + offsets[:, None]
        if how.exclude_outside:
            weights = np.where((positions < 0) | (positions >= in_size), 0.0, weights)
            weights = weights / weights.sum(axis=0, keepdims=True)
    positions = np.clip(positions, 0, in_size - 1)
    used = np.any(weights != 0, axis=1)  # a tap no output reads is left out
    if used.any():
        positions, weights = positions[used], weights[used]
    if outside is not None and not outside.any():
        outside = None
    return Taps(positions, weights, outside)


def _interpolation(ctx: NodeContext) -> Interpolation:
    mode = ctx.attr("mode", "nearest")
    if mode not in _MODES:
        raise ctx.error(f"mode '{mode}' is not one of {', '.join(_MODES)}")
    default_coordinates = "half_pixel" if ctx.opset() >= 11 else "asymmetric"
    coordinates = ctx.attr("coordinate_transformation_mode", default_coordinates)
    if coordinates not in _COORDINATE_MODES:
        raise ctx.error(
            f"coordinate_transformation_mode '{coordinates}' is not one of "
            f"{', '.join(_COORDINATE_MODES)}"
        )
    nearest_mode = ctx.attr("nearest_mode", "round_prefer_floor")
    if nearest_mode not in _NEAREST_MODES:
        raise ctx.error(f"nearest_mode '{nearest_mode}' is not one of {', '.join(_NEAREST_MODES)}")
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
    """ONNX Resize (opset 10 on) -> graph.gather along each resized axis, weighted and
    summed for linear and cubic modes (see the module docstring)."""
    how = _interpolation(ctx)
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
        raise ctx.error(f"{how.mode} resizing of {dtype} tensors is not supported")
    for axis, (in_size, out_size) in enumerate(zip(shape, out_shape)):
        if in_size == 0 and out_size:
            raise ctx.error(f"cannot resize the empty axis {axis} to {out_size}")
        if out_size == 0 or in_size == 0:
            continue
        taps = axis_taps(how, in_size, out_size, scales[axis], rois[axis])
        if taps.is_identity(in_size):
            continue
        x = _apply_taps(ctx, x, axis, taps, how.extrapolation_value, dtype)
    if tuple(shape_of(x)) != tuple(out_shape):  # an empty output
        x = np.zeros(out_shape, dtype=dtype)
    return [x]


def _apply_taps(
    ctx: NodeContext, x: ImportedValue, axis: int, taps: Taps, extrapolation: float, dtype
) -> ImportedValue:
    """x interpolated along `axis`: sum over t of x[.., positions[t], ..] * weights[t]."""
    rank = len(shape_of(x))
    trailing = (1,) * (rank - axis - 1)
    count = taps.positions.shape[1]
    total: ImportedValue | None = None
    for positions, weights in zip(taps.positions, taps.weights):
        if not np.any(weights):
            continue
        picked = _gather(ctx, x, positions, axis)
        if not np.all(weights == 1):
            picked = _binary(
                ctx, graph.MulOp, picked, weights.astype(dtype).reshape(count, *trailing)
            )
        total = picked if total is None else _binary(ctx, graph.AddOp, total, picked)
    if total is None:
        total = _binary(
            ctx, graph.MulOp, _gather(ctx, x, taps.positions[0], axis), np.zeros((), dtype)
        )
    if taps.extrapolated is not None:
        keep = (~taps.extrapolated).astype(dtype).reshape(count, *trailing)
        total = _binary(ctx, graph.MulOp, total, keep)
        if extrapolation != 0:
            fill = (taps.extrapolated * extrapolation).astype(dtype).reshape(count, *trailing)
            total = _binary(ctx, graph.AddOp, total, fill)
    return total


def _gather(
    ctx: NodeContext, x: ImportedValue, positions: np.ndarray, axis: int
) -> ImportedValue:
    positions = positions.astype(np.int64)
    if isinstance(x, np.ndarray):
        return np.take(x, positions, axis=axis)
    indices = ctx.materialize(np.require(positions, requirements="C"))
    return ctx.emit(graph.GatherOp(x, indices, axis)).results[0]


def _binary(
    ctx: NodeContext,
    op_class: type[graph.BroadcastBinaryOp],
    lhs: ImportedValue,
    rhs: ImportedValue,
) -> ImportedValue:
    if isinstance(lhs, np.ndarray) and isinstance(rhs, np.ndarray):
        return np.asarray(op_class.compute(lhs, rhs), dtype=lhs.dtype)
    operands: list[SSAValue] = [
        ctx.materialize(np.require(v, requirements="C")) if isinstance(v, np.ndarray) else v
        for v in (lhs, rhs)
    ]
    return ctx.emit(op_class(*operands)).results[0]


__all__: Sequence[str] = ["IMPORT_TIME_INPUTS", "axis_taps", "convert_resize"]
