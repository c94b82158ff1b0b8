"""Comparison, logic, selection and element-type conversion.

These are the operators whose element types differ between operands and results, or
that compute on booleans: `graph.equal`, `less`, `less_equal`, `greater` and
`greater_equal` compare any two tensors of one element type into booleans (`i1`);
`graph.and`, `or`, `xor` and `not` combine booleans; `graph.is_nan` and `is_inf`
classify floats; `graph.where` selects between two tensors by a boolean one, and
`graph.cast` converts between any two element types strato knows (`tensor_types`):
bool, signed and unsigned integers of 2 to 64 bits, f16, bf16, f32, f64 and the 8- and
4-bit float formats.

    %m = graph.equal %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
    %r = graph.where %m, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %h = graph.cast %x : tensor<4xf32> to tensor<4xf16>
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    BoolAttr,
    Float8E8M0FNUType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i1,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.irdl.operations import ParsePropInAttrDict
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from strato.dialects.graph.base import (
    AnyTensor,
    BroadcastBinaryOp,
    GraphOp,
    PatternKind,
    UnaryElementwiseOp,
    broadcast_dim_sources,
    broadcast_shapes,
    element_type,
    same_dims_as,
    static_shape,
)
from strato.dialects.tensor_types import float_to_int_saturating, numpy_dtype


def _check_known(op: Operation, type_: Attribute) -> None:
    try:
        numpy_dtype(type_)
    except ValueError:
        raise VerifyException(f"'{op.name}' does not support element type {type_}") from None


class ComparisonOp(BroadcastBinaryOp):
    """An element-wise comparison with numpy broadcasting: both operands have one
    element type (any); the result is a bool (`i1`) tensor. Floats compare ordered:
    NaN compares false with everything. `PREDICATE` is the comparison (eq, lt, le, gt,
    ge) as strategies emit it."""

    FLOAT_OPERANDS: ClassVar[bool] = False
    SAME_ELEMENT_TYPE: ClassVar[bool] = False
    PREDICATE: ClassVar[str]

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        lhs, rhs = SSAValue.get(lhs), SSAValue.get(rhs)
        shape = broadcast_shapes(static_shape(lhs), static_shape(rhs))
        if shape is None:
            raise ValueError(f"shapes {lhs.type} and {rhs.type} do not broadcast")
        GraphOp.__init__(self, operands=[lhs, rhs], result_types=[TensorType(i1, shape)])

    def verify_(self) -> None:
        super().verify_()
        if element_type(self.lhs) != element_type(self.rhs):
            raise VerifyException(
                f"'{self.name}' compares tensors of one element type, got "
                f"{element_type(self.lhs)} and {element_type(self.rhs)}"
            )
        _check_known(self, element_type(self.lhs))
        _check_bool_result(self)


def _check_bool_result(op: GraphOp) -> None:
    if element_type(op.results[0]) != i1:
        raise VerifyException(
            f"'{op.name}' result must be a tensor of i1, got {op.results[0].type}"
        )


@irdl_op_definition
class EqualOp(ComparisonOp):
    """Element-wise equality: result[i] = lhs[i'] == rhs[i''].

        %r = graph.equal %a, %b : (tensor<3x4xi32>, tensor<4xi32>) -> tensor<3x4xi1>
    """

    name = "graph.equal"
    PREDICATE: ClassVar[str] = "eq"
    compute = staticmethod(np.equal)


@irdl_op_definition
class LessOp(ComparisonOp):
    """Element-wise less-than: result[i] = lhs[i'] < rhs[i''].

        %r = graph.less %a, %b : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xi1>
    """

    name = "graph.less"
    PREDICATE: ClassVar[str] = "lt"
    compute = staticmethod(np.less)


@irdl_op_definition
class LessEqualOp(ComparisonOp):
    """Element-wise less-or-equal: result[i] = lhs[i'] <= rhs[i''].

        %r = graph.less_equal %a, %b : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xi1>
    """

    name = "graph.less_equal"
    PREDICATE: ClassVar[str] = "le"
    compute = staticmethod(np.less_equal)


@irdl_op_definition
class GreaterOp(ComparisonOp):
    """Element-wise greater-than: result[i] = lhs[i'] > rhs[i''].

        %r = graph.greater %a, %b : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xi1>
    """

    name = "graph.greater"
    PREDICATE: ClassVar[str] = "gt"
    compute = staticmethod(np.greater)


@irdl_op_definition
class GreaterEqualOp(ComparisonOp):
    """Element-wise greater-or-equal: result[i] = lhs[i'] >= rhs[i''].

        %r = graph.greater_equal %a, %b : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xi1>
    """

    name = "graph.greater_equal"
    PREDICATE: ClassVar[str] = "ge"
    compute = staticmethod(np.greater_equal)


class BooleanBinaryOp(BroadcastBinaryOp):
    """A logical operator on two bool (`i1`) tensors with numpy broadcasting."""

    FLOAT_OPERANDS: ClassVar[bool] = False

    def verify_(self) -> None:
        super().verify_()
        _check_bool_result(self)


@irdl_op_definition
class AndOp(BooleanBinaryOp):
    """Element-wise logical and of bool tensors.

        %r = graph.and %a, %b : (tensor<3x4xi1>, tensor<4xi1>) -> tensor<3x4xi1>
    """

    name = "graph.and"
    compute = staticmethod(np.logical_and)


@irdl_op_definition
class OrOp(BooleanBinaryOp):
    """Element-wise logical or of bool tensors.

        %r = graph.or %a, %b : (tensor<3x4xi1>, tensor<4xi1>) -> tensor<3x4xi1>
    """

    name = "graph.or"
    compute = staticmethod(np.logical_or)


@irdl_op_definition
class XorOp(BooleanBinaryOp):
    """Element-wise logical exclusive or of bool tensors.

        %r = graph.xor %a, %b : (tensor<3x4xi1>, tensor<4xi1>) -> tensor<3x4xi1>
    """

    name = "graph.xor"
    compute = staticmethod(np.logical_xor)


@irdl_op_definition
class NotOp(UnaryElementwiseOp):
    """Element-wise logical negation of a bool tensor.

        %r = graph.not %a : tensor<3x4xi1>
    """

    name = "graph.not"
    FLOAT_OPERANDS: ClassVar[bool] = False

    def verify_(self) -> None:
        super().verify_()
        _check_bool_result(self)

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.logical_not(inputs[0])]


def _check_integer(op: GraphOp) -> None:
    """Bitwise operators take integer tensors (not bool, which has the logical ones)."""
    for value in (*op.operands, *op.results):
        type_ = element_type(value)
        if not isinstance(type_, IntegerType) or type_.width.data == 1:
            raise VerifyException(f"'{op.name}' expects integer tensors, got {value.type}")


class BitwiseBinaryOp(BroadcastBinaryOp):
    """A bitwise operator on two integer tensors of one type, numpy broadcasting."""

    FLOAT_OPERANDS: ClassVar[bool] = False

    def verify_(self) -> None:
        super().verify_()
        _check_integer(self)


@irdl_op_definition
class BitwiseAndOp(BitwiseBinaryOp):
    """Element-wise bitwise and of integer tensors.

        %r = graph.bitwise_and %a, %b : (tensor<3x4xi32>, tensor<4xi32>) -> tensor<3x4xi32>
    """

    name = "graph.bitwise_and"
    compute = staticmethod(np.bitwise_and)


@irdl_op_definition
class BitwiseOrOp(BitwiseBinaryOp):
    """Element-wise bitwise or of integer tensors.

        %r = graph.bitwise_or %a, %b : (tensor<3x4xui8>, tensor<4xui8>) -> tensor<3x4xui8>
    """

    name = "graph.bitwise_or"
    compute = staticmethod(np.bitwise_or)


@irdl_op_definition
class BitwiseXorOp(BitwiseBinaryOp):
    """Element-wise bitwise exclusive or of integer tensors.

        %r = graph.bitwise_xor %a, %b : (tensor<3x4xi64>, tensor<i64>) -> tensor<3x4xi64>
    """

    name = "graph.bitwise_xor"
    compute = staticmethod(np.bitwise_xor)


@irdl_op_definition
class BitwiseNotOp(UnaryElementwiseOp):
    """Element-wise bitwise complement of an integer tensor.

        %r = graph.bitwise_not %a : tensor<3x4xi16>
    """

    name = "graph.bitwise_not"
    FLOAT_OPERANDS: ClassVar[bool] = False

    def verify_(self) -> None:
        super().verify_()
        _check_integer(self)

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.invert(inputs[0])]


class ShiftDirection(StrEnum):
    LEFT = "left"
    RIGHT = "right"


@irdl_op_definition
class BitShiftOp(BitwiseBinaryOp):
    """Element-wise shift of `lhs` by `rhs` bits, numpy broadcasting: `left` fills with
    zeros, `right` is logical on unsigned types and arithmetic (sign-filling) on signed
    ones. A shift that is negative or at least the bit width gives what the fill alone
    gives: 0, or -1 for a right shift of a negative value.

        %r = graph.bit_shift %a, %b direction "left" : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
    """

    name = "graph.bit_shift"
    direction = prop_def(StringAttr)
    assembly_format = (
        "$lhs `,` $rhs `direction` $direction attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        direction: ShiftDirection | str,
    ):
        super().__init__(lhs, rhs)
        self.properties["direction"] = StringAttr(ShiftDirection(direction).value)

    @property
    def is_left(self) -> bool:
        return self.direction.data == ShiftDirection.LEFT

    def verify_(self) -> None:
        if self.direction.data not in tuple(ShiftDirection):
            raise VerifyException(
                f"'graph.bit_shift' direction must be left or right, got '{self.direction.data}'"
            )
        super().verify_()

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        dtype = numpy_dtype(self.result.type)
        return [np.asarray(bit_shift(inputs[0], inputs[1], self.is_left), dtype=dtype)]


def bit_shift(x: np.ndarray, y: np.ndarray, left: bool) -> np.ndarray:
    """graph.bit_shift's reference: numpy's shifts where 0 <= y < the bit width, the
    sign fill elsewhere."""
    x, y = np.asarray(x), np.asarray(y)
    bits = x.dtype.itemsize * 8
    wide = y.astype(np.int64) if y.dtype != np.uint64 else np.minimum(y, bits).astype(np.int64)
    valid = (wide >= 0) & (wide < bits)
    safe = np.where(valid, wide, 0).astype(x.dtype)
    shifted = np.left_shift(x, safe) if left else np.right_shift(x, safe)
    negative = x < 0 if x.dtype.kind == "i" else np.zeros(x.shape, bool)
    fill = np.where(negative & (not left), -1, 0).astype(x.dtype)
    return np.where(valid, shifted, fill).astype(x.dtype)


class FloatClassOp(GraphOp):
    """A float tensor in, a bool (`i1`) tensor of the same shape out: a test of each
    element's class (NaN, infinity)."""

    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.INJECTIVE
    SAME_ELEMENT_TYPE: ClassVar[bool] = False
    RUN_TIME_DIMS: ClassVar[bool] = True

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        return same_dims_as(self)

    def __init__(
        self, input: SSAValue | Operation, properties: dict[str, Attribute] | None = None
    ):
        input = SSAValue.get(input)
        super().__init__(
            operands=[input],
            result_types=[TensorType(i1, static_shape(input))],
            properties=properties or {},
        )

    def infer_shape(self) -> tuple[int, ...] | None:
        return static_shape(self.input)

    def verify_(self) -> None:
        super().verify_()
        _check_bool_result(self)


@irdl_op_definition
class IsNaNOp(FloatClassOp):
    """Whether each element is NaN.

        %r = graph.is_nan %a : tensor<3x4xf32> -> tensor<3x4xi1>
    """

    name = "graph.is_nan"

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.isnan(np.asarray(inputs[0], np.float64))]


@irdl_op_definition
class IsInfOp(FloatClassOp):
    """Whether each element is an infinity: +inf unless `detect_positive = false`, -inf
    unless `detect_negative = false`.

        %r = graph.is_inf %a : tensor<3x4xf32> -> tensor<3x4xi1>
        %p = graph.is_inf %a {detect_negative = false} : tensor<3x4xf32> -> tensor<3x4xi1>
    """

    name = "graph.is_inf"

    detect_positive = opt_prop_def(IntegerAttr[IntegerType])
    detect_negative = opt_prop_def(IntegerAttr[IntegerType])

    def __init__(
        self, input: SSAValue | Operation, *, positive: bool = True, negative: bool = True
    ):
        properties: dict[str, Attribute] = {}
        if not positive:
            properties["detect_positive"] = BoolAttr.from_bool(False)
        if not negative:
            properties["detect_negative"] = BoolAttr.from_bool(False)
        super().__init__(input, properties)

    @property
    def detects(self) -> tuple[bool, bool]:
        """Whether +inf and -inf are detected."""
        return tuple(  # type: ignore[return-value]
            flag is None or bool(flag.value.data)
            for flag in (self.detect_positive, self.detect_negative)
        )

    def verify_(self) -> None:
        super().verify_()
        for flag in (self.detect_positive, self.detect_negative):
            if flag is not None and flag.type != i1:
                raise VerifyException(f"'graph.is_inf' flags must be bools, got {flag}")

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = np.asarray(inputs[0], np.float64)
        positive, negative = self.detects
        return [(positive & (x == np.inf)) | (negative & (x == -np.inf))]


@irdl_op_definition
class WhereOp(GraphOp):
    """Element-wise selection with numpy broadcasting of all three operands:
    result[i] = condition[i'] ? if_true[i''] : if_false[i''']. The condition is a bool
    (`i1`) tensor; both choices and the result have one element type (any).

        %r = graph.where %c, %a, %b : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    """

    name = "graph.where"

    condition = operand_def(AnyTensor)
    if_true = operand_def(AnyTensor)
    if_false = operand_def(AnyTensor)
    result = result_def(AnyTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = (
        "$condition `,` $if_true `,` $if_false attr-dict `:` functional-type(operands, results)"
    )
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.BROADCAST
    FLOAT_OPERANDS: ClassVar[bool] = False
    SAME_ELEMENT_TYPE: ClassVar[bool] = False
    RUN_TIME_DIMS: ClassVar[bool] = True

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        shapes = [static_shape(v) for v in self.operands]
        rank = len(static_shape(self.result))
        return {(0, d): s for d, s in broadcast_dim_sources(shapes, rank).items()}

    def __init__(
        self,
        condition: SSAValue | Operation,
        if_true: SSAValue | Operation,
        if_false: SSAValue | Operation,
    ):
        operands = [SSAValue.get(v) for v in (condition, if_true, if_false)]
        shape = _broadcast_all([static_shape(v) for v in operands])
        if shape is None:
            raise ValueError(
                "shapes " + ", ".join(str(v.type) for v in operands) + " do not broadcast"
            )
        super().__init__(
            operands=operands,
            result_types=[TensorType(element_type(operands[1]), shape)],
        )

    def infer_shape(self) -> tuple[int, ...] | None:
        shapes = [static_shape(v) for v in self.operands]
        shape = _broadcast_all(shapes)
        if shape is None:
            raise VerifyException(
                "'graph.where' operand shapes "
                + ", ".join(str(list(s)) for s in shapes)
                + " do not broadcast"
            )
        return shape

    def verify_(self) -> None:
        super().verify_()
        if element_type(self.condition) != i1:
            raise VerifyException(
                f"'graph.where' condition must be a tensor of i1, got {self.condition.type}"
            )
        types = {element_type(v) for v in (self.if_true, self.if_false, self.result)}
        if len(types) != 1:
            raise VerifyException(
                f"'graph.where' choices and result must have one element type, got "
                f"{element_type(self.if_true)}, {element_type(self.if_false)} and "
                f"{element_type(self.result)}"
            )
        _check_known(self, element_type(self.result))

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        condition, if_true, if_false = inputs
        dtype = numpy_dtype(self.result.type)
        return [np.asarray(np.where(condition, if_true, if_false), dtype=dtype)]


def _broadcast_all(shapes: Sequence[Sequence[int]]) -> tuple[int, ...] | None:
    result: tuple[int, ...] | None = ()
    for shape in shapes:
        result = broadcast_shapes(result, shape)
        if result is None:
            return None
    return result


class RoundMode(StrEnum):
    """How a cast to f8E8M0FNU (a power of two) rounds: up (ONNX's default), down or to
    nearest."""

    UP = "up"
    DOWN = "down"
    NEAREST = "nearest"


@irdl_op_definition
class CastOp(GraphOp):
    """Converts each element to the result's element type (ONNX Cast):

    - float to float rounds to nearest even (+/-inf when out of range);
    - float to integer truncates toward zero (out of range is undefined in ONNX;
      strato truncates to 64 bits saturating, NaN to 0, then keeps the low bits);
    - integer to integer keeps the low bits (sign- or zero-extends when widening);
    - to bool: nonzero is true; from bool: 1 and 0;
    - to an 8-bit float format: round to nearest even; out-of-range values and
      infinities become the largest finite value when `saturate` (the default), else
      inf (f8E5M2) or NaN (the formats without inf), as the ONNX Cast table says;
    - to f8E8M0FNU: the exponent of the f32 value, rounded as `round_mode` says
      (`up` by default; `saturate` keeps the largest finite value; NaN and inf give
      NaN);
    - to f4E2M1FN: round to nearest even, saturating to +/-6.

        %h = graph.cast %x : tensor<4xf32> to tensor<4xf16>
        %q = graph.cast %x {saturate = false} : tensor<4xf32> to tensor<4xf8E4M3FN>
        %e = graph.cast %x {round_mode = "nearest"} : tensor<4xf32> to tensor<4xf8E8M0FNU>
    """

    name = "graph.cast"

    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    saturate = opt_prop_def(IntegerAttr[IntegerType])
    round_mode = opt_prop_def(StringAttr)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$input attr-dict `:` type($input) `to` type($result)"
    irdl_options = (ParsePropInAttrDict(),)
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.INJECTIVE
    FLOAT_OPERANDS: ClassVar[bool] = False
    SAME_ELEMENT_TYPE: ClassVar[bool] = False
    RUN_TIME_DIMS: ClassVar[bool] = True

    def run_time_dim_sources(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        return same_dims_as(self)

    def __init__(
        self,
        input: SSAValue | Operation,
        to: Attribute,
        *,
        saturate: bool = True,
        round_mode: RoundMode | str = RoundMode.UP,
    ):
        input = SSAValue.get(input)
        properties: dict[str, Attribute] = {}
        if not saturate:
            properties["saturate"] = BoolAttr.from_bool(False)
        if RoundMode(round_mode) != RoundMode.UP:
            properties["round_mode"] = StringAttr(RoundMode(round_mode).value)
        super().__init__(
            operands=[input],
            result_types=[TensorType(to, static_shape(input))],
            properties=properties,
        )

    @property
    def saturates(self) -> bool:
        return self.saturate is None or bool(self.saturate.value.data)

    @property
    def rounding(self) -> RoundMode:
        return RoundMode.UP if self.round_mode is None else RoundMode(self.round_mode.data)

    def infer_shape(self) -> tuple[int, ...] | None:
        return static_shape(self.input)

    def verify_(self) -> None:
        super().verify_()
        _check_known(self, element_type(self.input))
        _check_known(self, element_type(self.result))
        if self.saturate is not None and self.saturate.type != i1:
            raise VerifyException(f"'graph.cast' saturate must be a bool, got {self.saturate}")
        if self.round_mode is not None and self.round_mode.data not in set(RoundMode):
            raise VerifyException(
                f"'graph.cast' round_mode '{self.round_mode.data}' is not one of "
                + ", ".join(mode.value for mode in RoundMode)
            )

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [cast_array(inputs[0], self.result.type, self.saturates, self.rounding)]


_BITCAST_BITS = {
    "bool": 8, "int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32,
    "int64": 64, "uint64": 64, "float16": 16, "bfloat16": 16, "float32": 32, "float64": 64,
    "float8_e4m3fn": 8, "float8_e4m3fnuz": 8, "float8_e5m2": 8, "float8_e5m2fnuz": 8,
    "float8_e8m0fnu": 8,
}  # fmt: skip
"""The element types `graph.bitcast` reinterprets, with their width in bits (a bool is
one byte, as ONNX's BitCast counts it). The sub-byte types are stored a byte an element
with unused bits, so their bits are not reinterpreted."""


def bitcast_bits(type_: Attribute) -> int | None:
    """The width `graph.bitcast` reinterprets an element type with, None when it does not
    take the type."""
    try:
        return _BITCAST_BITS.get(numpy_dtype(type_).name)
    except ValueError:
        return None


@irdl_op_definition
class BitcastOp(GraphOp):
    """Reinterprets each element's bits as the result's element type, of the same width
    (ONNX BitCast): no value is converted. A bool is one byte: true is 1, and a byte
    other than 0 is true. One exception in compiled code: a bf16 result is held in an
    f32 and rounded when stored, which quiets a signaling NaN (sets the top bit of its
    mantissa); it stays a NaN.

        %i = graph.bitcast %x : tensor<4xf32> to tensor<4xi32>
    """

    name = "graph.bitcast"

    input = operand_def(AnyTensor)
    result = result_def(AnyTensor)

    traits = traits_def(NoMemoryEffect())
    assembly_format = "$input attr-dict `:` type($input) `to` type($result)"
    PATTERN_KIND: ClassVar[PatternKind] = PatternKind.INJECTIVE
    FLOAT_OPERANDS: ClassVar[bool] = False
    SAME_ELEMENT_TYPE: ClassVar[bool] = False

    def __init__(self, input: SSAValue | Operation, to: Attribute):
        input = SSAValue.get(input)
        super().__init__(operands=[input], result_types=[TensorType(to, static_shape(input))])

    def infer_shape(self) -> tuple[int, ...] | None:
        return static_shape(self.input)

    def verify_(self) -> None:
        super().verify_()
        source, target = element_type(self.input), element_type(self.result)
        widths = [bitcast_bits(t) for t in (source, target)]
        for type_, width in zip((source, target), widths):
            if width is None:
                raise VerifyException(f"'graph.bitcast' does not reinterpret element type {type_}")
        if widths[0] != widths[1]:
            raise VerifyException(
                f"'graph.bitcast' reinterprets {source} ({widths[0]} bits) as {target} "
                f"({widths[1]} bits): the widths must be equal"
            )

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [bitcast_array(inputs[0], self.result.type)]


def bitcast_array(array: np.ndarray, to: Attribute) -> np.ndarray:
    """The numpy reference of `graph.bitcast`: the bytes of `array` read as `to`'s
    element type (a byte other than 0 read as a bool is true)."""
    array = np.ascontiguousarray(array)
    dtype = numpy_dtype(to)
    if dtype == np.bool_:
        return array.view(np.uint8) != 0
    return array.view(dtype).copy()


def cast_array(
    array: np.ndarray, to: Attribute, saturate: bool = True, round_mode: RoundMode = RoundMode.UP
) -> np.ndarray:
    """The numpy reference of `graph.cast`: `array` converted to element type `to`
    (the element type of `to` when it is a tensor type)."""
    array = np.asarray(array)
    dtype = numpy_dtype(to)
    if dtype.name == "float8_e8m0fnu":
        return _to_e8m0(array, saturate, round_mode)
    is_float = array.dtype.kind == "f" or array.dtype.name in _FLOAT_NAMES
    is_integer = np.issubdtype(dtype, np.integer) or dtype.name in _SUB_BYTE_INTEGER_NAMES
    if is_float and dtype != np.bool_ and is_integer:
        # truncate toward zero in 64 bits, saturating (NaN is 0), then keep the low bits
        if dtype == np.uint64:
            return float_to_int_saturating(array, dtype)
        return float_to_int_saturating(array, np.dtype(np.int64)).astype(dtype)
    with np.errstate(all="ignore"):
        if saturate and dtype.name in _SATURATING_NAMES:
            if array.dtype.kind == "f" or array.dtype.name in _FLOAT_NAMES:
                import ml_dtypes

                finfo = ml_dtypes.finfo(dtype)
                wide = array.astype(np.float64) if array.dtype.itemsize < 8 else array
                array = np.clip(wide, float(finfo.min), float(finfo.max))
            else:
                array = array.astype(np.float64)
        elif dtype.name in _SATURATING_NAMES and array.dtype.kind in "iub":
            array = array.astype(np.float64)
        try:
            return np.asarray(array.astype(dtype))
        except TypeError:
            # ml_dtypes lacks some direct casts (uint4 to int4, float8 to int4)
            is_float = array.dtype.kind == "f" or array.dtype.name in _FLOAT_NAMES
            return np.asarray(array.astype(np.float64 if is_float else np.int64).astype(dtype))


_SUB_BYTE_INTEGER_NAMES = frozenset({"int4", "uint4", "int2", "uint2"})
"""ml_dtypes' integers narrower than a byte (not numpy integer subtypes since ml_dtypes
0.7, whose float casts to them give 0 out of range: strato wraps around, as its code does)."""

_SATURATING_NAMES = frozenset(
    {"float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"}
)
_FLOAT_NAMES = frozenset({"bfloat16", *_SATURATING_NAMES, "float8_e8m0fnu", "float4_e2m1fn"})


def _to_e8m0(array: np.ndarray, saturate: bool, round_mode: RoundMode) -> np.ndarray:
    """f8E8M0FNU from the f32 value of `array`: its exponent field, rounded per
    `round_mode` (a value with the largest exponent does not round up to NaN when
    saturating); NaN and inf give the NaN code 0xFF, as ONNX's reference does. The sign
    is ignored (a negative input is undefined in ONNX)."""
    with np.errstate(all="ignore"):
        bits = np.asarray(array).astype(np.float32).view(np.uint32)
    exponent = ((bits >> 23) & 0xFF).astype(np.uint16)
    fraction = bits & 0x7FFFFF
    special = exponent == 0xFF
    if round_mode == RoundMode.UP:
        up = fraction != 0
    elif round_mode == RoundMode.NEAREST:
        guard = (bits & 0x400000) != 0
        sticky = (bits & 0x3FFFFF) != 0
        up = guard & (sticky | (exponent > 0))
    else:
        up = np.zeros_like(special)
    if saturate:
        up &= exponent != 0xFE
    result = np.where(special, 0xFF, exponent + up).astype(np.uint8)
    return result.view(numpy_dtype(Float8E8M0FNUType()))


OPS = (
    CastOp,
    BitcastOp,
    EqualOp,
    LessOp,
    LessEqualOp,
    GreaterOp,
    GreaterEqualOp,
    AndOp,
    OrOp,
    XorOp,
    NotOp,
    BitwiseAndOp,
    BitwiseOrOp,
    BitwiseXorOp,
    BitwiseNotOp,
    BitShiftOp,
    IsNaNOp,
    IsInfOp,
    WhereOp,
)

__all__ = [
    "AndOp",
    "BitShiftOp",
    "BitcastOp",
    "BitwiseAndOp",
    "BitwiseBinaryOp",
    "BitwiseNotOp",
    "BitwiseOrOp",
    "BitwiseXorOp",
    "BooleanBinaryOp",
    "CastOp",
    "ComparisonOp",
    "EqualOp",
    "FloatClassOp",
    "GreaterEqualOp",
    "GreaterOp",
    "IsInfOp",
    "IsNaNOp",
    "LessEqualOp",
    "LessOp",
    "NotOp",
    "OrOp",
    "RoundMode",
    "ShiftDirection",
    "WhereOp",
    "XorOp",
    "bit_shift",
    "bitcast_array",
    "bitcast_bits",
    "cast_array",
]
