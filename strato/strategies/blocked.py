"""Strategies of the blocked-layout operators (NCHW{c}) and of layout transforms.

The stages mirror those of the NCHW operators (strato/strategies/nn.py): a padded
window reads a "pad" stage, and the window reduction then reads plain affine indices.
What changes is the innermost axis: a blocked tensor keeps a block of channels
contiguous, so a convolution's reduction runs over (input-channel block, kh, kw,
channel in block), reading the input contiguously in its innermost loop, and its weight
[M/bo, C/bi, KH, KW, bi, bo] keeps the block of output channels that one output block
needs together.

    graph.layout_transform   ->  layout_transform (a gather: div/mod only where blocks differ)
    graph.blocked_conv       ->  [pad] -> blocked_conv (sum over C/bi, kh, kw, bi) -> [bias_add]
    graph.blocked_max_pool   ->  [pad with the lowest value] -> blocked_max_pool
    graph.blocked_avg_pool   ->  [pad] -> blocked_avg_pool_sum -> [window_count] -> blocked_avg_pool
    graph.blocked_global_avg_pool -> blocked_global_avg_pool_sum -> blocked_global_avg_pool
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

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
from strato.strategies.nn import (
    ReductionAxes,
    _div,
    _index_or_zero,
    _offset,
    _rem,
    _scaled,
    _window_position,
    pad_stage,
    pool_reduce,
    spatial_mean,
    window_average,
)


# -- layout_transform -----------------------------------------------------------------


@strategy(graph.LayoutTransformOp)
def layout_transform(
    pb: PrimitiveBuilder, op: graph.LayoutTransformOp, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    """result[i..] = x[j..]: each primal axis's position, outer * block + inner in the
    destination layout, split again by the source layout's block (or copied as it is
    where both layouts block the axis alike)."""
    (x,) = inputs
    source, target = op.source, op.target
    source_letters = [a for a, _ in source.axes]
    target_letters = [a for a, _ in target.axes]

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        indices: list[SSAValue | None] = [None] * source.rank
        for primal in target.primal_axes:
            inner = primal.lower()
            outer_index = idx[target.position(primal)]
            inner_index = idx[target.position(inner)] if inner in target_letters else None
            source_block = source.block(primal)
            if source.block(primal) == target.block(primal) and (inner in source_letters) == (
                inner_index is not None
            ):
                indices[source.position(primal)] = outer_index
                if inner_index is not None:
                    indices[source.position(inner)] = inner_index
                continue
            if source_block == target.block(primal) == 1:
                # a block of one is a unit axis (NCHW1c holds NCHW's bytes): the same
                # position, with a zero index for the unit axis when the source has it
                indices[source.position(primal)] = outer_index
                if inner in source_letters:
                    indices[source.position(inner)] = s.index(0)
                continue
            position = _scaled(s, outer_index, target.block(primal))
            if inner_index is not None:
                position = s.index_add(position, inner_index)
            indices[source.position(primal)] = _div(s, position, source_block)
            if inner in source_letters:
                indices[source.position(inner)] = _rem(s, position, source_block)
        assert all(i is not None for i in indices)
        return s.read(x, indices)  # type: ignore[arg-type]

    return [pb.compute("layout_transform", shape_of(op.result), body, element_type_of(x))]


# -- windows on blocked tensors -----------------------------------------------------------


MAX_UNROLLED_BLOCK = 1
"""Input-channel blocks up to this size are summed inside a convolution's stage body
(a tree of adds) instead of by a reduction loop. At 1 the channels of a block are a
reduction loop, which the NCHW{c} schedule runs inside the register tile: each step
loads one weight vector and broadcasts one input per column, and updates every
accumulator once with independent FMAs (a tree in the body becomes one serial chain of
FMAs per accumulator, which leaves the FMA units waiting: 0.54x -> 0.87x onnxruntime on
ResNet-18's C6 layer, single thread)."""

MAX_UNROLLED_WINDOW = 25
"""Depthwise windows up to this many taps (5x5) are summed inside the stage body."""


def _tree_sum(s: ScalarBuilder, terms: list[SSAValue]) -> SSAValue:
    """terms[0] + terms[1] + ..., added pairwise so that the additions are independent."""
    while len(terms) > 1:
        pairs = [s.add(terms[i], terms[i + 1]) for i in range(0, len(terms) - 1, 2)]
        terms = pairs + ([terms[-1]] if len(terms) % 2 else [])
    return terms[0]


@strategy(graph.BlockedConvOp)
def blocked_conv(
    pb: PrimitiveBuilder, op: graph.BlockedConvOp, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    """result[n, M, oh, ow, m] = sum_{C, kh, kw, c} x'[n, g*Cg + C, oh*sh + kh*dh,
    ow*sw + kw*dw, c] * w[M, C, kh, kw, c, m] (+ bias[M * bo + m]), x' the zero-padded
    input and g the group of output block M; depthwise: sum_{kh, kw}
    x'[n, M, .., m] * w[M, 0, kh, kw, 0, m]."""
    x, w = inputs[0], inputs[1]
    out_shape = shape_of(op.result)
    x_shape = shape_of(x)
    padded = [size + b + e for size, b, e in zip(x_shape[2:4], op.pads_begin, op.pads_end)]
    xp = pad_stage(pb, x, op.pads_begin, padded, 0)
    if op.is_depthwise:
        result = _depthwise_reduction(pb, op, xp, w)
    else:
        result = _blocked_reduction(pb, op, xp, w)
    if len(inputs) > 2:
        bias, block = inputs[2], op.out_block
        acc = result

        def add_bias(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
            channel = s.index_add(_scaled(s, idx[1], block), idx[4])
            return s.add(s.read(acc, idx), s.read(bias, [channel]))

        result = pb.compute("bias_add", out_shape, add_bias, element_type_of(x))
    return [result]


def _window_positions(
    s: ScalarBuilder, op: graph.BlockedConvOp, oh: SSAValue, ow: SSAValue, kh, kw
) -> list[SSAValue]:
    return [
        _window_position(s, o, tap, stride, dilation)
        for o, tap, stride, dilation in zip(
            (oh, ow), (kh, kw), op.stride_values, op.dilation_values
        )
    ]


def _blocked_reduction(
    pb: PrimitiveBuilder, op: graph.BlockedConvOp, xp: SSAValue, w: SSAValue
) -> SSAValue:
    """The sum over (input block, kh, kw) of the products of one input-channel block,
    added in the body when the block is small (`MAX_UNROLLED_BLOCK`)."""
    w_shape, out_shape = shape_of(w), shape_of(op.result)
    blocks = op.kernel_blocks
    in_block = blocks.in_block
    unrolled = in_block <= MAX_UNROLLED_BLOCK
    axes = ReductionAxes([w_shape[1], w_shape[2], w_shape[3], 1 if unrolled else in_block])
    groups = op.group_count
    # output blocks per group: the blocks tile the groups
    out_blocks_per_group = out_shape[1] // groups

    def weight_index(s, mo, cb, kh, kw, lane, mi) -> list[SSAValue]:
        inner = [lane, mi] if blocks.order == "io" else [mi, lane]
        return [mo, _index_or_zero(s, cb), _index_or_zero(s, kh), _index_or_zero(s, kw), *inner]

    def product(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        n, mo, oh, ow, mi = idx
        cb, kh, kw, ci = axes.axes(k)
        positions = _window_positions(s, op, oh, ow, kh, kw)
        channel_block = _index_or_zero(s, cb)
        if groups > 1:
            base = _scaled(s, _div(s, mo, out_blocks_per_group), w_shape[1])
            channel_block = base if cb is None else s.index_add(base, cb)
        lanes = [s.index(c) for c in range(in_block)] if unrolled else [_index_or_zero(s, ci)]
        terms = [
            s.mul(
                s.read(xp, [n, channel_block, *positions, lane]),
                s.read(w, weight_index(s, mo, cb, kh, kw, lane, mi)),
            )
            for lane in lanes
        ]
        return _tree_sum(s, terms)

    return pb.reduce(
        "blocked_conv", te.ReduceKind.SUM, out_shape, axes.stage_extents, product,
        element_type_of(xp),
    )


def _depthwise_reduction(
    pb: PrimitiveBuilder, op: graph.BlockedConvOp, xp: SSAValue, w: SSAValue
) -> SSAValue:
    """The sum over the window of one channel. Small windows are added in the body: the
    stage then has no real reduction loop, and its innermost loop runs over the channels
    of a block, reading input and weight contiguously."""
    w_shape, out_shape = shape_of(w), shape_of(op.result)
    kernel = w_shape[2:4]
    unrolled = kernel[0] * kernel[1] <= MAX_UNROLLED_WINDOW
    axes = ReductionAxes([1, 1] if unrolled else kernel)

    def product(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        n, mo, oh, ow, mi = idx
        if unrolled:
            taps = [(s.index(i), s.index(j)) for i in range(kernel[0]) for j in range(kernel[1])]
        else:
            kh, kw = axes.axes(k)
            taps = [(_index_or_zero(s, kh), _index_or_zero(s, kw))]
        zero = s.index(0)
        terms = []
        for kh, kw in taps:
            positions = _window_positions(s, op, oh, ow, kh, kw)
            terms.append(
                s.mul(s.read(xp, [n, mo, *positions, mi]), s.read(w, [mo, zero, kh, kw, zero, mi]))
            )
        return _tree_sum(s, terms)

    return pb.reduce(
        "blocked_conv", te.ReduceKind.SUM, out_shape, axes.stage_extents, product,
        element_type_of(xp),
    )


@strategy(graph.BlockedMaxPoolOp)
def blocked_max_pool(
    pb: PrimitiveBuilder, op: graph.BlockedMaxPoolOp, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    """result[n, C, o.., c] = max over taps of x'[n, C, o*stride + k*dilation .., c], x'
    padded with the lowest value of the element type."""
    (x,) = inputs
    lowest = lowest_value(numpy_dtype(element_type_of(x)))
    nchw = op.nchw_equivalent()
    padded = pad_stage(pb, x, op.pads_begin, nchw.padded_extents(), lowest)
    return [pool_reduce(pb, op, "blocked_max_pool", te.ReduceKind.MAX, padded, lowest)]


@strategy(graph.BlockedAvgPoolOp)
def blocked_avg_pool(
    pb: PrimitiveBuilder, op: graph.BlockedAvgPoolOp, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    """result[n, C, o.., c] = sum over taps of x'[..] / count(o..), x' zero-padded;
    count is a constant when all windows count alike, else a stage over (oh, ow)."""
    (x,) = inputs
    nchw = op.nchw_equivalent()
    assert isinstance(nchw, graph.AvgPoolOp)
    padded = pad_stage(pb, x, op.pads_begin, nchw.padded_extents(), 0)
    total = pool_reduce(pb, op, "blocked_avg_pool_sum", te.ReduceKind.SUM, padded)
    return [window_average(pb, "blocked_avg_pool", total, nchw)]


@strategy(graph.BlockedGlobalAvgPoolOp)
def blocked_global_avg_pool(
    pb: PrimitiveBuilder, op: graph.BlockedGlobalAvgPoolOp, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    """result[n, C, 0, 0, c] = sum_{h, w} x[n, C, h, w, c] / (H * W)."""
    (x,) = inputs
    return [spatial_mean(pb, "blocked_global_avg_pool", x, 2)]


# -- blocked_winograd_conv ------------------------------------------------------------


def _linear_combination(
    s: ScalarBuilder, terms: Sequence[tuple[float, SSAValue]]
) -> SSAValue:
    """sum of coefficient * value over `terms` (coefficients not 0): a coefficient of 1
    or -1 is an add or a subtract, any other a multiply."""
    total: SSAValue | None = None
    for coefficient, value in terms:
        magnitude = abs(coefficient)
        term = value if magnitude == 1 else s.mul(value, s.const(magnitude))
        if total is None:
            total = term if coefficient > 0 else s.neg(term)
        else:
            total = s.add(total, term) if coefficient > 0 else s.sub(total, term)
    assert total is not None
    return total


def _matrix_row_times(
    s: ScalarBuilder, matrix: Sequence[Sequence[float]], row: SSAValue, values: list[SSAValue]
) -> SSAValue:
    """sum_i matrix[row, i] * values[i], the row chosen by a chain of selects. Once the
    loop over `row` is unrolled, each copy's conditions are constants and only its own
    row's sum remains."""
    sums = [
        _linear_combination(s, [(w, v) for w, v in zip(coefficients, values, strict=True) if w])
        for coefficients in matrix
    ]
    value = sums[-1]
    for k in range(len(sums) - 2, -1, -1):
        value = s.select(s.index_cmp("eq", row, s.index(k)), sums[k], value)
    return value


@strategy(graph.BlockedWinogradConvOp)
def blocked_winograd_conv(
    pb: PrimitiveBuilder, op: graph.BlockedWinogradConvOp, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    """F(m x m, 3 x 3) over TH x TW tiles of the output, alpha = m + 2, in stages whose
    tile positions (a, b) are dimensions of their own, next to the batch:

        winograd_input_rows T[n, a, j, C, ti, tj, c] = sum_i B^T[a, i] d[i, j]
        winograd_input      V[n, a, b, C, ti, tj, c] = sum_j B^T[b, j] T[n, a, j, ..]
                            (d: the padded input's window at (ti*m, tj*m))
        winograd_product    M[n, a, b, K, ti, tj, k] = sum_{C, c} V[n, a, b, C, ti, tj, c]
                                                       * U[a*alpha + b, K, C, c, k]
        winograd_output     Y[n, K, h, w, k] = (A^T M A)[h % m, w % m] of tile (h/m, w/m)
                            (+ bias)

    then, when m does not divide the output, a copy of its part (`winograd_crop`). The
    transforms' constant coefficients are chosen by the position through selects, which
    fold once a schedule unrolls the loops over the positions; every address is affine
    in the loop variables."""
    from strato.dialects.graph.winograd import tile_counts, winograd_matrices

    x, u = inputs[0], inputs[1]
    m, alpha = op.tile_size, op.alpha
    bt, _, at = winograd_matrices(m)
    out_shape = shape_of(op.result)
    batch, in_blocks, _, _, in_block = shape_of(x)
    out_blocks, out_block = out_shape[1], out_shape[4]
    tiles_h, tiles_w = tile_counts(out_shape, m)
    top, left, _, _ = op.pads
    element = element_type_of(x)
    xp = pad_stage(pb, x, (top, left), (tiles_h * m + 2, tiles_w * m + 2), 0)
    tiles = (tiles_h, tiles_w)

    def rows_body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        n, a, j, c, ti, tj, lane = idx
        row, col = _scaled(s, ti, m), s.index_add(_scaled(s, tj, m), j)
        window = [s.read(xp, [n, c, _offset(s, row, i), col, lane]) for i in range(alpha)]
        return _matrix_row_times(s, bt, a, window)

    rows = pb.compute(
        "winograd_input_rows", (batch, alpha, alpha, in_blocks, *tiles, in_block), rows_body,
        element, materialize=True,
    )

    def input_body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        n, a, b, c, ti, tj, lane = idx
        row = [s.read(rows, [n, a, s.index(j), c, ti, tj, lane]) for j in range(alpha)]
        return _matrix_row_times(s, bt, b, row)

    v = pb.compute(
        "winograd_input", (batch, alpha, alpha, in_blocks, *tiles, in_block), input_body,
        element, materialize=True,
    )

    def product(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        n, a, b, kb, ti, tj, lane = idx
        c, ci = k
        position = s.index_add(_scaled(s, a, alpha), b)
        return s.mul(
            s.read(v, [n, a, b, c, ti, tj, ci]), s.read(u, [position, kb, c, ci, lane])
        )

    mm = pb.reduce(
        "winograd_product", te.ReduceKind.SUM,
        (batch, alpha, alpha, out_blocks, *tiles, out_block), [in_blocks, in_block],
        product, element,
    )
    bias = inputs[2] if len(inputs) > 2 else None
    full = (batch, out_blocks, tiles_h * m, tiles_w * m, out_block)

    def output_body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        n, kb, h, w, lane = idx
        ti, p, tj, q = _div(s, h, m), _rem(s, h, m), _div(s, w, m), _rem(s, w, m)
        # (A^T M A)[p, q] = sum_a A^T[p, a] (sum_b A^T[q, b] M[a, b])
        sums = [
            _matrix_row_times(
                s, at, q,
                [s.read(mm, [n, s.index(a), s.index(b), kb, ti, tj, lane]) for b in range(alpha)],
            )
            for a in range(alpha)
        ]
        value = _matrix_row_times(s, at, p, sums)
        if bias is not None:
            channel = s.index_add(_scaled(s, kb, out_block), lane)
            value = s.add(value, s.read(bias, [channel]))
        return value

    cropped = full != out_shape
    tiled = pb.compute("winograd_output", full, output_body, element, materialize=cropped)
    if not cropped:
        return [tiled]
    return [pb.compute("winograd_crop", out_shape, lambda s, idx: s.read(tiled, idx), element)]
