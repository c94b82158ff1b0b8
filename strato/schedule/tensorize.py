"""tensorize: replace the loop nest under a loop by a declared intrinsic.

The intrinsic's te description is lowered to its canonical loop nest (convert-te-to-loops)
and the kernel's nest under `loop` must compute exactly the same thing:

- structure: a perfect nest of as many loops as the description's update nest, whose
  innermost body stores one value;
- computation: the stored value is the same tree of arith/math ops over loads (addition
  and multiplication may have their operands swapped), and a reduction accumulates into
  the location it stores, as the description does;
- element types of every operand;
- loops: a one-to-one mapping of description axes to kernel loops with equal trip counts,
  such that every operand depends on exactly the loops its description counterpart does
  (a reduction axis maps to a loop the output does not depend on), every index being
  affine in the kernel loops (values from outside the nest are free);
- strides: an operand the intrinsic needs contiguous along an axis moves by one element
  per iteration of the mapped loop.

When one of these fails, the ScheduleError names it ("cannot tensorize loop 'k.inner' of
stage 'dense' with cpu.fma_tile.8x32x64: operand b moves 1024 elements per iteration of
loop 'j.inner' (axis j), the intrinsic needs 1"). Otherwise the intrinsic's implementation
replaces the nest, and the new loops carry `tensorized = "<intrinsic>"`.

    tensorize(kernel, k_loop, "cpu.fma_tile.8x32x64")
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache

from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import IndexType, MemRefType, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from strato.dialects.loop import ForOp, YieldOp, loop_stage
from strato.schedule.access import (
    affine_of,
    is_loop_variable,
    linear_coefficients,
    loop_variable_range,
    memref_layout,
)
from strato.schedule.errors import ScheduleError
from strato.schedule.intrinsics import TENSORIZED_ATTR, Intrinsic, get_intrinsic

_COMMUTATIVE = frozenset(
    {"arith.addf", "arith.mulf", "arith.addi", "arith.muli", "arith.maximumf",
     "arith.minimumf", "arith.maxnumf", "arith.minnumf"}
)  # fmt: skip


def _perfect_nest(root: ForOp) -> tuple[list[ForOp], list[Operation]] | str:
    """The loops of the perfect nest rooted at `root` and its innermost body, or why
    it is not one."""
    loops = [root]
    while True:
        ops = [op for op in loops[-1].body.block.ops if not isinstance(op, YieldOp)]
        inner = [op for op in ops if isinstance(op, ForOp)]
        if not inner:
            if any(op.regions for op in ops):
                return f"the body of loop '{_axis(loops[-1])}' has nested regions"
            return loops, ops
        if len(ops) != 1:
            return (
                f"loop '{_axis(loops[-1])}' holds other ops beside loop "
                f"'{_axis(inner[0])}' (not a perfect nest)"
            )
        loops.append(inner[0])


def _axis(loop: ForOp) -> str:
    return loop.axis.data if loop.axis is not None else "?"


@dataclass(frozen=True)
class _Node:
    """One node of the tree of ops computing a stored value."""

    name: str  # op name, "load", or "outer" for a value from outside the body
    op: Operation | None
    children: tuple[_Node, ...] = ()


def _tree(value: SSAValue, body: set[Operation]) -> _Node:
    op = value.owner
    if not isinstance(op, Operation) or op not in body:
        return _Node("outer", None)
    if isinstance(op, memref.LoadOp):
        return _Node("load", op)
    if isinstance(op, arith.ConstantOp):
        return _Node(f"constant {op.value}", op)
    return _Node(op.name, op, tuple(_tree(v, body) for v in op.operands))


Pairing = list[tuple[memref.LoadOp, memref.LoadOp]]


def _match_trees(want: _Node, have: _Node) -> list[Pairing] | str:
    """Every way to pair (description load, kernel load) so that the trees compute the
    same (operands of commutative ops in either order), or where they differ."""
    if want.name != have.name:
        return f"computes {have.name} where the intrinsic computes {want.name}"
    if want.name == "load":
        assert isinstance(want.op, memref.LoadOp) and isinstance(have.op, memref.LoadOp)
        return [[(want.op, have.op)]]
    orders: list[Sequence[_Node]] = [have.children]
    if want.name in _COMMUTATIVE and len(have.children) == 2:
        orders.append(have.children[::-1])
    reason = ""
    pairings: list[Pairing] = []
    for children in orders:
        partial: list[Pairing] = [[]]
        for w, h in zip(want.children, children, strict=True):
            result = _match_trees(w, h)
            if isinstance(result, str):
                reason = result
                partial = []
                break
            partial = [p + q for p in partial for q in result]
        pairings += partial
    return pairings if pairings else reason


@dataclass
class _Pattern:
    """The update nest of an intrinsic's description."""

    loops: list[ForOp]
    axes: list[str]
    store: memref.StoreOp
    tree: _Node
    names: dict[SSAValue, str]  # buffer -> operand name

    def operand(self, op: memref.LoadOp | memref.StoreOp) -> str:
        return self.names[op.memref]


