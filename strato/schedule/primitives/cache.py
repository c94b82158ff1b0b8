"""cache_read and cache_write: a copy of a buffer in another memory scope.

cache_read(stage, buffer, scope) adds the stage `<stage>.<buffer>.<scope>` that copies
the buffer into a new buffer of that scope, and `stage` reads the copy. cache_write(stage,
scope) adds the stage `<stage>.<scope>` that computes what `stage` computed into a new
buffer of that scope; `stage` then copies it into its buffer. Both new stages start as
canonical nests at the kernel's root, to be placed with compute_at (cache_read) or
computed at a loop of the copy (cache_write)."""

from __future__ import annotations

from xdsl.dialects import memref
from xdsl.dialects.builtin import IndexType, MemRefType
from xdsl.ir import Block

from strato.dialects.loop import MemoryScope
from strato.schedule.primitives.checks import fail
from strato.schedule.state import Buffer, ScheduleState, Stage, Template


def _scope(primitive: str, scope: str) -> MemoryScope:
    try:
        value = MemoryScope(scope)
    except ValueError:
        scopes = ", ".join(s.value for s in MemoryScope if s != MemoryScope.GLOBAL)
        raise fail(primitive, f"unknown memory scope {scope!r} (scopes: {scopes})") from None
    if value == MemoryScope.GLOBAL:
        raise fail(primitive, "a cache lives in a local or accelerator scope, not global")
    return value


def _copy_stage(state: ScheduleState, name: str, source: int, dest: int, axes: list[str]) -> Stage:
    """A stage copying buffer `source` into `dest` element by element."""
    shape = state.buffers[source].shape
    rank = len(shape)
    block = Block(arg_types=[IndexType()] * max(rank, 1))
    for arg, axis in zip(block.args, axes):
        arg.name_hint = axis.replace(".", "_")
    src = block.insert_arg(_logical_type(state, source), len(block.args))
    dst = block.insert_arg(_logical_type(state, dest), len(block.args))
    indices = list(block.args[:rank])
    load = memref.LoadOp.get(src, indices)
    block.add_op(load)
    block.add_op(memref.StoreOp.get(load.res, dst, indices))
    template = Template(block, max(rank, 1), (source, dest))
    spatial = list(zip(axes, shape)) if rank else [(axes[0], 1)]
    return Stage(name, spatial, [], template, None, dest, leaves=[a for a, _ in spatial])


def _logical_type(state: ScheduleState, buffer: int) -> MemRefType:
    b = state.buffers[buffer]
    return MemRefType(b.element_type, b.shape)


def _new_buffer(state: ScheduleState, like: int, name: str, scope: MemoryScope) -> int:
    b = state.buffers[like]
    name = state.fresh_buffer_name(name)
    state.buffers.append(Buffer(name, b.shape, b.element_type, scope, hint=name))
    return len(state.buffers) - 1


def resolve_read_buffer(primitive: str, state: ScheduleState, stage: Stage, buffer: str | int) -> int:
    """A buffer `stage` reads, by name or by position among the buffers it reads."""
    reads = [b for b in stage.body.buffers if b in stage.body.reads() and b != stage.buffer]
    names = [state.buffers[b].name for b in reads]
    if isinstance(buffer, int) and not isinstance(buffer, bool):
        if not 0 <= buffer < len(reads):
            raise fail(primitive, f"stage {stage.name} reads {len(reads)} buffers ({', '.join(names)}), there is no buffer {buffer}")
        return reads[buffer]
    if buffer not in names:
        raise fail(primitive, f"stage {stage.name} does not read a buffer named {buffer!r} (it reads {', '.join(names)})")
    return reads[names.index(buffer)]


def cache_read(state: ScheduleState, stage_name: str, buffer: str | int, scope: str) -> str:
    stage = state.stage(stage_name)
    space = _scope("cache_read", scope)
    current = stage
    while current.attach is not None:
        if current.attach.reverse:
            raise fail(
                "cache_read",
                f"stage {current.name} is computed after a loop of stage {current.attach.stage}; "
                "the copy could not run before it",
            )
        current = state.stage(current.attach.stage)
    source = resolve_read_buffer("cache_read", state, stage, buffer)
    label = state.buffers[source].name
    writer = state.writer_of(source)
    if writer is not None and writer.attach is not None:
        raise fail(
            "cache_read",
            f"buffer {label} is computed by stage {writer.name} inside stage "
            f"{writer.attach.stage}; cache it before computing that stage at a loop",
        )
    name = state.fresh_stage_name(f"{stage.name}.{label}.{space.value}")
    dest = _new_buffer(state, source, f"{label}_{space.value.replace('.', '_')}", space)
    axes = [f"ax{d}" for d in range(max(len(state.buffers[source].shape), 1))]
    copy = _copy_stage(state, name, source, dest, axes)
    state.stages.insert(state.stages.index(stage), copy)
    stage.body = _retarget(stage.body, source, dest, reads_only=True)
    return name


def _retarget(template: Template, old: int, new: int, reads_only: bool = False) -> Template:
    """`template` using buffer `new` where it used `old` (only for its loads when
    `reads_only`: then a new argument is added)."""
    if reads_only:
        arg = template.buffer_arg(old)
        writes = [op for op in template.block.ops if isinstance(op, memref.StoreOp) and op.memref is arg]
        assert not writes, "cache_read of a buffer the stage also writes"
    return Template(template.block, template.var_count, tuple(new if b == old else b for b in template.buffers))


def cache_write(state: ScheduleState, stage_name: str, scope: str) -> str:
    stage = state.stage(stage_name)
    space = _scope("cache_write", scope)
    if stage.is_transformed() or stage.init_at is not None or stage.kinds or stage.tensorized:
        raise fail(
            "cache_write",
            f"stage {stage.name} is already scheduled; cache_write it before changing its loops",
        )
    for other in state.stages:
        if other.attach is not None and other.attach.stage == stage.name:
            raise fail("cache_write", f"stage {other.name} is computed at a loop of stage {stage.name}")
    target = stage.buffer
    label = state.buffers[target].name
    name = state.fresh_stage_name(f"{stage.name}.{space.value}")
    cache = _new_buffer(state, target, f"{label}_{space.value.replace('.', '_')}", space)
    compute = Stage(
        name,
        list(stage.spatial),
        list(stage.reduce),
        _retarget(stage.body, target, cache),
        _retarget(stage.init, target, cache) if stage.init is not None else None,
        cache,
        leaves=list(stage.root_vars),
        annotations={k: dict(v) for k, v in stage.annotations.items()},
    )
    copy = _copy_stage(state, stage.name, cache, target, [n for n, _ in stage.spatial])
    index = state.stages.index(stage)
    state.stages[index : index + 1] = [compute, copy]
    return name
