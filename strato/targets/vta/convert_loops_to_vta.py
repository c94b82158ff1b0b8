"""convert-loops-to-vta: a scheduled loop-level kernel becomes a VTA control program.

The input is a kernel (`func.func` with `loop.kernel`) whose arguments are DRAM tensors
whose two innermost dimensions are one VTA element (BATCH x BLOCK, or BLOCK_OUT x
BLOCK_IN for weights), scheduled so that everything it computes is staged through
buffers in the vta.inp / vta.wgt / vta.acc scopes (as the VTA conv2d template does with
cache_read, cache_write, compute_at and tensorize). Each innermost loop nest that stores
to one buffer (a task) becomes hardware ops:

- a copy from a DRAM argument into an on-chip buffer (cache_read), possibly zero-padded
  through `select(in_bounds, x[..], 0)` -> 2-D DMA `vta.load`s: the two innermost loops
  that are not element lanes are the DMA rows and columns, the loops outside them are
  unrolled into one load each; the in-bounds rectangle gives the four pads;
- the init of a reduction into vta.acc (a store of 0) -> `vta.gemm {reset}`;
- a nest whose innermost loops are tensorized with `vta.gemm.<B>x<BI>x<BO>` -> one
  `vta.gemm` micro-op kernel: the loops around the intrinsic, after dropping trip-count-1
  loops and merging loops that are contiguous for all operands, give the two hardware
  loops (outermost) and the micro-ops (the rest, enumerated);
- an elementwise chain over a vta.acc element (`shrsi`, `maxsi`, `minsi`, `addi`,
  `muli` with a constant: ALU immediates; `addi`/`maxsi`/`minsi` with another vta.acc
  element: tensor-tensor) -> `vta.alu` ops applied in place; when the chain ends in a
  `trunci` to i8 stored to a DRAM argument, a 2-D `vta.store` follows (VTA's store
  truncates to the low 8 bits, exactly `trunci`).

Loops marked `unrolled` are expanded first (a DMA's pads may differ per iteration);
other loops outside tasks stay loops, virtual-thread loops included. The buffers of each
scope become one `vta.buffer` (each alloc at its own element offset), placed at the top
of every virtual-thread loop that uses them (inject-virtual-threads gives each thread its
slice), or at the top of the function. DRAM arguments become arrays of elements
(`memref<E x B x BLOCK>`); other memory (allocs the schedule left unused) is dropped.

The accumulator chain is applied in place: a nest that reads the vta.acc values of a
chain ending in a store before they are written again is refused. Anything else is
refused with a diagnostic naming the loop.

Requires: kernels after apply-schedule. Leaves illegal: nothing (vta-dialect functions,
ready for vta-insert-dependence-tokens and vta-inject-virtual-threads).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from math import prod

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
)
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from strato.diagnostics import StratoError
from strato.dialects import vta
from strato.dialects.loop import (
    KERNEL_ATTR,
    OUTPUT_ATTR,
    ForOp,
    LoopKind,
    MemoryScope,
    ScopeAttr,
    YieldOp,
)
from strato.schedule.intrinsics import TENSORIZED_ATTR
from strato.targets.vta.config import DEFAULT_CONFIG, VTAConfig
from strato.targets.vta.intrinsics import gemm_name

Aff = dict  # SSAValue | None -> int; the None key is the constant term


class _NotAffine(Exception):
    pass


def _const(value: int) -> Aff:
    return {None: value} if value else {}


def _add(a: Aff, b: Aff, scale: int = 1) -> Aff:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + scale * v
        if out[k] == 0:
            del out[k]
    return out


def _scale(a: Aff, c: int) -> Aff:
    return {k: v * c for k, v in a.items()} if c else {}


def _constant_of(a: Aff) -> int | None:
    return a.get(None, 0) if all(k is None for k in a) else None


_PREDICATES = {
    0: lambda a, b: a == b, 1: lambda a, b: a != b,
    2: lambda a, b: a < b, 3: lambda a, b: a <= b, 4: lambda a, b: a > b, 5: lambda a, b: a >= b,
    6: lambda a, b: a < b, 7: lambda a, b: a <= b, 8: lambda a, b: a > b, 9: lambda a, b: a >= b,
}  # fmt: skip


class _Evaluator:
    """Index expressions as affine forms in symbols (loop variables and values the
    nest does not compute); variables in `point` take concrete values. Conditions must
    be decidable (their two sides differ by a constant). With `assume_true`, a select's
    condition is taken as true without being evaluated (the in-bounds index of a padded
    read)."""

    def __init__(self, point: dict[SSAValue, int] | None = None, assume_true: bool = False):
        self.point = point or {}
        self.assume_true = assume_true
        self.memo: dict[SSAValue, object] = {}

    def __call__(self, value: SSAValue):
        if value in self.memo:
            return self.memo[value]
        result = self._eval(value)
        self.memo[value] = result
        return result

    def _eval(self, value: SSAValue):
        if value in self.point:
            return _const(self.point[value])
        op = value.owner
        if isinstance(op, arith.ConstantOp):
            attr = op.value
            assert isinstance(attr, IntegerAttr)
            if isinstance(attr.type, IntegerType) and attr.type.width.data == 1:
                return bool(attr.value.data)
            return _const(attr.value.data)
        if isinstance(op, arith.AddiOp):
            return _add(self._aff(op.lhs), self._aff(op.rhs))
        if isinstance(op, arith.SubiOp):
            return _add(self._aff(op.lhs), self._aff(op.rhs), -1)
        if isinstance(op, arith.MuliOp):
            a, b = self._aff(op.lhs), self._aff(op.rhs)
            ca, cb = _constant_of(a), _constant_of(b)
            if cb is not None:
                return _scale(a, cb)
            if ca is not None:
                return _scale(b, ca)
            raise _NotAffine("a product of two variables")
        if isinstance(op, arith.CmpiOp):
            diff = _constant_of(_add(self._aff(op.lhs), self._aff(op.rhs), -1))
            if diff is None:
                raise _NotAffine("a condition that depends on a loop outside the copy (unroll that loop)")
            return _PREDICATES[op.predicate.value.data](diff, 0)
        if isinstance(op, arith.AndIOp | arith.OrIOp) and not isinstance(value.type, IndexType):
            a, b = self(op.lhs), self(op.rhs)
            if not isinstance(a, bool) or not isinstance(b, bool):
                raise _NotAffine("a condition on non-boolean values")
            return (a and b) if isinstance(op, arith.AndIOp) else (a or b)
        if isinstance(op, arith.SelectOp):
            condition = True if self.assume_true else self(op.cond)
            if not isinstance(condition, bool):
                raise _NotAffine("a select on a non-boolean condition")
            return self(op.lhs if condition else op.rhs)
        if isinstance(op, arith.IndexCastOp):
            return self(op.input)
        if isinstance(value, BlockArgument) or isinstance(value.type, IndexType):
            return {value: 1}
        raise _NotAffine(f"'{op.name if isinstance(op, Operation) else value}'")

    def _aff(self, value: SSAValue) -> Aff:
        result = self(value)
        if isinstance(result, bool):
            raise _NotAffine("a boolean used as an index")
        return result


def _element(access: memref.LoadOp | memref.StoreOp, ev: _Evaluator) -> tuple[Aff, list[Aff]]:
    """(element index, lane indices) of an access: row-major over all but the two
    innermost dimensions, which are the element's lanes."""
    shape = access.memref.type.get_shape()
    indices = [ev._aff(i) for i in access.indices]
    element: Aff = {}
    stride = 1
    for dim in range(len(shape) - 3, -1, -1):
        element = _add(element, _scale(indices[dim], stride))
        stride *= shape[dim]
    return element, indices[-2:]


