"""loop-dedup-kernels: compute each distinct kernel once.

Requires: a loop-level module (kernels: `func.func` with `loop.kernel`, called by the
entry with `func.call`). Leaves illegal: nothing.

Kernels that compute the same thing, equal up to the names of the kernel and of its
values (`strato.schedule.workload.kernel_digest`: the structure `kernel_key`, the tuner's
task key, prints, hashed without printing it), become one: the
first of them, which every call site of the others then calls. ResNet-18's repeated
blocks are 24 kernels of 19 distinct ones, MobileNetV2's 55 of 33, and the zoo LSTM's two
layers one kernel: scheduling, lowering and compiling the copies was a quarter to a half
of the work after the loop level. A kernel that reads a global is kept apart from one
reading another global (the symbol is part of its text), so merged kernels never read
different data.

Before:

    func.func @relu_1(%a: memref<64xf32>, %o: memref<64xf32> {loop.output}) attributes {loop.kernel} {..}
    func.func @relu_2(%b: memref<64xf32>, %p: memref<64xf32> {loop.output}) attributes {loop.kernel} {..}
    func.func @main(..) {
      func.call @relu_1(%x, %y) : (..) -> ()
      func.call @relu_2(%y, %z) : (..) -> ()
    }

After:

    func.func @relu_1(%a: memref<64xf32>, %o: memref<64xf32> {loop.output}) attributes {loop.kernel} {..}
    func.func @main(..) {
      func.call @relu_1(%x, %y) : (..) -> ()
      func.call @relu_1(%y, %z) : (..) -> ()
    }
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from strato.dialects.loop import KERNEL_ATTR
from strato.schedule.workload import kernel_digest


def dedup_kernels(module: ModuleOp) -> dict[str, str]:
    """Merge the kernels of `module` that are equal up to names, in place; returns each
    removed kernel's name -> the kernel its calls now go to."""
    # Kernels equal up to names have the same type and top-level ops: only those that
    # share these with another kernel need their key (which prints the kernel).
    kernels = [
        op
        for op in module.ops
        if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes
    ]
    return merge_equal_symbols(module, kernels, _signature, kernel_digest, func.CallOp)


def merge_equal_symbols(
    module: ModuleOp,
    symbols: Sequence[Operation],
    signature: Callable[[Any], Hashable],
    key: Callable[[Any], str],
    call: type[Operation],
) -> dict[str, str]:
    """Merge the `symbols` (top-level ops of `module` with a `sym_name`) whose `key` is
    equal into the first of them: every `call` op (with a `callee`) of the others then
    calls it, and they are erased; returns each removed symbol's name -> the one its
    calls now go to. `key` is asked only of symbols sharing their cheap `signature`
    with another one."""
    signatures = Counter(signature(op) for op in symbols)
    first: dict[str, str] = {}
    replaced: dict[str, str] = {}
    duplicates: list[Operation] = []
    for op in symbols:
        if signatures[signature(op)] == 1:
            continue
        name = op.sym_name.data
        representative = first.setdefault(key(op), name)
        if representative != name:
            replaced[name] = representative
            duplicates.append(op)
    if not replaced:
        return replaced
    for op in module.walk():
        if isinstance(op, call) and op.callee.root_reference.data in replaced:
            op.callee = SymbolRefAttr(replaced[op.callee.root_reference.data])
    for duplicate in duplicates:
        module.body.block.detach_op(duplicate)
        duplicate.erase()
    return replaced


def _signature(kernel: func.FuncOp) -> tuple:
    """What two kernels equal up to names share, cheap to compute: the function type
    and the names of the body's top-level ops."""
    return kernel.function_type, tuple(op.name for op in kernel.body.block.ops)


@dataclass(frozen=True)
class LoopDedupKernelsPass(ModulePass):
    """Merge kernels equal up to names into one, called from every site (see the module
    docstring)."""

    name = "loop-dedup-kernels"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        dedup_kernels(op)
