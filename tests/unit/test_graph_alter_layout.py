"""graph-alter-layout and the blocked-layout operators: layouts, chains and their
boundaries, equivalence on random convolutional programs (graph interpreter, tensor
expressions, LLVM), ResNet-18 and MobileNetV2 at small sizes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from strato.context import make_context
from strato.dialects import graph
from strato.dialects.graph import Layout, transform_layout
from strato.dialects.tensor_types import array_from_dense, dense_from_array
from strato.interpreters.graph import entry_function, run_graph
from strato.interpreters.te import run_te
from strato.pipeline import LOWER_TO_LOOPS, run_pipeline
from strato.runtime.signature import Signature
from strato.targets.llvm.build import build_llvm
from strato.testing.graph_programs import CONV_OP_KINDS, GraphProgram, conv_programs
from strato.transforms.graph_plan_memory import kernels_of

# -- layouts ------------------------------------------------------------------------------


def test_blocked_layout_moves_channels_innermost():
    x = np.arange(2 * 16 * 3 * 4, dtype=np.float32).reshape(2, 16, 3, 4)
    blocked = transform_layout(x, "NCHW", "NCHW8c")
    assert blocked.shape == (2, 2, 3, 4, 8)
    assert blocked[1, 1, 2, 3, 5] == x[1, 13, 2, 3]
    np.testing.assert_array_equal(transform_layout(blocked, "NCHW8c", "NCHW"), x)
    # re-blocking and re-ordering primal axes
    np.testing.assert_array_equal(
        transform_layout(blocked, "NCHW8c", "NCHW4c"), transform_layout(x, "NCHW", "NCHW4c")
    )
    np.testing.assert_array_equal(transform_layout(x, "NCHW", "NHWC"), x.transpose(0, 2, 3, 1))


def test_blocked_kernel_layout():
    w = np.arange(16 * 8 * 3 * 3, dtype=np.float32).reshape(16, 8, 3, 3)
    blocked = transform_layout(w, "OIHW", "OIHW4i8o")
    assert blocked.shape == (2, 2, 3, 3, 4, 8)
    assert blocked[1, 1, 2, 0, 3, 6] == w[8 + 6, 4 + 3, 2, 0]
    depthwise = transform_layout(w[:, :1], "OIHW", "OIHW1i8o")
    assert depthwise.shape == (2, 1, 3, 3, 1, 8)
    assert depthwise[1, 0, 1, 2, 0, 3] == w[11, 0, 1, 2]


@pytest.mark.parametrize(
    "text, reason",
    [
        ("NCHWc", "unexpected 'c'"),
        ("NCHW8c8c", "axis 'c' appears twice"),
        ("NHW8c", "block 'c' of a missing axis 'C'"),
        ("", "at least one axis"),
        ("NC0c", "unexpected '0'"),
    ],
)
def test_invalid_layouts_are_rejected_with_a_reason(text: str, reason: str):
    with pytest.raises(ValueError, match=reason):
        Layout.parse(text)


# -- the pass -----------------------------------------------------------------------------


def alter(text: str, spec: str = "graph-alter-layout") -> ModuleOp:
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    run_pipeline(ctx, module, spec)
    module.verify()
    return module


def names(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("graph.")]


def test_non_constant_weight_is_transformed_by_an_op():
    module = alter(
        """
