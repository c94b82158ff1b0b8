"""loop-linearize-views: accesses through views of run-time shape become accesses of
their flat buffer, and keep the program's meaning (interpreted before and after, and
compiled)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from xdsl.dialects import memref

from strato.interpreters.loop import run_loops
from strato.targets.llvm.kernels import compile_loops
from strato.testing.llvm_programs import ViewProgram, view_programs
from strato.transforms.loop_linearize_views import linearize_views


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=view_programs())
def test_linearized_views_compute_what_the_views_computed(program: ViewProgram):
    module = program.module()
    module.verify()
    x = program.random_input(seed=0)
    shapes = [(program.output_size,)]
    (before,) = run_loops(module, [x, *program.arguments], output_shapes=shapes)
    linearized = module.clone()
    linearize_views(linearized)
    linearized.verify()
    remaining = [op for op in linearized.walk() if isinstance(op, memref.ReinterpretCastOp)]
    assert all(op.result.uses for op in remaining)
    (after,) = run_loops(linearized, [x, *program.arguments], output_shapes=shapes)
    np.testing.assert_array_equal(after, before)
    compiled = np.full(program.output_size, np.nan, np.float32)
    compile_loops(module, threads=2).function("view")(x, compiled, *program.arguments)
    np.testing.assert_allclose(compiled, before, rtol=1e-6, atol=0)
