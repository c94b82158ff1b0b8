"""Strategies of reductions: one `te.reduce` over the reduced axes. The norms map each
element before combining (|x|, x * x) and a mean, L2 norm or log-sum-exp adds a compute
stage after it (divide by the count, square root, logarithm), all in one kernel.
Log-sum-exp first reduces the maximum, which it subtracts before exponentiating.
arg_max and arg_min reduce the extreme value, then the first (or last) position that
holds it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import AnyFloat, IndexType, IntegerType, Signedness, i1, i8
from xdsl.ir import Operation, SSAValue

from strato.dialects import graph, te
from strato.strategies import strategy
from strato.strategies.builder import (
    PrimitiveBuilder,
    ScalarBuilder,
    element_type_of,
    reduction_identity,
    shape_of,
)

_KINDS: dict[type[Operation], te.ReduceKind] = {
    graph.ReduceSumOp: te.ReduceKind.SUM,
    graph.ReduceMeanOp: te.ReduceKind.SUM,
    graph.ReduceMaxOp: te.ReduceKind.MAX,
    graph.ReduceMinOp: te.ReduceKind.MIN,
    graph.ReduceProdOp: te.ReduceKind.PROD,
    graph.ReduceL1Op: te.ReduceKind.SUM,
    graph.ReduceL2Op: te.ReduceKind.SUM,
    graph.ReduceSumSquareOp: te.ReduceKind.SUM,
    graph.ReduceLogSumExpOp: te.ReduceKind.SUM,
}

# what a reduction of nothing gives where it is not the identity of its combination
_EMPTY_VALUES: dict[type[Operation], float] = {
    graph.ReduceMeanOp: float("nan"),
    graph.ReduceLogSumExpOp: float("-inf"),
}

# booleans combine as 0/1 bytes: min and product are `and`, max is `or`
_BOOL_KINDS = {
    te.ReduceKind.SUM: te.ReduceKind.SUM,
    te.ReduceKind.MAX: te.ReduceKind.MAX,
    te.ReduceKind.MIN: te.ReduceKind.MIN,
    te.ReduceKind.PROD: te.ReduceKind.MIN,
}


def _mapped(op: Operation, s: ScalarBuilder, value: SSAValue) -> SSAValue:
    """The element as the reduction combines it: |x| for L1, x * x for L2 and the sum
    of squares, x itself otherwise."""
    if isinstance(op, graph.ReduceL1Op):
        return s.abs(value)
    if isinstance(op, (graph.ReduceL2Op, graph.ReduceSumSquareOp)):
        return s.mul(value, value)
    return value


@strategy(*_KINDS)
def reduction(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """result[i..] = combine over k.. of input[i.. with k.. at the reduced axes]."""
    assert isinstance(op, graph.ReductionOp)
    (x,) = inputs
    dtype = element_type_of(x)
    shape = shape_of(x)
    axes = op.axis_values
    keepdims = op.keeps_dims
    out_shape = shape_of(op.results[0])
    extents = [shape[a] for a in axes]
    stage = op.name.split(".", 1)[1]
    if 0 in extents:
        # nothing to combine: the identity of the reduction (a mean of nothing is NaN,
        # or 0 for integers; log-sum-exp is log(0))
        if type(op) in _EMPTY_VALUES:
            value = _EMPTY_VALUES[type(op)] if isinstance(dtype, AnyFloat) else 0
        else:
            value = reduction_identity(_KINDS[type(op)], dtype)
        return [pb.compute(stage, out_shape, lambda s, idx: s.const(value), dtype)]

    def source_indices(idx: list[SSAValue], k: list[SSAValue]) -> list[SSAValue]:
        source: list[SSAValue] = []
        kept = iter(idx)
        reduced = iter(k)
        for d in range(len(shape)):
            if d in axes:
                source.append(next(reduced))
                if keepdims:
                    next(kept)
            else:
                source.append(next(kept))
        return source

    def body(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        return _mapped(op, s, s.read(x, source_indices(idx, k)))

    if isinstance(dtype, IntegerType) and dtype.width.data == 1:
        kind = _BOOL_KINDS[_KINDS[type(op)]]
        return [_bool_reduction(pb, stage, kind, out_shape, extents, body)]
    if isinstance(op, graph.ReduceLogSumExpOp):
        return [_log_sum_exp(pb, out_shape, extents, x, source_indices, dtype)]
    result = pb.reduce(stage, _KINDS[type(op)], out_shape, extents, body, dtype)
    if isinstance(op, graph.ReduceL2Op):
        total = result
        result = pb.compute("l2", out_shape, lambda s, idx: s.sqrt(s.read(total, idx)), dtype)
    if isinstance(op, graph.ReduceMeanOp):
        count = pb.count("count", extents, dtype)
        total = result
        result = pb.compute(
            "mean",
            out_shape,
            lambda s, idx: s.div(s.read(total, idx), count(s)),
            dtype,
        )
    return [result]


def _log_sum_exp(
    pb: PrimitiveBuilder,
    shape: Sequence[int],
    extents: Sequence[int],
    x: SSAValue,
    source_indices: Callable[[list[SSAValue], list[SSAValue]], list[SSAValue]],
    dtype,
) -> SSAValue:
    """peak + log(sum(exp(x - peak))) with peak the maximum (0 where it is infinite,
    so that an all -inf slice gives -inf rather than NaN)."""
    peak = pb.reduce(
        "lse_max",
        te.ReduceKind.MAX,
        shape,
        extents,
        lambda s, idx, k: s.read(x, source_indices(idx, k)),
        dtype,
    )

    def finite_peak(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        value = s.read(peak, idx)
        infinite = s.cmp("eq", s.abs(value), s.const(float("inf")))
        return s.select(infinite, s.const(0.0), value)

    def shifted_exp(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        return s.exp(s.sub(s.read(x, source_indices(idx, k)), finite_peak(s, idx)))

    total = pb.reduce("lse_sum", te.ReduceKind.SUM, shape, extents, shifted_exp, dtype)
    return pb.compute(
        "log_sum_exp",
        shape,
        lambda s, idx: s.add(s.log(s.read(total, idx)), finite_peak(s, idx)),
        dtype,
    )


@strategy(graph.ArgMaxOp, graph.ArgMinOp)
def arg_reduction(
    pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    """extreme[i..] = max (min) over k of input[i.. with k at axis]; then
    result[i..] = min over k of (k where input == extreme, else the axis size), or max
    of (k, else -1) for the last index. A NaN counts as the extreme, as numpy's argmax
    says, because the max reduction propagates it and NaN is matched by `x != x`."""
    assert isinstance(op, graph.ArgReductionOp)
    (x,) = inputs
    dtype = element_type_of(x)
    shape = shape_of(x)
    axis = op.axis_value
    keepdims = op.keeps_dims
    out_shape = shape_of(op.results[0])
    size = shape[axis]
    index_type = element_type_of(op.results[0])

    def source(idx: list[SSAValue], k: SSAValue) -> list[SSAValue]:
        kept = idx[:axis] + idx[axis + 1 :] if keepdims else idx
        return [*kept[:axis], k, *kept[axis:]]

    kind = te.ReduceKind.MAX if isinstance(op, graph.ArgMaxOp) else te.ReduceKind.MIN
    if isinstance(dtype, IntegerType) and dtype.width.data == 1:
        wide = pb.compute(
            "widen", shape, lambda s, idx: _append(s, arith.ExtUIOp(s.read(x, idx), i8)), i8
        )
        x, dtype = wide, i8
    extreme = pb.reduce(
        "extreme", kind, out_shape, [size], lambda s, idx, k: s.read(x, source(idx, k[0])), dtype
    )

    def position(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        value = s.read(x, source(idx, k[0]))
        best = s.read(extreme, idx)
        hit = s.cmp("eq", value, best)
        if isinstance(dtype, AnyFloat):
            is_nan = _append(s, arith.CmpfOp(value, value, "uno"))
            hit = _append(s, arith.OrIOp(hit, is_nan))
        k_value = _append(s, arith.IndexCastOp(k[0], index_type))
        miss = s.const(-1 if op.last_index else size, index_type)
        return s.select(hit, k_value, miss)

    position_kind = te.ReduceKind.MAX if op.last_index else te.ReduceKind.MIN
    stage = op.name.split(".", 1)[1]
    return [pb.reduce(stage, position_kind, out_shape, [size], position, index_type)]


@strategy(graph.TopKOp)
def top_k(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """A selection by ranks, with no sort:

        rank[.., j, ..] = count over m of (x[m] beats x[j]), where m beats j if its value
                          is larger (smaller) or equal with m < j, and a NaN loses to
                          every number: ranks are a permutation
        indices[.., r, ..] = sum over j of (j where rank[j] == r, else 0)
        values[.., r, ..] = x[.., indices[r], ..]

    Quadratic in the axis length, which suits the small k and axes of detection and
    sampling heads."""
    assert isinstance(op, graph.TopKOp)
    (x,) = inputs
    shape = shape_of(x)
    axis = op.axis_value
    size = shape[axis]
    dtype = element_type_of(x)
    index_type = element_type_of(op.results[1])
    out_shape = shape_of(op.results[0])
    if op.k_value == 0:
        empty_values = pb.compute("top_k", out_shape, lambda s, idx: s.const(0), dtype)
        empty_indices = pb.compute(
            "top_k_indices", out_shape, lambda s, idx: s.const(0), index_type
        )
        return [empty_values, empty_indices]
    better = "gt" if op.is_largest else "lt"

    def at(idx: list[SSAValue], position: SSAValue) -> list[SSAValue]:
        return [*idx[:axis], position, *idx[axis + 1 :]]

    def beats(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        other = s.read(x, at(idx, k[0]))
        this = s.read(x, idx)
        strictly = _append(s, _compare(dtype, better, other, this))
        tie = _append(s, _compare(dtype, "eq", other, this))
        earlier = s.index_cmp("slt", k[0], idx[axis])
        wins = _append(s, arith.OrIOp(strictly, _append(s, arith.AndIOp(tie, earlier))))
        if isinstance(dtype, AnyFloat):
            # NaN ranks after every number, NaNs by position: the ordered compares
            # above are false when either side is NaN
            this_nan = _append(s, arith.CmpfOp(this, this, "uno"))
            other_number = _append(s, arith.CmpfOp(other, other, "ord"))
            beats_nan = _append(s, arith.OrIOp(other_number, earlier))
            wins = _append(s, arith.OrIOp(wins, _append(s, arith.AndIOp(this_nan, beats_nan))))
        return s.select(wins, s.const(1, index_type), s.const(0, index_type))

    rank = pb.reduce("top_k_rank", te.ReduceKind.SUM, shape, [size], beats, index_type)

    def position(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        wanted = _append(s, arith.IndexCastOp(idx[axis], index_type))
        hit = s.cmp("eq", s.read(rank, at(idx, k[0])), wanted)
        k_value = _append(s, arith.IndexCastOp(k[0], index_type))
        return s.select(hit, k_value, s.const(0, index_type))

    indices = pb.reduce("top_k_indices", te.ReduceKind.SUM, out_shape, [size], position, index_type)

    def value(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        where = _append(s, arith.IndexCastOp(s.read(indices, idx), IndexType()))
        return s.read(x, at(idx, where))

    return [pb.compute("top_k", out_shape, value, dtype), indices]


def _compare(dtype, predicate: str, lhs: SSAValue, rhs: SSAValue) -> Operation:
    """lhs <predicate> rhs in the element type of the compared tensor (ordered for
    floats, unsigned for unsigned integers)."""
    if isinstance(dtype, AnyFloat):
        return arith.CmpfOp(lhs, rhs, "o" + predicate)
    if predicate == "eq":
        return arith.CmpiOp(lhs, rhs, "eq")
    unsigned = isinstance(dtype, IntegerType) and (
        dtype.width.data == 1 or dtype.signedness.data == Signedness.UNSIGNED
    )
    return arith.CmpiOp(lhs, rhs, ("u" if unsigned else "s") + predicate)


def _bool_reduction(
    pb: PrimitiveBuilder,
    stage: str,
    kind: te.ReduceKind,
    shape: Sequence[int],
    extents: Sequence[int],
    body: Callable[[ScalarBuilder, list[SSAValue], list[SSAValue]], SSAValue],
) -> SSAValue:
    """A reduction of booleans, combined as 0/1 bytes: signed i1 arithmetic would read
    true as -1, so max would compute `and` instead of `or`."""

    def widened(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        return _append(s, arith.ExtUIOp(body(s, idx, k), i8))

    wide = pb.reduce(stage, kind, shape, extents, widened, i8)
    return pb.compute(
        "to_bool",
        shape,
        lambda s, idx: _append(s, arith.TruncIOp(s.read(wide, idx), i1)),
        i1,
    )


def _append(s: ScalarBuilder, op: Operation) -> SSAValue:
    s.block.add_op(op)
    return op.results[0]


@strategy(graph.CumSumOp, graph.CumProdOp)
def cumulative(
    pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]
) -> list[SSAValue]:
    """result[.., i, ..] = sum (product) over k of (x[.., p, ..] if p is in the running
    combination of i, else 0 (1)), p = k forward and n - 1 - k with `reverse`, so that
    the terms combine in the running direction as numpy's cumsum and cumprod combine
    them. p is in the combination of i when p <= i (p < i `exclusive`; p >= i, p > i
    `reverse`). Quadratic in the axis length, as top_k: the axes of position ids and
    masks are short."""
    assert isinstance(op, graph.CumulativeOp)
    (x,) = inputs
    shape = shape_of(x)
    dtype = element_type_of(x)
    axis = op.axis_value
    size = shape[axis]
    stage = op.name.split(".", 1)[1]
    if size == 0:
        return [pb.compute(stage, shape, lambda s, idx: s.const(op.IDENTITY), dtype)]
    predicate = {
        (False, False): "sle",
        (True, False): "slt",
        (False, True): "sge",
        (True, True): "sgt",
    }[(op.is_exclusive, op.is_reverse)]

    def term(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
        position = k[0]
        if op.is_reverse:
            # from the last element (along a run-time axis, its te.size less one)
            last = s.index(size - 1) if isinstance(size, int) else s.index_sub(size, s.index(1))
            position = s.index_sub(last, position)
        value = s.read(x, [*idx[:axis], position, *idx[axis + 1 :]])
        included = s.index_cmp(predicate, position, idx[axis])
        return s.select(included, value, s.const(op.IDENTITY, value.type))

    kind = te.ReduceKind.PROD if isinstance(op, graph.CumProdOp) else te.ReduceKind.SUM
    return [pb.reduce(stage, kind, shape, [size], term, dtype)]
