"""The model ONNX shape inference needs: the weights' shapes, not their values.

`onnx.shape_inference.infer_shapes` serializes the whole model, weights included, and
parses it again in C++: for ResNet-18 (45 MB of weights) that is half of its time, for a
ViT-B several seconds. Inference reads the values of small constant inputs only (the
shape of a Reshape, the axes of a Squeeze, the pads of a Pad), so `without_weight_data`
gives it a copy of the model in which every large initializer is a graph input of the
same type and shape instead; small ones keep their data.

    inferred = shape_inference.infer_shapes(without_weight_data(model))
"""

from __future__ import annotations

import onnx
from onnx import helper

MAX_INLINE_BYTES = 4096
"""Initializers up to this size keep their data (shape inference may read them)."""


def _byte_size(tensor: onnx.TensorProto) -> int:
    if tensor.HasField("raw_data"):
        return len(tensor.raw_data)
    count = 1
    for dim in tensor.dims:
        count *= dim
    return count * 8  # typed fields hold at most 8 bytes an element


def _has_subgraphs(graph: onnx.GraphProto) -> bool:
    return any(
        attribute.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
        for node in graph.node
        for attribute in node.attribute
    )


def without_weight_data(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model`, or a copy whose large initializers are inputs of their type and shape
    (see the module docstring). A model with subgraphs is returned as it is: their nodes
    may name an outer initializer."""
    graph = model.graph
    large = [t for t in graph.initializer if _byte_size(t) > MAX_INLINE_BYTES]
    if not large or _has_subgraphs(graph) or graph.sparse_initializer:
        return model
    light = onnx.ModelProto()
    saved = list(graph.initializer)
    # copy everything but the initializers, which are put back right after
    del graph.initializer[:]
    try:
        light.CopyFrom(model)
    finally:
        graph.initializer.extend(saved)
    inputs = {value.name for value in light.graph.input}
    large_names = {t.name for t in large}
    light.graph.initializer.extend(t for t in saved if t.name not in large_names)
    light.graph.input.extend(
        helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
        for t in large
        if t.name not in inputs
    )
    return light


__all__ = ["MAX_INLINE_BYTES", "without_weight_data"]
