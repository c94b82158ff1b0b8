"""The `llvm` compile target: CPU machine code through llvmlite.

    llvm                                   the host CPU and its features, -O3
    llvm -mcpu=skylake-avx512              another CPU (its own features)
    llvm -mattr=+avx2,-avx512f             the host CPU with features edited
    llvm -opt-level=1                      LLVM's optimization level (0-3)
    llvm -fast-math                        float math may assume no NaN/Inf, ignore
                                           the sign of zero, use reciprocals and
                                           approximate functions
    llvm -threads=2                        parallel loops on up to 2 threads (1: serial;
                                           default: the cores available to the process)

The CPU decides both the machine code and the vector width the default schedules pick
(`strato.targets.llvm.host.vector_lanes`). Reductions may always be reassociated and
contracted into FMAs (`reduction_flags`); `-fast-math` adds the other assumptions to
every float operation.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from xdsl.dialects import llvm
from xdsl.dialects.builtin import AnyFloat, ModuleOp, VectorType

from strato.diagnostics import StratoError
from strato.targets.registry import Target, TargetError, register_target

if TYPE_CHECKING:
    import xdsl.utils.target

    from strato.runtime.compiled_model import CompiledModel
    from strato.runtime.signature import Signature
    from strato.targets.llvm.host import HostTarget

FAST_MATH_FLAGS = ("nnan", "ninf", "nsz", "arcp", "afn")
"""What `-fast-math` adds to every float operation (reductions already carry
`reassoc` and `contract`)."""


class LLVMTarget(Target):
    name = "llvm"
    summary = "CPU machine code through LLVM (host CPU unless -mcpu/-mattr say otherwise)"
    options = {
        "mcpu": "CPU to compile for, e.g. skylake-avx512, x86-64-v2 (default: the host's)",
        "mattr": "CPU features to enable/disable, e.g. +avx2,-avx512f",
        "opt-level": "LLVM optimization level 0-3 (default 3)",
        "fast-math": "assume no NaN/Inf, ignore signed zeros, allow reciprocals and "
        "approximate functions",
        "threads": "threads parallel loops run on (1: serial; default: the available cores)",
    }

    def __init__(self, spec) -> None:
        super().__init__(spec)
        from strato.targets.llvm.host import MachineError, machine_for

        level = self.option("opt-level", "3")
        if level not in ("0", "1", "2", "3"):
            raise TargetError(f"target 'llvm': -opt-level must be 0, 1, 2 or 3, got '{level}'")
        self.opt_level = int(level)
        self.fast_math = self.flag("fast-math")
        from strato.targets.llvm.parallel_threads import available_cores, parse_threads

        threads = self.option("threads")
        try:
            self.threads = available_cores() if threads is None else parse_threads(threads, "-threads")
        except StratoError as err:
            raise TargetError(f"target 'llvm': {err.message}") from None
        try:
            self.machine: HostTarget = machine_for(self.option("mcpu"), self.option("mattr"))
        except MachineError as err:
            raise TargetError(f"target 'llvm': {err.message}") from None

    def pipeline(self) -> str:
        from strato.pipeline import COMPILE

        return COMPILE

    @contextlib.contextmanager
    def compiling(self) -> Iterator[None]:
        from strato.targets.llvm.host import compiling_for
        from strato.targets.llvm.parallel_threads import compiling_with_threads

        with compiling_for(self.machine), compiling_with_threads(self.threads):
            yield

    def build(
        self, module: ModuleOp, entry_name: str, signature: Signature, *, public_name: str
    ) -> CompiledModel:
        from strato.compiler import build_llvm

        with self.compiling():
            if self.fast_math:
                add_fast_math_flags(module)
            model = build_llvm(
                module, entry_name, signature, opt_level=self.opt_level, public_name=public_name
            )
        model.target = str(self)
        return model

    def emitter(self) -> type[xdsl.utils.target.Target]:
        from strato.targets.llvm.emit import LLVMIRTarget

        return LLVMIRTarget

    def cache_key(self) -> str:
        machine = self.machine
        return f"{self.spec} @ {machine.triple} {machine.cpu} {machine.features} threads={self.threads}"


def _is_float(type_) -> bool:
    if isinstance(type_, VectorType):
        type_ = type_.element_type
    return isinstance(type_, AnyFloat)


def add_fast_math_flags(module: ModuleOp) -> None:
    """Give every float operation of an llvm-dialect module `FAST_MATH_FLAGS`, keeping
    the flags it has (calls only when they return floats: LLVM allows no flags on
    other calls)."""
    for op in module.walk():
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


register_target(LLVMTarget)
