"""Lowering of upstream `arith` to the llvm dialect, one pattern per op.

`index` values become i64. Ops LLVM has no instruction for (floordivsi, minsi,
maximumf, fptosi, ...) expand to short instruction sequences or intrinsic calls.
Integer division and remainder never trap: a divisor that is not a safe constant is
guarded, giving x / 0 = 0, x % 0 = 0 and INT_MIN / -1 = INT_MIN (numpy's results).

    %s = arith.addi %i, %j : index         %s = llvm.add %i, %j : i64
    %m = arith.maximumf %a, %b : f32   ->  %m = llvm.call_intrinsic "llvm.maximum.f32"(%a, %b)
                                                 : (f32, f32) -> f32
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from strato.targets.llvm import builders
from strato.targets.llvm.lowering_pattern import LLVMLoweringPattern, intrinsic_suffix
from strato.targets.llvm.op_tables import (
    CMPF_PREDICATES,
    CMPI_PREDICATES,
    FLOAT_BINARY,
    FLOAT_MIN_MAX,
    INT_BINARY,
)
from strato.targets.llvm.type_conversion import (
    llvm_type,
    materialize_llvm,
    materialize_llvm_all,
    replace_with_llvm,
    unsupported,
)


def _int_width(type_: Attribute) -> int:
    converted = llvm_type(type_)
    assert isinstance(converted, IntegerType)
    return converted.width.data


class ConstantOpLowering(LLVMLoweringPattern):
    source_op = arith.ConstantOp

    def lower(self, op: arith.ConstantOp, rewriter: PatternRewriter) -> None:
        type_ = llvm_type(op.result.type)
        value = op.value
        if isinstance(value, IntegerAttr | FloatAttr):
            new = builders.constant(value.value.data, type_)
        else:
            raise unsupported(op, f"constant {value} is not a scalar")
        replace_with_llvm(rewriter, op, [new])


class IntBinaryOpLowering(LLVMLoweringPattern):
    """An arith integer op that is one llvm instruction (`op_tables.INT_BINARY`)."""

    def __init__(self, source_op: type[Operation], target_op: type[Operation]):
        self.source_op = source_op
        self.target_op = target_op

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        lhs, rhs = materialize_llvm_all(rewriter, op, op.operands)
        new = builders.int_binary(self.target_op, lhs, rhs, nsw=_has_nsw(op))
        replace_with_llvm(rewriter, op, [new])


def _has_nsw(op: Operation) -> bool:
    flags = op.properties.get("overflowFlags")
    return isinstance(flags, arith.IntegerOverflowAttr) and (
        arith.IntegerOverflowFlag.NSW in flags.data
    )


def _constant_value(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp | llvm.ConstantOp) and isinstance(
        owner.value, IntegerAttr
    ):
        return owner.value.value.data
    return None


def _guarded_divisor(
    op: Operation, lhs: SSAValue, rhs: SSAValue, *, signed: bool
) -> tuple[list[Operation], SSAValue, SSAValue | None]:
    """A divisor for `lhs / rhs` that cannot trap, so generated code never raises SIGFPE
    whatever the values: 1 where `rhs` is 0 or (signed) where `lhs` is INT_MIN and `rhs`
    is -1. Returns the ops, that divisor, and the `rhs == 0` flag the caller selects 0
    with (None when a constant divisor needs no guard). Defined results, as numpy's:
    x / 0 = 0, x % 0 = 0, INT_MIN / -1 = INT_MIN (wraps), INT_MIN % -1 = 0."""
    constant = _constant_value(op.operands[1])
    if constant is None:
        constant = _constant_value(rhs)
    if constant is not None and constant != 0 and not (signed and constant == -1):
        return [], rhs, None
    type_ = rhs.type
    if not isinstance(type_, IntegerType):
        return [], rhs, None  # vectors: guarded where they are generated
    width = type_.width.data
    zero = builders.constant(0, type_)
    one = builders.constant(1, type_)
    is_zero = builders.icmp("eq", rhs, zero.result)
    ops: list[Operation] = [zero, one, is_zero]
    replace = is_zero.res
    if signed:
        int_min = builders.constant(-(1 << (width - 1)) if width > 1 else -1, type_)
        minus_one = builders.constant(-1, type_)
        lhs_min = builders.icmp("eq", lhs, int_min.result)
        rhs_minus_one = builders.icmp("eq", rhs, minus_one.result)
        overflow = builders.int_binary(llvm.AndOp, lhs_min.res, rhs_minus_one.res)
        either = builders.int_binary(llvm.OrOp, is_zero.res, overflow.results[0])
        ops += [int_min, minus_one, lhs_min, rhs_minus_one, overflow, either]
        replace = either.results[0]
    divisor = builders.select(replace, one.result, rhs)
    ops.append(divisor)
    return ops, divisor.results[0], is_zero.res


def _zero_where(
    flag: SSAValue | None, value: SSAValue
) -> tuple[list[Operation], SSAValue]:
    """`flag ? 0 : value` (just `value` without a flag)."""
    if flag is None:
        return [], value
    zero = builders.constant(0, value.type)
    result = builders.select(flag, zero.result, value)
    return [zero, result], result.results[0]


class IntDivisionOpLowering(LLVMLoweringPattern):
    """divsi/divui/remsi/remui as one llvm instruction on a guarded divisor
    (`_guarded_divisor`): x / 0 = 0 and x % 0 = 0 instead of a trap."""

    def __init__(self, source_op: type[Operation], target_op: type[Operation], signed: bool):
        self.source_op = source_op
        self.target_op = target_op
        self.signed = signed

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        lhs, rhs = materialize_llvm_all(rewriter, op, op.operands)
        guard, divisor, is_zero = _guarded_divisor(op, lhs, rhs, signed=self.signed)
        quotient = builders.int_binary(self.target_op, lhs, divisor)
        tail, _ = _zero_where(is_zero, quotient.results[0])
        replace_with_llvm(rewriter, op, [*guard, quotient, *tail])


_INT_DIVISION_OPS: dict[type[Operation], tuple[type[Operation], bool]] = {
    arith.DivSIOp: (llvm.SDivOp, True),
    arith.DivUIOp: (llvm.UDivOp, False),
    arith.RemSIOp: (llvm.SRemOp, True),
    arith.RemUIOp: (llvm.URemOp, False),
}


class IntMinMaxOpLowering(LLVMLoweringPattern):
    """min/max as compare and select: `select(lhs <pred> rhs, lhs, rhs)`
    (`_INT_MIN_MAX_PREDICATES`)."""

    def __init__(self, source_op: type[Operation], predicate: str):
        self.source_op = source_op
        self.predicate = predicate

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        lhs, rhs = materialize_llvm_all(rewriter, op, op.operands)
        cmp = builders.icmp(self.predicate, lhs, rhs)
        sel = builders.select(cmp.res, lhs, rhs)
        replace_with_llvm(rewriter, op, [cmp, sel])


_INT_MIN_MAX_PREDICATES: dict[type[Operation], str] = {
    arith.MinSIOp: "slt",
    arith.MaxSIOp: "sgt",
    arith.MinUIOp: "ult",
    arith.MaxUIOp: "ugt",
}


class _RoundedDivSILowering(LLVMLoweringPattern):
    """A signed division rounded away from truncation: the truncated quotient, moved by
    one (`adjust_op` with 1) when the division is inexact and the sign of the remainder
    compares to that of the divisor with `signs_predicate`."""

    signs_predicate: ClassVar[str]
    adjust_op: ClassVar[type[Operation]]

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        lhs, rhs = materialize_llvm_all(rewriter, op, op.operands)
        guard, rhs, is_zero = _guarded_divisor(op, lhs, rhs, signed=True)
        type_ = lhs.type
        zero = builders.constant(0, type_)
        one = builders.constant(1, type_)
        quot = builders.int_binary(llvm.SDivOp, lhs, rhs)
        rem = builders.int_binary(llvm.SRemOp, lhs, rhs)
        inexact = builders.icmp("ne", rem.results[0], zero.result)
        rem_neg = builders.icmp("slt", rem.results[0], zero.result)
        rhs_neg = builders.icmp("slt", rhs, zero.result)
        signs = builders.icmp(self.signs_predicate, rem_neg.res, rhs_neg.res)
        adjust = builders.int_binary(llvm.AndOp, inexact.res, signs.res)
        moved = builders.int_binary(self.adjust_op, quot.results[0], one.result)
        result = builders.select(adjust.results[0], moved.results[0], quot.results[0])
        tail, _ = _zero_where(is_zero, result.results[0])
        ops = [*guard, zero, one, quot, rem, inexact, rem_neg, rhs_neg, signs, adjust, moved, result]
        replace_with_llvm(rewriter, op, [*ops, *tail])


class FloorDivSIOpLowering(_RoundedDivSILowering):
    """Round toward negative infinity: the truncated quotient, minus one when the
    division is inexact and the operands' signs differ."""

    source_op = arith.FloorDivSIOp
    signs_predicate = "ne"
    adjust_op = llvm.SubOp


