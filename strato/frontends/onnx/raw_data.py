"""The raw bytes of a model's weights, read from the model once per compilation.

Reading `tensor.raw_data` copies the bytes out of the protobuf message each time: for
ResNet-18 that is 45 MB, which the compile cache key reads (to hash them) and the importer
reads again (to make arrays of them). Within `sharing()`, `raw_data(tensor)` keeps what
it read, and a second read of the same tensor gets the same bytes object:

    with raw_data.sharing():
        key = compile_cache_key(model, ...)   # reads each weight's bytes
        imported = import_onnx(model)         # gets the same bytes objects

Outside it, `raw_data(tensor)` is `tensor.raw_data`. The bytes are released when the
block ends, or earlier with `release()` (once their last reader is done).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
import onnx
from onnx import helper, numpy_helper

_SHARED: ContextVar[dict[int, tuple[onnx.TensorProto, bytes]] | None] = ContextVar(
    "shared_raw_data", default=None
)
"""id(tensor) -> (the tensor, its raw bytes); the tensor is kept so that its id stays its own."""

_PACKED_TYPES = frozenset(
    getattr(onnx.TensorProto, name)
    for name in ("INT4", "UINT4", "FLOAT4E2M1", "INT2", "UINT2", "FLOAT6E2M3", "FLOAT6E3M2")
    if hasattr(onnx.TensorProto, name)
)
"""Element types whose raw bytes pack several elements per byte (`to_array` unpacks them)."""


@contextmanager
def sharing() -> Iterator[None]:
    """Share the weights' bytes between the readers within the block."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def release() -> None:
    """Forget the bytes read so far in the current `sharing()` block."""
    shared = _SHARED.get()
    if shared is not None:
        shared.clear()


def raw_data(tensor: onnx.TensorProto) -> bytes:
    """`tensor.raw_data`, read once within a `sharing()` block."""
    shared = _SHARED.get()
    if shared is None:
        return tensor.raw_data
    found = shared.get(id(tensor))
    if found is not None and found[0] is tensor:
        return found[1]
    data = tensor.raw_data
    shared[id(tensor)] = (tensor, data)
    return data


def to_array(tensor: onnx.TensorProto) -> np.ndarray:
    """`onnx.numpy_helper.to_array(tensor)`, viewing the shared bytes of a tensor stored
    as raw bytes of a byte-sized element type (read-only, as onnx's own is)."""
    if (
        tensor.data_location == onnx.TensorProto.EXTERNAL
        or not tensor.HasField("raw_data")
        or tensor.HasField("segment")
        or tensor.data_type in _PACKED_TYPES
        or tensor.data_type in (onnx.TensorProto.STRING, onnx.TensorProto.UNDEFINED)
        or sys.byteorder != "little"
    ):
        return numpy_helper.to_array(tensor)
    dtype = helper.tensor_dtype_to_np_dtype(tensor.data_type)
    return np.frombuffer(raw_data(tensor), dtype=dtype).reshape(tensor.dims)


__all__ = ["raw_data", "release", "sharing", "to_array"]
