"""storage_align: the stride of one dimension of a stage's local buffer padded to
`offset` modulo `factor` (the last dimension grows), e.g. to keep rows apart in cache
sets or memory banks."""

from __future__ import annotations

from strato.schedule.emit import aligned_shape
from strato.schedule.primitives.checks import fail
from strato.schedule.state import ScheduleState


def storage_align(state: ScheduleState, stage_name: str, axis: int, factor: int, offset: int) -> None:
    stage = state.stage(stage_name)
    buffer = state.buffers[stage.buffer]
    if state.is_output(stage.buffer):
        raise fail("storage_align", f"stage {stage.name} writes the kernel's buffer {buffer.name}, whose layout is fixed")
    rank = len(buffer.shape)
    if not 0 <= axis < rank - 1:
        raise fail("storage_align", f"axis {axis} of buffer {buffer.name} (rank {rank}) has no stride to pad; give 0..{rank - 2}")
    if factor <= 0 or not 0 <= offset < factor:
        raise fail("storage_align", f"need factor > 0 and 0 <= offset < factor, got factor {factor}, offset {offset}")
    align = {**buffer.align, axis: (factor, offset)}
    if aligned_shape(list(buffer.logical_shape), align) is None:
        raise fail(
            "storage_align",
            f"no size of the last dimension of buffer {buffer.name} makes the stride of axis "
            f"{axis} {offset} modulo {factor}",
        )
    buffer.align = align
