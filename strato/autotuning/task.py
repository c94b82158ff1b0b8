"""Tuning tasks: one loop-level kernel of a model, rebuilt from the model by anyone.

A task carries the serialized ONNX model it comes from and the name of its kernel, so a
worker process (or a Dask worker) rebuilds the IR itself from (task, config):

    tasks = extract_tasks(onnx_model)            # distinct kernels, with their weights
    module, kernel = tasks[0].loop_module()      # a fresh loop-level module each call
    module, kernel = tasks[0].kernel_module()    # the kernel alone, with the globals it reads

A process lowers a model once and detaches a task's kernel once (both cached), so building
a candidate clones only its kernel's module, not the model's.

A task belongs to a target (`target`, a target string: the llvm target by default): the
target's stages lower the model to loop-level kernels, its templates make the search
space, and its kernel builder builds each candidate.

A config is {stage: {knob: value}} for the stages of the kernel that have a template;
knobs it leaves out keep their defaults. The task key is a structural hash of the
unscheduled kernel (`strato.schedule.workload.kernel_key`: names of the kernel and of its
values do not count), so the same layer in two models is one task.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp

from strato.dialects.loop import KERNEL_ATTR, ForOp
from strato.schedule.knobs import (
    Config,
    StageSpace,
    kernel_of,
    kernel_with_globals,
    stage_spaces,
)
from strato.schedule.workload import kernel_key

if TYPE_CHECKING:
    from strato.schedule.templates import ScheduleContext
    from strato.targets.registry import KernelBuilder, Target

DEFAULT_TARGET = "llvm"


@dataclass(frozen=True)
class Task:
    name: str
    key: str
    kernel: str
    model: bytes = field(repr=False)
    flops: float
    stages: tuple[StageSpace, ...]
    weight: int = 1
    target: str = DEFAULT_TARGET
    """The target string the task is tuned for (its threads are the measurement's)."""

    def compile_target(self, threads: int = 1) -> Target:
        """The task's target with parallel loops for `threads` threads."""
        return _target(self.target, threads)

    def schedule_context(self, threads: int = 1) -> ScheduleContext:
        """The schedule context of the task's target for `threads` threads."""
        context = self.compile_target(threads).schedule_context()
        if context is None:
            raise ValueError(f"target '{self.target}' has no schedule templates to tune")
        return context

    def builder(self, threads: int = 1) -> KernelBuilder:
        """How the task's target builds one candidate for `threads` threads."""
        builder = self.compile_target(threads).kernel_builder()
        if builder is None:
            raise ValueError(f"target '{self.target}' cannot build a kernel alone")
        return builder

    @cached_property
    def device(self) -> str:
        """The machine the task's code is for when it is not this host (its records are
        tagged with it: `strato.schedule.database.record_target`); empty for this host."""
        return self.builder(1).device()

    def loop_module(self) -> tuple[ModuleOp, func.FuncOp]:
        """A fresh loop-level module of the model and the task's kernel in it."""
        module = _lowered(self.model, self.target).clone()
        return module, kernel_of(module, self.kernel)

    @cached_property
    def digest(self) -> str:
        """A digest of the model's bytes: what a worker that keeps the model knows it by."""
        return hashlib.blake2b(self.model, digest_size=16).hexdigest()

    def kernel_module(self) -> tuple[ModuleOp, func.FuncOp]:
        """A fresh module holding only the task's kernel and the globals it reads (what a
        candidate is scheduled, compiled and measured in)."""
        module = _isolated(self.model, self.kernel, self.target).clone()
        return module, kernel_of(module, self.kernel)

    def default_config(self) -> Config:
        return {s.stage: {name: default for name, _, default in s.knobs} for s in self.stages}


@lru_cache(maxsize=8)
def _target(text: str, threads: int) -> Target:
    from strato.targets.registry import get_target

    return get_target(text).with_options(threads=str(threads))


@lru_cache(maxsize=8)
def _lowered(model: bytes, target: str = DEFAULT_TARGET) -> ModuleOp:
    import onnx

    from strato.diagnostics import SymbolicShapeError
    from strato.frontends.onnx import import_onnx
    from strato.gc_pause import gc_for_compiling
    from strato.targets.registry import run_stages

    proto = onnx.load_from_string(model)
    with gc_for_compiling():
        try:
            imported = import_onnx(proto)
        except SymbolicShapeError:
            # a model of dynamic dimensions is tuned as strato.compile compiles it, once
            # for every size: its kernels that compute rows apart are blocks of a few
            # static row counts (te.row_blocks), each a task, so the tuning log keeps a
            # record per block size, which compiles of every size then use
            imported = import_onnx(proto, run_time_dims=True)
        run_stages(_target(target, 1).lowering_stages(), imported.module)
    return imported.module


@lru_cache(maxsize=32)
def _isolated(model: bytes, name: str, target: str = DEFAULT_TARGET) -> ModuleOp:
    """Kernel `name` of the lowered model and the globals it reads, copied into a module
    of their own."""
    return kernel_with_globals(_lowered(model, target), name)


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


def extract_tasks(
    model: Any, name: str = "model", target: str = DEFAULT_TARGET, alternatives: bool = True
) -> list[Task]:
    """The distinct tunable kernels of an ONNX model (a ModelProto, bytes or a path) for
    `target`, each weighted by how many kernels of the model it stands for, heaviest
    first; with `alternatives`, also the kernels of the other algorithms the target can
    choose between per layer (`Target.tuning_alternatives`: a convolution by Winograd),
    which a compile with the tuning log takes where they measured faster."""
    import onnx

    if isinstance(model, str):
        model = onnx.load(model)
    data = model if isinstance(model, bytes) else model.SerializeToString()
    tasks = _tasks_of(data, name, target)
    if alternatives:
        from strato.targets.registry import get_target

        own_target = get_target(target)
        own = own_target.spec.options
        for other in own_target.tuning_alternatives():
            options = get_target(other).spec.options
            # named by what the alternative's target changes: r18/blocked_winograd_conv_relu_3 -winograd=4
            label = " ".join(f"-{k}={v}" for k, v in options.items() if own.get(k) != v)
            tasks.update(
                (t.key, t) for t in _tasks_of(data, name, other, label).values() if t.key not in tasks
            )
    return sorted(tasks.values(), key=lambda t: -t.flops * t.weight)


def _tasks_of(data: bytes, name: str, target: str, label: str = "") -> dict[str, Task]:
    """The tasks of the model's lowering for `target`, by key (their names end with
    `label`)."""
    module = _lowered(data, target)
    context = _target(target, 1).schedule_context()
    if context is None:
        raise ValueError(f"target '{target}' has no schedule templates to tune")
    # a kernel called from several sites stands for that many (lowering merges equal
    # primitives: te-dedup-primitives)
    calls = Counter(
        op.callee.root_reference.data for op in module.walk() if isinstance(op, func.CallOp)
    )
    tasks: dict[str, Task] = {}
    for kernel_name in kernel_names(module):
        kernel = kernel_of(module, kernel_name)
        key = kernel_key(kernel)
        sites = max(1, calls[kernel_name])
        if key in tasks:
            old = tasks[key]
            tasks[key] = Task(
                old.name, key, old.kernel, data, old.flops, old.stages, old.weight + sites, target
            )
            continue
        stages = stage_spaces(module, kernel_name, context)
        if not stages:
            continue
        task_name = f"{name}/{kernel_name} {label}" if label else f"{name}/{kernel_name}"
        tasks[key] = Task(
            task_name, key, kernel_name, data, kernel_flops(kernel), stages, weight=sites, target=target
        )
    return tasks