@cache
def _description_module(text: str, lower: Callable[[str], ModuleOp]) -> ModuleOp:
    """The canonical loop nest of a description (read only: shared by every match)."""
    return lower(text)


def _pattern(intrinsic: Intrinsic) -> _Pattern:
    module = _description_module(intrinsic.description, intrinsic.lower)
    kernel = next(op for op in module.ops if isinstance(op, func.FuncOp))
    names = {
        arg: arg.name_hint or f"arg{i}" for i, arg in enumerate(kernel.body.block.args)
    }
    updates = [
        op
        for op in kernel.walk()
        if isinstance(op, ForOp) and not isinstance(op.parent_op(), ForOp)
    ]
    nest = _perfect_nest(updates[-1])  # the last top-level nest: the update
    assert not isinstance(nest, str), f"intrinsic {intrinsic.name}: {nest}"
    loops, body = nest
    stores = [op for op in body if isinstance(op, memref.StoreOp)]
    assert len(stores) == 1, f"intrinsic {intrinsic.name}: one store expected"
    store = stores[0]
    return _Pattern(
        loops, [_axis(loop) for loop in loops], store, _tree(store.value, set(body)), names
    )


@dataclass
class Match:
    """A kernel loop nest that computes what an intrinsic describes."""

    intrinsic: Intrinsic
    root: ForOp
    loops: dict[str, ForOp]
    """description axis -> kernel loop"""
    loads: dict[str, memref.LoadOp]
    """operand -> the kernel's load of it (the output's is the accumulator load)"""
    store: memref.StoreOp
    body: list[Operation]
    """the innermost body of the kernel nest"""
    stage: str | None = field(default=None)

    _mapping: dict[SSAValue, SSAValue] = field(default_factory=dict)

    def clone_slice(
        self, values: Sequence[SSAValue], ivs: dict[ForOp, SSAValue], block: Block
    ) -> list[SSAValue]:
        """Clone the ops of the innermost body that compute `values` to the end of
        `block` (before its terminator), with the induction variable of each kernel
        loop in `ivs` replaced by a 0-based one (`lb + step * iv`); the clones of
        `values`. `cloned(v)` answers for the other values computed on the way."""
        terminator = block.last_op
        assert terminator is not None
        self._mapping = {}
        for loop, iv in ivs.items():
            value = iv
            if loop.step.data != 1:
                step = arith.ConstantOp.from_int_and_width(loop.step.data, IndexType())
                scaled = arith.MuliOp(iv, step.result)
                block.insert_op_before(step, terminator)
                block.insert_op_before(scaled, terminator)
                value = scaled.result
            if loop.lb.data != 0:
                lb = arith.ConstantOp.from_int_and_width(loop.lb.data, IndexType())
                moved = arith.AddiOp(value, lb.result)
                block.insert_op_before(lb, terminator)
                block.insert_op_before(moved, terminator)
                value = moved.result
            self._mapping[loop.induction_var] = value
        needed = _backward_slice(values, self.body)
        for op in self.body:
            if op in needed:
                block.insert_op_before(op.clone(self._mapping), terminator)
        return [self._mapping.get(v, v) for v in values]

    def cloned(self, value: SSAValue) -> SSAValue | None:
        """The clone of `value` made by the last `clone_slice`."""
        return self._mapping.get(value)


