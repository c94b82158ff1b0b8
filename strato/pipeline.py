"""The named stages of compilation, shared by `strato.compile` and the CLI tools.

graph --graph-default--> graph (fused kernels) --convert-graph-to-te--> te
      --convert-te-to-loops--> loop --schedule-default--> loop (scheduled)
      --convert-loops-to-llvm--> llvm
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from strato.transforms import get_all_passes

GRAPH_DEFAULT = (
    "graph-simplify-inference,graph-fold-constants,cse,dce,graph-alter-layout{block=16 min_block=8},"
    "graph-pack-dense,graph-fuse-ops,graph-plan-memory"
)
"""The graph-level optimizations, in order (also the pass `graph-default`). Convolutions
are blocked by 16 channels (one AVX-512 vector of fp32 per block, the lanes of the
conv2d NCHW{c} schedule template), or by 8 where 16 does not divide the channels
(MobileNetV2's 24-channel stages), so such networks stay blocked from end to end."""

LOWER_TO_LOOPS = "convert-graph-to-te,te-inline-stages,convert-te-to-loops"
LOWER_TO_LLVM = f"{LOWER_TO_LOOPS},convert-loops-to-llvm"

COMPILE_UNSCHEDULED = f"graph-default,{LOWER_TO_LLVM}"
"""Graph optimizations, then the canonical loop nests lowered as they are (the baseline
of benchmarks/kernels.py)."""

COMPILE = f"graph-default,{LOWER_TO_LOOPS},schedule-default,convert-loops-to-llvm"
"""What `strato.compile` runs: graph optimizations, lowering to loops, the default
schedule of every kernel, then lowering to the llvm dialect (which expands f32 exp, erf
and tanh into arithmetic that vectorizes: strato/targets/llvm/vector_math.py)."""


def run_pipeline(
    ctx: Context,
    module: ModuleOp,
    spec: str,
    callback: Callable[[ModulePass, ModuleOp, ModulePass], None] | None = None,
) -> ModuleOp:
    """Apply the textual pipeline `spec` (strato-opt's `-p` syntax) to `module` in place."""
    pipeline = PassPipeline.parse_spec(get_all_passes(), spec, callback)
    pipeline.apply(ctx, module)
    return module
