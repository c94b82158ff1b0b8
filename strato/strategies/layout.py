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

from strato.dialects import graph
from strato.strategies import strategy
from strato.strategies.builder import (
    PrimitiveBuilder,
    ScalarBuilder,
    broadcast_indices,
    element_type_of,
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


def index_clamp(s: ScalarBuilder, value: SSAValue, low: int | None, high: int | None) -> SSAValue:
    """value clamped into [low, high] (either bound may be omitted)."""
    if low is not None:
        bound = s.index(low)
        value = s.index_select(s.index_cmp("slt", value, bound), bound, value)
    if high is not None:
        bound = s.index(high)
        value = s.index_select(s.index_cmp("sgt", value, bound), bound, value)
    return value


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
    if 0 in source:
        # an empty result: the body never runs, but must still read in range
        return [
            pb.compute(
                "reshape", target, lambda s, idx: s.read(x, [s.index(0)] * len(source)), dtype
            )
        ]
    groups = reshape_groups(source, target)

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
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
        return s.read(x, source_idx)

    return [pb.compute("reshape", target, body, dtype)]


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
    (x,) = inputs
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
    input is read at its clamped index and the last one with o_k <= i is selected."""
    assert isinstance(op, graph.ConcatOp)
    axis = op.axis_value
    pieces: list[tuple[SSAValue, int]] = []
    offset = 0
    for x in inputs:
        size = shape_of(x)[axis]
        if size:
            pieces.append((x, offset))
        offset += size
    out_shape = shape_of(op.results[0])
    dtype = element_type_of(op.results[0])
    if not pieces:
        return [pb.compute("concat", out_shape, lambda s, idx: s.const(0), dtype)]

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        i = idx[axis]
        value: SSAValue | None = None
        for n, (x, start) in enumerate(pieces):
            size = shape_of(x)[axis]
            local = index_offset(s, i, -start)
            local = index_clamp(
                s, local, 0 if n > 0 else None, size - 1 if n + 1 < len(pieces) else None
            )
            read = s.read(x, [*idx[:axis], local, *idx[axis + 1 :]])
            if value is None:
                value = read
            else:
                value = s.select(s.index_cmp("sge", i, s.index(start)), read, value)
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
        return s.read(
            x,
            [
                index_affine(s, i, step, min(start, dim - 1) if dim else 0)
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
                if low:
                    inside.append(s.index_cmp("sge", position, s.index(0)))
                if high:
                    inside.append(s.index_cmp("slt", position, s.index(dim)))
                position = index_clamp(s, position, 0 if low else None, dim - 1 if high else None)
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
        position = _append(s, arith.IndexCastOp(raw, IndexType()))
        negative = s.index_cmp("slt", position, s.index(0))
        position = s.index_select(negative, index_offset(s, position, size), position)
        position = index_clamp(s, position, 0, size - 1)
        return s.read(data, [*idx[:axis], position, *idx[axis + index_rank :]])

    return [pb.compute("gather", out_shape, body, dtype)]
