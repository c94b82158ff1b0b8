"""Emit a vta-dialect function as a VTA instruction stream.

The function is a control program: its `loop.for` nests and index arithmetic run here, in
Python, and each vta op issues instructions through the runtime's `CommandQueue` (so the
micro-op kernel cache, token merging and the closing synchronize are the runtime's). Its
arguments are DRAM tensors; each goes to the region its use says (`assign_regions`): a
load into vta.inp / vta.wgt / vta.acc reads region inp / wgt / acc, a store writes region
out. Buffer slices turn relative indices into SRAM element indices; a DMA or micro-op
kernel that leaves its slice is a located diagnostic, not a simulator fault. A
`virtual_thread` loop runs its threads one after the other, each with its own slice of
the buffers declared in its body (thread t's at offset + t * elements), which is what
vta-inject-virtual-threads makes of it with the threads interleaved.

    program, regions = emit_function(kernel, first_elements)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import BlockArgument, Operation, SSAValue

from strato.diagnostics import StratoError
from strato.dialects import vta
from strato.dialects.loop import ForOp, LoopKind, MemoryScope, YieldOp
from strato.targets.vta.config import DEFAULT_CONFIG, MemoryType, VTAConfig
from strato.targets.vta.isa import AluOp, Stage
from strato.targets.vta.runtime import CommandQueue, Program, UopKernel

_STAGES = {"load": Stage.LOAD, "compute": Stage.COMPUTE, "store": Stage.STORE}
_MEMORY = {MemoryScope.VTA_INP: MemoryType.INP, MemoryScope.VTA_WGT: MemoryType.WGT, MemoryScope.VTA_ACC: MemoryType.ACC}
_REGION = {MemoryScope.VTA_INP: "inp", MemoryScope.VTA_WGT: "wgt", MemoryScope.VTA_ACC: "acc"}
_ALU = {"min": AluOp.MIN, "max": AluOp.MAX, "add": AluOp.ADD, "shr": AluOp.SHR, "mul": AluOp.MUL}


def assign_regions(function: func.FuncOp) -> dict[int, str]:
    """argument index -> DRAM region (inp, wgt, acc or out), from how the body uses it."""
    regions: dict[int, str] = {}
    for op in function.walk():
        if isinstance(op, vta.LoadOp):
            value, region = op.source, _REGION[vta.scope_of(op.dest)]
        elif isinstance(op, vta.StoreOp):
            value, region = op.dest, "out"
        else:
            continue
        if not isinstance(value, BlockArgument) or value.owner is not function.body.block:
            raise StratoError(f"'{op.name}' DRAM operand must be an argument of the function", op=op)
        previous = regions.setdefault(value.index, region)
        if previous != region:
            raise StratoError(
                f"argument {value.index} is used as region {previous} and as region {region}", op=op
            )
    return regions


@dataclass
class _Slice:
    base: int
    elements: int
    scope: MemoryScope


class _Emitter:
    def __init__(self, function: func.FuncOp, first_elements: Mapping[int, int], config: VTAConfig):
        self.function = function
        self.first = first_elements
        self.config = config
        self.queue = CommandQueue(config)
        self.values: dict[SSAValue, int] = {}
        self.slices: dict[SSAValue, _Slice] = {}
        self.thread: int | None = None

    # --- values ------------------------------------------------------------------------

    def index(self, value: SSAValue, op: Operation) -> int:
        if value not in self.values:
            raise StratoError(f"'{op.name}' index is not computed from constants and loop variables", op=op)
        return self.values[value]

    def buffer(self, value: SSAValue, op: Operation) -> _Slice:
        found = self.slices.get(value)
        if found is None:
            raise StratoError(f"'{op.name}' on-chip operand must be a vta.buffer", op=op)
        return found

    def dram_base(self, value: SSAValue, index: int, op: Operation) -> int:
        assert isinstance(value, BlockArgument)
        if value.index not in self.first:
            raise StratoError(f"argument {value.index} has no place in DRAM", op=op)
        return self.first[value.index] + index

    # --- walk --------------------------------------------------------------------------

    def run_block(self, block) -> None:
        for op in block.ops:
            self.run(op)

    def run(self, op: Operation) -> None:
        if isinstance(op, ForOp):
            threaded = op.loop_kind == LoopKind.VIRTUAL_THREAD
            if threaded and self.thread is not None:
                raise StratoError("virtual-thread loops cannot nest", op=op)
            for i in range(op.lb.data, op.static_ub, op.step.data):
                self.values[op.induction_var] = i
                if threaded:
                    self.thread = i
                self.run_block(op.body.block)
            if threaded:
                self.thread = None
        elif isinstance(op, YieldOp | func.ReturnOp):
            return
        elif isinstance(op, arith.ConstantOp):
            if not isinstance(op.value, IntegerAttr):
                raise StratoError("a VTA program computes integer indices only", op=op)
            self.values[op.result] = op.value.value.data
        elif isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp | arith.DivUIOp | arith.RemUIOp | arith.MinUIOp | arith.MaxUIOp):
            a, b = self.index(op.lhs, op), self.index(op.rhs, op)
            self.values[op.result] = _binary(op, a, b)
        elif isinstance(op, vta.BufferOp):
            # in a virtual-thread loop each thread has its own slice, as after injection
            offset = op.offset.data + (self.thread or 0) * op.elements
            depth = {
                MemoryScope.VTA_INP: self.config.inp_depth,
                MemoryScope.VTA_WGT: self.config.wgt_depth,
                MemoryScope.VTA_ACC: self.config.acc_depth,
            }[op.scope]
            if offset + op.elements > depth:
                raise StratoError(
                    f"'vta.buffer' elements {offset}..{offset + op.elements - 1} do not fit the "
                    f"{depth}-element {op.scope.value} buffer",
                    op=op,
                )
            self.slices[op.result] = _Slice(offset, op.elements, op.scope)
        elif isinstance(op, vta.LoadOp):
            self.load(op)
        elif isinstance(op, vta.StoreOp):
            self.store(op)
        elif isinstance(op, vta.GemmOp):
            self.gemm(op)
        elif isinstance(op, vta.AluOp):
            self.alu(op)
        elif isinstance(op, vta.DepPushOp):
            self.queue.dep_push(*(_STAGES[m] for m in op.queue))
        elif isinstance(op, vta.DepPopOp):
            self.queue.dep_pop(*(_STAGES[m] for m in op.queue))
        else:
            raise StratoError(f"the VTA emitter cannot run '{op.name}'", op=op)

    # --- instructions ------------------------------------------------------------------

    def load(self, op: vta.LoadOp) -> None:
        target = self.buffer(op.dest, op)
        sram = self.index(op.sram_index, op)
        top, bottom, left, right = op.pads
        rows, cols = op.rows.data, op.cols.data
        written = (top + rows + bottom) * (left + cols + right) if cols else 0
        _check_inside(op, "load", sram, written, target)
        self.queue.load_2d(
            _MEMORY[target.scope],
            target.base + sram,
            self.dram_base(op.source, self.index(op.dram_index, op), op),
            rows,
            cols,
            op.stride.data,
            y_pad_0=top,
            y_pad_1=bottom,
            x_pad_0=left,
            x_pad_1=right,
        )

    def store(self, op: vta.StoreOp) -> None:
        source = self.buffer(op.source, op)
        sram = self.index(op.sram_index, op)
        _check_inside(op, "store", sram, op.rows.data * op.cols.data, source)
        self.queue.store_2d(
            source.base + sram,
            self.dram_base(op.dest, self.index(op.dram_index, op), op),
            op.rows.data,
            op.cols.data,
            op.stride.data,
        )

    def gemm(self, op: vta.GemmOp) -> None:
        acc, inp, wgt = (self.buffer(v, op) for v in (op.acc, op.inp, op.wgt))
        loops, uops = op.loop_list, op.uop_list
        for position, what, part in ((0, "acc", acc), (1, "inp", inp), (2, "wgt", wgt)):
            _check_kernel_range(op, what, loops, uops, position, part)
        absolute = [(d + acc.base, s + inp.base, w + wgt.base) for d, s, w in uops]

        def init(kernel: UopKernel) -> None:
            for extent, fd, fs, fw in loops:
                kernel.loop(extent, fd, fs, fw)
            for d, s, w in absolute:
                kernel.push(d, s, w)

        key = (tuple(map(tuple, loops)), tuple(absolute))
        self.queue.gemm(key, init, reset=op.reset is not None)

    def alu(self, op: vta.AluOp) -> None:
        acc = self.buffer(op.acc, op)
        loops, uops = op.loop_list, op.uop_list
        for position, what in ((0, "dst"), (1, "src")):
            _check_kernel_range(op, what, loops, uops, position, acc)
        absolute = [(d + acc.base, s + acc.base) for d, s in uops]

        def init(kernel: UopKernel) -> None:
            for extent, fd, fs in loops:
                kernel.loop(extent, fd, fs)
            for d, s in absolute:
                kernel.push(d, s)

        key = (tuple(map(tuple, loops)), tuple(absolute))
        imm = op.imm.data if op.imm is not None else None
        self.queue.alu(key, init, op=_ALU[op.opcode.data], imm=imm)


def _binary(op: Operation, a: int, b: int) -> int:
    if isinstance(op, arith.AddiOp):
        return a + b
    if isinstance(op, arith.SubiOp):
        return a - b
    if isinstance(op, arith.MuliOp):
        return a * b
    if isinstance(op, arith.MinUIOp):
        return min(a, b)
    if isinstance(op, arith.MaxUIOp):
        return max(a, b)
    if b == 0:
        raise StratoError("division by zero in an index", op=op)
    return a // b if isinstance(op, arith.DivUIOp) else a % b


def _check_inside(op: Operation, what: str, first: int, count: int, part: _Slice) -> None:
    if count and (first < 0 or first + count > part.elements):
        raise StratoError(
            f"'{op.name}' would {what} elements {first}..{first + count - 1} of a {part.elements}-element buffer",
            op=op,
        )


def _check_kernel_range(op, what: str, loops, uops, position: int, part: _Slice) -> None:
    reach = sum((loop[0] - 1) * loop[1 + position] for loop in loops)
    highest = max(u[position] for u in uops) + reach
    if highest >= part.elements:
        raise StratoError(
            f"'{op.name}' reaches {what} element {highest} of a {part.elements}-element buffer", op=op
        )


def emit_function(
    function: func.FuncOp, first_elements: Mapping[int, int], config: VTAConfig = DEFAULT_CONFIG
) -> Program:
    """The instruction stream (and micro-op image) of one run of `function`.

    `first_elements[i]` is the first element of argument i in its region.
    """
    emitter = _Emitter(function, first_elements, config)
    emitter.run_block(function.body.block)
    return emitter.queue.synchronize()


__all__ = ["assign_regions", "emit_function"]
