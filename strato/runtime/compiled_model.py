"""A compiled model: one call from Python runs the whole model.

    model = strato.compile("mlp.onnx")
    (logits,) = model(x)                 # numpy in, numpy out, ONNX order
    model.save_llvm_ir("mlp.ll")

The entry follows the loop-level ABI: inputs then outputs, all buffers, no results.
The runtime checks the arguments against the signature recorded from the graph-level
function, allocates the outputs, calls the entry with inputs + outputs, and returns the
outputs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np

from strato.diagnostics import StratoError
from strato.runtime.signature import Signature, TensorSpec

EntryFunction = Callable[[Sequence[np.ndarray]], None]
"""Runs the model's entry on C-contiguous arrays: inputs, then outputs to fill."""


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
    ):
        self.signature = signature
        self.target = target
        self._entry = entry
        self._llvm_ir = llvm_ir

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
        outputs = self.signature.allocate_outputs()
        self._entry([*inputs, *outputs])
        return outputs

    @property
    def llvm_ir(self) -> str:
        """The LLVM IR text of the whole model (entry and kernels)."""
        if self._llvm_ir is None:
            raise StratoError(f"a model compiled for '{self.target}' has no LLVM IR")
        return self._llvm_ir

    def save_llvm_ir(self, path: str | os.PathLike) -> None:
        """Write `llvm_ir` to `path` (conventionally `.ll`)."""
        with open(path, "w", encoding="utf-8") as file:
            file.write(self.llvm_ir)

    def __repr__(self) -> str:
        ins = ", ".join(str(spec) for spec in self.inputs)
        outs = ", ".join(str(spec) for spec in self.outputs)
        return f"<CompiledModel target={self.target} ({ins}) -> ({outs})>"
