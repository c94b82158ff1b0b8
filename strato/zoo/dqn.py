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

import onnx

from strato.zoo.onnx_graph import GraphBuilder, value_info

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
    g = GraphBuilder(seed)
    x, channels, size = "input", frames, image_size
    for index, (c_out, kernel, stride) in enumerate(CONV_LAYERS, start=1):
        if size < kernel:
            raise ValueError(f"image_size {image_size} is too small for the DQN's convolutions")
        x = g.conv(
            x, f"conv{index}", channels, c_out, kernel, stride, same_padding=False, bias=True
        )
        x = g.node("Relu", [x], f"relu{index}")
        channels, size = c_out, (size - kernel) // stride + 1
    x = g.node("Flatten", [x], "flatten", axis=1)
    x = g.gemm(x, "fc1", channels * size * size, hidden, gain=2.0)
    x = g.node("Relu", [x], "relu4")
    g.gemm(x, "fc2", hidden, num_actions, gain=1.0, output="output")
    return g.finish(
        "dqn",
        [value_info("input", [batch, frames, image_size, image_size])],
        [value_info("output", [batch, num_actions])],
    )
