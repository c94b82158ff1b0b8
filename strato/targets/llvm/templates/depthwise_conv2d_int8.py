"""Integer depthwise conv2d (graph.qconv with one input channel per group, NCHW, 8-bit
input and weights -> int32): a register tile of output rows x a vector of output
columns, accumulated in i32 over the kernel's taps, the bias and requantization folded
into its copy-out:

    pad x                                      (the pad stage, rows contiguous)
    for n, c, h.outer, w.outer:                (output tiles; the outer loops parallel-ready)
      tile[h, w] = 0                           (cache_write: a local i32 buffer)
      for kh, kw:                              (the taps)
        for h.inner (unrolled, `rows`):        one weight broadcast for the whole tile
          for w.inner (vectorized, `lanes`):   i32(x[n, c, h*s + kh*d, w*s + kw*d]) * i32(w[c, kh, kw])
      out[n, c, h, w] = epilogue(tile[h, w])   (bias, requantization: one pass, 8-bit stores)

A depthwise convolution multiplies each input byte by a few taps only (9 for 3x3): no
dot product over channels applies (`conv2d_int8` needs 4 input channels per group), and
the tensors between the layers of an int8 model are NCHW, so the lanes are the output
columns of one channel, where the input bytes of a tap are contiguous (stride 1) and the
output is stored contiguously; each i32 product comes from widened bytes (zero- or
sign-extended as the operand's type says). A stride of 2 reads every other byte of a
padded row: the pad stage is then laid out with the row split in its `stride` phases
(column p of a padded row at [p % s, p / s]), so the bytes of a tap are contiguous again.

The lanes are the host's (fp32 lanes of a vector register, as many i32 lanes: the
`vector_width` knob's default, from the `ScheduleContext`); a row they do not divide
takes half a vector or, when short, one tile of up to two vectors (`_columns`). LLVM
turns the widened products into the machine's i16 dot products where it has them
(vpdpwssd with AVX512-VNNI: the bytes fit in i16).

Knobs: `rows` (output rows per tile), `vector_width` (lanes: output columns per tile).
"""

from __future__ import annotations

from typing import Any

from strato.schedule import Schedule, ScheduleError, StageHandle
from strato.schedule.templates.base import (
    Knob,
    ScheduleContext,
    Template,
    fit,
    is_reduction,
    machine_lanes,
    read_strides,
    spatial_and_reduction_loops,
    stage_kind,
)
from strato.targets.llvm.templates.conv2d_int8 import pad_stage_writing
from strato.targets.llvm.templates.conv2d_nchwc import fold_epilogue
from strato.targets.llvm.templates.reduction import REDUCTION, schedule_reduction


def is_depthwise_qconv(sch: Schedule, stage: StageHandle) -> bool:
    """A graph.qconv stage over [n, c, h, w] whose reduction is the kernel's taps only
    (one input channel per group: the channel is no reduction axis) and whose input
    moves with the output channel one for one (depthwise; a channel multiplier above
    1 reads its input channel through a division and is left to the reduction)."""
    if not (is_reduction(sch, stage) and stage_kind(stage) == "qconv"):
        return False
    spatial, reduction = spatial_and_reduction_loops(sch, stage)
    if len(spatial) != 4 or not 1 <= len(reduction) <= 2:
        return False
    return _operands(sch, stage) is not None


def _operands(sch: Schedule, stage: StageHandle) -> tuple[str, str] | None:
    """(input, weights) by buffer name: the input moves with the channel and the output
    column, the weights with the channel only."""
    spatial, _ = spatial_and_reduction_loops(sch, stage)
    channel, column = spatial[1].axis, spatial[3].axis
    output = sch.state.buffers[sch.state.stage(stage.name).buffer].name
    data = weights = None
    for name, strides in read_strides(sch, stage).items():
        if name == output or strides.get(channel) in (0, None):
            continue
        if strides.get(column) in (0, None):
            weights = name
        else:
            data = name
    if data is None or weights is None:
        return None
    return data, weights