func.func @main(%x: tensor<1x8x4x4xf32>, %w: tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32> {
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  func.return %y : tensor<1x8x4x4xf32>
}"""
    )
    transforms = [op for op in module.walk() if isinstance(op, graph.LayoutTransformOp)]
    # the 1x1 convolution begins the chain: it reads its input as it is (NCHW1c)
    assert sorted((t.src_layout.data, t.dst_layout.data) for t in transforms) == [
        ("NCHW", "NCHW1c"),
        ("NCHW8c", "NCHW"),
        ("OIHW", "OIHW1i8o"),
    ]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 8, 4, 4)).astype(np.float32)
    w = rng.standard_normal((8, 8, 1, 1)).astype(np.float32)
    (y,) = run_graph(module, [x, w])
    np.testing.assert_allclose(y, np.einsum("nchw,mc->nmhw", x, w[:, :, 0, 0]), rtol=1e-5, atol=1e-5)


def test_constant_weight_is_laid_out_output_channels_innermost_and_read_without_a_copy():
    rng = np.random.default_rng(5)
    w = rng.standard_normal((16, 16, 3, 3)).astype(np.float32)
    x = rng.standard_normal((1, 16, 5, 5)).astype(np.float32)
    ctx = make_context()
    module = Parser(
        ctx,
        """
func.func @main(%x: tensor<1x16x5x5xf32>) -> tensor<1x16x5x5xf32> {
  %w = graph.constant dense<0.0> : tensor<16x16x3x3xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x5x5xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x5x5xf32>
  func.return %y : tensor<1x16x5x5xf32>
}""",
    ).parse_module()
    (constant,) = [op for op in module.walk() if isinstance(op, graph.ConstantOp)]
    constant.properties["value"] = dense_from_array(w)
    expected = run_graph(module, [x])
    run_pipeline(ctx, module, "graph-alter-layout{block=8}")
    (conv,) = [op for op in module.walk() if isinstance(op, graph.BlockedConvOp)]
    assert conv.kernel_layout.data == "OIHW8i8o"
    weight = conv.weight.owner
    assert isinstance(weight, graph.ConstantOp)
    blocked = array_from_dense(weight.value)
    np.testing.assert_array_equal(blocked, transform_layout(w, "OIHW", "OIHW8i8o"))
    assert blocked[1, 0, 2, 1, 3, 5] == w[8 + 5, 3, 2, 1]
    # the default schedule vectorizes over the output channels: no per-call weight copy
    signature = Signature.from_function(entry_function(module), ["x"], ["y"])
    run_pipeline(ctx, module, f"graph-fuse-ops,{LOWER_TO_LOOPS},schedule-default")
    stages = {
        op.attributes["stage"].data for op in module.walk() if "stage" in op.attributes
    }
    assert "blocked_conv" in stages
    # blocked_conv.local is the accumulator tile (a cache_write); a weight copy would be
    # a cache_read stage, blocked_conv.<weight>.local
    assert not [s for s in stages if s.startswith("blocked_conv.") and s != "blocked_conv.local"], stages
    run_pipeline(ctx, module, "convert-loops-to-llvm")
    (y,) = build_llvm(module, "main", signature)(x)
    np.testing.assert_allclose(y, expected[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("groups", "stride", "block", "per_row"),
    [
        (16, 1, 8, True),
        (16, 2, 8, True),
        (1, 1, 8, False),
        # groups of one block each: every output block reads an input block of its own
        (2, 1, 8, True),
        (2, 2, 8, True),
        # groups of two blocks: each input block is read by both output blocks of its group
        (2, 2, 4, False),
    ],
)
def test_depthwise_convolution_pads_per_output_row(
    groups: int, stride: int, block: int, per_row: bool
):
    """The default schedule computes a depthwise convolution's padded input per output
    row, inside its accumulator tile's loop (no padded copy of the whole input per
    call), and so a grouped convolution's whose groups are one channel block each; a
    regular convolution, or a grouped one with groups of several blocks, keeps the
    whole padded copy its broadcasts read."""
    rng = np.random.default_rng(6)
    out = 5 if stride == 1 else 3
    w = rng.standard_normal((16, 16 // groups, 3, 3)).astype(np.float32)
    x = rng.standard_normal((1, 16, 5, 5)).astype(np.float32)
    ctx = make_context()
    module = Parser(
        ctx,
        f"""
