"""Full unrolling of `unrolled` loops, at the loop level, before lowering to llvm.

An `unrolled` loop is replaced by one copy of its body per iteration, each with the
induction variable replaced by its constant value; nested unrolled loops are unrolled
innermost first. With every index constant, a small local buffer indexed only by
unrolled loops is accessed at static offsets, which LLVM's scalar replacement turns
into registers (the accumulator tile of a register-blocked kernel).

    loop.for %i = 0 to 2 unrolled axis "i" {      %c0 = arith.constant 0 : index
      memref.store %x, %b[%i] : memref<2xf32>  ->  memref.store %x, %b[%c0] : memref<2xf32>
    }                                              %c1 = arith.constant 1 : index
                                                   memref.store %x, %b[%c1] : memref<2xf32>
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Operation, SSAValue

from strato.dialects.loop import ForOp, LoopKind, YieldOp

MAX_UNROLLED_ITERATIONS = 4096
"""An `unrolled` loop with more iterations is generated as a serial loop: code size
would grow past any benefit (schedules unroll small register tiles)."""


def unroll_loop(loop: ForOp) -> None:
    """Replace `loop` by copies of its body, one per iteration, in place."""
    block = loop.parent_block()
    assert block is not None
    body = loop.body.block
    for iteration in range(loop.lb.data, loop.ub.data, loop.step.data):
        constant = arith.ConstantOp.from_int_and_width(iteration, IndexType())
        block.insert_op_before(constant, loop)
        mapping: dict[SSAValue, SSAValue] = {body.args[0]: constant.result}
        for op in body.ops:
            if isinstance(op, YieldOp):
                continue
            clone = op.clone(mapping)
            # later ops of the copy use this op's results through the copy
            mapping.update(zip(op.results, clone.results, strict=True))
            block.insert_op_before(clone, loop)
    loop.detach()
    loop.erase()


def _unrolled_loops_innermost_first(root: Operation) -> list[ForOp]:
    loops = [
        op
        for op in root.walk()
        if isinstance(op, ForOp) and op.loop_kind == LoopKind.UNROLLED
    ]
    return loops[::-1]  # walk() is pre-order: every loop comes before the ones it holds


def unroll_loops(module: ModuleOp) -> None:
    """Fully unroll every `unrolled` loop of `module` with at most
    `MAX_UNROLLED_ITERATIONS` iterations."""
    for loop in _unrolled_loops_innermost_first(module):
        if loop.trip_count <= MAX_UNROLLED_ITERATIONS:
            unroll_loop(loop)
