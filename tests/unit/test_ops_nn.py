"""Convolution and pooling: each ONNX operator against onnxruntime through the importer
and the graph interpreter; the strategies against the graph interpreter through the te
interpreter, the loop interpreter and the compiled LLVM path; the stages the strategies
build; fusion; and every import diagnostic."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32, i64
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from strato.context import make_context
from strato.diagnostics import ModelImportError
from strato.dialects import graph, te
from strato.dialects.graph import PatternKind, pattern_kind_of
from strato.frontends.onnx import import_model
from strato.interpreters.graph import run_graph
from strato.interpreters.te import run_te
from strato.pipeline import run_pipeline
from strato.testing.optional import optional_module

ort = optional_module("onnxruntime")

OPSET = 19


def make_model(
    op_type: str,
    inputs: dict[str, list[int]],
    output: list[int] | None = None,
    initializers: dict[str, np.ndarray] | None = None,
    outputs: int = 1,
    **attrs,
) -> onnx.ModelProto:
    """A one-node model; the output shape is left to shape inference when not given."""
    initializers = initializers or {}
    names = ["y", "indices"][:outputs]
    node = helper.make_node(op_type, [*inputs, *initializers], names, **attrs)
    graph_proto = helper.make_graph(
        [node],
        "test_graph",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, output) for n in names],
        [numpy_helper.from_array(a, n) for n, a in initializers.items()],
    )
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 9
    if output is None:
        inferred = onnx.shape_inference.infer_shapes(model)
        for declared, found in zip(model.graph.output, inferred.graph.output):
            if found.type.tensor_type.HasField("shape"):
                declared.CopyFrom(found)
            else:
                # invalid models: a shape the checker accepts, for the converter to judge
                declared.type.tensor_type.shape.SetInParent()
    return model


def rand(*shape: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def graph_inputs(model: onnx.ModelProto, seed: int = 0) -> list[np.ndarray]:
    inits = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(seed)
    arrays = []
    for value in model.graph.input:
        if value.name in inits:
            continue
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        arrays.append(rng.standard_normal(shape).astype(np.float32))
    return arrays


def run_onnxruntime(model: onnx.ModelProto, arrays: list[np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    inits = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    return session.run(None, dict(zip(names, arrays, strict=True)))


def conv(x, w, b=None, **attrs) -> onnx.ModelProto:
    """Conv or ConvTranspose of an input of shape x with a constant weight (and bias)."""
    op_type = attrs.pop("op_type", "Conv")
    weights = {"w": rand(*w, seed=2)}
    if b is not None:
        weights["b"] = rand(b, seed=3)
    return make_model(op_type, {"x": x}, initializers=weights, **attrs)


def pool(op_type, x, **attrs) -> onnx.ModelProto:
    return make_model(op_type, {"x": x}, **attrs)


CONV_CASES = {
    "default": conv([1, 3, 7, 7], [4, 3, 3, 3]),
    "bias": conv([2, 3, 6, 5], [4, 3, 3, 2], 4),
    "pads": conv([1, 2, 5, 5], [3, 2, 3, 3], 3, pads=[1, 1, 1, 1]),
    "asymmetric_pads": conv([1, 2, 6, 5], [3, 2, 3, 3], pads=[0, 2, 1, 0]),
    "strides": conv([1, 2, 9, 8], [3, 2, 3, 3], strides=[2, 3], pads=[1, 1, 1, 1]),
    "dilations": conv([1, 2, 9, 9], [2, 2, 3, 3], dilations=[2, 3], pads=[2, 1, 2, 1]),
    "groups": conv([1, 4, 6, 6], [6, 2, 3, 3], 6, group=2, pads=[1, 1, 1, 1]),
    "depthwise": conv([2, 4, 6, 6], [4, 1, 3, 3], 4, group=4, pads=[1, 1, 1, 1]),
    "depthwise_multiplier": conv([1, 3, 5, 5], [6, 1, 3, 3], group=3, strides=[2, 2]),
    "pointwise": conv([1, 8, 4, 4], [5, 8, 1, 1], 5),
    "same_upper": conv([1, 2, 6, 7], [3, 2, 4, 3], auto_pad="SAME_UPPER", strides=[2, 2]),
    "same_lower": conv([1, 2, 6, 7], [3, 2, 4, 3], auto_pad="SAME_LOWER", strides=[2, 2]),
    "valid": conv([1, 2, 6, 7], [3, 2, 3, 3], auto_pad="VALID", strides=[2, 1]),
    "conv1d": conv([2, 3, 10], [4, 3, 3], 4, strides=[2], pads=[1, 2], dilations=[2]),
    "conv3d": conv([1, 2, 4, 5, 5], [3, 2, 2, 3, 3], 3, pads=[0, 1, 1, 1, 1, 0]),
    "conv3d_groups": conv([1, 4, 3, 4, 4], [2, 2, 1, 2, 2], group=2, strides=[1, 2, 2]),
}

CONV_TRANSPOSE_CASES = {
    "default": conv([1, 2, 3, 3], [2, 3, 3, 3], op_type="ConvTranspose"),
    "bias": conv([2, 2, 3, 4], [2, 3, 2, 3], 3, op_type="ConvTranspose"),
    "strides": conv([1, 2, 3, 3], [2, 2, 3, 3], op_type="ConvTranspose", strides=[3, 2]),
    "pads": conv(
        [1, 2, 4, 4], [2, 2, 3, 3], op_type="ConvTranspose", strides=[2, 2], pads=[1, 0, 1, 2]
    ),
    "output_padding": conv(
        [1, 1, 3, 3],
        [1, 2, 3, 3],
        op_type="ConvTranspose",
        strides=[3, 2],
        output_padding=[1, 1],
    ),
    "output_shape": conv(
        [1, 1, 3, 3],
        [1, 2, 3, 3],
        op_type="ConvTranspose",
        strides=[3, 2],
        output_shape=[10, 8],
    ),
    "dilations": conv(
        [1, 2, 4, 4], [2, 2, 3, 2], op_type="ConvTranspose", dilations=[2, 3], strides=[2, 1]
    ),
    "groups": conv([1, 4, 3, 3], [4, 2, 3, 3], 4, op_type="ConvTranspose", group=2),
    "depthwise": conv([1, 3, 4, 4], [3, 1, 2, 2], op_type="ConvTranspose", group=3, strides=[2, 2]),
    "same_upper": conv(
        [1, 1, 3, 4], [1, 2, 3, 3], op_type="ConvTranspose", auto_pad="SAME_UPPER", strides=[2, 2]
    ),
    "same_lower": conv(
        [1, 1, 3, 4], [1, 2, 3, 3], op_type="ConvTranspose", auto_pad="SAME_LOWER", strides=[2, 2]
    ),
    "conv_transpose1d": conv([1, 2, 5], [2, 3, 3], 3, op_type="ConvTranspose", strides=[2]),
    "conv_transpose3d": conv(
        [1, 2, 2, 3, 3],
        [2, 2, 2, 2, 3],
        op_type="ConvTranspose",
        strides=[1, 2, 2],
        pads=[0, 1, 0, 0, 0, 1],
    ),
}

POOL_CASES = {
    "max_default": pool("MaxPool", [1, 3, 6, 6], kernel_shape=[2, 2]),
    "max_pads": pool(
        "MaxPool", [1, 2, 5, 5], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]
    ),
    "max_asymmetric": pool("MaxPool", [1, 2, 5, 6], kernel_shape=[3, 2], pads=[0, 1, 2, 0]),
    "max_ceil": pool("MaxPool", [1, 2, 7, 6], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    "max_ceil_pads": pool(
        "MaxPool",
        [1, 2, 6, 6],
        kernel_shape=[3, 3],
        strides=[2, 2],
        pads=[1, 1, 1, 1],
        ceil_mode=1,
    ),
    "max_dilations": pool("MaxPool", [1, 2, 7, 7], kernel_shape=[2, 3], dilations=[2, 2]),
    "max_same_upper": pool(
        "MaxPool", [1, 2, 5, 6], kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_UPPER"
    ),
    "max_same_lower": pool(
        "MaxPool", [1, 2, 5, 6], kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_LOWER"
    ),
    "max_1d": pool("MaxPool", [2, 3, 9], kernel_shape=[3], strides=[2], pads=[1, 1]),
    "max_3d": pool("MaxPool", [1, 2, 4, 4, 4], kernel_shape=[2, 2, 2], strides=[2, 1, 2]),
    "avg_default": pool("AveragePool", [1, 3, 6, 6], kernel_shape=[2, 2]),
    "avg_pads": pool("AveragePool", [1, 2, 5, 5], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    "avg_pads_count_include_pad": pool(
        "AveragePool", [1, 2, 5, 5], kernel_shape=[3, 3], pads=[1, 0, 2, 1], count_include_pad=1
    ),
    "avg_ceil": pool("AveragePool", [1, 2, 7, 6], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    "avg_ceil_count_include_pad": pool(
        "AveragePool",
        [1, 2, 6, 6],
        kernel_shape=[3, 3],
        strides=[2, 2],
        pads=[1, 1, 1, 1],
        ceil_mode=1,
        count_include_pad=1,
    ),
    "avg_dilations": pool(
        "AveragePool", [1, 2, 7, 7], kernel_shape=[2, 2], dilations=[2, 3], pads=[1, 1, 1, 1]
    ),
    "avg_same_upper": pool(
        "AveragePool", [1, 2, 5, 6], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"
    ),
    "avg_same_lower": pool(
        "AveragePool", [1, 2, 5, 6], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_LOWER"
    ),
    "avg_1d": pool("AveragePool", [2, 3, 9], kernel_shape=[3], strides=[2], pads=[1, 1]),
    "avg_3d": pool("AveragePool", [1, 2, 4, 5, 4], kernel_shape=[2, 3, 2], pads=[1, 1, 0, 0, 1, 1]),
    "global_1d": pool("GlobalAveragePool", [2, 3, 7]),
    "global_2d": pool("GlobalAveragePool", [2, 3, 5, 4]),
    "global_3d": pool("GlobalAveragePool", [1, 4, 2, 3, 4]),
}

ALL_CASES = {
    **{f"conv_{k}": v for k, v in CONV_CASES.items()},
    **{f"conv_transpose_{k}": v for k, v in CONV_TRANSPOSE_CASES.items()},
    **{f"pool_{k}": v for k, v in POOL_CASES.items()},
}


def lower(module: ModuleOp, spec: str) -> ModuleOp:
    run_pipeline(make_context(), module, spec)
    module.verify()
    return module


# ---------------------------------------------------------------------------
# import + graph interpreter against onnxruntime
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_import_matches_onnxruntime(name):
    model = ALL_CASES[name]
    arrays = graph_inputs(model)
    (expected,) = run_onnxruntime(model, arrays)
    (actual,) = run_graph(import_model(model), arrays)
    assert actual.shape == expected.shape
    assert actual.dtype == np.float32
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


def test_conv_weight_may_be_a_graph_input():
    model = make_model("Conv", {"x": [1, 2, 5, 5], "w": [3, 2, 3, 3]}, pads=[1, 1, 1, 1])
    arrays = graph_inputs(model)
    (expected,) = run_onnxruntime(model, arrays)
    (actual,) = run_graph(import_model(model), arrays)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


def test_imported_ops_and_attributes():
    # 6x6 input, 3x3 kernel, stride 2: 3x3 outputs need one padding row and column,
    # at the end for SAME_UPPER and at the beginning for SAME_LOWER
    for mode, padding in (("SAME_UPPER", (0, 0, 1, 1)), ("SAME_LOWER", (1, 1, 0, 0))):
        model = conv([1, 1, 6, 6], [1, 1, 3, 3], auto_pad=mode, strides=[2, 2])
        (op,) = [o for o in import_model(model).walk() if isinstance(o, graph.ConvOp)]
        assert op.padding.get_values() == padding
        assert op.data_layout == "NCHW" and op.kernel_layout.data == "OIHW"
    module = import_model(CONV_TRANSPOSE_CASES["output_shape"])
    (op,) = [o for o in module.walk() if isinstance(o, graph.ConvTransposeOp)]
    # natural output 9x7 asked to be 10x8: the difference becomes output padding
    assert op.output_padding_values == (1, 1)
    assert op.padding.get_values() == (0, 0, 0, 0)
    module = import_model(POOL_CASES["avg_ceil_count_include_pad"])
    (op,) = [o for o in module.walk() if isinstance(o, graph.AvgPoolOp)]
    assert op.is_ceil_mode and op.counts_padding


# ---------------------------------------------------------------------------
# strategies: te interpreter, loop interpreter, compiled
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_strategy_matches_graph_interpreter(name):
    module = import_model(ALL_CASES[name])
    arrays = graph_inputs(ALL_CASES[name])
    (expected,) = run_graph(module, arrays)
    (actual,) = run_te(lower(module, "convert-graph-to-te"), arrays)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_compiled_matches_graph_interpreter(name):
    import strato

    model = ALL_CASES[name]
    arrays = graph_inputs(model)
    (expected,) = run_graph(import_model(model), arrays)
    (actual,) = strato.compile(model)(*arrays)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


TINY = {
    "conv": conv([1, 4, 3, 3], [2, 2, 2, 2], 2, group=2, pads=[1, 0, 0, 1], strides=[2, 1]),
    "conv_transpose": conv(
        [1, 2, 2, 2],
        [2, 1, 2, 2],
        2,
        op_type="ConvTranspose",
        group=2,
        strides=[2, 1],
        pads=[1, 0, 0, 0],
    ),
    "avg_pool": pool("AveragePool", [1, 1, 3, 3], kernel_shape=[2, 2], pads=[1, 1, 0, 0]),
    "max_pool": pool("MaxPool", [1, 1, 4, 3], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
    "global_avg_pool": pool("GlobalAveragePool", [1, 2, 2, 3]),
}


@pytest.mark.parametrize("name", sorted(TINY))
def test_loop_level_matches_graph_interpreter(name):
    from strato.interpreters.loop import run_loops

    module = import_model(TINY[name])
    arrays = graph_inputs(TINY[name])
    (expected,) = run_graph(module, arrays)
    (actual,) = run_loops(lower(module, "convert-graph-to-te,convert-te-to-loops"), arrays)
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


def stages(model: onnx.ModelProto) -> list[tuple[str, str, tuple[int, ...]]]:
    """(stage name, te op, reduction extents) of every stage of the lowered model."""
    module = lower(import_model(model), "convert-graph-to-te")
    return [
        (op.stage.data, op.name, op.reduce_extents())
        for op in module.walk()
        if isinstance(op, te.StageOp)
    ]


def test_padded_conv_reads_a_pad_stage():
    assert stages(CONV_CASES["pads"]) == [
        ("pad", "te.compute", ()),
        ("conv", "te.reduce", (2, 3, 3)),
        ("bias_add", "te.compute", ()),
    ]


def test_unpadded_conv_reads_its_input_and_drops_unit_axes():
    assert stages(CONV_CASES["default"]) == [("conv", "te.reduce", (3, 3, 3))]
    # a 1x1 kernel reduces over channels only
    assert stages(CONV_CASES["pointwise"])[0] == ("conv", "te.reduce", (8,))
    # a depthwise convolution has one channel per group: kernel axes only
    assert stages(CONV_CASES["depthwise_multiplier"]) == [("conv", "te.reduce", (3, 3))]


def test_conv_transpose_gathers_without_padding_stage():
    assert stages(CONV_TRANSPOSE_CASES["pads"]) == [("conv_transpose", "te.reduce", (2, 3, 3))]


def test_pool_stages():
    assert stages(POOL_CASES["max_default"]) == [("max_pool", "te.reduce", (2, 2))]
    assert [s[0] for s in stages(POOL_CASES["max_ceil"])] == ["pad", "max_pool"]
    # every window counts 9 taps: a constant divisor
    assert [s[0] for s in stages(POOL_CASES["avg_default"])] == ["avg_pool_sum", "avg_pool"]
    # windows at the border count fewer taps
    assert [s[0] for s in stages(POOL_CASES["avg_pads"])] == [
        "pad",
        "avg_pool_sum",
        "window_count",
        "avg_pool",
    ]
    assert stages(POOL_CASES["global_2d"]) == [
        ("global_avg_pool_sum", "te.reduce", (5, 4)),
        ("global_avg_pool", "te.compute", ()),
    ]


# ---------------------------------------------------------------------------
# fusion
# ---------------------------------------------------------------------------


def test_every_op_is_out_elemwise_fusable():
    block = Block(arg_types=[TensorType(f32, [1, 2, 4, 4]), TensorType(f32, [2, 2, 1, 1])])
    x, w = block.args
    ops = [
        graph.ConvOp(x, w),
        graph.ConvTransposeOp(x, w),
        graph.MaxPoolOp(x, [2, 2]),
        graph.AvgPoolOp(x, [2, 2]),
        graph.GlobalAvgPoolOp(x),
    ]
    assert {pattern_kind_of(op) for op in ops} == {PatternKind.OUT_ELEMWISE_FUSABLE}


CONV_BIAS_RELU = """
func.func @main(%x: tensor<1x2x5x5xf32>, %s: tensor<1x3x5x5xf32>) -> tensor<1x3x1x1xf32> {
  %w = graph.constant dense<0.25> : tensor<3x2x3x3xf32>
  %b = graph.constant dense<0.5> : tensor<3xf32>
  %y = graph.conv %x, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x5x5xf32>
  %a = graph.add %y, %s : (tensor<1x3x5x5xf32>, tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32>
  %r = graph.relu %a : tensor<1x3x5x5xf32>
  %g = graph.global_avg_pool %r layout "NCHW" : (tensor<1x3x5x5xf32>) -> tensor<1x3x1x1xf32>
  func.return %g : tensor<1x3x1x1xf32>
}
"""


def test_elementwise_ops_fuse_into_the_conv_output():
    ctx = make_context()
    module = Parser(ctx, CONV_BIAS_RELU).parse_module()
    x, s = rand(1, 2, 5, 5), rand(1, 3, 5, 5, seed=4)
    expected = run_graph(module, [x, s])
    lower(module, "graph-fuse-ops")
    fused = [op for op in module.walk() if isinstance(op, graph.FusedOp)]
    assert [(op.label.data, op.pattern_kind) for op in fused] == [
        ("conv_add_relu", PatternKind.OUT_ELEMWISE_FUSABLE)
    ]
    # the fused group is one primitive holding the conv's stages and the epilogue
    actual = run_te(lower(module, "convert-graph-to-te"), [x, s])
    np.testing.assert_allclose(actual[0], expected[0], rtol=1e-5, atol=1e-6)
    primitives = [op for op in module.ops if isinstance(op, te.PrimitiveOp)]
    assert [
        [o.stage.data for o in p.body.block.ops if isinstance(o, te.StageOp)] for p in primitives
    ] == [["pad", "conv", "bias_add", "add", "relu"], ["global_avg_pool_sum", "global_avg_pool"]]


# ---------------------------------------------------------------------------
# property tests: strategies against the reference semantics
# ---------------------------------------------------------------------------


@st.composite
def windows(draw: st.DrawFn, rank: int) -> dict:
    """Kernel, strides, dilations and padding of a window over `rank` spatial dims,
    with padding smaller than the window (as ONNX requires)."""
    kernel = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    dilations = draw(st.lists(st.integers(1, 2), min_size=rank, max_size=rank))
    strides = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    extents = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    pads = [draw(st.integers(0, e - 1)) for e in extents + extents]
    return {"kernel": kernel, "strides": strides, "dilations": dilations, "padding": pads}


def function_of(build, input_shapes) -> ModuleOp:
    block = Block(arg_types=[TensorType(f32, s) for s in input_shapes])
    op = build(*block.args)
    block.add_ops([op, func.ReturnOp(op.results[0])])
    function = func.FuncOp(
        "main", ([a.type for a in block.args], [op.results[0].type]), Region(block)
    )
    return ModuleOp([function])


def check_strategy(module: ModuleOp, input_shapes, seed: int) -> None:
    module.verify()
    arrays = [rand(*s, seed=seed + n) for n, s in enumerate(input_shapes)]
    expected = run_graph(module, arrays)
    actual = run_te(lower(module, "convert-graph-to-te"), arrays)
    np.testing.assert_allclose(actual[0], expected[0], rtol=1e-4, atol=1e-5)


@given(
    rank=st.integers(1, 3),
    window=st.data(),
    groups=st.integers(1, 3),
    per_group=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    bias=st.booleans(),
    transpose=st.booleans(),
    seed=st.integers(0, 100),
)
def test_conv_strategies_match_reference(rank, window, groups, per_group, bias, transpose, seed):
    w = window.draw(windows(rank))
    sizes = window.draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank))
    channels, outputs = groups * per_group[0], groups * per_group[1]
    x_shape = [1, channels, *sizes]
    if transpose:
        w_shape = [channels, per_group[1], *w["kernel"]]
        extra = [window.draw(st.integers(0, s - 1)) for s in w["strides"]]

        def build(*args):
            return graph.ConvTransposeOp(
                *args,
                strides=w["strides"],
                padding=w["padding"],
                output_padding=extra,
                dilations=w["dilations"],
                groups=groups,
            )
    else:
        w_shape = [outputs, per_group[0], *w["kernel"]]

        def build(*args):
            return graph.ConvOp(
                *args,
                strides=w["strides"],
                padding=w["padding"],
                dilations=w["dilations"],
                groups=groups,
            )

    shapes = [x_shape, w_shape] + ([[outputs]] if bias else [])
    probe = function_of(build, shapes)
    assume(
        all(
            size >= 1
            for size in probe.body.block.first_op.function_type.outputs.data[0].get_shape()
        )
    )
    check_strategy(probe, shapes, seed)


@given(
    rank=st.integers(1, 3),
    window=st.data(),
    kind=st.sampled_from(["max", "avg", "avg_count_pad", "global"]),
    ceil_mode=st.booleans(),
    seed=st.integers(0, 100),
)
def test_pool_strategies_match_reference(rank, window, kind, ceil_mode, seed):
    w = window.draw(windows(rank))
    sizes = window.draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank))
    x_shape = [2, 2, *sizes]
    for d in range(rank):
        assume(
            sizes[d] + w["padding"][d] + w["padding"][rank + d]
            >= (w["kernel"][d] - 1) * w["dilations"][d] + 1
        )

    def build(x):
        if kind == "global":
            return graph.GlobalAvgPoolOp(x)
        keywords = {
            "strides": w["strides"],
            "padding": w["padding"],
            "dilations": w["dilations"],
            "ceil_mode": ceil_mode,
        }
        if kind == "max":
            return graph.MaxPoolOp(x, w["kernel"], **keywords)
        return graph.AvgPoolOp(
            x, w["kernel"], count_include_pad=kind == "avg_count_pad", **keywords
        )

    check_strategy(function_of(build, [x_shape]), [x_shape], seed)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32])
def test_max_pool_of_integers(dtype):
    """Max pooling is defined on integers; padding is the type's lowest value."""
    from xdsl.dialects.builtin import IntegerType, Signedness

    info = np.iinfo(dtype)
    signedness = Signedness.UNSIGNED if info.min == 0 else Signedness.SIGNLESS
    element = IntegerType(info.bits, signedness)
    block = Block(arg_types=[TensorType(element, [1, 2, 5, 5])])
    op = graph.MaxPoolOp(block.args[0], [2, 2], strides=[2, 2], padding=[1, 1, 0, 0])
    block.add_ops([op, func.ReturnOp(op.result)])
    types = ([block.args[0].type], [op.result.type])
    module = ModuleOp([func.FuncOp("main", types, Region(block))])
    module.verify()
    # values a float32 reference holds exactly
    low, high = max(info.min, -(2**24)), min(info.max, 2**24)
    x = np.random.default_rng(0).integers(low, high, (1, 2, 5, 5), endpoint=True)
    (actual,) = run_graph(module, [x.astype(dtype)])
    as_float = function_of(
        lambda v: graph.MaxPoolOp(v, [2, 2], strides=[2, 2], padding=[1, 1, 0, 0]), [[1, 2, 5, 5]]
    )
    (expected,) = run_graph(as_float, [x.astype(np.float32)])
    assert actual.dtype == dtype
    np.testing.assert_array_equal(actual, expected.astype(dtype))


# ---------------------------------------------------------------------------
# MaxPool's Indices output
# ---------------------------------------------------------------------------


def max_pool_with_indices(x: list[int], **attrs) -> onnx.ModelProto:
    """A MaxPool node with both outputs, shapes from ONNX shape inference."""
    node = helper.make_node("MaxPool", ["x"], ["y", "indices"], **attrs)
    graph_proto = helper.make_graph(
        [node],
        "test_graph",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x)],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("indices", TensorProto.INT64, None),
        ],
    )
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 9
    inferred = onnx.shape_inference.infer_shapes(model)
    for declared, found in zip(model.graph.output, inferred.graph.output):
        declared.CopyFrom(found)
    return model


