"""The DCGAN generator for 64x64 images (Radford et al., "Unsupervised Representation
Learning with Deep Convolutional Generative Adversarial Networks", 2016), as an ONNX model.

The layout is the PyTorch DCGAN example's `Generator`, so parameter names and counts
match it (3,576,704 parameters at nz = 100, ngf = 64):

    input z [batch, nz, 1, 1]
      -> main.0  ConvTranspose 4x4/1 pad 0 (ngf * 8) -> main.1 BN -> main.2 ReLU    4x4
      -> main.3  ConvTranspose 4x4/2 pad 1 (ngf * 4) -> main.4 BN -> main.5 ReLU    8x8
      -> main.6  ConvTranspose 4x4/2 pad 1 (ngf * 2) -> main.7 BN -> main.8 ReLU    16x16
      -> main.9  ConvTranspose 4x4/2 pad 1 (ngf)     -> main.10 BN -> main.11 ReLU  32x32
      -> main.12 ConvTranspose 4x4/2 pad 1 (channels) -> main.13 Tanh -> output [batch, channels, 64, 64]

Transposed convolutions have no bias; BatchNormalization is in inference form with random
but plausible statistics. The weights' variance is scaled by the number of products summed
into one output pixel (input channels x the kernel taps that land on it: 1 for the first
layer on a 1x1 input, 2x2 for the stride-2 ones), with the He gain 2 where the input comes
from a ReLU, so activations stay O(1) and the Tanh is not saturated.
"""

from __future__ import annotations

import numpy as np
import onnx

from strato.zoo.onnx_graph import GraphBuilder, value_info

KERNEL = 4
WIDTH_MULTIPLIERS = (8, 4, 2, 1)
"""Output channels of the hidden ConvTranspose layers, in units of ngf."""


def _conv_transpose(
    g: GraphBuilder, x: str, name: str, c_in: int, c_out: int, first: bool, gain: float
) -> str:
    stride, pad = (1, 0) if first else (2, 1)
    # On its 1x1 input the first layer puts exactly one tap on each output pixel.
    taps_per_output = 1 if first else (KERNEL // stride) ** 2
    std = np.sqrt(gain / (c_in * taps_per_output))
    # ConvTranspose weights are [C_in, C_out / group, kH, kW].
    w = g.rng.normal(0.0, std, (c_in, c_out, KERNEL, KERNEL))
    return g.node(
        "ConvTranspose",
        [x, g.weight(f"{name}.weight", w)],
        name,
        kernel_shape=[KERNEL, KERNEL],
        strides=[stride, stride],
        pads=[pad, pad, pad, pad],
    )


def build_dcgan(
    batch: int = 1,
    seed: int = 0,
    nz: int = 100,
    ngf: int = 64,
    channels: int = 3,
) -> onnx.ModelProto:
    """The DCGAN generator from `nz`-dimensional latents to `channels` x 64 x 64 images,
    hidden widths `ngf` x (8, 4, 2, 1), weights from `seed`.

        model = build_dcgan(nz=16, ngf=8)   # a test-sized one
    """
    g = GraphBuilder(seed)
    x, c_in, layer = "input", nz, 0
    for index, multiplier in enumerate(WIDTH_MULTIPLIERS):
        c_out = ngf * multiplier
        first = index == 0
        # The latent is standard normal, not the output of a ReLU.
        gain = 1.0 if first else 2.0
        x = _conv_transpose(g, x, f"main.{layer}", c_in, c_out, first, gain)
        x = g.batch_norm(x, f"main.{layer + 1}", c_out)
        x = g.node("Relu", [x], f"main.{layer + 2}")
        c_in, layer = c_out, layer + 3
    x = _conv_transpose(g, x, f"main.{layer}", c_in, channels, first=False, gain=2.0)
    g.node("Tanh", [x], f"main.{layer + 1}", output="output")
    return g.finish(
        "dcgan_generator",
        [value_info("input", [batch, nz, 1, 1])],
        [value_info("output", [batch, channels, 64, 64])],
    )
