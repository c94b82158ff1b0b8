"""Tuning tasks: one loop-level kernel of a model, rebuilt from the model by anyone.

A task carries the serialized ONNX model it comes from and the name of its kernel, so a
worker process (or a Dask worker) rebuilds the IR itself from (task, config):

    tasks = extract_tasks(onnx_model)            # distinct kernels, with their weights
    module, kernel = tasks[0].loop_module()      # a fresh loop-level module each call
    module, kernel = tasks[0].kernel_module()    # the kernel alone, with the globals it reads

A process lowers a model once and detaches a task's kernel once (both cached), so building
a candidate clones only its kernel's module, not the model's.

A config is {stage: {knob: value}} for the stages of the kernel that have a template;
knobs it leaves out keep their defaults. The task key is a structural hash of the
unscheduled kernel (names of the kernel and of its values do not count), so the same
layer in two models is one task.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp

from strato.dialects.loop import KERNEL_ATTR, ForOp

Config = dict[str, dict[str, Any]]

LOWER = "graph-default,convert-graph-to-te,te-inline-stages,convert-te-to-loops"


@dataclass(frozen=True)
class StageSpace:
    """One tunable stage: its template's name and knobs (name, domain, default)."""

    stage: str
    template: str
    knobs: tuple[tuple[str, tuple[Any, ...], Any], ...]


@dataclass(frozen=True)
class Task:
    name: str
    key: str
    kernel: str
    model: bytes = field(repr=False)
    flops: float
    stages: tuple[StageSpace, ...]
    weight: int = 1

    def loop_module(self) -> tuple[ModuleOp, func.FuncOp]:
        """A fresh loop-level module of the model and the task's kernel in it."""
        module = _lowered(self.model).clone()
        return module, kernel_of(module, self.kernel)

    @cached_property
    def digest(self) -> str:
        """A digest of the model's bytes: what a worker that keeps the model knows it by."""
        return hashlib.blake2b(self.model, digest_size=16).hexdigest()

    def kernel_module(self) -> tuple[ModuleOp, func.FuncOp]:
        """A fresh module holding only the task's kernel and the globals it reads (what a
        candidate is scheduled, compiled and measured in)."""
        module = _isolated(self.model, self.kernel).clone()
        return module, kernel_of(module, self.kernel)

    def default_config(self) -> Config:
        return {s.stage: {name: default for name, _, default in s.knobs} for s in self.stages}


def kernel_of(module: ModuleOp, name: str) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == name:
            return op
    raise KeyError(f"no kernel @{name}")


@lru_cache(maxsize=8)
def _lowered(model: bytes) -> ModuleOp:
    import onnx

    from strato.context import make_context
    from strato.frontends.onnx import import_onnx
    from strato.pipeline import run_pipeline

    imported = import_onnx(onnx.load_from_string(model))
    run_pipeline(make_context(), imported.module, LOWER)
    return imported.module


@lru_cache(maxsize=32)
def _isolated(model: bytes, name: str) -> ModuleOp:
    """Kernel `name` of the lowered model and the globals it reads, copied into a module
    of their own."""
    from xdsl.dialects import memref
    from xdsl.dialects.builtin import SymbolRefAttr

    lowered = _lowered(model)
    kernel = kernel_of(lowered, name)
    used = {
        attr.root_reference.data
        for op in kernel.walk()
        for attr in [*op.properties.values(), *op.attributes.values()]
        if isinstance(attr, SymbolRefAttr)
    }
    keep = [
        op.clone() for op in lowered.ops
        if op is kernel or (isinstance(op, memref.GlobalOp) and op.sym_name.data in used)
    ]  # fmt: skip
    return ModuleOp(keep)


def kernel_key(kernel: func.FuncOp) -> str:
    """A structural hash of a loop-level kernel: its text without its own name and with
    value names replaced by their order of appearance."""
    text = str(kernel).replace(f"@{kernel.sym_name.data}", "@k", 1)
    numbers: dict[str, str] = {}
    text = re.sub(r"%[\w.$-]+", lambda m: numbers.setdefault(m.group(0), f"%{len(numbers)}"), text)
    return "k-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def kernel_flops(kernel: func.FuncOp) -> float:
    """Floating-point arithmetic operations the kernel executes (each addf, mulf, ...
    times the trip counts of its enclosing loops)."""
    total = 0.0
    for op in kernel.walk():
        if isinstance(op, arith.FloatingPointLikeBinaryOperation):
            count = 1
            parent = op.parent_op()
            while parent is not None and parent is not kernel:
                if isinstance(parent, ForOp):
                    count *= parent.trip_count
                parent = parent.parent_op()
            total += count
    return total


def kernel_names(module: ModuleOp) -> list[str]:
    return [
        op.sym_name.data
        for op in module.ops
        if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes
    ]


def stage_spaces(module: ModuleOp, name: str) -> tuple[StageSpace, ...]:
    """The tunable stages of kernel `name` (a template with at least one knob)."""
    from strato.schedule import Schedule, ScheduleError
    from strato.schedule.templates import template_for

    try:
        sch = Schedule(module.clone(), kernel=name)
    except ScheduleError:
        return ()
    spaces = []
    for stage in sch.get_stages():
        template = template_for(sch, stage)
        if template is None or not template.knobs:
            continue
        knobs = tuple((k.name, tuple(k.domain), k.default) for k in template.knobs)
        spaces.append(StageSpace(stage.name, template.name, knobs))
    return tuple(spaces)


def extract_tasks(model: Any, name: str = "model") -> list[Task]:
    """The distinct tunable kernels of an ONNX model (a ModelProto, bytes or a path),
    each weighted by how many kernels of the model it stands for, heaviest first."""
    import onnx

    if isinstance(model, str):
        model = onnx.load(model)
    data = model if isinstance(model, bytes) else model.SerializeToString()
    module = _lowered(data)
    tasks: dict[str, Task] = {}
    for kernel_name in kernel_names(module):
        kernel = kernel_of(module, kernel_name)
        key = kernel_key(kernel)
        if key in tasks:
            old = tasks[key]
            tasks[key] = Task(old.name, key, old.kernel, data, old.flops, old.stages, old.weight + 1)
            continue
        stages = stage_spaces(module, kernel_name)
        if not stages:
            continue
        tasks[key] = Task(
            f"{name}/{kernel_name}", key, kernel_name, data, kernel_flops(kernel), stages
        )
    return sorted(tasks.values(), key=lambda t: -t.flops * t.weight)
