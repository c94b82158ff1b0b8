"""A compiled model: one call from Python runs the whole model.

    model = strato.compile("mlp.onnx")
    (logits,) = model(x)                 # numpy in, numpy out, ONNX order
    model.save("mlp.strato")             # strato.load("mlp.strato") runs it again

The runtime checks the arguments against the signature recorded from the graph-level
function, allocates the outputs, calls the target's entry with inputs + outputs, and
returns the outputs. What else a model offers depends on its target: a target's
subclass saves it (`to_bytes`, read back by the loader its target registers:
`strato.runtime.saved_model`) and gives the artifacts it has (the llvm target's: LLVM IR,
object code, a C header: `strato.targets.llvm.model`); asking a model for an artifact
its target does not make is a `StratoError` naming the target.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from strato.diagnostics import StratoError
from strato.runtime.atomic_write import write_atomically
from strato.runtime.signature import Signature, TensorSpec
from strato.runtime.weight_blob import EMPTY

EntryFunction = Callable[[Sequence[np.ndarray | int]], None]
"""Runs the model's entry on C-contiguous arrays: inputs, then outputs to fill, then
(a model compiled once for every size) the run-time sizes, `Signature.sizes`."""


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

    entry_symbol: str | None = None
    """The C name of the entry function (`mlp_run`), when the model has one."""

    def __init__(
        self,
        signature: Signature,
        entry: EntryFunction,
        *,
        target: str,
        origin: str | None = None,
    ):
        self.signature = signature
        self.target = target
        self._entry = entry
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
        signature = self.signature
        if signature.sizes:
            # a model compiled once for every size takes them after its buffers
            inputs, sizes = signature.check_and_bind(arrays)
        else:
            inputs, sizes = signature.check_inputs(arrays), []
        try:
            outputs = signature.allocate_at(sizes)
        except MemoryError:
            raise OutputMemoryError(
                "out of memory: cannot allocate the outputs ("
                + ", ".join(str(spec) for spec in self.outputs)
                + ")"
            ) from None
        self._entry([*inputs, *outputs, *sizes])
        return outputs

    # -- what a target may offer -------------------------------------------------------

    @property
    def can_save(self) -> bool:
        """Whether `to_bytes` (and `save`) work for this model."""
        return False

    def to_bytes(self) -> bytes:
        """The model, ready to run, as the bytes of a saved model (`strato.load` reads
        them back; `strato.runtime.saved_model`)."""
        raise StratoError(
            f"a model compiled for '{self.target}' cannot be saved (it has no machine code)"
        )

    def save(self, path: str | os.PathLike) -> None:
        """Write the model, ready to run, to one file (conventionally `.strato`) that
        `strato.load` runs again without compiling; whole or not at all."""
        write_atomically(path, self.to_bytes(), what="the compiled model")

    @property
    def weights(self) -> np.ndarray:
        """The model's large constants packed in one 64-byte-aligned uint8 array that
        its code reads (empty when it has none; `weight_symbols` says where each
        constant is)."""
        return EMPTY.data

    @property
    def weight_symbols(self) -> dict[str, int]:
        """Each weight symbol the code declares -> its offset in `weights`."""
        return {}

    @property
    def has_llvm_ir(self) -> bool:
        return False

    @property
    def llvm_ir(self) -> str:
        """The LLVM IR text of the whole model, for targets that make one."""
        raise StratoError(f"a model compiled for '{self.target}' has no LLVM IR")

    def save_llvm_ir(self, path: str | os.PathLike) -> None:
        """Write `llvm_ir` to `path` (conventionally `.ll`), whole or not at all."""
        write_atomically(path, self.llvm_ir, what="the LLVM IR")

    def object_code(self, *, portable: bool = False) -> bytes:
        """The model as an object file to link into a C program (`c_header()`), for
        targets that make one."""
        raise StratoError(f"a model compiled for '{self.target}' has no object code")

    def save_object(self, path: str | os.PathLike, *, portable: bool = False) -> None:
        """Write `object_code()` to `path` (conventionally `.o`), whole or not at all."""
        write_atomically(path, self.object_code(portable=portable), what="the object file")

    def with_batch_entry(self, entry: Any) -> CompiledModel:
        """This model with a C entry that runs every sample of a batch
        (`strato.runtime.batched.BatchEntry`), for targets that make C entries."""
        raise StratoError(f"a model compiled for '{self.target}' has no C entry point")

    def with_sizes(
        self,
        dims: Sequence[str],
        sizes: Sequence[tuple[tuple[int, ...], Any]],
        samples: Sequence[tuple[int, tuple[int | None, ...]] | None] = (),
    ) -> Any:
        """This model's compiled sizes (each open dimension's values in `dims` order, and
        the model compiled for them; this one among them) as one object whose entry takes
        the sizes at run time, for targets that make C entries; `samples` says, per size,
        along which dimension it runs once per sample for any count (its position in
        `dims` and each buffer's bytes per sample)."""
        raise StratoError(f"a model compiled for '{self.target}' has no C entry point")

    def c_header(self) -> str:
        """A C header declaring the model's entry function, for targets that make one."""
        raise StratoError(f"a model compiled for '{self.target}' has no C entry point")

    def save_c_header(self, path: str | os.PathLike) -> None:
        write_atomically(path, self.c_header(), what="the C header")

    def __repr__(self) -> str:
        ins = ", ".join(str(spec) for spec in self.inputs)
        outs = ", ".join(str(spec) for spec in self.outputs)
        return f"<CompiledModel target={self.target} ({ins}) -> ({outs})>"
