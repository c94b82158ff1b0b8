"""The schedule state: what a kernel computes (stages as blocks over iteration
variables) and how (the loop structure each primitive changes).

As in TensorIR, a stage is a block: a template of scalar ops over its iteration
variables (one per result dimension, then one per reduction axis) that reads and
writes buffers. As in Halide, its loops are a list of leaf variables derived from the
iteration variables by relations (`Split`, `Fuse`); loops carry a kind and annotations;
a stage is computed at the root of the kernel or attached inside a loop of another
stage. `lift_kernel` builds the state from the canonical nests of convert-te-to-loops,
and `strato.schedule.emit` builds the kernel's IR back from it, so every primitive is a
small change of this state, checked before the IR is rebuilt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Any, TypeVar

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import IndexType, MemRefType, StringAttr
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue

from strato.dialects.loop import (
    KERNEL_ATTR,
    OUTPUT_ATTR,
    ForOp,
    LoopKind,
    MemoryScope,
    is_init_loop,
    is_reduction_loop,
    loop_stage,
    memory_scope,
)
from strato.schedule.errors import ScheduleError

# ---------------------------------------------------------------------------------------
# Buffers and templates


@dataclass
class Buffer:
    """A buffer of the kernel: an argument (`arg` is its position) or a local allocation.

    `shape` is the logical shape every template indexes. A local buffer may be padded
    (`padded`: a larger logical shape), laid out differently (`layout`: an index map,
    see `strato.schedule.layout`) and have aligned strides (`align`)."""

    name: str
    shape: tuple[int, ...]
    element_type: Attribute
    scope: MemoryScope
    arg: int | None = None
    padded: tuple[int, ...] | None = None
    layout: Any = None
    align: dict[int, tuple[int, int]] = field(default_factory=dict)
    hint: str | None = None
    """The SSA name of its allocation (None: the printer numbers it)."""

    @property
    def is_argument(self) -> bool:
        return self.arg is not None

    @property
    def logical_shape(self) -> tuple[int, ...]:
        return self.padded if self.padded is not None else self.shape


@dataclass(frozen=True)
class Template:
    """Scalar ops of one block: `block` takes `var_count` index arguments (the iteration
    variables) and then one memref argument per entry of `buffers` (buffer ids). It
    holds no terminator; its ops only use its arguments and values defined in it."""

    block: Block
    var_count: int
    buffers: tuple[int, ...]

    @property
    def vars(self) -> tuple[BlockArgument, ...]:
        return tuple(self.block.args[: self.var_count])

    def buffer_arg(self, buffer: int) -> BlockArgument | None:
        for arg, b in zip(self.block.args[self.var_count :], self.buffers):
            if b == buffer:
                return arg
        return None

    def buffer_of(self, value: SSAValue) -> int | None:
        for arg, b in zip(self.block.args[self.var_count :], self.buffers):
            if arg is value:
                return b
        return None

    def reads(self) -> set[int]:
        return {
            b
            for op in self.block.ops
            if isinstance(op, memref.LoadOp) and (b := self.buffer_of(op.memref)) is not None
        }

    def writes(self) -> set[int]:
        return {
            b
            for op in self.block.ops
            if isinstance(op, memref.StoreOp) and (b := self.buffer_of(op.memref)) is not None
        }


def make_template(
    ops: list[Operation],
    variables: list[SSAValue],
    buffer_values: dict[SSAValue, int],
    buffer_types: dict[int, Attribute],
) -> Template:
    """A template holding clones of `ops`, `variables` becoming its index arguments and
    every buffer they use (a key of `buffer_values`) a memref argument."""
    used: list[int] = []
    for op in ops:
        for operand in op.operands:
            b = buffer_values.get(operand)
            if b is not None and b not in used:
                used.append(b)
    block = Block(arg_types=[IndexType()] * len(variables) + [buffer_types[b] for b in used])
    mapping: dict[SSAValue, SSAValue] = {}
    for var, arg in zip(variables, block.args):
        mapping[var] = arg
        arg.name_hint = var.name_hint
    by_buffer = {b: arg for b, arg in zip(used, block.args[len(variables) :])}
    for value, b in buffer_values.items():
        if b in by_buffer:
            mapping[value] = by_buffer[b]
            by_buffer[b].name_hint = value.name_hint
    for op in ops:
        for operand in op.operands:
            if operand not in mapping and not _defined_in(operand, ops):
                raise ScheduleError(
                    f"'{op.name}' uses a value defined outside its stage's loop nest; "
                    "the kernel is not a canonical loop nest"
                )
        block.add_op(op.clone(mapping))
    return Template(block, len(variables), tuple(used))


def _defined_in(value: SSAValue, ops: list[Operation]) -> bool:
    owner = value.owner
    if isinstance(owner, Operation):
        return any(owner is op or op.is_ancestor(owner) for op in ops)
    parent = owner.parent_op()
    return parent is not None and any(parent is op or op.is_ancestor(parent) for op in ops)


# ---------------------------------------------------------------------------------------
# Loop structure


@dataclass(frozen=True)
class Split:
    """`parent` = sum(children[i] * stride_i) for the strides the factors give; the
    first child's factor is derived from the parent's extent (`factors[0]` is None).
    `tail` says how a non-dividing split is handled: "guard" or "pad"."""

    parent: str
    children: tuple[str, ...]
    factors: tuple[int | None, ...]
    tail: str = "guard"


@dataclass(frozen=True)
class Fuse:
    """`child` runs over the product of `parents`' extents, the last one fastest."""

    parents: tuple[str, ...]
    child: str


