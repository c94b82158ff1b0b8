"""ResNet-18 (He et al., "Deep Residual Learning for Image Recognition", 2016), as an ONNX model.

The layout is torchvision's `resnet18`, so parameter names and counts match it
(11,689,512 trainable parameters at the default sizes):

    input [batch, 3, 224, 224]
      -> conv1 7x7/2 (64) -> bn1 -> relu -> maxpool 3x3/2
      -> layer1..layer4: two BasicBlocks each, widths 64, 128, 256, 512; the first block
         of layers 2-4 has stride 2 and a 1x1/2 conv + BN on its shortcut
      -> GlobalAveragePool -> Flatten -> fc (Gemm) -> output [batch, num_classes]

    BasicBlock: conv 3x3 -> BN -> ReLU -> conv 3x3 -> BN -> (+ shortcut) -> ReLU

Convolutions have no bias (a BatchNormalization follows each one). BatchNormalization is
in inference form with random but plausible statistics. Weights are drawn from the
fan-in: He (variance 2 / fan_in) where a ReLU follows, variance 1 / fan_in where none does
(the stem, which sees the raw image, and the shortcut convs). The last BN of each residual
branch gets a scale below one, so that adding branch and shortcut does not double the
activation variance eight times over: activations and logits stay O(1) (standard
deviation about 1) for standard normal inputs.
"""

from __future__ import annotations

import onnx

from strato.zoo.onnx_graph import GraphBuilder, value_info

STAGE_BLOCKS = (2, 2, 2, 2)
"""BasicBlocks per stage (ResNet-18)."""

RESIDUAL_BN_SCALE = (0.2, 0.4)
"""Range of the BN scale closing each residual branch; see the module docstring."""


def _basic_block(g: GraphBuilder, x: str, name: str, c_in: int, c_out: int, stride: int) -> str:
    y = g.conv(x, f"{name}.conv1", c_in, c_out, 3, stride)
    y = g.batch_norm(y, f"{name}.bn1", c_out)
    y = g.node("Relu", [y], f"{name}.relu1")
    y = g.conv(y, f"{name}.conv2", c_out, c_out, 3, 1)
    y = g.batch_norm(y, f"{name}.bn2", c_out, scale=RESIDUAL_BN_SCALE)
    shortcut = x
    if stride != 1 or c_in != c_out:
        shortcut = g.conv(x, f"{name}.downsample.0", c_in, c_out, 1, stride, gain=1.0)
        shortcut = g.batch_norm(shortcut, f"{name}.downsample.1", c_out)
    y = g.node("Add", [y, shortcut], f"{name}.add")
    return g.node("Relu", [y], f"{name}.relu2")


def build_resnet18(
    batch: int = 1,
    seed: int = 0,
    image_size: int = 224,
    width: int = 64,
    num_classes: int = 1000,
) -> onnx.ModelProto:
    """ResNet-18 on `image_size` x `image_size` RGB images, stage widths `width` x (1, 2, 4, 8),
    `num_classes` logits, weights from `seed`.

        model = build_resnet18(image_size=32, width=8, num_classes=10)  # a test-sized one

    `image_size` must be a multiple of 32 (the network's total stride)."""
    if image_size < 32 or image_size % 32 != 0:
        raise ValueError(f"image_size must be a positive multiple of 32, got {image_size}")
    g = GraphBuilder(seed)
    x = g.conv("input", "conv1", 3, width, 7, 2, gain=1.0)
    x = g.batch_norm(x, "bn1", width)
    x = g.node("Relu", [x], "relu")
    x = g.node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = width
    for stage, blocks in enumerate(STAGE_BLOCKS):
        stage_width = width * 2**stage
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            x = _basic_block(g, x, f"layer{stage + 1}.{block}", channels, stage_width, stride)
            channels = stage_width
    x = g.node("GlobalAveragePool", [x], "avgpool")
    x = g.node("Flatten", [x], "flatten", axis=1)
    g.gemm(x, "fc", channels, num_classes, gain=1.0, output="output")
    return g.finish(
        "resnet18",
        [value_info("input", [batch, 3, image_size, image_size])],
        [value_info("output", [batch, num_classes])],
    )
