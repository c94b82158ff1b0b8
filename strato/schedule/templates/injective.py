"""Injective and elementwise stages (fused chains included: each stage of the chain is
scheduled alike): the innermost loop, which walks the output contiguously, vectorized.

Knobs: `vector_width`, the lanes of the vectorized loop (1 leaves it scalar)."""

from __future__ import annotations

from typing import Any

from strato.schedule import Schedule, StageHandle
from strato.schedule.templates.base import (
    Knob,
    Template,
    host_lanes,
    is_reduction,
    register_template,
    vectorize_innermost,
)


def _schedule(sch: Schedule, stage: StageHandle, knobs: dict[str, Any]) -> None:
    loops = sch.get_loops(stage)
    if loops:
        vectorize_innermost(sch, stage, loops[-1], knobs["vector_width"])


INJECTIVE = register_template(
    Template(
        "injective",
        (Knob("vector_width", (1, 4, 8, 16, 32, 64), host_lanes),),
        lambda sch, stage: not is_reduction(sch, stage),
        _schedule,
    )
)
