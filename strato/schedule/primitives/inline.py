"""compute_inline: a data-parallel stage's value recomputed wherever it is read;
reverse_compute_inline: a data-parallel consumer folded into the stage it reads, which
then writes the consumer's buffer."""

from __future__ import annotations

from xdsl.dialects import memref
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, SSAValue

from strato.schedule.emit import reverse_mapping
from strato.schedule.primitives.checks import fail
from strato.schedule.state import ScheduleState, Stage, Template


def _checked_store(primitive: str, stage: Stage) -> memref.StoreOp:
    ops = list(stage.body.block.ops)
    store = ops[-1] if ops else None
    stores = [op for op in ops if isinstance(op, memref.StoreOp)]
    if not isinstance(store, memref.StoreOp) or len(stores) != 1:
        raise fail(primitive, f"stage {stage.name} is not a single store of one value")
    spatial = list(stage.body.vars[: len(stage.spatial)])
    indices = list(store.indices)
    if indices != spatial[: len(indices)] or len(indices) not in (len(spatial), 0):
        raise fail(primitive, f"stage {stage.name} does not store at its own loop variables")
    return store


class _TemplateBuilder:
    """A new template: given index variables and a growing list of buffer arguments."""

    def __init__(self, var_names: list[str | None]):
        self.block = Block(arg_types=[IndexType()] * len(var_names))
        for arg, name in zip(self.block.args, var_names):
            arg.name_hint = name
        self.buffers: list[int] = []
        self.var_count = len(var_names)

    def buffer(self, buffer: int, type_) -> SSAValue:
        if buffer in self.buffers:
            return self.block.args[self.var_count + self.buffers.index(buffer)]
        self.buffers.append(buffer)
        return self.block.insert_arg(type_, len(self.block.args))

    def map_buffers(self, template: Template, mapping: dict[SSAValue, SSAValue]) -> None:
        for arg, b in zip(template.block.args[template.var_count :], template.buffers):
            mapping[arg] = self.buffer(b, arg.type)

    def done(self) -> Template:
        return Template(self.block, self.var_count, tuple(self.buffers))


def compute_inline(state: ScheduleState, stage_name: str) -> None:
    stage = state.stage(stage_name)
    if stage.is_reduction:
        raise fail("compute_inline", f"stage {stage.name} is a reduction")
    if state.is_output(stage.buffer):
        raise fail("compute_inline", f"stage {stage.name} writes the kernel's output {state.buffers[stage.buffer].name}")
    for other in state.stages:
        if other.attach is not None and other.attach.stage == stage.name:
            raise fail("compute_inline", f"stage {other.name} is computed at a loop of stage {stage.name}")
    store = _checked_store("compute_inline", stage)
    readers = [r for r in state.readers_of(stage.buffer) if r is not stage]
    value_ops = list(stage.body.block.ops)[:-1]
    for reader in readers:
        builder = _TemplateBuilder([a.name_hint for a in reader.body.vars])
        mapping: dict[SSAValue, SSAValue] = dict(zip(reader.body.vars, builder.block.args))
        builder.map_buffers(reader.body, mapping)
        own = reader.body.buffer_arg(stage.buffer)
        for op in reader.body.block.ops:
            if isinstance(op, memref.LoadOp) and op.memref is own:
                inner: dict[SSAValue, SSAValue] = {}
                builder.map_buffers(stage.body, inner)
                for var, index in zip(stage.body.vars, op.indices):
                    inner[var] = mapping[index]
                for value_op in value_ops:
                    builder.block.add_op(value_op.clone(inner))
                mapping[op.res] = inner[store.value]
                continue
            builder.block.add_op(op.clone(mapping))
        reader.body = _prune(builder.done(), stage.buffer)
    state.stages.remove(stage)


def _prune(template: Template, dropped: int) -> Template:
    """`template` without its argument for a buffer it no longer uses."""
    arg = template.buffer_arg(dropped)
    if arg is None or arg.uses:
        return template
    template.block.erase_arg(arg)
    buffers = list(template.buffers)
    buffers.remove(dropped)
    return Template(template.block, template.var_count, tuple(buffers))


def reverse_compute_inline(state: ScheduleState, stage_name: str) -> None:
    stage = state.stage(stage_name)
    if stage.is_reduction:
        raise fail("reverse_compute_inline", f"stage {stage.name} is a reduction")
    producers = state.producers(stage)
    local = [p for p in producers if not state.is_output(p.buffer)]
    if len(local) != 1:
        raise fail(
            "reverse_compute_inline",
            f"stage {stage.name} must read exactly one stage of the kernel that writes a local "
            f"buffer, it reads {len(local)}",
        )
    producer = local[0]
    if producer.is_reduction:
        raise fail("reverse_compute_inline", f"its producer {producer.name} is a reduction")
    readers = [r for r in state.readers_of(producer.buffer) if r is not producer]
    if readers != [stage]:
        others = ", ".join(r.name for r in readers if r is not stage)
        raise fail("reverse_compute_inline", f"stage {producer.name} is also read by {others}")
    mapping_dims = reverse_mapping(stage, producer.buffer)
    spatial = [n for n, _ in stage.spatial]
    if (
        mapping_dims is None
        or any(d is None or d[1] != 0 for d in mapping_dims)
        or sorted(d[0] for d in mapping_dims) != sorted(spatial)  # type: ignore[index]
    ):
        raise fail(
            "reverse_compute_inline",
            f"stage {stage.name} does not read stage {producer.name} once per element at its "
            "own loop variables",
        )
    shape = state.buffers[producer.buffer].shape
    extents = dict(stage.spatial)
    if any(extents[d[0]] != n for d, n in zip(mapping_dims, shape)):  # type: ignore[index]
        raise fail(
            "reverse_compute_inline",
            f"stage {stage.name} reads only part of stage {producer.name}",
        )
    for other in state.stages:
        if other.attach is not None and other.attach.stage in (stage.name, producer.name):
            raise fail("reverse_compute_inline", f"stage {other.name} is computed at a loop of stage {other.attach.stage}")
    order = state.stages
    for p in producers:
        if p is not producer and (p.attach is not None or order.index(p) > order.index(producer)):
            raise fail("reverse_compute_inline", f"stage {stage.name} also reads stage {p.name}, computed after stage {producer.name}")
    store = _checked_store("reverse_compute_inline", producer)
    builder = _TemplateBuilder([a.name_hint for a in producer.body.vars])
    mapping: dict[SSAValue, SSAValue] = dict(zip(producer.body.vars, builder.block.args))
    builder.map_buffers(producer.body, mapping)
    for op in list(producer.body.block.ops)[:-1]:
        builder.block.add_op(op.clone(mapping))
    value = mapping[store.value]
    # the consumer's variables are the producer's store indices, dimension by dimension
    inner: dict[SSAValue, SSAValue] = {}
    builder.map_buffers(stage.body, inner)
    names = dict(zip(stage.root_vars, stage.body.vars))
    for (var, _), index in zip(mapping_dims, store.indices):  # type: ignore[misc]
        inner[names[var]] = mapping[index]
    own = stage.body.buffer_arg(producer.buffer)
    for op in stage.body.block.ops:
        if isinstance(op, memref.LoadOp) and op.memref is own:
            inner[op.res] = value
            continue
        builder.block.add_op(op.clone(inner))
    producer.body = _prune(builder.done(), producer.buffer)
    producer.buffer = stage.buffer
    state.stages.remove(stage)
