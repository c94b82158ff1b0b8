"""Strategies of convolution and pooling operators (channel-first layouts).

A padded window never reads outside its input: a "pad" stage first copies the input
into a larger tensor (reading with a clamped index and selecting the pad value outside
the input), and the reduction then reads the padded tensor at plain affine indices
o * stride + k * dilation. That keeps the reduction's inner loop a load, a multiply and
an add, which LLVM vectorizes and strength-reduces, at the cost of one copy of the
input; unpadded windows read their input directly. Reduction axes of extent 1 (a
depthwise convolution's channel axis, a 1x1 kernel) are dropped.

    graph.conv (padding [1, 1, 1, 1], bias)  ->  pad -> conv (sum over c, kh, kw) -> bias_add
    graph.conv_transpose                      ->  conv_transpose (gather form) -> bias_add
    graph.max_pool                            ->  [pad with -inf] -> max_pool (max over kh, kw)
    graph.max_pool_with_indices               ->  .. max_pool -> max_pool_tap (first tap equal
                                                  to the max) -> max_pool_indices
    graph.avg_pool                            ->  [pad] -> avg_pool_sum -> [window_count] -> avg_pool
    graph.global_avg_pool                     ->  global_avg_pool_sum -> global_avg_pool

A transposed convolution is computed in gather form, one output element at a time:
output o receives input i through tap k when o + pad_begin - k * dilation = i * stride,
so each tap tests that the difference is a multiple of the stride inside the input
(the test folds to a range check for stride 1). No output is scattered into.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import AnyFloat, IndexType, i64
from xdsl.ir import Operation, SSAValue

from strato.dialects import graph, te
from strato.dialects.graph import lowest_value
from strato.dialects.tensor_types import numpy_dtype
from strato.strategies import strategy
from strato.strategies.builder import (
    PrimitiveBuilder,
    ScalarBuilder,
    element_type_of,
    shape_of,
)

# -- index arithmetic the scalar builder does not offer ----------------------------------


def _append(s: ScalarBuilder, op: Operation) -> SSAValue:
    s.block.add_op(op)
    return op.results[0]


def _and(s: ScalarBuilder, lhs: SSAValue | None, rhs: SSAValue) -> SSAValue:
    """lhs && rhs on i1, where a missing lhs is true."""
    return rhs if lhs is None else _append(s, arith.AndIOp(lhs, rhs))


def _div(s: ScalarBuilder, value: SSAValue, divisor: int) -> SSAValue:
    """value / divisor for a non-negative index value."""
    return value if divisor == 1 else _append(s, arith.DivUIOp(value, s.index(divisor)))


def _rem(s: ScalarBuilder, value: SSAValue, divisor: int) -> SSAValue:
    """value mod divisor for a non-negative index value."""
    return s.index(0) if divisor == 1 else _append(s, arith.RemUIOp(value, s.index(divisor)))


def _scaled(s: ScalarBuilder, value: SSAValue, factor: int) -> SSAValue:
    return value if factor == 1 else s.index_mul(value, s.index(factor))


def _offset(s: ScalarBuilder, value: SSAValue, offset: int) -> SSAValue:
    return value if offset == 0 else s.index_add(value, s.index(offset))


def _below(s: ScalarBuilder, value: SSAValue, bound: int) -> SSAValue:
    """0 <= value < bound, as one unsigned comparison (a negative index is huge)."""
    return s.index_cmp("ult", value, s.index(bound))


def _window_position(
    s: ScalarBuilder, out: SSAValue, tap: SSAValue | None, stride: int, dilation: int
) -> SSAValue:
    """out * stride + tap * dilation (tap None is tap 0)."""
    position = _scaled(s, out, stride)
    if tap is None:
        return position
    return s.index_add(position, _scaled(s, tap, dilation))


class ReductionAxes:
    """The reduction axes of a window stage with the extent-1 axes dropped: `axes(k)`
    maps the stage's reduction arguments back to one index (or None for 0) per axis."""

    def __init__(self, extents: Sequence[int]):
        self.extents = list(extents)
        self.kept = [n for n, e in enumerate(extents) if e > 1] or [0]

    @property
    def stage_extents(self) -> list[int]:
        return [self.extents[n] for n in self.kept]

    def axes(self, args: Sequence[SSAValue]) -> list[SSAValue | None]:
        result: list[SSAValue | None] = [None] * len(self.extents)
        for n, arg in zip(self.kept, args, strict=True):
            result[n] = arg
        return result