INDICES_CASES = {
    "default": max_pool_with_indices([2, 3, 6, 6], kernel_shape=[2, 2]),
    "pads_strides": max_pool_with_indices(
        [1, 2, 5, 5], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]
    ),
    "asymmetric_pads": max_pool_with_indices([1, 2, 5, 6], kernel_shape=[3, 2], pads=[0, 1, 2, 0]),
    "ceil": max_pool_with_indices([1, 2, 7, 6], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    "dilations": max_pool_with_indices([1, 2, 7, 7], kernel_shape=[2, 3], dilations=[2, 2]),
    "column_major": max_pool_with_indices(
        [2, 2, 5, 7], kernel_shape=[3, 2], pads=[1, 0, 1, 1], strides=[2, 2], storage_order=1
    ),
    "1d": max_pool_with_indices([2, 3, 9], kernel_shape=[3], strides=[2], pads=[1, 1]),
    "3d": max_pool_with_indices([1, 2, 4, 4, 4], kernel_shape=[2, 2, 2], strides=[2, 1, 2]),
    "3d_column_major": max_pool_with_indices(
        [1, 2, 3, 4, 5], kernel_shape=[2, 2, 3], pads=[1, 0, 1, 0, 1, 1], storage_order=1
    ),
}


def tied_inputs(model: onnx.ModelProto) -> list[np.ndarray]:
    """Inputs of few distinct values, so windows hold several equal maxima."""
    return [np.round(a) for a in graph_inputs(model)]


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("name", sorted(INDICES_CASES))
def test_max_pool_indices_match_onnxruntime(name, ties):
    import strato

    model = INDICES_CASES[name]
    arrays = tied_inputs(model) if ties else graph_inputs(model)
    expected = run_onnxruntime(model, arrays)
    module = import_model(model)
    (op,) = [o for o in module.walk() if isinstance(o, graph.MaxPoolWithIndicesOp)]
    assert op.is_column_major == ("column_major" in name)
    results = {
        "graph": run_graph(module, arrays),
        "te": run_te(lower(import_model(model), "convert-graph-to-te"), arrays),
        "compiled": strato.compile(model)(*arrays),
    }
    for level, (values, indices) in results.items():
        np.testing.assert_array_equal(values, expected[0], err_msg=level)
        assert indices.dtype == np.int64, level
        np.testing.assert_array_equal(indices, expected[1], err_msg=level)