class CeilDivSIOpLowering(_RoundedDivSILowering):
    """Round toward positive infinity: the truncated quotient, plus one when the
    division is inexact and the operands' signs agree."""

    source_op = arith.CeilDivSIOp
    signs_predicate = "eq"
    adjust_op = llvm.AddOp


class CeilDivUIOpLowering(LLVMLoweringPattern):
    """`lhs == 0 ? 0 : (lhs - 1) / rhs + 1`, which cannot overflow."""

    source_op = arith.CeilDivUIOp

    def lower(self, op: arith.CeilDivUIOp, rewriter: PatternRewriter) -> None:
        lhs, rhs = materialize_llvm_all(rewriter, op, op.operands)
        guard, rhs, rhs_zero = _guarded_divisor(op, lhs, rhs, signed=False)
        type_ = lhs.type
        zero = builders.constant(0, type_)
        one = builders.constant(1, type_)
        is_zero = builders.icmp("eq", lhs, zero.result)
        minus_one = builders.int_binary(llvm.SubOp, lhs, one.result)
        quot = builders.int_binary(llvm.UDivOp, minus_one.results[0], rhs)
        plus_one = builders.int_binary(llvm.AddOp, quot.results[0], one.result)
        result = builders.select(is_zero.res, zero.result, plus_one.results[0])
        tail, _ = _zero_where(rhs_zero, result.results[0])
        replace_with_llvm(
            rewriter, op, [*guard, zero, one, is_zero, minus_one, quot, plus_one, result, *tail]
        )


