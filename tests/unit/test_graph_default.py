"""graph-default: the whole graph-level pipeline keeps the program's meaning, at the
graph level and after lowering to tensor expressions."""

from __future__ import annotations

import numpy as np
from hypothesis import given

from strato.context import make_context
from strato.interpreters.graph import run_graph
from strato.interpreters.te import run_te
from strato.pipeline import run_pipeline
from strato.testing.graph_programs import GraphProgram, graph_programs


@given(program=graph_programs(max_ops=6))
def test_default_pipeline_preserves_semantics(program: GraphProgram):
    inputs = program.random_inputs(seed=4)
    expected = run_graph(program.module, inputs)
    ctx = make_context()
    run_pipeline(ctx, program.module, "graph-default")
    program.module.verify()
    for a, e in zip(run_graph(program.module, inputs), expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
    run_pipeline(ctx, program.module, "convert-graph-to-te")
    program.module.verify()
    for a, e in zip(run_te(program.module, inputs), expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)
