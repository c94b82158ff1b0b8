"""A model compiled once for one sample of a dimension it is separable along, callable
and saved for every size of it (`strato.separable`).

`ShapeSpecializingModel.batched()` gives one when the model's only open dimension is
separable (checked on its imports at sizes 2 and 3): the model compiled for size 1 and
the axis each input and output carries the dimension on. A call runs the compiled model
on each sample and stacks the outputs. It saves to a `.strato` archive of its own format
(`strato-batched-model`: a manifest naming the dimension and the axes, and the size-1
model's archive), which `strato.load` reads back; and, for a target with a C entry point,
its LLVM IR, object code and C header hold a second entry that runs every sample:

    int32_t resnet18_run(const float *pixels, float *output);          /* one sample */
    int32_t resnet18_run_batch(int64_t batch, const float *pixels, float *output);

`<name>_run_batch` calls `<name>_run` once per sample, sample i's part of each buffer
starting i times one sample's bytes in, so the dimension must come first in each
buffer that carries it (only axes of size 1 before it); an unbatched output is written
by every sample with the same values.

A saved batched model runs whatever the size, without the per-size check of the model's
import that `ShapeSpecializingModel` makes: it was checked at sizes 2 and 3 when compiled.
A model that computes differently at other sizes of the dimension (an If on the batch
size) is not caught then; compile such a model with the size pinned.
"""

from __future__ import annotations

import functools
import io
import json
import os
import zipfile
from dataclasses import dataclass
from typing import Any

import numpy as np

from strato.diagnostics import StratoError
from strato.runtime.atomic_write import write_atomically
from strato.runtime.compiled_model import CompiledModel
from strato.runtime.saved_model import (
    ModelFileError,
    model_from_bytes,
    register_model_format,
)
from strato.runtime.signature import InputMismatchError
from strato.separable import Separation

FORMAT = "strato-batched-model"
MANIFEST = "manifest.json"
INNER = "sample.strato"
"""The archive members: the manifest, and the size-1 model's own archive."""


@dataclass(frozen=True)
class BatchEntry:
    """A C entry `<name>_run_batch(int64_t count, buffers...)` running the entry once
    per sample: buffer k of sample i starts `sample_bytes[k] * i` bytes in (None: the
    same buffer for every sample)."""

    dimension: str
    sample_bytes: tuple[int | None, ...]


