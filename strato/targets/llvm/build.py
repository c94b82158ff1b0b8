"""The llvm target's build: a scheduled loop-level model, or one lowered to the llvm
dialect, to a callable model.

    model = build_loops(module, "main", signature, machine=machine, public_name="mlp")
    model = build_llvm(llvm_module, "main", signature, machine=machine, public_name="mlp")
    (logits,) = model(x)

`build_loops` is the compile path: each distinct kernel is lowered and compiled to an
object of its own, in parallel and through the compile cache (`kernel_objects`), and
only the entry (allocations and kernel calls) is lowered here; `build_llvm` takes a
whole module already lowered by convert-loops-to-llvm (the reference path, and what
tests and tools build). Either way the entry becomes `<public_name>_run` returning a
status and the other functions internal (`entry_abi`); constants of at least
`weight_threshold` bytes leave the IR for the model's weight blob (`weights`); LLVM
optimizes and MCJIT compiles the module for the target's machine (`jit`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import func, llvm, memref
from xdsl.dialects.builtin import (
    IntegerAttr,
    MemRefType,
    ModuleOp,
    SymbolRefAttr,
    UnitAttr,
)

from strato.diagnostics import StratoError
from strato.dialects.graph.dims import SizeBound
from strato.runtime.limits import MAX_BUFFER_BYTES, check_buffer_sizes
from strato.runtime.signature import Signature
from strato.targets.llvm.entry_abi import (
    ALLOCATORS,
    STATUS_OK,
    finalize_entry,
    raise_for_status,
)
from strato.targets.llvm.model import CompiledObject, LLVMCompiledModel
from strato.targets.llvm.parallel_outlining import TASK_CALLABLE_ATTR
from strato.targets.llvm.weights import WEIGHT_BLOB_THRESHOLD
from strato.targets.registry import BuildOptions

if TYPE_CHECKING:
    from strato.schedule.templates.base import ScheduleContext
    from strato.targets.llvm.host import HostTarget
    from strato.targets.llvm.jit import JitFunction
    from strato.targets.llvm.kernel_objects import KernelObject


def check_heap_size(module: ModuleOp) -> None:
    """Refuse a module whose heap allocations could never all succeed: an llvm-dialect
    module (its malloc and aligned_alloc calls) or a loop-level one (its allocations
    that convert-loops-to-llvm places on the heap)."""
    from strato.targets.llvm.memref_to_llvm import heap_bytes

    total = 0
    for op in module.walk():
        if isinstance(op, memref.AllocOp) and isinstance(op.memref.type, MemRefType):
            total += heap_bytes(op)
            continue
        if not isinstance(op, llvm.CallOp) or op.callee is None:
            continue
        if op.callee.root_reference.data not in ALLOCATORS:
            continue
        size = op.args[-1].owner
        if isinstance(size, llvm.ConstantOp) and isinstance(size.value, IntegerAttr):
            total += size.value.value.data
    _check_heap_total(total)


def _check_heap_total(total: int) -> None:
    if total > MAX_BUFFER_BYTES:
        raise StratoError(
            f"the model's intermediate buffers need {total} bytes, more than a 64-bit "
            f"address space holds ({MAX_BUFFER_BYTES} bytes)"
        )


def build_loops(
    module: ModuleOp,
    entry_name: str,
    signature: Signature,
    *,
    machine: HostTarget | None = None,
    opt_level: int = 3,
    threads: int = 0,
    fast_math: bool = False,
    public_name: str = "model",
    target: str = "llvm",
    weight_threshold: int = WEIGHT_BLOB_THRESHOLD,
    options: BuildOptions = BuildOptions(),
    schedule: ScheduleContext | None = None,
) -> LLVMCompiledModel:
    """Compile a scheduled loop-level module whose function `entry_name` runs the model
    (see `build_llvm` for the rest): each distinct kernel compiled on its own
    (`kernel_objects.compile_kernels`: `options.jobs` processes, the compile cache when
    `options.cache`, `options.progress(done, total)` as kernels are done), then the entry,
    which calls them, lowered and compiled here. The module is consumed.

    With `schedule`, the module's kernels are not scheduled yet: each is scheduled with
    that context where it is compiled (`kernel_objects.schedule_and_compile_kernels`),
    which gives the kernels and the model the schedule-default pass would have given."""
    from strato.runtime.threads import available_cores, threads_or_available
    from strato.targets.llvm.convert_loops_to_llvm import convert_loops_to_llvm
    from strato.targets.llvm.fast_math import add_fast_math_flags
    from strato.targets.llvm.host import host_target
    from strato.targets.llvm.kernel_objects import (
        KernelBuild,
        compile_kernels,
        schedule_and_compile_kernels,
    )
    from strato.targets.llvm.memref_to_llvm import heap_bytes

    check_buffer_sizes(module)
    if schedule is None:
        check_heap_size(module)
    machine = machine or host_target()
    threads = threads_or_available(threads)
    build = KernelBuild(machine, opt_level, threads, fast_math)
    jobs = options.jobs or available_cores()
    if schedule is None:
        objects = compile_kernels(
            module, build, jobs=jobs, cache=options.cache, progress=options.progress
        )
    else:
        # the entry's allocations, then each scheduled kernel's, as check_heap_size counts
        # them on a scheduled module
        kernels = schedule_and_compile_kernels(
            module, build, schedule, jobs=jobs, cache=options.cache, progress=options.progress
        )
        entry_heap = sum(
            heap_bytes(op)
            for function in module.ops
            if isinstance(function, func.FuncOp) and function.sym_name.data not in kernels
            for op in function.walk()
            if isinstance(op, memref.AllocOp) and isinstance(op.memref.type, MemRefType)
        )
        _check_heap_total(entry_heap + sum(kernel.heap_bytes for kernel in kernels.values()))
        objects = {name: kernel.compiled for name, kernel in kernels.items()}
    call_compiled_kernels(module, objects)
    convert_loops_to_llvm(module, threads)
    if fast_math:
        add_fast_math_flags(module)
    distinct = list({compiled.symbol: compiled for compiled in objects.values()}.values())
    failing = [compiled.symbol for compiled in distinct if compiled.returns_status]
    return _build(
        module, entry_name, signature, machine=machine, opt_level=opt_level,
        public_name=public_name, target=target, weight_threshold=weight_threshold,
        objects=distinct, external_failing=failing,
    )  # fmt: skip


def call_compiled_kernels(module: ModuleOp, objects: dict[str, KernelObject]) -> None:
    """Replace each kernel of `module` named in `objects` by a declaration of its
    compiled symbol, which its calls then call; the globals only kernels read go with
    them."""
    declared: set[str] = set()
    for op in list(module.ops):
        if not isinstance(op, func.FuncOp) or op.sym_name.data not in objects:
            continue
        symbol = objects[op.sym_name.data].symbol
        if symbol not in declared:
            declared.add(symbol)
            declaration = func.FuncOp.external(
                symbol, op.function_type.inputs.data, op.function_type.outputs.data
            )
            if not objects[op.sym_name.data].returns_status:
                declaration.attributes[TASK_CALLABLE_ATTR] = UnitAttr()
            module.body.block.insert_op_before(declaration, op)
        module.body.block.detach_op(op)
        op.erase()
    used: set[str] = set()
    for op in module.walk():
        if isinstance(op, func.CallOp):
            name = op.callee.root_reference.data
            if name in objects:
                op.callee = SymbolRefAttr(objects[name].symbol)
        elif isinstance(op, memref.GetGlobalOp):
            used.add(op.name_.root_reference.data)
    for op in list(module.ops):
        if isinstance(op, memref.GlobalOp) and op.sym_name.data not in used:
            module.body.block.detach_op(op)
            op.erase()


def build_llvm(
    module: ModuleOp,
    entry_name: str,
    signature: Signature,
    *,
    machine: HostTarget | None = None,
    opt_level: int = 3,
    public_name: str = "model",
    target: str = "llvm",
    weight_threshold: int = WEIGHT_BLOB_THRESHOLD,
) -> LLVMCompiledModel:
    """JIT-compile an llvm-dialect module whose function `entry_name` takes pointers to
    the buffers of `signature`: the inputs, then the outputs it fills; for `machine`
    (the host by default), at LLVM's `opt_level`.

    A call that runs out of memory raises `ModelMemoryError`. Constants of at least
    `weight_threshold` bytes become symbols `<public_name>_<global>` of the model's
    weight blob (`strato.targets.llvm.weights`; `LLVMCompiledModel.weights`).
    """
    check_heap_size(module)
    return _build(
        module, entry_name, signature, machine=machine, opt_level=opt_level,
        public_name=public_name, target=target, weight_threshold=weight_threshold,
    )  # fmt: skip


def _build(
    module: ModuleOp,
    entry_name: str,
    signature: Signature,
    *,
    machine: HostTarget | None,
    opt_level: int,
    public_name: str,
    target: str,
    weight_threshold: int,
    objects: Sequence[CompiledObject] = (),
    external_failing: Iterable[str] = (),
) -> LLVMCompiledModel:
    """The entry module finalized, its weights packed, compiled with `objects` (kernels
    it declares, `external_failing` those returning a status) into one JIT module."""
    from strato.targets.llvm.host import runs_here
    from strato.targets.llvm.jit import ForeignModule, JitModule
    from strato.targets.llvm.weights import pack_weights

    entry_symbol = f"{public_name}_run"
    bounds = {limit.name: limit.bound for limit in signature.limits}
    finalize_entry(
        module, entry_name, entry_symbol, external_failing,
        [bounds.get(name, SizeBound()) for name in signature.sizes],
        signature.size_sums,
    )  # fmt: skip
    weights = pack_weights(module, f"{public_name}_", weight_threshold)
    if machine is not None and not runs_here(machine):
        foreign = ForeignModule(
            module, machine=machine, opt_level=opt_level, weights=weights, objects=objects
        )
        return LLVMCompiledModel(
            signature,
            _runs_elsewhere(machine),
            target=target,
            llvm_ir=None if objects else foreign.llvm_ir,
            entry_symbol=entry_symbol,
            machine_code=foreign.machine_code(),
            ir_parts=(foreign.llvm_ir, *(compiled.llvm_ir for compiled in objects)) if objects else (),
        )
    jit = JitModule(module, machine=machine, opt_level=opt_level, weights=weights, objects=objects)
    entry = jit.function(entry_symbol)
    _check_entry_abi(entry, signature)

    sized = len(signature.inputs) + len(signature.outputs)

    def run(buffers: Sequence[np.ndarray]) -> None:
        # the inputs were checked against the signature and the outputs allocated to it
        status = entry.call_unchecked(buffers)
        if status != STATUS_OK:
            raise_for_status(status, entry_symbol, buffers[sized:])  # type: ignore[arg-type]

    ir_parts = (jit.llvm_ir, *(compiled.llvm_ir for compiled in objects))
    return LLVMCompiledModel(
        signature,
        run,
        target=target,
        llvm_ir=None if objects else jit.llvm_ir,
        entry_symbol=entry_symbol,
        machine_code=jit.machine_code(),
        ir_parts=ir_parts if objects else (),
    )


def _runs_elsewhere(machine: HostTarget):
    """The entry of a model compiled for another system: it refuses to run."""
    from strato.targets.llvm.host import host_target

    def refuse(buffers: Sequence[np.ndarray]) -> None:
        raise StratoError(
            f"the model is compiled for {machine.triple} (CPU {machine.cpu}) and does not run "
            f"on this machine ({host_target().triple}): write it with `strato compile -o "
            "model.o` or save_object() and link it into a program for that system"
        )

    return refuse


def _check_entry_abi(entry: JitFunction, signature: Signature) -> None:
    """The lowered entry takes one pointer per input then one per output and returns an
    i32 status; a mismatch is a bug in the lowering, not in the model."""
    count = len(signature.inputs) + len(signature.outputs)
    sizes = len(signature.sizes)
    if entry.param_types != ("ptr",) * count + ("i64",) * sizes or entry.return_type != "i32":
        raise AssertionError(
            f"@{entry.name} has parameters ({', '.join(entry.param_types)}) and returns "
            f"{entry.return_type}; expected {count} buffer pointers (inputs, then outputs), "
            f"{sizes} run-time size(s) and an i32 status"
        )
    if entry.buffers is not None:
        flags = [spec is not None and spec.is_output for spec in entry.buffers[:count]]
        expected = [False] * len(signature.inputs) + [True] * len(signature.outputs)
        if flags != expected:
            raise AssertionError(
                f"@{entry.name} marks outputs at {flags}; expected inputs then outputs"
            )


__all__ = ["build_llvm", "build_loops", "call_compiled_kernels", "check_heap_size"]
