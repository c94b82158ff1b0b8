"""Converter for ONNX GridSample: a composition of element-wise graph ops and one
graph.gather_elements per interpolation tap.

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
from xdsl.dialects.builtin import AnyFloat, i64
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
    return [_combine(ctx, a, x, per_dim, n, channels, sizes, out_sizes)]


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


__all__: Sequence[str] = ["convert_grid_sample"]
