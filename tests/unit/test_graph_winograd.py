"""graph-winograd and graph.blocked_winograd_conv: the operator's reference semantics
against the direct convolution, the pass's choices, and the compiled stages against
the direct convolution's code (`llvm -winograd`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Block
from xdsl.parser import Parser

import strato
from strato.context import make_context
from strato.diagnostics import StratoError
from strato.dialects import graph
from strato.dialects.graph.blocked import transform_layout
from strato.dialects.graph.winograd import transform_weight
from strato.dialects.tensor_types import dense_from_array
from strato.interpreters.graph import run_graph
from strato.pipeline import run_pipeline
from strato.testing.graph_programs import GraphProgram, graph_programs


def direct_conv(x: np.ndarray, w: np.ndarray, pads: tuple[int, int, int, int]) -> np.ndarray:
    """[N, C, H, W] x [M, C, 3, 3], stride 1, in float64."""
    top, left, bottom, right = pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    oh, ow = xp.shape[2] - 2, xp.shape[3] - 2
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,mc->nmhw", xp[:, :, i : i + oh, j : j + ow], w[:, :, i, j])
    return out


@settings(max_examples=20, deadline=None)
@given(
    tile=st.sampled_from([2, 4]),
    batch=st.integers(1, 2),
    size=st.tuples(st.integers(1, 11), st.integers(1, 11)),
    pads=st.tuples(*[st.integers(0, 2)] * 4),
    blocks=st.sampled_from([(16, 16), (16, 8), (8, 16)]),
    bias=st.booleans(),
)
def test_the_operator_computes_the_convolution(tile, batch, size, pads, blocks, bias):
    """evaluate (input transform, products, output transform) equals the direct
    convolution for any size, padding, batch and blocks, with and without bias."""
    height, width = size
    if height + pads[0] + pads[2] < 3 or width + pads[1] + pads[3] < 3:
        return
    rng = np.random.default_rng(height * 31 + width)
    in_block, out_block = blocks
    x = rng.standard_normal((batch, 32, height, width)).astype(np.float32)
    w = rng.standard_normal((32, 32, 3, 3)).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)
    u = transform_weight(w, tile, in_block, out_block)
    block = Block(
        arg_types=[
            TensorType(f32, [batch, 32 // in_block, height, width, in_block]),
            TensorType(f32, list(u.shape)),
            TensorType(f32, [32]),
        ]
    )
    op = graph.BlockedWinogradConvOp(
        block.args[0], block.args[1], block.args[2] if bias else None,
        padding=pads, tile=tile, in_block=in_block, out_block=out_block,
    )  # fmt: skip
    op.verify()
    blocked = transform_layout(x, "NCHW", f"NCHW{in_block}c")
    (y,) = op.evaluate([blocked, u, b] if bias else [blocked, u])
    expected = direct_conv(x, w, pads) + (b.reshape(1, -1, 1, 1) if bias else 0)
    got = transform_layout(y, f"NCHW{out_block}c", "NCHW")
    scale = np.abs(expected).max()
    np.testing.assert_allclose(got, expected, rtol=0, atol=scale * (1e-5 if tile == 4 else 2e-6))


def conv_module(size: int, channels: int, seed: int, relu: bool = False):
    """A blocked 3x3 convolution with random constant weights and bias (and a relu
    after it)."""
    cb = channels // 16
    x_type = f"tensor<1x{cb}x{size}x{size}x16xf32>"
    w_type = f"tensor<{cb}x{cb}x3x3x16x16xf32>"
    then = f"%r = graph.relu %y : {x_type}" if relu else ""
    text = f"""
