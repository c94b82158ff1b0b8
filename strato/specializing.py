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
input, the axis and the dimension. The last `MAX_SIZES` compiled sizes are kept, and
more while they are small (`KEPT_BYTES`: a loop whose state grows visits a size per
iteration).

A named dimension along which the model is separable (`strato.separable`: each output's
slice i along it is the model on each input's slice i, as for the batch of almost every
model) is not compiled per size: a call of size N >= 2 runs the model compiled for size 1
on each slice and stacks the outputs. So one compile serves every batch size, and only
the other dimensions (a sequence length) compile per size. Whether the model is
separable is decided on its import at size 1 and at N, once per new N (an import, not a
compile); a model that is not, a dimension with no name, or a model whose sample
computes too little for a run per sample to pay (`strato.separable.MIN_SAMPLE_ELEMENTS`)
compiles per size.

    model = strato.compile("bert.onnx")      # input_ids: [batch, sequence]
    model(ids_1x16)                          # compiles for {batch: 1, sequence: 16}
    model(ids_8x16)                          # separable along batch: runs that code 8 times
    model.separated                          # {'batch': Separation(...)}

It saves to a `.strato` archive of its own format (`strato-specializing-model`: a
manifest, the ONNX model, the tuning log it was compiled with, and each size compiled
so far as a saved model of its own), which `strato.load` reads back: the saved sizes run
as they are, and a call of another size compiles the model for it as before (so the
loading process needs strato's compiler, not a C compiler). `strato compile MODEL -o
M.strato` writes one for a model with dynamic dimensions no batched model covers.

    model(ids_1x128); model(ids_1x512)       # compile the sizes to ship
    model.save("bert.strato")                # ... and strato.load("bert.strato") later

A model compiled with passes hooks (`passes_before`, `passes_after`) cannot be saved so:
its other sizes could not be compiled alike elsewhere.

The sizes compiled so far also make one object file for a C program (`save_object`,
`c_header`, `llvm_ir`; `strato compile MODEL --sizes SHAPES --sizes SHAPES -o M.o`): an
entry per size and one `<name>_run` that takes each open dimension's size before the
buffers and runs the code compiled for it, or, for a size compiled for one sample of a
dimension calls were split along, that code once per sample for any count
(`strato.targets.llvm.sized_entry`).

    model(ids_1x16); model(ids_1x128)
    model.save_object("bert.o")              # bert_run(batch, sequence, ids, mask, logits)
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from strato.diagnostics import StratoError
from strato.dialects.graph.dims import SizeBound
from strato.runtime.atomic_write import write_atomically
from strato.runtime.compiled_model import CompiledModel
from strato.runtime.signature import InputMismatchError
from strato.separable import NotSeparable, Separation

if TYPE_CHECKING:
    from strato.runtime.batched import BatchedModel

MAX_SIZES = 8
"""How many compiled sizes a `ShapeSpecializingModel` keeps at least (least recently
used out); more while they are small (`KEPT_BYTES`)."""

KEPT_BYTES = 256 << 20
"""The most bytes (weights and machine code) the compiled sizes beyond `MAX_SIZES` may
take, up to `MAX_KEPT_SIZES` sizes: a Loop whose state grows runs its body at a new size
each iteration, and keeping fewer sizes than a call visits would compile (or load from
the cache) every one of them again on each call."""

MAX_KEPT_SIZES = 1024
"""The most compiled sizes kept, however small."""

FORMAT = "strato-specializing-model"
MANIFEST = "manifest.json"
MODEL = "model.onnx"
TUNING = "tuning.jsonl"
"""The archive members besides each compiled size's (`sizes/<n>.strato`)."""


@dataclass(frozen=True)
class Recipe:
    """What compiles a `ShapeSpecializingModel`'s sizes, as saved with it: the ONNX
    model, the pinned input shapes, the target, the entry's name and the tuning log
    (a path, read when the model is saved). `unsavable` says why a model compiled
    some other way cannot be saved (passes hooks)."""

    model: onnx.ModelProto
    input_shapes: Mapping[str, Any] | None
    target: str
    name: str | None
    tuning: str | None = None
    unsavable: str | None = None

Dim = int | str | None
"""A declared dimension: a size, a named dimension, or an unnamed dynamic one."""


@dataclass(frozen=True)
class InputDims:
    """The declared shape of each graph input that has a dynamic dimension (None: the
    input declares no shape, so any rank)."""

    shapes: dict[str, tuple[Dim, ...] | None]
    bounds: Mapping[str, SizeBound] = field(default_factory=dict)
    """Bounds of named dimensions (`size_bounds`), checked by `bind`."""

    @staticmethod
    def of(
        model: onnx.ModelProto, pinned: Mapping[str, Any] | None = None
    ) -> InputDims | None:
        """The dynamic inputs of `model` that `pinned` (input_shapes) leaves open, a
        pinned input's named dimensions included (`["batch", 64]`); None when every
        tensor input's shape is known."""
        pinned = pinned or {}
        initializers = {init.name for init in model.graph.initializer}
        shapes: dict[str, tuple[Dim, ...] | None] = {}
        for value in model.graph.input:
            if value.name in initializers:
                continue
            if value.name in pinned:
                given = pinned[value.name]
                if isinstance(given, Sequence) and any(isinstance(d, str) for d in given):
                    shapes[value.name] = tuple(d if isinstance(d, str) else int(d) for d in given)
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

    def describe_sizes(self, shapes: Mapping[str, Sequence[int]]) -> str:
        """The sizes `shapes` give the dynamic dimensions, for messages:
        "'batch' = 1, 'sequence' = 600" (an unnamed one: "'x' axis 1 = 600")."""
        parts: dict[str, str] = {}
        for name, dims in self.shapes.items():
            shape = tuple(shapes[name])
            if dims is None:
                parts[name] = f"'{name}' of shape {list(shape)}"
                continue
            for axis, dim in enumerate(dims):
                if isinstance(dim, str):
                    parts.setdefault(dim, f"'{dim}' = {shape[axis]}")
                elif dim is None:
                    parts[f"{name}:{axis}"] = f"'{name}' axis {axis} = {shape[axis]}"
        return ", ".join(parts.values())

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
                        bound = self.bounds.get(dim)
                        if bound is not None and not bound.admits(size):
                            raise InputMismatchError(
                                f"input '{name}': dimension '{dim}' (axis {axis}) is {size}, "
                                f"{bound.refusal(size)}"
                            )
                        seen = sizes.setdefault(dim, (size, name))
                        if seen[0] != size:
                            raise InputMismatchError(
                                f"input '{name}': dimension '{dim}' (axis {axis}) is "
                                f"{size}, but {seen[0]} in input '{seen[1]}'"
                            )
            shapes[name] = shape
        return shapes


    def named_sizes(self, shapes: Mapping[str, Sequence[int]]) -> dict[str, int]:
        """Each named dimension's size in `shapes` (checked by `bind`), in the order
        the inputs declare them."""
        sizes: dict[str, int] = {}
        for name, dims in self.shapes.items():
            for axis, dim in enumerate(dims or ()):
                if isinstance(dim, str):
                    sizes.setdefault(dim, int(shapes[name][axis]))
        return sizes

    def with_size(
        self, shapes: Mapping[str, Sequence[int]], dim: str, size: int
    ) -> dict[str, tuple[int, ...]]:
        """`shapes` with every axis of the named dimension `dim` set to `size`."""
        changed = {}
        for name, shape in shapes.items():
            dims = self.shapes.get(name) or ()
            changed[name] = tuple(
                size if axis < len(dims) and dims[axis] == dim else int(n)
                for axis, n in enumerate(shape)
            )
        return changed


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
        separate: Separate | None = None,
        recipe: Recipe | None = None,
    ):
        self.dims = dims
        self.recipe = recipe
        self._input_names = list(input_names)
        self._output_names = list(output_names)
        self._compile_for = compile_for
        self._separate = separate
        self._compiled: OrderedDict[tuple, CompiledModel] = OrderedDict()
        self._bytes: dict[tuple, float] = {}
        """Each compiled size's weights and machine code in bytes (inf: not known)."""
        self._seen: dict[tuple, _Plan] = {}
        """Every array shape of a checked call -> how it runs."""
        self._separations: dict[tuple, Separation] = {}
        """(dimension, sizes at 1, size) -> the separation checked for them."""
        self.inseparable: dict[str, str] = {}
        """Named dimensions found not separable -> why (the operation that mixes)."""
        self.why_per_size = ""
        """Why the model compiles per size rather than once for every size (the import's
        refusal: the node, and what it does not take), when `strato.compile` knows; a
        `batched()` refusal repeats it."""
        self.origin = None

    @property
    def input_names(self) -> list[str]:
        return list(self._input_names)

    @property
    def output_names(self) -> list[str]:
        return list(self._output_names)

    @property
    def separated(self) -> dict[str, Separation]:
        """The named dimensions calls have been split along, with the last check's
        input and output axes."""
        return {
            key[0]: separation
            for key, separation in self._separations.items()
            if separation.worth_splitting
        }

    @property
    def sizes(self) -> list[dict[str, tuple[int, ...]]]:
        """The input shapes compiled for, oldest first."""
        return [dict(key) for key in self._compiled]

    def specialized(self, shapes: Mapping[str, Sequence[int]]) -> CompiledModel:
        """The model compiled for these shapes of its dynamic inputs."""
        key = _key(shapes)
        compiled = self._compiled.get(key)
        if compiled is None:
            try:
                compiled = self._compile_for(dict(key))
            except StratoError as error:
                # the model may compile at other sizes: say which ones failed
                error.message = f"{error.message} (at {self.dims.describe_sizes(dict(key))})"
                error.args = (error.message, *error.args[1:])
                raise
            self._compiled[key] = compiled
            self._bytes[key] = _footprint(compiled)
            self._drop_oldest()
        else:
            self._compiled.move_to_end(key)
        return compiled

    def prepare(self, shapes: Mapping[str, Sequence[int]]) -> None:
        """Compile the model for a call of these shapes of its dynamic inputs, as the
        call would (split along a separable dimension), without running it."""
        # bind checks arrays: views of one byte, of the given shapes
        arrays = {name: np.broadcast_to(np.uint8(0), tuple(shape)) for name, shape in shapes.items()}
        self._plan(self.dims.bind(arrays))

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        try:  # the shapes of a call seen before: checked then
            shapes = tuple(array.shape for array in arrays)
            plan = self._seen.get(shapes)
        except (AttributeError, TypeError):
            plan = None
        if plan is None:
            if len(arrays) != len(self._input_names):
                raise InputMismatchError(
                    f"the model takes {len(self._input_names)} input(s) "
                    f"({', '.join(self._input_names) or 'none'}), got {len(arrays)}"
                )
            plan = self._plan(self.dims.bind(dict(zip(self._input_names, arrays, strict=True))))
            if len(self._seen) >= 4 * max(MAX_SIZES, len(self._compiled)):
                self._seen.clear()
            self._seen[tuple(array.shape for array in arrays)] = plan
        if plan.separation is None:
            return plan.compiled(*arrays)
        return plan.separation.run(plan.compiled, arrays, plan.count)

    def _plan(self, shapes: dict[str, tuple[int, ...]]) -> _Plan:
        """How a call of these input shapes runs: split along the first named dimension
        of size >= 2 along which the model is separable, else compiled for them."""
        if self._separate is not None:
            for dim, count in self.dims.named_sizes(shapes).items():
                if count < 2 or dim in self.inseparable:
                    continue
                one = self.dims.with_size(shapes, dim, 1)
                key = (dim, _key(one), count)
                separation = self._separations.get(key)
                if separation is None:
                    try:
                        separation = self._separate(dim, one, shapes, count)
                    except NotSeparable as reason:
                        self.inseparable[dim] = str(reason)
                        continue
                    self._separations[key] = separation
                if separation.worth_splitting:
                    return _Plan(self.specialized(one), separation, count)
        return _Plan(self.specialized(shapes))

    def batched(self) -> BatchedModel:
        """The model compiled once for size 1 of its one open dimension, callable and
        saved for every size of it (`strato.runtime.batched`): the dimension must be
        named, the model separable along it at sizes 2 and 3, and every other dimension
        pinned. A StratoError says which of these fails."""
        from strato.runtime.batched import BatchedModel

        named = {d for dims in self.dims.shapes.values() for d in (dims or ()) if isinstance(d, str)}
        if any(dims is None or None in dims for dims in self.dims.shapes.values()) or len(named) != 1:
            why = f" (it does not compile once for every size: {self.why_per_size})" if self.why_per_size else ""
            raise StratoError(
                "a model compiled once for every size of a dimension has one named dynamic "
                f"dimension left open, and this model has {self.dims.describe()}: pin the "
                f"others with input_shapes{why}"
            )
        if self._separate is None:
            raise StratoError("this model was not given a way to check its separation")
        (dim,) = named

        def shapes(size: int) -> dict[str, tuple[int, ...]]:
            return {
                name: tuple(size if d == dim else int(d) for d in dims)  # type: ignore[arg-type]
                for name, dims in self.dims.shapes.items()
            }

        checked = []
        for size in (2, 3):
            try:
                checked.append(self._separate(dim, shapes(1), shapes(size), size))
            except NotSeparable as reason:
                raise StratoError(
                    f"the model is not separable along '{dim}' ({reason}): compile it with "
                    "that dimension pinned"
                ) from None
        if checked[0].input_axes != checked[1].input_axes or checked[0].output_axes != checked[1].output_axes:
            raise StratoError(f"the model carries '{dim}' on other axes at sizes 2 and 3")
        return BatchedModel(self.specialized(shapes(1)), dim, checked[1])

    def _static_only(self, what: str) -> StratoError:
        return StratoError(
            f"{what} needs static shapes, and this model's inputs have dynamic dimensions "
            f"({self.dims.describe()}): compile it with input_shapes for the sizes to keep"
        )

    @property
    def can_save(self) -> bool:
        return self.recipe is not None and self.recipe.unsavable is None

    def adopt(self, shapes: Mapping[str, Sequence[int]], compiled: CompiledModel) -> None:
        """Take `compiled` as the model compiled for `shapes` (a saved size loaded)."""
        key = _key(shapes)
        self._compiled[key] = compiled
        self._bytes[key] = _footprint(compiled)
        self._drop_oldest()

    def _drop_oldest(self) -> None:
        """Drop the least recently used sizes beyond `MAX_SIZES` while there are more
        than `MAX_KEPT_SIZES` or they take more than `KEPT_BYTES` bytes."""
        while len(self._compiled) > MAX_SIZES and (
            len(self._compiled) > MAX_KEPT_SIZES or sum(self._bytes.values()) > KEPT_BYTES
        ):
            key, dropped = self._compiled.popitem(last=False)
            del self._bytes[key]
            self._seen = {k: v for k, v in self._seen.items() if v.compiled is not dropped}

    def to_bytes(self) -> bytes:
        """The `strato-specializing-model` archive (see the module docstring); sizes
        whose compiled model cannot be saved (one with host operators) are left out."""
        recipe = self.recipe
        if recipe is None:
            raise self._static_only("saving a compiled model")
        if recipe.unsavable is not None:
            raise StratoError(f"this model cannot be saved: {recipe.unsavable}")
        tuning = None
        if recipe.tuning is not None:
            try:
                with open(recipe.tuning, "rb") as log:
                    tuning = log.read()
            except OSError as err:
                raise StratoError(
                    f"cannot read the tuning log to save with the model: {err.strerror or err}",
                    location=recipe.tuning,
                ) from None
        sizes = [(dict(key), model) for key, model in self._compiled.items() if model.can_save]
        manifest = {
            "format": FORMAT,
            "target": recipe.target,
            "name": recipe.name,
            "input_shapes": {k: list(v) for k, v in (recipe.input_shapes or {}).items()},
            "tuned": tuning is not None,
            "sizes": [
                {"shapes": {k: list(v) for k, v in shapes.items()}, "member": f"sizes/{n}.strato"}
                for n, (shapes, _) in enumerate(sizes)
            ],
        }
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
            # default=int: numpy integers among the pinned sizes
            archive.writestr(MANIFEST, json.dumps(manifest, indent=1, default=int))
            archive.writestr(MODEL, recipe.model.SerializeToString())
            if tuning is not None:
                archive.writestr(TUNING, tuning)
            for entry, (_, model) in zip(manifest["sizes"], sizes, strict=True):
                archive.writestr(entry["member"], model.to_bytes())
        return buffer.getvalue()

    def save(self, path: str | os.PathLike) -> None:
        write_atomically(path, self.to_bytes(), what="the compiled model")

    def sized_object(self) -> Any:
        """The sizes compiled so far as one object with one entry taking the sizes at run
        time (`strato.targets.llvm.sized_entry.SizedModels`: `object_code`, `llvm_ir`,
        `c_header`). Its open dimensions are the named ones, then each unnamed dynamic
        axis (`<input>_<axis>`), in the inputs' order."""
        if not self._compiled:
            raise StratoError(
                "no size of this model is compiled yet: call it with each size to ship "
                "(or give `strato compile` each with --sizes), then write the object"
            )
        dims: list[str] = []
        where: list[tuple[str, int]] = []  # the input and axis each dim is read from
        for name, declared in self.dims.shapes.items():
            if declared is None:
                raise StratoError(
                    f"input '{name}' declares no shape, so an object cannot name its sizes: "
                    "give it a shape with named dimensions"
                )
            for axis, dim in enumerate(declared):
                if isinstance(dim, int) or dim in dims:
                    continue
                dims.append(dim if dim else f"{name}_{axis}")
                where.append((name, axis))
        from strato.runtime.batched import BatchedModel

        sizes, samples = [], []
        for key, compiled in self._compiled.items():
            shapes = dict(key)
            sizes.append((tuple(int(shapes[name][axis]) for name, axis in where), compiled))
            per_sample = None  # a sample of a dimension calls were split along: any count
            for (dim, one, _), separation in self._separations.items():
                if one == key and separation.worth_splitting and dim in dims:
                    try:
                        entry = BatchedModel(compiled, dim, separation).entry()
                    except StratoError:
                        continue  # the dimension is behind another axis of a buffer
                    per_sample = (dims.index(dim), entry.sample_bytes)
                    break
            samples.append(per_sample)
        first = sizes[0][1]
        return first.with_sizes(dims, sizes, samples)

    @property
    def entry_symbol(self) -> str | None:
        return self.sized_object().entry_symbol if self._compiled else None

    @property
    def llvm_ir(self) -> str:
        return self.sized_object().llvm_ir

    def save_llvm_ir(self, path: str | os.PathLike) -> None:
        write_atomically(path, self.llvm_ir, what="the LLVM IR")

    def object_code(self, *, portable: bool = False) -> bytes:
        return self.sized_object().object_code(portable=portable)

    def save_object(self, path: str | os.PathLike, *, portable: bool = False) -> None:
        write_atomically(path, self.object_code(portable=portable), what="the object file")

    def c_header(self) -> str:
        return self.sized_object().c_header()

    def save_c_header(self, path: str | os.PathLike) -> None:
        write_atomically(path, self.c_header(), what="the C header")

    def __repr__(self) -> str:
        split = "".join(f", separable along '{dim}'" for dim in self.separated)
        return (
            f"<ShapeSpecializingModel {self.dims.describe()}: "
            f"{len(self._compiled)} size(s) compiled{split}>"
        )


Separate = Callable[[str, dict[str, tuple[int, ...]], dict[str, tuple[int, ...]], int], Separation]
"""(dimension, input shapes with it at 1, the call's input shapes, its size in the call)
-> how the model separates along it; raises NotSeparable."""


@dataclass(frozen=True)
class _Plan:
    """A call's compiled model, run once, or once per slice along a separation."""

    compiled: CompiledModel
    separation: Separation | None = None
    count: int = 1


def _footprint(compiled: Any) -> float:
    """The bytes a compiled size holds (its weights and machine code); infinite for a
    model that does not say (compiled parts and host operators, a plugin target's)."""
    code = getattr(compiled, "machine_code", None)
    weights = getattr(compiled, "weights", None)
    if code is None or not isinstance(weights, np.ndarray):
        return float("inf")
    objects = sum(len(part.object_code) for part in code.objects)
    return weights.nbytes + len(code.object_code) + objects


def _key(shapes: Mapping[str, Sequence[int]]) -> tuple:
    return tuple(sorted((name, tuple(int(n) for n in shape)) for name, shape in shapes.items()))


__all__ = ["FORMAT", "KEPT_BYTES", "MAX_SIZES", "InputDims", "Recipe", "ShapeSpecializingModel"]
