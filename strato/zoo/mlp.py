"""A multi-layer perceptron 784-1024-1024-10 with ReLU, as an ONNX model.

Each layer is a Gemm with transB=1 (weight [out, in], as PyTorch's nn.Linear exports
it); hidden layers are followed by Relu:

    input [batch, 784] -> fc1 -> relu1 -> fc2 -> relu2 -> fc3 -> logits [batch, 10]

Weights are He-initialised (normal, std sqrt(2 / fan_in); sqrt(1 / fan_in) for the last
layer, which has no ReLU) so activations and logits stay O(1) for standard normal inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MLP_SIZES = (784, 1024, 1024, 10)
OPSET = 17
IR_VERSION = 8


def build_mlp(
    batch: int = 1, seed: int = 0, sizes: Sequence[int] = MLP_SIZES
) -> onnx.ModelProto:
    """The MLP with layer widths `sizes` (input first), batch `batch`, weights from `seed`."""
    if len(sizes) < 2:
        raise ValueError("an MLP needs at least an input and an output width")
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    initializers: list[onnx.TensorProto] = []
    current = "input"
    layers = len(sizes) - 1
    for index, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:]), start=1):
        last = index == layers
        gain = 1.0 if last else 2.0
        weight = rng.normal(0.0, np.sqrt(gain / fan_in), (fan_out, fan_in)).astype(np.float32)
        bias = rng.normal(0.0, 0.01, fan_out).astype(np.float32)
        initializers += [
            numpy_helper.from_array(weight, f"fc{index}.weight"),
            numpy_helper.from_array(bias, f"fc{index}.bias"),
        ]
        out = "logits" if last else f"fc{index}"
        nodes.append(
            helper.make_node(
                "Gemm",
                [current, f"fc{index}.weight", f"fc{index}.bias"],
                [out],
                name=f"fc{index}",
                transB=1,
            )
        )
        current = out
        if not last:
            nodes.append(helper.make_node("Relu", [out], [f"relu{index}"], name=f"relu{index}"))
            current = f"relu{index}"
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, sizes[0]])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, sizes[-1]])],
        initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="strato.zoo"
    )
    model.ir_version = IR_VERSION
    return model
