"""Schedules never change results: random valid schedules of random te programs
interpret to what the unscheduled nests compute, and their traces round-trip through
JSON and replay to the same IR. Every primitive gets its own property test."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strato.interpreters.loop import run_loops
from strato.schedule import PRIMITIVES, Schedule, Trace
from strato.schedule.emit import rebuild_kernel
from strato.testing.schedules import DRAWERS, UNDRAWN, lower_to_loops, scheduled_programs
from strato.testing.te_programs import TeProgram, te_programs

PROPERTY_PRIMITIVES = sorted(set(PRIMITIVES) - UNDRAWN)


def test_every_primitive_has_property_coverage():
    # a new primitive fails here until strato.testing.schedules can draw it
    assert set(DRAWERS) == set(PROPERTY_PRIMITIVES) == set(PRIMITIVES)
    assert not UNDRAWN


def _kernel_text(module, name: str) -> str:
    for op in module.ops:
        if getattr(op, "sym_name", None) is not None and op.sym_name.data == name:
            return str(op)
    raise AssertionError(f"no @{name}")


@pytest.mark.parametrize("primitive", PROPERTY_PRIMITIVES)
# programs the required primitive cannot apply to (no producer and consumer for
# reverse_compute_at, say) are drawn again
@settings(max_examples=10, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_a_schedule_never_changes_results(primitive: str, data: st.DataObject):
    case = data.draw(scheduled_programs(require=primitive), label="case")
    assert primitive in case.applied
    case.module.verify()
    inputs = case.program.random_inputs(seed=0)
    expected = run_loops(case.reference, inputs)
    actual = run_loops(case.module, inputs)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        # floats within rounding: a schedule may only regroup what the nest computes
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)

    fresh = lower_to_loops(case.program.module)
    for trace in case.traces:
        again = Trace.from_json(trace.to_json())
        assert again == trace
        again.replay(Schedule(fresh, kernel=trace.kernel))
        assert _kernel_text(fresh, trace.kernel) == _kernel_text(case.module, trace.kernel)


@settings(max_examples=10)
@given(program=te_programs())
def test_an_unscheduled_kernel_rebuilds_to_the_lowered_one(program: TeProgram):
    module = lower_to_loops(program.module)
    for op in list(module.ops):
        if "loop.kernel" in op.attributes:
            sch = Schedule(module, kernel=op.sym_name.data)
            assert str(rebuild_kernel(sch.state)) == str(sch.kernel)
