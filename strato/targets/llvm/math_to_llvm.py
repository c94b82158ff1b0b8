"""Lowering of upstream `math` to the llvm dialect, one pattern per op.

Functions LLVM knows as intrinsics become `llvm.call_intrinsic` (the backend turns the
ones without an instruction into libm calls); the others call libm directly (`expm1f`,
`log1pf`, ...), which the JIT resolves from the C library already in the process. exp,
log, erf and tanh of f32 are inline arithmetic instead (`vector_math`): no call, so the loop
around them vectorizes.

    %e = math.exp %x : f64   ->  %e = llvm.call_intrinsic "llvm.exp.f64"(%x) : (f64) -> f64
    %r = math.erf %x : f64   ->  %r = llvm.call @erf(%x) : (f64) -> f64
    %r = math.erf %x : f32   ->  fmas, min/max and bit operations on %x (vector_math)
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects import llvm, math
from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerType, i1
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from strato.targets.llvm import builders, vector_math
from strato.targets.llvm.lowering_pattern import LLVMLoweringPattern, intrinsic_suffix
from strato.targets.llvm.op_tables import INT_INTRINSICS, MATH_INTRINSICS
from strato.targets.llvm.type_conversion import (
    materialize_llvm,
    materialize_llvm_all,
    replace_with_llvm,
    unsupported,
)


class IntrinsicLowering(LLVMLoweringPattern):
    """A math op that is an LLVM intrinsic overloaded on its operand type
    (`op_tables.MATH_INTRINSICS`, `op_tables.INT_INTRINSICS`)."""

    def __init__(self, source_op: type[Operation], intrinsic: str):
        self.source_op = source_op
        self.intrinsic = intrinsic

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        args = materialize_llvm_all(rewriter, op, op.operands)
        result_type = op.results[0].type
        name = f"{self.intrinsic}.{intrinsic_suffix(result_type)}"
        replace_with_llvm(
            rewriter, op, [builders.call_intrinsic(name, args, result_type)]
        )


class LibmLowering(LLVMLoweringPattern):
    """A math op that is a call to the C math library (`f`-suffixed for f32:
    `LIBM_FUNCTIONS`)."""

    def __init__(self, source_op: type[Operation], function: str):
        self.source_op = source_op
        self.function = function

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        args = materialize_llvm_all(rewriter, op, op.operands)
        result_type = op.results[0].type
        if isinstance(result_type, Float32Type):
            name = f"{self.function}f"
        elif isinstance(result_type, Float64Type):
            name = self.function
        else:
            raise unsupported(op, f"libm has no '{self.function}' for {result_type}")
        fn_type = builders.function_type([a.type for a in args], result_type)
        builders.ensure_declared(op, name, fn_type)
        replace_with_llvm(rewriter, op, [builders.call(name, args, result_type)])


class ExpandedLowering(LLVMLoweringPattern):
    """A math op `vector_math` computes inline for f32 (exp, log, erf, tanh); other types
    lower as `fallback` does."""

    def __init__(self, source_op: type[Operation], fallback: LLVMLoweringPattern):
        self.source_op = source_op
        self.fallback = fallback

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not vector_math.expands(type(op), op.results[0].type):
            self.fallback.lower(op, rewriter)
            return
        value = materialize_llvm(rewriter, op, op.operands[0])
        ops, result = vector_math.expand(type(op), value)
        replace_with_llvm(rewriter, op, ops, [result])


class _IntBitCountLowering(LLVMLoweringPattern):
    """ctlz/cttz/abs take an extra i1 ("is zero/INT_MIN poison"): false keeps them
    defined on every input, as the math dialect requires."""

    intrinsic: ClassVar[str]

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        value = materialize_llvm(rewriter, op, op.operands[0])
        flag = builders.constant(0, i1)
        name = f"{self.intrinsic}.{intrinsic_suffix(value.type)}"
        call = builders.call_intrinsic(name, [value, flag.result], value.type)
        replace_with_llvm(rewriter, op, [flag, call])


class AbsIOpLowering(_IntBitCountLowering):
    source_op = math.AbsIOp
    intrinsic = "llvm.abs"


class CountLeadingZerosOpLowering(_IntBitCountLowering):
    source_op = math.CountLeadingZerosOp
    intrinsic = "llvm.ctlz"


class CountTrailingZerosOpLowering(_IntBitCountLowering):
    source_op = math.CountTrailingZerosOp
    intrinsic = "llvm.cttz"


class FPowIOpLowering(LLVMLoweringPattern):
    """A float to an integer power: `llvm.powi`, overloaded on both types."""

    source_op = math.FPowIOp

    def lower(self, op: math.FPowIOp, rewriter: PatternRewriter) -> None:
        base, exponent = materialize_llvm_all(rewriter, op, op.operands)
        name = (
            f"llvm.powi.{intrinsic_suffix(base.type)}.{intrinsic_suffix(exponent.type)}"
        )
        replace_with_llvm(
            rewriter, op, [builders.call_intrinsic(name, [base, exponent], base.type)]
        )


class IPowIOpLowering(LLVMLoweringPattern):
    """An integer to an integer power, wrapping like repeated multiplication: squaring
    and multiplying once per exponent bit, unrolled over the bit width with selects (no
    control flow in the loop body it lands in). A negative exponent gives 1 for base 1,
    +/-1 for base -1 and 0 otherwise (the integer part of the reciprocal)."""

    source_op = math.IPowIOp

    def lower(self, op: math.IPowIOp, rewriter: PatternRewriter) -> None:
        base, exponent = materialize_llvm_all(rewriter, op, op.operands)
        type_ = base.type
        assert isinstance(type_, IntegerType)
        ops: list[Operation] = []

        def add(new: Operation) -> SSAValue:
            ops.append(new)
            return new.results[0]

        zero = add(builders.constant(0, type_))
        one = add(builders.constant(1, type_))
        minus_one = add(builders.constant(-1, type_))
        result, square, rest = one, base, exponent
        for bit in range(type_.width.data):
            low = add(builders.int_binary(llvm.AndOp, rest, one))
            is_set = add(builders.icmp("ne", low, zero))
            product = add(builders.int_binary(llvm.MulOp, result, square))
            result = add(builders.select(is_set, product, result))
            if bit + 1 < type_.width.data:
                square = add(builders.int_binary(llvm.MulOp, square, square))
                rest = add(builders.int_binary(llvm.LShrOp, rest, one))
        odd = add(builders.icmp("ne", add(builders.int_binary(llvm.AndOp, exponent, one)), zero))
        sign = add(builders.select(odd, minus_one, one))
        is_one = add(builders.icmp("eq", base, one))
        is_minus_one = add(builders.icmp("eq", base, minus_one))
        reciprocal = add(builders.select(is_minus_one, sign, zero))
        reciprocal = add(builders.select(is_one, one, reciprocal))
        negative = add(builders.icmp("slt", exponent, zero))
        add(builders.select(negative, reciprocal, result))
        replace_with_llvm(rewriter, op, ops)


class RsqrtOpLowering(LLVMLoweringPattern):
    """`1 / sqrt(x)`, correctly rounded in two steps."""

    source_op = math.RsqrtOp

    def lower(self, op: math.RsqrtOp, rewriter: PatternRewriter) -> None:
        value = materialize_llvm(rewriter, op, op.operands[0])
        type_ = value.type
        root = builders.call_intrinsic(
            f"llvm.sqrt.{intrinsic_suffix(type_)}", [value], type_
        )
        one = builders.constant(1.0, type_)
        assert root.ress is not None
        quotient = builders.float_binary(llvm.FDivOp, one.result, root.ress)
        replace_with_llvm(rewriter, op, [root, one, quotient])


LIBM_FUNCTIONS: dict[type[Operation], str] = {
    math.ErfOp: "erf",
    math.ExpM1Op: "expm1",
    math.Log1pOp: "log1p",
    math.CbrtOp: "cbrt",
    math.AsinhOp: "asinh",
    math.AcoshOp: "acosh",
    math.AtanhOp: "atanh",
}
"""Float math ops that are a call of the C math library function of that name."""


def math_to_llvm_patterns() -> list[LLVMLoweringPattern]:
    """The patterns lowering `math` ops to the llvm dialect."""
    patterns: list[LLVMLoweringPattern] = []
    simple: list[LLVMLoweringPattern] = [
        *(IntrinsicLowering(op, name) for op, name in MATH_INTRINSICS.items()),
        *(IntrinsicLowering(op, name) for op, name in INT_INTRINSICS.items()),
        *(LibmLowering(op, function) for op, function in LIBM_FUNCTIONS.items()),
    ]
    for pattern in simple:
        # exp, log, erf, tanh: inline arithmetic for f32, the intrinsic or call otherwise
        if vector_math.expands(pattern.source_op, Float32Type()):
            pattern = ExpandedLowering(pattern.source_op, pattern)
        patterns.append(pattern)
    return [
        *patterns,
        AbsIOpLowering(),
        CountLeadingZerosOpLowering(),
        CountTrailingZerosOpLowering(),
        FPowIOpLowering(),
        IPowIOpLowering(),
        RsqrtOpLowering(),
    ]
