"""Access analysis: every load and store as an affine function of loop variables.

An index of a `memref.load`/`memref.store` is affine when it is built from index
constants, loop induction variables (or other variables the caller names) and
`arith.addi`/`arith.subi`/`arith.muli` by a constant; anything else (a clamp, a select,
a division) makes that index opaque (`None`). Given the ranges of the variables,
`affine_of` also sees through index casts and through divisions and remainders by a
constant that the ranges make exact: with `0 <= r < c`, `(c * q + r) / c` is `q` and
`(c * q + r) % c` is `r` (the blocked layouts `transform_layout` makes index buffers so).
Each stage's read and write regions per buffer follow from the loop bounds: one
inclusive range per dimension, the whole dimension where an index is opaque. Where an
element lives in its buffer (`memref_layout`: row-major unless the type says otherwise)
turns an access into a linearized address (`linear_coefficients`: elements moved per
unit of each variable).

    for access in accesses(kernel):
        access.buffer, access.is_write, access.indices   # [Affine | None per dim]
    regions = stage_regions(kernel)
    regions["dense"].reads[x_buffer]                     # [(lo, hi) per dim]
    affine_of(index, ranges=loop_variable_range)         # through exact divisions

Bound inference for compute_at, cache_read/cache_write, tensorize matching, the default
schedules' stride checks, the tuner's features and the CPU target's vectorization and
index simplification all read this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StridedLayoutAttr,
)
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from strato.dialects.loop import ForOp, loop_stage


@dataclass(frozen=True)
class Affine:
    """sum(coefficient * variable) + constant, variables being SSA values."""

    terms: tuple[tuple[SSAValue, int], ...] = ()
    constant: int = 0

    @staticmethod
    def variable(value: SSAValue) -> Affine:
        return Affine(((value, 1),), 0)

    @staticmethod
    def const(value: int) -> Affine:
        return Affine((), value)

    def coefficient(self, value: SSAValue) -> int:
        return sum(c for v, c in self.terms if v is value)

    @property
    def variables(self) -> list[SSAValue]:
        return [v for v, _ in self.terms]

    def __add__(self, other: Affine) -> Affine:
        coeffs: dict[SSAValue, int] = {}
        for v, c in (*self.terms, *other.terms):
            coeffs[v] = coeffs.get(v, 0) + c
        return Affine(tuple((v, c) for v, c in coeffs.items() if c != 0), self.constant + other.constant)

    def scale(self, factor: int) -> Affine:
        if factor == 0:
            return Affine()
        return Affine(tuple((v, c * factor) for v, c in self.terms), self.constant * factor)

    def __sub__(self, other: Affine) -> Affine:
        return self + other.scale(-1)

    def bounds(self, ranges: Callable[[SSAValue], tuple[int, int] | None]) -> tuple[int, int] | None:
        """The least and greatest value given an inclusive range per variable (None when
        a variable has no known range)."""
        lo = hi = self.constant
        for v, c in self.terms:
            r = ranges(v)
            if r is None:
                return None
            a, b = c * r[0], c * r[1]
            lo += min(a, b)
            hi += max(a, b)
        return lo, hi

    def __str__(self) -> str:
        parts = [f"{c}*%{v.name_hint or '?'}" for v, c in self.terms]
        if self.constant or not parts:
            parts.append(str(self.constant))
        return " + ".join(parts)


def _constant_index(value: SSAValue) -> int | None:
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def is_loop_variable(value: SSAValue) -> bool:
    """Whether `value` is the induction variable of a `loop.for`."""
    return (
        isinstance(value, BlockArgument)
        and isinstance(value.owner.parent_op(), ForOp)
        and isinstance(value.type, IndexType)
    )


Ranges = Callable[[SSAValue], "tuple[int, int] | None"]
"""An inclusive range of values per variable (None: unknown)."""

_DIVISIONS = (arith.DivUIOp, arith.DivSIOp, arith.FloorDivSIOp)
_REMAINDERS = (arith.RemUIOp, arith.RemSIOp)


def affine_of(
    value: SSAValue,
    is_variable: Callable[[SSAValue], bool] = is_loop_variable,
    ranges: Ranges | None = None,
) -> Affine | None:
    """`value` as an affine function of the variables `is_variable` accepts (by default
    loop induction variables), or None when it is not one. With `ranges`, index casts
    are seen through, and divisions and remainders by a constant that the ranges make
    exact (see the module docstring)."""
    if is_variable(value):
        return Affine.variable(value)
    constant = _constant_index(value)
    if constant is not None:
        return Affine.const(constant)
    op = value.owner
    if ranges is not None and isinstance(op, arith.IndexCastOp):
        return affine_of(op.input, is_variable, ranges)
    exact = ranges is not None and isinstance(op, (*_DIVISIONS, *_REMAINDERS))
    if not (exact or isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp)):
        return None
    lhs = affine_of(op.lhs, is_variable, ranges)
    rhs = affine_of(op.rhs, is_variable, ranges)
    if lhs is None or rhs is None:
        return None
    if isinstance(op, arith.AddiOp):
        return lhs + rhs
    if isinstance(op, arith.SubiOp):
        return lhs - rhs
    if isinstance(op, arith.MuliOp):
        if not lhs.terms:
            return rhs.scale(lhs.constant)
        if not rhs.terms:
            return lhs.scale(rhs.constant)
        return None
    assert ranges is not None
    if rhs.terms or rhs.constant <= 0:
        return None
    parts = _quotient_and_remainder(lhs, rhs.constant, ranges)
    if parts is None:
        return None
    quotient, remainder = parts
    return quotient if isinstance(op, _DIVISIONS) else remainder


def _quotient_and_remainder(
    x: Affine, divisor: int, ranges: Ranges
) -> tuple[Affine, Affine] | None:
    """(q, r) with x = divisor * q + r and 0 <= r < divisor for all variable values
    (and x >= 0, so truncating and flooring divisions agree), or None."""
    whole = tuple((v, c // divisor) for v, c in x.terms if c % divisor == 0)
    rest = tuple((v, c) for v, c in x.terms if c % divisor != 0)
    remainder = Affine(rest, x.constant % divisor)
    quotient = Affine(whole, x.constant // divisor)
    remainder_bounds = remainder.bounds(ranges)
    total_bounds = x.bounds(ranges)
    if remainder_bounds is None or total_bounds is None:
        return None
    if remainder_bounds[0] < 0 or remainder_bounds[1] >= divisor or total_bounds[0] < 0:
        return None
    return quotient, remainder


@dataclass
class Access:
    """One `memref.load` or `memref.store`: its buffer and an affine map per index
    (None where the index is opaque)."""

    op: memref.LoadOp | memref.StoreOp
    buffer: SSAValue
    is_write: bool
    indices: list[Affine | None]

    @property
    def is_affine(self) -> bool:
        return all(i is not None for i in self.indices)


def access_of(
    op: Operation, is_variable: Callable[[SSAValue], bool] = is_loop_variable
) -> Access | None:
    """The access `op` makes, if it is a load or a store."""
    if isinstance(op, memref.LoadOp):
        return Access(op, op.memref, False, [affine_of(i, is_variable) for i in op.indices])
    if isinstance(op, memref.StoreOp):
        return Access(op, op.memref, True, [affine_of(i, is_variable) for i in op.indices])
    return None


def accesses(
    root: Operation | Block, is_variable: Callable[[SSAValue], bool] = is_loop_variable
) -> list[Access]:
    """Every load and store under `root`, in program order."""
    ops: Iterable[Operation] = root.walk()
    return [a for op in ops if (a := access_of(op, is_variable)) is not None]


Range = tuple[int, int]
"""An inclusive range of indices."""


def loop_range(loop: ForOp) -> Range:
    """The values the induction variable of `loop` takes (inclusive)."""
    last = loop.lb.data + max(loop.trip_count - 1, 0) * loop.step.data
    return loop.lb.data, last


def loop_variable_range(value: SSAValue) -> Range | None:
    """The values a loop induction variable takes (None for any other value, and for
    the variable of a loop whose upper bound is known at run time only)."""
    if is_loop_variable(value):
        loop = value.owner.parent_op()  # type: ignore[union-attr]
        assert isinstance(loop, ForOp)
        return None if loop.is_dynamic else loop_range(loop)
    return None


def access_region(access: Access, ranges: Ranges = loop_variable_range) -> list[Range]:
    """The indices `access` touches per dimension, within the buffer's shape."""
    type_ = access.buffer.type
    assert isinstance(type_, MemRefType)
    region: list[Range] = []
    for index, dim in zip(access.indices, type_.get_shape()):
        bounds = index.bounds(ranges) if index is not None else None
        if bounds is None:
            region.append((0, dim - 1))
        else:
            region.append((max(bounds[0], 0), min(bounds[1], dim - 1)))
    return region


