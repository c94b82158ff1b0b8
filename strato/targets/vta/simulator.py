"""A bit-exact functional simulator of VTA over DRAM held in numpy arrays, with a cycle model.

The stream is routed as VTA's fetch module does into three in-order module queues (load,
compute, store) that synchronise through four token queues (load->compute, compute->load,
compute->store, store->compute). A scheduler repeatedly runs the head instruction of a ready
module (one whose pops can be satisfied); which ready module runs first is a parameter
(`seed`), and results never depend on it:

- every shared on-chip element (INP and WGT between load and compute, ACC between compute and
  store) remembers its last writer and reader; an access that no chain of tokens orders after
  a conflicting access of the other module is reported as a race, so a stream either computes
  the same result under every interleaving or is rejected;
- a pop that can never be satisfied is a deadlock; a FINISH that tokens do not order after
  every load and store, and tokens left in a queue at the end, are errors too.

Every fault is a `VTAError` whose location is the offending instruction's index.

Where VTA's implementations differ, the simulator follows its functional simulator: LOAD
pads any memory (the HLS design ignores the pads of WGT loads), STORE reads the accumulator
directly (HLS keeps a separate OUT buffer that GEMM/ALU update), ALU MUL keeps the low 32
bits of the product. SHR by b >= 0 is an arithmetic right shift, by b < 0 a left shift by -b;
shifts past 31 give the sign (right) or 0 (left). Back-to-back micro-ops writing the same
accumulator element compute as written (the hardware pipeline would not forward; the
runtime rejects such kernels).

DRAM is a mapping from region name to array (`uop` uint32 [n], `inp` [n, BATCH, BLOCK_IN],
`wgt` [n, BLOCK_OUT, BLOCK_IN], `acc` int32 [n, BATCH, BLOCK_OUT], `out` [n, BATCH, BLOCK_OUT]);
an instruction's dram_base and x_stride count elements of the region of its memory type.
STOREs write `out` in place.

    python -m strato.vta.simulator BUNDLE_DIR [--seed N] [--json] [--dma-latency N ...]

runs a bundle (see `strato.targets.vta.bundle`) and prints the counters and the cycle model's report.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from strato.targets.vta.config import DEFAULT_CONFIG, MemoryType, VTAConfig
from strato.targets.vta.cycle_model import (
    CycleParams,
    CycleReport,
    estimate_cycles,
    token_queue,
)
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
    describe,
    format_instruction,
    uop_layout,
)

REGIONS = {
    MemoryType.UOP: "uop",
    MemoryType.WGT: "wgt",
    MemoryType.INP: "inp",
    MemoryType.ACC: "acc",
    MemoryType.OUT: "out",
}

_GEMM_CHUNK = 8192  # micro-op executions per numpy batch
_GROUP_ROWS = 16  # GEMM multiplies per weight block when its blocks have this many micro-ops on average

_QUEUE_NAMES = {
    (Stage.LOAD, Stage.COMPUTE): "load->compute",
    (Stage.COMPUTE, Stage.LOAD): "compute->load",
    (Stage.COMPUTE, Stage.STORE): "compute->store",
    (Stage.STORE, Stage.COMPUTE): "store->compute",
}


def region_layout(config: VTAConfig) -> dict[str, tuple[np.dtype, tuple[int, ...]]]:
    """Element dtype and element shape of each DRAM region."""
    return {
        "uop": (np.dtype(np.uint32), ()),
        "inp": (config.inp_dtype, config.inp_elem_shape),
        "wgt": (config.wgt_dtype, config.wgt_elem_shape),
        "acc": (config.acc_dtype, config.acc_elem_shape),
        "out": (config.out_dtype, config.out_elem_shape),
    }


def check_dram(dram: Mapping[str, np.ndarray], config: VTAConfig) -> None:
    """Reject a region with an unknown name, a wrong dtype or a wrong element shape."""
    layouts = region_layout(config)
    for name, array in dram.items():
        if name not in layouts:
            raise VTAError(f"DRAM region {name!r} is not one of {', '.join(layouts)}")
        dtype, shape = layouts[name]
        if array.dtype != dtype or array.shape[1:] != shape or array.ndim != 1 + len(shape):
            expected = ", ".join(["n", *map(str, shape)])
            raise VTAError(f"DRAM region {name} is {array.dtype}{list(array.shape)}, expected {dtype}[{expected}]")


@dataclass
class Counters:
    """The counters of VTA's functional simulator (pads are not counted as loaded bytes)."""

    inp_load_nbytes: int = 0
    wgt_load_nbytes: int = 0
    acc_load_nbytes: int = 0
    uop_load_nbytes: int = 0
    out_store_nbytes: int = 0
    gemm_counter: int = 0
    alu_counter: int = 0


