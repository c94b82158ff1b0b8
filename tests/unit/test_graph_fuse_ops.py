"""graph-fuse-ops: grouping rules and equivalence on random programs."""

from __future__ import annotations

import numpy as np
from hypothesis import given

from xdsl.parser import Parser

from strato.context import make_context
from strato.dialects import graph
from strato.interpreters.graph import run_graph
from strato.pipeline import run_pipeline
from strato.testing.graph_programs import GraphProgram, graph_programs


def fuse(text: str):
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    run_pipeline(ctx, module, "graph-fuse-ops")
    module.verify()
    return module


def groups(module) -> list[str]:
    return [op.label.data for op in module.walk() if isinstance(op, graph.FusedOp)]


def test_elementwise_fuses_into_dense_output():
    module = fuse(
        """
func.func @main(%x: tensor<1x4xf32>, %s: tensor<1x2xf32>) -> tensor<1x2xf32> {
  %w = graph.constant dense<0.5> : tensor<2x4xf32>
  %y = graph.dense %x, %w : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
  %a = graph.add %y, %s : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
  %r = graph.relu %a : tensor<1x2xf32>
  func.return %r : tensor<1x2xf32>
}"""
    )
    assert groups(module) == ["dense_add_relu"]


def test_out_fusable_ops_do_not_fuse_with_each_other():
    module = fuse(
        """
func.func @main(%x: tensor<1x4xf32>) -> tensor<1x2xf32> {
  %w = graph.constant dense<0.5> : tensor<4x4xf32>
  %v = graph.constant dense<0.5> : tensor<2x4xf32>
  %y = graph.dense %x, %w : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
  %r = graph.relu %y : tensor<1x4xf32>
  %z = graph.dense %r, %v : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
  func.return %z : tensor<1x2xf32>
}"""
    )
    assert groups(module) == ["dense_relu"]
    top = [op.name for op in module.walk() if op.parent_op() is not None
           and op.parent_op().name == "func.func"]
    assert top.count("graph.dense") == 1


def test_a_value_used_twice_stays_a_group_boundary():
    module = fuse(
        """
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r = graph.relu %x : tensor<4xf32>
  %a = graph.add %r, %r : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %m = graph.mul %a, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %m, %a : tensor<4xf32>, tensor<4xf32>
}"""
    )
    # relu's result feeds add twice (one user), add's result leaves the function
    assert groups(module) == ["relu_add"]


def test_a_group_never_reads_what_its_own_split_feeds_outside():
    """split -> relu on each half -> concat: the second relu reads a split result and
    feeds the concat, so split and concat in one group would each wait for the other."""
    text = """
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %a, %b = graph.split %x axis 1 : (tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>)
  %ra = graph.relu %a : tensor<2x2xf32>
  %rb = graph.relu %b : tensor<2x2xf32>
  %y = graph.concat %ra, %rb axis 1 : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}"""
    module = fuse(text)
    assert groups(module) == ["split_relu", "relu_concat"]
    (function,) = [op for op in module.walk() if op.name == "func.func"]
    defined = set(function.body.block.args)
    for op in function.body.block.ops:
        assert all(operand in defined for operand in op.operands), op.name
        defined.update(op.results)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_array_equal(run_graph(module, [x])[0], np.maximum(x, 0))


@given(program=graph_programs(max_ops=6))
def test_fusion_preserves_semantics(program: GraphProgram):
    inputs = program.random_inputs(seed=1)
    expected = run_graph(program.module, inputs)
    ctx = make_context()
    run_pipeline(ctx, program.module, "graph-fuse-ops")
    program.module.verify()
    actual = run_graph(program.module, inputs)
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-6)