class FloatBinaryOpLowering(LLVMLoweringPattern):
    """An arith float op that is one llvm instruction (`op_tables.FLOAT_BINARY`)."""

    def __init__(self, source_op: type[Operation], target_op: type[Operation]):
        self.source_op = source_op
        self.target_op = target_op

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        lhs, rhs = materialize_llvm_all(rewriter, op, op.operands)
        flags = builders.fastmath(op.properties.get("fastmath"))
        new = builders.float_binary(self.target_op, lhs, rhs, flags)
        replace_with_llvm(rewriter, op, [new])


class FloatIntrinsicBinaryOpLowering(LLVMLoweringPattern):
    """An arith float op that is an llvm intrinsic on two operands
    (`op_tables.FLOAT_MIN_MAX`)."""

    def __init__(self, source_op: type[Operation], intrinsic: str):
        self.source_op = source_op
        self.intrinsic = intrinsic

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        lhs, rhs = materialize_llvm_all(rewriter, op, op.operands)
        name = f"{self.intrinsic}.{intrinsic_suffix(lhs.type)}"
        flags = builders.fastmath(op.properties.get("fastmath"))
        new = builders.call_intrinsic(name, [lhs, rhs], lhs.type, flags)
        replace_with_llvm(rewriter, op, [new])


class NegfOpLowering(LLVMLoweringPattern):
    source_op = arith.NegfOp

    def lower(self, op: arith.NegfOp, rewriter: PatternRewriter) -> None:
        operand = materialize_llvm(rewriter, op, op.operand)
        new = builders.fneg(operand, builders.fastmath(op.fastmath))
        replace_with_llvm(rewriter, op, [new])


