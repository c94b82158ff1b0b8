"""Operators imported through the function body ONNX defines for them.

Many ONNX operators are specified as a function: a small graph of other operators that
computes exactly the operator (LogSoftmax is ReduceMax, Sub, Exp, ReduceSum, Log, Sub;
Attention is MatMul, Softmax and masking). For those whose body uses only operators strato imports, the node is replaced
by its body, each body node converted by its own converter, so the result is what the
`_expanded` node tests compute:

    LogSoftmax(x, axis=1)  ->  graph.reduce_max, graph.sub, graph.exp,
                               graph.reduce_sum, graph.log, graph.sub

The body is the one of the model's opset (the newest function version not newer than
it). Some operators have a context-dependent body, built by onnx from the node and its
input types (Attention's from whether a mask is given and its element type). A body's
attribute references (`@axis`) take the node's attribute or, when it is not set, the
schema's default. Body values get names prefixed by the node's first output, so they
never meet the graph's own names.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from strato.diagnostics import ModelImportError
from strato.dialects.tensor_types import numpy_dtype
from strato.frontends.onnx.conversion import (
    Converter,
    ImportedValue,
    NodeContext,
    shape_of,
)

FUNCTION_OPS = (
    "AffineGrid",
    "Attention",
    "CausalConvWithState",
    "CenterCropPad",
    "LinearAttention",
    "LogSoftmax",
    "MeanVarianceNormalization",
    "NegativeLogLikelihoodLoss",
    "RMSNormalization",
    "ReduceLogSum",
    "RotaryEmbedding",
    "SequenceMap",
    "Shrink",
    "SoftmaxCrossEntropyLoss",
    "SwiGLU",
    "Swish",
)
"""The operators imported through their function body."""

IMPORT_TIME_INPUTS: dict[str, tuple[int, ...]] = {
    "AffineGrid": (1,),
    "CenterCropPad": (1,),
    "ReduceLogSum": (1,),
}
"""The inputs of each operator that must be known at import time (by position): those
its body reads as a shape or a range bound."""


WIDENED_OPS = ("Shrink",)
"""Operators whose function body is not the operator for integer inputs: Shrink's
casts lambd and bias to the input's type (so -lambd wraps around in an unsigned type,
and a bias of 1.5 adds 1), where ONNX's reference and onnxruntime compare and add in
float and truncate the result. For integer inputs, these run their body in float64
between two Casts."""


def by_function_body(op_type: str) -> Converter:
    """The converter of `op_type` that imports a node as its function body."""

    def convert(ctx: NodeContext) -> list[ImportedValue]:
        if op_type == "Attention" and ctx.has_input(3) and _input_dtype(ctx, 3).kind in "iu":
            raise ctx.error(
                f"attn_mask has element type {_input_dtype(ctx, 3)}: Attention's masks are "
                "boolean or of the query's float type (ONNX's reference and its function "
                "body read an integer mask differently)"
            )
        if op_type == "Attention" and _input_dtype(ctx, 2) != _input_dtype(ctx, 0):
            raise ctx.error(
                f"V has element type {_input_dtype(ctx, 2)} and Q {_input_dtype(ctx, 0)}: "
                "strato takes Attention's V (and past_value) of Q's type (its function "
                "body multiplies the attention weights, of Q's type, by V in one MatMul, "
                "which needs one type, and ONNX's reference returns Y in neither type)"
            )
        if op_type in WIDENED_OPS and _input_dtype(ctx, 0).kind in "iu":
            return _expand_in_float64(ctx)
        return expand_function(ctx)

    convert.__name__ = f"convert_{op_type}_by_function"
    convert.__doc__ = f"ONNX {op_type} -> the graph ops of its ONNX function body."
    return convert


def _input_dtype(ctx: NodeContext, index: int) -> np.dtype:
    value = ctx.value(index)
    return value.dtype if isinstance(value, np.ndarray) else numpy_dtype(value.type.element_type)


def _expand_in_float64(ctx: NodeContext) -> list[ImportedValue | None]:
    """The node's single-input, single-output body run on its input cast to float64,
    the result cast back to the input's type (truncated)."""
    from strato.frontends.onnx.op_table import ONNX_CONVERTERS

    elem_type = helper.np_dtype_to_tensor_dtype(_input_dtype(ctx, 0))
    prefix = f"{ctx.node.output[0]}::{ctx.op_type}::"
    wide = onnx.NodeProto()
    wide.CopyFrom(ctx.node)
    wide.input[0], wide.output[0] = prefix + "wide_input", prefix + "wide_output"
    nodes = [
        helper.make_node(
            "Cast", [ctx.node.input[0]], [wide.input[0]], to=onnx.TensorProto.DOUBLE
        ),
        wide,
        helper.make_node("Cast", [wide.output[0]], [prefix + "output"], to=elem_type),
    ]
    for node in nodes:
        nested = ctx.nested(node, ctx.opset())
        if node is wide:
            (result,) = expand_function(nested)
        else:
            (result,) = ONNX_CONVERTERS["Cast"](nested)
        ctx.bind(node.output[0], result)
    return [ctx.lookup(prefix + "output")]


