"""Each kernel of a model compiled to an object file of its own: in parallel, and once
for all models through a persistent cache.

After scheduling, a model's kernels are independent: each is lowered to the llvm
dialect, emitted as LLVM IR, optimized and compiled on its own (`compile_unit`), in as
many processes as there are cores (forked, so they share the parent's IR), and the
entry's object calls them (`strato.targets.llvm.build.build_loops` links them in one
MCJIT engine). Lowering, emission and LLVM are four fifths of a compile; on two cores
they take about half the time, and a kernel compiled before (in this model, another
model or an earlier process) is not compiled again.

A kernel's unit is the kernel alone in a module, with the globals and functions it
refers to. Its key is a digest of the unit's structure (the kernel's own name and the
names of values aside: `strato.schedule.workload.kernel_digest`), of what else shapes its code (the
`KernelBuild`: machine, optimization level, threads, fast-math) and of the versions of
strato's source and of LLVM (`strato.runtime.cache.source_fingerprint`). The kernel's
symbol is named after the key, `strato_k<16 hex digits>`, so the object of a kernel is
the same in every model and in every process, whichever process compiled it:

    build = KernelBuild(machine, opt_level=3, threads=2, fast_math=False)
    objects = compile_kernels(module, build, jobs=2, cache=True)   # kernel name -> KernelObject
    objects["blocked_conv_relu_3"].symbol                           # "strato_k5b1e..."

The compiled kernels are in the compile cache's directory (`strato.runtime.cache`,
same size limit, least recently used first); a damaged entry is compiled again. A caller
that compiles many versions of a program in one process (the equivalence checker's
compiled evaluator, `strato.testing.equivalence.LoopCompiler`) keeps its kernels in a
memo of its own too (`compile_kernels(..., memo=)`).
"""

from __future__ import annotations

import gc
import hashlib
import io
import json
import multiprocessing
import os
import time
import zipfile
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp, StringAttr, SymbolRefAttr

from strato.dialects.loop import KERNEL_ATTR
from strato.gc_pause import gc_paused
from strato.schedule.workload import kernel_digest
from strato.targets.llvm.host import HostTarget
from strato.walk import ops_under

if TYPE_CHECKING:
    from strato.schedule.templates.base import ScheduleContext

KERNEL_FORMAT = "strato-kernel"
KERNEL_FORMAT_VERSION = 1

SYMBOL_PREFIX = "strato_k"


@dataclass(frozen=True)
class KernelBuild:
    """What shapes a kernel's code besides the kernel itself."""

    machine: HostTarget
    opt_level: int
    threads: int
    fast_math: bool

    def describe(self) -> str:
        machine = self.machine
        return (
            f"{machine.triple} {machine.cpu} {machine.features} O{self.opt_level} "
            f"threads={self.threads} fast-math={self.fast_math}"
        )


@dataclass(frozen=True)
class KernelObject:
    """A kernel compiled on its own: the object file defining `symbol` (its outlined
    parallel functions internal to it), what the object needs from the process that
    loads it, whether the kernel returns a status (it allocates on the heap:
    `entry_abi.finalize_kernel`) and its LLVM IR before optimization."""

    symbol: str
    object_code: bytes
    imports: tuple[str, ...]
    returns_status: bool
    llvm_ir: str

    def to_bytes(self) -> bytes:
        """A zip archive of the object, its IR and a manifest (the cache's entry)."""
        manifest = {
            "format": KERNEL_FORMAT,
            "format_version": KERNEL_FORMAT_VERSION,
            "symbol": self.symbol,
            "imports": list(self.imports),
            "returns_status": self.returns_status,
        }
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
            archive.writestr("manifest.json", json.dumps(manifest, sort_keys=True))
            archive.writestr("kernel.o", self.object_code)
            archive.writestr(
                "kernel.ll",
                self.llvm_ir,
                compress_type=zipfile.ZIP_DEFLATED,
                compresslevel=1,
            )
        return buffer.getvalue()

    @staticmethod
    def from_bytes(data: bytes) -> KernelObject:
        """The kernel of `to_bytes`; ValueError when `data` is not one (a damaged entry)."""
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                manifest = json.loads(archive.read("manifest.json"))
                object_code = archive.read("kernel.o")
                llvm_ir = archive.read("kernel.ll").decode()
        except (zipfile.BadZipFile, KeyError, ValueError, OSError, EOFError) as err:
            raise ValueError(f"not a compiled kernel: {err}") from None
        if (
            not isinstance(manifest, dict)
            or manifest.get("format") != KERNEL_FORMAT
            or manifest.get("format_version") != KERNEL_FORMAT_VERSION
            or not isinstance(manifest.get("symbol"), str)
            or not isinstance(manifest.get("imports"), list)
            or not isinstance(manifest.get("returns_status"), bool)
        ):
            raise ValueError("not a compiled kernel of this strato")
        return KernelObject(
            manifest["symbol"],
            object_code,
            tuple(manifest["imports"]),
            manifest["returns_status"],
            llvm_ir,
        )


