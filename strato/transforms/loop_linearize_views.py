"""loop-linearize-views: loads and stores through views of run-time shape, as loads and
stores of the flat buffer at a computed position.

A kernel compiled once for every size takes each buffer flat (`memref<?xf32>`) with
its sizes as `index` arguments, and views it with the shape it computes on
(`memref.reinterpret_cast`, sizes and strides given as values). An access through such
a view becomes an access of the flat buffer at `offset + sum(index_k * stride_k)`,
computed with `arith` on index values, so code generation needs no run-time layout
(it handles flat buffers and those whose only dynamic size is the first):

    %v = memref.reinterpret_cast %x to offset: [0], sizes: [%n, %m], strides: [%m, 1]
        : memref<?xf32> to memref<?x?xf32, strided<[?, 1]>>
    %a = memref.load %v[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
->
    %0 = arith.muli %i, %m : index
    %1 = arith.addi %0, %j : index
    %a = memref.load %x[%1] : memref<?xf32>

Only casts whose source is one-dimensional with the identity layout are rewritten (an
element of the source is then its position); the cast goes when no access is left
through it. A view of run-time shape that something other than a load or a store reads
(a copy, a call) is left as it is, and code generation refuses it by name.

Requires: loop-level functions. Leaves illegal: nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp, NoneAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter


def has_static_layout(type_: MemRefType) -> bool:
    """Whether an access to `type_` needs no run-time size: every dimension but the
    first is static, and the layout is the identity."""
    return isinstance(type_.layout, NoneAttr) and all(n >= 0 for n in type_.get_shape()[1:])


def has_flat_source(cast: memref.ReinterpretCastOp) -> bool:
    """Whether `cast` views a one-dimensional buffer of the identity layout (an element
    of it is then its position)."""
    source = cast.source.type
    return (
        isinstance(source, MemRefType)
        and len(source.get_shape()) == 1
        and isinstance(source.layout, NoneAttr)
    )


def _values(static: list[int], dynamic: list[SSAValue]) -> list[int | SSAValue]:
    """The op's mixed list: a static entry, or the next dynamic value in its place."""
    given = iter(dynamic)
    return [next(given) if n == memref.DYNAMIC_INDEX else n for n in static]


def _linear_index(
    cast: memref.ReinterpretCastOp, indices: list[SSAValue], before: Operation
) -> SSAValue:
    """`offset + sum(indices[k] * strides[k])` of `cast`, as index ops before `before`."""
    (offset,) = _values(cast.static_offsets.get_values(), list(cast.offsets))
    strides = _values(cast.static_strides.get_values(), list(cast.strides))
    ops: list[Operation] = []

    def constant(n: int) -> SSAValue:
        op = arith.ConstantOp(IntegerAttr(n, IndexType()))
        ops.append(op)
        return op.result

    terms: list[SSAValue] = []
    for index, stride in zip(indices, strides, strict=True):
        if isinstance(stride, int) and stride == 0:
            continue
        if isinstance(stride, int) and stride == 1:
            terms.append(index)
            continue
        times = arith.MuliOp(index, constant(stride) if isinstance(stride, int) else stride)
        ops.append(times)
        terms.append(times.result)
    if not (isinstance(offset, int) and offset == 0):
        terms.append(constant(offset) if isinstance(offset, int) else offset)
    total: SSAValue | None = None
    for term in terms:
        if total is None:
            total = term
            continue
        plus = arith.AddiOp(total, term)
        ops.append(plus)
        total = plus.result
    if total is None:
        total = constant(0)
    Rewriter.insert_op(ops, InsertPoint.before(before))
    return total


def linearize_views(module: ModuleOp) -> int:
    """Rewrite the loads and stores through the run-time shaped views of `module` (see
    the module docstring); the number rewritten."""
    rewritten = 0
    for op in list(module.walk()):
        if not isinstance(op, memref.LoadOp | memref.StoreOp):
            continue
        buffer, indices = op.memref, list(op.indices)
        cast = buffer.owner
        if not isinstance(cast, memref.ReinterpretCastOp) or not has_flat_source(cast):
            continue
        type_ = cast.result.type
        assert isinstance(type_, MemRefType)
        if has_static_layout(type_) and not cast.offsets and not cast.strides:
            continue  # code generation addresses it as it is
        position = _linear_index(cast, indices, op)
        if isinstance(op, memref.LoadOp):
            new: Operation = memref.LoadOp.get(cast.source, [position])
        else:
            new = memref.StoreOp.get(op.value, cast.source, [position])
        Rewriter.replace_op(op, new)
        rewritten += 1
    for op in list(module.walk()):
        if isinstance(op, memref.ReinterpretCastOp) and not op.result.uses:
            Rewriter.erase_op(op)
    return rewritten


@dataclass(frozen=True)
class LoopLinearizeViewsPass(ModulePass):
    """Loads and stores through views of run-time shape, as accesses of their flat
    buffer (see the module docstring)."""

    name = "loop-linearize-views"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        linearize_views(op)
