"""Running ONNX's own node test cases through strato, one result per case.

The cases come with the onnx package (`onnx.backend.test.loader.load_model_tests`): a
one-node (or small) model, inputs, and reference outputs. `select_node_tests` picks the
cases whose models use only the given operators; `run_node_test` compiles one case with
strato's ONNX backend (mode "llvm", the real path: `prepare` then `run`, as ONNX's
backend runner does), imports and interprets it at the graph level (mode "graph",
quicker, for operator work), or runs it with onnxruntime (mode "onnxruntime", the peer
the pass rate is compared with), and compares like ONNX's backend runner: same number of
outputs, same shapes and dtypes, values within the case's rtol/atol. In strato's two
modes, graph inputs that strato needs at compile time (a Reshape's shape, a reduction's
axes, ...) are bound to the case's values, as the backend does
(`SpecializingBackendRep`).

    python -m strato.testing.onnx_node_tests --mode graph -k conv
    python -m strato.testing.onnx_node_tests --isolate --slowest 10
    python -m strato.testing.onnx_node_tests --all --mode onnxruntime

`run_node_tests(..., isolate=True)` runs the cases in a worker process, so a case whose
generated code crashes the process or runs past `timeout` seconds is one failed case
rather than the end of the run.
"""

from __future__ import annotations

import argparse
import multiprocessing
import re
import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np


def supported_ops() -> frozenset[str]:
    """The operators strato runs (its ONNX op table, the host operators, the optimizers
    of ai.onnx.preview.training and its ai.onnx.ml operators): their node tests, `_expanded` variants included where the
    function body uses only such operators, are the acceptance set."""
    from strato.frontends.onnx.convert_ml import ML_CONVERTERS
    from strato.frontends.onnx.convert_training import TRAINING_CONVERTERS
    from strato.frontends.onnx.op_table import ONNX_CONVERTERS
    from strato.runtime.host_ops import HOST_OPS

    return (
        frozenset(ONNX_CONVERTERS)
        | frozenset(TRAINING_CONVERTERS)
        | frozenset(HOST_OPS)
        | frozenset(ML_CONVERTERS)
    )


TARGET_OPS: frozenset[str] = supported_ops()


MODES = ("llvm", "graph", "onnxruntime")
"""How a case runs: compiled by strato's ONNX backend, imported and interpreted at the
graph level, or by onnxruntime (the peer)."""

DEFAULT_TIMEOUT = 120.0
"""Seconds one case may take (compile and run) in an isolated run before it is
stopped and reported as failed."""


@dataclass
class NodeTestResult:
    name: str
    passed: bool
    reason: str = ""
    seconds: float = 0.0
    """Wall time of the case: import or compilation, and every run."""
    refused: bool = False
    """The case failed with a `StratoError`: strato refused it with a diagnostic."""


def select_node_tests(ops: Iterable[str] | None = TARGET_OPS, pattern: str | None = None) -> list:
    """The node test cases whose models use only `ops` (every case when `ops` is None)
    and match `pattern`; of the `_expanded` cases, those of an operator in `ops`."""
    from onnx.backend.test.loader import load_model_tests

    allowed = None if ops is None else set(ops)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    selected = []
    for case in cases:
        types = {node.op_type for node in case.model.graph.node}
        if allowed is not None and (not types or not types <= allowed):
            continue
        if allowed is not None and expanded_operator(case) not in (None, *allowed):
            continue  # the function body of an operator strato does not import
        if pattern is not None and not re.search(pattern, case.name):
            continue
        selected.append(case)
    return selected


def expanded_operator(case) -> str | None:
    """The operator whose function body an `_expanded` case runs (`Celu` for
    `test_celu_expanded`), None for other cases. ONNX names the body's values
    `<Op>_<case>_function_...`; cases without such names (CastLike's) are matched by
    the longest operator name that starts the case name."""
    if "_expanded" not in case.name:
        return None
    pattern = re.compile(r"^(\w+?)_" + re.escape(case.name) + "_function_")
    for node in case.model.graph.node:
        for output in node.output:
            match = pattern.match(output)
            if match is not None:
                return match.group(1)
    from onnx import defs

    body = case.name.removeprefix("test_").replace("_", "").lower()
    names = [schema.name for schema in defs.get_all_schemas() if schema.domain == ""]
    matches = [name for name in names if body.startswith(name.lower())]
    return max(matches, key=len) if matches else case.name


def _normalize(value):
    """An array of a TensorProto or array-like; sequences (lists) and absent optionals
    (None) keep their structure."""
    from onnx import TensorProto, numpy_helper

    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [_normalize(item) for item in value]
    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    return np.asarray(value)


