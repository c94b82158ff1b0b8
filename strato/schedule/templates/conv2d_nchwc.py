"""conv2d in NCHW{c} (the blocked layout of graph-alter-layout): the output-channel
block is the vector lanes, a run of output columns the unrolled rows of the tile:

    for n, cb, h, w.outer:
      for icb, kh, kw:                         (the reduction; the input-channel block is
        for w.inner (unrolled, `rows`):         summed inside the body)
          for c (vectorized, the block):
            out[n, cb, h, w, c] += sum_ic x[n, icb, h*s+kh, w*s+kw, ic] * w[cb, icb, kh, kw, ic, c]

The weight vector of a (kh, kw, ic) is loaded once per tile and reused by every column.

graph-alter-layout lays the weights out OIHW{i}i{o}o (output channels innermost) when
constants are folded, so that vector is one contiguous load and nothing is copied at run
time. Weights stored the other way ([.., out, in] innermost, OIHW{o}o{i}i) are copied
per output-channel block with the two innermost dimensions swapped, which costs a pass
over the weights on every call.

Knobs: `rows` (output columns per tile); the lanes are the layout's channel block.
"""

from __future__ import annotations

from typing import Any

from strato.schedule import Schedule, StageHandle
from strato.schedule.templates.base import (
    Knob,
    Template,
    is_reduction,
    read_strides,
    register_template,
    spatial_and_reduction_loops,
    stage_kind,
    tile_for_registers,
)


def schedule_conv2d_nchwc(sch: Schedule, stage: StageHandle, knobs: dict[str, Any]) -> None:
    spatial, _ = spatial_and_reduction_loops(sch, stage)
    if len(spatial) < 2:
        return
    block = spatial[-1]
    weights = _strided_weights(sch, stage, block.axis)
    tile_for_registers(sch, stage, block.axis, spatial[-2].axis, block.extent, knobs["rows"])
    if weights is not None and len(spatial) >= 4:
        _pack_output_channels_innermost(sch, stage, weights, spatial[1].axis)


def _strided_weights(sch: Schedule, stage: StageHandle, lanes: str) -> str | None:
    """The operand that moves by more than one element along the channel lanes: the
    weights when stored [.., out-channel, in-channel] in the block; None when every
    operand is contiguous along the lanes (OIHW{i}i{o}o weights)."""
    output = sch.state.buffers[sch.state.stage(stage.name).buffer].name
    for name, strides in read_strides(sch, stage).items():
        if name != output and strides.get(lanes) not in (0, 1, None):
            return name
    return None


def _pack_output_channels_innermost(
    sch: Schedule, stage: StageHandle, weights: str, block_axis: str
) -> None:
    """Copy each output-channel block's weights with the two innermost dimensions
    swapped, so a weight vector over the output channels is one contiguous load."""
    packed = sch.cache_read(stage, weights, "local")
    rank = len(sch.state.buffers[sch.state.stage(packed.name).buffer].shape)
    dims = [f"d{n}" for n in range(rank)]
    swapped = [*dims[:-2], dims[-1], dims[-2]]
    sch.transform_layout(packed, f"{', '.join(dims)} -> {', '.join(swapped)}")
    sch.compute_at(packed, sch.get_loop(stage, block_axis))
    loops = sch.get_loops(packed)
    if loops and loops[-1].extent <= 64:
        sch.vectorize(loops[-1])


CONV2D_NCHWC = register_template(
    Template(
        "conv2d_nchwc",
        (Knob("rows", (1, 2, 4, 7, 8, 14), 8),),
        lambda sch, stage: is_reduction(sch, stage) and stage_kind(stage) == "blocked_conv",
        schedule_conv2d_nchwc,
    )
)
