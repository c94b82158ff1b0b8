"""Where knob values other than the templates' defaults come from.

A kernel's default schedule applies, to each stage, the first template of its
`ScheduleContext` that matches, with the template's default knob values, except where the
context's knob source chooses others: a `Config`, {stage: {knob: value}}. The sources:

    TuningLog("tuning.jsonl")           # the best record of the kernel's task in a log
    ForcedKnobs({"dense_relu": config}) # a config given per kernel name (a tuning candidate)

A source is explicit configuration, given to `schedule-default` by whoever builds the
pipeline (a target's stages, the tuner), never read from global state.

`stage_spaces` lists what can be chosen: each tunable stage of a kernel with its
template's knobs, domains and defaults (what the tuner searches).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr

if TYPE_CHECKING:
    from strato.schedule.templates.base import ScheduleContext

Config = dict[str, dict[str, Any]]
"""Knob values by stage: {stage: {knob: value}}."""


@dataclass(frozen=True)
class StageSpace:
    """One tunable stage: its template's name and knobs (name, domain, default)."""

    stage: str
    template: str
    knobs: tuple[tuple[str, tuple[Any, ...], Any], ...]


def kernel_of(module: ModuleOp, name: str) -> func.FuncOp:
    """The function `name` of `module` (KeyError when there is none)."""
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == name:
            return op
    raise KeyError(f"no kernel @{name}")


def stage_spaces(module: ModuleOp, name: str, context: ScheduleContext) -> tuple[StageSpace, ...]:
    """The tunable stages of kernel `name` (a template of `context` with at least one
    knob), the module left as it is."""
    from strato.schedule import Schedule, ScheduleError

    try:
        sch = Schedule(kernel_with_globals(module, name), kernel=name)
    except ScheduleError:
        return ()
    spaces = []
    for stage in sch.get_stages():
        template = context.template_for(sch, stage)
        if template is None or not template.knobs:
            continue
        knobs = tuple((k.name, tuple(k.domain), k.default(context)) for k in template.knobs)
        spaces.append(StageSpace(stage.name, template.name, knobs))
    return tuple(spaces)


def kernel_with_globals(module: ModuleOp, name: str) -> ModuleOp:
    """Kernel `name` of `module` cloned into a module of its own with the module's
    symbols it refers to (the globals it reads): what scheduling the kernel looks at,
    without a copy of every other kernel of the model (an unrolled LSTM has hundreds)."""
    kernel = kernel_of(module, name)
    symbols = {
        op.sym_name.data: op
        for op in module.ops
        if isinstance(op, memref.GlobalOp | func.FuncOp) and op is not kernel
    }
    needed: set[str] = set()
    for op in kernel.walk():
        for attr in (*op.properties.values(), *op.attributes.values()):
            if isinstance(attr, SymbolRefAttr) and attr.root_reference.data in symbols:
                needed.add(attr.root_reference.data)
    return ModuleOp([*(symbols[symbol].clone() for symbol in sorted(needed)), kernel.clone()])


class KnobSource:
    """Chooses knob values for a kernel's stages (none: the templates' defaults)."""

    def config(self, module: ModuleOp, name: str, context: ScheduleContext) -> Config:
        """The knob values chosen for kernel `name` of `module`, by stage."""
        raise NotImplementedError

    def describe(self) -> str:
        """What the source is, for cache keys and messages."""
        raise NotImplementedError


@dataclass(frozen=True)
class ForcedKnobs(KnobSource):
    """A config per kernel name; other kernels keep the defaults."""

    configs: Mapping[str, Config] = field(default_factory=dict)

    def config(self, module: ModuleOp, name: str, context: ScheduleContext) -> Config:
        return dict(self.configs.get(name, {}))

    def describe(self) -> str:
        return f"forced configs of {', '.join(sorted(self.configs)) or 'no kernel'}"


@dataclass(frozen=True)
class TuningLog(KnobSource):
    """The best record of each kernel's task (`kernel_key`) in the tuning log at `path`,
    among those measured on the context's machine (`ScheduleContext.device`), on its
    threads when the log has such records (`Database.best`); a record written for other
    templates keeps only the knob values that still apply."""

    path: str

    def config(self, module: ModuleOp, name: str, context: ScheduleContext) -> Config:
        from strato.schedule.database import Database
        from strato.schedule.workload import kernel_key

        key = kernel_key(kernel_of(module, name))
        best = Database.cached(self.path).best(key, context.device, context.threads)
        if best is None:
            return {}
        chosen: Config = {}
        for space in stage_spaces(module, name, context):
            recorded = best.config.get(space.stage, {})
            chosen[space.stage] = {
                knob: recorded[knob]
                for knob, domain, _ in space.knobs
                if knob in recorded and recorded[knob] in domain
            }
        return chosen

    def describe(self) -> str:
        return f"tuning log {self.path}"


__all__ = [
    "Config",
    "ForcedKnobs",
    "KnobSource",
    "StageSpace",
    "TuningLog",
    "kernel_of",
    "kernel_with_globals",
    "stage_spaces",
]