@dataclass
class KernelUnit:
    """A kernel alone in a module (with what it refers to), its key and its symbol."""

    name: str
    module: ModuleOp | None
    key: str

    @property
    def symbol(self) -> str:
        return f"{SYMBOL_PREFIX}{self.key[:16]}"

    @property
    def size(self) -> int:
        """How much there is to compile (its ops): the larger units start first."""
        return len(ops_under(self.module))


def kernel_unit(
    module: ModuleOp, kernel: func.FuncOp, build: KernelBuild, *, take: bool = False
) -> KernelUnit:
    """`kernel` and the globals and functions it refers to, cloned into a module of
    their own, with its key (see the module docstring). With `take`, the kernel itself
    is moved there instead of cloned, and a declaration of the same name and type takes
    its place in `module` (what the entry's calls and `build.call_compiled_kernels`
    need of it)."""
    symbols = {
        op.sym_name.data: op
        for op in module.ops
        if isinstance(op, memref.GlobalOp | func.FuncOp)
    }
    needed: list[str] = []
    pending = [kernel]
    while pending:
        op = pending.pop()
        for inner in ops_under(op):
            for attr in (*inner.properties.values(), *inner.attributes.values()):
                if isinstance(attr, SymbolRefAttr):
                    name = attr.root_reference.data
                    if (
                        name in symbols
                        and name not in needed
                        and symbols[name] is not kernel
                    ):
                        needed.append(name)
                        pending.append(symbols[name])
    others = [symbols[name].clone() for name in sorted(needed)]
    if take:
        block = kernel.parent_block()
        assert block is not None
        signature = kernel.function_type
        block.insert_op_before(
            func.FuncOp.external(
                kernel.sym_name.data, signature.inputs.data, signature.outputs.data
            ),
            kernel,
        )
        block.detach_op(kernel)
    unit = ModuleOp([*others, kernel if take else kernel.clone()])
    digest = hashlib.sha256()
    digest.update(
        f"{KERNEL_FORMAT} {KERNEL_FORMAT_VERSION}\n{build.describe()}\n".encode()
    )
    digest.update(_fingerprint().encode())
    digest.update(kernel_digest(kernel).encode())
    for op in others:
        digest.update(str(op).encode())
    return KernelUnit(kernel.sym_name.data, unit, digest.hexdigest())


def _fingerprint() -> str:
    from strato.runtime.cache import source_fingerprint

    return source_fingerprint()


class PhaseClock:
    """CPU seconds of the phases of a kernel's build in this process, each phase timed
    from the end of the one before (`lap`)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.process_time()

    def lap(self, phase: str) -> None:
        now = time.process_time()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + now - self._last
        self._last = now


PHASES = ("schedule", "kernel key", "lowering", "LLVM optimization", "machine code")
"""The phases of a kernel's build `ScheduledKernel.seconds` reports, in order: the
schedule-default templates, the kernel's unit and key (its text), the Python lowering to
LLVM IR (`lower_unit`), LLVM's optimization pipeline and its code generation."""


def compile_unit(
    unit: KernelUnit, build: KernelBuild, clock: PhaseClock | None = None
) -> KernelObject:
    """Lower, emit, optimize and compile the unit's kernel as `unit.symbol` (the unit's
    module is consumed); `clock` hears the phases (see `PHASES`)."""
    lowered = lower_unit(unit, build)
    if clock is not None:
        clock.lap("lowering")
    return machine_code(lowered, build, clock)


@dataclass(frozen=True)
class LoweredUnit:
    """A unit's kernel as LLVM IR text: what LLVM optimizes and compiles."""

    symbol: str
    text: str
    returns_status: bool


def lower_unit(unit: KernelUnit, build: KernelBuild) -> LoweredUnit:
    """The unit's kernel lowered to LLVM IR text (Python work only: no LLVM call), the
    unit's module consumed."""
    module, unit.module = unit.module, None  # dropped as soon as it is lowered
    with gc_paused():
        lowered = _lower_module(module, unit, build)
    del module
    # The lowering's garbage is young and only its cycles need the collector: one young
    # collection now, rather than each object scanned alive and again once dead.
    gc.collect(0)
    return lowered


