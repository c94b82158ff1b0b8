"""vta-insert-dependence-tokens: order VTA's load, compute and store modules with tokens.

The three modules run concurrently and share buffers pairwise: load writes vta.inp /
vta.wgt that compute reads, compute writes vta.acc that store reads. For each neighbour
pair (load, compute) and (compute, store) the pass looks at the tasks (vta ops) of those
two modules in program order and, between two consecutive tasks on different modules,
makes the second wait for the first: `vta.dep_push a -> b` right after the first and
`vta.dep_pop a -> b` right before the second. That covers read-after-write (compute
after the load that filled its buffer, store after the compute that produced its tile)
and write-after-read (a load after the compute that last read the buffer it overwrites).

- Load and compute share only vta.inp / vta.wgt: for that pair the compute tasks are the
  accumulating GEMMs (a reset GEMM or an ALU op waits for no load and holds none up).
- A `loop.for` in a sequence counts as one item: its first and last task (of the pair)
  are the item's ends, the push goes after the loop and the pop before it.
- Loop-carried: when a loop body's last task and first task are on different modules,
  the last pushes to the first of the next iteration (push after the last item of the
  body, pop before the first). The tokens the first iteration pops and those the last
  iteration leaves stay open: when the next item's first iteration pops the same number
  on the same queue, the leftovers serve it (a tile's loads wait for the previous tile's
  last GEMM, not for its epilogue); open tokens nothing can serve are pushed before the
  loop and popped after it.
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
class _Open:
    """Tokens a loop leaves open: its first iteration pops `count` it did not push, its
    last iteration pushes `count` nobody pops (`queue` is (source, target))."""

    queue: tuple[str, str]
    count: int


@dataclass
class _Item:
    """A task or a loop in a sequence: its op, its pair-module ends, its copy count (the
    threads of the virtual-thread loops between it and the sequence), its open tokens."""

    op: Operation
    first: str
    last: str
    copies: int
    open_in: _Open | None = None
    open_out: _Open | None = None


def _is_vthread(op: Operation) -> bool:
    return isinstance(op, ForOp) and op.loop_kind == LoopKind.VIRTUAL_THREAD


def _takes_part(op: Operation, pair: tuple[str, str]) -> bool:
    """Whether a task shares a buffer with the other module of the pair.

    Load and compute share only vta.inp / vta.wgt, which only an accumulating GEMM reads
    on the compute side (a reset GEMM, an ALU op or an ACC load does not touch them).
    """
    module = vta.module_of(op)
    if module not in pair:
        return False
    if pair == ("load", "compute") and module == "compute":
        return isinstance(op, vta.GemmOp) and op.reset is None
    return True


class _Inserter:
    def __init__(self, pair: tuple[str, str]):
        self.pair = pair
        self.edits: list[tuple[str, Operation, vta.DepPushOp | vta.DepPopOp]] = []

    def push_after(self, op: Operation, queue: tuple[str, str], count: int) -> None:
        for _ in range(count):
            self.edits.append(("after", op, vta.DepPushOp(*queue)))

    def pop_after(self, op: Operation, queue: tuple[str, str], count: int) -> None:
        for _ in range(count):
            self.edits.append(("after", op, vta.DepPopOp(*queue)))

    def push_before(self, op: Operation, queue: tuple[str, str], count: int) -> None:
        for _ in range(count):
            self.edits.append(("before", op, vta.DepPushOp(*queue)))

    def pop_before(self, op: Operation, queue: tuple[str, str], count: int) -> None:
        for _ in range(count):
            self.edits.append(("before", op, vta.DepPopOp(*queue)))

    # --- open tokens: cancelled against a neighbour, else made explicit ------------------

    def close_in(self, item: _Item) -> None:
        """Push before the item the tokens its first iteration pops."""
        if item.open_in is not None:
            self.push_before(item.op, item.open_in.queue, item.open_in.count)
            item.open_in = None

    def close_out(self, item: _Item) -> None:
        """Pop after the item the tokens its last iteration leaves."""
        if item.open_out is not None:
            self.pop_after(item.op, item.open_out.queue, item.open_out.count)
            item.open_out = None

    @staticmethod
    def _carries(out: _Open | None, out_copies: int, into: _Open | None, in_copies: int, queue) -> bool:
        return (
            out is not None
            and into is not None
            and out.queue == into.queue == queue
            and out.count * out_copies == into.count * in_copies
        )

    # --- items and sequences -------------------------------------------------------------

    def items(self, block: Block, copies: int = 1) -> list[_Item]:
        """The items of `block` with tasks of the pair, virtual-thread bodies spliced in."""
        found: list[_Item] = []
        for op in block.ops:
            if _is_vthread(op):
                found += self.items(op.body.block, copies * op.trip_count)
            elif isinstance(op, ForOp):
                item = self.loop_item(op, copies)
                if item is not None:
                    found.append(item)
            elif _takes_part(op, self.pair):
                found.append(_Item(op, vta.module_of(op), vta.module_of(op), copies))
        return found

    def sequence(self, block: Block) -> list[_Item]:
        """The block's items, each consecutive two linked."""
        items = self.items(block)
        for x, y in zip(items, items[1:]):
            self.link(x, y)
        return items

    def link(self, x: _Item, y: _Item) -> None:
        """Make y's first task wait for x's last when they run on different modules."""
        queue = (x.last, y.first)
        if x.last != y.first and self._carries(x.open_out, x.copies, y.open_in, y.copies, queue):
            # the tokens x's last iteration leaves are the ones y's first iteration pops
            x.open_out = y.open_in = None
            return
        self.close_out(x)
        self.close_in(y)
        if x.last == y.first:
            return
        self.push_after(x.op, queue, max(1, y.copies // x.copies))
        self.pop_before(y.op, queue, max(1, x.copies // y.copies))

    def loop_item(self, loop: ForOp, copies: int) -> _Item | None:
        """A loop as an item; a dependence of one iteration on the previous stays open."""
        items = self.sequence(loop.body.block)
        if not items:
            return None
        first, last = items[0], items[-1]
        queue = (last.last, first.first)
        if last.last != first.first and self._carries(last.open_out, last.copies, first.open_in, first.copies, queue):
            # the inner loops' open tokens carry the dependence from iteration to iteration
            count = first.open_in.count * first.copies
            first.open_in = last.open_out = None
            return _Item(loop, first.first, last.last, copies, _Open(queue, count), _Open(queue, count))
        self.close_in(first)
        self.close_out(last)
        if last.last == first.first:
            return _Item(loop, first.first, last.last, copies)
        self.push_after(last.op, queue, max(1, first.copies // last.copies))
        self.pop_before(first.op, queue, max(1, last.copies // first.copies))
        count = max(first.copies, last.copies)
        return _Item(loop, first.first, last.last, copies, _Open(queue, count), _Open(queue, count))

    def function(self, block: Block) -> None:
        items = self.sequence(block)
        if items:
            self.close_in(items[0])
            self.close_out(items[-1])

    def apply(self) -> None:
        # tokens after one op keep the order they were decided in; tokens before one op too
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
        inserter.function(function.body.block)
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