func.func @main(%x: {x_type}) -> {x_type} {{
  %w = graph.constant dense<0.0> : {w_type}
  %b = graph.constant dense<0.0> : tensor<{channels}xf32>
  %y = graph.blocked_conv %x, %w, %b strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW16c" kernel_layout "OIHW16i16o" out_layout "NCHW16c" : ({x_type}, {w_type}, tensor<{channels}xf32>) -> {x_type}
  {then}
  func.return {"%r" if relu else "%y"} : {x_type}
}}"""
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    rng = np.random.default_rng(seed)
    w, b = [op for op in module.walk() if isinstance(op, graph.ConstantOp)]
    w.properties["value"] = dense_from_array(
        rng.standard_normal((cb, cb, 3, 3, 16, 16)).astype(np.float32)
    )
    b.properties["value"] = dense_from_array(rng.standard_normal(channels).astype(np.float32))
    x = rng.standard_normal((1, cb, size, size, 16)).astype(np.float32)
    return ctx, module, x


@pytest.mark.parametrize(("size", "channels", "tile"), [(14, 32, 4), (7, 64, 2), (28, 32, 4)])
def test_the_pass_keeps_the_result(size, channels, tile):
    ctx, module, x = conv_module(size, channels, seed=size)
    expected = run_graph(module, [x])[0]
    run_pipeline(ctx, module, "graph-winograd")
    (op,) = [o for o in module.walk() if isinstance(o, graph.BlockedWinogradConvOp)]
    assert op.tile_size == tile
    assert not any(isinstance(o, graph.BlockedConvOp) for o in module.walk())
    got = run_graph(module, [x])[0]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5 * np.abs(expected).max())


@settings(max_examples=20, deadline=None)
@given(
    program=graph_programs(max_ops=3, kinds=("graph.blocked_conv", "relu", "add")),
    tile=st.sampled_from([0, 2, 4]),
    fused=st.booleans(),
)
def test_the_pass_keeps_generated_programs(program: GraphProgram, tile: int, fused: bool):
    """graph-winograd on generated programs of blocked convolutions (any window,
    stride, dilation, blocks and weight order; the 3x3 stride-1 ones rewritten whatever
    their size), bare or fused into groups with what follows them: the same results."""
    inputs = program.random_inputs(seed=3)
    expected = run_graph(program.module, inputs)
    options = f"tile={tile} min_channels=1 min_tiles=1 max_tile_bytes={1 << 30}"
    fusion = "graph-fuse-ops," if fused else ""
    run_pipeline(make_context(), program.module, f"{fusion}graph-winograd{{{options}}}")
    program.module.verify()
    for got, want in zip(run_graph(program.module, inputs), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(np.abs(want).max(), 1))


def test_a_tile_size_that_is_not_defined_is_refused():
    ctx, module, _ = conv_module(14, 32, seed=0)
    with pytest.raises(StratoError, match="tile must be 0 .* or one of 2, 4, got 3"):
        run_pipeline(ctx, module, "graph-winograd{tile=3}")


def resnet_block(batch: int, size: int, channels: int) -> tuple:
    """conv-bias-relu, conv-bias, the input added, relu: an ONNX model and an input."""
    rng = np.random.default_rng(size)
    shape = [batch, channels, size, size]
    weights = [
        numpy_helper.from_array(
            (rng.standard_normal((channels, channels, 3, 3)) / (3 * channels**0.5)).astype(np.float32),
            name,
        )
        for name in ("w1", "w2")
    ] + [
        numpy_helper.from_array(rng.standard_normal(channels).astype(np.float32), name)
        for name in ("b1", "b2")
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "x"], ["s"]),
        helper.make_node("Relu", ["s"], ["y"]),
    ]
    graph_proto = helper.make_graph(
        nodes, "block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        weights,
    )  # fmt: skip
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", 17)])
    return model, rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize(("batch", "size", "tile"), [(1, 14, 4), (2, 7, 2), (1, 13, 4)])
def test_compiled_winograd_layers_match_the_direct_ones(batch, size, tile):
    """A residual block compiled with `llvm -winograd` (F(4, 3) at 14x14, F(2, 3) at
    7x7 with batch 2 and its tiles cropped to 7x7, 13x13 cropped from 16x16) computes what the
    direct convolutions compute, its bias, relu and residual add folded in."""
    model, x = resnet_block(batch, size, 32)
    seen: list[int] = []

    def after(stage: str, module) -> None:
        if stage == "graph-winograd":
            seen.extend(
                op.tile_size for op in module.walk() if isinstance(op, graph.BlockedWinogradConvOp)
            )

    direct = strato.compile(model, target="llvm", cache=False)(x)[0]
    winograd = strato.compile(model, target="llvm -winograd", cache=False, after_stage=after)(x)[0]
    assert seen == [tile, tile]
    np.testing.assert_allclose(winograd, direct, rtol=0, atol=1e-5 * np.abs(direct).max())


def winograd_tiles(module) -> list[int]:
    return [op.tile_size for op in module.walk() if isinstance(op, graph.BlockedWinogradConvOp)]


def test_a_convolution_in_a_fused_group_takes_its_transformed_weight_in_the_same_place():
    """After graph-fuse-ops the weight is an operand of the group: the transformed
    constant takes its place (operand and body argument), the old constant goes, and
    the group's label names the Winograd convolution (the kernel's name)."""
    ctx, module, x = conv_module(14, 32, seed=1, relu=True)
    expected = run_graph(module, [x])[0]
    run_pipeline(ctx, module, "graph-fuse-ops,graph-winograd")
    (group,) = [o for o in module.walk() if isinstance(o, graph.FusedOp)]
    (op,) = [o for o in group.body.block.ops if isinstance(o, graph.BlockedWinogradConvOp)]
    assert group.label.data == "blocked_winograd_conv_relu"
    assert op.weight is group.body.block.args[1]
    assert group.inputs[1].type == op.weight.type == TensorType(f32, [36, 2, 2, 16, 16])
    assert len([o for o in module.walk() if isinstance(o, graph.ConstantOp)]) == 2
    module.verify()
    np.testing.assert_allclose(
        run_graph(module, [x])[0], expected, rtol=0, atol=1e-5 * np.abs(expected).max()
    )


def test_the_tuner_measures_each_algorithm_of_a_convolution():
    """extract_tasks adds the kernels of the other algorithms (the target's
    tuning_alternatives) as tasks of their own, named by the target option that
    gives them; the kernels every algorithm shares are one task."""
    from strato.autotuning.task import extract_tasks

    model, _ = resnet_block(1, 14, 32)
    direct = extract_tasks(model, "block", "llvm", alternatives=False)
    tasks = extract_tasks(model, "block", "llvm")
    assert all(t.target == "llvm" for t in direct)
    extra = sorted(t.name for t in tasks if t.target != "llvm")
    assert extra == [
        f"block/blocked_winograd_conv_{kind}_{index} -winograd={tile}"
        for kind, index in (("add_relu_layout_transform", 2), ("relu", 1))
        for tile in (2, 4)
    ]
    assert {t.key for t in direct} < {t.key for t in tasks}
    assert len(tasks) == len(direct) + 4
    forced = extract_tasks(model, "block", "llvm -winograd=4")
    assert all(t.target == "llvm -winograd=4" for t in forced)


def test_a_tuning_log_chooses_the_algorithm_of_each_convolution(tmp_path):
    """Compiled with a tuning log, each convolution takes the algorithm whose kernel has
    the fastest record (here F(2, 3) for the first, direct for the second); without
    records, `llvm` keeps them direct and `llvm -winograd` follows its rule. The
    results are the direct convolutions'."""
    from strato.autotuning.task import extract_tasks
    from strato.schedule.database import Database, Record

    model, x = resnet_block(1, 14, 32)
    log = tmp_path / "tuning.jsonl"
    db = Database(str(log))
    for task in extract_tasks(model, "block", "llvm"):
        fast = ("relu_1 -winograd=2" in task.name) or ("add_relu" in task.name and task.target == "llvm")
        db.append(Record(task.key, task.default_config(), 1e-4 if fast else 1e-3, name=task.name))
    seen: dict[str, list[int]] = {}

    def compiled(target: str, tuning):
        def after(stage: str, module) -> None:
            if stage == "graph-winograd":
                seen[target] = winograd_tiles(module)

        seen[target] = []
        return strato.compile(model, target=target, cache=False, tuning=tuning, after_stage=after)

    direct = compiled("llvm", None)(x)[0]
    tuned = compiled("llvm", log)(x)[0]
    assert seen["llvm"] == [2]
    np.testing.assert_allclose(tuned, direct, rtol=0, atol=1e-5 * np.abs(direct).max())

    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    compiled("llvm", empty)
    assert seen["llvm"] == []
    compiled("llvm -winograd", empty)
    assert seen["llvm -winograd"] == [4, 4]


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("llvm -winograd=3", "-winograd is a flag .* or a tile size .2 or 4., got '3'"),
        ("llvm -winograd=yes", "got 'yes'"),
    ],
)
def test_a_winograd_option_that_is_no_tile_is_refused(target, message):
    from strato.targets.registry import TargetError, get_target

    with pytest.raises(TargetError, match=message):
        get_target(target)


