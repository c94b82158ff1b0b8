"""The machine strato compiles for: the host CPU, through llvmlite.

llvmlite initializes LLVM itself since 0.45 (`llvmlite.binding.initialize()` now
raises); only the native target and its assembly printer need initializing, once.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import llvmlite.binding as llvm


@cache
def _initialize_native_target() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()


@dataclass(frozen=True)
class HostTarget:
    """Triple, CPU name and CPU features of the machine running strato."""

    triple: str
    cpu: str
    features: str


@cache
def host_target() -> HostTarget:
    _initialize_native_target()
    return HostTarget(
        triple=llvm.get_process_triple(),
        cpu=llvm.get_host_cpu_name(),
        features=llvm.get_host_cpu_features().flatten(),
    )


def target_machine(
    opt_level: int = 3, *, jit: bool = False, portable: bool = False
) -> llvm.TargetMachine:
    """A target machine for the host. `portable` targets a generic CPU of the same
    architecture (for object files meant to run elsewhere); `jit` selects the JIT's
    code model."""
    host = host_target()
    target = llvm.Target.from_triple(host.triple)
    return target.create_target_machine(
        cpu="" if portable else host.cpu,
        features="" if portable else host.features,
        opt=opt_level,
        reloc="default" if jit else "pic",
        codemodel="jitdefault" if jit else "default",
        jit=jit,
    )


@cache
def host_data_layout() -> str:
    """The data layout string of the host target."""
    return str(target_machine(jit=True).target_data)
