"""Dense, matmul, batched matmul and an LSTM's input projection (every time step
at once, `lstm_input`): the cache- and register-blocked GEMM of BLIS.

    for k.outer:                      (KC steps of the reduction, when KC < K)
      pack B[k.outer] into KC x NR panels, [N / NR, KC, NR]   (cache_read + transform_layout)
      for i.outer:                    (MC rows, when MC < M)
        pack A[i.outer, k.outer] into MR-row panels, [MC / MR, KC, MR]   (`pack_a`)
        for j.outer:                  (NR columns: a KC x NR panel of B, in L1 for KC ~ 256)
          for i.inner.outer:          (MR rows)
            cpu.fma_tile.<MR>x<NR>x<KC>   (tensorize: the MR x NR tile in registers)

With the defaults (KC = K, MC = M) the outermost loop is j.outer, over column blocks
(parallel-ready), B is packed one K x NR panel per column block, right before the
row tiles that read it, and each MR x NR tile of the output is zeroed right before the
micro-kernel (decompose_reduction), not by a pass over the whole output first.

B is the operand indexed by the output column and the reduction axis (the weights of a
dense layer, stored [N, K], or the right operand of a matmul), A the one indexed by the
output row and the reduction axis. Batch loops B does not move along join the rows (a
dense layer over [seq, 1, K] has seq rows). Rows or columns that no tile divides (ViT's
197 tokens, a prime; attention scores 197 x 197) are padded: the product is computed
into a local buffer whose rows and columns the loops' padded tails extend (with
cache_write and a copy into the output when the output is the product), the padded
operand is copied into a local buffer first, and the padded rows and columns are
computed and never read. When the tile cannot be formed (fewer than 8
columns, a batch-1 row vector, several reduction axes), a matrix-vector product runs as
`gemv.py` schedules it, anything else as any reduction. Constant weights arrive packed
as the tile reads them (graph-pack-dense), and are then not copied.

Knobs: `mr` and `nr` (preferred tile, `nr` a multiple of the vector width), `kc`
(reduction block; one long block reloads the accumulator tile least: 1024 measured best
on 1024^3 here, single thread), `mc` (rows per block), `pack_b`, `pack_a` (contiguous
A panels: slower here, the copy costs more than the strided broadcasts).
"""

from __future__ import annotations

from typing import Any

from strato.schedule import LoopHandle, Schedule, ScheduleError, StageHandle
from strato.schedule.access import row_major_strides
from strato.schedule.templates.base import (
    Knob,
    ScheduleContext,
    Template,
    fit,
    is_reduction,
    read_strides,
    spatial_and_reduction_loops,
    stage_kind,
    vectorize_innermost,
)
from strato.targets.llvm.intrinsics import default_fma_tile, fma_tile_name
from strato.targets.llvm.templates.gemv import ROWS, schedule_gemv
from strato.targets.llvm.templates.reduction import REDUCTION, schedule_reduction

KINDS = {"dense", "matmul", "batch_matmul", "lstm_input"}


