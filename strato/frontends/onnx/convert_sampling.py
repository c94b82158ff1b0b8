"""Converters for ONNX GridSample, DeformConv and RoiAlign: compositions of element-wise
graph ops and one graph.gather_elements per interpolation tap (DeformConv then a
graph.matmul, RoiAlign a reduction over each bin's samples; see their converters).

GridSample reads X [N, C, D_1 .. D_r] at the positions a grid [N, O_1 .. O_r, r] gives
in normalized coordinates (its last axis lists them innermost dimension first, x then
y). Every spatial dimension is independent until the taps are combined, so each is
computed on its own, as ONNX's reference does it:

1. the coordinate is denormalized (`align_corners`), rounded half to even for
   `nearest`, and brought back inside the border by `padding_mode` (clamped for
   `border`, reflected for `reflection`) when it lies outside;
2. it gives its taps: one (nearest), two (linear) or four (cubic, Keys' kernel with
   a = -0.75) pixel indices with their weights; a tap outside the tensor reads 0
   (`zeros`), the nearest edge pixel (`border`) or its reflection (`reflection`).

The output sums, over every combination of one tap per dimension, the product of the
weights times the pixel X[n, c, i_1 .. i_r], read as graph.gather_elements of X
flattened to [N, C, D_1 * .. * D_r] at the flat index of the taps:

    GridSample(X: [1, 1, 4, 4], grid: [1, 6, 6, 2], mode="linear")
        -> 4 x graph.gather_elements(X as [1, 1, 16], index [1, 1, 36]), weighted and
           added, reshaped to [1, 1, 6, 6]

The grid is a run-time value (the positions are data), so nothing is folded at import
time beyond the constants of the coordinate arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product

import numpy as np
from xdsl.dialects.builtin import AnyFloat, BFloat16Type, Float16Type, f32, i64
from xdsl.ir import SSAValue

from strato.dialects import graph
from strato.dialects.graph.base import element_type
from strato.dialects.tensor_types import numpy_dtype
from strato.frontends.onnx.conversion import ImportedValue, NodeContext

GRID_SAMPLE_MODES = {
    "nearest": "nearest",
    "linear": "linear",
    "bilinear": "linear",
    "cubic": "cubic",
    "bicubic": "cubic",
}
"""ONNX's mode names (opset 16 says bilinear and bicubic, opset 20 linear and cubic)
-> the interpolation they name."""

PADDING_MODES = ("zeros", "border", "reflection")

CUBIC_A = -0.75
"""The cubic convolution parameter of GridSample (PyTorch's, fixed by ONNX)."""


@dataclass(frozen=True)
class _Tap:
    """One pixel index along one dimension: its index (i64), its weight (None for 1)
    and, for `zeros` padding, whether it lies inside the tensor (i1)."""

    index: SSAValue
    weight: SSAValue | None
    inside: SSAValue | None


class _Arithmetic:
    """Emits the element-wise ops of the coordinate arithmetic, on tensors of the
    grid's float type (scalars become 0-d constants)."""

    def __init__(self, ctx: NodeContext, dtype: np.dtype):
        self.ctx = ctx
        self.dtype = dtype

    def const(self, value: float, dtype: np.dtype | None = None) -> SSAValue:
        array = np.array(value, dtype=dtype or self.dtype)
        return self.ctx.materialize(array)

    def _operand(self, value: SSAValue | float) -> SSAValue:
        return value if isinstance(value, SSAValue) else self.const(value)

    def binary(
        self, op_class, lhs: SSAValue | float, rhs: SSAValue | float
    ) -> SSAValue:
        op = op_class(self._operand(lhs), self._operand(rhs))
        return self.ctx.emit(op).results[0]

    def add(self, lhs, rhs):
        return self.binary(graph.AddOp, lhs, rhs)

    def sub(self, lhs, rhs):
        return self.binary(graph.SubOp, lhs, rhs)

    def mul(self, lhs, rhs):
        return self.binary(graph.MulOp, lhs, rhs)

    def div(self, lhs, rhs):
        return self.binary(graph.DivOp, lhs, rhs)

    def less(self, lhs, rhs):
        return self.binary(graph.LessOp, lhs, rhs)

    def greater(self, lhs, rhs):
        return self.binary(graph.GreaterOp, lhs, rhs)

    def clamp(self, x: SSAValue, low: float, high: float) -> SSAValue:
        return self.binary(graph.MinimumOp, self.binary(graph.MaximumOp, x, low), high)

    def floor(self, x: SSAValue) -> SSAValue:
        return self.ctx.emit(graph.FloorOp(x)).results[0]

    def where(
        self, condition: SSAValue, then: SSAValue, otherwise: SSAValue
    ) -> SSAValue:
        return self.ctx.emit(graph.WhereOp(condition, then, otherwise)).results[0]

    def outside(self, x: SSAValue, low: float, high: float) -> SSAValue:
        return self.binary(graph.OrOp, self.less(x, low), self.greater(x, high))

    def reflect(self, x: SSAValue, low: float, high: float) -> SSAValue:
        """x reflected by the nearer border until it lies in [low, high] (values inside
        are left as they are): the distance past the border, folded by the range, is
        measured from the border crossed an even number of times."""
        below = self.less(x, low)
        distance = self.where(below, self.sub(low, x), self.sub(x, high))
        span = high - low
        folds = self.floor(self.div(distance, span))
        rest = self.sub(distance, self.mul(folds, span))
        odd = self.binary(
            graph.EqualOp, self.binary(graph.ModOp, folds, 2.0), self.const(1.0)
        )
        from_low, from_high = self.add(rest, low), self.sub(high, rest)
        even_value = self.where(below, from_low, from_high)
        odd_value = self.where(below, from_high, from_low)
        reflected = self.where(odd, odd_value, even_value)
        return self.where(self.outside(x, low, high), reflected, x)

    def to_index(self, x: SSAValue) -> SSAValue:
        return self.ctx.emit(graph.CastOp(x, i64)).results[0]


def _cubic_weights(a: _Arithmetic, t: SSAValue) -> list[SSAValue]:
    """Keys' cubic convolution weights of the taps at distances t + 1, t, 1 - t, 2 - t
    (t in [0, 1)), written as ONNX's reference writes them."""
    alpha = CUBIC_A

    def outer(s: SSAValue) -> SSAValue:  # ((A s - 5A) s + 8A) s - 4A, for 1 <= s < 2
        inner = a.add(a.mul(a.sub(a.mul(s, alpha), 5 * alpha), s), 8 * alpha)
        return a.sub(a.mul(inner, s), 4 * alpha)

    def center(s: SSAValue) -> SSAValue:  # ((A + 2) s - (A + 3)) s s + 1, for s < 1
        inner = a.sub(a.mul(s, alpha + 2), alpha + 3)
        return a.add(a.mul(a.mul(inner, s), s), 1.0)

    one_minus = a.sub(1.0, t)
    return [outer(a.add(t, 1.0)), center(t), center(one_minus), outer(a.sub(2.0, t))]


def _taps(
    a: _Arithmetic,
    x: SSAValue,
    size: int,
    mode: str,
    padding: str,
    border: tuple[float, float],
) -> list[_Tap]:
    """The taps of one dimension of `size` pixels at the (adjusted) coordinates x."""
    if mode == "nearest":
        starts, weights = [x], [None]
    else:
        base = a.floor(x)
        t = a.sub(x, base)
        if mode == "linear":
            starts, weights = [base, a.add(base, 1.0)], [a.sub(1.0, t), t]
        else:
            starts = [a.add(base, float(k)) for k in (-1, 0, 1, 2)]
            weights = _cubic_weights(a, t)
    taps = []
    for start, weight in zip(starts, weights):
        inside = None
        if padding == "zeros":
            inside = a.binary(
                graph.AndOp,
                a.binary(graph.GreaterEqualOp, start, 0.0),
                a.less(start, float(size)),
            )
            position = a.clamp(start, 0.0, float(size - 1))
        elif padding == "border":
            position = a.clamp(start, 0.0, float(size - 1))
        else:
            # truncated toward zero as the reference's int(), then inside [0, size - 1]
            position = a.clamp(a.reflect(start, *border), 0.0, float(size - 1))
        taps.append(_Tap(a.to_index(position), weight, inside))
    return taps


def _coordinate(
    a: _Arithmetic, component: SSAValue, size: int, align_corners: bool
) -> SSAValue:
    """A normalized grid coordinate in [-1, 1] as a pixel coordinate."""
    shifted = a.add(component, 1.0)
    if align_corners:
        return a.mul(a.div(shifted, 2.0), float(size - 1))
    return a.div(a.sub(a.mul(shifted, float(size)), 1.0), 2.0)


def convert_grid_sample(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX GridSample -> element-wise graph ops and graph.gather_elements (see the module
    docstring)."""
    x_shape, grid_shape = ctx.shape(0), ctx.shape(1)
    rank = len(x_shape) - 2
    if rank < 1:
        raise ctx.error(f"X of shape {list(x_shape)} must have rank 3 or more")
    if (
        len(grid_shape) != rank + 2
        or grid_shape[0] != x_shape[0]
        or grid_shape[-1] != rank
    ):
        raise ctx.error(
            f"grid of shape {list(grid_shape)} must be [{x_shape[0]}, ..{rank} output "
            f"sizes.., {rank}] for X of shape {list(x_shape)}"
        )
    mode_name = ctx.attr("mode", "linear" if ctx.opset() >= 20 else "bilinear")
    mode = GRID_SAMPLE_MODES.get(mode_name)
    if mode is None:
        raise ctx.error(
            f"mode '{mode_name}' is not one of {', '.join(GRID_SAMPLE_MODES)}"
        )
    padding = ctx.attr("padding_mode", "zeros")
    if padding not in PADDING_MODES:
        raise ctx.error(
            f"padding_mode '{padding}' is not one of {', '.join(PADDING_MODES)}"
        )
    align_corners = ctx.flag_attr("align_corners")
    x, grid = ctx.operand(0), ctx.operand(1)
    if not isinstance(element_type(grid), AnyFloat):
        raise ctx.error("grid must be a float tensor")
    if mode != "nearest" and not isinstance(element_type(x), AnyFloat):
        raise ctx.error(f"{mode} interpolation of an integer X is not supported")
    n, channels, sizes = x_shape[0], x_shape[1], x_shape[2:]
    out_sizes = list(grid_shape[1:-1])
    if 0 in x_shape or 0 in out_sizes:
        raise ctx.error("GridSample of an empty tensor is not supported")
    # Coordinates, weights and sums of 16-bit floats are computed in f32: rounded to
    # bfloat16 at each step they lost a third of a cubic sample's value.
    result_type = element_type(x)
    if isinstance(element_type(grid), _HALF_FLOATS):
        grid = ctx.emit(graph.CastOp(grid, f32)).results[0]
    if isinstance(result_type, _HALF_FLOATS):
        x = ctx.emit(graph.CastOp(x, f32)).results[0]
    a = _Arithmetic(ctx, numpy_dtype(grid.type))
    per_dim: list[list[_Tap]] = []
    for dim, size in enumerate(sizes):
        component = rank - 1 - dim  # the grid lists x (the innermost dimension) first
        starts = [0] * len(grid_shape)
        starts[-1] = component
        sliced = ctx.emit(
            graph.SliceOp(grid, starts, [1] * len(grid_shape), [*grid_shape[:-1], 1])
        ).results[0]
        values = ctx.emit(graph.ReshapeOp(sliced, grid_shape[:-1])).results[0]
        coordinate = _coordinate(a, values, size, align_corners)
        if mode == "nearest":
            coordinate = ctx.emit(graph.RoundOp(coordinate)).results[0]
        border = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
        if padding == "border":
            clamped = a.clamp(coordinate, 0.0, float(size - 1))
            coordinate = a.where(a.outside(coordinate, *border), clamped, coordinate)
        elif padding == "reflection":
            coordinate = a.reflect(coordinate, *border)
        per_dim.append(_taps(a, coordinate, size, mode, padding, border))
    result = _combine(ctx, a, x, per_dim, n, channels, sizes, out_sizes)
    if element_type(result) != result_type:
        result = ctx.emit(graph.CastOp(result, result_type)).results[0]
    return [result]


_HALF_FLOATS = (Float16Type, BFloat16Type)


def _combine(
    ctx: NodeContext,
    a: _Arithmetic,
    x: SSAValue,
    per_dim: list[list[_Tap]],
    n: int,
    channels: int,
    sizes: Sequence[int],
    out_sizes: Sequence[int],
) -> SSAValue:
    """The sum over the tap combinations of weight times the pixel they index."""
    points = math.prod(out_sizes)
    flat_x = ctx.emit(graph.ReshapeOp(x, [n, channels, math.prod(sizes)])).results[0]
    strides = [math.prod(sizes[d + 1 :]) for d in range(len(sizes))]
    x_dtype = numpy_dtype(x.type)
    total: SSAValue | None = None
    for combination in product(*per_dim):
        flat_index: SSAValue | None = None
        weight: SSAValue | None = None
        inside: SSAValue | None = None
        for tap, stride in zip(combination, strides):
            term = tap.index
            if stride != 1:
                term = a.mul(term, a.const(stride, np.dtype(np.int64)))
            flat_index = term if flat_index is None else a.add(flat_index, term)
            if tap.weight is not None:
                weight = tap.weight if weight is None else a.mul(weight, tap.weight)
            if tap.inside is not None:
                inside = (
                    tap.inside
                    if inside is None
                    else a.binary(graph.AndOp, inside, tap.inside)
                )
        assert flat_index is not None
        index = ctx.emit(graph.ReshapeOp(flat_index, [n, 1, points])).results[0]
        index = ctx.emit(graph.BroadcastToOp(index, [n, channels, points])).results[0]
        pixels = ctx.emit(graph.GatherElementsOp(flat_x, index, 2)).results[0]
        if inside is not None:
            inside = ctx.emit(graph.ReshapeOp(inside, [n, 1, points])).results[0]
            zero = a.const(0, x_dtype)
            pixels = a.where(inside, pixels, zero)
        if weight is not None:
            if weight.type.element_type != x.type.element_type:
                weight = ctx.emit(graph.CastOp(weight, x.type.element_type)).results[0]
            weight = ctx.emit(graph.ReshapeOp(weight, [n, 1, points])).results[0]
            pixels = a.mul(pixels, weight)
        total = pixels if total is None else a.add(total, pixels)
    assert total is not None
    return ctx.emit(graph.ReshapeOp(total, [n, channels, *out_sizes])).results[0]


def convert_deform_conv(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX DeformConv (2-D) -> bilinear samples of X gathered as GridSample's are, then
    a matrix product with the weights: kernel tap k of output pixel (i, j) reads X at
    (-pad + stride * (i, j) + dilation * k + its offset), bilinearly, 0 outside X, times
    its mask; the samples [N, C * kH * kW, oH * oW] of each group are multiplied by the
    group's weights [oC / group, C / group * kH * kW] (graph.matmul), plus the bias.

        DeformConv(X: [1, 1, 3, 3], W: [1, 1, 2, 2], offset: [1, 8, 2, 2])
            -> 4 taps x graph.gather_elements, graph.matmul -> [1, 1, 2, 2]
    """
    x_shape, w_shape, offset_shape = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    if len(x_shape) != 4 or len(w_shape) != 4 or len(offset_shape) != 4:
        raise ctx.error("only 2-D DeformConv (X, W and offset of rank 4) is supported")
    n, channels, height, width = x_shape
    out_channels, group_channels, kh, kw = w_shape
    kernel = [int(k) for k in ctx.attr("kernel_shape", [kh, kw])]
    if kernel != [kh, kw]:
        raise ctx.error(f"kernel_shape {kernel} is not the weight's [{kh}, {kw}]")
    group = int(ctx.attr("group", 1))
    offset_group = int(ctx.attr("offset_group", 1))
    strides = [int(s) for s in ctx.attr("strides", [1, 1])]
    dilations = [int(d) for d in ctx.attr("dilations", [1, 1])]
    pads = [int(p) for p in ctx.attr("pads", [0, 0, 0, 0])]
    if group < 1 or channels != group_channels * group or out_channels % group:
        raise ctx.error(
            f"X of {channels} channels and W of shape {list(w_shape)} do not make {group} groups"
        )
    taps = kh * kw
    if (
        offset_group < 1
        or channels % offset_group
        or offset_shape[:2] != (n, offset_group * 2 * taps)
    ):
        raise ctx.error(
            f"offset of shape {list(offset_shape)} must be [{n}, {offset_group * 2 * taps}, "
            f"oH, oW] for {offset_group} offset groups of {channels} channels"
        )
    out_h, out_w = offset_shape[2:]
    for size, k, stride, dilation, low, high, out in (
        (height, kh, strides[0], dilations[0], pads[0], pads[2], out_h),
        (width, kw, strides[1], dilations[1], pads[1], pads[3], out_w),
    ):
        if out != (size + low + high - (k - 1) * dilation - 1) // stride + 1:
            raise ctx.error(
                f"offset of shape {list(offset_shape)} does not match the output size"
            )
    x, offset = ctx.operand(0), ctx.operand(2)
    if not isinstance(element_type(x), AnyFloat):
        raise ctx.error("X must be a float tensor")
    a = _Arithmetic(ctx, numpy_dtype(offset.type))
    points = taps * out_h * out_w
    kernel_h, kernel_w = np.meshgrid(np.arange(kh), np.arange(kw), indexing="ij")
    rows, columns = np.arange(out_h), np.arange(out_w)
    base = [
        (
            -pads[0]
            + strides[0] * rows[None, :, None]
            + dilations[0] * kernel_h.reshape(-1, 1, 1)
        )
        + np.zeros((1, 1, out_w)),
        (
            -pads[1]
            + strides[1] * columns[None, None, :]
            + dilations[1] * kernel_w.reshape(-1, 1, 1)
        )
        + np.zeros((1, out_h, 1)),
    ]
    group_size = channels // offset_group
    samples = []
    for g in range(offset_group):
        per_dim = []
        for dim, size in enumerate((height, width)):
            sliced = ctx.emit(
                graph.SliceOp(
                    offset,
                    [0, g * 2 * taps + dim, 0, 0],
                    [1, 2, 1, 1],
                    [n, taps, out_h, out_w],
                )
            ).results[0]
            flat = ctx.emit(graph.ReshapeOp(sliced, [n, points])).results[0]
            start = ctx.materialize(base[dim].reshape(1, points).astype(a.dtype))
            coordinate = a.add(flat, start)
            per_dim.append(
                _taps(a, coordinate, size, "linear", "zeros", (0.0, size - 1.0))
            )
        x_group = ctx.emit(
            graph.SliceOp(
                x,
                [0, g * group_size, 0, 0],
                [1, 1, 1, 1],
                [n, group_size, height, width],
            )
        ).results[0]
        sampled = _combine(
            ctx, a, x_group, per_dim, n, group_size, (height, width), [points]
        )
        if ctx.has_input(4):
            mask = ctx.operand(4)
            sliced = ctx.emit(
                graph.SliceOp(
                    mask, [0, g * taps, 0, 0], [1, 1, 1, 1], [n, taps, out_h, out_w]
                )
            ).results[0]
            mask_g = ctx.emit(graph.ReshapeOp(sliced, [n, 1, points])).results[0]
            sampled = a.mul(sampled, mask_g)
        samples.append(sampled)
    columns_value = (
        samples[0]
        if len(samples) == 1
        else ctx.emit(graph.ConcatOp(samples, 1)).results[0]
    )
    # [N, C, kH * kW * oH * oW] -> [N, C * kH * kW, oH * oW]
    columns_value = ctx.emit(
        graph.ReshapeOp(columns_value, [n, channels * taps, out_h * out_w])
    ).results[0]
    weights = ctx.operand(1)
    outputs = []
    per_group_out = out_channels // group
    for g in range(group):
        w_g = ctx.emit(
            graph.SliceOp(
                weights,
                [g * per_group_out, 0, 0, 0],
                [1, 1, 1, 1],
                [per_group_out, group_channels, kh, kw],
            )
        ).results[0]
        w_g = ctx.emit(
            graph.ReshapeOp(w_g, [per_group_out, group_channels * taps])
        ).results[0]
        cols_g = columns_value
        if group > 1:
            cols_g = ctx.emit(
                graph.SliceOp(
                    columns_value,
                    [0, g * group_channels * taps, 0],
                    [1, 1, 1],
                    [n, group_channels * taps, out_h * out_w],
                )
            ).results[0]
        outputs.append(ctx.emit(graph.MatmulOp(w_g, cols_g)).results[0])
    result = (
        outputs[0] if group == 1 else ctx.emit(graph.ConcatOp(outputs, 1)).results[0]
    )
    if ctx.has_input(3):
        bias = ctx.emit(graph.ReshapeOp(ctx.operand(3), [1, out_channels, 1])).results[
            0
        ]
        result = a.add(result, bias)
    return [
        ctx.emit(graph.ReshapeOp(result, [n, out_channels, out_h, out_w])).results[0]
    ]


ROI_ALIGN_COORDINATES = {"half_pixel": 0.5, "output_half_pixel": 0.0}
"""RoiAlign's coordinate modes -> the offset subtracted from the scaled roi corners."""


def convert_roi_align(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX RoiAlign with a fixed sampling_ratio S -> bilinear gathers as ONNX's reference
    computes them: roi r (run-time corners, scaled and shifted by the coordinate mode)
    is cut into output_height x output_width bins of S x S samples at the sample
    centres; a sample outside [-1, size] reads 0, others are clamped into X and
    interpolated from their 4 neighbours (gathered from X[batch_indices[r]]); a bin
    is the mean of its samples (`avg`) or the maximum of their weighted neighbours
    (`max`, the reference's definition). sampling_ratio 0 (a sample count decided by
    each roi's size at run time) is a diagnostic.

        RoiAlign(X: [1, 1, 10, 10], rois: [3, 4], idx: [3], 5 x 5, S=2)
            -> 4 x graph.gather_elements of [3, 1, 10 * 10 * 4], graph.reduce_sum
               -> [3, 1, 5, 5]
    """
    x_shape, rois_shape = ctx.shape(0), ctx.shape(1)
    if len(x_shape) != 4:
        raise ctx.error(f"X of shape {list(x_shape)} must be [N, C, H, W]")
    rois_count = rois_shape[0] if len(rois_shape) == 2 else -1
    if len(rois_shape) != 2 or rois_shape[1] != 4 or ctx.shape(2) != (rois_count,):
        raise ctx.error(
            f"rois of shape {list(rois_shape)} and batch_indices of shape "
            f"{list(ctx.shape(2))} must be [R, 4] and [R]"
        )
    sampling = int(ctx.attr("sampling_ratio", 0))
    if sampling <= 0:
        raise ctx.error(
            "sampling_ratio 0 (samples per bin decided by each roi at run time) is not "
            "supported; set a positive sampling_ratio"
        )
    mode = ctx.attr("mode", "avg")
    if mode not in ("avg", "max"):
        raise ctx.error(f"mode '{mode}' is not one of avg, max")
    default_coordinates = "half_pixel" if ctx.opset() >= 16 else "output_half_pixel"
    coordinates = ctx.attr("coordinate_transformation_mode", default_coordinates)
    if coordinates not in ROI_ALIGN_COORDINATES:
        raise ctx.error(
            f"coordinate_transformation_mode '{coordinates}' is not one of "
            f"{', '.join(ROI_ALIGN_COORDINATES)}"
        )
    half_pixel = coordinates == "half_pixel"
    out_h, out_w = int(ctx.attr("output_height", 1)), int(ctx.attr("output_width", 1))
    scale = ctx.float_attr("spatial_scale", 1.0)
    x, rois = ctx.operand(0), ctx.operand(1)
    if not isinstance(element_type(x), AnyFloat) or element_type(x) != element_type(
        rois
    ):
        raise ctx.error("X and rois must be float tensors of one element type")
    n, channels, height, width = x_shape
    a = _Arithmetic(ctx, numpy_dtype(x.type))
    sizes = (height, width)
    per_dim = []  # (low index, high index, low weight, high weight) along y, then x
    for dim, (size, bins) in enumerate(zip(sizes, (out_h, out_w))):
        column = 1 - dim  # rois are [x1, y1, x2, y2]
        corners = []
        for start_column in (column, column + 2):
            sliced = ctx.emit(
                graph.SliceOp(rois, [0, start_column], [1, 1], [rois_count, 1])
            )
            shifted = a.sub(
                a.mul(sliced.results[0], scale), ROI_ALIGN_COORDINATES[coordinates]
            )
            corners.append(shifted)
        extent = a.sub(corners[1], corners[0])
        if not half_pixel:
            extent = a.binary(graph.MaximumOp, extent, 1.0)
        bin_size = a.div(extent, float(bins))
        steps = (
            np.arange(bins)[:, None] + (np.arange(sampling)[None, :] + 0.5) / sampling
        )
        steps_value = ctx.materialize(steps.reshape(1, -1).astype(a.dtype))
        y = a.add(corners[0], a.mul(bin_size, steps_value))  # [R, bins * S]
        valid = a.binary(
            graph.AndOp,
            a.binary(graph.GreaterEqualOp, y, -1.0),
            a.binary(graph.LessEqualOp, y, float(size)),
        )
        clipped = a.binary(graph.MaximumOp, y, 0.0)
        low = a.floor(clipped)
        at_edge = a.binary(graph.GreaterEqualOp, low, float(size - 1))
        last = a.const(float(size - 1))
        low = a.where(at_edge, last, low)
        high = a.where(at_edge, last, a.add(low, 1.0))
        clipped = a.where(at_edge, low, clipped)
        high_weight = a.sub(clipped, low)
        low_weight = a.sub(1.0, high_weight)
        zero = a.const(0.0)
        low_weight = a.where(valid, low_weight, zero)
        high_weight = a.where(valid, high_weight, zero)
        # y varies along axes 1, 2 of [R, out_h, S, out_w, S]; x along axes 3, 4
        shape = (
            [rois_count, out_h, sampling, 1, 1]
            if dim == 0
            else [rois_count, 1, 1, out_w, sampling]
        )

        def spread(value: SSAValue, shape=shape) -> SSAValue:
            return ctx.emit(graph.ReshapeOp(value, shape)).results[0]

        per_dim.append(
            (
                spread(a.to_index(low)),
                spread(a.to_index(high)),
                spread(low_weight),
                spread(high_weight),
            )
        )
    points = out_h * sampling * out_w * sampling
    flat_x = ctx.emit(graph.ReshapeOp(x, [n, channels, height * width])).results[0]
    indices = ctx.operand(2)
    if indices.type.element_type != i64:
        indices = ctx.emit(graph.CastOp(indices, i64)).results[0]
    roi_x = ctx.emit(graph.GatherOp(flat_x, indices, 0)).results[0]  # [R, C, H * W]
    grid_shape = [rois_count, out_h, sampling, out_w, sampling]
    combined: SSAValue | None = None
    for y_index, y_weight in (
        (per_dim[0][0], per_dim[0][2]),
        (per_dim[0][1], per_dim[0][3]),
    ):
        for x_index, x_weight in (
            (per_dim[1][0], per_dim[1][2]),
            (per_dim[1][1], per_dim[1][3]),
        ):
            flat = a.add(a.mul(y_index, a.const(width, np.dtype(np.int64))), x_index)
            flat = ctx.emit(graph.BroadcastToOp(flat, grid_shape)).results[0]
            flat = ctx.emit(graph.ReshapeOp(flat, [rois_count, 1, points])).results[0]
            flat = ctx.emit(
                graph.BroadcastToOp(flat, [rois_count, channels, points])
            ).results[0]
            pixels = ctx.emit(graph.GatherElementsOp(roi_x, flat, 2)).results[0]
            weight = ctx.emit(
                graph.BroadcastToOp(a.mul(y_weight, x_weight), grid_shape)
            ).results[0]
            weight = ctx.emit(graph.ReshapeOp(weight, [rois_count, 1, points])).results[
                0
            ]
            term = a.mul(pixels, weight)
            if combined is None:
                combined = term
            elif mode == "avg":
                combined = a.add(combined, term)
            else:
                combined = a.binary(graph.MaximumOp, combined, term)
    assert combined is not None
    samples = ctx.emit(
        graph.ReshapeOp(
            combined, [rois_count, channels, out_h, sampling, out_w, sampling]
        )
    ).results[0]
    if mode == "max":
        return [ctx.emit(graph.ReduceMaxOp(samples, [3, 5])).results[0]]
    total = ctx.emit(graph.ReduceSumOp(samples, [3, 5])).results[0]
    return [a.div(total, float(sampling * sampling))]


__all__: Sequence[str] = [
    "convert_deform_conv",
    "convert_grid_sample",
    "convert_roi_align",
]