class CmpiOpLowering(LLVMLoweringPattern):
    source_op = arith.CmpiOp

    def lower(self, op: arith.CmpiOp, rewriter: PatternRewriter) -> None:
        lhs, rhs = materialize_llvm_all(rewriter, op, op.operands)
        predicate = CMPI_PREDICATES[op.predicate.value.data]
        replace_with_llvm(rewriter, op, [builders.icmp(predicate, lhs, rhs)])


class CmpfOpLowering(LLVMLoweringPattern):
    source_op = arith.CmpfOp

    def lower(self, op: arith.CmpfOp, rewriter: PatternRewriter) -> None:
        lhs, rhs = materialize_llvm_all(rewriter, op, op.operands)
        predicate = CMPF_PREDICATES[op.predicate.value.data]
        replace_with_llvm(rewriter, op, [builders.fcmp(predicate, lhs, rhs)])


class SelectOpLowering(LLVMLoweringPattern):
    source_op = arith.SelectOp

    def lower(self, op: arith.SelectOp, rewriter: PatternRewriter) -> None:
        cond, lhs, rhs = materialize_llvm_all(rewriter, op, op.operands)
        replace_with_llvm(rewriter, op, [builders.select(cond, lhs, rhs)])


def _resize_int(value: SSAValue, to: IntegerType, signed: bool) -> list[Operation]:
    """The ops that sign- or zero-extend or truncate `value` to `to` (none if equal)."""
    from_width = _int_width(value.type)
    to_width = to.width.data
    if from_width == to_width:
        return []
    if from_width > to_width:
        return [builders.cast(llvm.TruncOp, value, to)]
    return [builders.cast(llvm.SExtOp if signed else llvm.ZExtOp, value, to)]


class _IntResizeLowering(LLVMLoweringPattern):
    """An integer width change (index counts as i64)."""

    signed: ClassVar[bool] = True

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        value = materialize_llvm(rewriter, op, op.operands[0])
        to = llvm_type(op.results[0].type)
        assert isinstance(to, IntegerType)
        ops = _resize_int(value, to, self.signed)
        if not ops:
            replace_with_llvm(rewriter, op, [], [value])
            return
        replace_with_llvm(rewriter, op, ops)


class IndexCastOpLowering(_IntResizeLowering):
    source_op = arith.IndexCastOp


class ExtSIOpLowering(_IntResizeLowering):
    source_op = arith.ExtSIOp


class ExtUIOpLowering(_IntResizeLowering):
    source_op = arith.ExtUIOp
    signed = False


class TruncIOpLowering(_IntResizeLowering):
    source_op = arith.TruncIOp


class SIToFPOpLowering(LLVMLoweringPattern):
    source_op = arith.SIToFPOp

    def lower(self, op: arith.SIToFPOp, rewriter: PatternRewriter) -> None:
        value = materialize_llvm(rewriter, op, op.input)
        replace_with_llvm(
            rewriter, op, [builders.cast(llvm.SIToFPOp, value, op.result.type)]
        )


class UIToFPOpLowering(LLVMLoweringPattern):
    """Zero-extend to a wider signed integer, then convert: exact, since the widened
    value is non-negative. (xDSL's llvm dialect has no uitofp.) An i64 with its top bit
    set is halved first, its low bit kept so rounding still sees it, converted and
    doubled: one rounding, as a real uitofp."""

    source_op = arith.UIToFPOp

    def lower(self, op: arith.UIToFPOp, rewriter: PatternRewriter) -> None:
        value = materialize_llvm(rewriter, op, op.input)
        width = _int_width(value.type)
        if width > 64:
            raise unsupported(op, f"unsigned conversion from i{width} is not supported")
        if width == 64:
            replace_with_llvm(rewriter, op, _u64_to_float(value, op.result.type))
            return
        ext = builders.cast(llvm.ZExtOp, value, i64)
        conv = builders.cast(llvm.SIToFPOp, ext.results[0], op.result.type)
        replace_with_llvm(rewriter, op, [ext, conv])


