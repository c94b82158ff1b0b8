"""graph-fuse-ops: group graph ops into kernels by their fusion pattern kinds.

The rules are those of the TVM paper:
- chains of injective (and broadcast) ops fuse into one group;
- injective ops fuse into the input of a reduction (the reduction ends the group);
- element-wise ops fuse into the output of an out-elementwise-fusable op (conv2d, dense,
  matmul), which anchors the group;
- opaque ops (and constants) are never fused;
- an op that moves run-time dimensions away from the front of a tensor (a transpose of
  [batch, seq, 64] to [batch, 64, seq]) does not join an anchored group, whose kernel
  then runs as blocks of rows of static sizes (convert-graph-to-te's `row_blocks`);
- a concatenation graph-plan-memory may do in place (`concat_in_place_candidate`: its
  inputs laid out as runs of its bytes) is a kernel of its own, so that their kernels
  can write them there.

An op joins the group of the producer of one of its operands only when that producer's
result is used by this op alone, so no intermediate of a group is needed outside it. A
multi-result op (split) may still feed ops outside its group; an op that reads such an
op's output through them does not join the group, which would otherwise depend on itself. Each group of two or more ops becomes a `graph.fused` op
whose body holds the ops; convert-graph-to-te turns it into one te primitive (one kernel).

Requires: functions of graph ops. Leaves illegal: nothing (it only groups).

Before:

    %y = graph.dense %x, %w, %b : (...) -> tensor<1x8xf32>
    %r = graph.relu %y : tensor<1x8xf32>

After:

    %r = graph.fused "dense_relu" out_elemwise_fusable (%x, %w, %b) : (...) -> tensor<1x8xf32> {
    ^bb0(%x_1: ..., %w_1: ..., %b_1: ...):
      %y = graph.dense %x_1, %w_1, %b_1 : (...) -> tensor<1x8xf32>
      %r = graph.relu %y : tensor<1x8xf32>
      graph.yield %r : tensor<1x8xf32>
    }
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import IsTerminator

from strato.dialects import graph
from strato.dialects.graph import PatternKind, pattern_kind_of
from strato.dialects.graph.dims import leads_with_run_time_dims, run_time_axes
from strato.transforms.graph_plan_memory import concat_in_place_candidate

_ELEMENTWISE = (PatternKind.INJECTIVE, PatternKind.BROADCAST)


@dataclass(eq=False)
class FusionGroup:
    """Ops that become one kernel, in program order, and the kind of the group."""

    ops: list[Operation] = field(default_factory=list)
    kind: PatternKind = PatternKind.INJECTIVE
    # a reduction ends its group: nothing fuses after it
    closed: bool = False

    def accepts(self, op: Operation) -> bool:
        """May `op` (a consumer of this group's last result) join the group?"""
        if self.closed:
            return False
        kind = pattern_kind_of(op)
        if kind in _ELEMENTWISE:
            if self.kind == PatternKind.OUT_ELEMWISE_FUSABLE and (
                _left_to_its_reader(op) or _moves_rows_inward(op)
            ):
                return False
            return self.kind in (*_ELEMENTWISE, PatternKind.OUT_ELEMWISE_FUSABLE)
        if kind == PatternKind.REDUCTION:
            return self.kind in _ELEMENTWISE
        if isinstance(op, _READS_THROUGH_SLICES):
            return all(isinstance(member, graph.SliceOp) for member in self.ops)
        if isinstance(op, graph.BlockedConvOp):
            return all(is_unit_block_view(member) for member in self.ops)
        return False

    def add(self, op: Operation) -> None:
        kind = pattern_kind_of(op)
        if not self.ops or kind == PatternKind.OUT_ELEMWISE_FUSABLE:
            self.kind = kind
        elif kind == PatternKind.REDUCTION:
            self.kind = PatternKind.REDUCTION
        if kind in (PatternKind.REDUCTION, PatternKind.OPAQUE):
            self.closed = True
        self.ops.append(op)

    @property
    def label(self) -> str:
        return group_label(self.ops)


def group_label(ops: Sequence[Operation]) -> str:
    """The label of a group of `ops` (its kernel's name): their names without the
    dialect, joined by underscores."""
    return "_".join(op.name.split(".", 1)[1] for op in ops)


_READS_THROUGH_SLICES = (graph.BlockedPoolOp,)
"""Anchors whose input may be a slice of their group: the slice is an index map their
kernel reads through (a pool's windows read the kept columns of a wider tensor)."""


def is_unit_block_view(op: Operation) -> bool:
    """Whether `op` is a layout transform that only adds or drops blocks of one
    (NCHW -> NCHW1c: graph-alter-layout's convolutions that read an NCHW input as it
    is). It holds the same bytes as its input: it starts a group of its own, which the
    convolution reading it joins, and its kernel reads the input in place."""
    if not isinstance(op, graph.LayoutTransformOp):
        return False
    source, target = op.source, op.target
    return source.primal_axes == target.primal_axes and all(
        source.block(axis) == target.block(axis) == 1 for axis in source.primal_axes
    )


def _left_to_its_reader(op: Operation) -> bool:
    """Whether `op`, a slice of an anchored group's result (a wide convolution's extra
    columns dropped), is better in its reader's group: the tile copy-out of the anchor
    cannot fold a slice, so it would be a pass of its own over the output, while an
    element-wise op or a pool reading it inlines it as an index map."""
    if not isinstance(op, graph.SliceOp):
        return False
    uses = list(op.result.uses)
    if len(uses) != 1:
        return False
    reader = uses[0].operation
    return pattern_kind_of(reader) in _ELEMENTWISE or isinstance(reader, _READS_THROUGH_SLICES)


def _moves_rows_inward(op: Operation) -> bool:
    """Whether `op` (a transpose) reads a tensor that leads with its run-time dimensions
    and writes one that does not. It starts a group of its own rather than join an
    anchored group: a kernel whose outputs lead with their run-time dimensions (rows)
    runs as blocks of rows of static sizes, scheduled as a static compile's
    (convert-graph-to-te's `row_blocks`), which a result with them inside forbids."""
    result = op.results[0] if op.results else None
    if result is None or not run_time_axes(result) or leads_with_run_time_dims(result):
        return False
    return any(leads_with_run_time_dims(operand) for operand in op.operands)


def plan_fusion(block: Block) -> list[FusionGroup]:
    """Partition the graph ops of `block` into fusion groups, in program order."""
    group_of: dict[Operation, FusionGroup] = {}
    groups: list[FusionGroup] = []
    for op in block.ops:
        if not isinstance(op, graph.GraphOp) or isinstance(op, graph.ConstantOp):
            continue
        in_place = concat_in_place_candidate(op)
        target = None if in_place else _choose_group(op, group_of)
        if target is None:
            target = FusionGroup()
            groups.append(target)
        target.add(op)
        if in_place:
            # a kernel of its own, which graph-plan-memory may make a no-op
            target.closed = True
        group_of[op] = target
    return groups


def _choose_group(op: Operation, group_of: dict[Operation, FusionGroup]) -> FusionGroup | None:
    if pattern_kind_of(op) == PatternKind.OPAQUE or is_unit_block_view(op):
        return None
    candidates: list[FusionGroup] = []
    for operand in op.operands:
        producer = operand.owner
        if not isinstance(producer, Operation) or producer not in group_of:
            continue
        group = group_of[producer]
        # the producer's result must have no other use, and must be the group's last op
        if not _used_only_by(operand, op) or group.ops[-1] is not producer:
            continue
        if group.accepts(op) and group not in candidates and not _closes_a_cycle(op, group):
            candidates.append(group)
    if not candidates:
        return None
    # prefer the group anchored by a conv/dense, so a residual add joins the conv
    candidates.sort(key=lambda g: g.kind != PatternKind.OUT_ELEMWISE_FUSABLE)
    return candidates[0]


def _used_only_by(value: SSAValue, user: Operation) -> bool:
    return all(use.operation is user for use in value.uses)


def _closes_a_cycle(op: Operation, group: FusionGroup) -> bool:
    """Would `op` joining `group` make the group both feed and read an outside op? A
    multi-result member (split) can have a result used outside the group; if `op` reads,
    through ops outside the group, such a result, the fused op would depend on itself."""
    members = set(group.ops)
    escapes = any(
        use.operation not in members and use.operation is not op
        for member in group.ops
        for result in member.results
        for use in result.uses
    )
    if not escapes:
        return False
    pending = [
        v.owner for v in op.operands if isinstance(v.owner, Operation) and v.owner not in members
    ]
    seen: set[Operation] = set()
    while pending:
        producer = pending.pop()
        if producer in seen or producer.parent_block() is not op.parent_block():
            continue
        if producer in members:
            return True
        seen.add(producer)
        pending.extend(v.owner for v in producer.operands if isinstance(v.owner, Operation))
    return False


def outline_group(group: FusionGroup) -> graph.FusedOp:
    """Replace the ops of `group` by one `graph.fused` op holding them."""
    members = set(group.ops)
    inputs: list[SSAValue] = []
    for op in group.ops:
        for operand in op.operands:
            if operand.owner not in members and operand not in inputs:
                inputs.append(operand)
    outputs = [
        result
        for op in group.ops
        for result in op.results
        if any(use.operation not in members for use in result.uses)
    ]
    block = Block(arg_types=[v.type for v in inputs])
    for arg, value in zip(block.args, inputs):
        arg.name_hint = value.name_hint
    last = group.ops[-1]
    fused = graph.FusedOp(
        group.label, group.kind, inputs, [v.type for v in outputs], Region(block)
    )
    last.parent_block().insert_op_after(fused, last)  # type: ignore[union-attr]
    for old, new in zip(outputs, fused.outputs):
        new.name_hint = old.name_hint
        old.replace_uses_with_if(new, lambda use: use.operation not in members)
    for op in group.ops:
        op.detach()
        block.add_op(op)
    for arg, value in zip(block.args, inputs):
        value.replace_uses_with_if(arg, lambda use: use.operation in members)
    block.add_op(graph.YieldOp(outputs))
    return fused


@dataclass(frozen=True)
class GraphFuseOpsPass(ModulePass):
    """Group graph ops into `graph.fused` kernels by TVM's pattern-kind rules."""

    name = "graph-fuse-ops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = [f for f in op.walk() if isinstance(f, func.FuncOp) and f.body.blocks]
        for function in functions:
            for group in plan_fusion(function.body.block):
                if len(group.ops) > 1:
                    outline_group(group)
            order_after_producers(function.body.block)


def order_after_producers(block: Block) -> None:
    """Move ops so that each comes after the producers of its operands, otherwise keeping
    program order (the terminator stays last).

    A fused op takes the place of its group's last member, but an early member (a split)
    may feed ops outside the group that come before that place: split -> relu (joins) ->
    neg on the other half (outside) -> exp of the relu (joins) puts the fused op after
    the neg that reads it. Graph ops have no side effects, so any topological order
    computes the same values.
    """
    ops = list(block.ops)
    position = {op: index for index, op in enumerate(ops)}
    if _in_def_use_order(ops, position):
        return
    terminator = ops[-1] if ops and ops[-1].has_trait(IsTerminator) else None
    producers = {
        op: {v.owner for v in op.operands if v.owner in position and v.owner is not op}
        for op in ops
        if op is not terminator
    }
    users: dict[Operation, list[Operation]] = {op: [] for op in producers}
    for op, needed in producers.items():
        for producer in needed:
            users[producer].append(op)
    ready = [position[op] for op, needed in producers.items() if not needed]
    heapq.heapify(ready)
    order: list[Operation] = []
    while ready:
        op = ops[heapq.heappop(ready)]
        order.append(op)
        for user in users[op]:
            producers[user].discard(op)
            if not producers[user]:
                heapq.heappush(ready, position[user])
    if len(order) != len(producers):
        raise ValueError("graph-fuse-ops: the fused function has a cycle (internal error)")
    for op in order + ([terminator] if terminator is not None else []):
        op.detach()
        block.add_op(op)


def _in_def_use_order(ops: list[Operation], position: dict[Operation, int]) -> bool:
    """Whether every operand produced in the block is produced before its use."""
    defined: set[SSAValue] = set()
    for op in ops:
        if any(v.owner in position and v not in defined for v in op.operands):
            return False
        defined.update(op.results)
    return True
