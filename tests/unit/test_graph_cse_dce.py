"""Upstream cse and dce on graph programs: they find graph ops side-effect free and keep
the program's meaning."""

from __future__ import annotations

import numpy as np
from hypothesis import given

from xdsl.dialects import func

from strato.context import make_context
from strato.dialects import graph
from strato.interpreters.graph import run_graph
from strato.pipeline import run_pipeline
from strato.testing.graph_programs import GraphProgram, graph_programs


def _duplicate_body(program: GraphProgram) -> None:
    """Append a second copy of every graph op so cse has work to do."""
    function = next(op for op in program.module.walk() if isinstance(op, func.FuncOp))
    block = function.body.block
    ret = block.last_op
    for op in [o for o in block.ops if isinstance(o, graph.GraphOp)]:
        block.insert_op_before(op.clone(), ret)


@given(program=graph_programs(max_ops=6))
def test_cse_and_dce_preserve_semantics(program: GraphProgram):
    _duplicate_body(program)
    program.module.verify()
    inputs = program.random_inputs(seed=7)
    expected = run_graph(program.module, inputs)
    before = sum(1 for _ in program.module.walk())
    run_pipeline(make_context(), program.module, "cse,dce")
    program.module.verify()
    assert sum(1 for _ in program.module.walk()) < before
    for a, e in zip(run_graph(program.module, inputs), expected, strict=True):
        np.testing.assert_array_equal(a, e)
