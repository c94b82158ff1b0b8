"""The torch corpus quantized by onnxruntime's quantization tool: strato against onnxruntime
on int8 models it has not seen.

    pip install -e '.[corpus]'
    python benchmarks/quantized_corpus.py                      # every model, every format
    python benchmarks/quantized_corpus.py --only resnet18 --format qoperator
    python benchmarks/quantized_corpus.py --json q.json --markdown q.md

Each model of `benchmarks/torch_corpus.py` (exported by `--exporter`, dynamo by default,
from that benchmark's cache) is quantized in three formats, cached beside the exports:
- `qdq`: `quantize_static`, QuantizeLinear/DequantizeLinear pairs, per-channel weights;
- `qoperator`: `quantize_static` in the QOperator format (QLinearConv, QLinearMatMul and
  onnxruntime's com.microsoft operators: QLinearAdd, QGemm, QLinearSoftmax, ...);
- `dynamic`: `quantize_dynamic` (DynamicQuantizeLinear, MatMulInteger, ConvInteger).
Static formats calibrate on seeded random inputs shaped as the model's.

For each case, in a worker process of its own (`--timeout` bounds it): compile with
`strato.compile` (no cache), run on seeded inputs, run onnxruntime on the same inputs,
and time both (median latency, 2 threads each). The table gives the status (exact when
every output equals onnxruntime's, else the largest difference in units of the output's
range, and the largest difference from onnxruntime with its graph optimizations off),
the compile time, both latencies and their ratio.

onnxruntime runs with its graph optimizations on (how users run it): it then fuses a
QDQ group into its own integer kernel, whose rounding can differ from the ONNX
reference's DequantizeLinear -> float op -> QuantizeLinear that strato computes. With
its optimizations off it runs each operator as defined: the second figure, where what is
left is float rounding (a convolution's sum in another order) that a QuantizeLinear can
turn into one step.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch_corpus
from torch_corpus import CACHE_DIR, CORPUS, EXPORTERS, export

FORMATS = ("qdq", "qoperator", "dynamic")
SEED = 0


@dataclass
class QuantizedResult:
    model: str
    fmt: str
    status: str = "failed"
    detail: str = ""
    compile_s: float | None = None
    strato_ms: float | None = None
    onnxruntime_ms: float | None = None
    max_abs_err: float | None = None
    output_range: float | None = None
    exact: bool = False
    unoptimized_abs_err: float | None = None
    """The largest difference from onnxruntime with its graph optimizations off, where it
    runs each operator as the ONNX reference (and onnxruntime's kernels) define it."""
    contrib_ops: list[str] | None = None


def _calibration(model, inputs: dict[str, np.ndarray], count: int = 4):
    """Seeded inputs shaped as the model's: normal floats, integers drawn below the
    example's largest value (token ids)."""
    from onnxruntime import quantization

    rng = np.random.default_rng(SEED)
    samples = []
    for _ in range(count):
        sample = {}
        for name, example in inputs.items():
            if example.dtype.kind == "f":
                sample[name] = rng.standard_normal(example.shape).astype(example.dtype)
            else:
                high = max(int(example.max()), 1)
                sample[name] = rng.integers(0, high + 1, example.shape).astype(example.dtype)
        samples.append(sample)
    queue = iter(samples)

    class Reader(quantization.CalibrationDataReader):
        def get_next(self):
            return next(queue, None)

    return Reader()


def quantized(name: str, exporter: str, fmt: str) -> tuple[Path, dict[str, np.ndarray]]:
    """The corpus model quantized in `fmt` (from the cache when it is there)."""
    entry = next(entry for entry in CORPUS if entry.name == name)
    source, inputs = export(entry, exporter, rebuild=False)
    path = CACHE_DIR / "quantized" / f"{source.stem}.{fmt}.onnx"
    if path.exists():
        return path, inputs
    import onnx
    from onnxruntime import quantization

    logging.disable(logging.WARNING)  # the tool's advice to pre-process the model
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    model = onnx.load(str(source))
    initializers = {init.name for init in model.graph.initializer}
    feeds = {v.name: inputs[v.name] for v in model.graph.input if v.name not in initializers}
    if fmt == "dynamic":
        quantization.quantize_dynamic(str(source), str(partial))
    else:
        quantization.quantize_static(
            str(source), str(partial), _calibration(model, feeds),
            quant_format=(
                quantization.QuantFormat.QDQ if fmt == "qdq" else quantization.QuantFormat.QOperator
            ),
            per_channel=True,
        )  # fmt: skip
    partial.replace(path)
    return path, inputs


def run_case(name: str, exporter: str, fmt: str, repeat: int) -> QuantizedResult:
    result = QuantizedResult(name, fmt)
    try:
        path, inputs = quantized(name, exporter, fmt)
    except Exception as error:  # noqa: BLE001 - reported as this case's status
        result.status = "quantization failed"
        result.detail = torch_corpus._first_line(f"{type(error).__name__}: {error}")
        return result

    import onnx
    import onnxruntime

    import strato
    from strato.diagnostics import StratoError
    from strato.runtime.timing import median_latency_ms

    model = onnx.load(str(path))
    result.contrib_ops = sorted({n.op_type for n in model.graph.node if n.domain == "com.microsoft"})
    initializers = {init.name for init in model.graph.initializer}
    feed = {v.name: inputs[v.name] for v in model.graph.input if v.name not in initializers}
    options = onnxruntime.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    theirs = session.run(None, feed)
    result.onnxruntime_ms = median_latency_ms(lambda: session.run(None, feed), repeat, warmup=2)
    plain = onnxruntime.SessionOptions()
    plain.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    unfused = onnxruntime.InferenceSession(str(path), plain, providers=["CPUExecutionProvider"])
    reference = unfused.run(None, feed)
    try:
        start = time.perf_counter()
        compiled = strato.compile(str(path), cache=False)
        result.compile_s = time.perf_counter() - start
        ours = compiled(*feed.values())
    except StratoError as error:
        result.detail = torch_corpus._first_line(f"error: {error.message}")
        return result
    except Exception as error:  # noqa: BLE001 - an internal error is this case's status
        result.detail = torch_corpus._first_line(f"internal error: {type(error).__name__}: {error}")
        return result
    result.exact = len(ours) == len(theirs) and all(
        np.asarray(a).shape == b.shape and np.array_equal(np.asarray(a), b) for a, b in zip(ours, theirs)
    )
    result.max_abs_err, _, _ = torch_corpus.compare(ours, theirs)
    result.unoptimized_abs_err, _, _ = torch_corpus.compare(ours, reference)
    result.output_range = max(float(np.ptp(t)) if t.size else 0.0 for t in theirs)
    result.strato_ms = median_latency_ms(lambda: compiled(*feed.values()), repeat, warmup=2)
    result.status = "ok"
    return result


def run_isolated(name: str, exporter: str, fmt: str, args: argparse.Namespace) -> QuantizedResult:
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "result.json"
        command = [
            sys.executable, __file__, "--case", name, exporter, fmt, str(out),
            "--repeat", str(args.repeat),
        ]  # fmt: skip
        try:
            completed = subprocess.run(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                timeout=args.timeout, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return QuantizedResult(name, fmt, "timeout", f"timed out after {args.timeout:g} s")
        if out.exists():
            return QuantizedResult(**json.loads(out.read_text()))
        tail = [line for line in completed.stderr.splitlines() if line.strip()][-1:]
        return QuantizedResult(
            name, fmt, "failed", f"crashed (status {completed.returncode})" + (f": {tail[0]}" if tail else "")
        )


def status_text(result: QuantizedResult) -> str:
    if result.status != "ok":
        return f"{result.status}: {result.detail}" if result.detail else result.status
    if result.exact:
        return "exact"
    relative = result.max_abs_err / result.output_range if result.output_range else float("inf")
    text = f"differs by {relative:.2%} of the output's range (max abs {result.max_abs_err:.3g})"
    if result.unoptimized_abs_err is not None:
        text += f"; from unfused onnxruntime {result.unoptimized_abs_err:.3g}"
    return text


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def table(results: list[QuantizedResult], markdown: bool = False) -> str:
    rows = [("model", "format", "compile s", "strato ms", "ort ms", "ratio", "status")]
    for r in results:
        ratio = (
            f"{r.strato_ms / r.onnxruntime_ms:.2f}" if r.strato_ms and r.onnxruntime_ms else "-"
        )
        compile_s = "-" if r.compile_s is None else f"{r.compile_s:.1f}"
        rows.append((r.model, r.fmt, compile_s, _ms(r.strato_ms), _ms(r.onnxruntime_ms), ratio, status_text(r)))
    if markdown:
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
        return "\n".join(lines) + "\n"
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:-1], widths)) + "  " + row[-1]
        for row in rows
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", metavar="NAME", choices=[e.name for e in CORPUS])
    parser.add_argument("--format", action="append", choices=FORMATS, dest="formats")
    parser.add_argument("--exporter", choices=EXPORTERS, default="dynamo")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per side")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per case")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    parser.add_argument("--markdown", metavar="PATH", help="write the table as markdown")
    parser.add_argument("--case", nargs=4, metavar=("NAME", "EXPORTER", "FORMAT", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        name, exporter, fmt, out = args.case
        Path(out).write_text(json.dumps(asdict(run_case(name, exporter, fmt, args.repeat))))
        return 0
    results = []
    for name in args.only or [entry.name for entry in CORPUS]:
        for fmt in args.formats or FORMATS:
            result = run_isolated(name, args.exporter, fmt, args)
            results.append(result)
            print(f"  {name} / {fmt}: {status_text(result)}", file=sys.stderr, flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1))
    print(table(results))
    ok = [r for r in results if r.status == "ok"]
    print(f"{len(ok)} of {len(results)} compile and run; {sum(r.exact for r in ok)} exact")
    if args.markdown:
        Path(args.markdown).write_text(table(results, markdown=True))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
