"""graph-raise-composites: exported GELU and layer-norm chains, in the orders and forms
exporters write them, become one op that computes the same values (interpreted before
and after on random inputs); a chain whose intermediate is read elsewhere, or whose
constant differs, stays."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Block, Region, SSAValue

from strato.context import make_context
from strato.dialects import graph
from strato.testing.equivalence import check_pipeline
from strato.transforms.graph_raise_composites import GraphRaiseCompositesPass


def _constant(block: Block, value, shape=()) -> SSAValue:
    op = graph.ConstantOp.from_array(np.full(shape, value, np.float32))
    block.add_op(op)
    return op.result


def _add(block: Block, op) -> SSAValue:
    block.add_op(op)
    return op.results[0]


def _product(block: Block, draw, factors: list) -> SSAValue:
    """The product of `factors` (values, or numbers made constants), multiplied in a
    drawn order and grouping; a number may be divided by instead (its reciprocal)."""
    order = draw(st.permutations(range(len(factors))))
    value = None
    for index in order:
        factor = factors[index]
        if value is None:
            value = factor if isinstance(factor, SSAValue) else _constant(block, factor)
            continue
        if not isinstance(factor, SSAValue) and draw(st.booleans()):
            value = _add(block, graph.DivOp(value, _constant(block, 1.0 / factor, draw(st.sampled_from([(), (1,)])))))
        else:
            other = factor if isinstance(factor, SSAValue) else _constant(block, factor)
            pair = (value, other) if draw(st.booleans()) else (other, value)
            value = _add(block, graph.MulOp(*pair))
    assert value is not None
    return value


def _one_plus(block: Block, draw, value: SSAValue) -> SSAValue:
    one = _constant(block, 1.0)
    return _add(block, graph.AddOp(*((value, one) if draw(st.booleans()) else (one, value))))


@st.composite
def composite_programs(draw):
    """(module, the op it should become or None, the kind drawn)."""
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    kind = draw(st.sampled_from(["gelu_erf", "gelu_tanh", "layer_norm"]))
    block = Block(arg_types=[TensorType(f32, shape)])
    x = block.args[0]
    if draw(st.booleans()):  # a producer, so x is not a function argument
        x = _add(block, graph.TanhOp(x))
    wrong = draw(st.integers(0, 5)) == 0  # a constant off by 10%
    nudge = 1.1 if wrong else 1.0
    intermediates: list[SSAValue] = []
    if kind == "gelu_erf":
        scaled = _product(block, draw, [x, nudge / math.sqrt(2.0)])
        erf = _add(block, graph.ErfOp(scaled))
        intermediates.append(erf)
        result = _product(block, draw, [x, _one_plus(block, draw, erf), 0.5])
        expected = graph.GeluOp
    elif kind == "gelu_tanh":
        if draw(st.booleans()):
            cube = _add(block, graph.PowOp(x, _constant(block, 3.0)))
            cube = _product(block, draw, [cube, 0.044715])
        else:
            cube = _product(block, draw, [x, x, x, 0.044715])
        inner = _add(block, graph.AddOp(*((x, cube) if draw(st.booleans()) else (cube, x))))
        tanh = _add(block, graph.TanhOp(_product(block, draw, [inner, nudge * math.sqrt(2.0 / math.pi)])))
        intermediates.append(tanh)
        result = _product(block, draw, [x, _one_plus(block, draw, tanh), 0.5])
        expected = graph.GeluOp
    else:
        axes = draw(st.integers(1, len(shape)))
        reduced = list(range(len(shape) - axes, len(shape)))
        mean = _add(block, graph.ReduceMeanOp(x, reduced, keepdims=True))
        centered = _add(block, graph.SubOp(x, mean))
        if draw(st.booleans()):
            square = _add(block, graph.PowOp(centered, _constant(block, 2.0 * nudge)))
        else:
            square = _add(block, graph.MulOp(centered, centered))
            wrong = False  # no constant to get wrong
        variance = _add(block, graph.ReduceMeanOp(square, reduced, keepdims=True))
        epsilon = _constant(block, draw(st.sampled_from([1e-5, 1e-12, 0.1])))
        shifted = _add(block, graph.AddOp(*((variance, epsilon) if draw(st.booleans()) else (epsilon, variance))))
        result = _add(block, graph.DivOp(centered, _add(block, graph.SqrtOp(shifted))))
        intermediates.append(variance)
        normalized = shape[len(shape) - axes :]
        rng = np.random.default_rng(draw(st.integers(0, 99)))
        for op_kind in draw(st.sampled_from([[], [graph.MulOp], [graph.MulOp, graph.AddOp]])):
            leading = (1,) * draw(st.integers(0, len(shape) - axes))
            vector = graph.ConstantOp.from_array(rng.uniform(0.5, 1.5, leading + normalized).astype(np.float32))
            block.add_op(vector)
            result = _add(block, op_kind(result, vector.result))
        expected = graph.LayerNormOp
    outputs = [result]
    leaked = draw(st.integers(0, 5)) == 0
    if leaked:  # an intermediate read outside the chain
        outputs.append(intermediates[0])
    block.add_op(func.ReturnOp(*outputs))
    function = func.FuncOp("main", ([x.type for x in block.args], [v.type for v in outputs]), Region(block))
    raised = None if wrong or leaked else expected
    return _Case(ModuleOp([function]), raised, kind)


class _Case:
    """A drawn program, shown as its IR when a test fails."""

    def __init__(self, module: ModuleOp, raised, kind: str):
        self.module, self.raised, self.kind = module, raised, kind
        self.text = str(module)

    def __repr__(self) -> str:
        return f"{self.kind} (expected {getattr(self.raised, 'name', None)}):\n{self.text}"


@settings(max_examples=60, deadline=None)
@given(case=composite_programs())
def test_raised_chains_compute_what_they_did(case):
    module, raised, kind = case.module, case.raised, case.kind
    report = check_pipeline(make_context(), module, [GraphRaiseCompositesPass()], n_inputs=4, rtol=1e-4, atol=1e-5)
    assert report.unsupported is None, report.unsupported
    assert report.difference is None, report.difference.describe()
    module.verify()
    ops = [op for op in module.walk() if op.name.startswith("graph.") and op.name != "graph.constant"]
    if raised is None:
        assert not any(isinstance(op, graph.GeluOp | graph.LayerNormOp) for op in ops)
        return
    composite = [op for op in ops if isinstance(op, raised)]
    assert len(composite) == 1, [op.name for op in ops]
    leftovers = {op.name for op in ops} - {composite[0].name, "graph.tanh", "graph.reshape"}
    assert not leftovers, leftovers
    if kind == "gelu_tanh":
        assert composite[0].approximation == "tanh"
