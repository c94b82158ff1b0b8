"""Converters for ONNX comparisons (Equal, Less, LessOrEqual, Greater, GreaterOrEqual),
logic (And, Or, Xor, Not), bitwise logic and shifts (BitwiseAnd, BitwiseOr, BitwiseXor,
BitwiseNot, BitShift), IsNaN, IsInf, Where, Cast and CastLike.

Any numeric element type is accepted (bool, integers of 2 to 64 bits, f16, bf16, f32,
f64 and the 8- and 4-bit float formats); strings are not. When every input is known at
import time the result is folded with the op's own numpy semantics, so its element type
is the one ONNX gives it:

    Equal(a: int64[3], b: int64[3])         ->  graph.equal ... -> tensor<3xi1>
    Cast(x: float[4], to=FLOAT8E4M3FN, saturate=0)
                                            ->  graph.cast %x {saturate = false}
                                                  : tensor<4xf32> to tensor<4xf8E4M3FN>
    CastLike(x: float[4], like: float16[])  ->  graph.cast %x : tensor<4xf32> to tensor<4xf16>
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper
from xdsl.dialects.builtin import AnyFloat, IntegerType, TensorType
from xdsl.ir import Attribute, SSAValue

from strato.dialects import graph
from strato.dialects.graph.logic import RoundMode, cast_array
from strato.dialects.tensor_types import element_type_of
from strato.frontends.onnx.conversion import ImportedValue, NodeContext, shape_of


def _element_type(ctx: NodeContext, index: int) -> Attribute:
    value = ctx.value(index)
    if isinstance(value, np.ndarray):
        return element_type_of(value.dtype)
    assert isinstance(value.type, TensorType)
    return value.type.element_type


def _binary(op_class: type[graph.BroadcastBinaryOp], onnx_name: str, check, summary: str):
    """A converter of a broadcasting binary op that folds known inputs, after `check`
    (which also checks that the input shapes broadcast)."""

    def convert(ctx: NodeContext) -> list[ImportedValue]:
        check(ctx, onnx_name)
        lhs, rhs = ctx.known(0), ctx.known(1)
        if lhs is not None and rhs is not None:
            return [np.asarray(op_class.compute(lhs, rhs))]
        return [ctx.emit(op_class(ctx.operand(0), ctx.operand(1))).results[0]]

    convert.__name__ = f"convert_{op_class.name.split('.', 1)[1]}"
    convert.__doc__ = f"ONNX {onnx_name} -> {op_class.name} ({summary}, numpy broadcasting)."
    return convert


def _check_comparable(ctx: NodeContext, onnx_name: str) -> None:
    ctx.broadcast(ctx.shape(0), ctx.shape(1))
    if _element_type(ctx, 0) != _element_type(ctx, 1):
        raise ctx.error(
            f"inputs have element types {_element_type(ctx, 0)} and "
            f"{_element_type(ctx, 1)}; {onnx_name} compares tensors of one type"
        )


def _comparison(op_class: type[graph.ComparisonOp], onnx_name: str):
    return _binary(op_class, onnx_name, _check_comparable, "bool result")


_convert_numeric_equal = _comparison(graph.EqualOp, "Equal")


def convert_equal(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Equal -> graph.equal (bool result, numpy broadcasting).

    Strings are compared as int64 ids: the ONNX backend encodes string tensors at the
    model's boundary with one dictionary per call, so equal strings get equal ids and
    Equal on ids is exact (`strings`). Two string tensors known at import time fold.
    """
    lhs, rhs = ctx.known(0), ctx.known(1)
    if lhs is not None and rhs is not None and lhs.dtype == object and rhs.dtype == object:
        ctx.broadcast(lhs.shape, rhs.shape)
        return [np.asarray(np.equal(lhs, rhs), dtype=np.bool_)]
    return _convert_numeric_equal(ctx)
