"""What an operator converter sees: one ONNX node, its inputs and attributes, and a
place to emit graph ops.

A converter is a function `(NodeContext) -> list[ImportedValue]` returning one value per
node output. An `ImportedValue` is either an `SSAValue` of the function being built or a
numpy array known at import time (an initializer, a `Constant` node, or something folded
from them). Arrays stay arrays until an op needs them as an operand, so converters can
rearrange weights (transpose, scale) in numpy instead of emitting ops for it:

    def convert_relu(ctx: NodeContext) -> list[ImportedValue]:
        x = ctx.value(0)
        if isinstance(x, np.ndarray):
            return [np.maximum(x, 0)]
        return [ctx.emit(graph.ReluOp(x)).result]

Every problem a converter finds is reported with `raise ctx.error("why")`, which names
the node and its op type.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

import numpy as np
import onnx
from onnx import helper, numpy_helper

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from strato.dialects.graph import ConstantOp, broadcast_shapes
from strato.dialects.graph.dims import RunTimeDims
from strato.dialects.tensor_types import element_type_of
from strato.diagnostics import ModelImportError

ImportedValue: TypeAlias = SSAValue | np.ndarray
Converter: TypeAlias = Callable[["NodeContext"], list[ImportedValue]]

FLOAT32 = np.dtype(np.float32)


def node_label(node: onnx.NodeProto, index: int) -> str:
    """How diagnostics name a node: `node 'fc1' (Gemm)` or `node #3 (Gemm)`."""
    where = f"'{node.name}'" if node.name else f"#{index}"
    return f"node {where} ({node.op_type})"


def ssa_name(onnx_name: str) -> str:
    """The SSA name hint of an ONNX value name. ONNX names are any string (exporters
    write `/c/Conv_output_0`, `onnx::Conv_12`, `1`); SSA names are
    `[A-Za-z_$.-][A-Za-z0-9_$.-]*`. Each run of other characters becomes one `_`
    (leading ones are dropped) and a name that would start with a digit gets a `v`:

        /c/Conv_output_0 -> c_Conv_output_0     onnx::Conv_12 -> onnx_Conv_12
        1 -> v1                                  :: -> v

    The mapping is deterministic. Two ONNX names may map to one hint: the printer
    numbers repeated hints, so printed names stay unique. The exact ONNX names of the
    graph's inputs and outputs are kept beside the IR (`ImportedModel`)."""
    cleaned = _NOT_IN_SSA_NAMES.sub("_", onnx_name).lstrip("_") or "v"
    if not cleaned[0].isalpha() and cleaned[0] not in "$.-":
        cleaned = "v" + cleaned
    return cleaned


_NOT_IN_SSA_NAMES = re.compile(r"[^A-Za-z0-9_$.-]+")


def shape_of(value: ImportedValue) -> tuple[int, ...]:
    """The static shape of an imported value."""
    if isinstance(value, np.ndarray):
        return tuple(value.shape)
    if not isinstance(value, SSAValue):  # a `shape_values.ShapeValue`
        return tuple(value.shape)
    assert isinstance(value.type, TensorType)
    return value.type.get_shape()


def onnx_type_name(dtype: np.dtype) -> str:
    """The ONNX name of a numpy dtype (FLOAT, DOUBLE, INT64, ...), for diagnostics."""
    try:
        return onnx.TensorProto.DataType.Name(helper.np_dtype_to_tensor_dtype(dtype))
    except (KeyError, ValueError, TypeError):
        return str(dtype)