def _lower_module(module: ModuleOp, unit: KernelUnit, build: KernelBuild) -> LoweredUnit:
    from strato.targets.llvm.convert_loops_to_llvm import convert_loops_to_llvm
    from strato.targets.llvm.entry_abi import finalize_kernel
    from strato.targets.llvm.fast_math import add_fast_math_flags
    from strato.targets.llvm.ir_printer import print_llvm_ir

    kernel = next(
        op
        for op in module.ops
        if isinstance(op, func.FuncOp) and op.sym_name.data == unit.name
    )
    kernel.sym_name = StringAttr(unit.symbol)
    convert_loops_to_llvm(module, build.threads)
    returns_status = finalize_kernel(module, unit.symbol)
    if build.fast_math:
        add_fast_math_flags(module)
    return LoweredUnit(unit.symbol, print_llvm_ir(module, build.machine), returns_status)


def machine_code(
    lowered: LoweredUnit, build: KernelBuild, clock: PhaseClock | None = None
) -> KernelObject:
    """LLVM's part: the lowered kernel parsed, optimized and compiled to an object."""
    from strato.targets.llvm.host import target_machine
    from strato.targets.llvm.jit import _parse, optimize

    machine = target_machine(build.machine, build.opt_level, jit=True)
    parsed = _parse(lowered.text)
    optimize(parsed, machine, build.opt_level)
    if clock is not None:
        clock.lap("LLVM optimization")
    imports = tuple(sorted(
        f.name for f in parsed.functions if f.is_declaration and not f.name.startswith("llvm.")
    ))  # fmt: skip
    object_code = machine.emit_object(parsed)
    if clock is not None:
        clock.lap("machine code")
    return KernelObject(
        lowered.symbol, object_code, imports, lowered.returns_status, lowered.text
    )


def compile_kernels(
    module: ModuleOp,
    build: KernelBuild,
    *,
    jobs: int = 1,
    cache: bool = False,
    progress: Callable[[int, int], None] | None = None,
    memo: MutableMapping[str, KernelObject] | None = None,
    compiling: Callable[[list[str]], None] | None = None,
) -> dict[str, KernelObject]:
    """Every kernel of the loop-level `module` compiled on its own (see the module
    docstring): kernel name -> its object. Kernels come from `memo` (key -> object, kept
    by the caller for the life of a process) when it holds them, else from the compile
    cache with `cache`; `jobs` processes compile the others, which then go to both;
    `progress(done, total)` hears how many of the distinct kernels are done, and
    `compiling(keys)` which ones are about to be compiled."""
    from strato.runtime import cache as compile_cache

    kernels = [
        op
        for op in module.ops
        if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes
    ]
    units = [kernel_unit(module, kernel, build) for kernel in kernels]
    by_key: dict[str, KernelObject] = {}
    missing: dict[str, KernelUnit] = {}
    for unit in units:
        if unit.key in by_key or unit.key in missing:
            continue
        found = memo.get(unit.key) if memo is not None else None
        if found is None and cache:
            found = _cached(unit.key)
            if found is not None and memo is not None:
                memo[unit.key] = found
        if found is not None:
            by_key[unit.key] = found
        else:
            missing[unit.key] = unit
    total = len(by_key) + len(missing)
    report = None
    if progress is not None:
        progress(len(by_key), total)
        report = lambda done: progress(len(by_key) + done, total)
    pending = list(missing.values())
    if compiling is not None and pending:
        compiling([unit.key for unit in pending])
    compiled = _compile_all(pending, build, jobs, report)
    by_key.update(
        (unit.key, kernel) for unit, kernel in zip(pending, compiled, strict=True)
    )
    if memo is not None:
        memo.update((unit.key, by_key[unit.key]) for unit in pending)
    if cache and pending:
        compile_cache.store_kernels(
            {unit.key: by_key[unit.key].to_bytes() for unit in pending}
        )
    if memo is not None:
        memo.update(by_key)
    return {unit.name: by_key[unit.key] for unit in units}


@dataclass(frozen=True)
class ScheduledKernel:
    """A kernel scheduled, then compiled or found in the cache, by `compile_kernels`
    with a schedule: its key, its object, the heap bytes its scheduled code allocates
    (`build.check_heap_size`'s count) and whether it was compiled now."""

    key: str
    compiled: KernelObject
    heap_bytes: int
    fresh: bool
    seconds: dict[str, float] = field(default_factory=dict)
    """CPU seconds of each phase of this kernel's build (`PHASES`), in the process that
    built it; a kernel found in the cache has only the first two."""
    templates: tuple[str, ...] = ()
    """The schedule templates its stages took."""