def expand_function(ctx: NodeContext) -> list[ImportedValue | None]:
    """Convert the node `ctx` describes as its function body; the node's results (None
    for an optional output the node does not ask for, which the body may not compute)."""
    schema = onnx.defs.get_schema(ctx.op_type, ctx.opset(), "")
    function = _function_body(ctx, schema)
    prefix = f"{ctx.node.output[0]}::{ctx.op_type}::"
    renamed = _renamer(ctx, function, prefix)
    for formal, index in zip(function.input, range(len(ctx.node.input))):
        if ctx.has_input(index):
            ctx.bind(prefix + formal, ctx.static_value(index))
    body_opset = _default_opset(function, ctx.opset())
    _convert_body(ctx, schema, function.node, renamed, body_opset)
    return [
        ctx.lookup(prefix + formal) if wanted else None
        for formal, wanted in zip(function.output, ctx.node.output)
    ]


def _convert_body(ctx, schema, nodes, rename, opset: int) -> None:
    """Convert body `nodes` in order, each by its converter (control flow by
    `convert_control`'s: AffineGrid's Ifs on its attribute and its rank take their
    branch, LinearAttention's Scan runs once per step)."""
    from strato.frontends.onnx.op_table import ONNX_CONVERTERS

    for body_node in nodes:
        node = _instantiate(ctx, schema, body_node, rename)
        converter = ONNX_CONVERTERS.get(node.op_type)
        if converter is None:
            raise ctx.error(
                f"its function body uses {node.op_type}, which strato does not import"
            )
        try:
            results = converter(ctx.nested(node, opset))
        except ModelImportError as err:
            raise ctx.error(f"in its function body, {err.message}") from None
        for name, value in zip(node.output, results):
            if name:
                ctx.bind(name, value)


def _function_body(ctx: NodeContext, schema: onnx.defs.OpSchema) -> onnx.FunctionProto:
    """The function body of the node's operator at the model's opset."""
    opset = ctx.opset()
    plain = [v for v in schema.function_opset_versions if v <= opset]
    dependent = [
        v for v in schema.context_dependent_function_opset_versions if v <= opset
    ]
    function = onnx.FunctionProto()
    if not plain and not dependent and schema.function_opset_versions:
        # The body ONNX added later to this same operator version (Shrink-9's of opset
        # 18): it computes the operator the model uses, its nodes in the body's opset.
        plain = [min(schema.function_opset_versions)]
    if plain and (not dependent or max(plain) >= max(dependent)):
        function.ParseFromString(schema.get_function_with_opset_version(max(plain)))
        return function
    if not dependent:
        raise ctx.error(
            f"ONNX defines no function body of {ctx.op_type} at opset {opset}"
        )
    input_types = [_input_type(ctx, index) for index in range(len(ctx.node.input))]
    try:
        encoded = schema.get_context_dependent_function_with_opset_version(
            max(dependent),
            ctx.node.SerializeToString(),
            [t.SerializeToString() for t in input_types],
        )
    except Exception as err:  # noqa: BLE001 - onnx rejects the node's form
        raise ctx.error(f"onnx builds no function body for this node: {err}") from None
    function.ParseFromString(encoded)
    if not function.node:
        raise ctx.error(f"onnx builds no function body of {ctx.op_type} for this node")
    return function