def compare_outputs(
    outputs: Sequence[np.ndarray], expected: Sequence[np.ndarray], rtol: float, atol: float
) -> str:
    """'' when `outputs` match `expected` as ONNX's runner requires, else why not.
    A sequence output (a list) matches element by element, an absent optional is None."""
    if len(outputs) != len(expected):
        return f"{len(outputs)} outputs, expected {len(expected)}"
    for n, (out, ref) in enumerate(zip(outputs, expected)):
        reason = _compare_value(f"output {n}", out, ref, rtol, atol)
        if reason:
            return reason
    return ""


def _compare_value(what: str, out, ref, rtol: float, atol: float) -> str:
    if ref is None or out is None:
        return "" if ref is None and out is None else f"{what} is {out!r}, expected {ref!r}"
    if isinstance(ref, list):
        if not isinstance(out, (list, tuple)):
            return f"{what} is {type(out).__name__}, expected a sequence"
        if len(out) != len(ref):
            return f"{what} has {len(out)} elements, expected {len(ref)}"
        for index, (item, ref_item) in enumerate(zip(out, ref)):
            reason = _compare_value(f"{what}[{index}]", item, ref_item, rtol, atol)
            if reason:
                return reason
        return ""
    out = np.asarray(out)
    if out.shape != ref.shape:
        return f"{what} has shape {out.shape}, expected {ref.shape}"
    if out.dtype != ref.dtype:
        return f"{what} has dtype {out.dtype}, expected {ref.dtype}"
    if ref.dtype == object:
        return "" if np.array_equal(out, ref) else f"{what} differs"
    # bfloat16 keeps 8 bits of mantissa; the bound holds for this output only.
    output_rtol = max(rtol, 2**-6) if ref.dtype.name == "bfloat16" else rtol
    if ref.dtype.kind not in "fiub" or ref.dtype.name in ("bfloat16",) or ref.dtype.itemsize < 2:
        out, ref = out.astype(np.float32), ref.astype(np.float32)
    try:
        np.testing.assert_allclose(out, ref, rtol=output_rtol, atol=atol)
    except AssertionError as error:
        lines = [line for line in str(error).splitlines() if "Max" in line or "Mismatch" in line]
        return f"{what} differs: " + "; ".join(s.strip() for s in lines)
    return ""


def _defined_elements(model, inputs, outputs, expected):
    """The outputs and references of a single float-to-integer Cast (or CastLike) with
    the elements the ONNX specification leaves undefined set to 0 on both sides: those
    whose input, truncated, is out of the integer type's range. ONNX releases disagree
    on them (onnx 1.23's reference gives 0 for a FLOAT -> INT4 cast of -9, earlier ones
    wrapped around), and strato wraps around."""
    nodes = list(model.graph.node)
    if len(nodes) != 1 or nodes[0].op_type not in ("Cast", "CastLike") or not inputs:
        return outputs, expected
    source = np.asarray(inputs[0])
    if not _float_dtype(source.dtype) or len(outputs) != 1 or len(expected) != 1:
        return outputs, expected
    out, ref = np.asarray(outputs[0]), np.asarray(expected[0])
    narrow = {"int4": (-8, 7), "uint4": (0, 15), "int2": (-2, 1), "uint2": (0, 3)}  # ml_dtypes' kind 'V'
    if ref.dtype.name in narrow:
        low, high = narrow[ref.dtype.name]
    elif ref.dtype.kind in "iu":
        info = np.iinfo(ref.dtype)
        low, high = int(info.min), int(info.max)
    else:
        return outputs, expected
    if out.shape != ref.shape or source.shape != ref.shape:
        return outputs, expected
    with np.errstate(invalid="ignore"):
        truncated = np.trunc(source.astype(np.float64))
        undefined = ~((truncated >= low) & (truncated <= high))
    if not undefined.any():
        return outputs, expected
    zero = np.zeros((), ref.dtype)
    return [np.where(undefined, zero, out).astype(ref.dtype)], [np.where(undefined, zero, ref).astype(ref.dtype)]


def _float_dtype(dtype: np.dtype) -> bool:
    """Whether `dtype` is a float type: numpy's, or ml_dtypes' (bfloat16, the float8,
    float6 and float4 types, whose numpy kind is 'V')."""
    if dtype.kind == "f":
        return True
    import ml_dtypes

    try:
        ml_dtypes.finfo(dtype)
    except (ValueError, TypeError):
        return False
    return True


