"""Pass pipelines in strato-opt's `-p` syntax, with every pass strato knows by name.

    run_pipeline(make_context(), module, "graph-default,convert-graph-to-te,te-inline-stages")
    run_pipeline(ctx, module, f"{LOWER_TO_LOOPS},schedule-default,convert-loops-to-llvm")

The names are those of strato.transforms, of the registered targets (which this module
loads: convert-loops-to-llvm is the llvm target's) and of the loaded plugins. What
`strato.compile` runs is not a string: it is the target's stages
(`strato.targets.registry.Target.stages`), pass instances configured for its machine.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from strato.targets.registry import load_builtin_targets
from strato.transforms import PassFactory, get_all_passes

LOWER_TO_LOOPS = "convert-graph-to-te,te-inline-stages,convert-te-to-loops"
"""From fused graph-level kernels to canonical loop nests."""


def all_passes() -> dict[str, PassFactory]:
    """name -> factory of every pass: strato's, its targets' and the plugins'."""
    load_builtin_targets()
    return get_all_passes()


def run_pipeline(
    ctx: Context,
    module: ModuleOp,
    spec: str,
    callback: Callable[[ModulePass, ModuleOp, ModulePass], None] | None = None,
) -> ModuleOp:
    """Apply the textual pipeline `spec` (strato-opt's `-p` syntax) to `module` in place."""
    pipeline = PassPipeline.parse_spec(all_passes(), spec, callback)
    pipeline.apply(ctx, module)
    return module


__all__ = ["LOWER_TO_LOOPS", "all_passes", "run_pipeline"]
