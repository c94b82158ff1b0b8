"""Compile targets: target strings, the registry, the llvm target's CPU options (code
generation and the vector width the default schedules pick) and -fast-math."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_compile import small_mlp

import strato
from strato.diagnostics import StratoError
from strato.targets.llvm.host import host_target, machine_for, vector_bits, vector_lanes
from strato.targets.llvm.target import FAST_MATH_FLAGS, LLVMTarget
from strato.targets.llvm.templates.conv2d import CONV2D
from strato.targets.llvm.templates.dense import DENSE
from strato.targets.registry import (
    Target,
    TargetError,
    TargetSpec,
    get_target,
    parse_target,
    register_target,
    registered_targets,
    unregister_target,
)
from strato.tools import strato_cli

on_x86 = pytest.mark.skipif(
    not host_target().triple.startswith("x86_64"), reason="x86-64 CPU names"
)


# -- target strings ---------------------------------------------------------------------


def test_parse_target_options_and_flags():
    spec = parse_target("llvm  -mcpu=skylake-avx512 -fast-math -opt-level=2")
    assert spec.name == "llvm"
    assert dict(spec.options) == {"mcpu": "skylake-avx512", "fast-math": "true", "opt-level": "2"}
    # canonical text: options sorted, flags bare; it parses back to the same spec
    assert str(spec) == "llvm -fast-math -mcpu=skylake-avx512 -opt-level=2"
    assert parse_target(str(spec)) == spec
    assert hash(parse_target(str(spec))) == hash(spec)
    assert parse_target("llvm -mattr=+avx2,-avx512f").options["mattr"] == "+avx2,-avx512f"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "the target string is empty"),
        ("   ", "the target string is empty"),
        ("-mcpu=x", "'-mcpu=x' is not a target name"),
        ("llvm mcpu=x", "'mcpu=x' is not an option"),
        ("llvm --mcpu=x", "'--mcpu=x' is not an option"),
        ("llvm -mcpu=", "option -mcpu has an empty value"),
        ("llvm -mcpu=a -mcpu=b", "option -mcpu is given twice"),
        ("llvm -=3", "is not an option name"),
    ],
)
def test_bad_target_strings(text, reason):
    with pytest.raises(TargetError, match=reason):
        parse_target(text)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("tpu", r"unknown target 'tpu' \(available: .*llvm"),
        ("llvm -mcpu", "unknown CPU 'true'"),
        ("llvm -mcpu=no-such-cpu", "unknown CPU 'no-such-cpu'"),
        ("llvm -mattr=avx2", "CPU feature 'avx2' must start with \\+"),
        ("llvm -mattr=+no-such-feature", "unknown CPU feature '\\+no-such-feature'"),
        ("llvm -opt-level=4", "-opt-level must be 0, 1, 2 or 3"),
        ("llvm -fast-math=maybe", "-fast-math is a flag"),
        ("llvm -mtune=x", "target 'llvm' has no option -mtune \\(options: -mcpu, -mattr"),
    ],
)
def test_bad_targets(text, reason):
    with pytest.raises(TargetError, match=reason):
        get_target(text).flag("fast-math")


def test_get_target_accepts_strings_specs_and_targets():
    target = get_target("llvm -opt-level=1")
    assert isinstance(target, LLVMTarget) and target.opt_level == 1
    assert get_target(target) is target
    assert isinstance(get_target(TargetSpec("llvm")), LLVMTarget)
    assert registered_targets()["llvm"] == (LLVMTarget, "strato")


# -- the registry -----------------------------------------------------------------------


class RenamedLLVM(LLVMTarget):
    """The llvm target under another name: what a plugin's target looks like."""

    name = "test-cpu"
    summary = "the llvm target, registered by a test"


def test_register_target_and_compile_through_it():
    register_target(RenamedLLVM, source="tests")
    try:
        register_target(RenamedLLVM, source="tests")  # the same class again: no-op
        assert registered_targets()["test-cpu"] == (RenamedLLVM, "tests")

        class Other(Target):
            name = "test-cpu"
            summary = "clashes"

        with pytest.raises(TargetError, match="'test-cpu' from elsewhere clashes with the one from tests"):
            register_target(Other, source="elsewhere")
        model = strato.compile(small_mlp(), target="test-cpu -opt-level=2", cache=False)
        assert model.target == "test-cpu -opt-level=2"
        x = np.ones((2, 16), np.float32)
        reference = strato.compile(small_mlp(), cache=False)
        np.testing.assert_allclose(model(x)[0], reference(x)[0], rtol=1e-5, atol=1e-6)
    finally:
        unregister_target("test-cpu")
    with pytest.raises(TargetError, match="unknown target 'test-cpu'"):
        get_target("test-cpu")


def test_strato_opt_lists_and_emits_registered_targets(capsys, tmp_path):
    from strato.tools import strato_opt

    empty = tmp_path / "empty.mlir"
    empty.write_text("builtin.module {\n}\n")
    register_target(RenamedLLVM, source="tests")
    try:
        assert strato_opt.main(["--help"]) == 0
        help_text = capsys.readouterr().out
        assert f"test-cpu                      {RenamedLLVM.summary}" in help_text
        # -t NAME runs the registered target's emitter (here the LLVM IR printer)
        assert strato_opt.main([str(empty), "-t", "test-cpu"]) == 0
        assert "target triple" in capsys.readouterr().out
    finally:
        unregister_target("test-cpu")


