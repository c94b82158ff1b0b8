"""convert-loops-to-llvm: lower a loop-level module to the llvm dialect.

Requires: functions over memrefs (global or local memory scope) built from `loop.for`,
`memref` (alloc, dealloc, load, store, copy, global, get_global, view, reinterpret_cast),
`arith`, `math`, `scf.for`/`scf.if`, `cf` branches and `func` (the loop-level ABI that
convert-te-to-loops produces). A memref's first size may be known at run time only
(`memref<?x8xf32>`, whose strides are static); a view with other run-time sizes or
strides (`memref.reinterpret_cast` of a flat buffer) is addressed through that buffer
(loop-linearize-views runs first). Anything else, such as a run-time size after the
first that no view gives, or a buffer in a VTA scope, is reported before anything is
rewritten, as an error naming the op and the reason. Leaves illegal: every op outside
the llvm dialect (checked after the pass).

- Memrefs become bare `!llvm.ptr`s; an access is a GEP on the index linearized by the
  static layout (row-major by default). `index` becomes i64. Each pointer argument keeps
  its memref type as the argument attribute `strato.memref_type`; `loop.output` and
  `loop.kernel` are kept.
- Reduction updates (`acc = acc + a * b` through one location) get the `reassoc` and
  `contract` fast-math flags (`strato.targets.llvm.reduction_flags`).
- Outermost `parallel` loops become tasks of the thread pool (`parallel_outlining`:
  a body function, a task taking (ctx, begin, end), a call of `strato_parallel_for`
  with the trip count, computed at run time for a run-time upper bound) when `threads`
  (0, the default: the cores available) is above 1.
- `unrolled` loops inside vectorized ones are fully unrolled, the others are left for
  LLVM to unroll (`unroll_loops`), index divisions that are exact
  over the loop ranges become affine arithmetic (`index_simplification`), then
  `vectorized` loops become `<W x T>` vector code: vector loads/stores where the address moves by one element,
  broadcasts of scalars that do not vary, per-lane accesses for strides and gathers
  (`vectorize_loops`, which says when a loop stays serial); in outlined bodies too.
- The remaining `loop.for`s become header/body/latch CFGs (blocks named after the axis);
  virtual-thread loops and the parallel loops left run serially, and the back edge of
  a non-serial loop carries `strato.loop_kind`.
- Global-scope buffers come from the runtime's workspace; small local ones are one
  `alloca` at the function entry, and a buffer whose first size is a run-time value
  comes from the workspace whatever its scope. `memref.global` constants become internal llvm globals holding
  the same dense bytes. `math` ops become LLVM intrinsics or libm calls, except exp,
  log, erf and tanh of f32: inline arithmetic that vectorizes (`vector_math`).

Before:

    func.func @relu(%a: memref<8xf32>, %o: memref<8xf32> {loop.output}) attributes {loop.kernel} {
      loop.for %i = 0 to 8 axis "i" {
        %v = memref.load %a[%i] : memref<8xf32>
        %z = arith.constant 0.0 : f32
        %m = arith.maximumf %v, %z : f32
        memref.store %m, %o[%i] : memref<8xf32>
      }
      func.return
    }

After:

    llvm.func @relu(%a: !llvm.ptr {strato.memref_type = memref<8xf32>},
                    %o: !llvm.ptr {loop.output, strato.memref_type = memref<8xf32>})
                    attributes {loop.kernel} {
      %0 = llvm.mlir.constant(0) : i64
      llvm.br ^i_header(%0 : i64)
    ^i_header(%i: i64):
      %1 = llvm.mlir.constant(8) : i64
      %2 = llvm.icmp "slt" %i, %1 : i64
      llvm.cond_br %2, ^i_body, ^i_exit
    ^i_body:
      %addr = llvm.getelementptr inbounds %a[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %v = llvm.load %addr : !llvm.ptr -> f32
      %z = llvm.mlir.constant(0.000000e+00 : f32) : f32
      %m = llvm.call_intrinsic "llvm.maximum.f32"(%v, %z) : (f32, f32) -> f32
      %addr_1 = llvm.getelementptr inbounds %o[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      llvm.store %m, %addr_1 : f32, !llvm.ptr
      %3 = llvm.mlir.constant(1) : i64
      %4 = llvm.add %i, %3 overflow<nsw> : i64
      llvm.br ^i_header(%4 : i64)
    ^i_exit:
      llvm.return
    }

The patterns (one per source op, collected by `loops_to_llvm_patterns()`) live in
`strato.targets.llvm`; they bridge converted and unconverted values with
`builtin.unrealized_conversion_cast`, which are reconciled at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import ModuleOp, UnrealizedConversionCastOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter

from strato.diagnostics import StratoError
from strato.dialects.loop import YieldOp
from strato.gc_pause import gc_paused
from strato.legality import check_legal
from strato.runtime.threads import threads_or_available
from strato.targets.llvm.arith_to_llvm import arith_to_llvm_patterns
from strato.targets.llvm.cf_to_llvm import cf_to_llvm_patterns
from strato.targets.llvm.dot_i8 import DotI8Lowering
from strato.targets.llvm.func_to_llvm import func_to_llvm_patterns
from strato.targets.llvm.index_simplification import simplify_index_divisions
from strato.targets.llvm.loop_to_llvm import loop_to_llvm_patterns
from strato.targets.llvm.lowering_pattern import LLVMLoweringPattern, LoweringDispatcher
from strato.targets.llvm.math_to_llvm import math_to_llvm_patterns
from strato.targets.llvm.memref_to_llvm import memref_to_llvm_patterns
from strato.targets.llvm.parallel_outlining import outline_parallel_loops
from strato.targets.llvm.reduction_flags import mark_reductions
from strato.targets.llvm.scf_to_llvm import scf_to_llvm_patterns
from strato.targets.llvm.type_conversion import unsupported, unsupported_type_reason
from strato.targets.llvm.unroll_loops import unroll_loops
from strato.targets.llvm.vectorize_loops import vectorize_loops
from strato.transforms.loop_linearize_views import linearize_views
from strato.walk import ops_under

PASS_NAME = "convert-loops-to-llvm"

_CONSUMED_BY_PARENT: tuple[type[Operation], ...] = (YieldOp, scf.YieldOp, scf.ConditionOp)
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
        DotI8Lowering(),
    ]


def _is_already_legal(op: Operation) -> bool:
    return op.dialect_name() == "llvm" or isinstance(
        op, ModuleOp | UnrealizedConversionCastOp
    )


def check_lowerable(module: ModuleOp, lowered: set[type[Operation]]) -> None:
    """Raise a `StratoError` naming the first op the lowering cannot handle, and why."""
    for op in ops_under(module):
        if op is module:
            continue
        if not (
            type(op) in lowered
            or isinstance(op, _CONSUMED_BY_PARENT)
            or _is_already_legal(op)
        ):
            raise StratoError(f"'{op.name}' is not supported by {PASS_NAME}", op=op)
        types = [*op.operand_types, *op.result_types]
        types += [
            arg.type
            for region in op.regions
            for block in region.blocks
            for arg in block.args
        ]
        if isinstance(op, memref.GlobalOp):
            types.append(op.type)
        if isinstance(op, FuncOp):
            types += [*op.function_type.inputs.data, *op.function_type.outputs.data]
        for type_ in types:
            reason = unsupported_type_reason(type_)
            if reason is not None:
                raise unsupported(op, reason)


def _single_cast_input(op: Operation | object) -> SSAValue | None:
    """The input of a one-to-one unrealized cast, else None. (On the op's operand and
    result tuples: xDSL's named accessors cost more than the rest of this pass.)"""
    if type(op) is UnrealizedConversionCastOp and len(op.results) == 1:
        operands = op._operands
        if len(operands) == 1:
            return operands[0]
    return None


def reconcile_casts(module: ModuleOp) -> None:
    """Remove the unrealized casts the patterns left between converted values: a use of
    a chain of one-to-one casts takes the first value up the chain that already has
    the type it expects, and casts left without uses are erased; a value without a name
    takes that of the casts it replaces. A cast that cannot be reconciled stays (the
    legality check reports it).

    xDSL's `reconcile_unrealized_casts` does the same through the pattern rewriter,
    one depth-first search of the use-def chain per cast; this is one walk over the
    module and one pass over its casts, which matters on models with many kernels.
    """
    casts = [op for op in ops_under(module) if type(op) is UnrealizedConversionCastOp]
    for cast in casts:
        source = _single_cast_input(cast)
        if source is None:
            continue
        result = cast.results[0]
        name = result.name_hint
        while source is not None:
            if source.type == result.type:
                if source.name_hint is None:  # keep a name of the chain, as the rewriter does
                    source.name_hint = name
                result.replace_all_uses_with(source)
                break
            name = name or source.name_hint
            source = _single_cast_input(source.owner)
    # users come after their definitions in the walk: erasing in reverse order frees
    # a cast's uses by casts before it is looked at
    for cast in reversed(casts):
        if any(result.first_use is not None for result in cast.results):
            continue
        source = _single_cast_input(cast)
        if source is not None and source.name_hint is None:
            source.name_hint = cast.results[0].name_hint
        cast.detach()
        cast.erase()


def _inside(op: Operation, module: ModuleOp) -> bool:
    """Whether `op` is still nested in `module` (not erased or dropped with a region)."""
    parent = op.parent_op()
    while parent is not None and parent is not module:
        parent = parent.parent_op()
    return parent is module


def apply_lowerings(module: ModuleOp, dispatcher: LoweringDispatcher) -> None:
    """Lower every op of `module` that has a pattern, in program order, until none is
    left: what `PatternRewriteWalker(dispatcher, apply_recursively=True)` does, without
    pushing every op (created ones too) through its worklist and without its final
    sweep over the whole lowered module to confirm that nothing matches any more."""
    by_type = dispatcher.by_type
    pending = [op for op in ops_under(module) if type(op) in by_type]
    while pending:
        for op in pending:
            if not _inside(op, module):
                continue
            try:
                by_type[type(op)].lower(op, PatternRewriter(op))
            except Exception as err:  # reported on the op, as the walker reports it
                op.emit_error(f"Error while applying pattern: {err}", underlying_error=err)
        pending = [op for op in ops_under(module) if type(op) in by_type]


def convert_loops_to_llvm(module: ModuleOp, threads: int = 0) -> None:
    """Lower `module` from the loop level to the llvm dialect, in place; parallel loops
    run on up to `threads` threads (0: the cores available)."""
    dispatcher = LoweringDispatcher(loops_to_llvm_patterns())
    linearize_views(module)  # accesses through views of run-time shape, to flat buffers
    check_lowerable(module, set(dispatcher.by_type))
    with gc_paused():
        mark_reductions(module)
        # outlined first: its walks over each parallel loop's body are then over the
        # loop-level body, not the 10-30x larger unrolled and vectorized one
        outline_parallel_loops(module, threads_or_available(threads))
        unroll_loops(module)
        simplify_index_divisions(module)
        vectorize_loops(module)
        apply_lowerings(module, dispatcher)
        reconcile_casts(module)
    check_legal(
        module,
        PASS_NAME,
        legal_dialects={"llvm"},
        is_legal=lambda op: isinstance(op, ModuleOp),
    )


@dataclass(frozen=True)
class ConvertLoopsToLLVMPass(ModulePass):
    """Lower the loop level (loop, memref, arith, math, scf, cf, func) to the llvm dialect.

    See the module docstring for what it requires and leaves, and an example."""

    name = "convert-loops-to-llvm"

    threads: int = 0
    """Most threads a parallel loop uses (1: serial; 0: the cores available)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        convert_loops_to_llvm(op, self.threads)
