"""String tensors at a model's boundary: dictionary-encoded to int64 ids.

strato compiles numeric tensors. A model whose strings are only compared for equality
or moved about (Identity, Reshape, Transpose, Gather, Concat, ...) computes the same on
ids as on the strings, provided equal strings get equal ids. `StringEncoding.of(model)`
checks that every use of a string value is such an operator and rewrites the model on
int64 ids: string graph inputs, outputs and intermediate values become int64, string
initializers and Constants become the ids of their strings in a dictionary fixed at
compile time. Each call then extends a copy of that dictionary with the strings of its
inputs (`encode`) and maps string outputs back (`decode`):

    Equal(x: string[2], y: string[1])  ->  Equal(x: int64[2], y: int64[1])
    run(["a", "b"], ["a"])             ->  compiled([0, 1], [0])  ->  [True, False]

Any other use (a Cast, a comparison by order, a string operator) is a one-line
diagnostic naming the node: ids have no order and no characters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from strato.diagnostics import ModelImportError
from strato.frontends.onnx.conversion import node_label
from strato.runtime.signature import InputMismatchError

STRING = onnx.TensorProto.STRING
INT64 = onnx.TensorProto.INT64

ID_SAFE_USES: dict[str, tuple[int, ...] | None] = {
    "Equal": (0, 1),
    "Identity": (0,),
    "Reshape": (0,),
    "Transpose": (0,),
    "Squeeze": (0,),
    "Unsqueeze": (0,),
    "Flatten": (0,),
    "Expand": (0,),
    "Tile": (0,),
    "Slice": (0,),
    "Gather": (0,),
    "Concat": None,
    "Split": (0,),
    "Where": (1, 2),
    "Shape": (0,),
    "Size": (0,),
    "TfIdfVectorizer": (0,),
    "LabelEncoder": (0,),
}
"""The operators that compute the same on ids as on strings, with the input positions
that may hold strings (None: every input). All but Equal, Shape, Size and
TfIdfVectorizer move data, so their outputs hold strings too; Equal's is bool, Shape's
and Size's int64, TfIdfVectorizer's float (its `pool_strings` become `pool_int64s`)."""

_COMPARES = frozenset({"Equal", "Shape", "Size", "TfIdfVectorizer"})
"""The operators of `ID_SAFE_USES` whose outputs hold no strings."""


@dataclass
class StringEncoding:
    """A model's string values encoded as int64 ids (see the module docstring)."""

    model: onnx.ModelProto
    """The model on ids."""
    inputs: frozenset[str]
    """The graph inputs that are string tensors."""
    outputs: frozenset[str]
    """The graph outputs that are string tensors."""
    constants: dict[str, int] = field(default_factory=dict)
    """The ids of the strings of the model's initializers and Constants."""

    @staticmethod
    def of(model: onnx.ModelProto, location: str | None = None) -> StringEncoding | None:
        """`model` on ids, None when it has no string values; a `ModelImportError` when
        a string value has a use that ids do not preserve."""
        strings = _string_values(model)
        if not strings:
            return None
        _check_uses(model, strings, location)
        encoding = StringEncoding(
            onnx.ModelProto(),
            frozenset(v.name for v in model.graph.input if v.name in strings),
            frozenset(v.name for v in model.graph.output if v.name in strings),
        )
        encoding.model.CopyFrom(model)
        encoding._rewrite(encoding.model.graph)
        return encoding

    def encode(self, inputs: Mapping[str, Any]) -> tuple[dict[str, Any], list[Any]]:
        """The inputs with each string tensor replaced by its ids, and the strings by
        id for `decode`: one dictionary for the call, so equal strings get equal ids."""
        ids = dict(self.constants)
        encoded = dict(inputs)
        for name in self.inputs:
            value = inputs[name]
            if not isinstance(value, np.ndarray) or value.dtype.kind not in "OUS":
                shown = value.dtype if isinstance(value, np.ndarray) else type(value).__name__
                raise InputMismatchError(f"input '{name}': expected a string array, got {shown}")
            flat = [ids.setdefault(_text(item), len(ids)) for item in value.reshape(-1)]
            encoded[name] = np.array(flat, dtype=np.int64).reshape(value.shape)
        return encoded, list(ids)

    def decode(self, name: str, value: np.ndarray, strings: Sequence[Any]) -> np.ndarray:
        """Output `name` with its ids mapped back to strings (other outputs as given)."""
        if name not in self.outputs:
            return value
        table = np.empty(len(strings), dtype=object)
        table[:] = strings
        return table[value.reshape(-1)].reshape(value.shape)

    def _id(self, text: str) -> int:
        return self.constants.setdefault(text, len(self.constants))

    def _ids(self, array: np.ndarray) -> np.ndarray:
        flat = [self._id(_text(item)) for item in array.reshape(-1)]
        return np.array(flat, dtype=np.int64).reshape(array.shape)

    def _rewrite(self, graph: onnx.GraphProto) -> None:
        for value in (*graph.input, *graph.output, *graph.value_info):
            if value.type.tensor_type.elem_type == STRING:
                value.type.tensor_type.elem_type = INT64
        for index, init in enumerate(graph.initializer):
            if init.data_type == STRING:
                ids = self._ids(numpy_helper.to_array(init))
                graph.initializer[index].CopyFrom(numpy_helper.from_array(ids, init.name))
        for node in graph.node:
            if node.op_type == "TfIdfVectorizer":
                self._rewrite_pool(node)
            elif node.op_type == "LabelEncoder":
                self._rewrite_labels(node)
            if node.op_type != "Constant":
                continue
            for attr in node.attribute:
                if attr.name == "value" and attr.t.data_type == STRING:
                    ids = self._ids(numpy_helper.to_array(attr.t))
                    attr.t.CopyFrom(numpy_helper.from_array(ids, attr.t.name))
                elif attr.name == "value_strings":
                    ids = self._ids(np.array([s.decode() for s in attr.strings], dtype=object))
                    node.attribute.remove(attr)
                    node.attribute.append(helper.make_attribute("value_ints", ids.tolist()))
                    break

    def _rewrite_pool(self, node: onnx.NodeProto) -> None:
        """TfIdfVectorizer's string pool as the ids of its strings."""
        for attr in node.attribute:
            if attr.name == "pool_strings":
                ids = [self._id(_text(s)) for s in attr.strings]
                node.attribute.remove(attr)
                node.attribute.append(helper.make_attribute("pool_int64s", ids))
                return

    def _rewrite_labels(self, node: onnx.NodeProto) -> None:
        """LabelEncoder's string keys, values and default as ids of their strings."""
        gives_strings = _labels_are_strings(node)
        for attr in list(node.attribute):
            if attr.name in ("keys_strings", "values_strings"):
                ids = [self._id(_text(s)) for s in attr.strings]
                node.attribute.remove(attr)
                side = attr.name.split("_")[0]
                node.attribute.append(helper.make_attribute(f"{side}_int64s", ids))
            elif attr.name in ("keys_tensor", "values_tensor", "default_tensor") and (
                attr.t.data_type == STRING
            ):
                ids = self._ids(numpy_helper.to_array(attr.t))
                attr.t.CopyFrom(numpy_helper.from_array(ids, attr.t.name))
        if gives_strings:
            default = next((a for a in node.attribute if a.name == "default_string"), None)
            text = default.s.decode("utf-8") if default is not None else "_Unused"
            if default is not None:
                node.attribute.remove(default)
            if not any(a.name == "default_tensor" for a in node.attribute):
                node.attribute.append(helper.make_attribute("default_int64", self._id(text)))


