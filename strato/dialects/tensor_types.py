"""Conversions between builtin tensor/memref types, dense attributes and numpy arrays.

Shared by the dialects, the interpreters, the importer and the runtime so that the
mapping between MLIR element types and numpy dtypes is written once.

Element types at each level (the ONNX numeric types):

| tensor element (graph, te)            | numpy (runtime)        | scalar in a stage body | loop-level buffer |
|---------------------------------------|------------------------|------------------------|-------------------|
| i1 (bool)                             | bool                   | i1                     | i1 (one byte)     |
| i8 i16 i32 i64 (signed)               | int8 ... int64         | same                   | same              |
| ui8 ui16 ui32 ui64                    | uint8 ... uint64       | i8 ... i64 (signless)  | i8 ... i64        |
| i4 ui4 i2 ui2                         | ml_dtypes int4 ...     | i8, the value extended | i8, ml_dtypes' byte |
| f16 f32 f64                           | float16 ... float64    | same                   | same              |
| bf16                                  | ml_dtypes bfloat16     | f32                    | i16 (the bits)    |
| f8E4M3FN f8E4M3FNUZ f8E5M2 f8E5M2FNUZ f8E8M0FNU f4E2M1FN | ml_dtypes float8_* | i8 (the bits) | i8 |

Tensor types keep signedness; scalars are signless (arith requires it) and ops choose
their unsigned variant from the tensor type. bf16 is computed in f32 inside stage bodies
and rounded to nearest even when stored. The 8- and 4-bit float formats are storage
types: a stage body sees their bit pattern, and only conversions (Cast) and data
movement are meaningful on them. Sub-byte types take one byte per element, as in
ml_dtypes (the low bits hold the value).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float4E2M1FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float8E8M0FNUType,
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


def _unsigned(width: int) -> IntegerType:
    return IntegerType(width, Signedness.UNSIGNED)


# The first entry of a dtype is the element type the importer gives it: signed integers
# are signless (`i8`), unsigned ones say so (`ui8`). numpy's own dtypes first; those of
# ml_dtypes (whose import takes most of a second) are listed when first needed.
_NUMPY_OF_TYPE: list[tuple[Attribute, np.dtype]] = [
    (f32, np.dtype(np.float32)),
    (f64, np.dtype(np.float64)),
    (f16, np.dtype(np.float16)),
    (i1, np.dtype(np.bool_)),
    (i8, np.dtype(np.int8)),
    (i16, np.dtype(np.int16)),
    (i32, np.dtype(np.int32)),
    (i64, np.dtype(np.int64)),
    (_unsigned(8), np.dtype(np.uint8)),
    (_unsigned(16), np.dtype(np.uint16)),
    (_unsigned(32), np.dtype(np.uint32)),
    (_unsigned(64), np.dtype(np.uint64)),
]


@functools.cache
def _ml_dtypes_of_type() -> list[tuple[Attribute, np.dtype]]:
    import ml_dtypes

    return [
        (BFloat16Type(), np.dtype(ml_dtypes.bfloat16)),
        (IntegerType(4), np.dtype(ml_dtypes.int4)),
        (_unsigned(4), np.dtype(ml_dtypes.uint4)),
        (IntegerType(2), np.dtype(ml_dtypes.int2)),
        (_unsigned(2), np.dtype(ml_dtypes.uint2)),
        (Float8E4M3FNType(), np.dtype(ml_dtypes.float8_e4m3fn)),
        (Float8E4M3FNUZType(), np.dtype(ml_dtypes.float8_e4m3fnuz)),
        (Float8E5M2Type(), np.dtype(ml_dtypes.float8_e5m2)),
        (Float8E5M2FNUZType(), np.dtype(ml_dtypes.float8_e5m2fnuz)),
        (Float8E8M0FNUType(), np.dtype(ml_dtypes.float8_e8m0fnu)),
        (Float4E2M1FNType(), np.dtype(ml_dtypes.float4_e2m1fn)),
    ]


def element_types_and_dtypes() -> list[tuple[Attribute, np.dtype]]:
    """Every element type with a numpy dtype, and that dtype."""
    return [*_NUMPY_OF_TYPE, *_ml_dtypes_of_type()]


_BIT_PATTERN_FLOATS = (
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2Type,
    Float8E5M2FNUZType,
    Float8E8M0FNUType,
    Float4E2M1FNType,
)


def numpy_dtype(type_: Attribute) -> np.dtype:
    """The numpy dtype of an element type, or of the element type of a shaped type."""
    if isinstance(type_, TensorType | MemRefType):
        type_ = type_.element_type
    if isinstance(type_, IndexType):
        return np.dtype(np.int64)
    if isinstance(type_, IntegerType) and type_.signedness.data == Signedness.SIGNED:
        type_ = IntegerType(type_.width.data)  # si8 holds what i8 holds
    for mlir_type, dtype in _NUMPY_OF_TYPE:
        if type_ == mlir_type:
            return dtype
    for mlir_type, dtype in _ml_dtypes_of_type():
        if type_ == mlir_type:
            return dtype
    raise ValueError(f"no numpy dtype for {type_}")


def float_to_int_saturating(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`array` (floats) truncated toward zero into the integer `dtype` as LLVM's
    `fptosi.sat`/`fptoui.sat` do it, which is what strato's `arith.fptosi`/`fptoui`
    lower to: NaN becomes 0 and values beyond the range become its nearest end.

    numpy's `astype` leaves these cases to the hardware (x86 gives the smallest integer
    for NaN, infinities and overflow alike), so interpreters use this instead.

    >>> float_to_int_saturating(np.array([np.nan, np.inf, -np.inf, -2.7, 300.0]), np.dtype(np.int8))
    array([   0,  127, -128,   -2,  127], dtype=int8)
    """
    array = np.asarray(array)
    info = np.iinfo(dtype)
    with np.errstate(invalid="ignore"):
        wide = np.trunc(np.nan_to_num(array.astype(np.float64), nan=0.0))
        low, high = float(info.min), float(info.max)
        result = np.where(wide <= low, info.min, 0).astype(dtype)
        inside = (wide > low) & (wide < high)
        # float(info.max) rounds up for 64-bit types: values at or past it saturate
        result = np.where(wide >= high, info.max, result).astype(dtype)
        result[inside] = wide[inside].astype(dtype)
    return result


