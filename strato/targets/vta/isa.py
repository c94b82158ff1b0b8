"""VTA instructions and micro-ops, and their exact 128-bit and 32-bit encodings.

An instruction is 128 bits stored as two little-endian 64-bit words (bit 0 is the LSB of the
first word). Fields are packed LSB first in the order of the dataclass below, after the
7-bit header (opcode, pop_prev, pop_next, push_prev, push_next); a field that would straddle
bit 64 starts at bit 64 instead (the C bit-field rule of VTA's hw_spec.h). Widths that depend
on buffer depths come from the `VTAConfig`, so the layout is recomputed per configuration.

>>> gemm = Gemm(reset=False, uop_bgn=0, uop_end=4, iter_out=3, iter_in=2,
...             dst_factor_out=0, dst_factor_in=1, src_factor_out=1, src_factor_in=0,
...             wgt_factor_out=1, wgt_factor_in=3, pop_prev=True, push_prev=True)
>>> [hex(w) for w in encode_words(gemm)]
['0x400180080002a', '0xc0100000400800']
>>> decode(encode(gemm)) == gemm
True

A value that does not fit its field is a `VTAError` naming the instruction and the field.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import ClassVar

from strato.targets.vta.config import (
    ALU_IMM_WIDTH,
    ALU_OPCODE_WIDTH,
    DEFAULT_CONFIG,
    DRAM_ADDR_WIDTH,
    INSN_WIDTH,
    LOOP_ITER_WIDTH,
    MEM_SIZE_WIDTH,
    MEM_STRIDE_WIDTH,
    MEMORY_TYPE_WIDTH,
    OPCODE_WIDTH,
    PAD_WIDTH,
    SRAM_ADDR_WIDTH,
    MemoryType,
    VTAConfig,
)
from strato.targets.vta.errors import VTAError

INSN_BYTES = INSN_WIDTH // 8


class Opcode(enum.IntEnum):
    LOAD = 0
    STORE = 1
    GEMM = 2
    FINISH = 3
    ALU = 4


class AluOp(enum.IntEnum):
    """ALU opcodes. There is no SUB; a left shift is SHR by a negative amount, a copy is SHR 0."""

    MIN = 0
    MAX = 1
    ADD = 2
    SHR = 3
    MUL = 4


class Stage(enum.IntEnum):
    """The three modules of VTA's load -> compute -> store chain (numbered as VTA's runtime does)."""

    LOAD = 1
    COMPUTE = 2
    STORE = 3


# --- instructions ----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Instruction:
    """The header every instruction carries: the four dependence-token flags.

    "prev"/"next" are the neighbours of the instruction's module in the load -> compute ->
    store chain: pop waits for and consumes a token, push produces one after execution.
    """

    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False

    opcode: ClassVar[Opcode]

    @property
    def stage(self) -> Stage:
        """The module that executes the instruction."""
        raise NotImplementedError

    @property
    def mnemonic(self) -> str:
        return self.opcode.name


@dataclass(frozen=True)
class _Memory(Instruction):
    """Fields shared by LOAD and STORE: a 2-D strided copy of elements of `memory_type`."""

    memory_type: MemoryType
    sram_base: int
    dram_base: int
    y_size: int
    x_size: int
    x_stride: int
    y_pad_0: int = 0
    y_pad_1: int = 0
    x_pad_0: int = 0
    x_pad_1: int = 0

    @property
    def mnemonic(self) -> str:
        return f"{self.opcode.name} {MemoryType(self.memory_type).name}"

    @property
    def is_nop(self) -> bool:
        """x_size == 0: the instruction copies nothing and only carries token flags."""
        return self.x_size == 0


@dataclass(frozen=True)
class Load(_Memory):
    """LOAD: DRAM -> on-chip buffer, with zero padding around the copied rectangle."""

    opcode: ClassVar[Opcode] = Opcode.LOAD

    @property
    def stage(self) -> Stage:
        if self.memory_type in (MemoryType.INP, MemoryType.WGT):
            return Stage.LOAD
        return Stage.COMPUTE


@dataclass(frozen=True)
class Store(_Memory):
    """STORE: accumulator elements, truncated to the output width, -> DRAM."""

    opcode: ClassVar[Opcode] = Opcode.STORE

    @property
    def stage(self) -> Stage:
        return Stage.STORE


@dataclass(frozen=True)
class _Compute(Instruction):
    """Fields shared by GEMM and ALU: a micro-op range run inside two affine loops."""

    reset: bool
    uop_bgn: int
    uop_end: int
    iter_out: int
    iter_in: int
    dst_factor_out: int
    dst_factor_in: int
    src_factor_out: int
    src_factor_in: int

    @property
    def stage(self) -> Stage:
        return Stage.COMPUTE

    @property
    def uop_count(self) -> int:
        """Micro-ops executed: iter_out * iter_in * (uop_end - uop_bgn)."""
        return self.iter_out * self.iter_in * max(self.uop_end - self.uop_bgn, 0)


@dataclass(frozen=True)
class Gemm(_Compute):
    """GEMM: ACC[dst] += INP[src] x WGT[wgt]^T per micro-op (or ACC[dst] = 0 with reset)."""

    wgt_factor_out: int = 0
    wgt_factor_in: int = 0

    opcode: ClassVar[Opcode] = Opcode.GEMM


@dataclass(frozen=True)
class Alu(_Compute):
    """ALU: ACC[dst] = op(ACC[dst], imm or ACC[src]) lane-wise per micro-op (reset is ignored)."""

    alu_opcode: AluOp = AluOp.ADD
    use_imm: bool = False
    imm: int = 0

    opcode: ClassVar[Opcode] = Opcode.ALU

    @property
    def mnemonic(self) -> str:
        return f"ALU {AluOp(self.alu_opcode).name}"


@dataclass(frozen=True)
class Finish(Instruction):
    """FINISH: raises "done" on the compute module; the last instruction of a stream."""

    opcode: ClassVar[Opcode] = Opcode.FINISH

    @property
    def stage(self) -> Stage:
        return Stage.COMPUTE


@dataclass(frozen=True)
class Uop:
    """A micro-op: ACC index, INP (GEMM) or ACC (ALU) index, WGT index (GEMM only)."""

    dst: int
    src: int
    wgt: int = 0


# --- layouts ---------------------------------------------------------------------------

_HEADER = (("opcode", OPCODE_WIDTH), ("pop_prev", 1), ("pop_next", 1), ("push_prev", 1), ("push_next", 1))
_CLASSES = {Opcode.LOAD: Load, Opcode.STORE: Store, Opcode.GEMM: Gemm, Opcode.ALU: Alu, Opcode.FINISH: Finish}


@dataclass(frozen=True)
class Field:
    name: str
    lsb: int
    width: int
    signed: bool = False

    @property
    def low(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def high(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1


def _field_widths(opcode: Opcode, config: VTAConfig) -> list[tuple[str, int]]:
    if opcode in (Opcode.LOAD, Opcode.STORE):
        return [
            ("memory_type", MEMORY_TYPE_WIDTH),
            ("sram_base", SRAM_ADDR_WIDTH),
            ("dram_base", DRAM_ADDR_WIDTH),
            ("y_size", MEM_SIZE_WIDTH),
            ("x_size", MEM_SIZE_WIDTH),
            ("x_stride", MEM_STRIDE_WIDTH),
            ("y_pad_0", PAD_WIDTH),
            ("y_pad_1", PAD_WIDTH),
            ("x_pad_0", PAD_WIDTH),
            ("x_pad_1", PAD_WIDTH),
        ]
    if opcode == Opcode.FINISH:
        return []
    src_width = config.inp_idx_width if opcode == Opcode.GEMM else config.acc_idx_width
    common = [
        ("reset", 1),
        ("uop_bgn", config.uop_bgn_width),
        ("uop_end", config.uop_end_width),
        ("iter_out", LOOP_ITER_WIDTH),
        ("iter_in", LOOP_ITER_WIDTH),
        ("dst_factor_out", config.acc_idx_width),
        ("dst_factor_in", config.acc_idx_width),
        ("src_factor_out", src_width),
        ("src_factor_in", src_width),
    ]
    if opcode == Opcode.GEMM:
        return common + [("wgt_factor_out", config.wgt_idx_width), ("wgt_factor_in", config.wgt_idx_width)]
    return common + [("alu_opcode", ALU_OPCODE_WIDTH), ("use_imm", 1), ("imm", ALU_IMM_WIDTH)]


@lru_cache(maxsize=None)
def layout(opcode: Opcode, config: VTAConfig = DEFAULT_CONFIG) -> tuple[Field, ...]:
    """The bit fields of `opcode` under `config`, LSB first, header included."""
    placed: list[Field] = []
    bit = 0
    for name, width in list(_HEADER) + _field_widths(Opcode(opcode), config):
        if bit < 64 < bit + width:
            bit = 64  # a field never straddles the two 64-bit words
        placed.append(Field(name, bit, width, signed=(name == "imm")))
        bit += width
    if bit > INSN_WIDTH:
        raise VTAError(f"config {config.name}: {Opcode(opcode).name} needs {bit} bits, more than {INSN_WIDTH}")
    return tuple(placed)


@lru_cache(maxsize=None)
def uop_layout(config: VTAConfig = DEFAULT_CONFIG) -> tuple[Field, ...]:
    """The micro-op fields: dst (ACC index), src (INP or ACC index), wgt (WGT index)."""
    dst = Field("dst", 0, config.uop_dst_width)
    src = Field("src", dst.width, config.uop_src_width)
    wgt = Field("wgt", src.lsb + src.width, config.uop_wgt_width)
    return (dst, src, wgt)


def _pack(what: str, values: dict[str, int], layout_fields: Sequence[Field]) -> int:
    word = 0
    for field in layout_fields:
        value = values[field.name]
        if isinstance(value, bool):
            value = int(value)
        if not isinstance(value, int):
            raise VTAError(f"{what} field {field.name} = {value!r} is not an integer")
        if not field.low <= value <= field.high:
            raise VTAError(
                f"{what} field {field.name} = {value} does not fit in {field.width} bits "
                f"({field.low}..{field.high})"
            )
        word |= (value & ((1 << field.width) - 1)) << field.lsb
    return word


def _unpack(word: int, field: Field) -> int:
    value = (word >> field.lsb) & ((1 << field.width) - 1)
    if field.signed and value >> (field.width - 1):
        value -= 1 << field.width
    return value


# --- instruction encoding --------------------------------------------------------------


def encode_int(insn: Instruction, config: VTAConfig = DEFAULT_CONFIG) -> int:
    """The instruction as one 128-bit integer (bit 0 = LSB of the first word)."""
    values = {f.name: getattr(insn, f.name) for f in fields(insn) if f.name != "opcode"}
    values["opcode"] = int(insn.opcode)
    return _pack(insn.opcode.name, values, layout(insn.opcode, config))


def encode_words(insn: Instruction, config: VTAConfig = DEFAULT_CONFIG) -> tuple[int, int]:
    """The two 64-bit words of the instruction, first word first."""
    value = encode_int(insn, config)
    return value & ((1 << 64) - 1), value >> 64


def encode(insn: Instruction, config: VTAConfig = DEFAULT_CONFIG) -> bytes:
    """The 16 bytes of the instruction: two little-endian 64-bit words."""
    return encode_int(insn, config).to_bytes(INSN_BYTES, "little")


def decode(data: bytes | int, config: VTAConfig = DEFAULT_CONFIG) -> Instruction:
    """The instruction encoded by 16 bytes (or a 128-bit integer); unused bits are ignored."""
    word = int.from_bytes(data, "little") if isinstance(data, (bytes, bytearray, memoryview)) else data
    if isinstance(data, (bytes, bytearray, memoryview)) and len(data) != INSN_BYTES:
        raise VTAError(f"an instruction is {INSN_BYTES} bytes, got {len(data)}")
    opcode_value = word & ((1 << OPCODE_WIDTH) - 1)
    if opcode_value not in _CLASSES:
        raise VTAError(f"field opcode = {opcode_value} is not a VTA opcode")
    opcode = Opcode(opcode_value)
    values = {f.name: _unpack(word, f) for f in layout(opcode, config) if f.name != "opcode"}
    for name in ("pop_prev", "pop_next", "push_prev", "push_next", "reset", "use_imm"):
        if name in values:
            values[name] = bool(values[name])
    if "memory_type" in values:
        if values["memory_type"] not in MemoryType._value2member_map_:
            raise VTAError(f"{opcode.name} field memory_type = {values['memory_type']} is not a memory type")
        values["memory_type"] = MemoryType(values["memory_type"])
    if "alu_opcode" in values:
        if values["alu_opcode"] not in AluOp._value2member_map_:
            raise VTAError(f"ALU field alu_opcode = {values['alu_opcode']} is not an ALU opcode")
        values["alu_opcode"] = AluOp(values["alu_opcode"])
    return _CLASSES[opcode](**values)


def encode_stream(insns: Iterable[Instruction], config: VTAConfig = DEFAULT_CONFIG) -> bytes:
    """Instructions in issue order, 16 bytes each; a bad field names the instruction's index."""
    chunks = []
    for index, insn in enumerate(insns):
        try:
            chunks.append(encode(insn, config))
        except VTAError as error:
            raise VTAError(error.message, index=index) from None
    return b"".join(chunks)