class BatchedModel:
    """The model compiled for one sample of `dimension`, run on each (see the module
    docstring)."""

    def __init__(self, one: CompiledModel, dimension: str, separation: Separation):
        self.one = one
        self.dimension = dimension
        self.separation = separation
        self.origin: str | None = None
        for spec, axis in zip(one.inputs, separation.input_axes, strict=True):
            if axis is not None and spec.shape[axis] != 1:
                raise StratoError(
                    f"input '{spec.name}' has {spec.shape[axis]} on the axis of '{dimension}' "
                    "at size 1; a batched model takes one sample per position"
                )

    @property
    def input_names(self) -> list[str]:
        return self.one.input_names

    @property
    def output_names(self) -> list[str]:
        return self.one.output_names

    @property
    def target(self) -> str:
        return self.one.target

    @property
    def signature(self):
        """The signature of one sample (the dimension at 1)."""
        return self.one.signature

    @property
    def inputs(self):
        return self.one.inputs

    @property
    def outputs(self):
        return self.one.outputs

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        specs = self.one.inputs
        if len(arrays) != len(specs):
            raise InputMismatchError(
                f"the model takes {len(specs)} input(s) "
                f"({', '.join(self.input_names) or 'none'}), got {len(arrays)}"
            )
        count = None
        for spec, array, axis in zip(specs, arrays, self.separation.input_axes, strict=True):
            if not isinstance(array, np.ndarray):
                raise InputMismatchError(
                    f"input '{spec.name}': expected a numpy array, got {type(array).__name__}"
                )
            if axis is None:
                continue
            size = array.shape[axis] if array.ndim > axis else None
            expected = spec.shape[:axis] + (size,) + spec.shape[axis + 1 :]
            if size is None or array.shape != expected:
                shown = [self.dimension if d == axis else n for d, n in enumerate(spec.shape)]
                raise InputMismatchError(
                    f"input '{spec.name}': shape {list(array.shape)}, the model takes "
                    f"{shown}"
                )
            if count is not None and size != count:
                raise InputMismatchError(
                    f"input '{spec.name}': dimension '{self.dimension}' (axis {axis}) is "
                    f"{size}, but {count} in an input before it"
                )
            count = size
        if count is None:
            return self.one(*arrays)
        if count == 0:
            return [
                np.empty(
                    spec.shape if axis is None else spec.shape[:axis] + (0,) + spec.shape[axis + 1 :],
                    spec.dtype,
                )
                for spec, axis in zip(self.one.outputs, self.separation.output_axes, strict=True)
            ]
        return self.separation.run(self.one, arrays, count)

    def entry(self) -> BatchEntry:
        """The batch entry of a C program (see the module docstring); a StratoError when
        a buffer carries the dimension behind another axis."""
        sizes: list[int | None] = []
        specs = [*self.one.inputs, *self.one.outputs]
        axes = [*self.separation.input_axes, *self.separation.output_axes]
        for spec, axis in zip(specs, axes, strict=True):
            if axis is None:
                sizes.append(None)
                continue
            if any(n != 1 for n in spec.shape[:axis]):
                raise StratoError(
                    f"'{spec.name}' carries '{self.dimension}' on axis {axis} of "
                    f"{list(spec.shape)}, behind other axes: a C entry takes each sample "
                    "as one block of each buffer, so the dimension must come first"
                )
            sizes.append(int(np.prod(spec.shape)) * spec.dtype.itemsize)
        return BatchEntry(self.dimension, tuple(sizes))

    @property
    def can_save(self) -> bool:
        return self.one.can_save

    def to_bytes(self) -> bytes:
        manifest = {
            "format": FORMAT,
            "dimension": self.dimension,
            "input_axes": list(self.separation.input_axes),
            "output_axes": list(self.separation.output_axes),
        }
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
            archive.writestr(MANIFEST, json.dumps(manifest, indent=1))
            archive.writestr(INNER, self.one.to_bytes())
        return buffer.getvalue()

    def save(self, path: str | os.PathLike) -> None:
        write_atomically(path, self.to_bytes(), what="the compiled model")

    @functools.cached_property
    def _with_entry(self) -> CompiledModel:
        """The size-1 model with the batch entry, built once for the IR, the object
        code and the header."""
        return self.one.with_batch_entry(self.entry())

    @property
    def llvm_ir(self) -> str:
        return self._with_entry.llvm_ir

    def save_llvm_ir(self, path: str | os.PathLike) -> None:
        write_atomically(path, self.llvm_ir, what="the LLVM IR")

    def object_code(self, *, portable: bool = False) -> bytes:
        return self._with_entry.object_code(portable=portable)

    def save_object(self, path: str | os.PathLike, *, portable: bool = False) -> None:
        write_atomically(path, self.object_code(portable=portable), what="the object file")

    def c_header(self) -> str:
        return self._with_entry.c_header()

    def save_c_header(self, path: str | os.PathLike) -> None:
        write_atomically(path, self.c_header(), what="the C header")

    @property
    def entry_symbol(self) -> str | None:
        return getattr(self.one, "entry_symbol", None)

    def __repr__(self) -> str:
        return f"<BatchedModel along '{self.dimension}' of {self.one!r}>"


def _load(source: Any, where: str) -> BatchedModel:
    def fail(reason: str) -> ModelFileError:
        return ModelFileError(f"corrupt: {reason}", location=where)

    try:
        with zipfile.ZipFile(source) as archive:
            manifest = json.loads(archive.read(MANIFEST))
            inner = archive.read(INNER)
    except (KeyError, ValueError, zipfile.BadZipFile) as err:
        raise fail(f"not a batched model archive ({err})") from None
    dimension = manifest.get("dimension")
    inputs, outputs = manifest.get("input_axes"), manifest.get("output_axes")
    if not isinstance(dimension, str) or not _axes(inputs) or not _axes(outputs):
        raise fail("the manifest's dimension or axes are missing or not valid")
    one = model_from_bytes(inner, where)
    if len(inputs) != len(one.inputs) or len(outputs) != len(one.outputs):
        raise fail("the manifest's axes do not match the model's inputs and outputs")
    model = BatchedModel(one, dimension, Separation(tuple(inputs), tuple(outputs)))
    model.origin = where
    return model


def _axes(value: object) -> bool:
    return isinstance(value, list) and all(
        a is None or (isinstance(a, int) and not isinstance(a, bool) and a >= 0) for a in value
    )


register_model_format(FORMAT, _load)

__all__ = ["FORMAT", "BatchEntry", "BatchedModel"]
