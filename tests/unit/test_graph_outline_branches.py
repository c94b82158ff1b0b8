"""graph-outline-branches and graph.if end to end: outlining keeps the program's
meaning (generated programs with run-time branches, interpreted before and after), and
the compiled program runs the branch its condition takes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from xdsl.dialects import func

from strato.api import parse_module
from strato.context import make_context
from strato.dialects import graph
from strato.interpreters.graph import run_graph
from strato.pipeline import run_pipeline
from strato.testing.equivalence import compile_loops_program
from strato.testing.graph_programs import GraphProgram, graph_programs

BRANCHING = (
    "graph.if", "graph.cond_call", "graph.loop", "graph.loop_call", "graph.scan",
    "graph.scan_call", "graph.relu", "graph.add", "graph.dense",
)


def _condition_inputs(program: GraphProgram, seed: int) -> list[list[np.ndarray]]:
    """Inputs that take each branch: every boolean input all true, then all false."""
    inputs = program.random_inputs(seed)
    both = []
    for flag in (True, False):
        both.append([np.full_like(a, flag) if a.dtype == np.bool_ else a for a in inputs])
    return both


@given(program=graph_programs(max_ops=5, kinds=BRANCHING))
def test_outlining_keeps_generated_programs(program: GraphProgram):
    cases = _condition_inputs(program, seed=3)
    expected = [run_graph(program.module, inputs) for inputs in cases]
    run_pipeline(make_context(), program.module, "graph-outline-branches")
    program.module.verify()
    region_ops = (graph.IfOp, graph.LoopOp, graph.ScanOp)
    assert not any(isinstance(op, region_ops) for op in program.module.walk())
    for inputs, want in zip(cases, expected, strict=True):
        for a, e in zip(run_graph(program.module, inputs), want, strict=True):
            np.testing.assert_array_equal(a, e)


@settings(max_examples=10, deadline=None)
@given(program=graph_programs(max_ops=4, kinds=BRANCHING))
def test_compiled_branches_match_the_interpreter(program: GraphProgram):
    """The whole llvm pipeline (graph-default first, which outlines): the compiled
    program gives what the graph interpreter does, whichever branch is taken."""
    cases = _condition_inputs(program, seed=5)
    expected = [run_graph(program.module, inputs) for inputs in cases]
    run_pipeline(
        make_context(), program.module,
        "graph-default,convert-graph-to-te,te-inline-stages,convert-te-to-loops,schedule-default",
    )  # fmt: skip
    compiled = compile_loops_program(program.module)
    for inputs, want in zip(cases, expected, strict=True):
        for a, e in zip(compiled(inputs), want, strict=True):
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)


IF_TEXT = """
func.func @main(%c: tensor<i1>, %x: tensor<8xf32>) -> tensor<8xf32> {
  %w = graph.constant dense<3.0> : tensor<8xf32>
  %r = graph.if %c : tensor<i1> -> (tensor<8xf32>) {
    %a = graph.mul %x, %w : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %b = graph.add %a, %x : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    graph.yield %b : tensor<8xf32>
  } else {
    %n = graph.neg %x : tensor<8xf32>
    graph.yield %n : tensor<8xf32>
  }
  %s = graph.relu %r : tensor<8xf32>
  func.return %s : tensor<8xf32>
}
"""


def test_the_caller_plans_the_branch_results_and_each_branch_is_a_function():
    module = parse_module(IF_TEXT)
    run_pipeline(make_context(), module, "graph-default")
    functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    assert set(functions) == {"main", "main_if0_then", "main_if0_else"}
    (call,) = [op for op in functions["main"].walk() if isinstance(op, graph.CondCallOp)]
    assert call.attributes["arena_offsets"].get_values() == (0,)
    # the branch's constant stayed a constant, and its ops fused into one kernel
    then_ops = [op.name for op in functions["main_if0_then"].body.block.ops]
    assert then_ops == ["graph.constant", "graph.fused", "func.return"]


@pytest.mark.parametrize("flag", [True, False])
def test_a_lowered_branch_runs_only_when_taken(flag):
    module = parse_module(IF_TEXT)
    run_pipeline(
        make_context(), module,
        "graph-default,convert-graph-to-te,te-inline-stages,convert-te-to-loops,schedule-default",
    )  # fmt: skip
    x = np.linspace(-2, 2, 8, dtype=np.float32)
    (y,) = compile_loops_program(module)([np.array(flag), x])
    np.testing.assert_allclose(y, np.maximum(4 * x if flag else -x, 0))


STOPPING_TEXT = """
func.func @main(%go0: tensor<i1>, %h0: tensor<4xf32>, %xs: tensor<5x4xf32>, %limit: tensor<f32>) -> (tensor<i1>, tensor<4xf32>, tensor<5x4xf32>) {
  %go, %h, %ys = graph.scan stops inits(%go0, %h0) over(%xs) : (tensor<i1>, tensor<4xf32>, tensor<5x4xf32>) -> (tensor<i1>, tensor<4xf32>, tensor<5x4xf32>) {
  ^bb0(%c: tensor<i1>, %s: tensor<4xf32>, %x: tensor<4xf32>):
    %a = graph.add %s, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %t = graph.reduce_sum %a [0] : (tensor<4xf32>) -> tensor<f32>
    %more = graph.less %t, %limit : (tensor<f32>, tensor<f32>) -> tensor<i1>
    graph.yield %more, %a, %a : tensor<i1>, tensor<4xf32>, tensor<4xf32>
  }
  func.return %go, %h, %ys : tensor<i1>, tensor<4xf32>, tensor<5x4xf32>
}
"""


@pytest.mark.parametrize(
    ("start", "limit", "ran"),
    [(True, 100.0, 5), (True, 2.0, 1), (True, 9.0, 3), (False, 100.0, 0)],
    ids=["never", "first", "third", "not-started"],
)
def test_a_scan_that_stops_runs_while_its_condition_holds(start, limit, ran):
    """Running sums of ones (4 per row): the positions run until the sum passes the
    limit (the position that fails it is the last), the carried sum is the last
    position's and the rows not run are zeros; compiled as the interpreter says."""
    module = parse_module(STOPPING_TEXT)
    inputs = [np.array(start), np.zeros(4, np.float32), np.ones((5, 4), np.float32), np.array(limit, np.float32)]
    going, h, ys = run_graph(module, inputs)
    expected = np.zeros((5, 4), np.float32)
    expected[:ran] = np.arange(1, ran + 1, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(ys, expected)
    np.testing.assert_array_equal(h, np.full(4, ran, np.float32))
    assert bool(going) == (start and ran == 5)
    run_pipeline(
        make_context(), module,
        "graph-default,convert-graph-to-te,te-inline-stages,convert-te-to-loops,schedule-default",
    )  # fmt: skip
    for a, e in zip(compile_loops_program(module)(inputs), [going, h, ys], strict=True):
        np.testing.assert_array_equal(a, e)