def test_max_pool_indices_at_the_loop_level():
    from strato.interpreters.loop import run_loops

    model = max_pool_with_indices(
        [1, 2, 4, 3], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1, storage_order=1
    )
    arrays = tied_inputs(model)
    expected = run_onnxruntime(model, arrays)
    module = lower(import_model(model), "convert-graph-to-te,convert-te-to-loops")
    for actual, want in zip(run_loops(module, arrays), expected, strict=True):
        np.testing.assert_array_equal(actual, want)


def test_max_pool_indices_stages():
    assert stages(INDICES_CASES["pads_strides"]) == [
        ("pad", "te.compute", ()),
        ("max_pool", "te.reduce", (3, 3)),
        ("max_pool_tap", "te.reduce", (3, 3)),
        ("max_pool_indices", "te.compute", ()),
    ]


def test_max_pool_indices_of_integers_skip_padding():
    """The lowest integer inside the input wins over the padding holding the same value."""
    from xdsl.dialects.builtin import i32

    block = Block(arg_types=[TensorType(i32, [1, 1, 2, 2])])
    op = graph.MaxPoolWithIndicesOp(block.args[0], [2, 2], padding=[1, 1, 0, 0])
    block.add_ops([op, func.ReturnOp(op.result, op.indices)])
    types = ([block.args[0].type], [op.result.type, op.indices.type])
    module = ModuleOp([func.FuncOp("main", types, Region(block))])
    module.verify()
    x = np.full((1, 1, 2, 2), np.iinfo(np.int32).min, dtype=np.int32)
    x[0, 0, 1, 1] = 7
    # windows of the lowest value report the first input element, never a padding tap
    expected_indices = np.array([[[[0, 0], [0, 3]]]])
    for values, indices in (
        run_graph(module, [x]),
        run_te(lower(module, "convert-graph-to-te"), [x]),
    ):
        np.testing.assert_array_equal(values, x)
        np.testing.assert_array_equal(indices, expected_indices)


