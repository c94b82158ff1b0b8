"""vta-inject-virtual-threads: interleave the virtual threads of a VTA program.

A `loop.for %t = 0 to T virtual_thread` loop is replaced by its body for every thread,
interleaved task by task so the load module can fill one thread's buffers while the GEMM
core works on another's (latency hiding, as TVM's InjectVirtualThread does for VTA):

- every `vta.buffer` of the body gets one slice per thread: thread t's copy starts at
  `offset + t * elements` (the template sizes buffers for one thread's share);
- each task (a run of vta ops on one module, with the index arithmetic between them, the
  `vta.dep_pop`s right before it and the `vta.dep_push`es right after it), each other run
  of tokens and each index computation is copied in place for thread 0, then thread 1,
  ..., with `%t` replaced by the thread's number;
- loops inside the body are shared: one loop whose body is interleaved the same way.

Run after vta-insert-dependence-tokens, so each copied task carries its own thread's
tokens. A body whose threads would need different loops (a nested virtual-thread loop) is
refused with a diagnostic.

Requires: vta-dialect functions. Leaves illegal: nothing (no virtual-thread loop is left).

Before:

    loop.for %t = 0 to 2 virtual_thread {
      %inp = vta.buffer offset 0 : memref<64x1x16xi8, #loop.scope<vta.inp>>
      vta.dep_pop "compute" -> "load"
      vta.load %x[%t], %inp[%c0] ...
      vta.dep_push "load" -> "compute"
      vta.dep_pop "load" -> "compute"
      vta.gemm ...
    }

After:

    %t0 = arith.constant 0 : index
    %t1 = arith.constant 1 : index
    %inp0 = vta.buffer offset 0 : memref<64x1x16xi8, #loop.scope<vta.inp>>
    %inp1 = vta.buffer offset 64 : memref<64x1x16xi8, #loop.scope<vta.inp>>
    vta.dep_pop "compute" -> "load"
    vta.load %x[%t0], %inp0[%c0] ...
    vta.dep_push "load" -> "compute"
    vta.dep_pop "compute" -> "load"
    vta.load %x[%t1], %inp1[%c0] ...
    vta.dep_push "load" -> "compute"
    vta.dep_pop "load" -> "compute"
    vta.gemm ... (thread 0)
    vta.dep_pop "load" -> "compute"
    vta.gemm ... (thread 1)
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntAttr, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from strato.diagnostics import StratoError
from strato.dialects import vta
from strato.dialects.loop import ForOp, LoopKind, YieldOp


def _is_vthread(op: Operation) -> bool:
    return isinstance(op, ForOp) and op.loop_kind == LoopKind.VIRTUAL_THREAD


def _is_index_arith(op: Operation) -> bool:
    return op.dialect_name() == "arith"


def _units(block: Block) -> list[tuple[str, list[Operation]]]:
    """The body as ("loop", [op]) and ("copy", ops) units, tasks with their tokens."""
    ops = [op for op in block.ops if not isinstance(op, YieldOp)]
    units: list[tuple[str, list[Operation]]] = []
    i = 0
    while i < len(ops):
        op = ops[i]
        if isinstance(op, ForOp):
            if _is_vthread(op):
                raise StratoError("virtual-thread loops cannot nest", op=op)
            units.append(("loop", [op]))
            i += 1
            continue
        if isinstance(op, vta.DepPopOp | vta.DepPushOp):
            j = i
            while j < len(ops) and isinstance(ops[j], vta.DepPopOp | vta.DepPushOp):
                j += 1
            pops_then_task = (
                all(isinstance(o, vta.DepPopOp) for o in ops[i:j])
                and j < len(ops)
                and vta.module_of(ops[j]) is not None
            )
            if not pops_then_task:
                units.append(("copy", ops[i:j]))
                i = j
                continue
            op = ops[j]
            start, i = i, j
        else:
            start = i
        end = i + 1
        module = vta.module_of(op)
        if module is not None:
            # a task is a run of ops on one module (index arithmetic between them included):
            # no token orders them, so one thread's run is not split by another's
            while end < len(ops) and (vta.module_of(ops[end]) == module or _is_index_arith(ops[end])):
                end += 1
            while end > i + 1 and vta.module_of(ops[end - 1]) is None:
                end -= 1  # trailing arithmetic belongs to the next unit
            while end < len(ops) and isinstance(ops[end], vta.DepPushOp):
                end += 1
        units.append(("copy", ops[start:end]))
        i = end
    return units


def _interleave(block: Block, maps: list[dict[SSAValue, SSAValue]], dest: Block, before: Operation | None) -> None:
    def add(op: Operation) -> None:
        if before is None:
            dest.add_op(op)
        else:
            Rewriter.insert_op(op, InsertPoint.before(before))

    for kind, ops in _units(block):
        if kind == "loop":
            (loop,) = ops
            assert isinstance(loop, ForOp)
            shared, body = ForOp.build(loop.lb.data, loop.bound, loop.step.data, loop.loop_kind,
                                       loop.axis.data if loop.axis is not None else None)
            shared.attributes |= loop.attributes
            for mapping in maps:
                mapping[loop.induction_var] = body.args[0]
            add(shared)
            _interleave(loop.body.block, maps, body, body.last_op)
            continue
        for thread, mapping in enumerate(maps):
            for op in ops:
                copy = op.clone(value_mapper=mapping)
                if isinstance(copy, vta.BufferOp):
                    copy.properties["offset"] = IntAttr(copy.offset.data + thread * copy.elements)
                add(copy)


def inject_virtual_threads(loop: ForOp) -> None:
    """Replace one virtual-thread loop by its interleaved threads."""
    if loop.lb.data != 0 or loop.step.data != 1:
        raise StratoError("a virtual-thread loop must run from 0 by 1", op=loop)
    maps: list[dict[SSAValue, SSAValue]] = []
    for thread in range(loop.trip_count):
        constant = arith.ConstantOp(IntegerAttr(thread, IndexType()))
        constant.result.name_hint = f"thread{thread}"
        Rewriter.insert_op(constant, InsertPoint.before(loop))
        maps.append({loop.induction_var: constant.result})
    parent = loop.parent_block()
    assert parent is not None
    _interleave(loop.body.block, maps, parent, loop)
    Rewriter.erase_op(loop)


@dataclass(frozen=True)
class VtaInjectVirtualThreadsPass(ModulePass):
    """Interleave the threads of every virtual-thread loop of vta functions."""

    name = "vta-inject-virtual-threads"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.ops:
            if not isinstance(function, func.FuncOp):
                continue
            loops = [o for o in function.walk() if _is_vthread(o)]
            for loop in loops:
                if any(_is_vthread(p) for p in _ancestors(loop)):
                    raise StratoError("virtual-thread loops cannot nest", op=loop)
            for loop in loops:
                inject_virtual_threads(loop)


def _ancestors(op: Operation):
    parent = op.parent_op()
    while parent is not None:
        yield parent
        parent = parent.parent_op()


__all__ = ["VtaInjectVirtualThreadsPass", "inject_virtual_threads"]
