"""Index divisions that are affine: `(c * q + r) / c` is `q` and `(c * q + r) % c` is `r`
when `0 <= r < c` for every value the loop variables take.

Blocked layouts (`transform_layout` with `j // 32, j % 32`) index a buffer by the
quotient and remainder of a loop expression; when the expression is `32 * j.outer +
j.inner` with `j.inner < 32`, they are `j.outer` and `j.inner`. Seen as divisions, such
an index is opaque: vector code generation would load lane by lane. `simplify_index_divisions`
rewrites them as the affine arithmetic they are, as the access analysis sees them
(`strato.schedule.access.affine_of` with the loop ranges).

    %j = arith.addi %jo32, %ji : index          (%jo32 = 32 * %jo, 0 <= %ji < 32)
    %q = arith.divui %j, %c32 : index     ->    %q is %jo
    %r = arith.remui %j, %c32 : index     ->    %r is %ji

A division that is not exact keeps only the part of its dividend that the divisor does
not divide: `(c * q + r) / c` is `q + r / c` and `(c * q + r) % c` is `r % c` when q and
r are not negative (`_split_division`). A stride-2 convolution reading a row laid out in
its two phases (`p % 2, p / 2` of p = 2 * column + tap) then indexes the column affinely
(`column + tap / 2`), and its vector loads are contiguous: only the tap, which no lane
varies, is divided.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Operation, SSAValue

from strato.schedule.access import Affine, affine_of, loop_variable_range
from strato.walk import ops_under

_DIVISIONS = (arith.DivUIOp, arith.DivSIOp, arith.FloorDivSIOp, arith.RemUIOp, arith.RemSIOp)
_REMAINDERS = (arith.RemUIOp, arith.RemSIOp)


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
    for op in ops_under(root):
        if not isinstance(op, _DIVISIONS):
            continue
        if not isinstance(op.results[0].type, IndexType):
            continue
        affine = affine_of(op.results[0], ranges=loop_variable_range)
        if affine is None:
            replacement = _split_division(op)
            if replacement is None:
                continue
        else:
            replacement = _materialize(affine, op)
        op.results[0].replace_all_uses_with(replacement)
        op.detach()
        op.erase()


def _split_division(op: Operation) -> SSAValue | None:
    """`x / c` as `q + r / c` and `x % c` as `r % c`, x = c * q + r with q the terms whose
    coefficients c divides, when q and r are not negative over the loop ranges and q
    has a variable (else None: nothing to take out of the division)."""
    divisor = affine_of(op.operands[1], ranges=loop_variable_range)
    x = affine_of(op.operands[0], ranges=loop_variable_range)
    if x is None or divisor is None or divisor.terms or divisor.constant <= 0:
        return None
    c = divisor.constant
    whole = Affine(tuple((v, k // c) for v, k in x.terms if k % c == 0), 0)
    rest = Affine(tuple((v, k) for v, k in x.terms if k % c != 0), x.constant)
    whole_bounds = whole.bounds(loop_variable_range)
    rest_bounds = rest.bounds(loop_variable_range)
    if not whole.terms or whole_bounds is None or rest_bounds is None:
        return None
    if whole_bounds[0] < 0 or rest_bounds[0] < 0:
        return None
    smaller = type(op)(_materialize(rest, op), op.operands[1])
    op.parent_block().insert_op_before(smaller, op)
    if isinstance(op, _REMAINDERS):
        return smaller.results[0]
    total = arith.AddiOp(_materialize(whole, op), smaller.results[0])
    op.parent_block().insert_op_before(total, op)
    return total.results[0]
