"""The machine strato compiles for: the host CPU by default, or one a target string
names (`llvm -mcpu=skylake-avx512`, `llvm -mattr=+avx2,-avx512f`), on this architecture
or another (`llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72`,
`llvm -mtriple=riscv64-linux-gnu -mattr=+v`), through llvmlite.

    machine = machine_for(cpu="x86-64-v2")          # checked against LLVM's CPU table
    vector_lanes(machine)                            # 4: SSE registers hold 4 floats
    target_machine(machine)                          # codegen for x86-64-v2
    arm = machine_for("cortex-a72", triple="aarch64-linux-gnu")
    vector_lanes(arm), runs_here(arm)                # (4, False): NEON, not this machine

The llvm target holds its machine and gives it to whatever reads it: code generation
(`target_machine`, the `target-cpu`/`target-features` attributes of emitted functions)
and the default schedules (`vector_lanes`, `vector_registers`); nothing reads a machine
from global state. Code for a machine that does not `runs_here` is only ever written
to object files, never run in this process.

llvmlite initializes LLVM itself since 0.45 (`llvmlite.binding.initialize()` now
raises); the native target and its assembly printer need initializing, once, and every
other target of LLVM the first time a foreign triple is named.
"""

from __future__ import annotations

import os
import re
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


@cache
def _initialize_all_targets() -> None:
    _initialize_native_target()
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def _initialize_target(triple: str) -> None:
    """Initialize what code generation for `triple` needs (the native target for the
    host's architecture; every target LLVM has for another)."""
    _initialize_native_target()
    if _architecture(triple) != _architecture(llvm.get_process_triple()):
        _initialize_all_targets()


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
    """A target triple, CPU name or CPU feature LLVM does not know."""


def _architecture(triple: str) -> str:
    return triple.split("-", 1)[0]


_VENDORS = frozenset({"unknown", "pc", "none"})
"""Vendor fields of a triple that say nothing about the code (`x86_64-pc-linux-gnu`,
`x86_64-unknown-linux-gnu` and `x86_64-linux-gnu` are one system)."""


def system_of(triple: str) -> tuple[str, ...]:
    """A triple's architecture, operating system and environment, without the vendor:
    two triples with the same system run each other's code."""
    parts = triple.lower().split("-")
    return (parts[0], *(part for part in parts[1:] if part not in _VENDORS))


def runs_here(machine: HostTarget) -> bool:
    """Whether code for `machine` is for this machine's system (its architecture and
    operating system; its CPU features are checked where code is loaded): only such code
    is ever compiled into this process and run."""
    return system_of(machine.triple) == system_of(host_target().triple)


def device_name(machine: HostTarget) -> str:
    """`machine` named as a device to tune for: its system, CPU and features
    (`aarch64-linux-gnu cortex-a72`); empty for this host's own machine."""
    if machine == host_target():
        return ""
    name = f"{'-'.join(system_of(machine.triple))} {machine.cpu}"
    return f"{name} {machine.features}" if machine.features else name


def _triple_defaults(triple: str) -> HostTarget:
    """The machine a bare `-mtriple` names, as C compilers for that triple assume it:
    the generic CPU of the architecture with the features its Linux ABI requires
    (64-bit RISC-V Linux is RV64GC with the double-float ABI; AArch64's generic CPU has
    NEON)."""
    arch = _architecture(triple)
    if arch == "riscv64":
        return HostTarget(triple, "generic-rv64", "+m,+a,+f,+d,+c")
    if arch == "x86_64":
        return HostTarget(triple, "x86-64", "")
    return HostTarget(triple, "generic", "")


def machine_for(
    cpu: str | None = None, features: str | None = None, triple: str | None = None
) -> HostTarget:
    """The host with its CPU and/or features replaced, or a machine of another system.

    `cpu` names an LLVM processor (`skylake-avx512`, `x86-64-v2`); without `features` it
    brings its own features. `features` is a comma-separated `+name`/`-name` list; with
    no `cpu` it edits the host's features (`+avx2,-avx512f`), with one it is added to
    that CPU's. `triple` (`aarch64-linux-gnu`) compiles for that system instead of the
    host: the architecture's generic CPU (`_triple_defaults`) unless `cpu` names one,
    and its baseline features edited by `features`. An unknown triple, CPU or feature
    is a `MachineError`.
    """
    if triple is not None:
        return _foreign_machine(triple, cpu, features)
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


