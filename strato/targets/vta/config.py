"""The VTA hardware configuration and every width derived from it.

A configuration is the handful of log2 parameters of VTA's `vta_config.json`; everything
else (element shapes and sizes, buffer depths, instruction field widths) is computed here
once, so the ISA, the simulator, the runtime and the compiler never restate a constant.

>>> cfg = VTAConfig()
>>> cfg.block_in, cfg.inp_depth, cfg.wgt_depth, cfg.acc_depth, cfg.uop_depth
(16, 2048, 1024, 2048, 8192)
>>> cfg.name
'1x16_i8w8a32_15_15_18_17'
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Any

import numpy as np

from strato.targets.vta.errors import VTAError

# Widths fixed by the ISA, not by the configuration.
UOP_WIDTH = 32
INSN_WIDTH = 128
LOOP_ITER_WIDTH = 14
SRAM_ADDR_WIDTH = 16
DRAM_ADDR_WIDTH = 32
MEM_SIZE_WIDTH = 16
MEM_STRIDE_WIDTH = 16
PAD_WIDTH = 4
ALU_IMM_WIDTH = 16
OPCODE_WIDTH = 3
MEMORY_TYPE_WIDTH = 3
ALU_OPCODE_WIDTH = 3

_DTYPES = {3: np.dtype(np.int8), 4: np.dtype(np.int16), 5: np.dtype(np.int32)}


class MemoryType(enum.IntEnum):
    """The 3-bit memory_type of LOAD and STORE (ACC_8BIT is not supported by strato)."""

    UOP = 0
    WGT = 1
    INP = 2
    ACC = 3
    OUT = 4
    ACC_8BIT = 5


@dataclass(frozen=True)
class VTAConfig:
    """The log2 parameters of a VTA build; the defaults are the Pynq bitstream 1x16_i8w8a32.

    Data widths are log2 of bits (3 = 8 bit), BATCH and BLOCK are log2 of the GEMM core shape
    (BLOCK_IN = BLOCK_OUT = 2**log_block), buffer sizes are log2 of bytes. The OUT width equals
    the INP width and the OUT buffer has the depth of the ACC buffer, as in VTA.
    """

    log_inp_width: int = 3
    log_wgt_width: int = 3
    log_acc_width: int = 5
    log_batch: int = 0
    log_block: int = 4
    log_uop_buff_size: int = 15
    log_inp_buff_size: int = 15
    log_wgt_buff_size: int = 18
    log_acc_buff_size: int = 17

    def __post_init__(self) -> None:
        for name in ("log_inp_width", "log_wgt_width"):
            if getattr(self, name) not in (3, 4):
                raise VTAError(f"config: {name} = {getattr(self, name)}, strato supports 3 (int8) or 4 (int16)")
        if self.log_acc_width != 5:
            raise VTAError(f"config: log_acc_width = {self.log_acc_width}, strato supports only 5 (int32)")
        for name in ("log_batch", "log_block"):
            if not 0 <= getattr(self, name) <= 6:
                raise VTAError(f"config: {name} = {getattr(self, name)} is outside 0..6")
        depths = {
            "log_uop_buff_size": self.log_uop_depth,
            "log_inp_buff_size": self.log_inp_depth,
            "log_wgt_buff_size": self.log_wgt_depth,
            "log_acc_buff_size": self.log_acc_depth,
        }
        for name, log_depth in depths.items():
            if not 1 <= log_depth <= SRAM_ADDR_WIDTH:
                raise VTAError(
                    f"config: {name} = {getattr(self, name)} gives a buffer of 2**{log_depth} elements "
                    f"(must be 2**1 .. 2**{SRAM_ADDR_WIDTH})"
                )
        if self.uop_dst_width + self.uop_src_width + self.uop_wgt_width > UOP_WIDTH:
            raise VTAError(
                f"config: micro-op fields need {self.uop_dst_width + self.uop_src_width + self.uop_wgt_width} "
                f"bits, more than {UOP_WIDTH}"
            )

    # --- data types and element shapes -------------------------------------------------

    @property
    def inp_width(self) -> int:
        return 1 << self.log_inp_width

    @property
    def wgt_width(self) -> int:
        return 1 << self.log_wgt_width

    @property
    def acc_width(self) -> int:
        return 1 << self.log_acc_width

    @property
    def out_width(self) -> int:
        return self.inp_width

    @property
    def batch(self) -> int:
        return 1 << self.log_batch

    @property
    def block_in(self) -> int:
        return 1 << self.log_block

    @property
    def block_out(self) -> int:
        return 1 << self.log_block

    @property
    def inp_dtype(self) -> np.dtype:
        return _DTYPES[self.log_inp_width]

    @property
    def wgt_dtype(self) -> np.dtype:
        return _DTYPES[self.log_wgt_width]

    @property
    def acc_dtype(self) -> np.dtype:
        return _DTYPES[self.log_acc_width]

    @property
    def out_dtype(self) -> np.dtype:
        return _DTYPES[self.log_inp_width]

    @property
    def inp_elem_shape(self) -> tuple[int, int]:
        return (self.batch, self.block_in)

    @property
    def wgt_elem_shape(self) -> tuple[int, int]:
        return (self.block_out, self.block_in)

    @property
    def acc_elem_shape(self) -> tuple[int, int]:
        return (self.batch, self.block_out)

    @property
    def out_elem_shape(self) -> tuple[int, int]:
        return (self.batch, self.block_out)

    @property
    def inp_elem_bytes(self) -> int:
        return self.batch * self.block_in * self.inp_width // 8

    @property
    def wgt_elem_bytes(self) -> int:
        return self.block_out * self.block_in * self.wgt_width // 8

    @property
    def acc_elem_bytes(self) -> int:
        return self.batch * self.block_out * self.acc_width // 8

    @property
    def out_elem_bytes(self) -> int:
        return self.batch * self.block_out * self.out_width // 8

    @property
    def uop_elem_bytes(self) -> int:
        return UOP_WIDTH // 8

    # --- buffer depths (elements) ------------------------------------------------------

    @property
    def log_uop_depth(self) -> int:
        return self.log_uop_buff_size + 3 - 5

    @property
    def log_inp_depth(self) -> int:
        return self.log_inp_buff_size + 3 - (self.log_batch + self.log_block + self.log_inp_width)

    @property
    def log_wgt_depth(self) -> int:
        return self.log_wgt_buff_size + 3 - (2 * self.log_block + self.log_wgt_width)

    @property
    def log_acc_depth(self) -> int:
        return self.log_acc_buff_size + 3 - (self.log_batch + self.log_block + self.log_acc_width)

    @property
    def log_out_buff_size(self) -> int:
        return self.log_acc_buff_size + self.log_inp_width - self.log_acc_width

    @property
    def uop_depth(self) -> int:
        return 1 << self.log_uop_depth

    @property
    def inp_depth(self) -> int:
        return 1 << self.log_inp_depth

    @property
    def wgt_depth(self) -> int:
        return 1 << self.log_wgt_depth

    @property
    def acc_depth(self) -> int:
        return 1 << self.log_acc_depth

    @property
    def out_depth(self) -> int:
        return self.acc_depth

    # --- instruction and micro-op field widths -----------------------------------------

    @property
    def uop_bgn_width(self) -> int:
        return self.log_uop_depth

    @property
    def uop_end_width(self) -> int:
        return self.log_uop_depth + 1

    @property
    def acc_idx_width(self) -> int:
        return self.log_acc_depth

    @property
    def inp_idx_width(self) -> int:
        return self.log_inp_depth

    @property
    def wgt_idx_width(self) -> int:
        return self.log_wgt_depth

    @property
    def uop_dst_width(self) -> int:
        return self.log_acc_depth

    @property
    def uop_src_width(self) -> int:
        return max(self.log_inp_depth, self.log_acc_depth)

    @property
    def uop_wgt_width(self) -> int:
        return self.log_wgt_depth

    # --- per-memory views used by LOAD/STORE -------------------------------------------

    def elem_bytes(self, memory: MemoryType) -> int:
        """Bytes of one element of `memory` (the unit of dram_base, x_stride and sram_base)."""
        return {
            MemoryType.UOP: self.uop_elem_bytes,
            MemoryType.WGT: self.wgt_elem_bytes,
            MemoryType.INP: self.inp_elem_bytes,
            MemoryType.ACC: self.acc_elem_bytes,
            MemoryType.OUT: self.out_elem_bytes,
            MemoryType.ACC_8BIT: self.batch * self.block_out,
        }[MemoryType(memory)]

    def depth(self, memory: MemoryType) -> int:
        """Elements of the on-chip buffer that `memory` loads into or stores from."""
        return {
            MemoryType.UOP: self.uop_depth,
            MemoryType.WGT: self.wgt_depth,
            MemoryType.INP: self.inp_depth,
            MemoryType.ACC: self.acc_depth,
            MemoryType.OUT: self.out_depth,
            MemoryType.ACC_8BIT: self.acc_depth,
        }[MemoryType(memory)]

    @cached_property
    def name(self) -> str:
        """The bitstream/model string of VTA, e.g. `1x16_i8w8a32_15_15_18_17`."""
        return (
            f"{self.batch}x{self.block_in}_i{self.inp_width}w{self.wgt_width}a{self.acc_width}_"
            f"{self.log_uop_buff_size}_{self.log_inp_buff_size}_{self.log_wgt_buff_size}_{self.log_acc_buff_size}"
        )

    # --- the vta_config.json form ------------------------------------------------------

    def to_json(self) -> dict[str, int]:
        """The log2 parameters under vta_config.json's names (`LOG_INP_WIDTH`, ...)."""
        return {key.upper(): value for key, value in asdict(self).items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VTAConfig:
        """Read the log2 parameters; unknown keys (TARGET, HW_VER, ...) are ignored."""
        fields = {key.upper(): key for key in cls.__dataclass_fields__}
        values: dict[str, int] = {}
        data = dict(data)
        # older configurations give the two block sizes separately; strato needs them equal
        block_in, block_out = data.pop("LOG_BLOCK_IN", None), data.pop("LOG_BLOCK_OUT", None)
        if block_in is not None or block_out is not None:
            if block_in != block_out or ("LOG_BLOCK" in data and data["LOG_BLOCK"] != block_in):
                raise VTAError(
                    f"config: LOG_BLOCK_IN = {block_in} and LOG_BLOCK_OUT = {block_out} differ "
                    "(strato supports square GEMM cores)"
                )
            data.setdefault("LOG_BLOCK", block_in)
        for key, value in data.items():
            name = fields.get(key.upper())
            if name is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                raise VTAError(f"config: {key} = {value!r} is not an integer")
            values[name] = value
        return cls(**values)


DEFAULT_CONFIG = VTAConfig()
