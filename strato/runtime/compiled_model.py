"""A compiled model: one call from Python runs the whole model.

    model = strato.compile("mlp.onnx")
    (logits,) = model(x)                 # numpy in, numpy out, ONNX order
    model.save_llvm_ir("mlp.ll")
    model.save("mlp.strato")             # strato.load("mlp.strato") runs it again

The entry follows the loop-level ABI: inputs then outputs, all buffers; in C it is
`int32_t <name>_run(const T *input..., T *output...)` returning a status
(`c_header()`, `save_object`). The runtime checks the arguments against the signature
recorded from the graph-level function, allocates the outputs, calls the entry with
inputs + outputs, and returns the outputs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from strato.diagnostics import StratoError
from strato.runtime.atomic_write import write_atomically
from strato.runtime.signature import Signature, TensorSpec
from strato.runtime.weight_blob import EMPTY, WeightBlob

EntryFunction = Callable[[Sequence[np.ndarray]], None]
"""Runs the model's entry on C-contiguous arrays: inputs, then outputs to fill."""


@dataclass(frozen=True)
class MachineCode:
    """A model's machine code as it runs: the object file MCJIT compiled, the functions
    it imports (libc, libm, the parallel runtime) and the machine it was compiled for.
    What `CompiledModel.save` and the compile cache store (`strato.runtime.aot`). The
    object code reads the model's weights from external symbols that loading binds to
    `weights` (`strato.runtime.weight_blob`)."""

    object_code: bytes
    imports: tuple[str, ...]
    triple: str
    cpu: str
    features: str
    weights: WeightBlob = EMPTY


class OutputMemoryError(StratoError, MemoryError):
    """Outputs too large to allocate on this machine."""


class ModelMemoryError(StratoError, MemoryError):
    """A compiled model that could not allocate its buffers when called."""


class CompiledModel:
    """A model compiled for `target`, callable on numpy arrays.

    `__call__(*inputs)` takes the inputs in ONNX input order and returns a list of the
    outputs in ONNX output order; it checks the count, shape and dtype of the inputs
    (`InputMismatchError` on a mismatch).
    """

    def __init__(
        self,
        signature: Signature,
        entry: EntryFunction,
        *,
        target: str,
        llvm_ir: str | None = None,
        entry_symbol: str | None = None,
        machine_code: MachineCode | None = None,
        origin: str | None = None,
    ):
        self.signature = signature
        self.target = target
        self._entry = entry
        self._llvm_ir = llvm_ir
        self.entry_symbol = entry_symbol
        """The C name of the entry function (`mlp_run`), when the model has one."""
        self.machine_code = machine_code
        """The compiled code, for `save` and the compile cache (None: cannot be saved)."""
        self.origin = origin
        """Where a model that was not compiled here came from: a saved file, the cache."""

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        return self.signature.inputs

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        return self.signature.outputs

    @property
    def input_names(self) -> list[str]:
        return [spec.name for spec in self.signature.inputs]

    @property
    def output_names(self) -> list[str]:
        return [spec.name for spec in self.signature.outputs]

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        inputs = self.signature.check_inputs(arrays)
        try:
            outputs = self.signature.allocate_outputs()
        except MemoryError:
            raise OutputMemoryError(
                "out of memory: cannot allocate the outputs ("
                + ", ".join(str(spec) for spec in self.outputs)
                + ")"
            ) from None
        self._entry([*inputs, *outputs])
        return outputs

    @property
    def weights(self) -> np.ndarray:
        """The model's large constants packed in one 64-byte-aligned uint8 array that
        the machine code reads (empty when it has none; `weight_symbols` says where
        each constant is)."""
        code = self.machine_code
        return (code.weights if code is not None else EMPTY).data

    @property
    def weight_symbols(self) -> dict[str, int]:
        """Each weight symbol the machine code and `llvm_ir` declare -> its offset in
        `weights` (a multiple of 64)."""
        code = self.machine_code
        return (code.weights if code is not None else EMPTY).offsets

    @property
    def has_llvm_ir(self) -> bool:
        return self._llvm_ir is not None

    @property
    def llvm_ir(self) -> str:
        """The LLVM IR text of the whole model (entry and kernels). Its weights are
        declared external constants (`weight_symbols`), their bytes are in `weights`."""
        if self._llvm_ir is None:
            if self.origin is not None:
                raise StratoError(
                    f"the model loaded from {self.origin} was saved without its LLVM IR"
                )
            raise StratoError(f"a model compiled for '{self.target}' has no LLVM IR")
        return self._llvm_ir

    def save(self, path: str | os.PathLike) -> None:
        """Write the model, ready to run, to one file (conventionally `.strato`) that
        `strato.load` runs again without compiling; whole or not at all."""
        from strato.runtime.aot import save_model

        save_model(self, path)

    def save_llvm_ir(self, path: str | os.PathLike) -> None:
        """Write `llvm_ir` to `path` (conventionally `.ll`), whole or not at all."""
        write_atomically(path, self.llvm_ir, what="the LLVM IR")

    def object_code(self, *, portable: bool = False) -> bytes:
        """The model as an object file for the CPU it was compiled for (a generic CPU of
        that architecture when `portable`), to link into a C program with `c_header()`;
        the object holds the weights."""
        from strato.targets.llvm.host import HostTarget, compiling_for, current_machine
        from strato.targets.llvm.jit import compile_object

        code = self.machine_code
        machine = (
            current_machine()
            if code is None
            else HostTarget(code.triple, code.cpu, code.features)
        )
        with compiling_for(machine):
            return compile_object(
                self.llvm_ir,
                portable=portable,
                weights=code.weights if code is not None else EMPTY,
            )

    def save_object(self, path: str | os.PathLike, *, portable: bool = False) -> None:
        """Write `object_code()` to `path` (conventionally `.o`), whole or not at all."""
        write_atomically(path, self.object_code(portable=portable), what="the object file")

    def c_header(self) -> str:
        """A C header declaring the entry function (see `strato.runtime.c_header`)."""
        from strato.runtime.c_header import c_header

        if self.entry_symbol is None:
            raise StratoError(f"a model compiled for '{self.target}' has no C entry point")
        return c_header(self.entry_symbol, self.signature)

    def save_c_header(self, path: str | os.PathLike) -> None:
        write_atomically(path, self.c_header(), what="the C header")

    def __repr__(self) -> str:
        ins = ", ".join(str(spec) for spec in self.inputs)
        outs = ", ".join(str(spec) for spec in self.outputs)
        return f"<CompiledModel target={self.target} ({ins}) -> ({outs})>"
