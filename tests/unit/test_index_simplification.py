"""simplify_index_divisions: exact index divisions become affine arithmetic, and a
division that is not exact keeps only the part of its dividend the divisor does not
divide (a stride-2 read of a row laid out in phases: the vector lane leaves the
division)."""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith
from xdsl.parser import Parser

from strato.context import make_context
from strato.interpreters.loop import run_loops
from strato.targets.llvm.index_simplification import simplify_index_divisions

# y[k, m] = x[(2m + k) % 2, (2m + k) / 2]: tap k of a stride-2 row in two phases
PHASES = """
func.func @main(%x: memref<2x8xi32>, %y: memref<3x6xi32> {loop.output}) attributes {loop.kernel} {
  loop.for %k = 0 to 3 axis "k" {
    loop.for %m = 0 to 6 axis "m" {
      %c2 = arith.constant 2 : index
      %a = arith.muli %m, %c2 : index
      %p = arith.addi %a, %k : index
      %r = arith.remui %p, %c2 : index
      %q = arith.divui %p, %c2 : index
      %v = memref.load %x[%r, %q] : memref<2x8xi32>
      memref.store %v, %y[%k, %m] : memref<3x6xi32>
    }
  }
  func.return
}
"""


def _divisions(module) -> list:
    return [op for op in module.walk() if isinstance(op, arith.DivUIOp | arith.RemUIOp)]


def test_the_lane_leaves_a_division_that_is_not_exact():
    module = Parser(make_context(), PHASES).parse_module()
    x = np.arange(16, dtype=np.int32).reshape(2, 8)
    (before,) = run_loops(module, [x])
    simplify_index_divisions(module)
    module.verify()
    divisions = _divisions(module)
    assert len(divisions) == 2
    k = next(op for op in module.walk() if getattr(op, "axis", None) is not None and op.axis.data == "k")
    for op in divisions:
        # what is divided is the tap alone: the column (the lane) is not in it
        assert op.operands[0] is k.body.block.args[0]
    (after,) = run_loops(module, [x])
    np.testing.assert_array_equal(after, before)
    expected = np.array([[x[(2 * m + k) % 2, (2 * m + k) // 2] for m in range(6)] for k in range(3)])
    np.testing.assert_array_equal(after, expected)


def test_a_dividend_that_may_be_negative_is_left_alone():
    shifted = "%k1 = arith.constant 1 : index\n      %km = arith.subi %k, %k1 : index\n      %p = arith.addi %a, %km : index"
    text = PHASES.replace("%p = arith.addi %a, %k : index", shifted)
    text = text.replace("loop.for %m = 0 to 6", "loop.for %m = 1 to 6")
    module = Parser(make_context(), text).parse_module()
    simplify_index_divisions(module)
    assert len(_divisions(module)) == 2
    for op in _divisions(module):
        assert op.operands[0].owner is not None and op.operands[0].name_hint == "p"