def _elements(type_: MemRefType) -> int:
    return prod(type_.get_shape()[:-2])


def _scope(value: SSAValue) -> MemoryScope:
    type_ = value.type
    if isinstance(type_, MemRefType) and isinstance(type_.memory_space, ScopeAttr):
        return type_.memory_space.data
    return MemoryScope.GLOBAL


def _axis(loop: ForOp) -> str:
    return loop.axis.data if loop.axis is not None else "?"


def _fold(loops: list[tuple[int, list[int]]]) -> list[tuple[int, list[int]]]:
    """Drop loops of one iteration, then merge each loop into the one outside it when
    every operand moves contiguously across both (outer coefficient = inner x extent)."""
    kept = [(n, c) for n, c in loops if n > 1]
    merged: list[tuple[int, list[int]]] = []
    for extent, coeffs in reversed(kept):
        if merged:
            inner_n, inner_c = merged[-1]
            if all(c == ic * inner_n for c, ic in zip(coeffs, inner_c, strict=True)):
                merged[-1] = (extent * inner_n, inner_c)
                continue
        merged.append((extent, coeffs))
    return list(reversed(merged))


def _kernel(loops: list[tuple[int, list[int]]], base: list[int]) -> tuple[list[list[int]], list[list[int]]]:
    """Micro-op kernel: at most two hardware loops (the outermost), the rest enumerated
    as micro-ops from `base`."""
    hardware, uops = _kernel_of(tuple((n, tuple(c)) for n, c in loops), tuple(base))
    return [list(h) for h in hardware], [list(u) for u in uops]


@functools.lru_cache(maxsize=256)
def _kernel_of(loops: tuple, base: tuple) -> tuple[tuple, tuple]:
    """`_kernel` on tuples, memoized: the copies of an unrolled loop repeat their kernels."""
    folded = _fold([(n, list(c)) for n, c in loops])
    hardware, rest = folded[:2], folded[2:]
    uops = []
    for point in itertools.product(*(range(n) for n, _ in rest)):
        uops.append(tuple(b + sum(i * c[k] for i, (_, c) in zip(point, rest)) for k, b in enumerate(base)))
    return tuple((n, *c) for n, c in hardware), tuple(uops)


