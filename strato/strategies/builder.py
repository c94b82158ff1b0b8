"""Building te primitives from Python: the language operator strategies are written in.

A strategy receives a `PrimitiveBuilder` and the tensors its op reads, and adds stages:

    def relu(pb: PrimitiveBuilder, x: SSAValue) -> SSAValue:
        return pb.compute("relu", shape_of(x), lambda s, idx: s.max(s.read(x, idx), s.const(0.0)))

Stage bodies are written with a `ScalarBuilder`, which appends arith ops (float math on
the tensor's element type, index math on `index`) to the stage's region.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    Signedness,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from strato.diagnostics import StratoError
from strato.dialects import te
from strato.dialects.te import NO_SIGNED_ZEROS
from strato.dialects.tensor_types import (
    is_bit_pattern_float,
    numpy_dtype,
    scalar_type,
    scalars_from_elements,
)
from strato.strategies.accumulation import accumulator_type, round_accumulated, widen_term


Extent = int | SSAValue

# how the primitive being built sizes a graph value's run-time dimensions
_GRAPH_SIZES: ContextVar[Callable[[SSAValue], list[Extent]] | None] = ContextVar(
    "graph_sizes", default=None
)


def shape_of(value: SSAValue) -> tuple[Extent, ...]:
    """Each dimension of a tensor value: its static size, or, for a dimension of
    run-time size, the `te.size` value that gives it (a placeholder's or stage's
    `sizes`; for a graph value, the size of its class in the primitive being built,
    `PrimitiveBuilder.sizing`)."""
    type_ = value.type
    assert isinstance(type_, TensorType), type_
    shape = type_.get_shape()
    if all(dim >= 0 for dim in shape):
        return shape
    owner = value.owner
    if isinstance(owner, te.PlaceholderOp | te.StageOp):
        return tuple(te.dim_extents(type_, owner.sizes))
    graph_sizes = _GRAPH_SIZES.get()
    if graph_sizes is None:
        raise StratoError(f"no size is known for the run-time dimensions of {type_}")
    return tuple(graph_sizes(value))


def static_type(element_type: Attribute, shape: Sequence[Extent]) -> TensorType:
    """The tensor type of `shape`: `?` where a run-time size gives the dimension."""
    return TensorType(
        element_type, [DYNAMIC_INDEX if isinstance(d, SSAValue) else d for d in shape]
    )


def run_time_sizes(shape: Sequence[Extent]) -> list[SSAValue]:
    """The run-time sizes of `shape`, in order (a te op's `sizes`)."""
    return [d for d in shape if isinstance(d, SSAValue)]


def element_type_of(value: SSAValue) -> Attribute:
    assert isinstance(value.type, TensorType), value.type
    return value.type.element_type


class ScalarBuilder:
    """Appends scalar ops to one stage body. Every method returns the new SSA value.

    Arithmetic is generic over the element type: float types use arith's float ops and
    `math`, integer types the integer ops, unsigned where the tensor's element type is
    unsigned (scalars themselves are signless, as arith requires; the signedness of a
    tensor type decides which op is emitted). `element_type` is the tensor element type
    of the stage; ops on other types pass their operands' types through.
    """

    def __init__(self, block: Block, element_type: Attribute):
        self.block = block
        self.element_type = element_type

    def _add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    @property
    def unsigned(self) -> bool:
        return is_unsigned(self.element_type)

    # reads and constants
    def read(self, tensor: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
        return self._add(te.ReadOp(tensor, indices))

    def const(self, value: float | int | bool, type_: Attribute | None = None) -> SSAValue:
        """A constant of `type_` (by default the stage's scalar type); for an 8- or 4-bit
        float, its bit pattern (the format's nearest value)."""
        declared = type_ or self.element_type
        if is_bit_pattern_float(declared):
            element = np.asarray(value, numpy_dtype(declared))
            bits = int(scalars_from_elements(element, declared))
            return self._add(arith.ConstantOp(IntegerAttr(bits, signless(declared))))
        type_ = signless(declared)
        if isinstance(type_, AnyFloat):
            return self._add(arith.ConstantOp(FloatAttr(float(value), type_)))
        if isinstance(type_, IntegerType) and type_.width.data == 1:
            return self._add(arith.ConstantOp(IntegerAttr(int(bool(value)), type_)))
        return self._add(arith.ConstantOp(IntegerAttr(int(value), type_)))

    def index(self, value: int) -> SSAValue:
        return self._add(arith.ConstantOp(IntegerAttr(value, IndexType())))

    # generic arithmetic
    def _binary(
        self, lhs: SSAValue, rhs: SSAValue, float_op, signed_op, unsigned_op=None, flags=None
    ):
        if isinstance(lhs.type, AnyFloat):
            return self._add(float_op(lhs, rhs, flags))
        op = unsigned_op if (self.unsigned and unsigned_op is not None) else signed_op
        return self._add(op(lhs, rhs))

    def add(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """lhs + rhs; for bools numpy's sum, the or (an i1 add would wrap to false)."""
        if isinstance(lhs.type, IntegerType) and lhs.type.width.data == 1:
            return self._add(arith.OrIOp(lhs, rhs))
        return self._binary(lhs, rhs, arith.AddfOp, arith.AddiOp)

    def sub(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._binary(lhs, rhs, arith.SubfOp, arith.SubiOp)

    def mul(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._binary(lhs, rhs, arith.MulfOp, arith.MuliOp)

    def div(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._binary(lhs, rhs, arith.DivfOp, arith.DivSIOp, arith.DivUIOp)

    def rem(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """The remainder with the sign of `lhs` (C's fmod / truncating division)."""
        if isinstance(lhs.type, AnyFloat):
            quotient = self._add(math.TruncOp(self._add(arith.DivfOp(lhs, rhs))))
            return self.sub(lhs, self.mul(quotient, rhs))
        return self._binary(lhs, rhs, arith.SubfOp, arith.RemSIOp, arith.RemUIOp)

    def max(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """max with NaN propagation on floats (numpy's `maximum`), zeros unordered by
        sign (`NO_SIGNED_ZEROS`)."""
        return self._binary(
            lhs, rhs, arith.MaximumfOp, arith.MaxSIOp, arith.MaxUIOp, NO_SIGNED_ZEROS
        )

    def min(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """min with NaN propagation on floats (numpy's `minimum`), zeros unordered by
        sign (`NO_SIGNED_ZEROS`)."""
        return self._binary(
            lhs, rhs, arith.MinimumfOp, arith.MinSIOp, arith.MinUIOp, NO_SIGNED_ZEROS
        )

    def neg(self, value: SSAValue) -> SSAValue:
        if isinstance(value.type, AnyFloat):
            return self._add(arith.NegfOp(value))
        return self.sub(self.const(0, value.type), value)

    def abs(self, value: SSAValue) -> SSAValue:
        if isinstance(value.type, AnyFloat):
            return self._add(math.AbsFOp(value))
        if self.unsigned:
            return value
        return self._add(math.AbsIOp(value))

    # float functions (math dialect)
    def exp(self, value: SSAValue) -> SSAValue:
        return self._add(math.ExpOp(value))

    def log(self, value: SSAValue) -> SSAValue:
        return self._add(math.LogOp(value))

    def sqrt(self, value: SSAValue) -> SSAValue:
        return self._add(math.SqrtOp(value))

    def tanh(self, value: SSAValue) -> SSAValue:
        return self._add(math.TanhOp(value))

    def erf(self, value: SSAValue) -> SSAValue:
        return self._add(math.ErfOp(value))

    def pow(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(math.PowFOp(lhs, rhs))

    # comparisons and selection
    def cmp(self, predicate: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """An i1 comparison; predicate is one of eq, ne, lt, le, gt, ge (ordered for
        floats, signed or unsigned for integers as the stage's type says)."""
        if isinstance(lhs.type, AnyFloat):
            return self._add(arith.CmpfOp(lhs, rhs, "o" + predicate))
        if predicate in ("eq", "ne"):
            return self._add(arith.CmpiOp(lhs, rhs, predicate))
        return self._add(arith.CmpiOp(lhs, rhs, ("u" if self.unsigned else "s") + predicate))

    def select(self, condition: SSAValue, if_true: SSAValue, if_false: SSAValue) -> SSAValue:
        return self._add(arith.SelectOp(condition, if_true, if_false))

    # index arithmetic
    def index_add(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(arith.AddiOp(lhs, rhs))

    def index_sub(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(arith.SubiOp(lhs, rhs))

    def index_mul(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(arith.MuliOp(lhs, rhs))

    def index_cmp(self, predicate: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """An i1 comparison of index values (signed: eq, ne, slt, sle, sgt, sge)."""
        return self._add(arith.CmpiOp(lhs, rhs, predicate))

    def index_select(self, condition: SSAValue, if_true: SSAValue, if_false: SSAValue) -> SSAValue:
        return self._add(arith.SelectOp(condition, if_true, if_false))


def reduction_identity(kind: te.ReduceKind, element_type: Attribute) -> float | int:
    """The value a reduction of `kind` starts from: 0 for sum, the lowest value of the
    type for max, the highest for min (infinities for floats), 1 for a product."""
    if kind == te.ReduceKind.SUM:
        return 0.0 if isinstance(element_type, AnyFloat) else 0
    if kind == te.ReduceKind.PROD:
        return 1.0 if isinstance(element_type, AnyFloat) else 1
    if isinstance(element_type, AnyFloat):
        return float("-inf") if kind == te.ReduceKind.MAX else float("inf")
    assert isinstance(element_type, IntegerType), element_type
    width = element_type.width.data
    if width == 1 or is_unsigned(element_type):
        low, high = 0, (1 << width) - 1
    else:
        low, high = -(1 << (width - 1)), (1 << (width - 1)) - 1
    return low if kind == te.ReduceKind.MAX else high


def signless(type_: Attribute) -> Attribute:
    """The scalar type arith works on inside a stage body: integers lose their
    signedness, bf16 computes as f32, narrow formats as their bits
    (`tensor_types.scalar_type`)."""
    return scalar_type(type_)


def is_unsigned(type_: Attribute) -> bool:
    return isinstance(type_, IntegerType) and type_.signedness.data == Signedness.UNSIGNED


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
        self._sizes: dict[str, SSAValue] = {}

    def placeholder(self, name: str, type_: Attribute, sizes: Sequence[SSAValue] = ()) -> SSAValue:
        assert isinstance(type_, TensorType)
        op = te.PlaceholderOp(name, type_, sizes)
        self.block.add_op(op)
        op.result.name_hint = _sanitize(name)
        return op.result

    def size(self, name: str) -> SSAValue:
        """The primitive's run-time size `name` (one `te.size`, made on first use; the
        kernel takes its sizes in the order they were first used)."""
        if name not in self._sizes:
            op = te.SizeOp(name)
            last = None
            for existing in self.block.ops:
                if isinstance(existing, te.SizeOp):
                    last = existing
            if last is not None:
                self.block.insert_op_after(op, last)
            elif self.block.first_op is not None:
                self.block.insert_op_before(op, self.block.first_op)
            else:
                self.block.add_op(op)
            op.result.name_hint = _sanitize(name)
            self._sizes[name] = op.result
        return self._sizes[name]

    @contextmanager
    def sizing(
        self,
        size_names: Callable[[SSAValue, int], str],
        fixed: Mapping[str, int] | None = None,
    ) -> Iterator[None]:
        """While strategies run: a graph value's run-time dimension `d` is the size
        named `size_names(value, d)` (`shape_of`): the static size `fixed` gives that
        name, else the primitive's run-time size of that name."""
        fixed = fixed or {}

        def extent(name: str) -> Extent:
            return fixed[name] if name in fixed else self.size(name)

        def graph_sizes(value: SSAValue) -> list[Extent]:
            assert isinstance(value.type, TensorType)
            return [
                extent(size_names(value, d)) if dim < 0 else dim
                for d, dim in enumerate(value.type.get_shape())
            ]

        token = _GRAPH_SIZES.set(graph_sizes)
        try:
            yield
        finally:
            _GRAPH_SIZES.reset(token)

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
        shape: Sequence[Extent],
        body: StageBody,
        element_type: Attribute,
        *,
        materialize: bool = False,
    ) -> SSAValue:
        """A stage result[idx] = body(scalar_builder, idx); `materialize`: computed into
        its own buffer, never inlined into its readers (te-inline-stages)."""
        block = Block(arg_types=[IndexType()] * len(shape))
        _name_axes(block, len(shape), 0)
        value = body(ScalarBuilder(block, element_type), list(block.args))
        block.add_op(te.YieldOp(value))
        op = te.ComputeOp(
            self._unique_stage(stage),
            static_type(element_type, shape),
            Region(block),
            run_time_sizes(shape),
        )
        if materialize:
            op.attributes["materialize"] = UnitAttr()
        self.block.add_op(op)
        return op.result

    def reduce(
        self,
        stage: str,
        kind: te.ReduceKind,
        shape: Sequence[Extent],
        extents: Sequence[Extent],
        body: ReduceBody,
        element_type: Attribute,
        init: float | int | None = None,
    ) -> SSAValue:
        """A stage result[idx] = combine_k body(scalar_builder, idx, k), from `init`
        (the identity of `kind` for the element type when omitted). A sum or product
        of 16-bit floats accumulates in f32 and rounds once (`strategies.accumulation`)."""
        accumulator = accumulator_type(kind, element_type)
        if accumulator is not None:
            return self._reduce_widened(
                stage, kind, shape, extents, body, element_type, accumulator, init
            )
        if init is None:
            init = reduction_identity(kind, element_type)
        block = Block(arg_types=[IndexType()] * (len(shape) + len(extents)))
        _name_axes(block, len(shape), len(extents))
        spatial, axes = list(block.args[: len(shape)]), list(block.args[len(shape) :])
        value = body(ScalarBuilder(block, element_type), spatial, axes)
        block.add_op(te.YieldOp(value))
        init_attr: FloatAttr | IntegerAttr
        if isinstance(element_type, AnyFloat):
            init_attr = FloatAttr(float(init), element_type)
        else:
            assert isinstance(element_type, IntegerType), element_type
            init_attr = IntegerAttr(int(init), element_type)
        op = te.ReduceOp(
            self._unique_stage(stage),
            kind,
            extents,
            init_attr,
            static_type(element_type, shape),
            Region(block),
            run_time_sizes(shape),
        )
        self.block.add_op(op)
        return op.result

    def _reduce_widened(
        self,
        stage: str,
        kind: te.ReduceKind,
        shape: Sequence[int],
        extents: Sequence[int],
        body: ReduceBody,
        element_type: Attribute,
        accumulator: Attribute,
        init: float | int | None,
    ) -> SSAValue:
        def wide_body(s: ScalarBuilder, idx: list[SSAValue], k: list[SSAValue]) -> SSAValue:
            term = body(ScalarBuilder(s.block, element_type), idx, k)
            return widen_term(s.block, term, accumulator)

        total = self.reduce(stage, kind, shape, extents, wide_body, accumulator, init)
        return self.compute(
            f"{stage}_round",
            shape,
            lambda s, idx: round_accumulated(s.block, s.read(total, idx), element_type),
            element_type,
        )

    def count(
        self, stage: str, extents: Sequence[Extent], element_type: Attribute
    ) -> Callable[[ScalarBuilder], SSAValue]:
        """How a stage body reads the number of points of `extents` as a scalar of
        `element_type`: a constant when they are static, else a read of a rank-0 stage
        that counts them once (a sum of ones over the run-time extents)."""
        static = 1
        for extent in extents:
            static *= extent if isinstance(extent, int) else 1
        if not run_time_sizes(extents):
            return lambda s: s.const(static)
        total = self.reduce(stage, te.ReduceKind.SUM, (), extents, lambda s, idx, k: s.const(1.0), element_type)
        return lambda s: s.read(total, [])

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
