"""What a compiled model may ask of the machine at most.

A model whose buffers could never fit a 64-bit address space is refused at compile time
with a diagnostic naming the buffer; one that fits this bound but not the machine's
memory fails cleanly when called (`ModelMemoryError`).

    check_buffer_sizes(loop_module)      # StratoError naming the kernel of a huge buffer
"""

from __future__ import annotations

import math

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Attribute, Operation

from strato.diagnostics import StratoError

MAX_BUFFER_BYTES = 1 << 47
"""Most bytes a model may ask for at once (a buffer, or all its heap buffers together):
the user address space of a 64-bit host (x86-64 and AArch64 give user code 47-48 bits).
A model that asks for more can never run anywhere and is refused at compile time;
one that fits this bound but not the machine's memory fails cleanly when called."""


def check_buffer_sizes(module: ModuleOp) -> None:
    """Refuse a loop-level module with a buffer larger than `MAX_BUFFER_BYTES` (huge pads,
    dilations or intermediate shapes), naming the function that holds it."""
    for op in module.walk():
        if isinstance(op, memref.AllocOp | memref.AllocaOp | memref.GlobalOp):
            type_ = op.type if isinstance(op, memref.GlobalOp) else op.memref.type
        elif isinstance(op, func.FuncOp):
            for type_ in op.function_type.inputs.data:
                _check_memref_size(op, type_)
            continue
        else:
            continue
        _check_memref_size(op, type_)


def _check_memref_size(op: Operation, type_: Attribute) -> None:
    if not isinstance(type_, MemRefType):
        return
    shape = type_.get_shape()
    if any(dim < 0 for dim in shape):
        return
    width = type_.element_type.bitwidth if hasattr(type_.element_type, "bitwidth") else 64
    size = math.prod(shape) * max(1, width // 8)
    if size <= MAX_BUFFER_BYTES:
        return
    parent = op if isinstance(op, func.FuncOp) else op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    where = f" in kernel '{parent.sym_name.data}'" if parent is not None else ""
    raise StratoError(
        f"a buffer of shape {list(shape)}{where} needs {size} bytes, more than a 64-bit "
        f"address space holds ({MAX_BUFFER_BYTES} bytes); check the model's pads, "
        "dilations and shapes"
    )


__all__ = ["MAX_BUFFER_BYTES", "check_buffer_sizes"]