func.func @main(%x: tensor<1x16x5x5xf32>) -> tensor<1x16x{out}x{out}xf32> {{
  %w = graph.constant dense<0.0> : tensor<16x{16 // groups}x3x3xf32>
  %y = graph.conv %x, %w strides [{stride}, {stride}] padding [1, 1, 1, 1] dilations [1, 1] groups {groups} layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x5x5xf32>, tensor<16x{16 // groups}x3x3xf32>) -> tensor<1x16x{out}x{out}xf32>
  func.return %y : tensor<1x16x{out}x{out}xf32>
}}""",
    ).parse_module()
    (constant,) = [op for op in module.walk() if isinstance(op, graph.ConstantOp)]
    constant.properties["value"] = dense_from_array(w)
    expected = run_graph(module, [x])
    signature = Signature.from_function(entry_function(module), ["x"], ["y"])
    run_pipeline(
        ctx,
        module,
        f"graph-alter-layout{{block={block}}},graph-fuse-ops,{LOWER_TO_LOOPS},schedule-default",
    )
    stages = {op.attributes["stage"].data for op in module.walk() if "stage" in op.attributes}
    assert "blocked_conv" in stages
    # computed per output row (at the accumulator tile), or ahead as a whole copy
    attached = [op for op in module.walk() if op.attributes.get("stage") is not None and op.attributes["stage"].data == "pad" and op.parent_op() is not None and op.parent_op().attributes.get("stage") is not None and op.parent_op().attributes["stage"].data == "blocked_conv.local"]
    assert bool(attached) == per_row, stages
    run_pipeline(ctx, module, "convert-loops-to-llvm")
    (y,) = build_llvm(module, "main", signature)(x)
    np.testing.assert_allclose(y, expected[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("stride", "threads"), [(1, 2), (2, 2), (2, 1)])
def test_grouped_convolution_with_per_row_padding_matches_onnxruntime(stride: int, threads: int):
    """A grouped convolution of 16 channels per group (one channel block on a host with
    16 fp32 lanes, whose padded input is then computed per output row; two blocks with
    8 lanes, which keep the padded copy): the whole model against onnxruntime on a map
    wider than one register tile, with a bias and a relu folded into the tile's
    copy-out and the rows split across threads."""
    import onnx
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper

    import strato

    rng = np.random.default_rng(7)
    channels, width, groups = 64, 30, 4
    w = rng.standard_normal((channels, channels // groups, 3, 3)).astype(np.float32)
    b = rng.standard_normal(channels).astype(np.float32)
    x = rng.standard_normal((1, channels, width, width)).astype(np.float32)
    out = (width + 2 - 3) // stride + 1
    graph_proto = helper.make_graph(
        [
            helper.make_node(
                "Conv", ["x", "w", "b"], ["c"], group=groups, pads=[1, 1, 1, 1],
                strides=[stride, stride],
            ),
            helper.make_node("Relu", ["c"], ["y"]),
        ],
        "grouped",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels, out, out])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    (expected,) = session.run(None, {"x": x})
    (y,) = strato.compile(model, threads=threads, cache=False)(x)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)


def test_grouped_convolution_runs_blocked_when_the_blocks_tile_the_groups():
    module = alter(
        """
func.func @main(%x: tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<16x8x3x3xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 2 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x4x4xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x4x4xf32>
  %z = graph.conv %y, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 2 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x4x4xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x4x4xf32>
  func.return %z : tensor<1x16x4x4xf32>
}""",
        "graph-alter-layout{block=4}",
    )
    assert names(module).count("graph.blocked_conv") == 2
    # the shared weight is re-laid out once
    assert names(module).count("graph.constant") == 1


def test_grouped_convolution_whose_groups_split_a_block_stays_nchw():
    module = alter(
        """
func.func @main(%x: tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<16x4x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 4 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x4x4xf32>, tensor<16x4x1x1xf32>) -> tensor<1x16x4x4xf32>
  func.return %y : tensor<1x16x4x4xf32>
}"""
    )
    assert names(module) == ["graph.constant", "graph.conv"]


def test_broadcast_of_a_non_constant_per_channel_tensor_ends_the_chain():
    module = alter(
        """
func.func @main(%x: tensor<1x8x4x4xf32>, %s: tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %m = graph.mul %y, %s : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32>
  func.return %m : tensor<1x8x4x4xf32>
}"""
    )
    assert names(module) == [
        "graph.constant",
        "graph.layout_transform",
        "graph.blocked_conv",
        "graph.layout_transform",
        "graph.mul",
    ]


CHAIN_ENTRY = """
func.func @main(%x: tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32> {
  %w = graph.constant dense<0.5> : tensor<16x16xKxKxf32>
  %y = graph.conv %x, %w strides [1, 1] padding [P, P, P, P] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x16x16xf32>, tensor<16x16xKxKxf32>) -> tensor<1x16x16x16xf32>
  %w2 = graph.constant dense<0.25> : tensor<16x16x1x1xf32>
  %z = graph.conv %y, %w2 strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x16x16xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x16x16xf32>
  func.return %z : tensor<1x16x16x16xf32>
}"""


@pytest.mark.parametrize(
    ("kernel", "entry"),
    [
        (1, ("NCHW", "NCHW1c")),  # a 1x1 window: read as it is
        (3, ("NCHW", "NCHW1c")),  # 16x16x16 inputs, 16x16x3x3 weights: the input is larger
        (5, ("NCHW", "NCHW16c")),  # 16x16x5x5 weights outweigh the input: transformed
    ],
)
def test_a_chain_entry_reads_its_nchw_input_directly_when_that_pays(kernel, entry):
    """A convolution beginning a chain reads its NCHW input in blocks of one channel
    (the same bytes) when its window is 1x1 or its input outweighs its weights; the
    convolution after it in the chain reads the blocked value, and the results agree."""
    text = CHAIN_ENTRY.replace("K", str(kernel)).replace("P", str(kernel // 2))
    module = alter(text, "graph-alter-layout{block=16}")
    convs = [op for op in module.walk() if isinstance(op, graph.BlockedConvOp)]
    assert [c.in_block for c in convs] == [int(entry[1][4:-1]), 16]
    transforms = [(t.src_layout.data, t.dst_layout.data) for t in module.walk() if isinstance(t, graph.LayoutTransformOp)]
    assert transforms == [entry, ("NCHW16c", "NCHW")]
    x = np.random.default_rng(1).standard_normal((1, 16, 16, 16)).astype(np.float32)
    reference = Parser(make_context(), text).parse_module()
    np.testing.assert_allclose(run_graph(module, [x])[0], run_graph(reference, [x])[0], rtol=1e-5, atol=1e-5)


def _check_boundaries(module: ModuleOp) -> None:
    """Transforms only at chain boundaries: never one of another transform's result."""
    for op in module.walk():
        if isinstance(op, graph.LayoutTransformOp):
            assert not isinstance(op.input.owner, graph.LayoutTransformOp), op


# convolutions and pools more often than the default kinds, so that chains form
CHAIN_KINDS = (
    *CONV_OP_KINDS,
    "conv",
    "depthwise_conv",
    "max_pool",
    "avg_pool",
    "relu",
    "residual_add",
    "channel_concat",
    "spatial_mean",
)


@given(program=conv_programs(channels=(3, 4, 8), kinds=CHAIN_KINDS))
def test_alter_layout_preserves_semantics(program: GraphProgram):
    inputs = program.random_inputs(seed=7)
    expected = run_graph(program.module, inputs)
    run_pipeline(make_context(), program.module, "graph-alter-layout{block=4}")
    program.module.verify()
    _check_boundaries(program.module)
    for a, e in zip(run_graph(program.module, inputs), expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4)


@given(program=conv_programs(channels=(2, 4, 6, 8, 12), kinds=CHAIN_KINDS))
def test_mixed_blocks_preserve_semantics(program: GraphProgram):
    """block=4 min_block=2: 4 and 8 channels are NCHW4c, 2 and 6 channels NCHW2c, and a
    convolution between them reads one block size and writes the other."""
    inputs = program.random_inputs(seed=9)
    expected = run_graph(program.module, inputs)
    run_pipeline(make_context(), program.module, "graph-alter-layout{block=4 min_block=2}")
    program.module.verify()
    for a, e in zip(run_graph(program.module, inputs), expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4)


@given(program=conv_programs(max_ops=5, channels=(2, 4, 6), kinds=CHAIN_KINDS))
def test_mixed_block_strategies_compute_the_graph_semantics(program: GraphProgram):
    inputs = program.random_inputs(seed=10)
    expected = run_graph(program.module, inputs)
    run_pipeline(
        make_context(),
        program.module,
        "graph-simplify-inference,graph-alter-layout{block=4 min_block=2},graph-fuse-ops,"
        "convert-graph-to-te",
    )
    program.module.verify()
    for a, e in zip(run_te(program.module, inputs), expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4)


@given(program=conv_programs(max_ops=5, channels=(4, 8), kinds=CHAIN_KINDS))
def test_blocked_strategies_compute_the_graph_semantics(program: GraphProgram):
    inputs = program.random_inputs(seed=8)
    expected = run_graph(program.module, inputs)
    ctx = make_context()
    run_pipeline(
        ctx,
        program.module,
        "graph-simplify-inference,graph-alter-layout{block=4},graph-fuse-ops,convert-graph-to-te",
    )
    program.module.verify()
    for a, e in zip(run_te(program.module, inputs), expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4)


def test_blocked_ops_compile_to_llvm():
    ctx = make_context()
    module = Parser(
        ctx,
        """
func.func @main(%x: tensor<2x8x7x7xf32>) -> (tensor<2x8x1x1xf32>, tensor<2x8x4x4xf32>) {
  %w = graph.constant dense<0.125> : tensor<8x8x3x3xf32>
  %b = graph.constant dense<0.5> : tensor<8xf32>
  %y = graph.conv %x, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<2x8x7x7xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>) -> tensor<2x8x7x7xf32>
  %d = graph.constant dense<0.25> : tensor<8x1x3x3xf32>
  %z = graph.conv %y, %d strides [2, 2] padding [1, 1, 1, 1] dilations [1, 1] groups 8 layout "NCHW" kernel_layout "OIHW" : (tensor<2x8x7x7xf32>, tensor<8x1x3x3xf32>) -> tensor<2x8x4x4xf32>
  %r = graph.relu %z : tensor<2x8x4x4xf32>
  %p = graph.max_pool %r kernel [3, 3] strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] layout "NCHW" : (tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32>
  %q = graph.avg_pool %p kernel [2, 2] strides [1, 1] padding [0, 0, 1, 1] dilations [1, 1] layout "NCHW" : (tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32>
  %a = graph.add %q, %r : (tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32>
  %g = graph.global_avg_pool %a layout "NCHW" : (tensor<2x8x4x4xf32>) -> tensor<2x8x1x1xf32>
  func.return %g, %a : tensor<2x8x1x1xf32>, tensor<2x8x4x4xf32>
}""",
    ).parse_module()
    x = np.random.default_rng(3).standard_normal((2, 8, 7, 7)).astype(np.float32)
    expected = run_graph(module, [x])
    function = entry_function(module)
    signature = Signature.from_function(function, ["x"], ["g", "a"])
    run_pipeline(ctx, module, f"graph-alter-layout,graph-fuse-ops,{LOWER_TO_LOOPS},convert-loops-to-llvm")
    model = build_llvm(module, "main", signature)
    for a, e in zip(model(x), expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("stride", [1, 2])
def test_prime_width_rows_computed_as_whole_tiles_compile_to_llvm(stride: int):
    """31 output columns: computed 32 wide over more zero padding, then sliced, with the
    relu after it; the compiled kernels give the graph's values."""
    ctx = make_context()
    width = 31 * stride
    module = Parser(
        ctx,
        f"""
func.func @main(%x: tensor<1x3x3x{width}xf32>) -> tensor<1x16x3x31xf32> {{
  %w = graph.constant dense<0.125> : tensor<16x3x3x3xf32>
  %b = graph.constant dense<0.5> : tensor<16xf32>
  %y = graph.conv %x, %w, %b strides [1, {stride}] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x3x3x{width}xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<1x16x3x31xf32>
  %r = graph.relu %y : tensor<1x16x3x31xf32>
  func.return %r : tensor<1x16x3x31xf32>
}}""",
    ).parse_module()
    x = np.random.default_rng(4).standard_normal((1, 3, 3, width)).astype(np.float32)
    (expected,) = run_graph(module, [x])
    signature = Signature.from_function(entry_function(module), ["x"], ["r"])
    run_pipeline(ctx, module, "graph-alter-layout{block=16 min_block=8}")
    assert any(isinstance(op, graph.SliceOp) for op in module.walk())
    (sliced,) = run_graph(module, [x])
    np.testing.assert_allclose(sliced, expected, rtol=1e-5, atol=1e-5)
    run_pipeline(ctx, module, f"graph-fuse-ops,{LOWER_TO_LOOPS},convert-loops-to-llvm")
    (ours,) = build_llvm(module, "main", signature)(x)
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pool_padding", [0, 1])
def test_prime_width_relu_folds_into_the_tiles_and_the_pool_reads_the_wide_result(pool_padding: int):
    """31 output columns computed 32 wide: the relu after the convolution applies to the
    32 columns in the convolution's kernel, and the max pool reading the relu's result
    reads the kept columns of the wide tensor (no kernel of its own slices it)."""
    ctx = make_context()
    pooled = (31 + 2 * pool_padding - 3) // 2 + 1
    module = Parser(
        ctx,
        f"""
func.func @main(%x: tensor<1x3x3x31xf32>) -> tensor<1x16x2x{pooled}xf32> {{
  %w = graph.constant dense<0.125> : tensor<16x3x3x3xf32>
  %b = graph.constant dense<-0.25> : tensor<16xf32>
  %y = graph.conv %x, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x3x3x31xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<1x16x3x31xf32>
  %r = graph.relu %y : tensor<1x16x3x31xf32>
  %p = graph.max_pool %r kernel [3, 3] strides [2, 2] padding [0, {pool_padding}, 0, {pool_padding}] dilations [1, 1] layout "NCHW" : (tensor<1x16x3x31xf32>) -> tensor<1x16x1x{pooled}xf32>
  %q = graph.sigmoid %p : tensor<1x16x1x{pooled}xf32>
  %c = graph.concat %q, %q axis 2 : (tensor<1x16x1x{pooled}xf32>, tensor<1x16x1x{pooled}xf32>) -> tensor<1x16x2x{pooled}xf32>
  func.return %c : tensor<1x16x2x{pooled}xf32>
}}""",
    ).parse_module()
    x = np.random.default_rng(5).standard_normal((1, 3, 3, 31)).astype(np.float32)
    (expected,) = run_graph(module, [x])
    signature = Signature.from_function(entry_function(module), ["x"], ["c"])
    run_pipeline(ctx, module, "graph-alter-layout{block=16 min_block=8},graph-fuse-ops")
    (fused,) = run_graph(module, [x])
    np.testing.assert_allclose(fused, expected, rtol=1e-5, atol=1e-5)
    labels = [op.label.data for op in module.walk() if isinstance(op, graph.FusedOp)]
    assert "blocked_conv_relu" in labels and any(label.startswith("slice_blocked_max_pool") for label in labels)
    run_pipeline(ctx, module, f"{LOWER_TO_LOOPS},convert-loops-to-llvm")
    (ours,) = build_llvm(module, "main", signature)(x)
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5)


def test_a_window_of_a_blocked_value_read_by_a_pool_compiles_in_its_kernel():
    """A slice keeping a window of H and W (not a prefix: it starts at 1, 2) goes into
    the group of the blocked max pool reading it, as a stage of the pool's kernel; the
    compiled kernels give the graph's values."""
    ctx = make_context()
    module = Parser(
        ctx,
        """
func.func @main(%x: tensor<1x16x9x9xf32>) -> tensor<1x16x3x3xf32> {
  %w = graph.constant dense<0.0625> : tensor<16x16x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x9x9xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x9x9xf32>
  %s = graph.slice %y starts [0, 0, 1, 2] steps [1, 1, 1, 1] : (tensor<1x16x9x9xf32>) -> tensor<1x16x7x7xf32>
  %p = graph.max_pool %s kernel [3, 3] strides [2, 2] padding [0, 0, 0, 0] dilations [1, 1] layout "NCHW" : (tensor<1x16x7x7xf32>) -> tensor<1x16x3x3xf32>
  func.return %p : tensor<1x16x3x3xf32>
}""",
    ).parse_module()
    x = np.random.default_rng(6).standard_normal((1, 16, 9, 9)).astype(np.float32)
    (expected,) = run_graph(module, [x])
    signature = Signature.from_function(entry_function(module), ["x"], ["p"])
    run_pipeline(ctx, module, "graph-alter-layout{block=16 min_block=8},graph-fuse-ops")
    labels = [op.label.data for op in module.walk() if isinstance(op, graph.FusedOp)]
    assert any(label.startswith("slice_blocked_max_pool") for label in labels), labels
    run_pipeline(ctx, module, f"{LOWER_TO_LOOPS},convert-loops-to-llvm")
    (ours,) = build_llvm(module, "main", signature)(x)
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5)