@dataclass
class Report:
    """What a run of the simulator reports: counters, instruction counts, the cycle model."""

    counters: Counters
    instructions: dict[str, int]
    cycles: CycleReport
    config: VTAConfig = field(default=DEFAULT_CONFIG)
    # final on-chip buffers ("uop", "inp", "wgt", "acc"), for inspection
    buffers: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, object]:
        return {
            "config": self.config.name,
            "instructions": dict(self.instructions),
            "counters": asdict(self.counters),
            "cycles": self.cycles.to_json(),
        }

    def format(self) -> str:
        lines = [
            f"config {self.config.name}",
            "instructions " + " ".join(f"{k}={v}" for k, v in self.instructions.items()),
        ]
        lines += [f"{name} {value}" for name, value in asdict(self.counters).items()]
        busy = " ".join(f"{k}={v}" for k, v in self.cycles.busy_cycles.items())
        lines += [
            f"cycles {self.cycles.total_cycles} (busy {busy})",
            f"compute utilization {100 * self.cycles.compute_utilization:.1f}%",
            f"cycle model: {self.cycles.params.describe()}",
        ]
        return "\n".join(lines)


class _Shared:
    """Last writer and reader of each element of an on-chip buffer shared by two modules.

    Sequence numbers count instructions of one module (0-based, -1 = never); a module knows an
    access of another module happened before its own when the access's sequence number is
    below the count of that module's instructions its tokens have made it wait for.
    """

    def __init__(self, name: str, depth: int, writer: Stage, reader: Stage):
        self.name = name
        self.writer = writer
        self.reader = reader
        self.last_write = np.full(depth, -1, dtype=np.int64)
        self.last_read = np.full(depth, -1, dtype=np.int64)


