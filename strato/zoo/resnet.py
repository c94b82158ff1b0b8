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

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8

STAGE_BLOCKS = (2, 2, 2, 2)
"""BasicBlocks per stage (ResNet-18)."""

RESIDUAL_BN_SCALE = (0.2, 0.4)
"""Range of the BN scale closing each residual branch; see the module docstring."""


class _ResNetGraph:
    """Nodes and initializers of the network under construction, and the generator
    its weights come from."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def weight(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def node(self, op_type: str, inputs: list[str], name: str, **attributes) -> str:
        self.nodes.append(helper.make_node(op_type, inputs, [name], name=name, **attributes))
        return name

    def conv(
        self, x: str, name: str, c_in: int, c_out: int, kernel: int, stride: int, gain: float = 2.0
    ) -> str:
        fan_in = c_in * kernel * kernel
        w = self.rng.normal(0.0, np.sqrt(gain / fan_in), (c_out, c_in, kernel, kernel))
        pad = kernel // 2
        return self.node(
            "Conv",
            [x, self.weight(f"{name}.weight", w)],
            name,
            kernel_shape=[kernel, kernel],
            strides=[stride, stride],
            pads=[pad, pad, pad, pad],
        )

    def batch_norm(
        self, x: str, name: str, channels: int, scale: tuple[float, float] = (0.8, 1.2)
    ) -> str:
        gamma = self.rng.uniform(*scale, channels)
        beta = self.rng.normal(0.0, 0.1, channels)
        mean = self.rng.normal(0.0, 0.1, channels)
        var = self.rng.uniform(0.5, 1.5, channels)
        return self.node(
            "BatchNormalization",
            [
                x,
                self.weight(f"{name}.weight", gamma),
                self.weight(f"{name}.bias", beta),
                self.weight(f"{name}.running_mean", mean),
                self.weight(f"{name}.running_var", var),
            ],
            name,
            epsilon=1e-5,
        )

    def basic_block(self, x: str, name: str, c_in: int, c_out: int, stride: int) -> str:
        y = self.conv(x, f"{name}.conv1", c_in, c_out, 3, stride)
        y = self.batch_norm(y, f"{name}.bn1", c_out)
        y = self.node("Relu", [y], f"{name}.relu1")
        y = self.conv(y, f"{name}.conv2", c_out, c_out, 3, 1)
        y = self.batch_norm(y, f"{name}.bn2", c_out, scale=RESIDUAL_BN_SCALE)
        shortcut = x
        if stride != 1 or c_in != c_out:
            shortcut = self.conv(x, f"{name}.downsample.0", c_in, c_out, 1, stride, gain=1.0)
            shortcut = self.batch_norm(shortcut, f"{name}.downsample.1", c_out)
        y = self.node("Add", [y, shortcut], f"{name}.add")
        return self.node("Relu", [y], f"{name}.relu2")


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
    g = _ResNetGraph(np.random.default_rng(seed))
    x = g.conv("input", "conv1", 3, width, 7, 2, gain=1.0)
    x = g.batch_norm(x, "bn1", width)
    x = g.node("Relu", [x], "relu")
    x = g.node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = width
    for stage, blocks in enumerate(STAGE_BLOCKS):
        stage_width = width * 2**stage
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            x = g.basic_block(x, f"layer{stage + 1}.{block}", channels, stage_width, stride)
            channels = stage_width
    x = g.node("GlobalAveragePool", [x], "avgpool")
    x = g.node("Flatten", [x], "flatten", axis=1)
    fc_w = g.rng.normal(0.0, np.sqrt(1.0 / channels), (num_classes, channels))
    fc_b = g.rng.normal(0.0, 0.01, num_classes)
    g.nodes.append(
        helper.make_node(
            "Gemm",
            [x, g.weight("fc.weight", fc_w), g.weight("fc.bias", fc_b)],
            ["output"],
            name="fc",
            transB=1,
        )
    )
    graph = helper.make_graph(
        g.nodes,
        "resnet18",
        [
            helper.make_tensor_value_info(
                "input", TensorProto.FLOAT, [batch, 3, image_size, image_size]
            )
        ],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [batch, num_classes])],
        g.initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="strato.zoo"
    )
    model.ir_version = IR_VERSION
    return model