# -- models -------------------------------------------------------------------------------


def _zoo(name: str, **sizes) -> ModuleOp:
    from strato.frontends.onnx import import_model
    from strato.zoo import build_model

    return import_model(build_model(name, **sizes))


def _check_model(module: ModuleOp, spec: str) -> list[str]:
    function = entry_function(module)
    rng = np.random.default_rng(0)
    inputs = [
        rng.standard_normal(t.get_shape()).astype(np.float32)
        for t in function.function_type.inputs.data
    ]
    expected = run_graph(module, inputs)
    run_pipeline(make_context(), module, spec)
    module.verify()
    _check_boundaries(module)
    for a, e in zip(run_graph(module, inputs), expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4)
    return names(module)


def test_resnet18_runs_blocked_between_one_entry_and_one_exit():
    ops = _check_model(
        _zoo("resnet18", image_size=32, width=8, num_classes=10),
        "graph-simplify-inference,graph-alter-layout",
    )
    # every convolution runs blocked, the stem reading its 3 channels as one block, and
    # so does the max pool after it: the image enters once, the logits leave once
    assert ops.count("graph.blocked_conv") == 20 and ops.count("graph.conv") == 0
    assert "graph.blocked_max_pool" in ops and "graph.max_pool" not in ops
    assert ops.count("graph.layout_transform") == 2
    assert "graph.blocked_global_avg_pool" in ops


