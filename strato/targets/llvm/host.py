"""The machine strato compiles for: the host CPU by default, or one a target string
names (`llvm -mcpu=skylake-avx512`, `llvm -mattr=+avx2,-avx512f`), through llvmlite.

    machine = machine_for(cpu="x86-64-v2")          # checked against LLVM's CPU table
    vector_lanes(machine)                            # 4: SSE registers hold 4 floats
    target_machine(machine)                          # codegen for x86-64-v2

The llvm target holds its machine and gives it to whatever reads it: code generation
(`target_machine`, the `target-cpu`/`target-features` attributes of emitted functions)
and the default schedules (`vector_lanes`); nothing reads a machine from global state.

llvmlite initializes LLVM itself since 0.45 (`llvmlite.binding.initialize()` now
raises); only the native target and its assembly printer need initializing, once.
"""

from __future__ import annotations

import os
import tempfile
import threading
from dataclasses import dataclass
from functools import cache

import llvmlite.binding as llvm

from strato.diagnostics import StratoError


@cache
def _initialize_native_target() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()


@dataclass(frozen=True)
class HostTarget:
    """Triple, CPU name and CPU features (LLVM's `+feature,-feature` list; empty for
    the CPU's own) of a machine to compile for."""

    triple: str
    cpu: str
    features: str

    def __str__(self) -> str:
        return f"{self.cpu} ({self.features})" if self.features else self.cpu


@cache
def host_target() -> HostTarget:
    """The machine running strato."""
    _initialize_native_target()
    return HostTarget(
        triple=llvm.get_process_triple(),
        cpu=llvm.get_host_cpu_name(),
        features=llvm.get_host_cpu_features().flatten(),
    )


class MachineError(StratoError):
    """A CPU name or CPU feature LLVM does not know."""


_VENDORS = frozenset({"unknown", "pc", "none"})
"""Vendor fields of a triple that say nothing about the code (`x86_64-pc-linux-gnu`,
`x86_64-unknown-linux-gnu` and `x86_64-linux-gnu` are one system)."""


def system_of(triple: str) -> tuple[str, ...]:
    """A triple's architecture, operating system and environment, without the vendor:
    two triples with the same system run each other's code."""
    parts = triple.lower().split("-")
    return (parts[0], *(part for part in parts[1:] if part not in _VENDORS))


def machine_for(cpu: str | None = None, features: str | None = None) -> HostTarget:
    """The host with its CPU and/or features replaced.

    `cpu` names an LLVM processor (`skylake-avx512`, `x86-64-v2`); without `features` it
    brings its own features. `features` is a comma-separated `+name`/`-name` list; with
    no `cpu` it edits the host's features (`+avx2,-avx512f`), with one it is added to
    that CPU's. An unknown CPU or feature is a `MachineError`.
    """
    host = host_target()
    if cpu is None and features is None:
        return host
    overrides = _parse_features(features) if features is not None else {}
    if cpu is None:
        merged = _parse_features(host.features)
        for name, sign in overrides.items():
            # last, so that no feature listed after it turns it back on
            merged.pop(name, None)
            merged[name] = sign
        machine = HostTarget(host.triple, host.cpu, _flatten(merged))
    else:
        machine = HostTarget(host.triple, cpu, _flatten(overrides))
    _check_machine(machine)
    return machine


def _parse_features(text: str) -> dict[str, str]:
    """`+a,-b` -> {"a": "+", "b": "-"} (order kept, a later entry wins)."""
    result: dict[str, str] = {}
    for word in text.split(","):
        word = word.strip()
        if not word:
            continue
        if word[0] not in "+-" or len(word) == 1:
            raise MachineError(
                f"CPU feature '{word}' must start with + (enable) or - (disable), e.g. +avx2"
            )
        result.pop(word[1:], None)
        result[word[1:]] = word[0]
    return result


def _flatten(features: dict[str, str]) -> str:
    return ",".join(f"{sign}{name}" for name, sign in features.items())


_STDERR_LOCK = threading.Lock()


@cache
def _check_machine(machine: HostTarget) -> None:
    """LLVM only warns on stderr about an unknown CPU or feature (and a bad CPU later
    aborts the process in codegen), so create a target machine with stderr captured and
    turn a warning into a `MachineError`."""
    _initialize_native_target()
    target = llvm.Target.from_triple(machine.triple)
    with _STDERR_LOCK, tempfile.TemporaryFile() as capture:
        saved = os.dup(2)
        os.dup2(capture.fileno(), 2)
        try:
            target.create_target_machine(cpu=machine.cpu, features=machine.features, opt=0)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        warnings = capture.read().decode(errors="replace").splitlines()
    for line in warnings:
        if "not a recognized processor" in line:
            raise MachineError(f"unknown CPU '{machine.cpu}' for {machine.triple}")
        if "not a recognized feature" in line:
            name = line.split("'")[1] if line.count("'") >= 2 else line
            raise MachineError(f"unknown CPU feature '{name}' for {machine.triple}")


def target_machine(
    machine: HostTarget | None = None,
    opt_level: int = 3,
    *,
    jit: bool = False,
    portable: bool = False,
) -> llvm.TargetMachine:
    """A target machine for `machine` (the host by default). `portable` targets a
    generic CPU of the same architecture (for object files meant to run elsewhere);
    `jit` selects the JIT's code model."""
    _initialize_native_target()
    if machine is None:
        machine = host_target()
    target = llvm.Target.from_triple(machine.triple)
    return target.create_target_machine(
        cpu="" if portable else machine.cpu,
        features="" if portable else machine.features,
        opt=opt_level,
        reloc="default" if jit else "pic",
        codemodel="jitdefault" if jit else "default",
        jit=jit,
    )


@cache
def host_data_layout() -> str:
    """The data layout string of the host target."""
    return str(target_machine(host_target(), jit=True).target_data)


_PROBE = """
define void @probe(ptr %p) {
  %v = load <16 x float>, ptr %p
  %w = fadd <16 x float> %v, %v
  store <16 x float> %w, ptr %p
  ret void
}
"""


@cache
def vector_bits(machine: HostTarget) -> int:
    """Width in bits of the widest float vector registers of `machine`: the register
    LLVM's code for a 16-float add uses (x86: zmm 512, ymm 256, xmm 128; others 128)."""
    _initialize_native_target()
    target = llvm.Target.from_triple(machine.triple)
    codegen = target.create_target_machine(cpu=machine.cpu, features=machine.features, opt=2)
    assembly = codegen.emit_assembly(llvm.parse_assembly(_PROBE))
    for register, bits in (("zmm", 512), ("ymm", 256)):
        if register in assembly:
            return bits
    return 128


def vector_lanes(machine: HostTarget, itemsize: int = 4) -> int:
    """Lanes of `itemsize`-byte elements in a vector register of `machine`: the vector
    width the default schedules pick (16 fp32 lanes with AVX-512F, 8 with AVX2, 4 with
    SSE)."""
    return max(1, vector_bits(machine) // (8 * itemsize))


def vector_registers(machine: HostTarget) -> int:
    """Vector registers of `machine` the schedules may plan for: 32 with AVX-512
    (zmm0-31), 16 otherwise (ymm/xmm0-15, and the minimum of the other ISAs)."""
    return 32 if vector_bits(machine) >= 512 else 16
