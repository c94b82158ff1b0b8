"""Tuned against default schedules against onnxruntime: ResNet-18 C1-C12 and GEMM 1024^3.

    python benchmarks/tuned_layers.py --trials 16 --db layers.jsonl
    python benchmarks/tuned_layers.py C2 C6 GEMM --trials 32 --db layers.jsonl --threads 1 2

First every workload (one ONNX node: a conv2d of ResNet-18's C1-C12 table, "same"
padding, or a 1024^3 MatMul) is tuned with `--trials` candidates (`tune_model`, XGBoost-
guided, candidates timed on `--tune-threads` threads) into the JSON-lines log `--db`.
Records already there count as trials, so a second run resumes, and one with enough
records tunes nothing. Tuning wall time accumulates across runs in `<db>.seconds.json`.

Then, in the same process, at each thread count of `--threads`: the default schedule
(`strato.compile(model, threads=N)`), the tuned one (`strato.compile(model, threads=N,
tuning=db)`: what a user of the log gets) and onnxruntime (intra_op_num_threads=N,
inter_op_num_threads=1, spinning off) are timed interleaved, one call of each in turn,
for `--seconds` per side; the speed is that of the median call (`--statistic min`: the
fastest, steadier at more than one thread on a loaded machine). On one thread the time
is the calling thread's CPU time (every side runs on it, and on a shared machine wall
time counts others' work); on more, wall time. Outputs of both strato sides are checked
against onnxruntime's (max relative error). GFLOP/s count 2 flops per multiply-add.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from statistics import median  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resnet18_layers import CONV_LAYERS  # noqa: E402

import strato  # noqa: E402
from strato.autotuning.task import extract_tasks  # noqa: E402
from strato.autotuning.testing import conv_model, gemm_model  # noqa: E402
from strato.autotuning.tuner import tune_model  # noqa: E402
from strato.schedule.database import Database  # noqa: E402


@dataclass
class Layer:
    name: str
    model: onnx.ModelProto
    inputs: list[np.ndarray]
    flops: float
    tune_seconds: float = 0.0
    trials: int = 0
    best: dict[int, dict[str, float]] = field(default_factory=dict)
    """threads -> side -> GFLOP/s"""
    errors: dict[int, dict[str, float]] = field(default_factory=dict)


def make_layer(name: str, gemm_size: int, rng: np.random.Generator) -> Layer:
    if name == "GEMM":
        n = gemm_size
        model = gemm_model(n)
        inputs = [rng.standard_normal((n, n)).astype(np.float32) for _ in range(2)]
        return Layer(name, model, inputs, 2.0 * n**3)
    size, cin, cout, kernel, stride = CONV_LAYERS[name]
    out = (size + 2 * (kernel // 2) - kernel) // stride + 1
    model = conv_model(size, cin, cout, kernel, stride)
    inputs = [rng.standard_normal((1, cin, size, size)).astype(np.float32)]
    return Layer(name, model, inputs, 2.0 * cout * out * out * cin * kernel * kernel)


def load_seconds(path: str) -> dict[str, float]:
    try:
        with open(path) as file:
            data = json.load(file)
        return {k: float(v) for k, v in data.items()} if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def tune(layer: Layer, args: argparse.Namespace, seconds: dict[str, float]) -> None:
    start = time.perf_counter()
    results = tune_model(
        layer.model, args.trials, args.db, name=layer.name, workers=args.workers,
        timeout=args.timeout, repeats=args.repeats, seed=args.seed, threads=args.tune_threads,
    )  # fmt: skip
    spent = time.perf_counter() - start
    seconds[layer.name] = seconds.get(layer.name, 0.0) + spent
    layer.tune_seconds = seconds[layer.name]
    keys = {t.key for t in extract_tasks(layer.model, layer.name)}
    layer.trials = sum(len(Database(args.db).records(k)) for k in keys)
    print(
        f"tuned {layer.name}: {layer.trials} trials in the log, "
        + ", ".join(
            f"{r.task.kernel}: best {r.best_gflops:.1f} GFLOP/s (default "
            f"{(r.default_gflops or 0.0):.1f}) in isolation"
            for r in results
        )
        + f"; {spent:.1f} s this run, {layer.tune_seconds:.1f} s in all",
        flush=True,
    )


def ort_session(model: onnx.ModelProto, threads: int):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def relative_error(ours: np.ndarray, reference: np.ndarray) -> float:
    scale = max(float(np.max(np.abs(reference))), 1e-30)
    return float(np.max(np.abs(np.asarray(ours) - reference))) / scale


def interleaved(
    runs: dict[str, Callable[[], object]], seconds: float, threads: int, statistic: str = "median"
) -> dict[str, float]:
    """Seconds per call of each side (the median call, or the fastest: `statistic`), one
    call of each in turn."""
    clock = time.thread_time if threads == 1 else time.perf_counter
    for run in runs.values():
        run()  # warm-up
    times: dict[str, list[float]] = {name: [] for name in runs}
    deadline = time.perf_counter() + seconds * len(runs)
    while min(len(t) for t in times.values()) < 5 or time.perf_counter() < deadline:
        for name, run in runs.items():
            start = clock()
            run()
            times[name].append(clock() - start)
    pick = min if statistic == "min" else median
    return {name: pick(t) for name, t in times.items()}


def measure(layer: Layer, threads: int, args: argparse.Namespace) -> None:
    default = strato.compile(layer.model, threads=threads)
    tuned = strato.compile(layer.model, threads=threads, tuning=args.db)
    session = ort_session(layer.model, threads)
    feed = {i.name: x for i, x in zip(session.get_inputs(), layer.inputs, strict=True)}
    reference = session.run(None, feed)[0]
    layer.errors[threads] = {
        "default": relative_error(default(*layer.inputs)[0], reference),
        "tuned": relative_error(tuned(*layer.inputs)[0], reference),
    }
    seconds = interleaved(
        {
            "default": lambda: default(*layer.inputs),
            "tuned": lambda: tuned(*layer.inputs),
            "onnxruntime": lambda: session.run(None, feed),
        },
        args.seconds,
        threads,
        args.statistic,
    )
    layer.best[threads] = {side: layer.flops / s / 1e9 for side, s in seconds.items()}


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def print_table(layers: list[Layer], threads: int, statistic: str) -> None:
    print(f"\n{threads} thread(s): GFLOP/s of the {statistic} call; ratios of speeds")
    header = (
        f"{'layer':6s} {'GFLOP':>6s} {'default':>8s} {'tuned':>8s} {'ortrt':>8s} "
        f"{'tuned/def':>9s} {'tuned/ort':>9s} {'def/ort':>8s} {'trials':>6s} {'tune s':>7s} "
        f"{'max rel err':>11s}"
    )
    print(header)
    print("-" * len(header))
    for layer in layers:
        g = layer.best[threads]
        error = max(layer.errors[threads].values())
        flag = "" if error <= 1e-3 else "  MISMATCH"
        print(
            f"{layer.name:6s} {layer.flops / 1e9:6.2f} {g['default']:8.1f} {g['tuned']:8.1f} "
            f"{g['onnxruntime']:8.1f} {g['tuned'] / g['default']:8.2f}x "
            f"{g['tuned'] / g['onnxruntime']:8.2f}x {g['default'] / g['onnxruntime']:7.2f}x "
            f"{layer.trials:6d} {layer.tune_seconds:7.1f} {error:11.1e}{flag}"
        )
    for label, subset in (
        ("C1-C12", [x for x in layers if x.name in CONV_LAYERS]),
        ("all", layers),
    ):
        if not subset:
            continue
        gd = geomean([x.best[threads]["default"] for x in subset])
        gt = geomean([x.best[threads]["tuned"] for x in subset])
        go = geomean([x.best[threads]["onnxruntime"] for x in subset])
        print(
            f"geomean {label} ({len(subset)}): default {gd:.1f}, tuned {gt:.1f}, onnxruntime "
            f"{go:.1f} GFLOP/s; tuned/default {gt / gd:.2f}x, tuned/onnxruntime {gt / go:.2f}x, "
            f"default/onnxruntime {gd / go:.2f}x"
        )
    print(f"tuning wall time in all: {sum(x.tune_seconds for x in layers):.0f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("layers", nargs="*", help="GEMM, C1 .. C12 (default: all)")
    parser.add_argument("--trials", type=int, default=16, help="candidates per workload (default 16)")
    parser.add_argument("--db", default="tuned_layers.jsonl", help="the tuning log (resumed)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1], help="thread counts timed")
    parser.add_argument("--tune-threads", type=int, default=1, help="threads a candidate is timed on")
    parser.add_argument("--seconds", type=float, default=1.0, help="timing per side and thread count")
    parser.add_argument(
        "--statistic", choices=("median", "min"), default="median",
        help="per side: the median call, or the fastest (steadier on a loaded machine at "
        "more than one thread, where a descheduled thread stalls a call)",
    )
    parser.add_argument("--workers", type=int, default=1, help="measurement processes")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per candidate")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per candidate")
    parser.add_argument("--gemm-size", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-tune", action="store_true", help="measure with the log as it is")
    args = parser.parse_args()
    names = args.layers or ["GEMM", *CONV_LAYERS]
    for name in names:
        if name != "GEMM" and name not in CONV_LAYERS:
            parser.error(f"unknown layer '{name}' (GEMM, {', '.join(CONV_LAYERS)})")
    rng = np.random.default_rng(args.seed)
    layers = [make_layer(name, args.gemm_size, rng) for name in names]
    seconds_path = args.db + ".seconds.json"
    seconds = load_seconds(seconds_path)
    print(f"{args.trials} trials a workload, log {args.db}", flush=True)
    for layer in layers:
        if args.no_tune:
            layer.tune_seconds = seconds.get(layer.name, 0.0)
            keys = {t.key for t in extract_tasks(layer.model, layer.name)}
            layer.trials = sum(len(Database(args.db).records(k)) for k in keys)
            continue
        tune(layer, args, seconds)
        with open(seconds_path, "w") as file:
            json.dump(seconds, file)
    if not os.path.exists(args.db):
        parser.error(f"{args.db}: no tuning log (run without --no-tune first)")
    for threads in args.threads:
        for layer in layers:
            measure(layer, threads, args)
            g = layer.best[threads]
            print(
                f"measured {layer.name} at {threads} thread(s): default {g['default']:.1f}, "
                f"tuned {g['tuned']:.1f}, onnxruntime {g['onnxruntime']:.1f} GFLOP/s",
                flush=True,
            )
    for threads in args.threads:
        print_table(layers, threads, "fastest" if args.statistic == "min" else "median")


if __name__ == "__main__":
    main()
