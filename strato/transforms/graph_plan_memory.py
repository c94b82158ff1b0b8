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

A concatenation whose result's dimensions before its axis are all 1 (a batch of one
along the channels, blocked or not) lays each input out as one contiguous run of its
bytes. Such a `graph.concat` of intermediates (`concat_in_place_candidate`, which
graph-fuse-ops leaves in a kernel of its own) is done in place when it can be: each
input is placed at its run of the concatenation's bytes, so the kernel that computes an
input writes it where the concatenation reads it, and the concatenation, marked
`in_place`, copies nothing (convert-te-to-loops calls no kernel for it). Values placed
so form one block of the arena, reserved from the first of them is made to the last
read of any: a DenseNet block's concatenations, each of the features so far, are all
views of the last one's bytes, every feature written once. A concatenation that would
place a value at two different positions, or two written values at overlapping bytes,
copies as any kernel does.

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
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    ModuleOp,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from strato.dialects import graph
from strato.dialects.graph.base import is_run_time
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
IN_PLACE_ATTR = "in_place"
"""On a `graph.concat` (and the `te.call` it becomes): its inputs are placed at their
runs of its bytes, so it computes nothing."""


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
    in_place: list[Operation] = field(default_factory=list)
    """The concatenations done in place (see the module docstring)."""
    views: dict[SSAValue, int] = field(default_factory=dict)
    """Each value placed by them -> the number of its group, whose members may overlap
    (`live_overlap`)."""

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
    """The ops of `function` whose results the plan places: graph ops other than
    constants (kernels), and control flow (`graph.cond_call`, `graph.loop_call` and
    `graph.scan_call`, and `graph.if`, `graph.loop` and `graph.scan`, which lowering
    outlines into them), whose functions write their results into the caller's
    buffers."""
    return [
        op
        for op in function.body.block.ops
        if (isinstance(op, graph.GraphOp) and not isinstance(op, graph.ConstantOp))
        or isinstance(op, _CONTROL_OPS)
    ]


_CONTROL_OPS = (
    graph.CondCallOp, graph.IfOp, graph.LoopCallOp, graph.LoopOp, graph.ScanCallOp, graph.ScanOp,
)  # fmt: skip


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


def live_overlap(
    buffers: Sequence[Buffer], views: Mapping[SSAValue, int] | None = None
) -> tuple[Buffer, Buffer] | None:
    """Two buffers alive at the same time whose bytes overlap, if there are any. A
    value of `views` (a concatenation done in place, which nothing writes; mapped to its
    group: see the module docstring) may overlap another of the same group."""
    views = views or {}
    ordered = sorted(buffers, key=lambda b: b.start)
    for n, buffer in enumerate(ordered):
        for other in ordered[n + 1 :]:
            if other.start > buffer.end:
                break
            if (buffer.value in views or other.value in views) and views.get(
                buffer.value, -1
            ) == views.get(other.value, -2):
                continue
            if buffer.overlaps(other):
                return buffer, other
    return None


def concat_slices(op: Operation) -> list[int] | None:
    """The byte offset of each input's run in the result of `op`, when `op` is a
    concatenation that lays every input out as one contiguous, aligned run of its bytes
    (every dimension before its axis is 1); else None."""
    if not isinstance(op, graph.ConcatOp) or len(op.inputs) < 2:
        return None
    type_ = op.result.type
    if not isinstance(type_, TensorType) or any(d != 1 for d in type_.get_shape()[: op.axis_value]):
        return None
    offsets, offset = [], 0
    for value in op.inputs:
        size = tensor_bytes(value)
        if size == 0 or offset % ALIGNMENT != 0:
            return None
        offsets.append(offset)
        offset += size
    return offsets


def concat_in_place_candidate(op: Operation) -> bool:
    """Whether graph-plan-memory may do the concatenation `op` in place (see the module
    docstring): its inputs are distinct results of kernels of the same block, and
    neither they nor its result are function results."""
    if concat_slices(op) is None:
        return False
    assert isinstance(op, graph.ConcatOp)
    block = op.parent_block()
    if len(set(op.inputs)) != len(op.inputs):
        return False
    for value in (*op.inputs, op.result):
        owner = value.owner
        if (
            not isinstance(owner, graph.GraphOp)
            or isinstance(owner, graph.ConstantOp)
            or owner.parent_block() is not block
            or any(isinstance(use.operation, func.ReturnOp) for use in value.uses)
        ):
            return False
    return True


@dataclass
class _Group:
    """Values placed at fixed positions relative to each other (`position`, in bytes),
    by the concatenations done in place among them; `written` are those a kernel writes
    (the others are concatenations' results, views of them)."""

    position: dict[SSAValue, int]
    written: set[SSAValue]


