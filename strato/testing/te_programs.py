"""Hypothesis strategies for random small te-level programs.

`te_programs()` draws a module with one to three `te.primitive`s and a function `@main`
that calls them on its arguments, on dense constants and on earlier call results, and
returns some of those values (a call result always; sometimes an argument, a constant
or a value twice). Every tensor of a program is a view of one small iteration space S
(rank 1 to 3, dims up to 6): each of its dims follows one axis of S or has size 1.
Primitives hold one to three stages:

- elementwise `te.compute` over all of S, reading any earlier tensor with broadcasting
  (size-1 dims read at index 0), sometimes reversed along an axis (index arithmetic);
- `te.reduce` (sum, max or min from a random init) over one or two axes of S, possibly
  all of them (a rank-0 result).

Stage bodies combine reads and constants with arith (addf, subf, mulf, divf, negf,
maximumf, minimumf, cmpf + select) and math (tanh, exp, absf) ops.

    @given(program=te_programs())
    def test(program):
        inputs = program.random_inputs(seed=0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
try:
    from hypothesis import strategies as st
except ImportError as err:  # the test extra is not installed
    from strato.testing import HYPOTHESIS_MISSING

    raise ImportError(HYPOTHESIS_MISSING) from err


from xdsl.dialects import arith, func, math
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    TensorType,
    f32,
)
from xdsl.ir import Block, Operation, Region, SSAValue

from strato.dialects import te

Layout = tuple[int | None, ...]
"""For each dim of a tensor, the axis of the iteration space it follows (None: size 1)."""

DIM = st.integers(min_value=1, max_value=6)
AXIS_NAMES = "ijlmn"


@dataclass
class TeProgram:
    """A random te-level module and the shapes of the inputs of its `@main`."""

    module: ModuleOp
    input_shapes: list[tuple[int, ...]]

    def random_inputs(self, seed: int) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [rng.uniform(-2.0, 2.0, s).astype(np.float32) for s in self.input_shapes]

    def __repr__(self) -> str:
        return f"TeProgram(input_shapes={self.input_shapes}, module=\n{self.module})"

    def _repr_pretty_(self, printer, cycle: bool) -> None:  # hypothesis' failure report
        printer.text(repr(self))


def _tensor_type(space: Sequence[int], layout: Layout) -> TensorType:
    return TensorType(f32, [1 if axis is None else space[axis] for axis in layout])


def _sized_type(
    space: Sequence[int], layout: Layout, size: SSAValue | None
) -> tuple[TensorType, list[SSAValue]]:
    """The tensor type of `layout`, and its run-time sizes: with `size`, the dims that
    follow axis 0 are `?`, each sized by it."""
    if size is None:
        return _tensor_type(space, layout), []
    dims = [DYNAMIC_INDEX if axis == 0 else 1 if axis is None else space[axis] for axis in layout]
    return TensorType(f32, dims), [size for axis in layout if axis == 0]


@st.composite
def _layouts(draw: st.DrawFn, rank: int) -> Layout:
    """Some axes of the space, in any order, with size-1 dims mixed in."""
    axes = draw(st.lists(st.integers(0, rank - 1), unique=True, max_size=rank))
    if draw(st.booleans()):
        axes = sorted(axes)
    layout: list[int | None] = list(axes)
    for _ in range(draw(st.integers(0, 1))):
        layout.insert(draw(st.integers(0, len(layout))), None)
    return tuple(layout)


@dataclass
class _Body:
    """Appends the scalar ops of one stage body."""

    draw: st.DrawFn
    block: Block
    space: Sequence[int]
    axis_args: dict[int, SSAValue]
    tensors: list[tuple[SSAValue, Layout]]
    run_time_axis: int | None = None
    """An axis whose size is known at run time only (no reversed reads along it)."""

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def index(self, value: int) -> SSAValue:
        return self.add(arith.ConstantOp(IntegerAttr(value, IndexType())))

    def constant(self, value: float) -> SSAValue:
        return self.add(arith.ConstantOp(FloatAttr(value, f32)))

    def read(self) -> SSAValue:
        tensor, layout = self.draw(st.sampled_from(self.tensors))
        indices = []
        for axis in layout:
            if axis is None:
                indices.append(self.index(0))
            elif axis != self.run_time_axis and self.draw(st.integers(0, 4)) == 0:
                last = self.index(self.space[axis] - 1)
                indices.append(self.add(arith.SubiOp(last, self.axis_args[axis])))
            else:
                indices.append(self.axis_args[axis])
        return self.add(te.ReadOp(tensor, indices))

    def expression(self, depth: int) -> SSAValue:
        kind = self.draw(
            st.sampled_from(["read", "read", "const", "unary", "binary", "binary"])
            if depth > 0
            else st.sampled_from(["read", "read", "const"])
        )
        if kind == "read":
            return self.read()
        if kind == "const":
            return self.constant(self.draw(st.sampled_from([0.0, 0.5, -1.25, 2.0])))
        if kind == "unary":
            x = self.expression(depth - 1)
            unary = self.draw(st.sampled_from(["neg", "relu", "tanh", "exp", "abs"]))
            if unary == "neg":
                return self.add(arith.NegfOp(x))
            if unary == "relu":
                return self.add(arith.MaximumfOp(x, self.constant(0.0)))
            if unary == "tanh":
                return self.add(math.TanhOp(x))
            if unary == "exp":
                return self.add(math.ExpOp(self.add(math.TanhOp(x))))
            return self.add(math.AbsFOp(x))
        lhs, rhs = self.expression(depth - 1), self.expression(depth - 1)
        binary = self.draw(st.sampled_from(["add", "sub", "mul", "div", "max", "min", "select"]))
        if binary == "div":
            # a denominator of at least 1
            one = self.constant(1.0)
            return self.add(
                arith.DivfOp(lhs, self.add(arith.AddfOp(self.add(math.AbsFOp(rhs)), one)))
            )
        if binary == "select":
            less = self.add(arith.CmpfOp(lhs, rhs, "olt"))
            return self.add(arith.SelectOp(less, lhs, rhs))
        op_type = {
            "add": arith.AddfOp,
            "sub": arith.SubfOp,
            "mul": arith.MulfOp,
            "max": arith.MaximumfOp,
            "min": arith.MinimumfOp,
        }[binary]
        return self.add(op_type(lhs, rhs))


def _name_args(draw: st.DrawFn, block: Block, names: Sequence[str]) -> None:
    # Sometimes no name hints, so that the lowering's default axis names are used.
    if draw(st.booleans()):
        for arg, name in zip(block.args, names):
            arg.name_hint = name


@st.composite
def _stage(
    draw: st.DrawFn,
    name: str,
    space: Sequence[int],
    tensors: list[tuple[SSAValue, Layout]],
    size: SSAValue | None = None,
) -> tuple[te.StageOp, Layout]:
    """A stage over `space`; with `size`, axis 0 is that run-time size (never reduced:
    reduction extents are static)."""
    rank = len(space)
    reduced: list[int] = []
    reducible = range(1 if size is not None else 0, rank)
    if reducible and draw(st.integers(0, 2)) == 0:
        reduced = draw(st.lists(st.sampled_from(list(reducible)), unique=True, min_size=1, max_size=2))
    kept = [axis for axis in range(rank) if axis not in reduced]
    block = Block(arg_types=[IndexType()] * rank)
    _name_args(draw, block, [AXIS_NAMES[a] for a in kept] + [f"k{r}" for r in range(len(reduced))])
    axis_args = dict(zip([*kept, *reduced], block.args))
    body = _Body(draw, block, space, axis_args, tensors, 0 if size is not None else None)
    value = body.expression(depth=draw(st.integers(0, 2)))
    if not any(isinstance(op, te.ReadOp) for op in block.ops):
        value = body.add(arith.AddfOp(value, body.read()))
    block.add_op(te.YieldOp(value))
    layout = tuple(kept)
    type_, sizes = _sized_type(space, layout, size)
    if not reduced:
        return te.ComputeOp(name, type_, Region(block), sizes), layout
    kind = draw(st.sampled_from(list(te.ReduceKind)))
    init = FloatAttr(draw(st.sampled_from([0.0, 0.5, -3.0])), f32)
    extents = [space[axis] for axis in reduced]
    return te.ReduceOp(name, kind, extents, init, type_, Region(block), sizes), layout


@st.composite
def _primitive(
    draw: st.DrawFn,
    name: str,
    space: Sequence[int],
    known: Sequence[Layout],
    run_time: bool = False,
) -> tuple[te.PrimitiveOp, list[Layout], list[Layout]]:
    """A primitive and the layouts of its placeholders and outputs. Placeholders often
    take a layout of `known` so that calls can pass existing values. With `run_time`,
    axis 0 of the space is a `te.size` and the outputs are distinct stages (a returned
    placeholder would be a copy of run-time size)."""
    block = Block()
    size: SSAValue | None = None
    if run_time:
        size_op = te.SizeOp("n")
        size_op.result.name_hint = "n"
        block.add_op(size_op)
        size = size_op.result
    tensors: list[tuple[SSAValue, Layout]] = []
    inputs: list[Layout] = []
    for n in range(draw(st.integers(1, 2))):
        if run_time and n == 0:
            layout = tuple(range(len(space)))  # an input gives the run-time size
        elif known and draw(st.booleans()):
            layout = draw(st.sampled_from(list(known)))
        else:
            layout = draw(_layouts(len(space)))
        placeholder = te.PlaceholderOp(f"in{n}", *_sized_type(space, layout, size))
        placeholder.result.name_hint = f"in{n}"
        block.add_op(placeholder)
        tensors.append((placeholder.result, layout))
        inputs.append(layout)
    stages: list[tuple[SSAValue, Layout]] = []
    for n in range(draw(st.integers(1, 3))):
        stage, layout = draw(_stage(f"s{n}", space, tensors, size))
        block.add_op(stage)
        tensors.append((stage.result, layout))
        stages.append((stage.result, layout))
    outputs = [stages[-1]]
    for _ in range(draw(st.integers(0, 2))):
        if run_time:
            others = [s for s in stages if s not in outputs]
            if others:
                outputs.append(draw(st.sampled_from(others)))
            continue
        outputs.append(draw(st.sampled_from(tensors)))
    block.add_op(te.OutputOp([v for v, _ in outputs]))
    return te.PrimitiveOp(name, Region(block)), inputs, [layout for _, layout in outputs]


@st.composite
def te_programs(draw: st.DrawFn, max_primitives: int = 3) -> TeProgram:
    """A random te-level module with a function `@main` calling its primitives."""
    rank = draw(st.integers(1, 3))
    space = draw(st.lists(DIM, min_size=rank, max_size=rank))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))

    body = Block()
    arg_types: list[TensorType] = []
    values: list[tuple[SSAValue, Layout]] = []  # what calls may pass and main return
    call_results: list[SSAValue] = []
    primitives: list[te.PrimitiveOp] = []
    for p in range(draw(st.integers(1, max_primitives))):
        known = [layout for _, layout in values]
        primitive, inputs, outputs = draw(_primitive(f"p{p}", space, known))
        primitives.append(primitive)
        operands = []
        for layout in inputs:
            type_ = _tensor_type(space, layout)
            same = [v for v, lay in values if v.type == type_]
            source = draw(st.sampled_from(["arg", "const", "value"] if same else ["arg", "const"]))
            if source == "value":
                operands.append(draw(st.sampled_from(same)))
                continue
            if source == "arg":
                value = body.insert_arg(type_, len(body.args))
                value.name_hint = f"x{len(arg_types)}"
                arg_types.append(type_)
            else:
                weights = rng.uniform(-1.0, 1.0, type_.get_shape()).astype(np.float32)
                dense = DenseIntOrFPElementsAttr.from_list(type_, [float(w) for w in weights.flat])
                constant = arith.ConstantOp(dense, type_)
                constant.result.name_hint = "w"
                body.add_op(constant)
                value = constant.result
            values.append((value, layout))
            operands.append(value)
        call = te.CallOp(f"p{p}", operands, [_tensor_type(space, lay) for lay in outputs])
        body.add_op(call)
        for result, layout in zip(call.results, outputs):
            result.name_hint = f"y{p}"
            values.append((result, layout))
        call_results.append(call.results[0])

    returned = [call_results[-1]]
    for _ in range(draw(st.integers(0, 2))):
        returned.append(draw(st.sampled_from([v for v, _ in values])))
    body.add_op(func.ReturnOp(*returned))
    main = func.FuncOp("main", (arg_types, [v.type for v in returned]), Region(body))
    module = ModuleOp([*primitives, main])
    return TeProgram(module, [t.get_shape() for t in arg_types])


@dataclass
class RunTimePrimitive:
    """A random primitive whose iteration space's first axis is a run-time size `n`
    (`te.size`): `placeholder_shapes(n)` gives its inputs' shapes at a size."""

    module: ModuleOp
    space: tuple[int, ...]
    inputs: list[Layout]

    @property
    def primitive(self) -> te.PrimitiveOp:
        (op,) = self.module.ops
        assert isinstance(op, te.PrimitiveOp)
        return op

    def placeholder_shapes(self, n: int) -> list[tuple[int, ...]]:
        space = (n, *self.space[1:])
        return [tuple(1 if axis is None else space[axis] for axis in layout) for layout in self.inputs]

    def random_inputs(self, n: int, seed: int) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [rng.uniform(-2.0, 2.0, s).astype(np.float32) for s in self.placeholder_shapes(n)]

    def __repr__(self) -> str:
        return f"RunTimePrimitive(space={self.space}, inputs={self.inputs}, module=\n{self.module})"

    def _repr_pretty_(self, printer, cycle: bool) -> None:  # hypothesis' failure report
        printer.text(repr(self))


@st.composite
def run_time_primitives(draw: st.DrawFn) -> RunTimePrimitive:
    """A random primitive (as `te_programs` draws them) compiled once for every size
    of its space's first axis: the tensors along it have a `?` dimension sized by a
    `te.size`, no stage reduces along it or reads it reversed, and the first placeholder
    follows the whole space (so an input gives the size)."""
    rank = draw(st.integers(1, 3))
    space = tuple(draw(st.lists(DIM, min_size=rank, max_size=rank)))
    primitive, inputs, _ = draw(_primitive("p", space, [], run_time=True))
    return RunTimePrimitive(ModuleOp([primitive]), space, inputs)


__all__ = ["RunTimePrimitive", "TeProgram", "run_time_primitives", "te_programs"]
