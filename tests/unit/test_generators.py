"""strato.testing generators: every registered graph op has one, and what it draws
verifies and runs in the graph interpreter (edge-value inputs included)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from strato.dialects import graph
from strato.interpreters.graph import run_graph
from strato.testing.graph_programs import GraphProgram, edge_array, graph_programs
from strato.testing.op_generators import ALL_GRAPH_OPS, OP_GENERATORS


def test_every_registered_graph_op_has_a_generator():
    registered = {op.name for op in graph.Graph.operations}
    missing = sorted(registered - set(OP_GENERATORS))
    assert not missing, f"graph ops without a generator in strato/testing/op_generators.py: {missing}"
    assert set(ALL_GRAPH_OPS) == registered


@pytest.mark.parametrize("name", ALL_GRAPH_OPS)
def test_generator_draws_its_op_and_it_runs(name: str):
    drawn: list[GraphProgram] = []

    @settings(max_examples=4, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(program=graph_programs(max_ops=2, kinds=[name]))
    def check(program: GraphProgram):
        program.module.verify()
        with np.errstate(all="ignore"):
            for inputs in (program.random_inputs(0), program.edge_inputs(1)):
                results = run_graph(program.module, inputs)
                assert results
        if any(op.name == name for op in program.module.walk()):
            drawn.append(program)

    check()
    assert drawn, f"the generator of {name} never produced it"


def test_edge_inputs_hold_edge_values():
    rng = np.random.default_rng(0)
    floats = edge_array(rng, (200,), np.dtype(np.float32))
    assert np.isnan(floats).any() and np.isinf(floats).any() and (floats == 0).any()
    ints = edge_array(rng, (200,), np.dtype(np.int32))
    assert ints.min() == np.iinfo(np.int32).min and ints.max() == np.iinfo(np.int32).max
    finite = edge_array(rng, (200,), np.dtype(np.float32), nonfinite=False)
    assert np.isfinite(finite).all()