def element_type_of(dtype: np.dtype) -> Attribute:
    """The MLIR element type of a numpy dtype."""
    dtype = np.dtype(dtype)
    for mlir_type, np_dtype in _NUMPY_OF_TYPE:
        if dtype == np_dtype:
            return mlir_type
    if dtype.kind in "biufc" and dtype.type.__module__ == "numpy":
        raise ValueError(f"no element type for numpy dtype {dtype}")
    for mlir_type, np_dtype in _ml_dtypes_of_type():
        if dtype == np_dtype:
            return mlir_type
    raise ValueError(f"no element type for numpy dtype {dtype}")


def is_run_time(type_: Attribute) -> bool:
    """Whether a tensor type has dimensions of run-time size (`?`)."""
    return isinstance(type_, TensorType) and any(dim < 0 for dim in type_.get_shape())


def is_unsigned_type(type_: Attribute) -> bool:
    """An unsigned integer element type (`ui8`, `ui4`, ...)."""
    return isinstance(type_, IntegerType) and type_.signedness.data == Signedness.UNSIGNED


def is_bit_pattern_float(type_: Attribute) -> bool:
    """A float format stored as its bit pattern (the 8- and 4-bit formats): stage
    bodies see an i8, and only conversions interpret it."""
    return isinstance(type_, _BIT_PATTERN_FLOATS)


def scalar_type(type_: Attribute) -> Attribute:
    """The type one element of a tensor of element type `type_` has inside a stage body
    (what `te.read` gives and `te.yield` takes): signless integers (sub-byte ones in an
    i8), f32 for bf16, the bit pattern (i8) for the 8- and 4-bit floats."""
    if isinstance(type_, IntegerType):
        width = type_.width.data
        return IntegerType(8 if width < 8 and width != 1 else width)
    if isinstance(type_, BFloat16Type):
        return f32
    if is_bit_pattern_float(type_):
        return i8
    return type_


def storage_type(type_: Attribute) -> Attribute:
    """The element type of the loop-level buffer holding tensor elements of `type_`:
    the scalar type, except bf16, whose bits are kept in an i16."""
    if isinstance(type_, BFloat16Type):
        return i16
    return scalar_type(type_)


def sub_byte_width(type_: Attribute) -> int | None:
    """The width of a 2- or 4-bit integer type (kept one a byte), else None."""
    if isinstance(type_, IntegerType) and 1 < type_.width.data < 8:
        return type_.width.data
    return None


def stores_exactly(type_: Attribute) -> bool:
    """Whether storing any stage-body scalar as an element of `type_` and reading it
    back gives the same scalar. Not so for bf16 (stored rounded) and sub-byte integers
    (stored as their low bits): a pass that forwards a stage's scalar to its readers
    instead of storing it (inlining) must encode and decode it, or leave it alone."""
    return not isinstance(type_, BFloat16Type) and sub_byte_width(type_) is None


def scalars_from_elements(array: np.ndarray, type_: Attribute) -> np.ndarray:
    """The stage-body scalars (`scalar_type`) of tensor elements of element type
    `type_`, as numpy arrays: unsigned and bit-pattern types are reinterpreted, bf16 is
    widened to f32, sub-byte integers are extended to int8."""
    array = np.asarray(array)
    target = numpy_dtype(scalar_type(type_))
    if array.dtype == target:
        return array
    if (is_unsigned_type(type_) and sub_byte_width(type_) is None) or is_bit_pattern_float(
        type_
    ):
        return array.view(target)
    return array.astype(target)


