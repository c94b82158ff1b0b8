"""ONNX's whole node-test suite, run by strato's ONNX backend and by onnxruntime in one run.

    python benchmarks/node_tests.py                   # every node test of the onnx package
    python benchmarks/node_tests.py -k "gather|scatter" --json node_tests.json

Each case (a small model, its inputs and reference outputs, shipped with the onnx package)
runs twice under the same comparison as ONNX's backend runner (output count, shapes,
dtypes, values within the case's rtol/atol): compiled by strato's backend
(`strato/onnx_backend.py`, the LLVM target, in a worker process so that a crash
fails one case) and by onnxruntime's CPU provider. The report gives the pass counts and
rates of both over the whole suite and over the cases whose operators are all in strato's
op table (`_expanded` variants included when their function body is), then every strato
failure on such a case with its one-line reason.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict

from strato.testing.onnx_node_tests import (
    TARGET_OPS,
    NodeTestResult,
    run_node_tests,
    select_node_tests,
)


def uses_supported_ops(case) -> bool:
    """Whether every node of the case's model is an operator strato imports."""
    types = {node.op_type for node in case.model.graph.node}
    return bool(types) and types <= TARGET_OPS


def rate_line(label: str, results: Sequence[NodeTestResult]) -> str:
    passed = sum(r.passed for r in results)
    rate = 100.0 * passed / max(len(results), 1)
    return f"{label:12s} {passed:5d} of {len(results):5d} pass ({rate:5.1f}%)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="pattern", help="regex on test names")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per strato case")
    parser.add_argument("--json", metavar="PATH", help="write every case's results as JSON")
    args = parser.parse_args(argv)

    with warnings.catch_warnings():
        # The cases' reference computations warn about overflows and infinities on purpose.
        warnings.simplefilter("ignore")
        cases = select_node_tests(None, pattern=args.pattern)
    supported = [uses_supported_ops(case) for case in cases]

    start = time.perf_counter()
    ours = run_node_tests(cases, "llvm", isolate=True, timeout=args.timeout)
    strato_seconds = time.perf_counter() - start
    import onnxruntime

    # cases onnxruntime rejects are failures in the table, not log lines on stderr
    onnxruntime.set_default_logger_severity(4)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = run_node_tests(cases, "onnxruntime", isolate=True, timeout=args.timeout)
    onnxruntime_seconds = time.perf_counter() - start

    ours_supported = [r for r, s in zip(ours, supported) if s]
    theirs_supported = [r for r, s in zip(theirs, supported) if s]
    failures = [r for r in ours_supported if not r.passed]
    if failures:
        print(f"strato failures on supported operators ({len(failures)}):")
        for result in failures:
            print(f"  FAIL {result.name}: {result.reason}")
    print(
        f"\nONNX node tests ({len(cases)} cases; {len(ours_supported)} use only the "
        f"{len(TARGET_OPS)} operators strato imports)"
    )
    print("whole suite:")
    print("  " + rate_line("strato", ours) + f" in {strato_seconds:6.1f} s")
    print("  " + rate_line("onnxruntime", theirs) + f" in {onnxruntime_seconds:6.1f} s")
    print("supported operators:")
    print("  " + rate_line("strato", ours_supported))
    print("  " + rate_line("onnxruntime", theirs_supported))

    if args.json:
        records = [
            {
                "name": mine.name,
                "supported": s,
                "strato": asdict(mine),
                "onnxruntime": asdict(peer),
            }
            for mine, peer, s in zip(ours, theirs, supported)
        ]
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(records, file, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