def test_max_pool_indices_of_a_nan_maximum():
    """NaNs propagate as in graph.max_pool; the window's first NaN is reported."""
    import strato

    model = max_pool_with_indices([1, 1, 2, 4], kernel_shape=[2, 2], strides=[2, 2])
    x = np.arange(8, dtype=np.float32).reshape(1, 1, 2, 4)
    x[0, 0, 1, 0] = x[0, 0, 1, 1] = np.nan
    results = {
        "graph": run_graph(import_model(model), [x]),
        "te": run_te(lower(import_model(model), "convert-graph-to-te"), [x]),
        "compiled": strato.compile(model)(x),
    }
    for level, (values, indices) in results.items():
        np.testing.assert_array_equal(values, [[[[np.nan, 7]]]], err_msg=level)
        np.testing.assert_array_equal(indices, [[[[4, 7]]]], err_msg=level)


def test_max_pool_with_indices_verifier():
    block = Block(arg_types=[TensorType(f32, [1, 1, 4, 4])])
    op = graph.MaxPoolWithIndicesOp(block.args[0], [2, 2], strides=[2, 2])
    op.verify()
    assert pattern_kind_of(op) == PatternKind.OPAQUE
    assert op.indices.type == TensorType(i64, [1, 1, 2, 2])
    wrong = graph.MaxPoolWithIndicesOp.create(
        operands=[block.args[0]],
        properties=dict(op.properties),
        result_types=[op.result.type, TensorType(f32, [1, 1, 2, 2])],
    )
    with pytest.raises(VerifyException, match="indices must be an i64 tensor"):
        wrong.verify()


