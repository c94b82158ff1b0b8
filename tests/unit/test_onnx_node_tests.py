"""ONNX's node tests of strato's target operators, compiled through the ONNX backend
(LLVM machine code) and compared with ONNX's reference outputs.

One test runs them all and prints the pass rate, the slowest cases and every failure
with its reason; it fails when the pass rate drops below `MIN_PASS_RATE`. The same run
from the command line, for working on one operator:

    python -m strato.testing.onnx_node_tests --isolate -k conv
"""

from __future__ import annotations

import warnings

from strato.testing.onnx_node_tests import (
    pass_rate,
    run_node_tests,
    select_node_tests,
    summarize,
)

# 575 of 583 pass today (98.6%). The 8 failures: training-mode Dropout with a ratio
# (4: its expected output comes from numpy's random generator), string tensors (2) and
# sequence/optional inputs (2). Raise this as operators gain coverage.
MIN_PASS_RATE = 98.0
"""Percent of the selected node tests that must pass: 568 of 583 (97.4%) do. The rest
need features strato leaves out on purpose or has not got yet (training-mode
BatchNormalization and Dropout, string, sequence and optional inputs, MatMul of a 1-D
operand by a runtime matrix, MaxPool's argmax output). Raise this as they land, to the
measured rate rounded down, so that a case that passes stays passing."""

CASE_TIMEOUT = 60.0
"""Seconds one case may take to compile and run; a hung case fails alone."""

RUN_BUDGET = 600.0
"""Seconds for the whole run; cases not started by then fail as not run. A full run takes
about a minute (35 s of CPU: compiling about 580 models); the budget only bounds a CI
job gone wrong."""


def test_onnx_node_tests_pass_rate(capsys):
    with warnings.catch_warnings():
        # The cases' reference computations warn about overflows and infinities on purpose.
        warnings.simplefilter("ignore")
        cases = select_node_tests()
    assert cases, "no ONNX node tests selected"
    # A worker process, so that generated code that crashes fails one case, not the run.
    results = run_node_tests(cases, "llvm", isolate=True, timeout=CASE_TIMEOUT, budget=RUN_BUDGET)
    with capsys.disabled():
        print("\n" + summarize(results, slowest=10))
    rate = pass_rate(results)
    assert rate >= MIN_PASS_RATE, (
        f"{rate:.1f}% of the ONNX node tests pass, below the required {MIN_PASS_RATE}% "
        "(the failures and their reasons are printed above)"
    )