class NodeContext:
    """One node being converted: reads its inputs and attributes, emits ops into `block`.

    Materialised constants are cached per ONNX value name, so a weight used by several
    nodes becomes one `graph.constant`.
    """

    def __init__(
        self,
        node: onnx.NodeProto,
        index: int,
        env: dict[str, ImportedValue],
        block: Block,
        materialized: dict[str, SSAValue],
        location: str | None,
    ):
        self.node = node
        self.index = index
        self._env = env
        self._block = block
        self._materialized = materialized
        self._location = location
        self._attributes = {attr.name: attr for attr in node.attribute}

    @property
    def label(self) -> str:
        return node_label(self.node, self.index)

    @property
    def op_type(self) -> str:
        return self.node.op_type

    # The default-domain opset of the model, set by the importer after construction.
    opset_version: int | None = None
    # The classes of run-time dimensions of the function so far, set by the importer of
    # a model of run-time dimensions (`shape_values`).
    run_time_dims: RunTimeDims | None = None

    def opset(self) -> int:
        """The default-domain opset version the model imports, for operators whose
        semantics changed between opsets (Softmax's axis); the newest opset onnx knows
        when the importer did not say."""
        if self.opset_version is not None:
            return self.opset_version
        return onnx.defs.onnx_opset_version()

    def error(self, reason: str) -> ModelImportError:
        """A diagnostic naming this node; use as `raise ctx.error(...)`."""
        return ModelImportError(f"{self.label}: {reason}", location=self._location)

    # -- inputs -----------------------------------------------------------------

    def has_input(self, index: int) -> bool:
        """Whether optional input `index` is given (ONNX marks absent ones by "")."""
        return index < len(self.node.input) and self.node.input[index] != ""

    def input_name(self, index: int) -> str:
        return self.node.input[index]

    def value(self, index: int) -> ImportedValue:
        """Input `index` as imported: an SSA value, or an array when known at import
        time. It must be a tensor of a numeric element type (`tensor_types`: bool,
        integers, f16, bf16, f32, f64, the 8- and 4-bit floats); strings are not."""
        if not self.has_input(index):
            raise self.error(f"input {index} is required but not given")
        name = self.node.input[index]
        value = self._tensor(index)
        if isinstance(value, np.ndarray) and not has_element_type(value.dtype):
            raise self.error(
                f"input '{name}' has element type {onnx_type_name(value.dtype)}; "
                "strato imports numeric tensors only"
            )
        return value

    def constant(self, index: int) -> np.ndarray | None:
        """Input `index` as an array when it is known at import time, else None."""
        value = self.value(index)
        return value if isinstance(value, np.ndarray) else None

    def known(self, index: int) -> np.ndarray | None:
        """Input `index` as an array of any element type when it is known at import
        time, else None: for inputs the importer reads as data (shapes, axes, pads,
        indices) and for folding ops on import-time values."""
        if not self.has_input(index):
            raise self.error(f"input {index} is required but not given")
        value = self._tensor(index)
        return value if isinstance(value, np.ndarray) else None

    def static_value(self, index: int) -> Any:
        """Input `index` whatever it is: a tensor value, a static sequence (a list) or
        None for an absent optional (`sequences`), for the operators that take
        sequences and optionals."""
        if not self.has_input(index):
            raise self.error(f"input {index} is required but not given")
        return self._env[self.node.input[index]]

    def _tensor(self, index: int) -> ImportedValue:
        value = self._env[self.node.input[index]]
        if not isinstance(value, (np.ndarray, SSAValue, list, type(None))):
            from strato.frontends.onnx.merged_dims import Merged
            from strato.frontends.onnx.shape_values import ShapeValue, StaticShapesOnly

            if isinstance(value, (ShapeValue, Merged)):
                raise StaticShapesOnly(
                    f"{self.label} reads '{self.node.input[index]}', a shape of run-time "
                    "sizes or a tensor that merges them"
                )
        if value is None or isinstance(value, list):
            from strato.frontends.onnx.sequences import describe

            raise self.error(
                f"input '{self.node.input[index]}' is {describe(value)}; strato's "
                f"{self.op_type} takes tensors"
            )
        return value

    def operand(self, index: int) -> SSAValue:
        """Input `index` as an SSA value, materialising a constant when needed."""
        value = self.value(index)
        if not isinstance(value, np.ndarray):
            return value
        name = self.node.input[index]
        cached = self._materialized.get(name)
        if cached is None:
            cached = self.materialize(value, name_hint=name)
            self._materialized[name] = cached
        return cached

    def shape(self, index: int) -> tuple[int, ...]:
        return shape_of(self.value(index))

    # -- nested nodes (function bodies) --------------------------------------------

    def nested(self, node: onnx.NodeProto, opset_version: int) -> NodeContext:
        """The context of `node`, a node of this node's function body, converted into the
        same function with the body's opset. Its values live in the same environment
        under the (prefixed) names `node` gives them."""
        ctx = NodeContext(
            node, self.index, self._env, self._block, self._materialized, self._location
        )
        ctx.opset_version = opset_version
        ctx.run_time_dims = self.run_time_dims
        return ctx

    def in_block(self, block: Block) -> NodeContext:
        """This node's context emitting into `block` (a region of the op it converts
        to). Constants it materializes stay in that block: the enclosing block's cache
        is read, not written."""
        ctx = NodeContext(
            self.node, self.index, self._env, block, dict(self._materialized), self._location
        )
        ctx.opset_version = self.opset_version
        ctx.run_time_dims = self.run_time_dims
        return ctx

    def with_inputs(self, tensors: Mapping[int, SSAValue], suffix: str) -> onnx.NodeProto:
        """This node reading `tensors[n]` as input n instead, each bound under a name
        of its own (the input's, then `::suffix`), for its converter to take."""
        node = onnx.NodeProto()
        node.CopyFrom(self.node)
        for n, tensor in tensors.items():
            node.input[n] = f"{self.node.input[n]}::{suffix}"
            self.bind(node.input[n], tensor)
        return node

    def bind(self, name: str, value: object) -> None:
        """Name a value of this node's function body for the body nodes that read it."""
        self._env[name] = value

    def lookup(self, name: str) -> ImportedValue:
        """A value bound with `bind`."""
        return self._env[name]

    # -- attributes -------------------------------------------------------------

    def has_attr(self, name: str) -> bool:
        return name in self._attributes

    def attr(self, name: str, default: Any = None) -> Any:
        """The Python value of attribute `name` (int, float, str, list, or an array
        for tensor attributes), or `default` when the node does not set it."""
        attr = self._attributes.get(name)
        if attr is None:
            return default
        value = helper.get_attribute_value(attr)
        if isinstance(value, bytes):
            return value.decode("utf-8", errors="replace")
        if isinstance(value, onnx.TensorProto):
            return numpy_helper.to_array(value)
        return value

    def flag_attr(self, name: str, default: int = 0) -> bool:
        """A 0/1 attribute such as Gemm's transA; other values are rejected."""
        value = self.attr(name, default)
        if value not in (0, 1):
            raise self.error(
                f"attribute {name}={value} is not supported (expected 0 or 1)"
            )
        return bool(value)

    def float_attr(self, name: str, default: float) -> float:
        value = self.attr(name, default)
        if not isinstance(value, (int, float)):
            raise self.error(f"attribute {name} must be a float, got {value!r}")
        return float(value)

    # -- emission ---------------------------------------------------------------

    def emit(self, op: Operation) -> Operation:
        """Append `op` to the function being built. (The importer names the values a
        converter returns after the node's outputs.) An op that does not verify (say,
        operands of two element types the model mixes) is a diagnostic naming the node."""
        try:
            op.verify()
        except VerifyException as err:
            raise self.error(str(err).splitlines()[0]) from None
        self._block.add_op(op)
        return op

    def materialize(self, array: np.ndarray, name_hint: str | None = None) -> SSAValue:
        """Emit a `graph.constant` holding `array`, with its element type."""
        array = np.asarray(array)
        if not has_element_type(array.dtype):
            raise self.error(
                f"a constant of element type {onnx_type_name(array.dtype)} is not supported"
            )
        op = ConstantOp.from_array(np.require(array, requirements="C"))
        self._block.add_op(op)
        if name_hint:
            op.result.name_hint = ssa_name(name_hint)
        return op.result

    # -- shape rules shared by converters ----------------------------------------

    def broadcast(self, lhs: Sequence[int], rhs: Sequence[int]) -> tuple[int, ...]:
        """The numpy broadcast of two input shapes, or a diagnostic."""
        shape = broadcast_shapes(lhs, rhs)
        if shape is None:
            raise self.error(
                f"input shapes {list(lhs)} and {list(rhs)} do not broadcast"
            )
        return shape


def has_element_type(dtype: np.dtype) -> bool:
    """Whether arrays of `dtype` can become graph tensors (numeric types; not strings)."""
    try:
        element_type_of(dtype)
    except ValueError:
        return False
    return True


def as_float32(array: np.ndarray) -> np.ndarray:
    """An import-time result, kept float32 (numpy promotes scalars to float64)."""
    return np.require(array, dtype=FLOAT32, requirements="C")