@dataclass
class _Nest:
    loops: list[ForOp]
    body: list[Operation]
    store: memref.StoreOp


class _Converter:
    def __init__(self, function: func.FuncOp, config: VTAConfig):
        self.function = function
        self.config = config
        self.name = function.sym_name.data
        self.offsets: dict[SSAValue, int] = {}  # vta alloc -> element offset in its scope
        self.totals: dict[MemoryScope, int] = {}
        self.allocs: dict[MemoryScope, list[SSAValue]] = {}
        self.buffers: dict[MemoryScope, SSAValue] = {}  # current vta.buffer of a scope
        self.values: dict[SSAValue, SSAValue] = {}
        self.thread_users: dict[SSAValue, set[ForOp]] = {}
        self.changed: set[SSAValue] = set()
        """vta.acc allocs an ALU epilogue has changed in place (their te values are gone)."""

    def fail(self, message: str, op: Operation | None = None) -> StratoError:
        return StratoError(f"convert-loops-to-vta: @{self.name}: {message}", op=op)

    # -- driver ------------------------------------------------------------------------

    def run(self) -> func.FuncOp:
        _expand_unrolled(self.function)
        self._layout()
        old = self.function.body.block
        types = []
        for arg in old.args:
            type_ = arg.type
            if not isinstance(type_, MemRefType) or len(type_.get_shape()) < 3:
                raise self.fail(f"argument {arg.name_hint or arg.index} is not a tensor of VTA elements: {type_}")
            shape = type_.get_shape()
            types.append(MemRefType(type_.element_type, [_elements(type_), *shape[-2:]]))
        entry = Block(arg_types=types)
        for new, arg in zip(entry.args, old.args):
            new.name_hint = arg.name_hint
            self.values[arg] = new
        self.thread_users = self._users()
        top = [a for a, users in self.thread_users.items() if not users]
        self._place_buffers(entry, top)
        self._block(old, entry)
        attrs = None
        if self.function.arg_attrs is not None:
            kept = []
            for attr in self.function.arg_attrs.data:
                kept.append(DictionaryAttr({k: v for k, v in attr.data.items() if k != OUTPUT_ATTR}))
            attrs = ArrayAttr(kept)
        function = func.FuncOp(self.name, (types, []), Region(entry), arg_attrs=attrs)
        _drop_unused_arithmetic(function)
        return function

    def _layout(self) -> None:
        for op in self.function.walk():
            if isinstance(op, memref.AllocOp) and _scope(op.memref) in vta.ON_CHIP and _used(op.memref):
                scope = _scope(op.memref)
                type_ = op.memref.type
                want = (self.config.batch, self.config.block_in if scope == MemoryScope.VTA_INP else self.config.block_out)
                if scope == MemoryScope.VTA_WGT:
                    want = (self.config.block_out, self.config.block_in)
                if tuple(type_.get_shape()[-2:]) != want or len(type_.get_shape()) < 3:
                    raise self.fail(f"buffer {op.memref.name_hint} of scope {scope.value} is not an array of {want} elements", op)
                self.offsets[op.memref] = self.totals.get(scope, 0)
                self.totals[scope] = self.totals.get(scope, 0) + _elements(type_)
                self.allocs.setdefault(scope, []).append(op.memref)

    def _users(self) -> dict[SSAValue, set[ForOp]]:
        """The virtual-thread loops each vta alloc is used under (empty: used outside)."""
        users: dict[SSAValue, set[ForOp]] = {}
        for allocs in self.allocs.values():
            for alloc in allocs:
                loops = set()
                outside = False
                for use in alloc.uses:
                    if isinstance(use.operation, memref.DeallocOp):
                        continue
                    thread = _enclosing_thread(use.operation)
                    if thread is None:
                        outside = True
                    else:
                        loops.add(thread)
                users[alloc] = set() if outside else loops
        return users

    def _place_buffers(self, block: Block, allocs: Iterable[SSAValue]) -> None:
        scopes = {_scope(a) for a in allocs}
        threads = 1
        parent = block.parent_op()
        if isinstance(parent, ForOp) and parent.loop_kind == LoopKind.VIRTUAL_THREAD:
            threads = parent.trip_count
        depth = {
            MemoryScope.VTA_INP: self.config.inp_depth,
            MemoryScope.VTA_WGT: self.config.wgt_depth,
            MemoryScope.VTA_ACC: self.config.acc_depth,
        }
        for scope in sorted(scopes, key=lambda s: s.value):
            total = self.totals[scope]
            if total * threads > depth[scope]:
                raise self.fail(
                    f"the {scope.value} buffers need {total} elements a thread, "
                    f"{threads} thread(s) share {depth[scope]}"
                )
            like = self.allocs[scope][0].type
            type_ = MemRefType(like.element_type, [total, *like.get_shape()[-2:]], memory_space=ScopeAttr(scope))
            buffer = vta.BufferOp(0, type_)
            buffer.result.name_hint = scope.value.split(".")[1]
            _append(block, buffer)
            self.buffers[scope] = buffer.result

    # -- structure ---------------------------------------------------------------------

    def _block(self, old: Block, new: Block) -> None:
        for op in old.ops:
            if isinstance(op, YieldOp):
                continue
            if isinstance(op, func.ReturnOp):
                _append(new, func.ReturnOp())
            elif isinstance(op, memref.AllocOp):
                if _used(op.memref) and _scope(op.memref) not in vta.ON_CHIP:
                    raise self.fail(f"buffer {op.memref.name_hint} in scope {_scope(op.memref).value} cannot live on VTA", op)
            elif isinstance(op, memref.DeallocOp):
                continue
            elif isinstance(op, ForOp):
                stored = {s.memref for s in op.walk() if isinstance(s, memref.StoreOp)}
                if len(stored) == 1:
                    self._task(op, new)
                elif stored:
                    self._loop(op, new)
            elif isinstance(op, arith.ConstantOp | arith.AddiOp | arith.SubiOp | arith.MuliOp) and all(
                isinstance(r.type, IndexType) for r in op.results
            ):
                clone = op.clone()
                for i, operand in enumerate(op.operands):
                    clone.operands[i] = self.values.get(operand, operand)
                _append(new, clone)
                for a, b in zip(op.results, clone.results):
                    self.values[a] = b
            else:
                raise self.fail(f"cannot run '{op.name}' outside a loop nest on VTA", op)

    def _loop(self, op: ForOp, new: Block) -> None:
        axis = op.axis.data if op.axis is not None else None
        loop, body = ForOp.build(op.lb.data, op.bound, op.step.data, op.loop_kind, axis)
        loop.induction_var.name_hint = op.induction_var.name_hint
        _append(new, loop)
        self.values[op.induction_var] = loop.induction_var
        if op.loop_kind == LoopKind.VIRTUAL_THREAD:
            saved = dict(self.buffers)
            inside = [a for a, loops in self.thread_users.items() if op in loops]
            self._place_buffers(body, inside)
            self._block(op.body.block, body)
            self.buffers = saved
        else:
            self._block(op.body.block, body)

    def _nest(self, root: ForOp) -> _Nest:
        loops = [root]
        while True:
            ops = [o for o in loops[-1].body.block.ops if not isinstance(o, YieldOp)]
            inner = [o for o in ops if isinstance(o, ForOp)]
            if not inner:
                break
            if len(ops) != 1:
                raise self.fail(f"loop '{_axis(loops[-1])}' is not a perfect nest around one store", loops[-1])
            loops.append(inner[0])
        stores = [o for o in ops if isinstance(o, memref.StoreOp)]
        if len(stores) != 1 or any(o.regions for o in ops):
            raise self.fail(f"the nest under loop '{_axis(root)}' does not end in one store", root)
        return _Nest(loops, ops, stores[0])

    # -- tasks -------------------------------------------------------------------------

    def _task(self, root: ForOp, new: Block) -> None:
        nest = self._nest(root)
        store = nest.store
        dst_scope = _scope(store.memref)
        read = {op.memref for op in nest.body if isinstance(op, memref.LoadOp)}
        stale = read & self.changed
        if stale:
            raise self.fail(
                f"the nest under loop '{_axis(root)}' reads buffer {stale.pop().name_hint}, "
                "which an earlier ALU epilogue changed in place",
                root,
            )
        if store.memref not in read:
            self.changed.discard(store.memref)  # overwritten: its values are current again
        try:
            if any(TENSORIZED_ATTR in loop.attributes for loop in nest.loops):
                self._gemm(nest, new)
            elif dst_scope in vta.ON_CHIP and isinstance(store.value.owner, arith.ConstantOp):
                self._reset(nest, new)
            elif dst_scope in vta.ON_CHIP and self._dram_source(store.value) is not None:
                self._load(nest, new)
            elif dst_scope == MemoryScope.VTA_ACC or dst_scope == MemoryScope.GLOBAL:
                self._alu_store(nest, new)
            else:
                raise self.fail(f"the nest under loop '{_axis(root)}' stores to scope {dst_scope.value}", root)
        except _NotAffine as reason:
            raise self.fail(f"the nest under loop '{_axis(root)}' is not affine: {reason}", root) from None

    def _lanes(self, nest: _Nest, accesses) -> tuple[list[ForOp], list[ForOp]]:
        """(element-lane loops, the other loops): lane loops index exactly the two
        innermost dimensions of every access, identically."""
        ev = _Evaluator(assume_true=True)
        ivs = {loop.induction_var: loop for loop in nest.loops}
        lanes: set[ForOp] = set()
        want = None
        for access in accesses:
            element, lane = _element(access, ev)
            if want is None:
                want = lane
            if lane != want:
                raise self.fail(f"the nest under loop '{_axis(nest.loops[0])}' moves element lanes", nest.loops[0])
            shape = access.memref.type.get_shape()[-2:]
            for form, size in zip(lane, shape):
                if not form:
                    if size != 1:
                        raise self.fail(f"the nest under loop '{_axis(nest.loops[0])}' copies part of an element", nest.loops[0])
                    continue
                var, coeff = next(iter(form.items())) if len(form) == 1 else (None, 0)
                loop = ivs.get(var) if var is not None else None
                if loop is None or coeff != 1 or loop.trip_count != size or loop.lb.data != 0 or loop.step.data != 1:
                    raise self.fail(f"the nest under loop '{_axis(nest.loops[0])}' copies part of an element", nest.loops[0])
                lanes.add(loop)
            if any(ivs.get(k) in lanes for k in element):
                raise self.fail(f"the nest under loop '{_axis(nest.loops[0])}' mixes element lanes", nest.loops[0])
        return [l for l in nest.loops if l in lanes], [l for l in nest.loops if l not in lanes]

    def _coefficients(self, loops: list[ForOp], forms: list[Aff], local: list[bool]) -> tuple[list[tuple[int, list[int]]], list[Aff]]:
        """Per loop (trip count, coefficient in each form), and each form's rest (the
        part in outer symbols); a `local` form (an on-chip index) must not have one."""
        for loop in loops:
            if loop.lb.data != 0 or loop.step.data != 1:
                raise self.fail(f"loop '{_axis(loop)}' does not start at 0 with step 1", loop)
        ivs = [loop.induction_var for loop in loops]
        table = [(loop.trip_count, [f.get(iv, 0) for f in forms]) for loop, iv in zip(loops, ivs)]
        rests = [{k: v for k, v in f.items() if k not in ivs} for f in forms]
        for rest, is_local in zip(rests, local):
            if is_local and _constant_of(rest) is None:
                raise self.fail(f"an on-chip index of the nest under loop '{_axis(loops[0]) if loops else '?'}' depends on an outer loop")
        return table, rests

    def _sram(self, access) -> tuple[SSAValue, int]:
        scope = _scope(access.memref)
        buffer = self.buffers.get(scope)
        if buffer is None:
            raise self.fail(f"no {scope.value} buffer is placed where it is used")
        return buffer, self.offsets[access.memref]

    def _reset(self, nest: _Nest, new: Block) -> None:
        store = nest.store
        value = store.value.owner
        if _scope(store.memref) != MemoryScope.VTA_ACC or value.value.value.data != 0:
            raise self.fail(f"the nest under loop '{_axis(nest.loops[0])}' initializes a buffer other than to 0 in vta.acc", nest.loops[0])
        _, loops = self._lanes(nest, [store])
        element, _ = _element(store, _Evaluator())
        table, rests = self._coefficients(loops, [element], [True])
        acc, offset = self._sram(store)
        inp, wgt = self.buffers.get(MemoryScope.VTA_INP), self.buffers.get(MemoryScope.VTA_WGT)
        if inp is None or wgt is None:
            raise self.fail("a GEMM reset needs the vta.inp and vta.wgt buffers of its GEMM")
        hw, uops = _kernel([(n, [c[0], 0, 0]) for n, c in table], [offset + rests[0].get(None, 0), 0, 0])
        _append(new, vta.GemmOp(acc, inp, wgt, hw, uops, reset=True))

    def _gemm(self, nest: _Nest, new: Block) -> None:
        name = gemm_name(self.config)
        first = next(i for i, loop in enumerate(nest.loops) if TENSORIZED_ATTR in loop.attributes)
        marked = nest.loops[first].attributes[TENSORIZED_ATTR].data
        if marked != name:
            raise self.fail(f"loop '{_axis(nest.loops[first])}' is tensorized with {marked}, VTA runs {name}", nest.loops[first])
        loads = [o for o in nest.body if isinstance(o, memref.LoadOp)]
        by_scope = {_scope(l.memref): l for l in loads}
        if set(by_scope) != {MemoryScope.VTA_INP, MemoryScope.VTA_WGT, MemoryScope.VTA_ACC} or len(loads) != 3:
            raise self.fail(f"the GEMM under loop '{_axis(nest.loops[0])}' must read vta.inp, vta.wgt and vta.acc", nest.loops[0])
        accesses = [nest.store, by_scope[MemoryScope.VTA_INP], by_scope[MemoryScope.VTA_WGT]]
        ev = _Evaluator()
        forms = [_element(a, ev)[0] for a in accesses]
        inner = {loop.induction_var for loop in nest.loops[first:]}
        if any(k in inner for f in forms for k in f):
            raise self.fail(f"the GEMM under loop '{_axis(nest.loops[0])}' moves elements inside the intrinsic", nest.loops[0])
        table, rests = self._coefficients(nest.loops[:first], forms, [True, True, True])
        bufs = [self._sram(a) for a in accesses]
        base = [off + rest.get(None, 0) for (_, off), rest in zip(bufs, rests)]
        hw, uops = _kernel(table, base)
        _check_hazard(self, uops, nest.loops[0])
        _append(new, vta.GemmOp(bufs[0][0], bufs[1][0], bufs[2][0], hw, uops))

    def _dram_source(self, value: SSAValue) -> tuple[memref.LoadOp, SSAValue | None] | None:
        """The DRAM load a copy stores (and the in-bounds condition of a padded one)."""
        owner = value.owner
        condition = None
        if isinstance(owner, arith.SelectOp):
            zero = owner.rhs.owner
            if not isinstance(zero, arith.ConstantOp) or zero.value.value.data != 0:
                return None
            condition, owner = owner.cond, owner.lhs.owner
        if isinstance(owner, memref.LoadOp) and _scope(owner.memref) == MemoryScope.GLOBAL:
            return owner, condition
        return None

    def _load(self, nest: _Nest, new: Block) -> None:
        load, condition = self._dram_source(nest.store.value)
        if condition is not None and _scope(nest.store.memref) == MemoryScope.VTA_WGT:
            raise self.fail(f"the weight copy under loop '{_axis(nest.loops[0])}' is padded; VTA pads only inputs", nest.loops[0])
        buffer, offset = self._sram(nest.store)
        source = self.values[load.memref]
        for rows, cols, stride, dram_index, sram_index, pads in self._dma(nest, nest.store, load, condition, new, offset):
            _append(new, vta.LoadOp(source, dram_index, buffer, sram_index, rows, cols, stride, pads))

    def _dma(self, nest: _Nest, sram, dram, condition, new: Block, offset: int):
        """The 2-D DMAs between the elements `sram` and `dram` access over the nest:
        (rows, cols, DRAM row stride, DRAM index, SRAM index, pads) each, the indices
        computed at the end of `new`."""
        _, loops = self._lanes(nest, [sram, dram])
        ev = _Evaluator(assume_true=True)
        forms = [_element(sram, ev)[0], _element(dram, ev)[0]]
        table, rests = self._coefficients(loops, forms, [True, False])
        if condition is None:
            table = _fold(table)
            loops = [None] * len(table)  # only a padded copy evaluates its loops
        else:
            keep = [i for i, (n, _) in enumerate(table) if n > 1]
            loops = [loops[i] for i in keep]
            table = [table[i] for i in keep]
        while len(table) < 2:
            table.insert(0, (1, [0, 0]))
            loops.insert(0, None)
        (rows, (s_row, d_row)), (cols, (s_col, d_col)) = table[-2], table[-1]
        outer = table[:-2]
        if (cols > 1 and s_col != 1) or (rows > 1 and s_row != cols):
            raise self.fail(f"the copy under loop '{_axis(nest.loops[0])}' is not contiguous on chip", nest.loops[0])
        if cols > 1 and d_col != 1:
            raise self.fail(f"the copy under loop '{_axis(nest.loops[0])}' reads DRAM with a column stride of {d_col}", nest.loops[0])
        stride = d_row if rows > 1 else cols
        transfers = []
        for point in itertools.product(*(range(n) for n, _ in outer)):
            sram_base = offset + rests[0].get(None, 0) + sum(i * c[0] for i, (_, c) in zip(point, outer))
            dram_shift = sum(i * c[1] for i, (_, c) in zip(point, outer))
            y0, y1, x0, x1 = 0, rows, 0, cols
            if condition is not None:
                y0, y1, x0, x1 = self._rectangle(nest, loops, point, rows, cols, condition)
            dram_form = _add(rests[1], _const(dram_shift + y0 * d_row + x0 * d_col))
            pads = (y0, rows - y1, x0, cols - x1)
            if max(pads) > vta.MAX_PAD:
                raise self.fail(f"the copy under loop '{_axis(nest.loops[0])}' needs a pad of {max(pads)} (at most {vta.MAX_PAD})", nest.loops[0])
            transfers.append(
                (y1 - y0, x1 - x0, stride, self._index(dram_form, new), self._index(_const(sram_base), new), pads)
            )
        return transfers

    def _rectangle(self, nest, loops, point, rows, cols, condition) -> tuple[int, int, int, int]:
        """The in-bounds rows [y0, y1) and columns [x0, x1) of one padded 2-D copy."""
        env: dict[SSAValue, np.ndarray] = {loop.induction_var: np.zeros((1, 1), np.int64) for loop in nest.loops}
        for loop, value in zip(loops[:-2], point):
            env[loop.induction_var] = np.full((1, 1), value, np.int64)
        row_loop, col_loop = loops[-2], loops[-1]
        assert col_loop is not None
        if row_loop is not None:
            env[row_loop.induction_var] = np.arange(rows, dtype=np.int64).reshape(rows, 1)
        env[col_loop.induction_var] = np.arange(cols, dtype=np.int64).reshape(1, cols)
        inside = np.broadcast_to(_grid(condition, env, {}), (rows, cols))
        if inside.dtype != np.bool_:
            raise _NotAffine("a padding condition that is not a boolean")
        if not inside.any():
            raise self.fail(f"the copy under loop '{_axis(nest.loops[0])}' reads no element", nest.loops[0])
        used_rows, used_cols = np.flatnonzero(inside.any(axis=1)), np.flatnonzero(inside.any(axis=0))
        y0, y1, x0, x1 = int(used_rows[0]), int(used_rows[-1]) + 1, int(used_cols[0]), int(used_cols[-1]) + 1
        if not inside[y0:y1, x0:x1].all() or inside.sum() != (y1 - y0) * (x1 - x0):
            raise self.fail(f"the copy under loop '{_axis(nest.loops[0])}' is padded other than around a rectangle", nest.loops[0])
        return y0, y1, x0, x1

    def _index(self, form: Aff, new: Block) -> SSAValue:
        """`form` as index arithmetic at the end of `new`."""
        total = _append(new, arith.ConstantOp(IntegerAttr(form.get(None, 0), IndexType()))).result
        for var, coeff in form.items():
            if var is None:
                continue
            value = self.values.get(var)
            if value is None:
                raise self.fail("a DRAM index depends on a value computed inside a task")
            if coeff != 1:
                factor = _append(new, arith.ConstantOp(IntegerAttr(coeff, IndexType()))).result
                value = _append(new, arith.MuliOp(value, factor)).result
            total = _append(new, arith.AddiOp(total, value)).result
        return total

    _ALU = {arith.ShRSIOp: "shr", arith.MaxSIOp: "max", arith.MinSIOp: "min", arith.AddiOp: "add", arith.MuliOp: "mul"}
    _TENSOR = ("max", "min", "add")

    def _alu_store(self, nest: _Nest, new: Block) -> None:
        root = nest.loops[0]
        store = nest.store
        value = store.value
        truncate = isinstance(value.owner, arith.TruncIOp)
        if truncate:
            value = value.owner.input
        if _scope(store.memref) == MemoryScope.GLOBAL and not truncate:
            raise self.fail(f"the nest under loop '{root.axis.data if root.axis else '?'}' stores to DRAM without truncating to i8", root)
        chain: list[tuple[str, int | None, memref.LoadOp | None]] = []
        while not isinstance(value.owner, memref.LoadOp):
            op = value.owner
            opcode = self._ALU.get(type(op)) if isinstance(op, Operation) else None
            if opcode is None:
                raise self.fail(f"the nest under loop '{_axis(root)}' computes '{getattr(op, 'name', op)}', which the VTA ALU does not run", root)
            lhs, rhs = op.operands
            if isinstance(rhs.owner, arith.ConstantOp):
                chain.append((opcode, rhs.owner.value.value.data, None))
                value = lhs
            elif isinstance(lhs.owner, arith.ConstantOp) and opcode != "shr":
                chain.append((opcode, lhs.owner.value.value.data, None))
                value = rhs
            elif opcode in self._TENSOR and isinstance(rhs.owner, memref.LoadOp):
                chain.append((opcode, None, rhs.owner))
                value = lhs
            elif opcode in self._TENSOR and isinstance(lhs.owner, memref.LoadOp):
                chain.append((opcode, None, lhs.owner))
                value = rhs
            else:
                raise self.fail(f"the nest under loop '{_axis(root)}' has an ALU op with no constant or vta.acc operand", root)
        base = value.owner
        sources = [base] + [l for _, _, l in chain if l is not None]
        if any(_scope(l.memref) != MemoryScope.VTA_ACC for l in sources):
            raise self.fail(f"the nest under loop '{_axis(root)}' computes on data outside vta.acc", root)
        chain.reverse()
        accesses = [store, *sources]
        _, loops = self._lanes(nest, accesses)
        ev = _Evaluator()
        forms = [_element(a, ev)[0] for a in sources]
        table, rests = self._coefficients(loops, forms, [True] * len(forms))
        acc, base_offset = self._sram(base)
        dst = base_offset + rests[0].get(None, 0)
        for opcode, imm, source in chain:
            if imm is not None:
                if not -(1 << 15) <= imm < (1 << 15):
                    raise self.fail(f"ALU immediate {imm} does not fit 16 bits", root)
                hw, uops = _kernel([(n, [c[0], c[0]]) for n, c in table], [dst, dst])
                _append(new, vta.AluOp(opcode, acc, hw, uops, imm))
            else:
                k = sources.index(source)
                src = self.offsets[source.memref] + rests[k].get(None, 0)
                hw, uops = _kernel([(n, [c[0], c[k]]) for n, c in table], [dst, src])
                _append(new, vta.AluOp(opcode, acc, hw, uops))
        if _scope(store.memref) == MemoryScope.VTA_ACC:
            if _element(store, ev)[0] != forms[0]:
                raise self.fail(f"the ALU nest under loop '{_axis(root)}' does not update vta.acc in place", root)
            return
        self.changed.add(base.memref)
        out = self.values[store.memref]
        for rows, cols, stride, dram_index, sram_index, _ in self._dma(nest, base, store, None, new, base_offset):
            _append(new, vta.StoreOp(acc, sram_index, out, dram_index, rows, cols, stride))


