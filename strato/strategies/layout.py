"""Strategies of operators that move data without arithmetic: one compute stage per
result, whose body computes the input index an output element comes from.

Stage bodies only read in bounds: where an index depends on data (gather) or where
several inputs are candidates (concat, pad), each candidate index is clamped into its
tensor and the value is chosen with a select afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Operation, SSAValue

from strato.dialects import graph, te
from strato.strategies import strategy
from strato.strategies.builder import (
    Extent,
    PrimitiveBuilder,
    ScalarBuilder,
    broadcast_indices,
    element_type_of,
    reduction_identity,
    shape_of,
)

# -- index arithmetic the scalar builder has no method for ---------------------------


def _append(s: ScalarBuilder, op: Operation) -> SSAValue:
    s.block.add_op(op)
    return op.results[0]


def index_div(s: ScalarBuilder, value: SSAValue, divisor: int) -> SSAValue:
    """value / divisor for a non-negative index value."""
    if divisor == 1:
        return value
    return _append(s, arith.DivUIOp(value, s.index(divisor)))


def index_rem(s: ScalarBuilder, value: SSAValue, divisor: int) -> SSAValue:
    """value mod divisor for a non-negative index value."""
    return _append(s, arith.RemUIOp(value, s.index(divisor)))


def index_offset(s: ScalarBuilder, value: SSAValue, offset: int) -> SSAValue:
    return value if offset == 0 else s.index_add(value, s.index(offset))


def index_affine(s: ScalarBuilder, value: SSAValue, scale: int, offset: int) -> SSAValue:
    """scale * value + offset."""
    if scale != 1:
        value = s.index_mul(value, s.index(scale))
    return index_offset(s, value, offset)


def index_clamp(
    s: ScalarBuilder, value: SSAValue, low: int | None, high: int | SSAValue | None
) -> SSAValue:
    """value clamped into [low, high] (either bound may be omitted; `high` an index
    value when it is computed from a run-time size)."""
    if low is not None:
        bound = s.index(low)
        value = s.index_select(s.index_cmp("slt", value, bound), bound, value)
    if high is not None:
        bound = s.index(high) if isinstance(high, int) else high
        value = s.index_select(s.index_cmp("sgt", value, bound), bound, value)
    return value


def index_extent(s: ScalarBuilder, extent: Extent) -> SSAValue:
    """A dimension's size as an index value: a constant, or its run-time size (the
    primitive's `te.size`, which a stage body reads like any outer value)."""
    return s.index(extent) if isinstance(extent, int) else extent


def _stage_name(op: Operation) -> str:
    return op.name.split(".", 1)[1]


def _copy_stage(pb: PrimitiveBuilder, op: Operation, x: SSAValue) -> SSAValue:
    return pb.compute(
        _stage_name(op), shape_of(x), lambda s, idx: s.read(x, idx), element_type_of(x)
    )


# -- reshape ----------------------------------------------------------------------


def reshape_groups(source: Sequence[int], target: Sequence[int]) -> list[tuple[range, range]]:
    """Pairs (source dims, target dims) of consecutive dimensions with equal element
    counts, as small as possible, so that a reshape only delinearizes within a group.

    [2, 3, 4] -> [6, 4] gives ([0, 1] -> [0]) and ([2] -> [1]). Both shapes must hold the
    same, non-zero, number of elements.
    """
    groups: list[tuple[range, range]] = []
    i = j = 0
    while i < len(source) or j < len(target):
        i0, j0 = i, j
        p = q = 1
        if i < len(source):
            p, i = source[i], i + 1
        if j < len(target):
            q, j = target[j], j + 1
        while p != q:
            if p < q and i < len(source):
                p, i = p * source[i], i + 1
            elif j < len(target):
                q, j = q * target[j], j + 1
            else:
                p, i = p * source[i], i + 1
        groups.append((range(i0, i), range(j0, j)))
    return groups


