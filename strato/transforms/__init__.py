"""strato's passes, one a file, registered by CLI name.

The registry is lazy: a name maps to "module:Class" and the module is imported only when
the pass is used, so `strato-opt` starts fast. The file of a pass is its CLI name in
snake case (`convert-graph-to-te` lives in `convert_graph_to_te.py`); a test checks that
every pass file is registered here and that every name resolves.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.passes import ModulePass

PASS_REGISTRY: dict[str, str] = {
    # upstream passes that work on strato's dialects as they are
    "cse": "xdsl.transforms.common_subexpression_elimination:CommonSubexpressionElimination",
    "dce": "xdsl.transforms.dead_code_elimination:DeadCodeElimination",
    "canonicalize": "xdsl.transforms.canonicalize:CanonicalizePass",
    # strato's own
    "convert-graph-to-te": "strato.transforms.convert_graph_to_te:ConvertGraphToTePass",
    "convert-te-to-loops": "strato.transforms.convert_te_to_loops:ConvertTeToLoopsPass",
    "convert-loops-to-llvm": "strato.transforms.convert_loops_to_llvm:ConvertLoopsToLLVMPass",
    "apply-schedule": "strato.transforms.apply_schedule:ApplySchedulePass",
    "schedule-default": "strato.transforms.schedule_default:ScheduleDefaultPass",
    "graph-alter-layout": "strato.transforms.graph_alter_layout:GraphAlterLayoutPass",
    "graph-pack-dense": "strato.transforms.graph_pack_dense:GraphPackDensePass",
    "graph-quantize": "strato.transforms.graph_quantize:GraphQuantizePass",
    "graph-fuse-ops": "strato.transforms.graph_fuse_ops:GraphFuseOpsPass",
    "graph-fold-constants": "strato.transforms.graph_fold_constants:GraphFoldConstantsPass",
    "graph-plan-memory": "strato.transforms.graph_plan_memory:GraphPlanMemoryPass",
    "graph-simplify-inference": "strato.transforms.graph_simplify_inference:GraphSimplifyInferencePass",
    "graph-default": "strato.transforms.graph_default:GraphDefaultPass",
    "convert-loops-to-vta": "strato.transforms.convert_loops_to_vta:ConvertLoopsToVtaPass",
    "vta-insert-dependence-tokens": "strato.transforms.vta_insert_dependence_tokens:VtaInsertDependenceTokensPass",
    "vta-inject-virtual-threads": "strato.transforms.vta_inject_virtual_threads:VtaInjectVirtualThreadsPass",
    "te-inline-stages": "strato.transforms.te_inline_stages:TeInlineStagesPass",
}


def resolve_pass(name: str) -> type[ModulePass]:
    """The pass class registered under `name` (KeyError if none is)."""
    module_name, class_name = PASS_REGISTRY[name].split(":")
    return getattr(importlib.import_module(module_name), class_name)


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """name -> factory, the form xDSL's pass pipeline parser takes: strato's passes,
    then those plugins registered (`strato.plugins`; their names never clash)."""
    from strato.plugins import plugin_passes

    passes = {name: (lambda name=name: resolve_pass(name)) for name in PASS_REGISTRY}
    passes.update(plugin_passes())
    return passes