class _Matcher:
    def __init__(self, intrinsic: Intrinsic, root: ForOp):
        self.intrinsic = intrinsic
        self.root = root
        self.pattern = _pattern(intrinsic)

    def fail(self, reason: str) -> ScheduleError:
        stage = loop_stage(self.root)
        where = f" of stage '{stage}'" if stage is not None else ""
        return ScheduleError(
            f"cannot tensorize loop '{_axis(self.root)}'{where} with "
            f"{self.intrinsic.name}: {reason}",
            op=self.root,
        )

    def match(self) -> Match:
        nest = _perfect_nest(self.root)
        if isinstance(nest, str):
            raise self.fail(nest)
        loops, body = nest
        want = self.pattern
        if len(loops) != len(want.loops):
            raise self.fail(
                f"the nest has {len(loops)} loops ({', '.join(map(_axis, loops))}), "
                f"the intrinsic {len(want.loops)} ({', '.join(want.axes)})"
            )
        stores = [op for op in body if isinstance(op, memref.StoreOp)]
        if len(stores) != 1:
            raise self.fail(f"the innermost body stores {len(stores)} values, not one")
        store = stores[0]
        pairings = _match_trees(want.tree, _tree(store.value, set(body)))
        if isinstance(pairings, str):
            raise self.fail(f"the stored value {pairings}")
        reasons: list[tuple[int, str]] = []
        for pairs in pairings:
            accesses = [(want.store, store), *pairs]
            self.check_types(accesses)
            self.check_reduction(pairs, store)
            mapping = self.map_loops(loops, accesses, reasons)
            if mapping is not None:
                break
        else:
            raise self.fail(max(reasons, key=lambda r: r[0])[1])
        loads = {want.operand(w): h for w, h in pairs}
        return Match(
            self.intrinsic,
            self.root,
            {axis: mapping[i] for i, axis in enumerate(want.axes)},
            loads,  # type: ignore[arg-type]
            store,
            body,
            loop_stage(self.root),
        )

    def check_types(self, accesses) -> None:
        for want, have in accesses:
            want_type = want.memref.type.element_type
            have_type = have.memref.type.element_type
            if want_type != have_type:
                raise self.fail(
                    f"operand {self.pattern.operand(want)} has element type "
                    f"{have_type}, the intrinsic needs {want_type}"
                )

    def check_reduction(self, pairs, store: memref.StoreOp) -> None:
        want_store = self.pattern.store
        for want, have in pairs:
            if want.memref is not want_store.memref:
                continue
            same = have.memref is store.memref and all(
                a is b or _same_affine(a, b)
                for a, b in zip(have.indices, store.indices, strict=True)
            )
            if not same:
                raise self.fail(
                    f"operand {self.pattern.operand(want)} is not accumulated in place: "
                    "the load it adds to and the store are different locations"
                )

    def map_loops(
        self, loops: list[ForOp], accesses, reasons: list[tuple[int, str]]
    ) -> list[ForOp] | None:
        """The kernel loop of each description loop, in description order (None, with
        the reason of each mapping tried added to `reasons`, when there is none)."""
        want_loops = self.pattern.loops
        inside = {loop.induction_var for loop in loops}
        for perm in itertools.permutations(loops):
            reason = self.check_mapping(list(perm), want_loops, accesses, inside)
            if reason is None:
                return list(perm)
            reasons.append(reason)
        return None

    def check_mapping(
        self, perm, want_loops, accesses, inside
    ) -> tuple[int, str] | None:
        """Why mapping description loops to `perm` fails (None when it does not), with
        how far the mapping got: operands are checked in turn (dependences, then
        strides), trip counts last, so the reason kept for the user is about the
        closest mapping."""
        axis_of = {
            have.induction_var: _axis(want) for want, have in zip(want_loops, perm)
        }
        for passed, (want_access, have_access) in enumerate(accesses):
            operand = self.pattern.operand(want_access)
            want_coefficients = _linear_coefficients(want_access, None)
            have_coefficients = _linear_coefficients(have_access, inside)
            if have_coefficients is None:
                return passed, (
                    f"an index of operand {operand} is not affine in the loops of the nest"
                )
            assert want_coefficients is not None
            want_axes = {
                _axis(loop) for loop in want_loops
                if want_coefficients.get(loop.induction_var, 0) != 0
            }  # fmt: skip
            have_axes = {axis_of[v] for v, c in have_coefficients.items() if c != 0}
            if want_axes != have_axes:
                return passed, (
                    f"operand {operand} depends on axes {_names(have_axes)} "
                    f"(loops {_loop_names(perm, want_loops, have_axes)}), "
                    f"the intrinsic's on {_names(want_axes)}"
                )
            for axis in [a for o, a in self.intrinsic.unit_stride.items() if o == operand]:
                loop = perm[[_axis(w) for w in want_loops].index(axis)]
                stride = have_coefficients.get(loop.induction_var, 0) * loop.step.data
                if stride != 1:
                    return passed, (
                        f"operand {operand} moves {stride} elements per iteration of "
                        f"loop '{_axis(loop)}' (axis {axis}), the intrinsic needs 1"
                    )
        for want, have in zip(want_loops, perm, strict=True):
            if want.trip_count != have.trip_count:
                return len(accesses), (
                    f"trip counts differ: loop '{_axis(have)}' has {have.trip_count} "
                    f"iterations, axis {_axis(want)} of the intrinsic {want.trip_count}"
                )
        return None


