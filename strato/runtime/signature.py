"""The signature of a compiled model's entry: names, shapes and dtypes of its inputs and
outputs, recorded from the graph-level function before lowering.

The runtime checks arguments against it and allocates outputs from it:

    sig = Signature.from_function(function, ["x"], ["logits"])
    arrays = sig.check_inputs([x])      # a clear error on a wrong count, shape or dtype
    outputs = sig.allocate_outputs()
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType

from strato.diagnostics import StratoError
from strato.dialects.tensor_types import numpy_dtype


class InputMismatchError(StratoError, ValueError):
    """Arguments that do not match a compiled model's signature."""


@dataclass(frozen=True)
class TensorSpec:
    """One input or output: its ONNX name, static shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    def __str__(self) -> str:
        return f"'{self.name}' {self.dtype.name}{list(self.shape)}"


@dataclass(frozen=True)
class Signature:
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]

    @staticmethod
    def from_function(
        function: func.FuncOp,
        input_names: Sequence[str] | None = None,
        output_names: Sequence[str] | None = None,
    ) -> Signature:
        """The signature of a graph-level function (tensor arguments and results).

        Names default to the arguments' SSA names (`input0`, ... when unnamed) and to
        `output0`, ...
        """
        function_type = function.function_type
        args = function.args
        if input_names is None:
            input_names = [arg.name_hint or f"input{i}" for i, arg in enumerate(args)]
        if output_names is None:
            output_names = [f"output{i}" for i in range(len(function_type.outputs.data))]
        inputs = tuple(
            _spec(name, type_) for name, type_ in zip(input_names, function_type.inputs.data, strict=True)
        )
        outputs = tuple(
            _spec(name, type_) for name, type_ in zip(output_names, function_type.outputs.data, strict=True)
        )
        return Signature(inputs, outputs)

    def check_inputs(self, arrays: Sequence[object]) -> list[np.ndarray]:
        """The arguments as C-contiguous arrays, after checking count, shape and dtype."""
        if len(arrays) != len(self.inputs):
            expected = ", ".join(str(spec) for spec in self.inputs) or "nothing"
            raise InputMismatchError(
                f"the model takes {len(self.inputs)} input(s) ({expected}), got {len(arrays)}"
            )
        checked = []
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
            if value.shape != spec.shape:
                raise InputMismatchError(
                    f"input {position} {spec}: shape is {list(value.shape)}, expected "
                    f"{list(spec.shape)}"
                )
            checked.append(value if value.flags.c_contiguous else np.ascontiguousarray(value))
        return checked

    def allocate_outputs(self) -> list[np.ndarray]:
        return [np.empty(spec.shape, dtype=spec.dtype) for spec in self.outputs]


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


def _spec(name: str, type_: object) -> TensorSpec:
    if not isinstance(type_, TensorType):
        raise StratoError(f"entry value '{name}' is a {type_}, not a tensor")
    shape = tuple(type_.get_shape())
    if any(dim < 0 for dim in shape):
        raise StratoError(f"entry value '{name}' has a dynamic shape {type_}")
    return TensorSpec(name, shape, numpy_dtype(type_))


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
