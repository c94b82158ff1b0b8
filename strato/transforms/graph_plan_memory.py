"""graph-plan-memory: a static arena for a function's intermediate tensors.

Every tensor a kernel produces that is not a function result is an intermediate. Its
lifetime runs from the kernel that defines it to its last user. Intermediates whose
lifetimes do not overlap may share bytes: offsets are chosen greedily, largest tensor
first, at the lowest offset that does not overlap a tensor alive at the same time
(aligned to 64 bytes). The plan is recorded on the IR:

- each kernel op gets `arena_offsets = array<i64: ...>`, one offset per result (-1 for
  a function result, which lives in a caller-provided buffer);
- the function gets `arena_bytes` (the peak: the arena's size) and
  `intermediate_bytes` (the sum of all intermediates, what allocating each separately
  would cost).

Requires: functions of graph ops (run after graph-fuse-ops so kernels are groups).
Leaves illegal: nothing.

Before:

    func.func @f(%x: tensor<256xf32>) -> tensor<256xf32> {
      %a = graph.relu %x : tensor<256xf32>
      %b = graph.relu %a : tensor<256xf32>
      %c = graph.relu %b : tensor<256xf32>
      func.return %c : tensor<256xf32>
    }

After:

    func.func @f(%x: tensor<256xf32>) -> tensor<256xf32> attributes {arena_bytes = 2048 : i64, intermediate_bytes = 2048 : i64} {
      %a = graph.relu %x {arena_offsets = array<i64: 0>} : tensor<256xf32>
      %b = graph.relu %a {arena_offsets = array<i64: 1024>} : tensor<256xf32>
      %c = graph.relu %b {arena_offsets = array<i64: -1>} : tensor<256xf32>
      func.return %c : tensor<256xf32>
    }
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from strato.dialects import graph
from strato.dialects.tensor_types import numpy_dtype

ALIGNMENT = 64


@dataclass
class Buffer:
    value: SSAValue
    size: int
    start: int  # index of the defining kernel
    end: int  # index of the last kernel that reads it
    offset: int = -1


@dataclass
class MemoryPlan:
    buffers: list[Buffer] = field(default_factory=list)

    @property
    def arena_bytes(self) -> int:
        return max((b.offset + _aligned(b.size) for b in self.buffers), default=0)

    @property
    def intermediate_bytes(self) -> int:
        return sum(b.size for b in self.buffers)


def _aligned(size: int) -> int:
    return (size + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def tensor_bytes(value: SSAValue) -> int:
    type_ = value.type
    assert isinstance(type_, TensorType)
    count = 1
    for dim in type_.get_shape():
        count *= dim
    return count * numpy_dtype(type_).itemsize


def kernels_of(function: func.FuncOp) -> list[Operation]:
    """The ops of `function` that become kernels: graph ops other than constants."""
    return [
        op
        for op in function.body.block.ops
        if isinstance(op, graph.GraphOp) and not isinstance(op, graph.ConstantOp)
    ]


def plan_memory(function: func.FuncOp) -> MemoryPlan:
    """Lifetimes of the intermediates of `function` and their arena offsets."""
    kernels = kernels_of(function)
    position = {op: n for n, op in enumerate(kernels)}
    returned = {v for op in function.body.block.ops if isinstance(op, func.ReturnOp) for v in op.operands}
    plan = MemoryPlan()
    for n, op in enumerate(kernels):
        for result in op.results:
            if result in returned:
                continue
            readers = [position[u.operation] for u in result.uses if u.operation in position]
            plan.buffers.append(Buffer(result, tensor_bytes(result), n, max(readers, default=n)))
    placed: list[Buffer] = []
    for buffer in sorted(plan.buffers, key=lambda b: (-b.size, b.start)):
        live = sorted(
            (b for b in placed if b.start <= buffer.end and buffer.start <= b.end),
            key=lambda b: b.offset,
        )
        offset = 0
        for other in live:
            if offset + _aligned(buffer.size) <= other.offset:
                break
            offset = max(offset, other.offset + _aligned(other.size))
        buffer.offset = offset
        placed.append(buffer)
    return plan


@dataclass(frozen=True)
class GraphPlanMemoryPass(ModulePass):
    """Plan a static arena with buffer reuse by liveness; record offsets and sizes."""

    name = "graph-plan-memory"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.walk() if isinstance(f, func.FuncOp) and f.body.blocks]:
            plan = plan_memory(function)
            offsets = {b.value: b.offset for b in plan.buffers}
            for kernel in kernels_of(function):
                kernel.attributes["arena_offsets"] = DenseArrayBase.from_list(
                    i64, [offsets.get(r, -1) for r in kernel.results]
                )
            function.attributes["arena_bytes"] = IntegerAttr(plan.arena_bytes, i64)
            function.attributes["intermediate_bytes"] = IntegerAttr(
                plan.intermediate_bytes, i64
            )
