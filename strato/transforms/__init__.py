"""strato's target-neutral passes, one a file, and the registry of every pass by CLI name.

The registry is lazy: a name maps to "module:Class" (or a factory) and the module is
imported only when the pass is used, so `strato-opt` starts fast. The file of a pass is
its CLI name in snake case (`convert-graph-to-te` lives in `convert_graph_to_te.py`); a
test checks that every pass file is registered and that every name resolves.

The passes of this package are registered here (`PASS_REGISTRY`); a target registers
its own when it is registered (`strato.targets.registry.Target.passes`, e.g. the llvm
target's convert-loops-to-llvm), and a plugin through `strato.plugins.register_pass`:

    add_pass("my-pass", "my_plugin.passes:MyPass", source="my-plugin")
    get_all_passes()["my-pass"]()      # -> the class, imported now
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.passes import ModulePass

PassFactory = Callable[[], type[ModulePass]]

XDSL = "xDSL"
STRATO = "strato"

UPSTREAM_PASSES: dict[str, str] = {
    # upstream passes that work on strato's dialects as they are
    "cse": "xdsl.transforms.common_subexpression_elimination:CommonSubexpressionElimination",
    "dce": "xdsl.transforms.dead_code_elimination:DeadCodeElimination",
    "canonicalize": "xdsl.transforms.canonicalize:CanonicalizePass",
}

PASS_REGISTRY: dict[str, str] = {
    "convert-graph-to-te": "strato.transforms.convert_graph_to_te:ConvertGraphToTePass",
    "convert-te-to-loops": "strato.transforms.convert_te_to_loops:ConvertTeToLoopsPass",
    "apply-schedule": "strato.transforms.apply_schedule:ApplySchedulePass",
    "schedule-default": "strato.transforms.schedule_default:ScheduleDefaultPass",
    "graph-alter-layout": "strato.transforms.graph_alter_layout:GraphAlterLayoutPass",
    "graph-fuse-ops": "strato.transforms.graph_fuse_ops:GraphFuseOpsPass",
    "graph-fold-constants": "strato.transforms.graph_fold_constants:GraphFoldConstantsPass",
    "graph-fold-qdq": "strato.transforms.graph_fold_qdq:GraphFoldQdqPass",
    "graph-outline-branches": "strato.transforms.graph_outline_branches:GraphOutlineBranchesPass",
    "graph-pad-channels": "strato.transforms.graph_pad_channels:GraphPadChannelsPass",
    "graph-plan-memory": "strato.transforms.graph_plan_memory:GraphPlanMemoryPass",
    "graph-prune-conv-taps": "strato.transforms.graph_prune_conv_taps:GraphPruneConvTapsPass",
    "graph-raise-composites": "strato.transforms.graph_raise_composites:GraphRaiseCompositesPass",
    "graph-simplify-inference": "strato.transforms.graph_simplify_inference:GraphSimplifyInferencePass",
    "graph-unroll-recurrences": "strato.transforms.graph_unroll_recurrences:GraphUnrollRecurrencesPass",
    "graph-default": "strato.transforms.graph_default:GraphDefaultPass",
    "te-inline-stages": "strato.transforms.te_inline_stages:TeInlineStagesPass",
    "te-dedup-primitives": "strato.transforms.te_dedup_primitives:TeDedupPrimitivesPass",
    "loop-dedup-kernels": "strato.transforms.loop_dedup_kernels:LoopDedupKernelsPass",
    "loop-linearize-views": "strato.transforms.loop_linearize_views:LoopLinearizeViewsPass",
}
"""The passes of strato.transforms: name -> "module:Class"."""

_ADDED: dict[str, tuple[PassFactory, str, str | None]] = {}
"""Passes of targets and plugins: name -> (factory, source, "module:Class" if given so)."""


def lazy_class(spec: str) -> PassFactory:
    """A factory importing "module:Class" when called."""
    module_name, _, class_name = spec.partition(":")

    def load() -> type[ModulePass]:
        return getattr(importlib.import_module(module_name), class_name)

    return load


def add_pass(name: str, factory: PassFactory | str, *, source: str) -> None:
    """Register the pass `name` of `source` (a target or plugin): a factory returning
    its class, or "module:Class". The same "module:Class" again is a no-op; any other
    name already registered is a `KeyError` naming the source that has it."""
    spec = factory if isinstance(factory, str) else None
    existing = _ADDED.get(name)
    if existing is not None and spec is not None and existing[2] == spec:
        return
    taken = pass_source(name)
    if taken is not None:
        raise KeyError(f"pass '{name}' from {source} clashes with {taken}'s '{name}'")
    load = lazy_class(factory) if isinstance(factory, str) else factory
    _ADDED[name] = (load, source, spec)


def remove_pass(name: str) -> None:
    """Forget a pass a target or plugin registered (unknown names are ignored)."""
    _ADDED.pop(name, None)


def pass_source(name: str) -> str | None:
    """Where the pass `name` comes from: "strato", "xDSL", a target's or plugin's name,
    or None when no pass has that name."""
    if name in _ADDED:
        return _ADDED[name][1]
    if name in PASS_REGISTRY:
        return STRATO
    if name in UPSTREAM_PASSES:
        return XDSL
    return None


def added_passes() -> dict[str, str]:
    """name -> source of the passes targets and plugins registered."""
    return {name: source for name, (_, source, _) in _ADDED.items()}


def resolve_pass(name: str) -> type[ModulePass]:
    """The pass class registered under `name` (KeyError if none is)."""
    return get_all_passes()[name]()


def get_all_passes() -> dict[str, PassFactory]:
    """name -> factory, the form xDSL's pass pipeline parser takes: the upstream passes
    strato offers, strato's, then those of the registered targets and plugins."""
    passes = {name: lazy_class(spec) for name, spec in UPSTREAM_PASSES.items()}
    passes.update({name: lazy_class(spec) for name, spec in PASS_REGISTRY.items()})
    passes.update({name: factory for name, (factory, _, _) in _ADDED.items()})
    return passes


__all__ = [
    "PASS_REGISTRY",
    "UPSTREAM_PASSES",
    "add_pass",
    "added_passes",
    "get_all_passes",
    "lazy_class",
    "pass_source",
    "remove_pass",
    "resolve_pass",
]
