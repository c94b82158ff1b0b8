"""A model compiled by the llvm target: machine code, its LLVM IR, an object file and a
C header.

    model = strato.compile("mlp.onnx")   # an LLVMCompiledModel
    model.save_llvm_ir("mlp.ll")
    model.save_object("mlp.o")           # with model.save_c_header("mlp.h")
    model.save("mlp.strato")             # strato.load("mlp.strato") runs it again

The entry follows the loop-level ABI: inputs then outputs, all buffers; in C it is
`int32_t <name>_run(const T *input..., T *output...)` returning a status
(`c_header()`, `save_object`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from strato.diagnostics import StratoError
from strato.runtime.compiled_model import CompiledModel, EntryFunction
from strato.runtime.signature import Signature
from strato.runtime.weight_blob import EMPTY, WeightBlob

if TYPE_CHECKING:
    from strato.runtime.batched import BatchEntry
    from strato.targets.llvm.sized_entry import SizedModels


class CompiledObject(Protocol):
    """An object file compiled apart from a model's entry (a kernel:
    `strato.targets.llvm.kernel_objects.KernelObject`)."""

    symbol: str
    object_code: bytes
    imports: tuple[str, ...]
    llvm_ir: str


@dataclass(frozen=True)
class MachineCode:
    """A model's machine code as it runs: the object file MCJIT compiled for its entry,
    the object files of its kernels (`objects`, compiled apart), the functions they
    import (libc, libm, the parallel runtime) and the machine they were compiled for.
    What `LLVMCompiledModel.save` and the compile cache store (`strato.targets.llvm.aot`).
    The entry reads the model's weights from external symbols that loading binds to
    `weights` (`strato.runtime.weight_blob`)."""

    object_code: bytes
    imports: tuple[str, ...]
    triple: str
    cpu: str
    features: str
    weights: WeightBlob = EMPTY
    objects: tuple[CompiledObject, ...] = ()


class LLVMCompiledModel(CompiledModel):
    """A model whose entry is machine code from LLVM (see the module docstring)."""

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
        ir_parts: tuple[str, ...] = (),
    ):
        super().__init__(signature, entry, target=target, origin=origin)
        self._llvm_ir = llvm_ir
        self.ir_parts = ir_parts
        """The LLVM IR of the entry's module, then of each kernel compiled apart (what
        `llvm_ir` links into one module when asked for it)."""
        self.entry_symbol = entry_symbol
        self.machine_code = machine_code
        """The compiled code, for `save` and the compile cache (None: cannot be saved)."""
        self.batch_entry: BatchEntry | None = None
        """An entry running every sample, in the LLVM IR, object code and C header only
        (`with_batch_entry`)."""

    @property
    def can_save(self) -> bool:
        return self.machine_code is not None and self.entry_symbol is not None

    def to_bytes(self) -> bytes:
        from strato.targets.llvm.aot import model_to_bytes

        return model_to_bytes(self)

    @property
    def weights(self):
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
        return self._llvm_ir is not None or bool(self.ir_parts)

    def with_batch_entry(self, entry: BatchEntry) -> LLVMCompiledModel:
        """This model whose LLVM IR, object code and C header also hold `entry`, the
        entry that runs every sample (`strato.runtime.batched`)."""
        batched = copy.copy(self)
        batched.batch_entry = entry
        return batched

    @property
    def llvm_ir(self) -> str:
        """The LLVM IR text of the whole model (entry and kernels, in one module). Its
        weights are declared external constants (`weight_symbols`), their bytes are in
        `weights`."""
        text = self._whole_llvm_ir()
        if self.batch_entry is not None and self.entry_symbol is not None:
            from strato.targets.llvm.entry_abi import batch_entry_ir

            text += "\n" + batch_entry_ir(self.entry_symbol, self.batch_entry.sample_bytes)
        return text

    def _whole_llvm_ir(self) -> str:
        if self._llvm_ir is None and self.ir_parts and self.entry_symbol is not None:
            from strato.targets.llvm.host import HostTarget
            from strato.targets.llvm.jit import link_ir

            code = self.machine_code
            machine = None if code is None else HostTarget(code.triple, code.cpu, code.features)
            self._llvm_ir = link_ir(self.ir_parts, self.entry_symbol, machine)
        if self._llvm_ir is None:
            if self.origin is not None:
                raise StratoError(
                    f"the model loaded from {self.origin} was saved without its LLVM IR"
                )
            return super().llvm_ir
        return self._llvm_ir

    def object_code(self, *, portable: bool = False) -> bytes:
        """The model as an object file for the CPU it was compiled for (a generic CPU of
        that architecture when `portable`), to link into a C program with `c_header()`;
        the object holds the weights."""
        from strato.targets.llvm.host import HostTarget, host_target
        from strato.targets.llvm.jit import compile_object

        code = self.machine_code
        machine = host_target() if code is None else HostTarget(code.triple, code.cpu, code.features)
        return compile_object(
            self.llvm_ir,
            machine=machine,
            portable=portable,
            weights=code.weights if code is not None else EMPTY,
        )

    def with_sizes(
        self,
        dims: Sequence[str],
        sizes: Sequence[tuple[tuple[int, ...], Any]],
        samples: Sequence[tuple[int, tuple[int | None, ...]] | None] = (),
    ) -> SizedModels:
        """The compiled sizes of this model as one object (see
        `strato.targets.llvm.sized_entry`)."""
        from strato.targets.llvm.sized_entry import SizedModels

        if self.entry_symbol is None:
            raise StratoError("this model has no entry symbol to name the object's entry after")
        return SizedModels(
            self.entry_symbol, tuple(dims), tuple((tuple(v), m) for v, m in sizes), tuple(samples)
        )

    def c_header(self) -> str:
        """A C header declaring the entry function (see `strato.targets.llvm.c_header`)."""
        from strato.targets.llvm.c_header import c_header

        if self.entry_symbol is None:
            return super().c_header()
        return c_header(self.entry_symbol, self.signature, self.batch_entry)


__all__ = ["LLVMCompiledModel", "MachineCode"]
