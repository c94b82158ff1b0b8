"""te-inline-stages: element-wise stages disappear into their readers, values stay."""

from __future__ import annotations

import numpy as np
from hypothesis import given

from xdsl.parser import Parser

from strato.context import make_context
from strato.dialects import te
from strato.interpreters.te import run_te
from strato.pipeline import run_pipeline
from strato.testing.graph_programs import GraphProgram, graph_programs
from strato.testing.te_programs import TeProgram, te_programs

CHAIN = """
func.func @main(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
  %w = graph.constant dense<0.5> : tensor<4x8xf32>
  %b = graph.constant dense<0.1> : tensor<4xf32>
  %y = graph.dense %x, %w, %b : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %r = graph.relu %y : tensor<2x4xf32>
  %m = graph.mul %r, %r : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %m : tensor<2x4xf32>
}
"""


def test_dense_bias_relu_mul_becomes_two_stages():
    ctx = make_context()
    module = Parser(ctx, CHAIN).parse_module()
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    run_pipeline(ctx, module, "graph-fuse-ops,convert-graph-to-te")
    expected = run_te(module, [x])
    run_pipeline(ctx, module, "te-inline-stages")
    module.verify()
    stages = [op for op in module.walk() if isinstance(op, te.StageOp)]
    assert [type(s) for s in stages] == [te.ReduceOp, te.ComputeOp]
    np.testing.assert_array_equal(run_te(module, [x])[0], expected[0])


@given(program=te_programs())
def test_inlining_preserves_te_semantics(program: TeProgram):
    inputs = program.random_inputs(seed=5)
    expected = run_te(program.module, inputs)
    run_pipeline(make_context(), program.module, "te-inline-stages")
    program.module.verify()
    for a, e in zip(run_te(program.module, inputs), expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-6)


@given(program=graph_programs(max_ops=6))
def test_inlining_after_fusion_preserves_semantics(program: GraphProgram):
    inputs = program.random_inputs(seed=6)
    ctx = make_context()
    run_pipeline(ctx, program.module, "graph-fuse-ops,convert-graph-to-te")
    expected = run_te(program.module, inputs)
    run_pipeline(ctx, program.module, "te-inline-stages")
    program.module.verify()
    for a, e in zip(run_te(program.module, inputs), expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-6)


def test_a_stage_marked_materialize_keeps_its_buffer():
    """The bias stage marked `materialize` stays a stage of its own; relu and mul,
    unmarked, are inlined into the last stage as usual."""
    from xdsl.dialects.builtin import UnitAttr

    ctx = make_context()
    module = Parser(ctx, CHAIN).parse_module()
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    run_pipeline(ctx, module, "graph-fuse-ops,convert-graph-to-te")
    expected = run_te(module, [x])
    (bias,) = [op for op in module.walk() if isinstance(op, te.ComputeOp) and "bias" in op.stage.data]
    bias.attributes["materialize"] = UnitAttr()
    run_pipeline(ctx, module, "te-inline-stages")
    module.verify()
    stages = [op for op in module.walk() if isinstance(op, te.StageOp)]
    assert [type(s) for s in stages] == [te.ReduceOp, te.ComputeOp, te.ComputeOp]
    assert stages[1] is bias
    np.testing.assert_array_equal(run_te(module, [x])[0], expected[0])


UNIT_BLOCK_VIEW = """
func.func @main(%x: tensor<1x8x4x4xf32>) -> tensor<1x1x4x4x8xf32> {
  %w = graph.constant dense<0.5> : tensor<1x8x1x1x1x8xf32>
  %v = graph.layout_transform %x from "NCHW" to "NCHW1c" : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4x1xf32>
  %y = graph.blocked_conv %v, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW1c" kernel_layout "OIHW1i8o" out_layout "NCHW8c" : (tensor<1x8x4x4x1xf32>, tensor<1x8x1x1x1x8xf32>) -> tensor<1x1x4x4x8xf32>
  func.return %y : tensor<1x1x4x4x8xf32>
}
"""


def test_a_unit_block_view_is_read_through_by_the_convolution():
    """NCHW -> NCHW1c reads its input at its own indices but the unit one: the
    convolution's reduction reads the NCHW input in its place, and no stage copies it."""
    ctx = make_context()
    module = Parser(ctx, UNIT_BLOCK_VIEW).parse_module()
    x = np.random.default_rng(0).standard_normal((1, 8, 4, 4)).astype(np.float32)
    run_pipeline(ctx, module, "graph-fuse-ops,convert-graph-to-te")
    expected = run_te(module, [x])
    run_pipeline(ctx, module, "te-inline-stages")
    module.verify()
    stages = [op for op in module.walk() if isinstance(op, te.StageOp)]
    assert [type(s) for s in stages] == [te.ReduceOp]
    np.testing.assert_array_equal(run_te(module, [x])[0], expected[0])
    np.testing.assert_allclose(
        expected[0][0, 0].transpose(2, 0, 1), 0.5 * x[0].sum(axis=0, keepdims=True).repeat(8, 0), rtol=1e-5
    )
