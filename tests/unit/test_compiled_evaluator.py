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
