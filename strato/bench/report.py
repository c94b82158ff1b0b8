"""The report of a `strato bench` run: the text tables and the JSON document.

The latency table has one row per workload, thread count and peer: strato's median
latency and GFLOP/s, the peer's, their ratio (strato / peer latency: below 1 strato is
faster) and the largest relative error of strato's outputs against the peer's. The
compile table puts strato's compile time beside TVM's (and onnxruntime's session
creation) per workload. Every disagreement and failure is listed again at the end.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from strato.bench.runner import MIN_SAMPLES, BenchOptions, WorkloadResult

FORMAT_VERSION = 1


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1000:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _gflops(flops: float | None, ms: float | None) -> str:
    if flops is None or ms is None or ms <= 0:
        return "-"
    return f"{flops / (ms * 1e-3) / 1e9:.1f}"


def _ratio(value: float) -> str:
    return f"{value:.2f}x" if value >= 0.1 else f"{value:.4f}x"


def _error(value: float | None) -> str:
    return "-" if value is None else f"{value:.1e}"


def latency_rows(results: Sequence[WorkloadResult], threads: Sequence[int], peers: Sequence[str]) -> list[list[str]]:
    rows = []
    for result in results:
        for count in threads:
            ours = result.measurement("strato", count)
            ours_ms = ours.median_ms if ours else None
            measured_peers = [p for p in peers if result.measurement(p, count) or result.check(p, count)]
            for peer in measured_peers or [None]:
                theirs = result.measurement(peer, count) if peer else None
                theirs_ms = theirs.median_ms if theirs else None
                check = result.check(peer, count) if peer else None
                if check is None:
                    verdict = "-"
                elif check.ok:
                    verdict = "ok"
                else:
                    verdict = "MISMATCH"
                ratio = _ratio(ours_ms / theirs_ms) if ours_ms and theirs_ms else "-"
                rows.append([
                    result.name, str(count), _ms(ours_ms), _gflops(result.flops, ours_ms),
                    peer or "-", _ms(theirs_ms), _gflops(result.flops, theirs_ms), ratio,
                    _error(check.max_relative_error if check else None), verdict,
                ])  # fmt: skip
    return rows


LATENCY_HEADER = [
    "workload", "thr", "strato ms", "GFLOP/s", "peer", "peer ms", "GFLOP/s", "strato/peer",
    "max rel err", "check",
]  # fmt: skip


def compile_rows(results: Sequence[WorkloadResult], sides: Sequence[str]) -> list[list[str]]:
    rows = []
    for result in results:
        row = [result.name]
        for side in sides:
            seconds = result.compile_seconds.get(side)
            row.append("failed" if side in result.failures and seconds is None else "-" if seconds is None else f"{seconds:.2f}")
        rows.append(row)
    return rows


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(header[i]), *(len(row[i]) for row in rows)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:])]
        return "  ".join([first, *rest]).rstrip()

    return "\n".join([line(header), "-" * len(line(header)), *(line(row) for row in rows)])


def problems(results: Sequence[WorkloadResult], rtol: float) -> list[str]:
    """One line per disagreement and per failure, for the end of the report."""
    lines = []
    for result in results:
        for check in result.checks:
            if check.ok:
                continue
            why = check.problem or f"max relative error {check.max_relative_error:.3g} > rtol {rtol:g}"
            lines.append(f"MISMATCH {result.name} at {check.threads} thread(s): strato against {check.peer}: {why}")
        for side, failure in result.failures.items():
            lines.append(f"FAILED {result.name}: {side}: {failure}")
    return lines


def text_report(
    results: Sequence[WorkloadResult], context: Mapping[str, object], options: BenchOptions,
    peers: Sequence[str],
) -> str:  # fmt: skip
    from strato.bench.machine import vector_features

    machine = context["machine"]
    versions = context["versions"]
    assert isinstance(machine, Mapping) and isinstance(versions, Mapping)
    lines = [
        f"machine: {machine['cpu']} (LLVM: {machine['llvm_cpu']}), {machine['usable_cores']} usable "
        f"core(s) of {machine['logical_cpus']}, {machine['system']}, Python {machine['python']}",
        f"vector features: {vector_features(list(machine['features']))}",
        "versions: " + ", ".join(f"{name} {version}" for name, version in versions.items()),
    ]
    if machine["environment"]:
        lines.append(
            "environment: " + " ".join(f"{k}={v}" for k, v in dict(machine["environment"]).items())
        )
    for side, note in dict(context["threads"]).items():
        lines.append(f"threads, {side}: {note}")
    if context.get("tuning"):
        lines.append(f"strato's schedules: the best records of the tuning log {context['tuning']}")
    else:
        lines.append("strato's schedules: the default templates (untuned)")
    for side, reason in dict(context["unavailable"]).items():
        lines.append(f"not compared: {side}: {reason}")
    lines.append(
        f"latency: median wall-clock ms per call (at most {options.repeat} timed calls per side, "
        f"at least {min(MIN_SAMPLES, options.repeat)}; a call over {options.seconds:g} s is timed once), sides "
        "interleaved; strato/peer < 1 means strato is faster; GFLOP/s counts 2 per multiply-add of "
        "Conv/ConvTranspose/Gemm/MatMul/LSTM"
    )
    lines.append("")
    lines.append(format_table(LATENCY_HEADER, latency_rows(results, options.threads, peers)))
    cached = ["strato cache hit"] if any("strato cache hit" in r.compile_seconds for r in results) else []
    compile_sides = ["strato", *cached, *(p for p in peers if p != "numpy")]
    lines.append("")
    lines.append(
        "compile time, s (strato: ONNX to runnable code, compile cache empty; strato cache hit: "
        "the same compile again; onnxruntime: session creation; tvm: from_onnx + relax.build + VM)"
    )
    lines.append(format_table(["workload", *compile_sides], compile_rows(results, compile_sides)))
    found = problems(results, options.rtol)
    lines.append("")
    if found:
        lines.append(f"{len(found)} problem(s):")
        lines.extend(found)
    else:
        lines.append(f"all outputs agree with every peer within rtol {options.rtol:g}")
    return "\n".join(lines)


def json_report(
    results: Sequence[WorkloadResult], context: Mapping[str, object], options: BenchOptions
) -> dict[str, object]:
    return {
        "format": FORMAT_VERSION,
        **context,
        "options": {
            "threads": list(options.threads),
            "repeat": options.repeat,
            "seconds": options.seconds,
            "rtol": options.rtol,
            "seed": options.seed,
        },
        "results": [
            {
                "workload": result.name,
                "kind": result.kind,
                "flops": result.flops,
                "compile_seconds": result.compile_seconds,
                "failures": result.failures,
                "measurements": [
                    {
                        "side": m.side,
                        "threads": m.threads,
                        "median_ms": m.median_ms,
                        "gflops": (result.flops / (m.median_ms * 1e-3) / 1e9) if result.flops else None,
                        "samples_ms": m.samples_ms,
                    }
                    for m in result.measurements
                ],
                "checks": [
                    {
                        "peer": c.peer,
                        "threads": c.threads,
                        "max_relative_error": _finite_or_text(c.max_relative_error),
                        "problem": c.problem,
                        "ok": c.ok,
                    }
                    for c in result.checks
                ],
            }
            for result in results
        ],
        "problems": problems(results, options.rtol),
    }


def _finite_or_text(value: float | None) -> float | str | None:
    """JSON has no infinity: an infinite error is written as the string "inf"."""
    if value is None or value != float("inf"):
        return value
    return "inf"


def dumps(document: Mapping[str, object]) -> str:
    return json.dumps(document, indent=2, allow_nan=False) + "\n"
