"""graph-default: the graph-level optimization pipeline that `strato.compile` runs.

In order: simplify for inference (fold batch norms into convolutions and dense layers,
drop identities and dropouts, merge reshapes and transposes), fold constant subgraphs,
remove common subexpressions and dead ops, move convolution chains to the blocked NCHW{c}
layout, pack the constant weights of dense layers into GEMM panels, group ops into kernels (graph-fuse-ops), and plan the memory of the
intermediates. Each step is a pass of its own; this one only names the sequence
(`strato.pipeline.GRAPH_DEFAULT`).

Requires: functions of graph ops. Leaves illegal: nothing.

Before:

    %w = graph.constant dense<1.0> : tensor<4x4xf32>
    %t = graph.transpose %w [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %y = graph.dense %x, %t : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
    %r = graph.relu %y : tensor<1x4xf32>

After:

    %t = graph.constant dense<1.0> : tensor<4x4xf32>
    %r = graph.fused "dense_relu" out_elemwise_fusable (%x, %t) : (...) -> tensor<1x4xf32> {...}
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass


@dataclass(frozen=True)
class GraphDefaultPass(ModulePass):
    """Run strato's default graph-level pipeline (simplify, fold, cse, dce, alter layout,
    fuse, plan memory)."""

    name = "graph-default"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from strato.pipeline import GRAPH_DEFAULT, run_pipeline

        run_pipeline(ctx, op, GRAPH_DEFAULT)
