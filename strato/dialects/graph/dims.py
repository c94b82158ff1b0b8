"""Run-time dimensions of a graph function: which are the same size, and their names.

A tensor type's `?` dimension is a size known at run time only. Ops that accept such
dimensions (`GraphOp.RUN_TIME_DIMS`) say which operand dimension gives each of their
results' run-time dimensions (`run_time_dim_sources`), and two run-time dimensions that
meet are the same size: they never broadcast against each other. So the run-time
dimensions of a function fall into classes of one size each, and every class holds a
dimension of an argument. A class is named after its first argument dimension: the
name the argument's `graph.sizes` attribute gives (one name per `?` dimension, in
order), else `<argument>_<dimension>`. Arguments whose dimensions share a name are one
class too, so a caller states that two inputs have the same batch by naming it twice.

    func.func @f(%x: tensor<?x8xf32> {graph.sizes = ["batch"]}, %y: tensor<?x8xf32>) -> tensor<?x8xf32> {
      %s = graph.add %x, %y : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
      func.return %s : tensor<?x8xf32>
    }

Here `%x`, `%y` and `%s` have one run-time dimension each, all of the class "batch".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from strato.dialects.graph.base import GraphOp, is_run_time
from strato.dialects.size_sums import SizeSum, size_sum

SIZES_ATTR = "graph.sizes"

SIZE_BOUNDS_ATTR = "graph.size_bounds"
"""On a function: the bounds of its run-time sizes, by name, each the least and the most
size (-1: no most), and why the most, when the model implies it (`implied_size_bounds`):

    func.func @f(..) attributes {graph.size_bounds = {sequence = array<i64: 1, 512>}}
"""

DimKey = tuple[SSAValue, int]


def run_time_axes(value: SSAValue) -> list[int]:
    """The dimensions of `value`'s tensor type that are of run-time size."""
    type_ = value.type
    if not isinstance(type_, TensorType):
        return []
    return [d for d, size in enumerate(type_.get_shape()) if size < 0]


def leads_with_run_time_dims(value: SSAValue) -> bool:
    """Whether `value` has run-time dimensions, all of them before its static ones (its
    rows, when a kernel runs as blocks of rows)."""
    axes = run_time_axes(value)
    return bool(axes) and axes == list(range(len(axes)))


def argument_size_names(function: FuncOp, index: int) -> list[str] | None:
    """The names argument `index` of `function` gives its run-time dimensions
    (`graph.sizes`), or None when it gives none."""
    if function.arg_attrs is None:
        return None
    attr = function.arg_attrs.data[index].data.get(SIZES_ATTR)
    if attr is None:
        return None
    if not isinstance(attr, ArrayAttr) or not all(isinstance(a, StringAttr) for a in attr.data):
        raise VerifyException(f"'{SIZES_ATTR}' of argument {index} must be an array of strings")
    return [a.data for a in attr.data]  # type: ignore[union-attr]


