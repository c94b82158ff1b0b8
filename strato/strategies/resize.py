"""Strategy of graph.resize: one stage per resized axis, each computing, from its output
index along the axis, the input coordinate, the positions it reads and their weights.

    Resize(x: [1, 3, 4, 4] -> [1, 3, 8, 8], linear, half_pixel)
      %r = te.compute "resize" (%i, %j, %l, %m) : tensor<1x3x8x4xf32>     (axis 2)
             c = (float(l) + 0.5) / 2.0 - 0.5;  left = floor(c) (c - 1 when whole)
             r = c - left;  x[i, j, clamp(left), m] * (1 - r) + x[i, j, clamp(left + 1), m] * r
      %s = te.compute "resize_1" (%i, %j, %l, %m) : tensor<1x3x8x8xf32>   (axis 3, reads %r)

Coordinates and weights are computed in f64 with the operations of the reference
semantics (`graph.resize`'s `axis_taps`) in the same order, so the rounding of nearest
positions agrees with it exactly; each weight is rounded once to the element type and
the taps are accumulated in that type in order, as the reference does. An axis the
resize leaves as it is gets no stage; a resize that changes no axis is a copy.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IndexType, f64, i64
from xdsl.ir import Operation, SSAValue

from strato.dialects import graph
from strato.dialects.graph.resize import Interpolation
from strato.dialects.tensor_types import scalar_type
from strato.strategies import strategy
from strato.strategies.builder import (
    PrimitiveBuilder,
    ScalarBuilder,
    element_type_of,
    shape_of,
)
from strato.strategies.layout import index_clamp


def _append(s: ScalarBuilder, op: Operation) -> SSAValue:
    s.block.add_op(op)
    return op.results[0]


class _AxisMath:
    """f64 arithmetic for one stage body (the stage's own type may be narrower)."""

    def __init__(self, s: ScalarBuilder):
        self.s = s

    def const(self, value: float) -> SSAValue:
        return self.s.const(float(value), f64)

    def from_index(self, value: SSAValue) -> SSAValue:
        as_int = _append(self.s, arith.IndexCastOp(value, i64))
        return _append(self.s, arith.SIToFPOp(as_int, f64))

    def to_index(self, value: SSAValue) -> SSAValue:
        as_int = _append(self.s, arith.FPToSIOp(value, i64))
        return _append(self.s, arith.IndexCastOp(as_int, IndexType()))

    def floor(self, value: SSAValue) -> SSAValue:
        return _append(self.s, math.FloorOp(value))


def source_coordinate(
    m: _AxisMath, how: Interpolation, o: SSAValue, in_size: int, out_size: int,
    scale: float, roi: tuple[float, float],
) -> tuple[SSAValue, SSAValue | None]:
    """The input coordinate of output position `o` (f64), and for tf_crop_and_resize
    whether it falls outside the input (i1): `source_coordinates` of the reference,
    operation for operation."""
    s = m.s
    x = m.from_index(o)
    width = scale * in_size
    mode = how.coordinates
    if mode == "align_corners":
        if width == 1:
            return m.const(0.0), None
        return s.div(s.mul(x, m.const(in_size - 1)), m.const(width - 1)), None
    if mode == "asymmetric":
        return s.div(x, m.const(scale)), None
    if mode == "tf_crop_and_resize":
        start, end = roi
        if width == 1:
            source = m.const((end - start) * (in_size - 1) / 2)
        else:
            stretched = s.mul(s.mul(x, m.const(end - start)), m.const(in_size - 1))
            source = s.div(stretched, m.const(width - 1))
        source = s.add(source, m.const(start * (in_size - 1)))
        below = s.cmp("lt", source, m.const(0.0))
        above = s.cmp("gt", source, m.const(in_size - 1))
        return source, _append(s, arith.OrIOp(below, above))
    if mode == "pytorch_half_pixel" and out_size == 1:
        return m.const(0.0), None
    centred = s.div(s.add(x, m.const(0.5)), m.const(scale))
    if mode == "half_pixel_symmetric":
        offset = in_size / 2 * (1 - out_size / width)
        centred = s.add(m.const(offset), centred)
    return s.sub(centred, m.const(0.5)), None


def _kernel(m: _AxisMath, how: Interpolation, distance: SSAValue) -> SSAValue:
    """The linear or cubic kernel at `distance` (f64)."""
    s = m.s
    d = s.abs(distance)
    if how.mode == "linear":
        return s.max(s.min(s.sub(m.const(1.0), d), m.const(1.0)), m.const(0.0))
    a = how.cubic_a
    near = s.add(
        s.mul(s.mul(s.sub(s.mul(m.const(a + 2), d), m.const(a + 3)), d), d), m.const(1.0)
    )
    inner = s.add(s.mul(s.sub(s.mul(m.const(a), d), m.const(5 * a)), d), m.const(8 * a))
    far = s.sub(s.mul(inner, d), m.const(4 * a))
    within_two = s.select(s.cmp("lt", d, m.const(2.0)), far, m.const(0.0))
    return s.select(s.cmp("le", d, m.const(1.0)), near, within_two)


def _normalised(m: _AxisMath, weights: list[SSAValue]) -> list[SSAValue]:
    s = m.s
    total = weights[0]
    for weight in weights[1:]:
        total = s.add(total, weight)
    return [s.div(weight, total) for weight in weights]


def _interpolate_axis(
    pb: PrimitiveBuilder, op: graph.ResizeOp, x: SSAValue, axis: int, out_size: int
) -> SSAValue:
    how = op.interpolation
    in_size = shape_of(x)[axis]
    scale, roi = op.axis_scales[axis], op.axis_rois[axis]
    out_shape = list(shape_of(x))
    out_shape[axis] = out_size
    dtype = element_type_of(x)

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        m = _AxisMath(s)
        source, outside = source_coordinate(m, how, idx[axis], in_size, out_size, scale, roi)
        down = m.floor(source)
        whole = s.cmp("eq", source, down)
        left = m.to_index(s.sub(down, s.select(whole, m.const(1.0), m.const(0.0))))
        fraction = s.select(whole, m.const(1.0), s.sub(source, down))

        def read_at(position: SSAValue) -> SSAValue:
            clamped = index_clamp(s, position, 0, in_size - 1)
            return s.read(x, [*idx[:axis], clamped, *idx[axis + 1 :]])

        if how.mode == "nearest":
            right = _nearest_goes_right(m, how, whole, fraction)
            step = s.index_select(right, s.index(1), s.index(0))
            value = read_at(s.index_add(left, step))
        else:
            value = _weighted_taps(m, how, scale, in_size, left, fraction, read_at)
        if outside is not None:
            value = s.select(outside, s.const(how.extrapolation_value), value)
        return value

    return pb.compute("resize", out_shape, body, dtype)


def _nearest_goes_right(
    m: _AxisMath, how: Interpolation, whole: SSAValue, fraction: SSAValue
) -> SSAValue:
    """Whether nearest mode reads left + 1 rather than left (always when whole)."""
    s = m.s
    if how.nearest_mode == "ceil":
        return s.const(True, whole.type)
    if how.nearest_mode == "floor":
        return whole
    predicate = "gt" if how.nearest_mode == "round_prefer_floor" else "ge"
    return _append(s, arith.OrIOp(s.cmp(predicate, fraction, m.const(0.5)), whole))


def _weighted_taps(m, how, scale, in_size, left, fraction, read_at) -> SSAValue:
    """sum over the kernel's offsets i of x[clamp(left + i)] * w_i, accumulated in the
    element type in offset order."""
    s = m.s
    offsets = how.tap_offsets(scale)
    stretch = how.stretch(scale)
    weights = []
    for offset in offsets:
        distance = s.sub(m.const(float(offset)), fraction)
        if stretch != 1.0:
            distance = s.mul(distance, m.const(stretch))
        weights.append(_kernel(m, how, distance))
    if how.antialias:
        weights = _normalised(m, weights)
    positions = [s.index_add(left, s.index(offset)) for offset in offsets]
    if how.exclude_outside:
        zero = m.const(0.0)
        for n, position in enumerate(positions):
            below = s.index_cmp("slt", position, s.index(0))
            above = s.index_cmp("sge", position, s.index(in_size))
            outside = _append(s, arith.OrIOp(below, above))
            weights[n] = s.select(outside, zero, weights[n])
        weights = _normalised(m, weights)
    element = scalar_type(s.element_type)
    total: SSAValue | None = None
    for position, weight in zip(positions, weights):
        if element != f64:
            weight = _append(s, arith.TruncFOp(weight, element))
        term = s.mul(read_at(position), weight)
        total = term if total is None else s.add(total, term)
    assert total is not None
    return total


@strategy(graph.ResizeOp)
def resize(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """One interpolating stage per axis the resize changes (see the module docstring)."""
    assert isinstance(op, graph.ResizeOp)
    (x,) = inputs
    out_shape = shape_of(op.results[0])
    dtype = element_type_of(x)
    if 0 in out_shape:
        return [pb.compute("resize", out_shape, lambda s, idx: s.const(0), dtype)]
    value = x
    for axis, _ in op.resized_axes():
        value = _interpolate_axis(pb, op, value, axis, out_shape[axis])
    if value is x:
        return [pb.compute("resize", out_shape, lambda s, idx: s.read(x, idx), dtype)]
    return [value]
