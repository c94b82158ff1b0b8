"""Strategy of graph.resize: per resized axis, small tables over the axis' output
positions, computed from the position index, and one stage that interpolates with them.

    Resize(x: [1, 3, 4, 4] -> [1, 3, 8, 8], linear, half_pixel), axis 2:
      %p = te.compute "resize_positions" (%t, %o) : tensor<2x8xi64>
             c = (float(o) + 0.5) / 2.0 - 0.5;  left = floor(c) (c - 1 when whole)
             clamp(left + t, 0, 3)
      %w = te.compute "resize_weights" (%t, %o) : tensor<2x8xf32>
             r = c - left;  [1 - r, r][t]  (Keys' kernel for cubic)
      %r = te.compute "resize" (%i, %j, %l, %m) : tensor<1x3x8x4xf32>
             x[i, j, p[0, l], m] * w[0, l] + x[i, j, p[1, l], m] * w[1, l]
    then the same for axis 3, reading %r.

The tables hold out_size x taps elements, so the coordinate arithmetic runs once per
output position of the axis rather than once per output element (te-inline-stages
keeps a stage smaller than its consumer), and the interpolating stage is reads,
products and sums, as fast as a gather. Coordinates and weights are computed in f64
with the operations of the reference semantics (`graph.resize`'s `axis_taps`) in the
same order, so nearest positions round as the reference rounds them; each weight is
rounded once to the element type and the taps are accumulated in that type in order,
as the reference does. tf_crop_and_resize adds an i1 table of the positions outside
the input, which take the extrapolation value. An axis the resize leaves as it is gets
no stages; a resize that changes no axis is a copy.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IndexType, f64, i1, i64
from xdsl.ir import Attribute, Operation, SSAValue

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


class _AxisPoint:
    """What the reference knows of one output position o along an axis: its source
    coordinate, left neighbour, fraction, and (tf_crop_and_resize) whether it falls
    outside the input."""

    def __init__(self, m: _AxisMath, op: graph.ResizeOp, axis: int, in_size: int,
                 out_size: int, o: SSAValue):
        s = m.s
        how = op.interpolation
        self.source, self.outside = source_coordinate(
            m, how, o, in_size, out_size, op.axis_scales[axis], op.axis_rois[axis]
        )
        down = m.floor(self.source)
        self.whole = s.cmp("eq", self.source, down)
        self.left = m.to_index(s.sub(down, s.select(self.whole, m.const(1.0), m.const(0.0))))
        self.fraction = s.select(self.whole, m.const(1.0), s.sub(self.source, down))


def _nearest_goes_right(m: _AxisMath, how: Interpolation, point: _AxisPoint) -> SSAValue:
    """Whether nearest mode reads left + 1 rather than left (always when whole)."""
    s = m.s
    if how.nearest_mode == "ceil":
        return s.const(True, point.whole.type)
    if how.nearest_mode == "floor":
        return point.whole
    predicate = "gt" if how.nearest_mode == "round_prefer_floor" else "ge"
    above = s.cmp(predicate, point.fraction, m.const(0.5))
    return _append(s, arith.OrIOp(above, point.whole))


def _tap_weights(
    m: _AxisMath, how: Interpolation, scale: float, in_size: int, point: _AxisPoint
) -> list[SSAValue]:
    """The f64 weight of every tap of the kernel, in offset order (normalised when
    antialiasing, zero outside the input and renormalised with exclude_outside)."""
    s = m.s
    offsets = how.tap_offsets(scale)
    stretch = how.stretch(scale)
    weights = []
    for offset in offsets:
        distance = s.sub(m.const(float(offset)), point.fraction)
        if stretch != 1.0:
            distance = s.mul(distance, m.const(stretch))
        weights.append(_kernel(m, how, distance))
    if how.antialias:
        weights = _normalised(m, weights)
    if how.exclude_outside:
        zero = m.const(0.0)
        for n, offset in enumerate(offsets):
            position = s.index_add(point.left, s.index(offset))
            below = s.index_cmp("slt", position, s.index(0))
            above = s.index_cmp("sge", position, s.index(in_size))
            weights[n] = s.select(_append(s, arith.OrIOp(below, above)), zero, weights[n])
        weights = _normalised(m, weights)
    return weights


def _pick(s: ScalarBuilder, t: SSAValue, values: list[SSAValue]) -> SSAValue:
    """values[t] for an index t known to be in range."""
    picked = values[-1]
    for n in range(len(values) - 2, -1, -1):
        picked = s.select(s.index_cmp("eq", t, s.index(n)), values[n], picked)
    return picked


def _axis_tables(
    pb: PrimitiveBuilder, op: graph.ResizeOp, axis: int, in_size: int, out_size: int,
    dtype: Attribute,
) -> tuple[SSAValue, SSAValue | None, SSAValue | None]:
    """The tables of one axis, over its output positions o: the input position each tap
    t reads, [taps, out] (i64, clamped into the axis); the taps' weights in the element
    type, [taps, out] (linear and cubic); whether o is outside the input, [out] (i1,
    tf_crop_and_resize)."""
    how = op.interpolation
    scale = op.axis_scales[axis]
    offsets = how.tap_offsets(scale)
    taps = len(offsets)

    def point(s: ScalarBuilder, o: SSAValue) -> tuple[_AxisMath, _AxisPoint]:
        m = _AxisMath(s)
        return m, _AxisPoint(m, op, axis, in_size, out_size, o)

    def position(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        m, at = point(s, idx[1])
        if how.mode == "nearest":
            right = _nearest_goes_right(m, how, at)
            read = s.index_add(at.left, s.index_select(right, s.index(1), s.index(0)))
        else:
            read = s.index_add(at.left, s.index_add(idx[0], s.index(offsets[0])))
        clamped = index_clamp(s, read, 0, in_size - 1)
        return _append(s, arith.IndexCastOp(clamped, i64))

    def weight(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        m, at = point(s, idx[1])
        value = _pick(s, idx[0], _tap_weights(m, how, scale, in_size, at))
        element = scalar_type(dtype)
        return value if element == f64 else _append(s, arith.TruncFOp(value, element))

    def outside(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        _, at = point(s, idx[0])
        assert at.outside is not None
        return at.outside

    positions = pb.compute("resize_positions", [taps, out_size], position, i64)
    weights = None
    if how.mode != "nearest":
        weights = pb.compute("resize_weights", [taps, out_size], weight, dtype)
    extrapolated = None
    if how.coordinates == "tf_crop_and_resize":
        extrapolated = pb.compute("resize_outside", [out_size], outside, i1)
    return positions, weights, extrapolated


def _interpolate_axis(
    pb: PrimitiveBuilder, op: graph.ResizeOp, x: SSAValue, axis: int, out_size: int
) -> SSAValue:
    """x resized along `axis`: sum over taps t of x[.., positions[t, o], ..] *
    weights[t, o], accumulated in the element type in tap order, or the extrapolation
    value where o is outside the input."""
    in_size = shape_of(x)[axis]
    out_shape = list(shape_of(x))
    out_shape[axis] = out_size
    dtype = element_type_of(x)
    positions, weights, outside = _axis_tables(pb, op, axis, in_size, out_size, dtype)
    taps = shape_of(positions)[0]
    fill = op.interpolation.extrapolation_value

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        o = idx[axis]
        total: SSAValue | None = None
        for t in range(taps):
            where = _append(s, arith.IndexCastOp(s.read(positions, [s.index(t), o]), IndexType()))
            term = s.read(x, [*idx[:axis], where, *idx[axis + 1 :]])
            if weights is not None:
                term = s.mul(term, s.read(weights, [s.index(t), o]))
            total = term if total is None else s.add(total, term)
        assert total is not None
        if outside is not None:
            total = s.select(s.read(outside, [o]), s.const(fill), total)
        return total

    return pb.compute("resize", out_shape, body, dtype)


@strategy(graph.ResizeOp)
def resize(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """Per axis the resize changes, its tables and one interpolating stage (see the
    module docstring)."""
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