def union(a: list[Range], b: list[Range]) -> list[Range]:
    return [(min(x[0], y[0]), max(x[1], y[1])) for x, y in zip(a, b)]


@dataclass
class StageRegions:
    """What a stage reads and writes: per buffer, one inclusive range per dimension."""

    reads: dict[SSAValue, list[Range]] = field(default_factory=dict)
    writes: dict[SSAValue, list[Range]] = field(default_factory=dict)

    def add(self, access: Access, region: list[Range]) -> None:
        table = self.writes if access.is_write else self.reads
        previous = table.get(access.buffer)
        table[access.buffer] = region if previous is None else union(previous, region)


def owning_stage(op: Operation) -> str | None:
    """The stage of the innermost `loop.for` around `op`."""
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, ForOp):
            return loop_stage(parent)
        parent = parent.parent_op()
    return None


def stage_regions(kernel: Operation) -> dict[str, StageRegions]:
    """Read and write regions of every stage of a kernel, keyed by stage name. An
    access belongs to the stage of its innermost enclosing loop; a reduction's init and
    update nests both count for their stage (the update reads its own buffer)."""
    result: dict[str, StageRegions] = {}
    for access in accesses(kernel):
        stage = owning_stage(access.op)
        if stage is None:
            continue
        result.setdefault(stage, StageRegions()).add(access, access_region(access))
    return result


