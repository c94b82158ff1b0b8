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
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Operation, SSAValue

from strato.schedule.access import Affine, affine_of, loop_variable_range

_DIVISIONS = (arith.DivUIOp, arith.DivSIOp, arith.FloorDivSIOp, arith.RemUIOp, arith.RemSIOp)


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
        if not isinstance(op, _DIVISIONS):
            continue
        if not isinstance(op.results[0].type, IndexType):
            continue
        affine = affine_of(op.results[0], ranges=loop_variable_range)
        if affine is None:
            continue
        op.results[0].replace_all_uses_with(_materialize(affine, op))
        op.detach()
        op.erase()
