"""Sequence and optional values whose structure is known at compile time.

strato compiles tensors of static shapes. An ONNX graph input of sequence type is
compiled once its length and element shapes are known (the ONNX backend knows them on
the first run): it is then a static sequence, a list of tensor values at import time,
like a tuple, and one function argument per element. An optional input is its value
when present and nothing when absent (None). `input_shapes` gives that structure:

    input_shapes={"x": [(1, 1, 2, 2), (1, 1, 2, 2)]}   # x: seq(tensor(float)), 2 elements
    input_shapes={"o": [(5,)]}                          # o: optional(seq(tensor(float)))
    input_shapes={"o": None}                            # o absent

The function's arguments and results are the tensors of these structures in order, named
after their place: `x[0]`, `x[1]`; a present optional keeps its name. Converters of
operators that take sequences or optionals read them with `NodeContext.static_value`
(a list, None, or a tensor value); every other converter sees a one-line diagnostic.
Only sequences of tensors are compiled (not sequences of sequences or of maps).

At run time `flat_arrays` turns a sequence (a list of arrays) or an optional (None or
its value) into the compiled model's arguments, and `regroup_outputs` turns its results
back into lists and Nones, by the names above. An output that is an optional holding an
empty sequence has no tensors to tell it from an absent one, so it is refused at import.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeAlias

import numpy as np
import onnx
from onnx import helper
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from strato.dialects.tensor_types import element_type_of
from strato.diagnostics import StratoError
from strato.runtime.signature import InputMismatchError

StaticValue: TypeAlias = "SSAValue | np.ndarray | list[StaticValue] | None"
"""A value at import time: a tensor (SSA value or array), a static sequence, or None
(an absent optional)."""

ShapeSpec: TypeAlias = "tuple[int, ...] | list[ShapeSpec] | None"
"""The structure of a value: a tensor's shape, a sequence's list of element structures,
None for an absent optional."""

ErrorFactory = Callable[[str], Exception]


def is_structured(type_proto: onnx.TypeProto) -> bool:
    """Whether values of `type_proto` are sequences or optionals (not plain tensors)."""
    return type_proto.WhichOneof("value") in ("sequence_type", "optional_type")


def describe(value: Any) -> str:
    """What a non-tensor import-time value is, for diagnostics."""
    if value is None:
        return "an absent optional"
    return f"a sequence of {len(value)} value(s)"


# -- import: arguments and results -------------------------------------------------


def argument_types(
    name: str, type_proto: onnx.TypeProto, spec: ShapeSpec, error: ErrorFactory
) -> list[tuple[str, TensorType]]:
    """The function arguments (name, type) of graph input `name` of structure `spec`."""
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        return [(name, _tensor_type(name, type_proto.tensor_type, spec, error))]
    if kind == "optional_type":
        if spec is None:
            return []
        return argument_types(name, type_proto.optional_type.elem_type, spec, error)
    if kind == "sequence_type":
        element = type_proto.sequence_type.elem_type
        if element.WhichOneof("value") != "tensor_type":
            raise error(
                f"graph input '{name}' is a sequence of {_kind_name(element)}; strato "
                "compiles sequences of tensors"
            )
        if spec == ():
            spec = []  # an empty sequence reads like a scalar's shape
        if not isinstance(spec, list):
            raise error(
                f"graph input '{name}' is a sequence: its structure is the list of its "
                f"element shapes, got {spec!r}"
            )
        return [
            pair
            for index, element_spec in enumerate(spec)
            for pair in argument_types(f"{name}[{index}]", element, element_spec, error)
        ]
    raise error(f"graph input '{name}' is {_kind_name(type_proto)}; strato compiles tensors")


def _tensor_type(
    name: str, tensor: onnx.TypeProto.Tensor, shape: ShapeSpec, error: ErrorFactory
) -> TensorType:
    what = f"graph input '{name}'"
    if not isinstance(shape, tuple):
        raise error(f"{what} is a tensor: its structure is a shape, got {shape!r}")
    try:
        element = element_type_of(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
    except (KeyError, ValueError, TypeError):
        type_name = onnx.TensorProto.DataType.Name(tensor.elem_type)
        raise error(f"{what} has element type {type_name}; strato imports numeric tensors only")
    if tensor.HasField("shape"):
        declared = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
        if len(declared) != len(shape) or any(
            d is not None and d != n for d, n in zip(declared, shape)
        ):
            shown = [d if d is not None else "?" for d in declared]
            raise error(f"{what} has shape {list(shape)}, the model declares {shown}")
    return TensorType(element, shape)


def assemble(type_proto: onnx.TypeProto, spec: ShapeSpec, args: Iterator[SSAValue]) -> StaticValue:
    """The import-time value of a graph input of structure `spec`, taking its
    tensors from `args` in the order of `argument_types`."""
    kind = type_proto.WhichOneof("value")
    if kind == "optional_type":
        return None if spec is None else assemble(type_proto.optional_type.elem_type, spec, args)
    if kind == "sequence_type":
        element = type_proto.sequence_type.elem_type
        return [assemble(element, element_spec, args) for element_spec in list(spec)]
    return next(args)


def result_values(
    name: str, type_proto: onnx.TypeProto, value: StaticValue, error: ErrorFactory
) -> list[tuple[str, SSAValue | np.ndarray]]:
    """The function results (name, tensor value) of graph output `name`, declared
    `type_proto`, computed as `value`."""
    what = f"graph output '{name}'"
    kind = type_proto.WhichOneof("value")
    if kind == "optional_type":
        if value is None:
            return []
        inner = type_proto.optional_type.elem_type
        if isinstance(value, list) and not value:
            raise error(
                f"{what} is an optional holding an empty sequence, which strato cannot "
                "tell from an absent one in its results"
            )
        return result_values(name, inner, value, error)
    if value is None:
        raise error(f"{what} is absent but not declared optional")
    if kind == "sequence_type":
        if not isinstance(value, list):
            raise error(f"{what} is declared a sequence but is computed as a tensor")
        element = type_proto.sequence_type.elem_type
        return [
            pair
            for index, item in enumerate(value)
            for pair in result_values(f"{name}[{index}]", element, item, error)
        ]
    if isinstance(value, list):
        raise error(f"{what} is computed as a sequence but is not declared one")
    return [(name, value)]


def check_distinct(names: Sequence[str], what: str, error: ErrorFactory) -> None:
    """Raises when two arguments or results (`what`) of a model with sequences share a
    name: a value named like a sequence element (`x[0]` beside a sequence `x`)."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise error(f"{what} '{name}' is named like an element of a sequence")
        seen.add(name)


