"""The signature of a compiled model's entry: names, shapes and dtypes of its inputs and
outputs, recorded from the graph-level function before lowering.

The runtime checks arguments against it and allocates outputs from it:

    sig = Signature.from_function(function, ["x"], ["logits"])
    arrays = sig.check_inputs([x])      # a clear error on a wrong count, shape or dtype
    outputs = sig.allocate_outputs()
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType

from strato.diagnostics import StratoError
from strato.dialects.size_sums import SizeSum, size_sum
from strato.dialects.tensor_types import numpy_dtype

if TYPE_CHECKING:
    from strato.dialects.graph.dims import SizeBound


class InputMismatchError(StratoError, ValueError):
    """Arguments that do not match a compiled model's signature."""


@dataclass(frozen=True)
class TensorSpec:
    """One input or output: its ONNX name, shape and dtype. A dimension of run-time
    size is -1 in `shape` and named in `dims` (None at static dimensions): one name is
    one size, which the call's inputs give."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    dims: tuple[str | None, ...] | None = None

    def __str__(self) -> str:
        return f"'{self.name}' {self.dtype.name}{self.shape_text}"

    @property
    def shape_text(self) -> str:
        """The shape as a user reads it, a run-time dimension by its name: [batch, 8]."""
        if self.dims is None:
            return str(list(self.shape))
        return "[" + ", ".join(
            str(size) if name is None else name for size, name in zip(self.shape, self.dims)
        ) + "]"

    @property
    def is_dynamic(self) -> bool:
        return self.dims is not None

    def shape_at(self, sizes: Mapping[str, int]) -> tuple[int, ...]:
        """The shape at the call's run-time sizes."""
        if self.dims is None:
            return self.shape
        return tuple(
            size if name is None else sizes[name] if name in sizes else size_sum(name).evaluate(sizes)
            for size, name in zip(self.shape, self.dims)
        )

    def at(self, sizes: Mapping[str, int]) -> TensorSpec:
        """This input or output at the call's run-time sizes: a static spec."""
        return dataclasses.replace(self, shape=self.shape_at(sizes), dims=None)


@dataclass(frozen=True)
class SizeLimit:
    """The sizes a run-time size of the entry takes: `least` to `most` (None: no
    most), multiples of `multiple` only, and why the most, when the model implies it."""

    name: str
    least: int = 0
    most: int | None = None
    why: str = ""
    multiple: int = 1

    @property
    def bound(self) -> SizeBound:
        from strato.dialects.graph.dims import SizeBound

        return SizeBound(self.least, self.most, self.multiple)

    def admits(self, size: int) -> bool:
        return self.bound.admits(size)

    def refusal(self, size: int) -> str:
        """Why `size` is refused."""
        return self.bound.refusal(size, self.why)


