"""The direct LLVM IR printer (`ir_printer.print_llvm_ir`) against the reference
emitter (`emit.emit_llvm_ir`, through llvmlite): both texts parse to the same module,
on every kernel of models and on the lowering's lit inputs."""

from __future__ import annotations

from pathlib import Path

import llvmlite.binding as llvm_binding
import pytest
from hypothesis import HealthCheck, given, settings
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from strato.context import make_context
from strato.dialects.loop import KERNEL_ATTR
from strato.frontends.onnx import import_onnx
from strato.targets.llvm import ir_printer, kernel_objects
from strato.targets.llvm.convert_loops_to_llvm import convert_loops_to_llvm
from strato.targets.llvm.emit import EmissionError, emit_llvm_ir
from strato.targets.llvm.host import host_target
from strato.targets.llvm.kernel_objects import KernelBuild, kernel_unit
from strato.targets.registry import get_target, run_stages
from strato.testing.llvm_programs import LoopProgram, loop_programs
from strato.zoo import build_model

LIT_INPUTS = Path(__file__).parents[1] / "lit" / "transforms"


def _parsed(text: str) -> str:
    """The module LLVM reads from `text`, as LLVM prints it."""
    return str(llvm_binding.parse_assembly(text))


def _direct(module: ModuleOp) -> str:
    """The printer's own text (never the reference's, which it falls back to)."""
    return ir_printer._ModulePrinter(module, None).text()


def _check_same_module(module: ModuleOp) -> None:
    assert _parsed(_direct(module)) == _parsed(emit_llvm_ir(module))


def _scheduled(name: str, threads: int) -> ModuleOp:
    module = import_onnx(build_model(name, seed=0)).module
    run_stages(get_target(f"llvm -threads={threads}").lowering_stages(), module)
    return module


@pytest.mark.parametrize(
    ("model", "threads", "fast_math"),
    [("mlp", 2, False), ("dqn", 1, False), ("transformer", 2, False), ("transformer", 2, True),
     ("lstm", 1, False)],
)  # fmt: skip
def test_every_kernel_of_a_model_prints_as_the_reference_emits_it(
    model, threads, fast_math, monkeypatch
):
    module = _scheduled(model, threads)
    build = KernelBuild(
        host_target(), opt_level=3, threads=threads, fast_math=fast_math
    )
    printed: list[ModuleOp] = []
    print_llvm_ir = ir_printer.print_llvm_ir

    def recorded(lowered: ModuleOp, machine=None) -> str:
        printed.append(lowered)
        return print_llvm_ir(lowered, machine)

    monkeypatch.setattr(ir_printer, "print_llvm_ir", recorded)
    kernels = [
        op
        for op in module.ops
        if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes
    ]
    for kernel in kernels:
        kernel_objects.lower_unit(kernel_unit(module, kernel, build), build)
    assert len(printed) == len(kernels) > 0
    for lowered in printed:
        _check_same_module(lowered)


def _lit_cases() -> list[tuple[str, int, str]]:
    cases = []
    for path in sorted(LIT_INPUTS.glob("convert-loops-to-llvm*.mlir")):
        for i, chunk in enumerate(path.read_text().split("// -----")):
            if "expected-error" not in chunk and "func.func" in chunk:
                cases.append((path.name, i, chunk))
    return cases


@pytest.mark.parametrize("case", _lit_cases(), ids=lambda case: f"{case[0]}-{case[1]}")
@pytest.mark.parametrize("threads", [1, 2])
def test_the_lowerings_lit_inputs_print_as_the_reference_emits_them(case, threads):
    module = Parser(make_context(), case[2]).parse_module()
    convert_loops_to_llvm(module, threads)
    _check_same_module(module)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=loop_programs())
def test_random_loop_programs_print_as_the_reference_emits_them(program: LoopProgram):
    module = program.module()
    convert_loops_to_llvm(module, threads=2)
    _check_same_module(module)


def _llvm_module(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


STORE_THROUGH_TYPED_POINTERS = """
llvm.mlir.global internal @table(dense<0.0> : tensor<4xf32>) {alignment = 64 : i64} : !llvm.array<4 x f32>
llvm.func @f(%v: vector<4xf32>, %p: !llvm.ptr) attributes {loop.kernel} {
  %n = llvm.mlir.constant(8 : i64) : i64
  %slot = llvm.alloca %n x f32 {alignment = 64 : i64} : (i64) -> !llvm.ptr
  %i = llvm.mlir.constant(2 : i64) : i64
  %at = llvm.getelementptr inbounds %slot[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %at {alignment = 4 : i64} : vector<4xf32>, !llvm.ptr
  %g = llvm.mlir.addressof @table : !llvm.ptr
  llvm.store %v, %g : vector<4xf32>, !llvm.ptr
  %slots = llvm.alloca %n x !llvm.ptr : (i64) -> !llvm.ptr
  llvm.store %i, %slots : i64, !llvm.ptr
  llvm.store %v, %p : vector<4xf32>, !llvm.ptr
  llvm.return
}
"""


def test_a_store_through_a_pointer_llvmlite_types_is_bitcast_as_llvmlite_does():
    """llvmlite types an alloca's and a global's pointer (and a GEP of one) and
    bitcasts it before a store of another type; a pointer to pointers is opaque."""
    module = _llvm_module(STORE_THROUGH_TYPED_POINTERS)
    text = _direct(module)
    assert text.count("bitcast") == 2
    _check_same_module(module)


def test_symbols_outside_printable_ascii_are_escaped_as_llvmlite_escapes_them():
    """Value names are plain identifiers in xDSL; symbols (a function, a global) may be
    any string."""
    module = _llvm_module(
        """
        llvm.mlir.global internal constant @"gewicht α"(dense<1.0> : tensor<2xf32>) : !llvm.array<2 x f32>
        llvm.func @"say \\"x\\" \\\\ ü"() -> !llvm.ptr {
          %g = llvm.mlir.addressof @"gewicht α" : !llvm.ptr
          llvm.return %g : !llvm.ptr
        }
        """
    )
    assert "\\ce\\b1" in _direct(module)
    _check_same_module(module)


def test_an_op_the_printer_does_not_know_leaves_the_module_to_the_reference():
    module = _llvm_module(
        """
        llvm.func @f(%x: i32) -> i32 {
          %y = llvm.inline_asm "mov $0, $1", "=r,r" %x : (i32) -> i32
          llvm.return %y : i32
        }
        """
    )
    with pytest.raises(ir_printer._Unprintable):
        _direct(module)
    assert ir_printer.print_llvm_ir(module) == emit_llvm_ir(module)


def test_a_module_outside_the_llvm_dialect_is_refused_as_the_reference_refuses_it():
    module = _llvm_module("func.func @f() { func.return }")
    with pytest.raises(EmissionError, match="not in the llvm dialect"):
        ir_printer.print_llvm_ir(module)
