"""graph-fold-constants: folding and equivalence on random programs."""

from __future__ import annotations

import numpy as np
from hypothesis import given

from xdsl.parser import Parser

from strato.context import make_context
from strato.dialects import graph
from strato.interpreters.graph import run_graph
from strato.pipeline import run_pipeline
from strato.testing.graph_programs import GraphProgram, graph_programs


def test_constant_chain_folds_to_one_constant():
    ctx = make_context()
    module = Parser(
        ctx,
        """
func.func @main(%x: tensor<3x2xf32>) -> tensor<3x1xf32> {
  %w = graph.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %t = graph.transpose %w [1, 0] : (tensor<1x2xf32>) -> tensor<2x1xf32>
  %s = graph.mul %t, %t : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %y = graph.matmul %x, %s : (tensor<3x2xf32>, tensor<2x1xf32>) -> tensor<3x1xf32>
  func.return %y : tensor<3x1xf32>
}""",
    ).parse_module()
    run_pipeline(ctx, module, "graph-fold-constants")
    module.verify()
    names = [op.name for op in module.walk()][2:]
    assert names == ["graph.constant", "graph.matmul", "func.return"]
    constant = next(op for op in module.walk() if isinstance(op, graph.ConstantOp))
    np.testing.assert_array_equal(graph.ConstantOp.evaluate(constant, [])[0], [[1.0], [4.0]])


@given(program=graph_programs(max_ops=6))
def test_folding_preserves_semantics(program: GraphProgram):
    inputs = program.random_inputs(seed=2)
    expected = run_graph(program.module, inputs)
    run_pipeline(make_context(), program.module, "graph-fold-constants")
    program.module.verify()
    for op in program.module.walk():
        if isinstance(op, graph.GraphOp) and not isinstance(op, graph.ConstantOp):
            assert not all(isinstance(o.owner, graph.ConstantOp) for o in op.operands)
    actual = run_graph(program.module, inputs)
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-6)
