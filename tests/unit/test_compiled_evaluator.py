"""The equivalence checker's compiled evaluator of loop programs agrees with the loop
interpreter (the oracle), and takes over only from programs too large to interpret."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings

from strato.interpreters.loop import run_loops
from strato.testing import equivalence
from strato.testing.lowered_programs import LoweredProgram, lowered_programs


def _scheduled(module):
    from strato.targets.registry import get_target, run_stages

    scheduled = module.clone()
    stages = [s for s in get_target("llvm -threads=1").stages() if s.name == "schedule"]
    assert stages
    run_stages(stages, scheduled)
    return scheduled


@settings(max_examples=12, deadline=None)
@given(program=lowered_programs("loops", max_ops=4))
def test_compiled_and_interpreted_loop_programs_agree(program: LoweredProgram):
    """On the loop nests and on the scheduled ones (vectorized, unrolled, tiled)."""
    for module in (program.module, _scheduled(program.module)):
        _agree(program, module)


def _agree(program: LoweredProgram, module) -> None:
    assert equivalence.can_compile(module)
    for seed in (0, 1):
        inputs = program.edge_inputs(seed, nonfinite=False) if seed else program.random_inputs(seed)
        expected = run_loops(module, inputs)
        compiled = equivalence.run_compiled_loops(module, inputs)
        assert len(compiled) == len(expected)
        for got, want in zip(compiled, expected, strict=True):
            assert got.dtype == want.dtype and got.shape == want.shape
            if want.dtype.kind == "f":
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
            else:
                np.testing.assert_array_equal(got, want)


@settings(max_examples=5, deadline=None)
@given(program=lowered_programs("loops", max_ops=3))
def test_small_programs_stay_with_the_interpreter(program: LoweredProgram):
    if equivalence.loop_steps(program.module) <= equivalence.MAX_INTERPRETED_LOOP_STEPS:
        assert equivalence.evaluator_of(program.module) == "loop interpreter"


def test_a_large_program_runs_compiled_and_matches_the_graph(tmp_path):
    from strato import zoo
    from strato.frontends.onnx import import_onnx
    from strato.interpreters.graph import run_graph
    from strato.targets.registry import get_target, run_stages

    module = import_onnx(zoo.build_model("mlp")).module
    x = np.random.default_rng(0).standard_normal((1, 784)).astype(np.float32)
    (expected,) = run_graph(module, [x])
    run_stages(get_target("llvm -threads=1").stages()[1:], module)  # to scheduled loops
    assert equivalence.evaluator_of(module) == "compiled (LLVM)"
    (got,) = equivalence.interpret(module, [x])
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


_TWO_KERNELS = """
func.func @scale_0(%x: memref<4x8xf32>, %y: memref<4x8xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 4 axis "i" {
    loop.for %j = 0 to 8 axis "j" {
      %v = memref.load %x[%i, %j] : memref<4x8xf32>
      %c = arith.constant SCALE : f32
      %m = arith.mulf %v, %c : f32
      memref.store %m, %y[%i, %j] : memref<4x8xf32>
    }
  }
  func.return
}
func.func @relu_1(%y: memref<4x8xf32>, %z: memref<4x8xf32> {loop.output}) attributes {loop.kernel} {
  loop.for %i = 0 to 4 axis "i" {
    loop.for %j = 0 to 8 axis "j" {
      %v = memref.load %y[%i, %j] : memref<4x8xf32>
      %c = arith.constant 0.0 : f32
      %m = arith.maximumf %v, %c : f32
      memref.store %m, %z[%i, %j] : memref<4x8xf32>
    }
  }
  func.return
}
func.func @main(%x: memref<4x8xf32>, %z: memref<4x8xf32> {loop.output}) {
  %y = memref.alloc() : memref<4x8xf32>
  func.call @scale_0(%x, %y) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  func.call @RELU(%y, %z) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  memref.dealloc %y : memref<4x8xf32>
  func.return
}
"""


def _two_kernels(scale: str = "2.0", relu: str = "relu_1"):
    """A loop program of two kernels: its first multiplies by `scale`, its second (named
    `relu`) is a ReLU."""
    from xdsl.parser import Parser

    from strato.context import make_context

    text = _TWO_KERNELS.replace("SCALE", scale).replace("relu_1", relu).replace("RELU", relu)
    return Parser(make_context(), text).parse_module()


def _x(seed: int = 0) -> list[np.ndarray]:
    return [np.random.default_rng(seed).standard_normal((4, 8)).astype(np.float32)]


def test_the_compiled_evaluator_compiles_only_kernels_it_has_not_compiled():
    """Evaluated again, a program compiles no kernel (its entry only); after a change
    to one of its kernels, that kernel only; a kernel renamed (as loop-dedup-kernels
    renames them) is the same kernel."""
    compiler = equivalence.LoopCompiler()
    module = _two_kernels()
    (first,) = compiler.compile(module)(_x())
    assert (compiler.kernels_compiled, compiler.entries_compiled) == (2, 1)
    np.testing.assert_array_equal(first, np.maximum(_x()[0] * 2, 0))

    (again,) = compiler.compile(module)(_x())
    assert (compiler.kernels_compiled, compiler.entries_compiled) == (2, 2)
    np.testing.assert_array_equal(again, first)

    changed = _two_kernels(scale="3.0")
    (got,) = compiler.compile(changed)(_x())
    assert (compiler.kernels_compiled, compiler.entries_compiled) == (3, 3)
    (want,) = run_loops(changed, _x())
    np.testing.assert_array_equal(got, want)

    renamed = _two_kernels(relu="max_zero_7")
    (got,) = compiler.compile(renamed)(_x(1))
    assert (compiler.kernels_compiled, compiler.entries_compiled) == (3, 4)
    (want,) = run_loops(renamed, _x(1))
    np.testing.assert_array_equal(got, want)


def test_a_check_compiles_each_program_once_for_all_inputs(monkeypatch):
    """run_all compiles a program the compiled evaluator runs once, whatever the number
    of inputs, and the results are the loop interpreter's."""
    compiler = equivalence.LoopCompiler()
    monkeypatch.setattr(equivalence, "LOOP_COMPILER", compiler)
    monkeypatch.setattr(equivalence, "MAX_INTERPRETED_LOOP_STEPS", 0)
    module = _two_kernels()
    assert equivalence.evaluator_of(module) == "compiled (LLVM)"
    inputs = [_x(seed) for seed in range(3)]
    outcomes = equivalence.run_all(module, inputs)
    assert (compiler.kernels_compiled, compiler.entries_compiled) == (2, 1)
    for x, outcome in zip(inputs, outcomes, strict=True):
        (want,) = run_loops(module, x)
        np.testing.assert_array_equal(outcome[0], want)


def test_the_compiled_evaluator_keeps_its_kernels_in_the_compile_cache(tmp_path, monkeypatch):
    """With the compile cache on, a kernel compiled by one evaluator (one process) is
    not compiled again by the next."""
    monkeypatch.setenv("STRATO_CACHE", "1")
    monkeypatch.setenv("STRATO_CACHE_DIR", str(tmp_path / "cache"))
    module = _two_kernels()
    first = equivalence.LoopCompiler()
    (expected,) = first.compile(module)(_x())
    assert first.kernels_compiled == 2
    second = equivalence.LoopCompiler()
    (got,) = second.compile(module)(_x())
    assert second.kernels_compiled == 0
    np.testing.assert_array_equal(got, expected)


def test_the_in_process_memo_keeps_the_most_recent_kernels():
    compiler = equivalence.LoopCompiler(memo_size=1)
    compiler.compile(_two_kernels())
    assert compiler.kernels_compiled == 2 and len(compiler.objects) == 1
    compiler.compile(_two_kernels())
    assert compiler.kernels_compiled == 3  # the kernel dropped from the memo, again
