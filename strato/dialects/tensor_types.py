"""Conversions between builtin tensor/memref types, dense attributes and numpy arrays.

Shared by the dialects, the interpreters, the importer and the runtime so that the
mapping between MLIR element types and numpy dtypes is written once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    Signedness,
    TensorType,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute

_NUMPY_OF_TYPE: list[tuple[Attribute, np.dtype]] = [
    (f32, np.dtype(np.float32)),
    (f64, np.dtype(np.float64)),
    (f16, np.dtype(np.float16)),
    (i1, np.dtype(np.bool_)),
    (i8, np.dtype(np.int8)),
    (i16, np.dtype(np.int16)),
    (i32, np.dtype(np.int32)),
    (i64, np.dtype(np.int64)),
]


def numpy_dtype(type_: Attribute) -> np.dtype:
    """The numpy dtype of an element type, or of the element type of a shaped type."""
    if isinstance(type_, TensorType | MemRefType):
        type_ = type_.element_type
    if isinstance(type_, IndexType):
        return np.dtype(np.int64)
    for mlir_type, dtype in _NUMPY_OF_TYPE:
        if type_ == mlir_type:
            return dtype
    if isinstance(type_, IntegerType) and type_.signedness.data == Signedness.UNSIGNED:
        return np.dtype(f"uint{type_.width.data}")
    raise ValueError(f"no numpy dtype for {type_}")


def element_type_of(dtype: np.dtype) -> Attribute:
    """The MLIR element type of a numpy dtype."""
    for mlir_type, np_dtype in _NUMPY_OF_TYPE:
        if np.dtype(dtype) == np_dtype:
            return mlir_type
    raise ValueError(f"no element type for numpy dtype {dtype}")


def tensor_type_like(like: Attribute, shape: Sequence[int]) -> TensorType:
    """A tensor type with the element type of `like` and the given shape."""
    assert isinstance(like, TensorType | MemRefType)
    return TensorType(like.element_type, shape)


def dense_from_array(
    array: np.ndarray, element_type: Attribute | None = None
) -> DenseIntOrFPElementsAttr:
    """A dense elements attribute holding `array` (its bytes are copied once)."""
    array = np.asarray(array)
    if element_type is None:
        element_type = element_type_of(array.dtype)
    # np.ascontiguousarray would turn a 0-d array into a 1-d one
    array = np.require(array, dtype=numpy_dtype(element_type), requirements="C")
    type_ = TensorType(element_type, array.shape)
    if array.dtype == np.bool_:
        return DenseIntOrFPElementsAttr.from_list(type_, [int(v) for v in array.flat])
    return DenseIntOrFPElementsAttr(type_, BytesAttr(array.tobytes()))


def array_from_dense(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The numpy array of a dense elements attribute (a splat is expanded)."""
    type_ = attr.type
    dtype = numpy_dtype(type_)
    shape = type_.get_shape()
    raw = attr.data.data
    if dtype == np.bool_:
        values = np.array(attr.get_values(), dtype=np.bool_)
    else:
        values = np.frombuffer(raw, dtype=dtype)
    count = int(np.prod(shape))
    if values.size == 1 and count != 1:
        return np.full(shape, values[0], dtype=dtype)
    return values.reshape(shape).copy()