class RunTimeDims:
    """The classes of equal run-time dimensions of one function (a union-find over
    (value, dimension)), and a name for each class."""

    def __init__(self) -> None:
        self._parent: dict[DimKey, DimKey] = {}
        self._names: dict[DimKey, str] = {}
        self._by_name: dict[str, DimKey] = {}
        self._given: set[str] = set()  # the arguments' names

    def _find(self, key: DimKey) -> DimKey:
        parent = self._parent.setdefault(key, key)
        if parent == key:
            return key
        root = self._find(parent)
        self._parent[key] = root
        return root

    def _union(self, a: DimKey, b: DimKey) -> None:
        root_a, root_b = self._find(a), self._find(b)
        if root_a == root_b:
            return
        # the class keeps the name it had first (arguments are visited first), but a
        # sum of sizes over a plain name: an argument's dimension that meets a
        # concatenation's is named by the sum, which its call then checks
        if (root_a not in self._names and root_b in self._names) or (
            root_a in self._names
            and root_b in self._names
            and self._derived(self._names[root_b])
            and not self._derived(self._names[root_a])
        ):
            root_a, root_b = root_b, root_a
        self._parent[root_b] = root_a

    def _derived(self, name: str) -> bool:
        """Whether `name` names a class computed from others (`sum_of`)."""
        return not self.sum_of(name).is_name

    def add_block(self, block: Block) -> None:
        """Records the equalities the ops of `block` state (into fused bodies)."""
        for op in block.ops:
            self.add_op(op)

    def add_op(self, op: Operation) -> None:
        """Records the equalities `op` states (into a fused body)."""
        if not isinstance(op, GraphOp) or not op.RUN_TIME_DIMS:
            return
        if op.name == "graph.fused":
            (body,) = op.regions
            for arg, operand in zip(body.block.args, op.operands, strict=True):
                for d in run_time_axes(arg):
                    self._union((operand, d), (arg, d))
            self.add_block(body.block)
            yielded = body.block.last_op
            assert yielded is not None
            for result, value in zip(op.results, yielded.operands, strict=True):
                for d in run_time_axes(result):
                    self._union((result, d), (value, d))
            return
        for (r, d), sources in op.run_time_dim_sources().items():
            for operand, od in sources:
                self._union((op.results[r], d), (op.operands[operand], od))
        for (a, ad), (b, bd) in op.run_time_dim_equalities():
            self._union((op.operands[a], ad), (op.operands[b], bd))
        for (r, d), (parts, constant) in op.run_time_dim_sums().items():
            total: SizeSum | None = SizeSum((), constant)
            for operand, od in parts:
                name = self.name(op.operands[operand], od)
                if name is None:
                    total = None  # of a size no argument gives: unnamed too
                    break
                total = total.plus(self.sum_of(name))
            if total is not None:
                self._name_sum((op.results[r], d), total)

    def _name_sum(self, key: DimKey, total: SizeSum) -> None:
        """`key` is of the class `total` names: the size itself when it is one, else
        the class of every dimension of that sum."""
        name = total.class_name
        if name in self._by_name:
            self._union(self._by_name[name], key)
            return
        root = self._find(key)
        self._by_name[name] = root
        self._names.setdefault(root, name)

    def add_arguments(self, args: Sequence[SSAValue], names: Sequence[list[str] | None]) -> None:
        """Names the run-time dimensions of a function's arguments: `names[n]` gives
        argument n's (one per run-time dimension, in order), else they are
        `<argument>_<dimension>`. Dimensions of one name are one class."""
        for n, (arg, given) in enumerate(zip(args, names, strict=True)):
            axes = run_time_axes(arg)
            if not axes:
                continue
            if given is not None and len(given) != len(axes):
                raise VerifyException(
                    f"'{SIZES_ATTR}' of argument {n} names {len(given)} size(s), but its "
                    f"type {arg.type} has {len(axes)} run-time dimension(s)"
                )
            for k, d in enumerate(axes):
                name = given[k] if given else f"{arg.name_hint or f'arg{n}'}_{d}"
                self._given.add(name)
                key = self._find((arg, d))
                if name in self._by_name:
                    self._union(self._by_name[name], key)
                else:
                    self._by_name[name] = key
                    self._names.setdefault(key, name)

    @classmethod
    def of_function(cls, function: FuncOp) -> RunTimeDims:
        dims = cls()
        block = function.body.block
        dims.add_arguments(
            block.args, [argument_size_names(function, n) for n in range(len(block.args))]
        )
        dims.add_block(block)
        return dims

    def name(self, value: SSAValue, dim: int) -> str | None:
        """The name of the class of `value`'s dimension `dim`; None when no argument's
        dimension is in it (its size is not known at the call)."""
        return self._names.get(self._find((value, dim)))

    def sum_of(self, name: str) -> SizeSum:
        """The class `name` as a sum: the sum its name spells (`past + seq`), when it
        is not an argument's or sums other arguments' sizes (an attention mask's
        `past + seq`, which a call must give as that sum: `Signature`); else the size
        itself, whatever its name spells (`seq-len` is one size)."""
        total = SizeSum.parse(name)
        if total is None or (name in self._given and not (total.terms and set(total.names) <= self._given - {name})):
            return SizeSum(((name, 1),))
        return total

    def key_of(self, name: str) -> DimKey | None:
        """A dimension of the class `name` names, or None when none is."""
        key = self._by_name.get(name)
        return None if key is None else self._find(key)

    def alias(self, new: DimKey, old: DimKey) -> None:
        """`new` is of the class of `old` (a value that replaces another)."""
        self._union(old, new)

    def same(self, a: DimKey, b: DimKey) -> bool:
        return self._find(a) == self._find(b)


