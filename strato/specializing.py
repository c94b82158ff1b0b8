"""Models with symbolic input dimensions, compiled for the sizes each call brings.

strato's compiled code has static shapes. A model whose graph inputs have dynamic
dimensions (a `dim_param` such as "batch", an unnamed dynamic dimension, or no shape at
all) that `input_shapes` does not pin is returned by `strato.compile` as a
`ShapeSpecializingModel`: each call checks its arrays against the model's dimensions,
then runs the model compiled for those sizes, compiling it on the first call that
brings them (through the compile cache: a size compiled before, in this process or
another, is loaded, and each kernel compiled before for any size is reused).

    model = strato.compile("bert.onnx")      # input_ids: [batch, sequence]
    model(ids_2x16)                          # compiles for {batch: 2, sequence: 16}
    model(ids_2x16_again)                    # runs that code
    model(ids_1x64)                          # compiles for {batch: 1, sequence: 64}
    model(ids_2x16, mask_2x17)               # InputMismatchError: 'sequence' is 16 in
                                             # 'input_ids' but 17 in 'attention_mask'

A call whose arrays break the model's dimensions (a fixed size, a rank, or a named
dimension that two inputs give different sizes) is an `InputMismatchError` naming the
input, the axis and the dimension. The last `MAX_SIZES` compiled sizes are kept.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from strato.diagnostics import StratoError
from strato.runtime.compiled_model import CompiledModel
from strato.runtime.signature import InputMismatchError

MAX_SIZES = 8
"""How many compiled sizes a `ShapeSpecializingModel` keeps (least recently used out)."""

Dim = int | str | None
"""A declared dimension: a size, a named dimension, or an unnamed dynamic one."""


@dataclass(frozen=True)
class InputDims:
    """The declared shape of each graph input that has a dynamic dimension (None: the
    input declares no shape, so any rank)."""

    shapes: dict[str, tuple[Dim, ...] | None]

    @staticmethod
    def of(
        model: onnx.ModelProto, pinned: Mapping[str, Any] | None = None
    ) -> InputDims | None:
        """The dynamic inputs of `model` that `pinned` (input_shapes) leaves open; None
        when every tensor input's shape is known."""
        pinned = pinned or {}
        initializers = {init.name for init in model.graph.initializer}
        shapes: dict[str, tuple[Dim, ...] | None] = {}
        for value in model.graph.input:
            if value.name in initializers or value.name in pinned:
                continue
            if not value.type.HasField("tensor_type"):
                continue  # sequences and optionals: their structure is given elsewhere
            tensor = value.type.tensor_type
            if not tensor.HasField("shape"):
                shapes[value.name] = None
                continue
            dims = tuple(_dim(d) for d in tensor.shape.dim)
            if any(not isinstance(d, int) for d in dims):
                shapes[value.name] = dims
        return InputDims(shapes) if shapes else None

    def describe(self) -> str:
        """The dynamic dimensions, for messages: "'x' axis 0 ('batch')"."""
        parts = []
        for name, dims in self.shapes.items():
            if dims is None:
                parts.append(f"'{name}' (no shape)")
                continue
            for axis, dim in enumerate(dims):
                if not isinstance(dim, int):
                    label = f" ('{dim}')" if dim else ""
                    parts.append(f"'{name}' axis {axis}{label}")
        return ", ".join(parts)

    def bind(self, arrays: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
        """The shape of each dynamic input in `arrays` (by name), after checking the
        arrays against the declared dimensions."""
        sizes: dict[str, tuple[int, str]] = {}  # named dimension -> (size, first input)
        shapes: dict[str, tuple[int, ...]] = {}
        for name, dims in self.shapes.items():
            array = arrays[name]
            if not isinstance(array, np.ndarray):
                raise InputMismatchError(
                    f"input '{name}': expected a numpy array, got {type(array).__name__}"
                )
            shape = tuple(int(n) for n in array.shape)
            if dims is not None:
                if len(shape) != len(dims):
                    raise InputMismatchError(
                        f"input '{name}': shape {list(shape)} has rank {len(shape)}, the "
                        f"model's is {len(dims)} ({_shown(dims)})"
                    )
                for axis, (dim, size) in enumerate(zip(dims, shape, strict=True)):
                    if isinstance(dim, int) and dim != size:
                        raise InputMismatchError(
                            f"input '{name}': axis {axis} is {size}, the model fixes it "
                            f"at {dim} ({_shown(dims)})"
                        )
                    if isinstance(dim, str):
                        seen = sizes.setdefault(dim, (size, name))
                        if seen[0] != size:
                            raise InputMismatchError(
                                f"input '{name}': dimension '{dim}' (axis {axis}) is "
                                f"{size}, but {seen[0]} in input '{seen[1]}'"
                            )
            shapes[name] = shape
        return shapes


def _dim(dim: onnx.TensorShapeProto.Dimension) -> Dim:
    if dim.HasField("dim_value") and dim.dim_value >= 0:
        return int(dim.dim_value)
    return dim.dim_param if dim.HasField("dim_param") and dim.dim_param else None


def _shown(dims: Sequence[Dim]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


class ShapeSpecializingModel:
    """A model with dynamic input dimensions, callable at any sizes that fit them: the
    model compiled for each call's sizes (see the module docstring). `compile_for`
    compiles the model with the given input_shapes added to the pinned ones."""

    def __init__(
        self,
        dims: InputDims,
        input_names: Sequence[str],
        output_names: Sequence[str],
        compile_for: Callable[[dict[str, tuple[int, ...]]], CompiledModel],
    ):
        self.dims = dims
        self._input_names = list(input_names)
        self._output_names = list(output_names)
        self._compile_for = compile_for
        self._compiled: OrderedDict[tuple, CompiledModel] = OrderedDict()
        self._seen: dict[tuple, CompiledModel] = {}
        """Every array shape of a checked call -> the model compiled for it."""
        self.origin = None

    @property
    def input_names(self) -> list[str]:
        return list(self._input_names)

    @property
    def output_names(self) -> list[str]:
        return list(self._output_names)

    @property
    def sizes(self) -> list[dict[str, tuple[int, ...]]]:
        """The input shapes compiled for, oldest first."""
        return [dict(key) for key in self._compiled]

    def specialized(self, shapes: Mapping[str, Sequence[int]]) -> CompiledModel:
        """The model compiled for these shapes of its dynamic inputs."""
        key = tuple(sorted((name, tuple(int(n) for n in shape)) for name, shape in shapes.items()))
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._compile_for(dict(key))
            self._compiled[key] = compiled
            while len(self._compiled) > MAX_SIZES:
                _, dropped = self._compiled.popitem(last=False)
                self._seen = {k: v for k, v in self._seen.items() if v is not dropped}
        else:
            self._compiled.move_to_end(key)
        return compiled

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        try:  # the shapes of a call seen before: checked then
            shapes = tuple(array.shape for array in arrays)
            compiled = self._seen.get(shapes)
        except (AttributeError, TypeError):
            compiled = None
        if compiled is not None:
            return compiled(*arrays)
        if len(arrays) != len(self._input_names):
            raise InputMismatchError(
                f"the model takes {len(self._input_names)} input(s) "
                f"({', '.join(self._input_names) or 'none'}), got {len(arrays)}"
            )
        compiled = self.specialized(self.dims.bind(dict(zip(self._input_names, arrays, strict=True))))
        if len(self._seen) >= 4 * MAX_SIZES:
            self._seen.clear()
        self._seen[tuple(array.shape for array in arrays)] = compiled
        return compiled(*arrays)

    def _static_only(self, what: str) -> StratoError:
        return StratoError(
            f"{what} needs static shapes, and this model's inputs have dynamic dimensions "
            f"({self.dims.describe()}): compile it with input_shapes for the sizes to keep"
        )

    @property
    def can_save(self) -> bool:
        return False

    def save(self, path: Any) -> None:
        raise self._static_only("saving a compiled model")

    def to_bytes(self) -> bytes:
        raise self._static_only("saving a compiled model")

    def c_header(self) -> str:
        raise self._static_only("a C header")

    def __repr__(self) -> str:
        return (
            f"<ShapeSpecializingModel {self.dims.describe()}: "
            f"{len(self._compiled)} size(s) compiled>"
        )


__all__ = ["MAX_SIZES", "InputDims", "ShapeSpecializingModel"]
