"""Hypothesis strategies for random te- and loop-level programs drawn from every graph op.

`te_programs()` (strato.testing.te_programs) and `loop_programs()`
(strato.testing.llvm_programs) build their bodies from a fixed handful of arith and math
ops. The programs here come from the other direction: a random graph program
(`graph_programs`, over every registered graph op and its generator) lowered with
strato's own passes, so the te and loop levels see exactly the stage bodies, reductions,
index arithmetic and buffers that each op's strategy produces:

    @given(program=lowered_programs("te", kinds=["graph.softmax"]))
    def test_my_te_pass(program):
        inputs = program.random_inputs(seed=0)
        before = run_te(program.module, inputs)
        ...

The levels are named after the pipeline that produced them:

    te      convert-graph-to-te (one te.primitive per graph op, nothing fused)
    loops   convert-graph-to-te, te-inline-stages, convert-te-to-loops
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

from xdsl.dialects.builtin import ModuleOp

from strato.testing.graph_programs import ALL_KINDS, GraphProgram, graph_programs

LEVELS: dict[str, str] = {
    "te": "convert-graph-to-te",
    "loops": "convert-graph-to-te,te-inline-stages,convert-te-to-loops",
}
"""The pipeline that takes a graph program to each level."""


@dataclass
class LoweredProgram:
    """A graph program lowered to `level`; `source` is the graph program it came from
    (its interpreter is the reference for every level)."""

    level: str
    module: ModuleOp
    source: GraphProgram

    def random_inputs(self, seed: int) -> list[np.ndarray]:
        return self.source.random_inputs(seed)

    def edge_inputs(self, seed: int, nonfinite: bool = True) -> list[np.ndarray]:
        return self.source.edge_inputs(seed, nonfinite)

    def __repr__(self) -> str:
        from strato.testing.equivalence import ir_text

        return f"LoweredProgram({self.level}) of {self.source!r}\nlowered:\n{ir_text(self.module)}"


def lower_graph_program(program: GraphProgram, level: str) -> LoweredProgram:
    """`program` lowered to `level` ("te" or "loops"); the graph program is left as it is."""
    from strato.context import make_context
    from strato.pipeline import run_pipeline

    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; choose from {', '.join(LEVELS)}")
    module = program.module.clone()
    run_pipeline(make_context(), module, LEVELS[level])
    return LoweredProgram(level, module, program)


@st.composite
def lowered_programs(
    draw: st.DrawFn, level: str, max_ops: int = 4, kinds: Sequence[str] = ALL_KINDS
) -> LoweredProgram:
    """A random graph program of 1..`max_ops` ops drawn from `kinds` (every registered
    graph op by default), lowered to `level`."""
    return lower_graph_program(draw(graph_programs(max_ops=max_ops, kinds=kinds)), level)