def fused_dim_sums(op: GraphOp) -> dict[tuple[int, int], tuple[list[tuple[int, int]], int]]:
    """The run-time dimensions of a `graph.fused`'s results that its body computes as
    sums of its arguments' (a concatenation along a run-time dimension inside)."""
    (body,) = op.regions
    args = body.block.args
    dims = RunTimeDims()
    dims.add_arguments(args, [[f"#{n}.{d}" for d in run_time_axes(arg)] for n, arg in enumerate(args)])
    dims.add_block(body.block)
    yielded = body.block.last_op
    assert yielded is not None
    sums: dict[tuple[int, int], tuple[list[tuple[int, int]], int]] = {}
    for r, value in enumerate(yielded.operands):
        for d in run_time_axes(value):
            name = dims.name(value, d)
            total = SizeSum.parse(name) if name is not None else None
            if total is None or any(count < 0 for _, count in total.terms):
                continue
            parts = []
            for term, count in total.terms:
                n, ad = term[1:].split(".")
                parts += [(int(n), int(ad))] * count
            sums[(r, d)] = (parts, total.constant)
    return sums


def fused_dim_sources(op: GraphOp) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """The run-time dimension sources of a `graph.fused`, through its body."""
    (body,) = op.regions
    dims = RunTimeDims()
    dims.add_block(body.block)
    yielded = body.block.last_op
    assert yielded is not None
    sources: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for r, value in enumerate(yielded.operands):
        for d in run_time_axes(value):
            sources[(r, d)] = [
                (n, ad)
                for n, arg in enumerate(body.block.args)
                for ad in run_time_axes(arg)
                if dims.same((value, d), (arg, ad))
            ]
    return sources


__all__ = [
    "SIZES_ATTR",
    "RunTimeDims",
    "SizeSum",
    "argument_size_names",
    "fused_dim_sources",
    "fused_dim_sums",
    "is_run_time",
    "run_time_axes",
    "size_sum",
]


@dataclass(frozen=True)
class SizeBound:
    """The sizes a run-time size may take: `least` to `most` (None: no most), and only
    multiples of `multiple` (a sequence padded to whole blocks of 8 tokens)."""

    least: int = 0
    most: int | None = None
    multiple: int = 1

    def admits(self, size: int) -> bool:
        return (
            size >= self.least
            and (self.most is None or size <= self.most)
            and size % self.multiple == 0
        )

    def meet(self, other: SizeBound) -> SizeBound:
        """The sizes both admit."""
        mosts = [m for m in (self.most, other.most) if m is not None]
        return SizeBound(
            max(self.least, other.least),
            min(mosts) if mosts else None,
            math.lcm(self.multiple, other.multiple),
        )

    def refusal(self, size: int, why: str = "") -> str:
        """Why `size` is refused (`why`: why the most)."""
        if size < self.least:
            return f"less than the least the model takes, {self.least}"
        if size % self.multiple:
            return f"not a multiple of {self.multiple}, which the model takes only"
        return f"more than the model takes: at most {self.most}" + (f" ({why})" if why else "")

    def describe(self) -> str:
        """`least to most`, `at least least`, with `, a multiple of m` when it must be."""
        text = f"{self.least} to {self.most}" if self.most is not None else f"at least {self.least}"
        return text + (f", a multiple of {self.multiple}" if self.multiple > 1 else "")