def _index_or_zero(s: ScalarBuilder, value: SSAValue | None) -> SSAValue:
    return s.index(0) if value is None else value


# -- shared stages --------------------------------------------------------------------


def pad_stage(
    pb: PrimitiveBuilder,
    x: SSAValue,
    pads_begin: Sequence[int],
    extents: Sequence[int],
    value: float,
) -> SSAValue:
    """x [N, C, X.., inner..] placed at offset `pads_begin` in a tensor of spatial
    `extents`, `value` elsewhere; `x` itself when that is the identity. The axes after
    the spatial ones (a blocked tensor's channel block) are copied as they are."""
    shape = shape_of(x)
    rank = len(pads_begin)
    sizes, inner = shape[2 : 2 + rank], shape[2 + rank :]
    if tuple(extents) == tuple(sizes) and not any(pads_begin):
        return x

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        inside: SSAValue | None = None
        source = list(idx[:2])
        for d, (begin, size, extent) in enumerate(zip(pads_begin, sizes, extents)):
            position = idx[2 + d]
            if begin == 0 and extent == size:
                source.append(position)
                continue
            shifted = position if begin == 0 else s.index_sub(position, s.index(begin))
            in_bounds = _below(s, shifted, size)
            inside = _and(s, inside, in_bounds)
            source.append(s.index_select(in_bounds, shifted, s.index(0)))
        source.extend(idx[2 + rank :])
        element = s.read(x, source)
        assert inside is not None
        return s.select(inside, element, s.const(value))

    return pb.compute("pad", (*shape[:2], *extents, *inner), body, element_type_of(x))


def bias_stage(pb: PrimitiveBuilder, acc: SSAValue, bias: SSAValue) -> SSAValue:
    """acc[n, m, ..] + bias[m]."""
    return pb.compute(
        "bias_add",
        shape_of(acc),
        lambda s, idx: s.add(s.read(acc, idx), s.read(bias, [idx[1]])),
        element_type_of(acc),
    )


# -- convolution ----------------------------------------------------------------------


def conv_window_reads(
    s: ScalarBuilder,
    idx: Sequence[SSAValue],
    reduction: Sequence[SSAValue | None],
    xp: SSAValue,
    w: SSAValue,
    groups: int,
    strides: Sequence[int],
    dilations: Sequence[int],
) -> tuple[SSAValue, SSAValue]:
    """A convolution's (input, weight) pair at output position `idx` (n, m, spatial...)
    and reduction position (input channel in the group, taps...): the padded input `xp`
    read at the window position, the weights `w` [M, C/groups, taps...] at the tap."""
    n, m, outs = idx[0], idx[1], idx[2:]
    c, *taps = reduction
    w_shape = shape_of(w)
    per_group_in, per_group_out = w_shape[1], w_shape[0] // groups
    if groups == 1:
        channel = _index_or_zero(s, c)
    else:
        channel = _group_channel(s, m, c, per_group_out, per_group_in)
    positions = [
        _window_position(s, o, tap, stride, dilation)
        for o, tap, stride, dilation in zip(outs, taps, strides, dilations)
    ]
    a = s.read(xp, [n, channel, *positions])
    b = s.read(w, [m, _index_or_zero(s, c), *(_index_or_zero(s, t) for t in taps)])
    return a, b


def _group_channel(
    s: ScalarBuilder, m: SSAValue, c: SSAValue | None, per_group_out: int, per_group_in: int
) -> SSAValue:
    """The input channel g * per_group_in + c of output channel m, g = m / per_group_out."""
    group = _div(s, m, per_group_out)
    base = _scaled(s, group, per_group_in)
    return base if c is None else s.index_add(base, c)