def run_node_test(case, mode: str = "llvm") -> NodeTestResult:
    """Compile (or interpret) one case and compare with its reference outputs."""
    start = time.perf_counter()
    result = _run_case(case, mode)
    result.seconds = time.perf_counter() - start
    return result


def _run_case(case, mode: str) -> NodeTestResult:
    from strato.diagnostics import StratoError

    try:
        if mode == "graph":
            run = _graph_runner(case.model)

        elif mode == "llvm":
            from strato.onnx_backend import StratoBackend

            run = StratoBackend.prepare(case.model, "CPU").run
        elif mode == "onnxruntime":
            run = _onnxruntime_runner(case.model)
        else:
            raise ValueError(f"unknown mode '{mode}' (modes: {', '.join(MODES)})")
        for inputs, references in case.data_sets:
            arrays = [_normalize(v) for v in inputs]
            outputs = run(arrays)
            if not isinstance(outputs, (list, tuple)):
                outputs = [outputs]
            expected = [_normalize(v) for v in references]
            outputs, expected = _defined_elements(case.model, arrays, outputs, expected)
            reason = compare_outputs(outputs, expected, case.rtol, case.atol)
            if reason:
                return NodeTestResult(case.name, False, reason)
    except StratoError as error:
        return NodeTestResult(case.name, False, _one_line(str(error)), refused=True)
    except Exception as error:  # noqa: BLE001 - a crash is a failed case, reported as such
        reason = _one_line(f"{type(error).__name__}: {error}")
        return NodeTestResult(case.name, False, f"internal error: {reason}")
    return NodeTestResult(case.name, True)


def _graph_runner(model):
    """Runs `model` with the graph interpreter; graph inputs that strato needs at compile
    time (shapes, axes, ...) are bound to each run's values, and strings, sequences and
    optionals cross the model's boundary, as the backend does (`ValueBoundary`)."""
    from strato.frontends.onnx import import_onnx
    from strato.frontends.onnx.strings import StringEncoding
    from strato.onnx_backend import ValueBoundary, bind_inputs, compile_time_inputs

    strings = StringEncoding.of(model)
    if strings is not None:
        model = strings.model
    boundary = ValueBoundary(model, strings)
    bound = set(compile_time_inputs(model))
    if not bound and not boundary.structured and strings is None:
        interpreted = _Interpreted(import_onnx(model))
        return lambda inputs: interpreted(*inputs)

    def run(inputs):
        values = boundary.check_count(inputs)
        imported = import_onnx(
            bind_inputs(model, {name: values[name] for name in bound}),
            input_shapes=boundary.structures(values) or None,
        )
        rest = {name: value for name, value in values.items() if name not in bound}
        return boundary.call(_Interpreted(imported), rest)

    return run


class _Interpreted:
    """An imported model called like a compiled one, through the graph interpreter."""

    def __init__(self, imported):
        self.imported = imported
        self.output_names = imported.output_names

    def __call__(self, *arrays):
        from strato.interpreters.graph import run_graph

        return run_graph(self.imported.module, list(arrays), self.imported.function_name)