@pytest.mark.parametrize("bad", [int, type("NoName", (Target,), {"summary": "x"})])
def test_register_target_refuses_what_is_not_a_target(bad):
    with pytest.raises(TargetError):
        register_target(bad, source="tests")


# -- the CPU: code generation and vector widths -----------------------------------------


@on_x86
@pytest.mark.parametrize(
    ("cpu", "features", "bits"),
    [("x86-64-v2", None, 128), ("haswell", None, 256), ("skylake-avx512", None, 512)],
)
def test_vector_width_follows_the_cpu(cpu, features, bits):
    machine = machine_for(cpu, features)
    assert vector_bits(machine) == bits
    assert vector_lanes(machine) == bits // 32
    target = get_target(f"llvm -mcpu={cpu}")
    context = target.schedule_context()
    assert context.lanes == bits // 32
    assert CONV2D.defaults(context)["vector_width"] == bits // 32
    assert DENSE.defaults(context)["nr"] == 2 * bits // 32
    # the stages give the passes that read the machine its width
    passes = {p.name: p for stage in target.stages() for p in stage.passes}
    assert passes["schedule-default"].lanes == passes["graph-pack-dense"].lanes == bits // 32
    # the host's own width is untouched
    assert get_target("llvm").schedule_context().lanes == vector_bits(host_target()) // 32


@on_x86
def test_mattr_edits_the_host_features():
    machine = machine_for(None, "+avx2,-avx512f")
    assert machine.cpu == host_target().cpu
    assert machine.features.split(",")[-2:] == ["+avx2", "-avx512f"]
    assert vector_bits(machine) == 256


@on_x86
def test_mcpu_changes_code_generation_and_schedules():
    x = np.random.default_rng(0).standard_normal((2, 16)).astype(np.float32)
    model = strato.compile(small_mlp(), target="llvm -mcpu=x86-64-v2", cache=False)
    assert model.target == "llvm -mcpu=x86-64-v2"
    ir = model.llvm_ir
    assert '"target-cpu"="x86-64-v2"' in ir
    # the schedules vectorize by SSE's 4 lanes, never by AVX-512's 16
    assert "<4 x float>" in ir and "<16 x float>" not in ir
    assert model.machine_code.cpu == "x86-64-v2"
    reference = strato.compile(small_mlp(), cache=False)
    np.testing.assert_allclose(model(x)[0], reference(x)[0], rtol=1e-5, atol=1e-6)


_FLOAT_OP = re.compile(r"= (fadd|fsub|fmul|fdiv|fneg) ((?:[a-z]+ )*)(?:<|float|double|half)")


_ALL_FLAGS = {"reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn"}


def float_op_flags(ir: str) -> list[set[str]]:
    """The fast-math flags of every float arithmetic instruction of LLVM IR text (LLVM
    prints all seven as `fast`)."""
    flags = [set(match.group(2).split()) for match in _FLOAT_OP.finditer(ir)]
    return [(found - {"fast"}) | _ALL_FLAGS if "fast" in found else found for found in flags]


def test_fast_math_only_when_asked():
    x = np.random.default_rng(1).standard_normal((2, 16)).astype(np.float32)
    default = strato.compile(small_mlp(), cache=False)
    fast = strato.compile(small_mlp(), fast_math=True, cache=False)
    assert fast.target == "llvm -fast-math"
    default_flags, fast_flags = float_op_flags(default.llvm_ir), float_op_flags(fast.llvm_ir)
    assert default_flags and len(fast_flags) == len(default_flags)
    # by default only reductions carry flags, and only reassoc/contract
    assert set().union(*default_flags) == {"reassoc", "contract"}
    assert all(flags >= set(FAST_MATH_FLAGS) for flags in fast_flags)
    np.testing.assert_allclose(fast(x)[0], default(x)[0], rtol=1e-5, atol=1e-6)
    # the same through the target string
    assert get_target("llvm -fast-math").fast_math


# -- the command line -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("llvm -mcpu=no-such-cpu", "strato: error: --target: target 'llvm': unknown CPU 'no-such-cpu'"),
        ("tpu", "strato: error: --target: unknown target 'tpu'"),
        ("llvm -mcpu=", "strato: error: --target: target 'llvm': option -mcpu has an empty value"),
    ],
)
def test_cli_bad_target_is_one_line(target, message, capsys):
    assert strato_cli.main(["run", "mlp", "--target", target]) == 1
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_cli_lists_targets(capsys):
    assert strato_cli.main(["targets"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("llvm: CPU machine code through LLVM")
    assert "  -mcpu " in out and "  -fast-math " in out
    assert f"CPU {host_target().cpu}" in out


def test_bad_target_through_strato_compile():
    with pytest.raises(StratoError, match="unknown CPU 'nope'"):
        strato.compile(small_mlp(), target="llvm -mcpu=nope")
