"""graph-unroll-recurrences: recurrent layers as their time steps keep their results,
and the steps compile once however long the sequence."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings

from strato.context import make_context
from strato.dialects import graph
from strato.interpreters.graph import run_graph
from strato.pipeline import run_pipeline
from strato.testing.graph_programs import GraphProgram, graph_programs

RECURRENT = ("graph.lstm", "graph.gru", "graph.rnn")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=graph_programs(max_ops=3, kinds=[*RECURRENT, "graph.lstm", "add", "relu"]))
def test_unrolling_keeps_the_results(program: GraphProgram):
    inputs = program.random_inputs(seed=3)
    expected = run_graph(program.module, inputs)
    run_pipeline(make_context(), program.module, "graph-unroll-recurrences")
    program.module.verify()
    assert not any(op.name in RECURRENT for op in program.module.walk())
    actual = run_graph(program.module, inputs)
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)


def _lstm_kernels(steps: int, direction: str = "forward") -> tuple[int, int]:
    """Kernels of a one-layer LSTM of `steps` steps after lowering and loop-dedup-kernels:
    (kernels called, distinct kernels)."""
    from xdsl.dialects import func

    from strato.dialects.loop import KERNEL_ATTR
    from strato.pipeline import run_pipeline

    rng = np.random.default_rng(0)
    dirs = 2 if direction == "bidirectional" else 1
    hidden, features = 8, 5
    block_text = f"""
func.func @main(%x: tensor<{steps}x2x{features}xf32>) -> tensor<{steps}x{dirs}x2x{hidden}xf32> {{
  %w = graph.constant dense<{rng.standard_normal((dirs, 4 * hidden, features)).tolist()}> : tensor<{dirs}x{4 * hidden}x{features}xf32>
  %r = graph.constant dense<{rng.standard_normal((dirs, 4 * hidden, hidden)).tolist()}> : tensor<{dirs}x{4 * hidden}x{hidden}xf32>
  %y, %y_h, %y_c = graph.lstm {direction} %x, %w, %r : (tensor<{steps}x2x{features}xf32>, tensor<{dirs}x{4 * hidden}x{features}xf32>, tensor<{dirs}x{4 * hidden}x{hidden}xf32>) -> (tensor<{steps}x{dirs}x2x{hidden}xf32>, tensor<{dirs}x2x{hidden}xf32>, tensor<{dirs}x2x{hidden}xf32>)
  func.return %y : tensor<{steps}x{dirs}x2x{hidden}xf32>
}}"""
    from strato.api import parse_module

    module = parse_module(block_text)
    run_pipeline(
        make_context(), module,
        "graph-default,convert-graph-to-te,te-inline-stages,convert-te-to-loops,loop-dedup-kernels",
    )  # fmt: skip
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes]
    calls = [op for op in module.walk() if isinstance(op, func.CallOp)]
    return len(calls), len(kernels)


def test_the_steps_compile_once_however_long_the_sequence():
    calls_short, distinct_short = _lstm_kernels(4)
    calls_long, distinct_long = _lstm_kernels(16)
    assert calls_long > calls_short  # every step is called
    assert distinct_long == distinct_short  # but compiled once
    assert distinct_long < calls_long / 4
    _, distinct_both = _lstm_kernels(16, "bidirectional")
    assert distinct_both <= 2 * distinct_long


def test_a_recurrence_with_lengths_that_end_early_is_kept():
    from strato.api import parse_module

    module = parse_module("""
func.func @main(%x: tensor<3x2x2xf32>, %w: tensor<1x2x2xf32>, %r: tensor<1x2x2xf32>, %lens: tensor<2xi64>) -> tensor<3x1x2x2xf32> {
  %y, %y_h = graph.rnn forward %x, %w, %r sequence_lens %lens : (tensor<3x2x2xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>, tensor<2xi64>) -> (tensor<3x1x2x2xf32>, tensor<1x2x2xf32>)
  func.return %y : tensor<3x1x2x2xf32>
}""")
    run_pipeline(make_context(), module, "graph-unroll-recurrences")
    assert any(isinstance(op, graph.RnnOp) for op in module.walk())