def _onnxruntime_runner(model):
    """Runs `model` with onnxruntime's CPU provider: the peer the pass rate is compared
    with, under the same comparison."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    names = [value.name for value in session.get_inputs()]
    return lambda inputs: session.run(None, dict(zip(names, inputs)))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def run_node_tests(
    cases: Sequence,
    mode: str = "llvm",
    *,
    isolate: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    budget: float | None = None,
    workers: int = 1,
) -> list[NodeTestResult]:
    """One result per case, in order. With `isolate`, the cases run in `workers` worker
    processes, each replaced when a case crashes it or exceeds `timeout` seconds. With a
    `budget` (seconds), cases not started when it is spent fail as not run, so a slow
    compiler shows up as a lower pass rate instead of an unbounded run."""
    deadline = None if budget is None else time.perf_counter() + budget

    def out_of_budget(case) -> NodeTestResult | None:
        if deadline is not None and time.perf_counter() > deadline:
            return NodeTestResult(case.name, False, f"not run: the {budget:g} s budget is spent")
        return None

    if not isolate:
        return [out_of_budget(case) or run_node_test(case, mode) for case in cases]
    results: list[NodeTestResult | None] = [None] * len(cases)
    pending = iter(range(len(cases)))
    claim = threading.Lock()

    def drain(runner: _IsolatedRunner) -> None:
        # Each thread feeds one worker process and only waits on its pipe.
        try:
            while True:
                with claim:
                    index = next(pending, None)
                if index is None:
                    return
                results[index] = out_of_budget(cases[index]) or runner.run(index)
        finally:
            runner.stop()

    threads = [
        threading.Thread(target=drain, args=(_IsolatedRunner(cases, mode, timeout),))
        for _ in range(max(1, workers))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


class _IsolatedRunner:
    """Runs cases one at a time in a forked worker; the worker inherits the cases, so
    only an index goes down the pipe and a small result comes back."""

    def __init__(self, cases: Sequence, mode: str, timeout: float):
        self.cases = cases
        self.mode = mode
        self.timeout = timeout
        self.context = multiprocessing.get_context("fork")
        self.worker = None
        self.connection = None

    def run(self, index: int) -> NodeTestResult:
        if self.worker is None:
            self._start()
        name = self.cases[index].name
        start = time.perf_counter()
        self.connection.send(index)
        if not self.connection.poll(self.timeout):
            self.stop()
            return NodeTestResult(
                name, False, f"timed out after {self.timeout:g} s", time.perf_counter() - start
            )
        try:
            return self.connection.recv()
        except EOFError:
            self.worker.join()
            code = self.worker.exitcode
            self.stop()
            how = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
            return NodeTestResult(
                name, False, f"crashed the process ({how})", time.perf_counter() - start
            )

    def _start(self) -> None:
        parent, child = self.context.Pipe()
        self.worker = self.context.Process(
            target=_serve_cases, args=(child, self.cases, self.mode), daemon=True
        )
        self.worker.start()
        child.close()
        self.connection = parent

    def stop(self) -> None:
        if self.worker is None:
            return
        self.connection.close()
        if self.worker.is_alive():
            self.worker.kill()
        self.worker.join()
        self.worker = None
        self.connection = None


def _serve_cases(connection, cases: Sequence, mode: str) -> None:
    while True:
        try:
            index = connection.recv()
        except EOFError:
            return
        connection.send(run_node_test(cases[index], mode))


def summarize(results: Sequence[NodeTestResult], *, verbose: bool = False, slowest: int = 0) -> str:
    """A report of `results`: one line per failure with its reason (every case with
    `verbose`), the `slowest` cases, the most common reasons, and the pass rate."""
    lines = []
    for result in results:
        if not result.passed:
            lines.append(f"FAIL {result.name}: {result.reason}")
        elif verbose:
            lines.append(f"ok   {result.name}")
    if slowest > 0:
        lines.append(f"slowest {min(slowest, len(results))} cases:")
        for result in sorted(results, key=lambda r: -r.seconds)[:slowest]:
            lines.append(f"  {result.seconds:7.2f} s  {result.name}")
    reasons = Counter(_reason_kind(r.reason) for r in results if not r.passed)
    if reasons:
        lines.append("most common reasons:")
        lines.extend(f"  {count:4d}  {reason}" for reason, count in reasons.most_common(8))
    passed = sum(r.passed for r in results)
    seconds = sum(r.seconds for r in results)
    lines.append(
        f"{passed} of {len(results)} node tests pass ({pass_rate(results):.1f}%) in {seconds:.1f} s"
    )
    return "\n".join(lines)


def pass_rate(results: Sequence[NodeTestResult]) -> float:
    """The percentage of `results` that passed (0 for no results)."""
    return 100.0 * sum(r.passed for r in results) / max(len(results), 1)


def _reason_kind(reason: str) -> str:
    """A reason without the node that gave it, to group failures by cause."""
    reason = re.sub(r"^error: ", "", reason)
    reason = re.sub(r"^node ('[^']*'|#\d+) \(\w+\): ", "", reason)
    reason = re.sub(r"'[^']*'", "'…'", reason)
    reason = re.sub(r"\[[-\d, ]*\]", "[…]", reason)
    reason = re.sub(r"element type [A-Z]\w*", "element type …", reason)
    return reason[:100]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=MODES, default="llvm")
    parser.add_argument("-k", dest="pattern", help="regex on test names")
    parser.add_argument(
        "--all",
        action="store_true",
        help="every node test of the onnx package, not only those of supported operators",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="list passing cases too")
    parser.add_argument(
        "--isolate",
        action="store_true",
        help="run the cases in a worker process, so a crash or a hang fails one case",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds per case with --isolate (default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--budget", type=float, default=None, help="seconds for the whole run (default: none)"
    )
    parser.add_argument(
        "--slowest", type=int, default=0, metavar="N", help="list the N slowest cases"
    )
    args = parser.parse_args(argv)
    cases = select_node_tests(None if args.all else TARGET_OPS, pattern=args.pattern)
    results = run_node_tests(
        cases, args.mode, isolate=args.isolate, timeout=args.timeout, budget=args.budget
    )
    print(summarize(results, verbose=args.verbose, slowest=args.slowest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
