"""compute_at: a producer computed inside a loop of a consumer, over the region the
stages in that loop read (bound inference at emission); a data-parallel producer may
be computed inside a reduction loop of its consumer (recomputed at each step); reverse_compute_at: a consumer
computed inside a loop of its producer, right after it, over the region it can read
of what the producer has written so far."""

from __future__ import annotations

from strato.schedule.emit import reverse_mapping
from strato.schedule.primitives.checks import fail, is_within, leaf, root_of
from strato.schedule.state import Attach, ScheduleState


def compute_at(state: ScheduleState, stage_name: str, host_name: str, var: str) -> None:
    stage = state.stage(stage_name)
    host = state.stage(host_name)
    leaf("compute_at", host, var)
    if stage is host:
        raise fail("compute_at", f"stage {stage.name} cannot be computed inside itself")
    if host.is_reduction_var(var) and stage.is_reduction:
        # a data-parallel producer may be recomputed per reduction step (a cache_read
        # block per k tile); a reduction would be reduced again at every step
        raise fail(
            "compute_at",
            f"loop {var} of stage {host.name} is a reduction loop of the consumer, and stage "
            f"{stage.name} is a reduction",
        )
    if state.is_output(stage.buffer):
        raise fail(
            "compute_at",
            f"stage {stage.name} writes the kernel's output {state.buffers[stage.buffer].name}, "
            "which must be computed whole",
        )
    if stage.leaves and is_within(state, host, stage, stage.leaves[0]):
        raise fail("compute_at", f"stage {host.name} is computed inside stage {stage.name}")
    if state.stages.index(stage) > state.stages.index(host):
        raise fail("compute_at", f"stage {stage.name} is not a producer of stage {host.name}")
    readers = [r for r in state.readers_of(stage.buffer) if r is not stage]
    if not readers:
        raise fail("compute_at", f"no stage reads the result of stage {stage.name}")
    # (the state is a copy: a refusal below drops it)
    stage.attach = Attach(host.name, var)
    for reader in readers:
        if not is_within(state, reader, host, var):
            raise fail(
                "compute_at",
                f"stage {reader.name} also reads stage {stage.name} outside loop {var} of "
                f"stage {host.name}",
            )


def reverse_compute_at(state: ScheduleState, stage_name: str, host_name: str, var: str) -> None:
    stage = state.stage(stage_name)
    host = state.stage(host_name)
    pos = leaf("reverse_compute_at", host, var)
    if stage is host:
        raise fail("reverse_compute_at", f"stage {stage.name} cannot be computed inside itself")
    for outer in host.leaves[: pos + 1]:
        if host.is_reduction_var(outer):
            raise fail(
                "reverse_compute_at",
                f"loop {outer} of stage {host.name} is a reduction loop of the producer",
            )
    if host.buffer not in stage.body.reads():
        raise fail("reverse_compute_at", f"stage {stage.name} does not read stage {host.name}")
    if reverse_mapping(stage, host.buffer) is None:
        raise fail(
            "reverse_compute_at",
            f"stage {stage.name} reads stage {host.name} at indices that are not its own "
            "data-parallel loop variables plus constants",
        )
    order = state.stages
    host_root = root_of(state, host)
    for producer in state.producers(stage):
        if producer is host:
            continue
        if producer.attach is not None or order.index(producer) > order.index(host_root):
            raise fail(
                "reverse_compute_at",
                f"stage {stage.name} also reads stage {producer.name}, which is not computed "
                f"before stage {host.name}",
            )
    if order.index(stage) < order.index(host):
        raise fail("reverse_compute_at", f"stage {stage.name} is not a consumer of stage {host.name}")
    for other in state.stages:
        if other.attach is not None and other.attach.stage == stage.name:
            raise fail("reverse_compute_at", f"stage {other.name} is computed inside stage {stage.name}")
    stage.attach = Attach(host.name, var, reverse=True)
