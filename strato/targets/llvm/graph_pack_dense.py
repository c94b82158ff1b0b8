"""graph-pack-dense: lay out the constant weights of dense layers as the GEMM reads them.

The dense schedule template multiplies MR x NR tiles of the output, reading B (the
weight, [N, K]) as K x NR panels, one NR-wide row of the panel per step of the
reduction. A weight in [N, K] order must be repacked into such panels by every call (a
transposing copy of the whole weight: for a 650 x 10000 layer it costs more than the
product). When the weight is a constant, this pass packs it once, at compile time, into
[N / NR, K, NR] (N padded with zero columns when no whole vectors divide it: see
`packed_columns`), and rewrites the layer as a batched product over the panels:

    graph.dense %x, %w, %b          x: [.., K], w: [N, K] constant, M rows in x
    ->
    %x2 = graph.reshape %x                          [M, K]
    %y  = graph.matmul %x2, %w.packed               [M, K] x [N/NR, K, NR] -> [N/NR, M, NR]
    %t  = graph.transpose %y [1, 0, 2]              [M, N/NR, NR]
    %r  = graph.reshape %t                          [.., N]
    %o  = graph.add %r, %b                          (when there is a bias)

so that the template finds each K x NR panel contiguous and needs no packing stage. NR
is the tile width the template picks for M x N at its default knobs
(`strato.targets.llvm.templates.dense.choose_tile`) for vectors of `lanes` fp32 (option;
0, the default, reads the CPU being compiled for). Only float32 layers with at least two
rows change; a one-row product (a GEMV) reads each weight once, so packing buys it
nothing. A padded layer's product has the extra columns, which a slice drops before the
reshape. A layer whose rows are of run-time sizes (the input's leading dimensions, the
features after them) is packed for the tile of 32 rows, as a product that keeps those
dimensions whole (`_pack_run_time_rows`); its kernel runs as blocks of rows of static
sizes (convert-graph-to-te's `row_blocks`), each of which finds the panels it reads.

Requires: functions of graph ops, constants folded (graph-fold-constants). Leaves
illegal: nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, f32
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from strato.diagnostics import StratoError
from strato.dialects import graph
from strato.dialects.graph import static_shape
from strato.dialects.tensor_types import array_from_dense, dense_from_array
from strato.transforms.convert_graph_to_te import ROW_BLOCKS

MAX_PADDING = 1 / 16
"""Most extra columns, as a share of a layer's, that packing may add so that whole
vectors divide them."""


def packed_width(rows: int, columns: int, lanes: int) -> int | None:
    """NR of the tile the dense template uses for `rows` x `columns` at its default
    knobs with vectors of `lanes`, or None when the layer keeps its [N, K] weight."""
    packing = packed_columns(rows, columns, lanes)
    return None if packing is None else packing[0]


def packed_columns(rows: int, columns: int, lanes: int) -> tuple[int, int] | None:
    """(NR, the columns packed) of a layer of `rows` x `columns`, or None when it keeps
    its [N, K] weight. Columns that whole vectors divide are packed as they are, into
    the tile the template picks. Others (an LSTM's 4 x 650 gates: 2600 columns, no
    multiple of 16) are padded with zero columns, at most `MAX_PADDING` more, to the
    count whose tile holds the most accumulators per useful column (2640: 5 x 80
    tiles, 25 accumulators, rather than 7 x 8 half vectors), the extra ones computed
    and dropped."""
    from strato.targets.llvm.templates.dense import choose_tile

    if rows < 2:
        return None
    mr = min((32 - 4) // 2, 12) if lanes >= 16 else 6
    if columns % lanes == 0:
        _, width = choose_tile(rows, columns, mr, 2 * lanes, lanes)
        return (width, columns) if width % lanes == 0 else None
    if columns < 4 * lanes:
        return None
    best: tuple[float, int, int] | None = None
    first = -(-columns // lanes) * lanes
    for padded in range(first, int(columns * (1 + MAX_PADDING)) + 1, lanes):
        height, width = choose_tile(rows, padded, mr, 2 * lanes, lanes)
        if width % lanes:
            continue
        score = height * (width // lanes) * columns / padded
        if best is None or score > best[0]:
            best = (score, width, padded)
    return None if best is None else (best[1], best[2])


def _pack(op: graph.DenseOp, lanes: int) -> list[Operation] | None:
    weight = op.weight.owner
    if not isinstance(weight, graph.ConstantOp) or op.weight.type.element_type != f32:
        return None
    x_shape = static_shape(op.input)
    if any(dim < 0 for dim in x_shape):
        return _pack_run_time_rows(op, weight, lanes)
    columns, features = static_shape(op.weight)
    rows = prod(x_shape[:-1])
    packing = packed_columns(rows, columns, lanes)
    if packing is None:
        return None
    width, padded = packing
    array = array_from_dense(weight.value)
    if padded != columns:
        array = np.concatenate([array, np.zeros((padded - columns, features), array.dtype)])
    panels = np.ascontiguousarray(array.reshape(padded // width, width, features).transpose(0, 2, 1))
    packed = graph.ConstantOp(dense_from_array(panels, f32))
    if op.weight.name_hint is not None:
        packed.result.name_hint = f"{op.weight.name_hint}.packed"
    ops: list[Operation] = [packed]
    x: SSAValue = op.input
    if len(x_shape) != 2:
        ops.append(graph.ReshapeOp(x, [rows, features]))
        x = ops[-1].results[0]
    ops.append(graph.MatmulOp(x, packed))
    ops.append(graph.TransposeOp(ops[-1].results[0], [1, 0, 2]))
    if padded != columns:
        ops.append(graph.ReshapeOp(ops[-1].results[0], [rows, padded]))
        ops.append(graph.SliceOp(ops[-1].results[0], (0, 0), (1, 1), (rows, columns)))
    ops.append(graph.ReshapeOp(ops[-1].results[0], [*x_shape[:-1], columns]))
    if op.bias is not None:
        ops.append(graph.AddOp(ops[-1].results[0], op.bias))
    return ops


def _pack_run_time_rows(
    op: graph.DenseOp, weight: graph.ConstantOp, lanes: int
) -> list[Operation] | None:
    """A dense layer whose input leads with run-time dimensions (its rows, the
    features after them) packed for the tile of the largest block of rows its kernel
    is compiled for (convert-graph-to-te's `ROW_BLOCKS`), as a product
    that keeps the run-time dimensions whole (a reshape may not merge them):

        x: [R1, .., Rp, K]  x  w.packed: [N/NR, 1 (p - 1 times), K, NR]
            -> [N/NR, R1, .., Rp, NR] -> transpose -> [R1, .., Rp, N/NR, NR]
            -> reshape [R1, .., Rp, N] (+ bias)

    Layers whose columns would need padding keep their weight (the slice that drops
    the padding takes static shapes only)."""
    x_shape = static_shape(op.input)
    rows = len(x_shape) - 1
    if any(dim >= 0 for dim in x_shape[:-1]) or x_shape[-1] < 0:
        return None
    columns, features = static_shape(op.weight)
    packing = packed_columns(ROW_BLOCKS[0], columns, lanes)
    if packing is None or packing[1] != columns:
        return None
    width = packing[0]
    array = array_from_dense(weight.value)
    panels = array.reshape(columns // width, width, features).transpose(0, 2, 1)
    panels = np.ascontiguousarray(panels.reshape(columns // width, *([1] * (rows - 1)), features, width))
    packed = graph.ConstantOp(dense_from_array(panels, f32))
    if op.weight.name_hint is not None:
        packed.result.name_hint = f"{op.weight.name_hint}.packed"
    product = graph.MatmulOp(op.input, packed)
    ops: list[Operation] = [packed, product]
    ops.append(graph.TransposeOp(product.result, [*range(1, rows + 1), 0, rows + 1]))
    ops.append(graph.ReshapeOp(ops[-1].results[0], [*x_shape[:-1], columns]))
    if op.bias is not None:
        ops.append(graph.AddOp(ops[-1].results[0], op.bias))
    return ops


@dataclass(frozen=True)
class GraphPackDensePass(ModulePass):
    """Constant dense weights packed into the GEMM's K x NR panels at compile time.
    `lanes`: fp32 lanes of a vector (0: those of the host's CPU)."""

    name = "graph-pack-dense"

    lanes: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from strato.targets.llvm.host import host_target, vector_lanes

        if self.lanes < 0:
            raise StratoError(f"graph-pack-dense: lanes must be positive, got {self.lanes}")
        lanes = self.lanes or vector_lanes(host_target(), 4)
        for dense in [o for o in op.walk() if isinstance(o, graph.DenseOp)]:
            ops = _pack(dense, lanes)
            if ops is None:
                continue
            Rewriter.insert_op(ops, InsertPoint.before(dense))
            result = ops[-1].results[0]
            result.name_hint = dense.result.name_hint
            dense.result.replace_all_uses_with(result)
            weight = dense.weight.owner
            Rewriter.erase_op(dense)
            if isinstance(weight, graph.ConstantOp) and not weight.result.uses:
                Rewriter.erase_op(weight)
