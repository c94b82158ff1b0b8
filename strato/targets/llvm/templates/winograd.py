"""The stages of a Winograd convolution (`graph.blocked_winograd_conv`, F(m x m, 3 x 3);
see strato.strategies.blocked for what each computes):

    winograd_input_rows,   for n, C, ti, tj:               (each input tile once)
    winograd_input           for a, b (unrolled, alpha x alpha): the selects on the
                               for c (vectorized):            position fold, one short
                                 T or V[n, a, b, C, ti, tj, c] = ...     sum each
    winograd_product       alpha^2 products (input channels x output channels) over the
                           tiles: the register tile of conv2d_nchwc (`register_tile`:
                           columns x output-channel blocks), the positions outside it
    winograd_output        for n, K, ti, tj:
                             for p, q (unrolled, m x m):     (A^T M A)[p, q] of the tile
                               for k (vectorized):           plus the elementwise stages
                                 out[n, K, ti*m + p, tj*m + q, k] = epilogue(...) folded in

The transformed tiles (T, V and the products M) are stored with the positions next to
the lanes, [n, C, ti, tj, a, b, c]: a tile's alpha^2 vectors are contiguous, where
planes of one position each would put them a power-of-two stride apart, in a few
cache sets. Knobs: the product's `rows` and `accumulators` (those of conv2d_nchwc).
"""

from __future__ import annotations

from typing import Any

from strato.schedule import Schedule, ScheduleError, StageHandle
from strato.schedule.templates.base import (
    Knob,
    ScheduleContext,
    Template,
    is_reduction,
    stage_kind,
)
from strato.targets.llvm.templates.conv2d_nchwc import fold_epilogue, register_tile

_POSITIONS_INSIDE = "n, a, b, c, h, w, l -> n, c, h, w, a, b, l"


def _stage_of(sch: Schedule, kind: str) -> StageHandle:
    for stage in sch.get_stages():
        # not the stages a schedule made of it (its register tile, "<name>.local")
        if stage_kind(stage) == kind and "." not in stage.name:
            return stage
    raise ScheduleError(f"a Winograd convolution without its {kind} stage")


def _tile_size(sch: Schedule) -> int:
    """m: alpha - 2, alpha the extent of the product's position loops."""
    product = _stage_of(sch, "winograd_product")
    return sch.state.buffers[sch.state.stage(product.name).buffer].shape[1] - 2


def schedule_winograd_input(
    sch: Schedule, stage: StageHandle, knobs: dict[str, Any], context: ScheduleContext
) -> None:
    sch.transform_layout(stage, _POSITIONS_INSIDE)
    if stage_kind(stage) == "winograd_input":
        sch.transform_layout(_stage_of(sch, "winograd_product"), _POSITIONS_INSIDE)
    n, a, b, c, ti, tj, lane = sch.get_loops(stage)
    sch.reorder(n, c, ti, tj, a, b, lane)
    for loop in (a, b):
        sch.unroll(sch.get_loop(stage, loop.axis))
    sch.vectorize(sch.get_loop(stage, lane.axis))


def schedule_winograd_product(
    sch: Schedule, stage: StageHandle, knobs: dict[str, Any], context: ScheduleContext
) -> None:
    register_tile(sch, stage, knobs["rows"], knobs["accumulators"])


def schedule_winograd_output(
    sch: Schedule, stage: StageHandle, knobs: dict[str, Any], context: ScheduleContext
) -> None:
    m = _tile_size(sch)
    fold_epilogue(sch, stage)
    n, kb, h, w, lane = sch.get_loops(stage)
    ho, hi = sch.split(h, [None, m])
    wo, wi = sch.split(w, [None, m])
    sch.reorder(n, kb, ho, wo, hi, wi, lane)
    for loop in (hi, wi):
        sch.unroll(sch.get_loop(stage, loop.axis))
    sch.vectorize(sch.get_loop(stage, lane.axis))


WINOGRAD_INPUT = Template(
    "winograd_input",
    (),
    lambda sch, stage: stage_kind(stage) in ("winograd_input", "winograd_input_rows"),
    schedule_winograd_input,
)

WINOGRAD_PRODUCT = Template(
    "winograd_product",
    (
        Knob("rows", (1, 2, 4, 7, 8, 14), 14),
        Knob("accumulators", (8, 14, 16, 24, 28), 28),
    ),
    lambda sch, stage: is_reduction(sch, stage) and stage_kind(stage) == "winograd_product",
    schedule_winograd_product,
)

WINOGRAD_OUTPUT = Template(
    "winograd_output",
    (),
    lambda sch, stage: stage_kind(stage) == "winograd_output",
    schedule_winograd_output,
)
