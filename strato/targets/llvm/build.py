"""The llvm target's build: a lowered llvm-dialect model to a callable model.

    model = build_llvm(module, "main", signature, machine=machine, public_name="mlp")
    (logits,) = model(x)

The entry becomes `<public_name>_run` returning a status and the other functions
internal (`entry_abi`); constants of at least `weight_threshold` bytes leave the IR for
the model's weight blob (`weights`); LLVM optimizes and MCJIT compiles the module for the
target's machine (`jit`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, ModuleOp

from strato.diagnostics import StratoError
from strato.runtime.compiled_model import ModelMemoryError
from strato.runtime.limits import MAX_BUFFER_BYTES
from strato.runtime.signature import Signature
from strato.targets.llvm.entry_abi import (
    ALLOCATORS,
    STATUS_OK,
    STATUS_OUT_OF_MEMORY,
    finalize_entry,
)
from strato.targets.llvm.model import LLVMCompiledModel
from strato.targets.llvm.weights import WEIGHT_BLOB_THRESHOLD

if TYPE_CHECKING:
    from strato.targets.llvm.host import HostTarget
    from strato.targets.llvm.jit import JitFunction


def check_heap_size(module: ModuleOp) -> None:
    """Refuse a module whose heap allocations could never all succeed."""
    total = 0
    for op in module.walk():
        if not isinstance(op, llvm.CallOp) or op.callee is None:
            continue
        if op.callee.root_reference.data not in ALLOCATORS:
            continue
        size = op.args[-1].owner
        if isinstance(size, llvm.ConstantOp) and isinstance(size.value, IntegerAttr):
            total += size.value.value.data
    if total > MAX_BUFFER_BYTES:
        raise StratoError(
            f"the model's intermediate buffers need {total} bytes, more than a 64-bit "
            f"address space holds ({MAX_BUFFER_BYTES} bytes)"
        )


def build_llvm(
    module: ModuleOp,
    entry_name: str,
    signature: Signature,
    *,
    machine: HostTarget | None = None,
    opt_level: int = 3,
    public_name: str = "model",
    target: str = "llvm",
    weight_threshold: int = WEIGHT_BLOB_THRESHOLD,
) -> LLVMCompiledModel:
    """JIT-compile an llvm-dialect module whose function `entry_name` takes pointers to
    the buffers of `signature`: the inputs, then the outputs it fills; for `machine`
    (the host by default), at LLVM's `opt_level`.

    A call that runs out of memory raises `ModelMemoryError`. Constants of at least
    `weight_threshold` bytes become symbols `<public_name>_<global>` of the model's
    weight blob (`strato.targets.llvm.weights`; `LLVMCompiledModel.weights`).
    """
    from strato.targets.llvm.jit import JitModule
    from strato.targets.llvm.weights import pack_weights

    check_heap_size(module)
    entry_symbol = f"{public_name}_run"
    finalize_entry(module, entry_name, entry_symbol)
    weights = pack_weights(module, f"{public_name}_", weight_threshold)
    jit = JitModule(module, machine=machine, opt_level=opt_level, weights=weights)
    entry = jit.function(entry_symbol)
    _check_entry_abi(entry, signature)

    def run(buffers: Sequence[np.ndarray]) -> None:
        # the inputs were checked against the signature and the outputs allocated to it
        status = entry.call_unchecked(buffers)
        if status == STATUS_OUT_OF_MEMORY:
            raise ModelMemoryError(
                "out of memory: the model could not allocate its intermediate buffers"
            )
        if status != STATUS_OK:
            raise AssertionError(f"@{entry_symbol} returned the unknown status {status}")

    return LLVMCompiledModel(
        signature,
        run,
        target=target,
        llvm_ir=jit.llvm_ir,
        entry_symbol=entry_symbol,
        machine_code=jit.machine_code(),
    )


def _check_entry_abi(entry: JitFunction, signature: Signature) -> None:
    """The lowered entry takes one pointer per input then one per output and returns an
    i32 status; a mismatch is a bug in the lowering, not in the model."""
    count = len(signature.inputs) + len(signature.outputs)
    if entry.param_types != ("ptr",) * count or entry.return_type != "i32":
        raise AssertionError(
            f"@{entry.name} has parameters ({', '.join(entry.param_types)}) and returns "
            f"{entry.return_type}; expected {count} buffer pointers (inputs, then outputs) "
            "and an i32 status"
        )
    if entry.buffers is not None:
        flags = [spec is not None and spec.is_output for spec in entry.buffers]
        expected = [False] * len(signature.inputs) + [True] * len(signature.outputs)
        if flags != expected:
            raise AssertionError(
                f"@{entry.name} marks outputs at {flags}; expected inputs then outputs"
            )


__all__ = ["build_llvm", "check_heap_size"]
