"""conv2d in NCHW{c} (the blocked layout of graph-alter-layout): a register tile of
`rows` output columns x a few output-channel blocks, each block one vector:

    for n, cb.outer, h, w.outer:               (output tiles; the outer loops parallel-ready)
      tile = 0                                 (cache_write: a local buffer at this loop)
      for icb, kh, kw, ic:                     (the reduction)
        for w.inner (unrolled, `rows`):        one input broadcast per column ...
          for cb.inner (unrolled):             ... used by every channel block,
            for c (vectorized, the block):     whose weight vectors stay in registers
              tile[w, cb, c] += x[n, icb, h*s+kh, w*s+kw, ic] * w[cb, icb, kh, kw, ic, c]
      out[n, cb, h, w, :] = epilogue(tile)     (the stage copies the tile out, applying
                                                the elementwise stages folded into it)

The tile's indices are static after unrolling, so its rows x blocks accumulators are
registers for the whole reduction, every step updates each of them once with an
independent FMA, and a weight vector is loaded once per step for all columns. Stages
with fewer loops (no batch or window reduction) or weights that need the copy below get
the plain register tile of `tile_for_registers` (rows x one block, accumulated in place).

graph-alter-layout lays the weights out OIHW{i}i{o}o (output channels innermost) when
constants are folded, so that vector is one contiguous load and nothing is copied at run
time. Weights stored the other way ([.., out, in] innermost, OIHW{o}o{i}i) are copied
per output-channel block with the two innermost dimensions swapped, which costs a pass
over the weights on every call.

Knobs: `rows` (output columns per tile), `accumulators` (most vectors in the tile: the
channel blocks per tile are as many as fit beside the columns), `copy_out` (a copy back
to NCHW that reads the result computed per tile, `copy_out_per_tile`, or after the whole
convolution); the lanes are the layout's channel block.

A depthwise convolution (`depthwise_conv2d_nchwc`: its input moves with the output
channel's lanes) is scheduled alike with other defaults. Every accumulator there needs
an input vector of its own (nothing is broadcast), and a column's window shares input
vectors with its neighbours', so the tile is short: 7 columns of one channel block
(accumulators 8). The regular defaults (14 columns x 2 blocks) leave too few registers
for the inputs the window reuses: MobileNetV2's depthwise layers take 4-30% longer
with them (one thread; 7x7x960: 0.047 against 0.033 ms, 28x28x192: 0.175 against
0.142 ms).
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
    tile_for_registers,
)
from strato.targets.llvm.templates.injective import transposed_block, unroll_block_rows


def schedule_conv2d_nchwc(
    sch: Schedule, stage: StageHandle, knobs: dict[str, Any], context: ScheduleContext
) -> None:
    spatial, reduction = spatial_and_reduction_loops(sch, stage)
    if len(spatial) < 2:
        return
    block = spatial[-1]
    weights = _strided_weights(sch, stage, block.axis)
    if len(spatial) == 5 and reduction and weights is None:
        padded = _padded_input_read_once(sch, stage)
        tile, row = register_tile(sch, stage, knobs["rows"], knobs["accumulators"])
        if knobs["copy_out"]:
            copy_out_per_tile(sch, stage, tile, machine_lanes(context))
        if padded is not None:
            # the padded rows one output row reads, made next to their use
            sch.compute_at(padded, sch.get_loop(tile, row))
            loops = sch.get_loops(padded)
            if loops:
                sch.vectorize(loops[-1])
        return
    tile_for_registers(sch, stage, block.axis, spatial[-2].axis, block.extent, knobs["rows"])
    if weights is not None and len(spatial) >= 4:
        _pack_output_channels_innermost(sch, stage, weights, spatial[1].axis)


def register_tile(
    sch: Schedule, stage: StageHandle, rows: int, accumulators: int
) -> tuple[StageHandle, str]:
    """The output tile of `rows` columns x some channel blocks (up to `accumulators`
    vectors) of a stage whose loops end in (channel block, row, column, lane), those
    before them outside the tile, accumulated in a local buffer computed at the tile's
    loop (cache_write + compute_at): after unrolling its indices are static, so the accumulators are
    registers for the whole reduction; the stage itself copies the finished tile out.
    Returns the tile's stage and its output-row axis."""
    tile = sch.cache_write(stage, "local")
    fold_epilogue(sch, stage)
    *leading, cb, h, w, c = sch.get_loops(stage)
    count = fit(w.extent, rows)
    if 2 * count <= rows and w.extent <= accumulators:
        # a row no divisor of which makes a tile (17 columns: a transposed convolution's
        # phases) is one whole tile, as long as its accumulators fit the registers
        count = w.extent
    blocks = fit(cb.extent, max(accumulators // count, 1))
    cbo, cbi = sch.split(cb, [None, blocks]) if blocks < cb.extent else (cb, None)
    wo, wi = sch.split(w, [None, count]) if count < w.extent else (None, w)
    outer = [*leading, cbo, h] + ([wo] if wo is not None else [])
    inner = ([cbi] if cbi is not None else []) + [wi]
    sch.reorder(*outer, *inner, c)
    for loop in inner:
        if loop.extent > 1:
            sch.unroll(sch.get_loop(stage, loop.axis))
    sch.vectorize(sch.get_loop(stage, c.axis))
    sch.compute_at(tile, outer[-1])
    spatial, reduction = spatial_and_reduction_loops(sch, tile)
    *tleading, tcb, th, tw, tc = spatial
    if len(reduction) > 1 and _reads_blocks_of_one_channel(sch, tile):
        # input channels in blocks of one (a convolution reading its NCHW input as it
        # is): the channels innermost, as a block's are. With the window innermost,
        # LLVM unrolls it and keeps the inputs neighbouring taps share in registers,
        # which spills the accumulators (3x slower on ResNet-18's 3x3 layers)
        reduction = [*reduction[1:], reduction[0]]
    # columns outside channel blocks: each input value is broadcast once and used by
    # every block while the blocks' weight vectors stay in registers
    sch.reorder(*tleading, th, *reduction, tw, tcb, tc)
    for loop in (tw, tcb):
        if loop.extent > 1:
            sch.unroll(sch.get_loop(tile, loop.axis))
    sch.vectorize(sch.get_loop(tile, tc.axis))
    sch.decompose_reduction(tile, sch.get_loop(tile, reduction[0].axis))
    return tile, th.axis


def copy_out_per_tile(sch: Schedule, stage: StageHandle, tile: StageHandle, lanes: int) -> bool:
    """Copy each finished tile out of the blocked layout right after it is written, when
    the one reader of `stage` is such a copy (a chain's exit back to NCHW: `out[n, c, h,
    w] = y[n, c // 16, h, w, c % 16]`): the copy is computed after the loop the tile is
    computed at (reverse_compute_at), over the tile's channels and columns, each channel
    block a transpose (16 rows of the tile's columns; the copy's own template vectorizes
    the columns), while the tile is in cache; the blocked result is then a buffer of one
    tile, not of the whole output (3.2 MB for ResNet-18's stem, 7x7/2 to 64 channels at
    112x112). Measured as fast as the copy done as a pass of its own after the
    convolution, which the knob `copy_out` False keeps. Whether it did."""
    consumers = sch.get_consumers(stage)
    if len(consumers) != 1:
        return False
    copy = consumers[0]
    state = sch.state.stage(copy.name)
    attach = sch.state.stage(tile.name).attach
    if attach is None or not state.root_vars:
        return False
    block = transposed_block(sch, copy, state.root_vars[-1])
    if block is None:
        return False
    axis, run, remainder = block
    if not remainder or _tile_columns(sch, stage, attach.var) > lanes:
        return False
    snapshot, trace_length = sch.state.copy(), len(sch.trace.steps)
    try:
        sch.reverse_compute_at(copy, sch.get_loop(stage, attach.var))
        unroll_block_rows(sch, copy, axis, run, state.root_vars[-1])
    except ScheduleError:
        sch.restore(snapshot, trace_length)
        return False
    return True


def _tile_columns(sch: Schedule, stage: StageHandle, var: str) -> int:
    """The columns of one tile of `stage`: the extent of the loops inside `var` over its
    column axis (the last but one iteration variable)."""
    state = sch.state.stage(stage.name)
    column = state.spatial[-2][0]
    extents = state.extents()
    inside = state.leaves[state.leaves.index(var) + 1 :]
    count = 1
    for leaf_ in inside:
        if state.roots_of(leaf_) == {column}:
            count *= extents[leaf_]
    return count


def _reads_blocks_of_one_channel(sch: Schedule, stage: StageHandle) -> bool:
    """Whether the convolution's input (what it broadcasts along the output columns)
    has blocks of one channel, so that its reduction loops are the channels and the
    window, with no loop over the channels of a block: an NCHW1c buffer ([N, C, H, W,
    1], a padded copy), or the NCHW buffer itself that its unit-block view reads."""
    spatial, _ = spatial_and_reduction_loops(sch, stage)
    column = spatial[-2].axis
    output = sch.state.buffers[sch.state.stage(stage.name).buffer]
    shapes = {buffer.name: buffer.shape for buffer in sch.state.buffers}
    inputs = [
        shapes[name]
        for name, strides in read_strides(sch, stage).items()
        if name != output.name and strides.get(column) not in (0, None)
    ]
    return bool(inputs) and all(
        len(shape) < len(output.shape) or shape[-1] == 1 for shape in inputs
    )


def fold_epilogue(sch: Schedule, stage: StageHandle) -> list[str]:
    """Fold the elementwise stages that read `stage`'s result (bias, residual add,
    activation), one after the other, into `stage` (reverse_compute_inline), so that
    the copy of a finished tile applies them on its way to their buffer: one pass over
    the output instead of a pass per stage over a buffer the size of the output, and
    one parallel region fewer for each. Stops at the first consumer that cannot be
    folded (a reduction, a reader of part of the result, a second reader); returns the
    stages folded."""
    folded = []
    while True:
        consumers = sch.get_consumers(stage)
        if len(consumers) != 1:
            return folded
        try:
            sch.reverse_compute_inline(consumers[0])
        except ScheduleError:
            return folded
        folded.append(consumers[0].name)


def _padded_input_read_once(sch: Schedule, stage: StageHandle) -> StageHandle | None:
    """The pad stage of a depthwise or grouped convolution's input, when the kernel has
    one and each output-channel block reads input blocks of its own.

    A depthwise input moves with both the output column and the channel lanes (a
    regular convolution broadcasts its input across the lanes): it is read once, so a
    padded copy of the whole input made ahead of the convolution is a pass over memory
    as large as the convolution's own (stride 2 reads four input pixels per output
    pixel). Computed at the tile's output row instead, the padded rows that row reads
    stay in cache: 1.3-2.2x faster on MobileNetV2's depthwise layers (one thread).
    Inlining the padding into the taps is as fast but multiplies the bounds checks by
    the unrolled tile, which doubled the model's lowering time. A grouped convolution
    whose groups are one channel block each (RegNetX: group width 16) broadcasts its
    input like a regular one, but its input block moves with the output block, so each
    padded pixel is again read by one output-channel tile only: per row, RegNetX-400MF's
    stride-2 grouped layers took 0.31-0.35 ms instead of 0.37-0.45 (112x112, 32
    channels) and 0.15 instead of 0.16 (56x56), stride 1 the same (one thread). A regular
    convolution reads each padded pixel from every output-channel tile and keeps its
    copy (computed per row it measured the same, inlined 1.2-1.9x slower); so does a
    grouped one whose input block is not an affine function of the output block (groups
    of several blocks)."""
    spatial, _ = spatial_and_reduction_loops(sch, stage)
    lanes, column, blocks = spatial[-1].axis, spatial[-2].axis, spatial[1].axis
    output = sch.state.buffers[sch.state.stage(stage.name).buffer].name
    inputs = {
        name
        for name, strides in read_strides(sch, stage).items()
        if name != output
        and strides.get(column) not in (0, None)
        and (strides.get(lanes) == 1 or strides.get(blocks) not in (0, None))
    }
    for other in sch.get_stages():
        state = sch.state.stage(other.name)
        if stage_kind(other) == "pad" and sch.state.buffers[state.buffer].name in inputs:
            return other
    return None


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


def reads_input_per_lane(sch: Schedule, stage: StageHandle) -> bool:
    """Whether the convolution's input moves with the output channel's lanes as it
    moves with the output column (a depthwise convolution), rather than being broadcast
    across the lanes."""
    spatial, _ = spatial_and_reduction_loops(sch, stage)
    if len(spatial) < 2:
        return False
    lanes, column = spatial[-1].axis, spatial[-2].axis
    output = sch.state.buffers[sch.state.stage(stage.name).buffer].name
    return any(
        name != output and strides.get(column) not in (0, None) and strides.get(lanes) == 1
        for name, strides in read_strides(sch, stage).items()
    )


def _is_blocked_conv(sch: Schedule, stage: StageHandle) -> bool:
    return is_reduction(sch, stage) and stage_kind(stage) == "blocked_conv"


DEPTHWISE_CONV2D_NCHWC = Template(
    "depthwise_conv2d_nchwc",
    (
        Knob("rows", (1, 2, 4, 7, 8, 14), 7),
        Knob("accumulators", (8, 14, 16, 24, 28), 8),
        Knob("copy_out", (False, True), True),
    ),
    lambda sch, stage: _is_blocked_conv(sch, stage) and reads_input_per_lane(sch, stage),
    schedule_conv2d_nchwc,
)


CONV2D_NCHWC = Template(
    "conv2d_nchwc",
    (
        Knob("rows", (1, 2, 4, 7, 8, 14), 14),
        Knob("accumulators", (8, 14, 16, 24, 28), 28),
        Knob("copy_out", (False, True), True),
    ),
    _is_blocked_conv,
    schedule_conv2d_nchwc,
)
