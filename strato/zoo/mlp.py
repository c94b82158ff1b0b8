"""A multi-layer perceptron 784-1024-1024-10 with ReLU, as an ONNX model.

Each layer is a Gemm with transB=1 (weight [out, in], as PyTorch's nn.Linear exports
it); hidden layers are followed by Relu:

    input [batch, 784] -> fc1 -> relu1 -> fc2 -> relu2 -> fc3 -> logits [batch, 10]

Weights are He-initialised (normal, std sqrt(2 / fan_in); sqrt(1 / fan_in) for the last
layer, which has no ReLU) so activations and logits stay O(1) for standard normal inputs.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import onnx

from strato.zoo.onnx_graph import GraphBuilder, value_info

MLP_SIZES = (784, 1024, 1024, 10)


def build_mlp(batch: int = 1, seed: int = 0, sizes: Sequence[int] = MLP_SIZES) -> onnx.ModelProto:
    """The MLP with layer widths `sizes` (input first), batch `batch`, weights from `seed`."""
    if len(sizes) < 2:
        raise ValueError("an MLP needs at least an input and an output width")
    g = GraphBuilder(seed)
    x = "input"
    layers = len(sizes) - 1
    for index, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes), start=1):
        last = index == layers
        gain = 1.0 if last else 2.0
        x = g.gemm(x, f"fc{index}", fan_in, fan_out, gain=gain, output="logits" if last else None)
        if not last:
            x = g.node("Relu", [x], f"relu{index}")
    return g.finish(
        "mlp",
        [value_info("input", [batch, sizes[0]])],
        [value_info("logits", [batch, sizes[-1]])],
    )