def _names(axes: set[str]) -> str:
    return "{" + ", ".join(sorted(axes)) + "}"


def _loop_names(perm, want_loops, axes: set[str]) -> str:
    by_axis = {_axis(w): _axis(h) for w, h in zip(want_loops, perm)}
    return "{" + ", ".join(sorted(by_axis[a] for a in axes)) + "}"


def _same_affine(a: SSAValue, b: SSAValue) -> bool:
    fa, fb = affine_of(a, _any_value), affine_of(b, _any_value)
    return fa is not None and fb is not None and (fa - fb) == type(fa)()


def _any_value(value: SSAValue) -> bool:
    """Every non-constant leaf as a variable: compares index expressions symbolically."""
    op = value.owner
    return isinstance(value, BlockArgument) or not isinstance(
        op, arith.AddiOp | arith.SubiOp | arith.MuliOp | arith.ConstantOp
    )


def _linear_coefficients(
    access: memref.LoadOp | memref.StoreOp, inside: set[SSAValue] | None
) -> dict[SSAValue, int] | None:
    """Elements moved per unit of each loop variable (the linearized address), or None
    when an index is not affine in the variables of `inside` (all loop variables when
    None). Values that do not depend on `inside` are free."""
    type_ = access.memref.type
    assert isinstance(type_, MemRefType)

    def is_variable(value: SSAValue) -> bool:
        # loop variables, and values from outside the nest that are not affine
        # functions of loop variables themselves (symbols the nest does not change)
        if is_loop_variable(value):
            return True
        if inside is None or _depends_on(value, inside):
            return False
        return affine_of(value, ranges=loop_variable_range) is None

    coefficients = linear_coefficients(
        access.indices, memref_layout(type_).strides, is_variable, loop_variable_range
    )
    if coefficients is None or inside is None:
        return coefficients
    return {value: c for value, c in coefficients.items() if value in inside}


def _backward_slice(values: Sequence[SSAValue], body: list[Operation]) -> set[Operation]:
    inside = set(body)
    needed: set[Operation] = set()
    work = list(values)
    while work:
        op = work.pop().owner
        if isinstance(op, Operation) and op in inside and op not in needed:
            needed.add(op)
            work.extend(op.operands)
    return needed


def _depends_on(value: SSAValue, variables: set[SSAValue], depth: int = 32) -> bool:
    if value in variables:
        return True
    op = value.owner
    if depth == 0:
        return True
    if not isinstance(op, Operation):
        return False
    return any(_depends_on(v, variables, depth - 1) for v in op.operands)


def match_intrinsic(loop: ForOp, name: str) -> Match:
    """How the nest under `loop` matches intrinsic `name`; ScheduleError if it does not."""
    return _Matcher(get_intrinsic(name), loop).match()


def tensorize(loop: ForOp, name: str) -> Match:
    """Replace the nest under `loop` by intrinsic `name` (see the module docstring)."""
    match = match_intrinsic(loop, name)
    match.intrinsic.implement(match)
    return match


__all__ = ["TENSORIZED_ATTR", "Match", "match_intrinsic", "tensorize"]
