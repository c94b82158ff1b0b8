"""Element-wise nests of run-time extents over contiguous tensors, as one loop.

A kernel of run-time sizes (`te.size`) keeps the canonical loops of its stages. An
element-wise stage over a tensor of shape [batch, 4, seq, seq] is a nest of four loops,
and each run of the innermost one is a row of `seq` elements: at 16 tokens, 64 rows
of 16, each paying its loops' entries and its tails (a vector of 16, then of 8 and
of 4 lanes, then the rest) for one vector of work. When every access of the nest's
body reads or writes the element the indices name in a tensor laid out row-major
over exactly the nest's extents (a view of a flat buffer), or an element none of
them moves (a scalar), the nest runs as one loop over the product of the extents,
each access at the flat index:

    loop.for %i = 0 to %b { loop.for %j = 0 to 4 { loop.for %l = 0 to %s {
      loop.for %m = 0 to %s {
        %x = memref.load %in_view[%i, %j, %l, %m]  ...  memref.store %y, %out_view[%i, %j, %l, %m]
    } } } }
->
    loop.for %f = 0 to %b * 4 * %s * %s {
      %x = memref.load %in[%f]  ...  memref.store %y, %out[%f]
    }

The loop visits the elements in the same order, so the rewrite keeps any program's
meaning; schedule-default then strip-mines it into vectors (one vector tail for the
whole tensor, not one per row) and makes it parallel.

What is contiguous is decided symbolically: a view's sizes must be the loops' bounds
and its strides the products of the sizes after each (as products of the same
values and constants, the way convert-te-to-loops computes them), at offset 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IntegerAttr, MemRefType
from xdsl.ir import Block, Operation, SSAValue

from strato.dialects.loop import ForOp, YieldOp, is_reduction_loop, loop_stage
from strato.schedule.run_time_tiles import defined_outside, only_loop_in, plain_loop

_DYNAMIC = memref.DYNAMIC_INDEX

Monomial = tuple[int, Counter]
"""A product: its constant factor and how many times each SSA value appears in it."""


def coalesce_contiguous_nests(block: Block) -> list[ForOp]:
    """Rewrite every coalescible nest at the top of `block` (a kernel's body) as one
    loop (see the module docstring); the loops made."""
    made: list[ForOp] = []
    for op in list(block.ops):
        if isinstance(op, ForOp):
            nest = _nest(op)
            if nest is not None:
                made.append(_coalesce(nest))
    return made


def _nest(outer: ForOp) -> list[ForOp] | None:
    """The perfect nest from `outer` when it can run as one loop: loops of one stage
    over result axes, from 0 by 1, to bounds known before it (one at least a run-time
    value), around a straight-line body whose every access is contiguous over them or
    moves with none of them."""
    if not plain_loop(outer) or is_reduction_loop(outer):
        return None
    nest = [outer]
    while (inner := only_loop_in(nest[-1])) is not None:
        if not plain_loop(inner) or is_reduction_loop(inner) or loop_stage(inner) != loop_stage(outer):
            return None
        nest.append(inner)
    body = nest[-1].body.block
    if len(nest) < 2 or any(op.regions for op in body.ops):
        return None
    bounds = [loop.bound for loop in nest]
    if not any(isinstance(bound, SSAValue) for bound in bounds):
        return None
    if any(isinstance(b, SSAValue) and not defined_outside(b, outer) for b in bounds):
        return None
    ivs = [loop.induction_var for loop in nest]
    accesses: set[Operation] = set()
    for op in body.ops:
        if isinstance(op, memref.LoadOp | memref.StoreOp):
            indices = list(op.indices)
            if indices == ivs and _contiguous(op.memref, bounds):
                accesses.add(op)
    for iv in ivs:
        if any(use.operation not in accesses for use in iv.uses):
            return None
    return nest


def _contiguous(view: SSAValue, bounds: Sequence[int | SSAValue]) -> bool:
    """Whether `view` is a flat buffer seen row-major with `bounds` as its sizes."""
    cast = view.owner
    if not isinstance(cast, memref.ReinterpretCastOp):
        return False
    source = cast.source.type
    if not isinstance(source, MemRefType) or len(source.get_shape()) != 1:
        return False
    if list(cast.static_offsets.get_values()) != [0]:
        return False
    sizes = _entries(cast.static_sizes.get_values(), cast.sizes)
    strides = _entries(cast.static_strides.get_values(), cast.strides)
    if len(sizes) != len(bounds) or len(strides) != len(bounds):
        return False
    if any(_monomial(size) != _monomial(bound) for size, bound in zip(sizes, bounds, strict=True)):
        return False
    expected: Monomial = (1, Counter())
    for size, stride in zip(reversed(sizes), reversed(strides), strict=True):
        if _monomial(stride) != expected:
            return False
        expected = _product(expected, _monomial(size))
    return True


def _entries(static: Sequence[int], dynamic: Sequence[SSAValue]) -> list[int | SSAValue]:
    """A reinterpret_cast's offsets, sizes or strides: its static values, and its
    operands where they are dynamic."""
    given = iter(dynamic)
    return [next(given) if value == _DYNAMIC else value for value in static]


def _monomial(value: int | SSAValue) -> Monomial:
    """`value` as a product of constants and the values it multiplies (through
    `arith.muli`)."""
    if isinstance(value, int):
        return value, Counter()
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data, Counter()
    if isinstance(owner, arith.MuliOp):
        return _product(_monomial(owner.lhs), _monomial(owner.rhs))
    return 1, Counter({value: 1})


def _product(a: Monomial, b: Monomial) -> Monomial:
    return a[0] * b[0], a[1] + b[1]


def product_loop(
    nest: Sequence[ForOp], counted: Sequence[ForOp], suffix: str
) -> tuple[ForOp, Block, list[SSAValue]]:
    """A loop, not yet inserted, over the product of the bounds of `counted` (loops of
    the perfect nest `nest`, outermost first), computed right before `nest[0]`; named
    after all of the nest's axes and `suffix`, with the outer loop's kind and
    attributes. Returns it, its body and the bounds (as values, static ones made
    constants before the nest)."""
    outer = nest[0]
    block = outer.parent_block()
    assert block is not None
    bounds: list[SSAValue] = []
    for loop in counted:
        bound = loop.bound
        if isinstance(bound, int):
            constant = arith.ConstantOp(IntegerAttr.from_index_int_value(bound))
            block.insert_op_before(constant, outer)
            bound = constant.result
        bounds.append(bound)
    total = bounds[0]
    for bound in bounds[1:]:
        product = arith.MuliOp(total, bound)
        block.insert_op_before(product, outer)
        total = product.result
    axes = [loop.axis.data if loop.axis is not None else "?" for loop in nest]
    made, body = ForOp.build(0, total, 1, outer.loop_kind, ".".join([*axes, suffix]))
    made.induction_var.name_hint = "_".join([*axes, suffix])
    made.attributes.update(outer.attributes)
    return made, body, bounds


def _coalesce(nest: list[ForOp]) -> ForOp:
    """The nest as one loop over the product of its bounds, which replaces it."""
    outer = nest[0]
    block = outer.parent_block()
    assert block is not None
    flat, body, _ = product_loop(nest, nest, "flat")
    terminator = body.last_op
    assert terminator is not None
    index = flat.induction_var
    for op in list(nest[-1].body.block.ops):
        if isinstance(op, YieldOp):
            continue
        op.detach()
        if isinstance(op, memref.LoadOp | memref.StoreOp) and op.indices and op.indices[0] in {
            loop.induction_var for loop in nest
        }:
            source = op.memref.owner.source  # type: ignore[union-attr]
            if isinstance(op, memref.LoadOp):
                new: Operation = memref.LoadOp.get(source, [index])
                op.results[0].replace_all_uses_with(new.results[0])
                new.results[0].name_hint = op.results[0].name_hint
            else:
                new = memref.StoreOp.get(op.value, source, [index])
            op.erase()
            op = new
        body.insert_op_before(op, terminator)
    block.insert_op_before(flat, outer)
    outer.detach()
    outer.erase()
    return flat


__all__ = ["coalesce_contiguous_nests", "product_loop"]
