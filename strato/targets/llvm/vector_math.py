"""exp, log, erf and tanh of f32 as inline arithmetic, on scalars or `<W x float>` vectors.

LLVM has no vector form of these functions without a vector math library: it turns
`llvm.exp.v16f32` into sixteen calls of `expf`, and `erff`/`tanhf` are always scalar
calls, so a vectorized loop that uses them runs at the speed of the calls (a GELU over
128 x 1024 elements took ~6 ms of scalar `erff`). Here each function is a fixed sequence
of fma, min/max, division and integer bit operations on the value's own type, which
stays vector code in a vectorized loop and lets LLVM's loop vectorizer take a scalar loop
that uses it. Both the math-to-llvm patterns (f32 scalars) and the vector code of
`vectorize_loops` (`<W x float>`) call `expand`.

    ops, result = expand(math.ErfOp, x)        # x: an f32 or vector<16xf32> llvm value

The approximations (coefficients fitted for these forms by minimax on their intervals,
`benchmarks/vector_math.py --fit`), with their largest error against the float64
function over the whole f32 range, rounding of every step included:

- exp (0.83 ulp): n = round(x / ln 2) through the 1.5 * 2^23 rounding constant,
  r = x - n ln 2 in two fmas (ln 2 split so that n * ln2_hi is exact),
  exp(r) = 1 + r + r^2 P(r) with P of degree 4 on |r| <= ln 2 / 2, then scaled by
  2^(n/2) and 2^(n - n/2) built in the exponent bits: two factors so that results down
  to the smallest subnormal and up to the overflow to inf come out right. x is clamped
  to [-104, 89] first (beyond, exp is 0 or inf anyway). Inside erf and tanh, whose
  arguments to exp are bounded, without the clamp and with one factor.
- erf (1.02 ulp), computed on a = min(|x|, 4) (erf(4) rounds to 1) and signed at the end:
  below 0.875, a c0 + a t P(t) with t = a^2, P of degree 4 and c0 = 2 / sqrt(pi) split in
  two floats; above, 1 - exp(-a^2) R(a) with R = erfc(a) exp(a^2) a rational of degree
  3/3 in a, and exp(-a^2) corrected by the rounding error of a^2 (its fma residual).
- tanh (1.04 ulp), on a = min(|x|, 9.1) (tanh(9.1) rounds to 1) and signed at the end:
  below 0.75, a + a t P(t) with P of degree 5; above, 1 - 2 / (exp(2a) + 1).
- log (0.93 ulp): x = m 2^k with m in [sqrt(1/2), sqrt(2)), k and m from the bits (a
  subnormal scaled by 2^23 first); log(m) = f - s (f - z P(z)) with f = m - 1, s = f /
  (2 + f), z = s^2 and P of degree 2 in z (log(m) = 2 atanh(s)); plus k ln 2 in two
  parts. Its special cases (+-0, +inf, negatives, NaN) are told apart on the bits and
  taken lane by lane (`_Emitter.choose`).

The two branches of erf and tanh are both computed and blended with a weight that is
exactly 0 or 1 (a clamped step, no compare and select). NaN propagates (the clamps are
`llvm.minimum`/`llvm.maximum`, one instruction each against a constant on x86), and
+-inf give the limits of each function.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.dialects import llvm
from xdsl.dialects import math as math_dialect
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    VectorType,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue

from strato.targets.llvm import builders

EXP_POLYNOMIAL = (
    0.4999999403953552,
    0.1666651964187622,
    0.04166830703616142,
    0.008368788287043571,
    0.0013820212334394455,
)
"""exp(r) = 1 + r + r^2 (c2 + c3 r + ...) on |r| <= ln 2 / 2: c2, c3, ..."""

ERF_SMALL = (
    -0.3761257529258728,
    0.11282648891210556,
    -0.026797262951731682,
    0.005039755720645189,
    -0.0006239187205210328,
)
"""erf(a) = a c0 + a t (p1 + p2 t + ...) on a < ERF_SPLIT, t = a^2: p1, p2, ..."""

ERFC_NUMERATOR = (
    1.0011353492736816,
    0.7443360090255737,
    0.24050532281398773,
    -7.365248166024685e-05,
)
ERFC_DENOMINATOR = (1.0, 1.8798099756240845, 1.340917706489563, 0.4237516522407532)
"""erfc(a) exp(a^2) = P(a) / Q(a) on ERF_SPLIT <= a <= ERF_CLAMP (coefficients from a^0)."""

TANH_SMALL = (
    -0.33333316445350647,
    0.1333269476890564,
    -0.053892724215984344,
    0.021452033892273903,
    -0.007657254114747047,
    0.001736935111694038,
)
"""tanh(a) = a + a t (p1 + p2 t + ...) on a < TANH_SPLIT, t = a^2: p1, p2, ..."""

LOG_POLYNOMIAL = (0.6666677594184875, 0.39977574348449707, 0.29870936274528503)
"""log((1 + s) / (1 - s)) = 2 s + s z (c3 + c5 z + c7 z^2) on |s| <= (sqrt 2 - 1) /
(sqrt 2 + 1), z = s^2: c3, c5, c7."""

LOG_CENTER_BITS = 0x3F3504F3
"""The bits of sqrt(1/2) in f32: a positive float's bits minus these, shifted right by
23, are k with its value / 2^k in [sqrt(1/2), sqrt(2))."""
SMALLEST_NORMAL_BITS = 0x00800000
INFINITY_BITS = 0x7F800000
SUBNORMAL_SCALE = 8388608.0
"""2^23: a subnormal times it is normal."""

ERF_SPLIT = 0.875
ERF_CLAMP = 4.0
TANH_SPLIT = 0.75
TANH_CLAMP = 9.1

TWO_OVER_SQRT_PI_HI = 1.128379225730896
TWO_OVER_SQRT_PI_LO = -5.8635382771399236e-08
"""2 / sqrt(pi) = hi + lo, each an f32."""

LN2_HI = 0.693145751953125
"""ln 2 with its 11 low mantissa bits zero: n * LN2_HI is exact for |n| < 2^11."""
LN2_LO = 1.428606765330187e-06
LOG2E = 1.4426950216293335
ROUNDING = 12582912.0
"""1.5 * 2^23: x + ROUNDING rounds x to an integer held in the low mantissa bits."""
ROUNDING_BITS = 0x4B400000
EXP_MIN = -104.0
EXP_MAX = 89.0

STEP_SCALE = 2.0**40
"""(a - split) * STEP_SCALE clamped to [0, 1] is 0 at and below the split, 1 above (the
smallest step of a above a split near 1 is 2^-23)."""


class _Emitter:
    """Builds llvm ops on f32 or `<W x float>` values; constants are splat to the shape."""

    def __init__(self, type_: Attribute):
        self.type = type_
        self.lanes = type_.get_shape()[0] if isinstance(type_, VectorType) else None
        self.int_type: Attribute = VectorType(i32, [self.lanes]) if self.lanes else i32
        self.ops: list[Operation] = []
        self._constants: dict[tuple[Attribute, float], SSAValue] = {}

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def constant(self, value: float, type_: Attribute | None = None) -> SSAValue:
        type_ = type_ or self.type
        key = (type_, value)
        if key not in self._constants:
            if isinstance(type_, VectorType):
                attr = DenseIntOrFPElementsAttr.from_list(type_, [value] * self.lanes)
                op = llvm.ConstantOp.create(result_types=(type_,), properties={"value": attr})
            else:
                op = builders.constant(value, type_)
            self._constants[key] = self.add(op)
        return self._constants[key]

    def int_constant(self, value: int) -> SSAValue:
        return self.constant(value, self.int_type)

    def intrinsic(self, name: str, *args: SSAValue) -> SSAValue:
        suffix = f"v{self.lanes}f32" if self.lanes else "f32"
        return self.add(builders.call_intrinsic(f"{name}.{suffix}", args, self.type))

    def fma(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        return self.intrinsic("llvm.fma", a, b, c)

    def binary(self, op_class: type[Operation], a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(builders.float_binary(op_class, a, b))

    def int_binary(self, op_class: type[Operation], a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(builders.int_binary(op_class, a, b))

    def clamp(self, x: SSAValue, low: float | None, high: float) -> SSAValue:
        """min(max(x, low), high), NaN kept."""
        if low is not None:
            x = self.intrinsic("llvm.maximum", x, self.constant(low))
        return self.intrinsic("llvm.minimum", x, self.constant(high))

    def horner(self, x: SSAValue, coefficients: Sequence[float]) -> SSAValue:
        """c0 + c1 x + c2 x^2 + ..., by fmas from the highest degree."""
        acc = self.constant(coefficients[-1])
        for c in reversed(coefficients[:-1]):
            acc = self.fma(acc, x, self.constant(c))
        return acc

    def blend_at(self, a: SSAValue, split: float, below: SSAValue, above: SSAValue) -> SSAValue:
        """`below` where a <= split, `above` where a > split (a not NaN), exactly."""
        step = self.binary(llvm.FSubOp, a, self.constant(split))
        step = self.binary(llvm.FMulOp, step, self.constant(STEP_SCALE))
        weight = self.clamp(step, 0.0, 1.0)
        rest = self.binary(llvm.FSubOp, self.constant(1.0), weight)
        return self.fma(below, rest, self.binary(llvm.FMulOp, above, weight))

    def choose(self, condition: SSAValue, if_true: SSAValue, if_false: SSAValue) -> SSAValue:
        """`if_true` where `condition` (an integer comparison) holds, else `if_false`
        (f32 or i32 values of the emitter's shape): a select of scalars; of vectors,
        whose select xDSL's llvm.select does not take, the bits of each kept by the
        comparison's lanes widened to masks."""
        if self.lanes is None:
            return self.add(builders.select(condition, if_true, if_false))
        mask = self.add(builders.cast(llvm.SExtOp, condition, self.int_type))
        floats = if_true.type != self.int_type
        if floats:
            if_true, if_false = (self.add(llvm.BitcastOp(v, self.int_type)) for v in (if_true, if_false))
        kept = self.int_binary(llvm.AndOp, if_true, mask)
        others = self.int_binary(llvm.AndOp, if_false, self.int_binary(llvm.XOrOp, mask, self.int_constant(-1)))
        chosen = self.int_binary(llvm.OrOp, kept, others)
        return self.add(llvm.BitcastOp(chosen, self.type)) if floats else chosen

    def signed_like(self, magnitude: SSAValue, x: SSAValue) -> SSAValue:
        return self.intrinsic("llvm.copysign", magnitude, x)


def _exp(e: _Emitter, x: SSAValue, *, within: float | None = None) -> SSAValue:
    """exp(x); when |x| <= `within` (< 87), without the clamp and with one scaling."""
    if within is None:
        x = e.clamp(x, EXP_MIN, EXP_MAX)
    shifted = e.fma(x, e.constant(LOG2E), e.constant(ROUNDING))
    n = e.binary(llvm.FSubOp, shifted, e.constant(ROUNDING))
    r = e.fma(n, e.constant(-LN2_HI), x)
    r = e.fma(n, e.constant(-LN2_LO), r)
    poly = e.horner(r, EXP_POLYNOMIAL)
    poly = e.fma(e.binary(llvm.FMulOp, r, r), poly, r)
    poly = e.binary(llvm.FAddOp, poly, e.constant(1.0))
    # n in [-150, 129] as an integer: two powers of two, each a normal float
    n_int = e.add(llvm.BitcastOp(shifted, e.int_type))
    n_int = e.int_binary(llvm.SubOp, n_int, e.int_constant(ROUNDING_BITS))
    if within is not None:
        powers = [n_int]
    else:
        half = e.int_binary(llvm.AShrOp, n_int, e.int_constant(1))
        powers = [half, e.int_binary(llvm.SubOp, n_int, half)]
    result = poly
    for power in powers:
        biased = e.int_binary(llvm.AddOp, power, e.int_constant(127))
        bits = e.int_binary(llvm.ShlOp, biased, e.int_constant(23))
        scale = e.add(llvm.BitcastOp(bits, e.type))
        result = e.binary(llvm.FMulOp, result, scale)
    return result


def _erf(e: _Emitter, x: SSAValue) -> SSAValue:
    a = e.clamp(e.intrinsic("llvm.fabs", x), None, ERF_CLAMP)
    t = e.binary(llvm.FMulOp, a, a)
    # a c0 + a t P(t), c0 in two parts so that its rounding does not show
    tail = e.binary(llvm.FMulOp, e.binary(llvm.FMulOp, a, t), e.horner(t, ERF_SMALL))
    small = e.fma(a, e.constant(TWO_OVER_SQRT_PI_LO), tail)
    small = e.fma(a, e.constant(TWO_OVER_SQRT_PI_HI), small)
    # 1 - exp(-a^2) R(a); exp(-a^2 - d) ~ exp(-a^2) (1 - d) for the rounding error d of t
    t_error = e.fma(a, a, e.add(builders.fneg(t)))
    decay = _exp(e, e.add(builders.fneg(t)), within=ERF_CLAMP**2)
    decay = e.fma(e.add(builders.fneg(decay)), t_error, decay)
    ratio = e.binary(
        llvm.FDivOp, e.horner(a, ERFC_NUMERATOR), e.horner(a, ERFC_DENOMINATOR)
    )
    large = e.binary(llvm.FSubOp, e.constant(1.0), e.binary(llvm.FMulOp, decay, ratio))
    return e.signed_like(e.blend_at(a, ERF_SPLIT, small, large), x)


def _tanh(e: _Emitter, x: SSAValue) -> SSAValue:
    a = e.clamp(e.intrinsic("llvm.fabs", x), None, TANH_CLAMP)
    t = e.binary(llvm.FMulOp, a, a)
    small = e.fma(e.binary(llvm.FMulOp, a, t), e.horner(t, TANH_SMALL), a)
    grown = _exp(e, e.binary(llvm.FAddOp, a, a), within=2 * TANH_CLAMP)
    fraction = e.binary(
        llvm.FDivOp, e.constant(2.0), e.binary(llvm.FAddOp, grown, e.constant(1.0))
    )
    large = e.binary(llvm.FSubOp, e.constant(1.0), fraction)
    return e.signed_like(e.blend_at(a, TANH_SPLIT, small, large), x)


def _log(e: _Emitter, x: SSAValue) -> SSAValue:
    """log(x) = k ln 2 + log(m), x = m 2^k with m in [sqrt(1/2), sqrt(2)) read from the
    bits (a subnormal x scaled by 2^23 first), and log(m) = log(1 + f), f = m - 1 exact,
    as f - s (f - z P(z)), s = f / (2 + f), z = s^2: the polynomial's rounding and s's
    only touch a correction a sixth of f at most. +-0 gives -inf, +inf itself, a
    negative x or NaN NaN (the cases told apart by integer comparisons of the bits,
    and taken by `choose`)."""
    x_bits = e.add(llvm.BitcastOp(x, e.int_type))
    tiny = e.add(builders.icmp("slt", x_bits, e.int_constant(SMALLEST_NORMAL_BITS)))
    scaled = e.choose(tiny, e.binary(llvm.FMulOp, x, e.constant(SUBNORMAL_SCALE)), x)
    bits = e.add(llvm.BitcastOp(scaled, e.int_type))
    centered = e.int_binary(llvm.SubOp, bits, e.int_constant(LOG_CENTER_BITS))
    k = e.int_binary(llvm.AShrOp, centered, e.int_constant(23))
    m_bits = e.int_binary(llvm.SubOp, bits, e.int_binary(llvm.ShlOp, k, e.int_constant(23)))
    m = e.add(llvm.BitcastOp(m_bits, e.type))
    k = e.choose(tiny, e.int_binary(llvm.SubOp, k, e.int_constant(23)), k)
    f = e.binary(llvm.FSubOp, m, e.constant(1.0))
    s = e.binary(llvm.FDivOp, f, e.binary(llvm.FAddOp, f, e.constant(2.0)))
    z = e.binary(llvm.FMulOp, s, s)
    tail = e.binary(llvm.FMulOp, z, e.horner(z, LOG_POLYNOMIAL))
    log_m = e.fma(e.add(builders.fneg(s)), e.binary(llvm.FSubOp, f, tail), f)
    n = e.add(builders.cast(llvm.SIToFPOp, k, e.type))
    result = e.fma(n, e.constant(LN2_HI), e.fma(n, e.constant(LN2_LO), log_m))
    infinity = e.int_constant(INFINITY_BITS)
    is_inf = e.add(builders.icmp("eq", x_bits, infinity))
    result = e.choose(is_inf, e.constant(math.inf), result)
    # +0 to +inf are the bit patterns up to inf's as unsigned; NaN and negatives above
    valid = e.add(builders.icmp("ule", x_bits, infinity))
    result = e.choose(valid, result, e.constant(math.nan))
    magnitude = e.int_binary(llvm.AndOp, x_bits, e.int_constant(0x7FFFFFFF))
    is_zero = e.add(builders.icmp("eq", magnitude, e.int_constant(0)))
    return e.choose(is_zero, e.constant(-math.inf), result)


_EXPANSIONS: dict[type[Operation], Callable[[_Emitter, SSAValue], SSAValue]] = {
    math_dialect.ExpOp: _exp,
    math_dialect.LogOp: _log,
    math_dialect.ErfOp: _erf,
    math_dialect.TanhOp: _tanh,
}


def expands(op_type: type[Operation], type_: Attribute) -> bool:
    """Whether `expand` computes ops of `op_type` on values of `type_` (f32 or a
    vector of f32)."""
    element = type_.element_type if isinstance(type_, VectorType) else type_
    if isinstance(type_, VectorType) and type_.get_num_dims() != 1:
        return False
    return op_type in _EXPANSIONS and isinstance(element, Float32Type)


def expand(op_type: type[Operation], value: SSAValue) -> tuple[list[Operation], SSAValue]:
    """The llvm ops computing the `math` op `op_type` of `value` (an llvm-level f32 or
    `<W x float>` value) and their result; `expands` must hold."""
    assert expands(op_type, value.type), f"no expansion of {op_type.name} on {value.type}"
    emitter = _Emitter(value.type)
    result = _EXPANSIONS[op_type](emitter, value)
    return emitter.ops, result


__all__ = ["expand", "expands"]
