"""The reference semantics of the vta dialect: every op in program order, on numpy arrays.

No modules, no queues, no tokens (they are ignored): LOAD copies a padded 2-D window into
its buffer slice, GEMM and ALU run their two loops over the micro-ops with int32
wrap-around, STORE keeps the low 8 bits. A virtual-thread loop runs its threads one after
the other, each with its own slices (as the emitter does). This is the oracle equivalence
tests compare the simulator with: a correct token placement and thread interleaving give
the same DRAM contents as this sequential run, under every order in which ready modules go.

    outputs = run_reference(kernel, [x_elems, w_elems, out_elems])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.ir import BlockArgument, Operation

from strato.dialects import vta
from strato.dialects.loop import MemoryScope
from strato.targets.vta.config import DEFAULT_CONFIG, VTAConfig
from strato.targets.vta.emit import (
    _check_inside,
    _check_kernel_range,
    _Emitter,
    assign_regions,
)


def _wrap32(values: np.ndarray) -> np.ndarray:
    return ((values + (1 << 31)) % (1 << 32)) - (1 << 31)


class _Reference(_Emitter):
    def __init__(self, function: func.FuncOp, arrays: Sequence[np.ndarray], config: VTAConfig):
        super().__init__(function, {i: 0 for i in range(len(arrays))}, config)
        self.dram = [np.array(a, dtype=np.int64) for a in arrays]
        b, bi, bo = config.batch, config.block_in, config.block_out
        self.sram = {
            MemoryScope.VTA_INP: np.zeros((config.inp_depth, b, bi), np.int64),
            MemoryScope.VTA_WGT: np.zeros((config.wgt_depth, bo, bi), np.int64),
            MemoryScope.VTA_ACC: np.zeros((config.acc_depth, b, bo), np.int64),
        }

    def run(self, op: Operation) -> None:
        if isinstance(op, vta.DepPushOp | vta.DepPopOp):
            return
        super().run(op)

    def _argument(self, value) -> np.ndarray:
        assert isinstance(value, BlockArgument)
        return self.dram[value.index]

    def load(self, op: vta.LoadOp) -> None:
        target = self.buffer(op.dest, op)
        first = self.index(op.sram_index, op)
        top, bottom, left, right = op.pads
        rows, cols, stride = op.rows.data, op.cols.data, op.stride.data
        if cols == 0:
            return
        height, width = top + rows + bottom, left + cols + right
        _check_inside(op, "load", first, height * width, target)
        source, base = self._argument(op.source), self.index(op.dram_index, op)
        window = np.zeros((height, width, *source.shape[1:]), np.int64)
        for y in range(rows):
            window[top + y, left : left + cols] = source[base + y * stride : base + y * stride + cols]
        start = target.base + first
        self.sram[target.scope][start : start + height * width] = window.reshape(-1, *source.shape[1:])

    def store(self, op: vta.StoreOp) -> None:
        source = self.buffer(op.source, op)
        first = self.index(op.sram_index, op)
        rows, cols, stride = op.rows.data, op.cols.data, op.stride.data
        _check_inside(op, "store", first, rows * cols, source)
        dest, base = self._argument(op.dest), self.index(op.dram_index, op)
        acc = self.sram[MemoryScope.VTA_ACC]
        for y in range(rows):
            values = acc[source.base + first + y * cols : source.base + first + (y + 1) * cols]
            low = ((values + 128) % 256) - 128  # the low 8 bits, as a signed byte
            dest[base + y * stride : base + y * stride + cols] = low

    @staticmethod
    def _iterations(loops: list[list[int]], factors: int):
        """The index offsets (one per factor) of every iteration of the two loops."""
        full = [list(loop) for loop in loops]
        while len(full) < 2:
            full.append([1] + [0] * factors)
        (n_out, *f_out), (n_in, *f_in) = full
        for i in range(n_out):
            for j in range(n_in):
                yield [i * a + j * b for a, b in zip(f_out, f_in)]

    def gemm(self, op: vta.GemmOp) -> None:
        acc, inp, wgt = (self.buffer(v, op) for v in (op.acc, op.inp, op.wgt))
        loops, uops = op.loop_list, op.uop_list
        for position, what, part in ((0, "acc", acc), (1, "inp", inp), (2, "wgt", wgt)):
            _check_kernel_range(op, what, loops, uops, position, part)
        a, x, w = (self.sram[s] for s in (MemoryScope.VTA_ACC, MemoryScope.VTA_INP, MemoryScope.VTA_WGT))
        for offsets in self._iterations(loops, 3):
            for d, s, k in uops:
                dst = acc.base + d + offsets[0]
                if op.reset is not None:
                    a[dst] = 0
                else:
                    src, wk = inp.base + s + offsets[1], wgt.base + k + offsets[2]
                    a[dst] = _wrap32(a[dst] + x[src] @ w[wk].T)

    def alu(self, op: vta.AluOp) -> None:
        acc = self.buffer(op.acc, op)
        loops, uops = op.loop_list, op.uop_list
        for position, what in ((0, "dst"), (1, "src")):
            _check_kernel_range(op, what, loops, uops, position, acc)
        a = self.sram[MemoryScope.VTA_ACC]
        opcode = op.opcode.data
        for offsets in self._iterations(loops, 2):
            for d, s in uops:
                dst, src = acc.base + d + offsets[0], acc.base + s + offsets[1]
                b = np.int64(op.imm.data) if op.imm is not None else a[src].copy()
                a[dst] = _wrap32(_alu(opcode, a[dst], b))


def _alu(opcode: str, a: np.ndarray, b) -> np.ndarray:
    if opcode == "min":
        return np.minimum(a, b)
    if opcode == "max":
        return np.maximum(a, b)
    if opcode == "add":
        return a + b
    if opcode == "mul":
        return a * b
    b = np.broadcast_to(np.asarray(b, dtype=np.int64), np.shape(a))
    return np.where(b >= 0, a >> np.clip(b, 0, 63), a << np.clip(-b, 0, 32))


def run_reference(
    function: func.FuncOp, arrays: Sequence[np.ndarray], config: VTAConfig = DEFAULT_CONFIG
) -> dict[int, np.ndarray]:
    """The out-region arguments after running `function` in program order."""
    regions = assign_regions(function)
    reference = _Reference(function, arrays, config)
    reference.run_block(function.body.block)
    return {
        index: reference.dram[index].astype(np.int8)
        for index, region in regions.items()
        if region == "out"
    }


__all__ = ["run_reference"]
