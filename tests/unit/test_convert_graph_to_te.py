"""convert-graph-to-te: structure of the result and equivalence on random programs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Block, Region
from xdsl.irdl import irdl_op_definition
from xdsl.parser import Parser

from strato.context import make_context
from strato.dialects import graph, te
from strato.diagnostics import StratoError
from strato.interpreters.graph import run_graph
from strato.pipeline import run_pipeline
from strato.testing.graph_programs import GraphProgram, graph_programs

MLP = """
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = graph.constant dense<0.25> : tensor<3x4xf32>
  %b = graph.constant dense<[0.5, -1.0, 2.0]> : tensor<3xf32>
  %y = graph.dense %x, %w, %b : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %r = graph.relu %y : tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
"""


def lower(text: str):
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    run_pipeline(ctx, module, "convert-graph-to-te")
    module.verify()
    return module


def test_each_op_becomes_a_primitive_and_a_call():
    module = lower(MLP)
    primitives = [op for op in module.ops if isinstance(op, te.PrimitiveOp)]
    assert [p.sym_name.data for p in primitives] == ["dense_0", "relu_1"]
    calls = [op for op in module.walk() if isinstance(op, te.CallOp)]
    assert [c.callee.string_value() for c in calls] == ["dense_0", "relu_1"]
    assert not any(op.name.startswith("graph.") for op in module.walk())


def test_mlp_matches_graph_interpreter():
    from strato.interpreters.te import run_te

    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    ctx = make_context()
    expected = run_graph(Parser(ctx, MLP).parse_module(), [x])
    actual = run_te(lower(MLP), [x])
    np.testing.assert_allclose(actual[0], expected[0], rtol=1e-5, atol=1e-6)


@irdl_op_definition
class NoStrategyOp(graph.UnaryElementwiseOp):
    name = "graph.test_no_strategy"


def test_op_without_strategy_is_a_diagnostic():
    block = Block(arg_types=[TensorType(f32, [4])])
    op = NoStrategyOp(block.args[0])
    block.add_ops([op, func.ReturnOp(op.result)])
    function = func.FuncOp("main", ([TensorType(f32, [4])], [TensorType(f32, [4])]), Region(block))
    module = ModuleOp([function])
    with pytest.raises(StratoError, match="'graph.test_no_strategy' has no tensor-expression strategy"):
        run_pipeline(make_context(), module, "convert-graph-to-te")


def test_legality_check_names_the_first_illegal_op():
    from strato.legality import check_legal

    module = lower(MLP)
    with pytest.raises(StratoError, match=r"'te\.primitive' is still present after test-pass"):
        check_legal(module, "test-pass", illegal_dialects={"te"})


@given(program=graph_programs())
def test_pass_preserves_semantics(program: GraphProgram):
    from strato.interpreters.te import run_te

    inputs = program.random_inputs(seed=0)
    expected = run_graph(program.module, inputs)
    ctx = make_context()
    run_pipeline(ctx, program.module, "convert-graph-to-te")
    program.module.verify()
    actual = run_te(program.module, inputs)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)
