"""The Atari DQN (Mnih et al., "Human-level control through deep reinforcement learning",
Nature 2015), as an ONNX model.

The input is a stack of `frames` preprocessed 84x84 greyscale frames; the output is one
Q-value per action (18 is the full Atari action set). 1,693,362 parameters at the
default sizes:

    input [batch, 4, 84, 84]
      -> conv1 8x8/4 (32) -> relu1        [batch, 32, 20, 20]
      -> conv2 4x4/2 (64) -> relu2        [batch, 64, 9, 9]
      -> conv3 3x3/1 (64) -> relu3        [batch, 64, 7, 7]
      -> flatten -> fc1 (Gemm, 512) -> relu4
      -> fc2 (Gemm) -> output [batch, num_actions]

Convolutions are unpadded and have biases; there is no normalisation layer. Weights are
He-initialised (variance 2 / fan_in; 1 / fan_in for the last layer, which has no ReLU),
so Q-values stay O(1) for standard normal inputs.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8

CONV_LAYERS = (
    # output channels, kernel, stride
    (32, 8, 4),
    (64, 4, 2),
    (64, 3, 1),
)


def build_dqn(
    batch: int = 1,
    seed: int = 0,
    image_size: int = 84,
    frames: int = 4,
    hidden: int = 512,
    num_actions: int = 18,
) -> onnx.ModelProto:
    """The DQN on `frames` stacked `image_size` x `image_size` frames, a hidden dense
    layer of `hidden` units and `num_actions` Q-values, weights from `seed`.

        model = build_dqn(image_size=36, hidden=64)   # a test-sized one

    `image_size` must be at least 36, the smallest input the three convolutions accept."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    initializers: list[onnx.TensorProto] = []

    def weight(name: str, array: np.ndarray) -> str:
        initializers.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    current, channels, size = "input", frames, image_size
    for index, (c_out, kernel, stride) in enumerate(CONV_LAYERS, start=1):
        if size < kernel:
            raise ValueError(f"image_size {image_size} is too small for the DQN's convolutions")
        fan_in = channels * kernel * kernel
        w = rng.normal(0.0, np.sqrt(2.0 / fan_in), (c_out, channels, kernel, kernel))
        b = rng.normal(0.0, 0.01, c_out)
        conv = f"conv{index}"
        nodes.append(
            helper.make_node(
                "Conv",
                [current, weight(f"{conv}.weight", w), weight(f"{conv}.bias", b)],
                [conv],
                name=conv,
                kernel_shape=[kernel, kernel],
                strides=[stride, stride],
            )
        )
        current = f"relu{index}"
        nodes.append(helper.make_node("Relu", [conv], [current], name=current))
        channels, size = c_out, (size - kernel) // stride + 1
    nodes.append(helper.make_node("Flatten", [current], ["flatten"], name="flatten", axis=1))

    def dense(x: str, name: str, out: str, fan_in: int, fan_out: int, gain: float) -> str:
        w = rng.normal(0.0, np.sqrt(gain / fan_in), (fan_out, fan_in))
        b = rng.normal(0.0, 0.01, fan_out)
        inputs = [x, weight(f"{name}.weight", w), weight(f"{name}.bias", b)]
        nodes.append(helper.make_node("Gemm", inputs, [out], name=name, transB=1))
        return out

    x = dense("flatten", "fc1", "fc1", channels * size * size, hidden, gain=2.0)
    nodes.append(helper.make_node("Relu", [x], ["relu4"], name="relu4"))
    dense("relu4", "fc2", "output", hidden, num_actions, gain=1.0)
    graph = helper.make_graph(
        nodes,
        "dqn",
        [
            helper.make_tensor_value_info(
                "input", TensorProto.FLOAT, [batch, frames, image_size, image_size]
            )
        ],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [batch, num_actions])],
        initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="strato.zoo"
    )
    model.ir_version = IR_VERSION
    return model