convert_less = _comparison(graph.LessOp, "Less")
convert_less_or_equal = _comparison(graph.LessEqualOp, "LessOrEqual")
convert_greater = _comparison(graph.GreaterOp, "Greater")
convert_greater_or_equal = _comparison(graph.GreaterEqualOp, "GreaterOrEqual")

_BOOL = element_type_of(np.dtype(np.bool_))


def _check_bool(ctx: NodeContext, *indices: int) -> None:
    for index in indices:
        if _element_type(ctx, index) != _BOOL:
            raise ctx.error(
                f"input {index} has element type {_element_type(ctx, index)}, expected bool"
            )


def _check_bool_operands(ctx: NodeContext, onnx_name: str) -> None:
    _check_bool(ctx, 0, 1)
    ctx.broadcast(ctx.shape(0), ctx.shape(1))


def _logical(op_class: type[graph.BooleanBinaryOp], onnx_name: str):
    return _binary(op_class, onnx_name, _check_bool_operands, "bool tensors")


convert_and = _logical(graph.AndOp, "And")
convert_or = _logical(graph.OrOp, "Or")
convert_xor = _logical(graph.XorOp, "Xor")


def convert_not(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Not -> graph.not."""
    _check_bool(ctx, 0)
    known = ctx.known(0)
    if known is not None:
        return [np.logical_not(known)]
    return [ctx.emit(graph.NotOp(ctx.operand(0))).results[0]]


def _check_integer(ctx: NodeContext, *indices: int) -> None:
    for index in indices:
        type_ = _element_type(ctx, index)
        if not isinstance(type_, IntegerType) or type_ == _BOOL:
            raise ctx.error(f"input {index} has element type {type_}, expected an integer")


def _check_integer_operands(ctx: NodeContext, onnx_name: str) -> None:
    _check_integer(ctx, 0, 1)
    _check_comparable(ctx, onnx_name)


def _bitwise(op_class: type[graph.BitwiseBinaryOp], onnx_name: str):
    return _binary(op_class, onnx_name, _check_integer_operands, "integer tensors")


convert_bitwise_and = _bitwise(graph.BitwiseAndOp, "BitwiseAnd")
convert_bitwise_or = _bitwise(graph.BitwiseOrOp, "BitwiseOr")
convert_bitwise_xor = _bitwise(graph.BitwiseXorOp, "BitwiseXor")


def convert_bitwise_not(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX BitwiseNot -> graph.bitwise_not."""
    _check_integer(ctx, 0)
    known = ctx.known(0)
    if known is not None:
        return [np.invert(known)]
    return [ctx.emit(graph.BitwiseNotOp(ctx.operand(0))).results[0]]


def convert_bit_shift(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX BitShift (direction LEFT or RIGHT) -> graph.bit_shift (numpy broadcasting);
    a right shift of a signed type (opset 28) fills with the sign."""
    direction = ctx.attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise ctx.error(f"attribute direction={direction!r} must be LEFT or RIGHT")
    _check_integer_operands(ctx, "BitShift")
    left = direction == "LEFT"
    x, y = ctx.known(0), ctx.known(1)
    if x is not None and y is not None:
        return [graph.bit_shift(x, y, left)]
    op = graph.BitShiftOp(ctx.operand(0), ctx.operand(1), direction.lower())
    return [ctx.emit(op).results[0]]


def _check_float(ctx: NodeContext) -> None:
    if not isinstance(_element_type(ctx, 0), AnyFloat):
        raise ctx.error(f"input has element type {_element_type(ctx, 0)}, expected a float")


def convert_is_nan(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX IsNaN -> graph.is_nan."""
    _check_float(ctx)
    known = ctx.known(0)
    if known is not None:
        return [np.isnan(known.astype(np.float64))]
    return [ctx.emit(graph.IsNaNOp(ctx.operand(0))).results[0]]


def convert_is_inf(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX IsInf (detect_positive, detect_negative) -> graph.is_inf."""
    _check_float(ctx)
    positive = ctx.flag_attr("detect_positive", 1)
    negative = ctx.flag_attr("detect_negative", 1)
    known = ctx.known(0)
    if known is not None:
        wide = known.astype(np.float64)
        return [(positive & (wide == np.inf)) | (negative & (wide == -np.inf))]
    op = graph.IsInfOp(ctx.operand(0), positive=positive, negative=negative)
    return [ctx.emit(op).results[0]]


def convert_where(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Where -> graph.where (numpy broadcasting of all three inputs)."""
    if _element_type(ctx, 0) != _BOOL:
        raise ctx.error(f"condition has element type {_element_type(ctx, 0)}, expected bool")
    if _element_type(ctx, 1) != _element_type(ctx, 2):
        raise ctx.error(
            f"inputs have element types {_element_type(ctx, 1)} and {_element_type(ctx, 2)}; "
            "Where selects between tensors of one type"
        )
    ctx.broadcast(ctx.broadcast(ctx.shape(0), ctx.shape(1)), ctx.shape(2))
    known = [ctx.known(i) for i in range(3)]
    if all(value is not None for value in known):
        condition, if_true, if_false = known
        return [np.asarray(np.where(condition, if_true, if_false), dtype=if_true.dtype)]
    operands = [ctx.operand(i) for i in range(3)]
    return [ctx.emit(graph.WhereOp(*operands)).results[0]]


def _target_type(ctx: NodeContext) -> Attribute:
    to = ctx.attr("to")
    if to is None:
        raise ctx.error("attribute 'to' is required")
    try:
        dtype = helper.tensor_dtype_to_np_dtype(int(to))
        return element_type_of(dtype)
    except (KeyError, ValueError, TypeError):
        name = (
            onnx.TensorProto.DataType.Name(int(to))
            if to in onnx.TensorProto.DataType.values()
            else str(to)
        )
        raise ctx.error(f"casting to {name} is not supported") from None


def _cast(ctx: NodeContext, target: Attribute) -> list[ImportedValue]:
    saturate = ctx.flag_attr("saturate", 1)
    round_mode = ctx.attr("round_mode", RoundMode.UP.value)
    if round_mode not in set(RoundMode):
        raise ctx.error(
            f"round_mode '{round_mode}' is not one of "
            + ", ".join(mode.value for mode in RoundMode)
        )
    source = _element_type(ctx, 0)
    known = ctx.known(0)
    if known is not None:
        return [cast_array(known, target, saturate, RoundMode(round_mode))]
    x = ctx.value(0)
    assert isinstance(x, SSAValue)
    if source == target:
        return [x]  # a cast to the same type is the identity
    op = graph.CastOp(x, target, saturate=saturate, round_mode=round_mode)
    assert shape_of(op.results[0]) == shape_of(x)
    return [ctx.emit(op).results[0]]


def convert_cast(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX Cast -> graph.cast to the element type of attribute `to`."""
    return _cast(ctx, _target_type(ctx))


def convert_bitcast(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX BitCast -> graph.bitcast to the element type of attribute `to` (of the
    input's width)."""
    target = _target_type(ctx)
    source = _element_type(ctx, 0)
    widths = [graph.bitcast_bits(t) for t in (source, target)]
    for type_, width in zip((source, target), widths):
        if width is None:
            raise ctx.error(f"reinterpreting the bits of {type_} is not supported")
    if widths[0] != widths[1]:
        raise ctx.error(
            f"the input's {source} has {widths[0]} bits and {target} {widths[1]}: BitCast "
            "needs equal widths"
        )
    known = ctx.known(0)
    if known is not None:
        return [graph.bitcast_array(known, target)]
    x = ctx.value(0)
    if source == target:
        return [x]
    return [ctx.emit(graph.BitcastOp(x, target)).results[0]]


def convert_cast_like(ctx: NodeContext) -> list[ImportedValue]:
    """ONNX CastLike -> graph.cast to the element type of input 1."""
    return _cast(ctx, _element_type(ctx, 1))
