"""Building te primitives from Python: the language operator strategies are written in.

A strategy receives a `PrimitiveBuilder` and the tensors its op reads, and adds stages:

    def relu(pb: PrimitiveBuilder, x: SSAValue) -> SSAValue:
        return pb.compute("relu", shape_of(x), lambda s, idx: s.max(s.read(x, idx), s.const(0.0)))

Stage bodies are written with a `ScalarBuilder`, which appends arith ops (float math on
the tensor's element type, index math on `index`) to the stage's region.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from strato.dialects import te


def shape_of(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType), value.type
    return value.type.get_shape()


def element_type_of(value: SSAValue) -> Attribute:
    assert isinstance(value.type, TensorType), value.type
    return value.type.element_type


class ScalarBuilder:
    """Appends scalar ops to one stage body. Every method returns the new SSA value."""

    def __init__(self, block: Block, element_type: Attribute):
        self.block = block
        self.element_type = element_type

    def _add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    # reads and constants
    def read(self, tensor: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
        return self._add(te.ReadOp(tensor, indices))

    def const(self, value: float, type_: Attribute | None = None) -> SSAValue:
        type_ = type_ or self.element_type
        if isinstance(type_, AnyFloat):
            return self._add(arith.ConstantOp(FloatAttr(float(value), type_)))
        return self._add(arith.ConstantOp(IntegerAttr(int(value), type_)))

    def index(self, value: int) -> SSAValue:
        return self._add(arith.ConstantOp(IntegerAttr(value, IndexType())))

    # float arithmetic
    def add(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(arith.AddfOp(lhs, rhs))

    def sub(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(arith.SubfOp(lhs, rhs))

    def mul(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(arith.MulfOp(lhs, rhs))

    def div(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(arith.DivfOp(lhs, rhs))

    def max(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(arith.MaximumfOp(lhs, rhs))

    def min(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(arith.MinimumfOp(lhs, rhs))

    # index arithmetic
    def index_add(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(arith.AddiOp(lhs, rhs))

    def index_mul(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(arith.MuliOp(lhs, rhs))


StageBody = Callable[[ScalarBuilder, list[SSAValue]], SSAValue]
ReduceBody = Callable[[ScalarBuilder, list[SSAValue], list[SSAValue]], SSAValue]

_DEFAULT_AXES = "ijlmnopqrstuvwxyz"


def _name_axes(block: Block, shape_rank: int, reduce_rank: int) -> None:
    for n, arg in enumerate(block.args[:shape_rank]):
        arg.name_hint = _DEFAULT_AXES[n] if n < len(_DEFAULT_AXES) else f"i{n}"
    for n, arg in enumerate(block.args[shape_rank:]):
        arg.name_hint = "k" if reduce_rank == 1 else f"k{n}"


class PrimitiveBuilder:
    """Builds one `te.primitive`: placeholders first, then stages, then the output."""

    def __init__(self, name: str):
        self.name = name
        self.block = Block()
        self._stage_names: set[str] = set()

    def placeholder(self, name: str, type_: Attribute) -> SSAValue:
        assert isinstance(type_, TensorType)
        op = te.PlaceholderOp(name, type_)
        self.block.add_op(op)
        op.result.name_hint = _sanitize(name)
        return op.result

    def _unique_stage(self, stage: str) -> str:
        name, n = stage, 0
        while name in self._stage_names:
            n += 1
            name = f"{stage}_{n}"
        self._stage_names.add(name)
        return name

    def compute(
        self,
        stage: str,
        shape: Sequence[int],
        body: StageBody,
        element_type: Attribute,
    ) -> SSAValue:
        """A stage result[idx] = body(scalar_builder, idx)."""
        block = Block(arg_types=[IndexType()] * len(shape))
        _name_axes(block, len(shape), 0)
        value = body(ScalarBuilder(block, element_type), list(block.args))
        block.add_op(te.YieldOp(value))
        op = te.ComputeOp(
            self._unique_stage(stage), TensorType(element_type, shape), Region(block)
        )
        self.block.add_op(op)
        return op.result

    def reduce(
        self,
        stage: str,
        kind: te.ReduceKind,
        shape: Sequence[int],
        extents: Sequence[int],
        body: ReduceBody,
        element_type: Attribute,
        init: float | None = None,
    ) -> SSAValue:
        """A stage result[idx] = combine_k body(scalar_builder, idx, k), from `init`
        (the identity of `kind` when omitted)."""
        if init is None:
            init = {
                te.ReduceKind.SUM: 0.0,
                te.ReduceKind.MAX: float("-inf"),
                te.ReduceKind.MIN: float("inf"),
            }[kind]
        block = Block(arg_types=[IndexType()] * (len(shape) + len(extents)))
        _name_axes(block, len(shape), len(extents))
        spatial, axes = list(block.args[: len(shape)]), list(block.args[len(shape) :])
        value = body(ScalarBuilder(block, element_type), spatial, axes)
        block.add_op(te.YieldOp(value))
        assert isinstance(element_type, AnyFloat)
        op = te.ReduceOp(
            self._unique_stage(stage),
            kind,
            extents,
            FloatAttr(init, element_type),
            TensorType(element_type, shape),
            Region(block),
        )
        self.block.add_op(op)
        return op.result

    def finish(self, outputs: Sequence[SSAValue]) -> te.PrimitiveOp:
        self.block.add_op(te.OutputOp(outputs))
        return te.PrimitiveOp(self.name, Region(self.block))


def broadcast_indices(
    s: ScalarBuilder,
    idx: Sequence[SSAValue],
    input_shape: Sequence[int],
    output_shape: Sequence[int],
) -> list[SSAValue]:
    """The indices into an input that numpy-broadcasts to `output_shape`: dims are
    aligned from the right, and a size-1 input dim is read at 0."""
    offset = len(output_shape) - len(input_shape)
    result: list[SSAValue] = []
    for d, size in enumerate(input_shape):
        if size == 1 and output_shape[d + offset] != 1:
            result.append(s.index(0))
        else:
            result.append(idx[d + offset])
    return result


def _sanitize(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    if not cleaned or cleaned[0].isdigit():
        cleaned = "t" + cleaned
    return cleaned
