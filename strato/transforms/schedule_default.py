"""schedule-default: schedule every kernel with its stages' default templates.

Requires: loop-level kernels (`func.func` with `loop.kernel`, as convert-te-to-loops
emits them). Leaves illegal: nothing new; kernels stay at the loop level.

Each stage of each kernel gets the first template of strato.schedule.templates that
matches it (by operator kind: dense, conv2d, pooling, reduction, injective, ...), applied
with its knobs' default values. A template whose primitives refuse a stage (a
ScheduleError: a shape the template cannot tile, a body that is not straight-line) is
undone for that stage, which keeps its canonical loops; schedules never change results,
only speed. The kernel records what it got:

    schedule.template = {"dense" = "dense", "relu" = "injective"}
    schedule.knobs    = {"dense" = {kc = 256, mr = 8, nr = 32, pack_b = true}, "relu" = {..}}

and a stage left as it was is listed under `schedule.unscheduled` with the reason.

Before:

    func.func @relu(%a: memref<64xf32>, %o: memref<64xf32> {loop.output}) attributes {loop.kernel} {
      loop.for %i = 0 to 64 axis "i" attributes {stage = "relu"} { ... }
    }

After:

    func.func @relu(...) attributes {loop.kernel, schedule.template = {relu = "injective"}, ..} {
      loop.for %i_outer = 0 to 4 axis "i.outer" attributes {stage = "relu"} {
        loop.for %i_inner = 0 to 16 vectorized axis "i.inner" attributes {stage = "relu"} { ... }
      }
    }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BoolAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute
from xdsl.passes import ModulePass

from strato.dialects.loop import KERNEL_ATTR
from strato.schedule import Schedule, ScheduleError

TEMPLATE_ATTR = "schedule.template"
KNOBS_ATTR = "schedule.knobs"
UNSCHEDULED_ATTR = "schedule.unscheduled"


def _knob_attr(value: Any) -> Attribute:
    if isinstance(value, bool):
        return BoolAttr.from_bool(value)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    return StringAttr(str(value))


def schedule_kernel(module: ModuleOp, name: str, tuning_log: str | None = None) -> None:
    """Apply the default template of every stage of kernel `name` in `module`."""
    from strato.schedule.templates import template_for

    try:
        sch = Schedule(module, kernel=name)
    except ScheduleError as error:
        _mark_unscheduled(module, name, {"*": error.message})
        return
    # the kernel is rebuilt once at the end, not after every primitive of the templates
    sch.deferred = True
    from strato.autotuning.hook import kernel_knobs

    chosen = kernel_knobs(module, name, tuning_log)
    templates: dict[str, Attribute] = {}
    knobs: dict[str, Attribute] = {}
    unscheduled: dict[str, str] = {}
    for stage in sch.get_stages():
        template = template_for(sch, stage)
        if template is None:
            continue
        snapshot = sch.state.copy()
        trace_length = len(sch.trace.steps)
        values = template.defaults() | chosen.get(stage.name, {})
        try:
            template.apply(sch, stage, values)
        except ScheduleError as error:
            sch.restore(snapshot, trace_length)
            unscheduled[stage.name] = f"{template.name}: {error.message}"
            continue
        templates[stage.name] = StringAttr(template.name)
        knobs[stage.name] = DictionaryAttr({k: _knob_attr(v) for k, v in values.items()})
    kernel = sch.kernel
    kernel.attributes[TEMPLATE_ATTR] = DictionaryAttr(templates)
    kernel.attributes[KNOBS_ATTR] = DictionaryAttr(knobs)
    if unscheduled:
        kernel.attributes[UNSCHEDULED_ATTR] = DictionaryAttr(
            {stage: StringAttr(reason) for stage, reason in unscheduled.items()}
        )


def _mark_unscheduled(module: ModuleOp, name: str, reasons: dict[str, str]) -> None:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == name:
            op.attributes[UNSCHEDULED_ATTR] = DictionaryAttr(
                {stage: StringAttr(reason) for stage, reason in reasons.items()}
            )


def schedule_default(module: ModuleOp, tuning_log: str | None = None) -> None:
    """Schedule every kernel of `module` with the default templates, in place."""
    names = [
        op.sym_name.data
        for op in module.ops
        if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes
    ]
    for name in names:
        schedule_kernel(module, name, tuning_log)


@dataclass(frozen=True)
class ScheduleDefaultPass(ModulePass):
    """Schedule every kernel with its stages' default templates (see the module docstring)."""

    name = "schedule-default"

    tuning_log: str = ""
    """A tuning log (strato tune --log): each kernel gets its task's best record."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        schedule_default(op, self.tuning_log or None)
