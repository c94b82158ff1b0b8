"""Hypothesis strategies for random small graph-level programs.

`graph_programs()` draws a module holding one function `@main` built from a random
sequence of graph ops over small static shapes, with random constant weights, together
with the shapes of its inputs. Property tests interpret it before and after a pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Block, Region, SSAValue

from strato.dialects import graph

DIM = st.integers(min_value=1, max_value=5)


@dataclass
class GraphProgram:
    module: ModuleOp
    input_shapes: list[tuple[int, ...]]

    def random_inputs(self, seed: int) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [rng.standard_normal(s).astype(np.float32) for s in self.input_shapes]


def _shape_of(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return value.type.get_shape()


@st.composite
def graph_programs(draw: st.DrawFn, max_ops: int = 5) -> GraphProgram:
    rank = draw(st.integers(min_value=1, max_value=3))
    base_shape = tuple(draw(st.lists(DIM, min_size=rank, max_size=rank)))
    input_shapes = [base_shape]
    if draw(st.booleans()):
        # a second input that broadcasts against the first
        input_shapes.append(tuple(draw(st.sampled_from([1, d])) for d in base_shape))
    block = Block(arg_types=[TensorType(f32, s) for s in input_shapes])
    values: list[SSAValue] = list(block.args)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))

    def constant(shape: tuple[int, ...]) -> SSAValue:
        op = graph.ConstantOp.from_array(rng.standard_normal(shape).astype(np.float32))
        block.add_op(op)
        return op.result

    for _ in range(draw(st.integers(min_value=1, max_value=max_ops))):
        x = draw(st.sampled_from(values))
        shape = _shape_of(x)
        if draw(st.integers(0, 4)) == 0:
            # an all-constant operand, so that constant subgraphs occur
            x = constant(shape)
        kind = draw(st.sampled_from(["add", "mul", "relu", "dense", "matmul", "transpose"]))
        if kind in ("add", "mul"):
            partners = [v for v in values if graph.broadcast_shapes(shape, _shape_of(v))]
            if draw(st.booleans()) or not partners:
                y = constant(tuple(draw(st.sampled_from([1, d])) for d in shape))
            else:
                y = draw(st.sampled_from(partners))
            op = (graph.AddOp if kind == "add" else graph.MulOp)(x, y)
        elif kind == "relu":
            op = graph.ReluOp(x)
        elif kind == "dense":
            units = draw(DIM)
            bias = constant((units,)) if draw(st.booleans()) else None
            op = graph.DenseOp(x, constant((units, shape[-1])), bias)
        elif kind == "matmul" and len(shape) >= 2:
            op = graph.MatmulOp(x, constant((shape[-1], draw(DIM))))
        elif kind == "transpose":
            perm = draw(st.permutations(range(len(shape))))
            op = graph.TransposeOp(x, perm)
        else:
            op = graph.ReluOp(x)
        block.add_op(op)
        values.append(op.results[0])

    result = values[-1]
    block.add_op(func.ReturnOp(result))
    function = func.FuncOp(
        "main",
        ([TensorType(f32, s) for s in input_shapes], [result.type]),
        Region(block),
    )
    return GraphProgram(ModuleOp([function]), input_shapes)