def _in_place_groups(
    function: func.FuncOp, buffers: Mapping[SSAValue, Buffer]
) -> tuple[list[_Group], list[Operation]]:
    """The groups the concatenations of `function` done in place form, and those
    concatenations, in program order."""
    group_of: dict[SSAValue, _Group] = {}
    groups: list[_Group] = []
    done: list[Operation] = []
    for op in function.body.block.ops:
        if not concat_in_place_candidate(op):
            continue
        assert isinstance(op, graph.ConcatOp)
        slices = concat_slices(op)
        assert slices is not None
        inputs = list(op.inputs)
        if any(value not in buffers for value in (*inputs, op.result)):
            continue
        joined = {id(group_of[v]): group_of[v] for v in inputs if v in group_of}
        if len(joined) > 1:
            continue  # two groups already placed apart
        group = next(iter(joined.values()), None)
        if group is None:
            group = _Group({}, set())
            base = 0
        else:
            anchor = next(n for n, v in enumerate(inputs) if v in group_of)
            base = group.position[inputs[anchor]] - slices[anchor]
        if any(
            v in group_of and group.position[v] != base + offset
            for v, offset in zip(inputs, slices, strict=True)
        ):
            continue  # an input already placed elsewhere
        fresh = [(v, base + offset) for v, offset in zip(inputs, slices, strict=True) if v not in group_of]
        if any(
            _bytes_overlap(at, buffers[v].size, group.position[w], buffers[w].size)
            for v, at in fresh
            for w in group.written
        ):
            continue  # would write over a value of the group
        for v, at in fresh:
            group.position[v] = at
            group.written.add(v)
            group_of[v] = group
        group.position[op.result] = base
        group_of[op.result] = group
        if not joined:
            groups.append(group)
        done.append(op)
    return groups, done


def _bytes_overlap(a: int, a_size: int, b: int, b_size: int) -> bool:
    return a < b + b_size and b < a + a_size


def plan_memory(function: func.FuncOp) -> MemoryPlan:
    """Lifetimes of the intermediates of `function` and their arena offsets, and the
    concatenations done in place (see the module docstring)."""
    block = function.body.block
    position = {op: n for n, op in enumerate(block.ops)}
    returned = {v for op in block.ops if isinstance(op, func.ReturnOp) for v in op.operands}
    plan = MemoryPlan()
    for op in kernels_of(function):
        for result in op.results:
            if result in returned or is_run_time(result.type):
                continue  # a tensor of run-time size is allocated when its size is known
            start, end = lifetime(result, position)
            plan.buffers.append(Buffer(result, tensor_bytes(result), start, end))
    by_value = {b.value: b for b in plan.buffers}
    groups, plan.in_place = _in_place_groups(function, by_value)
    plan.views = {v: n for n, group in enumerate(groups) for v in group.position}
    # a group is placed as one buffer spanning its members, alive while any of them is
    grouped = {v for group in groups for v in group.position}
    units: list[tuple[Buffer, list[tuple[Buffer, int]]]] = []
    for buffer in plan.buffers:
        if buffer.value not in grouped:
            units.append((buffer, [(buffer, 0)]))
    for group in groups:
        low = min(group.position.values())
        members = [(by_value[v], at - low) for v, at in group.position.items()]
        span = Buffer(
            members[0][0].value,
            max(b.size + at for b, at in members),
            min(b.start for b, _ in members),
            max(b.end for b, _ in members),
        )
        units.append((span, members))
    placed: list[Buffer] = []
    for buffer, members in sorted(units, key=lambda u: (-u[0].size, u[0].start)):
        live = sorted((b for b in placed if b.alive_with(buffer)), key=lambda b: b.offset)
        offset = 0
        for other in live:
            if offset + _aligned(buffer.size) <= other.offset:
                break
            offset = max(offset, other.offset + _aligned(other.size))
        buffer.offset = offset
        placed.append(buffer)
        for member, at in members:
            member.offset = offset + at
    return plan


@dataclass(frozen=True)
class GraphPlanMemoryPass(ModulePass):
    """Plan a static arena with buffer reuse by liveness; record offsets and sizes."""

    name = "graph-plan-memory"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.walk() if isinstance(f, func.FuncOp) and f.body.blocks]:
            plan = plan_memory(function)
            offsets = {b.value: b.offset for b in plan.buffers}
            in_place = set(plan.in_place)
            for kernel in kernels_of(function):
                kernel.attributes[ARENA_OFFSETS_ATTR] = DenseArrayBase.from_list(
                    i64, [offsets.get(r, -1) for r in kernel.results]
                )
                if kernel in in_place:
                    kernel.attributes[IN_PLACE_ATTR] = UnitAttr()
                else:
                    kernel.attributes.pop(IN_PLACE_ATTR, None)
            function.attributes[ARENA_BYTES_ATTR] = IntegerAttr(plan.arena_bytes, i64)
            function.attributes[INTERMEDIATE_BYTES_ATTR] = IntegerAttr(
                plan.intermediate_bytes, i64
            )
