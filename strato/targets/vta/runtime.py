"""The instruction-stream builder: what VTA's JIT runtime does between two device runs.

A `CommandQueue` appends instructions in issue order:

- `load_2d` / `store_2d`: 2-D strided DMA (LOAD of INP and WGT runs on the load module, LOAD
  of UOP and ACC on the compute module, STORE on the store module);
- `gemm` / `alu`: a micro-op kernel, recorded once per key by running its `init` function on
  a `UopKernel` (at most two affine loops around a list of micro-ops) and cached in a ring in
  the micro-op buffer; a kernel that is not resident is loaded (LOAD UOP) right before use;
- `dep_push(from, to)` / `dep_pop(from, to)`: a push sets the push flag of the last
  instruction when it runs on `from` and the flag is free, otherwise a no-op instruction of
  `from` carries it; a pop is attached to the next instruction created on `to` (or to a
  no-op when another pop of the same direction is pending);
- `synchronize()`: makes FINISH wait for the last load and store, appends it and returns the
  `Program` (instructions + micro-op DRAM image); the queue and its kernel cache start over.

No-op instructions copy nothing: LOAD INP (load), LOAD UOP (compute), STORE OUT (store),
each with x_size = 0.

>>> q = CommandQueue()
>>> q.load_2d(MemoryType.INP, sram_base=0, dram_base=0, y_size=1, x_size=1, x_stride=1)
>>> q.dep_push(Stage.LOAD, Stage.COMPUTE)
>>> q.dep_pop(Stage.LOAD, Stage.COMPUTE)
>>> def init(k):
...     k.push(dst=0, src=0, wgt=0)
>>> q.gemm("gemm", init, reset=True)
>>> [i.mnemonic for i in q.synchronize().insns]
['LOAD INP', 'LOAD UOP', 'GEMM', 'STORE OUT', 'LOAD INP', 'LOAD UOP', 'FINISH']
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace

import numpy as np

from strato.targets.vta.config import DEFAULT_CONFIG, MemoryType, VTAConfig
from strato.targets.vta.errors import VTAError
from strato.targets.vta.isa import (
    Alu,
    AluOp,
    Finish,
    Gemm,
    Instruction,
    Load,
    Stage,
    Store,
    Uop,
    encode_uop,
)

GEMM_MODE = 0
ALU_MODE = 1


@dataclass(frozen=True)
class UopLoop:
    extent: int
    dst_factor: int
    src_factor: int
    wgt_factor: int


@dataclass
class UopKernel:
    """A micro-op kernel: one mode/reset/opcode/immediate, up to two loops, a list of uops.

    `init` functions build it with `loop` (outer first, before any `push`) and `push`.
    """

    mode: int
    reset: bool = False
    alu_opcode: AluOp = AluOp.ADD
    imm: int | None = None
    config: VTAConfig = DEFAULT_CONFIG
    loops: list[UopLoop] = field(default_factory=list)
    uops: list[Uop] = field(default_factory=list)

    def loop(self, extent: int, dst_factor: int, src_factor: int, wgt_factor: int = 0) -> None:
        """Open one more loop around the kernel's micro-ops (the first call is the outer loop)."""
        if self.uops:
            raise VTAError("micro-op kernel: a loop must be opened before the first micro-op")
        if len(self.loops) == 2:
            raise VTAError("micro-op kernel: at most two loops")
        if extent < 1:
            raise VTAError(f"micro-op kernel: loop extent {extent} is not positive")
        self.loops.append(UopLoop(extent, dst_factor, src_factor, wgt_factor))

    def push(self, dst: int, src: int = 0, wgt: int = 0) -> None:
        """Append a micro-op: ACC index, INP (GEMM) or ACC (ALU) index, WGT index."""
        uop = Uop(dst, src, wgt)
        encode_uop(uop, self.config)  # range check
        accumulates = (self.mode == GEMM_MODE and not self.reset) or self.mode == ALU_MODE
        if accumulates and self.uops and self.uops[-1].dst == dst:
            raise VTAError(
                f"micro-op kernel: micro-ops {len(self.uops) - 1} and {len(self.uops)} both write ACC element "
                f"{dst} back to back (the compute pipeline has no forwarding)"
            )
        self.uops.append(uop)

    def instruction(self, uop_bgn: int, pops: dict[str, bool]) -> Gemm | Alu:
        loops = list(self.loops)
        if self.mode == ALU_MODE and len(loops) == 1:
            loops = [UopLoop(1, 0, 0, 0), *loops]  # one ALU loop is the inner one
        while len(loops) < 2:
            loops.append(UopLoop(1, 0, 0, 0))
        outer, inner = loops
        common = dict(
            reset=self.reset,
            uop_bgn=uop_bgn,
            uop_end=uop_bgn + len(self.uops),
            iter_out=outer.extent,
            iter_in=inner.extent,
            dst_factor_out=outer.dst_factor,
            dst_factor_in=inner.dst_factor,
            src_factor_out=outer.src_factor,
            src_factor_in=inner.src_factor,
            **pops,
        )
        if self.mode == GEMM_MODE:
            return Gemm(**common, wgt_factor_out=outer.wgt_factor, wgt_factor_in=inner.wgt_factor)
        return Alu(
            **common, alu_opcode=self.alu_opcode, use_imm=self.imm is not None, imm=self.imm if self.imm else 0
        )


