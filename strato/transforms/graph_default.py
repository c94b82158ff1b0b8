"""graph-default: the target-neutral graph-level optimizations, in order.

Make each region of a run-time branch a function of its own (graph-outline-branches),
unroll recurrent layers into their time steps (graph-unroll-recurrences), simplify
for inference (fold batch norms into convolutions and dense layers, drop
identities and dropouts, merge reshapes and transposes), fold constant subgraphs, raise
exported GELU and layer-norm chains into their ops (graph-raise-composites), drop
convolution taps that read only padding (graph-prune-conv-taps), remove
common subexpressions and dead ops, pad convolutions' output channels that no block
divides (graph-pad-channels), move convolution chains to the blocked NCHW{c} layout
(blocks of `block` channels, or of `min_block` where `block` does not divide them), group
ops into kernels (graph-fuse-ops), and plan the memory of the intermediates. Each step is
a pass of its own; this one only names the sequence (`graph_default_passes`). A target's
graph stage runs the same passes with what its machine adds (the llvm target packs dense
weights into GEMM panels before fusing: `strato.targets.llvm.target`).

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
from xdsl.transforms.common_subexpression_elimination import (
    CommonSubexpressionElimination,
)
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from strato.transforms.graph_alter_layout import GraphAlterLayoutPass
from strato.transforms.graph_fold_constants import GraphFoldConstantsPass
from strato.transforms.graph_fuse_ops import GraphFuseOpsPass
from strato.transforms.graph_outline_branches import GraphOutlineBranchesPass
from strato.transforms.graph_pad_channels import GraphPadChannelsPass
from strato.transforms.graph_plan_memory import GraphPlanMemoryPass
from strato.transforms.graph_prune_conv_taps import GraphPruneConvTapsPass
from strato.transforms.graph_raise_composites import GraphRaiseCompositesPass
from strato.transforms.graph_simplify_inference import GraphSimplifyInferencePass
from strato.transforms.graph_unroll_recurrences import GraphUnrollRecurrencesPass

DEFAULT_BLOCK = 16
"""Channels a block of the NCHW{c} layout (one AVX-512 vector of fp32, the lanes of the
conv2d NCHW{c} template), or `DEFAULT_MIN_BLOCK` where 16 does not divide the channels
(MobileNetV2's 24-channel stages), so such networks stay blocked from end to end."""
DEFAULT_MIN_BLOCK = 8


def graph_optimization_passes(block: int = DEFAULT_BLOCK, min_block: int = DEFAULT_MIN_BLOCK) -> list[ModulePass]:
    """Outline run-time branches, unroll recurrences, simplify, fold, raise exported GELU
    and layer-norm chains, prune dead convolution taps, cse, dce, pad odd channel counts
    and the blocked layout:
    the graph passes before fusion."""
    return [
        GraphOutlineBranchesPass(),
        GraphUnrollRecurrencesPass(),
        GraphSimplifyInferencePass(),
        GraphFoldConstantsPass(),
        GraphRaiseCompositesPass(),
        GraphPruneConvTapsPass(),
        CommonSubexpressionElimination(),
        DeadCodeElimination(),
        GraphPadChannelsPass(multiple=block, min_multiple=min_block),
        GraphAlterLayoutPass(block=block, min_block=min_block),
    ]


def graph_fusion_passes() -> list[ModulePass]:
    """Fusion into kernels, then the memory plan: the graph passes that end the level."""
    return [GraphFuseOpsPass(), GraphPlanMemoryPass()]


def graph_default_passes(block: int = DEFAULT_BLOCK, min_block: int = DEFAULT_MIN_BLOCK) -> list[ModulePass]:
    """The passes graph-default runs, in order."""
    return [*graph_optimization_passes(block, min_block), *graph_fusion_passes()]


@dataclass(frozen=True)
class GraphDefaultPass(ModulePass):
    """Run strato's default graph-level pipeline (simplify, fold, cse, dce, alter layout,
    fuse, plan memory)."""

    name = "graph-default"

    block: int = DEFAULT_BLOCK
    """Channels a block of the NCHW{c} layout."""

    min_block: int = DEFAULT_MIN_BLOCK
    """The block where `block` does not divide the channels."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for graph_pass in graph_default_passes(self.block, self.min_block):
            graph_pass.apply(ctx, op)
