"""MobileNetV2 (Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks",
2018), as an ONNX model.

The layout is torchvision's `mobilenet_v2`, so parameter names and counts match it
(3,504,872 trainable parameters at width 1.0 and 1000 classes):

    input [batch, 3, 224, 224]
      -> features.0: conv 3x3/2 (32) -> BN -> ReLU6
      -> features.1..17: inverted residual blocks from the (t, c, n, s) table below
      -> features.18: conv 1x1 (1280) -> BN -> ReLU6
      -> GlobalAveragePool -> Flatten -> classifier.1 (Gemm) -> output [batch, num_classes]

    inverted residual (expansion t, stride s):
      [conv 1x1 (t * c_in) -> BN -> ReLU6]          (absent when t == 1)
      -> depthwise conv 3x3/s (group = channels) -> BN -> ReLU6
      -> conv 1x1 (c_out) -> BN                     (linear bottleneck: no activation)
      -> + input                                    (when s == 1 and c_in == c_out)

ReLU6 is Clip(0, 6); the classifier's Dropout is omitted (inference). Convolutions have
no bias. Weights are drawn from the fan-in (variance 2 / fan_in before a ReLU6, 1 / fan_in
otherwise); BN statistics are random but plausible, and the BN closing a residual branch
gets a small scale so the residual sums keep activations O(1).
"""

from __future__ import annotations

import numpy as np
import onnx

from strato.zoo.onnx_graph import BATCH_NORM_SCALE, GraphBuilder, value_info

INVERTED_RESIDUAL_SETTING = (
    # expansion t, output channels c, repeats n, first stride s
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)
STEM_CHANNELS = 32
LAST_CHANNELS = 1280
CHANNEL_DIVISOR = 8

RESIDUAL_BN_SCALE = (0.2, 0.4)
"""Range of the BN scale closing a residual branch; see the module docstring."""


def _conv_bn_relu6_names(name: str) -> tuple[str, str, str]:
    # torchvision's Conv2dNormActivation: a Sequential of conv, BN, ReLU6.
    return f"{name}.0", f"{name}.1", f"{name}.2"


def make_divisible(value: float, divisor: int = CHANNEL_DIVISOR) -> int:
    """`value` rounded to the nearest multiple of `divisor`, never below `divisor` and
    never more than 10% below `value` (the MobileNet channel rule)."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    if rounded < 0.9 * value:
        rounded += divisor
    return rounded


def _relu6_bounds(g: GraphBuilder) -> None:
    # Clip's bounds are inputs since opset 11; Constant nodes keep the initializers
    # to the network's parameters.
    g.constant("relu6.min", np.array(0.0, np.float32))
    g.constant("relu6.max", np.array(6.0, np.float32))


def _conv_bn(
    g: GraphBuilder,
    x: str,
    names: tuple[str, str, str | None],
    c_in: int,
    c_out: int,
    kernel: int,
    stride: int = 1,
    groups: int = 1,
    bn_scale: tuple[float, float] = BATCH_NORM_SCALE,
) -> str:
    """Conv (no bias) -> BN [-> ReLU6], the nodes named `names` (conv, BN, ReLU6 or
    None for none)."""
    conv_name, bn_name, relu6_name = names
    gain = 2.0 if relu6_name is not None else 1.0
    y = g.conv(x, conv_name, c_in, c_out, kernel, stride, gain=gain, groups=groups)
    y = g.batch_norm(y, bn_name, c_out, bn_scale)
    if relu6_name is None:
        return y
    return g.node("Clip", [y, "relu6.min", "relu6.max"], relu6_name)


def _inverted_residual(
    g: GraphBuilder, x: str, name: str, c_in: int, c_out: int, stride: int, expansion: int
) -> str:
    hidden = c_in * expansion
    residual = stride == 1 and c_in == c_out
    layers = iter(f"{name}.conv.{layer}" for layer in range(4))
    y = x
    if expansion != 1:
        y = _conv_bn(g, y, _conv_bn_relu6_names(next(layers)), c_in, hidden, 1)
    depthwise = _conv_bn_relu6_names(next(layers))
    y = _conv_bn(g, y, depthwise, hidden, hidden, 3, stride, groups=hidden)
    projection = _conv_bn(
        g,
        y,
        (next(layers), next(layers), None),
        hidden,
        c_out,
        1,
        bn_scale=RESIDUAL_BN_SCALE if residual else BATCH_NORM_SCALE,
    )
    if not residual:
        return projection
    return g.node("Add", [x, projection], f"{name}.add")


def build_mobilenet_v2(
    batch: int = 1,
    seed: int = 0,
    width_mult: float = 1.0,
    image_size: int = 224,
    num_classes: int = 1000,
) -> onnx.ModelProto:
    """MobileNetV2 at width multiplier `width_mult` on `image_size` x `image_size` RGB
    images, `num_classes` logits, weights from `seed`.

        model = build_mobilenet_v2(width_mult=0.25, image_size=32, num_classes=10)

    `image_size` must be a multiple of 32 (the network's total stride)."""
    if image_size < 32 or image_size % 32 != 0:
        raise ValueError(f"image_size must be a positive multiple of 32, got {image_size}")
    if width_mult <= 0:
        raise ValueError(f"width_mult must be positive, got {width_mult}")
    g = GraphBuilder(seed)
    _relu6_bounds(g)
    channels = make_divisible(STEM_CHANNELS * width_mult)
    last_channels = make_divisible(LAST_CHANNELS * max(1.0, width_mult))
    x = _conv_bn(g, "input", _conv_bn_relu6_names("features.0"), 3, channels, 3, 2)
    index = 1
    for expansion, c, repeats, first_stride in INVERTED_RESIDUAL_SETTING:
        c_out = make_divisible(c * width_mult)
        for repeat in range(repeats):
            stride = first_stride if repeat == 0 else 1
            x = _inverted_residual(g, x, f"features.{index}", channels, c_out, stride, expansion)
            channels = c_out
            index += 1
    x = _conv_bn(g, x, _conv_bn_relu6_names(f"features.{index}"), channels, last_channels, 1)
    x = g.node("GlobalAveragePool", [x], "avgpool")
    x = g.node("Flatten", [x], "flatten", axis=1)
    g.gemm(x, "classifier.1", last_channels, num_classes, gain=1.0, output="output")
    return g.finish(
        "mobilenet_v2",
        [value_info("input", [batch, 3, image_size, image_size])],
        [value_info("output", [batch, num_classes])],
    )