@dataclass(frozen=True)
class Signature:
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    limits: tuple[SizeLimit, ...] = ()
    """Bounds of the run-time sizes (`graph.size_bounds`); a size without one takes
    any size."""

    @functools.cached_property
    def sizes(self) -> tuple[str, ...]:
        """The run-time sizes the entry takes after its buffers, in order: the names
        of the inputs' run-time dimensions, each once, in input order."""
        names: list[str] = []
        for spec in self.inputs:
            for name in spec.dims or ():
                if name is not None and name not in names:
                    names.append(name)
        return tuple(names)

    @property
    def is_dynamic(self) -> bool:
        return any(spec.is_dynamic for spec in (*self.inputs, *self.outputs))

    @staticmethod
    def from_function(
        function: func.FuncOp,
        input_names: Sequence[str] | None = None,
        output_names: Sequence[str] | None = None,
        why: Mapping[str, str] | None = None,
    ) -> Signature:
        """The signature of a graph-level function (tensor arguments and results), the
        bounds of its run-time sizes those it records (`graph.size_bounds`; `why`
        says why a most, by size).

        Names default to the arguments' SSA names (`input0`, ... when unnamed) and to
        `output0`, ...
        """
        from strato.dialects.graph.dims import size_bounds

        function_type = function.function_type
        args = function.args
        if input_names is None:
            input_names = [arg.name_hint or f"input{i}" for i, arg in enumerate(args)]
        if output_names is None:
            output_names = [f"output{i}" for i in range(len(function_type.outputs.data))]
        dims = _run_time_dims(function)
        inputs = tuple(
            _spec(name, type_, dims(arg))
            for name, type_, arg in zip(input_names, function_type.inputs.data, args, strict=True)
        )
        returned = function.body.block.last_op.operands if function.body.blocks else ()
        outputs = tuple(
            _spec(name, type_, dims(value))
            for name, type_, value in zip(
                output_names, function_type.outputs.data, returned, strict=True
            )
        )
        signature = Signature(inputs, outputs)
        bounds = size_bounds(function)
        if bounds:
            limits = tuple(
                SizeLimit(
                    name, bounds[name].least, bounds[name].most, (why or {}).get(name, ""),
                    bounds[name].multiple,
                )
                for name in signature.sizes
                if name in bounds
            )
            signature = Signature(inputs, outputs, limits)
        for spec in outputs:
            for name in spec.dims or ():
                total = SizeSum.parse(name) if name is not None else None
                if (
                    name is not None
                    and name not in signature.sizes
                    and (total is None or not set(total.names) <= set(signature.sizes))
                ):
                    raise StratoError(
                        f"entry value '{spec.name}' has the run-time size '{name}', which "
                        "no input gives"
                    )
        return signature

    @functools.cached_property
    def _plan(self) -> _CallPlan:
        return _CallPlan.of(self)

    def check_and_bind(self, arrays: Sequence[object]) -> tuple[list[np.ndarray], list[int]]:
        """`check_inputs`, and the run-time sizes the inputs give, in `sizes` order: the
        checks planned once (what a model compiled once for every size pays per call);
        a mismatch is reported as `check_inputs` reports it."""
        plan = self._plan
        if len(arrays) == len(plan.inputs):
            values = [-1] * len(plan.sizes)
            checked: list[np.ndarray] = []
            for value, (dtype, rank, static, named) in zip(arrays, plan.inputs, strict=True):
                if type(value) is not np.ndarray or value.dtype != dtype or value.ndim != rank:
                    break
                shape = value.shape
                if static and any(shape[axis] != size for axis, size in static):
                    break
                for axis, k in named:
                    if values[k] < 0:
                        values[k] = shape[axis]
                    elif values[k] != shape[axis]:
                        break
                else:
                    checked.append(value if value.flags.c_contiguous else np.ascontiguousarray(value))
                    continue
                break
            else:
                for k, least, most, multiple in plan.limits:
                    if not least <= values[k] <= most or values[k] % multiple:
                        break
                else:
                    if all(values[k] == _sum_at(total, values) for k, total in plan.sums):
                        return checked, values
        checked = self.check_inputs(arrays)  # names what does not match
        bound = self.bind_sizes(checked)
        return checked, [bound[name] for name in plan.sizes]

    def allocate_at(self, values: Sequence[int]) -> list[np.ndarray]:
        """The outputs at the run-time sizes `values` (in `sizes` order)."""
        return [
            np.empty(
                tuple(
                    (d if d >= 0 else values[~d]) if type(d) is int else _sum_at(d, values)
                    for d in shape
                ),
                dtype=dtype,
            )
            for dtype, shape in self._plan.outputs
        ]

    def bind_sizes(self, arrays: Sequence[np.ndarray]) -> dict[str, int]:
        """The run-time sizes the inputs give (checked: arrays of the right rank)."""
        sizes: dict[str, int] = {}
        for spec, array in zip(self.inputs, arrays, strict=True):
            for name, size in zip(spec.dims or (), array.shape):
                if name is not None:
                    sizes.setdefault(name, size)
        return sizes

    def check_inputs(self, arrays: Sequence[object]) -> list[np.ndarray]:
        """The arguments as C-contiguous arrays, after checking count, shape and dtype."""
        if len(arrays) != len(self.inputs):
            expected = ", ".join(str(spec) for spec in self.inputs) or "nothing"
            raise InputMismatchError(
                f"the model takes {len(self.inputs)} input(s) ({expected}), got {len(arrays)}"
            )
        checked = []
        bound: dict[str, tuple[int, int]] = {}
        for position, (value, spec) in enumerate(zip(arrays, self.inputs)):
            if not isinstance(value, np.ndarray):
                raise InputMismatchError(
                    f"input {position} {spec}: expected a numpy array, got {type(value).__name__}"
                )
            if value.dtype is not spec.dtype and value.dtype != spec.dtype:
                raise InputMismatchError(
                    f"input {position} {spec}: dtype is {value.dtype.name}, expected "
                    f"{spec.dtype.name} (convert with .astype({_dtype_expression(spec.dtype)}))"
                )
            if spec.dims is None:
                if value.shape != spec.shape:
                    raise InputMismatchError(
                        f"input {position} {spec}: shape is {list(value.shape)}, expected "
                        f"{list(spec.shape)}"
                    )
            else:
                self._check_dynamic(position, spec, value, bound)
            checked.append(value if value.flags.c_contiguous else np.ascontiguousarray(value))
        for name, total in self._sums:
            given, where = bound[name]
            value = total.evaluate({term: bound[term][0] for term in total.names})
            if given != value:
                parts = ", ".join(f"'{term}' = {bound[term][0]}" for term in total.names)
                raise InputMismatchError(
                    f"input {where} {self.inputs[where]}: '{name}' is {given}, but the sizes it "
                    f"sums are {parts}: {value}"
                )
        return checked

    @property
    def size_sums(self) -> tuple[tuple[int, int, tuple[tuple[int, int], ...]], ...]:
        """The sizes that are sums of others (`_sums`) by index in `sizes`: (index, the
        int, (index, times) per size summed)."""
        sizes = self.sizes
        return tuple(
            (sizes.index(name), total.constant, tuple((sizes.index(t), c) for t, c in total.terms))
            for name, total in self._sums
        )

    @functools.cached_property
    def _sums(self) -> tuple[tuple[str, SizeSum], ...]:
        """The sizes an input names by a sum of other sizes the inputs give (an
        attention mask's `past + sequence`), which a call must give as that sum."""
        sums = []
        for name in self.sizes:
            total = SizeSum.parse(name)
            if total is not None and total.terms and set(total.names) <= set(self.sizes):
                sums.append((name, total))
        return tuple(sums)

    def _check_dynamic(
        self,
        position: int,
        spec: TensorSpec,
        value: np.ndarray,
        bound: dict[str, tuple[int, int]],
    ) -> None:
        """An input with run-time dimensions: its rank and static sizes, and each named
        size within its bounds and the same as where an earlier input gave it (`bound`:
        name -> size, input)."""
        assert spec.dims is not None
        if value.ndim != len(spec.shape) or any(
            name is None and size != expected
            for size, expected, name in zip(value.shape, spec.shape, spec.dims)
        ):
            raise InputMismatchError(
                f"input {position} {spec}: shape is {list(value.shape)}, expected "
                f"{spec.shape_text}"
            )
        for axis, (name, size) in enumerate(zip(spec.dims, value.shape)):
            if name is None:
                continue
            limit = self._limit(name)
            if limit is not None and not limit.admits(size):
                raise InputMismatchError(
                    f"input {position} {spec}: dimension {axis} ('{name}') is {size}, "
                    f"{limit.refusal(size)}"
                )
            if name not in bound:
                bound[name] = (size, position)
                continue
            given, where = bound[name]
            if given != size:
                raise InputMismatchError(
                    f"input {position} {spec}: dimension {axis} ('{name}') is {size}, but "
                    f"input {where} '{self.inputs[where].name}' gives '{name}' = {given}"
                )

    def _limit(self, name: str) -> SizeLimit | None:
        return next((limit for limit in self.limits if limit.name == name), None)

    def allocate_outputs(self, sizes: Mapping[str, int] | None = None) -> list[np.ndarray]:
        return [np.empty(spec.shape_at(sizes or {}), dtype=spec.dtype) for spec in self.outputs]


