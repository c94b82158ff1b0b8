"""The passes of the act dialect: fuse x * sigmoid(x) into act.silu, and expand it back."""

from dataclasses import dataclass

from strato import api
from strato.dialects import graph
from strato_silu.dialect import SiluOp


class FuseSiluPattern(api.RewritePattern):
    """graph.mul of x and graph.sigmoid(x), in either order -> act.silu x."""

    @api.rewrite_pattern
    def match_and_rewrite(self, op: graph.MulOp, rewriter: api.Rewriter) -> None:
        for x, gate in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            sigmoid = gate.owner
            if isinstance(sigmoid, graph.SigmoidOp) and sigmoid.input == x and x.type == op.result.type:
                rewriter.replace(op, SiluOp(x))
                if not sigmoid.result.uses:
                    rewriter.erase(sigmoid)
                return


class ExpandSiluPattern(api.RewritePattern):
    """act.silu x -> graph.mul x, graph.sigmoid(x)."""

    @api.rewrite_pattern
    def match_and_rewrite(self, op: SiluOp, rewriter: api.Rewriter) -> None:
        sigmoid = graph.SigmoidOp(op.input)
        rewriter.insert(sigmoid, api.InsertPoint.before(op))
        rewriter.replace(op, graph.MulOp(op.input, sigmoid.result))


@dataclass(frozen=True)
class ActFuseSiluPass(api.Pass):
    """Fuse x * sigmoid(x) into one act.silu op.

    Requires: graph-level functions. Leaves illegal: nothing (a sigmoid with other
    users stays).

    Before:

        %s = graph.sigmoid %x : tensor<2x4xf32>
        %y = graph.mul %x, %s : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>

    After:

        %y = act.silu %x : tensor<2x4xf32>
    """

    name = "act-fuse-silu"

    def apply(self, ctx: api.Context, op: api.ModuleOp) -> None:
        api.rewrite_module(op, [FuseSiluPattern()])


@dataclass(frozen=True)
class ActExpandSiluPass(api.Pass):
    """Lower every act.silu to graph.sigmoid and graph.mul.

    Requires: graph-level functions. Leaves illegal: the act dialect.

    Before:

        %y = act.silu %x : tensor<2x4xf32>

    After:

        %s = graph.sigmoid %x : tensor<2x4xf32>
        %y = graph.mul %x, %s : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    """

    name = "act-expand-silu"

    def apply(self, ctx: api.Context, op: api.ModuleOp) -> None:
        api.rewrite_module(op, [ExpandSiluPattern()])