# ---------------------------------------------------------------------------
# import diagnostics
# ---------------------------------------------------------------------------


def import_error(model: onnx.ModelProto) -> str:
    with pytest.raises(ModelImportError) as info:
        import_model(model)
    return str(info.value)


def test_max_pool_storage_order_must_be_0_or_1():
    model = max_pool_with_indices([1, 1, 4, 4], kernel_shape=[2, 2], storage_order=2)
    message = import_error(model)
    assert "node #0 (MaxPool): attribute storage_order=2 is not 0 or 1" in message


def test_unknown_auto_pad_is_reported():
    message = import_error(conv([1, 2, 5, 5], [3, 2, 3, 3], auto_pad="SAME"))
    assert "node #0 (Conv): attribute auto_pad=SAME is not one of NOTSET" in message


def test_kernel_shape_must_match_the_weight():
    model = make_model("Conv", {"x": [1, 2, 5, 5], "w": [3, 2, 3, 3]}, kernel_shape=[2, 2])
    # shape inference trusts kernel_shape, the converter checks it against the weight
    message = import_error(model)
    assert "kernel_shape=[2, 2] differs from the weight's kernel [3, 3]" in message


def test_negative_pads_are_reported():
    message = import_error(conv([1, 2, 5, 5], [3, 2, 3, 3], pads=[-1, 0, 0, 0]))
    assert "(Conv): negative pads [-1, 0, 0, 0] are not supported" in message


def test_attribute_with_wrong_length_is_reported():
    message = import_error(conv([1, 2, 5, 5], [3, 2, 3, 3], strides=[1, 1, 1]))
    assert "(Conv): attribute strides has 3 entries, expected 2" in message


def test_four_spatial_dimensions_are_reported():
    message = import_error(pool("GlobalAveragePool", [1, 2, 2, 2, 2, 2]))
    assert "1 to 3 spatial dimensions" in message


def test_groups_that_do_not_divide_channels_are_reported():
    message = import_error(conv([1, 3, 5, 5], [2, 1, 3, 3], group=2))
    assert "(Conv): 'graph.conv' input channels 3 are not divisible by groups 2" in message


def test_window_larger_than_input_is_reported():
    message = import_error(pool("MaxPool", [1, 1, 2, 2], kernel_shape=[3, 3]))
    assert "(MaxPool): the window does not fit the padded input along spatial dimension 0" in (
        message
    )