@strategy(graph.ConvOp)
def conv(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[n, m, o..] = sum_{c, k..} x'[n, g*Cg + c, o*stride + k*dilation ..] * w[m, c, k..]
    (+ bias[m]), x' the zero-padded input, g = m / (M / groups)."""
    assert isinstance(op, graph.ConvOp)
    x, w = inputs[0], inputs[1]
    dtype = element_type_of(x)
    out_shape = shape_of(op.results[0])
    x_shape, w_shape = shape_of(x), shape_of(w)
    groups = op.group_count
    per_group_in = w_shape[1]
    strides, dilations = op.stride_values, op.dilation_values
    padded_sizes = [
        size + begin + end for size, begin, end in zip(x_shape[2:], op.pads_begin, op.pads_end)
    ]
    xp = pad_stage(pb, x, op.pads_begin, padded_sizes, 0)
    axes = ReductionAxes([per_group_in, *w_shape[2:]])

    def product(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        return s.mul(*conv_window_reads(s, idx, axes.axes(k), xp, w, groups, strides, dilations))

    result = pb.reduce("conv", te.ReduceKind.SUM, out_shape, axes.stage_extents, product, dtype)
    if len(inputs) > 2:
        result = bias_stage(pb, result, inputs[2])
    return [result]


@strategy(graph.ConvTransposeOp)
def conv_transpose(
    pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    """result[n, m, o..] = sum_{c, k..} [o + pad_begin - k*dilation = i*stride, 0 <= i < X]
    x[n, g*Cg + c, i..] * w[g*Cg + c, m mod Mg, k..] (+ bias[m]), g = m / Mg."""
    assert isinstance(op, graph.ConvTransposeOp)
    x, w = inputs[0], inputs[1]
    dtype = element_type_of(x)
    out_shape = shape_of(op.results[0])
    x_shape, w_shape = shape_of(x), shape_of(w)
    groups = op.group_count
    per_group_in, per_group_out = x_shape[1] // groups, w_shape[1]
    strides, dilations = op.stride_values, op.dilation_values
    axes = ReductionAxes([per_group_in, *w_shape[2:]])

    def product(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        n, m, outs = idx[0], idx[1], idx[2:]
        c, *taps = axes.axes(k)
        if groups == 1:
            channel, out_channel = _index_or_zero(s, c), m
        else:
            channel = _group_channel(s, m, c, per_group_out, per_group_in)
            out_channel = s.index(0) if per_group_out == 1 else _rem(s, m, per_group_out)
        valid: SSAValue | None = None
        sources = []
        for d, (o, tap) in enumerate(zip(outs, taps)):
            # t = o + pad_begin - tap * dilation must be i * stride with 0 <= i < X
            t = _offset(s, o, op.pads_begin[d])
            if tap is not None:
                t = s.index_sub(t, _scaled(s, tap, dilations[d]))
            hit = _below(s, t, (x_shape[2 + d] - 1) * strides[d] + 1)
            if strides[d] > 1:
                # t is only used once it is known to be non-negative
                phase = _rem(s, s.index_select(hit, t, s.index(0)), strides[d])
                hit = _and(s, hit, s.index_cmp("eq", phase, s.index(0)))
            valid = _and(s, valid, hit)
            sources.append(_div(s, s.index_select(hit, t, s.index(0)), strides[d]))
        a = s.read(x, [n, channel, *sources])
        b = s.read(w, [channel, out_channel, *(_index_or_zero(s, t) for t in taps)])
        assert valid is not None
        return s.select(valid, s.mul(a, b), s.const(0))

    result = pb.reduce(
        "conv_transpose", te.ReduceKind.SUM, out_shape, axes.stage_extents, product, dtype
    )
    if len(inputs) > 2:
        result = bias_stage(pb, result, inputs[2])
    return [result]


# -- pooling --------------------------------------------------------------------------


def pool_reduce(
    pb: PrimitiveBuilder,
    op: graph.PoolOp | graph.BlockedPoolOp,
    stage: str,
    kind: te.ReduceKind,
    padded: SSAValue,
    init: float | None = None,
) -> SSAValue:
    """The reduction of each window of `padded` (laid out as `op.padded_extents`, or as
    the padded extents of its NCHW equivalent for a blocked pool: the axes after the
    spatial ones are read as they are)."""
    axes = ReductionAxes(op.kernel_shape)
    rank = len(op.kernel_shape)

    def read_tap(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        taps = axes.axes(k)
        positions = [
            _window_position(s, o, tap, stride, dilation)
            for o, tap, stride, dilation in zip(idx[2:], taps, op.stride_values, op.dilation_values)
        ]
        return s.read(padded, [idx[0], idx[1], *positions, *idx[2 + rank :]])

    return pb.reduce(
        stage,
        kind,
        shape_of(op.results[0]),
        axes.stage_extents,
        read_tap,
        element_type_of(padded),
        init,
    )


@strategy(graph.MaxPoolOp)
def max_pool(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[n, c, o..] = max_k x'[n, c, o*stride + k*dilation ..], x' padded with the
    lowest value of the element type (-inf)."""
    assert isinstance(op, graph.MaxPoolOp)
    (x,) = inputs
    lowest = lowest_value(numpy_dtype(element_type_of(x)))
    padded = pad_stage(pb, x, op.pads_begin, op.padded_extents(), lowest)
    return [pool_reduce(pb, op, "max_pool", te.ReduceKind.MAX, padded, init=lowest)]


@strategy(graph.MaxPoolWithIndicesOp)
def max_pool_with_indices(
    pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    """The max pool, then argmax[n, c, o..] = min over taps t (numbered in row-major
    order) inside the input with x'[.., o*stride + k(t)*dilation ..] == max[n, c, o..],
    so the first tap of equal maxima wins; indices = the flat input index of that tap."""
    assert isinstance(op, graph.MaxPoolWithIndicesOp)
    (x,) = inputs
    lowest = lowest_value(numpy_dtype(element_type_of(x)))
    padded = pad_stage(pb, x, op.pads_begin, op.padded_extents(), lowest)
    best = pool_reduce(pb, op, "max_pool", te.ReduceKind.MAX, padded, init=lowest)
    tap = _first_max_tap_stage(pb, op, padded, best)
    return [best, _flat_index_stage(pb, op, tap)]


def _tap_strides(kernel: Sequence[int]) -> list[int]:
    """The row-major strides of the tap numbering t = sum_d k_d * stride_d."""
    strides = [1] * len(kernel)
    for d in range(len(kernel) - 2, -1, -1):
        strides[d] = strides[d + 1] * kernel[d + 1]
    return strides


def _first_max_tap_stage(
    pb: PrimitiveBuilder, op: graph.MaxPoolWithIndicesOp, padded: SSAValue, best: SSAValue
) -> SSAValue:
    """tap[n, c, o..] (i64) = the smallest tap number t whose element is inside the input
    and equals best[n, c, o..]; the tap count when there is none."""
    kernel = op.kernel_shape
    axes = ReductionAxes(kernel)
    tap_strides = _tap_strides(kernel)
    sizes = shape_of(op.input)[2:]
    tap_count = int(np.prod(kernel))

    def first_tap(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        taps = axes.axes(k)
        number: SSAValue | None = None
        inside: SSAValue | None = None
        positions = []
        for d, (o, tap) in enumerate(zip(idx[2:], taps)):
            position = _window_position(s, o, tap, op.stride_values[d], op.dilation_values[d])
            positions.append(position)
            begin = op.pads_begin[d]
            shifted = position if begin == 0 else s.index_sub(position, s.index(begin))
            inside = _and(s, inside, _below(s, shifted, sizes[d]))
            if tap is not None:
                term = _scaled(s, tap, tap_strides[d])
                number = term if number is None else s.index_add(number, term)
        value = s.read(padded, [idx[0], idx[1], *positions])
        hit = s.cmp("eq", value, s.read(best, idx))
        if isinstance(value.type, AnyFloat):
            # a NaN maximum is matched by the window's first NaN
            hit = _append(s, arith.OrIOp(hit, _append(s, arith.CmpfOp(value, value, "uno"))))
        matches = _and(s, inside, hit)
        candidate = _append(s, arith.IndexCastOp(_index_or_zero(s, number), i64))
        return s.select(matches, candidate, s.const(tap_count))

    return pb.reduce(
        "max_pool_tap",
        te.ReduceKind.MIN,
        shape_of(best),
        axes.stage_extents,
        first_tap,
        i64,
        init=tap_count,
    )


def _flat_index_stage(
    pb: PrimitiveBuilder, op: graph.MaxPoolWithIndicesOp, tap: SSAValue
) -> SSAValue:
    """indices[n, c, o..] (i64) = (n * C + c) * (X0 * X1 * ..) + the position
    o*stride - pad_begin + k*dilation of tap tap[n, c, o..] in row- or column-major
    order."""
    kernel = op.kernel_shape
    tap_strides = _tap_strides(kernel)
    x_shape = shape_of(op.input)
    sizes = x_shape[2:]
    if op.is_column_major:
        position_strides = [int(np.prod(sizes[:d])) for d in range(len(sizes))]
    else:
        position_strides = [int(np.prod(sizes[d + 1 :])) for d in range(len(sizes))]

    def flat_index(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        number = _append(s, arith.IndexCastOp(s.read(tap, idx), IndexType()))
        channel = s.index_add(_scaled(s, idx[0], x_shape[1]), idx[1])
        flat = _scaled(s, channel, int(np.prod(sizes)))
        for d, o in enumerate(idx[2:]):
            k = _rem(s, _div(s, number, tap_strides[d]), kernel[d])
            position = _window_position(s, o, k, op.stride_values[d], op.dilation_values[d])
            if op.pads_begin[d]:
                position = s.index_sub(position, s.index(op.pads_begin[d]))
            flat = s.index_add(flat, _scaled(s, position, position_strides[d]))
        return _append(s, arith.IndexCastOp(flat, i64))

    return pb.compute("max_pool_indices", shape_of(tap), flat_index, i64)


@strategy(graph.AvgPoolOp)
def avg_pool(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[n, c, o..] = sum_k x'[n, c, o*stride + k*dilation ..] / count(o..), x'
    zero-padded. count is a constant when every window counts the same taps, else a
    small stage over the output's spatial positions."""
    assert isinstance(op, graph.AvgPoolOp)
    (x,) = inputs
    padded = pad_stage(pb, x, op.pads_begin, op.padded_extents(), 0)
    total = pool_reduce(pb, op, "avg_pool_sum", te.ReduceKind.SUM, padded)
    return [window_average(pb, "avg_pool", total, op)]


def window_average(
    pb: PrimitiveBuilder, stage: str, total: SSAValue, pool: graph.AvgPoolOp
) -> SSAValue:
    """total[n, c, o.., inner..] / count(o..), the number of taps `pool` counts in window
    o..: a constant when every window counts the same taps, else a small stage over
    the output's spatial positions."""
    out_shape, dtype = shape_of(total), element_type_of(total)
    rank = pool.spatial_rank
    counts = pool.window_counts()
    if np.all(counts == counts.flat[0]):
        count = float(counts.flat[0])
        return pb.compute(
            stage, out_shape, lambda s, idx: s.div(s.read(total, idx), s.const(count)), dtype
        )
    window_count = _window_count_stage(pb, pool)
    return pb.compute(
        stage,
        out_shape,
        lambda s, idx: s.div(s.read(total, idx), s.read(window_count, idx[2 : 2 + rank])),
        dtype,
    )


def _window_count_stage(pb: PrimitiveBuilder, op: graph.AvgPoolOp) -> SSAValue:
    """count[o..] = the number of taps of window o.. inside the counted range."""
    axes = ReductionAxes(op.kernel_shape)
    ranges = [op.counted_range(d) for d in range(op.spatial_rank)]

    def counted(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        inside: SSAValue | None = None
        for d, tap in enumerate(axes.axes(k)):
            position = _window_position(s, idx[d], tap, op.stride_values[d], op.dilation_values[d])
            begin, end = ranges[d]
            shifted = position if begin == 0 else s.index_sub(position, s.index(begin))
            inside = _and(s, inside, _below(s, shifted, end - begin))
        assert inside is not None
        return s.select(inside, s.const(1), s.const(0))

    return pb.reduce(
        "window_count",
        te.ReduceKind.SUM,
        op.output_sizes(),
        axes.stage_extents,
        counted,
        element_type_of(op.input),
    )


@strategy(graph.GlobalAvgPoolOp)
def global_avg_pool(
    pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    """result[n, c, 0..] = sum_{x..} input[n, c, x..] / (X0 * X1 * ..)."""
    assert isinstance(op, graph.GlobalAvgPoolOp)
    (x,) = inputs
    return [spatial_mean(pb, "global_avg_pool", x, op.spatial_rank)]


def spatial_mean(pb: PrimitiveBuilder, stage: str, x: SSAValue, rank: int) -> SSAValue:
    """result[n, c, 0.., inner..] = sum_{x..} x[n, c, x.., inner..] / (X0 * X1 * ..), over
    the `rank` spatial axes after N and C; the axes after them (a blocked tensor's
    channel block) are kept as they are."""
    dtype = element_type_of(x)
    shape = shape_of(x)
    spatial_shape, inner = shape[2 : 2 + rank], shape[2 + rank :]
    out_shape = (*shape[:2], *([1] * rank), *inner)
    axes = ReductionAxes(spatial_shape)

    def read(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        spatial = [_index_or_zero(s, a) for a in axes.axes(k)]
        return s.read(x, [idx[0], idx[1], *spatial, *idx[2 + rank :]])

    total = pb.reduce(
        f"{stage}_sum", te.ReduceKind.SUM, out_shape, axes.stage_extents, read, dtype
    )
    size = float(np.prod(spatial_shape))
    return pb.compute(
        stage, out_shape, lambda s, idx: s.div(s.read(total, idx), s.const(size)), dtype
    )
