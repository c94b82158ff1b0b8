"""The llvm-dialect instruction or intrinsic of each arith and math op that is exactly one,
in one place: the scalar lowering patterns (`arith_to_llvm`, `math_to_llvm`) and the
vectorizer (`vectorize_loops`) read the same tables, so a scalar op and its vector form
always agree.

    INT_BINARY[arith.AddiOp]          # llvm.AddOp
    FLOAT_INTRINSICS[math.SqrtOp]     # "llvm.sqrt" (suffixed by type: llvm.sqrt.f32, .v16f32)
"""

from __future__ import annotations

from xdsl.dialects import arith, llvm, math
from xdsl.ir import Operation

INT_BINARY: dict[type[Operation], type[Operation]] = {
    arith.AddiOp: llvm.AddOp,
    arith.SubiOp: llvm.SubOp,
    arith.MuliOp: llvm.MulOp,
    arith.AndIOp: llvm.AndOp,
    arith.OrIOp: llvm.OrOp,
    arith.XOrIOp: llvm.XOrOp,
    arith.ShLIOp: llvm.ShlOp,
    arith.ShRSIOp: llvm.AShrOp,
    arith.ShRUIOp: llvm.LShrOp,
}
"""Integer ops that are one llvm instruction."""

FLOAT_BINARY: dict[type[Operation], type[Operation]] = {
    arith.AddfOp: llvm.FAddOp,
    arith.SubfOp: llvm.FSubOp,
    arith.MulfOp: llvm.FMulOp,
    arith.DivfOp: llvm.FDivOp,
}
"""Float ops that are one llvm instruction (they keep their fast-math flags)."""

FLOAT_MIN_MAX: dict[type[Operation], str] = {
    # NaN-propagating maximum and minimum, as arith.maximumf and minimumf require
    arith.MaximumfOp: "llvm.maximum",
    arith.MinimumfOp: "llvm.minimum",
    # IEEE maxNum and minNum: a NaN operand yields the other operand
    arith.MaxnumfOp: "llvm.maxnum",
    arith.MinnumfOp: "llvm.minnum",
}
"""arith's float minimum and maximum: LLVM intrinsics of two operands."""

MATH_INTRINSICS: dict[type[Operation], str] = {
    math.AbsFOp: "llvm.fabs",
    math.ExpOp: "llvm.exp",
    math.Exp2Op: "llvm.exp2",
    math.LogOp: "llvm.log",
    math.Log2Op: "llvm.log2",
    math.Log10Op: "llvm.log10",
    math.SqrtOp: "llvm.sqrt",
    math.SinOp: "llvm.sin",
    math.CosOp: "llvm.cos",
    math.TanOp: "llvm.tan",
    math.TanhOp: "llvm.tanh",
    math.SinhOp: "llvm.sinh",
    math.CoshOp: "llvm.cosh",
    math.AsinOp: "llvm.asin",
    math.AcosOp: "llvm.acos",
    math.AtanOp: "llvm.atan",
    math.Atan2Op: "llvm.atan2",
    math.CeilOp: "llvm.ceil",
    math.FloorOp: "llvm.floor",
    math.TruncOp: "llvm.trunc",
    math.RoundOp: "llvm.round",
    math.RoundEvenOp: "llvm.roundeven",
    math.PowFOp: "llvm.pow",
    math.CopySignOp: "llvm.copysign",
    math.FmaOp: "llvm.fma",
}
"""Float math ops that are an LLVM intrinsic overloaded on their operand type (the
backend turns those without an instruction into libm calls). exp and tanh of f32 are
inline arithmetic instead (`vector_math`); the intrinsic serves the other types."""

FLOAT_INTRINSICS: dict[type[Operation], str] = {**FLOAT_MIN_MAX, **MATH_INTRINSICS}
"""Every float op that is one LLVM intrinsic."""

INT_INTRINSICS: dict[type[Operation], str] = {
    math.CtPopOp: "llvm.ctpop",
}
"""Integer math ops that are an LLVM intrinsic of their one operand."""

CMPI_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
"""arith.cmpi's predicates in the order of its enumeration (llvm.icmp's names)."""

CMPF_PREDICATES = (
    "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
    "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
)  # fmt: skip
"""arith.cmpf's predicates in the order of its enumeration (llvm.fcmp's names)."""

__all__ = [
    "CMPF_PREDICATES",
    "CMPI_PREDICATES",
    "FLOAT_BINARY",
    "FLOAT_INTRINSICS",
    "FLOAT_MIN_MAX",
    "INT_BINARY",
    "INT_INTRINSICS",
    "MATH_INTRINSICS",
]
