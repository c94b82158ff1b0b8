"""The model ONNX's checker and shape inference need: the weights' shapes, not their values.

`onnx.checker.check_model` and `onnx.shape_inference.infer_shapes` both serialize the
whole model, weights included, and parse it again in C++: for ResNet-18 (45 MB of
weights) that is a quarter of the import, for a ViT-B several seconds. Inference reads the
values of small constant inputs only (the shape of a Reshape, the axes of a Squeeze, the
pads of a Pad), and of a weight the checker checks only its type and that its data has
one field of the size its shape and type ask for. So `without_weight_data` gives both a
copy of the model in which every large weight whose data is already known to be right
(raw bytes of exactly that size, stored in the model) is a graph input of the same type
and shape instead; small weights and any other keep their data, and the checker sees
them as they are.

    onnx.checker.check_model(without_weight_data(model))
    inferred = shape_inference.infer_shapes(without_weight_data(model))
"""

from __future__ import annotations

from typing import Any

import onnx
from onnx import helper

from strato.frontends.onnx.raw_data import raw_data

MAX_INLINE_BYTES = 4096
"""Initializers up to this size keep their data (shape inference may read them)."""

_SUB_BYTE_TYPES = {
    getattr(onnx.TensorProto, name)
    for name in ("INT4", "UINT4", "FLOAT4E2M1", "INT2", "UINT2")
    if hasattr(onnx.TensorProto, name)
}


_TYPED_FIELDS = (
    "float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data"
)  # fmt: skip


def _stands_in(tensor: onnx.TensorProto) -> bool:
    """Whether `tensor` is large and its data is what the checker would accept: raw bytes
    in the model, no typed field beside them, exactly the size its shape and (byte-sized)
    element type ask for. Its bytes are read through `raw_data.raw_data`: within a
    compilation the cache key has read them already, and the importer reads them next."""
    raw = len(raw_data(tensor))
    if raw <= MAX_INLINE_BYTES or tensor.data_location == onnx.TensorProto.EXTERNAL:
        return False
    if any(len(getattr(tensor, field)) for field in _TYPED_FIELDS):
        return False
    try:
        itemsize = helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    except (KeyError, ValueError, TypeError):
        return False
    if tensor.data_type in _SUB_BYTE_TYPES or tensor.data_type == onnx.TensorProto.STRING:
        return False
    count = 1
    for dim in tensor.dims:
        count *= dim
    return raw == count * itemsize


def _has_subgraphs(graph: onnx.GraphProto) -> bool:
    return any(
        attribute.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
        for node in graph.node
        for attribute in node.attribute
    )


def _copy_field(target: Any, field: Any, value: Any) -> None:
    """Set `field` of the message `target` to `value` (copied), whatever its kind."""
    if field.is_repeated:
        getattr(target, field.name).extend(value)
    elif field.type == field.TYPE_MESSAGE:
        getattr(target, field.name).CopyFrom(value)
    else:
        setattr(target, field.name, value)


def without_weight_data(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model`, or a copy whose large initializers are inputs of their type and shape
    (see the module docstring). A model with subgraphs is returned as it is: their nodes
    may name an outer initializer."""
    graph = model.graph
    if model.ir_version < 4:  # initializers must be graph inputs there: the checker sees
        return model  # that only on the model itself
    large = [t for t in graph.initializer if _stands_in(t)]
    if not large or _has_subgraphs(graph) or graph.sparse_initializer:
        return model
    # every field but the initializers, copied without touching the model: taking the
    # initializers out and putting them back would copy all the weights again
    light = onnx.ModelProto()
    for field, value in model.ListFields():
        if field.name != "graph":
            _copy_field(light, field, value)
    for field, value in graph.ListFields():
        if field.name != "initializer":
            _copy_field(light.graph, field, value)
    inputs = {value.name for value in light.graph.input}
    large_names = {t.name for t in large}
    light.graph.initializer.extend(t for t in graph.initializer if t.name not in large_names)
    light.graph.input.extend(
        helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
        for t in large
        if t.name not in inputs
    )
    return light


__all__ = ["MAX_INLINE_BYTES", "without_weight_data"]
