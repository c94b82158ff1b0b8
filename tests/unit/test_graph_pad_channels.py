"""graph-pad-channels: convolutions whose output channels no block divides are padded,
and the padded tensors flow on; the results stay those of the program."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given
from onnx import TensorProto, helper, numpy_helper

import strato
from strato.context import make_context
from strato.dialects import graph
from strato.dialects.graph import static_shape
from strato.interpreters.graph import run_graph
from strato.pipeline import run_pipeline
from strato.testing.graph_programs import CONV_OP_KINDS, GraphProgram, conv_programs
from strato.transforms.graph_pad_channels import padded_channels

PASS = "graph-pad-channels{multiple=4 min_multiple=4 max_extra_percent=100}"


@pytest.mark.parametrize(
    "channels, padded",
    [
        (58, 64),  # ShuffleNetV2 x1.0's branch
        (230, 240),  # R(2+1)D's first 128-channel block
        (921, 928),
        (29, 32),
        (1000, 1008),  # SqueezeNet's classifier: blocks of 8 divide it, 0.8% added
        (120, 128),
        (24, None),  # blocks of 8 divide it, and 32 would add 33%
        (40, None),
        (20, None),  # 32 would add 60%
        (16, None),
    ],
)
def test_the_channels_a_convolution_is_padded_to(channels: int, padded: int | None):
    assert padded_channels(channels, 16, 8, 12, 12) == padded
    if channels % 8 == 0:  # a narrow bound of 0 leaves channels blocks of 8 divide
        assert padded_channels(channels, 16, 8, 12, 0) is None


@given(
    program=conv_programs(
        channels=(3, 5, 6, 8), kinds=(*CONV_OP_KINDS, "channel_concat", "spatial_mean")
    )
)
def test_padding_keeps_generated_programs(program: GraphProgram):
    """Random convolutional programs (every op kind of the generator, concatenations
    and means that read slices): the same results, and every convolution of one group
    writes a multiple of 4 channels."""
    inputs = program.random_inputs(seed=5)
    expected = run_graph(program.module, inputs)
    run_pipeline(make_context(), program.module, PASS)
    program.module.verify()
    for op in program.module.walk():
        if isinstance(op, graph.ConvOp) and op.group_count == 1 and isinstance(op.weight.owner, graph.ConstantOp):
            assert static_shape(op.result)[1] % 4 == 0
    for got, want in zip(run_graph(program.module, inputs), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _two_plus_one_block(channels: int, middle: int) -> onnx.ModelProto:
    """R(2+1)D's factored convolution: a 1x3x3 convolution to `middle` channels, ReLU, a
    3x1x1 convolution back to `channels`, the input added, ReLU."""
    rng = np.random.default_rng(0)
    spatial = rng.standard_normal((middle, channels, 1, 3, 3)).astype(np.float32) * 0.2
    temporal = rng.standard_normal((channels, middle, 3, 1, 1)).astype(np.float32) * 0.2
    bias = rng.standard_normal(middle).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "ws", "bs"], ["s"], kernel_shape=[1, 3, 3], pads=[0, 1, 1, 0, 1, 1]),
        helper.make_node("Relu", ["s"], ["r"]),
        helper.make_node("Conv", ["r", "wt"], ["t"], kernel_shape=[3, 1, 1], pads=[1, 0, 0, 1, 0, 0]),
        helper.make_node("Add", ["t", "x"], ["a"]),
        helper.make_node("Relu", ["a"], ["y"]),
    ]
    shape = [1, channels, 4, 6, 6]
    model = helper.make_model(
        helper.make_graph(
            nodes,
            "two_plus_one",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
            [
                numpy_helper.from_array(spatial, "ws"),
                numpy_helper.from_array(bias, "bs"),
                numpy_helper.from_array(temporal, "wt"),
            ],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    return model


def test_a_factored_3d_convolution_with_odd_channels_compiles_padded():
    """58 middle channels (padded to 64 by the llvm target's pipeline) between two
    16-channel tensors: the compiled model against onnxruntime."""
    ort = pytest.importorskip("onnxruntime")
    model = _two_plus_one_block(16, 58)
    x = np.random.default_rng(1).standard_normal((1, 16, 4, 6, 6)).astype(np.float32)
    compiled = strato.compile(model, threads=1, cache=False)
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    (got,) = compiled(x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_the_default_options_pad_the_middle_channels():
    from strato.frontends.onnx import import_onnx

    module = import_onnx(_two_plus_one_block(16, 58)).module
    run_pipeline(make_context(), module, "graph-simplify-inference,graph-pad-channels")
    convs = [op for op in module.walk() if isinstance(op, graph.ConvOp)]
    assert [static_shape(op.weight) for op in convs] == [(64, 16, 1, 3, 3), (16, 64, 3, 1, 1)]
    assert not any(isinstance(op, graph.SliceOp) for op in module.walk())
