"""Types at the loop level and their llvm-dialect counterparts.

Memrefs become bare pointers (`!llvm.ptr`) to their first element: every shape is
static, so a memref's layout is known at compile time and an access is a GEP on the
linearized index. `index` becomes `i64`. Scalar integers and floats keep their type.

While a lowering is in progress, values of converted and unconverted type meet; the
two are bridged by `builtin.unrealized_conversion_cast` ops, which `materialize_llvm`
and `replace_with_llvm` insert and the pass reconciles at the end (MLIR's
materializations, without a type-converter framework).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    AnyFloat,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    UnrealizedConversionCastOp,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from strato.diagnostics import StratoError
from strato.dialects.loop import MemoryScope, memory_scope
from strato.schedule.access import memref_layout

INDEX_LLVM_TYPE = i64
"""The integer type `index` lowers to (the target is 64-bit)."""

POINTER = llvm.LLVMPointerType()

_SCALAR_BYTES: dict[type[Attribute], int] = {
    Float16Type: 2,
    Float32Type: 4,
    Float64Type: 8,
    IndexType: 8,
}

_VTA_SCOPES = frozenset(
    {MemoryScope.VTA_INP, MemoryScope.VTA_WGT, MemoryScope.VTA_ACC, MemoryScope.VTA_UOP}
)


_SCALAR_CLASSES = (IntegerType, IndexType, Float16Type, Float32Type, Float64Type)

# Whether a type is a float, a scalar or an llvm type depends only on its class: the
# answers are kept per class, as an `isinstance` against a union of abstract classes
# (`AnyFloat` lists 18) costs more than building the op that asks.
_IS_FLOAT: dict[type, bool] = {}
_IS_SCALAR: dict[type, bool] = {}
_IS_LLVM: dict[type, bool] = {}


def is_float_type(type_: Attribute) -> bool:
    """`isinstance(type_, AnyFloat)`, answered once per class."""
    known = _IS_FLOAT.get(type(type_))
    if known is None:
        known = _IS_FLOAT[type(type_)] = isinstance(type_, AnyFloat)
    return known


def is_scalar_type(type_: Attribute) -> bool:
    """A type the llvm target computes with directly: signless integers, index, floats."""
    known = _IS_SCALAR.get(type(type_))
    if known is None:
        known = _IS_SCALAR[type(type_)] = isinstance(type_, _SCALAR_CLASSES)
    return known


def element_byte_size(type_: Attribute) -> int:
    """Bytes one element of `type_` occupies in memory (i1 takes a byte, as in LLVM)."""
    if isinstance(type_, IntegerType):
        return max(1, (type_.width.data + 7) // 8)
    return _SCALAR_BYTES[type(type_)]


_BOOL_BYTES = bytes([0] + [1] * 255)


def memory_bytes(data: bytes, width: int) -> bytes:
    """A dense initializer's element bytes as memory holds them: an i1 is one byte, 0 or
    1 (a dense i1 attribute keeps true as 0xFF, which a load of i1 must never see: code
    compiled apart from its constant may use the whole byte)."""
    return data.translate(_BOOL_BYTES) if width == 1 else data


def llvm_type(type_: Attribute) -> Attribute:
    """The llvm-dialect type of a loop-level value of type `type_`.

    Raises `ValueError` for a type the target cannot represent; `unsupported_type_reason`
    says why, for diagnostics.
    """
    if isinstance(type_, MemRefType):
        return POINTER
    if isinstance(type_, IndexType):
        return INDEX_LLVM_TYPE
    if is_scalar_type(type_) or isinstance(type_, llvm.LLVMPointerType):
        return type_
    raise ValueError(f"type {type_} has no llvm counterpart")


def is_llvm_type(type_: Attribute) -> bool:
    """True when `type_` is already what the llvm dialect computes with."""
    known = _IS_LLVM.get(type(type_))
    if known is None:
        known = _IS_LLVM[type(type_)] = isinstance(
            type_, llvm.LLVMPointerType | IntegerType | AnyFloat
        )
    return known


def unsupported_type_reason(type_: Attribute) -> str | None:
    """Why the llvm target cannot handle values of `type_`, or None when it can."""
    if isinstance(type_, MemRefType):
        return _unsupported_memref_reason(type_)
    if is_scalar_type(type_) or isinstance(type_, llvm.LLVMPointerType):
        return None
    return f"type {type_} is not supported by the llvm target"


def _unsupported_memref_reason(type_: MemRefType) -> str | None:
    shape = type_.get_shape()
    if any(dim < 0 for dim in shape[1:]):
        return (
            f"{type_} has a dynamic size after its first dimension; the llvm target "
            "addresses such a view through its flat buffer (a memref.reinterpret_cast of a "
            "one-dimensional memref: loop-linearize-views)"
        )
    scope = memory_scope(type_)
    if scope in _VTA_SCOPES:
        return (
            f"{type_} lives in the VTA memory scope '{scope.value}', which the CPU "
            "cannot address; lower it with the vta target"
        )
    if not is_scalar_type(type_.element_type):
        return f"{type_} has element type {type_.element_type}, which the llvm target cannot store"
    try:
        memref_layout(type_)
    except ValueError as err:
        return str(err)
    return None


def memref_size_in_bytes(type_: MemRefType) -> int:
    """Bytes spanned by a static memref (its elements, laid out by its layout)."""
    shape = type_.get_shape()
    if any(dim < 0 for dim in shape):
        raise ValueError(f"{type_} has a dynamic shape: its size is known at run time only")
    if any(dim == 0 for dim in shape):
        return 0
    layout = memref_layout(type_)
    last = layout.offset + sum(
        (dim - 1) * stride for dim, stride in zip(shape, layout.strides)
    )
    return (last + 1) * element_byte_size(type_.element_type)


def cast_one(
    value: SSAValue, type_: Attribute
) -> tuple[UnrealizedConversionCastOp, SSAValue]:
    """`builtin.unrealized_conversion_cast value to type_` and its result, which keeps
    the name of `value`: xDSL's `UnrealizedConversionCastOp.cast_one` without its
    generic constructor (the lowering builds one or two casts per converted op)."""
    cast = UnrealizedConversionCastOp.create(operands=(value,), result_types=(type_,))
    result = cast.results[0]
    if value.name_hint is not None:
        result.name_hint = value.name_hint
    return cast, result


def materialize_llvm(
    rewriter: PatternRewriter, before: Operation, value: SSAValue
) -> SSAValue:
    """`value` as its llvm-typed counterpart, inserting a cast before `before` if needed.

    A value that is itself a cast of an llvm value is looked through, so chains of
    casts do not build up.
    """
    type_ = value.type
    if is_llvm_type(type_):
        return value
    target = llvm_type(type_)
    owner = value.owner
    if isinstance(owner, UnrealizedConversionCastOp) and len(owner.inputs) == 1:
        source = owner.inputs[0]
        if source.type == target:
            return source
    cast, result = cast_one(value, target)
    rewriter.insert(cast, InsertPoint.before(before))
    return result


def materialize_llvm_all(
    rewriter: PatternRewriter, before: Operation, values: Sequence[SSAValue]
) -> list[SSAValue]:
    return [materialize_llvm(rewriter, before, value) for value in values]


def replace_with_llvm(
    rewriter: PatternRewriter,
    op: Operation,
    new_ops: Sequence[Operation],
    new_results: Sequence[SSAValue] | None = None,
) -> None:
    """Replace `op` by `new_ops`, whose results (`new_results`, or the last op's) are
    llvm-typed; users that still expect the old types get casts back."""
    if new_results is None:
        new_results = list(new_ops[-1].results) if new_ops else []
    assert len(new_results) == len(op.results), f"{op.name}: result count mismatch"
    ops = list(new_ops)
    replacements: list[SSAValue] = []
    for old, new in zip(op.results, new_results, strict=True):
        if old.type == new.type:
            replacements.append(new)
            continue
        cast, back = cast_one(new, old.type)
        ops.append(cast)
        replacements.append(back)
    rewriter.replace(op, ops, replacements)


def convert_value_type_in_place(rewriter: PatternRewriter, value: SSAValue) -> SSAValue:
    """Retype a block argument to its llvm type; existing users get a cast back to
    the old type, placed at the start of the block. Returns the retyped argument."""
    old_type = value.type
    if is_llvm_type(old_type):
        return value
    new_value = rewriter.replace_value_with_new_type(value, llvm_type(old_type))
    if not new_value.uses:
        return new_value
    cast, back = cast_one(new_value, old_type)
    block = new_value.owner
    assert not isinstance(block, Operation)
    rewriter.insert(cast, InsertPoint.at_start(block))
    rewriter.replace_uses_with_if(
        new_value, back, lambda use: use.operation is not cast
    )
    return new_value


def unsupported(op: Operation, reason: str) -> StratoError:
    """The diagnostic for an op the llvm lowering cannot handle."""
    return StratoError(f"'{op.name}' cannot be lowered to llvm: {reason}", op=op)