@dataclass(frozen=True)
class _CallPlan:
    """What `Signature.check_and_bind` and `allocate_at` read, computed once: per input
    its dtype, rank, static (axis, size) pairs and (axis, size index) pairs; per output
    its dtype and shape, with ~k where size k gives the dimension."""

    sizes: tuple[str, ...]
    inputs: tuple[tuple[np.dtype, int, tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]], ...]
    outputs: tuple[tuple[np.dtype, tuple[int | tuple[int, tuple[tuple[int, int], ...]], ...]], ...]
    limits: tuple[tuple[int, int, float, int], ...] = ()
    """Per bounded size: its index, least, most (inf: none) and the multiple it is."""
    sums: tuple[tuple[int, tuple[int, tuple[tuple[int, int], ...]]], ...] = ()
    """Per size that is a sum of others (`Signature._sums`): its index and the sum, as
    outputs' are."""

    @staticmethod
    def of(signature: Signature) -> _CallPlan:
        sizes = signature.sizes

        def dims(spec: TensorSpec) -> tuple[str | None, ...]:
            return spec.dims if spec.dims is not None else (None,) * len(spec.shape)

        inputs = tuple(
            (
                spec.dtype,
                len(spec.shape),
                tuple((a, size) for a, (size, name) in enumerate(zip(spec.shape, dims(spec))) if name is None),
                tuple((a, sizes.index(name)) for a, name in enumerate(dims(spec)) if name is not None),
            )
            for spec in signature.inputs
        )
        def extent(size: int, name: str | None) -> int | tuple[int, tuple[tuple[int, int], ...]]:
            if name is None:
                return size
            if name in sizes:
                return ~sizes.index(name)
            total = SizeSum.parse(name)  # checked: a sum of the sizes
            assert total is not None
            return total.constant, tuple((sizes.index(term), count) for term, count in total.terms)

        outputs = tuple(
            (spec.dtype, tuple(extent(size, name) for size, name in zip(spec.shape, dims(spec))))
            for spec in signature.outputs
        )
        limits = tuple(
            (
                sizes.index(limit.name), limit.least,
                math.inf if limit.most is None else limit.most, limit.multiple,
            )
            for limit in signature.limits
        )
        sums = tuple((k, (constant, terms)) for k, constant, terms in signature.size_sums)
        return _CallPlan(sizes, inputs, outputs, limits, sums)