def _labels_are_strings(node: onnx.NodeProto) -> bool:
    """Whether a LabelEncoder's values (so its output) are strings."""
    return any(
        attr.name == "values_strings"
        or (attr.name == "values_tensor" and attr.t.data_type == STRING)
        for attr in node.attribute
    )


def _text(item: Any) -> str:
    return item.decode("utf-8") if isinstance(item, bytes) else str(item)


def _string_values(model: onnx.ModelProto) -> set[str]:
    """The names of the graph's string tensors: string graph inputs, initializers and
    Constants, and what the operators of `ID_SAFE_USES` move them into."""
    graph = model.graph
    strings = {v.name for v in graph.input if v.type.tensor_type.elem_type == STRING}
    strings |= {init.name for init in graph.initializer if init.data_type == STRING}
    for node in graph.node:
        if node.op_type == "Constant" and any(
            (a.name == "value" and a.t.data_type == STRING) or a.name == "value_strings"
            for a in node.attribute
        ):
            strings.update(node.output)
        elif node.op_type == "LabelEncoder":
            if _labels_are_strings(node):
                strings.update(name for name in node.output if name)
        elif node.op_type not in _COMPARES and any(
            name in strings for name in _string_positions(node)
        ):
            strings.update(name for name in node.output if name)
    return strings


def _string_positions(node: onnx.NodeProto) -> list[str]:
    positions = ID_SAFE_USES.get(node.op_type, ())
    if positions is None:
        return list(node.input)
    return [node.input[p] for p in positions if p < len(node.input)]


def _check_uses(model: onnx.ModelProto, strings: set[str], location: str | None) -> None:
    for index, node in enumerate(model.graph.node):
        allowed = set(_string_positions(node)) if node.op_type in ID_SAFE_USES else set()
        for name in node.input:
            if name in strings and name not in allowed:
                raise ModelImportError(
                    f"{node_label(node, index)}: input '{name}' is a string tensor; strato "
                    "compiles strings as dictionary ids, which only equality and data "
                    f"movement preserve ({', '.join(sorted(ID_SAFE_USES))})",
                    location=location,
                )
    for value in model.graph.output:
        elem = value.type.tensor_type.elem_type
        if value.name in strings and elem not in (STRING, onnx.TensorProto.UNDEFINED):
            name = onnx.TensorProto.DataType.Name(elem)
            raise ModelImportError(
                f"graph output '{value.name}' holds strings but is declared {name}",
                location=location,
            )


__all__ = ["ID_SAFE_USES", "StringEncoding"]