def elements_from_scalars(values: np.ndarray, type_: Attribute) -> np.ndarray:
    """Tensor elements of type `type_` from stage-body scalars: the inverse of
    `scalars_from_elements` (bf16 rounds to nearest even; integers keep their low bits)."""
    values = np.asarray(values)
    dtype = numpy_dtype(type_)
    if values.dtype == dtype:
        return values
    width = sub_byte_width(type_)
    if width is not None:
        bits = values.astype(np.int8) & np.int8((1 << width) - 1)
        return bits.view(np.uint8).view(dtype)
    if is_unsigned_type(type_) or is_bit_pattern_float(type_):
        return values.astype(numpy_dtype(scalar_type(type_))).view(dtype)
    return values.astype(dtype)


def storage_from_elements(array: np.ndarray, type_: Attribute) -> np.ndarray:
    """The bytes of tensor elements of `type_` as the loop-level buffer holds them."""
    array = np.asarray(array)
    return array.view(numpy_dtype(storage_type(type_)))


def elements_from_storage(array: np.ndarray, type_: Attribute) -> np.ndarray:
    """Tensor elements of `type_` from the bytes of a loop-level buffer holding them."""
    array = np.asarray(array)
    return array.view(numpy_dtype(type_))


def reinterpret_array(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`array` as `dtype`: its bytes reinterpreted when both are integer types of one
    size or one of them is an ml_dtypes type of that size (uint8 as int8, bfloat16 as
    int16), its values converted otherwise."""
    array = np.asarray(array)
    dtype = np.dtype(dtype)
    if array.dtype == dtype:
        return array
    if shares_storage(array.dtype, dtype):
        # np.ascontiguousarray would turn a 0-d array into a 1-d one
        return np.require(array, requirements="C").view(dtype)
    return array.astype(dtype)


def shares_storage(dtype: np.dtype, storage: np.dtype) -> bool:
    """Whether arrays of `dtype` are held, bit for bit, by buffers of `storage`: the
    same dtype, integers of one size (uint8 and int8), or an ml_dtypes type and an
    integer of its size (bfloat16 and int16, float8_e4m3fn and int8)."""
    dtype, storage = np.dtype(dtype), np.dtype(storage)
    if dtype == storage:
        return True
    if dtype.itemsize != storage.itemsize:
        return False
    kinds = {dtype.kind, storage.kind}
    return kinds == {"i", "u"} or _is_ml_dtype(dtype) or _is_ml_dtype(storage)


def _is_ml_dtype(dtype: np.dtype) -> bool:
    return dtype.type.__module__.startswith("ml_dtypes")


def tensor_type_like(like: Attribute, shape: Sequence[int]) -> TensorType:
    """A tensor type with the element type of `like` and the given shape."""
    assert isinstance(like, TensorType | MemRefType)
    return TensorType(like.element_type, shape)


def dense_from_array(
    array: np.ndarray, element_type: Attribute | None = None
) -> DenseIntOrFPElementsAttr:
    """A dense elements attribute holding `array` (its bytes are copied once, or not at
    all when they are a bytes object already)."""
    array = np.asarray(array)
    if element_type is None:
        element_type = element_type_of(array.dtype)
    dtype = numpy_dtype(element_type)
    if array.dtype != dtype:
        array = array.astype(dtype)
    type_ = TensorType(element_type, array.shape)
    if array.dtype == np.bool_:
        return DenseIntOrFPElementsAttr.from_list(type_, [int(v) for v in array.flat])
    # tobytes lays out any view in C order as it copies
    return DenseIntOrFPElementsAttr(type_, BytesAttr(_whole_bytes(array) or array.tobytes()))


def _whole_bytes(array: np.ndarray) -> bytes | None:
    """The bytes object `array` views from its first byte to its last, if any (an ONNX
    weight read by `numpy_helper.to_array` views its tensor's raw data): immutable, so an
    attribute can hold it instead of a copy."""
    base = array.base
    while isinstance(base, np.ndarray):
        base = base.base
    if type(base) is not bytes or len(base) != array.nbytes or not array.flags.c_contiguous:
        return None
    if array.nbytes and array.ctypes.data != np.frombuffer(base, np.uint8).ctypes.data:
        return None
    return base


def array_from_dense(attr: DenseIntOrFPElementsAttr, *, copy: bool = True) -> np.ndarray:
    """The numpy array of a dense elements attribute (a splat is expanded); with
    `copy=False`, a read-only view of the attribute's bytes where it can be one."""
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
    values = values.reshape(shape)
    return values.copy() if copy else values


def row_type(type_: Attribute) -> TensorType:
    """A position of a scanned tensor, or a row of a scan output: the tensor type with
    its first axis dropped."""
    return TensorType(type_.element_type, list(type_.get_shape()[1:]))  # type: ignore[attr-defined]


def stacked_type(row: Attribute, length: int) -> TensorType:
    """`length` rows of type `row` stacked along a new first axis (a scan output)."""
    return TensorType(row.element_type, [length, *row.get_shape()])  # type: ignore[attr-defined]