def _sum_at(extent: tuple[int, tuple[tuple[int, int], ...]], values: Sequence[int]) -> int:
    """A dimension that is a sum of sizes (`_CallPlan.outputs`) at the sizes `values`."""
    constant, terms = extent
    return constant + sum(count * values[k] for k, count in terms)


_char_at = ctypes.c_char.from_buffer
_address_of = ctypes.addressof


def data_address(array: np.ndarray) -> int:
    """The address of a C-contiguous array's first byte, as compiled code takes it: by a
    ctypes view of its buffer (a fourth of `array.ctypes.data`'s cost, which a model of
    small tensors pays per argument per call), or, for a read-only or empty array,
    through `array.ctypes`."""
    try:
        return _address_of(_char_at(array))
    except (TypeError, ValueError, BufferError):
        return array.ctypes.data


def _dtype_expression(dtype: np.dtype) -> str:
    """How Python code names `dtype`: np.float32, ml_dtypes.bfloat16, ..."""
    module = "ml_dtypes" if dtype.type.__module__.startswith("ml_dtypes") else "np"
    return f"{module}.{dtype.name}"


def _spec(name: str, type_: object, dims: list[str] | None = None) -> TensorSpec:
    """The spec of an entry value; `dims` names its run-time dimensions in order."""
    if not isinstance(type_, TensorType):
        raise StratoError(f"entry value '{name}' is a {type_}, not a tensor")
    shape = tuple(type_.get_shape())
    if not any(dim < 0 for dim in shape):
        return TensorSpec(name, shape, numpy_dtype(type_))
    if dims is None:
        raise StratoError(f"entry value '{name}' has a dynamic shape {type_}")
    names = iter(dims)
    return TensorSpec(
        name,
        tuple(-1 if dim < 0 else dim for dim in shape),
        numpy_dtype(type_),
        tuple(next(names) if dim < 0 else None for dim in shape),
    )


def _run_time_dims(function: func.FuncOp):
    """Names of the run-time dimensions of the function's values (their classes of
    one size, `graph.dims`); None for a value without any or a function of static
    shapes."""
    from strato.dialects.graph.base import is_run_time
    from strato.dialects.graph.dims import RunTimeDims, run_time_axes

    types = (*function.function_type.inputs.data, *function.function_type.outputs.data)
    if not any(is_run_time(t) for t in types):
        return lambda value: None
    classes = RunTimeDims.of_function(function)

    def names(value) -> list[str] | None:
        axes = run_time_axes(value)
        if not axes:
            return None
        found = [classes.name(value, d) for d in axes]
        if any(name is None for name in found):
            raise StratoError(
                f"a run-time dimension of {value.type} is given by no input's dimension"
            )
        return found  # type: ignore[return-value]

    return names


def c_identifier(name: str) -> str:
    """`name` as a C identifier: other characters become `_`, a leading digit gets `_`
    (entry points `<name>_run`, parameters of a C header).

    >>> c_identifier("resnet-18.v2")
    'resnet_18_v2'
    """
    identifier = re.sub(r"[^0-9A-Za-z_]", "_", name) or "model"
    return f"_{identifier}" if identifier[0].isdigit() else identifier


SMALL_INTEGER_BOUND = 8
"""Integer inputs (token ids, indices) are drawn from [0, SMALL_INTEGER_BOUND): valid
for any table of at least that many rows."""


def random_inputs(model, seed: int) -> list[np.ndarray]:
    """Seeded random inputs for `model` (anything with `inputs`: tensor specs with a
    shape and a dtype): standard normal floats, small non-negative integers, random
    booleans. What `strato run` and `strato bench` feed a model without --inputs."""
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in model.inputs:
        if spec.dtype.kind == "f":
            arrays.append(rng.standard_normal(spec.shape).astype(spec.dtype))
        elif spec.dtype.kind in "iu":
            arrays.append(rng.integers(0, SMALL_INTEGER_BOUND, spec.shape).astype(spec.dtype))
        else:
            arrays.append(rng.integers(0, 2, spec.shape).astype(spec.dtype))
    return arrays