def _check_hazard(conv: _Converter, uops: list[list[int]], loop: ForOp) -> None:
    if len(uops) > 1 and any(a[0] == b[0] for a, b in zip(uops, uops[1:])):
        raise conv.fail(f"the GEMM under loop '{_axis(loop)}' writes one accumulator element in consecutive micro-ops", loop)


_GRID_PREDICATES = {
    0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal, 4: np.greater, 5: np.greater_equal,
    6: np.less, 7: np.less_equal, 8: np.greater, 9: np.greater_equal,
}  # fmt: skip


def _grid(value: SSAValue, env: dict[SSAValue, np.ndarray], memo: dict[SSAValue, np.ndarray]) -> np.ndarray:
    """A condition (or index) over a grid of loop values at once; a value that depends on
    a loop not in `env` (an outer loop the copy does not fix) is _NotAffine."""
    if value in env:
        return env[value]
    if value in memo:
        return memo[value]
    op = value.owner
    if isinstance(op, arith.ConstantOp):
        attr = op.value
        assert isinstance(attr, IntegerAttr)
        if isinstance(attr.type, IntegerType) and attr.type.width.data == 1:
            result = np.array(bool(attr.value.data))
        else:
            result = np.array(attr.value.data, np.int64)
    elif isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp | arith.AndIOp | arith.OrIOp | arith.CmpiOp):
        a, b = _grid(op.lhs, env, memo), _grid(op.rhs, env, memo)
        if isinstance(op, arith.AddiOp):
            result = a + b
        elif isinstance(op, arith.SubiOp):
            result = a - b
        elif isinstance(op, arith.MuliOp):
            result = a * b
        elif isinstance(op, arith.AndIOp):
            result = a & b
        elif isinstance(op, arith.OrIOp):
            result = a | b
        else:
            result = _GRID_PREDICATES[op.predicate.value.data](a, b)
    elif isinstance(op, arith.SelectOp):
        result = np.where(_grid(op.cond, env, memo), _grid(op.lhs, env, memo), _grid(op.rhs, env, memo))
    elif isinstance(op, arith.IndexCastOp):
        result = _grid(op.input, env, memo)
    else:
        raise _NotAffine("a padding condition that depends on a loop outside the copy (unroll that loop)")
    memo[value] = result
    return result