def decode_stream(data: bytes, config: VTAConfig = DEFAULT_CONFIG) -> list[Instruction]:
    """The instructions of an `encode_stream` byte string."""
    if len(data) % INSN_BYTES:
        raise VTAError(f"an instruction stream is a multiple of {INSN_BYTES} bytes, got {len(data)}")
    insns = []
    for index in range(len(data) // INSN_BYTES):
        try:
            insns.append(decode(data[index * INSN_BYTES : (index + 1) * INSN_BYTES], config))
        except VTAError as error:
            raise VTAError(error.message, index=index) from None
    return insns


# --- micro-op encoding -----------------------------------------------------------------


def encode_uop(uop: Uop, config: VTAConfig = DEFAULT_CONFIG) -> int:
    """The 32-bit word of a micro-op."""
    return _pack("micro-op", {"dst": uop.dst, "src": uop.src, "wgt": uop.wgt}, uop_layout(config))


def decode_uop(word: int, config: VTAConfig = DEFAULT_CONFIG) -> Uop:
    """The micro-op of a 32-bit word."""
    dst, src, wgt = (_unpack(int(word), f) for f in uop_layout(config))
    return Uop(dst, src, wgt)


def describe(insn: Instruction, index: int | None = None) -> str:
    """A short name for messages: `GEMM`, `LOAD INP`, `ALU SHR`, with its index when known."""
    return insn.mnemonic if index is None else f"{index} ({insn.mnemonic})"


def format_instruction(insn: Instruction) -> str:
    """Every field of the instruction on one line, token flags last.

    >>> format_instruction(Load(MemoryType.INP, 10, 256, 2, 3, 5, 1, 0, 1, 1, pop_next=True))
    'LOAD INP sram_base=10 dram_base=256 y_size=2 x_size=3 x_stride=5 y_pad_0=1 y_pad_1=0 x_pad_0=1 x_pad_1=1 [pop_next]'
    >>> format_instruction(Finish())
    'FINISH'
    """
    skip = {"pop_prev", "pop_next", "push_prev", "push_next", "memory_type", "alu_opcode"}
    parts = [insn.mnemonic]
    for f in fields(insn):
        if f.name in skip:
            continue
        value = getattr(insn, f.name)
        parts.append(f"{f.name}={int(value) if isinstance(value, bool) else value}")
    flags = [name for name in ("pop_prev", "pop_next", "push_prev", "push_next") if getattr(insn, name)]
    if flags:
        parts.append(f"[{' '.join(flags)}]")
    return " ".join(parts)
