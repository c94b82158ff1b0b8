"""Outlining of `parallel` loops into tasks of the thread pool (`parallel_runtime`).

Each outermost `parallel` `loop.for` of a function becomes three things:

* a body function `@<fn>_parallel_<n>(captures..., %begin: index, %end: index)` that runs
  the loop's iterations number `begin` to `end` (an `scf.for` over the same induction
  values; for a loop fused from a nest over rows of a run-time length, whose body divides
  the index by that length, two loops: over the quotients, then the remainders in the
  range, `_row_nest`). Its buffer arguments are `llvm.noalias` when the loop came from a kernel,
  whose buffers are distinct by the loop-level ABI. It is `llvm.noinline`: inlined into
  the task, its arguments would become loads from the context and their `noalias`
  scoped metadata on every access, which doubles LLVM's time on an unrolled body (its
  LICM and dead-store passes) for the same code;
* a task `@<fn>_parallel_<n>_task(%ctx: !llvm.ptr, %begin: i64, %end: i64)` that loads
  the captures from the context at `%ctx` and calls the body: the signature the pool
  calls;
* in place of the loop, the captures stored into the context, a stack array of
  pointer-sized slots (one `llvm.alloca` at the function entry), and a call of the pool:

    loop.for %i = 0 to 64 parallel axis "i" { .. %a .. %o .. }
->
    %ctx = llvm.alloca %c2 x !llvm.ptr                                  (function entry)
    llvm.store %a, (gep %ctx[0]) ; llvm.store %o, (gep %ctx[1])
    %task = llvm.mlir.addressof @k_parallel_0_task : !llvm.ptr
    llvm.call @strato_parallel_for(%task, %ctx, %c64, %threads)

  For a run-time trip count the call is made only when the iterations are work enough
  for a region (the estimate of `_inner_iterations`, computed before the loop); else
  the caller calls the body function over them all itself.

(A slot array rather than an LLVM struct: every capture fits a slot, and the emitter
types GEPs into a stack struct by the struct, not by the field.)

Values a body only needs as constants (`arith.constant`, `memref.get_global`) are
rebuilt inside the body rather than captured. A local-scope buffer allocated outside the
loop but used only inside it (the region a stage computed at the loop fills before
reading it, such as a packed panel of GEMM weights) is private to each iteration: the
body allocates its own copy on its stack, so threads never share it.

A parallel loop stays serial when the runtime could not run it as a task: a body that
allocates on the heap (its failure could not reach the caller), calls a function other
than a kernel that allocates nothing on the heap, or would need more private stack than
`PRIVATE_STACK_LIMIT`; or when `threads` is 1. Parallel loops nested in an outlined
loop run serially inside its body; a kernel a task calls finds the pool busy and runs
its own regions serially too. A call counts as `PARALLEL_MIN_ITERATIONS` iterations
of work (a loop over blocks of rows, each a kernel's call: `lower_row_blocks`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence

from xdsl.dialects import arith, func, llvm, memref, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    UnitAttr,
    UnrealizedConversionCastOp,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable

from strato.dialects.loop import (
    KERNEL_ATTR,
    ForOp,
    LoopKind,
    MemoryScope,
    YieldOp,
    memory_scope,
)
from strato.targets.llvm import builders
from strato.targets.llvm.memref_to_llvm import is_stack_buffer
from strato.targets.llvm.parallel_runtime import PARALLEL_FOR_SYMBOL
from strato.targets.llvm.type_conversion import (
    INDEX_LLVM_TYPE,
    POINTER,
    element_byte_size,
    is_scalar_type,
    llvm_type,
    memref_size_in_bytes,
)
from strato.transforms.schedule_default import PARALLEL_MIN_ITERATIONS
from strato.walk import ops_under

PRIVATE_STACK_LIMIT = 1 << 20
"""Most bytes of private buffers one task puts on its thread's stack (threads get 8 MiB
stacks by default)."""

TASK_CALLABLE_ATTR = "strato.task_callable"
"""On the declaration of a kernel compiled on its own: a task may call it (it allocates
nothing on the heap, so returns no status; `_callable_in_a_task`)."""

NOALIAS_ARG_ATTR = "llvm.noalias"
NOINLINE_ATTR = "llvm.noinline"
"""Function attribute: LLVM never inlines the function (`emit` gives it `noinline`)."""

SLOT_TYPE = POINTER
"""The context is a stack array of pointer-sized slots, one per capture: every value a
body can capture (a buffer's pointer, an index, an integer or float scalar) fits in one."""

_REBUILT = (arith.ConstantOp, memref.GetGlobalOp, llvm.ConstantOp, llvm.ZeroOp, llvm.AddressOfOp)
"""Ops without operands that a body rebuilds instead of capturing their value."""


def outline_parallel_loops(module: ModuleOp, threads: int) -> int:
    """Outline every outermost parallel loop of `module` that can run as a task of the
    pool with up to `threads` threads; returns how many were outlined. With
    `threads <= 1` nothing changes (parallel loops are lowered serially)."""
    if threads <= 1:
        return 0
    count = 0
    for function in [op for op in module.ops if isinstance(op, func.FuncOp)]:
        loops = _outermost_parallel_loops(function)
        if not loops:
            continue
        # the function's local buffers, found once (not once per loop)
        local = [
            op for op in function.walk()
            if isinstance(op, memref.AllocOp) and memory_scope(op.memref.type) == MemoryScope.LOCAL
            and not op.dynamic_sizes  # a run-time size: on the heap, shared by the tasks
        ]  # fmt: skip
        for index, loop in enumerate(loops):
            outliner = _Outliner(module, function, loop, threads, local)
            if outliner.can_outline():
                outliner.outline(index)
                count += 1
                local = [op for op in local if op not in outliner.private]
    return count


def _callable_in_a_task(module: ModuleOp, call: func.CallOp) -> bool:
    """Whether a task may make `call`: of a function of `module` (a kernel) that
    allocates nothing on the heap (no failure to report) and calls nothing but the pool
    (whose regions, the pool busy with the task's own, run serially in the task's
    thread)."""
    callee = SymbolTable.lookup_symbol(module, call.callee)
    if not isinstance(callee, func.FuncOp):
        return False
    if not callee.body.blocks:  # a kernel compiled on its own: what its build found
        return TASK_CALLABLE_ATTR in callee.attributes
    for op in callee.walk():
        if isinstance(op, func.CallOp):
            return False
        if isinstance(op, llvm.CallOp) and (op.callee is None or op.callee.string_value() != PARALLEL_FOR_SYMBOL):
            return False
        if isinstance(op, memref.AllocOp) and not is_stack_buffer(op.memref.type):
            return False
    return True


def _outermost_parallel_loops(function: func.FuncOp) -> list[ForOp]:
    found: list[ForOp] = []

    def visit(op: Operation) -> None:
        if isinstance(op, ForOp) and op.loop_kind == LoopKind.PARALLEL:
            found.append(op)
            return
        for region in op.regions:
            for block in region.blocks:
                for child in block.ops:
                    visit(child)

    for block in function.body.blocks:
        for op in block.ops:
            visit(op)
    return found


def _fits_a_slot(type_: Attribute) -> bool:
    if isinstance(type_, MemRefType | IndexType | llvm.LLVMPointerType):
        return True
    return is_scalar_type(type_) and element_byte_size(type_) <= 8


def _inner_iterations(
    block: Block, first: _FirstIteration
) -> tuple[list[Operation], int | SSAValue]:
    """The innermost iterations one run of `block` makes: 1 for straight-line code, the
    sum over its loops of trip count times their bodies'. A loop to a run-time bound
    counts that bound when it is known before the parallel loop (a size of the kernel),
    else the bound the parallel loop's first iteration gives it (a count computed per
    iteration: the rows of a block, a tail; `_FirstIteration`), else once; then the
    count is an `index` value, computed by the ops returned (not yet inserted)."""
    ops: list[Operation] = []
    total: int | SSAValue = 0
    for op in block.ops:
        if isinstance(op, func.CallOp):
            # a kernel (`_callable_in_a_task`): a region's worth of work
            total = _combine(arith.AddiOp, total, PARALLEL_MIN_ITERATIONS, ops)
            continue
        if not isinstance(op, ForOp):
            continue
        inner_ops, inner = _inner_iterations(op.body.block, first)
        ops += inner_ops
        count: int | SSAValue = op.trip_count if not op.is_dynamic else 1
        if op.is_dynamic and op.lb.data == 0 and op.step.data == 1:
            count = first.count(op.bound, ops)
        total = _combine(arith.AddiOp, total, _combine(arith.MuliOp, count, inner, ops), ops)
    if isinstance(total, int):
        return ops, max(total, 1)
    return ops, total


_FOLDED: dict[type[Operation], Callable[[int, int], int]] = {
    arith.AddiOp: operator.add,
    arith.SubiOp: operator.sub,
    arith.MuliOp: operator.mul,
    arith.MinUIOp: min,
    arith.MaxUIOp: max,
    arith.MinSIOp: min,
    arith.MaxSIOp: max,
}
"""Index arithmetic `_FirstIteration` rebuilds, by how it folds constants (the values it
meets are not negative)."""

_DIVIDED: dict[type[Operation], Callable[[int, int], int]] = {
    arith.DivUIOp: operator.floordiv,
    arith.DivSIOp: lambda a, b: int(a / b),
    arith.RemUIOp: operator.mod,
    arith.RemSIOp: lambda a, b: a - b * int(a / b),
}
"""Its divisions and remainders."""


class _FirstIteration:
    """Index values of a parallel loop's body at its first iteration (every loop's
    induction variable at its lower bound), built before the loop for its work estimate.

    The estimate is trip count times one iteration's work. An inner loop's bound
    computed per iteration (the whole tiles of a block of rows, then its partial rows)
    counts what it is in the first iteration, a typical one (a whole block): counting
    each such loop once made a loop over blocks of 12 rows look like 17 rows a block,
    and a product too small for a parallel region ran on two threads. The value is
    rebuilt from values known before the loop with the body's integer arithmetic,
    folded where constant (a quotient or remainder of 0 is 0); one that needs anything
    else (a load) has none. The rebuilt ops run whatever the trip count: a division by
    0 gives 0 (the lowering guards every divisor)."""

    def __init__(self, outside: Callable[[SSAValue], bool]) -> None:
        self.outside = outside
        self.known: dict[SSAValue, int | SSAValue | None] = {}

    def count(self, bound: SSAValue, ops: list[Operation]) -> int | SSAValue:
        """The trip count of a loop from 0 to `bound` in the first iteration (at least
        0), or 1 when that is unknown."""
        value = self.value(bound, ops)
        if value is None:
            return 1
        if isinstance(value, int):
            return max(value, 0)
        if value is bound or isinstance(value.owner, Block) or value.owner.parent is not None:
            return value  # the bound itself, or a value of the function (a size): kept
        zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
        clamped = arith.MaxSIOp(value, zero.result)
        ops += [zero, clamped]
        return clamped.result

    def value(self, value: SSAValue, ops: list[Operation]) -> int | SSAValue | None:
        if value not in self.known:
            self.known[value] = self._rebuild(value, ops)
        return self.known[value]

    def _rebuild(self, value: SSAValue, ops: list[Operation]) -> int | SSAValue | None:
        owner = value.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return owner.value.value.data
        if self.outside(value):
            return value
        if isinstance(owner, Block):
            loop = owner.parent_op()
            return loop.lb.data if isinstance(loop, ForOp) else None
        kind = type(owner)
        if kind not in _FOLDED and kind not in _DIVIDED:
            return None
        a, b = (self.value(operand, ops) for operand in owner.operands)
        if a is None or b is None:
            return None
        if kind in _DIVIDED:
            if a == 0 or b == 0:
                return 0
            if isinstance(a, int) and isinstance(b, int):
                return _DIVIDED[kind](a, b)
        elif isinstance(a, int) and isinstance(b, int):
            return _FOLDED[kind](a, b)
        elif kind is arith.MuliOp and 0 in (a, b):
            return 0
        elif (kind is arith.AddiOp and a == 0) or (kind is arith.MuliOp and a == 1):
            return b
        elif (kind in (arith.AddiOp, arith.SubiOp) and b == 0) or (kind is arith.MuliOp and b == 1):
            return a
        rebuilt = kind(*_index_values((a, b), ops))
        ops.append(rebuilt)
        return rebuilt.result


def _combine(kind, a: int | SSAValue, b: int | SSAValue, ops: list[Operation]) -> int | SSAValue:
    """`a + b` or `a * b` (`kind`, an arith op class): folded when both are static,
    else an op appended to `ops`."""
    if isinstance(a, int) and isinstance(b, int):
        return a + b if kind is arith.AddiOp else a * b
    identity = 0 if kind is arith.AddiOp else 1
    if a == identity:
        return b
    if b == identity:
        return a
    combined = kind(*_index_values((a, b), ops))
    ops.append(combined)
    return combined.result


def _index_values(values: Sequence[int | SSAValue], ops: list[Operation]) -> list[SSAValue]:
    """`values` as `index` values: each int an `arith.constant` appended to `ops`."""
    made: list[SSAValue] = []
    for value in values:
        if isinstance(value, int):
            constant = arith.ConstantOp(IntegerAttr(value, IndexType()))
            ops.append(constant)
            value = constant.result
        made.append(value)
    return made


def _rows_of(entry: Block, iterations: Block) -> tuple[SSAValue, list[Operation]] | None:
    """The run-time divisor `d` of the induction variable in `iterations`, the body of a
    parallel loop fused from a nest (rows of a run-time length inside heads and a
    batch: each loop's index is `iv % d` or `iv / d`), and those divisions; None when
    there is none. The divisor is known in `entry`, the body function's, before the
    loop; a static one is a multiplication once LLVM is done with it."""
    iv = iterations.args[0]
    divisor: SSAValue | None = None
    divisions: list[Operation] = []
    for op in iterations.ops:
        if not isinstance(op, arith.RemUIOp | arith.DivUIOp) or op.lhs is not iv:
            continue
        owner = op.rhs.owner
        if isinstance(owner, arith.ConstantOp):
            continue
        if owner is not entry and not (isinstance(owner, Operation) and owner.parent_block() is entry):
            continue
        if divisor is None or op.rhs is divisor:
            divisor = op.rhs
            divisions.append(op)
    return None if divisor is None else (divisor, divisions)


def _row_nest(
    entry: Block, iterations: Block, first: SSAValue, last: SSAValue
) -> scf.ForOp | None:
    """The iterations `first` to `last` (by 1) of a fused parallel loop whose body
    divides its induction variable by a run-time `d` (`_rows_of`) as two loops: over
    the quotients, and over the remainders each quotient takes in the range (from where
    the range starts in the first, to where it ends in the last). The body then reads
    the quotient and the remainder as loop indices: a task divides twice in all, where
    it divided twice an iteration (a softmax over 16 tokens spent more on those
    divisions than on its rows), and an inner loop over a row is a plain loop again.
    Builds the divisions in `entry` and returns the outer loop, whose inner loop's body
    is `iterations` (its argument now the remainder); None when nothing divides."""
    found = _rows_of(entry, iterations)
    if found is None:
        return None
    divisor, divisions = found
    remainder = iterations.args[0]
    others = [use for use in remainder.uses if use.operation not in divisions]

    def index(n: int) -> arith.ConstantOp:
        return arith.ConstantOp(IntegerAttr(n, IndexType()))

    # before the loops, which may run no iteration (a division by 0 gives 0: the
    # lowering guards every divisor)
    one, zero = index(1), index(0)
    quotient0 = arith.DivUIOp(first, divisor)
    remainder0 = arith.RemUIOp(first, divisor)
    final = arith.SubiOp(last, one.result)
    quotient1 = arith.DivUIOp(final.result, divisor)
    remainder1 = arith.RemUIOp(final.result, divisor)
    past = arith.AddiOp(quotient1.result, one.result)
    runs = arith.CmpiOp(first, last, "slt")
    stop = arith.SelectOp(runs.result, past.result, quotient0.result)
    entry.add_ops([one, zero, quotient0, remainder0, final, quotient1, remainder1, past, runs, stop])

    row = Block(arg_types=[IndexType()])
    quotient = row.args[0]
    quotient.name_hint = "rows"
    starts = arith.CmpiOp(quotient, quotient0.result, "eq")
    low = arith.SelectOp(starts.result, remainder0.result, zero.result)
    ends = arith.CmpiOp(quotient, quotient1.result, "eq")
    end = arith.AddiOp(remainder1.result, one.result)
    high = arith.SelectOp(ends.result, end.result, divisor)
    for op in divisions:
        value = remainder if isinstance(op, arith.RemUIOp) else quotient
        op.results[0].replace_all_uses_with(value)
        op.detach()
        op.erase()
    if others:
        # the fused index itself, where the body reads it whole
        scaled = arith.MuliOp(quotient, divisor)
        whole = arith.AddiOp(scaled.result, remainder)
        iterations.insert_ops_before([scaled, whole], iterations.first_op)
        for use in others:
            use.operation.operands[use.index] = whole.result
    iterations.add_op(scf.YieldOp())
    inner = scf.ForOp(low.result, high.result, one.result, [], iterations)
    row.add_ops([starts, low, ends, end, high, inner, scf.YieldOp()])
    return scf.ForOp(quotient0.result, stop.result, one.result, [], row)


def _induction_value(block: Block, iteration: SSAValue, loop: ForOp, step: SSAValue) -> SSAValue:
    """`lb + step * iteration` for `loop`, built at the end of `block`."""
    value = iteration
    if loop.step.data != 1:
        scaled = arith.MuliOp(value, step)
        block.add_op(scaled)
        value = scaled.result
    if loop.lb.data != 0:
        lb = arith.ConstantOp(IntegerAttr(loop.lb.data, IndexType()))
        shifted = arith.AddiOp(value, lb)
        block.add_ops([lb, shifted])
        value = shifted.result
    return value


class _Outliner:
    def __init__(
        self,
        module: ModuleOp,
        function: func.FuncOp,
        loop: ForOp,
        threads: int,
        local: list[memref.AllocOp],
    ):
        self.module = module
        self.function = function
        self.loop = loop
        self.threads = threads
        # the loop and every op nested in it, in walk order, found once: the outliner
        # reads them several times before it moves them
        self.ops = ops_under(loop)
        self._inside_ops = set(self.ops)
        self.private = self._private_buffers(local)

    # -- what the body needs ---------------------------------------------------------------

    def _inside(self, op: Operation) -> bool:
        """Whether `op` is the loop or nested in it."""
        return op in self._inside_ops

    def _defined_inside(self, value: SSAValue) -> bool:
        """Whether `value` is a result or block argument of the loop or of an op in it."""
        owner = value.owner
        if isinstance(owner, Block):
            parent = owner.parent_op()
            return parent is not None and self._inside(parent)
        return self._inside(owner)

    def can_outline(self) -> bool:
        for op in self.ops:
            if isinstance(op, func.CallOp) and _callable_in_a_task(self.module, op):
                continue
            if isinstance(op, func.CallOp | llvm.CallOp):
                return False
            if isinstance(op, memref.AllocOp) and not is_stack_buffer(op.memref.type):
                return False
        if not all(_fits_a_slot(value.type) for value in self._captures()):
            return False
        private_bytes = sum(memref_size_in_bytes(op.memref.type) for op in self.private)
        return private_bytes <= PRIVATE_STACK_LIMIT and (self.loop.is_dynamic or self.loop.trip_count > 1)

    def _private_buffers(self, local: list[memref.AllocOp]) -> list[memref.AllocOp]:
        """The function's `local` buffers allocated outside the loop and used only inside
        it (besides their deallocation)."""
        private: list[memref.AllocOp] = []
        for op in local:
            if self._inside(op):
                continue
            users = [use.operation for use in op.memref.uses]
            inside = [user for user in users if self._inside(user)]
            others = [user for user in users if not self._inside(user)]
            if inside and all(isinstance(user, memref.DeallocOp) for user in others):
                private.append(op)
        return private

    def _captures(self) -> list[SSAValue]:
        """Values defined outside the loop that its body uses, in first-use order
        (constants and private buffers excluded: the body makes its own)."""
        private = {op.memref for op in self.private}
        seen: set[SSAValue] = set()
        captures: list[SSAValue] = []
        for op in self.ops:
            if op is self.loop:
                continue  # its run-time bound is read by the caller (_trip_count)
            for operand in op.operands:
                if operand in seen or operand in private or self._defined_inside(operand):
                    continue
                seen.add(operand)
                if isinstance(operand.owner, _REBUILT):
                    continue
                captures.append(operand)
        return captures

    # -- rewriting -------------------------------------------------------------------------

    def outline(self, index: int) -> None:
        # before the body moves; only a run-time trip count needs it (ops built and
        # not inserted would hold uses of the values they read)
        self.work_ops: list[Operation] = []
        self.inner_iterations: int | SSAValue = 1
        if self.loop.is_dynamic:
            self.work_ops, self.inner_iterations = _inner_iterations(
                self.loop.body.block, _FirstIteration(lambda value: not self._defined_inside(value))
            )
        captures = self._captures()
        base = self._fresh_name(f"{self.function.sym_name.data}_parallel_{index}")
        body = self._body_function(base, captures)
        task = self._task_function(f"{base}_task", base, captures)
        Rewriter.insert_op([body, task], InsertPoint.after(self.function))
        self._call_pool(task.sym_name.data, body.sym_name.data, captures)
        for op in self.private:
            for use in list(op.memref.uses):
                Rewriter.erase_op(use.operation)
            Rewriter.erase_op(op)

    def _fresh_name(self, base: str) -> str:
        name, suffix = base, 0
        while SymbolTable.lookup_symbol(self.module, name) is not None or (
            SymbolTable.lookup_symbol(self.module, f"{name}_task") is not None
        ):
            suffix += 1
            name = f"{base}_{suffix}"
        return name

    def _body_function(self, name: str, captures: list[SSAValue]) -> func.FuncOp:
        loop = self.loop
        arg_types = [value.type for value in captures] + [IndexType(), IndexType()]
        entry = Block(arg_types=arg_types)
        *inner_captures, begin, end = entry.args
        begin.name_hint, end.name_hint = "begin", "end"
        for outer, inner in zip(captures, inner_captures, strict=True):
            inner.name_hint = outer.name_hint

        # own copies of private buffers and of the constants the body reads
        mapping: dict[SSAValue, SSAValue] = dict(zip(captures, inner_captures, strict=True))
        for alloc in self.private:
            type_ = alloc.memref.type
            copy = memref.AllocaOp.get(
                type_.element_type,
                shape=type_.get_shape(),
                layout=type_.layout,
                memory_space=type_.memory_space,
            )
            copy.results[0].name_hint = alloc.memref.name_hint
            entry.add_op(copy)
            mapping[alloc.memref] = copy.results[0]
        rebuilt: set[SSAValue] = set()
        for op in self.ops:
            if op is self.loop:
                continue
            for operand in op.operands:
                if operand in mapping or operand in rebuilt or self._defined_inside(operand):
                    continue
                owner = operand.owner
                assert isinstance(owner, _REBUILT), f"uncaptured value of {owner}"
                clone = owner.clone()
                entry.add_op(clone)
                mapping[operand] = clone.results[0]
                rebuilt.add(operand)
        for outer, inner in mapping.items():
            outer.replace_uses_with_if(
                inner, lambda use: use.operation is not loop and self._inside(use.operation)
            )

        # iterations begin..end are the induction values lb + step * [begin, end)
        step = arith.ConstantOp(IntegerAttr(loop.step.data, IndexType()))
        entry.add_op(step)
        first_iv = _induction_value(entry, begin, loop, step.result)
        last_iv = _induction_value(entry, end, loop, step.result)
        iterations = Block(arg_types=[IndexType()])
        old_iv = loop.body.block.args[0]
        iterations.args[0].name_hint = old_iv.name_hint
        old_iv.replace_all_uses_with(iterations.args[0])
        for op in list(loop.body.block.ops):
            op.detach()
            if isinstance(op, YieldOp):
                op.erase()
                continue
            iterations.add_op(op)
        nest = _row_nest(entry, iterations, first_iv, last_iv) if loop.step.data == 1 else None
        if nest is None:
            iterations.add_op(scf.YieldOp())
            nest = scf.ForOp(first_iv, last_iv, step.result, [], iterations)
        entry.add_op(nest)
        entry.add_op(func.ReturnOp())

        noalias = KERNEL_ATTR in self.function.attributes
        arg_attrs = [
            DictionaryAttr({NOALIAS_ARG_ATTR: UnitAttr()})
            if noalias and isinstance(type_, MemRefType)
            else DictionaryAttr({})
            for type_ in arg_types
        ]
        body = func.FuncOp(
            name,
            FunctionType.from_lists(arg_types, []),
            Region(entry),
            visibility="private",
            arg_attrs=ArrayAttr(arg_attrs),
        )
        body.attributes[NOINLINE_ATTR] = UnitAttr()
        return body

    def _task_function(self, name: str, body: str, captures: list[SSAValue]) -> llvm.FuncOp:
        fields = [llvm_type(value.type) for value in captures]
        entry = Block(arg_types=[POINTER, INDEX_LLVM_TYPE, INDEX_LLVM_TYPE])
        ctx, begin, end = entry.args
        ctx.name_hint, begin.name_hint, end.name_hint = "ctx", "begin", "end"
        loaded: list[SSAValue] = []
        for position, type_ in enumerate(fields):
            address = builders.gep(ctx, position, SLOT_TYPE)
            value = builders.load(address.result, type_)
            entry.add_ops([address, value])
            loaded.append(value.dereferenced_value)
        entry.add_ops([builders.call(body, [*loaded, begin, end], None), builders.return_()])
        fn_type = builders.function_type([POINTER, INDEX_LLVM_TYPE, INDEX_LLVM_TYPE], None)
        return builders.function(name, fn_type, Region(entry), linkage="internal")

    def _trip_count(self) -> tuple[list[Operation], SSAValue]:
        """The loop's number of iterations as an llvm i64, and the ops computing it: a
        constant, or for a run-time bound max(0, ceil((ub - lb) / step))."""
        loop = self.loop
        if loop.dynamic_ub is None:
            trip = builders.index_constant(loop.trip_count)
            return [trip], trip.result
        ops: list[Operation] = []

        def index(n: int) -> SSAValue:
            constant = arith.ConstantOp(IntegerAttr(n, IndexType()))
            ops.append(constant)
            return constant.result

        count: SSAValue = loop.dynamic_ub
        if loop.lb.data:
            difference = arith.SubiOp(count, index(loop.lb.data))
            ops.append(difference)
            count = difference.result
        if loop.step.data != 1:
            rounded = arith.AddiOp(count, index(loop.step.data - 1))
            divided = arith.DivSIOp(rounded.result, index(loop.step.data))
            ops += [rounded, divided]
            count = divided.result
        clamped = arith.MaxSIOp(count, index(0))
        cast = UnrealizedConversionCastOp.get([clamped.result], [INDEX_LLVM_TYPE])
        ops += [clamped, cast]
        return ops, cast.results[0]

    def _worth(self, trip: SSAValue) -> tuple[list[Operation], SSAValue | None]:
        """Whether a run-time trip count's iterations do enough work for a parallel
        region (trip count times the innermost iterations of the body at least
        `PARALLEL_MIN_ITERATIONS`, as schedule-default decides for static loops), an i1;
        None for a static trip count (schedule-default made the loop parallel)."""
        if not self.loop.is_dynamic:
            return [], None
        inner = self.inner_iterations
        if isinstance(inner, int):
            enough = builders.index_constant(-(-PARALLEL_MIN_ITERATIONS // inner))
            worth = builders.icmp("sge", trip, enough.result)
            return [enough, worth], worth.res
        # the work is known at run time only: trip count times the body's iterations
        cast = UnrealizedConversionCastOp.get([inner], [INDEX_LLVM_TYPE])
        work = builders.int_binary(llvm.MulOp, trip, cast.results[0], nsw=True)
        enough = builders.index_constant(PARALLEL_MIN_ITERATIONS)
        worth = builders.icmp("sge", work.results[0], enough.result)
        return [*self.work_ops, cast, work, enough, worth], worth.res

    def _call_pool(self, task: str, body: str, captures: list[SSAValue]) -> None:
        """Replace the loop by a call of the pool with `task`; a loop of a run-time trip
        count too little work for a region calls `body` over all its iterations instead,
        in the caller's thread (what the pool would do on one thread, without storing
        the captures and calling through the task)."""
        loop = self.loop
        ops: list[Operation] = []
        if captures:
            fields = [llvm_type(value.type) for value in captures]
            count = builders.index_constant(len(fields))
            ctx_op = builders.alloca(count.result, SLOT_TYPE, 8)
            entry = self.function.body.blocks[0]
            entry.insert_ops_before([count, ctx_op], entry.first_op)
            ctx = ctx_op.results[0]
            ctx.name_hint = "ctx"
            for position, (value, type_) in enumerate(zip(captures, fields, strict=True)):
                if value.type != type_:
                    cast = UnrealizedConversionCastOp.get([value], [type_])
                    ops.append(cast)
                    value = cast.results[0]
                address = builders.gep(ctx, position, SLOT_TYPE)
                ops += [address, builders.store(value, address.result)]
        else:
            null = llvm.ZeroOp(result_types=[POINTER])
            ops.append(null)
            ctx = null.results[0]
        address = builders.address_of(task)
        trip_ops, trip = self._trip_count()
        threads = builders.index_constant(self.threads)
        call = builders.call(PARALLEL_FOR_SYMBOL, [address.result, ctx, trip, threads.result], None)
        worth_ops, worth = self._worth(trip)
        if worth is None:
            ops += [address, *trip_ops, threads, call]
            Rewriter.insert_op(ops, InsertPoint.before(loop))
        else:
            ops += [address, threads, call]
            count = UnrealizedConversionCastOp.get([trip], [IndexType()])
            zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
            serial = func.CallOp(body, [*captures, zero.result, count.results[0]], [])
            branch = scf.IfOp(
                worth,
                [],
                Region(Block([*ops, scf.YieldOp()])),
                Region(Block([count, zero, serial, scf.YieldOp()])),
            )
            Rewriter.insert_op([*trip_ops, *worth_ops, branch], InsertPoint.before(loop))
        builders.ensure_declared(
            self.function,
            PARALLEL_FOR_SYMBOL,
            builders.function_type([POINTER, POINTER, i64, i64], None),
        )
        Rewriter.erase_op(loop)


__all__ = ["PRIVATE_STACK_LIMIT", "TASK_CALLABLE_ATTR", "outline_parallel_loops"]