class _Machine:
    def __init__(
        self, insns: Sequence[Instruction], dram: Mapping[str, np.ndarray], config: VTAConfig, queue_depth: int
    ):
        self.insns = insns
        self.queue_depth = queue_depth
        self.dram = dram
        self.config = config
        cfg = config
        self.uop = np.zeros(cfg.uop_depth, dtype=np.uint32)
        self.inp = np.zeros((cfg.inp_depth, *cfg.inp_elem_shape), dtype=cfg.inp_dtype)
        self.wgt = np.zeros((cfg.wgt_depth, *cfg.wgt_elem_shape), dtype=cfg.wgt_dtype)
        self.acc = np.zeros((cfg.acc_depth, *cfg.acc_elem_shape), dtype=np.int32)
        self.dot_dtype = _dot_dtype(cfg)
        self.counters = Counters()
        self.shared = {
            MemoryType.INP: _Shared("INP", cfg.inp_depth, Stage.LOAD, Stage.COMPUTE),
            MemoryType.WGT: _Shared("WGT", cfg.wgt_depth, Stage.LOAD, Stage.COMPUTE),
            MemoryType.ACC: _Shared("ACC", cfg.acc_depth, Stage.COMPUTE, Stage.STORE),
        }
        # per module: global indices of its instructions, in order
        self.per_stage: dict[Stage, list[int]] = {stage: [] for stage in Stage}
        for index, insn in enumerate(insns):
            self.per_stage[insn.stage].append(index)
        self.position = dict.fromkeys(Stage, 0)
        # fetch: a prefix of the stream has been routed into the module queues
        self.fetched = 0
        self.fetched_per_stage = dict.fromkeys(Stage, 0)
        # knowledge[s][t]: how many of module t's instructions happened before module s's next one
        self.knowledge = {stage: dict.fromkeys(Stage, 0) for stage in Stage}
        self.tokens: dict[tuple[Stage, Stage], list[dict[Stage, int]]] = {q: [] for q in _QUEUE_NAMES}

    # --- scheduling --------------------------------------------------------------------

    def head(self, stage: Stage) -> int | None:
        """The next instruction of `stage`, once fetch has routed it to the module."""
        if self.position[stage] >= self.fetched_per_stage[stage]:
            return None
        return self.per_stage[stage][self.position[stage]]

    def fetch(self) -> None:
        """Route instructions in order while their module's queue has room.

        A module holds the instruction it executes (or waits to execute) and its queue holds
        up to `queue_depth` more.
        """
        while self.fetched < len(self.insns):
            stage = self.insns[self.fetched].stage
            if self.fetched_per_stage[stage] - self.position[stage] > self.queue_depth:
                return
            self.fetched_per_stage[stage] += 1
            self.fetched += 1

    def pops(self, stage: Stage, insn: Instruction) -> list[tuple[Stage, Stage]]:
        queues = []
        if insn.pop_prev:
            queues.append(token_queue(stage, "prev")[::-1])
        if insn.pop_next:
            queues.append(token_queue(stage, "next")[::-1])
        return queues

    def ready(self, stage: Stage) -> bool:
        index = self.head(stage)
        if index is None:
            return False
        return all(self.tokens[q] for q in self.pops(stage, self.insns[index]))

    def run(self, rng: random.Random | None) -> None:
        while True:
            self.fetch()
            ready = [stage for stage in Stage if self.ready(stage)]
            if not ready:
                break
            stage = rng.choice(ready) if rng is not None else ready[0]
            self.step(stage)
        stuck = sorted((index, s) for s in Stage if (index := self.head(s)) is not None)
        if stuck:
            index, stage = stuck[0]
            waits = [_QUEUE_NAMES[q] for q in self.pops(stage, self.insns[index]) if not self.tokens[q]]
            notes = [f"instruction {describe(self.insns[i], i)} waits too" for i, _ in stuck[1:]]
            if self.fetched < len(self.insns):
                blocked = self.insns[self.fetched]
                notes.append(
                    f"fetch waits at instruction {describe(blocked, self.fetched)}: the "
                    f"{blocked.stage.name.lower()} queue is full ({self.queue_depth} instructions)"
                )
            raise VTAError(
                f"deadlock: {describe(self.insns[index])} on the {stage.name.lower()} module waits for a "
                f"{' and a '.join(waits)} token that is never pushed" + (f" ({'; '.join(notes)})" if notes else ""),
                index,
            )

    def step(self, stage: Stage) -> None:
        index = self.head(stage)
        assert index is not None
        insn = self.insns[index]
        known = self.knowledge[stage]
        for queue in self.pops(stage, insn):
            carried = self.tokens[queue].pop(0)
            for other in Stage:
                known[other] = max(known[other], carried[other])
        seq = self.position[stage]
        self.execute(index, insn, stage, seq)
        self.position[stage] += 1
        known[stage] = seq + 1
        if insn.push_prev:
            self.tokens[token_queue(stage, "prev")].append(dict(known))
        if insn.push_next:
            self.tokens[token_queue(stage, "next")].append(dict(known))

    # --- races -------------------------------------------------------------------------

    def access(self, index: int, stage: Stage, seq: int, memory: MemoryType, idx: np.ndarray, write: bool) -> None:
        shared = self.shared.get(memory)
        if shared is None or idx.size == 0:
            return
        known = self.knowledge[stage]
        other = shared.reader if stage == shared.writer else shared.writer
        # RAW/WAW against the other module's writes, WAR against its reads
        checks = [("written", shared.last_write)] if stage == shared.reader else [("read", shared.last_read)]
        for verb, last in checks:
            seqs = last[idx]
            unordered = seqs >= known[other]
            if unordered.any():
                culprit = self.per_stage[other][int(seqs[unordered].max())]
                action = "writes" if write else "reads"
                raise VTAError(
                    f"race: {describe(self.insns[index])} {action} {shared.name} element "
                    f"{int(idx[unordered][0])} {verb} by instruction {describe(self.insns[culprit], culprit)} "
                    f"with no dependence token ordering them",
                    index,
                )
        if stage == shared.writer and write:
            shared.last_write[idx] = seq
        elif stage == shared.reader and not write:
            # seq is one number: repeated indices all store the same max, as maximum.at would
            shared.last_read[idx] = np.maximum(shared.last_read[idx], seq)

    # --- instructions ------------------------------------------------------------------

    def execute(self, index: int, insn: Instruction, stage: Stage, seq: int) -> None:
        if isinstance(insn, Load):
            self.load(index, insn, stage, seq)
        elif isinstance(insn, Store):
            self.store(index, insn, stage, seq)
        elif isinstance(insn, Gemm):
            self.gemm(index, insn, stage, seq)
        elif isinstance(insn, Alu):
            self.alu(index, insn, stage, seq)
        elif isinstance(insn, Finish):
            self.finish(index)

    def region(self, index: int, insn: Load | Store) -> np.ndarray:
        name = REGIONS[insn.memory_type]
        array = self.dram.get(name)
        if array is None:
            raise VTAError(f"{insn.mnemonic} uses DRAM region {name}, which is not given", index)
        return array

    def dram_rows(self, index: int, insn: Load | Store, array: np.ndarray) -> np.ndarray:
        rows = insn.dram_base + np.arange(insn.y_size, dtype=np.int64)[:, None] * insn.x_stride
        elems = rows + np.arange(insn.x_size, dtype=np.int64)[None, :]
        last = int(elems.max())
        if last >= len(array):
            raise VTAError(
                f"{insn.mnemonic} accesses DRAM {REGIONS[insn.memory_type]} element {last} beyond the region's "
                f"{len(array)} elements",
                index,
            )
        return elems

    def load(self, index: int, insn: Load, stage: Stage, seq: int) -> None:
        if insn.is_nop:
            return
        memory = MemoryType(insn.memory_type)
        width = insn.x_pad_0 + insn.x_size + insn.x_pad_1
        height = insn.y_pad_0 + insn.y_size + insn.y_pad_1
        depth = self.config.depth(memory)
        if insn.sram_base + width * height > depth:
            raise VTAError(
                f"{insn.mnemonic} writes SRAM elements {insn.sram_base}..{insn.sram_base + width * height - 1} "
                f"beyond the {memory.name} buffer's {depth} elements",
                index,
            )
        array = self.region(index, insn)
        data = array[self.dram_rows(index, insn, array)] if insn.y_size else array[:0]
        block = np.zeros((height, width, *array.shape[1:]), dtype=array.dtype)
        block[insn.y_pad_0 : insn.y_pad_0 + insn.y_size, insn.x_pad_0 : insn.x_pad_0 + insn.x_size] = data.reshape(
            (insn.y_size, insn.x_size, *array.shape[1:])
        )
        target = {
            MemoryType.UOP: self.uop,
            MemoryType.INP: self.inp,
            MemoryType.WGT: self.wgt,
            MemoryType.ACC: self.acc,
        }[memory]
        written = np.arange(insn.sram_base, insn.sram_base + width * height)
        self.access(index, stage, seq, memory, written, write=True)
        target[written] = block.reshape((width * height, *array.shape[1:]))
        nbytes = insn.x_size * insn.y_size * self.config.elem_bytes(memory)
        name = f"{REGIONS[memory]}_load_nbytes"
        setattr(self.counters, name, getattr(self.counters, name) + nbytes)

    def store(self, index: int, insn: Store, stage: Stage, seq: int) -> None:
        if insn.is_nop:
            return
        count = insn.x_size * insn.y_size
        if insn.sram_base + count > self.config.out_depth:
            raise VTAError(
                f"{insn.mnemonic} reads SRAM elements {insn.sram_base}..{insn.sram_base + count - 1} beyond the "
                f"OUT buffer's {self.config.out_depth} elements",
                index,
            )
        array = self.region(index, insn)
        elems = self.dram_rows(index, insn, array) if insn.y_size else np.zeros((0, 0), dtype=np.int64)
        source = np.arange(insn.sram_base, insn.sram_base + count)
        self.access(index, stage, seq, MemoryType.ACC, source, write=False)
        # truncation to the output width, not saturation
        array[elems.reshape(-1)] = self.acc[source].astype(array.dtype)
        self.counters.out_store_nbytes += count * self.config.out_elem_bytes

    def uop_indices(self, index: int, insn: Gemm | Alu) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if insn.uop_end > self.config.uop_depth:
            raise VTAError(
                f"{insn.mnemonic} runs micro-ops up to {insn.uop_end - 1} beyond the UOP buffer's "
                f"{self.config.uop_depth} elements",
                index,
            )
        return micro_op_indices(insn, self.uop, self.config)

    def check_range(self, index: int, insn: Instruction, what: str, idx: np.ndarray, depth: int) -> None:
        if idx.size and int(idx.max()) >= depth:
            raise VTAError(
                f"{insn.mnemonic} accesses {what} element {int(idx.max())} beyond the buffer's {depth} elements", index
            )

    def gemm(self, index: int, insn: Gemm, stage: Stage, seq: int) -> None:
        d, s, w = self.uop_indices(index, insn)
        self.check_range(index, insn, "ACC", d, self.config.acc_depth)
        if insn.reset:
            self.access(index, stage, seq, MemoryType.ACC, d, write=True)
            self.acc[d] = 0
            return
        self.check_range(index, insn, "INP", s, self.config.inp_depth)
        self.check_range(index, insn, "WGT", w, self.config.wgt_depth)
        self.access(index, stage, seq, MemoryType.INP, s, write=False)
        self.access(index, stage, seq, MemoryType.WGT, w, write=False)
        self.access(index, stage, seq, MemoryType.ACC, d, write=True)
        if d.size:
            # int64 sums are exact; additions commute modulo 2**32, so summing all of an
            # instruction's products per target before the wrap equals wrapping after each
            targets, inverse = np.unique(d, return_inverse=True)
            inverse = inverse.reshape(-1)
            sums = np.zeros((len(targets), *self.config.acc_elem_shape), dtype=np.int64)
            for first in range(0, d.size, _GEMM_CHUNK):  # bounds the memory of one product
                part = slice(first, first + _GEMM_CHUNK)
                sums += self.gemm_sums(s[part], w[part], inverse[part], len(targets))
            self.acc[targets] = _wrap32(self.acc[targets].astype(np.int64) + sums)
        self.counters.gemm_counter += insn.uop_count

    def gemm_sums(self, s: np.ndarray, w: np.ndarray, inverse: np.ndarray, count: int) -> np.ndarray:
        """Per target (`inverse` numbers them, `count` of them) the int64 sum of the
        products inp[s] . wgt[w]^T of the micro-ops that write it."""
        dot = self.dot_dtype
        if dot is None:
            sums = np.zeros((count, *self.config.acc_elem_shape), dtype=np.int64)
            inp, wgt = self.inp[s].astype(np.int64), self.wgt[w].astype(np.int64)
            np.add.at(sums, inverse, np.einsum("nbk,nok->nbo", inp, wgt, optimize=False))
            return sums
        # every product and dot product is an integer the float type holds exactly, and so
        # is each float64 sum bincount makes of at most _GEMM_CHUNK of them (`_dot_dtype`)
        order = np.argsort(w, kind="stable")
        blocks = w[order]
        starts = np.flatnonzero(np.r_[True, blocks[1:] != blocks[:-1]])
        if len(starts) * _GROUP_ROWS <= len(w):
            # few weight blocks, many micro-ops each: one matrix product per block
            inp = self.inp[s[order]].astype(dot)
            weights = self.wgt[blocks[starts]].astype(dot)
            products = np.empty((len(w), inp.shape[1], weights.shape[1]), dtype=dot)
            ends = [*starts[1:].tolist(), len(w)]
            for block, (first, end) in enumerate(zip(starts.tolist(), ends, strict=True)):
                np.matmul(inp[first:end], weights[block].T, out=products[first:end])
            inverse = inverse[order]
        else:
            products = np.matmul(self.inp[s].astype(dot), self.wgt[w].astype(dot).transpose(0, 2, 1))
        lanes = products[0].size
        slots = (inverse[:, None] * lanes + np.arange(lanes)).reshape(-1)
        sums = np.bincount(slots, weights=products.reshape(-1), minlength=count * lanes)
        return sums.astype(np.int64).reshape((count, *self.config.acc_elem_shape))

    def alu(self, index: int, insn: Alu, stage: Stage, seq: int) -> None:
        d, s, _ = self.uop_indices(index, insn)
        self.check_range(index, insn, "ACC", d, self.config.acc_depth)
        if not insn.use_imm:
            self.check_range(index, insn, "ACC", s, self.config.acc_depth)
        self.access(index, stage, seq, MemoryType.ACC, d, write=True)
        op = AluOp(insn.alu_opcode)
        self.counters.alu_counter += insn.uop_count
        if not d.size:
            return
        if self.alu_vectorizable(d, s, insn.use_imm):
            a = self.acc[d].astype(np.int64)
            b = np.int64(insn.imm) if insn.use_imm else self.acc[s].astype(np.int64)
            self.acc[d] = _alu(op, a, b)
            return
        # an element is read after an earlier micro-op of this instruction wrote it: run in order
        for dst, src in zip(d.tolist(), s.tolist(), strict=True):
            a = self.acc[dst].astype(np.int64)
            b = np.int64(insn.imm) if insn.use_imm else self.acc[src].astype(np.int64)
            self.acc[dst] = _alu(op, a, b)

    def alu_vectorizable(self, d: np.ndarray, s: np.ndarray, use_imm: bool) -> bool:
        if len(np.unique(d)) != len(d):
            return False
        if use_imm:
            return True
        first_write = np.full(self.config.acc_depth, len(d), dtype=np.int64)
        first_write[d] = np.arange(len(d))
        return not bool((first_write[s] < np.arange(len(s))).any())

    def finish(self, index: int) -> None:
        known = self.knowledge[Stage.COMPUTE]
        for other in (Stage.LOAD, Stage.STORE):
            if known[other] < len(self.per_stage[other]):
                culprit = self.per_stage[other][known[other]]
                raise VTAError(
                    f"FINISH is not ordered after instruction {describe(self.insns[culprit], culprit)} "
                    f"on the {other.name.lower()} module (no dependence token makes FINISH wait for it)",
                    index,
                )


