"""expand-math: `math.exp` and `math.tanh` on f32 as arithmetic that vectorizes.

LLVM has no vector form of `exp` or `tanh` for x86: a vectorized loop calls libm once
per lane (12288 `tanhf` calls end a DCGAN generator; every LSTM step makes five
transcendental calls per hidden unit). This pass rewrites them into plain `arith` (and
`math.floor`), which the vectorized loops of the schedules emit as vector instructions:

    exp(x)   = 2^n * p(r),  n = min(floor(x / ln 2 + 1/2), 127),  r = x - n ln 2 (ln 2
               in two parts, so r is exact), p the degree-9 Taylor polynomial of e^r
               (|r| <= ln 2: truncation below 1e-8 relative, under half an ulp),
               2^n built from its exponent bits; +inf above 88.72, 0 below -87.33
               (where the result would be subnormal), NaN kept
    tanh(x)  = sign(x) * e / (e + 2),  e = expm1(2 |x|) = 2^n (p(r) - 1) + (2^n - 1)
               (no cancellation near 0), |x| capped at 9 (tanh = 1 in f32 beyond)

Both stay within a few ulps of libm over the whole range. Other types and ops are left
to the LLVM lowering.

Requires: loop-level kernels (run after schedule-default, before convert-loops-to-llvm).
Leaves illegal: nothing.

Before:

    %y = math.tanh %x : f32

After (abridged):

    %a = math.absf %x : f32
    ...
    %y = arith.select %negative, %minus_t, %t : f32
"""

from __future__ import annotations

import math as pymath

from xdsl.context import Context
from xdsl.dialects import arith, func, math
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, f32, i32
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

LN2_HI = 0.693359375
"""ln 2 rounded to 9 significant bits: n * LN2_HI is exact for |n| < 2^15."""
LN2_LO = pymath.log(2.0) - LN2_HI
EXP_OVERFLOW = 88.72283935546875
"""Above this, e^x overflows f32."""
EXP_UNDERFLOW = -87.33654022216797
"""Below this, e^x is subnormal in f32 (flushed to 0 here)."""
TANH_SATURATION = 9.0
"""tanh(9) rounds to 1 in f32."""
TAYLOR = [1.0 / pymath.factorial(n) for n in range(2, 10)]
"""Coefficients of r^2 .. r^9 of e^r."""


class _Builder:
    """Inserts ops before `anchor` and returns their results; constants go to the start
    of the enclosing function, once per value (`constants`, shared by its expansions)."""

    def __init__(self, anchor: Operation, constants: dict[tuple[str, float], SSAValue]):
        self.anchor = anchor
        self.constants = constants

    def add(self, op: Operation) -> SSAValue:
        Rewriter.insert_op(op, InsertPoint.before(self.anchor))
        return op.results[0]

    def _constant(self, key: tuple[str, float], attr) -> SSAValue:
        if key not in self.constants:
            function = self.anchor.parent_op()
            while function is not None and not isinstance(function, func.FuncOp):
                function = function.parent_op()
            op = arith.ConstantOp(attr)
            if function is None:
                Rewriter.insert_op(op, InsertPoint.before(self.anchor))
            else:
                Rewriter.insert_op(op, InsertPoint.at_start(function.body.block))
            self.constants[key] = op.result
        return self.constants[key]

    def const(self, value: float) -> SSAValue:
        return self._constant(("f32", value), FloatAttr(value, f32))

    def iconst(self, value: int) -> SSAValue:
        return self._constant(("i32", value), IntegerAttr(value, i32))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(arith.MulfOp(a, b))

    def addf(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(arith.AddfOp(a, b))

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(arith.SubfOp(a, b))

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(arith.SelectOp(cond, a, b))

    def cmp(self, predicate: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(arith.CmpfOp(a, b, predicate))

    def expm1_parts(self, x: SSAValue) -> tuple[SSAValue, SSAValue]:
        """(2^n, p(r) - 1) with e^x = 2^n * p(r), for x within the exponent range."""
        scaled = self.addf(self.mul(x, self.const(1.0 / pymath.log(2.0))), self.const(0.5))
        # n <= 127 keeps 2^n finite; near the overflow threshold r then reaches ln 2
        n = self.add(arith.MinimumfOp(self.add(math.FloorOp(scaled)), self.const(127.0)))
        r = self.sub(self.sub(x, self.mul(n, self.const(LN2_HI))), self.mul(n, self.const(LN2_LO)))
        poly = self.const(TAYLOR[-1])
        for coefficient in reversed(TAYLOR[:-1]):
            poly = self.addf(self.mul(poly, r), self.const(coefficient))
        # p(r) - 1 = r + r^2 * poly(r)
        q = self.addf(r, self.mul(self.mul(r, r), poly))
        exponent = self.add(arith.AddiOp(self.add(arith.FPToSIOp(n, i32)), self.iconst(127)))
        bits = self.add(arith.ShLIOp(exponent, self.iconst(23)))
        return self.add(arith.BitcastOp(bits, f32)), q

    def exp(self, x: SSAValue) -> SSAValue:
        clamped = self.add(
            arith.MinimumfOp(
                self.add(arith.MaximumfOp(x, self.const(EXP_UNDERFLOW))), self.const(EXP_OVERFLOW)
            )
        )
        scale, q = self.expm1_parts(clamped)
        value = self.mul(scale, self.addf(q, self.const(1.0)))
        value = self.select(self.cmp("ogt", x, self.const(EXP_OVERFLOW)), self.const(pymath.inf), value)
        value = self.select(self.cmp("olt", x, self.const(EXP_UNDERFLOW)), self.const(0.0), value)
        return self.select(self.cmp("uno", x, x), x, value)

    def tanh(self, x: SSAValue) -> SSAValue:
        magnitude = self.add(math.AbsFOp(x))
        capped = self.add(arith.MinimumfOp(magnitude, self.const(TANH_SATURATION)))
        scale, q = self.expm1_parts(self.addf(capped, capped))
        # expm1 = 2^n q + (2^n - 1): exact for n = 0, one rounding otherwise
        e = self.addf(self.mul(scale, q), self.sub(scale, self.const(1.0)))
        t = self.add(arith.DivfOp(e, self.addf(e, self.const(2.0))))
        negative = self.cmp("olt", x, self.const(0.0))
        return self.select(negative, self.add(arith.NegfOp(t)), t)


def expand(op: Operation, constants: dict[tuple[str, float], SSAValue] | None = None) -> bool:
    """Replace `op` (math.exp or math.tanh on f32) by its expansion, its constants taken
    from (and added to) `constants`; False if it is not one."""
    if not isinstance(op, math.ExpOp | math.TanhOp) or op.results[0].type != f32:
        return False
    builder = _Builder(op, {} if constants is None else constants)
    (operand,) = op.operands
    value = builder.exp(operand) if isinstance(op, math.ExpOp) else builder.tanh(operand)
    op.results[0].replace_all_uses_with(value)
    Rewriter.erase_op(op)
    return True


class ExpandMathPass(ModulePass):
    """f32 `math.exp` and `math.tanh` as arithmetic that vectorizes."""

    name = "expand-math"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.walk() if isinstance(f, func.FuncOp) and f.body.blocks]:
            constants: dict[tuple[str, float], SSAValue] = {}
            for candidate in [o for o in function.walk() if isinstance(o, math.ExpOp | math.TanhOp)]:
                expand(candidate, constants)