def schedule_and_compile_kernels(
    module: ModuleOp,
    build: KernelBuild,
    schedule: ScheduleContext,
    *,
    jobs: int = 1,
    cache: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, ScheduledKernel]:
    """Every kernel of the unscheduled loop-level `module` scheduled with `schedule`
    (`schedule_default.schedule_kernel`, as the schedule-default pass schedules it),
    then compiled on its own or taken from the compile cache with `cache`, each in one
    of `jobs` processes: kernel name -> what became of it. The scheduling of one kernel
    does not depend on the others', so the kernels are scheduled where they are
    compiled, in parallel, and the schedule's time is shared by the processes too.
    Each of the module's kernels is replaced by a declaration of its name and type. `progress(done, total)`
    hears how many kernels are done."""
    names = [
        op.sym_name.data
        for op in module.ops
        if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes
    ]
    sizes = [_kernel_size(module, name) for name in names]
    report = None
    if progress is not None:
        progress(0, len(names))
        report = lambda done: progress(done, len(names))
    done = _run_all(
        names, sizes, lambda name: _schedule_and_compile(module, name, build, schedule, cache),
        jobs, report,
    )  # fmt: skip
    kernels = dict(zip(names, done, strict=True))
    if cache:
        fresh = {kernel.key: kernel.compiled for kernel in done if kernel.fresh}
        if fresh:
            from strato.runtime import cache as compile_cache

            compile_cache.store_kernels({key: compiled.to_bytes() for key, compiled in fresh.items()})
    return kernels


def _kernel_size(module: ModuleOp, name: str) -> int:
    return len(ops_under(_kernel_named(module, name)))


def _kernel_named(module: ModuleOp, name: str) -> func.FuncOp:
    return next(
        op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name
    )


def _schedule_and_compile(
    module: ModuleOp, name: str, build: KernelBuild, schedule: ScheduleContext, cache: bool
) -> ScheduledKernel:
    from strato.runtime.limits import check_buffer_sizes
    from strato.targets.llvm.memref_to_llvm import heap_bytes
    from strato.transforms.schedule_default import TEMPLATE_ATTR, schedule_kernel

    clock = PhaseClock()
    schedule_kernel(module, name, schedule)
    kernel = _kernel_named(module, name)
    clock.lap("schedule")
    chosen = kernel.attributes.get(TEMPLATE_ATTR)
    templates = tuple(sorted({
        template.data for template in getattr(chosen, "data", {}).values() if isinstance(template, StringAttr)
    }))  # fmt: skip
    heap = sum(
        heap_bytes(op)
        for op in ops_under(kernel)
        if isinstance(op, memref.AllocOp) and isinstance(op.memref.type, MemRefType)
    )
    # the scheduled kernel is needed only here: moved to its unit rather than copied
    unit = kernel_unit(module, kernel, build, take=True)
    check_buffer_sizes(unit.module)
    found = _cached(unit.key) if cache else None
    clock.lap("kernel key")
    if found is not None:
        return ScheduledKernel(unit.key, found, heap, False, clock.seconds, templates)
    compiled = compile_unit(unit, build, clock)
    return ScheduledKernel(unit.key, compiled, heap, True, clock.seconds, templates)


def compile_kernel(
    module: ModuleOp, kernel: func.FuncOp, build: KernelBuild, *, cache: bool = False
) -> KernelObject:
    """One kernel of `module` compiled on its own (what a tuning candidate needs), from
    and to the compile cache when `cache`."""
    from strato.runtime import cache as compile_cache

    unit = kernel_unit(module, kernel, build)
    found = _cached(unit.key) if cache else None
    if found is not None:
        return found
    compiled = compile_unit(unit, build)
    if cache:
        compile_cache.store_kernels({unit.key: compiled.to_bytes()})
    return compiled


def _cached(key: str) -> KernelObject | None:
    from strato.runtime import cache as compile_cache

    data = compile_cache.lookup_kernel(key)
    if data is None:
        return None
    try:
        return KernelObject.from_bytes(data)
    except ValueError:
        compile_cache.remove_kernel(key)
        return None


# -- compiling in several processes ---------------------------------------------------------

MIN_PARALLEL_OPS = 400
"""Least loop-level work (ops of the units to compile) worth a second process: forking
costs a few tens of milliseconds, a small model compiles in less."""

_SHARED: tuple[list[Any], Callable[[Any], Any]] | None = None
"""The work items of the compilation in progress and what does one, as the forked
processes inherit them."""


