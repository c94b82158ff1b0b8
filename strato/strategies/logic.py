"""Strategies of the comparisons, the boolean ops, is_nan/is_inf, where and cast: one
compute stage each.

`graph.cast` converts one scalar at a time with arith ops. Conversions between the types
LLVM computes with (integers, f16, f32, f64) are arith's own (`sitofp`, `truncf`, ...).
Everything else is integer arithmetic on bit patterns, so it lowers to LLVM like any
stage body and needs no runtime library:

- an 8- or 4-bit float is decoded to the f32 it stands for (exact) by splitting its
  sign, exponent and mantissa fields;
- a float is encoded in a narrower format (the 8- and 4-bit formats; f16 and bf16 from
  f64, where LLVM would call a library routine and a detour through f32 could round
  twice) by rounding its significand to nearest even at the right bit, including
  subnormal results, then applying the format's rules for overflow, infinity and NaN
  (`FloatFormat`) and ONNX's `saturate`;
- f8E8M0FNU keeps the f32 exponent, rounded as `round_mode` says.

Inside a stage body a bf16 is an f32 (rounded when stored) and the 8- and 4-bit floats are
their bits in an i8 (`tensor_types.scalar_type`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    Float4E2M1FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float8E8M0FNUType,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from strato.dialects import graph
from strato.dialects.graph.logic import RoundMode
from strato.dialects.tensor_types import (
    is_bit_pattern_float,
    is_unsigned_type,
    scalar_type,
    sub_byte_width,
)
from strato.strategies import strategy
from strato.strategies.builder import (
    PrimitiveBuilder,
    ScalarBuilder,
    broadcast_indices,
    element_type_of,
    shape_of,
)

# -- equal and where ----------------------------------------------------------------


@strategy(graph.ComparisonOp)
def compare(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """`arith.cmpf` with the ordered predicate on floats (8- and 4-bit formats decoded
    to f32 first), `arith.cmpi` on integers, unsigned as the operands' type says (the
    stage's own type is the result's, i1)."""
    assert isinstance(op, graph.ComparisonOp)
    lhs, rhs = inputs
    out_shape = shape_of(op.results[0])
    source = element_type_of(lhs)
    predicate = op.PREDICATE
    if not isinstance(source, AnyFloat) and predicate != "eq":
        predicate = ("u" if is_unsigned_type(source) else "s") + predicate
    elif isinstance(source, AnyFloat):
        predicate = "o" + predicate

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        a = s.read(lhs, broadcast_indices(s, idx, shape_of(lhs), out_shape))
        b = s.read(rhs, broadcast_indices(s, idx, shape_of(rhs), out_shape))
        if is_bit_pattern_float(source):
            decode = Conversion(source, f32, True, RoundMode.UP)
            a, b = decode.emit(Bits(s), a), decode.emit(Bits(s), b)
        if isinstance(a.type, AnyFloat):
            return _emit(s, arith.CmpfOp(a, b, predicate))
        return _emit(s, arith.CmpiOp(a, b, predicate))

    return [pb.compute(_stage_name(op), out_shape, body, i1)]


_BOOLEAN_OPS: dict[type[Operation], type[Operation]] = {
    graph.AndOp: arith.AndIOp,
    graph.OrOp: arith.OrIOp,
    graph.XorOp: arith.XOrIOp,
}


@strategy(*_BOOLEAN_OPS)
def boolean(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    lhs, rhs = inputs
    out_shape = shape_of(op.results[0])
    combine = _BOOLEAN_OPS[type(op)]

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        a = s.read(lhs, broadcast_indices(s, idx, shape_of(lhs), out_shape))
        b = s.read(rhs, broadcast_indices(s, idx, shape_of(rhs), out_shape))
        return _emit(s, combine(a, b))

    return [pb.compute(_stage_name(op), out_shape, body, i1)]


@strategy(graph.NotOp)
def logical_not(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    (x,) = inputs

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        return _emit(s, arith.XOrIOp(s.read(x, idx), s.const(True, i1)))

    return [pb.compute("not", shape_of(x), body, i1)]


_BITWISE_OPS: dict[type[Operation], type[Operation]] = {
    graph.BitwiseAndOp: arith.AndIOp,
    graph.BitwiseOrOp: arith.OrIOp,
    graph.BitwiseXorOp: arith.XOrIOp,
}


def _integer_binary(
    pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue], combine
) -> SSAValue:
    """One stage combine(lhs, rhs) over the broadcast shape, in the operands' type."""
    lhs, rhs = inputs
    out_shape = shape_of(op.results[0])

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        a = s.read(lhs, broadcast_indices(s, idx, shape_of(lhs), out_shape))
        b = s.read(rhs, broadcast_indices(s, idx, shape_of(rhs), out_shape))
        return combine(s, a, b)

    return pb.compute(_stage_name(op), out_shape, body, element_type_of(op.results[0]))