def _foreign_machine(triple: str, cpu: str | None, features: str | None) -> HostTarget:
    triple = triple.strip()
    if not re.fullmatch(r"[A-Za-z0-9_.]+(-[A-Za-z0-9_.]+){1,3}", triple):
        raise MachineError(
            f"'{triple}' is not a target triple (arch-vendor-os-environment, e.g. "
            "aarch64-linux-gnu)"
        )
    try:
        _initialize_target(triple)
        llvm.Target.from_triple(triple)
    except RuntimeError:
        raise MachineError(
            f"LLVM has no target for '{triple}' (it knows {', '.join(known_architectures())})"
        ) from None
    base = _triple_defaults(triple)
    merged = _parse_features(base.features)
    for name, sign in (_parse_features(features) if features is not None else {}).items():
        merged.pop(name, None)
        merged[name] = sign
    machine = HostTarget(triple, cpu if cpu is not None else base.cpu, _flatten(merged))
    _check_machine(machine)
    return machine


def known_architectures() -> list[str]:
    """The architectures whose code this LLVM writes (`x86-64`, `aarch64`, `riscv64`, ...)."""
    _initialize_all_targets()
    names = []
    for triple in ("x86_64", "aarch64", "riscv64", "armv7", "powerpc64le", "s390x", "wasm32"):
        try:
            llvm.Target.from_triple(f"{triple}-unknown-linux-gnu")
        except RuntimeError:
            continue
        names.append(triple)
    return names


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
    _initialize_target(machine.triple)
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
    if machine is None:
        machine = host_target()
    _initialize_target(machine.triple)
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
    """Width in bits of the widest float vector registers of `machine`: the registers
    LLVM's code for a 16-float add uses (x86: zmm 512, ymm 256, xmm 128; AArch64: NEON
    128; RISC-V: the minimum vector length of its V extension, `+v` 128 and
    `+zvl256b` 256, read from the register grouping LLVM picks; 32, one float, where
    the machine has no float vectors)."""
    _initialize_target(machine.triple)
    target = llvm.Target.from_triple(machine.triple)
    codegen = target.create_target_machine(cpu=machine.cpu, features=machine.features, opt=2)
    assembly = codegen.emit_assembly(llvm.parse_assembly(_PROBE))
    arch = _architecture(machine.triple)
    if arch in ("x86_64", "i386", "i686"):
        for register, bits in (("%zmm", 512), ("%ymm", 256)):
            if register in assembly:
                return bits
        return 128
    grouping = re.search(r"vset\w*\s+\w+,\s*\w+,\s*e32,\s*m(f?)(\d)", assembly)
    if grouping is not None:
        # 16 floats (512 bits) fill a group of LMUL registers
        fractional, lmul = grouping.group(1), int(grouping.group(2))
        return 512 * lmul if fractional else 512 // lmul
    if arch.startswith("riscv"):
        return 32
    return 128


MIN_SCHEDULE_BITS = 128
"""The narrowest vectors the default schedules plan for (4 fp32 lanes: the CPU templates'
micro-kernels need them). A machine without float vectors (RV64GC without V) gets
these: LLVM turns the vector code into scalar instructions."""


def vector_lanes(machine: HostTarget, itemsize: int = 4) -> int:
    """Lanes of `itemsize`-byte elements in a vector register of `machine`: the vector
    width the default schedules pick (16 fp32 lanes with AVX-512F, 8 with AVX2, 4 with
    SSE, NEON, RVV at its minimum length and on machines without vectors)."""
    return max(1, max(vector_bits(machine), MIN_SCHEDULE_BITS) // (8 * itemsize))


def vector_registers(machine: HostTarget) -> int:
    """Registers of `machine` the schedules may plan vectors (or, without vectors, their
    scalars) for: 32 with AVX-512 (zmm0-31), on AArch64 (v0-31) and on RISC-V (v0-31,
    or f0-31 without V); 16 otherwise (ymm/xmm0-15)."""
    arch = _architecture(machine.triple)
    if vector_bits(machine) >= 512 or arch in ("aarch64", "arm64") or arch.startswith("riscv"):
        return 32
    return 16