def _input_type(ctx: NodeContext, index: int) -> onnx.TypeProto:
    """The ONNX type of input `index` (an empty type for an absent optional input), what
    a context-dependent function body is built from."""
    if not ctx.has_input(index):
        return onnx.TypeProto()
    return _type_of(ctx, ctx.static_value(index))


def _type_of(ctx: NodeContext, value: object) -> onnx.TypeProto:
    """The ONNX type of a tensor value or of a static sequence (its elements' type and,
    when they all share it, their shape)."""
    if isinstance(value, list):
        if not value:
            raise ctx.error("an empty sequence gives no element type to build the body from")
        types = [_type_of(ctx, item) for item in value]
        element = types[0]
        if any(t != element for t in types[1:]):
            element = helper.make_tensor_type_proto(element.tensor_type.elem_type, None)
        return helper.make_sequence_type_proto(element)
    if value is None:
        return onnx.TypeProto()
    dtype = value.dtype if isinstance(value, np.ndarray) else numpy_dtype(value.type)
    elem_type = helper.np_dtype_to_tensor_dtype(dtype)
    return helper.make_tensor_type_proto(elem_type, list(shape_of(value)))


def _default_opset(function: onnx.FunctionProto, fallback: int) -> int:
    for opset in function.opset_import:
        if opset.domain in ("", "ai.onnx"):
            return opset.version
    return fallback


def _renamer(ctx: NodeContext, function: onnx.FunctionProto, prefix: str):
    """Body value names -> the names they get in the importer: prefixed; a formal input
    the node does not give becomes "" (absent)."""
    absent = {
        formal
        for index, formal in enumerate(function.input)
        if not ctx.has_input(index)
    }

    def rename(name: str) -> str:
        if not name or name in absent:
            return ""
        return prefix + name

    return rename


def _instantiate(ctx, schema, body_node: onnx.NodeProto, rename) -> onnx.NodeProto:
    """A body node with its values renamed and its attribute references resolved."""
    node = onnx.NodeProto()
    node.CopyFrom(body_node)
    del node.input[:]
    node.input.extend(rename(name) for name in body_node.input)
    del node.output[:]
    node.output.extend(rename(name) for name in body_node.output)
    del node.attribute[:]
    caller = {attr.name: attr for attr in ctx.node.attribute}
    for attr in body_node.attribute:
        if attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) and not attr.ref_attr_name:
            # a Loop's or Scan's body reads the function body's values by their names
            from strato.frontends.onnx.convert_control import with_outer_names

            nested = onnx.AttributeProto()
            nested.CopyFrom(attr)
            if attr.type == onnx.AttributeProto.GRAPH:
                nested.g.CopyFrom(with_outer_names(attr.g, rename))
            else:
                del nested.graphs[:]
                nested.graphs.extend(with_outer_names(g, rename) for g in attr.graphs)
            node.attribute.append(nested)
            continue
        if not attr.ref_attr_name:
            node.attribute.append(attr)
            continue
        source = caller.get(attr.ref_attr_name)
        if source is None:
            declared = schema.attributes.get(attr.ref_attr_name)
            if declared is None or not declared.default_value.name:
                continue  # not set and no default: the body node's own default applies
            source = declared.default_value
        resolved = onnx.AttributeProto()
        resolved.CopyFrom(source)
        resolved.name = attr.name
        node.attribute.append(resolved)
    return node
