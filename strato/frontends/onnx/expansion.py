"""Importing an ONNX node as other ONNX nodes, each converted by its own converter as it
is built (what a function body is to its operator): the onnxruntime operators of
`convert_contrib` and the control flow of `convert_control` are imported this way.

    body = Expansion(ctx)
    wide = body.cast(ctx.node.input[0], np.float64)
    total = body.node("Add", [wide, body.constant(np.float64(0.5))])
    return [body.result(total)]

Values are named under the node's first output (`<output>::<op type>::<n>`), so they
never meet the model's own names.
"""

from __future__ import annotations

import numpy as np
from onnx import helper

from strato.dialects.tensor_types import numpy_dtype
from strato.frontends.onnx.conversion import ImportedValue, NodeContext

BODY_OPSET = 17
"""The opset of the default-domain nodes an expansion builds."""


class Expansion:
    """Builds and converts the nodes a node is imported as."""

    def __init__(self, ctx: NodeContext, tag: str = ""):
        self.ctx = ctx
        self.prefix = f"{ctx.node.output[0]}::{ctx.op_type}{tag}::"
        self.count = 0

    def name(self) -> str:
        """A fresh value name."""
        self.count += 1
        return f"{self.prefix}{self.count}"

    def constant(self, value) -> str:
        name = self.name()
        self.ctx.bind(name, np.require(np.asarray(value), requirements="C"))  # 0-d stays 0-d
        return name

    def bound(self, value: object) -> str:
        """A fresh name for `value` (an SSA value, an array or a sequence)."""
        name = self.name()
        self.ctx.bind(name, value)
        return name

    def node(self, op_type: str, inputs: list[str], **attributes) -> str:
        """Convert one node of the default domain; the name of its (single) result."""
        from strato.frontends.onnx.op_table import ONNX_CONVERTERS

        name = self.name()
        node = helper.make_node(op_type, inputs, [name], **attributes)
        (result,) = ONNX_CONVERTERS[op_type](self.ctx.nested(node, BODY_OPSET))
        self.ctx.bind(name, np.asarray(result) if isinstance(result, np.generic) else result)
        return name

    def cast(self, name: str, dtype) -> str:
        return self.node("Cast", [name], to=helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))

    def dtype_of(self, name: str) -> np.dtype:
        value = self.ctx.lookup(name)
        return value.dtype if isinstance(value, np.ndarray) else numpy_dtype(value.type)

    def result(self, name: str) -> ImportedValue:
        return self.ctx.lookup(name)


__all__ = ["BODY_OPSET", "Expansion"]
