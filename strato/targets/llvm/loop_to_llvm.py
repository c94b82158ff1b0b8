"""Lowering of `loop.for` to llvm-dialect control flow.

A loop becomes a header block that tests the induction variable, the body, and a
latch that steps it:

    loop.for %i = 0 to 8 step 2 { body(%i) }
->
      %lb = llvm.mlir.constant(0 : i64) : i64
      llvm.br ^header(%lb : i64)
    ^header(%iv: i64):
      %ub = llvm.mlir.constant(8 : i64) : i64
      %c = llvm.icmp "slt" %iv, %ub : i64
      llvm.cond_br %c, ^body, ^exit
    ^body:
      body(%iv)
      %step = llvm.mlir.constant(2 : i64) : i64
      %next = llvm.add %iv, %step overflow<nsw> : i64
      llvm.br ^header(%next : i64)
    ^exit:

Every loop kind computes the same values as a serial loop. `unrolled` and `vectorized`
loops are replaced before this lowering runs (`unroll_loops`, `vectorize_loops`), and
outermost `parallel` loops become tasks of the thread pool (`parallel_outlining`); the
loops that reach it are serial and virtual-thread loops, parallel loops that run
serially (on one thread, nested in a task, or with a body the pool cannot run), and the
vectorized or unrolled loops those steps leave as loops (see their docstrings for when).
The kind selects its own lowering, and the latch branch of a non-serial loop carries
`strato.loop_kind` (for an unrolled loop, LLVM IR emission turns it into a loop id
asking LLVM to unroll it fully).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from xdsl.dialects import llvm
from xdsl.dialects.builtin import StringAttr, UnrealizedConversionCastOp
from xdsl.ir import Block
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import BlockInsertPoint, InsertPoint, Rewriter

from strato.dialects.loop import ForOp, LoopKind, YieldOp
from strato.targets.llvm import builders
from strato.targets.llvm.lowering_pattern import LLVMLoweringPattern
from strato.targets.llvm.type_conversion import INDEX_LLVM_TYPE, materialize_llvm

LOOP_KIND_ATTR = "strato.loop_kind"
"""Discardable attribute on the back-edge branch of a lowered non-serial loop."""


def _block_name(loop: ForOp, part: str) -> str:
    return f"{loop.axis.data}_{part}" if loop.axis is not None else f"loop_{part}"


def lower_loop_as_serial(loop: ForOp, rewriter: PatternRewriter) -> None:
    """Replace `loop` by a header/body/latch CFG in its parent region."""
    before = loop.parent_block()
    assert before is not None
    # a run-time bound: the index value as the llvm integer it is lowered to, cast
    # ahead of the loop (in the block that enters it)
    dynamic_ub = None if loop.dynamic_ub is None else materialize_llvm(rewriter, loop, loop.dynamic_ub)
    exit_block = before.split_before(loop)
    exit_block.name_hint = _block_name(loop, "exit")

    header = Block(arg_types=[INDEX_LLVM_TYPE])
    header.name_hint = _block_name(loop, "header")
    iv = header.args[0]
    iv.name_hint = loop.axis.data if loop.axis is not None else "iv"
    Rewriter.insert_block(header, BlockInsertPoint.before(exit_block))

    body_blocks = list(loop.body.blocks)
    body_entry = body_blocks[0]
    body_entry.name_hint = _block_name(loop, "body")

    lb = builders.index_constant(loop.lb.data)
    rewriter.insert(
        [lb, builders.branch(header, [lb.result])], InsertPoint.at_end(before)
    )

    if loop.ub is not None:
        bound = builders.index_constant(loop.ub.data)
        ub, bound_ops = bound.result, [bound]
    else:
        ub, bound_ops = dynamic_ub, []
    in_range = builders.icmp("slt", iv, ub)
    test = builders.cond_branch(in_range.res, body_entry, [], exit_block, [])
    rewriter.insert([*bound_ops, in_range, test], InsertPoint.at_end(header))

    # the body sees the induction variable as an index again
    old_iv = body_entry.args[0]
    index_iv, index_value = UnrealizedConversionCastOp.cast_one(iv, old_iv.type)
    rewriter.insert(index_iv, InsertPoint.at_start(body_entry))
    rewriter.replace_all_uses_with(old_iv, index_value)
    body_entry.erase_arg(old_iv)

    for block in body_blocks:
        terminator = block.last_op
        if not isinstance(terminator, YieldOp):
            continue
        step = builders.index_constant(loop.step.data)
        next_iv = builders.int_binary(llvm.AddOp, iv, step.result, nsw=True)
        back_edge = builders.branch(header, [next_iv.results[0]])
        if loop.loop_kind != LoopKind.SERIAL:
            back_edge.attributes[LOOP_KIND_ATTR] = StringAttr(loop.loop_kind.value)
        rewriter.replace(terminator, [step, next_iv, back_edge], [])

    rewriter.inline_region(loop.body, BlockInsertPoint.before(exit_block))
    rewriter.erase(loop)


class ForOpLowering(LLVMLoweringPattern):
    """`loop.for` to a CFG, by the lowering its kind selects."""

    source_op = ForOp

    lowering_by_kind: ClassVar[
        dict[LoopKind, Callable[[ForOp, PatternRewriter], None]]
    ] = {
        LoopKind.SERIAL: lower_loop_as_serial,
        # the parallel loops that reach this pattern run serially (parallel_outlining
        # turned the others into tasks of the pool); vectorized and unrolled loops that
        # reach it are those vector code generation and unrolling leave as loops
        LoopKind.PARALLEL: lower_loop_as_serial,
        LoopKind.VECTORIZED: lower_loop_as_serial,
        LoopKind.UNROLLED: lower_loop_as_serial,
        LoopKind.VIRTUAL_THREAD: lower_loop_as_serial,
    }

    def lower(self, op: ForOp, rewriter: PatternRewriter) -> None:
        self.lowering_by_kind[op.loop_kind](op, rewriter)


def loop_to_llvm_patterns() -> list[LLVMLoweringPattern]:
    """The patterns lowering the `loop` dialect to the llvm dialect."""
    return [ForOpLowering()]
