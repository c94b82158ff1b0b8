"""te- and loop-level programs drawn from every graph op: each op's strategy, lowered
through te and loops, computes what the graph interpreter computes, at every level."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strato.interpreters.graph import run_graph
from strato.interpreters.loop import run_loops
from strato.interpreters.te import run_te
from strato.testing.graph_programs import ALL_KINDS
from strato.testing.lowered_programs import LoweredProgram, lower_graph_program, lowered_programs


def assert_same(actual: list[np.ndarray], expected: list[np.ndarray], where: str) -> None:
    assert len(actual) == len(expected), where
    for got, want in zip(actual, expected):
        assert got.shape == want.shape, where
        if want.dtype.kind in "biu":
            np.testing.assert_array_equal(got, want, err_msg=where)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=where)


@pytest.mark.parametrize("kind", ALL_KINDS)
@settings(
    max_examples=2,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_every_op_lowers_to_te_and_loops_that_agree(kind: str, data):
    program = data.draw(lowered_programs("te", max_ops=1, kinds=[kind]))
    inputs = program.random_inputs(seed=0)
    expected = run_graph(program.source.module, inputs)
    assert_same(run_te(program.module, inputs), expected, f"{kind} at te")
    loops = lower_graph_program(program.source, "loops")
    assert_same(run_loops(loops.module, inputs), expected, f"{kind} at loops")


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(program=lowered_programs("loops", max_ops=4))
def test_mixed_programs_agree_at_the_loop_level(program: LoweredProgram):
    assert not any(op.name.startswith(("graph.", "te.")) for op in program.module.walk())
    assert any(op.name.startswith("graph.") for op in program.source.module.walk())
    inputs = program.random_inputs(seed=1)
    expected = run_graph(program.source.module, inputs)
    assert_same(run_loops(program.module, inputs), expected, "loops")


def test_unknown_level_is_refused():
    with pytest.raises(ValueError, match="unknown level 'llvm'"):
        lower_graph_program(None, "llvm")