def test_mobilenet_v2_depthwise_convolutions_run_blocked():
    ops = _check_model(
        _zoo("mobilenet_v2", image_size=32), "graph-simplify-inference,graph-alter-layout"
    )
    assert ops.count("graph.blocked_conv") == 52 and ops.count("graph.conv") == 0
    assert ops.count("graph.layout_transform") == 2


def test_mobilenet_v2_default_blocks_stay_blocked_through_24_channel_stages():
    """block=16 min_block=8 (the default pipeline's): the 24-channel stages are NCHW8c,
    the 144-channel ones NCHW16c, so the only transforms are the model's entry and exit."""
    module = _zoo("mobilenet_v2", image_size=32)
    ops = _check_model(
        module, "graph-simplify-inference,graph-alter-layout{block=16 min_block=8}"
    )
    assert ops.count("graph.blocked_conv") == 52 and ops.count("graph.conv") == 0
    assert ops.count("graph.layout_transform") == 2
    layouts = {
        (op.layout.data, op.out_layout.data)
        for op in module.walk()
        if isinstance(op, graph.BlockedConvOp)
    }
    assert ("NCHW8c", "NCHW16c") in layouts and ("NCHW16c", "NCHW8c") in layouts


def test_resnet18_default_pipeline_fuses_the_blocked_convolutions():
    module = _zoo("resnet18", image_size=32, width=8, num_classes=10)
    _check_model(module, "graph-default")
    (function,) = list(module.ops)
    kernels = kernels_of(function)  # type: ignore[arg-type]
    groups = [op.label.data for op in kernels if isinstance(op, graph.FusedOp)]
    # each convolution with its bias, relu and residual add in one kernel; the stem
    # reads the image as it is (its NCHW1c view fuses into it), the exit transform fuses
    # into the global pool that produces its input; the max pool and the dense layer
    assert len(kernels) == 20 + 3
    assert "layout_transform_blocked_conv_relu" in groups
    assert "blocked_conv_add_relu" in groups
    assert "blocked_global_avg_pool_layout_transform_reshape" in groups


