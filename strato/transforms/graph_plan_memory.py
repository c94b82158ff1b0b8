"""graph-plan-memory: a static arena for a function's intermediate tensors.

Every tensor a kernel produces that is not a function result is an intermediate. Its
lifetime runs from the op that defines it to its last user in the function's block (a
kernel never writes a buffer it reads: its inputs and outputs are alive together).
Intermediates whose lifetimes do not overlap may share bytes: offsets are chosen
greedily, largest tensor first, at the lowest offset that does not overlap a tensor
alive at the same time (aligned to 64 bytes). The plan is recorded on the IR:

- each kernel op gets `arena_offsets = array<i64: ...>`, one offset per result (-1 for
  a function result, which lives in a caller-provided buffer);
- the function gets `arena_bytes` (the peak: the arena's size) and
  `intermediate_bytes` (the sum of all intermediates, what allocating each separately
  would cost).

The plan is what runs: convert-graph-to-te carries `arena_offsets` to the `te.call`s,
and convert-te-to-loops allocates one arena of `arena_bytes` in the function and gives
each intermediate a `memref.view` of it at its offset (checking the plan again there).

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from strato.dialects import graph
from strato.dialects.tensor_types import numpy_dtype

ALIGNMENT = 64
"""Alignment of every offset in the arena (and of the arena itself): a cache line."""

ARENA_OFFSETS_ATTR = "arena_offsets"
"""On a kernel op (and the `te.call` it becomes): the arena offset of each result, -1
for a result that lives outside the arena."""
ARENA_BYTES_ATTR = "arena_bytes"
"""On a function: the size of its arena in bytes."""
INTERMEDIATE_BYTES_ATTR = "intermediate_bytes"
"""On a function: the bytes its intermediates would take if allocated one by one."""


@dataclass
class Buffer:
    value: SSAValue
    size: int
    start: int  # position of the defining op in the function's block
    end: int  # position of its last user there
    offset: int = -1

    def alive_with(self, other: Buffer) -> bool:
        return self.start <= other.end and other.start <= self.end

    def overlaps(self, other: Buffer) -> bool:
        """Whether the bytes of the two buffers overlap (empty buffers overlap nothing)."""
        if self.size == 0 or other.size == 0:
            return False
        return self.offset < other.offset + other.size and other.offset < self.offset + self.size


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


def lifetime(value: SSAValue, position: Mapping[Operation, int]) -> tuple[int, int]:
    """The positions (in `position`, the ops of one block) of the op defining `value`
    and of its last user; a user nested in a region counts at its ancestor in the
    block."""
    start = position[value.owner]  # type: ignore[index]
    end = start
    for use in value.uses:
        user: Operation | None = use.operation
        while user is not None and user not in position:
            user = user.parent_op()
        if user is not None:
            end = max(end, position[user])
    return start, end


def live_overlap(buffers: Sequence[Buffer]) -> tuple[Buffer, Buffer] | None:
    """Two buffers alive at the same time whose bytes overlap, if there are any."""
    ordered = sorted(buffers, key=lambda b: b.start)
    for n, buffer in enumerate(ordered):
        for other in ordered[n + 1 :]:
            if other.start > buffer.end:
                break
            if buffer.overlaps(other):
                return buffer, other
    return None


def plan_memory(function: func.FuncOp) -> MemoryPlan:
    """Lifetimes of the intermediates of `function` and their arena offsets."""
    block = function.body.block
    position = {op: n for n, op in enumerate(block.ops)}
    returned = {v for op in block.ops if isinstance(op, func.ReturnOp) for v in op.operands}
    plan = MemoryPlan()
    for op in kernels_of(function):
        for result in op.results:
            if result in returned:
                continue
            start, end = lifetime(result, position)
            plan.buffers.append(Buffer(result, tensor_bytes(result), start, end))
    placed: list[Buffer] = []
    for buffer in sorted(plan.buffers, key=lambda b: (-b.size, b.start)):
        live = sorted((b for b in placed if b.alive_with(buffer)), key=lambda b: b.offset)
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
                kernel.attributes[ARENA_OFFSETS_ATTR] = DenseArrayBase.from_list(
                    i64, [offsets.get(r, -1) for r in kernel.results]
                )
            function.attributes[ARENA_BYTES_ATTR] = IntegerAttr(plan.arena_bytes, i64)
            function.attributes[INTERMEDIATE_BYTES_ATTR] = IntegerAttr(
                plan.intermediate_bytes, i64
            )