Relation = Split | Fuse


@dataclass(frozen=True)
class Attach:
    """Where a stage's nest is emitted: inside the loop `var` of stage `stage`, before the
    rest of that loop's body (compute_at) or after it (reverse_compute_at)."""

    stage: str
    var: str
    reverse: bool = False


@dataclass
class Stage:
    """One block and its loop structure."""

    name: str
    spatial: list[tuple[str, int]]
    reduce: list[tuple[str, int]]
    body: Template
    init: Template | None
    buffer: int
    relations: list[Relation] = field(default_factory=list)
    leaves: list[str] = field(default_factory=list)
    kinds: dict[str, LoopKind] = field(default_factory=dict)
    annotations: dict[str, dict[str, Any]] = field(default_factory=dict)
    attach: Attach | None = None
    init_at: str | None = None
    tensorized: dict[str, str] = field(default_factory=dict)

    @property
    def is_reduction(self) -> bool:
        return self.init is not None

    @property
    def root_vars(self) -> list[str]:
        return [n for n, _ in self.spatial] + [n for n, _ in self.reduce]

    def root_extent(self, var: str) -> int:
        return dict(self.spatial + self.reduce)[var]

    def all_vars(self) -> set[str]:
        names = set(self.root_vars)
        for rel in self.relations:
            names.update(rel.children if isinstance(rel, Split) else (rel.child,))
        return names

    def roots_of(self, var: str) -> set[str]:
        """The iteration variables `var` is derived from."""
        if var in self.root_vars:
            return {var}
        for rel in self.relations:
            if isinstance(rel, Split) and var in rel.children:
                return self.roots_of(rel.parent)
            if isinstance(rel, Fuse) and var == rel.child:
                return set().union(*(self.roots_of(p) for p in rel.parents))
        raise KeyError(var)

    def is_reduction_var(self, var: str) -> bool:
        reduce = {n for n, _ in self.reduce}
        return bool(self.roots_of(var) & reduce)

    def is_transformed(self) -> bool:
        return bool(self.relations) or self.leaves != self.root_vars or self.attach is not None

    def extents(self, root_extents: dict[str, int] | None = None) -> dict[str, int]:
        """The extent of every variable, given the extents of the iteration variables
        (their full extents by default)."""
        ext = dict(self.spatial + self.reduce)
        if root_extents:
            ext.update(root_extents)
        for rel in self.relations:
            if isinstance(rel, Split):
                inner = prod(f for f in rel.factors[1:] if f is not None)
                ext[rel.children[0]] = -(-ext[rel.parent] // inner)
                for child, factor in zip(rel.children[1:], rel.factors[1:]):
                    assert factor is not None
                    ext[child] = factor
            else:
                ext[rel.child] = prod(ext[p] for p in rel.parents)
        return ext


T = TypeVar("T")


def _shallow_copy(obj: T) -> T:
    """copy.copy of a plain dataclass instance, without the generic protocol's cost
    (states are copied before every primitive)."""
    result = object.__new__(type(obj))
    result.__dict__.update(obj.__dict__)
    return result


@dataclass
class ScheduleState:
    """A kernel under scheduling: its buffers, its stages in execution order and the
    copies into output buffers that end it."""

    kernel: func.FuncOp
    buffers: list[Buffer]
    stages: list[Stage]
    copies: list[tuple[int, int]]

    def copy(self) -> ScheduleState:
        """A copy whose stages and buffers can change without touching this one
        (templates are shared: primitives replace them, never change them)."""
        stages = []
        for s in self.stages:
            c = _shallow_copy(s)
            c.spatial, c.reduce = list(s.spatial), list(s.reduce)
            c.relations, c.leaves = list(s.relations), list(s.leaves)
            c.kinds = dict(s.kinds)
            c.annotations = {k: dict(v) for k, v in s.annotations.items()}
            c.tensorized = dict(s.tensorized)
            stages.append(c)
        buffers = [_shallow_copy(b) for b in self.buffers]
        for b in buffers:
            b.align = dict(b.align)
        return ScheduleState(self.kernel, buffers, stages, list(self.copies))

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        known = ", ".join(s.name for s in self.stages)
        raise ScheduleError(
            f"no stage named '{name}' in kernel @{self.kernel.sym_name.data} (stages: {known})"
        )

    def has_stage(self, name: str) -> bool:
        return any(s.name == name for s in self.stages)

    def writer_of(self, buffer: int) -> Stage | None:
        for s in self.stages:
            if s.buffer == buffer:
                return s
        return None

    def readers_of(self, buffer: int) -> list[Stage]:
        return [s for s in self.stages if buffer in s.body.reads()]

    def producers(self, stage: Stage) -> list[Stage]:
        result = []
        for b in sorted(stage.body.reads()):
            writer = self.writer_of(b)
            if writer is not None and writer is not stage and writer not in result:
                result.append(writer)
        return result

    def consumers(self, stage: Stage) -> list[Stage]:
        return [s for s in self.readers_of(stage.buffer) if s is not stage]

    def is_output(self, buffer: int) -> bool:
        b = self.buffers[buffer]
        return b.is_argument or any(src == buffer for src, _ in self.copies)

    def attached_at(self, stage: str, var: str) -> list[Stage]:
        """The stages computed at loop `var` of `stage`, in execution order."""
        return [
            s
            for s in self.stages
            if s.attach is not None and s.attach.stage == stage and s.attach.var == var
        ]

    def fresh_stage_name(self, base: str) -> str:
        name, n = base, 0
        while self.has_stage(name):
            n += 1
            name = f"{base}{n}"
        return name

    def fresh_buffer_name(self, base: str) -> str:
        return unique_name(base, {b.name for b in self.buffers})


def unique_name(base: str, taken: set[str]) -> str:
    """`base`, or `base_1`, `base_2`, ... when taken: buffers are named after their SSA
    values, whose hints repeat (an exporter's `val_0`, `val_1`, ... all read back as
    `val`), and templates and traces refer to buffers by name."""
    name, n = base, 0
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name


# ---------------------------------------------------------------------------------------
# Lifting a canonical kernel into a state


def _loop_chain(top: ForOp) -> list[ForOp]:
    """The perfectly nested loops from `top` down (each body holding exactly one loop)."""
    chain = [top]
    while True:
        ops = [op for op in chain[-1].body.block.ops if op is not chain[-1].body.block.last_op]
        if len(ops) == 1 and isinstance(ops[0], ForOp) and loop_stage(ops[0]) == loop_stage(top):
            chain.append(ops[0])
        else:
            return chain


def _check_canonical(chain: list[ForOp], stage: str) -> None:
    for loop in chain:
        if loop.lb.data != 0 or loop.step.data != 1 or loop.loop_kind != LoopKind.SERIAL:
            raise ScheduleError(
                f"stage {stage} is not a canonical loop nest (loop {_axis(loop)} is already "
                "scheduled); schedules apply to kernels as convert-te-to-loops emits them"
            )
        if loop.axis is None:
            raise ScheduleError(f"a loop of stage {stage} has no axis name")


def _axis(loop: ForOp) -> str:
    return loop.axis.data if loop.axis is not None else "?"


def _leaf_ops(chain: list[ForOp]) -> list[Operation]:
    block = chain[-1].body.block
    return [op for op in block.ops if op is not block.last_op]


def lift_kernel(kernel: func.FuncOp) -> ScheduleState:
    """The state of a kernel in the canonical form of convert-te-to-loops."""
    name = kernel.sym_name.data
    if KERNEL_ATTR not in kernel.attributes:
        raise ScheduleError(f"@{name} is not a kernel (it has no {KERNEL_ATTR} attribute)")
    block = kernel.body.block
    buffers: list[Buffer] = []
    buffer_values: dict[SSAValue, int] = {}
    buffer_types: dict[int, Attribute] = {}
    outputs = (
        [OUTPUT_ATTR in a.data for a in kernel.arg_attrs.data]
        if kernel.arg_attrs is not None
        else [False] * len(block.args)
    )

    def add_buffer(value: SSAValue, arg: int | None) -> None:
        type_ = value.type
        if isinstance(type_, IndexType):
            raise ScheduleError(
                f"@{name} takes a run-time size (an index argument): schedules take kernels "
                "of static sizes only"
            )
        if not isinstance(type_, MemRefType):
            raise ScheduleError(f"@{name} takes a {type_}, kernels take memrefs only")
        label = unique_name(
            value.name_hint or (f"arg{arg}" if arg is not None else f"buf{len(buffers)}"),
            {b.name for b in buffers},
        )
        buffers.append(
            Buffer(
                label,
                tuple(type_.get_shape()),
                type_.element_type,
                memory_scope(type_),
                arg,
                hint=value.name_hint,
            )
        )
        buffer_values[value] = len(buffers) - 1
        buffer_types[len(buffers) - 1] = type_

    for n, arg in enumerate(block.args):
        add_buffer(arg, n)

    stages: list[Stage] = []
    copies: list[tuple[int, int]] = []
    pending_init: dict[str, list[ForOp]] = {}
    for op in block.ops:
        if isinstance(op, memref.AllocOp):
            add_buffer(op.memref, None)
        elif isinstance(op, ForOp):
            stage = loop_stage(op)
            if stage is None:
                raise ScheduleError(f"a loop of @{name} belongs to no stage")
            chain = _loop_chain(op)
            _check_canonical(chain, stage)
            if is_init_loop(op):
                pending_init[stage] = chain
                continue
            stages.append(_lift_stage(stage, chain, pending_init.pop(stage, None), buffer_values, buffer_types))
        elif isinstance(op, memref.CopyOp):
            copies.append((buffer_values[op.source], buffer_values[op.destination]))
        elif isinstance(op, memref.DeallocOp | func.ReturnOp):
            continue
        else:
            raise ScheduleError(
                f"@{name} holds '{op.name}' between its stages; schedules apply to kernels "
                "as convert-te-to-loops emits them"
            )
    if pending_init:
        raise ScheduleError(f"the init nest of stage {next(iter(pending_init))} has no update nest")
    del outputs  # arguments are inputs or outputs alike for scheduling
    return ScheduleState(kernel, buffers, stages, copies)


def _lift_stage(
    name: str,
    chain: list[ForOp],
    init_chain: list[ForOp] | None,
    buffer_values: dict[SSAValue, int],
    buffer_types: dict[int, Attribute],
) -> Stage:
    ops = _leaf_ops(chain)
    if any(isinstance(op, ForOp) for op in ops):
        raise ScheduleError(
            f"stage {name} is not a canonical loop nest (its loops are not perfectly nested); "
            "schedules apply to kernels as convert-te-to-loops emits them"
        )
    spatial_loops = [loop for loop in chain if not is_reduction_loop(loop)]
    reduce_loops = [loop for loop in chain if is_reduction_loop(loop)]
    if chain[len(spatial_loops) :] != reduce_loops:
        raise ScheduleError(f"the reduction loops of stage {name} are not innermost")
    variables = [loop.induction_var for loop in chain]
    body = make_template(ops, variables, buffer_values, buffer_types)
    init = None
    if init_chain is not None:
        if [_axis(a) for a in init_chain] != [_axis(b) for b in spatial_loops]:
            raise ScheduleError(
                f"stage {name} is not a canonical loop nest (its init nest does not match its "
                "update nest); schedules apply to kernels as convert-te-to-loops emits them"
            )
        init = make_template(
            _leaf_ops(init_chain),
            [loop.induction_var for loop in init_chain],
            buffer_values,
            buffer_types,
        )
    elif reduce_loops:
        raise ScheduleError(f"reduction stage {name} has no init nest")
    written = body.writes()
    if len(written) != 1:
        raise ScheduleError(f"stage {name} writes {len(written)} buffers, a stage writes one")
    spatial = [(_axis(loop), loop.trip_count) for loop in spatial_loops]
    reduce = [(_axis(loop), loop.trip_count) for loop in reduce_loops]
    names = [n for n, _ in spatial + reduce]
    if len(set(names)) != len(names):
        raise ScheduleError(f"stage {name} has two loops named alike: {names}")
    return Stage(name, spatial, reduce, body, init, written.pop(), leaves=names)


__all__ = [
    "Attach",
    "Buffer",
    "Fuse",
    "Relation",
    "ScheduleState",
    "Split",
    "Stage",
    "Template",
    "lift_kernel",
    "make_template",
]