def test_block_must_be_positive():
    from strato.diagnostics import StratoError

    with pytest.raises(StratoError, match="block must be positive"):
        alter(
            """
func.func @main(%x: tensor<1x8x2x2xf32>) -> tensor<1x8x2x2xf32> {
  func.return %x : tensor<1x8x2x2xf32>
}""",
            "graph-alter-layout{block=0}",
        )


@pytest.mark.parametrize(
    "width, computed",
    [
        (28, 28),  # one tile of 14 columns, or two
        (35, 35),  # tiles of 7: Inception's 35x35 stage
        (147, 147),  # tiles of 7
        (112, 112),  # tiles of 14
        (31, 32),  # a prime: tiles of 8
        (71, 72),  # a prime: tiles of 12, not 84 columns in tiles of 14
        (109, 110),  # SqueezeNet's stem: tiles of 11
    ],
)
def test_a_row_is_padded_to_the_fewest_columns_that_whole_tiles_cover(width: int, computed: int):
    ctx = make_context()
    module = Parser(
        ctx,
        f"""
func.func @main(%x: tensor<1x16x2x{width}xf32>) -> tensor<1x16x2x{width}xf32> {{
  %w = graph.constant dense<0.5> : tensor<16x16x1x1xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [0, 0, 0, 0] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x16x2x{width}xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x2x{width}xf32>
  func.return %y : tensor<1x16x2x{width}xf32>
}}""",
    ).parse_module()
    run_pipeline(ctx, module, "graph-alter-layout{block=16 min_block=8}")
    (conv,) = [op for op in module.walk() if isinstance(op, graph.BlockedConvOp)]
    assert conv.result.type.get_shape()[3] == computed
    assert list(conv.padding.get_values())[3] == computed - width


