"""Dense, matmul and batched matmul: the register-blocked GEMM of BLIS.

    for j.outer:                      (NR columns of the output)
      pack B[:, j.outer] into a contiguous K x NR panel (cache_read + transform_layout)
      for k.outer:                    (KC steps of the reduction)
        for i.outer:                  (MR rows)
          cpu.fma_tile.<MR>x<NR>x<KC> (tensorize: the MR x NR tile in registers)

B is the operand indexed by the output column and the reduction axis (the weights of a
dense layer, stored [N, K], or the right operand of a matmul). When the tile cannot be
formed (fewer than 8 columns, a batch-1 row vector, several reduction axes), the stage
is scheduled as any reduction.

Knobs: `mr` and `nr` (preferred tile, `nr` a multiple of the vector width), `kc`
(reduction block; the B panel is packed whole per column block, and a long block
reloads the accumulator tile least: 1024 measured best on 1024^3 here), `pack_b`.
"""

from __future__ import annotations

from typing import Any

from strato.schedule import Schedule, StageHandle
from strato.schedule.intrinsics.cpu import default_fma_tile, fma_tile_name
from strato.schedule.templates.base import (
    Knob,
    Template,
    fit,
    is_reduction,
    read_strides,
    register_template,
    spatial_and_reduction_loops,
    stage_kind,
)
from strato.schedule.templates.reduction import REDUCTION, schedule_reduction

KINDS = {"dense", "matmul", "batch_matmul"}


def _b_operand(sch: Schedule, stage: StageHandle, j: str, k: str) -> str | None:
    """The buffer read along both the column and the reduction axis."""
    output = sch.state.buffers[sch.state.stage(stage.name).buffer].name
    for name, strides in read_strides(sch, stage).items():
        if name != output and strides.get(j) and strides.get(k):
            return name
    return None


def schedule_dense(sch: Schedule, stage: StageHandle, knobs: dict[str, Any]) -> None:
    spatial, reduction = spatial_and_reduction_loops(sch, stage)
    if len(spatial) < 2 or len(reduction) != 1:
        schedule_reduction(sch, stage, REDUCTION.defaults())
        return
    *batch, i, j = spatial
    (k,) = reduction
    mr, nr, kc = fit(i.extent, knobs["mr"]), fit(j.extent, knobs["nr"]), fit(k.extent, knobs["kc"])
    b_name = _b_operand(sch, stage, j.axis, k.axis)
    if nr < 8 or mr < 2 or b_name is None:
        schedule_reduction(sch, stage, REDUCTION.defaults())
        return
    io, ii = sch.split(i, [None, mr]) if mr < i.extent else (None, i)
    jo, ji = sch.split(j, [None, nr]) if nr < j.extent else (None, j)
    ko, ki = sch.split(k, [None, kc]) if kc < k.extent else (None, k)
    order = [*batch, *[loop for loop in (jo, ko, io) if loop is not None], ki, ii, ji]
    sch.reorder(*order)
    if knobs["pack_b"]:
        _pack(sch, stage, b_name, jo if jo is not None else None, nr, j.axis, k.axis)
    sch.tensorize(sch.get_loop(stage, ki.axis), fma_tile_name(mr, nr, kc))


def _pack(
    sch: Schedule, stage: StageHandle, b_name: str, jo, nr: int, j: str, k: str
) -> None:
    """B as contiguous K x NR panels, each filled for its column block."""
    strides = read_strides(sch, stage)[b_name]
    packed = sch.cache_read(stage, b_name, "local")
    dims = [f"d{n}" for n in range(len(sch.state.buffers[_buffer_id(sch, packed)].shape))]
    # the dimension of B indexed by the output column: the one with the smaller stride
    # along j among those that move with j (B is [.., K, N] or [N, K])
    column_dim = _column_dim(sch, packed, strides[j], strides[k])
    row_dims = [d for n, d in enumerate(dims) if n != column_dim]
    col = dims[column_dim]
    target = [*row_dims[:-1], f"{col} // {nr}", row_dims[-1], f"{col} % {nr}"]
    sch.transform_layout(packed, f"{', '.join(dims)} -> {', '.join(target)}")
    if jo is not None:
        sch.compute_at(packed, sch.get_loop(stage, jo.axis))
    loops = sch.get_loops(packed)
    if loops and loops[-1].extent <= 64:
        sch.vectorize(loops[-1])


def _buffer_id(sch: Schedule, stage: StageHandle) -> int:
    return sch.state.stage(stage.name).buffer


def _column_dim(sch: Schedule, packed: StageHandle, j_stride: int, k_stride: int) -> int:
    shape = sch.state.buffers[_buffer_id(sch, packed)].shape
    from strato.targets.llvm.type_conversion import row_major_strides

    strides = row_major_strides(shape)
    # the dimension whose stride divides j's coefficient and not k's
    for dim in range(len(shape) - 1, -1, -1):
        if j_stride == strides[dim]:
            return dim
    return len(shape) - 1


DENSE = register_template(
    Template(
        "dense",
        (
            Knob("mr", (2, 4, 6, 8, 12, 14, 16), lambda: default_fma_tile()[0]),
            Knob("nr", (8, 16, 32, 48, 64), lambda: default_fma_tile()[1]),
            Knob("kc", (32, 64, 128, 256, 512, 1024), 1024),
            Knob("pack_b", (False, True), True),
        ),
        lambda sch, stage: is_reduction(sch, stage) and stage_kind(stage) in KINDS,
        schedule_dense,
    )
)