# -- where elements live ------------------------------------------------------------------


@dataclass(frozen=True)
class MemRefLayout:
    """Where element (i0, i1, ...) of a static memref lives, in elements from the
    base pointer: `offset + sum(i_k * strides[k])`."""

    offset: int
    strides: tuple[int, ...]

    def is_contiguous(self, shape: Sequence[int]) -> bool:
        return self.offset == 0 and self.strides == row_major_strides(shape)


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Elements between consecutive indices of each dimension of a dense row-major array."""
    strides: list[int] = []
    running = 1
    for dim in reversed(shape):
        strides.append(running)
        running *= dim
    return tuple(reversed(strides))


def memref_layout(type_: MemRefType) -> MemRefLayout:
    """The static layout of `type_` (row-major unless it has a static strided layout).

    Raises `ValueError` when the layout is not static and strided.
    """
    shape = type_.get_shape()
    layout = type_.layout
    if isinstance(layout, NoneAttr):
        return MemRefLayout(0, row_major_strides(shape))
    if isinstance(layout, StridedLayoutAttr):
        strides = layout.get_strides()
        offset = layout.offset
        if any(s is None for s in strides) or isinstance(offset, NoneAttr):
            raise ValueError(
                f"{type_} has a dynamic strided layout; the llvm target needs static strides"
            )
        return MemRefLayout(offset.data, tuple(s for s in strides if s is not None))
    strides = layout.get_strides()
    if strides is None or any(s is None for s in strides):
        raise ValueError(f"{type_} has a layout that is not strided")
    return MemRefLayout(0, tuple(s for s in strides if s is not None))


def linear_coefficients(
    indices: Sequence[SSAValue],
    strides: Sequence[int],
    is_variable: Callable[[SSAValue], bool] = is_loop_variable,
    ranges: Ranges | None = loop_variable_range,
) -> dict[SSAValue, int] | None:
    """Elements the linearized address `sum(index_k * strides[k])` moves per unit of
    each variable (variables it does not depend on absent), or None when an index is
    not affine."""
    coefficients: dict[SSAValue, int] = {}
    for index, stride in zip(indices, strides, strict=False):
        affine = affine_of(index, is_variable, ranges)
        if affine is None:
            return None
        for variable, coefficient in affine.terms:
            coefficients[variable] = coefficients.get(variable, 0) + coefficient * stride
    return coefficients


__all__ = [
    "Access",
    "Affine",
    "MemRefLayout",
    "Range",
    "Ranges",
    "StageRegions",
    "access_of",
    "access_region",
    "accesses",
    "affine_of",
    "is_loop_variable",
    "linear_coefficients",
    "loop_range",
    "loop_variable_range",
    "memref_layout",
    "owning_stage",
    "row_major_strides",
    "stage_regions",
    "union",
]
