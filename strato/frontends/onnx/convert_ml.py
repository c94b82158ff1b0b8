"""Operators of ONNX's classical machine-learning domain (`ai.onnx.ml`): Binarizer,
ArrayFeatureExtractor and LabelEncoder, imported as default-domain nodes.

- Binarizer: y = 1 where x > threshold, else 0, in x's type (NaN gives 0).
- ArrayFeatureExtractor(x, indices): x's last axis gathered at the indices; a vector
  gives a [1, n] matrix, as onnxruntime (and ONNX's reference) do.
- LabelEncoder: each element of x mapped through keys -> values (the last value of a
  repeated key), elements without a key to the default (-1, -0.0 or "_Unused" by the
  values' type, or `default_tensor`): the elements compared with every key, the first
  match's value gathered. String keys and values are compared and given as ids of the
  string encoding (`strings`), which rewrites them before import.
"""

from __future__ import annotations

import numpy as np

from strato.frontends.onnx.conversion import ImportedValue, NodeContext
from strato.frontends.onnx.expansion import Expansion

ML_DOMAIN = "ai.onnx.ml"


def convert_binarizer(ctx: NodeContext) -> list[ImportedValue]:
    body = Expansion(ctx)
    x = ctx.input_name(0)
    dtype = body.dtype_of(x)
    threshold = body.constant(np.asarray(ctx.float_attr("threshold", 0.0), dtype))
    above = body.node("Greater", [x, threshold])
    one, zero = body.constant(np.asarray(1, dtype)), body.constant(np.asarray(0, dtype))
    return [body.result(body.node("Where", [above, one, zero]))]


def convert_array_feature_extractor(ctx: NodeContext) -> list[ImportedValue]:
    body = Expansion(ctx)
    shape = ctx.shape(0)
    indices = body.node("Reshape", [ctx.input_name(1), body.constant(np.array([-1]))])
    known = ctx.known(1)
    if known is not None and shape and np.any((known < -shape[-1]) | (known >= shape[-1])):
        raise ctx.error(
            f"indices {known.reshape(-1).tolist()} are out of range for the last axis "
            f"of size {shape[-1]}"
        )
    picked = body.node("Gather", [ctx.input_name(0), indices], axis=-1)
    if len(shape) == 1:
        picked = body.node("Unsqueeze", [picked, body.constant(np.array([0]))])
    return [body.result(picked)]


_DEFAULTS = {"floats": -0.0, "int64s": -1, "strings": "_Unused"}


def _label_table(ctx: NodeContext) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys, values, default) of a LabelEncoder, a repeated key keeping its last value."""
    keys = next(
        (np.asarray(ctx.attr(f"keys_{kind}")) for kind in _DEFAULTS if ctx.has_attr(f"keys_{kind}")),
        ctx.attr("keys_tensor"),
    )
    values, default = None, None
    for kind, fallback in _DEFAULTS.items():
        if ctx.has_attr(f"values_{kind}"):
            dtype = {"floats": np.float32, "int64s": np.int64, "strings": np.int64}[kind]
            values = np.asarray(ctx.attr(f"values_{kind}"), dtype)
            default = np.asarray(ctx.attr(f"default_{kind[:-1]}", fallback), dtype)
    if values is None and ctx.has_attr("values_tensor"):
        values = np.asarray(ctx.attr("values_tensor"))
        default = ctx.attr("default_tensor")
        default = np.asarray(default).reshape(-1)[0] if default is not None else None
        if default is None:
            raise ctx.error("values_tensor needs a default_tensor")
        default = np.asarray(default, values.dtype)
    if keys is None or values is None:
        raise ctx.error("LabelEncoder needs keys (keys_*) and values (values_*)")
    keys, values = np.asarray(keys).reshape(-1), values.reshape(-1)
    if len(keys) != len(values):
        raise ctx.error(f"{len(keys)} keys but {len(values)} values")
    last = {key.item() if hasattr(key, "item") else key: i for i, key in enumerate(keys)}
    order = sorted(last.values())
    return keys[order], values[order], default


def convert_label_encoder(ctx: NodeContext) -> list[ImportedValue]:
    strings = any(ctx.has_attr(f"{side}_strings") for side in ("keys", "values")) or any(
        ctx.has_attr(name) and np.asarray(ctx.attr(name)).dtype.kind in "OUS"
        for name in ("keys_tensor", "values_tensor")
    )
    if strings:
        raise ctx.error(
            "string keys or values are compiled as ids of the model's strings, which only "
            "the ONNX backend's string encoding gives"
        )
    keys, values, default = _label_table(ctx)
    body = Expansion(ctx)
    x = ctx.input_name(0)
    dtype = body.dtype_of(x)
    flat = body.node("Unsqueeze", [x, body.constant(np.array([-1]))])
    matches = body.node("Equal", [flat, body.constant(keys.astype(dtype))])  # [..., K]
    found = body.node("ReduceMax", [body.cast(matches, np.int32), body.constant(np.array([-1]))], keepdims=0)
    first = body.node("ArgMax", [body.cast(matches, np.int32)], axis=-1, keepdims=0)
    mapped = body.node("Gather", [body.constant(values), first], axis=0)
    hit = body.cast(found, np.bool_)
    return [body.result(body.node("Where", [hit, mapped, body.constant(default)]))]


ML_CONVERTERS = {
    "ArrayFeatureExtractor": convert_array_feature_extractor,
    "Binarizer": convert_binarizer,
    "LabelEncoder": convert_label_encoder,
}
"""The `ai.onnx.ml` operators strato imports."""


__all__ = ["ML_CONVERTERS", "ML_DOMAIN"]