def micro_op_indices(
    insn: Gemm | Alu, uop_buffer: np.ndarray, config: VTAConfig = DEFAULT_CONFIG
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """dst, src, wgt index of every micro-op execution of a GEMM/ALU, in execution order.

    `uop_buffer` is the micro-op buffer (uint32 words); the loops are
    `for i_out: for i_in: for u in uop_bgn..uop_end-1` with index = uop field + i_out *
    factor_out + i_in * factor_in (ALU has no weight index: 0).
    """
    words = uop_buffer[insn.uop_bgn : max(insn.uop_end, insn.uop_bgn)].astype(np.int64)
    dst, src, wgt = ((words >> f.lsb) & ((1 << f.width) - 1) for f in uop_layout(config))
    i_out = np.arange(insn.iter_out, dtype=np.int64)[:, None, None]
    i_in = np.arange(insn.iter_in, dtype=np.int64)[None, :, None]

    def affine(base: np.ndarray, f_out: int, f_in: int) -> np.ndarray:
        return (base[None, None, :] + i_out * f_out + i_in * f_in).reshape(-1)

    d = affine(dst, insn.dst_factor_out, insn.dst_factor_in)
    s = affine(src, insn.src_factor_out, insn.src_factor_in)
    w = affine(wgt, insn.wgt_factor_out, insn.wgt_factor_in) if isinstance(insn, Gemm) else np.zeros_like(d)
    return d, s, w


def _dot_dtype(config: VTAConfig) -> np.dtype | None:
    """A float type GEMM can multiply INP by WGT elements in exactly: every dot product
    of BLOCK_IN products, and every sum of _GEMM_CHUNK dot products (in float64), is an
    integer below its 2**mantissa bound (int8 operands: 16 * 128 * 128 = 2**18 < 2**24,
    float32). None: multiply in int64."""
    largest = -int(np.iinfo(config.inp_dtype).min) * -int(np.iinfo(config.wgt_dtype).min)
    bound = config.block_in * largest
    if bound * _GEMM_CHUNK >= 2**53:
        return None
    return np.dtype(np.float32) if bound < 2**24 else np.dtype(np.float64)


def _wrap32(values: np.ndarray) -> np.ndarray:
    """Two's-complement wrap of int64 values to int32."""
    return (values & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def _alu(op: AluOp, a: np.ndarray, b: np.ndarray | np.int64) -> np.ndarray:
    """One ALU operation lane-wise on int32 values held as int64, wrapped back to int32."""
    if op == AluOp.MIN:
        return _wrap32(np.minimum(a, b))
    if op == AluOp.MAX:
        return _wrap32(np.maximum(a, b))
    if op == AluOp.ADD:
        return _wrap32(a + b)
    if op == AluOp.MUL:
        return _wrap32(a * b)
    # SHR: arithmetic right shift by b >= 0, left shift by -b when b < 0; shifts past the
    # width saturate to the sign (right) or to 0 (left)
    b = np.broadcast_to(np.asarray(b, dtype=np.int64), np.shape(a))
    right = a >> np.clip(b, 0, 63)
    left = a << np.clip(-b, 0, 32)
    return _wrap32(np.where(b >= 0, right, left))


def check_stream(insns: Sequence[Instruction]) -> None:
    """Static checks: memory types and pads, flags a module cannot use, FINISH once and last."""
    if not insns or not isinstance(insns[-1], Finish):
        raise VTAError("the stream does not end with FINISH", len(insns) - 1 if insns else None)
    for index, insn in enumerate(insns):
        if isinstance(insn, Finish) and index != len(insns) - 1:
            raise VTAError("FINISH is not the last instruction", index)
        if isinstance(insn, Store) and not insn.is_nop:
            if insn.memory_type != MemoryType.OUT:
                raise VTAError(f"{insn.mnemonic}: only OUT can be stored", index)
            if insn.y_pad_0 or insn.y_pad_1 or insn.x_pad_0 or insn.x_pad_1:
                raise VTAError(f"{insn.mnemonic}: a STORE has no padding (its pad fields must be 0)", index)
        if isinstance(insn, Load) and insn.memory_type in (MemoryType.OUT, MemoryType.ACC_8BIT):
            raise VTAError(f"{insn.mnemonic}: memory type {insn.memory_type.name} cannot be loaded", index)
        if insn.stage == Stage.LOAD and (insn.pop_prev or insn.push_prev):
            raise VTAError(f"{insn.mnemonic} on the load module has no previous module (pop_prev/push_prev)", index)
        if insn.stage == Stage.STORE and (insn.pop_next or insn.push_next):
            raise VTAError(f"{insn.mnemonic} on the store module has no next module (pop_next/push_next)", index)


def simulate(
    insns: Sequence[Instruction],
    dram: Mapping[str, np.ndarray],
    config: VTAConfig = DEFAULT_CONFIG,
    *,
    seed: int | None = None,
    params: CycleParams | None = None,
) -> Report:
    """Run a stream to FINISH over `dram` (STOREs update `dram["out"]` in place).

    `seed` picks the order in which ready modules run (None: load, then compute, then store
    first); a stream the simulator accepts computes the same result under every order.
    `params` are the cycle model's; its `queue_depth` also bounds the module queues here.
    """
    check_stream(insns)
    check_dram(dram, config)
    params = params or CycleParams()
    machine = _Machine(insns, dram, config, params.queue_depth)
    machine.run(random.Random(seed) if seed is not None else None)
    left = [(q, len(t)) for q, t in machine.tokens.items() if t]
    if left:
        queue, count = left[0]
        raise VTAError(
            f"FINISH leaves {count} token{'s' if count > 1 else ''} in the {_QUEUE_NAMES[queue]} queue "
            f"(a push without a matching pop)",
            len(insns) - 1,
        )
    instructions = {stage.name.lower(): len(machine.per_stage[stage]) for stage in Stage}
    buffers = {"uop": machine.uop, "inp": machine.inp, "wgt": machine.wgt, "acc": machine.acc}
    return Report(machine.counters, instructions, estimate_cycles(insns, config, params), config, buffers)


def main(argv: Sequence[str] | None = None) -> int:
    from strato.targets.vta.bundle import read_bundle

    parser = argparse.ArgumentParser(prog="python -m strato.vta.simulator", description="Run a VTA bundle.")
    parser.add_argument("bundle", help="bundle directory (insns.bin, <region>.npy, manifest.json)")
    parser.add_argument("--seed", type=int, default=None, help="random order of ready modules")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--trace", action="store_true", help="first print every instruction with its cycles")
    defaults = CycleParams()
    for param in fields(CycleParams):
        parser.add_argument(
            "--" + param.name.replace("_", "-"),
            type=int,
            default=getattr(defaults, param.name),
            help=f"cycle model (default {getattr(defaults, param.name)})",
        )
    args = parser.parse_args(argv)
    params = CycleParams(**{param.name: getattr(args, param.name) for param in fields(CycleParams)})
    try:
        bundle = read_bundle(args.bundle)
        report = simulate(bundle.insns, bundle.dram, bundle.config, seed=args.seed, params=params)
    except VTAError as error:
        # bundle-level errors already name the directory; others get it as a prefix
        named = error.location is not None and error.index is None
        print(error if named else f"{args.bundle}: {error}", file=sys.stderr)
        return 1
    if args.trace:
        for index, (insn, (start, end)) in enumerate(zip(bundle.insns, report.cycles.timeline, strict=True)):
            print(f"{index:6} {insn.stage.name.lower():7} {start:9}-{end:<9} {format_instruction(insn)}")
    print(json.dumps(report.to_json(), indent=2) if args.json else report.format())
    return 0
