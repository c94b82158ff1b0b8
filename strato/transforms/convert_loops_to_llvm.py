"""convert-loops-to-llvm: lower a loop-level module to the llvm dialect.

Requires: functions over static-shaped memrefs built from `loop.for`, `memref`,
`arith`, `math`, `scf.for`/`scf.if`, `cf` branches and `func` (the output of
convert-te-to-loops and the loop passes). Buffers may live in global or local memory,
never in a VTA scope.

Leaves: only `llvm.*` ops inside the module. Memrefs become bare pointers (row-major,
accesses are GEPs on the linearized index) and `index` becomes i64; every loop kind is
generated as a serial loop for now. Any other op, a dynamic shape or a VTA buffer is
reported as an error naming the op.

    func.func @relu(%a: memref<8xf32>, %o: memref<8xf32> {loop.output}) {
      loop.for %i = 0 to 8 {
        %v = memref.load %a[%i] : memref<8xf32>
        %z = arith.constant 0.0 : f32
        %m = arith.maximumf %v, %z : f32
        memref.store %m, %o[%i] : memref<8xf32>
      }
      func.return
    }
->
    llvm.func @relu(%a: !llvm.ptr {...}, %o: !llvm.ptr {loop.output, ...}) {
      %lb = llvm.mlir.constant(0 : i64) : i64
      llvm.br ^loop_header(%lb : i64)
    ^loop_header(%i: i64):
      ...
      llvm.cond_br %c, ^loop_body, ^loop_exit
    ^loop_body:
      %p = llvm.getelementptr inbounds %a[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %v = llvm.load %p : !llvm.ptr -> f32
      %m = llvm.call_intrinsic "llvm.maximum.f32"(%v, %z) : (f32, f32) -> f32
      ...
      llvm.br ^loop_header(%next : i64)
    ^loop_exit:
      llvm.return
    }
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import ModuleOp, UnrealizedConversionCastOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriteWalker
from xdsl.transforms.reconcile_unrealized_casts import reconcile_unrealized_casts

from strato.diagnostics import StratoError
from strato.dialects.loop import YieldOp
from strato.legality import check_legal
from strato.targets.llvm.arith_to_llvm import arith_to_llvm_patterns
from strato.targets.llvm.cf_to_llvm import cf_to_llvm_patterns
from strato.targets.llvm.func_to_llvm import func_to_llvm_patterns
from strato.targets.llvm.loop_to_llvm import loop_to_llvm_patterns
from strato.targets.llvm.lowering_pattern import LLVMLoweringPattern, LoweringDispatcher
from strato.targets.llvm.math_to_llvm import math_to_llvm_patterns
from strato.targets.llvm.memref_to_llvm import memref_to_llvm_patterns
from strato.targets.llvm.scf_to_llvm import scf_to_llvm_patterns
from strato.targets.llvm.type_conversion import unsupported, unsupported_type_reason

PASS_NAME = "convert-loops-to-llvm"

_CONSUMED_BY_PARENT: tuple[type[Operation], ...] = (YieldOp, scf.YieldOp)
"""Terminators that disappear with the op that holds them."""


def loops_to_llvm_patterns() -> list[LLVMLoweringPattern]:
    """Every pattern of the lowering, for reuse by other passes."""
    return [
        *loop_to_llvm_patterns(),
        *scf_to_llvm_patterns(),
        *cf_to_llvm_patterns(),
        *func_to_llvm_patterns(),
        *memref_to_llvm_patterns(),
        *arith_to_llvm_patterns(),
        *math_to_llvm_patterns(),
    ]  # type: ignore[list-item]


def _is_already_legal(op: Operation) -> bool:
    return op.dialect_name() == "llvm" or isinstance(op, ModuleOp | UnrealizedConversionCastOp)


def check_lowerable(module: ModuleOp, lowered: set[type[Operation]]) -> None:
    """Raise a `StratoError` naming the first op the lowering cannot handle, and why."""
    for op in module.walk():
        if op is module:
            continue
        if not (type(op) in lowered or isinstance(op, _CONSUMED_BY_PARENT) or _is_already_legal(op)):
            raise StratoError(f"'{op.name}' is not supported by {PASS_NAME}", op=op)
        types = [*op.operand_types, *op.result_types]
        types += [arg.type for region in op.regions for block in region.blocks for arg in block.args]
        if isinstance(op, memref.GlobalOp):
            types.append(op.type)
        if isinstance(op, FuncOp):
            types += [*op.function_type.inputs.data, *op.function_type.outputs.data]
        for type_ in types:
            reason = unsupported_type_reason(type_)
            if reason is not None:
                raise unsupported(op, reason)


def convert_loops_to_llvm(module: ModuleOp) -> None:
    """Lower `module` from the loop level to the llvm dialect, in place."""
    dispatcher = LoweringDispatcher(loops_to_llvm_patterns())
    check_lowerable(module, set(dispatcher.by_type))
    PatternRewriteWalker(dispatcher, apply_recursively=True).rewrite_module(module)
    reconcile_unrealized_casts(module, warn_on_failure=False)
    check_legal(module, PASS_NAME, legal_dialects={"llvm"}, is_legal=lambda op: isinstance(op, ModuleOp))


@dataclass(frozen=True)
class ConvertLoopsToLLVMPass(ModulePass):
    """Lower the loop level (loop, memref, arith, math, scf, cf, func) to the llvm dialect."""

    name = "convert-loops-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        convert_loops_to_llvm(op)
