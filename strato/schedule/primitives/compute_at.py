"""compute_at: a producer computed inside a loop of a consumer, over the region the
stages in that loop read (bound inference at emission); a data-parallel producer may be
computed inside a reduction loop of its consumer (recomputed at each step).
reverse_compute_at: a consumer computed inside a loop of its producer, right after it,
over the region it can read of what the producer has written so far.

The conditions an attachment needs are checked when it is made and again after every
later primitive (`check_attachments`), so a primitive that would break one is refused.
"""

from __future__ import annotations

from strato.schedule.emit import BlockIndex, MappedIndex, reverse_mapping
from strato.schedule.primitives.checks import fail, is_within, leaf, root_of
from strato.schedule.state import Attach, ScheduleState, Stage


def compute_at(state: ScheduleState, stage_name: str, host_name: str, var: str) -> None:
    stage = state.stage(stage_name)
    host = state.stage(host_name)
    leaf("compute_at", host, var)
    if stage is host:
        raise fail("compute_at", f"stage {stage.name} cannot be computed inside itself")
    if stage.leaves and is_within(state, host, stage, stage.leaves[0]):
        raise fail("compute_at", f"stage {host.name} is computed inside stage {stage.name}")
    if state.stages.index(stage) > state.stages.index(host):
        raise fail("compute_at", f"stage {stage.name} is not a producer of stage {host.name}")
    # (the state is a copy: a refusal drops it)
    stage.attach = Attach(host.name, var)
    check_compute_at("compute_at", state, stage)


def check_compute_at(primitive: str, state: ScheduleState, stage: Stage) -> None:
    """What a stage computed at a loop needs: a data-parallel loop unless the stage is
    data-parallel, a local buffer, and every reader inside that loop."""
    assert stage.attach is not None
    host, var = state.stage(stage.attach.stage), stage.attach.var
    if var not in host.leaves:
        raise fail(primitive, f"stage {stage.name} is computed at loop {var} of stage {host.name}, which no longer exists")
    if host.is_reduction_var(var) and stage.is_reduction:
        # a data-parallel producer may be recomputed per reduction step (a cache_read
        # block per k tile); a reduction would be reduced again at every step
        raise fail(
            primitive,
            f"loop {var} of stage {host.name} is a reduction loop of the consumer, and stage "
            f"{stage.name} is a reduction",
        )
    if state.is_output(stage.buffer):
        raise fail(
            primitive,
            f"stage {stage.name} writes the kernel's output {state.buffers[stage.buffer].name}, "
            "which must be computed whole",
        )
    readers = [r for r in state.readers_of(stage.buffer) if r is not stage]
    if not readers:
        raise fail(primitive, f"no stage reads the result of stage {stage.name}")
    for reader in readers:
        if not is_within(state, reader, host, var):
            raise fail(
                primitive,
                f"stage {reader.name} also reads stage {stage.name} outside loop {var} of "
                f"stage {host.name}",
            )


def reverse_compute_at(state: ScheduleState, stage_name: str, host_name: str, var: str) -> None:
    stage = state.stage(stage_name)
    host = state.stage(host_name)
    leaf("reverse_compute_at", host, var)
    if stage is host:
        raise fail("reverse_compute_at", f"stage {stage.name} cannot be computed inside itself")
    if host.buffer not in stage.body.reads():
        raise fail("reverse_compute_at", f"stage {stage.name} does not read stage {host.name}")
    if state.stages.index(stage) < state.stages.index(host):
        raise fail("reverse_compute_at", f"stage {stage.name} is not a consumer of stage {host.name}")
    for other in state.stages:
        if other.attach is not None and other.attach.stage == stage.name:
            raise fail("reverse_compute_at", f"stage {other.name} is computed inside stage {stage.name}")
    stage.attach = Attach(host.name, var, reverse=True)
    check_reverse_compute_at("reverse_compute_at", state, stage)


def check_reverse_compute_at(primitive: str, state: ScheduleState, stage: Stage) -> None:
    """What a stage computed after a loop of its producer needs: no reduction loop of
    the producer around it, reads of the producer at its own variables plus constants,
    and every other input computed before the producer."""
    assert stage.attach is not None
    host, var = state.stage(stage.attach.stage), stage.attach.var
    if var not in host.leaves:
        raise fail(primitive, f"stage {stage.name} is computed after loop {var} of stage {host.name}, which no longer exists")
    for outer in host.leaves[: host.leaves.index(var) + 1]:
        if host.is_reduction_var(outer):
            raise fail(primitive, f"loop {outer} of stage {host.name} is a reduction loop of the producer")
    mapping = reverse_mapping(stage, host.buffer, blocks=True) if host.buffer in stage.body.reads() else None
    if mapping is None:
        raise fail(
            primitive,
            f"stage {stage.name} reads stage {host.name} at indices that are not its own "
            "data-parallel loop variables plus constants (or their blocks and places in them)",
        )
    _blocks_written_whole(primitive, state, stage, host, var, mapping)
    order = state.stages
    host_root = root_of(state, host)
    for producer in state.producers(stage):
        if producer is host:
            continue
        if producer.attach is not None or order.index(producer) > order.index(host_root):
            raise fail(
                primitive,
                f"stage {stage.name} also reads stage {producer.name}, which is not computed "
                f"before stage {host.name}",
            )
    for consumer in state.consumers(stage):
        if (
            consumer.attach is not None
            and root_of(state, consumer) is host_root
            and not _attached_inside(state, consumer, stage)
        ):
            raise fail(primitive, f"stage {consumer.name} reads stage {stage.name} inside the nest of stage {host_root.name}")


def _blocks_written_whole(
    primitive: str, state: ScheduleState, stage: Stage, host: Stage, var: str, mapping: list[MappedIndex]
) -> None:
    """A stage that reads its producer's blocks (`c // k`, `c % k`) can be computed after
    a loop of the producer only where each block it reads is written whole: the
    producer's dimension of the places in a block (of k elements) has no loop at or
    outside `var`."""
    outer = set()
    for leaf_ in host.leaves[: host.leaves.index(var) + 1]:
        outer |= host.roots_of(leaf_)
    shape = state.buffers[host.buffer].shape
    for d, item in enumerate(mapping):
        if not isinstance(item, BlockIndex) or not item.inner:
            continue
        name = host.spatial[d][0]
        if name in outer or shape[d] != item.factor:
            raise fail(
                primitive,
                f"stage {stage.name} reads blocks of {item.factor} of stage {host.name}, which "
                f"are not written whole inside its loop {var}",
            )


def _attached_inside(state: ScheduleState, stage: Stage, host: Stage) -> bool:
    current = stage
    while current.attach is not None:
        if current.attach.stage == host.name:
            return True
        current = state.stage(current.attach.stage)
    return False


def check_attachments(primitive: str, state: ScheduleState) -> None:
    """Re-check every attachment after `primitive` changed the state."""
    for stage in state.stages:
        if stage.attach is None:
            continue
        if not state.has_stage(stage.attach.stage):
            raise fail(primitive, f"stage {stage.name} is computed at a loop of stage {stage.attach.stage}, which would be gone")
        if stage.attach.reverse:
            check_reverse_compute_at(primitive, state, stage)
        else:
            check_compute_at(primitive, state, stage)
