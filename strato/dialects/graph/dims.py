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

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, StringAttr, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from strato.dialects.graph.base import GraphOp, is_run_time

SIZES_ATTR = "graph.sizes"

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
        # the class keeps the name it had first (arguments are visited first)
        if root_a not in self._names and root_b in self._names:
            root_a, root_b = root_b, root_a
        self._parent[root_b] = root_a

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

    def alias(self, new: DimKey, old: DimKey) -> None:
        """`new` is of the class of `old` (a value that replaces another)."""
        self._union(old, new)

    def same(self, a: DimKey, b: DimKey) -> bool:
        return self._find(a) == self._find(b)


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
    "argument_size_names",
    "fused_dim_sources",
    "is_run_time",
    "run_time_axes",
]
