"""Fast-math flags that let LLVM reassociate reductions and fuse their multiply-adds.

A reduction's update `acc[...] = acc[...] + a * b` is a chain of `fadd`s through one
location. Without `reassoc`, LLVM must keep that chain in order: it can neither
vectorize it nor keep several partial sums; without `contract` it cannot fuse the
multiply into the add (one FMA instead of two roundings). A reduction in a te program
says the order of its terms does not matter, so the update's `addf`/`mulf` and the sums
and products that only feed it (a blocked convolution adds eight products before
accumulating) get `reassoc` and `contract`; other flags (`nnan`, `ninf`, ...) are never
added, and flags an op already has are kept.

    %acc = memref.load %y[%i] : memref<8xf32>
    %s = arith.addf %acc, %p : f32                 ->  arith.addf %acc, %p fastmath<reassoc,contract>
    memref.store %s, %y[%i] : memref<8xf32>
"""

from __future__ import annotations

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from strato.walk import ops_under

_REDUCTION_FLAGS = ("reassoc", "contract")


def same_index(a: SSAValue, b: SSAValue, depth: int = 8) -> bool:
    """Whether two index values are the same computation of the same values (pure
    arith ops compared structurally, `depth` levels deep)."""
    if a is b:
        return True
    op_a, op_b = a.owner, b.owner
    if depth == 0 or not isinstance(op_a, Operation) or not isinstance(op_b, Operation):
        return False
    if (
        op_a.name != op_b.name
        or op_a.dialect_name() != "arith"
        or op_a.properties != op_b.properties
        or len(op_a.operands) != len(op_b.operands)
    ):
        return False
    return all(
        same_index(x, y, depth - 1)
        for x, y in zip(op_a.operands, op_b.operands, strict=True)
    )


def _reads_stored_location(value: SSAValue, store: memref.StoreOp) -> bool:
    load = value.owner
    return (
        isinstance(load, memref.LoadOp)
        and load.memref is store.memref
        and all(
            same_index(a, b) for a, b in zip(load.indices, store.indices, strict=True)
        )
    )


def _add_flags(op: Operation) -> None:
    current = op.properties.get("fastmath")
    flags = set(current.data) if isinstance(current, arith.FastMathFlagsAttr) else set()
    op.properties["fastmath"] = arith.FastMathFlagsAttr(
        sorted(flags | set(_REDUCTION_FLAGS))  # type: ignore[arg-type]
    )


def mark_reductions(module: ModuleOp) -> None:
    """Give every float reduction update of `module` `reassoc` and `contract`."""
    for store in ops_under(module):
        if not isinstance(store, memref.StoreOp):
            continue
        update = store.value.owner
        if not isinstance(update, arith.AddfOp | arith.MulfOp):
            continue
        operands = (update.lhs, update.rhs)
        if not any(_reads_stored_location(v, store) for v in operands):
            continue
        _add_flags(update)
        _mark_terms(operands)


def _mark_terms(operands) -> None:
    """The sums and products that only feed a reduction update are its terms (a
    blocked convolution adds eight products in its body before accumulating)."""
    work = list(operands)
    while work:
        value = work.pop()
        term = value.owner
        if isinstance(term, arith.AddfOp | arith.MulfOp) and value.has_one_use():
            _add_flags(term)
            work.extend(term.operands)