def size_bounds(function: FuncOp) -> dict[str, SizeBound]:
    """The bounds `function` records (`SIZE_BOUNDS_ATTR`), by size name."""
    attr = function.attributes.get(SIZE_BOUNDS_ATTR)
    if attr is None:
        return {}
    bounds: dict[str, SizeBound] = {}
    entries = attr.data if isinstance(attr, DictionaryAttr) else None
    for name, value in (entries or {}).items():
        bound = value.get_values() if isinstance(value, DenseArrayBase) else None
        if (
            bound is None
            or len(bound) not in (2, 3)
            or bound[0] < 0
            or bound[1] < -1
            or (bound[1] >= 0 and bound[1] < bound[0])
            or (len(bound) == 3 and bound[2] < 1)
        ):
            entries = None
            break
        multiple = int(bound[2]) if len(bound) == 3 else 1
        bounds[name] = SizeBound(int(bound[0]), None if bound[1] < 0 else int(bound[1]), multiple)
    if entries is None:
        raise VerifyException(
            f"'{SIZE_BOUNDS_ATTR}' must map size names to array<i64: least, most> or "
            "array<i64: least, most, multiple> (0 <= least <= most, or most -1 for none; "
            "multiple >= 1)"
        )
    return bounds


def set_size_bounds(function: FuncOp, bounds: Mapping[str, SizeBound]) -> None:
    """Record `bounds` on `function` (none: no attribute)."""
    if not bounds:
        function.attributes.pop(SIZE_BOUNDS_ATTR, None)
        return
    function.attributes[SIZE_BOUNDS_ATTR] = DictionaryAttr({
        name: DenseArrayBase.from_list(
            i64,
            [bound.least, -1 if bound.most is None else bound.most]
            + ([bound.multiple] if bound.multiple > 1 else []),
        )
        for name, bound in sorted(bounds.items())
    })