def schedule_depthwise_int8(
    sch: Schedule, stage: StageHandle, knobs: dict[str, Any], context: ScheduleContext
) -> None:
    operands = _operands(sch, stage)
    if operands is None:
        schedule_reduction(sch, stage, REDUCTION.defaults(context), context)
        return
    data, _ = operands
    stride = _column_stride(sch, stage, data)
    pad = pad_stage_writing(sch, data)
    tile = sch.cache_write(stage, "local")
    fold_epilogue(sch, stage)
    n, c, h, w = sch.get_loops(stage)
    lanes = _columns(w.extent, knobs["vector_width"])
    rows = _rows(h.extent, knobs["rows"])
    ho, hi = sch.split(h, [None, rows]) if rows < h.extent else (None, h)
    wo, wi = sch.split(w, [None, lanes]) if lanes < w.extent else (None, w)
    outer = [loop for loop in (n, c, ho, wo) if loop is not None]
    sch.reorder(*outer, hi, wi)
    if hi.extent > 1:
        sch.unroll(sch.get_loop(stage, hi.axis))
    if wi.extent > 1:
        sch.vectorize(sch.get_loop(stage, wi.axis))
    sch.compute_at(tile, outer[-1])
    spatial, reduction = spatial_and_reduction_loops(sch, tile)
    th, tw = spatial[-2], spatial[-1]
    sch.reorder(*spatial[:-2], *reduction, th, tw)
    if th.extent > 1:
        sch.unroll(sch.get_loop(tile, th.axis))
    if tw.extent > 1:
        sch.vectorize(sch.get_loop(tile, tw.axis))
    if reduction:
        sch.decompose_reduction(tile, sch.get_loop(tile, reduction[0].axis))
    if pad is not None:
        _split_phases(sch, pad, stride, context.lanes)


def _columns(width: int, lanes: int) -> int:
    """The output columns of a tile: `lanes` when they divide the row; on a long row
    that they do not divide, half a vector (whole loads of a power-of-two width: 14
    lanes of a 56-column row load each tap's bytes piecewise, 1.4x slower); else the
    largest divisor up to two vectors (a short row of 28, 14 or 7 columns: one tile)."""
    if width % lanes == 0:
        return lanes
    if width >= 2 * lanes and lanes >= 8 and width % (lanes // 2) == 0:
        return lanes // 2
    return fit(width, 2 * lanes)


def _rows(height: int, rows: int) -> int:
    """The output rows of a tile: the largest divisor of the height up to `rows`, or
    the whole height when it is at most twice `rows` (7 rows of 7 columns: one tile of
    seven vectors rather than seven tiles of one)."""
    return height if height <= 2 * rows else fit(height, rows)


def _column_stride(sch: Schedule, stage: StageHandle, data: str) -> int:
    """The elements the input moves per output column (the convolution's stride)."""
    spatial, _ = spatial_and_reduction_loops(sch, stage)
    step = read_strides(sch, stage)[data].get(spatial[3].axis)
    return step if isinstance(step, int) and step > 0 else 1


def _split_phases(sch: Schedule, pad: StageHandle, stride: int, lanes: int) -> None:
    """Lay the pad stage's padded rows out in `stride` phases ([.., p % s, p / s]; a
    row the stride does not divide leaves its last phase a column short), so that the
    bytes of a tap are contiguous for the tile. A row of at most two vectors per phase
    is then copied a phase at a time (its stores contiguous: 144 x 56 x 56 at stride
    2 4.4x faster); a longer one keeps the pad template's loop (its stores one per
    lane: split in phases, 57 lanes of a 114-column row were slower)."""
    if stride <= 1:
        return
    snapshot, length = sch.state.copy(), len(sch.trace.steps)
    try:
        sch.transform_layout(pad, f"d0, d1, d2, d3 -> d0, d1, d2, d3 % {stride}, d3 // {stride}")
    except ScheduleError:
        sch.restore(snapshot, length)
        return
    width = sch.state.buffers[sch.state.stage(pad.name).buffer].shape[-1]
    if width % stride or width // stride > 2 * lanes:
        return
    # each phase's columns one vector (its stores contiguous): the loop over the row's
    # columns (as the pad's template left it) made one again, split by the stride,
    # its phases outside
    snapshot, length = sch.state.copy(), len(sch.trace.steps)
    try:
        loops = sch.get_loops(pad)
        column = loops[-1] if len(loops) == 4 else sch.fuse(*loops[3:])
        quotient, phase = sch.split(column, [None, stride])
        sch.reorder(phase, quotient)
        sch.vectorize(sch.get_loop(pad, quotient.axis))
    except ScheduleError:
        sch.restore(snapshot, length)


DEPTHWISE_CONV2D_INT8 = Template(
    "depthwise_conv2d_int8",
    (
        Knob("vector_width", (4, 8, 16, 32, 64), machine_lanes),
        Knob("rows", (1, 2, 4, 7, 8), 4),
    ),
    is_depthwise_qconv,
    schedule_depthwise_int8,
)