@dataclass
class Program:
    """One device run: the stream and the micro-op DRAM region it loads kernels from."""

    insns: list[Instruction]
    uops: np.ndarray


@dataclass
class _Recorded:
    kernel: UopKernel
    dram_base: int


class CommandQueue:
    """Builds one instruction stream; see the module docstring."""

    def __init__(self, config: VTAConfig = DEFAULT_CONFIG):
        self.config = config
        self._start()

    def _start(self) -> None:
        self.insns: list[Instruction] = []
        self.uop_words: list[int] = []
        self.kernels: dict[Hashable, _Recorded] = {}
        self.resident: dict[Hashable, tuple[int, int]] = {}
        self.uop_ring = 0
        self.pending_pop_prev = dict.fromkeys(Stage, False)
        self.pending_pop_next = dict.fromkeys(Stage, False)

    # --- instruction creation ----------------------------------------------------------

    def _append(self, insn: Instruction) -> None:
        """Append with the pops pending on the instruction's module."""
        stage = insn.stage
        insn = replace(insn, pop_prev=self.pending_pop_prev[stage], pop_next=self.pending_pop_next[stage])
        self.pending_pop_prev[stage] = False
        self.pending_pop_next[stage] = False
        self.insns.append(insn)

    def _nop(self, stage: Stage) -> Instruction:
        if stage == Stage.LOAD:
            return Load(MemoryType.INP, 0, 0, 0, 0, 0)
        if stage == Stage.COMPUTE:
            return Load(MemoryType.UOP, 0, 0, 0, 0, 0)
        return Store(MemoryType.OUT, 0, 0, 0, 0, 0)

    def _commit_pending_pop(self, stage: Stage) -> None:
        if self.pending_pop_prev[stage] or self.pending_pop_next[stage]:
            self._append(self._nop(stage))

    # --- DMA ---------------------------------------------------------------------------

    def load_2d(
        self,
        memory: MemoryType,
        sram_base: int,
        dram_base: int,
        y_size: int,
        x_size: int,
        x_stride: int,
        *,
        x_pad_0: int = 0,
        y_pad_0: int = 0,
        x_pad_1: int = 0,
        y_pad_1: int = 0,
    ) -> None:
        """LOAD y_size rows of x_size elements (row r from dram_base + r * x_stride), zero padded."""
        if memory not in (MemoryType.INP, MemoryType.WGT, MemoryType.ACC, MemoryType.UOP):
            raise VTAError(f"load_2d: memory {MemoryType(memory).name} cannot be loaded")
        self._append(Load(memory, sram_base, dram_base, y_size, x_size, x_stride, y_pad_0, y_pad_1, x_pad_0, x_pad_1))

    def store_2d(self, sram_base: int, dram_base: int, y_size: int, x_size: int, x_stride: int) -> None:
        """STORE y_size rows of x_size accumulator elements, truncated, to OUT."""
        self._append(Store(MemoryType.OUT, sram_base, dram_base, y_size, x_size, x_stride))

    # --- micro-op kernels --------------------------------------------------------------

    def gemm(self, key: Hashable, init: Callable[[UopKernel], None], *, reset: bool = False) -> None:
        """GEMM with the kernel recorded under `key` (recorded by `init` on first use)."""
        self._push_kernel(("gemm", reset, key), init, UopKernel(GEMM_MODE, reset=reset, config=self.config))

    def alu(self, key: Hashable, init: Callable[[UopKernel], None], *, op: AluOp, imm: int | None = None) -> None:
        """ALU `op` with an immediate (`imm`) or tensor-tensor, kernel recorded under `key`."""
        kernel = UopKernel(ALU_MODE, alu_opcode=op, imm=imm, config=self.config)
        self._push_kernel(("alu", op, imm, key), init, kernel)

    def _push_kernel(self, key: Hashable, init: Callable[[UopKernel], None], fresh: UopKernel) -> None:
        recorded = self.kernels.get(key)
        if recorded is None:
            init(fresh)
            if not fresh.uops:
                raise VTAError(f"micro-op kernel {key[-1]!r} has no micro-ops")
            recorded = _Recorded(fresh, len(self.uop_words))
            self.uop_words.extend(encode_uop(u, self.config) for u in fresh.uops)
            self.kernels[key] = recorded
        size = len(recorded.kernel.uops)
        if key not in self.resident:
            self._make_resident(key, recorded, size)
        bgn, _ = self.resident[key]
        stage = Stage.COMPUTE
        pops = {"pop_prev": self.pending_pop_prev[stage], "pop_next": self.pending_pop_next[stage]}
        self.pending_pop_prev[stage] = self.pending_pop_next[stage] = False
        self.insns.append(recorded.kernel.instruction(bgn, pops))

    def _make_resident(self, key: Hashable, recorded: _Recorded, size: int) -> None:
        depth = self.config.uop_depth
        if size > depth:
            raise VTAError(f"micro-op kernel {key[-1]!r} has {size} micro-ops, more than the buffer's {depth}")
        if self.uop_ring + size > depth:
            self.uop_ring = 0
        bgn, end = self.uop_ring, self.uop_ring + size
        for other, (o_bgn, o_end) in list(self.resident.items()):
            if o_bgn < end and bgn < o_end:
                del self.resident[other]
        self.resident[key] = (bgn, end)
        self.uop_ring = end
        self._append(Load(MemoryType.UOP, bgn, recorded.dram_base, 1, size, size))

    # --- dependence tokens -------------------------------------------------------------

    def dep_push(self, from_stage: Stage, to_stage: Stage) -> None:
        """Push a token from `from_stage` to its neighbour `to_stage` after what is issued so far."""
        _check_neighbours(from_stage, to_stage)
        self._commit_pending_pop(from_stage)
        flag = "push_next" if from_stage < to_stage else "push_prev"
        if self.insns and self.insns[-1].stage == from_stage and not getattr(self.insns[-1], flag):
            self.insns[-1] = replace(self.insns[-1], **{flag: True})
            return
        self.insns.append(replace(self._nop(from_stage), **{flag: True}))

    def dep_pop(self, from_stage: Stage, to_stage: Stage) -> None:
        """Make the next instruction of `to_stage` wait for a token from `from_stage`."""
        _check_neighbours(from_stage, to_stage)
        pending = self.pending_pop_prev if from_stage < to_stage else self.pending_pop_next
        if pending[to_stage]:
            self._commit_pending_pop(to_stage)
        pending[to_stage] = True

    # --- the end of a run --------------------------------------------------------------

    def synchronize(self) -> Program:
        """Order FINISH after the last load and store, append it, and return the program."""
        self.dep_push(Stage.STORE, Stage.COMPUTE)
        self.dep_push(Stage.LOAD, Stage.COMPUTE)
        self.dep_pop(Stage.STORE, Stage.COMPUTE)
        self.dep_pop(Stage.LOAD, Stage.COMPUTE)
        self._commit_pending_pop(Stage.COMPUTE)
        self.insns.append(Finish())
        program = Program(self.insns, np.array(self.uop_words, dtype=np.uint32))
        self._start()
        return program


def _check_neighbours(from_stage: Stage, to_stage: Stage) -> None:
    if abs(int(from_stage) - int(to_stage)) != 1:
        raise VTAError(f"no token queue from {Stage(from_stage).name} to {Stage(to_stage).name}")