def implied_size_bounds(function: FuncOp) -> dict[str, tuple[SizeBound, str]]:
    """The most each run-time size of `function` may be by what its ops read, and why:
    a `graph.gather` of data of n entries along its axis (a position table) picks
    entries that exist only while its indices are below n, and indices computed from
    a run-time size (`_IndexBounds`: the positions of a sequence, `graph.iota`, and
    what shifts or counts them) bound that size."""
    dims = RunTimeDims.of_function(function)
    bounds = _IndexBounds(dims)
    implied: dict[str, tuple[SizeBound, str]] = {}
    for op in function.body.walk():
        if op.name != "graph.gather":
            continue
        data, indices = op.operands[0], op.operands[1]
        axis = op.properties["axis"].value.data  # type: ignore[union-attr]
        shape = data.type.get_shape() if isinstance(data.type, TensorType) else ()
        upper = bounds.of(indices)
        if upper is None or upper[0] is None or not 0 <= axis < len(shape) or shape[axis] < 0:
            continue
        name, offset = upper
        most = shape[axis] - 1 - offset
        if most < 0 or (name in implied and implied[name][0].most <= most):  # type: ignore[operator]
            continue
        table = f"the {shape[axis]}-entry table" + (f" {data.name_hint}" if data.name_hint else "")
        implied[name] = (SizeBound(0, most), f"the model reads {table} at positions computed from it")
    def at_least(total: SizeSum | None, least: int) -> None:
        """The sizes `total` sums are such that it is at least `least`."""
        if total is None or not total.terms or any(count <= 0 for _, count in total.terms):
            return
        short = least - total.constant
        if short <= 0:
            return
        spread = sum(count for _, count in total.terms)
        for term, count in total.terms:
            # one size: exactly; several: each its share (an empty cache is refused)
            need = -(-short // count) if len(total.terms) == 1 else max(1, -(-short // spread))
            bound, why = implied.get(term, (SizeBound(), ""))
            implied[term] = (bound.meet(SizeBound(need)), why)

    def class_sum(value: SSAValue, d: int) -> SizeSum | None:
        name = dims.name(value, d) if d in run_time_axes(value) else None
        return dims.sum_of(name) if name is not None else None

    for op in function.body.walk():
        if not isinstance(op, GraphOp) or op.name == "graph.fused":
            continue
        for (r, d), (parts, constant) in op.run_time_dim_sums().items():
            # a size computed from sizes is not negative (a slice dropping 2 of a
            # sequence: at least 2 long) ...
            at_least(class_sum(op.results[r], d), 0)
            # ... and a concatenation along a run-time dimension, or a pad that
            # lengthens one, reads its inputs there (at positions clamped into them),
            # so none may be empty
            if op.name in ("graph.concat", "graph.pad"):
                for operand, od in parts:
                    at_least(class_sum(op.operands[operand], od), 1)
        if op.name == "graph.gather":
            # nor may the data a gather reads along a run-time dimension
            at_least(class_sum(op.operands[0], op.properties["axis"].value.data), 1)  # type: ignore[union-attr]
    return implied


_SAME_VALUES = frozenset({"graph.reshape", "graph.broadcast_to", "graph.transpose"})
"""Ops whose result holds values of their first operand only."""


class _IndexBounds:
    """Upper bounds of integer tensors by a run-time size: `of(value)` is (name,
    offset) when every element is at most that size plus `offset` (name None: at
    most `offset`), else None. Positions along a dimension (`graph.iota`) are at most
    its size - 1; reshapes, broadcasts and transposes keep bounds; adding a constant
    shifts them; a 0/1 tensor (cast from booleans) is at most 1, its running sum along
    a dimension at most that dimension's size, and a product by it at most the other
    factor's bound (or 0)."""

    def __init__(self, dims: RunTimeDims):
        self.dims = dims
        self.known: dict[SSAValue, tuple[str | None, int] | None] = {}

    def of(self, value: SSAValue) -> tuple[str | None, int] | None:
        if value not in self.known:
            self.known[value] = None  # a cycle (none in a graph) bounds nothing
            self.known[value] = self._bound(value)
        return self.known[value]

    def _length(self, value: SSAValue, dim: int) -> tuple[str | None, int] | None:
        """The length of `value`'s dimension `dim` as (name, 0) or (None, n)."""
        shape = value.type.get_shape() if isinstance(value.type, TensorType) else ()
        if not 0 <= dim < len(shape):
            return None
        if shape[dim] >= 0:
            return None, shape[dim]
        name = self.dims.name(value, dim)
        return None if name is None else (name, 0)

    def _zero_one(self, value: SSAValue) -> bool:
        """Whether `value` holds 0 and 1 only (booleans cast to integers)."""
        op = value.owner
        if not isinstance(op, Operation) or op.name != "graph.cast":
            return False
        source = op.operands[0].type
        element = getattr(source, "element_type", None)
        return getattr(element, "width", None) is not None and element.width.data == 1  # type: ignore[union-attr]

    def _bound(self, value: SSAValue) -> tuple[str | None, int] | None:
        op = value.owner
        if not isinstance(op, Operation):
            return None
        name = op.name
        if self._zero_one(value):
            return None, 1
        if name == "graph.iota":
            length = self._length(op.operands[0], op.properties["dim"].value.data)  # type: ignore[union-attr]
            return None if length is None else (length[0], length[1] - 1)
        if name == "graph.constant":
            values = _small_integer_values(op)
            return None if values is None else (None, max(values, default=0))
        if name in _SAME_VALUES or name == "graph.cast":
            return self.of(op.operands[0])
        if name == "graph.add":
            a, b = (self.of(operand) for operand in op.operands)
            if a is None or b is None or (a[0] is not None and b[0] is not None):
                return None
            return (a[0] if a[0] is not None else b[0]), a[1] + b[1]
        if name == "graph.mul":
            for mask, other in ((0, 1), (1, 0)):
                if self._zero_one(op.operands[mask]):
                    bound = self.of(op.operands[other])
                    return None if bound is None else (bound[0], max(bound[1], 0))
            return None
        if name == "graph.cumsum" and self._zero_one(op.operands[0]):
            return self._length(op.operands[0], op.properties["axis"].value.data)  # type: ignore[union-attr]
        return None


def _small_integer_values(op: Operation) -> list[int] | None:
    """The elements of a small integer `graph.constant` (at most 64 of them, as its
    `evaluate` gives them), else None."""
    type_ = op.results[0].type
    if (
        not isinstance(op, GraphOp)
        or not isinstance(type_, TensorType)
        or not isinstance(type_.element_type, IntegerType)
        or math.prod(type_.get_shape()) > 64
    ):
        return None
    return [int(v) for v in op.evaluate([])[0].ravel()]