def test_a_convolution_written_into_a_concatenation_keeps_its_place_in_the_arena():
    """DenseNet's pattern: a convolution whose result the memory plan places inside a
    concatenation's buffer (graph-plan-memory ran first). Its Winograd convolution
    keeps that place (the plan's attributes move to it), and the result is the direct
    one's."""
    rng = np.random.default_rng(5)
    shape = [1, 32, 14, 14]
    weights = [
        numpy_helper.from_array((rng.standard_normal((32, 32, 3, 3)) / 17).astype(np.float32), "w"),
        numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "b"),
    ]
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Conv", ["r", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Concat", ["r", "c"], ["y"], axis=1),
    ]
    graph_proto = helper.make_graph(
        nodes, "dense_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 14, 14])],
        weights,
    )  # fmt: skip
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", 17)])
    x = rng.standard_normal(shape).astype(np.float32)
    seen: list[int] = []

    def after(stage: str, module) -> None:
        if stage == "graph-winograd":
            seen.extend(winograd_tiles(module))

    direct = strato.compile(model, target="llvm", cache=False)(x)[0]
    winograd = strato.compile(model, target="llvm -winograd", cache=False, after_stage=after)(x)[0]
    assert seen == [4]
    np.testing.assert_allclose(winograd, direct, rtol=0, atol=1e-5 * np.abs(direct).max())


