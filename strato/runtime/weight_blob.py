"""A compiled model's weights: its large constants packed in one aligned byte buffer.

The machine code of a model does not hold its weights: each large constant is an external
symbol (`resnet18_main_conv1_w`), and the weights live in one numpy buffer that the
model owns, each symbol at a 64-byte-aligned offset. Whoever loads the code binds each
symbol to `blob.address(symbol)` (the JIT, `strato.load`), or an object file for C
defines the symbols from the bytes (`CompiledModel.object_code`).

    blob = model.weights                  # numpy uint8, 64-byte aligned
    blob.symbols["mlp_main_w"]            # -> (offset, size) in bytes
"""

from __future__ import annotations

import mmap
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

ALIGNMENT = 64
"""Alignment of the buffer and of every symbol in it: a cache line, enough for any vector."""


POPULATED_BYTES = 1 << 20
"""Buffers from this size on are mapped with their pages in place, where the system can."""


def aligned_bytes(size: int) -> np.ndarray:
    """A zeroed uint8 array of `size` bytes whose first byte is `ALIGNMENT`-aligned.

    A large one is an anonymous mapping whose pages the system provides at once
    (MAP_POPULATE): filled page by page on first touch, the 45 MB of ResNet-18's weights
    took 10-100 ms of page faults, depending on what memory the process had freed."""
    if size >= POPULATED_BYTES and hasattr(mmap, "MAP_POPULATE"):
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE
        try:
            return np.frombuffer(mmap.mmap(-1, size, flags=flags), dtype=np.uint8)
        except OSError:
            pass  # no mapping to be had: the allocator's memory then
    raw = np.zeros(size + ALIGNMENT, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    return raw[start : start + size]


@dataclass(frozen=True, eq=False)
class WeightBlob:
    """The bytes of a model's large constants and where each symbol lives in them."""

    data: np.ndarray
    """uint8, C-contiguous, `ALIGNMENT`-aligned."""
    symbols: Mapping[str, tuple[int, int]]
    """Symbol name -> (offset, size) in bytes; every offset is a multiple of `ALIGNMENT`."""

    def __post_init__(self) -> None:
        assert self.data.dtype == np.uint8 and self.data.ndim == 1
        assert self.data.flags.c_contiguous
        assert self.data.size == 0 or self.data.ctypes.data % ALIGNMENT == 0
        for name, (offset, size) in self.symbols.items():
            assert offset % ALIGNMENT == 0 and offset + size <= self.data.size, name

    @staticmethod
    def pack(constants: Mapping[str, bytes | np.ndarray]) -> WeightBlob:
        """The blob holding `constants` (symbol -> bytes) in order, each aligned."""
        symbols: dict[str, tuple[int, int]] = {}
        end = 0
        for name, value in constants.items():
            offset = -(-end // ALIGNMENT) * ALIGNMENT
            symbols[name] = (offset, len(value))
            end = offset + len(value)
        data = aligned_bytes(end)
        for name, value in constants.items():
            offset, size = symbols[name]
            data[offset : offset + size] = np.frombuffer(value, dtype=np.uint8)
        return WeightBlob(data, symbols)

    @staticmethod
    def from_bytes(content: bytes, symbols: Mapping[str, tuple[int, int]]) -> WeightBlob:
        """A blob of a copy of `content` (e.g. read from a file), aligned in memory."""
        data = aligned_bytes(len(content))
        data[:] = np.frombuffer(content, dtype=np.uint8)
        return WeightBlob(data, dict(symbols))

    def address(self, symbol: str) -> int:
        """The address of `symbol`'s first byte in this process."""
        return self.data.ctypes.data + self.symbols[symbol][0]

    def bytes_of(self, symbol: str) -> bytes:
        offset, size = self.symbols[symbol]
        return self.data[offset : offset + size].tobytes()

    @property
    def offsets(self) -> dict[str, int]:
        """Symbol name -> offset in bytes."""
        return {name: offset for name, (offset, _) in self.symbols.items()}


EMPTY = WeightBlob(aligned_bytes(0), {})


__all__ = ["ALIGNMENT", "EMPTY", "WeightBlob", "aligned_bytes"]
