"""Lowering of upstream `scf.for`, `scf.if` and `scf.while` to llvm-dialect control flow.

`scf.for` becomes a header/body/latch CFG whose header carries the induction
variable and the loop-carried values; `scf.if` becomes a conditional branch to its
regions, which branch on to a continuation block carrying its results; `scf.while`
becomes its before region as the loop's header, branching on its condition to the after
region (which branches back) or out.

    %r = scf.if %c -> f32 { scf.yield %a : f32 } else { scf.yield %b : f32 }
->
      llvm.cond_br %c, ^then, ^else
    ^then:
      llvm.br ^continue(%a : f32)
    ^else:
      llvm.br ^continue(%b : f32)
    ^continue(%r: f32):
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import llvm, scf
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import BlockInsertPoint, InsertPoint, Rewriter

from strato.targets.llvm import builders
from strato.targets.llvm.lowering_pattern import LLVMLoweringPattern
from strato.targets.llvm.type_conversion import (
    cast_one,
    llvm_type,
    materialize_llvm,
    materialize_llvm_all,
)


def _retype_block_args(
    rewriter: PatternRewriter, block: Block, values: list[SSAValue]
) -> None:
    """Replace the arguments of `block` by `values` (llvm-typed), through casts
    placed at the start of the block, and drop the arguments."""
    _replace_block_args(rewriter, block, list(block.args), values)


def _replace_block_args(
    rewriter: PatternRewriter, block: Block, args: list[SSAValue], values: list[SSAValue]
) -> None:
    for arg, value in zip(args, values, strict=True):
        if arg.type == value.type:
            rewriter.replace_all_uses_with(arg, value)
            continue
        cast, back = cast_one(value, arg.type)
        rewriter.insert(cast, InsertPoint.at_start(block))
        rewriter.replace_all_uses_with(arg, back)
    for arg in reversed(args):
        block.erase_arg(arg)  # type: ignore[arg-type]


BranchFactory = Callable[[list[SSAValue]], list[Operation]]
"""Builds the ops (ending in a branch) that replace an `scf.yield` of some values."""


def _replace_yields(
    rewriter: PatternRewriter, region: Region, make_branch: BranchFactory
) -> None:
    for block in list(region.blocks):
        terminator = block.last_op
        if not isinstance(terminator, scf.YieldOp):
            continue
        values = materialize_llvm_all(rewriter, terminator, terminator.arguments)
        rewriter.replace(terminator, make_branch(values), [])


def _branch_to(dest: Block) -> BranchFactory:
    return lambda values: [builders.branch(dest, values)]


def _step_and_branch_to(dest: Block, iv: SSAValue, step: SSAValue) -> BranchFactory:
    def make(values: list[SSAValue]) -> list[Operation]:
        next_iv = builders.int_binary(llvm.AddOp, iv, step)
        return [next_iv, builders.branch(dest, [next_iv.results[0], *values])]

    return make


def _results_from_block_args(
    rewriter: PatternRewriter, op: Operation, block: Block
) -> None:
    """Replace the results of `op` by the (llvm-typed) arguments of `block`."""
    for result, arg in zip(op.results, block.args, strict=True):
        if result.type == arg.type:
            rewriter.replace_all_uses_with(result, arg)
            continue
        cast, back = cast_one(arg, result.type)
        rewriter.insert(cast, InsertPoint.at_start(block))
        rewriter.replace_all_uses_with(result, back)


class ForOpLowering(LLVMLoweringPattern):
    source_op = scf.ForOp

    def lower(self, op: scf.ForOp, rewriter: PatternRewriter) -> None:
        lb, ub, step = materialize_llvm_all(rewriter, op, [op.lb, op.ub, op.step])
        inits = materialize_llvm_all(rewriter, op, op.iter_args)
        before = op.parent_block()
        assert before is not None
        exit_block = before.split_before(op)
        exit_block.name_hint = "for_exit"

        header = Block(arg_types=[lb.type, *(v.type for v in inits)])
        header.name_hint = "for_header"
        Rewriter.insert_block(header, BlockInsertPoint.before(exit_block))
        iv = header.args[0]

        body_blocks = list(op.body.blocks)
        body_blocks[0].name_hint = "for_body"
        _replace_yields(rewriter, op.body, _step_and_branch_to(header, iv, step))
        _retype_block_args(rewriter, body_blocks[0], list(header.args))

        rewriter.insert(
            builders.branch(header, [lb, *inits]), InsertPoint.at_end(before)
        )
        in_range = builders.icmp("slt", iv, ub)
        test = builders.cond_branch(in_range.res, body_blocks[0], [], exit_block, [])
        rewriter.insert([in_range, test], InsertPoint.at_end(header))

        # after the loop, its results are the carried values the header last saw
        for result, carried in zip(op.results, header.args[1:], strict=True):
            if result.type == carried.type:
                rewriter.replace_all_uses_with(result, carried)
                continue
            cast, back = cast_one(carried, result.type)
            rewriter.insert(cast, InsertPoint.at_start(exit_block))
            rewriter.replace_all_uses_with(result, back)

        rewriter.inline_region(op.body, BlockInsertPoint.before(exit_block))
        rewriter.erase(op)


class IfOpLowering(LLVMLoweringPattern):
    source_op = scf.IfOp

    def lower(self, op: scf.IfOp, rewriter: PatternRewriter) -> None:
        cond = materialize_llvm(rewriter, op, op.cond)
        before = op.parent_block()
        assert before is not None
        result_types = [llvm_type(t) for t in op.result_types]
        continuation = before.split_before(op, arg_types=result_types)
        continuation.name_hint = "if_end"
        _results_from_block_args(rewriter, op, continuation)

        then_entry = op.true_region.first_block
        assert then_entry is not None
        then_entry.name_hint = "if_then"
        _replace_yields(rewriter, op.true_region, _branch_to(continuation))
        else_entry = op.false_region.first_block
        if else_entry is not None:
            else_entry.name_hint = "if_else"
            _replace_yields(rewriter, op.false_region, _branch_to(continuation))
            rewriter.inline_region(
                op.false_region, BlockInsertPoint.before(continuation)
            )
        rewriter.inline_region(
            op.true_region, BlockInsertPoint.before(else_entry or continuation)
        )

        false_dest = else_entry if else_entry is not None else continuation
        branch = builders.cond_branch(cond, then_entry, [], false_dest, [])
        rewriter.insert(branch, InsertPoint.at_end(before))
        rewriter.erase(op)


def _llvm_typed_args(rewriter: PatternRewriter, block: Block) -> None:
    """Give `block` llvm-typed arguments in place of its own (casts back at its start)."""
    old_args: list[SSAValue] = list(block.args)
    new_args = [block.insert_arg(llvm_type(a.type), len(block.args)) for a in old_args]
    _replace_block_args(rewriter, block, old_args, list(new_args))


class WhileOpLowering(LLVMLoweringPattern):
    """scf.while: the before region is the loop's header, which branches on its
    `scf.condition` to the after region (the body, which branches back to the header)
    or out of the loop with the values the condition forwards (the op's results)."""

    source_op = scf.WhileOp

    def lower(self, op: scf.WhileOp, rewriter: PatternRewriter) -> None:
        inits = materialize_llvm_all(rewriter, op, op.arguments)
        before = op.parent_block()
        assert before is not None
        exit_block = before.split_before(op, arg_types=[llvm_type(t) for t in op.result_types])
        exit_block.name_hint = "while_exit"
        _results_from_block_args(rewriter, op, exit_block)

        header = op.before_region.block
        header.name_hint = "while_header"
        body = op.after_region.block
        body.name_hint = "while_body"
        _llvm_typed_args(rewriter, header)
        _llvm_typed_args(rewriter, body)

        condition = header.last_op
        assert isinstance(condition, scf.ConditionOp)
        go = materialize_llvm(rewriter, condition, condition.condition)
        forwarded = materialize_llvm_all(rewriter, condition, condition.args)
        branch = builders.cond_branch(go, body, forwarded, exit_block, forwarded)
        rewriter.replace(condition, branch, [])
        _replace_yields(rewriter, op.after_region, _branch_to(header))

        rewriter.insert(builders.branch(header, inits), InsertPoint.at_end(before))
        rewriter.inline_region(op.after_region, BlockInsertPoint.before(exit_block))
        rewriter.inline_region(op.before_region, BlockInsertPoint.before(body))
        rewriter.erase(op)


def scf_to_llvm_patterns() -> list[LLVMLoweringPattern]:
    """The patterns lowering `scf.for`, `scf.if` and `scf.while` to the llvm dialect."""
    return [ForOpLowering(), IfOpLowering(), WhileOpLowering()]