@strategy(graph.ReshapeOp)
def reshape(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[j..] = input[delinearize(linearize(j..))], one group of dims at a time."""
    (x,) = inputs
    source, target = shape_of(x), shape_of(op.results[0])
    dtype = element_type_of(x)
    assert isinstance(op, graph.ReshapeOp)
    if any(not isinstance(d, int) for d in (*source, *target)):
        # run-time dimensions stay, in order: each stretch of static dimensions around
        # them is reshaped within itself
        stretches = [
            (s, t, _reshaped_index([source[d] for d in s], [target[d] for d in t]))
            for s, t in op.stretches()
        ]
        moved = [(t, d) for (_, t), ((_, d),) in op.run_time_dim_sources().items()]

        def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
            source_idx: list[SSAValue] = [s.index(0)] * len(source)
            for t, d in moved:
                source_idx[d] = idx[t]
            for from_dims, to_dims, inner in stretches:
                for d, value in zip(from_dims, inner(s, [idx[t] for t in to_dims]), strict=True):
                    source_idx[d] = value
            return s.read(x, source_idx)

        return [pb.compute("reshape", target, body, dtype)]
    source_index = _reshaped_index(source, target)
    return [pb.compute("reshape", target, lambda s, idx: s.read(x, source_index(s, idx)), dtype)]


def _reshaped_index(source: Sequence[int], target: Sequence[int]):
    """How a stage body maps an index of the static `target` shape to the index of the
    same element in `source` (row-major, one group of dims at a time): a whole reshape,
    or one stretch of static dimensions of a reshape of run-time ones."""
    if 0 in source:
        # an empty result: the body never runs, but must still read in range
        return lambda s, idx: [s.index(0)] * len(source)
    groups = reshape_groups(source, target)

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> list[SSAValue]:
        source_idx: list[SSAValue] = []
        for source_dims, target_dims in groups:
            if len(source_dims) == 1 and len(target_dims) == 1:
                source_idx.append(idx[target_dims[0]])
                continue
            linear: SSAValue | None = None
            for d in target_dims:
                if target[d] == 1:
                    continue
                linear = (
                    idx[d]
                    if linear is None
                    else s.index_add(s.index_mul(linear, s.index(target[d])), idx[d])
                )
            linear = linear if linear is not None else s.index(0)
            stride = 1
            strides = []
            for d in reversed(source_dims):
                strides.append(stride)
                stride *= source[d]
            for n, (d, stride) in enumerate(zip(source_dims, reversed(strides))):
                if source[d] == 1:
                    source_idx.append(s.index(0))
                    continue
                value = index_div(s, linear, stride)
                if n > 0:
                    value = index_rem(s, value, source[d])
                source_idx.append(value)
        return source_idx

    return body


# -- transpose, broadcast, identity -------------------------------------------------


@strategy(graph.TransposeOp)
def transpose(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    assert isinstance(op, graph.TransposeOp)
    (x,) = inputs
    perm = op.permutation

    def body(s, idx):
        # result[i_0..i_n] = input[j] with j[perm[d]] = i_d
        source = [idx[0]] * len(perm)
        for d, p in enumerate(perm):
            source[p] = idx[d]
        return s.read(x, source)

    return [pb.compute("transpose", shape_of(op.results[0]), body, element_type_of(x))]


@strategy(graph.BroadcastToOp)
def broadcast_to(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    x = inputs[0]  # (`like`, when given, gives run-time sizes only)
    target = shape_of(op.results[0])
    return [
        pb.compute(
            "broadcast_to",
            target,
            lambda s, idx: s.read(x, broadcast_indices(s, idx, shape_of(x), target)),
            element_type_of(x),
        )
    ]


@strategy(graph.IdentityOp, graph.DropoutOp)
def pass_through(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """A copy: what remains of identity and inference dropout if nothing removed them."""
    return [_copy_stage(pb, op, inputs[0])]


# -- concat and split -------------------------------------------------------------


@strategy(graph.ConcatOp)
def concat(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[.., i, ..] = input_k[.., i - o_k, ..] for the input k covering i: every
    input is read at its index clamped into it and the last one with o_k <= i is
    selected. Along a run-time dimension each offset o_k, the sum of the sizes before
    it, is computed in the body from the primitive's sizes."""
    assert isinstance(op, graph.ConcatOp)
    axis = op.axis_value
    out_shape = shape_of(op.results[0])
    dtype = element_type_of(op.results[0])
    pieces = [x for x in inputs if shape_of(x)[axis] != 0]
    if not pieces:
        return [pb.compute("concat", out_shape, lambda s, idx: s.const(0), dtype)]

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        i = idx[axis]
        value: SSAValue | None = None
        start: Extent = 0
        for n, x in enumerate(pieces):
            size = shape_of(x)[axis]
            local = index_offset(s, i, -start) if isinstance(start, int) else s.index_sub(i, start)
            last = None
            if n + 1 < len(pieces):
                last = size - 1 if isinstance(size, int) else s.index_sub(size, s.index(1))
            local = index_clamp(s, local, 0 if n else None, last)
            read = s.read(x, [*idx[:axis], local, *idx[axis + 1 :]])
            if value is None:
                value = read
            else:
                value = s.select(s.index_cmp("sge", i, index_extent(s, start)), read, value)
            if n + 1 < len(pieces):
                if isinstance(start, int) and isinstance(size, int):
                    start += size
                elif isinstance(start, int) and start == 0:
                    start = size
                else:
                    start = s.index_add(index_extent(s, start), index_extent(s, size))
        assert value is not None
        return value

    return [pb.compute("concat", out_shape, body, dtype)]


@strategy(graph.SplitOp)
def split(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result_k[.., i, ..] = input[.., o_k + i, ..], one stage per result."""
    assert isinstance(op, graph.SplitOp)
    (x,) = inputs
    axis = op.axis_value
    results = []
    offset = 0
    for result in op.outputs:
        start = min(offset, shape_of(x)[axis] - 1) if shape_of(x)[axis] else 0

        def body(s: ScalarBuilder, idx: list[SSAValue], start: int = start) -> SSAValue:
            return s.read(x, [*idx[:axis], index_offset(s, idx[axis], start), *idx[axis + 1 :]])

        results.append(pb.compute("split", shape_of(result), body, element_type_of(x)))
        offset += shape_of(result)[axis]
    return results


# -- slice and pad ----------------------------------------------------------------


@strategy(graph.SliceOp)
def slice_(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[i..] = input[starts + i * steps]."""
    assert isinstance(op, graph.SliceOp)
    (x,) = inputs
    starts, steps = op.start_values, op.step_values
    shape = shape_of(x)

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        # a run-time dimension is read from its start, in bounds: the result is that
        # much (and the drops) shorter
        return s.read(
            x,
            [
                index_affine(s, i, step, start if not isinstance(dim, int) else min(start, dim - 1) if dim > 0 else 0)
                for i, start, step, dim in zip(idx, starts, steps, shape)
            ],
        )

    return [pb.compute("slice", shape_of(op.results[0]), body, element_type_of(x))]


@strategy(graph.PadOp)
def pad(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[i] = input[source(i - low)], where source maps a position outside the
    input back into it as the mode says (constant mode reads a clamped position and
    selects the pad value outside)."""
    assert isinstance(op, graph.PadOp)
    (x,) = inputs
    shape = shape_of(x)
    mode = op.pad_mode
    lows, highs = op.low_values, op.high_values
    dtype = element_type_of(x)
    out_shape = shape_of(op.results[0])
    if 0 in shape:
        # only constant mode pads an empty tensor: everything is the pad value
        return [pb.compute("pad", out_shape, lambda s, idx: s.const(op.pad_value), dtype)]

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        source: list[SSAValue] = []
        inside: list[SSAValue] = []
        for i, dim, low, high in zip(idx, shape, lows, highs):
            if not low and not high:
                source.append(i)
                continue
            position = index_offset(s, i, -low)
            if mode == graph.PadMode.CONSTANT:
                # a shift (low + high = 0) reads before the start only when low > 0,
                # past the end only when high > 0
                if low > 0:
                    inside.append(s.index_cmp("sge", position, s.index(0)))
                if high > 0:
                    inside.append(s.index_cmp("slt", position, index_extent(s, dim)))
                last = None
                if high > 0:
                    last = dim - 1 if isinstance(dim, int) else s.index_sub(dim, s.index(1))
                position = index_clamp(s, position, 0 if low > 0 else None, last)
            elif mode == graph.PadMode.EDGE:
                position = index_clamp(s, position, 0 if low else None, dim - 1 if high else None)
            elif mode == graph.PadMode.REFLECT:
                if low:
                    # -p -> p
                    negated = s.index_sub(s.index(0), position)
                    before = s.index_cmp("slt", position, s.index(0))
                    position = s.index_select(before, negated, position)
                if high:
                    # dim - 1 + p -> dim - 1 - p
                    mirrored = s.index_sub(s.index(2 * (dim - 1)), position)
                    after = s.index_cmp("sge", position, s.index(dim))
                    position = s.index_select(after, mirrored, position)
            else:  # wrap: shift to non-negative, then take the remainder
                periods = -(-low // dim)
                position = index_rem(s, index_offset(s, position, periods * dim), dim)
            source.append(position)
        value = s.read(x, source)
        if inside:
            fill = s.const(op.pad_value)
            for condition in inside:
                value = s.select(condition, value, fill)
        return value

    return [pb.compute("pad", out_shape, body, dtype)]


# -- gather -----------------------------------------------------------------------


@strategy(graph.GatherOp)
def gather(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[o.., j.., i..] = data[o.., wrap(indices[j..]), i..]: a negative index
    counts from the end, and the index is clamped into range so the read stays in
    bounds (an out-of-range index is an error in the model)."""
    assert isinstance(op, graph.GatherOp)
    data, indices = inputs
    axis = op.axis_value
    size = shape_of(data)[axis]
    index_rank = len(shape_of(indices))
    out_shape = shape_of(op.results[0])
    dtype = element_type_of(data)
    if size == 0 or 0 in shape_of(data):
        return [pb.compute("gather", out_shape, lambda s, idx: s.const(0), dtype)]

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        raw = s.read(indices, idx[axis : axis + index_rank])
        position = _wrapped_position(s, raw, size)
        return s.read(data, [*idx[:axis], position, *idx[axis + index_rank :]])

    return [pb.compute("gather", out_shape, body, dtype)]


@strategy(graph.IotaOp)
def iota(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[i] = i (the length is a dimension of the operand, which is not read)."""
    result = op.results[0]
    dtype = element_type_of(result)

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        return _append(s, arith.IndexCastOp(idx[0], dtype))

    return [pb.compute("iota", shape_of(result), body, dtype)]


@strategy(graph.SizeOfOp)
def size_of(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result = the size of a dimension of the operand (its `te.size` when it is one of
    run-time size; the operand is not read)."""
    assert isinstance(op, graph.SizeOfOp)
    extent = shape_of(inputs[0])[op.dim_value]
    dtype = element_type_of(op.results[0])

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        return _append(s, arith.IndexCastOp(index_extent(s, extent), dtype))

    return [pb.compute("size_of", (), body, dtype)]


def _wrapped_position(s: ScalarBuilder, raw: SSAValue, size: Extent) -> SSAValue:
    """An index read from a tensor as an in-bounds position: negative counts from the
    end, then clamped into [0, size) (`size` a run-time one too)."""
    position = _append(s, arith.IndexCastOp(raw, IndexType()))
    negative = s.index_cmp("slt", position, s.index(0))
    if isinstance(size, int):
        position = s.index_select(negative, index_offset(s, position, size), position)
        return index_clamp(s, position, 0, size - 1)
    position = s.index_select(negative, s.index_add(position, size), position)
    return index_clamp(s, position, 0, s.index_sub(size, s.index(1)))


@strategy(graph.GatherElementsOp)
def gather_elements(
    pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    """result[i..] = data[i.. with wrap(indices[i..]) at axis]."""
    assert isinstance(op, graph.GatherElementsOp)
    data, indices = inputs
    axis = op.axis_value
    size = shape_of(data)[axis]
    out_shape = shape_of(op.results[0])
    dtype = element_type_of(data)
    if 0 in shape_of(data):
        return [pb.compute("gather_elements", out_shape, lambda s, idx: s.const(0), dtype)]

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        position = _wrapped_position(s, s.read(indices, idx), size)
        return s.read(data, [*idx[:axis], position, *idx[axis + 1 :]])

    return [pb.compute("gather_elements", out_shape, body, dtype)]


@strategy(graph.TileOp)
def tile(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[i..] = input[i_d mod input.shape[d]..]."""
    assert isinstance(op, graph.TileOp)
    (x,) = inputs
    shape = shape_of(x)
    out_shape = shape_of(op.results[0])
    dtype = element_type_of(x)
    if 0 in shape:
        return [pb.compute("tile", out_shape, lambda s, idx: s.const(0), dtype)]

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        source = [
            i if repeat == 1 else (s.index(0) if dim == 1 else index_rem(s, i, dim))
            for i, dim, repeat in zip(idx, shape, op.repeat_values)
        ]
        return s.read(x, source)

    return [pb.compute("tile", out_shape, body, dtype)]


_SCATTER_KINDS = {
    graph.ScatterReduction.NONE: te.ReduceKind.MAX,  # the last row that hits
    graph.ScatterReduction.ADD: te.ReduceKind.SUM,
    graph.ScatterReduction.MUL: te.ReduceKind.PROD,
    graph.ScatterReduction.MAX: te.ReduceKind.MAX,
    graph.ScatterReduction.MIN: te.ReduceKind.MIN,
}


@strategy(graph.ScatterNDOp)
def scatter_nd(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """Per result element, a reduction over the update rows u: whether row u indexes
    this element (hit), and then

    - none: the last row that hits (max of u where hit, else -1), whose update is read
      if there is one, else the data;
    - add, mul, max, min: the data combined with every update that hits (the identity
      of the combination where a row misses).

    Duplicate rows thus combine in any order, which for add and mul changes floats
    only by rounding."""
    assert isinstance(op, graph.ScatterNDOp)
    data, indices, updates = inputs
    shape = shape_of(data)
    index_shape = shape_of(indices)
    depth = index_shape[-1]
    rows = list(index_shape[:-1])
    dtype = element_type_of(data)
    index_type = element_type_of(indices)
    combine = op.combine
    if 0 in rows or 0 in shape:
        return [_copy_stage(pb, op, data)]
    # a 1-D index tensor is one row: reduce over a single step and index nothing by it
    extents = rows or [1]

    def row_of(u: list[SSAValue]) -> list[SSAValue]:
        return u if rows else []

    def hit(s: ScalarBuilder, idx: list[SSAValue], u: list[SSAValue]) -> SSAValue:
        condition: SSAValue | None = None
        for d in range(depth):
            raw = s.read(indices, [*row_of(u), s.index(d)])
            position = _wrapped_position(s, raw, shape[d])
            equal = s.index_cmp("eq", position, idx[d])
            condition = equal if condition is None else _append(s, arith.AndIOp(condition, equal))
        assert condition is not None
        return condition

    def update_at(s: ScalarBuilder, idx: list[SSAValue], u: list[SSAValue]) -> SSAValue:
        return s.read(updates, [*row_of(u), *idx[depth:]])

    if combine == graph.ScatterReduction.NONE:

        def last_row(s: ScalarBuilder, idx: list[SSAValue], u: list[SSAValue]) -> SSAValue:
            u = row_of(u)
            linear = u[0] if u else s.index(0)
            for axis, size in zip(u[1:], rows[1:]):
                linear = s.index_add(s.index_mul(linear, s.index(size)), axis)
            row = _append(s, arith.IndexCastOp(linear, index_type))
            return s.select(hit(s, idx, u), row, s.const(-1, index_type))

        chosen = pb.reduce(
            "scatter_row", te.ReduceKind.MAX, shape, extents, last_row, index_type, init=-1
        )

        def replaced(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
            row = s.read(chosen, idx)
            found = _append(s, arith.CmpiOp(row, s.const(0, index_type), "sge"))
            position = _append(s, arith.IndexCastOp(row, IndexType()))
            position = index_clamp(s, position, 0, None)
            u = []
            stride = 1
            for size in reversed(rows):
                u.append(index_rem(s, index_div(s, position, stride), size))
                stride *= size
            value = s.read(updates, [*reversed(u), *idx[depth:]])
            return s.select(found, value, s.read(data, idx))

        return [pb.compute("scatter_nd", shape, replaced, dtype)]

    kind = _SCATTER_KINDS[combine]
    identity = reduction_identity(kind, dtype)

    def contribution(s: ScalarBuilder, idx: list[SSAValue], u: list[SSAValue]) -> SSAValue:
        return s.select(hit(s, idx, u), update_at(s, idx, u), s.const(identity))

    combined = pb.reduce("scatter_updates", kind, shape, extents, contribution, dtype)
    combiners = {
        te.ReduceKind.SUM: ScalarBuilder.add,
        te.ReduceKind.PROD: ScalarBuilder.mul,
        te.ReduceKind.MAX: ScalarBuilder.max,
        te.ReduceKind.MIN: ScalarBuilder.min,
    }
    combiner = combiners[kind]
    return [
        pb.compute(
            "scatter_nd",
            shape,
            lambda s, idx: combiner(s, s.read(data, idx), s.read(combined, idx)),
            dtype,
        )
    ]


@strategy(graph.GatherNDOp)
def gather_nd(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[b.., i.., r..] = data[b.., wrap(indices[b.., i.., 0]), .., r..]."""
    assert isinstance(op, graph.GatherNDOp)
    data, indices = inputs
    batch = op.batch_count
    index_shape = shape_of(indices)
    depth = index_shape[-1]
    leading = len(index_shape) - 1
    data_shape = shape_of(data)
    out_shape = shape_of(op.results[0])
    dtype = element_type_of(data)
    if 0 in data_shape:
        return [pb.compute("gather_nd", out_shape, lambda s, idx: s.const(0), dtype)]

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        row = idx[:leading]
        positions = [
            _wrapped_position(s, s.read(indices, [*row, s.index(d)]), data_shape[batch + d])
            for d in range(depth)
        ]
        return s.read(data, [*idx[:batch], *positions, *idx[leading:]])

    return [pb.compute("gather_nd", out_shape, body, dtype)]
