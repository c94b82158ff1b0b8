"""Loop-level kernels compiled alone: for tests, hand-written schedules and the tuner.

    jit = compile_loops(module, threads=1)           # lower a copy, JIT it
    jit.function("mm")(a, b, c)

    builder = LLVMKernelBuilder(machine, threads=1)  # what the llvm target gives the tuner
    built = builder.build(module, "dense_relu")      # object code: picklable, loadable elsewhere
    function, keep = builder.load(built)             # in the process that times it
    function(*[array.ctypes.data for array in buffers])
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from xdsl.dialects.builtin import MemRefType, ModuleOp

from strato.dialects.loop import OUTPUT_ATTR
from strato.dialects.tensor_types import numpy_dtype
from strato.schedule.knobs import kernel_of
from strato.targets.llvm.host import HostTarget
from strato.targets.llvm.jit import JitModule
from strato.targets.registry import BuiltKernel, KernelBuilder


def compile_loops(
    module: ModuleOp,
    *,
    machine: HostTarget | None = None,
    threads: int = 0,
    opt_level: int = 3,
) -> JitModule:
    """A copy of the loop-level `module` lowered by convert-loops-to-llvm (parallel loops
    for `threads` threads; 0: the cores available) and compiled for `machine` (the host
    by default)."""
    from strato.targets.llvm.convert_loops_to_llvm import convert_loops_to_llvm

    lowered = module.clone()
    convert_loops_to_llvm(lowered, threads)
    return JitModule(lowered, machine=machine, opt_level=opt_level)


class LLVMKernelBuilder(KernelBuilder):
    """Builds one scheduled kernel into an object file for `machine`, its parallel loops
    for `threads` threads, and loads such an object into this process."""

    def __init__(self, machine: HostTarget | None = None, threads: int = 1, opt_level: int = 3):
        self.machine = machine
        self.threads = threads
        self.opt_level = opt_level

    def build(self, module: ModuleOp, kernel: str) -> BuiltKernel:
        """The kernel compiled as the model build compiles it (`kernel_objects`), so a
        candidate built before, by the tuner or by a compile, comes from the compile
        cache."""
        from strato.runtime.cache import cache_enabled
        from strato.targets.llvm.host import host_target
        from strato.targets.llvm.kernel_objects import KernelBuild, compile_kernel

        function = kernel_of(module, kernel)
        if function.function_type.outputs.data or not all(
            isinstance(t, MemRefType) for t in function.function_type.inputs.data
        ):
            raise ValueError(f"@{kernel} is not a kernel of buffers: {function.function_type}")
        from strato.runtime.threads import threads_or_available

        threads = threads_or_available(self.threads)
        build = KernelBuild(self.machine or host_target(), self.opt_level, threads, fast_math=False)
        compiled = compile_kernel(module, function, build, cache=cache_enabled())
        attributes = (
            function.arg_attrs.data if function.arg_attrs is not None else [None] * len(function.args)
        )
        buffers = tuple(
            (
                tuple(arg.type.get_shape()),
                numpy_dtype(arg.type.element_type),
                attrs is not None and OUTPUT_ATTR in attrs.data,
            )
            for arg, attrs in zip(function.args, attributes, strict=True)
        )
        return BuiltKernel(kernel, compiled.object_code, compiled.imports, buffers, symbol=compiled.symbol)

    def device(self) -> str:
        from strato.targets.llvm.host import device_name

        return "" if self.machine is None else device_name(self.machine)

    def runs_here(self) -> bool:
        from strato.targets.llvm.host import runs_here

        return self.machine is None or runs_here(self.machine)

    def for_this_host(self) -> LLVMKernelBuilder:
        return self if self.runs_here() else LLVMKernelBuilder(None, self.threads, self.opt_level)

    def emulation_problem(self) -> str | None:
        from strato.diagnostics import StratoError
        from strato.targets.llvm.emulator import emulator_for
        from strato.targets.llvm.host import host_target

        try:
            emulator_for(self.machine or host_target())
        except StratoError as error:
            return str(error)
        return None

    def time_emulated(
        self, built: BuiltKernel, arrays: list[Any], *, repeats: int, min_repeat_seconds: float,
        max_calls: int, threads: int, timeout: float,
    ) -> tuple[list[Any], list[float]]:
        from strato.targets.llvm.emulator import emulator_for
        from strato.targets.llvm.host import host_target

        emulator = emulator_for(self.machine or host_target())
        return emulator.time_kernel(
            built, arrays, repeats=repeats, min_repeat_seconds=min_repeat_seconds,
            max_calls=max_calls, threads=threads, timeout=timeout,
        )

    def load(self, built: BuiltKernel) -> tuple[Callable[..., Any], object]:
        from strato.targets.llvm.jit import ObjectModule
        from strato.targets.llvm.parallel_runtime import install_parallel_runtime

        install_parallel_runtime()  # binds strato_parallel_for, which parallel code imports
        loaded = ObjectModule(built.code, built.imports)
        address = loaded.address(built.symbol or built.kernel)
        function = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(built.buffers))(address)
        return function, loaded


__all__ = ["LLVMKernelBuilder", "compile_loops"]