def schedule_dense(
    sch: Schedule, stage: StageHandle, knobs: dict[str, Any], context: ScheduleContext
) -> None:
    spatial, reduction = spatial_and_reduction_loops(sch, stage)
    if len(spatial) < 2 or len(reduction) != 1:
        _fallback(sch, stage, context)
        return
    *batch, i, j = spatial
    (k,) = reduction
    batch, i = _rows(sch, stage, batch, i, j, k, knobs["mr"])
    mr, nr = choose_tile(i.extent, j.extent, knobs["mr"], knobs["nr"], context.lanes)
    kc = fit(k.extent, knobs["kc"])
    b_name = _operand(sch, stage, j.axis, k.axis)
    a_name = _operand(sch, stage, i.axis, k.axis)
    mr, nr, pad_rows, pad_columns = _padded_tile(sch, stage, i, j, k, mr, nr, knobs, context.lanes, a_name, b_name)
    # a single row takes the tile only when B arrives packed as it reads it (a block of
    # one row of a layer whose weights are packed for its blocks of many: it streams
    # the panels once); a row against unpacked weights is a matrix-vector product
    one_row = mr == 1 and b_name is not None and not pad_columns and _panels_contiguous(sch, stage, b_name, j.axis, k.axis, nr)
    if nr < 8 or (mr < 2 and not one_row) or b_name is None:
        _fallback(sch, stage, context)
        return
    if pad_rows or pad_columns:
        # rows or columns no tile divides (ViT's 197 tokens): the product computed
        # into a local buffer (copied out when the kernel's output is the product),
        # the padded operand copied into a local buffer, the loop split with a padded
        # tail; the padded rows and columns are computed and never read
        output = stage
        stage, (*batch, i, j, k), copies = _padded_buffers(
            sch, stage, [*batch, i, j, k], a_name if pad_rows else None,
            b_name if pad_columns else None, context.lanes,
        )  # fmt: skip
        mc = -(-i.extent // mr) * mr
        io, ii = None, i
        iio, iii = sch.split(ii, [None, mr], tail="pad") if pad_rows or mr < i.extent else (None, ii)
        jo, ji = sch.split(j, [None, nr], tail="pad") if pad_columns or nr < j.extent else (None, j)
        if batch:
            # one batch (an attention head) at a time: its padded product and the
            # operand copies that move with it stay in cache between being written and
            # read (a copy of an operand the batch loop does not move, such as A of a
            # dense layer whose column blocks are that loop, is made once)
            for copy in copies:
                sch.compute_at(copy, batch[-1])
            if output != stage:
                out_loops = sch.get_loops(output)
                sch.compute_at(stage, out_loops[len(batch) - 1])
                batch = [sch.get_loop(stage, loop.axis) for loop in batch]
    else:
        # MC: a multiple of MR that divides the rows
        mc = mr * fit(i.extent // mr, max(knobs["mc"] // mr, 1))
        io, ii = sch.split(i, [None, mc]) if mc < i.extent else (None, i)
        iio, iii = sch.split(ii, [None, mr]) if mr < mc else (None, ii)
        jo, ji = sch.split(j, [None, nr]) if nr < j.extent else (None, j)
    ko, ki = sch.split(k, [None, kc]) if kc < k.extent else (None, k)
    outer = [*batch, *[loop for loop in (ko, io, jo, iio) if loop is not None]]
    sch.reorder(*outer, ki, iii, ji)
    if knobs["pack_b"] and not pad_columns and not (jo is None and _panels_contiguous(sch, stage, b_name, j.axis, k.axis, nr)):
        # one KC x N block per k block when rows are blocked (reused by every row
        # block), else one KC x NR panel per column block (a small buffer)
        at = _deepest([*batch, ko, jo if io is None else None])
        _pack(sch, stage, b_name, at, nr, j.axis, k.axis, context.lanes)
    if knobs["pack_a"] and not pad_rows and a_name is not None and a_name != b_name and mr < i.extent:
        at = _deepest([*batch, ko, io])
        _pack(sch, stage, a_name, at, mr, i.axis, k.axis, context.lanes)
    if ko is None:
        # each tile zeroed right before the micro-kernel loads it (in L1), not by a
        # separate pass over the whole output
        sch.decompose_reduction(stage, sch.get_loop(stage, ki.axis))
    sch.tensorize(sch.get_loop(stage, ki.axis), fma_tile_name(mr, nr, kc))
    panel = batch[-1] if batch else (jo if io is None and ko is None else None)
    if panel is not None:
        copy_out_per_panel(sch, stage, sch.get_loop(stage, panel.axis))


def copy_out_per_panel(sch: Schedule, stage: StageHandle, loop: LoopHandle) -> bool:
    """Run the one reader of the product (the copy into the kernel's output of a padded
    product, or the elementwise epilogue a view leaves apart: bias, GELU) after each
    iteration of `loop`, over the panel of the product that iteration finished
    (reverse_compute_at): the product is then a buffer of one panel, in cache when the
    epilogue reads it, instead of a pass over the whole product (ViT's MLP: 1.2 MB,
    more than the L2). Whether it did."""
    consumers = sch.get_consumers(stage)
    if len(consumers) != 1 or is_reduction(sch, consumers[0]):
        return False
    snapshot, trace_length = sch.state.copy(), len(sch.trace.steps)
    try:
        sch.reverse_compute_at(consumers[0], loop)
    except ScheduleError:
        sch.restore(snapshot, trace_length)
        return False
    return True


def _padded_tile(
    sch: Schedule, stage: StageHandle, i, j, k, mr: int, nr: int, knobs: dict[str, Any], lanes: int,
    a_name: str | None, b_name: str | None,
) -> tuple[int, int, bool, bool]:
    """(MR, NR, pad the rows, pad the columns): the tile `choose_tile` found, or where
    no divisor makes a tile (a column count no vector width divides, a row count with
    no divisor of half the preferred height: 197 tokens), a tile over padded rows or
    columns, when padding can extend what they index: the rows or columns are plain
    loops of a stage at the kernel's root, and the padded operand is a buffer of its
    own (B also contiguous along the columns, as the micro-kernel reads it). The
    height or width wasting the fewest padded rows or columns, the larger on a tie:
    197 rows, at most 12 -> 11 (198 rows); 197 columns, 16 lanes -> 16 (208)."""
    state = sch.state.stage(stage.name)
    if state.relations or state.attach is not None or a_name is None or b_name is None or a_name == b_name:
        return mr, nr, False, False
    pad_columns = False
    if nr < lanes <= j.extent and read_strides(sch, stage)[b_name].get(j.axis) == 1:
        widths = range(lanes, max(knobs["nr"], lanes) + 1, lanes)
        nr = min(widths, key=lambda w: (-(-j.extent // w) * w - j.extent, -w))
        mr = fit(i.extent, min(knobs["mr"], ACCUMULATORS // (nr // lanes)))
        pad_columns = True
    tallest = min(knobs["mr"], ACCUMULATORS // max(1, nr // lanes))
    if 2 * mr >= tallest or i.extent < tallest:
        return mr, nr, False, pad_columns
    heights = range(max(2, tallest // 2), tallest + 1)
    mr = min(heights, key=lambda m: (-(-i.extent // m) * m - i.extent, -m))
    return mr, nr, True, pad_columns


def _padded_buffers(
    sch: Schedule, stage: StageHandle, loops: list, a_name: str | None, b_name: str | None, lanes: int
) -> tuple[StageHandle, list, list[StageHandle]]:
    """The stage that computes the product into a local buffer (a new one, copied into
    the kernel's output, when the output is the product) and `loops` ([*batch, i, j,
    k]) in it, after A (`a_name`) and B (`b_name`), when given, are copied into local
    buffers; the copies of those that move along a batch loop."""
    if sch.state.is_output(sch.state.stage(stage.name).buffer):
        compute = sch.cache_write(stage, "local")
        vectorize_innermost(sch, stage, sch.get_loops(stage)[-1], lanes)
        stage = compute
        loops = [sch.get_loop(stage, loop.axis) for loop in loops]
    copies = []
    for name in (a_name, b_name):
        if name is None:
            continue
        strides = read_strides(sch, stage)[name]
        moves = any(strides.get(loop.axis) for loop in loops[:-3])
        copy = sch.cache_read(stage, name, "local")
        vectorize_innermost(sch, copy, sch.get_loops(copy)[-1], lanes)
        if moves:
            copies.append(copy)
    return stage, loops, copies


ACCUMULATORS = 28
"""Vector registers the accumulator tile may take (of 32: the rest hold B and A)."""


def choose_tile(rows: int, columns: int, mr: int, nr: int, lanes: int) -> tuple[int, int]:
    """The MR x NR tile for `rows` x `columns`: the preferred sizes when they divide
    (`fit`); else, when whole vectors divide the columns, the NR of up to 6 vectors
    that divides them and whose tile holds the most accumulators (10000 columns, 35
    rows: 5 x 80 rather than 7 x 16 or 35 x 25); else a power-of-two NR (a vector
    width LLVM legalizes well: 2600 columns get 8, not 26 or 40)."""
    if columns % nr == 0:
        return fit(rows, mr), nr
    if columns % lanes:
        width = max(w for w in (1, 2, 4, 8, 16, 32, 64) if w <= nr and columns % w == 0)
        return fit(rows, mr), width
    best = (0, 0, 0)
    for vectors in range(1, 7):
        width = vectors * lanes
        if columns % width:
            continue
        height = fit(rows, max(1, min(mr, ACCUMULATORS // vectors)))
        best = max(best, (height * vectors, height, width))
    return best[1], best[2]


def _rows(sch: Schedule, stage: StageHandle, batch: list, i, j, k, mr: int) -> tuple[list, Any]:
    """The row loop of the tile: `i`, fused with the batch loops right outside it that
    B does not move along when `i` alone is shorter than a tile (a dense layer over
    [seq, batch, features] has seq x batch rows, batch often 1)."""
    if i.extent >= mr or not batch:
        return batch, i
    b_name = _operand(sch, stage, j.axis, k.axis)
    if b_name is None:
        return batch, i
    b_strides = read_strides(sch, stage)[b_name]
    rows: list = []
    for loop in reversed(batch):
        roots = sch.state.stage(stage.name).roots_of(loop.axis)
        if any(b_strides.get(var) != 0 for var in roots):
            break
        rows.insert(0, loop)
    if not rows:
        return batch, i
    return batch[: len(batch) - len(rows)], sch.fuse(*rows, i)


def _panels_contiguous(sch: Schedule, stage: StageHandle, name: str, j: str, k: str, nr: int) -> bool:
    """Is B (whose columns the tile covers whole) already laid out as the
    micro-kernel reads it: NR consecutive columns a row of the panel, the next k NR elements on (constant weights packed at compile
    time, see graph-pack-dense)?"""
    strides = read_strides(sch, stage)[name]
    return strides.get(j) == 1 and strides.get(k) == nr


def _fallback(sch: Schedule, stage: StageHandle, context: ScheduleContext) -> None:
    """A stage the tile cannot cover: a matrix-vector product (one row) by rows of
    contiguous weights, else any reduction."""
    if not schedule_gemv(sch, stage, ROWS.default(context)):
        schedule_reduction(sch, stage, REDUCTION.defaults(context), context)


def _deepest(loops: list) -> Any:
    present = [loop for loop in loops if loop is not None]
    return present[-1] if present else None


def _operand(sch: Schedule, stage: StageHandle, spatial: str, k: str) -> str | None:
    """The buffer read along both the `spatial` axis and the reduction axis."""
    output = sch.state.buffers[sch.state.stage(stage.name).buffer].name
    for name, strides in read_strides(sch, stage).items():
        if name != output and strides.get(spatial) and strides.get(k):
            return name
    return None


def _pack(
    sch: Schedule, stage: StageHandle, name: str, at, block: int, axis: str, k: str, lanes: int
) -> None:
    """`name` (read along `axis` and the reduction `k`) copied as contiguous K x block
    panels, [.., axis // block, k, axis % block], filled at loop `at` (whole when None),
    the copy vectorized by `lanes`."""
    strides = read_strides(sch, stage)[name]
    packed = sch.cache_read(stage, name, "local")
    dims = [f"d{n}" for n in range(len(sch.state.buffers[_buffer_id(sch, packed)].shape))]
    # the dimension of the operand indexed by `axis`: the one with the smaller stride
    # along it among those that move with it (B is [.., K, N] or [N, K])
    moving_dim = _moving_dim(sch, packed, strides[axis])
    other_dims = [d for n, d in enumerate(dims) if n != moving_dim]
    moving = dims[moving_dim]
    target = [*other_dims[:-1], f"{moving} // {block}", other_dims[-1], f"{moving} % {block}"]
    sch.transform_layout(packed, f"{', '.join(dims)} -> {', '.join(target)}")
    if at is not None:
        sch.compute_at(packed, sch.get_loop(stage, at.axis))
    loops = sch.get_loops(packed)
    if loops:
        vectorize_innermost(sch, packed, loops[-1], lanes)


def _buffer_id(sch: Schedule, stage: StageHandle) -> int:
    return sch.state.stage(stage.name).buffer


def _moving_dim(sch: Schedule, packed: StageHandle, stride: int) -> int:
    shape = sch.state.buffers[_buffer_id(sch, packed)].shape
    strides = row_major_strides(shape)
    for dim in range(len(shape) - 1, -1, -1):
        if stride == strides[dim]:
            return dim
    return len(shape) - 1


DENSE = Template(
    "dense",
    (
        Knob("mr", (2, 4, 6, 8, 12, 14, 16), lambda context: default_fma_tile(context.lanes, context.vector_registers)[0]),
        Knob("nr", (8, 16, 32, 48, 64), lambda context: default_fma_tile(context.lanes, context.vector_registers)[1]),
        Knob("kc", (32, 64, 128, 256, 512, 1024), 1024),
        Knob("mc", (16, 32, 64, 128, 256, 512, 1024), 1024),
        Knob("pack_b", (False, True), True),
        Knob("pack_a", (False, True), False),
    ),
    lambda sch, stage: is_reduction(sch, stage) and stage_kind(stage) in KINDS,
    schedule_dense,
    checked_at_build=True,
)
