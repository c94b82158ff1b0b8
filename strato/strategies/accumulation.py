"""The precision a reduction over 16-bit floats accumulates in.

A sum or product of f16 or bf16 values accumulates in f32 and rounds once, to the
element type, when its result is complete. That is what numpy computes for the
half-precision `sum`, `prod`, `dot` and `matmul` (the reference outputs of ONNX's
tests come from it) and what a user of TVM or MLIR writes for mixed precision (a
reduction into an f32 accumulator, then a cast). Accumulating in the element type
instead would round every partial sum to 11 significant bits: an eight-term dot
product then misses numpy's result by an ulp in several percent of its outputs.

A term of the reduction is computed at the accumulator's precision where that is
exact: a product of two f16 values has at most 22 significant bits, so the body's
final f16 product (seen through selections and negations) is recomputed in f32 from
its widened operands, as an f32 GEMM over the widened inputs adds exact products;
every other term keeps the rounding the body gives it and is extended. A bf16 body
already computes in f32 (`tensor_types.scalar_type`): only its accumulator widens.

    %r = te.reduce "dense" sum (%i, %j) over (%k : 8) : tensor<4x6xf16> {
      ...
      %p = arith.mulf %a, %b : f16
      te.yield %p : f16
    }

becomes

    %acc = te.reduce "dense" sum (%i, %j) over (%k : 8) : tensor<4x6xf32> {
      ...
      %a32 = arith.extf %a : f16 to f32
      %b32 = arith.extf %b : f16 to f32
      %p = arith.mulf %a32, %b32 : f32
      te.yield %p : f32
    }
    %r = te.compute "dense_round" (%i, %j) : tensor<4x6xf16> {
      %v = te.read %acc[%i, %j] : tensor<4x6xf32>
      %h = arith.truncf %v : f32 to f16
      te.yield %h : f16
    }
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import BFloat16Type, Float16Type, f32
from xdsl.ir import Attribute, Block, Operation, SSAValue

from strato.dialects import te
from strato.dialects.tensor_types import scalar_type

_WIDENED_KINDS = frozenset({te.ReduceKind.SUM, te.ReduceKind.PROD})


def accumulator_type(kind: te.ReduceKind, element_type: Attribute) -> Attribute | None:
    """The type a reduction of `kind` over `element_type` accumulates in when that is
    not the element type itself: f32 for a sum or product of f16 or bf16, else None
    (max and min are exact in any type; wider types accumulate in themselves)."""
    if kind in _WIDENED_KINDS and isinstance(element_type, Float16Type | BFloat16Type):
        return f32
    return None


def widen_term(block: Block, term: SSAValue, accumulator: Attribute) -> SSAValue:
    """`term`, the value a reduction body of `block` yields, as a value of type
    `accumulator`; new ops go at the end of `block` and the f16 ops they replace are
    erased when nothing else uses them."""
    widening = _Widening(block, accumulator)
    wide = widening.term(term, products=True)
    rebuilt = {id(op) for op in widening.replaced}
    dead = [op for op in widening.replaced if not any(r.uses for r in op.results)]
    while dead:
        op = dead.pop()
        if op.parent is not block:
            continue  # reached twice
        operands = [value.owner for value in op.operands]
        block.erase_op(op)
        dead.extend(
            owner
            for owner in operands
            if id(owner) in rebuilt and not any(r.uses for r in owner.results)
        )
    return wide


class _Widening:
    """Rebuilds one reduction term at the accumulator's precision."""

    def __init__(self, block: Block, accumulator: Attribute):
        self.block = block
        self.accumulator = accumulator
        self.replaced: list[Operation] = []
        self._done: dict[tuple[SSAValue, bool], SSAValue] = {}

    def term(self, value: SSAValue, *, products: bool) -> SSAValue:
        """`value` at the accumulator's precision; `products` says whether an f16
        product here may be recomputed exactly (not under another product)."""
        if value.type == self.accumulator:
            return value
        key = (value, products)
        if key not in self._done:
            self._done[key] = self._rebuild(value, products)
        return self._done[key]

    def _rebuild(self, value: SSAValue, products: bool) -> SSAValue:
        op = value.owner
        if isinstance(op, arith.SelectOp):
            self.replaced.append(op)
            if_true = self.term(op.lhs, products=products)
            if_false = self.term(op.rhs, products=products)
            return self._append(arith.SelectOp(op.cond, if_true, if_false))
        if isinstance(op, arith.NegfOp):
            self.replaced.append(op)
            return self._append(arith.NegfOp(self.term(op.operand, products=products)))
        if products and isinstance(op, arith.MulfOp) and isinstance(value.type, Float16Type):
            self.replaced.append(op)
            lhs = self.term(op.lhs, products=False)
            rhs = self.term(op.rhs, products=False)
            return self._append(arith.MulfOp(lhs, rhs))
        return self._append(arith.ExtFOp(value, self.accumulator))

    def _append(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]


def round_accumulated(block: Block, value: SSAValue, element_type: Attribute) -> SSAValue:
    """An accumulated value as the stage-body scalar of `element_type`: f16 rounds
    (`arith.truncf`); a bf16 scalar is an f32, rounded when it is stored."""
    scalar = scalar_type(element_type)
    if value.type == scalar:
        return value
    return _append(block, arith.TruncFOp(value, scalar))


def _append(block: Block, op: Operation) -> SSAValue:
    block.add_op(op)
    return op.results[0]