@strategy(*_BITWISE_OPS)
def bitwise(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    combine = _BITWISE_OPS[type(op)]
    return [_integer_binary(pb, op, inputs, lambda s, a, b: _emit(s, combine(a, b)))]


@strategy(graph.BitwiseNotOp)
def bitwise_not(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """x xor all-ones."""
    (x,) = inputs

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        value = s.read(x, idx)
        return _emit(s, arith.XOrIOp(value, s.const(-1, value.type)))

    return [pb.compute("bitwise_not", shape_of(x), body, element_type_of(x))]


@strategy(graph.BitShiftOp)
def bit_shift(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """shli, shrui (unsigned) or shrsi (signed) by the amount where it is below the bit
    width as an unsigned number (a negative amount is a huge one), which LLVM leaves
    undefined otherwise; there the fill: 0, or x >> (width - 1) for a signed right
    shift (-1 for a negative x)."""
    assert isinstance(op, graph.BitShiftOp)
    dtype = element_type_of(op.results[0])
    assert isinstance(dtype, IntegerType)
    width = dtype.width.data
    unsigned = is_unsigned_type(dtype)

    def combine(s: ScalarBuilder, x: SSAValue, amount: SSAValue) -> SSAValue:
        valid = _emit(s, arith.CmpiOp(amount, s.const(width, amount.type), "ult"))
        safe = s.select(valid, amount, s.const(0, amount.type))
        if op.is_left:
            return s.select(valid, _emit(s, arith.ShLIOp(x, safe)), s.const(0, x.type))
        if unsigned:
            return s.select(valid, _emit(s, arith.ShRUIOp(x, safe)), s.const(0, x.type))
        fill = _emit(s, arith.ShRSIOp(x, s.const(width - 1, x.type)))
        return s.select(valid, _emit(s, arith.ShRSIOp(x, safe)), fill)

    return [_integer_binary(pb, op, inputs, combine)]


@strategy(graph.IsNaNOp, graph.IsInfOp)
def float_class(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """NaN: unordered with itself; infinities: equal to +inf or -inf, as detected."""
    (x,) = inputs
    source = element_type_of(x)

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        value = s.read(x, idx)
        if is_bit_pattern_float(source):
            value = Conversion(source, f32, True, RoundMode.UP).emit(Bits(s), value)
        if isinstance(op, graph.IsNaNOp):
            return _emit(s, arith.CmpfOp(value, value, "uno"))
        assert isinstance(op, graph.IsInfOp)
        positive, negative = op.detects
        result = s.const(False, i1)
        for detect, infinity in ((positive, float("inf")), (negative, float("-inf"))):
            if detect:
                bound = s.const(infinity, value.type)
                result = _emit(s, arith.OrIOp(result, _emit(s, arith.CmpfOp(value, bound, "oeq"))))
        return result

    return [pb.compute(_stage_name(op), shape_of(x), body, i1)]


def _stage_name(op: Operation) -> str:
    return op.name.split(".", 1)[1]


def _emit(s: ScalarBuilder, op: Operation) -> SSAValue:
    s.block.add_op(op)
    return op.results[0]


@strategy(graph.WhereOp)
def where(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    condition, if_true, if_false = inputs
    out_shape = shape_of(op.results[0])

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        def read(tensor: SSAValue) -> SSAValue:
            return s.read(tensor, broadcast_indices(s, idx, shape_of(tensor), out_shape))

        return s.select(read(condition), read(if_true), read(if_false))

    return [pb.compute("where", out_shape, body, element_type_of(op.results[0]))]


# -- cast -----------------------------------------------------------------------------


@strategy(graph.CastOp)
def cast(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    assert isinstance(op, graph.CastOp)
    (x,) = inputs
    source, target = element_type_of(x), element_type_of(op.result)
    conversion = Conversion(source, target, op.saturates, op.rounding)

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        return conversion.emit(Bits(s), s.read(x, idx))

    return [pb.compute("cast", shape_of(x), body, target)]


@strategy(graph.BitcastOp)
def bitcast(pb: PrimitiveBuilder, op: Operation, inputs: Sequence[SSAValue]) -> list[SSAValue]:
    """Each element's bits (as its stage-body scalar holds them: bf16 in the upper half
    of an f32, the 8-bit floats as i8, a bool as i1) in an integer of the element's
    width, then read as the result's element."""
    assert isinstance(op, graph.BitcastOp)
    (x,) = inputs
    source, target = element_type_of(x), element_type_of(op.result)
    word = IntegerType(graph.bitcast_bits(source))

    def body(s: ScalarBuilder, idx: list[SSAValue]) -> SSAValue:
        b = Bits(s)
        return _from_bits(b, _bits_of(b, s.read(x, idx), source, word), target)

    return [pb.compute("bitcast", shape_of(x), body, target)]


def _bits_of(b: Bits, value: SSAValue, source: Attribute, word: IntegerType) -> SSAValue:
    if source == i1:
        return b.resize(value, word, signed=False)
    if isinstance(source, BFloat16Type):  # an f32 whose lower half is zero
        return b.resize(b.shru(b.bitcast(value, i32), 16), word, signed=False)
    if isinstance(value.type, AnyFloat):
        return b.bitcast(value, word)
    return value  # integers and the 8-bit floats' bit patterns


def _from_bits(b: Bits, bits: SSAValue, target: Attribute) -> SSAValue:
    if target == i1:
        return b.cmp("ne", bits, 0)
    if isinstance(target, BFloat16Type):
        return b.bitcast(b.shl(b.resize(bits, i32, signed=False), 16), f32)
    if isinstance(target, Float16Type | Float32Type | Float64Type):
        return b.bitcast(bits, target)
    return bits


class Bits:
    """The arith ops a conversion is written with, appended to one stage body. Integer
    operands are signless: the method says how they are read (`ult` vs `slt`,
    `shru` vs `shrs`)."""

    def __init__(self, s: ScalarBuilder):
        self.s = s

    def _add(self, op: Operation) -> SSAValue:
        self.s.block.add_op(op)
        return op.results[0]

    def int(self, value: int, type_: IntegerType) -> SSAValue:
        width = type_.width.data
        value &= (1 << width) - 1
        if width > 1 and value >= 1 << (width - 1):
            value -= 1 << width  # the same bits, as arith prints signless constants
        return self._add(arith.ConstantOp(IntegerAttr(value, type_)))

    def float(self, value: float, type_: AnyFloat) -> SSAValue:
        return self._add(arith.ConstantOp(FloatAttr(value, type_)))

    # integer arithmetic; an int operand is a constant of the other operand's type
    def _operands(self, lhs: SSAValue, rhs: SSAValue | int) -> tuple[SSAValue, SSAValue]:
        if isinstance(rhs, int):
            assert isinstance(lhs.type, IntegerType)
            rhs = self.int(rhs, lhs.type)
        return lhs, rhs

    def and_(self, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
        return self._add(arith.AndIOp(*self._operands(lhs, rhs)))

    def or_(self, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
        return self._add(arith.OrIOp(*self._operands(lhs, rhs)))

    def xor(self, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
        return self._add(arith.XOrIOp(*self._operands(lhs, rhs)))

    def add(self, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
        return self._add(arith.AddiOp(*self._operands(lhs, rhs)))

    def sub(self, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
        return self._add(arith.SubiOp(*self._operands(lhs, rhs)))

    def shl(self, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
        return self._add(arith.ShLIOp(*self._operands(lhs, rhs)))

    def shru(self, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
        return self._add(arith.ShRUIOp(*self._operands(lhs, rhs)))

    def shrs(self, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
        return self._add(arith.ShRSIOp(*self._operands(lhs, rhs)))

    def cmp(self, predicate: str, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
        """An integer comparison: eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge."""
        return self._add(arith.CmpiOp(*self._operands(lhs, rhs), predicate))

    def select(self, condition: SSAValue, if_true: SSAValue, if_false: SSAValue) -> SSAValue:
        return self._add(arith.SelectOp(condition, if_true, if_false))

    def min_u(self, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
        return self._add(arith.MinUIOp(*self._operands(lhs, rhs)))

    def max_s(self, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
        return self._add(arith.MaxSIOp(*self._operands(lhs, rhs)))

    # conversions
    def bitcast(self, value: SSAValue, type_: Attribute) -> SSAValue:
        return self._add(arith.BitcastOp(value, type_))

    def resize(self, value: SSAValue, type_: IntegerType, signed: bool) -> SSAValue:
        """An integer widened (sign- or zero-extended) or narrowed (low bits kept)."""
        assert isinstance(value.type, IntegerType)
        have, want = value.type.width.data, type_.width.data
        if have == want:
            return value
        if have > want:
            return self._add(arith.TruncIOp(value, type_))
        return self._add((arith.ExtSIOp if signed else arith.ExtUIOp)(value, type_))

    def float_resize(self, value: SSAValue, type_: AnyFloat) -> SSAValue:
        if value.type == type_:
            return value
        if _float_width(value.type) < _float_width(type_):
            return self._add(arith.ExtFOp(value, type_))
        return self._add(arith.TruncFOp(value, type_))

    def int_to_float(self, value: SSAValue, type_: AnyFloat, signed: bool) -> SSAValue:
        return self._add((arith.SIToFPOp if signed else arith.UIToFPOp)(value, type_))

    def float_to_int(self, value: SSAValue, type_: IntegerType, signed: bool) -> SSAValue:
        return self._add((arith.FPToSIOp if signed else arith.FPToUIOp)(value, type_))

    def is_nan(self, value: SSAValue) -> SSAValue:
        return self._add(arith.CmpfOp(value, value, "uno"))

    def is_nonzero(self, value: SSAValue) -> SSAValue:
        """value != 0 for a float (NaN counts as nonzero, as in C)."""
        zero = self.float(0.0, value.type)
        return self._add(arith.CmpfOp(value, zero, "une"))

    def negf(self, value: SSAValue) -> SSAValue:
        return self._add(arith.NegfOp(value))

    def mulf(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(arith.MulfOp(lhs, rhs))


def _float_width(type_: Attribute) -> int:
    return {Float16Type: 16, BFloat16Type: 16, Float32Type: 32, Float64Type: 64}[type(type_)]


class Specials(Enum):
    """How a float format spends its largest exponent and its sign."""

    IEEE = "ieee"  # inf and NaNs at the largest exponent (f64, f32, f16, bf16, f8E5M2)
    FN = "fn"  # no inf; NaN has every exponent and mantissa bit set (f8E4M3FN)
    FNUZ = "fnuz"  # no inf, no -0; NaN is the -0 pattern 0x80 (f8E4M3FNUZ, f8E5M2FNUZ)
    FINITE = "finite"  # neither inf nor NaN (f4E2M1FN)


@dataclass(frozen=True)
class FloatFormat:
    """A binary float format: sign bit, `exponent_bits` biased by `bias`, then
    `mantissa_bits` with an implicit leading one for normal numbers."""

    exponent_bits: int
    mantissa_bits: int
    bias: int
    specials: Specials

    @property
    def width(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def sign_bit(self) -> int:
        return 1 << (self.exponent_bits + self.mantissa_bits)

    @property
    def all_exponent(self) -> int:
        return (1 << self.exponent_bits) - 1

    @property
    def mantissa_mask(self) -> int:
        return (1 << self.mantissa_bits) - 1

    @property
    def infinity(self) -> int:
        """The bits of +inf (IEEE formats only)."""
        return self.all_exponent << self.mantissa_bits

    @property
    def max_finite(self) -> int:
        """The bits of the largest finite value."""
        top = self.all_exponent << self.mantissa_bits
        if self.specials == Specials.IEEE:
            return ((self.all_exponent - 1) << self.mantissa_bits) | self.mantissa_mask
        if self.specials == Specials.FN:
            return top | (self.mantissa_mask - 1)
        return top | self.mantissa_mask


F64 = FloatFormat(11, 52, 1023, Specials.IEEE)
F32 = FloatFormat(8, 23, 127, Specials.IEEE)
F16 = FloatFormat(5, 10, 15, Specials.IEEE)
BF16 = FloatFormat(8, 7, 127, Specials.IEEE)

FORMATS: dict[type[Attribute], FloatFormat] = {
    Float8E4M3FNType: FloatFormat(4, 3, 7, Specials.FN),
    Float8E4M3FNUZType: FloatFormat(4, 3, 8, Specials.FNUZ),
    Float8E5M2Type: FloatFormat(5, 2, 15, Specials.IEEE),
    Float8E5M2FNUZType: FloatFormat(5, 2, 16, Specials.FNUZ),
    Float4E2M1FNType: FloatFormat(2, 1, 1, Specials.FINITE),
}


@dataclass(frozen=True)
class Conversion:
    """The scalar conversion of `graph.cast` from element type `source` to `target`."""

    source: Attribute
    target: Attribute
    saturate: bool = True
    round_mode: RoundMode = RoundMode.UP

    def emit(self, b: Bits, x: SSAValue) -> SSAValue:
        """The stage-body scalar of the target element for the source scalar `x`: the
        value a store and a load of it would give (a bf16 rounded, a sub-byte integer
        wrapped), so a reader that gets it without a buffer in between (an inlined
        stage) sees the same value."""
        source, target = self.source, self.target
        x = self._canonical_source(b, x)
        if target == i1:
            return self._to_bool(b, x)
        if isinstance(target, Float8E8M0FNUType):
            return encode_e8m0(b, self._as_float(b, x, f32), self.saturate, self.round_mode)
        if type(target) in FORMATS:
            wide = self._as_float(b, x, f64 if _is_int(source) else None)
            return self._encode(b, wide, FORMATS[type(target)], self.saturate)
        if isinstance(target, IntegerType):
            return canonical_int(b, self._to_int(b, x, target), target)
        assert isinstance(target, AnyFloat), target
        value = self._to_float(b, x, target)
        if isinstance(target, BFloat16Type) and value.type == f32:
            value = decode_bf16(b, encode_float(b, value, F32, BF16, saturate=False))
        return value

    # sources: bit-pattern floats are decoded to f32, everything else is used as is
    def _canonical_source(self, b: Bits, x: SSAValue) -> SSAValue:
        source = self.source
        if isinstance(source, Float8E8M0FNUType):
            return decode_e8m0(b, x)
        if is_bit_pattern_float(source):
            return decode_float(b, x, FORMATS[type(source)])
        return x

    @property
    def _source_signed(self) -> bool:
        return not is_unsigned_type(self.source) and self.source != i1

    def _as_float(self, b: Bits, x: SSAValue, wanted: AnyFloat | None) -> SSAValue:
        """`x` as a float: ints and bools converted to `wanted` (f32 by default), f16
        widened to f32, other floats kept (or resized to `wanted`)."""
        if isinstance(x.type, IntegerType):
            type_ = wanted or f32
            if x.type == i1:
                return b.select(x, b.float(1.0, type_), b.float(0.0, type_))
            return b.int_to_float(x, type_, self._source_signed)
        if wanted is not None:
            return b.float_resize(x, wanted)
        if x.type == f16:
            return b.float_resize(x, f32)
        return x

    def _to_bool(self, b: Bits, x: SSAValue) -> SSAValue:
        if x.type == i1:
            return x
        if isinstance(x.type, IntegerType):
            return b.cmp("ne", x, 0)
        return b.is_nonzero(x)

    def _to_int(self, b: Bits, x: SSAValue, target: IntegerType) -> SSAValue:
        scalar = scalar_type(target)
        assert isinstance(scalar, IntegerType)
        if isinstance(x.type, IntegerType):
            return b.resize(x, scalar, self._source_signed)
        if x.type == f16:
            x = b.float_resize(x, f32)
        # truncate toward zero in 64 bits (saturating), then keep the low bits
        if is_unsigned_type(target) and target.width.data == 64:
            return b.float_to_int(x, i64, signed=False)
        wide = b.float_to_int(x, i64, signed=True)
        return b.resize(wide, scalar, signed=True)

    def _to_float(self, b: Bits, x: SSAValue, target: AnyFloat) -> SSAValue:
        if isinstance(x.type, IntegerType):
            if x.type == i1:
                type_ = scalar_type(target)
                return b.select(x, b.float(1.0, type_), b.float(0.0, type_))
            if isinstance(target, Float16Type | BFloat16Type):
                # exact in f32 over f16's range; bf16 is computed in f32 anyway
                wide = b.int_to_float(x, f32, self._source_signed)
                return b.float_resize(wide, f16) if target == f16 else wide
            return b.int_to_float(x, target, self._source_signed)
        if x.type == f64 and isinstance(target, Float16Type):
            bits = self._encode(b, x, F16, saturate=False)
            return b.bitcast(bits, f16)
        if x.type == f64 and isinstance(target, BFloat16Type):
            bits = self._encode(b, x, BF16, saturate=False)
            return decode_bf16(b, bits)
        return b.float_resize(x, scalar_type(target))

    @staticmethod
    def _encode(b: Bits, x: SSAValue, to: FloatFormat, saturate: bool) -> SSAValue:
        if x.type == f16:
            x = b.float_resize(x, f32)
        source = F64 if x.type == f64 else F32
        return encode_float(b, x, source, to, saturate)


def _is_int(type_: Attribute) -> bool:
    return isinstance(type_, IntegerType)


# -- bit-level conversions -------------------------------------------------------------


def decode_float(b: Bits, bits: SSAValue, format: FloatFormat) -> SSAValue:
    """The f32 value of the bits (in an i8) of a narrow float `format` (exact: every
    value of an 8- or 4-bit format is an f32)."""
    m = format.mantissa_bits
    word = b.and_(b.resize(bits, i32, signed=False), (1 << format.width) - 1)
    sign = b.cmp("ne", b.and_(word, format.sign_bit), 0)
    exponent = b.and_(b.shru(word, m), format.all_exponent)
    mantissa = b.and_(word, format.mantissa_mask)
    subnormal = b.cmp("eq", exponent, 0)
    significand = b.select(subnormal, mantissa, b.or_(mantissa, 1 << m))
    # value = significand * 2^(max(exponent, 1) - bias - m), both factors exact in f32
    scale_exponent = b.add(b.max_s(exponent, 1), 127 - format.bias - m)
    scale = b.bitcast(b.shl(scale_exponent, 23), f32)
    magnitude = b.mulf(b.int_to_float(significand, f32, signed=True), scale)
    value = b.select(sign, b.negf(magnitude), magnitude)
    nan = b.float(float("nan"), f32)
    if format.specials == Specials.IEEE:
        top = b.cmp("eq", exponent, format.all_exponent)
        infinity = b.select(sign, b.float(float("-inf"), f32), b.float(float("inf"), f32))
        special = b.select(b.cmp("eq", mantissa, 0), infinity, nan)
        return b.select(top, special, value)
    if format.specials == Specials.FN:
        all_ones = format.infinity | format.mantissa_mask
        return b.select(b.cmp("eq", b.and_(word, all_ones), all_ones), nan, value)
    if format.specials == Specials.FNUZ:
        return b.select(b.cmp("eq", word, format.sign_bit), nan, value)
    return value


def encode_float(
    b: Bits, x: SSAValue, source: FloatFormat, to: FloatFormat, saturate: bool
) -> SSAValue:
    """The bits of float `x` (of `source`, f32 or f64) in the narrower format `to`,
    rounded to nearest even, in an i8 (formats up to 8 bits) or i16. Out-of-range
    values and infinities become the largest finite value when `saturate`, else inf
    (IEEE formats) or NaN; FINITE formats always saturate."""
    width = source.width
    word_type = IntegerType(width)
    s_m, t_m = source.mantissa_bits, to.mantissa_bits
    word = b.bitcast(x, word_type)
    sign = b.shru(word, width - 1)
    magnitude = b.and_(word, (1 << (width - 1)) - 1)
    exponent = b.shru(magnitude, s_m)
    is_nan = b.cmp("ugt", magnitude, source.infinity)
    is_inf = b.cmp("eq", magnitude, source.infinity)
    # a subnormal source has no implicit one and the exponent of the smallest normal
    # (it can still be a bf16 subnormal: bf16 has the exponent range of f32)
    subnormal = b.cmp("eq", exponent, 0)

    # the biased target exponent; below 1 the result is subnormal and the significand
    # is shifted further right
    mantissa = b.and_(magnitude, source.mantissa_mask)
    target_exponent = b.add(b.max_s(exponent, 1), to.bias - source.bias)
    significand = b.select(subnormal, mantissa, b.or_(mantissa, 1 << s_m))
    below_normal = b.cmp("slt", target_exponent, 1)
    extra = b.select(below_normal, b.sub(b.int(1, word_type), target_exponent), b.int(0, word_type))
    # past s_m + 2 bits everything rounds to zero; clamping keeps shifts in range
    shift = b.min_u(b.add(extra, s_m - t_m), s_m + 2)
    kept = b.shru(significand, shift)
    one = b.int(1, word_type)
    remainder = b.and_(significand, b.sub(b.shl(one, shift), 1))
    half = b.shl(one, b.sub(shift, 1))
    odd = b.cmp("ne", b.and_(kept, 1), 0)
    above_half = b.cmp("ugt", remainder, half)
    tie_to_odd = b.and_(b.cmp("eq", remainder, half), odd)
    round_up = b.or_(above_half, tie_to_odd)
    rounded = b.add(kept, b.resize(round_up, word_type, signed=False))
    # a carry out of the significand moves into the exponent field, as it should
    exponent_field = b.select(below_normal, b.int(0, word_type), b.sub(target_exponent, 1))
    code = b.add(b.shl(exponent_field, t_m), rounded)

    too_large = b.or_(is_inf, b.cmp("ugt", code, to.max_finite))
    sign_bits = b.shl(sign, to.width - 1)
    if to.specials == Specials.FNUZ:
        finite = b.select(b.cmp("eq", code, 0), code, b.or_(code, sign_bits))
    else:
        finite = b.or_(code, sign_bits)
    if saturate or to.specials == Specials.FINITE:
        large = b.or_(sign_bits, to.max_finite)
    elif to.specials == Specials.IEEE:
        large = b.or_(sign_bits, to.infinity)
    elif to.specials == Specials.FN:
        large = b.or_(sign_bits, to.infinity | to.mantissa_mask)
    else:
        large = b.int(to.sign_bit, word_type)
    result = b.select(too_large, large, finite)
    if to.specials == Specials.IEEE:
        nan = b.or_(sign_bits, to.infinity | (1 << (t_m - 1)))
    elif to.specials == Specials.FN:
        nan = b.or_(sign_bits, to.infinity | to.mantissa_mask)
    elif to.specials == Specials.FNUZ:
        nan = b.int(to.sign_bit, word_type)
    else:
        nan = b.xor(sign_bits, to.sign_bit)  # what ml_dtypes gives: a zero of the other sign
    result = b.select(is_nan, nan, result)
    return b.resize(result, i8 if to.width <= 8 else i16, signed=False)


def canonical_int(b: Bits, value: SSAValue, type_: IntegerType) -> SSAValue:
    """A 2- or 4-bit integer in its i8 as a load gives it: the low bits, sign- or
    zero-extended (other integers are returned as they are)."""
    width = sub_byte_width(type_)
    if width is None:
        return value
    if is_unsigned_type(type_):
        return b.and_(value, (1 << width) - 1)
    return b.shrs(b.shl(value, 8 - width), 8 - width)


def decode_bf16(b: Bits, bits: SSAValue) -> SSAValue:
    """The f32 of bf16 bits in an i16 (its upper half)."""
    wide = b.resize(bits, i32, signed=False)
    return b.bitcast(b.shl(wide, 16), f32)


def decode_e8m0(b: Bits, bits: SSAValue) -> SSAValue:
    """The f32 of an f8E8M0FNU: 2^(bits - 127); 0xFF is NaN; 2^-127 is an f32
    subnormal."""
    word = b.and_(b.resize(bits, i32, signed=False), 0xFF)
    normal = b.shl(word, 23)
    value = b.bitcast(b.select(b.cmp("eq", word, 0), b.int(0x00400000, i32), normal), f32)
    return b.select(b.cmp("eq", word, 0xFF), b.float(float("nan"), f32), value)


def encode_e8m0(b: Bits, x: SSAValue, saturate: bool, round_mode: RoundMode) -> SSAValue:
    """The f8E8M0FNU of f32 `x`: its exponent field, rounded up when it has a fraction
    (`up`), to nearest (`nearest`), or not (`down`); NaN and inf give 0xFF; with
    `saturate` the largest exponent does not round up to NaN."""
    word = b.bitcast(x, i32)
    exponent = b.and_(b.shru(word, 23), 0xFF)
    if round_mode == RoundMode.UP:
        up = b.cmp("ne", b.and_(word, 0x7FFFFF), 0)
    elif round_mode == RoundMode.NEAREST:
        guard = b.cmp("ne", b.and_(word, 0x400000), 0)
        sticky = b.cmp("ne", b.and_(word, 0x3FFFFF), 0)
        up = b.and_(guard, b.or_(sticky, b.cmp("ugt", exponent, 0)))
    else:
        up = b.int(0, i1)
    if saturate:
        up = b.and_(up, b.cmp("ne", exponent, 0xFE))
    rounded = b.add(exponent, b.resize(up, i32, signed=False))
    special = b.cmp("eq", exponent, 0xFF)
    result = b.select(special, b.int(0xFF, i32), rounded)
    return b.resize(result, i8, signed=False)


__all__ = [
    "Bits",
    "Conversion",
    "FloatFormat",
    "Specials",
    "decode_e8m0",
    "decode_float",
    "encode_e8m0",
    "encode_float",
]
