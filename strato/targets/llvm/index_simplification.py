"""Index divisions that are affine: `(c * q + r) / c` is `q` and `(c * q + r) % c` is `r`
when `0 <= r < c` for every value the loop variables take.

Blocked layouts (`transform_layout` with `j // 32, j % 32`) index a buffer by the
quotient and remainder of a loop expression; when the expression is `32 * j.outer +
j.inner` with `j.inner < 32`, they are `j.outer` and `j.inner`. Seen as divisions, such
an index is opaque: vector code generation would load lane by lane, and tensorize would
refuse the operand. `affine_index` sees through them, and `simplify_index_divisions`
rewrites them as the affine arithmetic they are.

    %j = arith.addi %jo32, %ji : index          (%jo32 = 32 * %jo, 0 <= %ji < 32)
    %q = arith.divui %j, %c32 : index     ->    %q is %jo
    %r = arith.remui %j, %c32 : index     ->    %r is %ji
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Operation, SSAValue

from strato.schedule.access import Affine, is_loop_variable, loop_range

Ranges = Callable[[SSAValue], "tuple[int, int] | None"]

_DIVISIONS = (arith.DivUIOp, arith.DivSIOp, arith.FloorDivSIOp)
_REMAINDERS = (arith.RemUIOp, arith.RemSIOp)


def _loop_variable_range(value: SSAValue) -> tuple[int, int] | None:
    if is_loop_variable(value):
        loop = value.owner.parent_op()  # type: ignore[union-attr]
        return loop_range(loop)  # type: ignore[arg-type]
    return None


def _constant(value: SSAValue) -> int | None:
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def affine_index(
    value: SSAValue,
    is_variable: Callable[[SSAValue], bool] = is_loop_variable,
    ranges: Ranges = _loop_variable_range,
) -> Affine | None:
    """`value` as an affine function of the variables `is_variable` accepts, seeing
    through divisions and remainders by a constant that the ranges of the variables
    make exact (see the module docstring); None when it is not one."""
    if is_variable(value):
        return Affine.variable(value)
    constant = _constant(value)
    if constant is not None:
        return Affine.const(constant)
    op = value.owner
    if isinstance(op, arith.IndexCastOp):
        return affine_index(op.input, is_variable, ranges)
    if not isinstance(op, (arith.AddiOp, arith.SubiOp, arith.MuliOp, *_DIVISIONS, *_REMAINDERS)):
        return None
    lhs = affine_index(op.lhs, is_variable, ranges)
    rhs = affine_index(op.rhs, is_variable, ranges)
    if lhs is None or rhs is None:
        return None
    if isinstance(op, arith.AddiOp):
        return lhs + rhs
    if isinstance(op, arith.SubiOp):
        return lhs - rhs
    if isinstance(op, arith.MuliOp):
        if not lhs.terms:
            return rhs.scale(lhs.constant)
        if not rhs.terms:
            return lhs.scale(rhs.constant)
        return None
    if rhs.terms or rhs.constant <= 0:
        return None
    parts = _quotient_and_remainder(lhs, rhs.constant, ranges)
    if parts is None:
        return None
    quotient, remainder = parts
    return quotient if isinstance(op, _DIVISIONS) else remainder


def _quotient_and_remainder(
    x: Affine, divisor: int, ranges: Ranges
) -> tuple[Affine, Affine] | None:
    """(q, r) with x = divisor * q + r and 0 <= r < divisor for all variable values
    (and x >= 0, so truncating and flooring divisions agree), or None."""
    whole = tuple((v, c // divisor) for v, c in x.terms if c % divisor == 0)
    rest = tuple((v, c) for v, c in x.terms if c % divisor != 0)
    remainder = Affine(rest, x.constant % divisor)
    quotient = Affine(whole, x.constant // divisor)
    remainder_bounds = remainder.bounds(ranges)
    total_bounds = x.bounds(ranges)
    if remainder_bounds is None or total_bounds is None:
        return None
    if remainder_bounds[0] < 0 or remainder_bounds[1] >= divisor or total_bounds[0] < 0:
        return None
    return quotient, remainder


def _materialize(affine: Affine, before: Operation) -> SSAValue:
    """Index arithmetic computing `affine`, inserted before `before`."""
    block = before.parent_block()
    assert block is not None

    def emit(op: Operation) -> SSAValue:
        block.insert_op_before(op, before)
        return op.results[0]

    def constant(value: int) -> SSAValue:
        return emit(arith.ConstantOp.from_int_and_width(value, IndexType()))

    total: SSAValue | None = None
    for variable, coefficient in affine.terms:
        term = variable
        if coefficient != 1:
            term = emit(arith.MuliOp(variable, constant(coefficient)))
        total = term if total is None else emit(arith.AddiOp(total, term))
    if total is None:
        return constant(affine.constant)
    if affine.constant != 0:
        total = emit(arith.AddiOp(total, constant(affine.constant)))
    return total


def simplify_index_divisions(root: Operation) -> None:
    """Rewrite every index division and remainder under `root` that is exact over the
    loop ranges as affine arithmetic (see the module docstring)."""
    for op in list(root.walk()):
        if not isinstance(op, (*_DIVISIONS, *_REMAINDERS)):
            continue
        if not isinstance(op.results[0].type, IndexType):
            continue
        affine = affine_index(op.results[0])
        if affine is None:
            continue
        op.results[0].replace_all_uses_with(_materialize(affine, op))
        op.detach()
        op.erase()