def _u64_to_float(value: SSAValue, to: Attribute) -> list[Operation]:
    one = builders.constant(1, i64)
    zero = builders.constant(0, i64)
    half = builders.int_binary(llvm.LShrOp, value, one.results[0])
    low = builders.int_binary(llvm.AndOp, value, one.results[0])
    folded = builders.int_binary(llvm.OrOp, half.results[0], low.results[0])
    converted = builders.cast(llvm.SIToFPOp, folded.results[0], to)
    doubled = builders.float_binary(llvm.FAddOp, converted.results[0], converted.results[0])
    direct = builders.cast(llvm.SIToFPOp, value, to)
    top_bit = builders.icmp("slt", value, zero.results[0])
    result = builders.select(top_bit.results[0], doubled.results[0], direct.results[0])
    return [one, zero, half, low, folded, converted, doubled, direct, top_bit, result]


class _FloatToIntLowering(LLVMLoweringPattern):
    """Float to integer through LLVM's saturating conversion: the plain conversion is
    poison out of range, so saturating is a valid (and defined) refinement. (xDSL's
    llvm dialect has no fptosi/fptoui.)"""

    intrinsic: ClassVar[str]

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        value = materialize_llvm(rewriter, op, op.operands[0])
        result_type = op.results[0].type
        name = f"{self.intrinsic}.{intrinsic_suffix(result_type)}.{intrinsic_suffix(value.type)}"
        replace_with_llvm(
            rewriter, op, [builders.call_intrinsic(name, [value], result_type)]
        )


class FPToSIOpLowering(_FloatToIntLowering):
    source_op = arith.FPToSIOp
    intrinsic = "llvm.fptosi.sat"


class FPToUIOpLowering(_FloatToIntLowering):
    source_op = arith.FPToUIOp
    intrinsic = "llvm.fptoui.sat"


class ExtFOpLowering(LLVMLoweringPattern):
    source_op = arith.ExtFOp

    def lower(self, op: arith.ExtFOp, rewriter: PatternRewriter) -> None:
        value = materialize_llvm(rewriter, op, op.input)
        replace_with_llvm(
            rewriter, op, [builders.cast(llvm.FPExtOp, value, op.result.type)]
        )


class TruncFOpLowering(LLVMLoweringPattern):
    source_op = arith.TruncFOp

    def lower(self, op: arith.TruncFOp, rewriter: PatternRewriter) -> None:
        value = materialize_llvm(rewriter, op, op.input)
        replace_with_llvm(
            rewriter, op, [builders.cast(llvm.FPTruncOp, value, op.result.type)]
        )


class BitcastOpLowering(LLVMLoweringPattern):
    source_op = arith.BitcastOp

    def lower(self, op: arith.BitcastOp, rewriter: PatternRewriter) -> None:
        value = materialize_llvm(rewriter, op, op.input)
        to = llvm_type(op.result.type)
        if value.type == to:
            replace_with_llvm(rewriter, op, [], [value])
            return
        replace_with_llvm(rewriter, op, [builders.cast(llvm.BitcastOp, value, to)])


def arith_to_llvm_patterns() -> list[LLVMLoweringPattern]:
    """The patterns lowering `arith` ops to the llvm dialect."""
    return [
        ConstantOpLowering(),
        *(IntBinaryOpLowering(op, target) for op, target in INT_BINARY.items()),
        *(
            IntDivisionOpLowering(op, target, signed)
            for op, (target, signed) in _INT_DIVISION_OPS.items()
        ),
        *(IntMinMaxOpLowering(op, pred) for op, pred in _INT_MIN_MAX_PREDICATES.items()),
        FloorDivSIOpLowering(),
        CeilDivSIOpLowering(),
        CeilDivUIOpLowering(),
        *(FloatBinaryOpLowering(op, target) for op, target in FLOAT_BINARY.items()),
        *(
            FloatIntrinsicBinaryOpLowering(op, name)
            for op, name in FLOAT_MIN_MAX.items()
        ),
        NegfOpLowering(),
        CmpiOpLowering(),
        CmpfOpLowering(),
        SelectOpLowering(),
        IndexCastOpLowering(),
        ExtSIOpLowering(),
        ExtUIOpLowering(),
        TruncIOpLowering(),
        SIToFPOpLowering(),
        UIToFPOpLowering(),
        FPToSIOpLowering(),
        FPToUIOpLowering(),
        ExtFOpLowering(),
        TruncFOpLowering(),
        BitcastOpLowering(),
    ]
