"""graph-simplify-inference: each rewrite, equivalence on random programs, ResNet-18."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Block, Region, SSAValue
from xdsl.parser import Parser

from strato.context import make_context
from strato.dialects import graph
from strato.interpreters.graph import run_graph
from strato.pipeline import run_pipeline
from strato.testing.graph_programs import (
    INFERENCE_OP_KINDS,
    GraphProgram,
    conv_programs,
    graph_programs,
)


def simplify(text: str) -> ModuleOp:
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    run_pipeline(ctx, module, "graph-simplify-inference")
    module.verify()
    return module


def op_names(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("graph.")]


def check_equivalent(program: GraphProgram, spec: str, seed: int) -> None:
    inputs = program.random_inputs(seed)
    expected = run_graph(program.module, inputs)
    run_pipeline(make_context(), program.module, spec)
    program.module.verify()
    actual = run_graph(program.module, inputs)
    for a, e in zip(actual, expected, strict=True):
        assert a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4)


def test_batch_norm_folds_into_grouped_convolution():
    rng = np.random.default_rng(0)
    module = simplify(
        """
func.func @main(%x: tensor<1x4x5x5xf32>) -> tensor<1x6x5x5xf32> {
  %w = graph.constant dense<0.5> : tensor<6x2x3x3xf32>
  %b = graph.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
  %y = graph.conv %x, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 2 layout "NCHW" kernel_layout "OIHW" : (tensor<1x4x5x5xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x5x5xf32>
  %s = graph.constant dense<[1.0, 2.0, 0.5, 1.5, 1.0, 3.0]> : tensor<6xf32>
  %beta = graph.constant dense<[0.0, 1.0, -1.0, 0.5, 0.25, 2.0]> : tensor<6xf32>
  %mean = graph.constant dense<[0.5, 0.0, 1.0, -1.0, 2.0, 0.0]> : tensor<6xf32>
  %var = graph.constant dense<[1.0, 0.5, 2.0, 1.5, 0.25, 4.0]> : tensor<6xf32>
  %n = graph.batch_norm %y, %s, %beta, %mean, %var epsilon 1.000000e-05 : (tensor<1x6x5x5xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<1x6x5x5xf32>
  func.return %n : tensor<1x6x5x5xf32>
}"""
    )
    assert op_names(module) == ["graph.constant", "graph.constant", "graph.conv"]
    # equal to the unfolded program
    x = rng.standard_normal((1, 4, 5, 5)).astype(np.float32)
    conv = next(op for op in module.walk() if isinstance(op, graph.ConvOp))
    assert conv.bias is not None
    (folded,) = run_graph(module, [x])
    w = np.full((6, 2, 3, 3), 0.5, np.float32)
    padded = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    expected = np.zeros((1, 6, 5, 5))
    for m in range(6):
        group = m // 3
        for i in range(5):
            for j in range(5):
                window = padded[0, 2 * group : 2 * group + 2, i : i + 3, j : j + 3]
                expected[0, m, i, j] = np.sum(window * w[m])
    expected += np.arange(1, 7).reshape(6, 1, 1)
    s = np.array([1.0, 2.0, 0.5, 1.5, 1.0, 3.0])
    beta = np.array([0.0, 1.0, -1.0, 0.5, 0.25, 2.0])
    mean = np.array([0.5, 0.0, 1.0, -1.0, 2.0, 0.0])
    var = np.array([1.0, 0.5, 2.0, 1.5, 0.25, 4.0])
    channel = (slice(None), None, None)
    expected = (expected - mean[channel]) / np.sqrt(var[channel] + 1e-5) * s[channel] + beta[channel]
    np.testing.assert_allclose(folded, expected, rtol=1e-5, atol=1e-5)


def test_batch_norm_folds_into_grouped_transposed_convolution():
    rng = np.random.default_rng(1)
    block = Block(arg_types=[TensorType(f32, (1, 4, 3, 3))])

    def constant(array: np.ndarray) -> SSAValue:
        op = graph.ConstantOp.from_array(np.asarray(array, dtype=np.float32))
        block.add_op(op)
        return op.result

    weight = constant(rng.standard_normal((4, 3, 2, 2)))
    bias = constant(rng.standard_normal(6))
    conv = graph.ConvTransposeOp(block.args[0], weight, bias, strides=(2, 2), groups=2)
    block.add_op(conv)
    params = [rng.uniform(0.5, 1.5, 6), rng.standard_normal(6), rng.standard_normal(6), rng.uniform(0.5, 2, 6)]
    norm = graph.BatchNormOp(conv, *(constant(p) for p in params))
    block.add_op(norm)
    block.add_op(func.ReturnOp(norm))
    module = ModuleOp([func.FuncOp("main", ([block.args[0].type], [norm.result.type]), Region(block))])
    module.verify()
    x = rng.standard_normal((1, 4, 3, 3)).astype(np.float32)
    (expected,) = run_graph(module, [x])
    run_pipeline(make_context(), module, "graph-simplify-inference")
    module.verify()
    assert op_names(module) == ["graph.constant", "graph.constant", "graph.conv_transpose"]
    (actual,) = run_graph(module, [x])
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


def test_dense_on_rank_3_keeps_its_batch_norm_as_mul_add():
    # the normalized axis 1 is not the dense layer's output axis
    module = simplify(
        """
func.func @main(%x: tensor<2x3x4xf32>) -> tensor<2x3x5xf32> {
  %w = graph.constant dense<0.5> : tensor<5x4xf32>
  %y = graph.dense %x, %w : (tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>
  %c = graph.constant dense<1.0> : tensor<3xf32>
  %n = graph.batch_norm %y, %c, %c, %c, %c epsilon 1.000000e-05 : (tensor<2x3x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x5xf32>
  func.return %n : tensor<2x3x5xf32>
}"""
    )
    names = op_names(module)
    assert "graph.batch_norm" not in names
    assert names.count("graph.mul") == 1 and names.count("graph.add") == 1


def test_batch_norm_after_a_non_constant_weight_is_lowered():
    module = simplify(
        """
func.func @main(%x: tensor<1x2x3x3xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32> {
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %c = graph.constant dense<1.0> : tensor<2xf32>
  %n = graph.batch_norm %y, %c, %c, %c, %c epsilon 1.000000e-05 : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %n : tensor<1x2x3x3xf32>
}"""
    )
    assert op_names(module) == [
        "graph.conv",
        "graph.constant",
        "graph.constant",
        "graph.mul",
        "graph.add",
    ]


@given(program=graph_programs(max_ops=6, kinds=INFERENCE_OP_KINDS))
def test_simplification_preserves_semantics(program: GraphProgram):
    check_equivalent(program, "graph-simplify-inference", seed=5)
    for op in program.module.walk():
        assert not isinstance(op, (graph.IdentityOp, graph.DropoutOp, graph.BatchNormOp))
        if isinstance(op, (graph.ReshapeOp, graph.TransposeOp)):
            assert not isinstance(op.input.owner, type(op))
            assert op.input.type != op.result.type or isinstance(op, graph.TransposeOp)
        if isinstance(op, graph.TransposeOp):
            assert op.permutation != tuple(range(len(op.permutation)))


@given(program=conv_programs())
def test_simplification_of_convolutional_programs_preserves_semantics(program: GraphProgram):
    check_equivalent(program, "graph-simplify-inference", seed=6)
    for op in program.module.walk():
        assert not isinstance(op, (graph.IdentityOp, graph.DropoutOp, graph.BatchNormOp))


def _small_resnet18() -> ModuleOp:
    from strato.frontends.onnx import import_model
    from strato.zoo.resnet import build_resnet18

    return import_model(build_resnet18(image_size=32, width=8, num_classes=10))


def test_resnet18_has_no_batch_norm_after_simplification():
    module = _small_resnet18()
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    (expected,) = run_graph(module, [x])
    run_pipeline(make_context(), module, "graph-simplify-inference")
    module.verify()
    names = op_names(module)
    assert "graph.batch_norm" not in names
    # every batch normalization followed a convolution and folded into it
    assert names.count("graph.mul") == 0 and names.count("graph.conv") == 20
    (actual,) = run_graph(module, [x])
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4)


def test_resnet18_default_pipeline_gives_about_one_kernel_per_convolution():
    from strato.transforms.graph_plan_memory import kernels_of

    module = _small_resnet18()
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    (expected,) = run_graph(module, [x])
    run_pipeline(make_context(), module, "graph-default")
    module.verify()
    (function,) = [op for op in module.ops]
    kernels = kernels_of(function)  # type: ignore[arg-type]
    convolutions = [
        op
        for kernel in kernels
        for op in (kernel.body.block.ops if isinstance(kernel, graph.FusedOp) else [kernel])
        if op.name in ("graph.conv", "graph.blocked_conv")
    ]
    assert len(convolutions) == 20
    # one kernel a convolution (its bias, relu and residual add fused into it), plus
    # the image's layout transform, max pooling, the global pooling and the classifier
    assert len(kernels) <= len(convolutions) + 4
    (actual,) = run_graph(module, [x])
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4)


def _conv_transpose_module(x_shape, w_shape, seed: int, batch_norm: bool = False, **attributes):
    rng = np.random.default_rng(seed)
    block = Block(arg_types=[TensorType(f32, x_shape)])

    def constant(array: np.ndarray) -> SSAValue:
        op = graph.ConstantOp.from_array(np.asarray(array, dtype=np.float32))
        block.add_op(op)
        return op.result

    weight = constant(rng.standard_normal(w_shape))
    bias = constant(rng.standard_normal(w_shape[1] * attributes.get("groups", 1)))
    result: graph.GraphOp = graph.ConvTransposeOp(block.args[0], weight, bias, **attributes)
    block.add_op(result)
    if batch_norm:
        channels = static_shape_of(result)[1]
        params = [rng.uniform(0.5, 1.5, channels), rng.standard_normal(channels),
                  rng.standard_normal(channels), rng.uniform(0.5, 2, channels)]  # fmt: skip
        result = graph.BatchNormOp(result, *(constant(p) for p in params))
        block.add_op(result)
    block.add_op(func.ReturnOp(result))
    ftype = ([block.args[0].type], [result.results[0].type])
    module = ModuleOp([func.FuncOp("main", ftype, Region(block))])
    module.verify()
    return module, rng.standard_normal(x_shape).astype(np.float32)


def static_shape_of(op) -> tuple[int, ...]:
    return tuple(op.results[0].type.get_shape())


CONV_TRANSPOSE_CASES = {
    # (input, weight, attributes): the op graph-simplify-inference leaves
    "stride-1": ((1, 3, 5, 6), (3, 4, 3, 3), {"padding": (1, 0, 1, 2)}, "graph.conv"),
    "stride-2-phases": ((2, 3, 5, 4), (3, 4, 4, 3),
                        {"strides": (2, 3), "padding": (1, 0, 2, 1), "output_padding": (1, 2)},
                        "graph.conv"),
    "1x1-input-dense": ((2, 6, 1, 1), (6, 4, 4, 4), {"strides": (2, 2)}, "graph.dense"),
    "grouped-kept": ((1, 4, 3, 3), (4, 3, 2, 2), {"strides": (2, 2), "groups": 2},
                     "graph.conv_transpose"),
    "dilated-kept": ((1, 2, 4, 4), (2, 2, 3, 3), {"dilations": (2, 2)}, "graph.conv_transpose"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CONV_TRANSPOSE_CASES))
@pytest.mark.parametrize("batch_norm", [False, True])
def test_transposed_convolution_becomes_a_regular_one(case: str, batch_norm: bool):
    x_shape, w_shape, attributes, kept = CONV_TRANSPOSE_CASES[case]
    module, x = _conv_transpose_module(x_shape, w_shape, seed=3, batch_norm=batch_norm, **attributes)
    (expected,) = run_graph(module, [x])
    run_pipeline(make_context(), module, "graph-simplify-inference")
    module.verify()
    names = op_names(module)
    assert kept in names and "graph.batch_norm" not in names, names
    if kept != "graph.conv_transpose":
        assert "graph.conv_transpose" not in names
    # a batch normalization folds into the weights whatever the rewrite: no mul/add left
    assert "graph.mul" not in names and "graph.add" not in names
    (actual,) = run_graph(module, [x])
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4)
