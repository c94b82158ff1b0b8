"""Building a zoo model's ONNX graph in code, with weights drawn from a seeded generator.

A `GraphBuilder` holds the nodes and initializers of the model under construction and
the generator its weights come from; each layer helper draws its weights in a fixed order,
so the same seed always gives the same model, byte for byte:

    g = GraphBuilder(seed=0)
    x = g.conv("input", "conv1", 3, 16, kernel=3, stride=1)  # He-initialised, no bias
    x = g.batch_norm(x, "bn1", 16)  # inference form
    x = g.node("Relu", [x], "relu1")
    x = g.node("GlobalAveragePool", [x], "pool")
    x = g.node("Flatten", [x], "flatten", axis=1)
    g.gemm(x, "fc", 16, 10, gain=1.0, output="output")
    model = g.finish(
        "tiny", [value_info("input", [1, 3, 8, 8])], [value_info("output", [1, 10])]
    )

Every node has one output, named after the node unless `output` says otherwise, and every
initializer is a float32 parameter; non-parameter tensors (shapes, scalars) are Constant
nodes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
"""The default-domain opset every zoo model imports."""

IR_VERSION = 8
"""The ONNX IR version every zoo model declares (the one opset 17 came with)."""

PRODUCER_NAME = "strato.zoo"

BIAS_STD = 0.01
"""Standard deviation of dense layers' biases unless a model asks otherwise."""

BATCH_NORM_SCALE = (0.8, 1.2)
"""Range of a BatchNormalization's random scale, unless a model asks otherwise."""

BATCH_NORM_EPSILON = 1e-5


def value_info(
    name: str, shape: Sequence[int], elem_type: int = TensorProto.FLOAT
) -> onnx.ValueInfoProto:
    """A graph input or output `name` of static `shape` (float32 unless `elem_type`)."""
    return helper.make_tensor_value_info(name, elem_type, list(shape))


class GraphBuilder:
    """The nodes and initializers of a model under construction, and the generator
    its weights come from (`rng`, for layers a model draws itself)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def weight(self, name: str, array: np.ndarray) -> str:
        """Adds `array` as the float32 initializer `name`; returns `name`."""
        self.initializers.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def constant(self, name: str, array: np.ndarray) -> str:
        """A Constant node `name` holding `array` as it is (dtype kept): for shapes and
        scalars, which are not parameters."""
        return self.node("Constant", [], name, value=numpy_helper.from_array(array, name))

    def node(
        self,
        op_type: str,
        inputs: Sequence[str],
        name: str,
        *,
        output: str | None = None,
        **attributes,
    ) -> str:
        """Appends an `op_type` node `name` with `attributes` (None ones left out);
        returns its one output, `output` or else `name`."""
        output = output if output is not None else name
        self.nodes.append(
            helper.make_node(op_type, list(inputs), [output], name=name, **attributes)
        )
        return output

    def conv(
        self,
        x: str,
        name: str,
        c_in: int,
        c_out: int,
        kernel: int,
        stride: int = 1,
        *,
        gain: float = 2.0,
        groups: int | None = None,
        same_padding: bool = True,
        bias: bool = False,
    ) -> str:
        """A square `kernel` x `kernel` Conv from `c_in` to `c_out` channels, weight
        `{name}.weight` drawn normal with variance `gain / fan_in` (2 is He, for a ReLU
        after it), then with `bias` a `{name}.bias` of standard deviation BIAS_STD.

        `same_padding` pads by kernel // 2 on every side; without it the conv is
        unpadded and has no `pads` attribute. The `group` attribute is written only when
        `groups` is given (ONNX's default is 1)."""
        group_count = groups if groups is not None else 1
        fan_in = c_in // group_count * kernel * kernel
        w = self.rng.normal(
            0.0, np.sqrt(gain / fan_in), (c_out, c_in // group_count, kernel, kernel)
        )
        inputs = [x, self.weight(f"{name}.weight", w)]
        if bias:
            inputs.append(self.weight(f"{name}.bias", self.rng.normal(0.0, BIAS_STD, c_out)))
        pad = kernel // 2
        return self.node(
            "Conv",
            inputs,
            name,
            kernel_shape=[kernel, kernel],
            strides=[stride, stride],
            pads=[pad, pad, pad, pad] if same_padding else None,
            group=groups,
        )

    def batch_norm(
        self,
        x: str,
        name: str,
        channels: int,
        scale: tuple[float, float] = BATCH_NORM_SCALE,
    ) -> str:
        """BatchNormalization in inference form, with random but plausible parameters
        and statistics (torchvision's names): scale uniform in `scale`, shift and mean
        normal with standard deviation 0.1, variance uniform in [0.5, 1.5]."""
        gamma = self.rng.uniform(*scale, channels)
        beta = self.rng.normal(0.0, 0.1, channels)
        mean = self.rng.normal(0.0, 0.1, channels)
        var = self.rng.uniform(0.5, 1.5, channels)
        stats = [
            self.weight(f"{name}.weight", gamma),
            self.weight(f"{name}.bias", beta),
            self.weight(f"{name}.running_mean", mean),
            self.weight(f"{name}.running_var", var),
        ]
        return self.node("BatchNormalization", [x, *stats], name, epsilon=BATCH_NORM_EPSILON)

    def gemm(
        self,
        x: str,
        name: str,
        fan_in: int,
        fan_out: int,
        *,
        gain: float,
        output: str | None = None,
    ) -> str:
        """A dense layer as PyTorch's nn.Linear exports it: Gemm with transB=1, weight
        `{name}.weight` [fan_out, fan_in] of variance `gain / fan_in`, bias `{name}.bias`
        of standard deviation BIAS_STD."""
        w = self.rng.normal(0.0, np.sqrt(gain / fan_in), (fan_out, fan_in))
        b = self.rng.normal(0.0, BIAS_STD, fan_out)
        inputs = [x, self.weight(f"{name}.weight", w), self.weight(f"{name}.bias", b)]
        return self.node("Gemm", inputs, name, output=output, transB=1)

    def matmul_add(
        self,
        x: str,
        name: str,
        fan_in: int,
        fan_out: int,
        *,
        gain: float = 1.0,
        bias_std: float = BIAS_STD,
        output: str | None = None,
    ) -> str:
        """A dense layer over the last axis of a tensor of any rank: MatMul by
        `{name}.weight` [fan_in, fan_out] (as exporters write it) of variance
        `gain / fan_in`, node `{name}.matmul`, then Add of `{name}.bias`, node `name`."""
        w = self.rng.normal(0.0, np.sqrt(gain / fan_in), (fan_in, fan_out))
        b = self.rng.normal(0.0, bias_std, fan_out)
        y = self.node("MatMul", [x, self.weight(f"{name}.weight", w)], f"{name}.matmul")
        return self.node("Add", [y, self.weight(f"{name}.bias", b)], name, output=output)

    def finish(
        self,
        name: str,
        inputs: Sequence[onnx.ValueInfoProto],
        outputs: Sequence[onnx.ValueInfoProto],
    ) -> onnx.ModelProto:
        """The model: graph `name` with `inputs`, `outputs` and everything built so far,
        at opset OPSET and IR version IR_VERSION."""
        graph = helper.make_graph(self.nodes, name, list(inputs), list(outputs), self.initializers)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name=PRODUCER_NAME,
        )
        model.ir_version = IR_VERSION
        return model