# -- run time: arguments from values, results to values ----------------------------


def run_structure(name: str, type_proto: onnx.TypeProto, value: Any) -> ShapeSpec:
    """The structure of run-time value `value` of graph input `name`, checked against
    its declared type (a list of arrays for a sequence, None or the value for an
    optional)."""
    kind = type_proto.WhichOneof("value")
    if kind == "optional_type":
        if value is None:
            return None
        return run_structure(name, type_proto.optional_type.elem_type, value)
    if kind == "sequence_type":
        if not isinstance(value, (list, tuple)):
            raise InputMismatchError(
                f"input '{name}': a sequence is a list of arrays, got {type(value).__name__}"
            )
        element = type_proto.sequence_type.elem_type
        return [run_structure(f"{name}[{i}]", element, item) for i, item in enumerate(value)]
    if not isinstance(value, np.ndarray):
        raise InputMismatchError(
            f"input '{name}': expected a numpy array, got {type(value).__name__}"
        )
    return tuple(value.shape)


def flat_arrays(value: Any) -> list[np.ndarray]:
    """The compiled model's arguments for one graph input's run-time value."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [array for item in value for array in flat_arrays(item)]
    return [value]


def regroup_outputs(
    outputs: Sequence[onnx.ValueInfoProto], flat: Mapping[str, np.ndarray]
) -> list[Any]:
    """The graph outputs in ONNX order from the compiled model's results by name:
    lists for sequences, None for absent optionals."""
    return [_regroup(output.name, output.type, flat) for output in outputs]


def _regroup(name: str, type_proto: onnx.TypeProto, flat: Mapping[str, np.ndarray]) -> Any:
    kind = type_proto.WhichOneof("value")
    if kind == "optional_type":
        inner = type_proto.optional_type.elem_type
        present = f"{name}[0]" if inner.WhichOneof("value") == "sequence_type" else name
        return _regroup(name, inner, flat) if present in flat else None
    if kind == "sequence_type":
        element = type_proto.sequence_type.elem_type
        count = 0
        while f"{name}[{count}]" in flat:
            count += 1
        return [_regroup(f"{name}[{i}]", element, flat) for i in range(count)]
    return flat[name]


# -- input_shapes entries ------------------------------------------------------------


def is_structure_spec(spec: Any) -> bool:
    """Whether an `input_shapes` entry gives a sequence's or an optional's structure
    (None, or a non-empty list of shapes) rather than a tensor's shape."""
    if spec is None:
        return True
    if isinstance(spec, (str, bytes, np.ndarray)) or not isinstance(spec, Sequence):
        return False
    return len(spec) > 0 and all(
        item is None or (isinstance(item, Sequence) and not isinstance(item, (str, bytes)))
        for item in spec
    )


def checked_structure(where: str, spec: Any, max_bytes: int) -> ShapeSpec:
    """An `input_shapes` entry of a sequence or optional input, checked: None, or
    lists of shapes of non-negative integers whose tensors fit in `max_bytes`."""
    if spec is None:
        return None
    if isinstance(spec, (str, bytes)) or not isinstance(spec, (Sequence, np.ndarray)):
        raise StratoError(f"{where}: a shape is a list of integers, got {spec!r}")
    if is_structure_spec(spec):
        return [checked_structure(f"{where}[{i}]", item, max_bytes) for i, item in enumerate(spec)]
    dims = []
    for dim in spec:
        if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (int, np.integer)):
            raise StratoError(f"{where}: dimension {dim!r} is not an integer")
        if dim < 0:
            raise StratoError(f"{where}: dimension {dim} is negative")
        dims.append(int(dim))
    if math.prod(dims) * 8 > max_bytes:
        raise StratoError(
            f"{where}: a tensor of shape {dims} does not fit in memory "
            f"(more than {max_bytes} bytes)"
        )
    return tuple(dims)


def _kind_name(type_proto: onnx.TypeProto) -> str:
    kind = type_proto.WhichOneof("value")
    names = {
        "tensor_type": "tensors",
        "sequence_type": "sequences",
        "map_type": "a map",
        "optional_type": "optionals",
        "sparse_tensor_type": "a sparse tensor",
    }
    return names.get(kind, "an untyped value")


__all__ = [
    "ShapeSpec",
    "StaticValue",
    "argument_types",
    "assemble",
    "check_distinct",
    "checked_structure",
    "describe",
    "flat_arrays",
    "is_structure_spec",
    "is_structured",
    "regroup_outputs",
    "result_values",
    "run_structure",
]
