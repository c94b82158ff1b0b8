"""Running ONNX's own node test cases through strato, one result per case.

The cases come with the onnx package (`onnx.backend.test.loader.load_model_tests`): a
one-node (or small) model, inputs, and reference outputs. `select_node_tests` picks the
cases whose models use only the given operators; `run_node_test` compiles one case with
strato (mode "llvm", the real path) or imports and interprets it at the graph level
(mode "graph", quicker, for operator work) and compares like ONNX's backend runner:
same number of outputs, same shapes and dtypes, values within the case's rtol/atol.

    python -m strato.testing.onnx_node_tests --mode graph -k conv
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

# The operators of the graph-level issue: their node tests are the target set.
TARGET_OPS: frozenset[str] = frozenset(
    """Conv ConvTranspose Gemm MatMul Relu LeakyRelu Clip Sigmoid Tanh Erf Gelu Softmax
    LayerNormalization BatchNormalization Add Sub Mul Div Pow Sqrt Exp Log Neg Abs Max Min
    Sum MaxPool AveragePool GlobalAveragePool Flatten Reshape Transpose Concat Split Slice
    Pad Squeeze Unsqueeze Gather Shape Cast Identity Dropout Constant Expand Where Equal
    ReduceMean ReduceSum ReduceMax LSTM""".split()
)


@dataclass
class NodeTestResult:
    name: str
    passed: bool
    reason: str = ""


def select_node_tests(ops: Iterable[str] = TARGET_OPS, pattern: str | None = None) -> list:
    """The node test cases whose models use only `ops` (and match `pattern`)."""
    from onnx.backend.test.loader import load_model_tests

    allowed = set(ops)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    selected = []
    for case in cases:
        types = {node.op_type for node in case.model.graph.node}
        if not types or not types <= allowed:
            continue
        if pattern is not None and not re.search(pattern, case.name):
            continue
        selected.append(case)
    return selected


def _normalize(value) -> np.ndarray:
    from onnx import TensorProto, numpy_helper

    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    return np.asarray(value)


def compare_outputs(
    outputs: Sequence[np.ndarray], expected: Sequence[np.ndarray], rtol: float, atol: float
) -> str:
    """'' when `outputs` match `expected` as ONNX's runner requires, else why not."""
    if len(outputs) != len(expected):
        return f"{len(outputs)} outputs, expected {len(expected)}"
    for n, (out, ref) in enumerate(zip(outputs, expected)):
        out = np.asarray(out)
        if out.shape != ref.shape:
            return f"output {n} has shape {out.shape}, expected {ref.shape}"
        if out.dtype != ref.dtype:
            return f"output {n} has dtype {out.dtype}, expected {ref.dtype}"
        if ref.dtype == object:
            if not np.array_equal(out, ref):
                return f"output {n} differs"
            continue
        if ref.dtype.name == "bfloat16":
            rtol = max(rtol, 2**-6)
        if ref.dtype.kind not in "fiub" or ref.dtype.name in ("bfloat16",) or ref.dtype.itemsize < 2:
            out, ref = out.astype(np.float32), ref.astype(np.float32)
        try:
            np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)
        except AssertionError as error:
            lines = [line for line in str(error).splitlines() if "Max" in line or "Mismatch" in line]
            return f"output {n} differs: " + "; ".join(s.strip() for s in lines)
    return ""


def run_node_test(case, mode: str = "llvm") -> NodeTestResult:
    """Compile (or interpret) one case and compare with its reference outputs."""
    from strato.diagnostics import StratoError

    try:
        if mode == "graph":
            from strato.frontends.onnx import import_onnx
            from strato.interpreters.graph import run_graph

            imported = import_onnx(case.model)

            def run(inputs):
                return run_graph(imported.module, inputs, imported.function_name)

        else:
            import strato

            compiled = strato.compile(case.model)
            run = compiled.__call__ if not hasattr(compiled, "run") else compiled.run
        for inputs, references in case.data_sets:
            arrays = [_normalize(v) for v in inputs]
            outputs = run(arrays)
            if not isinstance(outputs, (list, tuple)):
                outputs = [outputs]
            reason = compare_outputs(
                outputs, [_normalize(v) for v in references], case.rtol, case.atol
            )
            if reason:
                return NodeTestResult(case.name, False, reason)
    except StratoError as error:
        return NodeTestResult(case.name, False, str(error))
    except Exception as error:  # noqa: BLE001 - a crash is a failed case, reported as such
        return NodeTestResult(case.name, False, f"internal error: {type(error).__name__}: {error}")
    return NodeTestResult(case.name, True)


def run_node_tests(cases: Sequence, mode: str = "llvm") -> list[NodeTestResult]:
    return [run_node_test(case, mode) for case in cases]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["llvm", "graph"], default="llvm")
    parser.add_argument("-k", dest="pattern", help="regex on test names")
    parser.add_argument("-v", "--verbose", action="store_true", help="list passing cases too")
    args = parser.parse_args(argv)
    results = run_node_tests(select_node_tests(pattern=args.pattern), args.mode)
    passed = sum(r.passed for r in results)
    for result in results:
        if not result.passed:
            print(f"FAIL {result.name}: {result.reason}")
        elif args.verbose:
            print(f"ok   {result.name}")
    rate = 100.0 * passed / max(len(results), 1)
    print(f"{passed} of {len(results)} node tests pass ({rate:.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
