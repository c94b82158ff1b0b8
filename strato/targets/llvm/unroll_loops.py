"""`unrolled` loops, at the loop level, before lowering to llvm: those inside a
vectorized loop, and those a schedule annotates `unroll.explicit`, are unrolled here;
the others are left to LLVM.

Vector code is generated from straight-line bodies, so an `unrolled` loop inside a
`vectorized` one is replaced by one copy of its body per iteration, each with the
induction variable replaced by its constant value (nested ones innermost first):

    loop.for %i = 0 to 2 unrolled axis "i" {      %c0 = arith.constant 0 : index
      memref.store %x, %b[%i] : memref<2xf32>  ->  memref.store %x, %b[%c0] : memref<2xf32>
    }                                              %c1 = arith.constant 1 : index
                                                   memref.store %x, %b[%c1] : memref<2xf32>

Every other `unrolled` loop stays a loop: the lowering marks its back edge
(`strato.loop_kind = "unrolled"`) and LLVM IR emission gives that branch a loop id with
`llvm.loop.unroll.full`, so LLVM unrolls it fully before its scalar replacement turns a
small local buffer indexed only by unrolled loops into registers (the accumulator tile of
a register-blocked kernel). The code is the same as unrolling here, but the lowering,
the vector code generation and the emission work on one copy of the body instead of one
per iteration (a register-tiled convolution is 8-10x smaller): ResNet-18 compiles in
less than half the time. A loop of more than `MAX_UNROLLED_ITERATIONS` iterations
becomes a serial loop either way.

A schedule that needs the copies themselves at the loop level annotates the loop
(`sch.annotate(loop, EXPLICIT_UNROLL)`): the injective template's transposed blocks are
copies of a vectorized loop side by side, which the vector code generation moves
together (`vectorize_loops`).
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Operation, SSAValue

from strato.dialects.loop import ForOp, LoopKind, LoopKindAttr, YieldOp
from strato.walk import ops_under

EXPLICIT_UNROLL = "unroll.explicit"
"""The annotation of an `unrolled` loop to unroll here wherever it is."""

MAX_UNROLLED_ITERATIONS = 4096
"""An `unrolled` loop with more iterations is generated as a serial loop: code size
would grow past any benefit (schedules unroll small register tiles)."""


def unroll_loop(loop: ForOp) -> None:
    """Replace `loop` by copies of its body, one per iteration, in place."""
    block = loop.parent_block()
    assert block is not None
    body = loop.body.block
    for iteration in range(loop.lb.data, loop.static_ub, loop.step.data):
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
        for op in ops_under(root)
        if isinstance(op, ForOp) and op.loop_kind == LoopKind.UNROLLED
    ]
    return loops[::-1]  # walk() is pre-order: every loop comes before the ones it holds


def unroll_loops(module: ModuleOp) -> None:
    """Unroll the `unrolled` loops of `module` that vector code needs unrolled, and
    make serial those of more than `MAX_UNROLLED_ITERATIONS` iterations (see the module
    docstring)."""
    for loop in _unrolled_loops_innermost_first(module):
        if loop.is_dynamic or loop.trip_count > MAX_UNROLLED_ITERATIONS:
            loop.kind = LoopKindAttr(LoopKind.SERIAL)
        elif EXPLICIT_UNROLL in loop.attributes or _inside_vectorized(loop):
            unroll_loop(loop)


def _inside_vectorized(loop: ForOp) -> bool:
    parent = loop.parent_op()
    while parent is not None:
        if isinstance(parent, ForOp) and parent.loop_kind == LoopKind.VECTORIZED:
            return True
        parent = parent.parent_op()
    return False