def _compile_all(
    units: Sequence[KernelUnit],
    build: KernelBuild,
    jobs: int,
    report: Callable[[int], None] | None = None,
) -> list[KernelObject]:
    """The units compiled, in order: in this process, or shared with `jobs - 1` forked
    ones that take the next unit (the largest first) as they finish the last;
    `report(done)` hears how many are done."""
    return _run_all(
        list(units), [unit.size for unit in units], lambda unit: compile_unit(unit, build), jobs, report
    )


def _run_all(
    items: list[Any],
    sizes: Sequence[int],
    work: Callable[[Any], Any],
    jobs: int,
    report: Callable[[int], None] | None = None,
) -> list[Any]:
    """`work(item)` of each item, in order: in this process, or shared with `jobs - 1`
    forked ones that take the next item (the largest first, by `sizes`) as they finish
    the last; `report(done)` hears how many are done. The results go back to this
    process pickled."""
    order = sorted(range(len(items)), key=lambda i: -sizes[i])
    jobs = min(jobs, len(items))
    if jobs <= 1 or not _can_fork() or sum(sizes) < MIN_PARALLEL_OPS:
        results = []
        for item in items:
            results.append(work(item))
            if report is not None:
                report(len(results))
        return results
    global _SHARED
    context = multiprocessing.get_context("fork")
    taken, done = context.Value("i", 0), context.Value("i", 0)
    finished_by_position: dict[int, Any] = {}
    _SHARED = ([items[i] for i in order], work)
    children = []
    # Objects alive at the fork go to the permanent generation: a collection in either
    # process then leaves them, and the pages holding them, untouched (copy-on-write).
    gc.freeze()
    try:
        for _ in range(jobs - 1):
            receive, send = context.Pipe(duplex=False)
            process = context.Process(
                target=_child, args=(taken, done, send), daemon=True
            )
            process.start()
            send.close()
            children.append((process, receive))
        gc.unfreeze()
        progress = None if report is None else (lambda: report(done.value))
        for position, result in _take(taken, done, progress):
            finished_by_position[order[position]] = result
        for process, receive in children:
            while not receive.poll(0.2):
                if progress is not None:
                    progress()
                if not process.is_alive() and not receive.poll(0):
                    break
            try:
                finished, failure = receive.recv()
            except EOFError:
                finished, failure = (
                    [],
                    None,
                )  # the child died: its items are done below
            process.join()
            if failure is not None:
                _raise(failure)
            for position, result in finished:
                finished_by_position[order[position]] = result
    finally:
        gc.unfreeze()
        _SHARED = None
        for process, receive in children:
            receive.close()
            if process.is_alive():
                process.kill()
    # what a child that died was doing
    results = [
        finished_by_position[i] if i in finished_by_position else work(items[i])
        for i in range(len(items))
    ]
    if report is not None:
        report(len(results))
    return results


def _take(
    taken, done, progress: Callable[[], None] | None = None
) -> list[tuple[int, Any]]:
    """Do the next shared item until none is left; (position, result) of each."""
    assert _SHARED is not None
    items, work = _SHARED
    finished = []
    while True:
        with taken.get_lock():
            position = taken.value
            taken.value += 1
        if position >= len(items):
            return finished
        finished.append((position, work(items[position])))
        with done.get_lock():
            done.value += 1
        if progress is not None:
            progress()


def _child(taken, done, send) -> None:
    from strato.diagnostics import StratoError

    try:
        send.send((_take(taken, done), None))
    except BaseException as err:  # noqa: BLE001 - reported to the parent, which raises it
        message = (
            err.message
            if isinstance(err, StratoError)
            else f"{type(err).__name__}: {err}"
        )
        send.send(([], (isinstance(err, StratoError), message)))
    finally:
        send.close()
        os._exit(0)


def _raise(failure: tuple[bool, str]) -> None:
    """Raise in this process what a child's compilation raised (as a StratoError when it
    was one, else as an internal error with the child's message)."""
    from strato.diagnostics import StratoError

    diagnostic, message = failure
    if diagnostic:
        raise StratoError(message)
    raise RuntimeError(f"compiling a kernel in a worker process failed: {message}")


def _can_fork() -> bool:
    """Whether kernels can be compiled in forked processes: not on a platform without
    fork, nor inside a daemonic process (a worker of a pool), which may have none."""
    return (
        hasattr(os, "fork")
        and "fork" in multiprocessing.get_all_start_methods()
        and not multiprocessing.current_process().daemon
    )


__all__ = [
    "PHASES",
    "KernelBuild",
    "KernelObject",
    "KernelUnit",
    "PhaseClock",
    "ScheduledKernel",
    "compile_kernel",
    "compile_kernels",
    "compile_unit",
    "kernel_unit",
    "schedule_and_compile_kernels",
]
