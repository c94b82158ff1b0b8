"""graph-plan-memory: the arena is valid (no live overlap), reuses memory, and leaves
the program's meaning alone."""

from __future__ import annotations

import numpy as np
from hypothesis import given

from xdsl.dialects import func
from xdsl.parser import Parser

from strato.context import make_context
from strato.interpreters.graph import run_graph
from strato.pipeline import run_pipeline
from strato.testing.graph_programs import GraphProgram, graph_programs
from strato.transforms.graph_plan_memory import plan_memory

CHAIN = """
func.func @main(%x: tensor<256xf32>) -> tensor<256xf32> {
  %a = graph.relu %x : tensor<256xf32>
  %b = graph.relu %a : tensor<256xf32>
  %c = graph.relu %b : tensor<256xf32>
  %d = graph.relu %c : tensor<256xf32>
  func.return %d : tensor<256xf32>
}
"""


def test_a_chain_needs_two_buffers():
    module = Parser(make_context(), CHAIN).parse_module()
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    plan = plan_memory(function)
    assert plan.intermediate_bytes == 3 * 1024
    assert plan.arena_bytes == 2 * 1024


@given(program=graph_programs(max_ops=8))
def test_live_buffers_never_overlap(program: GraphProgram):
    inputs = program.random_inputs(seed=3)
    expected = run_graph(program.module, inputs)
    function = next(op for op in program.module.walk() if isinstance(op, func.FuncOp))
    plan = plan_memory(function)
    for a in plan.buffers:
        for b in plan.buffers:
            if a is b or a.end < b.start or b.end < a.start:
                continue
            assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset
    assert plan.arena_bytes <= sum((b.size + 63) // 64 * 64 for b in plan.buffers)
    run_pipeline(make_context(), program.module, "graph-plan-memory")
    program.module.verify()
    for a, e in zip(run_graph(program.module, inputs), expected, strict=True):
        np.testing.assert_array_equal(a, e)