def _grouped_bottleneck(per_group: int, seed: int) -> ModuleOp:
    """A ResNeXt/RegNetY block on 32 channels, with seeded random weights: 1x1
    convolution, relu, a grouped 3x3 convolution of `per_group` channels per group,
    relu, a squeeze-and-excitation gate (global mean, two 1x1 convolutions, sigmoid,
    product), a 1x1 convolution and the residual add."""
    groups = 32 // per_group
    t, g, s = "tensor<1x32x8x8xf32>", "tensor<1x32x1x1xf32>", "tensor<1x8x1x1xf32>"
    conv = 'dilations [1, 1] groups {} layout "NCHW" kernel_layout "OIHW"'
    module = Parser(
        make_context(),
        f"""
func.func @main(%x: {t}) -> {t} {{
  %w1 = graph.constant dense<0.0> : tensor<32x32x1x1xf32>
  %w2 = graph.constant dense<0.0> : tensor<32x{per_group}x3x3xf32>
  %w3 = graph.constant dense<0.0> : tensor<8x32x1x1xf32>
  %w4 = graph.constant dense<0.0> : tensor<32x8x1x1xf32>
  %w5 = graph.constant dense<0.0> : tensor<32x32x1x1xf32>
  %a = graph.conv %x, %w1 strides [1, 1] padding [0, 0, 0, 0] {conv.format(1)} : ({t}, tensor<32x32x1x1xf32>) -> {t}
  %ar = graph.relu %a : {t}
  %b = graph.conv %ar, %w2 strides [1, 1] padding [1, 1, 1, 1] {conv.format(groups)} : ({t}, tensor<32x{per_group}x3x3xf32>) -> {t}
  %br = graph.relu %b : {t}
  %m = graph.global_avg_pool %br layout "NCHW" : ({t}) -> {g}
  %e = graph.conv %m, %w3 strides [1, 1] padding [0, 0, 0, 0] {conv.format(1)} : ({g}, tensor<8x32x1x1xf32>) -> {s}
  %er = graph.relu %e : {s}
  %f = graph.conv %er, %w4 strides [1, 1] padding [0, 0, 0, 0] {conv.format(1)} : ({s}, tensor<32x8x1x1xf32>) -> {g}
  %fs = graph.sigmoid %f : {g}
  %gated = graph.mul %br, %fs : ({t}, {g}) -> {t}
  %c = graph.conv %gated, %w5 strides [1, 1] padding [0, 0, 0, 0] {conv.format(1)} : ({t}, tensor<32x32x1x1xf32>) -> {t}
  %y = graph.add %c, %x : ({t}, {t}) -> {t}
  func.return %y : {t}
}}""",
    ).parse_module()
    rng = np.random.default_rng(seed)
    for op in module.walk():
        if isinstance(op, graph.ConstantOp):
            shape = op.result.type.get_shape()
            weights = rng.uniform(-0.3, 0.3, shape).astype(np.float32)
            op.value = dense_from_array(weights, op.result.type.element_type)
    return module


