"""Resize: nearest, linear and cubic interpolation of a tensor to a static shape.

Resizing is separable: each resized axis is interpolated on its own, and an output
position o along an axis reads a few input positions ("taps") with weights that depend
only on o. The reference semantics here (`axis_taps`) compute them in f64 with numpy;
the te strategy (`strato/strategies/resize.py`) computes the same from each output
position's index, with the same operations in the same order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    FloatAttr,
    Float64Type,
    StringAttr,
    UnitAttr,
    f64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from strato.dialects.graph.base import AnyTensor, GraphOp, PatternKind, element_type, static_shape
from strato.dialects.tensor_types import numpy_dtype, tensor_type_like

RESIZE_MODES = ("nearest", "linear", "cubic")
COORDINATE_MODES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_crop_and_resize",
)
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@dataclass(frozen=True)
class Interpolation:
    """How every resized axis is interpolated (the op's properties)."""

    mode: str = "nearest"
    coordinates: str = "half_pixel"
    nearest_mode: str = "round_prefer_floor"
    cubic_a: float = -0.75
    exclude_outside: bool = False
    antialias: bool = False
    extrapolation_value: float = 0.0

    def stretch(self, scale: float) -> float:
        """How much the kernel widens: 1, or the scale when antialiasing a downscale."""
        return min(scale, 1.0) if self.antialias else 1.0

    def tap_offsets(self, scale: float) -> list[int]:
        """The offsets from the left neighbour that an output position reads."""
        if self.mode == "nearest":
            return [0]
        reach = 1 if self.mode == "linear" else 2
        first = int(math.floor(-reach / self.stretch(scale)) + 1)
        return list(range(first, 2 - first))


@dataclass
class Taps:
    """The interpolation of one axis: output position o reads input positions
    `positions[t, o]` (clamped into the axis) with weights `weights[t, o]`; where
    `outside[o]` is set the output is the extrapolation value instead."""

    positions: np.ndarray
    weights: np.ndarray
    outside: np.ndarray | None

    def is_identity(self, size: int) -> bool:
        """Whether the axis is left as it is (every output reads its own position)."""
        if self.positions.shape[1] != size or self.outside is not None:
            return False
        own = self.positions == np.arange(size)[None, :]
        return bool(
            np.all(np.where(own, self.weights, 0).sum(axis=0) == 1)
            and np.all(np.where(own, 0, self.weights) == 0)
        )


def source_coordinates(
    how: Interpolation, in_size: int, out_size: int, scale: float, roi: tuple[float, float]
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


def cubic_kernel(distance: np.ndarray, a: float) -> np.ndarray:
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
    offsets = np.asarray(how.tap_offsets(scale))
    if how.mode == "nearest":
        if how.nearest_mode == "round_prefer_floor":
            right = fraction > 0.5
        elif how.nearest_mode == "round_prefer_ceil":
            right = fraction >= 0.5
        elif how.nearest_mode == "floor":
            right = whole
        else:
            right = np.ones_like(whole)
        positions = (left + (right | whole))[None, :]
        weights = np.ones_like(positions, dtype=np.float64)
    else:
        stretch = how.stretch(scale)
        distance = (offsets[:, None] - fraction[None, :]) * stretch
        if how.mode == "linear":
            weights = np.clip(1 - np.abs(distance), 0, 1)
        else:
            weights = cubic_kernel(distance, how.cubic_a)
        if how.antialias:
            weights = weights / weights.sum(axis=0, keepdims=True)
        positions = left[None, :] + offsets[:, None]
        if how.exclude_outside:
            weights = np.where((positions < 0) | (positions >= in_size), 0.0, weights)
            weights = weights / weights.sum(axis=0, keepdims=True)
    positions = np.clip(positions, 0, in_size - 1)
    if outside is not None and not outside.any():
        outside = None
    return Taps(positions, weights, outside)


def resize_axis(x: np.ndarray, axis: int, taps: Taps, extrapolation: float) -> np.ndarray:
    """x interpolated along `axis`: sum over t of x[.., positions[t], ..] * weights[t],
    accumulated in x's type in tap order."""
    trailing = (1,) * (x.ndim - axis - 1)
    count = taps.positions.shape[1]
    total = None
    for positions, weights in zip(taps.positions, taps.weights):
        picked = np.take(x, positions, axis=axis)
        weighted = picked * weights.astype(x.dtype).reshape(count, *trailing)
        total = weighted if total is None else total + weighted
    assert total is not None
    if taps.outside is not None:
        fill = np.asarray(extrapolation).astype(x.dtype)
        total = np.where(taps.outside.reshape(count, *trailing), fill, total)
    return total.astype(x.dtype)


def resized_axes(
    in_shape: Sequence[int],
    out_shape: Sequence[int],
    how: Interpolation,
    scales: Sequence[float],
    rois: Sequence[tuple[float, float]],
) -> list[tuple[int, Taps]]:
    """Every axis that a resize changes, with its taps, in order."""
    changed = []
    for axis, (in_size, out_size) in enumerate(zip(in_shape, out_shape)):
        if in_size == 0 or out_size == 0:
            continue
        taps = axis_taps(how, in_size, out_size, scales[axis], rois[axis])
        if not taps.is_identity(in_size):
            changed.append((axis, taps))
    return changed


def resize_reference(
    x: np.ndarray,
    out_shape: Sequence[int],
    how: Interpolation,
    scales: Sequence[float],
    rois: Sequence[tuple[float, float]],
) -> np.ndarray:
    """graph.resize's semantics on an array: the resized axes one after the other."""
    if 0 in out_shape:
        return np.zeros(tuple(out_shape), dtype=x.dtype)
    for axis, taps in resized_axes(x.shape, out_shape, how, scales, rois):
        x = resize_axis(x, axis, taps, how.extrapolation_value)
    return np.ascontiguousarray(x)


@irdl_op_definition
class ResizeOp(GraphOp):
    """Resize by interpolation (ONNX Resize with static scales or sizes): each axis d
    maps an output position o to an input coordinate c by the coordinate transformation
    mode (`half_pixel`: c = (o + 0.5) / scale[d] - 0.5; `asymmetric`: o / scale[d];
    `align_corners`, `pytorch_half_pixel`, `half_pixel_symmetric`, and
    `tf_crop_and_resize` with the region `roi` (every start, then every end) and
    `extrapolation_value` for coordinates outside the input), then reads around c:

    - `nearest`: the nearest position by `nearest_mode` (round_prefer_floor,
      round_prefer_ceil, floor, ceil); any element type;
    - `linear`: the two neighbours, weighted by 1 - distance;
    - `cubic`: four neighbours weighted by Keys' kernel of parameter `cubic_coeff_a`.

    Positions outside the input are clamped to its edge, or (`exclude_outside`) get
    weight 0 and the other weights are renormalised. `antialias` widens the linear or
    cubic kernel by 1 / scale when downscaling (and normalises its weights). Axes are
    interpolated one after the other, last axis last; the output shape is the result
    type's (about scale[d] * input, rounded as the importer chose). Injective.

        %y = graph.resize %x "linear" "half_pixel" scales [1.0, 1.0, 2.0, 2.0] : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
        %n = graph.resize %x "nearest" "asymmetric" scales [1.0, 1.0, 0.5, 0.5] {nearest_mode = "floor"} : (tensor<1x3x4x4xf32>) -> tensor<1x3x2x2xf32>
    """

    name = "graph.resize"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.INJECTIVE
    FLOAT_OPERANDS: ClassVar[bool] = False

    input = operand_def(AnyTensor)
    mode = prop_def(StringAttr)
    coordinate_transformation_mode = prop_def(StringAttr)
    scales = prop_def(DenseArrayBase.constr(f64))
    roi = opt_prop_def(DenseArrayBase.constr(f64))
    nearest_mode = opt_prop_def(StringAttr)
    cubic_coeff_a = opt_prop_def(FloatAttr[Float64Type])
    exclude_outside = opt_prop_def(UnitAttr)
    antialias = opt_prop_def(UnitAttr)
    extrapolation_value = opt_prop_def(FloatAttr[Float64Type])
    result = result_def(AnyTensor)

    traits = traits_def(NoMemoryEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$input $mode $coordinate_transformation_mode `scales` $scales attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        shape: Sequence[int],
        how: Interpolation,
        scales: Sequence[float],
        roi: Sequence[float] | None = None,
    ):
        input = SSAValue.get(input)
        properties: dict = {
            "mode": StringAttr(how.mode),
            "coordinate_transformation_mode": StringAttr(how.coordinates),
            "scales": DenseArrayBase.from_list(f64, [float(s) for s in scales]),
        }
        if how.mode == "nearest" and how.nearest_mode != "round_prefer_floor":
            properties["nearest_mode"] = StringAttr(how.nearest_mode)
        if how.mode == "cubic" and how.cubic_a != -0.75:
            properties["cubic_coeff_a"] = FloatAttr(how.cubic_a, f64)
        if how.exclude_outside:
            properties["exclude_outside"] = UnitAttr()
        if how.antialias:
            properties["antialias"] = UnitAttr()
        if how.coordinates == "tf_crop_and_resize":
            if how.extrapolation_value != 0.0:
                properties["extrapolation_value"] = FloatAttr(how.extrapolation_value, f64)
            if roi is not None:
                properties["roi"] = DenseArrayBase.from_list(f64, [float(r) for r in roi])
        super().__init__(
            operands=[input],
            properties=properties,
            result_types=[tensor_type_like(input.type, tuple(shape))],
        )

    @property
    def interpolation(self) -> Interpolation:
        def text(attr: StringAttr | None, default: str) -> str:
            return default if attr is None else attr.data

        def number(attr: FloatAttr | None, default: float) -> float:
            return default if attr is None else float(attr.value.data)

        return Interpolation(
            mode=self.mode.data,
            coordinates=self.coordinate_transformation_mode.data,
            nearest_mode=text(self.nearest_mode, "round_prefer_floor"),
            cubic_a=number(self.cubic_coeff_a, -0.75),
            exclude_outside=self.exclude_outside is not None,
            antialias=self.antialias is not None,
            extrapolation_value=number(self.extrapolation_value, 0.0),
        )

    @property
    def axis_scales(self) -> list[float]:
        return [float(s) for s in self.scales.get_values()]

    @property
    def axis_rois(self) -> list[tuple[float, float]]:
        """The (start, end) of every axis, (0, 1) without a roi."""
        rank = len(static_shape(self.input))
        if self.roi is None:
            return [(0.0, 1.0)] * rank
        values = [float(r) for r in self.roi.get_values()]
        return [(values[d], values[d + rank]) for d in range(rank)]

    def resized_axes(self) -> list[tuple[int, Taps]]:
        """Every axis that the resize changes, with its taps, in order."""
        return resized_axes(
            static_shape(self.input),
            static_shape(self.result),
            self.interpolation,
            self.axis_scales,
            self.axis_rois,
        )

    def verify_(self) -> None:
        super().verify_()
        how = self.interpolation
        for what, value, allowed in (
            ("mode", how.mode, RESIZE_MODES),
            ("coordinate_transformation_mode", how.coordinates, COORDINATE_MODES),
            ("nearest_mode", how.nearest_mode, NEAREST_MODES),
        ):
            if value not in allowed:
                raise VerifyException(
                    f"'{self.name}' {what} must be one of {', '.join(allowed)}, got '{value}'"
                )
        if how.mode != "nearest" and not isinstance(element_type(self.input), AnyFloat):
            raise VerifyException(
                f"'{self.name}' {how.mode} mode needs a float tensor, got {self.input.type}"
            )
        if how.antialias and how.mode == "nearest":
            raise VerifyException(f"'{self.name}' antialias applies to linear and cubic modes only")
        in_shape, out_shape = static_shape(self.input), static_shape(self.result)
        rank = len(in_shape)
        if len(out_shape) != rank:
            raise VerifyException(
                f"'{self.name}' result rank {len(out_shape)} differs from input rank {rank}"
            )
        scales = self.axis_scales
        if len(scales) != rank or any(not (s > 0 and math.isfinite(s)) for s in scales):
            raise VerifyException(
                f"'{self.name}' scales must be {rank} positive numbers, got {scales}"
            )
        if self.roi is not None and len(self.roi.get_values()) != 2 * rank:
            raise VerifyException(
                f"'{self.name}' roi must hold a start and an end for each of {rank} axes"
            )
        for axis, (in_size, out_size, scale) in enumerate(zip(in_shape, out_shape, scales)):
            if in_size == 0 and out_size != 0:
                raise VerifyException(f"'{self.name}' cannot resize the empty axis {axis}")
            if abs(out_size - scale * in_size) >= 1 + 1e-6 * out_size:
                raise VerifyException(
                    f"'{self.name}' axis {axis} of size {in_size} at scale {scale} cannot "
                    f"have {out_size} outputs"
                )

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        result = resize_reference(
            np.asarray(inputs[0]),
            static_shape(self.result),
            self.interpolation,
            self.axis_scales,
            self.axis_rois,
        )
        return [np.asarray(result, dtype=numpy_dtype(self.result.type))]


OPS = (ResizeOp,)

__all__ = [
    "COORDINATE_MODES",
    "Interpolation",
    "NEAREST_MODES",
    "RESIZE_MODES",
    "ResizeOp",
    "Taps",
    "axis_taps",
    "resize_axis",
    "resize_reference",
    "resized_axes",
]
