"""vta-insert-dependence-tokens: order VTA's load, compute and store modules with tokens.

The three modules run concurrently and share buffers pairwise: load writes vta.inp /
vta.wgt that compute reads, compute writes vta.acc that store reads. For each neighbour
pair (load, compute) and (compute, store) the pass looks at the tasks (vta ops) of those
two modules in program order and, between two consecutive tasks on different modules,
makes the second wait for the first: `vta.dep_push a -> b` right after the first and
`vta.dep_pop a -> b` right before the second. That covers read-after-write (compute
after the load that filled its buffer, store after the compute that produced its tile)
and write-after-read (a load after the compute that last read the buffer it overwrites).

- A `loop.for` in a sequence counts as one item: its first and last task (of the pair)
  are the item's ends, the push goes after the loop and the pop before it.
- Loop-carried: when a loop body's last task and first task are on different modules,
  the last pushes to the first of the next iteration (push after the last item of the
  body, pop before the first); the tokens the first iteration pops are pushed before the
  loop and those the last iteration leaves are popped after it.
- A `virtual_thread` loop is transparent: its body's items join the enclosing sequence,
  so their tokens are per thread once `vta-inject-virtual-threads` copies each task with
  its tokens. Where a push and its pop are copied a different number of times (one item
  inside a virtual-thread loop of T threads and one outside), the side copied fewer
  times pushes or pops T times so every queue stays balanced.

Requires: vta-dialect functions without tokens (`vta.dep_push`/`vta.dep_pop` are
refused). Leaves illegal: nothing; the emitter adds the final synchronize.

Before:

    loop.for %i = 0 to 4 {
      vta.load %x[%i], %inp[%c0] ...
      vta.gemm %acc, %inp, %wgt ...
      vta.store %acc[%c0], %out[%i] ...
    }

After:

    vta.dep_push "compute" -> "load"
    vta.dep_push "store" -> "compute"
    loop.for %i = 0 to 4 {
      vta.dep_pop "compute" -> "load"
      vta.load %x[%i], %inp[%c0] ...
      vta.dep_push "load" -> "compute"
      vta.dep_pop "load" -> "compute"
      vta.dep_pop "store" -> "compute"
      vta.gemm %acc, %inp, %wgt ...
      vta.dep_push "compute" -> "load"
      vta.dep_push "compute" -> "store"
      vta.dep_pop "compute" -> "store"
      vta.store %acc[%c0], %out[%i] ...
      vta.dep_push "store" -> "compute"
    }
    vta.dep_pop "compute" -> "load"
    vta.dep_pop "store" -> "compute"
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from strato.diagnostics import StratoError
from strato.dialects import vta
from strato.dialects.loop import ForOp, LoopKind

PAIRS = (("load", "compute"), ("compute", "store"))


@dataclass
class _Item:
    """A task or a loop in a sequence: its op, its pair-module ends, its copy count."""

    op: Operation
    first: str
    last: str
    copies: int


def _is_vthread(op: Operation) -> bool:
    return isinstance(op, ForOp) and op.loop_kind == LoopKind.VIRTUAL_THREAD


class _Inserter:
    def __init__(self, pair: tuple[str, str]):
        self.pair = pair
        self.edits: list[tuple[str, Operation, vta.DepPushOp | vta.DepPopOp]] = []

    def push_after(self, op: Operation, source: str, target: str, count: int) -> None:
        for _ in range(count):
            self.edits.append(("after", op, vta.DepPushOp(source, target)))

    def pop_before(self, op: Operation, source: str, target: str, count: int) -> None:
        for _ in range(count):
            self.edits.append(("before", op, vta.DepPopOp(source, target)))

    def items(self, block: Block, copies: int = 1) -> list[_Item]:
        """The items of `block` with tasks of the pair, virtual-thread bodies spliced in."""
        found: list[_Item] = []
        for op in block.ops:
            if _is_vthread(op):
                found += self.items(op.body.block, copies * op.trip_count)
            elif isinstance(op, ForOp):
                inner = self.sequence(op.body.block)
                if inner is not None:
                    found.append(_Item(op, inner[0], inner[1], copies))
            elif vta.module_of(op) in self.pair:
                found.append(_Item(op, vta.module_of(op), vta.module_of(op), copies))
        return found

    def sequence(self, block: Block) -> tuple[str, str] | None:
        """Insert the tokens of a block (and, for a loop body, the carried ones); its ends."""
        items = self.items(block)
        if not items:
            return None
        for x, y in zip(items, items[1:]):
            self.link(x, y)
        loop = block.parent_op()
        if isinstance(loop, ForOp) and not _is_vthread(loop) and items[-1].last != items[0].first:
            first, last = items[0], items[-1]
            count = max(first.copies, last.copies)
            self.link(last, first)
            for _ in range(count):
                self.edits.append(("before", loop, vta.DepPushOp(last.last, first.first)))
                self.edits.append(("after", loop, vta.DepPopOp(last.last, first.first)))
        return items[0].first, items[-1].last

    def link(self, x: _Item, y: _Item) -> None:
        if x.last == y.first:
            return
        self.push_after(x.op, x.last, y.first, max(1, y.copies // x.copies))
        self.pop_before(y.op, x.last, y.first, max(1, x.copies // y.copies))

    def apply(self) -> None:
        # pushes after an op keep their order; pops before an op too
        last_after: dict[Operation, Operation] = {}
        for where, anchor, token in self.edits:
            if where == "before":
                Rewriter.insert_op(token, InsertPoint.before(anchor))
            else:
                previous = last_after.get(anchor, anchor)
                Rewriter.insert_op(token, InsertPoint.after(previous))
                last_after[anchor] = token


def insert_dependence_tokens(function: func.FuncOp) -> None:
    """Insert the tokens of both module pairs into a vta function without tokens."""
    for op in function.walk():
        if isinstance(op, vta.DepPushOp | vta.DepPopOp):
            raise StratoError("vta-insert-dependence-tokens expects a program without tokens", op=op)
    for pair in PAIRS:
        inserter = _Inserter(pair)
        inserter.sequence(function.body.block)
        inserter.apply()


@dataclass(frozen=True)
class VtaInsertDependenceTokensPass(ModulePass):
    """RAW and WAR tokens between consecutive tasks on neighbouring VTA modules."""

    name = "vta-insert-dependence-tokens"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.ops:
            if isinstance(function, func.FuncOp) and function.body.blocks and _has_tasks(function):
                insert_dependence_tokens(function)


def _has_tasks(function: func.FuncOp) -> bool:
    return any(vta.module_of(op) is not None for op in function.walk())


__all__ = ["VtaInsertDependenceTokensPass", "insert_dependence_tokens"]
