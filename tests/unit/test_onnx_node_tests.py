"""ONNX's node tests of every operator strato imports (`_expanded` variants included),
compiled through the ONNX backend (LLVM machine code) and compared with ONNX's reference
outputs.

One test runs them all and prints the slowest cases and every failure with its reason.
Every case must pass except those named in `EXPECTED_FAILURES`, each with the reason it
fails: a new failure fails the test, and so does a listed case that passes (take it off
the list). The same run from the command line, for working on one operator:

    python -m strato.testing.onnx_node_tests --isolate -k conv
"""

from __future__ import annotations

import os
import warnings

from strato.testing.onnx_node_tests import run_node_tests, select_node_tests, summarize

_F32_FFT_ROUND_OFF = (
    "the reference output is numpy's complex64 ifft, whose round-off leaves 1.9e-7 on 10 "
    "values that are 0 in exact arithmetic (strato's transform, summed in f64, gives 6e-15), "
    "over the case's atol of 1e-7"
)
EXPECTED_FAILURES: dict[str, str] = {
    "test_dft_inverse": _F32_FFT_ROUND_OFF,
    "test_dft_inverse_opset19": _F32_FFT_ROUND_OFF,
}
"""The selected cases that fail, and why (cases whose operators strato does not import
are not selected)."""


CASE_TIMEOUT = 60.0
"""Seconds one case may take to compile and run; a hung case fails alone."""

RUN_BUDGET = 1200.0
"""Seconds for the whole run; cases not started by then fail as not run. A full run
compiles about a thousand models, one worker process per core, in a few minutes; the
budget only bounds a CI job gone wrong."""


def test_onnx_node_tests(capsys):
    with warnings.catch_warnings():
        # The cases' reference computations warn about overflows and infinities on purpose.
        warnings.simplefilter("ignore")
        cases = select_node_tests()
    assert cases, "no ONNX node tests selected"
    # A worker process, so that generated code that crashes fails one case, not the run.
    results = run_node_tests(
        cases,
        "llvm",
        isolate=True,
        timeout=CASE_TIMEOUT,
        budget=RUN_BUDGET,
        workers=len(os.sched_getaffinity(0)),
    )
    with capsys.disabled():
        print("\n" + summarize(results, slowest=10))
    failed = {result.name: result.reason for result in results if not result.passed}
    unexpected = {name: reason for name, reason in failed.items() if name not in EXPECTED_FAILURES}
    selected = {case.name for case in cases}
    fixed = sorted(name for name in EXPECTED_FAILURES if name in selected and name not in failed)
    gone = sorted(name for name in EXPECTED_FAILURES if name not in selected)
    problems = [f"fails: {name}: {reason}" for name, reason in unexpected.items()]
    problems += [f"passes, take it off EXPECTED_FAILURES: {name}" for name in fixed]
    problems += [f"not a selected case, take it off EXPECTED_FAILURES: {name}" for name in gone]
    assert not problems, "\n".join(problems)


def test_reduced_precision_function_bodies(capsys):
    """The f16 `_expanded` cases whose bodies use only operators strato
    imports, whatever operator they expand (Attention, CausalConvWithState, ...): they
    check that f16 arithmetic rounds where numpy does (sums accumulate in f32 and round
    once). The other such bodies (bf16 ones included) run in benchmarks/node_tests.py."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        every = select_node_tests(None, pattern=r"(fp16|float16).*_expanded")
        cases = [
            case
            for case in every
            if {node.op_type for node in case.model.graph.node} <= set(select_ops())
            and case.name not in EXPECTED_FAILURES
        ]
    assert len(cases) >= 5, [case.name for case in cases]
    results = run_node_tests(
        cases, "llvm", isolate=True, timeout=CASE_TIMEOUT, budget=RUN_BUDGET,
        workers=len(os.sched_getaffinity(0)),
    )  # fmt: skip
    with capsys.disabled():
        print("\n" + summarize(results, slowest=3))
    failed = [f"{result.name}: {result.reason}" for result in results if not result.passed]
    assert not failed, "\n".join(failed)


def select_ops() -> list[str]:
    from strato.frontends.onnx.op_table import ONNX_CONVERTERS

    return list(ONNX_CONVERTERS)
