"""Lowering of upstream `cf` branches to the llvm dialect, one pattern per op.

Successor blocks keep their identity; their argument types are converted by the
enclosing function's lowering.

    cf.cond_br %c, ^a(%i : index), ^b   ->   llvm.cond_br %c, ^a(%i : i64), ^b
"""

from __future__ import annotations

from xdsl.dialects import cf
from xdsl.pattern_rewriter import PatternRewriter

from strato.targets.llvm import builders
from strato.targets.llvm.lowering_pattern import LLVMLoweringPattern
from strato.targets.llvm.type_conversion import materialize_llvm, materialize_llvm_all


class BranchOpLowering(LLVMLoweringPattern):
    source_op = cf.BranchOp

    def lower(self, op: cf.BranchOp, rewriter: PatternRewriter) -> None:
        args = materialize_llvm_all(rewriter, op, op.arguments)
        rewriter.replace(op, [builders.branch(op.successor, args)], [])


class ConditionalBranchOpLowering(LLVMLoweringPattern):
    source_op = cf.ConditionalBranchOp

    def lower(self, op: cf.ConditionalBranchOp, rewriter: PatternRewriter) -> None:
        cond = materialize_llvm(rewriter, op, op.cond)
        then_args = materialize_llvm_all(rewriter, op, op.then_arguments)
        else_args = materialize_llvm_all(rewriter, op, op.else_arguments)
        branch = builders.cond_branch(
            cond, op.then_block, then_args, op.else_block, else_args
        )
        rewriter.replace(op, [branch], [])


def cf_to_llvm_patterns() -> list[LLVMLoweringPattern]:
    """The patterns lowering `cf` branches to the llvm dialect."""
    return [BranchOpLowering(), ConditionalBranchOpLowering()]
