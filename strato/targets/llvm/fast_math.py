"""`-fast-math`: every float operation of an llvm-dialect module may assume no NaN or
infinity, ignore the sign of zero, use reciprocals and approximate functions.

    add_fast_math_flags(module)       # each float op gets FAST_MATH_FLAGS (kept flags stay)
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp, VectorType

from strato.targets.llvm.type_conversion import is_float_type
from strato.walk import ops_under

FAST_MATH_FLAGS = ("nnan", "ninf", "nsz", "arcp", "afn")
"""What `-fast-math` adds to every float operation (reductions already carry
`reassoc` and `contract`)."""


def _is_float(type_) -> bool:
    if isinstance(type_, VectorType):
        type_ = type_.element_type
    return is_float_type(type_)


def add_fast_math_flags(module: ModuleOp) -> None:
    """Give every float operation of an llvm-dialect module `FAST_MATH_FLAGS`, keeping
    the flags it has (calls only when they return floats: LLVM allows no flags on
    other calls)."""
    for op in ops_under(module):
        if isinstance(op, llvm.CallOp | llvm.CallIntrinsicOp):
            results = op.results
            if len(results) != 1 or not _is_float(results[0].type):
                continue
        elif not isinstance(op, llvm.AbstractFloatArithOp | llvm.FNegOp):
            continue
        current = op.properties.get("fastmathFlags")
        flags = {flag.value for flag in current.data} if isinstance(current, llvm.FastMathAttr) else set()
        flags.discard("none")
        merged = sorted(flags | set(FAST_MATH_FLAGS))
        op.properties["fastmathFlags"] = llvm.FastMathAttr(
            [llvm.FastMathFlag(flag) for flag in merged]
        )


__all__ = ["FAST_MATH_FLAGS", "add_fast_math_flags"]