DIRECT_READ = """
func.func @main(%x: tensor<1x32x24x24xf32>) -> tensor<1x32x24x24xf32> {
  %w = graph.constant dense<0.0> : tensor<32x32x3x3xf32>
  %y = graph.conv %x, %w strides [1, 1] padding [1, 1, 1, 1] dilations [1, 1] groups 1 layout "NCHW" kernel_layout "OIHW" : (tensor<1x32x24x24xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x24x24xf32>
  %r = graph.relu %y : tensor<1x32x24x24xf32>
  func.return %r : tensor<1x32x24x24xf32>
}
"""


@pytest.mark.parametrize("tile", [2, 4])
def test_a_convolution_reading_its_nchw_input_directly_is_blocked_for_winograd(tile):
    """A chain's first 3x3 convolution reads its NCHW input in blocks of one channel
    (graph-alter-layout); its Winograd form reads it blocked as its output is (the
    group's view becomes a transform to NCHW16c), with the weight transformed for that
    block, and computes the same."""
    ctx = make_context()
    module = Parser(ctx, DIRECT_READ).parse_module()
    rng = np.random.default_rng(tile)
    (constant,) = [o for o in module.walk() if isinstance(o, graph.ConstantOp)]
    constant.properties["value"] = dense_from_array(rng.standard_normal((32, 32, 3, 3)).astype(np.float32))
    x = rng.standard_normal((1, 32, 24, 24)).astype(np.float32)
    expected = run_graph(module, [x])[0]
    run_pipeline(ctx, module, "graph-alter-layout{block=16 min_block=8},graph-fuse-ops")
    (conv,) = [o for o in module.walk() if isinstance(o, graph.BlockedConvOp)]
    assert conv.in_block == 1
    run_pipeline(ctx, module, f"graph-winograd{{tile={tile}}}")
    module.verify()
    (group,) = [o for o in module.walk() if isinstance(o, graph.FusedOp) and "winograd" in o.label.data]
    (op,) = [o for o in group.body.block.ops if isinstance(o, graph.BlockedWinogradConvOp)]
    assert op.in_block == 16
    transforms = [(t.src_layout.data, t.dst_layout.data) for t in group.body.block.ops if isinstance(t, graph.LayoutTransformOp)]
    assert transforms[0] == ("NCHW", "NCHW16c")
    got = run_graph(module, [x])[0]
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-5 * np.abs(expected).max())