def _drop_unused_arithmetic(function: func.FuncOp) -> None:
    """Erase index arithmetic nothing reads (the values of expanded unrolled loops)."""
    changed = True
    while changed:
        changed = False
        for op in list(function.walk(reverse=True)):
            if isinstance(op, arith.ConstantOp | arith.AddiOp | arith.SubiOp | arith.MuliOp) and not any(
                r.uses for r in op.results
            ):
                op.detach()
                op.erase()
                changed = True


def _used(value: SSAValue) -> bool:
    return any(not isinstance(use.operation, memref.DeallocOp) for use in value.uses)


def _enclosing_thread(op: Operation) -> ForOp | None:
    found = None
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, ForOp) and parent.loop_kind == LoopKind.VIRTUAL_THREAD:
            found = parent
        parent = parent.parent_op()
    return found


def _append(block: Block, op: Operation) -> Operation:
    last = block.last_op
    if last is not None and isinstance(last, YieldOp):
        block.insert_op_before(op, last)
    else:
        block.add_op(op)
    return op


def _expand_unrolled(function: func.FuncOp) -> None:
    """Replace every `unrolled` loop by a copy of its body an iteration."""
    while True:
        loop = next(
            (op for op in function.walk() if isinstance(op, ForOp) and op.loop_kind == LoopKind.UNROLLED), None
        )
        if loop is None:
            return
        parent = loop.parent_block()
        assert parent is not None
        for value in range(loop.lb.data, loop.static_ub, loop.step.data):
            constant = arith.ConstantOp(IntegerAttr(value, IndexType()))
            parent.insert_op_before(constant, loop)
            mapping: dict[SSAValue, SSAValue] = {loop.induction_var: constant.result}
            for op in loop.body.block.ops:
                if not isinstance(op, YieldOp):
                    parent.insert_op_before(op.clone(value_mapper=mapping), loop)
        loop.detach()
        loop.erase()


def convert_loops_to_vta(module: ModuleOp, config: VTAConfig = DEFAULT_CONFIG) -> None:
    """Convert every kernel of `module` in place (see the module docstring)."""
    for op in list(module.ops):
        if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes:
            converted = _Converter(op, config).run()
            module.body.block.insert_op_before(converted, op)
            op.detach()
            op.erase()


class ConvertLoopsToVtaPass(ModulePass):
    """Scheduled loop-level kernels (tiles in VTA scopes, GEMM tensorized) to vta ops."""

    name = "convert-loops-to-vta"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        convert_loops_to_vta(op)


__all__ = ["ConvertLoopsToVtaPass", "convert_loops_to_vta"]