def test_a_grouped_convolution_takes_the_block_of_its_groups_and_its_neighbours_follow():
    """Groups of 8 channels with block=16: the grouped convolution, the values around it
    and the gate that shares their block run in NCHW8c; the 1x1 convolutions on either
    side read and write across the two blocks, so the chain has one entry and one exit.
    Compiled, the block computes the graph's values."""
    ctx = make_context()
    module = _grouped_bottleneck(8, seed=11)
    x = np.random.default_rng(12).standard_normal((1, 32, 8, 8)).astype(np.float32)
    (expected,) = run_graph(module, [x])
    signature = Signature.from_function(entry_function(module), ["x"], ["y"])
    run_pipeline(ctx, module, "graph-alter-layout{block=16 min_block=8}")
    module.verify()
    convs = [op for op in module.walk() if isinstance(op, graph.BlockedConvOp)]
    assert len(convs) == 5
    grouped = next(op for op in convs if op.group_count == 4)
    assert grouped.layout.data == "NCHW8c" and grouped.out_layout.data == "NCHW8c"
    first, last = convs[0], convs[-1]
    assert first.out_layout.data == "NCHW8c"
    assert (last.layout.data, last.out_layout.data) == ("NCHW8c", "NCHW16c")
    # layout transforms only where the chain begins (the input) and ends (the result)
    arguments = set(entry_function(module).args)
    for op in module.walk():
        if isinstance(op, graph.LayoutTransformOp):
            assert op.input in arguments or all(
                isinstance(use.operation, func.ReturnOp) for use in op.result.uses
            )
    (blocked,) = run_graph(module, [x])
    np.testing.assert_allclose(blocked, expected, rtol=1e-5, atol=1e-5)
    run_pipeline(ctx, module, f"graph-fuse-ops,{LOWER_TO_LOOPS},convert-loops-to-llvm")
    (ours,) = build_llvm(module, "main", signature)(x)
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5)


def test_groups_narrower_than_the_smallest_block_leave_the_blocks_as_they_were():
    """Groups of 4 channels with min_block=8: no block tiles them, so the grouped
    convolution stays NCHW and the values around it keep the block of their channels."""
    module = _grouped_bottleneck(4, seed=13)
    run_pipeline(make_context(), module, "graph-alter-layout{block=16 min_block=8}")
    assert [op.group_count for op in module.walk() if isinstance(op, graph.ConvOp)] == [8]
    first = next(op for op in module.walk() if isinstance(op, graph.BlockedConvOp))
    assert first.out_layout.data == "NCHW16c"
