"""graph-fold-constants: evaluate subgraphs whose inputs are all constants.

Every graph op whose operands are all `graph.constant` is replaced by a `graph.constant`
holding its value, computed with the op's reference semantics (`GraphOp.evaluate`).
Repeated to a fixed point, this folds whole constant subgraphs (a transposed weight, a
scaled bias). Constants that lose their last user are erased.

Requires: functions of graph ops. Leaves illegal: nothing.

Before:

    %w = graph.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
    %t = graph.transpose %w [1, 0] : (tensor<1x2xf32>) -> tensor<2x1xf32>
    %y = graph.matmul %x, %t : (tensor<3x2xf32>, tensor<2x1xf32>) -> tensor<3x1xf32>

After:

    %t = graph.constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
    %y = graph.matmul %x, %t : (tensor<3x2xf32>, tensor<2x1xf32>) -> tensor<3x1xf32>
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from strato.dialects import graph
from strato.dialects.tensor_types import array_from_dense, dense_from_array


class FoldConstantOperands(RewritePattern):
    """A graph op with only constant operands -> the constant of its value."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, graph.GraphOp) or isinstance(op, graph.ConstantOp):
            return
        if isinstance(op, graph.FusedOp) or isinstance(op.parent_op(), graph.FusedOp):
            return
        if not op.operands or not all(
            isinstance(o.owner, graph.ConstantOp) for o in op.operands
        ):
            return
        inputs = [array_from_dense(o.owner.value) for o in op.operands]  # type: ignore[union-attr]
        outputs = op.evaluate(inputs)
        constants = [
            graph.ConstantOp(dense_from_array(array, result.type.element_type))  # type: ignore[union-attr]
            for array, result in zip(outputs, op.results, strict=True)
        ]
        for constant, result in zip(constants, op.results):
            constant.result.name_hint = result.name_hint
        producers = {o.owner for o in op.operands}
        rewriter.replace(op, constants, [c.result for c in constants])
        for producer in producers:
            if isinstance(producer, graph.ConstantOp) and not producer.result.uses:
                rewriter.erase(producer)


@dataclass(frozen=True)
class GraphFoldConstantsPass(ModulePass):
    """Fold graph ops whose operands are all constants into constants."""

    name = "graph-fold-constants"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldConstantOperands()).rewrite_module(op)
