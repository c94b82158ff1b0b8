"""Models compiled here for 64-bit ARM and RISC-V: the objects link with Debian's cross
compilers, run under qemu-user and give onnxruntime's outputs (computed on this
machine); compiling for another system never runs its code in this process.

The cross toolchains install with `apt-get install gcc-aarch64-linux-gnu
gcc-riscv64-linux-gnu qemu-user` (.ci/run installs them when missing); without them the
tests that link and run skip, saying which tool is missing.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

import numpy as np
import pytest
from c_programs import link_program, run_program, undefined_symbols
from test_c_link import _provided_by_system_libraries, assert_close
from test_zoo_end_to_end import SMALL_OPTIONS, random_feeds, run_onnxruntime

import strato
from strato import zoo
from strato.diagnostics import StratoError
from strato.targets.llvm.host import (
    machine_for,
    runs_here,
    vector_lanes,
    vector_registers,
)
from strato.targets.llvm.parallel_runtime import PARALLEL_FOR_SYMBOL
from strato.targets.registry import get_target


@dataclass(frozen=True)
class Device:
    """A system to cross-compile for, and the tools that link and run its programs."""

    target: str
    compiler: str
    emulator: tuple[str, ...]
    package: str

    def tools(self) -> tuple[str, str]:
        """The cross compiler and the emulator (the test skips without them)."""
        cc, qemu = shutil.which(self.compiler), shutil.which(self.emulator[0])
        if cc is None or qemu is None:
            missing = self.compiler if cc is None else self.emulator[0]
            pytest.skip(
                f"no {missing} on this machine (apt-get install {self.package} qemu-user)"
            )
        return cc, qemu


DEVICES = {
    "aarch64": Device(
        "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72",
        "aarch64-linux-gnu-gcc",
        ("qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"),
        "gcc-aarch64-linux-gnu",
    ),
    "riscv64": Device(
        "llvm -mtriple=riscv64-linux-gnu -mattr=+v",
        "riscv64-linux-gnu-gcc",
        # the V extension at its minimum length, 128 bits (qemu's default CPU has none)
        (
            "qemu-riscv64",
            "-cpu",
            "rv64,v=true,vlen=128,vext_spec=v1.0",
            "-L",
            "/usr/riscv64-linux-gnu",
        ),
        "gcc-riscv64-linux-gnu",
    ),
}

RTOL = 1e-4


def cross_check(
    name: str, device: Device, target: str, tmp_path, *, batch: int = 1
) -> None:
    """Compile zoo model `name` (test-sized) for `target`, link it for `device`, run it
    under qemu and compare with onnxruntime here."""
    cc, qemu = device.tools()
    model = zoo.build_model(name, batch=batch, seed=0, **SMALL_OPTIONS[name])
    compiled = strato.compile(model, name=name, target=target)
    program = link_program(tmp_path, compiled, [cc])
    nm = shutil.which(device.compiler.replace("-gcc", "-nm")) or "nm"
    needed = undefined_symbols(tmp_path / f"{name}.o", nm)
    foreign = sorted(s for s in needed if not _provided_by_system_libraries(s))
    assert PARALLEL_FOR_SYMBOL not in needed and not foreign, foreign
    feeds = random_feeds(model, seed=1)
    outputs = run_program(program, compiled, feeds, runner=[qemu, *device.emulator[1:]])
    assert_close(outputs, run_onnxruntime(model, feeds), f"{name} on {device.target}")


@pytest.mark.parametrize("device", sorted(DEVICES))
@pytest.mark.parametrize("name", zoo.zoo_names())
def test_a_cross_compiled_zoo_model_gives_onnxruntimes_outputs_under_qemu(
    name, device, tmp_path
):
    cross_check(name, DEVICES[device], DEVICES[device].target, tmp_path)


def test_riscv64_without_vectors_runs_scalar_code(tmp_path):
    """Without +v, RV64GC has no float vectors: the 4-lane vectors of the schedules become
    scalar code."""
    target = "llvm -mtriple=riscv64-linux-gnu -threads=2"
    assert get_target(target).lanes == 4
    device = DEVICES["riscv64"]
    scalar = Device(
        target,
        device.compiler,
        ("qemu-riscv64", "-L", "/usr/riscv64-linux-gnu"),
        device.package,
    )
    cross_check("mlp", scalar, target, tmp_path, batch=2)


@pytest.mark.parametrize(
    ("spec", "lanes", "registers"),
    [
        ("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72", 4, 32),
        ("llvm -mtriple=aarch64-linux-gnu", 4, 32),
        ("llvm -mtriple=riscv64-linux-gnu -mattr=+v", 4, 32),
        ("llvm -mtriple=riscv64-linux-gnu -mattr=+v,+zvl256b", 8, 32),
        ("llvm -mtriple=riscv64-linux-gnu", 4, 32),
        ("llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v3", 8, 16),
        ("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512", 16, 32),
    ],
)
def test_default_schedules_read_the_chosen_cpus_vectors(spec, lanes, registers):
    target = get_target(spec)
    assert target.lanes == lanes == vector_lanes(target.machine)
    assert vector_registers(target.machine) == registers
    context = target.schedule_context()
    assert (context.lanes, context.vector_registers) == (lanes, registers)


def test_a_bare_triple_means_its_linux_baseline():
    arm = machine_for(triple="aarch64-linux-gnu")
    assert (arm.cpu, runs_here(arm)) == ("generic", False)
    riscv = machine_for(features="+v", triple="riscv64-linux-gnu")
    assert riscv.features == "+m,+a,+f,+d,+c,+v"


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        (
            "llvm -mtriple=sparc99-linux-gnu",
            "LLVM has no target for 'sparc99-linux-gnu'",
        ),
        ("llvm -mtriple=nonsense", "'nonsense' is not a target triple"),
        (
            "llvm -mtriple=aarch64-linux-gnu -mcpu=skylake",
            "unknown CPU 'skylake' for aarch64-linux-gnu",
        ),
        (
            "llvm -mtriple=riscv64-linux-gnu -mattr=+avx2",
            "unknown CPU feature '\\+avx2' for riscv64",
        ),
    ],
)
def test_bad_triples_cpus_and_features_are_one_line(spec, reason, capsys):
    from strato.tools import strato_cli

    with pytest.raises(StratoError, match=reason):
        get_target(spec)
    assert strato_cli.main(["compile", "mlp", "--target", spec, "-o", "-"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("strato: error: --target: ")


def test_compiling_for_another_system_never_runs_its_code(
    monkeypatch, tmp_path, capsys
):
    """No execution engine is made (in this process or the forked kernel compilers), the
    model refuses to run, and `strato run` says so in one line; the object, the LLVM IR
    and a saved model (for strato on that system) are written."""
    import llvmlite.binding as llvm

    from strato.tools import strato_cli

    def no_engine(*args, **kwargs):
        raise AssertionError("an execution engine was created for a foreign triple")

    monkeypatch.setattr(llvm, "create_mcjit_compiler", no_engine)
    model = zoo.build_model("mlp", batch=64, seed=0, **SMALL_OPTIONS["mlp"])
    compiled = strato.compile(
        model, name="mlp", target=DEVICES["aarch64"].target, cache=False
    )
    with pytest.raises(
        StratoError,
        match="compiled for aarch64-linux-gnu .* does not run on this machine",
    ):
        compiled(*random_feeds(model, seed=1))
    assert compiled.object_code()[18] == 183  # ELF e_machine: AArch64
    assert 'target triple = "aarch64-linux-gnu"' in compiled.llvm_ir
    assert "<4 x float>" in compiled.llvm_ir
    compiled.save(tmp_path / "mlp.strato")
    monkeypatch.undo()
    assert strato_cli.main(["run", str(tmp_path / "mlp.strato")]) == 1
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and "compiled for aarch64-linux-gnu (CPU cortex-a72), this machine is" in err
    )
    assert strato_cli.main(["run", "mlp", "--target", DEVICES["aarch64"].target]) == 1
    captured = capsys.readouterr()
    err = captured.err
    assert err.count("\n") == 1 and "aarch64-linux-gnu cortex-a72 does not run on this" in err
    assert "compiled" not in captured.out  # refused before compiling


def test_an_object_for_another_system_is_compiled_for_its_cpu(tmp_path, capsys):
    """`strato compile -o` for a foreign triple writes the object and its header."""
    from strato.tools import strato_cli

    output = tmp_path / "mlp.o"
    argv = [
        "compile",
        "mlp",
        "--batch",
        "1",
        "--target",
        DEVICES["riscv64"].target,
        "-o",
        str(output),
    ]
    assert strato_cli.main(argv) == 0
    assert output.read_bytes()[18] == 243  # ELF e_machine: RISC-V
    assert "cc main.c mlp.o -lm -lpthread" in (tmp_path / "mlp.h").read_text()
    assert np.frombuffer(output.read_bytes()[:4], np.uint8).tolist() == [
        0x7F,
        ord("E"),
        ord("L"),
        ord("F"),
    ]


def test_code_for_another_system_is_never_loaded_into_this_process():
    """The JIT and the object loader refuse another system's code with a diagnostic
    (LLVM would run it, or abort the process)."""
    from strato.targets.llvm.jit import JitError, JitModule, ObjectModule, compile_object

    text = "define i32 @answer() {\n  ret i32 42\n}\n"
    for spec in (DEVICES["aarch64"].target, DEVICES["riscv64"].target):
        machine = get_target(spec).machine
        with pytest.raises(JitError, match="does not run on this machine"):
            JitModule(text, machine=machine)
        with pytest.raises(JitError, match="is not this machine's"):
            ObjectModule(compile_object(text, machine=machine))
